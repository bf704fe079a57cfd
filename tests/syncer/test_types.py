"""Type sync against real hub processes: import, push down, conflicts between clusters."""

from __future__ import annotations

import json

from ..harness import Kubectl, wait_for
from .conftest import Api, target, widget, widget_crd

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def test_cluster_type_imported_with_printer_columns(hub, downstream, start_syncer, names, tmp_path):
    lc, dc, cluster = names("lc"), names("dc"), names("c")
    up, down = Api(hub, lc), Api(downstream, dc)
    down.crd(widget_crd())  # only the cluster has the type
    s = start_syncer(cluster, target(hub, lc), target(downstream, dc), resources=("widgets.example.com", "configmaps"))

    crd = wait_for(lambda: up.get(f"{CRDS}/widgets.example.com"), 10, what="imported CRD on the hub")
    assert crd["metadata"]["labels"][f"fleetplane.io/imported-from-{cluster}"] == "true"
    assert crd["metadata"]["annotations"]["fleetplane.io/origin"] == "imported"
    v = crd["spec"]["versions"][0]
    src = widget_crd()["spec"]["versions"][0]
    assert v["schema"] == src["schema"]
    assert v["subresources"] == src["subresources"]
    assert [c["name"] for c in v["additionalPrinterColumns"]] == ["Size", "Phase", "Age"]
    established = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert established["Established"] == "True"
    h = wait_for(lambda: (x := s.health()).reason == "Synced" and x, 10, what="healthy")
    assert h.types == ["configmaps.v1", "widgets.v1.example.com"] and h.types_synced

    # objects of the imported type sync at once, and kubectl on the hub prints the cluster's columns
    up.ns("app")
    up.create("/apis/example.com/v1/namespaces/app/widgets", widget("w", cluster, 7))
    wait_for(lambda: down.get("/apis/example.com/v1/namespaces/app/widgets/w"), 10, what="widget downstream")
    down("PATCH", "/apis/example.com/v1/namespaces/app/widgets/w/status?fieldManager=ctrl", {"status": {"phase": "Ready"}},
         "application/merge-patch+json")
    wait_for(lambda: (up.get("/apis/example.com/v1/namespaces/app/widgets/w") or {}).get("status", {}).get("phase") == "Ready",
             10, what="status up")
    out = Kubectl(hub.kubeconfig_for(lc, tmp_path), namespace="app")("get", "widgets").out
    header, row = out.splitlines()[:2]
    assert header.split()[:3] == ["NAME", "SIZE", "PHASE"], out
    assert row.split()[:3] == ["w", "7", "Ready"], out

    # the cluster's type changes (an add-on upgrade): the hub follows, as this cluster is its only source
    new = widget_crd(extra_spec={"mode": {"type": "string"}})
    cur = down.get(f"{CRDS}/widgets.example.com")
    new["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
    assert down("PUT", f"{CRDS}/widgets.example.com", new)[0] == 200
    wait_for(lambda: "mode" in up.get(f"{CRDS}/widgets.example.com")["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
             ["properties"]["spec"]["properties"], 10, what="hub schema follows the cluster")


def test_hub_crd_pushed_down(hub, downstream, start_syncer, names):
    lc, dc, cluster = names("lc"), names("dc"), names("c")
    up, down = Api(hub, lc), Api(downstream, dc)
    up.crd(widget_crd("gizmos", "Gizmo"))
    up.ns("app")
    body = widget("g", cluster, 2)
    body["kind"] = "Gizmo"
    up.create("/apis/example.com/v1/namespaces/app/gizmos", body)
    s = start_syncer(cluster, target(hub, lc), target(downstream, dc), resources=("gizmos.example.com",))
    crd = wait_for(lambda: down.get(f"{CRDS}/gizmos.example.com"), 10, what="CRD pushed down")
    assert crd["metadata"]["annotations"]["fleetplane.io/pushed-from"] == lc
    assert crd["spec"]["versions"][0]["schema"] == widget_crd()["spec"]["versions"][0]["schema"]
    wait_for(lambda: down.get("/apis/example.com/v1/namespaces/app/gizmos/g"), 10, what="object of the pushed type")
    h = wait_for(lambda: (x := s.health()).reason == "Synced" and "gizmos.v1.example.com" in x.types and x, 10,
                 what="healthy, offering the pushed type")
    assert h.types_synced and h.objects_synced == 1
    hub_crd = up.get(f"{CRDS}/gizmos.example.com")
    assert "fleetplane.io/origin" not in (hub_crd["metadata"].get("annotations") or {})  # still hub-defined


def test_two_clusters_with_different_schemas(hub, downstream, start_syncer, names):
    """The first cluster's schema stays on the hub; the second's conflicting one is reported
    (health, CRD annotation, Event) and never applied; a compatible third one is accepted."""
    lc, d1, d2, d3 = names("lc"), names("dc"), names("dc"), names("dc")
    c1, c2, c3 = names("c"), names("c"), names("c")
    up = Api(hub, lc)
    Api(downstream, d1).crd(widget_crd(size_type="integer"))
    Api(downstream, d2).crd(widget_crd(size_type="string"))
    Api(downstream, d3).crd(widget_crd(size_type="integer", extra_spec={"more": {"type": "string"}}))
    s1 = start_syncer(c1, target(hub, lc), target(downstream, d1), resources=("widgets.example.com",))
    wait_for(lambda: up.get(f"{CRDS}/widgets.example.com"), 10, what="imported from the first cluster")
    wait_for(lambda: s1.health().reason == "Synced", 10, what="first syncer healthy")
    s2 = start_syncer(c2, target(hub, lc), target(downstream, d2), resources=("widgets.example.com",))
    s3 = start_syncer(c3, target(hub, lc), target(downstream, d3), resources=("widgets.example.com",))
    h2 = wait_for(lambda: (x := s2.health()).conflicts and x, 10, what="conflict reported")
    assert h2.reason == "SchemaConflict" and h2.connected
    assert "spec.size: integer on the hub, string in the cluster" in h2.conflicts[0], h2.conflicts
    crd = wait_for(lambda: (o := up.get(f"{CRDS}/widgets.example.com"))
                   and f"fleetplane.io/imported-from-{c3}" in o["metadata"]["labels"]
                   and "fleetplane.io/schema-conflicts" in o["metadata"]["annotations"] and o, 10,
                   what="compatible cluster accepted, conflict recorded")
    conflicts = json.loads(crd["metadata"]["annotations"]["fleetplane.io/schema-conflicts"])
    assert list(conflicts) == [c2] and "spec.size" in conflicts[c2]
    labels = crd["metadata"]["labels"]
    assert f"fleetplane.io/imported-from-{c1}" in labels and f"fleetplane.io/imported-from-{c2}" not in labels
    size = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"]
    assert size["type"] == "integer"  # kept, never wiped
    assert "more" not in crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert s3.health().reason == "Synced"
    items = (up.get("/api/v1/namespaces/default/events") or {}).get("items") or []
    assert any(e["reason"] == "SchemaConflict" and c2 in e["message"] for e in items)
    # object sync for the conflicting cluster still runs (objects valid in both get through)
    up.ns("app")
    up.create("/apis/example.com/v1/namespaces/app/widgets", widget("for-c2", c2, 1))
    wait_for(lambda: Api(downstream, d2).get("/apis/example.com/v1/namespaces/app/widgets/for-c2") is None
             and (s2.health().objects_failed == 1), 10, what="rejected by the string schema, reported")


def test_missing_type_reported_others_sync(hub, downstream, start_syncer, names):
    lc, dc, cluster = names("lc"), names("dc"), names("c")
    up, down = Api(hub, lc), Api(downstream, dc)
    up.ns("app")
    up.create("/api/v1/namespaces/app/configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                                    "metadata": {"name": "a", "labels": {"kcp.dev/cluster": cluster}}})
    s = start_syncer(cluster, target(hub, lc), target(downstream, dc), resources=("configmaps", "nosuchthings.example.com"))
    wait_for(lambda: down.get("/api/v1/namespaces/app/configmaps/a"), 10, what="configmaps still sync")
    h = wait_for(lambda: (x := s.health()).reason == "TypeImportFailed" and x, 10, what="type error reported")
    assert not h.types_synced and h.connected
    assert h.type_errors == {"nosuchthings.example.com": f"cluster {cluster} does not serve nosuchthings.example.com"}
    assert "nosuchthings.example.com" in h.message
