"""Simulated clusters as real processes (``fleetplane cluster simulate``), driven with kubectl."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from fleetplane.lab import CLI

from ..harness import Hub, Kubectl, wait_for


class Sim(Hub):
    """A ``fleetplane cluster simulate`` process on a free port with its own data directory."""

    def __init__(self, data_dir: Path, name: str = "sim", port: int | None = None, nodes: int = 3,
                 extra: list[str] | None = None) -> None:
        super().__init__(data_dir, port, extra)
        self.name = name
        self.nodes = nodes

    def start(self, timeout: float = 30.0) -> Sim:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        cmd = [*CLI, "--log-format", "console", "cluster", "simulate", "--name", self.name, "--data-dir", str(self.data_dir), "--port", str(self.port),
               "--nodes", str(self.nodes), *self.extra]
        self._logf = open(self.log, "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(cmd, stdout=self._logf, stderr=subprocess.STDOUT)
        wait_for(self._ready, timeout, what=f"simulated cluster on {self.url} (log: {self.log})")
        wait_for(self._nodes_ready, timeout, what=f"{self.nodes} Ready nodes (log: {self.log})")
        return self

    def _nodes_ready(self) -> bool:
        code, body = self.json("GET", "/api/v1/nodes")
        if code != 200:
            return False
        ready = [n for n in body["items"]
                 if any(c["type"] == "Ready" and c["status"] == "True" for c in n.get("status", {}).get("conditions", []))]
        return len(ready) == self.nodes

    def logs(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    """One simulated cluster for a test module: 3 nodes of 4 cpu / 8Gi, pods Ready 0.2 s after scheduling."""
    s = Sim(tmp_path_factory.mktemp("sim"), name="sim", extra=[
        "--node-cpu", "4", "--node-memory", "8Gi", "--kubelet-delay", "0.2", "--labels", "topology.kubernetes.io/region=test,tier=gold"]).start()
    yield s
    assert s.stop() == 0, s.logs()


@pytest.fixture
def ns(sim: Sim) -> Iterator[str]:
    name = "t-" + uuid.uuid4().hex[:8]
    code, body = sim.json("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    assert code == 201, body
    yield name
    sim.json("DELETE", f"/api/v1/namespaces/{name}")


@pytest.fixture
def kubectl(sim: Sim, ns: str) -> Kubectl:
    return Kubectl(sim.kubeconfig, namespace=ns)
