"""Core (v1) types a cluster brings that the hub does not serve itself (Pods, Services...): imported
as CRDs named ``<plural>.core`` in the core group and served under ``/api/v1`` on the hub, with the
same negotiation between clusters as any other import."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from fleetplane.fleet.syncer import DEFAULT_RESOURCES

from ..harness import SimulatedCluster, wait_for
from .conftest import Api, target

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
PODS = "/api/v1/namespaces/demo/pods"


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimulatedCluster]:
    s = SimulatedCluster(tmp_path_factory.mktemp("sim"), "sim1", nodes=2, extra=["--kubelet-delay", "0.1"]).start()
    yield s
    s.stop()


def gadget_crd(color_type: str = "string", extra: dict | None = None) -> dict:
    """A core-group CRD in a cluster that is itself a fleetplane hub (kcp-like)."""
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gadgets.core"},
            "spec": {"group": "", "scope": "Namespaced",
                     "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                                   "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                       "spec": {"type": "object", "properties": {"color": {"type": color_type},
                                                                                 **(extra or {})}},
                                       "status": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}}}}]}}


def test_pods_are_imported_served_under_api_v1_and_sync_down(hub, sim, start_syncer, names, kubectl_in):
    lc, cluster = names("lc"), names("c")
    up, down = Api(hub, lc), Api(sim, "root")
    s = start_syncer(cluster, target(hub, lc), target(sim, "root"), resources=("pods", "configmaps"))
    crd = wait_for(lambda: up.get(f"{CRDS}/pods.core"), 20, what="pods imported as pods.core")
    assert crd["spec"]["group"] == "" and crd["spec"]["names"]["kind"] == "Pod"
    assert crd["metadata"]["annotations"]["fleetplane.io/origin"] == "imported"
    assert f"fleetplane.io/imported-from-{cluster}" in crd["metadata"]["labels"]
    assert up.get(f"{CRDS}/configmaps.core") is None  # the hub serves ConfigMaps itself
    h = wait_for(lambda: (x := s.health()).reason == "Synced" and x, 20, what="syncer healthy")
    assert "pods.v1" in h.types and not h.type_errors

    k = kubectl_in(lc, "1.33", namespace="demo")
    # (kubectl --raw takes the path from the server's root, not from the kubeconfig's /clusters/<lc>)
    assert "pods" in [r["name"] for r in json.loads(k("get", "--raw", f"/clusters/{lc}/api/v1").out)["resources"]]
    explained = k("explain", "pod.spec").out
    assert "containers" in explained and "nodeName" in explained
    up.ns("demo")
    k("apply", "-f", "-", stdin=json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"kcp.dev/cluster": cluster}},
        "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "resources": {"requests": {"cpu": "10m"}}}]}}))
    wait_for(lambda: down.get(f"{PODS}/web"), 20, what="the Pod in the cluster")
    # the cluster runs it; its status comes up to the hub and prints with kube's Pod columns
    wait_for(lambda: ((up.get(f"{PODS}/web") or {}).get("status") or {}).get("phase") == "Running", 30,
             what="Running on the hub")
    table = k("get", "pods").out.splitlines()
    assert table[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert table[1].split()[:3] == ["web", "1/1", "Running"], table
    k("delete", "pod", "web", "--wait=false")
    wait_for(lambda: down.get(f"{PODS}/web") is None or (down.get(f"{PODS}/web") or {}).get("metadata", {}).get(
        "deletionTimestamp"), 20, what="deleted in the cluster")
    wait_for(lambda: up.get(f"{PODS}/web") is None, 30, what="gone from the hub")


def test_core_crds_of_two_clusters_negotiate_like_any_import(hub, downstream, start_syncer, names):
    """Clusters that serve a core type from CRDs of their own (kcp-like): the first schema stays, an
    incompatible second is a SchemaConflict, a compatible third is recorded as an importer."""
    lc, d1, d2, d3 = names("lc"), names("dc"), names("dc"), names("dc")
    c1, c2, c3 = names("c"), names("c"), names("c")
    up = Api(hub, lc)
    Api(downstream, d1).crd(gadget_crd("string"))
    Api(downstream, d2).crd(gadget_crd("integer"))
    Api(downstream, d3).crd(gadget_crd("string", {"size": {"type": "integer"}}))
    s1 = start_syncer(c1, target(hub, lc), target(downstream, d1), resources=("gadgets",))
    wait_for(lambda: up.get(f"{CRDS}/gadgets.core"), 15, what="imported from the first cluster")
    wait_for(lambda: s1.health().reason == "Synced", 15, what="first syncer healthy")
    s2 = start_syncer(c2, target(hub, lc), target(downstream, d2), resources=("gadgets",))
    s3 = start_syncer(c3, target(hub, lc), target(downstream, d3), resources=("gadgets",))
    h2 = wait_for(lambda: (x := s2.health()).conflicts and x, 15, what="conflict reported")
    assert h2.reason == "SchemaConflict"
    assert "spec.color: string on the hub, integer in the cluster" in h2.conflicts[0], h2.conflicts
    wait_for(lambda: f"fleetplane.io/imported-from-{c3}" in up.get(f"{CRDS}/gadgets.core")["metadata"]["labels"],
             15, what="the compatible cluster recorded")
    assert s3.health().reason == "Synced"
    # objects of the imported core type sync down like any other
    up.ns("app")
    up.create("/api/v1/namespaces/app/gadgets", {"apiVersion": "v1", "kind": "Gadget",
                                                "metadata": {"name": "g", "labels": {"kcp.dev/cluster": c1}},
                                                "spec": {"color": "red"}})
    wait_for(lambda: Api(downstream, d1).get("/api/v1/namespaces/app/gadgets/g"), 15, what="synced down")


def test_default_types_the_cluster_lacks_are_notes_not_errors(hub, downstream, start_syncer, names):
    """The default set names workload types (services, statefulsets.apps...) a small cluster may
    not serve: those are skipped with a note and the Syncer is healthy."""
    lc, dc, cluster = names("lc"), names("dc"), names("c")
    up = Api(hub, lc)
    s = start_syncer(cluster, target(hub, lc), target(downstream, dc), resources=DEFAULT_RESOURCES)
    h = wait_for(lambda: (x := s.health()).reason == "Synced" and x, 20, what="healthy with the default set")
    assert not h.type_errors
    assert h.notes["services"] == f"cluster {cluster} does not serve services"
    assert h.notes["statefulsets.apps"] == f"cluster {cluster} does not serve statefulsets.apps"
    assert {t.split(".")[0] for t in h.types} == {"configmaps", "secrets", "serviceaccounts"}
    assert up.get(f"{CRDS}/services.core") is None


def test_kubectl_set_image_scale_and_rollout_on_an_imported_deployment(hub, sim, start_syncer, names, kubectl_in):
    """The hub's Deployments are an imported CRD; kubectl's strategic merge patches work on them as
    on a cluster (merged by the built-in's keys: containers by name) and reach the cluster."""
    lc, cluster = names("lc"), names("c")
    up, down = Api(hub, lc), Api(sim, "root")
    start_syncer(cluster, target(hub, lc), target(sim, "root"), resources=("deployments.apps",))
    wait_for(lambda: up.get(f"{CRDS}/deployments.apps"), 20, what="deployments imported")
    up.ns("demo")
    k = kubectl_in(lc, "1.33", namespace="demo")
    k("apply", "-f", "-", stdin=json.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "labels": {"kcp.dev/cluster": cluster}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                     {"name": "web", "image": "nginx:1.27", "resources": {"requests": {"cpu": "10m"}}},
                     {"name": "log", "image": "busybox:1"}]}}}}))
    deploys = "/apis/apps/v1/namespaces/demo/deployments"
    wait_for(lambda: down.get(f"{deploys}/web"), 20, what="the Deployment in the cluster")
    k("set", "image", "deployment/web", "web=nginx:1.28")
    containers = up.get(f"{deploys}/web")["spec"]["template"]["spec"]["containers"]
    # (with the built-in's container defaults, as a cluster shows them)
    defaults = {"imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File"}
    assert containers == [{"name": "web", "image": "nginx:1.28", "resources": {"requests": {"cpu": "10m"}}, **defaults},
                          {"name": "log", "image": "busybox:1", "resources": {}, **defaults}], containers
    k("scale", "deployment/web", "--replicas=2")
    k("rollout", "restart", "deployment/web")
    hub_obj = up.get(f"{deploys}/web")
    assert hub_obj["spec"]["replicas"] == 2
    assert "kubectl.kubernetes.io/restartedAt" in hub_obj["spec"]["template"]["metadata"]["annotations"]

    def cluster_has_it() -> bool:
        d = down.get(f"{deploys}/web") or {}
        spec = d.get("spec") or {}
        return spec.get("replicas") == 2 and [c["image"] for c in spec["template"]["spec"]["containers"]] == [
            "nginx:1.28", "busybox:1"] and "kubectl.kubernetes.io/restartedAt" in (
                spec["template"]["metadata"].get("annotations") or {})
    wait_for(cluster_has_it, 20, what="the patched Deployment in the cluster")
    assert "successfully rolled out" in k("rollout", "status", "deployment/web", "--timeout=60s").out
    k("rollout", "pause", "deployment/web")
    assert up.get(f"{deploys}/web")["spec"]["paused"] is True
    k("rollout", "resume", "deployment/web")
    assert not up.get(f"{deploys}/web")["spec"].get("paused")
