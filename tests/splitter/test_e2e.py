"""End to end with real processes: a hub running the Cluster controller (with its Syncers) and the
splitter, and simulated physical clusters (``fleetplane cluster simulate``: nodes, Deployment and
ReplicaSet controllers, scheduler, kubelets). Nothing is written by hand but Clusters and
Deployments: ClusterProfiles come from the Cluster controller, child status from the clusters.

The hub learns Deployments from the clusters: the Syncers import ``deployments.apps`` as a CRD."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections.abc import Iterator

import pytest

from ..harness import wait_for
from .conftest import SplitHub
from .fixtures import deployment
from .world import World


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("e2e")
    hub = SplitHub(tmp / "hub", extra=["--cluster-controller"]).start()
    w = World(hub, tmp)
    try:
        w.join("east")
        w.join("west")
        yield w
    finally:
        for c in w.clusters.values():
            c.stop(signal.SIGTERM)
        hub.stop()


def test_fifteen_replicas_over_two_clusters(world: World) -> None:
    f = world.fleet
    f.apply(deployment("web", 15))
    f.wait_split("web", {"east": 7, "west": 8})
    world.wait_ready("web", 15)
    rows = {r.split()[0]: r.split()[1] for r in f.kubectl("get", "deployments").out.splitlines()[1:]}
    assert rows == {"web": "15/15", "web--east": "7/7", "web--west": "8/8"}
    out = f.kubectl("rollout", "status", "deployment/web", "--timeout=30s").out
    assert 'deployment "web" successfully rolled out' in out
    # the replicas run in the clusters
    for name, n in (("east", 7), ("west", 8)):
        pods = world.clusters[name].kubectl()("get", "pods", "-n", "default", "-l", "app=web", "-o", "name").out.split()
        assert len(pods) == n
    # scale up and down: only the difference moves
    f.kubectl("scale", "deployment/web", "--replicas=20")
    f.wait_split("web", {"east": 10, "west": 10})
    world.wait_ready("web", 20)
    f.kubectl("scale", "deployment/web", "--replicas=5")
    f.wait_split("web", {"east": 2, "west": 3})
    world.wait_ready("web", 5)
    f.kubectl("rollout", "status", "deployment/web", "--timeout=30s")


def test_a_third_cluster_joins_then_is_killed_mid_rollout(world: World) -> None:
    f = world.fleet
    f.apply(deployment("app", 15))
    f.wait_split("app", {"east": 7, "west": 8})
    world.wait_ready("app", 15)
    floor = {"min": 15}
    stop = threading.Event()

    def watch_availability() -> None:  # nothing serving goes before its replacement
        while not stop.is_set():
            s = world.status("app")
            if s.get("availableReplicas") is not None:
                floor["min"] = min(floor["min"], s["availableReplicas"])
            time.sleep(0.05)

    t = threading.Thread(target=watch_availability, daemon=True)
    t.start()
    try:
        world.join("north")
        f.wait_split("app", {"east": 5, "west": 5, "north": 5}, timeout=40)
        world.wait_ready("app", 15)
    finally:
        stop.set()
        t.join()
    assert floor["min"] >= 15, floor
    # a rollout starts, and north dies in the middle of it
    # (kubectl set image sends a strategic merge patch, which the hub refuses for CRDs, as kube does)
    f.kubectl("patch", "deployment/app", "--type=json", "-p",
              '[{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "nginx:1.28"}]')
    world.clusters["north"].stop(signal.SIGKILL)
    wait_for(lambda: "north" not in world.healthy(), 20, interval=0.1, what="north unhealthy")
    # after the grace period its replicas are evicted: replaced in the clusters that are left, while
    # north's child is kept as it was (frozen, not counted) for when north returns
    f.wait_split("app", {"east": 7, "west": 8, "north": 5}, timeout=40)
    world.wait_ready("app", 15)
    images = {c: k["spec"]["template"]["spec"]["containers"][0]["image"] for c, k in f.children("app").items()}
    assert images["east"] == images["west"] == "nginx:1.28"
    out = subprocess.run([f.kubectl.binary, "--kubeconfig", str(f.kubeconfig), "-n", "default", "rollout", "status",
                          "deployment/app", "--timeout=40s"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    reasons = [(e["reason"], e["message"]) for e in f.events("app")]
    assert any(r == "Rebalancing" for r, _ in reasons), reasons
    d = wait_for(lambda: "north" in f.decision("app").get("filtered", {}) and f.decision("app"), 10, what="decision")
    assert "north" in d.get("filtered", {}) and d["filtered"]["north"].startswith("unhealthy since")
