"""Fixtures for the Cluster controller tests: a hub with the controller in its process, and
physical-cluster processes (``fleetplane cluster simulate`` when available, else a plain hub as a
stand-in for what needs no workload types).

The hub and the two clusters are shared by the session (per xdist worker); every test works in its
own logical cluster, so tests stay independent (a test that kills a cluster starts it again).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ..harness import Hub, Kubectl, SimulatedCluster, wait_for

PROBE_INTERVAL = 0.3

#: how the test hub runs the controller: probe often, read Nodes often, poll types often, and
#: report a failing cluster at once (tests/fleet/test_cluster_controller.py covers the threshold)
CONTROLLER_FLAGS = {"--cluster-probe-interval": str(PROBE_INTERVAL), "--cluster-details-interval": "1",
                    "--syncer-poll-interval": "1", "--cluster-failure-threshold": "0"}


def fleetplane(command: str) -> list[str]:
    """How to run ``fleetplane <command>``."""
    return [sys.executable, "-m", "fleetplane.cli.main", "--log-format", "console"]


class FleetHub(Hub):
    """A hub running the Cluster controller (``fleetplane start``), probing often."""

    start_timeout = 20.0

    def cli_args(self) -> list[str]:
        flags = [x for flag, value in CONTROLLER_FLAGS.items() for x in (flag, value)]
        return ["start", *self.controllers_mode(), *flags, *self.extra]  # a test's own flags come later, so they win


class PhysicalCluster:
    """A physical cluster process on a fixed port and data directory (so it can be killed and
    started again as the same cluster): ``fleetplane cluster simulate`` or a stand-in hub."""

    def __init__(self, data_dir: Path, name: str, simulate: bool | None = None, nodes: int = 2) -> None:
        self.data_dir = data_dir
        self.name = name
        self.simulate = True if simulate is None else simulate
        self.nodes = nodes
        self.server = SimulatedCluster(data_dir, name, nodes=nodes, extra=["--kubelet-delay", "0.1"],
                                       log_name="cluster.log") if self.simulate else Hub(data_dir)
        self.port = self.server.port

    @property
    def proc(self) -> subprocess.Popen | None:
        return self.server.proc

    def start(self, wait: bool = True) -> PhysicalCluster:
        self.server.start(wait=wait)
        return self

    def ensure_running(self) -> None:
        """Start it again if a test killed it (and failed before restarting it)."""
        if self.proc is None or self.proc.poll() is not None:
            self.start()

    def wait_ready(self) -> None:
        self.server.wait_ready(30)

    def stop(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.server.stop(sig)

    @property
    def kubeconfig(self) -> Path:
        return self.data_dir / "admin.kubeconfig"

    def kubeconfig_text(self) -> str:
        return self.kubeconfig.read_text()

    def kubectl(self) -> Kubectl:
        return Kubectl(self.kubeconfig)


class Fleet:
    """One logical cluster of the fleet hub, with kubectl bound to it."""

    def __init__(self, hub: FleetHub, tmp_path: Path) -> None:
        self.hub = hub
        self.lc = "fleet-" + uuid.uuid4().hex[:8]
        self.kubeconfig = hub.kubeconfig_for(self.lc, tmp_path)
        self.kubectl = Kubectl(self.kubeconfig, namespace="default")
        self.tmp_path = tmp_path

    def apply_cluster(self, name: str, kubeconfig: str | None, namespace: str = "default", **spec: Any) -> None:
        doc: dict[str, Any] = {"apiVersion": "cluster.example.dev/v1alpha1", "kind": "Cluster",
                               "metadata": {"name": name, "namespace": namespace}, "spec": dict(spec)}
        labels = doc["spec"].pop("labels", None)
        if labels:
            doc["metadata"]["labels"] = labels
        if kubeconfig is not None:
            doc["spec"]["kubeconfig"] = kubeconfig
        self.kubectl("apply", "-n", namespace, "-f", "-", stdin=yaml.safe_dump(doc))

    def get(self, kind: str, name: str, namespace: str = "default") -> dict | None:
        """The object, or None when it does not exist (any other failure fails the test)."""
        r = self.kubectl("get", kind, name, "-n", namespace, "-o", "json", check=False)
        if r.code == 0:
            return json.loads(r.out)
        if "NotFound" in r.err or "not found" in r.err:
            return None
        raise AssertionError(f"kubectl get {kind} {namespace}/{name} failed: {r.err}")

    def conditions(self, name: str, namespace: str = "default", kind: str = "cluster") -> dict[str, tuple[str, str, str]]:
        obj = self.get(kind, name, namespace) or {}
        return {c["type"]: (c["status"], c.get("reason", ""), c.get("message", ""))
                for c in (obj.get("status") or {}).get("conditions") or []}

    def wait_condition(self, name: str, type_: str, status: str, reason: str | None = None, *,
                       namespace: str = "default", kind: str = "cluster", timeout: float = 15.0) -> tuple[str, str, str]:
        def check() -> Any:
            c = self.conditions(name, namespace, kind).get(type_)
            if c and c[0] == status and (reason is None or c[1] == reason):
                return c
            return None

        try:
            return wait_for(check, timeout, interval=0.1, what=f"{kind} {namespace}/{name} {type_}={status} {reason or ''}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; {type_} is now {self.conditions(name, namespace, kind).get(type_)}") from None

    def events(self, name: str, namespace: str = "default") -> list[dict]:
        out = self.kubectl("get", "events", "-n", namespace, "--field-selector", f"involvedObject.name={name}",
                           "-o", "json").json()
        return out.get("items") or []


@pytest.fixture(scope="session")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PhysicalCluster, PhysicalCluster]]:
    """Two physical clusters, started side by side."""
    pair = tuple(PhysicalCluster(tmp_path_factory.mktemp(n), n).start(wait=False) for n in ("cluster-a", "cluster-b"))
    for c in pair:
        c.wait_ready()
    yield pair  # type: ignore[misc]
    for c in pair:
        if c.proc is not None and c.proc.poll() is None:
            c.proc.send_signal(signal.SIGTERM)
    for c in pair:
        c.stop(signal.SIGTERM)


@pytest.fixture(scope="session")
def cluster_a(clusters: tuple[PhysicalCluster, PhysicalCluster]) -> PhysicalCluster:
    return clusters[0]


@pytest.fixture(scope="session")
def cluster_b(clusters: tuple[PhysicalCluster, PhysicalCluster]) -> PhysicalCluster:
    return clusters[1]


@pytest.fixture(scope="session")
def fleet_hub(tmp_path_factory: pytest.TempPathFactory, cluster_a: PhysicalCluster,
              cluster_b: PhysicalCluster) -> Iterator[FleetHub]:
    """Set up after (so torn down before) the clusters: its Syncers' watches end first."""
    h = FleetHub(tmp_path_factory.mktemp("fleethub")).start()
    yield h
    h.stop()


@pytest.fixture
def fleet(fleet_hub: FleetHub, tmp_path: Path) -> Fleet:
    return Fleet(fleet_hub, tmp_path)
