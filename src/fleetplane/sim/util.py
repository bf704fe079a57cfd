"""Helpers the simulated controllers share: time, owner references, pod state, resource requests."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from ..registry.workloads import selector_matches

__all__ = ["selector_matches"]


def now() -> str:
    """metav1.Time: RFC 3339, whole seconds, UTC."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def now_micro() -> str:
    """metav1.MicroTime (Lease renewTime)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


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
