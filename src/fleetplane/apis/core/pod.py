"""core/v1 Pods (served by a simulated physical cluster): defaults and admission defaults,
status Pending with its QoS class, a mostly immutable spec, binding by an update of
``spec.nodeName`` (which also sets ``PodScheduled=True``, as kube's ``pods/binding`` does)."""

from __future__ import annotations

from typing import Any

from ...apimachinery import errors as e
from ...apimachinery.errors import FieldError
from ...apimachinery.metatime import now_rfc3339
from ...apimachinery.quantity import QuantityError
from ...registry import printers as pr
from ...registry.printers import AGE, NAME, Clock, Column, Printer
from ...registry.types import META_FIELDS, ResourceType, Strategy, bool_field_getter, field_getter
from ...registry.validation import validate_object_meta
from .base import DEFINITIONS, PROTOBUF
from .podspec import (
    canonicalize_resources,
    default_pod_spec,
    qos_class,
    requests_from_limits,
    validate_pod_spec,
)

POD_UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)


def _pod_condition(ctype: str, status: str, reason: str = "", message: str = "") -> dict:
    c: dict[str, Any] = {"type": ctype, "status": status, "lastProbeTime": None, "lastTransitionTime": now_rfc3339()}
    if reason:
        c["reason"] = reason
    if message:
        c["message"] = message
    return c


class PodStrategy(Strategy):
    """core/v1 Pod: defaults and admission defaults, status Pending, mostly immutable spec."""

    tracks_generation = False
    allow_unconditional_update = True
    status_subresource = True
    returns_deleted_object = True

    def canonicalize(self, obj: dict) -> None:
        canonicalize_resources(obj.get("spec"), "Pod", "v1")

    def default(self, obj: dict) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        default_pod_spec(spec)
        requests_from_limits(spec)
        spec.setdefault("enableServiceLinks", True)

    def grace_period(self, obj: dict, options: dict) -> int | None:
        """The request's gracePeriodSeconds, else the Pod's terminationGracePeriodSeconds; 0 for a
        Pod not scheduled or already finished (nothing runs it); negative means 1, as kube."""
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        period = options.get("gracePeriodSeconds")
        if period is None:
            period = spec.get("terminationGracePeriodSeconds") or 0
        if not spec.get("nodeName") or status.get("phase") in ("Failed", "Succeeded"):
            period = 0
        return 1 if period < 0 else int(period)

    def prepare_for_create(self, obj: dict) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        # serviceAccountName, priority and tolerations come from admission (pipeline/admission/pods.py)
        status: dict[str, Any] = {"phase": "Pending"}
        try:
            status["qosClass"] = qos_class(spec)
        except QuantityError:
            pass
        if spec.get("schedulingGates"):
            status["conditions"] = [_pod_condition("PodScheduled", "False", "SchedulingGated",
                                                   "Scheduling is blocked due to non-empty scheduling gates")]
        obj["status"] = status

    def prepare_for_update(self, obj: dict, old: dict) -> None:
        super().prepare_for_update(obj, old)
        new_spec, old_spec = obj.get("spec"), old.get("spec") or {}
        if not isinstance(new_spec, dict):
            return
        # fields admission set on create stay (a PUT from an older copy need not repeat them)
        for f in ("serviceAccountName", "serviceAccount", "priority", "preemptionPolicy", "enableServiceLinks"):
            if f not in new_spec and f in old_spec:
                new_spec[f] = old_spec[f]
        if new_spec.get("nodeName") and not old_spec.get("nodeName"):
            # binding: the scheduler's assignment, recorded with PodScheduled=True (as pods/binding does)
            status = dict(obj.get("status") or {})
            conds = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
            conds.append(_pod_condition("PodScheduled", "True"))
            status["conditions"] = conds
            status.pop("nominatedNodeName", None)
            obj["status"] = status

    def prepare_for_status_update(self, obj: dict, old: dict) -> dict:
        new = dict(obj)
        new["metadata"] = dict(obj.get("metadata") or {})
        new["spec"] = old.get("spec")
        for f in ("ownerReferences",):
            if f in old["metadata"]:
                new["metadata"][f] = old["metadata"][f]
            else:
                new["metadata"].pop(f, None)
        return new

    def validate(self, obj: dict) -> list[FieldError]:
        errs = validate_object_meta(obj, namespaced=True)
        errs += validate_pod_spec(obj.get("spec"), "spec")
        return errs

    def validate_update(self, obj: dict, old: dict) -> list[FieldError]:
        errs = validate_object_meta(obj, namespaced=True)
        new_spec, old_spec = obj.get("spec") or {}, old.get("spec") or {}
        if new_spec == old_spec:
            return errs
        errs += validate_pod_spec(new_spec, "spec")
        if errs:
            return errs
        if not _pod_spec_update_allowed(new_spec, old_spec):
            errs.append(e.forbidden("spec", POD_UPDATE_FORBIDDEN))
        return errs


def _pod_spec_update_allowed(new: dict, old: dict) -> bool:
    """ValidatePodUpdate: images, activeDeadlineSeconds, tolerations additions, removing scheduling
    gates, and (fleetplane's binding) nodeName set once."""
    a, b = dict(new), dict(old)
    for key in ("containers", "initContainers"):
        na, ob = a.get(key) or [], b.get(key) or []
        if len(na) != len(ob):
            return False
        a[key] = [{k: v for k, v in c.items() if k != "image"} for c in na]
        b[key] = [{k: v for k, v in c.items() if k != "image"} for c in ob]
    if b.get("activeDeadlineSeconds") is None or (a.get("activeDeadlineSeconds") or 0) <= b.get("activeDeadlineSeconds", 0):
        a.pop("activeDeadlineSeconds", None)
        b.pop("activeDeadlineSeconds", None)
    old_tol = b.pop("tolerations", None) or []
    new_tol = a.pop("tolerations", None) or []
    if any(t not in new_tol for t in old_tol):
        return False
    old_gates = b.pop("schedulingGates", None) or []
    new_gates = a.pop("schedulingGates", None) or []
    if any(g not in old_gates for g in new_gates):
        return False
    if not b.get("nodeName"):
        a.pop("nodeName", None)
        b.pop("nodeName", None)
    tg_old = b.get("terminationGracePeriodSeconds")
    if isinstance(tg_old, int) and tg_old < 0 and a.get("terminationGracePeriodSeconds") == 1:
        a.pop("terminationGracePeriodSeconds")
        b.pop("terminationGracePeriodSeconds")
    return a == b


def _pod_ip(o: dict) -> str:
    ips = (o.get("status") or {}).get("podIPs")
    if isinstance(ips, list) and ips and isinstance(ips[0], dict):
        return str(ips[0].get("ip") or "")
    return ""


POD_FIELDS = dict(META_FIELDS) | {
    "spec.nodeName": field_getter("spec", "nodeName"),
    "spec.restartPolicy": field_getter("spec", "restartPolicy"),
    "spec.schedulerName": field_getter("spec", "schedulerName"),
    "spec.serviceAccountName": field_getter("spec", "serviceAccountName"),
    "spec.hostNetwork": bool_field_getter("spec", "hostNetwork"),
    "status.phase": field_getter("status", "phase"),
    "status.podIP": _pod_ip,
    "status.nominatedNodeName": field_getter("status", "nominatedNodeName"),
}


def _pod_cells(o: dict, clock: Clock) -> list:
    """printPod (Kubernetes 1.32), restartable init containers (sidecars) included."""
    spec, status = o.get("spec") or {}, o.get("status") or {}
    meta = pr.meta(o)
    containers: list = spec["containers"] if isinstance(spec.get("containers"), list) else []
    init_specs = [c for c in spec.get("initContainers") or [] if isinstance(c, dict)]
    restartable = {c.get("name") for c in init_specs if c.get("restartPolicy") == "Always"}
    total = len(containers) + len(restartable)
    ready = 0
    restarts = 0
    sidecar_restarts = 0
    last_restart: float = 0.0
    last_sidecar_restart: float = 0.0
    phase = pr.string(status.get("phase"))
    reason = pr.string(status.get("reason")) or phase
    conditions = status.get("conditions")
    for c in conditions if isinstance(conditions, list) else ():
        if isinstance(c, dict) and c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"

    def finished_at(cs: dict) -> float:
        return clock.epoch(pr.get(cs, "lastState", "terminated", "finishedAt")) or 0.0

    initializing = False
    init_statuses = [c for c in status.get("initContainerStatuses") or [] if isinstance(c, dict)]
    for i, cs in enumerate(init_statuses):
        restarts += pr.integer(cs.get("restartCount"))
        last_restart = max(last_restart, finished_at(cs))
        is_sidecar = cs.get("name") in restartable
        if is_sidecar:
            sidecar_restarts += pr.integer(cs.get("restartCount"))
            last_sidecar_restart = max(last_sidecar_restart, finished_at(cs))
        state = cs.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if isinstance(terminated, dict) and pr.integer(terminated.get("exitCode")) == 0:
            continue
        if is_sidecar and cs.get("started") is True:
            if cs.get("ready"):
                ready += 1
            continue
        if isinstance(terminated, dict):
            if not terminated.get("reason"):
                if pr.integer(terminated.get("signal")):
                    reason = f"Init:Signal:{pr.integer(terminated.get('signal'))}"
                else:
                    reason = f"Init:ExitCode:{pr.integer(terminated.get('exitCode'))}"
            else:
                reason = "Init:" + pr.string(terminated.get("reason"))
        elif isinstance(waiting, dict) and waiting.get("reason") and waiting.get("reason") != "PodInitializing":
            reason = "Init:" + pr.string(waiting.get("reason"))
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break

    initialized = (pr.condition(conditions, "Initialized") or {}).get("status") == "True"
    if not initializing or initialized:
        restarts = sidecar_restarts
        last_restart = last_sidecar_restart
        has_running = False
        statuses = [c for c in status.get("containerStatuses") or [] if isinstance(c, dict)]
        for cs in reversed(statuses):
            restarts += pr.integer(cs.get("restartCount"))
            last_restart = max(last_restart, finished_at(cs))
            state = cs.get("state") or {}
            terminated, waiting = state.get("terminated"), state.get("waiting")
            if isinstance(waiting, dict) and waiting.get("reason"):
                reason = pr.string(waiting.get("reason"))
            elif isinstance(terminated, dict) and terminated.get("reason"):
                reason = pr.string(terminated.get("reason"))
            elif isinstance(terminated, dict):
                if pr.integer(terminated.get("signal")):
                    reason = f"Signal:{pr.integer(terminated.get('signal'))}"
                else:
                    reason = f"ExitCode:{pr.integer(terminated.get('exitCode'))}"
            elif cs.get("ready") and isinstance(state.get("running"), dict):
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            reason = "Running" if (pr.condition(conditions, "Ready") or {}).get("status") == "True" else "NotReady"

    if meta.get("deletionTimestamp") and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif meta.get("deletionTimestamp") and phase not in ("Failed", "Succeeded"):
        reason = "Terminating"

    restarts_str = str(restarts)
    if restarts and last_restart:
        restarts_str = f"{restarts} ({clock.elapsed(last_restart)} ago)"

    ips = status.get("podIPs")
    pod_ip = pr.string(ips[0].get("ip")) if isinstance(ips, list) and ips and isinstance(ips[0], dict) else ""
    gates = spec.get("readinessGates")
    readiness = "<none>"
    if isinstance(gates, list) and gates:
        true_count = 0
        for g in gates:
            c = pr.condition(conditions, pr.get(g, "conditionType"))
            if c is not None and c.get("status") == "True":
                true_count += 1
        readiness = f"{true_count}/{len(gates)}"
    return [meta.get("name"), f"{ready}/{total}", reason, restarts_str, clock.since(meta.get("creationTimestamp")),
            pod_ip or "<none>", pr.string(spec.get("nodeName")) or "<none>",
            pr.string(status.get("nominatedNodeName")) or "<none>", readiness]


def _pod_conditions(o: dict) -> list | None:
    phase = pr.get(o, "status", "phase")
    if phase == "Succeeded":
        return [{"type": "Completed", "status": "True", "reason": "Succeeded", "message": "The pod has completed successfully."}]
    if phase == "Failed":
        return [{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]
    return None


def resource_types() -> list[ResourceType]:
    return [
        ResourceType("", "v1", "Pod", "pods", "pod", True, PodStrategy(), short_names=("po",), categories=("all",),
                     subresources=("status",), field_selectors=POD_FIELDS,
                     printer=Printer((
                         NAME,
                         Column("Ready", description="The aggregate readiness state of this pod for accepting traffic."),
                         Column("Status", description="The aggregate status of the containers in this pod."),
                         Column("Restarts", description="The number of times the containers in this pod have been "
                                                        "restarted and when the last container in this pod has restarted."),
                         AGE,
                         Column("IP", priority=1, description=(DEFINITIONS + "PodStatus", "podIP")),
                         Column("Node", priority=1, description=(DEFINITIONS + "PodSpec", "nodeName")),
                         Column("Nominated Node", priority=1, description=(DEFINITIONS + "PodStatus", "nominatedNodeName")),
                         Column("Readiness Gates", priority=1, description=(DEFINITIONS + "PodSpec", "readinessGates")),
                     ), _pod_cells, _pod_conditions),
                     openapi_definition=DEFINITIONS + "Pod", protobuf=PROTOBUF + "Pod"),
    ]
