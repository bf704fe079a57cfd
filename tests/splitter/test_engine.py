"""The placement engine, the make-before-break plan and status aggregation: pure functions, table
tests and exhaustive property checks over small deterministic grids (no hypothesis needed)."""

from __future__ import annotations

import itertools
import random

import pytest
from bench.placement import run as bench_run

from fleetplane.fleet.placement import (
    ClusterInfo,
    Limit,
    Options,
    PolicyError,
    Taint,
    decide,
    parse_policy,
    requests_of,
)
from fleetplane.fleet.placement.engine import Prepared
from fleetplane.fleet.splitter.rollout import ChildView, plan
from fleetplane.fleet.splitter.status import aggregate

NOW = 1_900_000_000.0


def c(name: str, **kw) -> ClusterInfo:
    kw.setdefault("since", 0.0)
    return ClusterInfo(name=name, **kw)


def split(n: int, fleet, policy=None, current=None, **kw) -> dict[str, int]:
    p = parse_policy(policy) if isinstance(policy, str) else policy
    return decide(n, p, fleet, current, now=NOW, **kw).assignment()


# -- apportionment ------------------------------------------------------------------------------


@pytest.mark.parametrize("n,want", [
    (15, {"east": 8, "west": 7}),
    (1, {"east": 1}),
    (2, {"east": 1, "west": 1}),
    (0, {}),
])
def test_even_split_is_webster_with_name_tie_break(n, want):
    assert split(n, [c("west"), c("east")]) == want


def test_weighted_split_follows_webster():
    fleet = [c("a"), c("b"), c("c")]
    # Sainte-Laguë 10 seats, weights 5:3:1 -> 6/3/1 (Hamilton would also give 6/3/1; D'Hondt 6/4/0)
    assert split(10, fleet, "strategy: Weighted\nweights: {a: 5, b: 3, c: 1}") == {"a": 6, "b": 3, "c": 1}
    # clusters with no weight get nothing and say why
    d = decide(4, parse_policy("strategy: Weighted\nweights: {a: 1}"), fleet, now=NOW)
    assert d.assignment() == {"a": 4}
    assert d.by_name()["b"].reason.startswith("weight 0")


def test_same_inputs_same_split_whatever_the_order():
    rnd = random.Random(3)
    names = [f"c{i}" for i in range(9)]
    policy = parse_policy("strategy: Weighted\nweights: [{clusters: [c1, c2], weight: 3}, {labels: 'x=y', weight: 2}]")
    for _ in range(30):
        fleet = [c(n, labels={"x": "y"} if i % 2 else {}) for i, n in enumerate(names)]
        rnd.shuffle(fleet)
        first = split(23, fleet, policy)
        rnd.shuffle(fleet)
        assert split(23, fleet, policy) == first


@pytest.mark.parametrize("policy", [None, "strategy: Weighted\nweights: {a: 5, b: 3, c: 2, d: 1}",
                                    "spread: [{topologyKey: zone, maxSkew: 1}]"])
def test_scaling_moves_only_the_difference(policy):
    """House monotone: scaling up from the previous split adds, scaling down removes; never both."""
    fleet = [c("a", properties={"zone": "z1"}), c("b", properties={"zone": "z2"}), c("c", properties={"zone": "z1"}),
             c("d", properties={"zone": "z3"})]
    prev: dict[str, int] = {}
    for n in list(range(0, 40)) + list(range(40, -1, -3)):
        cur = split(n, fleet, policy, prev)
        assert sum(cur.values()) == n
        names = set(cur) | set(prev)
        grew = any(cur.get(k, 0) > prev.get(k, 0) for k in names)
        shrank = any(cur.get(k, 0) < prev.get(k, 0) for k in names)
        assert not (grew and shrank), (n, prev, cur)
        assert cur == split(n, fleet, policy), "path independent: the same inputs give the same split"
        prev = cur


def test_small_workloads_spread_over_the_fleet():
    """Ties by name would put every 1-replica workload on the first cluster; the splitter seeds the
    tie order with the workload's name: stable per workload, spread across workloads."""
    fleet = [c(f"c{i}") for i in range(10)]
    per: dict[str, int] = {}
    for i in range(500):
        for k, v in decide(1, None, fleet, now=NOW, seed=f"default/app-{i}").assignment().items():
            per[k] = per.get(k, 0) + v
    assert len(per) == 10 and max(per.values()) < 2 * min(per.values()), per
    assert decide(7, None, fleet, now=NOW, seed="ns/a").assignment() == \
        decide(7, None, list(reversed(fleet)), now=NOW, seed="ns/a").assignment()
    prep = Prepared(parse_policy(""), fleet)
    assert decide(7, None, prepared=prep, now=NOW, seed="ns/a").assignment() == \
        decide(7, None, fleet, now=NOW, seed="ns/a").assignment()


def test_current_holders_win_ties():
    fleet = [c("a"), c("b"), c("c")]
    assert split(4, fleet) == {"a": 2, "b": 1, "c": 1}
    assert split(4, fleet, current={"a": 1, "b": 1, "c": 2}) == {"a": 1, "b": 1, "c": 2}


def test_a_cluster_joining_takes_its_share_from_everyone():
    fleet = [c("east"), c("west")]
    assert split(15, fleet) == {"east": 8, "west": 7}
    assert split(15, fleet + [c("north")], current={"east": 8, "west": 7}) == {"east": 5, "north": 5, "west": 5}


# -- filters --------------------------------------------------------------------------------------


def test_health_damping_and_joining():
    opts = Options(unhealthy_grace=30, join_grace=10)
    sick = c("west", healthy=False, since=NOW - 5, health_reason="Unreachable", health_message="connection refused")
    d = decide(15, None, [c("east"), sick], {"east": 8, "west": 7}, now=NOW, options=opts)
    w = d.by_name()["west"]
    assert (w.status, w.replicas) == ("Held", 7) and "Unreachable" in w.reason
    assert d.assignment() == {"east": 8, "west": 7} and d.recheck_at == NOW + 25
    late = c("west", healthy=False, since=NOW - 31, health_reason="Unreachable")
    d = decide(15, None, [c("east"), late], {"east": 8, "west": 7}, now=NOW, options=opts)
    assert d.assignment() == {"east": 15} and d.by_name()["west"].status == "Filtered"
    new = c("north", since=NOW - 3)
    d = decide(15, None, [c("east"), c("west"), new], {"east": 8, "west": 7}, now=NOW, options=opts)
    assert d.assignment() == {"east": 8, "west": 7}
    assert d.by_name()["north"].reason.startswith("joining") and d.recheck_at == NOW + 7
    d = decide(15, None, [c("east"), c("west"), c("north", since=NOW - 11)], {"east": 8, "west": 7}, now=NOW,
               options=opts)
    assert d.assignment() == {"east": 5, "north": 5, "west": 5}
    # joining damping delays rebalancing, not a first placement with nothing else to run on
    d = decide(4, None, [c("a", since=NOW - 1), c("b", since=NOW - 1)], now=NOW, options=opts)
    assert d.assignment() == {"a": 2, "b": 2} and "used as no other cluster is available" in d.by_name()["a"].note
    unknown = c("east", healthy=None)
    assert decide(3, None, [unknown], now=NOW).by_name()["east"].reason.startswith("unhealthy")
    assert decide(3, None, [c("gone", deleting=True)], now=NOW).unplaced == 3


def test_required_and_preferred_affinity():
    fleet = [c("us1", labels={"env": "prod"}, properties={"location": "us-east-1"}),
             c("us2", labels={"env": "prod"}, properties={"location": "us-west-2"}),
             c("eu1", labels={"env": "prod"}, properties={"location": "eu-west-1"}),
             c("dev", labels={"env": "dev"}, properties={"location": "us-east-1"})]
    pol = parse_policy("required: {labels: env=prod, properties: 'location in (us-east-1,us-west-2)'}")
    d = decide(6, pol, fleet, now=NOW)
    assert d.assignment() == {"us1": 3, "us2": 3}
    assert "labels do not match" in d.by_name()["dev"].reason
    assert "location=eu-west-1" in d.by_name()["eu1"].reason
    # preferred: fill the best-scoring clusters first, spill over only past their caps
    pol = parse_policy("preferred: [{weight: 50, location: us-east-1}]\nmaxReplicasPerCluster: 4")
    d = decide(6, pol, fleet, now=NOW)
    assert d.assignment() == {"dev": 3, "us1": 3}
    d = decide(10, pol, fleet, now=NOW)
    assert d.assignment() == {"dev": 4, "eu1": 1, "us1": 4, "us2": 1}
    # any of several required terms
    pol = parse_policy("required: [{clusters: [eu1]}, {location: us-west-2}]")
    assert split(4, fleet, pol) == {"eu1": 2, "us2": 2}
    # clusterSet by the namespace label or the property
    cs = ClusterInfo.from_profile({"metadata": {"name": "x", "namespace": "prod"}, "status": {"conditions": [
        {"type": "ControlPlaneHealthy", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z"}]}},
        {"multicluster.x-k8s.io/clusterset": "prod"})
    assert cs.clusterset == "prod"
    assert split(2, [cs, c("y")], "required: {clusterSet: prod}") == {"x": 2}


def test_spread_with_max_skew():
    fleet = [c("a1", properties={"zone": "a"}), c("a2", properties={"zone": "a"}), c("a3", properties={"zone": "a"}),
             c("b1", properties={"zone": "b"}), c("nozone")]
    d = decide(9, parse_policy("spread: [{topologyKey: zone, maxSkew: 1}]"), fleet, now=NOW)
    got = d.assignment()
    assert got["a1"] + got["a2"] + got["a3"] in (4, 5) and got["b1"] in (4, 5)
    assert "needed to spread" in d.by_name()["nozone"].reason
    # a full domain stops the others at maxSkew (DoNotSchedule) and says so
    d = decide(9, parse_policy("spread: [{topologyKey: zone, maxSkew: 2}]\nmaxReplicasPerCluster: 2"), fleet, now=NOW)
    assert d.placed == 6 and d.unplaced == 3
    assert any("b (b1) cannot take more" in r for r in d.reasons), d.reasons
    # ScheduleAnyway only prefers
    d = decide(9, parse_policy("spread: [{topologyKey: zone, maxSkew: 1, whenUnsatisfiable: ScheduleAnyway}]\n"
                               "maxReplicasPerCluster: 2"), fleet, now=NOW)
    assert d.placed == 9


def test_spread_over_labels_and_regions_at_scale():
    fleet = [c(f"c{i:02d}", labels={"topology.kubernetes.io/region": f"r{i % 3}"}) for i in range(30)]
    d = decide(31, parse_policy("spread: [{topologyKey: topology.kubernetes.io/region, maxSkew: 1}]"), fleet, now=NOW)
    per = {}
    for cd in d.clusters:
        per[cd.domain[0]] = per.get(cd.domain[0], 0) + cd.replicas
    assert sorted(per.values()) == [10, 10, 11]


def test_taints_and_tolerations():
    east = c("east", taints=(Taint("maintenance", "", "NoExecute"),))
    west = c("west", taints=(Taint("gpu", "true", "NoSchedule"),))
    north = c("north", taints=(Taint("spot", "", "PreferNoSchedule"),))
    fleet = [east, west, north, c("south")]
    d = decide(4, None, fleet, {"east": 2, "west": 2}, now=NOW)
    assert d.by_name()["east"].status == "Filtered" and "maintenance:NoExecute" in d.by_name()["east"].reason
    assert d.by_name()["west"].status == "Held" and d.assignment()["west"] == 2  # NoSchedule keeps what runs
    assert d.assignment() == {"south": 2, "west": 2}  # north only when nothing else fits
    tol = parse_policy("tolerations: [{key: maintenance, operator: Exists}, {key: gpu, value: 'true', effect: NoSchedule}]")
    assert set(decide(4, tol, fleet, now=NOW).assignment()) == {"east", "south", "west"}
    # from the profile: property and annotation
    ci = ClusterInfo.from_profile({"metadata": {"name": "x", "annotations": {"fleetplane.io/taints": "a=b:NoSchedule"}},
                                   "status": {"properties": [{"name": "fleetplane.io/taints", "value": "c:NoExecute,bad"}]}})
    assert set(map(str, ci.taints)) == {"a=b:NoSchedule", "c:NoExecute"} and ci.notes


def test_capacity_filter_strategy_and_explanation():
    def prof(name, cpu, pods="110"):
        return ClusterInfo.from_profile({
            "metadata": {"name": name}, "status": {
                "conditions": [{"type": "ControlPlaneHealthy", "status": "True", "reason": "Healthy",
                                "lastTransitionTime": "2020-01-01T00:00:00Z"}],
                "properties": [{"name": "resources.fleetplane.io/allocatable-cpu", "value": cpu},
                               {"name": "resources.fleetplane.io/allocatable-pods", "value": pods}]}})
    template = {"spec": {"containers": [{"name": "x", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]}}
    req = requests_of(template)
    assert req == {"cpu": 0.5, "memory": 2**30, "pods": 1.0}
    fleet = [prof("big", "8"), prof("small", "2"), prof("tiny", "0.2")]
    d = decide(3, None, fleet, requests=req, now=NOW)
    assert d.by_name()["tiny"].reason == "0/3 pods fit: insufficient cpu (0.2 spare, 0.5 per replica)"
    assert d.assignment() == {"big": 2, "small": 1}
    d = decide(20, parse_policy("strategy: Capacity"), fleet, requests=req, now=NOW)
    assert d.assignment() == {"big": 16, "small": 4}  # 16 and 4 fit: weights 16:4
    # beyond every estimate: stays where it runs, else by weight; nothing is dropped
    d = decide(24, parse_policy("strategy: Capacity"), fleet, {"big": 16, "small": 8}, requests=req, now=NOW)
    assert d.assignment() == {"big": 16, "small": 8} and d.placed == 24
    assert "over its estimated room" in d.by_name()["small"].note


def test_observed_limits_move_replicas_where_there_is_room():
    fleet = [c("east"), c("west")]
    lim = {"east": Limit(3, NOW - 1, "5 of 8 replicas unavailable for 60s")}
    d = decide(15, None, fleet, {"east": 8, "west": 7}, limits=lim, now=NOW)
    assert d.assignment() == {"east": 3, "west": 12}
    # nowhere else: the replicas stay (no loss), nothing thrashes
    both = {"east": Limit(3, NOW, "x"), "west": Limit(7, NOW, "y")}
    d = decide(15, None, fleet, {"east": 8, "west": 7}, limits=both, now=NOW)
    assert d.assignment() == {"east": 8, "west": 7} and d.placed == 15


def test_max_per_cluster_and_unplaced_reasons():
    d = decide(10, parse_policy("maxReplicasPerCluster: 3"), [c("a"), c("b")], now=NOW)
    assert d.assignment() == {"a": 3, "b": 3} and d.unplaced == 4
    assert d.reasons == ["a: at maxReplicasPerCluster (3)", "b: at maxReplicasPerCluster (3)"]
    assert d.message().startswith("4 of 10 replicas cannot be placed")


def test_rebalance_tolerance_keeps_a_valid_split():
    fleet = [c("a"), c("b"), c("c")]
    pol = parse_policy("rebalanceTolerance: 1")
    d = decide(9, pol, fleet, {"a": 4, "b": 3, "c": 2}, now=NOW)
    assert d.kept and d.assignment() == {"a": 4, "b": 3, "c": 2}
    d = decide(9, pol, fleet, {"a": 5, "b": 3, "c": 1}, now=NOW)
    assert not d.kept and d.assignment() == {"a": 3, "b": 3, "c": 3}


def test_duplicate_strategy():
    pol = parse_policy("replicasPerCluster: 2\nrequired: {labels: env=prod}", strategy_default="Duplicate")
    fleet = [c("a", labels={"env": "prod"}), c("b", labels={"env": "prod"}), c("d", labels={"env": "dev"})]
    d = decide(2, pol, fleet, now=NOW)
    assert d.assignment() == {"a": 2, "b": 2} and d.replicas == 4 and d.unplaced == 0


def test_gone_clusters_and_explain():
    d = decide(4, None, [c("a")], {"a": 2, "gone": 2}, now=NOW)
    assert d.assignment() == {"a": 4}
    assert d.by_name()["gone"].status == "Gone"
    text = "\n".join(d.explain())
    assert "gone     Gone" in text and "no longer in the fleet" in text


def test_prepared_reuse_and_refresh():
    fleet = [c("a"), c("b")]
    pol = parse_policy("strategy: Even")
    prep = Prepared(pol, fleet)
    assert decide(4, None, prepared=prep, now=NOW).assignment() == {"a": 2, "b": 2}
    prep.refresh(fleet + [c("c")])
    assert decide(3, None, prepared=prep, now=NOW).assignment() == {"a": 1, "b": 1, "c": 1}


# -- policy parsing -------------------------------------------------------------------------------


@pytest.mark.parametrize("text,fragment", [
    ("strategy: Random", "strategy: must be one of Even, Weighted, Capacity, not 'Random'"),
    ("strategy: Weighted", "weights: required by strategy Weighted"),
    ("weights: {a: 1}", "weights: only used by strategy Weighted"),
    ("required: {labels: 'env in ('}", "required.labels:"),
    ("required: {propertys: x}", "required.propertys: unknown field"),
    ("required: []", "an empty list of terms matches no cluster"),
    ("spread: [{maxSkew: 0}]", "spread[0].topologyKey: required"),
    ("spread: [{topologyKey: zone, maxSkew: 0}]", "spread[0].maxSkew: must be at least 1"),
    ("tolerations: [{key: a, operator: Exists, value: b}]", "value: must be empty when operator is Exists"),
    ("preferred: [{weight: 500, location: x}]", "preferred[0].weight: must be at most 100"),
    ("maxReplicasPerCluster: -1", "maxReplicasPerCluster: must be at least 0"),
    ("{{{", "not valid YAML"),
    ("- a\n- b", "must be a mapping of placement fields"),
    ("bogus: 1", "bogus: unknown field"),
])
def test_malformed_policies_say_what_is_wrong(text, fragment):
    with pytest.raises(PolicyError) as exc:
        parse_policy(text)
    assert fragment in str(exc.value), str(exc.value)


def test_policy_accepts_the_documented_forms():
    p = parse_policy("""
strategy: Weighted
weights: [{clusters: [a, b], weight: 2}, {labels: {matchLabels: {tier: big}}, weight: 3}]
required:
  - properties: {location: us-east-1}
  - properties: [{name: nodes, operator: Gt, values: ["3"]}]
preferred: [{weight: 10, preference: {labels: 'env=prod'}}]
spread: [topology.kubernetes.io/zone]
tolerations: [{operator: Exists}]
maxReplicasPerCluster: 5
""")
    assert p.strategy == "Weighted" and len(p.weights) == 2 and len(p.required) == 2
    assert p.spread[0].topology_key == "topology.kubernetes.io/zone" and p.spread[0].max_skew == 1
    assert parse_policy("").strategy == "Even" and parse_policy(None).strategy == "Even"


# -- make-before-break ----------------------------------------------------------------------------


def test_plan_grows_first_and_shrinks_as_replacements_come_up():
    kids = {"east": ChildView(8, 8), "west": ChildView(7, 7)}
    target = {"east": 5, "west": 5, "north": 5}
    p = plan(target, kids, 15)
    assert p.replicas == {"north": 5, "east": 8, "west": 7} and p.waiting == {"east": 3, "west": 2}
    kids["north"] = ChildView(5, 2)
    p = plan(target, kids, 15)
    assert p.replicas == {"north": 5, "east": 6, "west": 7} and p.waiting == {"east": 1, "west": 2}
    kids["north"] = ChildView(5, 5)
    assert plan(target, kids, 15).replicas == {"north": 5, "east": 5, "west": 5}


def test_plan_never_removes_serving_replicas_without_replacements():
    kids = {"east": ChildView(8, 8), "west": ChildView(7, 7)}
    p = plan({}, kids, 15)  # nowhere to go
    assert p.replicas == {"east": 8, "west": 7} and not p.delete
    # unavailable replicas are free to go; a parent scale-down is immediate
    kids = {"east": ChildView(8, 3), "west": ChildView(7, 7)}
    assert plan({"east": 3, "west": 12}, kids, 15).replicas == {"east": 3, "west": 12}
    assert plan({"east": 2, "west": 2}, {"east": ChildView(8, 8), "west": ChildView(7, 7)}, 4).replicas == \
        {"east": 2, "west": 2}
    # a leaving cluster's child is deleted once the rest carry the load
    p = plan({"west": 15}, {"east": ChildView(8, 8), "west": ChildView(15, 15)}, 15)
    assert p.delete == {"east"} and p.settled
    # scale to zero keeps the children (at 0) where they are
    p = plan({"east": 0, "west": 0}, {"east": ChildView(8, 8), "west": ChildView(7, 7)}, 0)
    assert p.replicas == {"east": 0, "west": 0} and not p.delete
    # an old child still being deleted blocks its cluster's new one
    p = plan({"east": 3}, {"east": ChildView(3, 0, deleting=True)}, 3)
    assert p.blocked == {"east"} and "east" not in p.replicas


def test_plan_exhaustive_small_grid():
    """No plan ever lets available replicas drop below min(requested, available now)."""
    for e, w, ae, aw, te, tw, tn in itertools.product(range(0, 4), range(0, 4), range(0, 4), range(0, 4),
                                                      range(0, 4), range(0, 4), range(0, 3)):
        if ae > e or aw > w:
            continue
        kids = {"east": ChildView(e, ae), "west": ChildView(w, aw)}
        target = {k: v for k, v in {"east": te, "west": tw, "north": tn}.items() if v}
        req = te + tw + tn
        p = plan(target, kids, req)
        before = ae + aw
        # replicas removed from a child remove its unavailable ones first
        after = 0
        for k, v in kids.items():
            new = p.replicas.get(k, 0) if k not in p.delete else 0
            removed = v.spec_replicas - new
            after += v.available - max(0, removed - (v.spec_replicas - v.available)) if removed > 0 else v.available
        assert after >= min(req, before), (kids, target, p)


# -- status aggregation ---------------------------------------------------------------------------


def child(spec, ready, avail=None, og=1, gen=1, conds=None):
    avail = ready if avail is None else avail
    return {"metadata": {"generation": gen}, "spec": {"replicas": spec},
            "status": {"observedGeneration": og, "replicas": spec, "updatedReplicas": spec, "readyReplicas": ready,
                       "availableReplicas": avail, "unavailableReplicas": spec - avail,
                       "conditions": conds if conds is not None else [
                           {"type": "Available", "status": "True" if avail >= spec else "False",
                            "reason": "MinimumReplicasAvailable" if avail >= spec else "MinimumReplicasUnavailable",
                            "message": "m"}]}}


def test_aggregate_sums_and_conditions():
    kids = {"cluster-1": child(6, 1), "cluster-2": child(9, 7)}
    s = aggregate(generation=3, requested=15, children=kids, target={"cluster-1": 6, "cluster-2": 9}, observed=True,
                  prev=None, problems=[], placement=("True", "Placed", "ok"))
    assert (s["replicas"], s["readyReplicas"], s["availableReplicas"], s["unavailableReplicas"]) == (15, 8, 8, 7)
    assert s["observedGeneration"] == 3
    conds = {c["type"]: c for c in s["conditions"]}
    assert conds["Available"]["status"] == "False" and "cluster-1" in conds["Available"]["message"]
    assert conds["Progressing"]["reason"] == "ReplicaSetUpdated" and "cluster-1 1/6" in conds["Progressing"]["message"]
    kids = {"cluster-1": child(6, 6), "cluster-2": child(9, 9)}
    s2 = aggregate(generation=3, requested=15, children=kids, target={"cluster-1": 6, "cluster-2": 9}, observed=True,
                   prev=s, problems=[], placement=("True", "Placed", "ok"))
    conds2 = {c["type"]: c for c in s2["conditions"]}
    assert conds2["Available"]["status"] == "True" and conds2["Progressing"]["reason"] == "NewReplicaSetAvailable"
    # times move only on change
    assert conds2["Placement"]["lastTransitionTime"] == conds["Placement"]["lastTransitionTime"]
    # not observed: the previous observedGeneration stays
    s3 = aggregate(generation=4, requested=15, children=kids, target={}, observed=False, prev=s2, problems=[],
                   placement=("True", "Placed", "ok"))
    assert s3["observedGeneration"] == 3
    # deadline exceeded in one cluster, failures named
    bad = child(9, 2, conds=[{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                              "message": "web-abc has timed out progressing."},
                             {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
                              "message": "pods \"x\" is forbidden"}])
    s4 = aggregate(generation=4, requested=15, children={"c1": child(6, 6), "c2": bad}, target={"c1": 6, "c2": 9},
                   observed=True, prev=None, problems=[("Unschedulable", "c3: 3 of 3 unavailable")],
                   placement=("False", "Unschedulable", "c3"))
    conds4 = {c["type"]: c for c in s4["conditions"]}
    assert conds4["Progressing"]["status"] == "False" and "c2: web-abc has timed out" in conds4["Progressing"]["message"]
    assert conds4["ReplicaFailure"]["reason"] == "Unschedulable"
    assert "c2: pods" in conds4["ReplicaFailure"]["message"] and "c3: 3 of 3" in conds4["ReplicaFailure"]["message"]


def test_bench_meets_its_goal_shape():
    r = bench_run(clusters=200, decisions=30, replicas=100)
    assert r["eligible"] > 0 and r["steady"]["cpu_p99_ms"] > 0 and r["cold"]["p99_ms"] > 0
