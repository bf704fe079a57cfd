"""Regressions of the holes the request pipeline closes: each rule holds on every verb path."""

from __future__ import annotations

import json
import stat

from ..harness import Hub


def anonymous(hub: Hub, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    code, _, raw = hub.request(method, path, body, auth=False)
    return code, json.loads(raw) if raw else {}


def test_public_paths_are_served_to_anonymous_and_nothing_else(auth_hub: Hub) -> None:
    for path in ("/healthz", "/livez", "/readyz", "/version", "/clusters/team-a/readyz"):
        assert auth_hub.request("GET", path, auth=False)[0] == 200, path
    code, body = anonymous(auth_hub, "GET", "/api/v1/namespaces")
    assert code == 403 and body["reason"] == "Forbidden"
    assert body["message"] == ('namespaces is forbidden: User "system:anonymous" cannot list resource "namespaces" '
                               'in API group "" at the cluster scope')
    code, body = anonymous(auth_hub, "GET", "/api")
    assert (code, body["message"]) == (403, 'forbidden: User "system:anonymous" cannot get path "/api"')


def test_a_wrong_token_is_401_even_where_anonymous_may_go(auth_hub: Hub) -> None:
    code, _, raw = auth_hub.request("GET", "/healthz", auth=False, headers={"Authorization": "Bearer nope"})
    assert code == 401
    assert json.loads(raw) == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                               "message": "Unauthorized", "reason": "Unauthorized", "code": 401}


def test_no_path_shaped_like_a_public_one_is_public(auth_hub: Hub) -> None:
    """A CRD version named like a public path and a namespace named `clusters` were readable and
    writable with no credentials."""
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.bypass.example.com"},
           "spec": {"group": "bypass.example.com", "scope": "Namespaced",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                    "versions": [{"name": v, "served": True, "storage": v == "version",
                                  "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
                                 for v in ("version", "healthz")]}}
    assert auth_hub.json("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)[0] == 201
    assert auth_hub.json("POST", "/api/v1/namespaces", {"metadata": {"name": "clusters"}})[0] in (201, 409)
    for version in ("version", "healthz"):
        path = f"/apis/bypass.example.com/{version}/namespaces/clusters/widgets"
        assert auth_hub.json("GET", path)[0] == 200  # established in the revision that wrote the CRD
        assert anonymous(auth_hub, "GET", path)[0] == 403
        widget = {"apiVersion": f"bypass.example.com/{version}", "kind": "Widget", "metadata": {"name": "w"}}
        assert anonymous(auth_hub, "POST", path, widget)[0] == 403
        assert anonymous(auth_hub, "GET", f"/clusters/x{path}")[0] == 403
    assert auth_hub.json("GET", "/apis/bypass.example.com/version/namespaces/clusters/widgets")[1]["items"] == []


def test_namespaces_have_no_delete_collection(auth_hub: Hub) -> None:
    code, body = auth_hub.json("DELETE", "/clusters/holes-ns/api/v1/namespaces")
    assert code == 405 and body["reason"] == "MethodNotAllowed"
    code, body = auth_hub.json("GET", "/clusters/holes-ns/api/v1/namespaces")
    assert {"default", "kube-system", "kube-public"} <= {n["metadata"]["name"] for n in body["items"]}
    code, body = auth_hub.json("GET", "/clusters/holes-ns/api/v1")
    ns = next(r for r in body["resources"] if r["name"] == "namespaces")
    assert "deletecollection" not in ns["verbs"] and "delete" in ns["verbs"]


def test_undeletable_namespaces_hold_on_every_path(auth_hub: Hub) -> None:
    code, body = auth_hub.json("DELETE", "/clusters/holes-ns2/api/v1/namespaces/kube-system")
    assert (code, body["message"]) == (403, 'namespaces "kube-system" is forbidden: this namespace may not be deleted')
    assert auth_hub.json("DELETE", "/clusters/holes-ns2/api/v1/namespaces/default?dryRun=All")[0] == 403


def test_the_root_logical_cluster_survives_a_delete_collection(auth_hub: Hub) -> None:
    assert auth_hub.json("GET", "/clusters/holes-lc/api/v1/namespaces")[0] == 200  # a logical cluster to lose
    code, body = auth_hub.json("DELETE", "/apis/tenancy.fleetplane.io/v1alpha1/logicalclusters?labelSelector=nothing%3Dhere")
    assert code == 200 and body["items"] == []
    code, body = auth_hub.json("DELETE", "/apis/tenancy.fleetplane.io/v1alpha1/logicalclusters/root")
    assert code == 403 and "the root logical cluster may not be deleted" in body["message"]
    code, body = auth_hub.json("DELETE", "/apis/tenancy.fleetplane.io/v1alpha1/logicalclusters?dryRun=All")
    assert code == 403
    assert auth_hub.json("GET", "/apis/tenancy.fleetplane.io/v1alpha1/logicalclusters/root")[0] == 200
    assert auth_hub.json("GET", "/api/v1/namespaces/default")[0] == 200


def test_kubectl_server_dry_run_delete_deletes_nothing(admin_in) -> None:
    k = admin_in("holes-dry", namespace="default")
    k("create", "configmap", "keep-me", "--from-literal=a=b")
    out = k("delete", "configmap", "keep-me", "--dry-run=server").out
    assert "deleted (server dry run)" in out
    assert k.get_json("configmap", "keep-me")["data"] == {"a": "b"}
    k("delete", "configmaps", "--all", "--dry-run=server")
    assert k.get_json("configmap", "keep-me")["metadata"]["name"] == "keep-me"


def test_the_data_dir_and_database_are_private(auth_hub: Hub) -> None:
    """The hub runs with the test runner's umask (022, which would make files 0644)."""
    assert stat.S_IMODE(auth_hub.data_dir.stat().st_mode) == 0o700
    for name in ("hub.db", "hub.db-wal", "admin.token", "admin.kubeconfig", "pki/client-ca.key", "pki/ca.key"):
        p = auth_hub.data_dir / name
        assert p.exists(), name
        assert stat.S_IMODE(p.stat().st_mode) & 0o077 == 0, f"{name} is {oct(stat.S_IMODE(p.stat().st_mode))}"


def test_names_ending_in_a_newline_are_refused(auth_hub: Hub) -> None:
    """Python's ``$`` matches before a final newline; every name rule is a full match now."""
    for body, path in (({"metadata": {"name": "bad\n"}, "data": {}}, "/api/v1/namespaces/default/configmaps"),
                       ({"metadata": {"name": "bad\n"}}, "/api/v1/namespaces")):
        code, resp = auth_hub.json("POST", path, body)
        assert code == 422 and resp["reason"] == "Invalid", resp
    for name in ("root%0A", "team%0A"):
        code, resp = auth_hub.json("GET", f"/clusters/{name}/api/v1/namespaces")
        assert code == 400 and "invalid cluster" in resp["message"], resp
    code, body = auth_hub.json("GET", "/apis/tenancy.fleetplane.io/v1alpha1/logicalclusters")
    assert not any(i["metadata"]["name"].endswith("\n") for i in body["items"])
