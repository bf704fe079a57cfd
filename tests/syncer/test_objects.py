"""Object sync against real hub processes: down, up, both-way deletion, drift, rejection."""

from __future__ import annotations

from ..harness import wait_for
from .conftest import Api, cm, events, state, target, widget, widget_crd

CMS = "/api/v1/namespaces/{ns}/configmaps"


def _managed(api: Api, ns: str) -> list[str]:
    items = (api.get(f"/api/v1/namespaces/{ns}/configmaps?labelSelector=fleetplane.io/logical-cluster") or {}).get("items") or []
    return sorted(o["metadata"]["name"] for o in items)


def test_configmaps_and_namespaces_go_down(hub, downstream, start_syncer, names):
    lc, dc, cluster = names("lc"), names("dc"), names("c")
    up, down = Api(hub, lc), Api(downstream, dc)
    up.ns("app")
    up.ns("web", labels={"kcp.dev/cluster": cluster, "team": "web"})
    up.create(CMS.format(ns="app"), cm("a", {"x": "1"}, cluster, annotations={"note": "kept"}))
    up.create(CMS.format(ns="web"), cm("b", {"y": "2"}, cluster))
    up.create(CMS.format(ns="app"), cm("not-mine", cluster="other-cluster"))
    up.create(CMS.format(ns="app"), cm("unlabelled"))
    s = start_syncer(cluster, target(hub, lc), target(downstream, dc))

    a = wait_for(lambda: down.get("/api/v1/namespaces/app/configmaps/a"), 10, what="configmap a downstream")
    assert a["data"] == {"x": "1"}
    assert a["metadata"]["annotations"]["note"] == "kept"
    assert a["metadata"]["labels"]["fleetplane.io/logical-cluster"] == lc
    assert a["metadata"]["annotations"]["fleetplane.io/logical-cluster"] == lc
    assert "kcp.io/cluster" not in a["metadata"]["annotations"] or a["metadata"]["annotations"]["kcp.io/cluster"] != lc
    wait_for(lambda: down.get("/api/v1/namespaces/web/configmaps/b"), 10, what="configmap b downstream")
    # the auto-created namespace is marked; the labelled hub namespace is synced with its labels
    app = down.get("/api/v1/namespaces/app")
    assert app["metadata"]["annotations"]["fleetplane.io/auto-created"] == "true"
    web = wait_for(lambda: (n := down.get("/api/v1/namespaces/web")) and n["metadata"]["labels"].get("team") == "web" and n,
                   10, what="namespace web synced")
    assert web["metadata"]["annotations"]["fleetplane.io/auto-created"] == "false"
    assert _managed(down, "app") == ["a"]
    # the hub object carries the finalizer, the state and an Event
    hub_a = wait_for(lambda: (o := up.get(CMS.format(ns="app") + "/a")) and state(o).get("state") == "Synced" and o, 10,
                     what="sync state on the hub")
    assert f"fleetplane.io/syncer-{cluster}" in hub_a["metadata"]["finalizers"]
    assert state(hub_a)["reason"] == "Created"
    wait_for(lambda: ("Normal", "Synced", f"created in cluster {cluster}") in events(up, "app", "a"), 10, what="Synced event")
    h = wait_for(lambda: (x := s.health()).reason == "Synced" and x.objects_synced == 3 and x, 10, what="healthy")
    assert h.connected and h.types_synced and h.types == ["configmaps.v1"]

    # update flows down; the hub's own annotations do not
    up.merge(CMS.format(ns="app") + "/a", {"data": {"x": "2"}, "metadata": {"annotations": {"note": "changed"}}})
    wait_for(lambda: (down.get("/api/v1/namespaces/app/configmaps/a") or {}).get("data") == {"x": "2"}, 10, what="update down")
    assert down.get("/api/v1/namespaces/app/configmaps/a")["metadata"]["annotations"]["note"] == "changed"
    assert "fleetplane.io/sync-state" not in down.get("/api/v1/namespaces/app/configmaps/a")["metadata"]["annotations"]


def test_drift_is_reverted_and_reported(hub, downstream, start_syncer, names):
    lc, dc, cluster = names("lc"), names("dc"), names("c")
    up, down = Api(hub, lc), Api(downstream, dc)
    up.ns("app")
    up.create(CMS.format(ns="app"), cm("a", {"x": "1"}, cluster, labels={"tier": "front"}))
    start_syncer(cluster, target(hub, lc), target(downstream, dc))
    wait_for(lambda: down.get("/api/v1/namespaces/app/configmaps/a"), 10, what="configmap downstream")

    # someone edits the synced data in the cluster, and removes a synced label
    down.merge("/api/v1/namespaces/app/configmaps/a", {"data": {"x": "evil", "extra": "added"}, "metadata": {"labels": {"tier": None}}})
    fixed = wait_for(lambda: (o := down.get("/api/v1/namespaces/app/configmaps/a")) and o["data"].get("x") == "1"
                     and o["metadata"]["labels"].get("tier") == "front" and o, 10, what="drift reverted")
    assert fixed["data"]["extra"] == "added"  # fields the syncer never set are not its business
    wait_for(lambda: state(up.get(CMS.format(ns="app") + "/a")).get("reason") == "DriftReverted", 10, what="state DriftReverted")
    msg = state(up.get(CMS.format(ns="app") + "/a"))["message"]
    assert 'data.x: "1" on the hub, "evil" in the cluster' in msg, msg
    wait_for(lambda: any(r == "DriftReverted" and t == "Warning" for t, r, _ in events(up, "app", "a")), 10, what="drift event")

    # deleted in the cluster while still wanted: recreated, and reported as drift
    uid = fixed["metadata"]["uid"]
    assert down.delete("/api/v1/namespaces/app/configmaps/a") == 200
    back = wait_for(lambda: (o := down.get("/api/v1/namespaces/app/configmaps/a")) and o["metadata"]["uid"] != uid and o,
                    10, what="recreated")
    assert back["data"] == {"x": "1"}
    wait_for(lambda: any("deleted in cluster" in m for _, r, m in events(up, "app", "a") if r == "DriftReverted"), 10,
             what="recreate event")


def test_deletion_both_ways_and_unlabel(hub, downstream, start_syncer, names):
    lc, dc, cluster = names("lc"), names("dc"), names("c")
    up, down = Api(hub, lc), Api(downstream, dc)
    up.ns("app")
    for n in ("gone", "moved", "stays"):
        up.create(CMS.format(ns="app"), cm(n, cluster=cluster))
    start_syncer(cluster, target(hub, lc), target(downstream, dc))
    wait_for(lambda: _managed(down, "app") == ["gone", "moved", "stays"], 10, what="three downstream")
    fin = f"fleetplane.io/syncer-{cluster}"
    wait_for(lambda: fin in (up.get(CMS.format(ns="app") + "/gone")["metadata"].get("finalizers") or []), 10, what="finalizer")

    # hub deletion: waits for the downstream deletion (finalizer), then the object is gone
    assert up.delete(CMS.format(ns="app") + "/gone") == 200
    wait_for(lambda: up.get(CMS.format(ns="app") + "/gone") is None, 10, what="hub object gone")
    assert down.get("/api/v1/namespaces/app/configmaps/gone") is None

    # unlabelled on the hub: removed from the cluster, finalizer and state removed, object kept
    up.merge(CMS.format(ns="app") + "/moved", {"metadata": {"labels": {"kcp.dev/cluster": None}}})
    wait_for(lambda: down.get("/api/v1/namespaces/app/configmaps/moved") is None, 10, what="unlabelled removed downstream")
    moved = wait_for(lambda: (o := up.get(CMS.format(ns="app") + "/moved")) and fin not in (o["metadata"].get("finalizers") or []) and o,
                     10, what="finalizer removed on unlabel")
    assert "fleetplane.io/sync-state" not in (moved["metadata"].get("annotations") or {})
    assert _managed(down, "app") == ["stays"]


def test_status_up_and_hub_status_down(hub, downstream, start_syncer, names):
    lc, dc, cluster = names("lc"), names("dc"), names("c")
    up, down = Api(hub, lc), Api(downstream, dc)
    up.crd(widget_crd())
    down.crd(widget_crd())
    up.ns("app")
    up.create("/apis/example.com/v1/namespaces/app/widgets", widget("w1", cluster, 3))
    up.create("/apis/example.com/v1/namespaces/app/widgets", widget("w2", cluster, 4))
    start_syncer(cluster, target(hub, lc), target(downstream, dc), resources=("widgets.example.com",))
    W = "/apis/example.com/v1/namespaces/app/widgets/"
    wait_for(lambda: down.get(W + "w1") and down.get(W + "w2"), 10, what="widgets downstream")

    # a controller in the cluster writes w1's status: it flows up through /status
    code, out = downstream.json("PATCH", f"/clusters/{dc}{W}w1/status?fieldManager=cluster-controller",
                                {"status": {"ready": True, "phase": "Running"}}, content_type="application/merge-patch+json")
    assert code == 200, out
    wait_for(lambda: (up.get(W + "w1") or {}).get("status") == {"ready": True, "phase": "Running"}, 10, what="status up")

    # a controller on the hub writes w2's status (nobody does in the cluster): it flows down
    code, out = hub.json("PATCH", f"/clusters/{lc}{W}w2/status?fieldManager=hub-controller", {"status": {"phase": "Planned"}},
                         content_type="application/merge-patch+json")
    assert code == 200, out
    wait_for(lambda: (down.get(W + "w2") or {}).get("status") == {"phase": "Planned"}, 10, what="status down")

    # a spec change on the hub still goes down and the cluster's status stays up
    up.merge(W + "w1", {"spec": {"size": 9}})
    wait_for(lambda: (down.get(W + "w1") or {}).get("spec", {}).get("size") == 9, 10, what="spec down")
    assert up.get(W + "w1")["status"] == {"ready": True, "phase": "Running"}


def test_retained_field_flows_up_not_reverted(hub, downstream, start_syncer, names):
    """A field the cluster's controller owns (here by the fleetplane.io/retain annotation, as an HPA
    owns spec.replicas) is left as the cluster has it and copied up to the hub."""
    lc, dc, cluster = names("lc"), names("dc"), names("c")
    up, down = Api(hub, lc), Api(downstream, dc)
    up.crd(widget_crd())
    down.crd(widget_crd())
    up.ns("app")
    W = "/apis/example.com/v1/namespaces/app/widgets/"
    body = widget("w", cluster, 1, annotations={"fleetplane.io/retain": "spec.replicas"})
    body["spec"]["replicas"] = 2
    up.create("/apis/example.com/v1/namespaces/app/widgets", body)
    start_syncer(cluster, target(hub, lc), target(downstream, dc), resources=("widgets.example.com",))
    wait_for(lambda: (down.get(W + "w") or {}).get("spec", {}).get("replicas") == 2, 10, what="widget downstream")
    down.merge(W + "w", {"spec": {"replicas": 7}})  # the cluster's autoscaler
    wait_for(lambda: up.get(W + "w")["spec"]["replicas"] == 7, 10, what="retained value up")
    assert down.get(W + "w")["spec"]["replicas"] == 7
    down.merge(W + "w", {"spec": {"size": 5}})  # not retained: drift, reverted
    wait_for(lambda: down.get(W + "w")["spec"]["size"] == 1, 10, what="size reverted")
    assert down.get(W + "w")["spec"]["replicas"] == 7


def test_rejected_object_does_not_block_others(hub, downstream, start_syncer, names):
    lc, dc, cluster = names("lc"), names("dc"), names("c")
    up, down = Api(hub, lc), Api(downstream, dc)
    up.crd(widget_crd())
    down.crd(widget_crd(maximum=10))  # the cluster validates more strictly than the hub
    up.ns("app")
    W = "/apis/example.com/v1/namespaces/app/widgets"
    up.create(W, widget("too-big", cluster, 50))
    for i in range(5):
        up.create(W, widget(f"ok-{i}", cluster, i))
    # an unmanaged object already in the cluster is not overwritten: a conflict
    down.ns("app")
    down.create(W, widget("taken", None, 1))
    up.create(W, widget("taken", cluster, 2))
    s = start_syncer(cluster, target(hub, lc), target(downstream, dc), resources=("widgets.example.com",))
    for i in range(5):
        wait_for(lambda i=i: down.get(f"{W}/ok-{i}"), 10, what=f"ok-{i} downstream")
    bad = wait_for(lambda: (o := up.get(f"{W}/too-big")) and state(o).get("state") == "Failed" and o, 10, what="Failed state")
    assert state(bad)["reason"] == "Invalid" and "spec.size" in state(bad)["message"], state(bad)
    assert down.get(f"{W}/too-big") is None
    taken = wait_for(lambda: (o := up.get(f"{W}/taken")) and state(o).get("state") == "Failed" and o, 10, what="conflict state")
    assert state(taken)["reason"] == "Conflict" and "not overwriting" in state(taken)["message"]
    assert down.get(f"{W}/taken")["spec"]["size"] == 1
    wait_for(lambda: any(r == "SyncFailed" for _, r, _ in events(up, "app", "too-big")), 10, what="SyncFailed event")
    h = wait_for(lambda: (x := s.health()).objects_failed == 2 and x, 10, what="health counts the failures")
    assert h.reason == "ObjectsFailed" and h.objects_synced >= 5, h
    assert any("too-big" in f for f in h.failed_objects)

    # fixing the object on the hub heals it; adopting the taken one takes it over
    up.merge(f"{W}/too-big", {"spec": {"size": 10}})
    wait_for(lambda: (down.get(f"{W}/too-big") or {}).get("spec", {}).get("size") == 10, 10, what="fixed object synced")
    up.merge(f"{W}/taken", {"metadata": {"annotations": {"fleetplane.io/adopt": "true"}}})
    wait_for(lambda: down.get(f"{W}/taken")["spec"]["size"] == 2, 10, what="adopted")
    wait_for(lambda: s.health().objects_failed == 0, 10, what="no failures left")


def test_labelled_namespace_deleted_on_the_hub(hub, downstream, start_syncer, names):
    """Deleting a synced namespace on the hub deletes its objects and the namespace downstream;
    the hub's namespace termination waits for both (finalizers), then completes."""
    lc, dc, cluster = names("lc"), names("dc"), names("c")
    up, down = Api(hub, lc), Api(downstream, dc)
    up.ns("team", labels={"kcp.dev/cluster": cluster})
    up.create(CMS.format(ns="team"), cm("a", cluster=cluster))
    start_syncer(cluster, target(hub, lc), target(downstream, dc))
    wait_for(lambda: down.get(CMS.format(ns="team") + "/a"), 10, what="object downstream")
    wait_for(lambda: f"fleetplane.io/syncer-{cluster}" in (up.get("/api/v1/namespaces/team")["metadata"].get("finalizers") or []),
             10, what="finalizer on the namespace")
    assert up.delete("/api/v1/namespaces/team") == 200
    wait_for(lambda: up.get("/api/v1/namespaces/team") is None, 15, what="hub namespace gone")
    assert down.get(CMS.format(ns="team") + "/a") is None
    wait_for(lambda: down.get("/api/v1/namespaces/team") is None, 10, what="downstream namespace gone")
