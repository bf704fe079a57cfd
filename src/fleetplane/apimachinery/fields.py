"""Field selectors (k8s.io/apimachinery/pkg/fields): ``metadata.name=x,status.phase!=Running``.

Which fields a kind can be selected by is the kind's business: callers pass the allowed fields
with a getter each.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import bad_request

__all__ = ["FieldGetter", "FieldRequirement", "FieldSelector"]

FieldGetter = Callable[[dict[str, Any]], str | None]


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    field: str
    op: str  # = or !=
    value: str


class FieldSelector:
    """A parsed ``fieldSelector``; fields are checked against a per-kind whitelist."""

    __slots__ = ("requirements",)  # one per open watch, and per list

    def __init__(self, requirements: list[FieldRequirement]) -> None:
        self.requirements = requirements

    def empty(self) -> bool:
        return not self.requirements

    @classmethod
    def parse(cls, text: str | None, allowed: Mapping[str, FieldGetter], not_supported: str) -> FieldSelector:
        """``not_supported`` is the kind-specific message prefix for an unknown field."""
        reqs: list[FieldRequirement] = []
        if not text or not text.strip():
            return cls(reqs)
        for term in _split_unescaped(text, ","):
            term = term.strip()
            if not term:
                continue
            for op in ("!=", "==", "="):
                idx = term.find(op)
                if idx > 0:
                    field, value = term[:idx].strip(), term[idx + len(op):].strip()
                    break
            else:
                raise bad_request(f'invalid selector: \'{text}\'; can\'t understand \'{term}\'')
            if field not in allowed:
                raise bad_request(not_supported.format(field=field))
            reqs.append(FieldRequirement(field, "!=" if op == "!=" else "=", _unescape(value)))
        return cls(reqs)

    def matches(self, obj: dict[str, Any], allowed: Mapping[str, FieldGetter]) -> bool:
        for r in self.requirements:
            actual = allowed[r.field](obj)
            actual = "" if actual is None else str(actual)
            if (actual == r.value) != (r.op == "="):
                return False
        return True

    def exact_value(self, field: str) -> str | None:
        """The value ``field`` must equal, if the selector pins it (used to narrow scans)."""
        for r in self.requirements:
            if r.field == field and r.op == "=":
                return r.value
        return None


def _split_unescaped(text: str, sep: str) -> list[str]:
    out, cur, esc = [], [], False
    for ch in text:
        if esc:
            cur.append("\\" + ch)
            esc = False
        elif ch == "\\":
            esc = True
        elif ch == sep:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return out


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)
