"""The HorizontalPodAutoscaler controller (kube-controller-manager's ``pkg/controller/podautoscaler``),
on a simulated CPU metric.

There is no metrics server: a Pod's CPU utilisation (percent of its request) is its annotation
``sim.fleetplane.io/cpu-utilization: "<percent>"`` (put it on the target's pod template and every
Pod has it). Every sync period (kube's ``--horizontal-pod-autoscaler-sync-period``, 15 s; and at
once when an HPA is created or its spec changes) each HPA is synced as kube's ``reconcileAutoscaler``
does, simplified:

- the target's ``/scale`` subresource (any kind that serves one: Deployments, ReplicaSets, ...,
  found through discovery) gives the current replicas and the Pod selector;
- a target at 0 replicas is not scaled (ScalingActive False, ScalingDisabled); one outside
  [minReplicas, maxReplicas] is brought inside;
- else for each ``Resource cpu Utilization`` metric: the Ready Pods' average utilisation (integer
  percent, as kube truncates it); within kube's 10 % tolerance of the target the proposal is the
  current count, else ``ceil(ready pods with a metric * average / target)``; the largest proposal
  of all metrics wins. Other metric sources have no simulated metrics: ScalingActive False;
- stabilisation as kube's ``stabilizeRecommendationWithBehaviors``: the lowest proposal of the
  scale-up window (``behavior.scaleUp.stabilizationWindowSeconds``, default 0) and the highest of
  the scale-down window (``behavior.scaleDown.stabilizationWindowSeconds``, else the controller's
  downscale stabilisation, kube's 300 s) bound the change; an HPA first seen starts its history
  with the target's current count (kube's ``recordInitialRecommendation``);
- the behavior's rate policies (default: up by max(4 Pods, 100 %), down by 100 %) limit one sync's
  step (their ``periodSeconds`` are not tracked: each sync is one period), then min/max clamp;
- a new count is written to ``/scale``; Events ``SuccessfulRescale`` ("New size: N; reason: ...")
  or ``FailedRescale``/``FailedGetScale``/``FailedGetResourceMetric`` as kube's; status:
  currentReplicas, desiredReplicas, currentMetrics, lastScaleTime, observedGeneration and the
  AbleToScale, ScalingActive and ScalingLimited conditions with kube's reasons and messages.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any

from ..apimachinery.labels import LabelSelector
from ..apimachinery.quantity import Quantity
from ..kube.client import ApiError, Client, api_path
from ..kube.controller import Result, run_workers
from ..kube.events import EventRecorder
from ..kube.informer import EventHandler, Informer, object_key
from ..kube.workqueue import WorkQueue
from .util import meta, now, pod_is_active, pod_is_ready

log = logging.getLogger(__name__)

COMPONENT = "horizontal-pod-autoscaler"
CPU_ANNOTATION = "sim.fleetplane.io/cpu-utilization"
TOLERANCE = 0.1
CPU_METRIC_NAME = "cpu resource utilization (percentage of request)"


def pod_cpu_utilization(pod: dict) -> int | None:
    """The simulated utilisation of one Pod, or None when it reports none."""
    value = (meta(pod).get("annotations") or {}).get(CPU_ANNOTATION)
    try:
        return int(float(str(value).rstrip("%"))) if value is not None else None
    except ValueError:
        return None


def _cpu_request_millis(pod: dict) -> int:
    total = 0
    for c in (pod.get("spec") or {}).get("containers") or []:
        req = ((c.get("resources") or {}).get("requests") or {}).get("cpu")
        if req is not None:
            try:
                total += Quantity.parse(str(req)).milli_value()
            except Exception:  # noqa: BLE001 - a request that does not parse counts as none
                pass
    return total


def set_condition(conditions: list[dict], ctype: str, status: str, reason: str, message: str) -> list[dict]:
    """setCondition: lastTransitionTime moves only when the status does."""
    out = [c for c in conditions if c.get("type") != ctype]
    old = next((c for c in conditions if c.get("type") == ctype), None)
    since = old["lastTransitionTime"] if old and old.get("status") == status and old.get("lastTransitionTime") else now()
    out.append({"type": ctype, "status": status, "lastTransitionTime": since, "reason": reason, "message": message})
    order = {"AbleToScale": 0, "ScalingActive": 1, "ScalingLimited": 2}
    return sorted(out, key=lambda c: order.get(c.get("type") or "", 9))


def _limit(rules: dict | None, current: int, up: bool) -> int | None:
    """The furthest one sync may go (a scaling policy's bound), None for no bound; ``current`` for Disabled."""
    if not rules:
        return None
    policies = rules.get("policies") or []
    select = rules.get("selectPolicy") or "Max"
    if select == "Disabled":
        return current
    bounds = []
    for p in policies:
        value = int(p.get("value") or 0)
        if up:
            bounds.append(current + value if p.get("type") == "Pods" else math.ceil(current * (1 + value / 100)))
        else:
            bounds.append(current - value if p.get("type") == "Pods" else math.floor(current * (1 - value / 100)))
    if not bounds:
        return None
    # Max: the policy allowing the biggest change; Min: the smallest
    if up:
        return max(bounds) if select == "Max" else min(bounds)
    return max(0, min(bounds) if select == "Max" else max(bounds))


class _HPAHandler(EventHandler):
    def __init__(self, c: HPAController) -> None:
        self.c = c

    def on_add(self, obj: dict) -> None:
        self.c.queue.add(object_key(obj))

    def on_update(self, old: dict, new: dict) -> None:
        # the controller's own status writes do not resync it: the sync period does
        if meta(old).get("generation") != meta(new).get("generation"):
            self.c.queue.add(object_key(new))

    def on_delete(self, obj: dict) -> None:
        self.c.recommendations.pop(object_key(obj), None)


class HPAController:
    def __init__(self, kube: Client, hpas: Informer, pods: Informer, recorder: EventRecorder, *,
                 sync_period: float = 15.0, downscale_stabilization: float = 300.0, workers: int = 2) -> None:
        self.kube = kube
        self.hpas = hpas
        self.pods = pods
        self.recorder = recorder
        self.sync_period = sync_period
        self.downscale_stabilization = downscale_stabilization
        self.workers = workers
        self.queue = WorkQueue("horizontalpodautoscaler", base=0.05, cap=60.0)
        #: HPA key -> [(monotonic time, proposal)]: kube's recommendations for stabilisation
        self.recommendations: dict[Any, list[tuple[float, int]]] = {}
        self._resources: dict[str, tuple[float, dict[str, str]]] = {}
        hpas.add_handler(_HPAHandler(self))

    async def run(self) -> None:
        await run_workers(self.queue, self.sync, self.workers)

    def event(self, hpa: dict, etype: str, reason: str, message: str) -> None:
        ref = {**hpa, "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler"}
        self.recorder.event(ref, etype, reason, message, component=COMPONENT)

    async def _resource_for(self, api_version: str, kind: str) -> str | None:
        """The plural of ``kind`` in ``api_version`` if it serves ``/scale`` (discovery, cached a minute)."""
        cached = self._resources.get(api_version)
        if cached is None or time.monotonic() - cached[0] > 60:
            path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
            doc = await self.kube.get(path) or {}
            names = {r.get("name") for r in doc.get("resources") or []}
            kinds = {r["kind"]: r["name"] for r in doc.get("resources") or []
                     if "/" not in r.get("name", "/") and f"{r['name']}/scale" in names}
            cached = self._resources[api_version] = (time.monotonic(), kinds)
        return cached[1].get(kind)

    async def sync(self, key: Any) -> Result | None:
        hpa = self.hpas.get(key)
        if hpa is None:
            self.recommendations.pop(key, None)
            return None
        try:
            await self._reconcile(key, hpa)
        except ApiError as err:
            if err.status == 409:
                return Result(requeue=True)
            if err.status != 404:
                raise
        return Result(requeue_after=self.sync_period)

    async def _reconcile(self, key: Any, hpa: dict) -> None:
        spec, old_status = hpa.get("spec") or {}, hpa.get("status") or {}
        ns = meta(hpa).get("namespace") or ""
        status: dict[str, Any] = {"currentReplicas": int(old_status.get("currentReplicas") or 0),
                                  "desiredReplicas": int(old_status.get("desiredReplicas") or 0)}
        if old_status.get("lastScaleTime"):
            status["lastScaleTime"] = old_status["lastScaleTime"]
        if meta(hpa).get("generation") is not None:
            status["observedGeneration"] = meta(hpa)["generation"]
        conditions: list[dict] = list(old_status.get("conditions") or [])
        ref = spec.get("scaleTargetRef") or {}
        resource = await self._resource_for(ref.get("apiVersion") or "", ref.get("kind") or "")
        scale_path = api_path(ref.get("apiVersion") or "", resource or "", ns, ref.get("name") or "", "scale")
        scale, why = None, ""
        if resource is not None:
            try:
                scale = await self.kube.request("GET", scale_path)
            except ApiError as err:
                if err.status in (401, 403, 0):
                    raise
                why = err.message
        else:
            why = f'no matches for kind "{ref.get("kind")}" in group "{(ref.get("apiVersion") or "").rpartition("/")[0]}"'
        if scale is None:
            msg = f"the HPA controller was unable to get the target's current scale: {why}"
            self.event(hpa, "Warning", "FailedGetScale", why)
            conditions = set_condition(conditions, "AbleToScale", "False", "FailedGetScale", msg)
            await self._write_status(hpa, status, conditions)
            return
        current = int((scale.get("spec") or {}).get("replicas") or 0)
        # kube's recordInitialRecommendation: an HPA first seen recommends what the target has, so
        # a low first reading (Pods just started) cannot scale it down within the window
        self.recommendations.setdefault(key, [(time.monotonic(), current)])
        status["currentReplicas"] = int((scale.get("status") or {}).get("replicas") or 0)
        mn, mx = int(spec.get("minReplicas") or 1), int(spec.get("maxReplicas") or 1)
        metrics_status: list[dict] | None = None
        rescale_reason = ""
        stabilized = False
        if current == 0 and mn != 0:
            desired = 0
            conditions = set_condition(conditions, "ScalingActive", "False", "ScalingDisabled",
                                       "scaling is disabled since the replica count of the target is zero")
        elif current > mx:
            desired, rescale_reason = mx, "Current number of replicas above Spec.MaxReplicas"
        elif current < mn:
            desired, rescale_reason = mn, "Current number of replicas below Spec.MinReplicas"
        else:
            selector = LabelSelector.parse((scale.get("status") or {}).get("selector") or "")
            pods = [p for p in self.pods.list(ns) if pod_is_active(p) and selector.matches(meta(p).get("labels"))]
            proposal, metrics_status, failure = self._proposal(spec.get("metrics") or [], pods, current)
            if failure is not None:
                reason, message = failure
                self.event(hpa, "Warning", reason, message)
                conditions = set_condition(conditions, "ScalingActive", "False", reason,
                                           f"the HPA was unable to compute the replica count: {message}")
                status["desiredReplicas"] = current
                if metrics_status:
                    status["currentMetrics"] = metrics_status
                await self._write_status(hpa, status, conditions)
                return
            conditions = set_condition(conditions, "ScalingActive", "True", "ValidMetricFound",
                                       f"the HPA was able to successfully calculate a replica count from {CPU_METRIC_NAME}")
            desired, conditions, stabilized = self._normalize(key, spec, current, proposal, conditions)
            if desired > current:
                rescale_reason = f"{CPU_METRIC_NAME} above target"
            elif desired < current:
                rescale_reason = "All metrics below target"
        if metrics_status:
            status["currentMetrics"] = metrics_status
        status["desiredReplicas"] = desired
        if desired != current and rescale_reason:
            try:
                await self.kube.replace(scale_path, {**scale, "spec": {"replicas": desired}}, manager="kube-controller-manager")
            except ApiError as err:
                if err.status in (0, 409):
                    raise
                self.event(hpa, "Warning", "FailedRescale", f"New size: {desired}; reason: {rescale_reason}; error: {err.message}")
                conditions = set_condition(conditions, "AbleToScale", "False", "FailedUpdateScale",
                                           f"the HPA controller was unable to update the target scale: {err.message}")
                await self._write_status(hpa, status, conditions)
                return
            self.event(hpa, "Normal", "SuccessfulRescale", f"New size: {desired}; reason: {rescale_reason}")
            conditions = set_condition(conditions, "AbleToScale", "True", "SucceededRescale",
                                       f"the HPA controller was able to update the target scale to {desired}")
            status["lastScaleTime"] = now()
        elif not stabilized:
            conditions = set_condition(conditions, "AbleToScale", "True", "ReadyForNewScale",
                                       "recommended size matches current size")
        await self._write_status(hpa, status, conditions)

    def _proposal(self, metrics: list[dict], pods: list[dict], current: int
                  ) -> tuple[int, list[dict], tuple[str, str] | None]:
        """The replica count the metrics ask for, their current values, or why there is none."""
        proposal = 0
        statuses: list[dict] = []
        for m in metrics:
            res = m.get("resource") or {}
            target = res.get("target") or {}
            if m.get("type") != "Resource" or res.get("name") != "cpu" or target.get("type") != "Utilization":
                kind = m.get("type") or ""
                return 0, statuses, (f"FailedGet{kind}Metric",
                                     f"the simulated cluster serves no metrics for this {kind} metric (only cpu Utilization)")
            ready = [p for p in pods if pod_is_ready(p)]
            values = [(u, p) for p in ready if (u := pod_cpu_utilization(p)) is not None]
            if not values:
                return 0, statuses, ("FailedGetResourceMetric", "failed to get cpu utilization: unable to get metrics for "
                                     "resource cpu: no metrics returned from resource metrics API")
            utilization = sum(u for u, _ in values) // len(values)
            requests = [_cpu_request_millis(p) for _, p in values]
            current_value: dict[str, Any] = {"averageUtilization": utilization}
            if all(requests):
                usage = sum(u * r for (u, _), r in zip(values, requests, strict=True)) / 100 / len(values)
                current_value["averageValue"] = f"{math.ceil(usage)}m"
            statuses.append({"type": "Resource", "resource": {"name": "cpu", "current": current_value}})
            ratio = utilization / float(target.get("averageUtilization") or 80)
            proposal = max(proposal, current if abs(ratio - 1.0) <= TOLERANCE else math.ceil(ratio * len(values)))
        return proposal, statuses, None

    def _normalize(self, key: Any, spec: dict, current: int, proposal: int, conditions: list[dict]
                   ) -> tuple[int, list[dict], bool]:
        """Stabilisation windows, rate policies, then min/max (with the conditions saying which applied)."""
        behavior = spec.get("behavior") or {}
        up_rules = behavior.get("scaleUp") or {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                                               "policies": [{"type": "Pods", "value": 4}, {"type": "Percent", "value": 100}]}
        down_rules = behavior.get("scaleDown") or {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100}]}
        up_window = float(up_rules.get("stabilizationWindowSeconds") or 0)
        down_window = down_rules.get("stabilizationWindowSeconds")
        down_window = float(self.downscale_stabilization if down_window is None else down_window)
        t = time.monotonic()
        history = [(ts, r) for ts, r in self.recommendations.get(key, []) if t - ts <= max(up_window, down_window)]
        history.append((t, proposal))
        self.recommendations[key] = history
        up_rec = min([r for ts, r in history if t - ts <= up_window] + [proposal])
        down_rec = max([r for ts, r in history if t - ts <= down_window] + [proposal])
        desired = current
        if desired < up_rec:
            desired = up_rec
        if desired > down_rec:
            desired = down_rec
        stabilized = desired != proposal
        if stabilized:
            if proposal < current:
                conditions = set_condition(conditions, "AbleToScale", "True", "ScaleDownStabilized",
                                           "recent recommendations were higher than current one, applying the highest recent recommendation")
            else:
                conditions = set_condition(conditions, "AbleToScale", "True", "ScaleUpStabilized",
                                           "recent recommendations were lower than current one, applying the lowest recent recommendation")
        limited = ("False", "DesiredWithinRange", "the desired count is within the acceptable range")
        if desired > current:
            bound = _limit(up_rules, current, up=True)
            if bound is not None and desired > bound:
                desired, limited = bound, ("True", "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate")
        elif desired < current:
            bound = _limit(down_rules, current, up=False)
            if bound is not None and desired < bound:
                desired, limited = bound, ("True", "ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate")
        mn, mx = int(spec.get("minReplicas") or 1), int(spec.get("maxReplicas") or 1)
        if desired < mn:
            desired, limited = mn, ("True", "TooFewReplicas", "the desired replica count is less than the minimum replica count")
        elif desired > mx:
            desired, limited = mx, ("True", "TooManyReplicas", "the desired replica count is more than the maximum replica count")
        return desired, set_condition(conditions, "ScalingLimited", *limited), stabilized

    async def _write_status(self, hpa: dict, status: dict, conditions: list[dict]) -> None:
        status["conditions"] = conditions
        old = hpa.get("status") or {}
        if _same(old, status):
            return
        m = meta(hpa)
        body = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": m["name"], "namespace": m["namespace"], "resourceVersion": m["resourceVersion"]},
                "spec": hpa.get("spec"), "status": status}
        await self.kube.replace(api_path("autoscaling/v2", "horizontalpodautoscalers", m["namespace"], m["name"], "status"),
                                body, manager="kube-controller-manager")


def _same(old: dict, new: dict) -> bool:
    """Nothing to write (set_condition keeps the transition times of conditions that did not move)."""
    return old == new
