"""OpenAPI v3 documents: what kubectl's field validation check, explain and apply read."""

from __future__ import annotations

import time

import orjson

from fleetplane.apis import builtin_types, logical_cluster_type, workload_types
from fleetplane.registry.definitions import gvk_index
from fleetplane.registry.types import ResourceType, ScaleSpec
from fleetplane.server import openapi

SMP = "application/strategic-merge-patch+json"
OBJECT_META_REF = "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def _types_by_gv() -> dict[str, list[ResourceType]]:
    out: dict[str, list[ResourceType]] = {}
    for rt in [*builtin_types(), logical_cluster_type()]:
        out.setdefault(rt.group_version, []).append(rt)
    return out


def _doc(gv: str) -> dict:
    return openapi.group_version_document(gv, _types_by_gv()[gv])


WIDGET_SCHEMA = {
    "type": "object",
    "description": "A Widget is a thing.",
    "properties": {
        "spec": {
            "type": "object",
            "description": "Desired widget.",
            "properties": {
                "replicas": {"type": "integer", "description": "How many."},
                "color": {"type": "string", "description": "Its color.", "enum": ["red", "blue"]},
                "port": {"x-kubernetes-int-or-string": True},
                "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                             "x-kubernetes-preserve-unknown-fields": True},
            },
            "required": ["color"],
        },
        "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
    },
}


def widget(namespaced: bool = True, schema: dict | None = WIDGET_SCHEMA, scale: bool = True) -> ResourceType:
    return ResourceType(
        "stable.example.com", "v1", "Widget", "widgets", "widget", namespaced, custom=True,
        subresources=("status", "scale") if scale else ("status",),
        scale=ScaleSpec(".spec.replicas", ".status.replicas") if scale else None,
        openapi_schema=schema,
    )


def _patch_ops(doc: dict) -> list[tuple[str, dict]]:
    return [(path, item["patch"]) for path, item in doc["paths"].items() if "patch" in item]


def _param_names(op: dict) -> set[str]:
    return {p["name"] for p in op.get("parameters", [])}


# -- built-in kinds ------------------------------------------------------------------------------


def test_every_builtin_names_the_definition_of_its_group_version_kind():
    for rt in [*builtin_types(), logical_cluster_type(), *workload_types()]:
        assert rt.openapi_definition == gvk_index().get((rt.group, rt.version, rt.kind), ""), rt.qualified_kind
        if rt.openapi_definition:
            assert openapi.schema_name(rt) == rt.openapi_definition


def test_every_patch_operation_carries_gvk_object_and_field_validation():
    for gv in _types_by_gv():
        doc = _doc(gv)
        ops = _patch_ops(doc)
        assert ops, gv
        for path, op in ops:
            gvk = op["x-kubernetes-group-version-kind"]
            assert isinstance(gvk, dict), path
            assert set(gvk) == {"group", "version", "kind"}
            assert "fieldValidation" in _param_names(op), path
            assert all(p["in"] == "query" for p in op["parameters"]), path
            assert op["x-kubernetes-action"] == "patch"


def test_configmap_patch_operation_shape():
    doc = _doc("v1")
    op = doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"]
    assert op["x-kubernetes-group-version-kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
    assert op["operationId"] == "patchCoreV1NamespacedConfigMap"
    assert set(op["requestBody"]["content"]) == {
        "application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml", SMP}
    assert {"dryRun", "fieldManager", "fieldValidation", "force"} <= _param_names(op)
    assert doc["openapi"].startswith("3.0")
    assert doc["info"]["version"].startswith("v1.32")


def test_smp_listed_for_builtins_including_crds():
    for gv in ("v1", "apiextensions.k8s.io/v1", "coordination.k8s.io/v1", "events.k8s.io/v1"):
        for _, op in _patch_ops(_doc(gv)):
            assert SMP in op["requestBody"]["content"]


def test_kind_schemas_have_gvk_arrays_descriptions_and_objectmeta_allof():
    doc = _doc("v1")
    schemas = doc["components"]["schemas"]
    cm = schemas["io.k8s.api.core.v1.ConfigMap"]
    assert cm["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "ConfigMap", "version": "v1"}]
    assert cm["description"].startswith("ConfigMap holds configuration data")
    assert cm["properties"]["metadata"]["allOf"] == [{"$ref": OBJECT_META_REF}]
    assert cm["properties"]["data"] == {
        "additionalProperties": {"type": "string"}, "description": cm["properties"]["data"]["description"],
        "type": "object"}
    assert "enum" not in cm["properties"]["apiVersion"]
    meta = schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]
    assert meta["properties"]["name"]["description"].startswith("Name must be unique")
    # every $ref resolves inside the document
    text = orjson.dumps(doc).decode()
    for ref in set(_refs(doc)):
        assert ref.removeprefix("#/components/schemas/") in schemas, ref
    assert '"type":["' not in text  # the nullable JSON-Schema form was undone


def _refs(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                yield v
            else:
                yield from _refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from _refs(v)


def test_schema_types_are_single_strings_and_int_or_string_is_oneof():
    defs = openapi.definitions()
    ios = defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]
    assert ios["oneOf"] == [{"type": "integer"}, {"type": "string"}]
    assert ios["description"].startswith("IntOrString")
    # strategic merge patch metadata survives for kubectl's client-side apply
    containers = defs["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    for name in ("io.k8s.api.apps.v1.Deployment", "io.k8s.api.apps.v1.ReplicaSet", "io.k8s.api.core.v1.Pod",
                 "io.k8s.api.core.v1.Node", "io.k8s.api.autoscaling.v1.Scale"):
        assert defs[name]["x-kubernetes-group-version-kind"]


def test_paths_cover_the_verbs_namespaced_and_cluster_scoped():
    doc = _doc("v1")
    paths = doc["paths"]
    coll = paths["/api/v1/namespaces/{namespace}/configmaps"]
    assert {"get", "post", "delete"} <= set(coll)
    assert coll["get"]["x-kubernetes-action"] == "list"
    assert coll["post"]["x-kubernetes-action"] == "post"
    assert coll["delete"]["x-kubernetes-action"] == "deletecollection"
    item = paths["/api/v1/namespaces/{namespace}/configmaps/{name}"]
    assert {"get", "put", "patch", "delete"} <= set(item)
    assert "watch" in _param_names(coll["get"])
    assert paths["/api/v1/configmaps"]["get"]["operationId"] == "listCoreV1ConfigMapForAllNamespaces"
    assert paths["/api/v1/watch/namespaces/{namespace}/configmaps"]["get"]["x-kubernetes-action"] == "watchlist"
    assert paths["/api/v1/watch/namespaces/{namespace}/configmaps/{name}"]["get"]["x-kubernetes-action"] == "watch"
    # cluster-scoped Namespace with status and finalize
    assert "/api/v1/namespaces/{name}" in paths
    status = paths["/api/v1/namespaces/{name}/status"]
    assert status["patch"]["x-kubernetes-group-version-kind"]["kind"] == "Namespace"
    assert "fieldValidation" in _param_names(status["patch"])
    assert "put" in paths["/api/v1/namespaces/{name}/finalize"]
    names = {p["name"] for p in paths["/api/v1/namespaces/{name}"]["parameters"]}
    assert names == {"name", "pretty"}


def test_crd_and_logical_cluster_documents():
    crd_doc = _doc("apiextensions.k8s.io/v1")
    name = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"
    assert crd_doc["components"]["schemas"][name]["x-kubernetes-group-version-kind"][0]["kind"] == \
        "CustomResourceDefinition"
    assert "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}/status" in crd_doc["paths"]
    lc_doc = _doc("tenancy.fleetplane.io/v1alpha1")
    lc = lc_doc["components"]["schemas"]["io.fleetplane.tenancy.v1alpha1.LogicalCluster"]
    assert lc["x-kubernetes-group-version-kind"] == [
        {"group": "tenancy.fleetplane.io", "kind": "LogicalCluster", "version": "v1alpha1"}]
    assert "LogicalClusterStatus" in lc["properties"]["status"]["allOf"][0]["$ref"]
    patch = lc_doc["paths"]["/apis/tenancy.fleetplane.io/v1alpha1/logicalclusters/{name}"]["patch"]
    assert patch["operationId"] == "patchTenancyFleetplaneIoV1alpha1LogicalCluster"
    # DeleteOptions is registered in this group version too
    delete_options = lc_doc["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"]
    assert {"group": "tenancy.fleetplane.io", "kind": "DeleteOptions", "version": "v1alpha1"} in \
        delete_options["x-kubernetes-group-version-kind"]


# -- custom resources ----------------------------------------------------------------------------


def test_custom_resource_schema_embedding():
    rt = widget()
    doc = openapi.group_version_document("stable.example.com/v1", [rt])
    schemas = doc["components"]["schemas"]
    w = schemas["com.example.stable.v1.Widget"]
    assert w["x-kubernetes-group-version-kind"] == [{"group": "stable.example.com", "kind": "Widget", "version": "v1"}]
    assert w["description"] == "A Widget is a thing."
    assert w["properties"]["metadata"]["allOf"] == [{"$ref": OBJECT_META_REF}]
    assert w["properties"]["apiVersion"]["type"] == "string"
    assert w["properties"]["kind"]["description"].startswith("Kind is a string value")
    spec = w["properties"]["spec"]
    assert spec["properties"]["color"]["enum"] == ["red", "blue"]
    assert spec["required"] == ["color"]
    assert spec["properties"]["port"]["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    template = spec["properties"]["template"]
    assert set(template["properties"]) == {"apiVersion", "kind", "metadata"}
    assert {"kind", "apiVersion"} <= set(template["required"])
    # the CRD's own schema object is not modified
    assert "metadata" not in WIDGET_SCHEMA["properties"]
    assert "anyOf" not in WIDGET_SCHEMA["properties"]["spec"]["properties"]["port"]
    lst = schemas["com.example.stable.v1.WidgetList"]
    assert lst["properties"]["items"]["items"] == {"$ref": "#/components/schemas/com.example.stable.v1.Widget"}
    assert lst["x-kubernetes-group-version-kind"][0]["kind"] == "WidgetList"
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in schemas
    assert "io.k8s.api.autoscaling.v1.Scale" in schemas


def test_custom_resource_patch_has_no_smp_and_keeps_field_validation():
    doc = openapi.group_version_document("stable.example.com/v1", [widget()])
    ops = _patch_ops(doc)
    assert {p for p, _ in ops} == {
        "/apis/stable.example.com/v1/namespaces/{namespace}/widgets/{name}",
        "/apis/stable.example.com/v1/namespaces/{namespace}/widgets/{name}/status",
        "/apis/stable.example.com/v1/namespaces/{namespace}/widgets/{name}/scale",
    }
    for _, op in ops:
        assert SMP not in op["requestBody"]["content"]
        assert set(op["requestBody"]["content"]) == {
            "application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"}
        assert "fieldValidation" in _param_names(op)
        assert op["x-kubernetes-group-version-kind"] == {"group": "stable.example.com", "version": "v1", "kind": "Widget"}
    scale_get = doc["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/widgets/{name}/scale"]["get"]
    ref = scale_get["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    assert ref.endswith("io.k8s.api.autoscaling.v1.Scale")
    assert "/apis/stable.example.com/v1/widgets" in doc["paths"]  # list across namespaces
    assert not any("/watch/" in p for p in doc["paths"])  # kube's CRD builder publishes no watch paths


def test_cluster_scoped_custom_resource_and_missing_schema():
    rt = widget(namespaced=False, schema=None, scale=False)
    doc = openapi.group_version_document("stable.example.com/v1", [rt])
    assert "/apis/stable.example.com/v1/widgets/{name}" in doc["paths"]
    assert doc["components"]["schemas"]["com.example.stable.v1.Widget"] == {
        "type": "object",
        "x-kubernetes-group-version-kind": [{"group": "stable.example.com", "kind": "Widget", "version": "v1"}],
    }


def test_schema_names():
    assert openapi.schema_name(widget()) == "com.example.stable.v1.Widget"
    assert openapi.schema_name(widget(), "WidgetList") == "com.example.stable.v1.WidgetList"
    cm = next(rt for rt in builtin_types() if rt.kind == "ConfigMap")
    assert openapi.schema_name(cm) == "io.k8s.api.core.v1.ConfigMap"
    assert openapi.schema_name(cm, "ConfigMapList") == "io.k8s.api.core.v1.ConfigMapList"


# -- root document, hashing, speed -----------------------------------------------------------------


def test_root_document_and_hash():
    docs = {gv: openapi.group_version_document(gv, types) for gv, types in _types_by_gv().items()}
    hashes = {gv: openapi.document_hash(d) for gv, d in docs.items()}
    root = openapi.root_document(docs.keys(), hashes)
    assert root["paths"]["api/v1"]["serverRelativeURL"] == f"/openapi/v3/api/v1?hash={hashes['v1']}"
    assert root["paths"]["apis/coordination.k8s.io/v1"]["serverRelativeURL"].startswith(
        "/openapi/v3/apis/coordination.k8s.io/v1?hash=")
    # keyed by document path works too
    by_path = openapi.root_document(["api/v1"], {"api/v1": "ABC"})
    assert by_path == {"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=ABC"}}}
    again = openapi.group_version_document("v1", _types_by_gv()["v1"])
    assert openapi.document_hash(again) == hashes["v1"]
    assert all(c in "0123456789ABCDEF" for c in hashes["v1"])
    changed = openapi.group_version_document("stable.example.com/v1", [widget()])
    assert openapi.document_hash(changed) != openapi.document_hash(
        openapi.group_version_document("stable.example.com/v1", [widget(scale=False)]))


def test_fifty_crds_build_fast():
    types = []
    for i in range(50):
        props = {f"f{j}": {"type": "string", "description": f"field {j}"} for j in range(50)}
        schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": props}}}
        types.append(ResourceType(f"g{i}.example.com", "v1", f"Kind{i}", f"kinds{i}", f"kind{i}", True,
                                  custom=True, subresources=("status",), openapi_schema=schema))
    openapi.group_version_document("warm.example.com/v1", [types[0]])  # data load
    start = time.perf_counter()
    for rt in types:
        openapi.group_version_document(rt.group_version, [rt])
    assert time.perf_counter() - start < 0.1
