"""The Service controller's pure parts: which clusters a Service goes to, and what a child carries."""

from __future__ import annotations

import json

from fleetplane.fleet.placement import ClusterInfo
from fleetplane.fleet.services.controller import child_spec, wanted_clusters


def _svc(selector: dict | None = None, policy: dict | None = None) -> dict:
    md: dict = {"name": "web", "namespace": "default"}
    if policy is not None:
        md["annotations"] = {"placement.fleetplane.io/policy": json.dumps(policy)}
    return {"metadata": md, "spec": {"selector": selector, "ports": [{"port": 80}]} if selector else {"ports": []}}


def _deploy(name: str, cluster: str | None, replicas: int, labels: dict) -> tuple[str, dict]:
    md: dict = {"name": name, "labels": {"kcp.dev/cluster": cluster} if cluster else {}}
    return "Deployment", {"metadata": md, "spec": {"replicas": replicas, "template": {"metadata": {"labels": labels}}}}


def _profile(name: str, labels: dict | None = None) -> ClusterInfo:
    return ClusterInfo.from_profile({
        "metadata": {"name": name, "namespace": "fleet", "labels": labels or {}, "creationTimestamp": "2024-01-01T00:00:00Z"},
        "status": {"conditions": [{"type": "ControlPlaneHealthy", "status": "True",
                                   "lastTransitionTime": "2024-01-01T00:00:00Z"}]}})


def test_follows_the_workloads_that_run_somewhere():
    work = [_deploy("web--a", "a", 2, {"app": "web"}), _deploy("web--b", "b", 0, {"app": "web"}),
            _deploy("web", None, 2, {"app": "web"}), _deploy("db--c", "c", 1, {"app": "db"}),
            ("DaemonSet", {"metadata": {"name": "agent--d", "labels": {"kcp.dev/cluster": "d"}},
                           "spec": {"template": {"metadata": {"labels": {"app": "web", "x": "y"}}}}})]
    p = wanted_clusters(_svc({"app": "web"}), work, [])
    assert p.problem is None and not p.by_policy
    assert p.clusters == {"a": "Deployment web--a runs 2 replicas there", "d": "DaemonSet agent--d runs there"}
    assert wanted_clusters(_svc({"app": "none"}), work, []).problem[0] == "NoClusters"
    assert wanted_clusters(_svc(None), work, []).problem[0] == "NoSelector"


def test_a_placement_policy_decides_instead():
    fleet = [_profile("a", {"region": "eu"}), _profile("b", {"region": "us"})]
    p = wanted_clusters(_svc({"app": "web"}, {"required": {"clusters": ["a"]}}), [], fleet, now=2e9)
    assert p.by_policy and list(p.clusters) == ["a"] and p.problem is None
    p = wanted_clusters(_svc({"app": "web"}, {"required": {"clusters": ["mars"]}}), [], fleet, now=2e9)
    assert p.problem is not None and p.problem[0] == "NoClusters"
    bad = _svc({"app": "web"})
    bad["metadata"]["annotations"] = {"placement.fleetplane.io/policy": "strategy: [nope"}
    assert wanted_clusters(bad, [], fleet).problem[0] == "InvalidPlacement"


def test_allocated_fields_are_never_copied_down():
    spec = {"type": "LoadBalancer", "clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"], "healthCheckNodePort": 31000,
            "ports": [{"port": 80, "nodePort": 30080}], "selector": {"app": "web"}}
    assert child_spec(spec) == {"type": "LoadBalancer", "ports": [{"port": 80}], "selector": {"app": "web"}}
    assert spec["ports"][0]["nodePort"] == 30080  # the parent's is untouched
