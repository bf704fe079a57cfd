"""REST semantics over HTTP, checked on the wire (status codes, Status bodies, metadata)."""

from __future__ import annotations

import json
import re

from ..harness import Hub, wait_for


def cm(name: str, data: dict | None = None, **meta) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}, "data": data or {"k": "v"}}


def test_version_health_and_discovery_shapes(hub: Hub):
    code, version = hub.json("GET", "/version", auth=False)
    assert code == 200 and version["major"] == "1" and version["minor"] == "32" and version["gitVersion"].startswith("v1.32")
    for path in ("/livez", "/readyz", "/healthz"):
        assert hub.request("GET", path, auth=False)[0] == 200
    _, api = hub.json("GET", "/api")
    assert api["versions"] == ["v1"] and isinstance(api["serverAddressByClientCIDRs"], list)
    _, groups = hub.json("GET", "/apis")
    names = {g["name"] for g in groups["groups"]}
    assert {"apiextensions.k8s.io", "coordination.k8s.io", "events.k8s.io"} <= names
    assert all("preferredVersion" in g for g in groups["groups"])
    _, core = hub.json("GET", "/api/v1")
    by_name = {r["name"]: r for r in core["resources"]}
    assert by_name["configmaps"]["shortNames"] == ["cm"] and by_name["configmaps"]["singularName"] == "configmap"
    assert "namespaces/status" in by_name and by_name["namespaces/status"]["singularName"] == ""


def test_unauthenticated_requests_get_401_status(hub: Hub):
    code, body = hub.json("GET", "/api/v1/namespaces", auth=False, headers={"Authorization": "Bearer not-a-token"})
    assert code == 401 and body["kind"] == "Status" and body["reason"] == "Unauthorized"
    code, body = hub.json("GET", "/api/v1/namespaces", auth=False)  # no credentials: system:anonymous, whom RBAC refuses
    assert code == 403 and body["reason"] == "Forbidden"


def test_aggregated_discovery_when_asked(hub: Hub):
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
    code, headers, raw = hub.request("GET", "/apis", headers={"Accept": accept})
    assert code == 200 and "as=APIGroupDiscoveryList" in headers["content-type"]
    doc = json.loads(raw)
    crd_group = next(i for i in doc["items"] if i["metadata"].get("name") == "apiextensions.k8s.io")
    res = crd_group["versions"][0]["resources"][0]
    assert res["resource"] == "customresourcedefinitions" and res["scope"] == "Cluster"


def test_aggregated_discovery_is_sent_only_when_it_changed(hub: Hub, logical_cluster: str):
    """kube's discovery ETag: the same while the types are, 304 without a body for If-None-Match
    with it, another once a CRD is served (the new document lists it); each version its own."""
    v2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
    v2beta1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
    base = f"/clusters/{logical_cluster}"
    for path in ("/api", "/apis"):
        code, headers, _ = hub.request("GET", base + path, headers={"Accept": v2})
        tag = headers["etag"]
        assert code == 200 and tag.startswith('"') and headers["vary"] == "Accept"
        assert hub.request("GET", base + path, headers={"Accept": v2})[1]["etag"] == tag
        code, headers, raw = hub.request("GET", base + path, headers={"Accept": v2, "If-None-Match": tag})
        assert (code, raw, headers["etag"]) == (304, b"", tag) and "content-type" not in headers
        assert hub.request("GET", base + path, headers={"Accept": v2beta1})[1]["etag"] != tag
    _, headers, _ = hub.request("GET", base + "/apis", headers={"Accept": v2})
    tag = headers["etag"]
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "sprockets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "sprockets", "kind": "Sprocket"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}
    code, body = hub.json("POST", f"{base}/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert code == 201, body

    def served() -> bytes | None:
        code, headers, raw = hub.request("GET", base + "/apis", headers={"Accept": v2, "If-None-Match": tag})
        return raw if code == 200 and b'"sprockets"' in raw else None

    raw = wait_for(served, timeout=10)
    assert any(i["metadata"]["name"] == "example.com" for i in json.loads(raw)["items"])


def test_create_get_update_conflict_and_delete(hub: Hub, namespace: str):
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    code, created = hub.json("POST", base, cm("one"))
    assert code == 201
    meta = created["metadata"]
    assert re.fullmatch(r"[0-9a-f-]{36}", meta["uid"]) and meta["resourceVersion"].isdigit()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", meta["creationTimestamp"])
    assert "generation" not in meta  # ConfigMaps don't track generation
    code, body = hub.json("POST", base, cm("one"))
    assert (code, body["reason"], body["message"]) == (409, "AlreadyExists", 'configmaps "one" already exists')
    assert body["details"] == {"name": "one", "group": "", "kind": "configmaps"}

    stale = dict(created, data={"k": "v2"})
    code, updated = hub.json("PUT", f"{base}/one", stale)
    assert code == 200 and int(updated["metadata"]["resourceVersion"]) > int(meta["resourceVersion"])
    code, body = hub.json("PUT", f"{base}/one", dict(created, data={"k": "v3"}))
    assert code == 409 and body["reason"] == "Conflict" and "the object has been modified" in body["message"]
    _, got = hub.json("GET", f"{base}/one")
    assert got["data"] == {"k": "v2"}

    code, body = hub.json("DELETE", f"{base}/one")
    assert code == 200 and body["status"] == "Success" and body["details"]["uid"] == meta["uid"]
    code, body = hub.json("GET", f"{base}/one")
    assert (code, body["reason"], body["message"]) == (404, "NotFound", 'configmaps "one" not found')


def test_generate_name_and_list_items_never_null(hub: Hub, namespace: str):
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    _, empty = hub.json("GET", base)
    assert empty["items"] == [] and empty["kind"] == "ConfigMapList"
    code, created = hub.json("POST", base, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-"}})
    assert code == 201 and re.fullmatch(r"gen-[bcdfghjklmnpqrstvwxz2456789]{5}", created["metadata"]["name"])


def test_label_and_field_selectors(hub: Hub, namespace: str):
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    for name, labels in [("a", {"app": "web", "tier": "fe"}), ("b", {"app": "db"}), ("c", {})]:
        assert hub.json("POST", base, cm(name, labels=labels))[0] == 201

    def names(query: str) -> list[str]:
        code, body = hub.json("GET", f"{base}?{query}")
        assert code == 200, body
        return [i["metadata"]["name"] for i in body["items"]]

    assert names("labelSelector=app%3Dweb") == ["a"]
    assert names("labelSelector=app%3D%3Dweb") == ["a"]
    assert names("labelSelector=app%21%3Dweb") == ["b", "c"]
    assert names("labelSelector=app+in+(web,db)") == ["a", "b"]
    assert names("labelSelector=app+notin+(web)") == ["b", "c"]
    assert names("labelSelector=tier") == ["a"]
    assert names("labelSelector=%21tier") == ["b", "c"]
    assert names("labelSelector=app,%21tier") == ["b"]
    assert names("fieldSelector=metadata.name%3Db") == ["b"]
    assert names("fieldSelector=metadata.name%21%3Db") == ["a", "c"]
    assert names(f"fieldSelector=metadata.namespace%3D{namespace}") == ["a", "b", "c"]
    code, body = hub.json("GET", f"{base}?fieldSelector=spec.foo%3Dx")
    assert code == 400 and body["reason"] == "BadRequest" and "spec.foo" in body["message"]
    code, body = hub.json("GET", f"{base}?labelSelector=app+in+web")
    assert code == 400 and "unable to parse requirement" in body["message"]


def test_paging_with_limit_and_continue(hub: Hub, namespace: str):
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    for i in range(7):
        hub.json("POST", base, cm(f"p{i}"))
    seen, token, pages = [], "", 0
    while True:
        _, page = hub.json("GET", f"{base}?limit=3" + (f"&continue={token}" if token else ""))
        pages += 1
        seen += [i["metadata"]["name"] for i in page["items"]]
        token = page["metadata"].get("continue", "")
        if not token:
            break
        assert page["metadata"]["remainingItemCount"] > 0
    assert seen == [f"p{i}" for i in range(7)] and pages == 3
    code, body = hub.json("GET", f"{base}?limit=3&continue=garbage")
    assert code == 400


def test_dry_run_stores_nothing(hub: Hub, namespace: str):
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    code, body = hub.json("POST", f"{base}?dryRun=All", cm("dry"))
    assert code == 201 and body["metadata"]["name"] == "dry"
    assert hub.json("GET", f"{base}/dry")[0] == 404
    code, body = hub.json("POST", f"{base}?dryRun=Some", cm("dry"))
    assert code == 422


def test_namespace_errors(hub: Hub):
    code, body = hub.json("POST", "/api/v1/namespaces/nope/configmaps", cm("x"))
    assert (code, body["message"]) == (404, 'namespaces "nope" not found')
    code, body = hub.json("DELETE", "/api/v1/namespaces/default")
    assert code == 403 and body["message"] == 'namespaces "default" is forbidden: this namespace may not be deleted'


def test_secret_string_data_is_write_only(hub: Hub, namespace: str):
    code, body = hub.json("POST", f"/api/v1/namespaces/{namespace}/secrets",
                          {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"pw": "hunter2"}})
    assert code == 201 and "stringData" not in body
    assert body["data"] == {"pw": "aHVudGVyMg=="} and body["type"] == "Opaque"


def test_immutable_configmap(hub: Hub, namespace: str):
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    _, created = hub.json("POST", base, dict(cm("frozen"), immutable=True))
    code, body = hub.json("PUT", f"{base}/frozen", dict(created, data={"k": "changed"}))
    assert code == 422 and body["reason"] == "Invalid"
    assert any(c["field"] == "data" for c in body["details"]["causes"])


def test_bad_input_gets_status_errors(hub: Hub, namespace: str):
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    cases = [
        (b"{not json", "application/json", 400),
        (b"- a\n- b", "application/yaml", 400),
        (json.dumps({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}}).encode(), "application/json", 400),
        (json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name"}}).encode(), "application/json", 422),
        (json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "labels": {"a": "b c"}}}).encode(), "application/json", 422),
        (json.dumps({"kind": "ConfigMap", "metadata": {"name": "x"}}).encode(), "application/json", 400),
        (b"x" * (3 * 1024 * 1024 + 10), "application/json", 413),
        (b"k8s\x00garbage", "application/vnd.kubernetes.protobuf", 400),
        (b"<xml/>", "text/xml", 415),
    ]
    for body, ctype, want in cases:
        code, headers, raw = hub.request("POST", base, body, content_type=ctype)
        status = json.loads(raw)
        assert code == want, (body[:60], code, status)
        assert status["kind"] == "Status" and status["code"] == want and status["message"]
        assert headers["content-type"] == "application/json"
    code, body = hub.json("GET", "/apis/example.com/v1/nothings")
    assert code == 404 and body["kind"] == "Status"
    _, listed = hub.json("GET", base)
    assert listed["items"] == []  # nothing half-written


def test_concurrent_patches_without_resource_version_all_succeed(hub: Hub, namespace: str):
    """A patch that does not pin a resourceVersion is re-applied to the fresh object when it loses a race
    (kube's GuaranteedUpdate); only a patch carrying a stale resourceVersion conflicts."""
    from concurrent.futures import ThreadPoolExecutor

    base = f"/api/v1/namespaces/{namespace}/configmaps"
    assert hub.json("POST", base, cm("raced"))[0] == 201
    kinds = {
        "merge": ("application/merge-patch+json", lambda i: {"data": {f"m{i}": "x"}}),
        "strategic": ("application/strategic-merge-patch+json", lambda i: {"data": {f"s{i}": "x"}}),
        "json": ("application/json-patch+json", lambda i: [{"op": "add", "path": f"/data/j{i}", "value": "x"}]),
        "apply": ("application/apply-patch+yaml", lambda i: {"apiVersion": "v1", "kind": "ConfigMap",
                                                               "metadata": {"name": "raced"}, "data": {f"a{i}": "x"}}),
    }

    def patch(kind: str, i: int) -> int:
        ctype, body = kinds[kind]
        query = f"?fieldManager=m{i}" if kind == "apply" else ""
        return hub.request("PATCH", f"{base}/raced{query}", body(i), content_type=ctype, timeout=60)[0]

    jobs = [(kind, i) for i in range(25) for kind in kinds]
    with ThreadPoolExecutor(max_workers=32) as pool:
        codes = list(pool.map(lambda job: patch(*job), jobs))
    assert codes == [200] * len(jobs)
    _, final = hub.json("GET", f"{base}/raced")
    assert set(final["data"]) == {"k"} | {f"{kind[0]}{i}" for kind, i in jobs}
    stale = {"metadata": {"resourceVersion": "1"}, "data": {"late": "x"}}
    code, body = hub.json("PATCH", f"{base}/raced", stale, content_type="application/merge-patch+json")
    assert (code, body["reason"]) == (409, "Conflict") and "the object has been modified" in body["message"]


def test_status_fields_in_metav1_order(hub: Hub, namespace: str):
    """Some clients compare the raw text: kind, apiVersion, metadata, status, message, reason, details, code."""
    _, _, raw = hub.request("GET", f"/api/v1/namespaces/{namespace}/configmaps/missing")
    assert list(json.loads(raw)) == ["kind", "apiVersion", "metadata", "status", "message", "reason", "details", "code"]


def test_update_with_resource_version_zero_is_unconditional(hub: Hub, namespace: str):
    """kube parses resourceVersion "0" as no precondition: a PUT (or patch) carrying it is not a Conflict."""
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    assert hub.json("POST", base, cm("zero"))[0] == 201
    assert hub.json("PATCH", f"{base}/zero", {"data": {"k": "changed"}}, content_type="application/merge-patch+json")[0] == 200
    code, updated = hub.json("PUT", f"{base}/zero", cm("zero", {"k": "put"}, resourceVersion="0"))
    assert code == 200 and updated["data"] == {"k": "put"}
    code, patched = hub.json("PATCH", f"{base}/zero", {"metadata": {"resourceVersion": "0"}, "data": {"p": "1"}},
                             content_type="application/merge-patch+json")
    assert code == 200 and patched["data"]["p"] == "1"
    applied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "zero", "resourceVersion": "0"}, "data": {"a": "1"}}
    code, body = hub.json("PATCH", f"{base}/zero?fieldManager=zero", applied, content_type="application/apply-patch+yaml")
    assert code == 200 and body["data"]["a"] == "1", body


def test_delete_of_a_service_account_answers_the_object(hub: Hub, namespace: str):
    """kube's ServiceAccount registry returns the deleted object (typed clients decode a V1ServiceAccount)."""
    base = f"/api/v1/namespaces/{namespace}/serviceaccounts"
    assert hub.json("POST", base, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "gone"}})[0] == 201
    code, body = hub.json("DELETE", f"{base}/gone")
    assert code == 200 and body["kind"] == "ServiceAccount" and body["metadata"]["name"] == "gone"
    code, body = hub.json("DELETE", f"/api/v1/namespaces/{namespace}/configmaps/none")
    assert code == 404
    assert hub.json("POST", f"/api/v1/namespaces/{namespace}/configmaps", cm("plain"))[0] == 201
    code, body = hub.json("DELETE", f"/api/v1/namespaces/{namespace}/configmaps/plain")
    assert (code, body["kind"], body["status"]) == (200, "Status", "Success")


def test_websocket_upgrade_is_answered_with_a_status(hub: Hub, namespace: str):
    """exec/attach/portforward over WebSocket on the hub (which serves no Pods) get kube's 404 Status
    as the handshake's HTTP answer, and a 401 for a bad token, never a bare 500."""
    import ssl

    import websocket  # websocket-client, what the official kubernetes client streams with

    url = hub.url.replace("https://", "wss://") + f"/api/v1/namespaces/{namespace}/pods/p/exec?command=ls&stdout=true"

    def handshake(token: str) -> websocket.WebSocketBadStatusException:
        try:
            websocket.create_connection(url, header=[f"Authorization: Bearer {token}"], subprotocols=["v4.channel.k8s.io"],
                                        sslopt={"ca_certs": str(hub.ca), "cert_reqs": ssl.CERT_REQUIRED}, timeout=10)
        except websocket.WebSocketBadStatusException as exc:
            return exc
        raise AssertionError("the handshake was accepted")

    refused = handshake(hub.token)
    body = json.loads(refused.resp_body)
    assert refused.status_code == 404 and (body["kind"], body["reason"]) == ("Status", "NotFound")
    assert handshake("not-a-token").status_code == 401


def test_large_responses_are_gzipped_when_the_client_accepts_it(hub: Hub, namespace: str):
    """kube compresses a response over 128 KiB for a client sending Accept-Encoding: gzip (kubectl and
    client-go do), with Vary: Accept-Encoding; small responses and other clients get it plain."""
    import gzip

    base = f"/api/v1/namespaces/{namespace}/configmaps"
    for i in range(3):
        assert hub.json("POST", base, cm(f"big{i}", {"blob": "x" * 60_000}))[0] == 201
    code, headers, raw = hub.request("GET", base, headers={"Accept-Encoding": "gzip"})
    headers = {k.lower(): v for k, v in headers.items()}
    assert code == 200 and headers["content-encoding"] == "gzip" and headers["vary"] == "Accept-Encoding"
    assert int(headers["content-length"]) == len(raw) < 60_000
    assert len(json.loads(gzip.decompress(raw))["items"]) == 3
    code, headers, raw = hub.request("GET", base)
    assert "content-encoding" not in {k.lower() for k in headers} and len(json.loads(raw)["items"]) == 3
    code, headers, _ = hub.request("GET", f"{base}/big0", headers={"Accept-Encoding": "gzip"})
    assert "content-encoding" not in {k.lower() for k in headers}
    code, headers, _ = hub.request("GET", base, headers={"Accept-Encoding": "gzip;q=0, identity"})
    assert "content-encoding" not in {k.lower() for k in headers}


def test_discovery_carries_kube_storage_version_hashes(hub: Hub):
    """storageVersionHash as kube-apiserver 1.32 serves it (values read from a real cluster's discovery),
    on stored resources only: not on subresources, not on the create-only reviews."""
    _, core = hub.json("GET", "/api/v1")
    by_name = {r["name"]: r for r in core["resources"]}
    assert by_name["configmaps"]["storageVersionHash"] == "qFsyl6wFWjQ="
    assert by_name["namespaces"]["storageVersionHash"] == "Q3oi5N2YM8M="
    assert "storageVersionHash" not in by_name["namespaces/status"]
    _, authn = hub.json("GET", "/apis/authentication.k8s.io/v1")
    assert all("storageVersionHash" not in r for r in authn["resources"])


def test_events_are_one_store_seen_through_both_apis(hub: Hub, namespace: str):
    """core/v1 and events.k8s.io/v1 Events cohabit as in kube: written through one API, read, listed,
    selected and watched through the other, converted field by field."""
    core = f"/api/v1/namespaces/{namespace}/events"
    new = f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
    pod = {"kind": "Pod", "namespace": namespace, "name": "web-0", "apiVersion": "v1"}
    code, _ = hub.json("POST", core, {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "old-style"},
                                      "involvedObject": pod, "reason": "Started", "message": "started container",
                                      "type": "Normal", "source": {"component": "kubelet"}, "count": 2,
                                      "firstTimestamp": "2026-12-01T10:00:00Z", "lastTimestamp": "2026-12-01T10:05:00Z"})
    assert code == 201
    code, _ = hub.json("POST", new, {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "new-style"},
                                     "regarding": {**pod, "name": "web-1"}, "reason": "Scheduled", "note": "assigned to node-a",
                                     "type": "Normal", "action": "Binding", "reportingController": "default-scheduler",
                                     "reportingInstance": "scheduler-1", "eventTime": "2026-12-01T10:00:00.000000Z"})
    assert code == 201
    _, as_new = hub.json("GET", f"{new}/old-style")
    assert (as_new["apiVersion"], as_new["regarding"]["name"], as_new["note"], as_new["deprecatedCount"]) == \
        ("events.k8s.io/v1", "web-0", "started container", 2)
    assert as_new["deprecatedSource"] == {"component": "kubelet"} and "message" not in as_new and "involvedObject" not in as_new
    _, as_core = hub.json("GET", f"{core}/new-style")
    assert (as_core["apiVersion"], as_core["involvedObject"]["name"], as_core["message"], as_core["reportingComponent"]) == \
        ("v1", "web-1", "assigned to node-a", "default-scheduler")
    assert {i["metadata"]["name"] for i in hub.json("GET", core)[1]["items"]} == {"old-style", "new-style"}
    _, selected = hub.json("GET", f"{new}?fieldSelector=regarding.name=web-1")
    assert [i["metadata"]["name"] for i in selected["items"]] == ["new-style"]
    _, selected = hub.json("GET", f"{core}?fieldSelector=involvedObject.name=web-1")
    assert [i["metadata"]["name"] for i in selected["items"]] == ["new-style"]
    code, patched = hub.json("PATCH", f"{new}/old-style", {"note": "restarted"}, content_type="application/merge-patch+json")
    assert code == 200 and patched["note"] == "restarted"
    assert hub.json("GET", f"{core}/old-style")[1]["message"] == "restarted"
    assert hub.json("DELETE", f"{new}/new-style")[0] == 200
    assert hub.json("GET", f"{core}/new-style")[0] == 404
