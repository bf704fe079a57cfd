"""``meta.k8s.io/v1`` Table responses (``kubectl get`` human output), as kube-apiserver makes them.

* Built-in kinds use their ``ResourceType.printer`` (declared with the kind in
  :mod:`fleetplane.apis`, like kube's ``pkg/printers/internalversion/printers.go``). The
  server always prints the wide (``priority: 1``) columns too; kubectl hides them without
  ``-o wide``.
* Custom resources follow apiextensions-apiserver's ``tableconvertor``: ``Name`` and then one
  column per ``additionalPrinterColumns`` entry, evaluated with Kubernetes JSONPath (first
  match, missing -> ``null``), or ``Age`` when the CRD has none.
* Other kinds (CRDs among them) get the default table: ``Name`` and ``Created At``.

Rows carry the object as ``includeObject`` asks: ``Metadata`` (a PartialObjectMetadata with
the full metadata, the default), ``Object`` (the object itself) or ``None`` (no object).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from ..apimachinery.jsonpath import compile_jsonpath, go_print
from ..apimachinery.metatime import format_time, parse_rfc3339
from ..apis import known_type
from ..registry.definitions import OBJECT_META
from ..registry.printers import NAME, Clock, Column, Printer, meta
from ..registry.types import PrinterColumn, ResourceType

TABLE_API_VERSION = "meta.k8s.io/v1"
INCLUDE_OBJECT_VALUES = ("Metadata", "Object", "None")

# -- durations and timestamps ------------------------------------------------------------------


def human_duration(seconds: float) -> str:
    """apimachinery's ``duration.HumanDuration``: ~2-3 significant figures ("5s", "3m2s", "4h5m", "12d")."""
    ns = int(seconds * 1e9)
    secs = int(ns / 1e9)  # truncates toward zero, like int(d.Seconds())
    if secs < -1:
        return "<invalid>"
    if secs < 0:
        return "0s"
    if secs < 60 * 2:
        return f"{secs}s"
    minutes = ns // 60_000_000_000
    if minutes < 10:
        s = (ns // 1_000_000_000) % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = ns // 3_600_000_000_000
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


_ZERO = object()


def _parse_time(value: Any) -> float | object | None:
    """An RFC 3339 timestamp as epoch seconds; ``_ZERO`` for Go's zero time; None if invalid."""
    if not isinstance(value, str) or not value:
        return None
    try:
        dt = parse_rfc3339(value)
    except ValueError:
        return None
    if dt.year <= 1:
        return _ZERO
    return dt.timestamp()


class _Clock:
    """``time.Since`` for one table: parses each distinct timestamp once."""

    __slots__ = ("now", "_ages", "_dates")

    def __init__(self, now: float | None) -> None:
        self.now = time.time() if now is None else now
        self._ages: dict[Any, str] = {}
        self._dates: dict[Any, str] = {}

    def since(self, value: Any) -> str:
        """kube's translateTimestampSince: "<unknown>" for a missing or zero time."""
        got = self._ages.get(value)
        if got is None:
            t = _parse_time(value)
            got = "<unknown>" if t is None or t is _ZERO else human_duration(self.now - t)  # type: ignore[operator]
            self._ages[value] = got
        return got

    def epoch(self, value: Any) -> float | None:
        """An RFC 3339 timestamp as epoch seconds; None if missing, zero or invalid."""
        t = _parse_time(value)
        return None if t is None or t is _ZERO else t  # type: ignore[return-value]

    def elapsed(self, since: float) -> str:
        """The human duration from epoch seconds ``since`` to now."""
        return human_duration(self.now - since)

    def date_cell(self, value: Any) -> str:
        """A CRD ``date`` column: "<invalid>" when not a timestamp (metatable.ConvertToHumanReadableDateType)."""
        got = self._dates.get(value)
        if got is None:
            t = _parse_time(value)
            if t is None:
                got = "<invalid>"
            elif t is _ZERO:
                got = "<unknown>"
            else:
                got = human_duration(self.now - t)  # type: ignore[operator]
            self._dates[value] = got
        return got


def _rfc3339(value: Any) -> str:
    """The default table's ``Created At``: the timestamp in UTC RFC 3339, Go's zero time when unset."""
    t = _parse_time(value)
    if t is None or t is _ZERO:
        return "0001-01-01T00:00:00Z"
    return format_time(t)  # type: ignore[arg-type]


# -- helpers for printers --------------------------------------------------------------------------




def _default_cells(o: dict, clock: Clock) -> list:
    return [meta(o).get("name"), _rfc3339(meta(o).get("creationTimestamp"))]


DEFAULT_PRINTER = Printer((NAME, Column("Created At", "date", description=(OBJECT_META, "creationTimestamp"))),
                          _default_cells)

# -- custom resources ---------------------------------------------------------------------------

#: apiextensions' serveDefaultColumnsIfEmpty: a CRD version without printer columns shows Age
DEFAULT_CR_COLUMNS = (PrinterColumn("Age", "date", ".metadata.creationTimestamp"),)


def _cr_cell(col_type: str, find: Callable[[Any], list]) -> Callable[[dict, Clock], Any]:
    """tableconvertor's cell: the first match, typed by the column (cellForJSONValue)."""
    def cell(o: dict, clock: Clock) -> Any:
        results = find(o)
        if not results:
            return None
        value = results[0]
        if value is None:
            return None
        if col_type == "string":
            return go_print(value)
        if isinstance(value, bool):
            return value if col_type == "boolean" else None
        if col_type == "integer":
            return value if isinstance(value, int) else int(value) if isinstance(value, float) else None
        if col_type == "number":
            return float(value) if isinstance(value, int | float) else None
        if col_type == "date":
            return clock.date_cell(value) if isinstance(value, str) else None
        return None
    return cell


@lru_cache(maxsize=512)
def _custom_printer(columns: tuple[PrinterColumn, ...], default_age: bool = False) -> Printer:
    cell_fns = [_cr_cell(c.type, compile_jsonpath(c.json_path)) for c in columns]
    defs = [Column(c.name, c.type, c.description, c.format, c.priority) for c in columns]
    if default_age:
        defs = [Column("Age", "date", (OBJECT_META, "creationTimestamp"))]

    def cells(o: dict, clock: Clock) -> list:
        return [meta(o).get("name"), *[fn(o, clock) for fn in cell_fns]]

    return Printer((NAME, *defs), cells)


def printer_for(rt: ResourceType) -> Printer:
    """The printer a type's tables use: its own. A cluster's built-in kind imported as a CRD
    (apps/v1 Deployment) prints like the built-in, so READY shows ready/desired as kube-apiserver does."""
    if rt.custom:
        builtin = rt if rt.printer is not None else known_type(rt.group, rt.kind)
        if builtin is not None and builtin.printer is not None:
            return builtin.printer
    if rt.printer_columns:
        return _custom_printer(tuple(rt.printer_columns))
    if rt.custom:
        return _custom_printer(DEFAULT_CR_COLUMNS, True)
    return rt.printer or DEFAULT_PRINTER


# -- the table -----------------------------------------------------------------------------------


def to_table(rt: ResourceType, objects: list[dict], *, include_object: str = "Metadata",
             list_metadata: dict | None = None, no_headers: bool = False, now: float | None = None) -> dict:
    """A ``meta.k8s.io/v1`` Table of ``objects`` (one for a GET or a watch event).

    ``list_metadata`` is the list's metadata (``resourceVersion``, ``continue``,
    ``remainingItemCount``); without it a single object's resourceVersion is used, as kube
    does for a GET. ``no_headers`` leaves the column definitions empty (watch events after
    the first). ``now`` (epoch seconds) fixes the clock for ages.
    """
    if include_object not in INCLUDE_OBJECT_VALUES:
        raise ValueError(f"includeObject must be one of {', '.join(INCLUDE_OBJECT_VALUES)}")
    printer = printer_for(rt)
    clock = _Clock(now)
    cells_fn = printer.cells
    conditions_fn = printer.conditions
    rows: list[dict[str, Any]] = []
    append = rows.append
    if include_object == "Metadata":
        for o in objects:
            row = {"cells": cells_fn(o, clock),
                   "object": {"kind": "PartialObjectMetadata", "apiVersion": TABLE_API_VERSION,
                              "metadata": o.get("metadata") or {}}}
            if conditions_fn is not None and (conds := conditions_fn(o)):
                row["conditions"] = conds
            append(row)
    elif include_object == "Object":
        for o in objects:
            row = {"cells": cells_fn(o, clock), "object": o}
            if conditions_fn is not None and (conds := conditions_fn(o)):
                row["conditions"] = conds
            append(row)
    else:
        for o in objects:
            row = {"cells": cells_fn(o, clock)}
            if conditions_fn is not None and (conds := conditions_fn(o)):
                row["conditions"] = conds
            append(row)
    meta: dict = {}
    if list_metadata is not None:
        for k in ("resourceVersion", "continue", "remainingItemCount"):
            v = list_metadata.get(k)
            if v is not None and v != "":
                meta[k] = v
    elif len(objects) == 1:
        rv = (objects[0].get("metadata") or {}).get("resourceVersion")
        if rv:
            meta["resourceVersion"] = rv
    return {
        "kind": "Table",
        "apiVersion": TABLE_API_VERSION,
        "metadata": meta,
        "columnDefinitions": [] if no_headers else printer.column_definitions(),
        "rows": rows,
    }
