"""Logical clusters: isolation, creation on first use, listing, deletion, the wildcard."""

from __future__ import annotations

import json
import threading
import urllib.request

from ..harness import Hub, wait_for
from .test_rest import cm


def test_cluster_comes_into_being_on_first_use_and_is_isolated(hub: Hub, logical_cluster: str):
    lc = logical_cluster
    code, nss = hub.json("GET", f"/clusters/{lc}/api/v1/namespaces")
    assert code == 200 and {n["metadata"]["name"] for n in nss["items"]} >= {"default", "kube-system", "kube-public"}
    assert hub.json("POST", f"/clusters/{lc}/api/v1/namespaces/default/configmaps", cm("same-name", {"in": lc}))[0] == 201
    assert hub.json("POST", "/api/v1/namespaces/default/configmaps", cm("same-name", {"in": "root"}))[0] in (201, 409)
    _, here = hub.json("GET", f"/clusters/{lc}/api/v1/namespaces/default/configmaps/same-name")
    assert here["data"] == {"in": lc} and here["metadata"]["annotations"]["kcp.io/cluster"] == lc
    _, there = hub.json("GET", "/clusters/root/api/v1/namespaces/default/configmaps/same-name")
    assert there["metadata"]["annotations"]["kcp.io/cluster"] == "root"
    code, listed = hub.json("GET", "/apis/tenancy.fleetplane.io/v1alpha1/logicalclusters")
    assert lc in {i["metadata"]["name"] for i in listed["items"]}


def test_crds_are_per_cluster(hub: Hub, logical_cluster: str):
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "gadgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "gadgets", "kind": "Gadget"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}
    assert hub.json("POST", f"/clusters/{logical_cluster}/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)[0] == 201
    assert hub.json("GET", f"/clusters/{logical_cluster}/apis/example.com/v1")[0] == 200
    other = logical_cluster + "-other"
    assert hub.json("GET", f"/clusters/{other}/apis/example.com/v1")[0] == 404
    assert hub.json("GET", f"/clusters/{other}/apis/example.com/v1/namespaces/default/gadgets")[0] == 404


def test_invalid_cluster_name(hub: Hub):
    code, body = hub.json("GET", "/clusters/Not_Valid/api/v1/namespaces")
    assert code == 400 and 'invalid cluster: "Not_Valid"' in body["message"]


def test_wildcard_lists_every_cluster_and_refuses_writes(hub: Hub, logical_cluster: str):
    a, b = logical_cluster + "-a", logical_cluster + "-b"
    for c in (a, b):
        hub.json("POST", f"/clusters/{c}/api/v1/namespaces/default/configmaps", cm("wild", {"c": c}))
    code, listed = hub.json("GET", "/clusters/*/api/v1/configmaps")
    assert code == 200
    clusters = {i["metadata"]["annotations"]["kcp.io/cluster"] for i in listed["items"] if i["metadata"]["name"] == "wild"}
    assert {a, b} <= clusters
    code, body = hub.json("POST", "/clusters/*/api/v1/namespaces/default/configmaps", cm("nope"))
    assert code == 405 and body["kind"] == "Status"
    assert hub.json("GET", "/clusters/*/api/v1/namespaces/default/configmaps/wild")[0] == 405


def test_wildcard_watch_sees_events_from_all_clusters(hub: Hub, logical_cluster: str):
    a, b = logical_cluster + "-wa", logical_cluster + "-wb"
    for c in (a, b):
        hub.json("GET", f"/clusters/{c}/api/v1/namespaces")  # bring them into being
    _, listed = hub.json("GET", "/clusters/*/api/v1/configmaps")
    rv = listed["metadata"]["resourceVersion"]
    seen: list[dict] = []
    req = urllib.request.Request(f"{hub.url}/clusters/*/api/v1/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=10",
                                 headers={"Authorization": f"Bearer {hub.token}"})
    stream = urllib.request.urlopen(req, context=hub.ssl_context(), timeout=15)

    def read():
        for line in stream:
            ev = json.loads(line)
            if ev["object"]["metadata"]["name"] == "watched":
                seen.append(ev)
            if len(seen) == 2:
                return

    t = threading.Thread(target=read, daemon=True)
    t.start()
    for c in (a, b):
        hub.json("POST", f"/clusters/{c}/api/v1/namespaces/default/configmaps", cm("watched"))
    wait_for(lambda: len(seen) == 2, what="events from both clusters")
    stream.close()
    assert {ev["object"]["metadata"]["annotations"]["kcp.io/cluster"] for ev in seen} == {a, b}
    assert all(ev["type"] == "ADDED" for ev in seen)


def test_deleting_a_logical_cluster_removes_everything_in_it(hub: Hub, logical_cluster: str):
    lc = logical_cluster
    hub.json("POST", f"/clusters/{lc}/api/v1/namespaces/default/configmaps", cm("doomed", finalizers=["example.com/hold"]))
    code, _ = hub.json("DELETE", f"/apis/tenancy.fleetplane.io/v1alpha1/logicalclusters/{lc}")
    assert code == 200
    wait_for(lambda: hub.json("GET", f"/apis/tenancy.fleetplane.io/v1alpha1/logicalclusters/{lc}")[0] == 404,
             what="logical cluster gone")
    _, listed = hub.json("GET", "/clusters/*/api/v1/configmaps")
    assert not [i for i in listed["items"] if i["metadata"]["annotations"]["kcp.io/cluster"] == lc]
    assert hub.json("DELETE", "/apis/tenancy.fleetplane.io/v1alpha1/logicalclusters/root")[0] == 403
