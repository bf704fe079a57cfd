"""HorizontalPodAutoscalers across the fleet, end to end with real processes: a hub running the
Cluster controller (Syncers), the splitter and the HPA controller, and two simulated clusters whose
HPA controllers scale on their Pods' simulated CPU. ``kubectl autoscale`` on the hub makes one
child HPA per cluster with split bounds; CPU raised in one cluster scales that cluster's child, the
replicas flow up to the hub, the splitter leaves them, and the parent shows the new total."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from fleetplane.fleet.identities import syncer_role_binding

from ..harness import Kubectl, SimulatedCluster, wait_for
from ..splitter.conftest import SplitHub
from ..splitter.fixtures import Fleet, deployment

CPU = "sim.fleetplane.io/cpu-utilization"
RESOURCES = ["deployments.apps", "horizontalpodautoscalers.autoscaling"]


class World:
    def __init__(self, hub: SplitHub, tmp: Path) -> None:
        self.hub, self.tmp = hub, tmp
        self.fleet = Fleet(hub, tmp, crd=False)  # the Syncers import the types
        self.clusters: dict[str, SimulatedCluster] = {}

    def join(self, name: str) -> SimulatedCluster:
        # kube's downscale stabilisation (300 s; no test here scales down): on a loaded machine a
        # Pod seen unready for a moment makes an HPA propose fewer replicas (kube counts only ready
        # Pods), which a short window would let through and the split would rightly follow
        c = SimulatedCluster(self.tmp / name, name, nodes=2, log_name="cluster.log", extra=[
            "--kubelet-delay", "0.1", "--hpa-sync-period", "1", "--hpa-downscale-stabilization", "300"]).start()
        self.clusters[name] = c
        cfg = c.kubeconfig.read_text()
        # the Syncer's grant for the types beyond its defaults: the logical cluster's administrator gives it
        for obj in syncer_role_binding(self.fleet.lc, name, resources=RESOURCES):
            if obj["metadata"]["name"].endswith(":types"):
                self.fleet.apply(obj)
        self.fleet.apply({"apiVersion": "cluster.example.dev/v1alpha1", "kind": "Cluster",
                          "metadata": {"name": name, "namespace": "default"},
                          "spec": {"kubeconfig": cfg, "resources": RESOURCES, "location": "eu"}})
        return c

    def hpa(self, name: str) -> dict | None:
        code, body = self.fleet.api("GET", f"/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/{name}")
        return body if code == 200 else None


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("hpa-e2e")
    hub = SplitHub(tmp / "hub", extra=["--cluster-controller"]).start()
    w = World(hub, tmp)
    try:
        w.join("east")
        w.join("west")
        wait_for(lambda: w.fleet.api("GET", "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers")[0] == 200,
                 60, interval=0.2, what="HPAs imported into the hub")
        yield w
    finally:
        for c in w.clusters.values():
            c.stop(signal.SIGTERM)
        hub.stop()


def _cond(hpa: dict, ctype: str) -> dict:
    return next((c for c in (hpa.get("status") or {}).get("conditions") or [] if c["type"] == ctype), {})


def test_hub_hpa_splits_and_follows_the_clusters(world: World) -> None:
    f = world.fleet
    tpl = {"metadata": {"labels": {"app": "web"}, "annotations": {CPU: "50"}},
           "spec": {"containers": [{"name": "web", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}]}}
    f.apply(deployment("web", 4, template=tpl))
    f.wait_split("web", {"east": 2, "west": 2}, timeout=60)
    # kubectl 1.33 creates autoscaling/v2 (the hub serves the clusters' preferred version); 1.28-1.32 post v1
    k = Kubectl(f.kubeconfig, minor="1.33", namespace="default")
    assert k("autoscale", "deployment", "web", "--min=2", "--max=6").out.strip() == \
        "horizontalpodautoscaler.autoscaling/web autoscaled"

    def children() -> dict[str, dict]:
        code, body = f.api("GET", "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers?labelSelector=kcp.dev/owned-by%3Dweb")
        assert code == 200, body
        return {h["metadata"]["labels"]["kcp.dev/cluster"]: h for h in body["items"] if not h["metadata"].get("deletionTimestamp")}

    kids = wait_for(lambda: len(c := children()) == 2 and c, 30, interval=0.2, what="two child HPAs")
    for name, h in kids.items():
        assert h["metadata"]["name"] == f"web--{name}"
        assert h["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": f"web--{name}"}
        assert (h["spec"]["minReplicas"], h["spec"]["maxReplicas"]) == (1, 3)
        assert h["metadata"]["ownerReferences"][0]["name"] == "web"
    # the clusters run them (the Syncer carries them down) and report their status up
    for name, c in world.clusters.items():
        ck = Kubectl(c.kubeconfig, namespace="default")
        wait_for(lambda ck=ck, name=name: ck("get", "hpa", f"web--{name}", check=False).code == 0, 30, interval=0.3,
                 what=f"HPA web--{name} in cluster {name}")
    def statuses() -> str:
        """What the parent, the hub's children and the clusters' HPAs report (for a timeout)."""
        out = {"parent": (world.hpa("web") or {}).get("status"),
               "hub children": {n: h.get("status") for n, h in children().items()}}
        for name, c in world.clusters.items():
            got = Kubectl(c.kubeconfig, namespace="default")("get", "hpa", f"web--{name}", "-o", "json", check=False)
            out[f"cluster {name}"] = got.json().get("status") if got.code == 0 else got.err
        return repr(out)

    try:
        hpa = wait_for(lambda: (h := world.hpa("web")) and _cond(h, "ScalingActive").get("status") == "True"
                       and (h.get("status") or {}).get("currentReplicas") == 4 and h, 60, interval=0.3,
                       what="the parent HPA active with 4 replicas")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; now: {statuses()}") from None
    assert hpa["status"]["currentMetrics"][0]["resource"]["current"]["averageUtilization"] == 50
    rows = [r.split() for r in k("get", "hpa", "web").out.splitlines()]
    assert rows[0] == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
    assert rows[1][:6] == ["web", "Deployment/web", "cpu:", "50%/80%", "2", "6"]

    # hot in east: 160 % -> ceil(2 * 160 / 80) = 4, capped by its max 3
    east = Kubectl(world.clusters["east"].kubeconfig, namespace="default")
    # (on the Pods: the template is the hub's, which the Syncer keeps; new Pods report 50 %)
    east("annotate", "pods", "-l", "app=web", f"{CPU}=160", "--overwrite")
    wait_for(lambda: east.get_json("deployment", "web--east")["spec"]["replicas"] == 3, 60, interval=0.3,
             what="east's HPA scaling its child to 3")
    # the replicas flow up to the hub child and the splitter leaves them there
    f.wait_split("web", {"east": 3, "west": 2}, timeout=60)
    wait_for(lambda: (f.get("web") or {}).get("spec", {}).get("replicas") == 5, 30, interval=0.2,
             what="the parent Deployment's replicas following the sum")
    wait_for(lambda: (f.get("web") or {}).get("status", {}).get("replicas") == 5, 60, interval=0.3,
             what="the parent Deployment's status showing 5")
    hpa = wait_for(lambda: (h := world.hpa("web")) and h["status"].get("currentReplicas") == 5 and h, 60, interval=0.3,
                   what="the parent HPA's status showing 5")
    assert hpa["status"]["desiredReplicas"] == 5
    assert f.split("web") == {"east": 3, "west": 2}  # still: nobody fought the HPA
    # the parent HPA deleted: its children go, in the clusters too, and the Deployment is no longer marked
    k("delete", "hpa", "web")
    wait_for(lambda: not children(), 30, interval=0.2, what="the child HPAs deleted")
    wait_for(lambda: east("get", "hpa", "web--east", check=False).code != 0, 30, interval=0.3,
             what="east's HPA deleted in the cluster")
    wait_for(lambda: "autoscaling.fleetplane.io/hpa" not in ((f.get("web") or {})["metadata"].get("annotations") or {}), 30,
             interval=0.2, what="the parent no longer marked")


def test_hpa_on_an_unsplit_target_says_so(world: World) -> None:
    f = world.fleet
    # its own split Deployment (no test relies on another's leftovers); the HPA names a child of it
    f.apply(deployment("solo", 2))
    f.wait_split("solo", {"east": 1, "west": 1}, timeout=60)
    f.apply({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "ghost", "namespace": "default"},
             "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "solo--east"}, "maxReplicas": 3}})
    # (until the controller's informer has the child it may say FailedGetScale first)
    hpa = wait_for(lambda: (h := world.hpa("ghost")) and _cond(h, "ScalingActive").get("reason") == "TargetNotSplit" and h,
                   30, interval=0.2, what="ScalingActive False, TargetNotSplit")
    assert _cond(hpa, "ScalingActive")["status"] == "False"
    code, body = f.api("GET", "/api/v1/namespaces/default/events?fieldSelector=reason%3DTargetNotSplit")
    assert code == 200 and any(e["involvedObject"]["name"] == "ghost" for e in body["items"]), body
