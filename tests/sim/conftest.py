"""Simulated clusters as real processes (``fleetplane cluster simulate``), driven with kubectl."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from ..harness import Kubectl, SimulatedCluster, wait_for


class Sim(SimulatedCluster):
    """A simulated cluster that counts as started once its nodes are Ready."""

    def start(self, timeout: float | None = None, wait: bool = True) -> Sim:
        super().start(timeout, wait)
        if wait:
            wait_for(self._nodes_ready, timeout or self.start_timeout, what=f"{self.nodes} Ready nodes (log: {self.log})")
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
