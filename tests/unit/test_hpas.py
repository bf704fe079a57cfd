"""The HPA pieces that are pure functions: the hub's split of bounds and aggregation of metrics, and
the simulated cluster's HPA strategy (validation messages as kube's, v1 <-> v2 conversion)."""

from __future__ import annotations

from fleetplane.apis.autoscaling import (
    HPAStrategy,
    HPAV1Strategy,
    default_hpa,
    format_metrics,
    v1_to_v2,
    v2_to_v1,
)
from fleetplane.fleet.hpas.controller import aggregate_metrics
from fleetplane.fleet.hpas.split import apportion, split_bounds


def test_bounds_split_like_the_replicas() -> None:
    assert split_bounds(2, 6, {"east": 1, "west": 1}) == {"east": (1, 3), "west": (1, 3)}
    assert split_bounds(4, 10, {"a": 3, "b": 1}) == {"a": (3, 7), "b": (1, 3)}
    # more clusters than minReplicas: every child keeps 1 (the sum is then above the parent's)
    assert split_bounds(2, 3, {"a": 1, "b": 1, "c": 1}) == {"a": (1, 1), "b": (1, 1), "c": (1, 1)}
    # more clusters than maxReplicas: each maximum is its minimum
    assert split_bounds(1, 2, {"a": 5, "b": 0, "c": 0}) == {"a": (1, 1), "b": (1, 1), "c": (1, 1)}
    assert sum(apportion(7, {"a": 2, "b": 2, "c": 2}).values()) == 7
    assert apportion(7, {"a": 0, "b": 0}) == {"a": 4, "b": 3}


def test_metrics_are_averaged_weighted_by_replicas() -> None:
    def child(replicas: int, util: int) -> dict:
        return {"status": {"currentReplicas": replicas, "currentMetrics": [
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": util}}}]}}

    assert aggregate_metrics([child(3, 100), child(1, 20)]) == [
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 80}}}]
    assert aggregate_metrics([{"status": {}}]) == []


def _hpa(**spec: object) -> dict:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 5, **spec}}


def test_validation_speaks_kube() -> None:
    s = HPAStrategy()
    errs = [str(e) for e in s.validate(_hpa(minReplicas=0, maxReplicas=0))]
    assert any("spec.minReplicas" in e and "must be greater than or equal to 1" in e for e in errs), errs
    assert any("spec.maxReplicas" in e and "must be greater than 0" in e for e in errs), errs
    obj = _hpa(metrics=[{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 0}}}])
    errs = [str(e) for e in s.validate(obj)]
    assert any("spec.metrics[0].resource.target.averageUtilization" in e and "must be greater than 0" in e for e in errs), errs
    obj["spec"]["metrics"][0]["pods"] = {"metric": {"name": "x"}, "target": {"type": "AverageValue", "averageValue": "1"}}
    errs = [str(e) for e in s.validate(obj)]
    assert any("spec.metrics[0].pods" in e and "must populate the given metric source only" in e for e in errs), errs
    obj = _hpa(behavior={"scaleDown": {"stabilizationWindowSeconds": 4000, "policies": []}})
    default_hpa(obj)
    assert obj["spec"]["behavior"]["scaleUp"]["policies"][0] == {"type": "Pods", "value": 4, "periodSeconds": 15}
    errs = [str(e) for e in s.validate(obj)]
    assert any("spec.behavior.scaleDown.stabilizationWindowSeconds" in e and "must be less than or equal to 3600" in e
               for e in errs), errs
    assert any("spec.behavior.scaleDown.policies" in e and "must specify at least one Policy" in e for e in errs), errs


def test_v1_and_v2_round_trip() -> None:
    v1 = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
          "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 2, "maxReplicas": 5,
                   "targetCPUUtilizationPercentage": 60},
          "status": {"currentReplicas": 2, "desiredReplicas": 2, "currentCPUUtilizationPercentage": 40}}
    v2 = v1_to_v2(v1)
    assert v2["spec"]["metrics"] == [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}]
    assert v2["status"]["currentMetrics"][0]["resource"]["current"] == {"averageUtilization": 40}
    assert format_metrics(v2["spec"]["metrics"], v2["status"]["currentMetrics"]) == "cpu: 40%/60%"
    assert v2_to_v1(v2) == v1
    # what v1 has no field for rides in annotations and comes back
    v2["spec"]["behavior"] = {"scaleDown": {"stabilizationWindowSeconds": 10}}
    v2["spec"]["metrics"].append({"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "10"}}})
    back = v1_to_v2(v2_to_v1(v2))
    default_hpa(v2)  # stored v2 is read with v2's defaults
    assert back["spec"]["behavior"] == v2["spec"]["behavior"] and back["spec"]["metrics"] == v2["spec"]["metrics"]
    assert not HPAV1Strategy().validate(v1 | {"metadata": {"name": "web", "namespace": "default"}})
