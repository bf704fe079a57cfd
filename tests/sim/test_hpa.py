"""HorizontalPodAutoscalers on a simulated cluster, driven with kubectl: ``kubectl autoscale``
(autoscaling/v1, as kubectl 1.28-1.32 creates it), kube's defaults, validation and columns, and the
controller scaling a Deployment on its Pods' simulated CPU utilisation, up at once and down after
the stabilisation window."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from ..harness import Kubectl, wait_for
from .conftest import Sim

CPU = "sim.fleetplane.io/cpu-utilization"


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    """A simulated cluster whose HPA controller syncs every second and stabilises scale-downs for 3 s."""
    s = Sim(tmp_path_factory.mktemp("sim"), name="sim", nodes=2, extra=[
        "--kubelet-delay", "0.2", "--hpa-sync-period", "1", "--hpa-downscale-stabilization", "3"]).start()
    yield s
    assert s.stop() == 0, s.logs()


@pytest.fixture
def kubectl(sim: Sim) -> Iterator[Kubectl]:
    ns = "t-" + uuid.uuid4().hex[:8]
    code, body = sim.json("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    assert code == 201, body
    yield Kubectl(sim.kubeconfig, namespace=ns)
    sim.json("DELETE", f"/api/v1/namespaces/{ns}")


def _cpu_patch(percent: int) -> str:
    return json.dumps({"spec": {"template": {"metadata": {"annotations": {CPU: str(percent)}}}}})


def _rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.strip().splitlines()]


def _cond(hpa: dict, ctype: str) -> dict:
    return next((c for c in hpa.get("status", {}).get("conditions") or [] if c["type"] == ctype), {})


def test_autoscale_defaults_columns_and_validation(kubectl: Kubectl):
    kubectl("create", "deployment", "web", "--image=nginx", "--replicas=1")
    out = kubectl("autoscale", "deployment", "web", "--min=2", "--max=5").out
    assert out.strip() == "horizontalpodautoscaler.autoscaling/web autoscaled"
    hpa = kubectl.get_json("hpa", "web")  # the preferred version
    assert hpa["apiVersion"] == "autoscaling/v2"
    spec = hpa["spec"]
    assert spec["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    assert (spec["minReplicas"], spec["maxReplicas"]) == (2, 5)
    assert spec["metrics"] == [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
    v1 = kubectl.get_json("horizontalpodautoscalers.v1.autoscaling", "web")
    assert v1["apiVersion"] == "autoscaling/v1" and v1["spec"]["targetCPUUtilizationPercentage"] == 80
    # the controller brings the Deployment up to minReplicas, with kube's Event
    wait_for(lambda: kubectl.get_json("deployment", "web")["spec"]["replicas"] == 2, 30, what="scaled to minReplicas")
    rows = _rows(kubectl("get", "hpa").out)
    assert rows[0] == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
    assert rows[1][:2] == ["web", "Deployment/web"] and rows[1][2:4] == ["cpu:", "<unknown>/80%"]
    assert rows[1][4:6] == ["2", "5"]
    wait_for(lambda: any(e["reason"] == "SuccessfulRescale" for e in
                         kubectl.get_json("events", "--field-selector", "involvedObject.name=web")["items"]), 20, what="rescale event")
    events = kubectl.get_json("events", "--field-selector", "reason=SuccessfulRescale")["items"]
    assert events[0]["message"] == "New size: 2; reason: Current number of replicas below Spec.MinReplicas"
    assert events[0]["source"]["component"] == "horizontal-pod-autoscaler"
    # no metrics yet: ScalingActive False, as kube without a metrics server
    hpa = wait_for(lambda: (h := kubectl.get_json("hpa", "web")) and _cond(h, "ScalingActive").get("status") == "False" and h,
                   20, what="ScalingActive False")
    assert _cond(hpa, "ScalingActive")["reason"] == "FailedGetResourceMetric"
    # validation, kube's messages
    manifest = """{"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "x"},
      "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "minReplicas": 3, "maxReplicas": 2,
               "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}}]}}"""
    res = kubectl("create", "-f", "-", stdin=manifest, check=False)
    assert res.code != 0
    assert "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`" in res.err
    assert "spec.metrics[0].resource.target.averageUtilization: Required value: must set either a target raw value or a target utilization" in res.err
    res = kubectl("create", "-f", "-", stdin=manifest.replace('"name": "web"', '"name": ""'), check=False)
    assert "spec.scaleTargetRef.name: Required value" in res.err


def test_scales_up_on_cpu_and_down_after_window(kubectl: Kubectl):
    kubectl("create", "deployment", "api", "--image=nginx", "--replicas=2")
    kubectl("set", "resources", "deployment", "api", "--requests=cpu=200m")
    kubectl("patch", "deployment", "api", "-p", _cpu_patch(50))
    kubectl("rollout", "status", "deployment/api", "--timeout=60s")
    kubectl("create", "-f", "-", stdin="""{"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
      "metadata": {"name": "api"}, "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"},
      "minReplicas": 1, "maxReplicas": 6, "metrics": [{"type": "Resource", "resource": {"name": "cpu",
      "target": {"type": "Utilization", "averageUtilization": 50}}}]}}""")
    # at target: steady, with the current metric in the status and the columns
    hpa = wait_for(lambda: (h := kubectl.get_json("hpa", "api")) and h.get("status", {}).get("currentMetrics") and h, 30,
                   what="current metrics")
    assert hpa["status"]["currentMetrics"] == [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 50, "averageValue": "100m"}}}]
    assert _cond(hpa, "ScalingActive")["reason"] == "ValidMetricFound"
    assert _rows(kubectl("get", "hpa", "api").out)[1][2:4] == ["cpu:", "50%/50%"]
    assert hpa["status"]["desiredReplicas"] == 2
    # 150 % on every pod: ceil(2 * 150 / 50) = 6
    kubectl("patch", "deployment", "api", "-p", _cpu_patch(150))
    wait_for(lambda: kubectl.get_json("deployment", "api")["spec"]["replicas"] == 6, 60, what="scaled up to 6")
    hpa = wait_for(lambda: (h := kubectl.get_json("hpa", "api")) and h["status"].get("currentReplicas") == 6 and h, 60,
                   what="status caught up")
    assert hpa["status"].get("lastScaleTime")
    assert _cond(hpa, "AbleToScale")["status"] == "True"
    # low again: scaled down to the minimum only after the (3 s) window, through ScaleDownStabilized
    kubectl("patch", "deployment", "api", "-p", _cpu_patch(5))
    wait_for(lambda: kubectl.get_json("deployment", "api")["spec"]["replicas"] == 1, 90, what="scaled down to 1")
    msgs = [e["message"] for e in kubectl.get_json("events", "--field-selector", "reason=SuccessfulRescale")["items"]]
    assert "New size: 6; reason: cpu resource utilization (percentage of request) above target" in msgs
    assert "New size: 1; reason: All metrics below target" in msgs
    kubectl("delete", "hpa", "api")
