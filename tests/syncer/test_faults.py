"""Faults: an unreachable cluster or hub, a cluster that goes away and comes back, a syncer restart."""

from __future__ import annotations

import signal
from dataclasses import replace

from fleetplane.fleet.syncer import ApiTarget

from ..harness import Hub, free_port, wait_for
from .conftest import Api, cm, state, target

CMS = "/api/v1/namespaces/app/configmaps"


def _managed(api: Api) -> list[str]:
    items = (api.get(f"{CMS}?labelSelector=fleetplane.io/logical-cluster") or {}).get("items") or []
    return sorted(o["metadata"]["name"] for o in items)


def test_cluster_goes_away_and_comes_back(hub, start_syncer, names, tmp_path):
    lc, cluster = names("lc"), names("c")
    d = Hub(tmp_path / "cluster").start()
    up, down = Api(hub, lc), Api(d, "root")
    up.ns("app")
    for n in ("a", "b", "c"):
        up.create(CMS, cm(n, {"v": "1"}, cluster))
    s = start_syncer(cluster, target(hub, lc), target(d, "root"))
    wait_for(lambda: _managed(down) == ["a", "b", "c"], 10, what="synced")
    wait_for(lambda: s.health().reason == "Synced", 10, what="healthy")

    d.stop(signal.SIGKILL)
    h = wait_for(lambda: (x := s.health()).reason == "ClusterUnreachable" and x, 10, what="outage reported")
    assert not h.connected and not h.types_synced
    assert f"cannot reach cluster {cluster}" in h.message and "127.0.0.1" in h.message, h.message

    # the hub changes meanwhile: a new object, an update, a deletion (held by the finalizer)
    up.create(CMS, cm("d", {"v": "1"}, cluster))
    up.merge(f"{CMS}/a", {"data": {"v": "2"}})
    assert up.delete(f"{CMS}/b") == 200
    held = up.get(f"{CMS}/b")
    assert held is not None and held["metadata"].get("deletionTimestamp"), "the finalizer holds the hub deletion"
    assert state(up.get(f"{CMS}/c"))["state"] == "Synced"  # an outage is the cluster's condition, not each object's

    d = Hub(d.data_dir, port=d.port).start()
    down = Api(d, "root")
    wait_for(lambda: _managed(down) == ["a", "c", "d"], 15, what="converged after the cluster came back")
    assert down.get(f"{CMS}/a")["data"] == {"v": "2"}
    wait_for(lambda: up.get(f"{CMS}/b") is None, 10, what="the hub deletion completed")
    h = wait_for(lambda: (x := s.health()).reason == "Synced" and x, 15, what="healthy again")
    assert h.connected and h.objects_synced >= 3
    d.stop()


def test_syncer_restart_resumes_without_losses_or_duplicates(hub, downstream, start_syncer, names):
    lc, dc, cluster = names("lc"), names("dc"), names("c")
    up, down = Api(hub, lc), Api(downstream, dc)
    up.ns("app")
    for n in ("keep", "delete-me", "unlabel-me", "edit-me", "drifted"):
        up.create(CMS, cm(n, {"v": "1"}, cluster))
    first = start_syncer(cluster, target(hub, lc), target(downstream, dc))
    wait_for(lambda: _managed(down) == ["delete-me", "drifted", "edit-me", "keep", "unlabel-me"], 10, what="synced")
    fin = f"fleetplane.io/syncer-{cluster}"
    wait_for(lambda: all(fin in (up.get(f"{CMS}/{n}")["metadata"].get("finalizers") or [])
                         for n in ("delete-me", "unlabel-me")), 10, what="finalizers")
    first.stop()

    # while no syncer runs
    assert up.delete(f"{CMS}/delete-me") == 200
    up.merge(f"{CMS}/unlabel-me", {"metadata": {"labels": {"kcp.dev/cluster": None}}})
    up.merge(f"{CMS}/edit-me", {"data": {"v": "2"}})
    up.create(CMS, cm("new", {"v": "1"}, cluster))
    assert down.delete(f"{CMS}/drifted") == 200

    s = start_syncer(cluster, target(hub, lc), target(downstream, dc))
    wait_for(lambda: _managed(down) == ["drifted", "edit-me", "keep", "new"], 10, what="converged after restart")
    assert down.get(f"{CMS}/edit-me")["data"] == {"v": "2"}
    wait_for(lambda: up.get(f"{CMS}/delete-me") is None, 10, what="deletion finished")
    wait_for(lambda: fin not in (up.get(f"{CMS}/unlabel-me")["metadata"].get("finalizers") or []), 10, what="unlabelled released")
    h = wait_for(lambda: (x := s.health()).reason == "Synced" and x.objects_synced == 4 and x, 10, what="healthy")
    assert h.objects_failed == 0


def test_unreachable_cluster_and_hub_are_reported(hub, downstream, start_syncer, names):
    lc, cluster = names("lc"), names("c")
    nowhere = replace(ApiTarget.from_kubeconfig(hub.kubeconfig), server=f"https://127.0.0.1:{free_port()}")
    s = start_syncer(cluster, target(hub, lc), nowhere)
    h = wait_for(lambda: (x := s.health()).reason == "ClusterUnreachable" and x, 10, what="unreachable cluster")
    assert not h.connected and "127.0.0.1" in h.message and h.last_error
    s2 = start_syncer(cluster, nowhere.for_logical_cluster(lc), target(downstream, names("dc")))
    h2 = wait_for(lambda: (x := s2.health()).reason == "HubUnreachable" and x, 10, what="unreachable hub")
    assert h2.connected and not h2.hub_connected and not h2.types_synced


def test_hub_goes_away_and_comes_back(downstream, start_syncer, names, tmp_path):
    lc, dc, cluster = names("lc"), names("dc"), names("c")
    h = Hub(tmp_path / "hub").start()
    up, down = Api(h, lc), Api(downstream, dc)
    up.ns("app")
    up.create(CMS, cm("a", {"v": "1"}, cluster))
    s = start_syncer(cluster, target(h, lc), target(downstream, dc))
    wait_for(lambda: _managed(down) == ["a"], 10, what="synced")
    h.stop(signal.SIGKILL)
    wait_for(lambda: (x := s.health()).reason == "HubUnreachable" and not x.hub_connected and x.connected, 10,
             what="hub outage reported")
    down.merge(f"{CMS}/a", {"data": {"v": "changed in the cluster"}})  # drift while the hub is away
    h = Hub(h.data_dir, port=h.port).start()
    up = Api(h, lc)
    up.create(CMS, cm("b", {"v": "1"}, cluster))
    wait_for(lambda: _managed(down) == ["a", "b"], 15, what="converged after the hub came back")
    wait_for(lambda: down.get(f"{CMS}/a")["data"] == {"v": "1"}, 10, what="drift reverted")
    wait_for(lambda: s.health().reason == "Synced", 15, what="healthy again")
    h.stop()
