"""A fleet on one machine, as real processes: a hub and simulated physical clusters started
through the real CLI (``fleetplane start``, ``fleetplane cluster simulate``), attached with
``kubectl apply`` of Cluster objects. What ``make demo`` and the end-to-end benchmarks share::

    with Lab() as lab:
        hub = lab.start_hub("--splitter-join-grace", "2")     # `fleetplane start` + flags, /readyz
        lab.simulate_all(["east", "west"], "--nodes", "3")     # side by side, then each /readyz
        lab.simulate_many("edge", 100, "--nodes", "2")         # edge-0 .. edge-99 in one process
        lab.attach("east", "west", location="eu")             # kubectl apply -f (Cluster objects)
        lab.wait_attached(["east", "west"])                   # Cluster Ready, ClusterProfile healthy
        lab.wait_served("apps/v1", "deployments")             # the Syncers imported the type
        lab.kubectl("get", "deployments")
        hub.restart()                                          # SIGTERM, the same command again
        lab["west"].kill()                                     # SIGKILL
    # every process stopped (SIGTERM, SIGKILL after 15 s); the working directory removed

Each process gets a free port, a data directory ``<root>/<name>`` and a log ``<root>/<name>.log``.
A process that exits while something is waited for raises :class:`LabError` with its log's tail.
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
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml

__all__ = ["Lab", "LabError", "Member", "Process", "free_port"]

CLI = [sys.executable, "-m", "fleetplane.cli.main"]
CLUSTERS = "/apis/cluster.example.dev/v1alpha1/clusters"
PROFILES = "/apis/multicluster.x-k8s.io/v1alpha1/clusterprofiles"


class LabError(RuntimeError):
    """A process exited, did not become ready, or something waited for did not happen."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent(open_files: int | None = None) -> Callable[[], None] | None:
    """On Linux, a ``preexec_fn`` that has the child sent SIGTERM when the process that started it
    dies: a demo or benchmark killed outright leaves no servers behind. With ``open_files``, the
    child may also open that many files (soft and hard limit, where this process may raise them:
    a hub with a thousand clusters holds tens of thousands of connections)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork
    except (OSError, AttributeError):
        return None

    def setup() -> None:
        prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        if open_files:
            import resource

            _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, max(hard, open_files)))
            except (ValueError, OSError):  # not privileged: as far as the hard limit goes
                resource.setrlimit(resource.RLIMIT_NOFILE, (min(open_files, hard), hard))

    return setup


def _condition(obj: dict, type_: str) -> str | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return c.get("status")
    return None


class Process:
    """One server process (``fleetplane start`` or ``fleetplane cluster simulate``) with its own
    data directory and port, which stay the same across :meth:`restart`."""

    def __init__(self, name: str, args: list[str], root: Path, *, log_level: str = "warning",
                 open_files: int | None = None) -> None:
        self.name = name
        self.open_files = open_files
        self.args = list(args)
        self.data_dir = root / name
        self.port = free_port()
        self.log_path = root / f"{name}.log"
        self.log_level = log_level
        self.proc: subprocess.Popen | None = None
        self.stopped = False  # stopped or killed on purpose
        #: seconds from the last spawn to /readyz answering 200
        self.ready_s: float | None = None
        #: when the process was last spawned (time.monotonic())
        self.spawned_at = 0.0
        self._ssl: ssl.SSLContext | None = None
        self._token: str | None = None

    @property
    def command(self) -> list[str]:
        return [*CLI, "--log-level", self.log_level, "--log-format", "console", *self.args,
                "--data-dir", str(self.data_dir), "--port", str(self.port)]

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def kubeconfig(self) -> Path:
        return self.data_dir / "admin.kubeconfig"

    @property
    def token(self) -> str:
        if self._token is None:
            self._token = (self.data_dir / "admin.token").read_text().strip()
        return self._token

    @property
    def ca(self) -> Path:
        return self.data_dir / "pki" / "ca.crt"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self, wait: bool = True, timeout: float = 60.0, interval: float = 0.05) -> Process:
        if self.running:
            raise LabError(f"{self.name} is already running")
        self.stopped, self.ready_s = False, None
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT,
                                         preexec_fn=_die_with_parent(self.open_files))
        self.spawned_at = time.monotonic()
        if wait:
            self.wait_ready(timeout, interval)
        return self

    def check(self) -> None:
        """Raise :class:`LabError` if the process exited without being asked to."""
        if self.proc is not None and not self.stopped and self.proc.poll() is not None:
            raise LabError(f"{self.name} exited with code {self.proc.returncode}; {self.log_path}:\n{self.log_tail()}")

    def ready(self) -> bool:
        try:
            return self.request("GET", "/readyz", auth=False, timeout=2)[0] == 200
        except (OSError, ValueError):
            return False

    def wait_ready(self, timeout: float = 60.0, interval: float = 0.05) -> Process:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check()
            if self.ready():
                self.ready_s = time.monotonic() - self.spawned_at
                return self
            time.sleep(interval)
        raise LabError(f"{self.name} on {self.url} not ready in {timeout:.0f}s; {self.log_path}:\n{self.log_tail()}")

    def send_signal(self, sig: int = signal.SIGTERM) -> None:
        """Send ``sig`` (the process is then expected to exit)."""
        self.stopped = True
        if self.running:
            assert self.proc is not None  # running implies a process
            self.proc.send_signal(sig)

    def wait(self, timeout: float = 15.0) -> int | None:
        """Wait for the process to exit (SIGKILL after ``timeout``); its exit code."""
        if self.proc is None:
            return None
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self.proc.returncode

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int | None:
        """Signal the process and wait for it (SIGKILL after ``timeout``); its exit code."""
        self.send_signal(sig)
        return self.wait(timeout)

    def kill(self) -> int | None:
        return self.stop(signal.SIGKILL)

    def restart(self, timeout: float = 60.0) -> Process:
        """Stop (SIGTERM) and start the same command on the same data and port; ``ready_s`` is
        the time from the new spawn to ready."""
        self.stop()
        return self.start(timeout=timeout)

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    # -- its API ---------------------------------------------------------------------------------

    def request(self, method: str, path: str, body: Any = None, *, auth: bool = True,
                timeout: float = 10.0) -> tuple[int, Any]:
        """One request to the process's API (as admin): (status, decoded JSON body or None)."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if auth:
            req.add_header("Authorization", f"Bearer {self.token}")
        if self._ssl is None:
            self._ssl = ssl.create_default_context(cafile=str(self.ca))
        try:
            with urllib.request.urlopen(req, context=self._ssl, timeout=timeout) as resp:
                code, raw = resp.status, resp.read()
        except urllib.error.HTTPError as err:
            code, raw = err.code, err.read()
        try:
            return code, json.loads(raw) if raw else None
        except ValueError:
            return code, None

    def get(self, path: str) -> Any:
        """The JSON at ``path``, or None unless it answers 200."""
        code, body = self.request("GET", path)
        return body if code == 200 else None


class Member:
    """One of the simulated clusters a ``--count`` process serves (:meth:`Lab.simulate_many`):
    its own kubeconfig and URL (``/clusters/<name>`` of the process's server), the process's
    credentials."""

    def __init__(self, name: str, process: Process) -> None:
        self.name, self.process = name, process
        self.data_dir = process.data_dir / "clusters" / name

    @property
    def kubeconfig(self) -> Path:
        return self.data_dir / "admin.kubeconfig"

    @property
    def url(self) -> str:
        return f"{self.process.url}/clusters/{self.name}"

    def request(self, method: str, path: str, body: Any = None, **kw: Any) -> tuple[int, Any]:
        """One request to this cluster's API (as admin)."""
        return self.process.request(method, f"/clusters/{self.name}{path}", body, **kw)

    def get(self, path: str) -> Any:
        code, body = self.request("GET", path)
        return body if code == 200 else None


class Lab:
    """Processes under one working directory (``root``; a temporary one, removed by
    :meth:`stop`, when not given), and kubectl against the hub. ``open_files``: the file limit
    every process starts with (see :func:`_die_with_parent`)."""

    def __init__(self, root: Path | str | None = None, *, log_level: str = "warning",
                 open_files: int | None = None) -> None:
        self.owns_root = root is None
        self.root = Path(root) if root is not None else Path(tempfile.mkdtemp(prefix="fleetplane-lab-"))
        self.root.mkdir(parents=True, exist_ok=True)
        self.log_level = log_level
        self.procs: dict[str, Process] = {}
        #: the simulated clusters of ``--count`` processes, by name
        self.members: dict[str, Member] = {}
        self.open_files = open_files
        self.kubectl_binary = shutil.which("kubectl") or "kubectl"
        self.kubectl_cache = tempfile.mkdtemp(prefix="kubectl-cache-")
        self.hub_name = "hub"

    def __enter__(self) -> Lab:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __getitem__(self, name: str) -> Process:
        return self.procs[name]

    @property
    def hub(self) -> Process:
        return self.procs[self.hub_name]

    # -- processes -------------------------------------------------------------------------------

    def add(self, name: str, args: list[str]) -> Process:
        """A process of this lab, not started yet (``args``: the CLI's, without data dir and port)."""
        if name in self.procs:
            raise LabError(f"there already is a process named {name}")
        proc = Process(name, args, self.root, log_level=self.log_level, open_files=self.open_files)
        if proc.data_dir.exists():  # another run's objects would be mixed into this one
            raise LabError(f"{proc.data_dir} already exists: give the lab a new or empty directory")
        self.procs[name] = proc
        return proc

    def start_hub(self, *flags: str, name: str = "hub", timeout: float = 60.0) -> Process:
        """``fleetplane start FLAGS``, ready."""
        hub = self.add(name, ["start", *flags]).start(timeout=timeout)
        self.hub_name = name
        return hub

    def simulate(self, name: str, *flags: str, wait: bool = True, timeout: float = 60.0) -> Process:
        """``fleetplane cluster simulate --name NAME FLAGS``, ready unless ``wait`` is False."""
        return self.add(name, ["cluster", "simulate", "--name", name, *flags]).start(wait=wait, timeout=timeout)

    def simulate_all(self, names: Iterable[str], *flags: str, timeout: float = 120.0) -> list[Process]:
        """Several simulated clusters with the same flags, started side by side, then each ready."""
        procs = [self.simulate(n, *flags, wait=False) for n in names]
        deadline = time.monotonic() + timeout
        for p in procs:
            p.wait_ready(max(1.0, deadline - time.monotonic()))
        return procs

    def simulate_many(self, name: str, count: int, *flags: str, timeout: float = 120.0) -> list[Member]:
        """``fleetplane cluster simulate --name NAME --count COUNT FLAGS`` (one process, named
        ``name``), ready; its clusters ``<name>-0`` .. ``<name>-<count-1>`` (or as a ``{i}``
        pattern in ``name`` says), each usable as :meth:`attach` and :meth:`cluster_manifest` use
        a simulated cluster of its own."""
        proc_name = name.split("{", 1)[0].rstrip("-") or "sim"
        self.simulate(proc_name, "--count", str(count), *flags, timeout=timeout)
        from .cli.cluster import member_names  # the CLI's own naming (argparse only: no server modules)

        members = [Member(n, self.procs[proc_name]) for n in member_names(name, count)]
        for m in members:
            if m.name in self.members or m.name in self.procs:
                raise LabError(f"there already is a cluster named {m.name}")
            self.members[m.name] = m
        return members

    def cluster(self, name: str) -> Process | Member:
        """The simulated cluster ``name``: a process of its own or a member of a ``--count`` one."""
        return self.members[name] if name in self.members else self.procs[name]

    def check(self) -> None:
        """Raise :class:`LabError` if any process exited without being asked to."""
        for p in self.procs.values():
            p.check()

    def stop(self) -> None:
        """Stop every process (SIGTERM, newest first, then wait for each) and clean up."""
        for p in reversed(self.procs.values()):
            p.send_signal(signal.SIGTERM)
        for p in self.procs.values():
            p.wait()
        shutil.rmtree(self.kubectl_cache, ignore_errors=True)
        if self.owns_root:
            shutil.rmtree(self.root, ignore_errors=True)

    # -- the hub ---------------------------------------------------------------------------------

    def env(self) -> dict[str, str]:
        return {**os.environ, "KUBECONFIG": str(self.hub.kubeconfig)}

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = False,
                timeout: float = 60.0) -> subprocess.CompletedProcess:
        """The real kubectl against the hub (text; ``check``: raise :class:`LabError` on failure)."""
        out = subprocess.run([self.kubectl_binary, "--kubeconfig", str(self.hub.kubeconfig), "--cache-dir",
                              self.kubectl_cache, *args], input=stdin, text=True, capture_output=True,
                             env=self.env(), timeout=timeout)
        if check and out.returncode != 0:
            raise LabError(f"kubectl {' '.join(args)} failed ({out.returncode}): {(out.stdout + out.stderr).strip()}")
        return out

    def cli(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
        """``fleetplane ARGS`` (a command that talks to the hub: $KUBECONFIG is its kubeconfig)."""
        return subprocess.run([*CLI, *args], text=True, capture_output=True, env=self.env(), timeout=timeout)

    def cluster_manifest(self, name: str, *, location: str | None = None,
                         resources: list[str] | None = None) -> str:
        """A Cluster object for the simulated cluster ``name`` (its admin kubeconfig inline)."""
        spec: dict[str, Any] = {}
        if location:
            spec["location"] = location
        if resources:
            spec["resources"] = list(resources)
        spec["kubeconfig"] = self.cluster(name).kubeconfig.read_text()
        return yaml.safe_dump({"apiVersion": "cluster.example.dev/v1alpha1", "kind": "Cluster",
                               "metadata": {"name": name}, "spec": spec}, sort_keys=False)

    def attach(self, *names: str, location: str | None = None, resources: list[str] | None = None,
               check: bool = True) -> subprocess.CompletedProcess:
        """``kubectl apply`` of the Cluster objects of these simulated clusters (one call; its
        time allowed grows with the number: kubectl applies them one by one)."""
        docs = "---\n".join(self.cluster_manifest(n, location=location, resources=resources) for n in names)
        return self.kubectl("apply", "-f", "-", stdin=docs, check=check, timeout=max(60.0, 0.5 * len(names)))

    def wait_until(self, what: str, check: Callable[[], Any], timeout: float = 60.0, interval: float = 0.2) -> Any:
        """Poll ``check`` until it returns something truthy; fails fast if a process died."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            self.check()
            try:
                last = check()
            except (OSError, ValueError, KeyError):
                last = None
            if last:
                return last
            time.sleep(interval)
        raise LabError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")

    def attached(self) -> set[str]:
        """Clusters whose Cluster is Ready and whose ClusterProfile is ControlPlaneHealthy."""
        clusters = (self.hub.get(CLUSTERS) or {}).get("items") or []
        profiles = (self.hub.get(PROFILES) or {}).get("items") or []
        ready = {c["metadata"]["name"] for c in clusters if _condition(c, "Ready") == "True"}
        healthy = {p["metadata"]["name"] for p in profiles if _condition(p, "ControlPlaneHealthy") == "True"}
        return ready & healthy

    def wait_attached(self, names: Iterable[str], timeout: float = 120.0) -> float:
        """Wait until every named cluster is attached (:meth:`attached`); the seconds it took."""
        want, t0 = set(names), time.monotonic()
        # listing a thousand Clusters five times a second would itself load the hub
        interval = min(max(0.2, len(want) / 500), 2.0)
        what = f"clusters {sorted(want)}" if len(want) <= 20 else f"{len(want)} clusters"
        try:
            self.wait_until(f"{what} Ready with healthy ClusterProfiles", lambda: want <= self.attached(), timeout,
                            interval)
        except LabError as err:
            raise LabError(f"{err}\n{self.describe_clusters(want)}\n{self.hub.name} log:\n{self.hub.log_tail()}") from None
        return time.monotonic() - t0

    def describe_clusters(self, names: Iterable[str]) -> str:
        """The conditions of these Clusters and of their ClusterProfiles, one line each (diagnostics)."""
        objs: dict[tuple[str, str], dict] = {}
        for kind, path in (("cluster", CLUSTERS), ("clusterprofile", PROFILES)):
            for o in (self.hub.get(path) or {}).get("items") or []:
                objs[(kind, o["metadata"]["name"])] = o
        lines = []
        for name in sorted(names):
            for kind in ("cluster", "clusterprofile"):
                o = objs.get((kind, name))
                conds = "missing" if o is None else " ".join(
                    f"{c.get('type')}={c.get('status')}" + (f"({c.get('reason')}: {c.get('message')})"
                                                            if c.get("status") != "True" else "")
                    for c in (o.get("status") or {}).get("conditions") or []) or "no conditions"
                lines.append(f"  {kind}/{name}: {conds}")
        return "\n".join(lines)

    def wait_served(self, group_version: str, resource: str, timeout: float = 60.0) -> None:
        """Wait until the hub serves ``resource`` in ``group_version`` (e.g. a type a Syncer imports)."""
        path = f"/api/{group_version}" if "/" not in group_version else f"/apis/{group_version}"
        self.wait_until(f"{resource}.{group_version} served by the hub", lambda: any(
            r.get("name") == resource for r in (self.hub.get(path) or {}).get("resources") or []), timeout)
