"""Run the real hub as a process and drive it with the real kubectl.

Tests share one hub per worker and keep out of each other's way with their own namespace or
logical cluster; every kubectl call gets a fresh discovery cache unless a test asks for one.
Processes are started the one way :mod:`fleetplane.lab` starts them (``make demo``, benchmarks).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import yaml

from fleetplane.lab import LabError, Process, free_port

__all__ = ["Hub", "Kubectl", "Result", "SimulatedCluster", "free_port", "kubectl_binary", "wait_for"]

KUBECTL_DIR = Path(os.path.realpath(shutil.which("kubectl") or "/usr/bin/kubectl")).parent
DEFAULT_MINOR = "1.32"


def kubectl_binary(minor: str = DEFAULT_MINOR) -> str:
    path = KUBECTL_DIR / f"kubectl.{minor}"
    if not path.exists():
        raise FileNotFoundError(f"kubectl {minor} is not installed at {path}")
    return str(path)


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


class _TestProcess(Process):
    """lab's :class:`~fleetplane.lab.Process` at the data directory, port and log file its
    :class:`Hub` chose, running the command the Hub builds."""

    def __init__(self, server: Hub) -> None:
        super().__init__(server.data_dir.name, [], server.data_dir.parent, log_level="info")
        self.server = server
        self.data_dir, self.port, self.log_path = server.data_dir, server.port, server.log

    @property
    def command(self) -> list[str]:
        return self.server.command(super().command)


class Hub:
    """A server process for tests on a port and data directory of its own (``fleetplane start``
    unless a subclass runs another command), started and stopped by :mod:`fleetplane.lab`; with
    an admin client for its API. Failures to start are test failures (AssertionError)."""

    start_timeout = 60.0  # a deadline, not a wait: a hub on a loaded 2-core machine can take 20 s to be ready

    def __init__(self, data_dir: Path, port: int | None = None, extra: list[str] | None = None, *,
                 log_name: str = "hub.log") -> None:
        self.data_dir = data_dir
        self.port = port or free_port()
        self.extra = extra or []
        self.url = f"https://127.0.0.1:{self.port}"
        self.log = data_dir / log_name
        self.process = _TestProcess(self)

    def cli_args(self) -> list[str]:
        """What to run through the ``fleetplane`` CLI (``--data-dir`` and ``--port`` follow)."""
        return ["start", *self.controllers_mode(), *self.extra]

    def controllers_mode(self) -> list[str]:
        """Test hubs run their controllers in the server's process (one process per hub: the
        suite's start-up CPU halved) unless a test says otherwise; `fleetplane start`'s own
        default, a separate controller-manager, is tested in tests/hub/test_controller_manager.py
        and played end to end by `make demo` (tests/test_demo.py)."""
        return [] if any(a.startswith("--controllers") for a in self.extra) else ["--controllers=in-process"]

    def command(self, cli: list[str]) -> list[str]:
        """The whole command line: the CLI's (``cli``) unless a test runs a server script of its own."""
        return cli

    @property
    def proc(self) -> subprocess.Popen | None:
        return self.process.proc

    def start(self, timeout: float | None = None, wait: bool = True) -> Self:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.process.args = self.cli_args()
        try:
            self.process.start(wait=False)
        except LabError as err:
            raise AssertionError(str(err)) from None
        if wait:
            self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float | None = None) -> Self:
        """Wait for /readyz; fail at once if the process exited."""
        try:
            self.process.wait_ready(timeout or self.start_timeout)
        except LabError as err:
            raise AssertionError(str(err)) from None
        return self

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int:
        code = self.process.stop(sig, timeout)
        assert code is not None, "the process was never started"
        return code

    @property
    def kubeconfig(self) -> Path:
        return self.process.kubeconfig

    @property
    def token(self) -> str:
        return (self.data_dir / "admin.token").read_text().strip()  # read each time: a test may replace it

    @property
    def ca(self) -> Path:
        return self.process.ca

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


class SimulatedCluster(Hub):
    """``fleetplane cluster simulate --name NAME --nodes N EXTRA``: a physical cluster's API
    with nodes, controllers and kubelets."""

    start_timeout = 30.0

    def __init__(self, data_dir: Path, name: str = "sim", port: int | None = None, nodes: int = 3,
                 extra: list[str] | None = None, *, log_name: str = "hub.log") -> None:
        super().__init__(data_dir, port, extra, log_name=log_name)
        self.name = name
        self.nodes = nodes

    def cli_args(self) -> list[str]:
        return ["cluster", "simulate", "--name", self.name, "--nodes", str(self.nodes), *self.extra]


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
