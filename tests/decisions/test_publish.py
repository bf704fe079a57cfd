"""What a parent's PlacementDecisions say, from the splitter's decision summary (pure functions):
the cases the end-to-end tests do not reach cheaply."""

from __future__ import annotations

import json
from typing import Any

from fleetplane.fleet.decisions.publish import KINDS, desired, kind_of, placements, slice_name

DEPLOYMENT = kind_of("Deployment")
assert DEPLOYMENT is not None


def parent(doc: dict | None, **annotations: str) -> dict[str, Any]:
    ann = dict(annotations)
    if doc is not None:
        ann["placement.fleetplane.io/decision"] = json.dumps(doc)
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "uid": "u1", "annotations": ann},
            "spec": {"replicas": 4}}


def child(replicas: int, deleting: bool = False) -> dict[str, Any]:
    md: dict[str, Any] = {"name": "x"}
    if deleting:
        md["deletionTimestamp"] = "2026-12-02T00:00:00Z"
    return {"metadata": md, "spec": {"replicas": replicas}}


def test_held_limited_and_kept_clusters_say_so() -> None:
    doc = {"replicas": 4, "placed": 4, "strategy": "Even", "shares": {"a": 2, "b": 2}, "kept": True,
           "held": {"a": "unhealthy since 10:00:00Z: ControlPlaneHealthy=False; its 2 replicas stay until 30s"},
           "limits": {"b": {"max": 2, "since": 1.0, "message": "1 of 3 replicas unavailable for 60s"}}}
    got = placements(DEPLOYMENT, parent(doc), doc, {})
    assert got["a"] == (2, "2 of 4 replicas: an even split over 2 clusters (strategy Even); held: unhealthy since "
                           "10:00:00Z: ControlPlaneHealthy=False; its 2 replicas stay until 30s; current split kept "
                           "(within the rebalance tolerance)")
    assert "limited to 2: 1 of 3 replicas unavailable for 60s" in got["b"][1]


def test_an_hpa_scaled_parent_runs_what_its_children_run() -> None:
    doc = {"replicas": 4, "placed": 4, "strategy": "Even", "shares": {"a": 2, "b": 2}}
    p = parent(doc, **{"autoscaling.fleetplane.io/hpa": "web"})
    assert {c: n for c, (n, _) in placements(DEPLOYMENT, p, doc, {"a": child(5), "b": child(1)}).items()} == {"a": 5, "b": 1}


def test_scaled_to_zero_stays_placed_where_its_children_are() -> None:
    doc = {"replicas": 0, "placed": 0, "strategy": "Even", "shares": {}, "filtered": {"c": "unhealthy"}}
    got = placements(DEPLOYMENT, parent(doc), doc, {"a": child(0), "c": child(0), "d": child(0, deleting=True)})
    assert got == {"a": (0, "0 replicas requested: kept placed here")}


def test_an_invalid_policy_keeps_the_children() -> None:
    doc = {"error": "invalid placement policy: strategy: must be one of Even, Weighted, Capacity, not 'Odd'"}
    got = placements(DEPLOYMENT, parent(doc), doc, {"a": child(3)})
    assert got == {"a": (3, f"kept where it runs: {doc['error']}")}


def test_no_summary_no_profile_or_not_a_parent_publishes_nothing() -> None:
    doc = {"replicas": 2, "placed": 2, "strategy": "Even", "shares": {"a": 1, "gone": 1}}
    profiles = {"a": ("fleet", "a")}
    assert desired(DEPLOYMENT, parent(None), {}, profiles) == []
    assert desired(DEPLOYMENT, None, {}, profiles) == []
    leaf = parent(doc)
    leaf["metadata"]["labels"] = {"kcp.dev/cluster": "a"}
    assert desired(DEPLOYMENT, leaf, {}, profiles) == []
    (pd,) = desired(DEPLOYMENT, parent(doc), {}, profiles)  # a cluster without a ClusterProfile is left out
    assert pd["decisions"] == [{"clusterProfileRef": {"name": "a", "namespace": "fleet"},
                                "reason": "1 of 2 replicas: an even split over 2 clusters (strategy Even)"}]
    empty = {"replicas": 2, "placed": 0, "strategy": "Even", "shares": {}, "unplaced": 2}
    (pd,) = desired(DEPLOYMENT, parent(empty), {}, profiles)  # placed nowhere: one slice, no decisions
    assert pd["decisions"] == [] and pd["metadata"]["annotations"]["placement.fleetplane.io/replicas"] == "{}"


def test_names_and_label_values_stay_valid() -> None:
    long = "w" * 250
    assert len(slice_name(DEPLOYMENT, long, 12)) <= 253 and slice_name(DEPLOYMENT, long, 12).endswith("-deployment-12")
    doc = {"replicas": 1, "placed": 1, "strategy": "Even", "shares": {"a": 1}}
    p = parent(doc)
    p["metadata"]["name"] = "x" * 70
    (pd,) = desired(DEPLOYMENT, p, {}, {"a": ("default", "a")})
    labels = pd["metadata"]["labels"]
    assert len(labels["multicluster.x-k8s.io/placement-key"]) == 16  # a hash: a label value is at most 63
    assert len(labels["multicluster.x-k8s.io/decision-key"]) == 16


def test_the_kinds_table() -> None:
    assert [k.kind for k in KINDS] == ["Deployment", "ClusterDaemonSet"]
    assert all(k.child_plural == "deployments" for k in KINDS)


def test_what_it_reads_is_what_the_splitter_writes() -> None:
    """The publisher names the splitter's annotation and label itself (it does not import the
    splitter's controller); they must stay the same."""
    from fleetplane.fleet.decisions import publish
    from fleetplane.fleet.splitter import controller

    assert publish.ANNOTATION_DECISION == controller.ANNOTATION_DECISION
    assert publish.LABEL_CLUSTER == controller.LABEL_CLUSTER
