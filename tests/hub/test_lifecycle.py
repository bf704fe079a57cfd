"""Finalizers, namespace termination and garbage collection by ownerReferences."""

from __future__ import annotations

from ..harness import Hub, wait_for
from .test_rest import cm

SLOW = 30.0  # deletion goes through the hub's controllers: generous on a loaded machine


def gone(hub: Hub, path: str):
    return lambda: hub.json("GET", path)[0] == 404


def test_finalizers_hold_deletion_until_emptied(hub: Hub, namespace: str):
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    hub.json("POST", base, cm("held", finalizers=["example.com/hold"]))
    code, body = hub.json("DELETE", f"{base}/held")
    assert code == 200 and body["metadata"]["deletionTimestamp"] and body["kind"] == "ConfigMap"
    # deleting again changes nothing; new finalizers are refused while deleting
    assert hub.json("DELETE", f"{base}/held")[1]["metadata"]["deletionTimestamp"] == body["metadata"]["deletionTimestamp"]
    code, err = hub.json("PATCH", f"{base}/held", {"metadata": {"finalizers": ["example.com/hold", "example.com/more"]}},
                         content_type="application/merge-patch+json")
    assert code == 422 and "no new finalizers can be added" in err["message"]
    code, _ = hub.json("PATCH", f"{base}/held", [{"op": "remove", "path": "/metadata/finalizers"}],
                       content_type="application/json-patch+json")
    assert code == 200
    wait_for(gone(hub, f"{base}/held"), SLOW, what="object to go once finalizers are empty")


def owner_ref(owner: dict, block: bool = False) -> dict:
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"]}
    if block:
        ref["blockOwnerDeletion"] = True
    return ref


def test_background_gc_deletes_dependents(hub: Hub, namespace: str):
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    _, owner = hub.json("POST", base, cm("owner"))
    hub.json("POST", base, cm("dep", ownerReferences=[owner_ref(owner)]))
    hub.json("DELETE", f"{base}/owner", {"propagationPolicy": "Background"})
    wait_for(gone(hub, f"{base}/dep"), SLOW, what="dependent collected")


def test_orphan_keeps_dependents_and_strips_reference(hub: Hub, namespace: str):
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    _, owner = hub.json("POST", base, cm("owner"))
    hub.json("POST", base, cm("dep", ownerReferences=[owner_ref(owner)]))
    code, body = hub.json("DELETE", f"{base}/owner", {"propagationPolicy": "Orphan"})
    assert code == 200 and "orphan" in body["metadata"]["finalizers"]
    wait_for(gone(hub, f"{base}/owner"), SLOW, what="owner gone after orphaning")
    _, dep = hub.json("GET", f"{base}/dep")
    assert "ownerReferences" not in dep["metadata"]


def test_foreground_waits_for_blocking_dependents(hub: Hub, namespace: str):
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    _, owner = hub.json("POST", base, cm("owner"))
    hub.json("POST", base, cm("dep", ownerReferences=[owner_ref(owner, block=True)], finalizers=["example.com/slow"]))
    code, body = hub.json("DELETE", f"{base}/owner", {"propagationPolicy": "Foreground"})
    assert "foregroundDeletion" in body["metadata"]["finalizers"]
    wait_for(lambda: hub.json("GET", f"{base}/dep")[1]["metadata"].get("deletionTimestamp"), SLOW, what="dependent marked")
    assert hub.json("GET", f"{base}/owner")[0] == 200  # still waiting on the blocking dependent
    hub.json("PATCH", f"{base}/dep", {"metadata": {"finalizers": None}}, content_type="application/merge-patch+json")
    wait_for(gone(hub, f"{base}/owner"), SLOW, what="owner gone after its dependent")


def test_dangling_owner_reference_is_collected(hub: Hub, namespace: str):
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": "00000000-0000-0000-0000-000000000000"}
    hub.json("POST", base, cm("orphaned", ownerReferences=[ref]))
    wait_for(gone(hub, f"{base}/orphaned"), SLOW, what="dependent of a missing owner collected")


def test_namespace_termination_removes_contents(hub: Hub, namespace: str):
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    hub.json("POST", base, cm("a"))
    hub.json("POST", base, cm("b", finalizers=["example.com/hold"]))
    code, ns = hub.json("DELETE", f"/api/v1/namespaces/{namespace}")
    assert code == 200 and ns["status"]["phase"] == "Terminating"
    code, err = hub.json("POST", base, cm("late"))
    assert code == 403 and "because it is being terminated" in err["message"]
    wait_for(gone(hub, f"{base}/a"), SLOW, what="content deleted")
    assert hub.json("GET", f"/api/v1/namespaces/{namespace}")[0] == 200  # held by b's finalizer
    hub.json("PATCH", f"{base}/b", {"metadata": {"finalizers": None}}, content_type="application/merge-patch+json")
    wait_for(gone(hub, f"/api/v1/namespaces/{namespace}"), SLOW, what="namespace gone")
