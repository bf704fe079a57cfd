"""The StatefulSet ordinal planner (splitter/ordinals.py) and the DaemonSet/StatefulSet status sums
(splitter/status.py), as pure functions: layouts, one move at a time, and that any re-balance from a
layout the splitter made ends at the target with contiguous ranges and at most one ordinal twice."""

from __future__ import annotations

import random

from fleetplane.fleet.splitter import status as st
from fleetplane.fleet.splitter.kinds import DAEMONSET, DEPLOYMENT, STATEFULSET
from fleetplane.fleet.splitter.ordinals import OrdinalView, Range, layout, plan


def ranges(p) -> dict[str, tuple[int, int]]:
    return {c: (p.starts[c], n) for c, n in p.replicas.items()}


def views(r: dict[str, tuple[int, int]], ready: bool = True) -> dict[str, OrdinalView]:
    return {c: OrdinalView(s, n, ready) for c, (s, n) in r.items()}


def test_layout_is_contiguous_in_name_order() -> None:
    assert layout({"west": 2, "east": 3}) == {"east": Range(0, 3), "west": Range(3, 2)}
    assert str(Range(3, 2)) == "3-4" and str(Range(4, 1)) == "4" and str(Range(0, 0)) == "none"


def test_a_new_cluster_takes_one_ordinal_at_a_time_make_before_break() -> None:
    cur = {"a": (0, 3), "c": (3, 3)}
    p = plan({"a": 2, "b": 2, "c": 2}, views(cur), 6)
    # the highest misplaced ordinal at a boundary: 3 (c's lowest) goes to b first; c keeps it
    assert ranges(p) == {"a": (0, 3), "b": (3, 1), "c": (3, 3)}
    assert p.waiting == {"c": 1} and not p.settled
    # b's copy not ready yet: nothing more happens
    nxt = views(ranges(p))
    nxt["b"] = OrdinalView(3, 1, ready=False)
    assert ranges(plan({"a": 2, "b": 2, "c": 2}, nxt, 6)) == ranges(p)
    # ready: c lets it go, and the next move (2, a's highest) starts
    p = plan({"a": 2, "b": 2, "c": 2}, views(ranges(p)), 6)
    assert ranges(p) == {"a": (0, 3), "b": (2, 2), "c": (4, 2)} and p.waiting == {"a": 1}
    p = plan({"a": 2, "b": 2, "c": 2}, views(ranges(p)), 6)
    assert ranges(p) == {"a": (0, 2), "b": (2, 2), "c": (4, 2)} and p.settled


def test_scaling_and_leaving() -> None:
    # scale-up: unheld ordinals go to their targets at once
    p = plan({"a": 3, "b": 3}, views({"a": (0, 2), "b": (2, 2)}), 6)
    # (4 and 5 to b), and the move of 2 from b to a starts
    assert ranges(p) == {"a": (0, 3), "b": (2, 4)} and p.waiting == {"b": 1}
    # scale-down: ordinals at or above N go at once
    p = plan({"a": 1, "b": 1}, views({"a": (0, 2), "b": (2, 2)}), 2)
    # (2 and 3 from b), and the move of 1 from a to b starts
    assert ranges(p) == {"a": (0, 2), "b": (1, 1)} and p.waiting == {"a": 1}
    # a cluster that is no longer a target is deleted once its range is empty
    p = plan({"a": 4}, views({"a": (0, 4), "b": (4, 0)}), 4)
    assert p.delete == {"b"} and ranges(p) == {"a": (0, 4)}
    # a frozen (evicted) cluster is not passed: its ordinals are replaced at once
    p = plan({"a": 4}, views({"a": (0, 2)}), 4)
    assert ranges(p) == {"a": (0, 4)} and p.settled
    # a target still being deleted blocks its moves
    kids = views({"a": (0, 4)})
    kids["b"] = OrdinalView(2, 2, deleting=True)
    p = plan({"a": 2, "b": 2}, kids, 4)
    assert p.blocked == {"b"}


def test_every_rebalance_ends_with_contiguous_ranges_and_one_ordinal_twice_at_most() -> None:
    rnd = random.Random(12)
    for _ in range(3000):
        names = [f"c{i}" for i in range(rnd.randint(1, 5))]
        n = rnd.randint(0, 12)
        holders = sorted(rnd.sample(names, rnd.randint(1, len(names))))
        cuts = sorted(rnd.randint(0, n) for _ in range(len(holders) - 1))
        bounds = [0, *cuts, n]
        kids = {c: OrdinalView(bounds[i], bounds[i + 1] - bounds[i], True) for i, c in enumerate(holders)}
        n2 = max(0, n + rnd.randint(-3, 3))
        chosen = rnd.sample([*names, "x", "y"], rnd.randint(1, len(names) + 2))
        counts = dict.fromkeys(chosen, 0)
        for _ in range(n2):
            counts[rnd.choice(chosen)] += 1
        target = {c: v for c, v in counts.items() if v}
        for _step in range(100):
            p = plan(target, kids, n2)
            new = {c: OrdinalView(p.starts[c], r, True) for c, r in p.replicas.items()}
            held = [k for v in new.values() for k in range(v.start, v.start + v.replicas)]
            assert len(held) - len(set(held)) <= 1 and all(k < n2 for k in held), new
            if new == kids:
                break
            kids = new
        assert p.settled
        want = {c: (r.start, r.count) for c, r in layout(target).items() if r.count}
        assert {c: (v.start, v.replicas) for c, v in kids.items() if v.replicas} == want


def test_kinds() -> None:
    spec = {"replicas": 5, "serviceName": "db", "ordinals": {"start": 9}, "template": {"x": 1}}
    assert STATEFULSET.child_spec(spec, 2, 3) == {"serviceName": "db", "template": {"x": 1}, "replicas": 2,
                                                  "ordinals": {"start": 3}}
    assert STATEFULSET.spec_of_generation(spec) == {"serviceName": "db", "template": {"x": 1}, "ordinals": {}}
    assert DAEMONSET.child_spec({"template": {"x": 1}, "selector": {}}, 1) == {"template": {"x": 1}, "selector": {}}
    assert DAEMONSET.requested({}) == 1 and DEPLOYMENT.requested({}) == 1 and STATEFULSET.requested({"replicas": 0}) == 0
    ds = {"metadata": {"generation": 2}, "status": {"observedGeneration": 2, "desiredNumberScheduled": 3,
                                                     "numberAvailable": 3}}
    assert DAEMONSET.units(ds) == 1 and DAEMONSET.available(ds) == 1
    ds["status"]["numberAvailable"] = 2
    assert DAEMONSET.available(ds) == 0


def test_status_sums() -> None:
    kids = {"a": {"spec": {"replicas": 2}, "status": {"replicas": 2, "readyReplicas": 2, "currentReplicas": 2,
                                                      "updatedReplicas": 2, "availableReplicas": 2,
                                                      "currentRevision": "r1", "updateRevision": "r1"}},
            "b": {"spec": {"replicas": 3}, "status": {"replicas": 3, "readyReplicas": 1, "currentReplicas": 3,
                                                      "updatedReplicas": 3, "availableReplicas": 1,
                                                      "currentRevision": "r1", "updateRevision": "r1"}}}
    out = st.statefulset(generation=4, name="db", spec_hash="0123456789abcdef", children=kids, observed=True,
                         prev={}, placement=("True", "Placed", "5 replicas placed"), now="2026-01-01T00:00:00Z")
    assert (out["replicas"], out["readyReplicas"], out["availableReplicas"], out["observedGeneration"]) == (5, 3, 3, 4)
    assert out["updateRevision"] == out["currentRevision"] == "db-0123456789"
    assert out["conditions"] == [{"type": "Placement", "status": "True", "reason": "Placed",
                                  "message": "5 replicas placed", "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    # b unreachable: not counted; not observed: the previous observedGeneration and revision stay
    out = st.statefulset(generation=5, name="db", spec_hash="ffffffffff", children=kids, observed=False,
                         prev=out, placement=("True", "Placed", "x"), uncounted={"b": "unreachable"})
    assert (out["replicas"], out["observedGeneration"], out["currentRevision"], out["updateRevision"]) == \
        (2, 4, "db-0123456789", "db-ffffffffff")
    ds = st.daemonset(generation=1, name="agent", spec_hash="x", observed=True, prev={}, placement=("True", "Placed", ""),
                      children={"a": {"status": {"desiredNumberScheduled": 2, "numberReady": 2}},
                                "b": {"status": {"desiredNumberScheduled": 3, "numberReady": 1, "numberUnavailable": 2}}})
    assert (ds["desiredNumberScheduled"], ds["numberReady"], ds["numberUnavailable"], ds["numberMisscheduled"]) == \
        (5, 3, 2, 0)


def _converge(target: dict[str, int], kids: dict[str, OrdinalView], n: int) -> dict[str, OrdinalView]:
    for _step in range(300):
        p = plan(target, kids, n)
        new = {c: OrdinalView(p.starts[c], r, True) for c, r in p.replicas.items()}
        if new == kids:
            break
        kids = new
    assert p.settled
    want = {c: (r.start, r.count) for c, r in layout(target).items() if r.count}
    assert {c: (v.start, v.replicas) for c, v in kids.items() if v.replicas} == want, (target, kids)
    return kids


def test_a_cluster_back_from_eviction_rejoins_whatever_changed_meanwhile() -> None:
    """Its frozen child kept its old range while the others took its ordinals (and the fleet may
    have been re-balanced or scaled): once it counts again, everything still ends at the layout."""
    rnd = random.Random(7)

    def counts(names: list[str], n: int) -> dict[str, int]:
        out = dict.fromkeys(names, 0)
        for _ in range(n):
            out[rnd.choice(names)] += 1
        return {c: v for c, v in out.items() if v}

    for _ in range(3000):
        names = [f"c{i}" for i in range(rnd.randint(2, 5))]
        n = rnd.randint(1, 12)
        kids = {c: OrdinalView(r.start, r.count, True) for c, r in layout(counts(names, n)).items()}
        evicted = rnd.choice(sorted(kids))
        frozen = kids.pop(evicted)  # not passed to the plan while frozen: its ordinals are replaced
        n2 = max(1, n + rnd.randint(-2, 2))
        kids = _converge(counts([c for c in names if c != evicted], n2), kids, n2)
        kids[evicted] = frozen  # restored: it counts again, with the range it kept
        n3 = max(1, n2 + rnd.randint(-2, 2))
        _converge(counts(names, n3), kids, n3)
    # the simple case: b's range comes back as it was, the copies in a and c go
    kids = {"a": OrdinalView(0, 3, True), "b": OrdinalView(2, 2, True), "c": OrdinalView(3, 3, True)}
    p = plan({"a": 2, "b": 2, "c": 2}, kids, 6)
    assert ranges(p) == {"a": (0, 2), "b": (2, 2), "c": (4, 2)} and p.settled
