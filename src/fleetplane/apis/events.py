"""The events group (``events.k8s.io/v1``): the newer Event shape, printed as kube prints it
(converted to the core Event, with the core Event's columns). As in kube, it cohabits with core/v1
Events: one store, converted field by field both ways (pkg/apis/events/v1/conversion.go), so an
Event written through either API is seen through both."""

from __future__ import annotations

from typing import Any

from ..registry.printers import Clock, Printer
from ..registry.types import META_FIELDS, ResourceType, StoredAs, field_getter
from .core.base import DEFINITIONS as CORE_DEFINITIONS
from .core.base import CoreStrategy
from .core.event import event_cells, event_columns

#: events.k8s.io/v1 field -> core/v1 field (the rest have one name in both)
V1_TO_CORE = {"regarding": "involvedObject", "note": "message", "reportingController": "reportingComponent",
              "deprecatedSource": "source", "deprecatedFirstTimestamp": "firstTimestamp",
              "deprecatedLastTimestamp": "lastTimestamp", "deprecatedCount": "count"}
CORE_TO_V1 = {core: v1 for v1, core in V1_TO_CORE.items()}


def to_core(obj: dict[str, Any]) -> dict[str, Any]:
    """An events.k8s.io/v1 Event as the core/v1 Event it is stored as (a new dict)."""
    out = {V1_TO_CORE.get(k, k): v for k, v in obj.items()}
    out["apiVersion"] = "v1"
    out.setdefault("involvedObject", {})  # a struct in core/v1, always present
    return out


def from_core(obj: dict[str, Any]) -> dict[str, Any]:
    """A stored core/v1 Event as events.k8s.io/v1 shows it (a new dict; empty optional fields omitted)."""
    out = {CORE_TO_V1.get(k, k): v for k, v in obj.items() if not (k in CORE_TO_V1 and v in (None, {}, "", 0))}
    out["apiVersion"] = "events.k8s.io/v1"
    return out


# Field selectors read the stored (core) form.
EVENTS_V1_FIELDS = dict(META_FIELDS) | {
    f"regarding.{f}": field_getter("involvedObject", f)
    for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
} | {"reason": field_getter("reason"), "reportingController": field_getter("reportingComponent"),
     "type": field_getter("type")}


def _events_v1_cells(o: dict, clock: Clock) -> list:
    # events.k8s.io/v1 converted to the internal (core) Event, as kube prints it
    return event_cells(o, clock, involved=o.get("regarding"), message=o.get("note"),
                       first=o.get("deprecatedFirstTimestamp"), last=o.get("deprecatedLastTimestamp"),
                       count=o.get("deprecatedCount"), source=o.get("deprecatedSource"))


def resource_types() -> list[ResourceType]:
    return [
        ResourceType("events.k8s.io", "v1", "Event", "events", "event", True, CoreStrategy(),
                     short_names=("ev",), field_selectors=EVENTS_V1_FIELDS,
                     printer=Printer(tuple(event_columns(CORE_DEFINITIONS + "Event")), _events_v1_cells),
                     openapi_definition="io.k8s.api.events.v1.Event", protobuf="k8s.io.api.events.v1.Event",
                     stored_as=StoredAs("", "events", "v1", to_core, from_core)),
    ]
