"""Validating a custom resource against its schema, without the CEL rules.

The kube-openapi value validations (types, formats, bounds, enums, junctors, properties), the
embedded-resource checks (kube's objectmeta package) and the ``x-kubernetes-list-type`` checks,
with kube's messages, field paths and ratcheting of unchanged values.
"""

from __future__ import annotations

import math
from typing import Any

from fleetplane.apimachinery.errors import FieldError, invalid, not_supported, required

from ...apimachinery.formats import _FORMAT_CHECKS
from ...apimachinery.gofmt import bad_value, format_float, go_quote, json_text
from ...apimachinery.goregex import _go_regex, _RegexError
from ...apimachinery.jsonvalue import MISSING, deep_equal, deep_key, json_equal
from ...apimachinery.validation import dns1035_label_errors
from .fieldpath import (
    _child,
    _duplicate_value,
    _fp,
    _fp_child,
    _fp_index,
    _fp_key,
    _too_long,
    _too_many,
    _type_invalid,
)
from .listtype import _correlator, _non_unique, _validate_list_map
from .tree import _ADD_FALSE, _ADD_SCHEMA, _Node


class _Ctx:
    __slots__ = ("errs", "base")

    def __init__(self, errs: list[FieldError], base: str | None) -> None:
        self.errs = errs
        self.base = base

    def field(self, name: str) -> str:
        """kube: fldPath.Child(strings.TrimPrefix(err.Name, "."))."""
        stripped = name[1:] if name.startswith(".") else name
        if not stripped or stripped == ".":
            return _fp(self.base)
        return f"{self.base}.{stripped}" if self.base else stripped


def _is_json_integer(f: float) -> bool:
    if math.isnan(f) or math.isinf(f):
        return False
    g = float(round(f))
    if f == g:
        return True
    diff = abs(f - g)
    return diff / min(abs(f) + abs(g), 1.7976931348623157e308) < 1e-9


def _enum_texts(values: list[Any]) -> list[str]:
    return [v if isinstance(v, str) else json_text(v) for v in values]


def _has_duplicates(items: list[Any]) -> bool:
    seen: set[Any] = set()
    for v in items:
        k = deep_key(v)
        if k in seen:
            return True
        seen.add(k)
    return False


def _validate_embedded_resource(x: dict[str, Any], path: str | None, errs: list[FieldError]) -> None:
    if "apiVersion" not in x:
        errs.append(required(_fp_child(path, "apiVersion")))
    if "kind" not in x:
        errs.append(required(_fp_child(path, "kind")))
    for k, v in x.items():
        if k == "apiVersion":
            p = _fp_child(path, "apiVersion")
            if not isinstance(v, str):
                errs.append(invalid(p, bad_value(v), "must be a string"))
            elif not v:
                errs.append(required(p))
            elif v.count("/") > 1:
                errs.append(invalid(p, v, f"unexpected GroupVersion string: {v}"))
        elif k == "kind":
            p = _fp_child(path, "kind")
            if not isinstance(v, str):
                errs.append(invalid(p, bad_value(v), "must be a string"))
            elif not v:
                errs.append(required(p))
            else:
                msgs = dns1035_label_errors(v.lower())
                if msgs:
                    errs.append(
                        invalid(p, v, "may have mixed case, but should otherwise match: " + ",".join(msgs))
                    )
        elif k == "metadata" and v is not None and type(v) is not dict:
            errs.append(invalid(_fp_child(path, "metadata"), v, "must be an object"))


class _ValidateMixin:
    """The schema validation methods of :class:`~.compiled.StructuralSchema`."""

    _root: _Node

    def validate_schema(self, obj: Any, old: Any = None, *, ratcheting: bool = True) -> list[FieldError]:
        """The non-CEL part of :meth:`validate`."""
        errs: list[FieldError] = []
        root = self._root
        oldv = old if (old is not None and ratcheting) else MISSING
        self._vnode(obj, root, "", _Ctx(errs, None), oldv)
        if root.sub_embedded and type(obj) is dict:
            self._validate_embedded_map(obj, root, None, errs)
        if root.sub_listtype and type(obj) is dict:
            if old is None or not ratcheting or not self._list_errors(old):
                errs.extend(self._list_errors(obj))
        return errs

    def _list_errors(self, obj: Any) -> list[FieldError]:
        errs: list[FieldError] = []
        if type(obj) is dict:
            self._lists_map(obj, self._root, None, errs)
        return errs

    # OpenAPI (kube-openapi validate) -------------------------------------------------------

    def _vnode(self, x: Any, n: _Node, path: str, ctx: _Ctx, old: Any) -> None:
        if old is not MISSING and deep_equal(x, old):
            return  # ratcheting: unchanged values keep validating as they did
        errs = ctx.errs
        if x is None:
            if n.types and not n.nullable:
                errs.append(
                    _type_invalid(
                        ctx.field(path),
                        "null",
                        f"{path} in body must be of type {n.type_text}: {go_quote('null')}",
                    )
                )
            if n.enum is not None and None not in n.enum:
                errs.append(not_supported(ctx.field(path), "null", _enum_texts(n.enum)))
            return
        tx = type(x)
        # type
        if n.types is not None or n.format:
            self._check_type(x, tx, n, path, ctx)
        # allOf / anyOf / oneOf / not
        if n.all_of or n.any_of or n.one_of or n.not_ is not None:
            self._check_junctors(x, n, path, ctx)
        if tx is str:
            self._check_string(x, n, path, ctx)
        elif (tx is int or tx is float) and (
            n.maximum is not None or n.minimum is not None or n.multiple_of is not None
        ):
            self._check_number(x, tx, n, path, ctx)
        elif tx is list:
            items = n.items
            if items is not None:
                correlate = _correlator(n, old) if old is not MISSING else None
                for i, v in enumerate(x):
                    self._vnode(v, items, f"{path}[{i}]", ctx, correlate(v) if correlate else MISSING)
            size = len(x)
            if n.min_items is not None and size < n.min_items:
                errs.append(
                    invalid(ctx.field(path), size, f"{path} in body should have at least {n.min_items} items")
                )
            if n.max_items is not None and size > n.max_items:
                errs.append(_too_many(ctx.field(path), size, n.max_items))
            if n.unique_items and _has_duplicates(x):
                errs.append(invalid(ctx.field(path), "", f"{path} in body shouldn't contain duplicates"))
        if n.enum is not None:
            for e in n.enum:
                if json_equal(x, e):
                    break
            else:
                errs.append(not_supported(ctx.field(path), bad_value(x), _enum_texts(n.enum)))
        if tx is dict:
            self._check_object(x, n, path, ctx, old)

    def _check_type(self, x: Any, tx: type, n: _Node, path: str, ctx: _Ctx) -> None:
        if tx is bool:
            st, sf = "boolean", ""
        elif tx is int:
            st, sf = "integer", "int64"
        elif tx is float:
            st, sf = "number", "float64"
        elif tx is str:
            st, sf = "string", ""
        elif tx is list:
            st, sf = "array", ""
        elif tx is dict:
            st, sf = "object", ""
        else:
            st, sf = "", ""
        types = n.types or ()
        float_int = st == "number" and "integer" in types and math.isfinite(x) and float(x).is_integer()
        int_float = st == "integer" and "number" in types
        fmt = n.format_name
        if (
            tx is not str
            and tx is not list
            and fmt
            and not (st in types or sf == fmt or float_int or int_float)
        ):
            ctx.errs.append(
                _type_invalid(ctx.field(path), sf, f"{path} in body must be of type {fmt}: {go_quote(sf)}")
            )
            return
        if "number" not in types and "integer" not in types and fmt and (tx is str or tx is list):
            return
        if not (st in types or float_int or int_float):
            ctx.errs.append(
                _type_invalid(
                    ctx.field(path), st, f"{path} in body must be of type {n.type_text}: {go_quote(st)}"
                )
            )

    def _check_junctors(self, x: Any, n: _Node, path: str, ctx: _Ctx) -> None:
        errs = ctx.errs
        base = _fp(ctx.base)
        if n.any_of:
            best: list[FieldError] | None = None
            for sub in n.any_of:
                e: list[FieldError] = []
                self._vnode(x, sub, path, _Ctx(e, ctx.base), MISSING)
                if not e:
                    best = None
                    break
                if best is None or len(e) < len(best):
                    best = e
            else:
                errs.append(invalid(base, "", f"{go_quote(path)} must validate at least one schema (anyOf)"))
            if best:
                errs.extend(best)
        if n.one_of:
            validated = 0
            best = None
            for sub in n.one_of:
                e = []
                self._vnode(x, sub, path, _Ctx(e, ctx.base), MISSING)
                if not e:
                    validated += 1
                    best = None
                    continue
                if validated == 0 and (best is None or len(e) < len(best)):
                    best = e
            if validated != 1:
                extra = "Found none valid" if validated == 0 else f"Found {validated} valid alternatives"
                errs.append(
                    invalid(
                        base, "", f"{go_quote(path)} must validate one and only one schema (oneOf). {extra}"
                    )
                )
                if best:
                    errs.extend(best)
        if n.all_of:
            validated = 0
            for sub in n.all_of:
                e = []
                self._vnode(x, sub, path, _Ctx(e, ctx.base), MISSING)
                if not e:
                    validated += 1
                errs.extend(e)
            if validated != len(n.all_of):
                extra = ". None validated" if validated == 0 else ""
                errs.append(
                    invalid(base, "", f"{go_quote(path)} must validate all the schemas (allOf){extra}")
                )
        if n.not_ is not None:
            e = []
            self._vnode(x, n.not_, path, _Ctx(e, ctx.base), MISSING)
            if not e:
                errs.append(invalid(base, "", f"{go_quote(path)} must not validate the schema (not)"))

    def _check_string(self, x: str, n: _Node, path: str, ctx: _Ctx) -> None:
        errs = ctx.errs
        if n.max_length is not None and len(x) > n.max_length:
            errs.append(_too_long(ctx.field(path), n.max_length))
        elif n.min_length is not None and len(x) < n.min_length:
            errs.append(
                invalid(ctx.field(path), x, f"{path} in body should be at least {n.min_length} chars long")
            )
        elif n.pattern is not None:
            try:
                rx = _go_regex(n.pattern)
            except _RegexError as e:
                errs.append(
                    invalid(
                        ctx.field(path),
                        x,
                        f"{path} in body should match '{n.pattern}, but pattern is invalid: {e}'",
                    )
                )
            else:
                if not rx.search(x):
                    errs.append(invalid(ctx.field(path), x, f"{path} in body should match '{n.pattern}'"))
        if n.format:
            check = _FORMAT_CHECKS.get(n.format)
            if check is not None and not check(x):
                errs.append(
                    _type_invalid(
                        ctx.field(path), x, f"{path} in body must be of type {n.format_name}: {go_quote(x)}"
                    )
                )

    def _check_number(self, x: Any, tx: type, n: _Node, path: str, ctx: _Ctx) -> None:
        errs = ctx.errs
        is_int = tx is int
        if n.multiple_of is not None:
            f = n.multiple_of
            if is_int and float(f).is_integer() and f != 0:
                fi = int(f)
                if fi < 0:
                    errs.append(
                        invalid(
                            ctx.field(path),
                            fi,
                            f"factor MultipleOf declared for {path} must be positive: {fi}",
                        )
                    )
                elif x % fi != 0:
                    errs.append(invalid(ctx.field(path), x, f"{path} in body should be a multiple of {fi}"))
            else:
                if f < 0:
                    errs.append(
                        invalid(
                            ctx.field(path),
                            bad_value(float(f)),
                            f"factor MultipleOf declared for {path} must be positive: {format_float(float(f))}",
                        )
                    )
                elif f == 0 or not _is_json_integer(1 / f * x if f < 1 else x / f):
                    errs.append(
                        invalid(
                            ctx.field(path),
                            bad_value(x),
                            f"{path} in body should be a multiple of {format_float(float(f))}",
                        )
                    )
        if n.minimum is not None:
            if is_int:
                m = math.trunc(n.minimum)
                bad = x <= m if n.exclusive_minimum else x < m
                shown = str(m)
            else:
                m = float(n.minimum)
                bad = x <= m if n.exclusive_minimum else x < m
                shown = format_float(m)
            if bad:
                rel = "greater than" if n.exclusive_minimum else "greater than or equal to"
                errs.append(invalid(ctx.field(path), bad_value(x), f"{path} in body should be {rel} {shown}"))
        if n.maximum is not None:
            if is_int:
                m = math.trunc(n.maximum)
                bad = x >= m if n.exclusive_maximum else x > m
                shown = str(m)
            else:
                m = float(n.maximum)
                bad = x >= m if n.exclusive_maximum else x > m
                shown = format_float(m)
            if bad:
                rel = "less than" if n.exclusive_maximum else "less than or equal to"
                errs.append(invalid(ctx.field(path), bad_value(x), f"{path} in body should be {rel} {shown}"))

    def _check_object(self, x: dict[str, Any], n: _Node, path: str, ctx: _Ctx, old: Any) -> None:
        errs = ctx.errs
        nk = len(x)
        if n.min_properties is not None and nk < n.min_properties:
            errs.append(
                invalid(
                    ctx.field(path), nk, f"{path} in body should have at least {n.min_properties} properties"
                )
            )
            return
        if n.max_properties is not None and nk > n.max_properties:
            errs.append(_too_many(ctx.field(path), nk, n.max_properties))
            return
        props = n.props
        old_map = old if type(old) is dict else None
        if n.add_mode == _ADD_FALSE:
            for k in x:
                if k not in props:
                    errs.append(invalid(ctx.field(path), k, f"{path}.{k} in body is a forbidden property"))
        elif n.add_mode == _ADD_SCHEMA:
            additional = n.additional
            assert additional is not None
            for k, v in x.items():
                if k not in props:
                    o = old_map.get(k, MISSING) if old_map is not None else MISSING
                    self._vnode(v, additional, f"{path}.{k}", ctx, o)
        if nk * 2 < len(props):
            # an object setting few of many properties (a PodSpec's, a container's): its own
            # keys, in the schema's order (the order of the errors)
            order = n.prop_order
            present = sorted((k for k in x if k in order), key=order.__getitem__)
        else:
            present = [k for k in props if k in x]
        for k in present:
            o = old_map.get(k, MISSING) if old_map is not None else MISSING
            self._vnode(x[k], props[k], _child(path, k), ctx, o)
        for r in n.required:
            if r not in x:
                errs.append(required(ctx.field(f"{path}.{r}")))

    # Embedded resources (schema/objectmeta validation) -----------------------------------

    def _validate_embedded(self, x: Any, n: _Node | None, path: str | None, errs: list[FieldError]) -> None:
        if n is None or not n.sub_embedded:
            return
        if type(x) is dict:
            if n.embedded:
                _validate_embedded_resource(x, path, errs)
            self._validate_embedded_map(x, n, path, errs)
        elif type(x) is list:
            for i, v in enumerate(x):
                self._validate_embedded(v, n.items, _fp_index(path, i), errs)

    def _validate_embedded_map(
        self, x: dict[str, Any], n: _Node, path: str | None, errs: list[FieldError]
    ) -> None:
        props = n.props
        for k, v in x.items():
            p = props.get(k)
            if p is not None:
                if p.sub_embedded:
                    self._validate_embedded(v, p, _fp_child(path, k), errs)
            elif n.additional is not None and n.additional.sub_embedded:
                self._validate_embedded(v, n.additional, _fp_key(path, k), errs)

    # x-kubernetes-list-type ---------------------------------------------------------------

    def _lists_map(self, x: dict[str, Any], n: _Node, path: str | None, errs: list[FieldError]) -> None:
        additional = n.additional
        if additional is not None and additional.sub_listtype:
            for k, v in x.items():
                if n.props.get(k) is None:
                    self._lists_value(v, additional, _fp_key(path, k), errs)
        for k, v in x.items():
            p = n.props.get(k)
            if p is not None and p.sub_listtype:
                self._lists_value(v, p, _fp_child(path, k), errs)

    def _lists_value(self, x: Any, n: _Node, path: str, errs: list[FieldError]) -> None:
        if type(x) is dict:
            self._lists_map(x, n, path, errs)
        elif type(x) is list:
            if n.list_type == "set":
                for i in _non_unique(x):
                    errs.append(_duplicate_value(_fp_index(path, i), bad_value(x[i])))
            elif n.list_type == "map":
                errs.extend(_validate_list_map(path, n, x))
            items = n.items
            if items is not None and items.sub_listtype:
                for i, v in enumerate(x):
                    self._lists_value(v, items, _fp_index(path, i), errs)
