"""Label selectors (k8s.io/apimachinery/pkg/labels and metav1.LabelSelector): parse, match, format.

A selector comes either as the query string (``app=web,tier in (a,b),!canary``, parsed with
kube's error messages) or as a metav1.LabelSelector object (``matchLabels`` and
``matchExpressions``); both become one :class:`LabelSelector`. ``str()`` of a selector is
kube's ``Selector.String()``: requirements sorted by key, values sorted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import bad_request
from .validation import label_value_error, qualified_name_error

__all__ = ["LabelSelector", "Requirement", "format_label_selector", "selector_matches"]

_OPERATORS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!exists"}


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: str  # = != in notin exists !exists
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.op == "exists":
            return self.key in labels
        if self.op == "!exists":
            return self.key not in labels
        if self.op in ("=", "in"):
            return labels.get(self.key) in self.values if self.key in labels else False
        # != and notin match objects without the label, as kube does
        return self.key not in labels or labels[self.key] not in self.values

    def __str__(self) -> str:
        if self.op == "exists":
            return self.key
        if self.op == "!exists":
            return "!" + self.key
        if self.op in ("=", "!="):
            return f"{self.key}{self.op}{self.values[0] if self.values else ''}"
        return f"{self.key} {self.op} ({','.join(sorted(str(v) for v in self.values))})"


class LabelSelector:
    """A parsed ``labelSelector`` query (the comma-AND of requirements)."""

    __slots__ = ("requirements",)  # one per open watch, and per list

    def __init__(self, requirements: list[Requirement]) -> None:
        self.requirements = requirements

    def empty(self) -> bool:
        return not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    def required_label(self) -> tuple[str, str] | None:
        """A ``(key, value)`` every selected object's labels hold (from ``key=value`` or
        ``key in (value)``), or None: what the watch cache indexes its watchers by."""
        for r in self.requirements:
            if r.op in ("=", "in") and len(r.values) == 1:
                return r.key, r.values[0]
        return None

    def __str__(self) -> str:
        """``Selector.String()``: requirements sorted by key (a Scale's ``status.selector``)."""
        return ",".join(str(r) for r in sorted(self.requirements, key=lambda r: r.key))

    @classmethod
    def parse(cls, text: str | None) -> LabelSelector:
        if not text or not text.strip():
            return cls([])
        return cls(_LabelParser(text).parse())

    @classmethod
    def from_match(cls, selector: Mapping[str, Any] | None) -> LabelSelector:
        """``LabelSelectorAsSelector`` of a metav1.LabelSelector object (matchLabels + matchExpressions).

        KeyError for an expression without a key or with an unknown operator."""
        reqs: list[Requirement] = []
        if not selector:
            return cls(reqs)
        for k, v in (selector.get("matchLabels") or {}).items():
            reqs.append(Requirement(k, "=", (v,)))
        for expr in selector.get("matchExpressions") or []:
            reqs.append(Requirement(expr["key"], _OPERATORS[expr["operator"]], tuple(expr.get("values") or ())))
        return cls(reqs)


_TOKEN = re.compile(r"\s*(!=|==|=|\(|\)|,|!|[^\s=!(),]+)")


class _LabelParser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = [m.group(1) for m in _TOKEN.finditer(text)]
        self.pos = 0

    def _fail(self, why: str) -> None:
        raise bad_request(f'unable to parse requirement: {why}') from None

    def _peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _next(self) -> str | None:
        tok = self._peek()
        self.pos += 1
        return tok

    def parse(self) -> list[Requirement]:
        reqs = []
        while True:
            reqs.append(self._requirement())
            tok = self._next()
            if tok is None:
                return reqs
            if tok != ",":
                self._fail(f"found '{tok}', expected: ',' or end of string")

    def _key(self, tok: str | None) -> str:
        if tok is None or tok in ("=", "==", "!=", "(", ")", ",", "!"):
            self._fail(f"found '{tok or ''}', expected: identifier")
        assert tok is not None
        err = qualified_name_error(tok)
        if err:
            self._fail(f'invalid label key "{tok}": {err}')
        return tok

    def _value(self, tok: str | None) -> str:
        if tok is None or tok in ("=", "==", "!=", "(", ")", "!"):
            self._fail(f"found '{tok or ''}', expected: identifier")
        assert tok is not None
        if tok == ",":
            self.pos -= 1
            return ""
        err = label_value_error(tok)
        if err:
            self._fail(f'invalid label value: "{tok}": at key: ...: {err}')
        return tok

    def _requirement(self) -> Requirement:
        tok = self._next()
        if tok == "!":
            return Requirement(self._key(self._next()), "!exists")
        key = self._key(tok)
        op = self._peek()
        if op is None or op == ",":
            return Requirement(key, "exists")
        self.pos += 1
        if op in ("=", "=="):
            nxt = self._peek()
            return Requirement(key, "=", (self._value(self._next()) if nxt not in (None, ",") else "",))
        if op == "!=":
            nxt = self._peek()
            return Requirement(key, "!=", (self._value(self._next()) if nxt not in (None, ",") else "",))
        if op in ("in", "notin"):
            if self._next() != "(":
                self._fail("found '" + str(self.tokens[self.pos - 1] if self.pos - 1 < len(self.tokens) else "") + "', expected: '('")
            values: list[str] = []
            while True:
                tok = self._next()
                if tok == ")":
                    break
                if tok == ",":
                    continue
                if tok is None:
                    self._fail("found '', expected: ')'")
                values.append(self._value(tok))
            return Requirement(key, op, tuple(values))
        self._fail(f"found '{op}', expected: in, notin, =, ==, !=, gt, lt")
        raise AssertionError


def selector_matches(selector: Any, labels: Mapping[str, str] | None) -> bool:
    """Whether a metav1.LabelSelector object selects ``labels``: an empty one selects everything,
    a missing one (null) nothing, as ``LabelSelectorAsSelector``."""
    if not isinstance(selector, Mapping):
        return False
    return LabelSelector.from_match(selector).matches(labels)


def format_label_selector(selector: Any, empty: str = "<none>") -> str:
    """``metav1.FormatLabelSelector``: the string form, ``empty`` when there are no requirements,
    ``<error>`` when the object is not a selector."""
    if not isinstance(selector, Mapping):
        return empty
    try:
        text = str(LabelSelector.from_match(selector))
    except (KeyError, TypeError, AttributeError, IndexError):
        return "<error>"
    return text or empty
