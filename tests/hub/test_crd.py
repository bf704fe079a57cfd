"""CustomResourceDefinitions over HTTP: lifecycle, versions, schemas, CEL, field validation."""

from __future__ import annotations

import json
import uuid

import pytest

from ..harness import Hub, wait_for

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def crd(plural: str = "gears", kind: str = "Gear", versions: list[dict] | None = None, group: str = "example.com") -> dict:
    schema = {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
        "type": "object",
        "x-kubernetes-validations": [{"rule": "self.min <= self.max", "message": "min must not exceed max"},
                                     {"rule": "self.mode == oldSelf.mode", "message": "mode is immutable"}],
        "properties": {"min": {"type": "integer", "default": 0}, "max": {"type": "integer", "default": 10},
                       "mode": {"type": "string", "default": "auto"},
                       "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                                 "items": {"type": "object", "required": ["name"], "properties": {
                                     "name": {"type": "string"}, "port": {"x-kubernetes-int-or-string": True}}}},
                       "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Namespaced", "names": {"plural": plural, "kind": kind},
                     "versions": versions or [{"name": "v1", "served": True, "storage": True, "schema": schema}]}}


@pytest.fixture
def cluster(hub: Hub) -> str:
    name = "crd-" + uuid.uuid4().hex[:8]
    code, body = hub.json("POST", f"/clusters/{name}{CRDS}", crd())
    assert code == 201, body
    return name


def obj(name: str, spec: dict, version: str = "v1") -> dict:
    return {"apiVersion": f"example.com/{version}", "kind": "Gear", "metadata": {"name": name}, "spec": spec}


def test_crd_is_established_at_once_with_status_and_finalizer(hub: Hub, cluster: str):
    _, got = hub.json("GET", f"/clusters/{cluster}{CRDS}/gears.example.com")
    conds = {c["type"]: c["status"] for c in got["status"]["conditions"]}
    assert conds == {"NamesAccepted": "True", "Established": "True"}
    assert got["status"]["acceptedNames"]["kind"] == "Gear" and got["status"]["storedVersions"] == ["v1"]
    assert got["spec"]["names"]["singular"] == "gear" and got["spec"]["names"]["listKind"] == "GearList"
    assert "customresourcecleanup.apiextensions.k8s.io" in got["metadata"]["finalizers"]
    _, disc = hub.json("GET", f"/clusters/{cluster}/apis/example.com/v1")
    assert [r["name"] for r in disc["resources"]] == ["gears"]
    code, doc = hub.json("GET", f"/clusters/{cluster}/openapi/v3/apis/example.com/v1")
    assert code == 200 and any("gears" in p for p in doc["paths"])


def test_defaulting_pruning_validation_and_cel(hub: Hub, cluster: str):
    base = f"/clusters/{cluster}/apis/example.com/v1/namespaces/default/gears"
    code, created = hub.json("POST", base, obj("g1", {"max": 5, "unknown": 1, "raw": {"anything": {"goes": True}},
                                                      "ports": [{"name": "http", "port": "web"}, {"name": "grpc", "port": 9000}]}))
    assert code == 201, created
    assert created["spec"]["min"] == 0 and created["spec"]["mode"] == "auto"  # defaults
    assert "unknown" not in created["spec"] and created["spec"]["raw"] == {"anything": {"goes": True}}  # pruned / preserved
    assert created["metadata"]["generation"] == 1
    code, err = hub.json("POST", base, obj("g2", {"min": 7, "max": 3}))
    assert code == 422 and err["details"]["causes"][0]["field"] == "spec"
    assert "min must not exceed max" in err["message"]
    code, err = hub.json("POST", base, obj("g3", {"max": "ten"}))
    assert code == 422 and any(c["field"] == "spec.max" for c in err["details"]["causes"])
    code, err = hub.json("POST", base, obj("g4", {"ports": [{"name": "a"}, {"name": "a"}]}))
    assert code == 422 and any(c["reason"] == "FieldValueDuplicate" for c in err["details"]["causes"])
    # a transition rule: mode may not change
    code, err = hub.json("PATCH", f"{base}/g1", {"spec": {"mode": "manual"}}, content_type="application/merge-patch+json")
    assert code == 422 and "mode is immutable" in err["message"]
    # status changes through the main endpoint do not bump generation; spec changes do
    code, patched = hub.json("PATCH", f"{base}/g1", {"spec": {"max": 6}}, content_type="application/merge-patch+json")
    assert code == 200 and patched["metadata"]["generation"] == 2
    code, err = hub.json("PATCH", f"{base}/g1", {"spec": {"max": 6}}, content_type="application/strategic-merge-patch+json")
    assert code == 415


def test_field_validation_strict_warn_ignore(hub: Hub, cluster: str):
    base = f"/clusters/{cluster}/apis/example.com/v1/namespaces/default/gears"
    body = json.dumps(obj("fv", {"bogus": 1})).encode()
    code, _, raw = hub.request("POST", base + "?fieldValidation=Strict", body)
    assert code == 400 and 'strict decoding error: unknown field "spec.bogus"' in json.loads(raw)["message"]
    code, headers, raw = hub.request("POST", base + "?fieldValidation=Warn", body)
    assert code == 201 and headers.get("warning") == '299 - "unknown field \\"spec.bogus\\""'
    code, headers, _ = hub.request("POST", base.replace("/gears", "/gears") + "?fieldValidation=Ignore",
                                   json.dumps(obj("fv2", {"bogus": 1})).encode())
    assert code == 201 and "warning" not in headers
    code, _, raw = hub.request("POST", base + "?fieldValidation=Loose", body)
    assert code == 422


def test_put_without_resource_version_is_refused_for_custom_resources(hub: Hub, cluster: str):
    base = f"/clusters/{cluster}/apis/example.com/v1/namespaces/default/gears"
    _, created = hub.json("POST", base, obj("nv", {}))
    del created["metadata"]["resourceVersion"]
    code, err = hub.json("PUT", f"{base}/nv", created)
    assert code == 422 and "must be specified for an update" in err["message"]


def test_several_versions_one_storage_version(hub: Hub):
    name = "mv-" + uuid.uuid4().hex[:8]
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    doc = crd(versions=[{"name": "v1beta1", "served": True, "storage": False, "schema": schema},
                        {"name": "v1", "served": True, "storage": True, "schema": schema},
                        {"name": "v1alpha1", "served": False, "storage": False, "schema": schema}])
    assert hub.json("POST", f"/clusters/{name}{CRDS}", doc)[0] == 201
    _, group = hub.json("GET", f"/clusters/{name}/apis/example.com")
    assert group["preferredVersion"]["version"] == "v1"
    assert [v["version"] for v in group["versions"]] == ["v1", "v1beta1"]
    code, created = hub.json("POST", f"/clusters/{name}/apis/example.com/v1beta1/namespaces/default/gears", obj("x", {"a": 1}, "v1beta1"))
    assert code == 201 and created["apiVersion"] == "example.com/v1beta1"
    _, as_v1 = hub.json("GET", f"/clusters/{name}/apis/example.com/v1/namespaces/default/gears/x")
    assert as_v1["apiVersion"] == "example.com/v1" and as_v1["spec"] == {"a": 1}
    assert hub.json("GET", f"/clusters/{name}/apis/example.com/v1alpha1/namespaces/default/gears")[0] == 404
    bad = crd(versions=[{"name": "v1", "served": True, "storage": False, "schema": schema}])
    bad["metadata"]["name"] = "gears.example.com"
    code, err = hub.json("POST", f"/clusters/{name}-bad{CRDS}", bad)
    assert code == 422 and "exactly one version marked as storage version" in err["message"]


def test_name_conflict_is_not_established(hub: Hub, cluster: str):
    clash = crd(plural="cogs", kind="Gear")
    code, made = hub.json("POST", f"/clusters/{cluster}{CRDS}", clash)
    assert code == 201
    conds = {c["type"]: (c["status"], c["reason"]) for c in made["status"]["conditions"]}
    assert conds["NamesAccepted"] == ("False", "KindConflict") and conds["Established"][0] == "False"
    assert hub.json("GET", f"/clusters/{cluster}/apis/example.com/v1/namespaces/default/cogs")[0] == 404


def test_deleting_a_crd_deletes_its_objects(hub: Hub, cluster: str):
    base = f"/clusters/{cluster}/apis/example.com/v1/namespaces/default/gears"
    hub.json("POST", base, obj("doomed", {}))
    hub.json("POST", base, {**obj("held", {}), "metadata": {"name": "held", "finalizers": ["example.com/x"]}})
    code, body = hub.json("DELETE", f"/clusters/{cluster}{CRDS}/gears.example.com")
    assert code == 200 and any(c["type"] == "Terminating" for c in body["status"]["conditions"])
    wait_for(lambda: hub.json("GET", f"/clusters/{cluster}{CRDS}/gears.example.com")[0] == 404, what="CRD gone")
    assert hub.json("GET", base)[0] == 404
    # recreating it starts empty
    hub.json("POST", f"/clusters/{cluster}{CRDS}", crd())
    _, listed = hub.json("GET", base)
    assert listed["items"] == []


def test_deletecollection_with_selector(hub: Hub, namespace: str):
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    for name, app in [("a", "x"), ("b", "x"), ("c", "y")]:
        hub.json("POST", base, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"app": app}}})
    code, body = hub.json("DELETE", f"{base}?labelSelector=app%3Dx")
    assert code == 200 and sorted(i["metadata"]["name"] for i in body["items"]) == ["a", "b"]
    _, left = hub.json("GET", base)
    assert [i["metadata"]["name"] for i in left["items"]] == ["c"]


def test_table_responses(hub: Hub, cluster: str, namespace: str):
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    code, _, raw = hub.request("GET", f"/api/v1/namespaces/{namespace}", headers={"Accept": accept})
    table = json.loads(raw)
    assert code == 200 and table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]][:2] == ["Name", "Status"]
    assert table["rows"][0]["cells"][:2] == [namespace, "Active"]
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    code, _, raw = hub.request("GET", f"/api/v1/namespaces/{namespace}?includeObject=Bogus", headers={"Accept": accept})
    assert code == 400


def test_deprecated_versions_warn_as_kube_does(hub: Hub, tmp_path):
    """Every request for a deprecated version carries kube's Warning (kubectl prints it); a version's
    own deprecationWarning replaces the default; other versions carry none."""
    from ..harness import Kubectl

    name = "dep-" + uuid.uuid4().hex[:8]
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    doc = crd(plural="deprecatedkinds", kind="DeprecatedKind", versions=[
        {"name": "v1alpha1", "served": True, "storage": False, "deprecated": True, "deprecationWarning": "v1alpha1 is gone soon", "schema": schema},
        {"name": "v1beta1", "served": True, "storage": False, "deprecated": True, "schema": schema},
        {"name": "v1", "served": True, "storage": True, "schema": schema}])
    assert hub.json("POST", f"/clusters/{name}{CRDS}", doc)[0] == 201
    base = f"/clusters/{name}/apis/example.com"
    code, headers, _ = hub.request("POST", f"{base}/v1beta1/namespaces/default/deprecatedkinds",
                                   {"apiVersion": "example.com/v1beta1", "kind": "DeprecatedKind", "metadata": {"name": "d"}})
    assert code == 201
    assert {k.lower(): v for k, v in headers.items()}["warning"] == '299 - "example.com/v1beta1 DeprecatedKind is deprecated; use example.com/v1 DeprecatedKind"'
    assert hub.request("GET", f"{base}/v1alpha1/namespaces/default/deprecatedkinds")[1]["warning"] == '299 - "v1alpha1 is gone soon"'
    assert "warning" not in hub.request("GET", f"{base}/v1/namespaces/default/deprecatedkinds")[1]
    kubectl = Kubectl(hub.kubeconfig_for(name, tmp_path))
    result = kubectl("get", "deprecatedkinds.v1beta1.example.com", "-n", "default")
    assert "Warning: example.com/v1beta1 DeprecatedKind is deprecated; use example.com/v1 DeprecatedKind" in result.err


def test_status_sent_to_the_main_resource_is_nobodys_field(hub: Hub):
    """With a status subresource the strategy resets status on the main resource, so neither a
    create, an update nor a server-side apply there makes its manager own status (kube's reset
    fields): a later status apply by the controller meets no conflict."""
    name = "rf-" + uuid.uuid4().hex[:8]
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    doc = crd(versions=[{"name": "v1", "served": True, "storage": True, "schema": schema, "subresources": {"status": {}}}])
    assert hub.json("POST", f"/clusters/{name}{CRDS}", doc)[0] == 201
    base = f"/clusters/{name}/apis/example.com/v1/namespaces/default/gears"
    applied = {**obj("g", {"a": 1}), "status": {"phase": "Made-up"}}
    for gear, how in (("g", "apply"), ("c", "create")):
        body = {**applied, "metadata": {"name": gear}}
        if how == "apply":
            code, out = hub.json("PATCH", f"{base}/{gear}?fieldManager=user", body, content_type="application/apply-patch+yaml")
        else:
            code, out = hub.json("POST", f"{base}?fieldManager=user", body)
        assert code == 201, out
        assert "status" not in out
        user = next(m for m in out["metadata"]["managedFields"] if m["manager"] == "user")
        assert "f:status" not in user["fieldsV1"], user
        code, out = hub.json("PATCH", f"{base}/{gear}/status?fieldManager=controller",
                             {"apiVersion": "example.com/v1", "kind": "Gear", "metadata": {"name": gear}, "status": {"phase": "Ready"}},
                             content_type="application/apply-patch+yaml")
        assert code == 200 and out["status"] == {"phase": "Ready"}, out
