"""Helpers the simulated controllers share: time, owner references, pod state, resource requests."""

from __future__ import annotations

from ..apimachinery.metatime import micro_time as now_micro
from ..apimachinery.metatime import now_rfc3339 as now
from ..apimachinery.metatime import parse_time

__all__ = ["now", "now_micro", "parse_time"]


def meta(obj: dict) -> dict:
    return obj.get("metadata") or {}


def controller_ref(obj: dict) -> dict | None:
    for ref in meta(obj).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def owner_ref(owner: dict) -> dict:
    """metav1.NewControllerRef."""
    m = meta(owner)
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": m["name"], "uid": m["uid"],
            "controller": True, "blockOwnerDeletion": True}


def get_condition(status: dict | None, ctype: str) -> dict | None:
    for c in (status or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


# -- pods --------------------------------------------------------------------------------------------


def pod_is_terminal(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def pod_is_active(pod: dict) -> bool:
    """controller.IsPodActive: not terminal and not being deleted."""
    return not pod_is_terminal(pod) and not meta(pod).get("deletionTimestamp")


def pod_is_ready(pod: dict) -> bool:
    c = get_condition(pod.get("status"), "Ready")
    return c is not None and c.get("status") == "True"


def pod_is_available(pod: dict, min_ready_seconds: int, at: float) -> bool:
    """podutil.IsPodAvailable: ready for at least minReadySeconds."""
    c = get_condition(pod.get("status"), "Ready")
    if c is None or c.get("status") != "True":
        return False
    if not min_ready_seconds:
        return True
    since = parse_time(c.get("lastTransitionTime"))
    return since is not None and since + min_ready_seconds <= at
