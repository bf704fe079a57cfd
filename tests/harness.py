"""Run the real hub as a process and drive it with the real kubectl.

Tests share one hub per worker and keep out of each other's way with their own namespace or
logical cluster; every kubectl call gets a fresh discovery cache unless a test asks for one.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

KUBECTL_DIR = Path(os.path.realpath(shutil.which("kubectl") or "/usr/bin/kubectl")).parent
DEFAULT_MINOR = "1.32"


def kubectl_binary(minor: str = DEFAULT_MINOR) -> str:
    path = KUBECTL_DIR / f"kubectl.{minor}"
    if not path.exists():
        raise FileNotFoundError(f"kubectl {minor} is not installed at {path}")
    return str(path)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(condition: Callable[[], Any], timeout: float = 10.0, interval: float = 0.05, what: str = "condition") -> Any:
    """Poll ``condition`` until it returns something truthy, or fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = condition()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


class Hub:
    """A ``fleetplane start`` process on a free port with its own data directory."""

    def __init__(self, data_dir: Path, port: int | None = None, extra: list[str] | None = None) -> None:
        self.data_dir = data_dir
        self.port = port or free_port()
        self.extra = extra or []
        self.proc: subprocess.Popen | None = None
        self.url = f"https://127.0.0.1:{self.port}"
        self.log = data_dir / "hub.log"

    def start(self, timeout: float = 15.0) -> Hub:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "fleetplane.cli.main", "--log-format", "console", "start",
               "--data-dir", str(self.data_dir), "--port", str(self.port), *self.extra]
        self._logf = open(self.log, "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(cmd, stdout=self._logf, stderr=subprocess.STDOUT)
        wait_for(self._ready, timeout, what=f"hub on {self.url} to be ready (log: {self.log})")
        return self

    def _ready(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise AssertionError(f"hub exited with {self.proc.returncode}: {self.log.read_text()[-3000:]}")
        try:
            return self.request("GET", "/readyz", auth=False)[0] == 200
        except OSError:
            return False

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._logf.close()
        return self.proc.returncode

    @property
    def kubeconfig(self) -> Path:
        return self.data_dir / "admin.kubeconfig"

    @property
    def token(self) -> str:
        return (self.data_dir / "admin.token").read_text().strip()

    @property
    def ca(self) -> Path:
        return self.data_dir / "pki" / "ca.crt"

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca))

    def request(self, method: str, path: str, body: Any = None, *, auth: bool = True,
                headers: dict[str, str] | None = None, content_type: str = "application/json",
                timeout: float = 10.0) -> tuple[int, dict[str, str], bytes]:
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", content_type)
        if auth:
            req.add_header("Authorization", f"Bearer {self.token}")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, context=self.ssl_context(), timeout=timeout) as resp:
                return resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as err:
            return err.code, dict(err.headers), err.read()

    def json(self, method: str, path: str, body: Any = None, **kw: Any) -> tuple[int, Any]:
        code, _, raw = self.request(method, path, body, **kw)
        return code, json.loads(raw) if raw else None

    def kubeconfig_for(self, cluster: str, directory: Path) -> Path:
        """A kubeconfig whose current context points at logical cluster ``cluster``."""
        cfg = yaml.safe_load(self.kubeconfig.read_text())
        template = cfg["clusters"][0]["cluster"]
        cfg["clusters"] = [{"name": cluster, "cluster": {**template, "server": f"{self.url}/clusters/{cluster}"}}]
        cfg["contexts"] = [{"name": cluster, "context": {"cluster": cluster, "user": cfg["users"][0]["name"]}}]
        cfg["current-context"] = cluster
        path = directory / f"kubeconfig-{cluster.replace(':', '_').replace('*', 'all')}"
        path.write_text(yaml.safe_dump(cfg))
        return path


class Kubectl:
    """The real kubectl against the hub, with a private discovery cache."""

    def __init__(self, kubeconfig: Path, minor: str = DEFAULT_MINOR, namespace: str | None = None) -> None:
        self.kubeconfig = kubeconfig
        self.binary = kubectl_binary(minor)
        self.namespace = namespace
        self.cache_dir = tempfile.mkdtemp(prefix="kubectl-cache-")

    def __call__(self, *args: str, stdin: str | None = None, check: bool = True, env: dict[str, str] | None = None,
                 timeout: float = 60.0) -> Result:
        cmd = [self.binary, "--kubeconfig", str(self.kubeconfig), "--cache-dir", self.cache_dir]
        if self.namespace and not any(a in ("-n", "--namespace", "-A", "--all-namespaces") or a.startswith("--namespace=") for a in args):
            cmd += ["-n", self.namespace]
        cmd += list(args)
        proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **(env or {})})
        result = Result(proc.returncode, proc.stdout, proc.stderr)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}\n{proc.stdout}")
        return result

    def fail(self, *args: str, stdin: str | None = None) -> Result:
        result = self(*args, stdin=stdin, check=False)
        assert result.code != 0, f"kubectl {' '.join(args)} unexpectedly succeeded:\n{result.out}"
        return result

    def get_json(self, *args: str) -> Any:
        return self("get", *args, "-o", "json").json()
