"""Label and field selectors: parsing (with kube's error messages) and matching."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .errors import bad_request

_LABEL_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)\Z")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")


def label_key_error(key: str) -> str | None:
    """Why ``key`` is not a valid qualified label key, or None."""
    prefix, _, name = key.rpartition("/")
    if "/" in prefix:
        return "a qualified name must consist of alphanumeric characters, '-', '_' or '.', with an optional DNS subdomain prefix and '/'"
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
    if not name:
        return "name part must be non-empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not _LABEL_NAME.match(name):
        return ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
    return None


def label_value_error(value: str) -> str | None:
    if len(value) > 63:
        return "must be no more than 63 characters"
    if not _LABEL_VALUE.match(value):
        return ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
                "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
    return None


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


class LabelSelector:
    """A parsed ``labelSelector`` query (the comma-AND of requirements)."""

    def __init__(self, requirements: list[Requirement]) -> None:
        self.requirements = requirements

    def empty(self) -> bool:
        return not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    @classmethod
    def parse(cls, text: str | None) -> LabelSelector:
        if not text or not text.strip():
            return cls([])
        return cls(_LabelParser(text).parse())

    @classmethod
    def from_match(cls, selector: Mapping | None) -> LabelSelector:
        """A metav1.LabelSelector object (matchLabels + matchExpressions)."""
        reqs: list[Requirement] = []
        if not selector:
            return cls(reqs)
        for k, v in (selector.get("matchLabels") or {}).items():
            reqs.append(Requirement(k, "=", (v,)))
        ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!exists"}
        for expr in selector.get("matchExpressions") or []:
            reqs.append(Requirement(expr["key"], ops[expr["operator"]], tuple(expr.get("values") or ())))
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
        err = label_key_error(tok)
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


# -- field selectors ------------------------------------------------------------------------

FieldGetter = Callable[[dict], str | None]


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    field: str
    op: str  # = or !=
    value: str


class FieldSelector:
    """A parsed ``fieldSelector``; fields are checked against a per-kind whitelist."""

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

    def matches(self, obj: dict, allowed: Mapping[str, FieldGetter]) -> bool:
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
