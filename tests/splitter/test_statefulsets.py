"""StatefulSets on the hub: replicas split over clusters as contiguous ordinal ranges
(``spec.ordinals.start`` + ``spec.replicas``, laid out in cluster-name order), moved one ordinal at
a time make-before-break, the parent's status summed, ``kubectl rollout status statefulset`` on the
hub, and ``fleetplane placement explain`` showing the ranges. First against a hub alone, serving
StatefulSets as the CRD a Syncer imports, each child's status written as its cluster's StatefulSet
controller would (every replica of its current spec ready) by :func:`run_clusters`; then end to
end with simulated clusters: Pods keep their names ``db-<ordinal>``, a moved ordinal's claim stays
in its old cluster."""

from __future__ import annotations

import copy
import json
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from fleetplane.fleet.splitter.ordinals import layout

from ..harness import wait_for
from .conftest import SplitHub
from .fixtures import STATEFULSET_CRD, TEMPLATE, Fleet
from .world import World

STS = "statefulsets"


def statefulset(name: str, replicas: int, policy: str | None = None) -> dict:
    ann = {"placement.fleetplane.io/policy": policy} if policy else {}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": name, "namespace": "default", "annotations": ann},
            "spec": {"replicas": replicas, "serviceName": name, "selector": {"matchLabels": {"app": "web"}},
                     "template": copy.deepcopy(TEMPLATE),
                     "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                         "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}


def sts_status(child: dict, ready: int | None = None) -> dict:
    """What a cluster's StatefulSet controller reports once ``ready`` replicas are ready."""
    n = child["spec"]["replicas"]
    ready = n if ready is None else ready
    rev = f"{child['metadata']['name']}-7d4b9c"
    return {"observedGeneration": child["metadata"]["generation"], "replicas": n, "readyReplicas": ready,
            "currentReplicas": n, "updatedReplicas": n, "availableReplicas": ready, "currentRevision": rev,
            "updateRevision": rev}


def ranges(f: Fleet, name: str) -> dict[str, tuple[int, int]]:
    """cluster -> (first ordinal, count) of each child."""
    return {c: (k["spec"]["ordinals"]["start"], k["spec"]["replicas"]) for c, k in f.kids(STS, name).items()}


def status(f: Fleet, name: str) -> dict:
    return (f.obj(STS, name) or {}).get("status") or {}


def condition(f: Fleet, name: str, type_: str) -> dict:
    return next((c for c in status(f, name).get("conditions") or [] if c["type"] == type_), {})


def _placed(r: dict[str, tuple[int, int]], n: int) -> dict | None:
    return r if sum(c for _, c in r.values()) == n else None


def run_clusters(f: Fleet, name: str, want: dict[str, tuple[int, int]], timeout: float = 60,
                 twice: int = 1) -> list[dict]:
    """Play the clusters until the children's ranges are ``want`` and placement has settled: every
    child whose status is behind its spec gets every replica ready. Returns the layouts seen,
    checking on each that at most ``twice`` ordinals run twice (one: a move at a time)."""
    seen: list[dict] = []

    def step() -> bool:
        kids = f.kids(STS, name)
        for k in kids.values():
            if (k.get("status") or {}).get("observedGeneration") != k["metadata"]["generation"]:
                code, out = f.api("PATCH", f"/apis/apps/v1/namespaces/default/statefulsets/{k['metadata']['name']}"
                                  "/status", [{"op": "add", "path": "/status", "value": sts_status(k)}],
                                  "application/json-patch+json")
                assert code in (200, 404, 409), out  # a child being removed, or just changed
        now = {c: (k["spec"]["ordinals"]["start"], k["spec"]["replicas"]) for c, k in kids.items()}
        if not seen or seen[-1] != now:
            seen.append(now)
            held = [o for s, n in now.values() for o in range(s, s + n)]
            assert len(held) - len(set(held)) <= twice, f"more than {twice} ordinals run twice: {now}"
        return now == want and condition(f, name, "Placement").get("reason") == "Placed"

    wait_for(step, timeout, interval=0.2, what=f"ranges of {name} to be {want} (now {ranges(f, name)}, "
                                                f"{condition(f, name, 'Placement')})")
    return seen


def test_ordinal_ranges_the_summed_status_and_rollout_status(fleet: Fleet) -> None:
    f = fleet
    f.serve(STATEFULSET_CRD)
    f.profile("east")
    f.profile("west")
    f.apply(statefulset("db", 5))
    got = wait_for(lambda: _placed(ranges(f, "db"), 5), 15, interval=0.1,
                   what=f"5 ordinals placed (now {ranges(f, 'db')})")
    # Webster gives 3 and 2 (which one gets 3 is a hash of the name); ranges in name order from 0
    assert got["east"][0] == 0 and got["west"] == (got["east"][1], 5 - got["east"][1]), got
    parent = f.obj(STS, "db")
    assert parent is not None
    for c, k in f.kids(STS, "db").items():
        md = k["metadata"]
        assert md["name"] == f"db--{c}"
        assert md["annotations"]["fleetplane.io/downstream-name"] == "db"  # its Pods are db-<ordinal> there
        assert md["ownerReferences"][0]["kind"] == "StatefulSet" and md["ownerReferences"][0]["name"] == "db"
        assert k["spec"]["serviceName"] == "db" and k["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "data"
    rollout = subprocess.Popen([f.kubectl.binary, "--kubeconfig", str(f.kubeconfig), "-n", "default", "rollout",
                                "status", "statefulset/db", "--timeout=30s"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    kids = f.kids(STS, "db")
    f.put_status(STS, kids["east"], sts_status(kids["east"], ready=1))
    f.put_status(STS, kids["west"], sts_status(kids["west"]))
    st = wait_for(lambda: (s := status(f, "db")).get("replicas") == 5 and s, 15, interval=0.1,
                  what=f"db's status summed (now {status(f, 'db')})")
    assert (st["readyReplicas"], st["availableReplicas"], st["currentReplicas"], st["updatedReplicas"]) == \
        (1 + got["west"][1], 1 + got["west"][1], 5, 5)
    assert st["observedGeneration"] == parent["metadata"]["generation"]
    assert st["currentRevision"] == st["updateRevision"] and st["updateRevision"].startswith("db-")
    assert rollout.poll() is None  # not every pod is ready
    f.put_status(STS, kids["east"], sts_status(kids["east"]))
    out, _ = rollout.communicate(40)
    assert rollout.returncode == 0, out
    # as a cluster prints it: kube defaults updateStrategy.rollingUpdate.partition to 0
    assert "partitioned roll out complete: 5 new pods have been updated..." in out
    placement = condition(f, "db", "Placement")
    assert (placement["status"], placement["reason"]) == ("True", "Placed") and "lastUpdateTime" not in placement
    # a new template: a new updateRevision, currentRevision follows once every child has rolled it out
    f.api("PATCH", "/apis/apps/v1/namespaces/default/statefulsets/db",
          {"spec": {"template": {"metadata": {"labels": {"app": "web", "v": "2"}}}}}, "application/merge-patch+json")
    wait_for(lambda: status(f, "db").get("updateRevision") not in (None, st["updateRevision"]), 15, interval=0.1,
             what="a new updateRevision")
    assert status(f, "db")["currentRevision"] == st["updateRevision"]
    run_clusters(f, "db", got)
    new = wait_for(lambda: (s := status(f, "db")).get("currentRevision") == s.get("updateRevision") and s, 15,
                   interval=0.1, what=f"currentRevision to follow (now {status(f, 'db')})")
    assert new["updateRevision"] != st["updateRevision"]


def test_a_cluster_joining_and_leaving_moves_ordinals_one_at_a_time(fleet: Fleet, tmp_path) -> None:
    f = fleet
    f.serve(STATEFULSET_CRD)
    f.profile("a")
    f.profile("c")
    f.apply(statefulset("db", 6))
    run_clusters(f, "db", {"a": (0, 3), "c": (3, 3)})
    # b joins between them: 2 each, a keeps 0-1, b gets 2-3, c 4-5: ordinal 2 from a's top, 3 from c's bottom
    f.profile("b")
    seen = run_clusters(f, "db", {"a": (0, 2), "b": (2, 2), "c": (4, 2)})
    moves = [s for s in seen if sum(n for _, n in s.values()) == 7]  # one ordinal running twice
    assert moves, seen
    for now in seen:
        assert sum(n for _, n in now.values()) in (6, 7), seen
    wait_for(lambda: any("Moved db--a in cluster a from ordinals 0-2 to 0-1" in e["message"] for e in f.events("db")),
             15, interval=0.2, what=f"the Event of a's move (now {[e['message'] for e in f.events('db')]})")
    st = status(f, "db")
    assert st["readyReplicas"] == 6 and st["replicas"] == 6
    # explain shows the ranges
    out = subprocess.run([sys.executable, "-m", "fleetplane.cli.placement", "explain", "statefulset/db", "-o", "json",
                          "--kubeconfig", str(f.kubeconfig)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    doc = json.loads(out.stdout)
    assert doc["ordinals"] == {"current": {"a": "0-1", "b": "2-3", "c": "4-5"},
                               "computed": {"a": "0-1", "b": "2-3", "c": "4-5"}}, doc
    text = subprocess.run([sys.executable, "-m", "fleetplane.cli.placement", "explain", "sts/db",
                           "--kubeconfig", str(f.kubeconfig)], capture_output=True, text=True, timeout=60).stdout
    assert "Ordinals now: a 0-1, b 2-3, c 4-5; computed: a 0-1, b 2-3, c 4-5" in text, text
    # b leaves the fleet: its ordinals go back to its neighbours, make-before-break
    f.delete_profile("b")
    run_clusters(f, "db", {"a": (0, 3), "c": (3, 3)})
    assert set(f.kids(STS, "db")) == {"a", "c"}


def test_scaling_and_an_unreachable_cluster(fleet: Fleet) -> None:
    f = fleet
    f.serve(STATEFULSET_CRD)
    f.profile("a")
    f.profile("b")
    f.apply(statefulset("db", 4))
    run_clusters(f, "db", {"a": (0, 2), "b": (2, 2)})
    # scale up: the new ordinals are added at once; scale down: the highest go at once
    f.api("PATCH", "/apis/apps/v1/namespaces/default/statefulsets/db", {"spec": {"replicas": 6}},
          "application/merge-patch+json")
    run_clusters(f, "db", {"a": (0, 3), "b": (3, 3)})
    f.api("PATCH", "/apis/apps/v1/namespaces/default/statefulsets/db", {"spec": {"replicas": 2}},
          "application/merge-patch+json")
    run_clusters(f, "db", {"a": (0, 1), "b": (1, 1)})
    f.api("PATCH", "/apis/apps/v1/namespaces/default/statefulsets/db", {"spec": {"replicas": 4}},
          "application/merge-patch+json")
    run_clusters(f, "db", {"a": (0, 2), "b": (2, 2)})
    # b unreachable past the grace period: its ordinals are replaced in a at once (b's child is
    # frozen, kept there and not counted), so ordinals 2-3 run in a too
    f.profile("b", healthy=False)
    wait_for(lambda: condition(f, "db", "Partitioned").get("reason") == "ReplicasEvicted", 20, interval=0.1,
             what=f"db Partitioned=ReplicasEvicted (now {condition(f, 'db', 'Partitioned')})")
    wait_for(lambda: ranges(f, "db") == {"a": (0, 4), "b": (2, 2)}, 15, interval=0.1,
             what=f"a to run 0-3 (now {ranges(f, 'db')})")
    kids = f.kids(STS, "db")
    f.put_status(STS, kids["a"], sts_status(kids["a"]))
    wait_for(lambda: status(f, "db").get("readyReplicas") == 4, 15, interval=0.1,
             what=f"b's replicas not counted (now {status(f, 'db')})")
    # b returns: after the rejoin grace its range counts again, and a's copies of 2-3 go
    f.profile("b", healthy=True)
    run_clusters(f, "db", {"a": (0, 2), "b": (2, 2)}, timeout=30, twice=2)  # from a 0-3 and b 2-3
    wait_for(lambda: not condition(f, "db", "Partitioned"), 15, interval=0.1,
             what=f"no Partitioned condition (now {condition(f, 'db', 'Partitioned')})")
    assert status(f, "db")["readyReplicas"] == 4


def test_the_parents_first_ordinal_is_the_fleets(fleet: Fleet) -> None:
    """``spec.ordinals.start`` on the parent: the fleet's ordinals start there (kube: the Pods are
    ``<name>-<start>`` .. ``<name>-<start+replicas-1>``)."""
    f = fleet
    f.serve(STATEFULSET_CRD)
    f.profile("a")
    f.profile("b")
    sts = statefulset("db", 4)
    sts["spec"]["ordinals"] = {"start": 10}
    f.apply(sts)
    run_clusters(f, "db", {"a": (10, 2), "b": (12, 2)})


# -- end to end: simulated clusters run the children (StatefulSet controllers, claims, kubelets) -----


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("sts-e2e")
    hub = SplitHub(tmp / "hub", extra=["--cluster-controller"]).start()
    w = World(hub, tmp, resources=("statefulsets.apps",))
    try:
        w.join("east")
        w.join("west")
        wait_for(lambda: w.fleet.api("GET", "/apis/apps/v1/namespaces/default/statefulsets")[0] == 200, 30,
                 interval=0.2, what="the Syncers to import statefulsets.apps")
        yield w
    finally:
        for c in w.clusters.values():
            c.stop(signal.SIGTERM)
        hub.stop()


def names(world: World, cluster: str, kind: str) -> set[str]:
    out = world.clusters[cluster].kubectl()("get", kind, "-n", "default", "-o", "name").out.split()
    return {n.split("/", 1)[1] for n in out}


def settled(f: Fleet, name: str, n: int) -> dict[str, tuple[int, int]] | None:
    """The children's ranges once they are the computed layout, every replica is ready and
    placement has settled."""
    shares = f.decision_of(STS, name).get("shares") or {}
    want = {c: (r.start, r.count) for c, r in layout(shares).items()}
    st = status(f, name)
    ok = (ranges(f, name) == want and st.get("readyReplicas") == n and st.get("replicas") == n
          and condition(f, name, "Placement").get("reason") == "Placed")
    return want if ok else None


def test_e2e_ordinals_keep_their_identity_across_clusters(world: World) -> None:
    f = world.fleet
    f.apply(statefulset("db", 5))
    got = wait_for(lambda: settled(f, "db", 5), 90, interval=0.3,
                   what=f"db placed and ready (now {ranges(f, 'db')}, {status(f, 'db')})")
    out = f.kubectl("rollout", "status", "statefulset/db", "--timeout=40s").out
    assert "partitioned roll out complete: 5 new pods have been updated..." in out
    rows = {r.split()[0]: r.split()[1] for r in f.kubectl("get", "statefulsets").out.splitlines()[1:]}
    assert rows == {"db": "5/5", **{f"db--{c}": f"{n}/{n}" for c, (_, n) in got.items()}}, rows
    # every Pod keeps its fleet-wide name db-<ordinal>, each claim data-db-<ordinal>, in its range's cluster
    for c, (start, n) in got.items():
        want = {f"db-{k}" for k in range(start, start + n)}
        assert names(world, c, "pods") == want, (c, got)
        assert names(world, c, "persistentvolumeclaims") == {f"data-{p}" for p in want}
    # north joins: ordinals move to it one at a time; their claims stay where they were
    world.join("north")
    new = wait_for(lambda: (g := settled(f, "db", 5)) and "north" in g and g, 120, interval=0.3,
                   what=f"db re-balanced over three clusters (now {ranges(f, 'db')}, {status(f, 'db')})")
    all_pods = set()
    for c, (start, n) in new.items():
        pods = names(world, c, "pods")
        assert pods == {f"db-{k}" for k in range(start, start + n)}, (c, new)
        all_pods |= pods
    assert all_pods == {f"db-{k}" for k in range(5)}
    before = {k: c for c, (s, n) in got.items() for k in range(s, s + n)}
    after = {k: c for c, (s, n) in new.items() for k in range(s, s + n)}
    moved = {k for k in before if before[k] != after[k]}
    assert moved
    for k in moved:  # its claim stays, retained, in the old cluster; a new one is provisioned in the new
        assert f"data-db-{k}" in names(world, before[k], "persistentvolumeclaims")
        assert f"data-db-{k}" in names(world, after[k], "persistentvolumeclaims")
    wait_for(lambda: any(e["reason"] == "SuccessfulUpdate" and e["message"].startswith("Moved db--")
                         for e in f.events("db")), 15, interval=0.2, what="the Events of the moves")
    # north dies: past the grace period its ordinals are replaced in the others at once
    world.clusters["north"].stop(signal.SIGKILL)
    wait_for(lambda: condition(f, "db", "Partitioned").get("reason") == "ReplicasEvicted", 40, interval=0.2,
             what=f"db Partitioned=ReplicasEvicted (now {condition(f, 'db', 'Partitioned')})")
    wait_for(lambda: status(f, "db").get("readyReplicas") == 5, 90, interval=0.3,
             what=f"db's 5 ordinals ready in east and west (now {ranges(f, 'db')}, {status(f, 'db')})")
    live = {c: r for c, r in ranges(f, "db").items() if c != "north"}
    assert sorted(k for s, n in live.values() for k in range(s, s + n)) == list(range(5)), live
