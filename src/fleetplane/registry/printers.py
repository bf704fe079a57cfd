"""What a built-in kind's ``kubectl get`` table looks like: its columns and how a row is filled.

Like kube's ``pkg/printers``: each kind's printer is declared next to the kind
(:mod:`fleetplane.apis`) as ``ResourceType.printer``; ``server/tables.py`` makes the Table
responses from it, or from a custom resource's printer columns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Protocol

from .definitions import OBJECT_META, field_description


class Clock(Protocol):
    """Time as one table sees it (the same ``now`` for every row)."""

    now: float

    def since(self, value: Any) -> str:
        """How long ago an RFC 3339 timestamp was ("5m"), "<unknown>" if missing or zero."""
        ...

    def epoch(self, value: Any) -> float | None:
        """An RFC 3339 timestamp as epoch seconds; None if missing, zero or invalid."""
        ...

    def elapsed(self, since: float) -> str:
        """The human duration from epoch seconds ``since`` to now."""
        ...

    def date_cell(self, value: Any) -> str:
        """A CRD ``date`` column: like :meth:`since`, "<invalid>" when not a timestamp."""
        ...


Cells = Callable[[dict[str, Any], Clock], list[Any]]


@cache
def _describe(spec: Any) -> str:
    if isinstance(spec, str):
        return spec
    try:
        return field_description(*spec)
    except (OSError, ValueError):
        return ""


@dataclass(frozen=True)
class Column:
    name: str
    type: str = "string"
    #: a description, or (definition, field, ...) to read it from the OpenAPI data
    description: Any = ""
    format: str = ""
    priority: int = 0

    def definition(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "format": self.format,
                "description": _describe(self.description), "priority": self.priority}


NAME = Column("Name", format="name", description=(OBJECT_META, "name"))
AGE = Column("Age", description=(OBJECT_META, "creationTimestamp"))


@dataclass(eq=False)
class Printer:
    columns: tuple[Column, ...]
    cells: Cells
    #: a row's ``conditions`` (kube marks finished Pods ``Completed``), or None
    conditions: Callable[[dict[str, Any]], list[Any] | None] | None = None
    _definitions: list[dict[str, Any]] | None = field(default=None, repr=False)

    def column_definitions(self) -> list[dict[str, Any]]:
        """The Table's columnDefinitions (built once; shared, read-only)."""
        if self._definitions is None:
            self._definitions = [c.definition() for c in self.columns]
        return self._definitions


# -- what the row functions share ------------------------------------------------------------------


def meta(o: dict[str, Any]) -> dict[str, Any]:
    return o.get("metadata") or {}


def get(o: Any, *path: str) -> Any:
    for p in path:
        if not isinstance(o, dict):
            return None
        o = o.get(p)
    return o


def integer(v: Any, default: int = 0) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def length(v: Any) -> int:
    return len(v) if isinstance(v, dict | list) else 0


def string(v: Any) -> str:
    return v if isinstance(v, str) else ""


def condition(conditions: Any, ctype: str) -> dict[str, Any] | None:
    for c in conditions if isinstance(conditions, list) else ():
        if isinstance(c, dict) and c.get("type") == ctype:
            return c
    return None

