"""A cluster's built-in kinds imported into the hub (CRDs the Syncer makes from a simulated cluster's
OpenAPI) are defaulted as kube defaults the built-in: the same manifest shows the same spec on the
hub as on the cluster (but for what the cluster allocates: a Service's ClusterIP), on every write
path, and `kubectl rollout status daemonset` works on the hub without an updateStrategy."""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fleetplane.fleet.syncer import Syncer

from ..harness import Hub, Kubectl, SimulatedCluster, wait_for
from ..syncer.conftest import Api, SyncerThread, target

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
IMPORTED = ("deployments.apps", "daemonsets.apps", "statefulsets.apps", "jobs.batch",
            "horizontalpodautoscalers.autoscaling", "services")
TEMPLATE = {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}],
                                     "resources": {"requests": {"cpu": "10m"}}}]}}
SELECTOR = {"matchLabels": {"app": "web"}}
#: what kube's SetDefaults_PodSpec (and the container's) add to TEMPLATE
DEFAULTED_POD_SPEC = {
    "containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "resources": {"requests": {"cpu": "10m"}}, "imagePullPolicy": "IfNotPresent",
                    "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
    "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "terminationGracePeriodSeconds": 30,
    "securityContext": {}, "schedulerName": "default-scheduler"}


def manifests(name: str, labels: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """One object of each imported kind, with nothing but what a user writes."""
    md = {"name": name, "labels": labels or {}}
    tpl = copy.deepcopy(TEMPLATE)
    job_tpl = copy.deepcopy(TEMPLATE)
    job_tpl["spec"]["restartPolicy"] = "Never"
    return [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": md, "spec": {"selector": SELECTOR, "template": tpl}},
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": md, "spec": {"selector": SELECTOR, "template": tpl}},
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": md,
         "spec": {"serviceName": name, "selector": SELECTOR, "template": tpl, "volumeClaimTemplates": [
             {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                                                     "resources": {"requests": {"storage": "1Gi"}}}}]}},
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": md, "spec": {"template": job_tpl}},
        {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": md,
         "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}, "maxReplicas": 4}},
        {"apiVersion": "v1", "kind": "Service", "metadata": md,
         "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}},
    ]


PATHS = {"Deployment": "/apis/apps/v1/namespaces/demo/deployments", "DaemonSet": "/apis/apps/v1/namespaces/demo/daemonsets",
         "StatefulSet": "/apis/apps/v1/namespaces/demo/statefulsets", "Job": "/apis/batch/v1/namespaces/demo/jobs",
         "HorizontalPodAutoscaler": "/apis/autoscaling/v2/namespaces/demo/horizontalpodautoscalers",
         "Service": "/api/v1/namespaces/demo/services"}
#: what a cluster allocates or controllers set, not defaulting: never on the hub
ALLOCATED = {"Service": ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"),
             "Job": ("selector",), "StatefulSet": ()}


class Fleet:
    """A logical cluster on the hub whose kinds a Syncer imported from a simulated cluster."""

    def __init__(self, hub: Hub, sim: SimulatedCluster, tmp: Path) -> None:
        self.lc, self.cluster = "df-" + uuid.uuid4().hex[:8], "c-" + uuid.uuid4().hex[:6]
        self.up, self.down = Api(hub, self.lc), Api(sim, "root")
        self.k = Kubectl(hub.kubeconfig_for(self.lc, tmp), minor="1.33", namespace="demo")
        self.sim_k = Kubectl(sim.kubeconfig, minor="1.33", namespace="demo")
        self.syncer = SyncerThread(Syncer(cluster_name=self.cluster, hub=target(hub, self.lc), downstream=target(sim, "root"),
                                          resources=IMPORTED, poll_interval=0.5)).start()

    def ready(self) -> None:
        h = wait_for(lambda: (x := self.syncer.health()).reason == "Synced" and x, 60, what="the kinds imported")
        assert not h.type_errors, h
        for p in PATHS.values():
            wait_for(lambda p=p: self.up("GET", p)[0] == 200, 20, what=f"{p} served on the hub")
        self.up.ns("demo")
        self.down.ns("demo")

    def apply(self, k: Kubectl, obj: dict[str, Any], *extra: str) -> str:
        return k("apply", "-f", "-", *extra, stdin=json.dumps(obj)).out


@pytest.fixture(scope="module")
def fleet(hub: Hub, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    sim = SimulatedCluster(tmp_path_factory.mktemp("sim"), "sim1", nodes=2, extra=["--kubelet-delay", "0.1"]).start()
    f = Fleet(hub, sim, tmp_path_factory.mktemp("kc"))
    try:
        f.ready()
        yield f
    finally:
        f.syncer.stop()
        sim.stop()


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec = copy.deepcopy(obj["spec"])
    for f in ALLOCATED.get(obj["kind"], ()):
        spec.pop(f, None)
    if obj["kind"] == "Job":  # the labels a Job's create gives its template (not defaulting)
        spec["template"]["metadata"]["labels"] = {k: v for k, v in spec["template"]["metadata"]["labels"].items()
                                                  if "controller-uid" not in k and not k.endswith("job-name")}
    return spec


def test_the_hub_shows_the_specs_a_cluster_shows(fleet: Fleet) -> None:
    """The same manifests applied to the hub and (directly) to the cluster: the same specs, with kube's
    defaults; on the hub no ClusterIP (the cluster allocates it) and nothing synced down (no label)."""
    f = fleet
    for obj in manifests("same"):
        f.apply(f.k, obj)
        f.apply(f.sim_k, obj)
    for obj in manifests("same"):
        kind = obj["kind"]
        hub_obj = f.up.get(f"{PATHS[kind]}/same")
        sim_obj = f.down.get(f"{PATHS[kind]}/same")
        assert hub_obj is not None and sim_obj is not None, kind
        assert _spec(hub_obj) == _spec(sim_obj), kind
    deploy = f.up.get(f"{PATHS['Deployment']}/same")["spec"]
    assert deploy["replicas"] == 1 and deploy["revisionHistoryLimit"] == 10 and deploy["progressDeadlineSeconds"] == 600
    assert deploy["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    assert deploy["template"]["spec"] == DEFAULTED_POD_SPEC
    ds = f.up.get(f"{PATHS['DaemonSet']}/same")["spec"]
    assert ds["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    assert ds["revisionHistoryLimit"] == 10
    sts = f.up.get(f"{PATHS['StatefulSet']}/same")["spec"]
    assert (sts["podManagementPolicy"], sts["updateStrategy"]) == ("OrderedReady", {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
    assert sts["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    assert sts["volumeClaimTemplates"][0]["spec"]["volumeMode"] == "Filesystem"
    job = f.up.get(f"{PATHS['Job']}/same")["spec"]
    assert {k: job[k] for k in ("completions", "parallelism", "backoffLimit", "completionMode", "suspend")} == {
        "completions": 1, "parallelism": 1, "backoffLimit": 6, "completionMode": "NonIndexed", "suspend": False}
    hpa = f.up.get(f"{PATHS['HorizontalPodAutoscaler']}/same")["spec"]
    assert hpa["minReplicas"] == 1 and hpa["metrics"] == [
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
    svc = f.up.get(f"{PATHS['Service']}/same")["spec"]
    assert (svc["type"], svc["sessionAffinity"], svc["internalTrafficPolicy"]) == ("ClusterIP", "None", "Cluster")
    assert svc["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert "clusterIP" not in svc
    # printed as on a cluster, TYPE ClusterIP and a CLUSTER-IP of <none>
    row = f.k("get", "service", "same", "--no-headers").out.split()
    assert row[:3] == ["same", "ClusterIP", "<none>"], row


def test_every_write_path_defaults(fleet: Fleet) -> None:
    """create --dry-run=server, update (PUT), merge and JSON patches removing a default, server-side
    apply: each answers and stores the defaulted object; a field defaulted by a create belongs to its
    manager, not to an applier (kube's managedFields)."""
    f = fleet
    dep = manifests("paths")[0]
    out = json.loads(f.k("create", "--dry-run=server", "-o", "json", "-f", "-", stdin=json.dumps(dep)).out)
    assert out["spec"]["strategy"]["type"] == "RollingUpdate" and out["spec"]["revisionHistoryLimit"] == 10
    assert f.up.get(f"{PATHS['Deployment']}/paths") is None
    f.k("create", "-f", "-", stdin=json.dumps(dep))
    cur = f.up.get(f"{PATHS['Deployment']}/paths")
    owned = next(m for m in cur["metadata"]["managedFields"] if m["manager"] == "kubectl-create")["fieldsV1"]["f:spec"]
    assert "f:revisionHistoryLimit" in owned and "f:strategy" in owned
    # PUT without the defaulted fields: defaulted again (read, change, write: again on a 409, as the
    # hub's splitter writes the Deployment's status and annotations too)
    def put() -> Any:
        obj = f.up.get(f"{PATHS['Deployment']}/paths")
        for fld in ("strategy", "revisionHistoryLimit", "progressDeadlineSeconds"):
            del obj["spec"][fld]
        code, out = f.up("PUT", f"{PATHS['Deployment']}/paths", obj)
        assert code in (200, 409), out
        return code == 200 and out
    got = wait_for(put, 20, interval=0.2, what="the PUT")
    assert got["spec"]["revisionHistoryLimit"] == 10 and got["spec"]["strategy"]["rollingUpdate"]["maxSurge"] == "25%"
    # a merge patch nulling one, a JSON patch removing another
    code, got = f.up("PATCH", f"{PATHS['Deployment']}/paths", {"spec": {"progressDeadlineSeconds": None, "paused": True}},
                     "application/merge-patch+json")
    assert code == 200 and got["spec"]["progressDeadlineSeconds"] == 600 and got["spec"]["paused"] is True, got
    code, got = f.up("PATCH", f"{PATHS['Deployment']}/paths", [{"op": "remove", "path": "/spec/strategy"}],
                     "application/json-patch+json")
    assert code == 200 and got["spec"]["strategy"]["type"] == "RollingUpdate", got
    # kubectl's strategic merge patches (rollout) and server-side apply
    f.k("rollout", "resume", "deployment/paths")
    applied = manifests("ssa")[1]  # a DaemonSet
    f.apply(f.k, applied, "--server-side")
    ds = f.up.get(f"{PATHS['DaemonSet']}/ssa")
    assert ds["spec"]["updateStrategy"]["type"] == "RollingUpdate"
    owned = next(m for m in ds["metadata"]["managedFields"] if m["manager"] == "kubectl")["fieldsV1"]["f:spec"]
    assert "f:updateStrategy" not in owned and "f:template" in owned
    # the Service's defaults, with nothing allocated, through an apply's dry run too
    svc = copy.deepcopy(manifests("dry")[5])
    svc["spec"]["ports"] = [{"port": 443, "targetPort": "https", "name": "https"}]
    out = json.loads(f.k("apply", "--server-side", "--dry-run=server", "-o", "json", "-f", "-", stdin=json.dumps(svc)).out)
    assert out["spec"]["ports"] == [{"port": 443, "targetPort": "https", "name": "https", "protocol": "TCP"}]
    assert out["spec"]["type"] == "ClusterIP" and "clusterIP" not in out["spec"]


def test_a_daemonset_without_an_update_strategy_rolls_out_on_the_hub(fleet: Fleet) -> None:
    """Synced down with its defaults (the cluster stores the same, so no drift), run on the cluster's
    two nodes, and `kubectl rollout status daemonset` on the hub sees it rolled out."""
    f = fleet
    ds = manifests("agent", {"kcp.dev/cluster": f.cluster})[1]
    assert "updateStrategy" not in ds["spec"]
    f.apply(f.k, ds)
    out = f.k("rollout", "status", "daemonset/agent", "--timeout=90s").out
    assert 'daemon set "agent" successfully rolled out' in out
    hub_obj = f.up.get(f"{PATHS['DaemonSet']}/agent")
    down = f.down.get(f"{PATHS['DaemonSet']}/agent")
    assert down["spec"] == hub_obj["spec"]
    assert hub_obj["status"]["numberAvailable"] == 2
    state = json.loads(hub_obj["metadata"]["annotations"]["fleetplane.io/sync-state"])
    assert (state["state"], state["reason"]) == ("Synced", "Created"), state
    # a Deployment and a Service too: synced with the same defaults, no drift reverted
    dep, svc = manifests("web", {"kcp.dev/cluster": f.cluster})[0], manifests("web", {"kcp.dev/cluster": f.cluster})[5]
    f.apply(f.k, dep)
    f.apply(f.k, svc)
    assert "successfully rolled out" in f.k("rollout", "status", "deployment/web", "--timeout=90s").out
    for kind in ("Deployment", "Service"):
        down = wait_for(lambda kind=kind: f.down.get(f"{PATHS[kind]}/web"), 20, what=f"{kind} in the cluster")
        hub_obj = f.up.get(f"{PATHS[kind]}/web")
        assert _spec(down) == _spec(hub_obj), kind
        state = json.loads(hub_obj["metadata"]["annotations"]["fleetplane.io/sync-state"])
        assert (state["state"], state["reason"]) == ("Synced", "Created"), (kind, state)
    assert f.down.get(f"{PATHS['Service']}/web")["spec"]["clusterIP"]  # allocated by the cluster only


def test_defaults_a_schema_has_no_field_for_are_not_unknown_fields(hub: Hub, tmp_path: Path) -> None:
    """A narrow, hand-made Deployment CRD: kubectl's apply (Strict field validation) is not told of
    fields only the defaulting would add; those the schema has are defaulted, the others not stored."""
    lc = "dn-" + uuid.uuid4().hex[:8]
    up = Api(hub, lc)
    obj = {"type": "object", "properties": {
        "replicas": {"type": "integer"}, "selector": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "template": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "strategy": {"type": "object", "properties": {"type": {"type": "string"}}}}}
    up.crd({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "deployments.apps"},
            "spec": {"group": "apps", "scope": "Namespaced", "names": {"plural": "deployments", "kind": "Deployment"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                         "type": "object", "properties": {"spec": obj}}}}]}})
    wait_for(lambda: up("GET", "/apis/apps/v1/deployments")[0] == 200, 15, what="served")
    k = Kubectl(hub.kubeconfig_for(lc, tmp_path), minor="1.33", namespace="default")
    res = k("apply", "-f", "-", stdin=json.dumps(manifests("narrow")[0]))
    assert "unknown field" not in res.out + res.err, res.err
    spec = up.get("/apis/apps/v1/namespaces/default/deployments/narrow")["spec"]
    assert spec["replicas"] == 1 and spec["strategy"] == {"type": "RollingUpdate"}, spec  # rollingUpdate: no field
    assert "revisionHistoryLimit" not in spec and "progressDeadlineSeconds" not in spec
    assert spec["template"]["spec"]["restartPolicy"] == "Always"  # kept by preserve-unknown-fields
    # a field the user sends that the schema lacks is still kube's unknown field
    bad = manifests("bad")[0]
    bad["spec"]["minReadySeconds"] = 3
    res = k.fail("apply", "-f", "-", stdin=json.dumps(bad))
    assert 'unknown field "spec.minReadySeconds"' in res.err, res.err
