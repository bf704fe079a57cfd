"""core/v1 Events, and the Event printer events.k8s.io/v1 shares (kube prints both from the same
internal type)."""

from __future__ import annotations

from typing import Any

from ...registry import printers as pr
from ...registry.definitions import OBJECT_META
from ...registry.printers import Clock, Column, Printer
from ...registry.types import META_FIELDS, ResourceType, field_getter
from .base import DEFINITIONS, PROTOBUF, CoreStrategy

EVENT_FIELDS = dict(META_FIELDS) | {
    f"involvedObject.{f}": field_getter("involvedObject", f)
    for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
} | {
    "reason": field_getter("reason"),
    "reportingComponent": field_getter("reportingComponent"),
    "source": field_getter("source", "component"),
    "type": field_getter("type"),
}


def _event_source(component: str, host: str) -> str:
    return component if not host else f"{component}, {host}"


def event_cells(o: dict, clock: Clock, *, involved: Any, message: Any, first: Any, last: Any, count: Any,
                      source: Any) -> list:
    first_ts = clock.since(first) if clock.epoch(first) is not None else clock.since(o.get("eventTime"))
    last_ts = clock.since(last) if clock.epoch(last) is not None else first_ts
    series = o.get("series")
    cnt = pr.integer(count)
    if isinstance(series, dict):
        last_ts = clock.since(series.get("lastObservedTime"))
        cnt = pr.integer(series.get("count"))
    elif cnt == 0:
        cnt = 1
    involved = involved if isinstance(involved, dict) else {}
    kind = pr.string(involved.get("kind")).lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = source if isinstance(source, dict) else {}
    src = _event_source(pr.string(source.get("component")) or pr.string(o.get("reportingController") or o.get("reportingComponent")),
                        pr.string(source.get("host")) or pr.string(o.get("reportingInstance")))
    return [last_ts, pr.string(o.get("type")), pr.string(o.get("reason")), target, pr.string(involved.get("fieldPath")), src,
            pr.string(message).strip(), first_ts, cnt, pr.meta(o).get("name")]


def event_columns(event_def: str) -> list[Column]:
    return [
        Column("Last Seen", description=(event_def, "lastTimestamp")),
        Column("Type", description=(event_def, "type")),
        Column("Reason", description=(event_def, "reason")),
        Column("Object", description=(event_def, "involvedObject")),
        Column("Subobject", priority=1, description=(DEFINITIONS + "ObjectReference", "fieldPath")),
        Column("Source", priority=1, description=(event_def, "source")),
        Column("Message", description=(event_def, "message")),
        Column("First Seen", priority=1, description=(event_def, "firstTimestamp")),
        Column("Count", priority=1, description=(event_def, "count")),
        Column("Name", priority=1, format="name", description=(OBJECT_META, "name")),
    ]


def _core_event_cells(o: dict, clock: Clock) -> list:
    return event_cells(o, clock, involved=o.get("involvedObject"), message=o.get("message"),
                       first=o.get("firstTimestamp"), last=o.get("lastTimestamp"), count=o.get("count"),
                       source=o.get("source"))


def resource_types() -> list[ResourceType]:
    return [
        ResourceType("", "v1", "Event", "events", "event", True, CoreStrategy(), short_names=("ev",),
                     field_selectors=EVENT_FIELDS,
                     printer=Printer(tuple(event_columns(DEFINITIONS + "Event")), _core_event_cells),
                     openapi_definition=DEFINITIONS + "Event", protobuf=PROTOBUF + "Event"),
    ]
