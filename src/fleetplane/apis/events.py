"""The events group (``events.k8s.io/v1``): the newer Event shape, printed as kube prints it
(converted to the core Event, with the core Event's columns)."""

from __future__ import annotations

from ..registry.printers import Clock, Printer
from ..registry.types import META_FIELDS, ResourceType, field_getter
from .core.base import DEFINITIONS as CORE_DEFINITIONS
from .core.base import CoreStrategy
from .core.event import event_cells, event_columns

EVENTS_V1_FIELDS = dict(META_FIELDS) | {
    f"regarding.{f}": field_getter("regarding", f)
    for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
} | {"reason": field_getter("reason"), "reportingController": field_getter("reportingController"),
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
                     openapi_definition="io.k8s.api.events.v1.Event", protobuf="k8s.io.api.events.v1.Event"),
    ]
