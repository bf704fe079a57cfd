"""A built-in kind the cluster serves in several versions is imported in all of them when the hub
converts them: HorizontalPodAutoscalers (autoscaling/v2 stored, v1 served), so ``kubectl
autoscale`` of any kubectl (1.28-1.32 POST autoscaling/v1, 1.33 v2) works against the hub, the
object reads in both versions, and the Syncer syncs it down as the cluster's v2 object."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fleetplane.fleet.syncer.discovery import ApiResource
from fleetplane.fleet.syncer.typesync import CONVERTED_BUILTINS, TypeReport, import_versions
from fleetplane.registry.catalog import convertible_builtins

from ..harness import SimulatedCluster, wait_for
from .conftest import Api, target

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
HPA_CRD = f"{CRDS}/horizontalpodautoscalers.autoscaling"
NS = "/api/v1/namespaces"


def hpas(version: str, name: str = "") -> str:
    base = f"/apis/autoscaling/{version}/namespaces/demo/horizontalpodautoscalers"
    return f"{base}/{name}" if name else base


def cpu_target(hpa: dict) -> object:
    metrics = (hpa.get("spec") or {}).get("metrics") or []
    return metrics[0]["resource"]["target"] if metrics else None


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimulatedCluster]:
    s = SimulatedCluster(tmp_path_factory.mktemp("sim"), "simv", nodes=1, extra=["--kubelet-delay", "0.1"]).start()
    yield s
    s.stop()


def test_the_syncer_knows_the_kinds_the_hub_converts():
    """The Syncer may not import the registry: its list is the catalog's, kept equal here."""
    assert CONVERTED_BUILTINS == convertible_builtins()


def res(group: str, version: str, resource: str, kind: str) -> ApiResource:
    return ApiResource(group, version, resource, kind, True, preferred=version == "v2")


def test_which_versions_are_imported():
    v2, v1, v2beta2 = (res("autoscaling", v, "horizontalpodautoscalers", "HorizontalPodAutoscaler")
                       for v in ("v2", "v1", "v2beta2"))
    report = TypeReport()
    assert import_versions(v2, [v2, v1], report) == [v2, v1] and not report.notes
    # an old cluster's v2beta2: the hub has no converter for it, so it is left out, with a note
    assert import_versions(v2, [v2, v2beta2, v1], report) == [v2, v1]
    assert report.notes["horizontalpodautoscalers.autoscaling"] == (
        "imported in v2, v1 only: the cluster also serves v2beta2, which the hub cannot convert to v2")
    # a built-in without converters: the preferred version alone
    b1, b2 = res("example.io", "v1", "gadgets", "Gadget"), res("example.io", "v2", "gadgets", "Gadget")
    assert import_versions(b2, [b2, b1], report) == [b2]
    assert "v1, which the hub cannot convert" in report.notes["gadgets.example.io"]


def test_hpas_imported_in_both_versions_and_kubectl_autoscale_works(hub, sim, start_syncer, names, kubectl_in):
    lc, cluster = names("lc"), names("c")
    up, down = Api(hub, lc), Api(sim, "root")
    s = start_syncer(cluster, target(hub, lc), target(sim, "root"),
                     resources=("deployments.apps", "horizontalpodautoscalers.autoscaling"))
    crd = wait_for(lambda: (c := up.get(HPA_CRD)) and len(c["spec"]["versions"]) == 2 and c, 30,
                   what="HPAs imported in two versions")
    versions = {v["name"]: v for v in crd["spec"]["versions"]}
    assert versions["v2"]["storage"] and versions["v2"]["served"]
    assert not versions["v1"]["storage"] and versions["v1"]["served"]
    assert crd["spec"]["conversion"] == {"strategy": "None"}
    wait_for(lambda: s.health().reason == "Synced", 30, what="syncer healthy")
    assert "horizontalpodautoscalers.autoscaling" not in s.health().notes
    assert "targetCPUUtilizationPercentage" in str(versions["v1"]["schema"])

    up.create(NS, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}})
    up.create("/apis/apps/v1/namespaces/demo/deployments", {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "labels": {"kcp.dev/cluster": cluster}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "resources": {"requests": {"cpu": "10m"}}}]}}}})
    for minor, percent in (("1.28", 50), ("1.32", 60), ("1.33", 70)):
        name = f"web-{minor.replace('.', '')}"
        k = kubectl_in(lc, minor, namespace="demo")
        out = k("autoscale", "deployment", "web", f"--name={name}", "--min=1", "--max=4", f"--cpu-percent={percent}").out
        assert f"horizontalpodautoscaler.autoscaling/{name} autoscaled" in out
        v1, v2 = up.get(hpas("v1", name)), up.get(hpas("v2", name))
        assert v1["apiVersion"] == "autoscaling/v1" and v1["spec"]["targetCPUUtilizationPercentage"] == percent
        assert "metrics" not in v1["spec"]
        assert v2["apiVersion"] == "autoscaling/v2" and "targetCPUUtilizationPercentage" not in v2["spec"]
        assert cpu_target(v2) == {"type": "Utilization", "averageUtilization": percent}
        assert v2["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
        assert (v1["spec"]["minReplicas"], v1["spec"]["maxReplicas"]) == (1, 4)
        assert k.get_json("horizontalpodautoscalers.v1.autoscaling", name)["spec"]["targetCPUUtilizationPercentage"] == percent

    # one of them labelled for the cluster: the Syncer writes the cluster's v2 object
    kubectl_in(lc, "1.28", namespace="demo")("label", "hpa", "web-128", f"kcp.dev/cluster={cluster}")
    synced = wait_for(lambda: down.get(hpas("v2", "web-128")), 30, what="the HPA in the cluster")
    assert cpu_target(synced) == {"type": "Utilization", "averageUtilization": 50}
    assert synced["spec"]["scaleTargetRef"]["name"] == "web"
    # the cluster reads it in v1 too (its own conversion), and a v1 patch on the hub reaches it as v2
    assert down.get(hpas("v1", "web-128"))["spec"]["targetCPUUtilizationPercentage"] == 50
    up.merge(hpas("v1", "web-128"), {"spec": {"targetCPUUtilizationPercentage": 80}})
    wait_for(lambda: cpu_target(down.get(hpas("v2", "web-128")) or {}) == {"type": "Utilization", "averageUtilization": 80},
             30, what="the v1 patch synced down as v2")
