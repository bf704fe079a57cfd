"""Against a simulated physical cluster (``fleetplane cluster simulate``): Deployments imported
from the cluster's OpenAPI v3, run there, and reported back as kube-apiserver would."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ..harness import Kubectl, SimulatedCluster, wait_for
from .conftest import Api, state, target

DEPLOYS = "/apis/apps/v1/namespaces/demo/deployments"


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimulatedCluster]:
    s = SimulatedCluster(tmp_path_factory.mktemp("sim"), "sim1", nodes=2, extra=["--kubelet-delay", "0.1"]).start()
    yield s
    s.stop()


def test_deployment_runs_in_the_cluster_and_reports_ready(hub, sim, start_syncer, names, tmp_path):
    lc, cluster = names("lc"), names("c")
    up, down = Api(hub, lc), Api(sim, "root")
    s = start_syncer(cluster, target(hub, lc), target(sim, "root"), resources=("deployments.apps",))
    h = wait_for(lambda: (x := s.health()).reason not in ("Starting",) and (x.types_synced or x.type_errors) and x, 15,
                 what="first type pass")
    if "deployments.apps" in h.type_errors:
        assert "at least one dot" in h.type_errors["deployments.apps"], h.type_errors
        pytest.skip("the hub does not accept CRDs in the apps group yet (registry/crd.py edit, docs/syncer.md)")
    crd = up.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/deployments.apps")
    v = crd["spec"]["versions"][0]
    assert set(v["subresources"]) == {"status", "scale"}
    assert v["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["strategy"]["properties"]["rollingUpdate"][
        "properties"]["maxSurge"] == {"x-kubernetes-int-or-string": True, "description": v["schema"]["openAPIV3Schema"][
            "properties"]["spec"]["properties"]["strategy"]["properties"]["rollingUpdate"]["properties"]["maxSurge"]["description"]}

    up.ns("demo")
    up.create(DEPLOYS, {"apiVersion": "apps/v1", "kind": "Deployment",
                        "metadata": {"name": "web", "labels": {"kcp.dev/cluster": cluster}},
                        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                                 "template": {"metadata": {"labels": {"app": "web"}},
                                              "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                                                                       "resources": {"requests": {"cpu": "0.1"}}}]}}}})
    wait_for(lambda: down.get(f"{DEPLOYS}/web"), 10, what="deployment in the cluster")
    ready = wait_for(lambda: (o := up.get(f"{DEPLOYS}/web")) and (o.get("status") or {}).get("readyReplicas") == 3 and o,
                     20, what="readyReplicas back on the hub")
    assert ready["status"]["observedGeneration"] == ready["metadata"]["generation"]
    kubectl = Kubectl(hub.kubeconfig_for(lc, tmp_path), namespace="demo")
    out = kubectl("get", "deployments").out
    header, row = out.splitlines()[:2]
    assert header.split()[:2] == ["NAME", "READY"], out
    if "DESIRED" in header.split():  # the hub prints the CRD's columns, not kube's Deployment printer
        assert row.split()[1:3] == ["3", "3"], out
    else:
        assert row.split()[1] == "3/3", out
    # scale through the hub (the imported scale subresource); the cluster runs it
    kubectl("scale", "deployment/web", "--replicas=4")
    wait_for(lambda: (up.get(f"{DEPLOYS}/web").get("status") or {}).get("readyReplicas") == 4, 20, what="scaled")
    kubectl("rollout", "status", "deployment/web", "--timeout=20s")
    assert state(up.get(f"{DEPLOYS}/web"))["state"] == "Synced"
    # the cluster canonicalizes cpu 0.1 as 100m: not drift
    assert state(up.get(f"{DEPLOYS}/web"))["reason"] != "DriftReverted"
    assert down.get(f"{DEPLOYS}/web")["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "100m"


def test_everything_the_cluster_serves(hub, sim, start_syncer, names):
    """``"*"``: every namespaced, watchable type, core types the hub lacks imported as ``<plural>.core``."""
    lc, cluster = names("lc"), names("c")
    s = start_syncer(cluster, target(hub, lc), target(sim, "root"), resources=("*",))
    h = wait_for(lambda: (x := s.health()).reason == "Synced" and x, 20, what="first pass")
    assert {"configmaps.v1", "deployments.v1.apps", "replicasets.v1.apps", "pods.v1"} <= set(h.types), h.types
    assert not any(t.startswith("events") or t.startswith("leases") for t in h.types), h.types
    assert not h.type_errors
    crds = Api(hub, lc).get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]
    # ReplicaSets are the hub's own (the fleet plugin serves them for rollout history): not imported
    assert {"pods.core", "deployments.apps"} <= {c["metadata"]["name"] for c in crds}
