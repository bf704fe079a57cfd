"""/openapi/v2 as kube-apiserver serves it: swagger JSON, gnostic protobuf, ETag caching, CRD schemas,
and kubectl 1.28 (which reads only this document) doing what kubectl 1.32 does with v3."""

from __future__ import annotations

import gzip
import json
import uuid
from pathlib import Path

import pytest

from fleetplane.server import openapiv2_pb2

from ..harness import Hub, Kubectl
from .test_kubectl import WIDGET, WIDGET_CRD

PROTOBUF = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _vendor(extensions) -> dict:
    return {e.name: json.loads(e.value.yaml) for e in extensions}


@pytest.fixture
def widget_cluster(hub: Hub, tmp_path: Path) -> tuple[str, Kubectl]:
    """A fresh logical cluster with the Widget CRD, and kubectl 1.28 bound to it."""
    name = "v2-" + uuid.uuid4().hex[:8]
    k = Kubectl(hub.kubeconfig_for(name, tmp_path), minor="1.28", namespace="default")
    k("apply", "-f", "-", stdin=WIDGET_CRD)
    k("wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=10s")
    return name, k


def test_json_document_is_swagger_with_the_built_ins(hub: Hub):
    code, headers, raw = hub.request("GET", "/openapi/v2")
    assert code == 200 and headers["content-type"] == "application/json"
    doc = json.loads(raw)
    assert doc["swagger"] == "2.0" and doc["info"]["title"] == "Kubernetes"
    assert "#/components/" not in raw.decode()
    cm = doc["definitions"]["io.k8s.api.core.v1.ConfigMap"]
    assert cm["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "ConfigMap", "version": "v1"}]
    assert cm["properties"]["metadata"]["$ref"] == "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    patch = doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "kind": "ConfigMap", "version": "v1"}
    params = {p["name"]: p for p in patch["parameters"]}
    assert params["fieldValidation"]["in"] == "query" and params["fieldValidation"]["type"] == "string"
    assert params["body"]["in"] == "body" and params["body"]["schema"]["$ref"].endswith("meta.v1.Patch")
    assert "application/strategic-merge-patch+json" in patch["consumes"]
    assert patch["responses"]["200"]["schema"]["$ref"] == "#/definitions/io.k8s.api.core.v1.ConfigMap"
    assert "/openapi/v2" in json.loads(hub.request("GET", "/")[2])["paths"]


def test_protobuf_decodes_as_gnostic_document_with_the_same_etag(hub: Hub):
    _, json_headers, raw = hub.request("GET", "/openapi/v2")
    code, headers, body = hub.request("GET", "/openapi/v2", headers={"Accept": PROTOBUF + ", application/json"})
    assert code == 200
    assert headers["content-type"] == "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    assert headers["etag"] == json_headers["etag"] and headers["vary"] == "Accept"
    doc = openapiv2_pb2.Document.FromString(body)
    as_json = json.loads(raw)
    assert doc.swagger == "2.0"
    assert {d.name for d in doc.definitions.additional_properties} == set(as_json["definitions"])
    paths = {p.name: p.value for p in doc.paths.path}
    patch = paths["/api/v1/namespaces/{namespace}/configmaps/{name}"].patch
    assert _vendor(patch.vendor_extension)["x-kubernetes-group-version-kind"] == {"group": "", "kind": "ConfigMap", "version": "v1"}
    queries = [p.parameter.non_body_parameter.query_parameter_sub_schema.name for p in patch.parameters]
    assert "fieldValidation" in queries
    cm = next(d.value for d in doc.definitions.additional_properties if d.name == "io.k8s.api.core.v1.ConfigMap")
    props = {p.name: p.value for p in cm.properties.additional_properties}
    assert list(props["data"].type.value) == ["object"]
    assert list(props["data"].additional_properties.schema.type.value) == ["string"]
    assert props["metadata"]._ref == "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    # gzip when asked for, as kube-openapi's handler
    code, gz_headers, packed = hub.request("GET", "/openapi/v2", headers={"Accept": PROTOBUF, "Accept-Encoding": "gzip"})
    assert code == 200 and gz_headers["content-encoding"] == "gzip" and gzip.decompress(packed) == body
    # the older spelling of the media type is served too, and one no form matches is 406
    assert hub.request("GET", "/openapi/v2", headers={"Accept": "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"})[2] == body
    assert hub.request("GET", "/openapi/v2", headers={"Accept": "text/html"})[0] == 406


def test_etag_answers_if_none_match_with_304_until_the_catalog_changes(hub: Hub):
    cluster = "v2-" + uuid.uuid4().hex[:8]
    path = f"/clusters/{cluster}/openapi/v2"
    code, headers, _ = hub.request("GET", path)
    assert code == 200
    tag = headers["etag"]
    assert tag.startswith('"') and len(tag) == 130
    for accept in ("application/json", PROTOBUF):
        code, h, body = hub.request("GET", path, headers={"If-None-Match": tag, "Accept": accept})
        assert (code, body) == (304, b"") and h["etag"] == tag
    assert hub.request("GET", path, headers={"If-None-Match": '"other"'})[0] == 200

    code, body = hub.json("POST", f"/clusters/{cluster}{CRDS}", {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "gadgets", "kind": "Gadget"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                     "type": "object", "properties": {"spec": {"type": "object", "properties": {
                         "size": {"type": "integer", "description": "How big."},
                         "note": {"type": "string", "nullable": True},
                         "port": {"x-kubernetes-int-or-string": True},
                         "choice": {"type": "string", "anyOf": [{"enum": ["a"]}, {"enum": ["b"]}]}}}}}}}]}})
    assert code == 201, body
    code, headers, raw = hub.request("GET", path, headers={"If-None-Match": tag})
    assert code == 200 and headers["etag"] != tag
    doc = json.loads(raw)
    gadget = doc["definitions"]["com.example.v1.Gadget"]
    assert gadget["x-kubernetes-group-version-kind"] == [{"group": "example.com", "kind": "Gadget", "version": "v1"}]
    spec = gadget["properties"]["spec"]["properties"]
    assert spec["size"] == {"type": "integer", "description": "How big."}
    assert "type" not in spec["note"] and "nullable" not in spec["note"]  # ToStructuralOpenAPIV2
    assert "anyOf" not in spec["choice"] and "anyOf" not in spec["port"]
    assert "/apis/example.com/v1/namespaces/{namespace}/gadgets/{name}" in doc["paths"]
    # per logical cluster: root does not see it
    assert "com.example.v1.Gadget" not in json.loads(hub.request("GET", "/openapi/v2")[2])["definitions"]


def test_kubectl_128_explain_get_create_and_apply(hub: Hub, widget_cluster: tuple[str, Kubectl]):
    _, k = widget_cluster
    out = k("explain", "configmap.data").out
    assert "KIND:" in out and "ConfigMap" in out and "<map[string]string>" in out
    out = k("explain", "widgets.spec.color").out
    assert "Widget" in out and "The widget's colour." in out
    out = k("explain", "widgets.spec").out
    assert "What the widget should be." in out and "replicas" in out

    assert k("create", "-f", "-", "--validate=strict", stdin=WIDGET.replace("{name}", "w1")).out.strip() == "widget.example.com/w1 created"
    assert k("create", "configmap", "c128", "--from-literal=a=b").out.strip() == "configmap/c128 created"
    bad = WIDGET.replace("{name}", "w2").replace("size: 3", "size: 3\n  bogus: 1")
    err = k.fail("create", "-f", "-", "--validate=strict", stdin=bad).err
    assert 'unknown field "spec.bogus"' in err

    manifest = WIDGET.replace("{name}", "w3")
    assert k("apply", "-f", "-", stdin=manifest).out.strip() == "widget.example.com/w3 created"
    assert k("apply", "-f", "-", stdin=manifest.replace("size: 3", "size: 4")).out.strip() == "widget.example.com/w3 configured"
    assert k.get_json("widget", "w3")["spec"]["size"] == 4
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ap128\ndata:\n  keep: '1'\n  drop: '2'\n"
    k("apply", "-f", "-", stdin=cm)
    k("apply", "-f", "-", stdin=cm.replace("  drop: '2'\n", ""))
    assert k.get_json("cm", "ap128")["data"] == {"keep": "1"}
    table = k("get", "widgets").out.splitlines()
    assert table[0].split() == ["NAME", "REPLICAS", "COLOR", "AGE"] and len(table) == 3


def test_kubectl_128_and_132_agree_on_validation(hub: Hub, widget_cluster: tuple[str, Kubectl], tmp_path: Path):
    """The same strict-validation error from kubectl 1.28 (v2) and 1.32 (v3)."""
    name, k128 = widget_cluster
    k132 = Kubectl(hub.kubeconfig_for(name, tmp_path), minor="1.32", namespace="default")
    bad = WIDGET.replace("{name}", "{n}").replace("size: 3", "size: 3\n  bogus: 1")
    e128 = k128.fail("apply", "-f", "-", stdin=bad.replace("{n}", "same")).err
    e132 = k132.fail("apply", "-f", "-", stdin=bad.replace("{n}", "same")).err
    assert e128 == e132 and 'unknown field "spec.bogus"' in e128
