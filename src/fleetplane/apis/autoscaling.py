"""The autoscaling group as a simulated physical cluster serves it: HorizontalPodAutoscalers in
``autoscaling/v2`` (the storage and preferred version) and ``autoscaling/v1`` (what
``kubectl autoscale`` 1.28-1.32 creates; 1.33 tries v2 first and falls back to v1).

kube's defaults (``pkg/apis/autoscaling/v2/defaults.go``: minReplicas 1, a CPU Utilization
metric of 80 % when there are none, the behavior's missing fields from the default scale-up and
scale-down rules when a behavior is given), validation with kube's messages
(``pkg/apis/autoscaling/validation``: the scale target's kind and name, min/max, the metric
sources, the behavior's rules and policies), a status subresource, and kube's printer
(``NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE``, TARGETS as 1.32 prints them:
``cpu: 40%/80%``).

v1 objects are stored as v2 (one store, as kube's storage version), converted field by field as
kube's ``pkg/apis/autoscaling/v1/conversion.go`` does, cut down: ``targetCPUUtilizationPercentage``
is the CPU Utilization metric and ``currentCPUUtilizationPercentage`` its current value; what
v1 has no field for (other metrics, the behavior, conditions) rides in kube's
``autoscaling.alpha.kubernetes.io/*`` annotations, in their v2 JSON form (kube writes the metrics
in v1's own MetricSpec shape), so a v2 HPA read and written back through v1 keeps them.
"""

from __future__ import annotations

import json
from typing import Any, TypeGuard

import orjson

from ..apimachinery import errors as e
from ..apimachinery.errors import FieldError
from ..apimachinery.quantity import Quantity
from ..registry import printers as pr
from ..registry.printers import AGE, NAME, Clock, Column, Printer
from ..registry.types import ResourceType, StoredAs, Strategy
from ..registry.validation import validate_object_meta

V2 = "io.k8s.api.autoscaling.v2."
#: autoscaling.DefaultCPUUtilization
DEFAULT_CPU_UTILIZATION = 80
MAX_STABILIZATION_WINDOW_SECONDS = 3600
MAX_PERIOD_SECONDS = 1800
METRIC_SOURCE_TYPES = ["ContainerResource", "External", "Object", "Pods", "Resource"]
#: the metric source type -> its field
SOURCE_FIELDS = {"Object": "object", "External": "external", "Pods": "pods", "Resource": "resource",
                 "ContainerResource": "containerResource"}  # kube's order: only the first given is validated

#: v1's annotations for what it has no field for (kube's names)
METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS_ANNOTATION = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR_ANNOTATION = "autoscaling.alpha.kubernetes.io/behavior"
V1_ANNOTATIONS = (METRICS_ANNOTATION, CURRENT_METRICS_ANNOTATION, CONDITIONS_ANNOTATION, BEHAVIOR_ANNOTATION)


def default_scale_up_rules() -> dict[str, Any]:
    """defaultHPAScaleUpRules: no window, the larger of 4 Pods or 100 % every 15 s."""
    return {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
            "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                         {"type": "Percent", "value": 100, "periodSeconds": 15}]}


def default_scale_down_rules() -> dict[str, Any]:
    """defaultHPAScaleDownRules: the window is left unset (the controller's flag, 300 s), 100 % every 15 s."""
    return {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}


def cpu_metric(utilization: int) -> dict[str, Any]:
    return {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                         "averageUtilization": utilization}}}


def default_hpa(obj: dict[str, Any]) -> None:
    """SetDefaults_HorizontalPodAutoscaler (v2)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("minReplicas", 1)
    if not spec.get("metrics"):
        spec["metrics"] = [cpu_metric(DEFAULT_CPU_UTILIZATION)]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        for key, rules in (("scaleUp", default_scale_up_rules()), ("scaleDown", default_scale_down_rules())):
            given = behavior.get(key)
            if isinstance(given, dict):
                for k, v in given.items():
                    if v is not None:
                        rules[k] = v
            behavior[key] = rules


# -- validation -------------------------------------------------------------------------------------


def _int(v: Any) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def _path_segment(path: str, value: str) -> list[FieldError]:
    """IsValidPathSegmentName."""
    if value in (".", ".."):
        return [e.invalid(path, value, f"may not be '{value}'")]
    for bad in ("/", "%"):
        if bad in value:
            return [e.invalid(path, value, f"may not contain '{bad}'")]
    return []


def validate_cross_version_ref(ref: Any, path: str) -> list[FieldError]:
    """ValidateCrossVersionObjectReference."""
    ref = ref if isinstance(ref, dict) else {}
    errs: list[FieldError] = []
    for f in ("kind", "name"):
        value = ref.get(f) or ""
        errs += [e.required(f"{path}.{f}")] if not value else _path_segment(f"{path}.{f}", value)
    return errs


def _quantity_sign(v: Any) -> int:
    try:
        q = Quantity.parse(str(v))
    except Exception:  # noqa: BLE001 - the schema rejects what does not parse
        return 0
    return (q > Quantity.parse("0")) - (q < Quantity.parse("0"))


def _validate_target(target: Any, path: str) -> list[FieldError]:
    """validateMetricTarget."""
    t = target if isinstance(target, dict) else {}
    errs: list[FieldError] = []
    ttype = t.get("type") or ""
    if not ttype:
        errs.append(e.required(f"{path}.type", "must specify a metric target type"))
    if ttype not in ("Utilization", "Value", "AverageValue"):
        errs.append(e.invalid(f"{path}.type", ttype, "must be either Utilization, Value, or AverageValue"))
    for f in ("value", "averageValue"):
        if t.get(f) is not None and _quantity_sign(t[f]) != 1:
            errs.append(e.invalid(f"{path}.{f}", t[f], "must be positive"))
    au = t.get("averageUtilization")
    if au is not None and (not _int(au) or au < 1):
        errs.append(e.invalid(f"{path}.averageUtilization", au, "must be greater than 0"))
    return errs


def _validate_source(mtype: str, src: dict[str, Any], path: str) -> list[FieldError]:
    target: dict[str, Any] = src["target"] if isinstance(src.get("target"), dict) else {}
    errs: list[FieldError] = []
    if mtype in ("Resource", "ContainerResource"):
        if not src.get("name"):
            errs.append(e.required(f"{path}.name", "must specify a resource name"))
        if mtype == "ContainerResource" and not src.get("container"):
            errs.append(e.required(f"{path}.container", "must specify a container"))
        errs += _validate_target(target, f"{path}.target")
        if target.get("averageUtilization") is None and target.get("averageValue") is None:
            errs.append(e.required(f"{path}.target.averageUtilization", "must set either a target raw value or a target utilization"))
        if target.get("averageUtilization") is not None and target.get("averageValue") is not None:
            errs.append(e.forbidden(f"{path}.target.averageValue", "may not set both a target raw value and a target utilization"))
        return errs
    metric: dict[str, Any] = src["metric"] if isinstance(src.get("metric"), dict) else {}
    if not metric.get("name"):
        errs.append(e.required(f"{path}.metric.name", "must specify a metric name"))
    errs += _validate_target(target, f"{path}.target")
    if mtype == "Pods":
        if target.get("averageValue") is None:
            errs.append(e.required(f"{path}.target.averageValue", "must specify a positive target averageValue"))
    elif mtype == "Object":
        errs += validate_cross_version_ref(src.get("describedObject"), f"{path}.describedObject")
        if target.get("value") is None and target.get("averageValue") is None:
            errs.append(e.required(f"{path}.target.value", "must set either a target value or averageValue"))
    elif mtype == "External":
        if target.get("value") is None and target.get("averageValue") is None:
            errs.append(e.required(f"{path}.target.value", "must set either a target value for metric or a per-pod target"))
        if target.get("value") is not None and target.get("averageValue") is not None:
            errs.append(e.forbidden(f"{path}.target.value", "may not set both a target value for metric and a per-pod target"))
    return errs


def _validate_metric(spec: Any, path: str) -> list[FieldError]:
    """validateMetricSpec: a known type, and exactly the source of that type."""
    spec = spec if isinstance(spec, dict) else {}
    errs: list[FieldError] = []
    mtype = spec.get("type") or ""
    if not mtype:
        errs.append(e.required(f"{path}.type", "must specify a metric source type"))
    if mtype not in METRIC_SOURCE_TYPES:
        errs.append(e.not_supported(f"{path}.type", mtype, METRIC_SOURCE_TYPES))
    present = [f for f in SOURCE_FIELDS.values() if isinstance(spec.get(f), dict)]
    if present:
        errs += _validate_source(next(t for t, f in SOURCE_FIELDS.items() if f == present[0]), spec[present[0]],
                                 f"{path}.{present[0]}")
    expected = SOURCE_FIELDS.get(mtype)
    if expected is not None and expected not in present:
        errs.append(e.required(f"{path}.{expected}", "must populate information for the given metric source"))
    if len(present) != 1:
        errs += [e.forbidden(f"{path}.{f}", "must populate the given metric source only") for f in present if f != expected]
    return errs


def _validate_rules(rules: Any, path: str) -> list[FieldError]:
    """validateScalingRules and validateScalingPolicy."""
    if not isinstance(rules, dict):
        return []
    errs: list[FieldError] = []
    window = rules.get("stabilizationWindowSeconds")
    if _int(window) and window < 0:
        errs.append(e.invalid(f"{path}.stabilizationWindowSeconds", window, "must be greater than or equal to zero"))
    if _int(window) and window > MAX_STABILIZATION_WINDOW_SECONDS:
        errs.append(e.invalid(f"{path}.stabilizationWindowSeconds", window,
                              f"must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}"))
    select = rules.get("selectPolicy")
    if select is not None and select not in ("Disabled", "Max", "Min"):
        errs.append(e.not_supported(f"{path}.selectPolicy", select, ["Disabled", "Max", "Min"]))
    policies = rules.get("policies")
    if not policies:
        errs.append(e.required(f"{path}.policies", "must specify at least one Policy"))
    for i, p in enumerate(policies if isinstance(policies, list) else []):
        p = p if isinstance(p, dict) else {}
        ppath = f"{path}.policies[{i}]"
        if p.get("type") not in ("Pods", "Percent"):
            errs.append(e.not_supported(f"{ppath}.type", p.get("type") or "", ["Percent", "Pods"]))
        value, period = p.get("value", 0), p.get("periodSeconds", 0)
        if not _int(value) or value <= 0:
            errs.append(e.invalid(f"{ppath}.value", value, "must be greater than zero"))
        if not _int(period) or period <= 0:
            errs.append(e.invalid(f"{ppath}.periodSeconds", period, "must be greater than zero"))
        elif period > MAX_PERIOD_SECONDS:
            errs.append(e.invalid(f"{ppath}.periodSeconds", period, f"must be less than or equal to {MAX_PERIOD_SECONDS}"))
    return errs


def validate_hpa_spec(spec: Any) -> list[FieldError]:
    """validateHorizontalPodAutoscalerSpec (scale to zero off: minReplicas >= 1); as kube, the
    metrics are checked only once the target is valid, and the behavior once the metrics are."""
    if not isinstance(spec, dict):
        return [e.required("spec")]
    errs: list[FieldError] = []
    mn, mx = spec.get("minReplicas"), spec.get("maxReplicas", 0)
    if _int(mn) and mn < 1:
        errs.append(e.invalid("spec.minReplicas", mn, "must be greater than or equal to 1"))
    if not _int(mx) or mx < 1:
        errs.append(e.invalid("spec.maxReplicas", mx, "must be greater than 0"))
    if _int(mn) and _int(mx) and mx < mn:
        errs.append(e.invalid("spec.maxReplicas", mx, "must be greater than or equal to `minReplicas`"))
    ref_errs = validate_cross_version_ref(spec.get("scaleTargetRef"), "spec.scaleTargetRef")
    if ref_errs:
        return errs + ref_errs
    metric_errs = [err for i, m in enumerate(spec.get("metrics") or []) for err in _validate_metric(m, f"spec.metrics[{i}]")]
    if metric_errs:
        return errs + metric_errs
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        errs += _validate_rules(behavior.get("scaleUp"), "spec.behavior.scaleUp")
        errs += _validate_rules(behavior.get("scaleDown"), "spec.behavior.scaleDown")
    return errs


class HPAStrategy(Strategy):
    """autoscaling/v2 HorizontalPodAutoscalers: generation, status subresource, unconditional PUT."""

    tracks_generation = True
    allow_unconditional_update = True
    status_subresource = True

    def default(self, obj: dict[str, Any]) -> None:
        default_hpa(obj)

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_object_meta(obj, namespaced=True) + validate_hpa_spec(obj.get("spec"))


class HPAV1Strategy(HPAStrategy):
    """autoscaling/v1: defaulted and validated as the v2 object it converts to (kube validates the
    internal object, so the messages name v2's fields)."""

    def default(self, obj: dict[str, Any]) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            spec.setdefault("minReplicas", 1)

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        v2 = v1_to_v2(obj)
        return validate_object_meta(obj, namespaced=True) + validate_hpa_spec(v2.get("spec"))


# -- v1 <-> v2 ----------------------------------------------------------------------------------------


def _is_cpu_utilization(m: Any) -> bool:
    r = m.get("resource") if isinstance(m, dict) else None
    return (isinstance(m, dict) and m.get("type") == "Resource" and isinstance(r, dict) and r.get("name") == "cpu"
            and (r.get("target") or {}).get("type") == "Utilization")


def _annotations_out(meta: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in (meta.get("annotations") or {}).items() if k not in V1_ANNOTATIONS}


def _load(annotations: dict[str, Any], key: str) -> Any:
    try:
        return json.loads(annotations[key]) if key in annotations else None
    except (TypeError, ValueError):
        return None


def _copy(obj: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a JSON object (an orjson round trip is faster than copy.deepcopy, and every
    read of an HPA in the version it is not stored in makes one)."""
    copied: dict[str, Any] = orjson.loads(orjson.dumps(obj))
    return copied


def v1_to_v2(obj: dict[str, Any]) -> dict[str, Any]:
    """An autoscaling/v1 HPA as the v2 object it is stored as (a new dict)."""
    out = _copy(obj)
    out["apiVersion"] = "autoscaling/v2"
    meta = out.setdefault("metadata", {})
    annotations = dict(meta.get("annotations") or {})
    rest = _annotations_out(meta)
    if rest:
        meta["annotations"] = rest
    else:
        meta.pop("annotations", None)
    spec = out.get("spec")
    if isinstance(spec, dict):
        cpu = spec.pop("targetCPUUtilizationPercentage", None)
        metrics = [m for m in (_load(annotations, METRICS_ANNOTATION) or []) if not _is_cpu_utilization(m)]
        if cpu is not None:
            metrics.insert(0, cpu_metric(cpu))
        if metrics:
            spec["metrics"] = metrics
        behavior = _load(annotations, BEHAVIOR_ANNOTATION)
        if behavior:
            spec["behavior"] = behavior
    status = out.get("status")
    if isinstance(status, dict):
        current = status.pop("currentCPUUtilizationPercentage", None)
        metrics = [m for m in (_load(annotations, CURRENT_METRICS_ANNOTATION) or []) if not _is_cpu_utilization(m)]
        if current is not None:
            metrics.insert(0, {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": current}}})
        if metrics:
            status["currentMetrics"] = metrics
        conditions = _load(annotations, CONDITIONS_ANNOTATION)
        if conditions:
            status["conditions"] = conditions
    default_hpa(out)  # stored v2 is read with v2's defaults, as kube decodes it
    return out


def v2_to_v1(obj: dict[str, Any]) -> dict[str, Any]:
    """A stored v2 HPA as autoscaling/v1 shows it (a new dict)."""
    out = _copy(obj)
    out["apiVersion"] = "autoscaling/v1"
    meta = out.setdefault("metadata", {})
    annotations = _annotations_out(meta)
    spec = out.get("spec")
    if isinstance(spec, dict):
        metrics = spec.pop("metrics", None) or []
        cpu = next((m for m in metrics if _is_cpu_utilization(m)), None)
        if cpu is not None and cpu["resource"]["target"].get("averageUtilization") is not None:
            spec["targetCPUUtilizationPercentage"] = cpu["resource"]["target"]["averageUtilization"]
        others = [m for m in metrics if m is not cpu]
        if others:
            annotations[METRICS_ANNOTATION] = json.dumps(others, separators=(",", ":"))
        behavior = spec.pop("behavior", None)
        if behavior:
            annotations[BEHAVIOR_ANNOTATION] = json.dumps(behavior, separators=(",", ":"))
    status = out.get("status")
    if isinstance(status, dict):
        current = status.pop("currentMetrics", None) or []
        cpu = next((m for m in current if m.get("type") == "Resource" and (m.get("resource") or {}).get("name") == "cpu"), None)
        if cpu is not None and (cpu["resource"].get("current") or {}).get("averageUtilization") is not None:
            status["currentCPUUtilizationPercentage"] = cpu["resource"]["current"]["averageUtilization"]
        others = [m for m in current if m is not cpu]
        if others:
            annotations[CURRENT_METRICS_ANNOTATION] = json.dumps(others, separators=(",", ":"))
        conditions = status.pop("conditions", None)
        if conditions:
            annotations[CONDITIONS_ANNOTATION] = json.dumps(conditions, separators=(",", ":"))
        status.setdefault("currentReplicas", 0)
        status.setdefault("desiredReplicas", 0)
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    return out


# -- printing ------------------------------------------------------------------------------------------


def _q(v: Any) -> str:
    try:
        return str(Quantity.parse(str(v)))
    except Exception:  # noqa: BLE001 - print what is there
        return str(v)


def format_metrics(specs: Any, statuses: Any) -> str:
    """formatHPAMetrics (kube 1.32): at most two, then ``+ N more...``."""
    specs = [s for s in specs if isinstance(s, dict)] if isinstance(specs, list) else []
    statuses = statuses if isinstance(statuses, list) else []
    if not specs:
        return "<none>"
    out: list[str] = []
    for i, spec in enumerate(specs):
        st = statuses[i] if i < len(statuses) and isinstance(statuses[i], dict) else {}
        mtype = spec.get("type")
        field = SOURCE_FIELDS.get(mtype or "")
        src = spec.get(field) if field else None
        if not isinstance(src, dict):
            out.append("<unknown type>")
            continue
        target = src.get("target") or {}
        cur = (st.get(field) or {}).get("current") if isinstance(st.get(field), dict) else None
        if mtype in ("Resource", "ContainerResource"):
            name = src.get("name") or ""
            if target.get("averageValue") is not None:
                current = _q(cur["averageValue"]) if cur and cur.get("averageValue") is not None else "<unknown>"
                out.append(f"{name}: {current}/{_q(target['averageValue'])}")
            else:
                current = f"{cur['averageUtilization']}%" if cur and cur.get("averageUtilization") is not None else "<unknown>"
                tgt = f"{target['averageUtilization']}%" if target.get("averageUtilization") is not None else "<auto>"
                out.append(f"{name}: {current}/{tgt}")
        elif mtype == "Pods":
            current = _q(cur["averageValue"]) if cur and cur.get("averageValue") is not None else "<unknown>"
            out.append(f"{current}/{_q(target.get('averageValue'))}")
        elif target.get("averageValue") is not None:  # Object, External
            current = _q(cur["averageValue"]) if cur and cur.get("averageValue") is not None else "<unknown>"
            out.append(f"{current}/{_q(target['averageValue'])} (avg)")
        else:
            current = _q(cur.get("value")) if cur else "<unknown>"
            out.append(f"{current}/{_q(target.get('value'))}")
    if len(out) > 2:
        return f"{', '.join(out[:2])} + {len(out) - 2} more..."
    return ", ".join(out)


def _hpa_cells(o: dict, clock: Clock) -> list:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    ref = spec.get("scaleTargetRef") or {}
    mn = spec.get("minReplicas")
    return [pr.meta(o).get("name"), f"{pr.string(ref.get('kind'))}/{pr.string(ref.get('name'))}",
            format_metrics(spec.get("metrics"), status.get("currentMetrics")),
            "<unset>" if mn is None else str(mn), pr.integer(spec.get("maxReplicas")),
            pr.integer(status.get("currentReplicas")), clock.since(pr.meta(o).get("creationTimestamp"))]


def _hpa_v1_cells(o: dict, clock: Clock) -> list:
    return _hpa_cells(v1_to_v2(o), clock)


def _printer(cells: Any) -> Printer:
    return Printer((
        NAME,
        Column("Reference", description=(V2 + "HorizontalPodAutoscalerSpec", "scaleTargetRef")),
        Column("Targets", description=(V2 + "HorizontalPodAutoscalerSpec", "metrics")),
        Column("MinPods", description=(V2 + "HorizontalPodAutoscalerSpec", "minReplicas")),
        Column("MaxPods", "integer", description=(V2 + "HorizontalPodAutoscalerSpec", "maxReplicas")),
        Column("Replicas", "integer", description=(V2 + "HorizontalPodAutoscalerStatus", "currentReplicas")),
        AGE,
    ), cells)


def resource_types() -> list[ResourceType]:
    return [
        # v1 first: known_type() keeps the last of a kind, and the hub prints imported HPAs as v2
        ResourceType("autoscaling", "v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers", "horizontalpodautoscaler",
                     True, HPAV1Strategy(), short_names=("hpa",), categories=("all",), subresources=("status",),
                     printer=_printer(_hpa_v1_cells), openapi_definition="io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler",
                     protobuf="k8s.io.api.autoscaling.v1.HorizontalPodAutoscaler", preferred=False,
                     stored_as=StoredAs("autoscaling", "horizontalpodautoscalers", "autoscaling/v2", v1_to_v2, v2_to_v1)),
        ResourceType("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", "horizontalpodautoscaler",
                     True, HPAStrategy(), short_names=("hpa",), categories=("all",), subresources=("status",),
                     printer=_printer(_hpa_cells), openapi_definition=V2 + "HorizontalPodAutoscaler",
                     protobuf="k8s.io.api.autoscaling.v2.HorizontalPodAutoscaler"),
    ]
