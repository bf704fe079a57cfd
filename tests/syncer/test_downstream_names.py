"""Downstream names: a hub object annotated ``fleetplane.io/downstream-name: <name>`` is synced to its
cluster under that name (a split Service keeps the parent's name in every cluster while the hub
holds ``<name>--<cluster>``); the cluster copy names its hub object in ``fleetplane.io/upstream-name``."""

from __future__ import annotations

from ..harness import wait_for
from .conftest import Api, cm, events, state, target, widget, widget_crd

CMS = "/api/v1/namespaces/app/configmaps"
W = "/apis/example.com/v1/namespaces/app/widgets"
DOWN_NAME = "fleetplane.io/downstream-name"
UP_NAME = "fleetplane.io/upstream-name"


def named(name: str, cluster: str, downstream: str, data: dict | None = None) -> dict:
    return cm(name, data, cluster, annotations={DOWN_NAME: downstream})


def test_synced_under_its_downstream_name_both_ways(hub, downstream, start_syncer, names):
    lc, dc, cluster = names("lc"), names("dc"), names("c")
    up, down = Api(hub, lc), Api(downstream, dc)
    up.ns("app")
    up.create(CMS, named(f"web--{cluster}", cluster, "web", {"x": "1"}))
    up.create(CMS, cm("plain", {"y": "2"}, cluster))
    start_syncer(cluster, target(hub, lc), target(downstream, dc))
    got = wait_for(lambda: down.get(f"{CMS}/web"), 10, what="the copy under its downstream name")
    assert got["data"] == {"x": "1"}
    assert got["metadata"]["annotations"][UP_NAME] == f"web--{cluster}"
    assert DOWN_NAME not in got["metadata"]["annotations"]  # a hub-side annotation
    assert down.get(f"{CMS}/web--{cluster}") is None
    plain = wait_for(lambda: down.get(f"{CMS}/plain"), 10, what="an object without one keeps its name")
    assert UP_NAME not in plain["metadata"]["annotations"]
    hub_obj = wait_for(lambda: (o := up.get(f"{CMS}/web--{cluster}")) and state(o).get("state") == "Synced" and o, 10,
                       what="Synced on the hub object")
    assert state(hub_obj)["reason"] == "Created"

    # updates go down under that name; drift there is mapped back to the hub object and reverted
    up.merge(f"{CMS}/web--{cluster}", {"data": {"x": "2"}})
    wait_for(lambda: down.get(f"{CMS}/web")["data"] == {"x": "2"}, 10, what="update down")
    down.merge(f"{CMS}/web", {"data": {"x": "tampered"}})
    wait_for(lambda: down.get(f"{CMS}/web")["data"] == {"x": "2"}, 10, what="drift reverted")
    wait_for(lambda: any(r == "DriftReverted" for _, r, _ in events(up, "app", f"web--{cluster}")), 10,
             what="DriftReverted on the hub object")
    # deleted in the cluster: recreated under the same name
    assert down.delete(f"{CMS}/web") == 200
    wait_for(lambda: (o := down.get(f"{CMS}/web")) and o["data"] == {"x": "2"}, 10, what="recreated")
    # deleted on the hub: its copy goes, then the hub object (the finalizer)
    assert up.delete(f"{CMS}/web--{cluster}") == 200
    wait_for(lambda: down.get(f"{CMS}/web") is None, 10, what="deleted in the cluster")
    wait_for(lambda: up.get(f"{CMS}/web--{cluster}") is None, 10, what="gone from the hub")
    assert down.get(f"{CMS}/plain") is not None


def test_status_comes_up_to_the_hub_object(hub, downstream, start_syncer, names):
    lc, dc, cluster = names("lc"), names("dc"), names("c")
    up, down = Api(hub, lc), Api(downstream, dc)
    up.crd(widget_crd())
    down.crd(widget_crd())
    up.ns("app")
    up.create(W, widget(f"w--{cluster}", cluster, 3, annotations={DOWN_NAME: "w"}))
    start_syncer(cluster, target(hub, lc), target(downstream, dc), resources=("widgets.example.com",))
    wait_for(lambda: down.get(f"{W}/w"), 10, what="widget under its downstream name")
    code, out = downstream.json("PATCH", f"/clusters/{dc}{W}/w/status?fieldManager=cluster-controller",
                                {"status": {"ready": True, "phase": "Running"}}, content_type="application/merge-patch+json")
    assert code == 200, out
    wait_for(lambda: (up.get(f"{W}/w--{cluster}") or {}).get("status") == {"ready": True, "phase": "Running"}, 10,
             what="status up to the hub object")


def test_a_name_taken_in_the_cluster_or_by_another_hub_object_is_a_conflict(hub, downstream, start_syncer, names):
    lc, dc, cluster = names("lc"), names("dc"), names("c")
    up, down = Api(hub, lc), Api(downstream, dc)
    up.ns("app")
    down.ns("app")
    down.create(CMS, cm("taken", {"theirs": "1"}))  # the cluster's own
    up.create(CMS, named("wants-taken", cluster, "taken"))
    up.create(CMS, named("first", cluster, "same", {"who": "first"}))
    start_syncer(cluster, target(hub, lc), target(downstream, dc))
    wait_for(lambda: (down.get(f"{CMS}/same") or {}).get("data") == {"who": "first"}, 10, what="the first one synced")
    up.create(CMS, named("second", cluster, "same", {"who": "second"}))
    st = wait_for(lambda: (s := state(up.get(f"{CMS}/second"))).get("state") == "Failed" and s, 10, what="second: conflict")
    assert st["reason"] == "Conflict"
    assert "app/same already exists" in st["message"] and "synced for hub object app/first" in st["message"], st
    st = wait_for(lambda: (s := state(up.get(f"{CMS}/wants-taken"))).get("state") == "Failed" and s, 10,
                  what="taken: conflict")
    assert st["reason"] == "Conflict" and "not by fleetplane" in st["message"], st
    assert down.get(f"{CMS}/taken")["data"] == {"theirs": "1"}
    assert down.get(f"{CMS}/same")["data"] == {"who": "first"}
    # the losing hub object going away leaves the winner's copy alone
    assert up.delete(f"{CMS}/second") == 200
    wait_for(lambda: up.get(f"{CMS}/second") is None, 10, what="second deleted")
    assert down.get(f"{CMS}/same")["data"] == {"who": "first"}
    # an invalid downstream name is named on the hub object
    up.create(CMS, named("bad", cluster, "Not_A_Name"))
    st = wait_for(lambda: (s := state(up.get(f"{CMS}/bad"))).get("state") == "Failed" and s, 10, what="invalid name")
    assert st["reason"] == "InvalidDownstreamName" and "Not_A_Name" in st["message"], st


def test_a_restarted_syncer_maps_cluster_objects_back(hub, downstream, start_syncer, names):
    """The mapping is the cluster object's upstream-name annotation: a new Syncer finds it, deletes
    the copy of a hub object deleted meanwhile, and renames the copy when the annotation changes."""
    lc, dc, cluster = names("lc"), names("dc"), names("c")
    up, down = Api(hub, lc), Api(downstream, dc)
    up.ns("app")
    up.create(CMS, named("a--x", cluster, "a"))
    up.create(CMS, named("b--x", cluster, "b"))
    s = start_syncer(cluster, target(hub, lc), target(downstream, dc))
    wait_for(lambda: down.get(f"{CMS}/a") and down.get(f"{CMS}/b"), 10, what="both synced")
    wait_for(lambda: all(f"fleetplane.io/syncer-{cluster}" in (up.get(f"{CMS}/{n}")["metadata"].get("finalizers") or [])
                         for n in ("a--x", "b--x")), 10, what="finalizers on the hub objects")
    s.stop()
    assert up.delete(f"{CMS}/a--x") == 200  # held by the finalizer while no Syncer runs
    start_syncer(cluster, target(hub, lc), target(downstream, dc))
    wait_for(lambda: down.get(f"{CMS}/a") is None, 15, what="the deleted object's copy removed after the restart")
    wait_for(lambda: up.get(f"{CMS}/a--x") is None, 10, what="the hub object released")
    # a new downstream name: the copy moves
    up.merge(f"{CMS}/b--x", {"metadata": {"annotations": {DOWN_NAME: "b2"}}})
    wait_for(lambda: down.get(f"{CMS}/b2") and down.get(f"{CMS}/b") is None, 10, what="renamed in the cluster")
    assert down.get(f"{CMS}/b2")["metadata"]["annotations"][UP_NAME] == "b--x"
