"""Malformed input of every shape gets a 4xx Status naming the problem: never a 5xx."""

from __future__ import annotations

import json
import uuid

import pytest

from ..harness import Hub

WEIRD = [None, [], {}, "x", 1, True, [1], {"a": None}, {"a": []}, 1.5, -1, ""]
META_FIELDS = ["metadata", "metadata.name", "metadata.labels", "metadata.annotations", "metadata.finalizers",
               "metadata.ownerReferences", "metadata.managedFields", "metadata.generateName", "metadata.namespace",
               "metadata.resourceVersion", "metadata.uid", "metadata.generation", "metadata.creationTimestamp"]


def _set(obj: dict, path: str, value) -> dict:
    parts = path.split(".")
    cur = obj
    for p in parts[:-1]:
        cur = cur.setdefault(p, {})
    cur[parts[-1]] = value
    return obj


def _assert_status(code: int, raw: bytes, what: str) -> None:
    assert code < 500, f"{what}: {code} {raw[:300]!r}"
    if code >= 400:
        body = json.loads(raw)
        assert body["kind"] == "Status" and body["code"] == code and body["message"], what


@pytest.mark.parametrize("field", META_FIELDS + ["data", "binaryData", "immutable"])
def test_wrong_types_in_a_configmap(hub: Hub, namespace: str, field: str):
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    hub.json("POST", base, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "target"}})
    for value in WEIRD:
        body = _set({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "n" + uuid.uuid4().hex[:6]}}, field, value)
        patch = {k: v for k, v in body.items() if k not in ("apiVersion", "kind")}
        for method, path, ctype, payload in [
            ("POST", base, "application/json", body),
            ("PUT", f"{base}/target", "application/json", body),
            ("PATCH", f"{base}/target", "application/merge-patch+json", patch),
            ("PATCH", f"{base}/target", "application/strategic-merge-patch+json", patch),
            ("PATCH", f"{base}/target?fieldManager=fuzz", "application/apply-patch+yaml",
             _set(json.loads(json.dumps(body)), "metadata.name", "target") if isinstance(body.get("metadata"), dict) else body),
        ]:
            code, _, raw = hub.request(method, path, json.dumps(payload).encode(), content_type=ctype)
            _assert_status(code, raw, f"{method} {ctype} {field}={value!r}")
    _, listed = hub.json("GET", base)
    assert all(i["metadata"]["name"] == "target" or isinstance(i.get("data", {}), dict) for i in listed["items"])


def test_malformed_patches_options_and_parameters(hub: Hub, namespace: str):
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    hub.json("POST", base, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "f"}, "data": {"a": "1"}})
    patches = [(b"[]", "application/json-patch+json"), (b'[{"op":"bogus"}]', "application/json-patch+json"),
               (b'[{"op":"add"}]', "application/json-patch+json"), (b'"x"', "application/merge-patch+json"),
               (b"null", "application/merge-patch+json"), (b"- 1", "application/apply-patch+yaml"),
               (b"{: bad yaml", "application/apply-patch+yaml"), (b'{"$patch":"delete"}', "application/strategic-merge-patch+json"),
               (b'{"data":{"$retainKeys":[1]}}', "application/strategic-merge-patch+json"), (b"{}", "text/plain")]
    for body, ctype in patches:
        code, _, raw = hub.request("PATCH", f"{base}/f?fieldManager=x", body, content_type=ctype)
        _assert_status(code, raw, f"patch {ctype} {body!r}")
    for query in ["limit=-1", "limit=x", "watch=true&timeoutSeconds=x", "watch=true&resourceVersion=abc",
                  "continue=%25%25", "labelSelector=a%20in%20(", "fieldSelector=%3D%3D", "includeObject=x",
                  "resourceVersionMatch=Exact&resourceVersion=0", "dryRun=Never"]:
        code, _, raw = hub.request("GET", f"{base}?{query}")
        _assert_status(code, raw, query)
    for body in [b"{", b"[]", b'{"propagationPolicy":"X"}', b'{"preconditions":"x"}', b'{"gracePeriodSeconds":"x"}',
                 b'{"preconditions":{"uid":"nope"}}']:
        code, _, raw = hub.request("DELETE", f"{base}/f", body)
        _assert_status(code, raw, f"delete {body!r}")
        assert code >= 400
    assert hub.json("GET", f"{base}/f")[0] == 200  # nothing deleted by a bad request
    for path in ["/apis/", "/apis/x", "/openapi/v3/apis/x/y", "/clusters//api", f"{base}/f/x/y",
                 "/api/v1/namespaces/default/configmaps/f/status", "/api/v1/namespaces/Bad/configmaps"]:
        code, _, raw = hub.request("GET", path)
        _assert_status(code, raw, path)


def test_garbage_crds_are_refused_with_causes(hub: Hub):
    cluster = "bad-" + uuid.uuid4().hex[:6]
    path = f"/clusters/{cluster}/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    base = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "xs.example.com"}}
    specs = [None, "x", {}, {"group": "example.com"}, {"group": 1, "names": "x", "scope": "Nowhere", "versions": "v1"},
             {"group": "example.com", "scope": "Namespaced", "names": {"plural": "xs", "kind": "X"},
              "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object",
                            "properties": {"spec": {"properties": {"a": {"type": "bogus"}}}}}}}]},
             {"group": "example.com", "scope": "Namespaced", "names": {"plural": "xs", "kind": "X"},
              "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object",
                            "x-kubernetes-validations": [{"rule": "self.a +"}]}}}]},
             {"group": "example.com", "scope": "Namespaced", "names": {"plural": "xs", "kind": "X"},
              "versions": [{"name": "v1", "served": True, "storage": True, "schema": "nope"}]}]
    for spec in specs:
        code, _, raw = hub.request("POST", path, json.dumps({**base, "spec": spec}).encode())
        _assert_status(code, raw, f"crd spec {spec!r}")
        assert code in (400, 422), (spec, raw)
    _, listed = hub.json("GET", path)
    assert listed["items"] == []


def test_an_undecodable_body_is_kubes_unrecognized_object(hub: Hub):
    """apiserver's transformDecodeError: the kind the endpoint wants, the parse error, and the start
    of the body (as text for a JSON object, else in hex)."""
    code, _, raw = hub.request("POST", "/api/v1/namespaces", b"bad body")
    message = json.loads(raw)["message"]
    assert code == 400 and message.startswith(
        "the object provided is unrecognized (must be of type Namespace): couldn't get version/kind; json parse error: ")
    assert message.endswith(" (62616420626f6479)")
    code, _, raw = hub.request("POST", "/api/v1/namespaces", b'{"metadata": {"name": "x"}, oops}')
    assert code == 400 and json.loads(raw)["message"].endswith('({"metadata": {"name": "x"}, oo ...)')
