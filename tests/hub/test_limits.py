"""The limits a body is held to (docs/api.md, "Limits"), over the wire: YAML aliases, nesting
depth, non-string YAML keys, decoded sizes, JSON-patch copies, names. Each refusal is a 4xx
Status naming the problem, and the hub keeps serving while it refuses."""

from __future__ import annotations

import json
import re
import threading
import time
import uuid

import pytest

from fleetplane.apimachinery.limits import MAX_DEPTH

from ..harness import Hub
from .test_crd import CRDS

YAML = "application/yaml"
TOO_LARGE = "Request entity too large: limit is 3145728"


def _status(raw: bytes) -> dict:
    body = json.loads(raw)
    assert body["kind"] == "Status", body
    return body


def _nested(depth: int) -> object:
    """A JSON value that is ``depth`` levels of arrays deep."""
    return json.loads("[" * depth + "]" * depth)


def _billion_laughs(name: str) -> bytes:
    """The classic: nine levels of nine aliases each, ~400 bytes expanding to 9**9 strings."""
    lines = ["apiVersion: v1", "kind: ConfigMap", "metadata:", f"  name: {name}", "data:",
             '  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    prev = "a"
    for n in "bcdefghi":
        lines.append(f"  {n}: &{n} [" + ",".join([f"*{prev}"] * 9) + "]")
        prev = n
    return ("\n".join(lines) + "\n").encode()


def test_billion_laughs_is_a_quick_400_while_the_hub_answers_others(hub: Hub, namespace: str):
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    body = _billion_laughs("lol")
    assert len(body) < 450
    result: dict[str, object] = {}

    def post() -> None:
        started = time.monotonic()
        result["post"] = hub.request("POST", base, body, content_type=YAML, timeout=60)
        result["post_seconds"] = time.monotonic() - started

    poster = threading.Thread(target=post)
    poster.start()
    code, _, _ = hub.request("GET", f"/api/v1/namespaces/{namespace}", timeout=30)  # answered meanwhile
    poster.join(60)
    assert code == 200
    post_code, _, raw = result["post"]  # type: ignore[misc]
    assert post_code == 400, raw[:300]
    assert _unframed(_status(raw)["message"]) == "error converting YAML to JSON: yaml: document contains excessive aliasing"
    assert result["post_seconds"] < 10  # refused while counting, never expanded (it took minutes and then crashed)
    assert hub.request("GET", f"{base}/lol")[0] == 404
    # server-side apply reads YAML the same way
    code, _, raw = hub.request("PATCH", f"{base}/lol?fieldManager=t", body, content_type="application/apply-patch+yaml")
    assert code == 400 and _status(raw)["message"].endswith("yaml: document contains excessive aliasing")
    assert hub.request("GET", f"{base}/lol")[0] == 404


def test_aliases_within_gos_rule_are_expanded_into_independent_copies(hub: Hub, namespace: str):
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    body = (b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\n  labels: &l {app: web}\n"
            b"  annotations:\n    <<: *l\n    note: merged\ndata:\n  a: &v hello\n  b: *v\n")
    code, _, raw = hub.request("POST", base, body, content_type=YAML)
    assert code == 201, raw
    got = json.loads(raw)
    assert got["metadata"]["labels"] == {"app": "web"}
    assert got["metadata"]["annotations"]["app"] == "web" and got["metadata"]["annotations"]["note"] == "merged"
    assert got["data"] == {"a": "hello", "b": "hello"}


DEEP = MAX_DEPTH + 1  # the value below sits one level down, so this is past the limit


def _unframed(message: str) -> str:
    """The decoding error inside kube's frame for a create or update body that does not parse."""
    framed = re.fullmatch(r"the object provided is unrecognized \(must be of type ConfigMap\): (.*) \(.*\)", message, re.S)
    assert framed, message
    return framed.group(1)


@pytest.mark.parametrize("depth", [DEEP, 300, 5000])
def test_nesting_past_the_limit_is_a_400_in_every_format(hub: Hub, namespace: str, depth: int):
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    hub.json("POST", base, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "target"}})
    deep = "[" * depth + "]" * depth
    obj = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"x":' + deep + "}"
    cases = [
        ("POST", base, "application/json", obj.encode(), "couldn't get version/kind; json parse error: "),
        ("POST", base, YAML, f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\nx: {deep}\n".encode(),
         "error converting YAML to JSON: yaml: line 5: "),
        ("PUT", f"{base}/target", "application/json", obj.replace('"deep"', '"target"').encode(),
         "couldn't get version/kind; json parse error: "),
        ("PATCH", f"{base}/target", "application/merge-patch+json", ('{"x":' + deep + "}").encode(), "error decoding patch: "),
        ("PATCH", f"{base}/target", "application/strategic-merge-patch+json", ('{"x":' + deep + "}").encode(),
         "error decoding patch: "),
        ("PATCH", f"{base}/target", "application/json-patch+json",
         ('[{"op":"add","path":"/x","value":' + deep + "}]").encode(), "error decoding patch: "),
        ("PATCH", f"{base}/target?fieldManager=t", "application/apply-patch+yaml",
         obj.replace('"deep"', '"target"').encode(), "error decoding patch: "),
        ("PATCH", f"{base}/target?fieldManager=t", "application/apply-patch+yaml",
         f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: target\nx: {deep}\n".encode(),
         "error converting YAML to JSON: yaml: line 5: "),
        ("POST", base, "application/vnd.kubernetes.protobuf", _protobuf_json_envelope("v1", "ConfigMap", obj.encode()),
         "unable to decode the protobuf body: "),
    ]
    for method, path, ctype, body, prefix in cases:
        code, _, raw = hub.request(method, path, body, content_type=ctype)
        assert code == 400, (method, ctype, code, raw[:300])
        message = _status(raw)["message"]
        if method in ("POST", "PUT") and "protobuf" not in ctype:
            message = _unframed(message)
        assert message == f"{prefix}exceeded max depth of {MAX_DEPTH}", (method, ctype)
    assert hub.request("GET", f"{base}/deep")[0] == 404


def _protobuf_json_envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    """kube's protobuf envelope (runtime.Unknown) carrying a JSON object (contentType = 4)."""
    def field(num: int, value: bytes) -> bytes:
        length, out = len(value), b""
        while True:
            out += bytes([(length & 0x7F) | (0x80 if length > 0x7F else 0)])
            length >>= 7
            if not length:
                break
        return bytes([num << 3 | 2]) + out + value
    type_meta = field(1, api_version.encode()) + field(2, kind.encode())
    return b"k8s\x00" + field(1, type_meta) + field(2, raw) + field(4, b"application/json")


def test_an_object_at_the_depth_limit_works_everywhere(hub: Hub):
    """Depth 200 is what the hub can carry through every stage without running out of stack
    (create, get, list, watch, merge and JSON patches, apply, managedFields, deletion)."""
    cluster = "deep-" + uuid.uuid4().hex[:8]
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "blobs.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "blobs", "kind": "Blob"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                        "type": "object", "properties": {"spec": {"type": "object",
                                                                  "x-kubernetes-preserve-unknown-fields": True}}}}}]}}
    assert hub.json("POST", f"/clusters/{cluster}{CRDS}", crd)[0] == 201
    base = f"/clusters/{cluster}/apis/example.com/v1/namespaces/default/blobs"
    # the object is depth 1, spec 2, spec.a 3: spec.a holds MAX_DEPTH - 2 levels of arrays
    limit_value = _nested(MAX_DEPTH - 2)
    code, created = hub.json("POST", base, {"apiVersion": "example.com/v1", "kind": "Blob",
                                            "metadata": {"name": "b"}, "spec": {"a": limit_value}})
    assert code == 201, created
    assert created["spec"]["a"] == limit_value
    assert hub.json("GET", f"{base}/b")[1]["spec"]["a"] == limit_value
    assert hub.json("GET", base)[1]["items"][0]["spec"]["a"] == limit_value
    code, _, raw = hub.request("GET", f"{base}?watch=true&timeoutSeconds=1", timeout=30)
    assert code == 200 and json.loads(raw.splitlines()[0])["object"]["spec"]["a"] == limit_value
    code, patched = hub.json("PATCH", f"{base}/b", {"spec": {"b": limit_value}}, content_type="application/merge-patch+json")
    assert code == 200 and patched["spec"]["b"] == limit_value, patched
    code, patched = hub.json("PATCH", f"{base}/b", [{"op": "copy", "from": "/spec/a", "path": "/spec/c"}],
                             content_type="application/json-patch+json")
    assert code == 200 and patched["spec"]["c"] == limit_value, patched
    code, applied = hub.json("PATCH", f"{base}/b?fieldManager=deep", {
        "apiVersion": "example.com/v1", "kind": "Blob", "metadata": {"name": "b"}, "spec": {"d": {"e": _nested(MAX_DEPTH - 3)}}},
        content_type="application/apply-patch+yaml")
    assert code == 200, applied
    # a JSON patch adding a level below the innermost array takes the object past the limit
    innermost = "/spec/a" + "/0" * (MAX_DEPTH - 3)
    code, _, raw = hub.request("PATCH", f"{base}/b", json.dumps(
        [{"op": "add", "path": f"{innermost}/-", "value": []}]).encode(), content_type="application/json-patch+json")
    assert code == 422, raw
    assert hub.json("DELETE", f"{base}/b")[0] == 200


def test_yaml_keys_and_binary_as_sigs_yaml_converts_them(hub: Hub, namespace: str):
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    body = (b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keys\n"
            b"data:\n  1: one\n  0x10: sixteen\n  true: yes-key\n  0.5: half\n"
            b"  bin: !!binary aGVsbG8gd29ybGQ=\n  when: 2024-01-01T00:00:00Z\n")
    code, _, raw = hub.request("POST", base, body, content_type=YAML)
    assert code == 201, raw
    assert json.loads(raw)["data"] == {"1": "one", "16": "sixteen", "true": "yes-key", "0.5": "half",
                                       "bin": "hello world", "when": "2024-01-01T00:00:00Z"}
    refused = [
        (b"~: x\n", 'error converting YAML to JSON: unsupported map key of type: %!s(<nil>), key: <nil>, value: "x"'),
        (b"k: !!binary not-base64!\n", "error converting YAML to JSON: yaml: !!binary value contains invalid base64 data"),
        (b"k: !!int twelve\n", "error converting YAML to JSON: yaml: cannot decode !!str `twelve` as a !!int"),
        (b"k: .nan\n", "error converting YAML to JSON: json: unsupported value: NaN"),
    ]
    for data, message in refused:
        body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\ndata:\n  " + data
        code, _, raw = hub.request("POST", base, body, content_type=YAML)
        assert code == 400, (data, raw)
        assert _unframed(_status(raw)["message"]) == message
    assert hub.request("GET", f"{base}/bad")[0] == 404


def test_sizes_are_measured_on_the_body_and_on_what_it_decodes_to(hub: Hub, namespace: str):
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    # a 1 MiB string and four aliases of it: a small body, 5 MiB of JSON (go-yaml's node count allows it)
    body = (b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  a: &s " + b"x" * (1 << 20)
            + b"\n  b: *s\n  c: *s\n  d: *s\n  e: *s\n")
    code, _, raw = hub.request("POST", base, body, content_type=YAML, timeout=60)
    assert code == 413, raw[:300]
    status = _status(raw)
    assert status["reason"] == "RequestEntityTooLarge" and status["message"].startswith(TOO_LARGE)
    # the body itself past 3 MiB: kube's words
    body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"},
                       "data": {"a": "x" * (3 << 20)}}).encode()
    code, _, raw = hub.request("POST", base, body, timeout=60)
    assert code == 413 and _status(raw)["message"] == TOO_LARGE
    assert hub.request("GET", f"{base}/big")[0] == 404


def test_json_patch_copies_are_bounded_as_kubes(hub: Hub, namespace: str):
    """Each ``copy`` doubling the object would need 2**40 bytes: kube stops at 3 MiB copied."""
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    assert hub.json("POST", base, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                                   "data": {"a": "x" * 1000}})[0] == 201
    ops = [{"op": "copy", "from": "/data", "path": "/metadata/annotations"}]
    ops += [{"op": "copy", "from": "/metadata", "path": f"/metadata/labels{i}"} for i in range(40)]
    started = time.monotonic()
    code, _, raw = hub.request("PATCH", f"{base}/c", json.dumps(ops).encode(),
                               content_type="application/json-patch+json", timeout=60)
    assert code == 422, raw[:300]
    assert _status(raw)["reason"] == "Invalid"
    assert time.monotonic() - started < 20
    assert hub.json("GET", f"{base}/c")[1]["data"] == {"a": "x" * 1000}


@pytest.mark.parametrize("kind,path", [("ConfigMap", "/api/v1/namespaces/default/configmaps"),
                                       ("Namespace", "/api/v1/namespaces")])
def test_a_name_with_a_trailing_newline_is_invalid(hub: Hub, kind: str, path: str):
    code, body = hub.json("POST", path, {"apiVersion": "v1", "kind": kind, "metadata": {"name": "bad\n"}})
    assert code == 422, body
    assert body["reason"] == "Invalid"
    assert body["details"]["causes"][0]["field"] == "metadata.name"
    assert hub.json("GET", f"{path}/bad%0A")[0] == 404


@pytest.mark.parametrize("cluster", ["root", "team"])
def test_a_logical_cluster_with_a_trailing_newline_is_invalid(hub: Hub, cluster: str):
    code, body = hub.json("GET", f"/clusters/{cluster}%0A/api/v1/namespaces")
    assert code == 400, body
    assert body["message"].startswith("invalid cluster: " + json.dumps(cluster + "\n") + " does not match the regex")


def test_the_watch_cache_reports_its_history_per_resource(hub: Hub, namespace: str):
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    assert hub.json("POST", base, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m"},
                                   "data": {"a": "x" * 5000}})[0] == 201
    code, _, raw = hub.request("GET", "/metrics")
    assert code == 200
    samples = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in raw.decode().splitlines()
               if line.startswith("fleetplane_watch_cache_history_")}
    assert samples['fleetplane_watch_cache_history_events{group="",resource="configmaps"}'] >= 1
    assert samples['fleetplane_watch_cache_history_bytes{group="",resource="configmaps"}'] >= 5000


def test_a_large_yaml_body_is_decoded_as_a_small_one(hub: Hub, namespace: str):
    """Past 64 KiB, YAML is decoded on a worker thread (the event loop keeps serving): same result."""
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    data = {f"k{i}": f"{i}-" + "v" * 1000 for i in range(900)}
    body = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: large\ndata:\n"
            + "".join(f"  {k}: {v}\n" for k, v in data.items())).encode()
    assert len(body) > 800_000
    code, _, raw = hub.request("POST", base, body, content_type=YAML, timeout=60)
    assert code == 201, raw[:300]
    assert json.loads(raw)["data"] == data
    code, _, raw = hub.request("POST", base, body.replace(b"name: large", b"name: large2").replace(b"k1: ", b"~: "),
                               content_type=YAML, timeout=60)
    assert code == 400 and "unsupported map key" in _status(raw)["message"]


def test_configmap_data_is_at_most_one_mib_as_kubes(hub: Hub, namespace: str):
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    code, body = hub.json("POST", base, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fat"},
                                         "data": {"a": "x" * (600 * 1024), "b": "y" * (600 * 1024)}}, timeout=60)
    assert code == 422, body
    assert body["details"]["causes"] == [{"reason": "FieldValueTooLong", "message": "Too long: may not be more than 1048576 bytes",
                                          "field": ""}]
    assert hub.json("POST", base, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fat"},
                                   "data": {"a": "x" * (1000 * 1024)}}, timeout=60)[0] == 201
