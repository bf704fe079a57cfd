"""A hub running the Cluster controller and the splitter, and simulated physical clusters joined
to it as Clusters (``fleetplane cluster simulate``: nodes, Deployment and ReplicaSet controllers,
scheduler, kubelets): what the end-to-end splitter tests share."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator, Sequence
from pathlib import Path

from ..fleet.conftest import PhysicalCluster
from ..harness import wait_for
from .conftest import SplitHub
from .fixtures import Fleet


class World:
    def __init__(self, hub: SplitHub, tmp: Path, resources: tuple[str, ...] = ("deployments.apps",)) -> None:
        self.hub = hub
        self.tmp = tmp
        self.resources = list(resources)  # what the Clusters' Syncers sync
        self.fleet = Fleet(hub, tmp, crd=False)  # the Syncers import the type
        self.clusters: dict[str, PhysicalCluster] = {}

    def join(self, name: str, nodes: int = 2) -> PhysicalCluster:
        c = PhysicalCluster(self.tmp / name, name, nodes=nodes).start()
        self.clusters[name] = c
        self.fleet.apply({"apiVersion": "cluster.example.dev/v1alpha1", "kind": "Cluster",
                          "metadata": {"name": name, "namespace": "default"},
                          "spec": {"kubeconfig": c.kubeconfig_text(), "resources": self.resources,
                                   "location": "eu"}})
        wait_for(lambda: name in self.healthy(), 30, interval=0.1, what=f"ClusterProfile {name} healthy")
        return c

    def healthy(self) -> set[str]:
        items = self.fleet.api("GET", "/apis/multicluster.x-k8s.io/v1alpha1/clusterprofiles")[1]["items"]
        return {p["metadata"]["name"] for p in items
                if any(c["type"] == "ControlPlaneHealthy" and c["status"] == "True"
                       for c in (p.get("status") or {}).get("conditions") or [])}

    def status(self, name: str) -> dict:
        return (self.fleet.get(name) or {}).get("status") or {}

    def wait_ready(self, name: str, n: int, timeout: float = 40) -> dict:
        return wait_for(lambda: (s := self.status(name)).get("readyReplicas") == n and s.get("availableReplicas") == n
                        and s.get("replicas") == n and s, timeout, interval=0.2,
                        what=f"{name} {n}/{n} ready (now {self.status(name)}, split {self.fleet.split(name)})")


@contextlib.contextmanager
def joined(tmp: Path, clusters: Sequence[str], extra: Sequence[str] = ()) -> Iterator[World]:
    """A hub with the Cluster controller (and ``extra`` flags) with ``clusters`` joined; every
    process stopped afterwards (a cluster a test left frozen is thawed first)."""
    hub = SplitHub(tmp / "hub", extra=["--cluster-controller", *extra]).start()
    w = World(hub, tmp)
    try:
        for name in clusters:
            w.join(name)
        yield w
    finally:
        for c in w.clusters.values():
            if c.proc is not None and c.proc.poll() is None:
                c.proc.send_signal(signal.SIGCONT)
            c.stop(signal.SIGTERM)
        hub.stop()
