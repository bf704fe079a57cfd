"""CRDs in the core group (``spec.group: ""``, named ``<plural>.core``, kcp's convention for a
physical cluster's core types): served where clients look for core types, ``/api/v1``, in every
discovery and OpenAPI document, and never shadowing a type the hub serves itself."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from ..harness import Hub, Kubectl, wait_for

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def core_crd(plural: str, kind: str, *, scope: str = "Namespaced", name: str | None = None,
             short: str | None = None) -> dict[str, Any]:
    names: dict[str, Any] = {"plural": plural, "singular": plural[:-1], "kind": kind, "categories": ["all"]}
    if short:
        names["shortNames"] = [short]
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name or f"{plural}.core"},
            "spec": {"group": "", "scope": scope, "names": names, "versions": [{
                "name": "v1", "served": True, "storage": True,
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                         "statusReplicasPath": ".status.replicas"}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "description": "what the gadget should be",
                             "properties": {"replicas": {"type": "integer"}, "color": {"type": "string"}}},
                    "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}}}}]}}


class Cluster:
    """A fresh logical cluster with an admin kubectl and raw JSON requests."""

    def __init__(self, hub: Hub, kubectl: Kubectl, name: str) -> None:
        self.hub, self.k, self.name = hub, kubectl, name

    def __call__(self, method: str, path: str, body: Any = None, **kw: Any) -> tuple[int, Any]:
        return self.hub.json(method, f"/clusters/{self.name}{path}", body, **kw)

    def crd(self, body: dict) -> None:
        code, out = self("POST", CRDS, body)
        assert code == 201, out
        plural = body["spec"]["names"]["plural"]
        wait_for(lambda: self("GET", f"/api/v1/{plural}")[0] == 200, 15, what=f"{plural} served")


@pytest.fixture
def lc(hub: Hub, kubectl_in: Callable[..., Kubectl]) -> Cluster:
    name = "core-" + uuid.uuid4().hex[:8]
    return Cluster(hub, kubectl_in(name, "1.33"), name)


def test_a_core_crd_may_not_claim_a_builtin_core_resource_or_kind(lc: Cluster) -> None:
    code, out = lc("POST", CRDS, core_crd("configmaps", "Gadget"))
    assert code == 422, out
    assert out["details"]["causes"][0]["field"] == "spec.names.plural"
    assert 'spec.names.plural: Invalid value: "configmaps"' in out["message"]
    code, out = lc("POST", CRDS, core_crd("gadgets", "Secret"))
    assert code == 422 and [c["field"] for c in out["details"]["causes"]] == ["spec.names.kind"], out
    code, out = lc("POST", CRDS, core_crd("namespaces", "Namespace", scope="Cluster"))
    assert code == 422 and {c["field"] for c in out["details"]["causes"]} == {"spec.names.plural", "spec.names.kind"}, out
    # only the <plural>.core name makes an empty group the core group
    code, out = lc("POST", CRDS, core_crd("gadgets", "Gadget", name="gadgets.example.com"))
    assert code == 422 and "spec.group: Required value" in out["message"], out
    # and the configmaps built-in is still the hub's own
    lc.k("create", "configmap", "still-builtin", "-n", "default")
    assert lc.k.get_json("configmap", "still-builtin", "-n", "default")["kind"] == "ConfigMap"


def test_a_core_crd_is_served_under_api_v1_with_every_verb(lc: Cluster) -> None:
    lc.crd(core_crd("gadgets", "Gadget", short="gd"))
    k = lc.k
    k("apply", "-n", "default", "-f", "-", stdin=json.dumps(
        {"apiVersion": "v1", "kind": "Gadget", "metadata": {"name": "g1"}, "spec": {"replicas": 1, "color": "red"}}))
    got = k.get_json("gd", "g1", "-n", "default")
    assert got["apiVersion"] == "v1" and got["kind"] == "Gadget" and got["metadata"]["name"] == "g1"
    code, obj = lc("GET", "/api/v1/namespaces/default/gadgets/g1")
    assert code == 200 and obj["spec"]["color"] == "red"
    assert [o["metadata"]["name"] for o in lc("GET", "/api/v1/gadgets")[1]["items"]] == ["g1"]
    k("scale", "gadget", "g1", "-n", "default", "--replicas=4")
    assert lc("GET", "/api/v1/namespaces/default/gadgets/g1/scale")[1]["spec"]["replicas"] == 4
    code, obj = lc("PATCH", "/api/v1/namespaces/default/gadgets/g1/status", {"status": {"replicas": 4}},
                   content_type="application/merge-patch+json")
    assert code == 200 and obj["status"] == {"replicas": 4}, obj
    k("label", "gadget", "g1", "-n", "default", "tier=x")
    assert k("get", "gadgets", "-n", "default", "-l", "tier=x", "-o", "name").out.split() == ["gadget/g1"]
    # `kubectl get all` includes it (categories)
    assert "gadget/g1" in k("get", "all", "-n", "default", "-o", "name").out.split()
    k("delete", "gadget", "g1", "-n", "default")
    wait_for(lambda: lc("GET", "/api/v1/namespaces/default/gadgets/g1")[0] == 404, 10, what="deleted")


def test_a_cluster_scoped_core_crd(lc: Cluster) -> None:
    lc.crd(core_crd("blocks", "Block", scope="Cluster"))
    code, out = lc("POST", "/api/v1/blocks", {"apiVersion": "v1", "kind": "Block", "metadata": {"name": "b1"},
                                              "spec": {"replicas": 2}})
    assert code == 201, out
    assert lc.k("get", "blocks", "-o", "name").out.split() == ["block/b1"]
    assert lc("DELETE", "/api/v1/blocks/b1")[0] == 200


def test_discovery_and_openapi_merge_core_crds_with_the_builtins(lc: Cluster) -> None:
    lc.crd(core_crd("gadgets", "Gadget", short="gd"))
    legacy = lc("GET", "/api/v1")[1]
    names = [r["name"] for r in legacy["resources"]]
    assert {"configmaps", "namespaces", "gadgets", "gadgets/status", "gadgets/scale"} <= set(names)
    entry = next(r for r in legacy["resources"] if r["name"] == "gadgets")
    assert entry["kind"] == "Gadget" and entry["shortNames"] == ["gd"] and entry["categories"] == ["all"]
    assert legacy["groupVersion"] == "v1"
    # no group "" appears among the named groups
    assert all(g["name"] for g in lc("GET", "/apis")[1]["groups"])
    code, agg = lc("GET", "/api", headers={"Accept": AGGREGATED})
    assert code == 200, agg
    [core] = agg["items"]
    resources = {r["resource"]: r for r in core["versions"][0]["resources"]}
    assert {"configmaps", "gadgets"} <= set(resources)
    assert resources["gadgets"]["responseKind"] == {"group": "", "version": "v1", "kind": "Gadget"}
    assert {s["subresource"] for s in resources["gadgets"]["subresources"]} == {"status", "scale"}
    code, apis = lc("GET", "/apis", headers={"Accept": AGGREGATED})
    assert all(item["metadata"].get("name") for item in apis["items"])
    # OpenAPI v3 and v2: the core group's document has the kind, as io.k8s.api.core.v1.<Kind>
    v3 = lc("GET", "/openapi/v3/api/v1")[1]
    assert "io.k8s.api.core.v1.Gadget" in v3["components"]["schemas"]
    assert "/api/v1/namespaces/{namespace}/gadgets/{name}" in v3["paths"]
    v2 = lc("GET", "/openapi/v2")[1]
    assert "io.k8s.api.core.v1.Gadget" in v2["definitions"]
    explained = lc.k("explain", "gadget.spec").out
    assert "what the gadget should be" in explained and "color" in explained and "replicas" in explained
    assert "gadgets" in lc.k("api-resources", "--api-group=").out


def test_protobuf_clients_of_a_core_crd(lc: Cluster) -> None:
    """A typed client asks for protobuf first and takes JSON (custom resources have no protobuf form)."""
    lc.crd(core_crd("gadgets", "Gadget"))
    assert lc("POST", "/api/v1/namespaces/default/gadgets",
              {"apiVersion": "v1", "kind": "Gadget", "metadata": {"name": "p1"}})[0] == 201
    status, headers, body = lc.hub.request("GET", f"/clusters/{lc.name}/api/v1/namespaces/default/gadgets/p1",
                                           headers={"Accept": "application/vnd.kubernetes.protobuf, application/json"})
    assert status == 200 and {k.lower(): v for k, v in headers.items()}["content-type"].startswith("application/json"), (status, headers)
    assert json.loads(body)["metadata"]["name"] == "p1"


def test_the_table_of_a_core_crd_with_a_builtin_kind_prints_like_the_builtin(lc: Cluster) -> None:
    """A Pod imported as a core CRD prints kube's Pod columns (the printer of the known built-in)."""
    pod = core_crd("pods", "Pod", short="po")
    free = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    pod["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"] = {"spec": free, "status": free}
    lc.crd(pod)
    lc.k("apply", "-n", "default", "-f", "-", stdin=json.dumps(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
         "spec": {"containers": [{"name": "c", "image": "nginx"}]},
         "status": {"phase": "Running"}}))
    header = lc.k("get", "pods", "-n", "default").out.splitlines()[0].split()
    assert header == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]


def test_kubectl_create_service_sends_protobuf_and_an_imported_service_takes_it(lc: Cluster) -> None:
    """kubectl 1.32+ POSTs the Service its generator builds as protobuf, with no JSON retry: the body
    is decoded by its envelope's kind, whatever serves the type."""
    free = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    svc = core_crd("services", "Service", short="svc")
    v = svc["spec"]["versions"][0]
    v["schema"]["openAPIV3Schema"]["properties"] = {"spec": free, "status": free}
    del v["subresources"]["scale"]
    lc.crd(svc)
    out = lc.k("create", "service", "clusterip", "front", "--tcp=80:8080", "-n", "default", "-v=6")
    assert "service/front created" in out.out
    got = lc("GET", "/api/v1/namespaces/default/services/front")[1]
    assert got["spec"]["ports"][0]["port"] == 80 and got["spec"]["ports"][0]["targetPort"] == 8080, got


def test_strategic_merge_patch_on_an_imported_builtin_kind_uses_the_builtins_merge_keys(lc: Cluster) -> None:
    """kube refuses strategic merge patch on custom resources; a CRD importing a built-in kind (v1 Pod)
    takes it, merging lists by the built-in's keys (containers by name), which a CRD cannot carry."""
    free = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    pod = core_crd("pods", "Pod", short="po")
    pod["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"] = {"spec": free, "status": free}
    lc.crd(pod)
    lc.crd(core_crd("gadgets", "Gadget"))
    base = "/api/v1/namespaces/default"
    assert lc("POST", f"{base}/pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}]}, {"name": "b", "image": "b:1"}]}})[0] == 201
    code, out = lc("PATCH", f"{base}/pods/p", {"spec": {"containers": [{"name": "a", "image": "a:2"}]}},
                   content_type="application/strategic-merge-patch+json")
    assert code == 200, out
    # (with the built-in Pod's scheme defaults, as a cluster shows them)
    defaults = {"imagePullPolicy": "IfNotPresent", "resources": {}, "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File"}
    assert out["spec"]["containers"] == [{"name": "a", "image": "a:2", "env": [{"name": "X", "value": "1"}], **defaults},
                                         {"name": "b", "image": "b:1", **defaults}]
    lc.k("set", "image", "pod/p", "b=b:2", "-n", "default")
    assert [c["image"] for c in lc("GET", f"{base}/pods/p")[1]["spec"]["containers"]] == ["a:2", "b:2"]
    # an ordinary custom type still answers kube's 415
    assert lc("POST", f"{base}/gadgets", {"apiVersion": "v1", "kind": "Gadget", "metadata": {"name": "g"}})[0] == 201
    code, out = lc("PATCH", f"{base}/gadgets/g", {"spec": {"color": "red"}}, content_type="application/strategic-merge-patch+json")
    assert code == 415 and "application/strategic-merge-patch+json" not in out["message"], out
    # the OpenAPI PATCH operations say which takes it
    paths = lc("GET", "/openapi/v3/api/v1")[1]["paths"]
    assert "application/strategic-merge-patch+json" in paths["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]["requestBody"]["content"]
    assert "application/strategic-merge-patch+json" not in paths["/api/v1/namespaces/{namespace}/gadgets/{name}"]["patch"]["requestBody"]["content"]


def test_kubectl_apply_on_an_imported_builtin_kind_removes_list_elements(lc: Cluster) -> None:
    """kubectl computes its apply patch from the published schema: an imported built-in kind's OpenAPI
    carries the built-in's patch strategies and merge keys, so a container taken out of the manifest
    is deleted by the server's merge by name (not kept, as a whole-list patch merged by name would)."""
    container = {"type": "object", "properties": {"name": {"type": "string"}, "image": {"type": "string"}}}
    pod = core_crd("pods", "Pod", short="po")
    pod["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"] = {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                 "properties": {"containers": {"type": "array", "items": container}}},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    lc.crd(pod)
    schemas = lc("GET", "/openapi/v3/api/v1")[1]["components"]["schemas"]
    containers = schemas["io.k8s.api.core.v1.Pod"]["properties"]["spec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name" and containers["x-kubernetes-patch-strategy"] == "merge"
    v2 = lc("GET", "/openapi/v2")[1]["definitions"]["io.k8s.api.core.v1.Pod"]["properties"]["spec"]["properties"]
    assert v2["containers"]["x-kubernetes-patch-merge-key"] == "name"
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "two"},
                "spec": {"containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]}}
    lc.k("apply", "-n", "default", "-f", "-", stdin=json.dumps(manifest))
    manifest["spec"]["containers"] = [{"name": "b", "image": "b:2"}]
    lc.k("apply", "-n", "default", "-f", "-", stdin=json.dumps(manifest))
    got = lc("GET", "/api/v1/namespaces/default/pods/two")[1]
    assert got["spec"]["containers"] == [{"name": "b", "image": "b:2"}], got["spec"]


def free_crd(group: str, plural: str, kind: str, version: str = "v1", scale: bool = False) -> dict:
    """An imported built-in kind, as the Syncer would make it, with a schema that keeps everything."""
    free = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    sub: dict = {"status": {}}
    if scale:
        sub["scale"] = {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group or 'core'}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
                     "versions": [{"name": version, "served": True, "storage": True, "subresources": sub,
                                   "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                       "spec": free, "status": free}}}}]}}


def test_kubectl_expose_and_autoscale_on_imported_kinds(lc: Cluster) -> None:
    """With Deployments, Services and HorizontalPodAutoscalers imported, kubectl's generators work
    on the hub as on a cluster (they POST protobuf)."""
    code, out = lc("POST", CRDS, free_crd("apps", "deployments", "Deployment", scale=True))
    assert code == 201, out
    lc.crd(free_crd("", "services", "Service"))
    code, out = lc("POST", CRDS, free_crd("autoscaling", "horizontalpodautoscalers", "HorizontalPodAutoscaler", "v2"))
    assert code == 201, out
    wait_for(lambda: lc("GET", "/apis/autoscaling/v2/horizontalpodautoscalers")[0] == 200
             and lc("GET", "/apis/apps/v1/deployments")[0] == 200, 15, what="served")
    k = lc.k
    k("create", "deployment", "web", "--image=nginx:1.27", "--replicas=2", "-n", "default")
    k("expose", "deployment", "web", "--port=80", "--target-port=8080", "-n", "default")
    svc = lc("GET", "/api/v1/namespaces/default/services/web")[1]
    assert svc["spec"]["selector"] == {"app": "web"} and svc["spec"]["ports"][0]["port"] == 80, svc
    k("autoscale", "deployment", "web", "--min=2", "--max=5", "--cpu-percent=80", "-n", "default")
    hpa = lc("GET", "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/web")[1]
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, hpa
    assert hpa["spec"]["maxReplicas"] == 5
