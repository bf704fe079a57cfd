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
