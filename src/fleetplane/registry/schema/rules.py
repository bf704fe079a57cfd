"""Evaluating ``x-kubernetes-validations`` CEL rules against a custom resource.

Converts values the way kube's CEL sees them (UnstructuredToVal), runs transition rules with
``oldSelf``, ratchets unchanged parts and reports failures with kube's messages and reasons.
"""

from __future__ import annotations

import binascii
import datetime as _dt
import re
from typing import Any

from fleetplane.apimachinery.errors import FieldError, forbidden, invalid, required

from ...apimachinery.cel import _cel_error_text
from ...apimachinery.cel.engine import _cel
from ...apimachinery.formats import _is_date, _parse_go_duration
from ...apimachinery.gofmt import go_base64_decode
from ...apimachinery.jsonvalue import MISSING, deep_equal
from .fieldpath import _duplicate_value, _fp, _fp_child, _fp_index, _fp_key
from .listtype import _map_list_correlator
from .prune import _META_FIELDS
from .tree import _Node, _Rule

_MAX_MESSAGE_EXPRESSION_BYTES = 5 * 1024


def _none_missing(v: Any) -> Any:
    return MISSING if v is None else v


def _error_for_reason(field: str, value: Any, detail: str, reason: Any) -> FieldError:
    if reason == "FieldValueForbidden":
        return forbidden(field, detail)
    if reason == "FieldValueRequired":
        return required(field, detail)
    if reason == "FieldValueDuplicate":
        return _duplicate_value(field, value)
    return invalid(field, value, detail)


# CEL values ---------------------------------------------------------------------------------


def _parse_timestamp(s: str) -> Any:
    t = s.strip()
    if t.endswith(("Z", "z")):
        t = t[:-1] + "+00:00"
    m = re.match(r"^(.*T\d{2}:\d{2}:\d{2})\.(\d+)(.*)$", t, re.I)
    if m and len(m.group(2)) > 6:
        t = f"{m.group(1)}.{m.group(2)[:6]}{m.group(3)}"
    try:
        v = _dt.datetime.fromisoformat(t)
    except ValueError:
        return s
    if v.tzinfo is None:
        v = v.replace(tzinfo=_dt.UTC)
    return v


def _to_cel_scalar(v: Any, n: _Node) -> Any:
    if type(v) is int and n.type == "number":
        return float(v)
    if type(v) is str and n.type == "string":
        f = n.format
        if f == "datetime" or f == "date":
            if f == "date" and _is_date(v):
                return _dt.datetime(int(v[:4]), int(v[5:7]), int(v[8:10]), tzinfo=_dt.UTC)
            return _parse_timestamp(v)
        if f == "duration":
            secs = _parse_go_duration(v)
            return _dt.timedelta(seconds=secs) if secs is not None else v
        if f == "byte":
            try:
                return go_base64_decode(v)
            except (binascii.Error, ValueError):
                return v
    return v


def _to_cel(v: Any, n: _Node | None, proj: Any, resource_root: bool = False) -> Any:
    """An unstructured value as kube's CEL sees it (UnstructuredToVal), restricted to ``proj``."""
    if v is None or n is None:
        return v
    tv = type(v)
    if tv is dict:
        if proj is None and not n.cel_conv and not resource_root:
            return v
        embedded = n.embedded or resource_root
        props = n.props
        names = n.cel_names
        additional = n.additional
        out: dict[str, Any] = {}
        for k, val in v.items():
            if embedded and k in _META_FIELDS:
                if proj is not None and k not in proj:
                    continue
                if k == "metadata" and type(val) is dict:
                    val = {mk: val[mk] for mk in ("name", "generateName") if mk in val}
                out[k] = val
                continue
            p = props.get(k)
            if p is not None:
                ek = names.get(k)
                if ek is None:
                    continue
            else:
                ek = k
                p = additional
            if proj is not None:
                if ek not in proj:
                    continue
                sub = proj[ek]
            else:
                sub = None
            out[ek] = _to_cel(val, p, sub)
        return out
    if tv is list:
        if not n.cel_conv:
            return v
        items = n.items
        return [_to_cel(e, items, None) for e in v]
    return _to_cel_scalar(v, n)


def _valid_field_path(path: str, n: _Node) -> tuple[bool, str, str]:
    """cel.ValidFieldPath: (ok, normalized field.Path string, error)."""
    tokens: list[str] = []
    i, L = 0, len(path)
    while i < L:
        c = path[i]
        if c in ".[]":
            tokens.append(c)
            i += 1
            continue
        if c == "'":
            j = i + 1
            while j < L and not (path[j] == "'" and path[j - 1] != "\\"):
                j += 1
            tokens.append(path[i : j + 1])
            i = j + 1
            continue
        j = i
        while j < L and path[j] not in ".[]":
            j += 1
        tokens.append(path[i:j])
        i = j
    out = ""
    cur: _Node | None = n
    it = iter(tokens)
    for tok in it:
        if cur is None:
            return False, "", "does not refer to a valid field"
        if tok == "[":
            name = next(it, None)
            if name is None:
                return False, "", "unexpected end of JSON path"
            if len(name) < 2 or name[0] != "'" or name[-1] != "'":
                return False, "", f"expected single quoted string but got {name}"
            try:
                name = _unescape_single_quoted(name[1:-1])
            except ValueError as e:
                return False, "", f"invalid string literal: {e}"
            close = next(it, None)
            if close is None:
                return False, "", "unexpected end of JSON path"
            if close != "]":
                return False, "", f"expected ] but got {close}"
        elif tok == ".":
            name = next(it, None)
            if name is None:
                return False, "", "unexpected end of JSON path"
        else:
            return False, "", f"expected [ or . but got: {tok}"
        if cur.props:
            p = cur.props.get(name)
            if p is None:
                return False, "", "does not refer to a valid field"
            out = f"{out}.{name}" if out else name
            cur = p
        elif cur.additional is not None or cur.add_mode:
            out = f"{out}[{name}]"
            cur = cur.additional
        else:
            return False, "", "does not refer to a valid field"
    return True, out, ""


def _unescape_single_quoted(s: str) -> str:
    table = {
        "a": "\a",
        "b": "\b",
        "f": "\f",
        "n": "\n",
        "r": "\r",
        "t": "\t",
        "v": "\v",
        "'": "'",
        "\\": "\\",
    }

    def repl(m: re.Match[str]) -> str:
        c = m.group(0)[1]
        if c not in table:
            raise ValueError(f"invalid escape char {m.group(0)}")
        return table[c]

    return re.sub(r"\\.", repl, s)


class _RulesMixin:
    """The CEL rule methods of :class:`~.compiled.StructuralSchema`."""

    _root: _Node

    def validate_rules(self, obj: Any, old: Any = None, *, ratcheting: bool = True) -> list[FieldError]:
        """Evaluate the ``x-kubernetes-validations`` rules only."""
        errs: list[FieldError] = []
        if self._root.sub_rules:
            o = old if old is not None else MISSING
            self._cel(obj, self._root, None, o, errs, ratcheting, False, True)
        return errs

    def _cel(
        self,
        x: Any,
        n: _Node,
        path: str | None,
        old: Any,
        errs: list[FieldError],
        ratcheting: bool,
        parent_unchanged: bool,
        root: bool = False,
    ) -> None:
        if x is None:
            return
        if ratcheting:
            unchanged = deep_equal(x, old) if old is not MISSING else parent_unchanged
            if unchanged and not n.sub_transition:
                return
        else:
            unchanged = False
        if n.rules:
            self._eval_rules(x, n, path, old, errs, unchanged, root)
        tx = type(x)
        if tx is dict:
            old_map = old if type(old) is dict and (n.map_type in (None, "granular", "atomic")) else None
            for k, p in n.props.items():
                if p.sub_rules:
                    v = x.get(k, MISSING)
                    if v is not MISSING:
                        o = old_map.get(k, MISSING) if old_map is not None else MISSING
                        self._cel(v, p, _fp_child(path, k), _none_missing(o), errs, ratcheting, unchanged)
            additional = n.additional
            if additional is not None and additional.sub_rules:
                for k, v in x.items():
                    if k not in n.props:
                        o = old_map.get(k, MISSING) if old_map is not None else MISSING
                        self._cel(
                            v, additional, _fp_key(path, k), _none_missing(o), errs, ratcheting, unchanged
                        )
        elif tx is list:
            items = n.items
            if items is not None and items.sub_rules:
                correlate = _map_list_correlator(n, old) if old is not MISSING else None
                for i, v in enumerate(x):
                    o = correlate(v) if correlate is not None else MISSING
                    self._cel(v, items, _fp_index(path, i), _none_missing(o), errs, ratcheting, unchanged)

    def _eval_rules(
        self,
        x: Any,
        n: _Node,
        path: str | None,
        old: Any,
        errs: list[FieldError],
        unchanged: bool,
        root: bool,
    ) -> None:
        type_text = n.schema_type
        converted: dict[int, Any] = {}

        def conv(value: Any, proj: Any) -> Any:
            key = id(proj) if value is x else -id(proj) - 1
            try:
                return converted[key]
            except KeyError:
                pass
            c = _to_cel(value, n, proj, root)
            converted[key] = c
            return c

        for r in n.rules:
            prog = r.program
            if prog is None:
                continue
            if prog.error is not None:
                errs.append(
                    invalid(_fp(path), type_text, f"rule compile error: compilation failed: {prog.error}")
                )
                continue
            uses_old = prog.uses_old_self
            if uses_old and old is MISSING and not r.optional_old_self:
                continue  # transition rules only run when there is an old value to compare with
            if unchanged and not uses_old:
                continue  # ratcheted
            variables: dict[str, Any] = {"self": conv(x, r.proj_self)}
            if uses_old:
                if r.optional_old_self:
                    variables["oldSelf"] = (
                        _cel.OptionalValue.none()
                        if old is MISSING
                        else _cel.OptionalValue.of(conv(old, r.proj_old))
                    )
                else:
                    variables["oldSelf"] = conv(old, r.proj_old)
            try:
                result = prog.run(variables)
            except Exception as e:  # noqa: BLE001 - any evaluation failure becomes a field error
                msg, overload = _cel_error_text(e)
                if overload:
                    detail = (
                        f"'{msg}': call arguments did not match a supported operator, function or macro "
                        f"signature for rule: {r.error_string()}"
                    )
                else:
                    detail = f"{msg} evaluating rule: {r.error_string()}"
                errs.append(invalid(_fp(path), type_text, detail))
                continue
            if result is True:
                continue
            if result is not False:
                errs.append(
                    invalid(
                        _fp(path), type_text, "rule compile error: cel expression must evaluate to a bool"
                    )
                )
                continue
            field = path
            norm = self._rule_field_path(r, n)
            if norm:
                field = _fp_child(path, norm)
            message: str | None = None
            mp = r.message_program
            if mp is not None and mp.error is None:
                mvars: dict[str, Any] = {"self": conv(x, None)}
                if old is not MISSING:
                    mvars["oldSelf"] = conv(old, None)
                try:
                    evaluated: Any = mp.run(mvars)
                except Exception:  # noqa: BLE001 - kube falls back to the static message
                    evaluated = None
                if isinstance(evaluated, str):
                    evaluated = evaluated.strip()
                    if evaluated and "\n" not in evaluated and len(evaluated.encode()) <= _MAX_MESSAGE_EXPRESSION_BYTES:
                        message = evaluated
            if message is None:
                message = r.default_message()
            errs.append(_error_for_reason(_fp(field), type_text, message, r.reason))

    def _rule_field_path(self, r: _Rule, n: _Node) -> str:
        if r._norm_field_path is MISSING:
            norm = ""
            if r.field_path:
                ok, normalized, _ = _valid_field_path(r.field_path, n)
                if ok:
                    norm = normalized
            r._norm_field_path = norm
        cached: str = r._norm_field_path
        return cached
