"""The compiled schema tree: a CRD schema parsed once into nodes the request passes walk.

Each node carries subtree summaries (has defaults, rules, list types, ...) so that every pass only
descends where it has something to do.
"""

from __future__ import annotations

from typing import Any

from ...apimachinery.cel import _compile_cel, _Program, _projection, escape_cel_property
from ...apimachinery.formats import _SUPPORTED_FORMATS
from ...apimachinery.jsonvalue import MISSING

_ADD_NONE, _ADD_SCHEMA, _ADD_TRUE, _ADD_FALSE = 0, 1, 2, 3


class _Rule:
    __slots__ = (
        "raw",
        "rule",
        "message",
        "message_expression",
        "reason",
        "field_path",
        "optional_old_self",
        "_prog",
        "_msg_prog",
        "_norm_field_path",
        "proj_self",
        "proj_old",
    )

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        self.rule = str(raw.get("rule") or "")
        self.message = str(raw.get("message") or "")
        self.message_expression = str(raw.get("messageExpression") or "")
        self.reason = raw.get("reason")
        self.field_path = str(raw.get("fieldPath") or "")
        self.optional_old_self = raw.get("optionalOldSelf") is True
        self._prog: _Program | None = None
        self._msg_prog: _Program | None = None
        self._norm_field_path: Any = MISSING
        self.proj_self: Any = MISSING
        self.proj_old: Any = MISSING

    @property
    def program(self) -> _Program | None:
        if self._prog is None and self.rule.strip():
            self._prog = _compile_cel(self.rule)
            self.proj_self = _projection(self.rule, "self")
            self.proj_old = _projection(self.rule, "oldSelf")
        return self._prog

    @property
    def message_program(self) -> _Program | None:
        if self._msg_prog is None and self.message_expression.strip():
            self._msg_prog = _compile_cel(self.message_expression)
        return self._msg_prog

    def error_string(self) -> str:
        return self.message.strip() if self.message else self.rule.strip()

    def default_message(self) -> str:
        return self.message.strip() if self.message else f"failed rule: {self.rule.strip()}"


class _Node:
    __slots__ = (
        "raw",
        "type",
        "types",
        "type_text",
        "nullable",
        "format",
        "format_name",
        "props",
        "additional",
        "add_mode",
        "items",
        "preserve",
        "embedded",
        "int_or_string",
        "has_default",
        "default",
        "enum",
        "maximum",
        "exclusive_maximum",
        "minimum",
        "exclusive_minimum",
        "multiple_of",
        "max_length",
        "min_length",
        "pattern",
        "max_items",
        "min_items",
        "unique_items",
        "max_properties",
        "min_properties",
        "required",
        "all_of",
        "any_of",
        "one_of",
        "not_",
        "list_type",
        "list_map_keys",
        "map_type",
        "rules",
        "sub_defaults",
        "sub_rules",
        "sub_transition",
        "sub_listtype",
        "sub_embedded",
        "cel_conv",
        "cel_names",
        "default_props",
        "prop_order",
    )

    def __init__(self, raw: Any, nested: bool = False) -> None:
        if not isinstance(raw, dict):
            raw = {}
        self.raw = raw
        t = raw.get("type")
        self.type = t if isinstance(t, str) and t else None
        self.int_or_string = raw.get("x-kubernetes-int-or-string") is True
        if self.int_or_string:
            self.types: tuple[str, ...] | None = ("integer", "string")
        else:
            self.types = (self.type,) if self.type else None
        self.type_text = ",".join(self.types) if self.types else ""
        self.nullable = raw.get("nullable") is True
        fmt = raw.get("format")
        fmt_norm = fmt.replace("-", "") if isinstance(fmt, str) else ""
        self.format = fmt_norm if fmt_norm in _SUPPORTED_FORMATS else ""
        self.format_name = fmt if self.format else ""
        self.preserve = raw.get("x-kubernetes-preserve-unknown-fields") is True
        self.embedded = raw.get("x-kubernetes-embedded-resource") is True
        self.has_default = raw.get("default") is not None and not nested
        self.default = raw.get("default")

        props = raw.get("properties")
        self.props: dict[str, _Node] = (
            {k: _Node(v, nested) for k, v in props.items() if isinstance(k, str)}
            if isinstance(props, dict)
            else {}
        )
        #: each property's position in ``props``: an object's own fields are checked in that order
        self.prop_order: dict[str, int] = {k: i for i, k in enumerate(self.props)}
        ap = raw.get("additionalProperties", MISSING)
        self.additional: _Node | None = None
        if isinstance(ap, dict):
            self.add_mode = _ADD_SCHEMA
            self.additional = _Node(ap, nested)
        elif ap is True:
            self.add_mode = _ADD_TRUE
        elif ap is False:
            self.add_mode = _ADD_FALSE
        else:
            self.add_mode = _ADD_NONE
        items = raw.get("items")
        self.items: _Node | None = _Node(items, nested) if isinstance(items, dict) else None

        def num(key: str) -> Any:
            v = raw.get(key)
            return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None

        def count(key: str) -> int | None:
            v = num(key)
            return int(v) if v is not None else None

        enum = raw.get("enum")
        self.enum = enum if isinstance(enum, list) and enum else None
        self.maximum = num("maximum")
        self.exclusive_maximum = raw.get("exclusiveMaximum") is True
        self.minimum = num("minimum")
        self.exclusive_minimum = raw.get("exclusiveMinimum") is True
        self.multiple_of = num("multipleOf")
        self.max_length = count("maxLength")
        self.min_length = count("minLength")
        pattern = raw.get("pattern")
        self.pattern = pattern if isinstance(pattern, str) and pattern else None
        self.max_items = count("maxItems")
        self.min_items = count("minItems")
        self.unique_items = raw.get("uniqueItems") is True
        self.max_properties = count("maxProperties")
        self.min_properties = count("minProperties")
        req = raw.get("required")
        self.required = [r for r in req if isinstance(r, str)] if isinstance(req, list) else []

        def subs(key: str) -> list[_Node]:
            v = raw.get(key)
            return [_Node(s, True) for s in v if isinstance(s, dict)] if isinstance(v, list) else []

        self.all_of = subs("allOf")
        self.any_of = subs("anyOf")
        self.one_of = subs("oneOf")
        nt = raw.get("not")
        self.not_ = _Node(nt, True) if isinstance(nt, dict) else None

        lt = raw.get("x-kubernetes-list-type")
        self.list_type = lt if isinstance(lt, str) else None
        keys = raw.get("x-kubernetes-list-map-keys")
        self.list_map_keys = [k for k in keys if isinstance(k, str)] if isinstance(keys, list) else []
        mt = raw.get("x-kubernetes-map-type")
        self.map_type = mt if isinstance(mt, str) else None
        xv = raw.get("x-kubernetes-validations")
        self.rules = (
            [_Rule(r) for r in xv if isinstance(r, dict)] if isinstance(xv, list) and not nested else []
        )

        # Subtree summaries so that each pass only walks where it has something to do.
        children = [*self.props.values()]
        if self.additional is not None:
            children.append(self.additional)
        if self.items is not None:
            children.append(self.items)
        self.default_props = [(k, p) for k, p in self.props.items() if p.has_default]
        self.sub_defaults: bool = (
            bool(self.default_props)
            or (self.items is not None and self.items.has_default)
            or (self.additional is not None and self.additional.has_default)
            or any(c.sub_defaults for c in children)
        )
        self.sub_rules: bool = bool(self.rules) or any(c.sub_rules for c in children)
        self.sub_transition: bool = any(r.rule and "oldSelf" in r.rule for r in self.rules) or any(
            c.sub_transition for c in children
        )
        self.sub_listtype: bool = self.list_type in ("set", "map") or any(c.sub_listtype for c in children)
        self.sub_embedded: bool = self.embedded or any(c.sub_embedded for c in children)
        names: dict[str, str | None] = {k: escape_cel_property(k) for k in self.props}
        self.cel_names = names
        self.cel_conv: bool = (
            self.type == "number"
            or (self.type == "string" and self.format in ("byte", "date", "datetime", "duration"))
            or self.embedded
            or any(v != k for k, v in names.items())
            or any(c.cel_conv for c in children)
        )

    @property
    def schema_type(self) -> str:
        return self.type or ""


def _root_node(schema: Any) -> _Node:
    return _Node(schema)
