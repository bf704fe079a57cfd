"""CRD-time checks of a version's ``openAPIV3Schema`` (apiextensions.k8s.io/v1 validation).

:func:`validate_structural` runs them all: the status-subresource root restrictions,
structurality, valid and pruned defaults, the schema restrictions of
ValidateCustomResourceDefinitionOpenAPISchema (forbidden keywords, list and map types, list-map
keys) and the static and compile checks of ``x-kubernetes-validations``.
"""

from __future__ import annotations

import re
from typing import Any

from fleetplane.apimachinery.errors import FieldError, forbidden, invalid, not_supported, required

from ...apimachinery.cel import _compile_cel
from ...apimachinery.jsonvalue import MISSING, copy_json, deep_equal
from .compiled import StructuralSchema
from .fieldpath import _key
from .prune import _META_FIELDS
from .rules import _valid_field_path
from .structural import _is_zero, _structural_completeness, _structural_invariants, _structuralizable
from .tree import _Node, _root_node
from .validate import _Ctx, _validate_embedded_resource

_OPENAPI_V3_TYPES = ("array", "boolean", "integer", "number", "object", "string")


def validate_structural(
    openapi_v3_schema: dict[str, Any],
    path: str = "spec.versions[0].schema.openAPIV3Schema",
    *,
    status_subresource: bool = False,
    require_pruned_defaults: bool = True,
) -> list[FieldError]:
    """The CRD-time checks kube applies to a version's ``openAPIV3Schema`` (apiextensions/v1).

    Covers structurality (ValidateStructural), defaults (valid and pruned), the schema
    restrictions of ValidateCustomResourceDefinitionOpenAPISchema (forbidden keywords, list and
    map types, list-map keys) and the static and compile checks of ``x-kubernetes-validations``.
    """
    errs: list[FieldError] = []
    if not isinstance(openapi_v3_schema, dict):
        return [required(path, "")]
    schema = openapi_v3_schema
    if status_subresource:
        errs.extend(_status_root_errors(schema, path))
    if schema.get("nullable") is True:
        errs.append(forbidden(f"{path}.nullable", "nullable cannot be true at the root"))

    cel_ok = False
    if _structuralizable(schema):
        serrs: list[FieldError] = []
        _structural_invariants(schema, "root", path, serrs)
        _structural_completeness(schema, path, path, serrs)
        serrs.sort(key=str)
        if serrs:
            errs.extend(serrs)
        else:
            derrs: list[FieldError] = []
            _validate_defaults(schema, _root_node(schema), path, derrs, True, False, require_pruned_defaults)
            if derrs:
                errs.extend(derrs)
            else:
                cel_ok = True
    schema_errs: list[FieldError] = []
    cel_errs: list[FieldError] = []
    _openapi_checks(schema, path, schema_errs, cel_errs, _SSV(), True, cel_ok)
    errs.extend(schema_errs)
    errs.extend(cel_errs)
    return errs


_ALLOWED_STATUS_ROOT = (
    "description",
    "type",
    "format",
    "title",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "required",
    "items",
    "properties",
    "externalDocs",
    "example",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-validations",
)
_ALLOWED_STATUS_ROOT_GO = (
    "[Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength "
    "Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example "
    "XPreserveUnknownFields XValidations]"
)


def _status_root_errors(schema: dict[str, Any], path: str) -> list[FieldError]:
    for k, v in schema.items():
        if _is_zero(v):
            continue
        if k == "type":
            if v != "object":
                return [
                    invalid(
                        f"{path}.type",
                        v,
                        'only "object" is allowed as the type at the root of the schema if the status subresource is enabled',
                    )
                ]
            continue
        if k not in _ALLOWED_STATUS_ROOT:
            return [
                invalid(
                    path,
                    schema,
                    f"only {_ALLOWED_STATUS_ROOT_GO} fields are allowed at the root of the schema if the status "
                    "subresource is enabled",
                )
            ]
    return []


def _validate_defaults(
    s: dict[str, Any],
    n: _Node,
    path: str,
    errs: list[FieldError],
    resource_root: bool,
    inside_meta: bool,
    require_pruned: bool,
) -> None:
    """structuraldefaulting.ValidateDefaults: defaults must validate and already be pruned."""
    embedded = n.embedded or resource_root
    if n.embedded:
        inside_meta = False
    if "default" in s and s["default"] is not None:
        default = s["default"]
        dpath = f"{path}.default"
        helper = StructuralSchema.__new__(StructuralSchema)
        helper.raw = s
        helper._root = n
        helper._node_cache = {}
        local: list[FieldError] = []
        if not inside_meta and require_pruned:
            pruned = copy_json(default)
            out: list[str] = []
            if type(pruned) is dict:
                helper._prune_map(pruned, n, "", out, False, embedded, n.preserve)
            else:
                helper._prune(pruned, n, "", out, False)
            if not deep_equal(pruned, default):
                local.append(invalid(dpath, default, "must not have unknown fields"))
        if not local and embedded and type(default) is dict and not inside_meta:
            _validate_embedded_resource(default, dpath, local)
        if not local:
            helper._vnode(default, n, "", _Ctx(local, dpath), MISSING)
        if not local and n.sub_rules:
            helper._cel(
                copy_json(default), n, dpath, copy_json(default), local, False, False, resource_root
            )
        errs.extend(local)
    items = s.get("items")
    if isinstance(items, dict) and n.items is not None:
        _validate_defaults(items, n.items, f"{path}.items", errs, False, inside_meta, require_pruned)
    props = s.get("properties")
    if isinstance(props, dict):
        for k, sub in props.items():
            p = n.props.get(k)
            if not isinstance(sub, dict) or p is None:
                continue
            sub_meta = inside_meta or (embedded and k in _META_FIELDS)
            _validate_defaults(sub, p, _key(f"{path}.properties", k), errs, False, sub_meta, require_pruned)


class _SSV:
    """specStandardValidatorV3 state while walking the schema."""

    __slots__ = ("allow_defaults", "defaults_reason", "inside_meta", "uncorrelatable")

    def __init__(self) -> None:
        self.allow_defaults = True
        self.defaults_reason = ""
        self.inside_meta = False
        self.uncorrelatable: str | None = None

    def clone(self, **kw: Any) -> _SSV:
        c = _SSV()
        c.allow_defaults = self.allow_defaults
        c.defaults_reason = self.defaults_reason
        c.inside_meta = self.inside_meta
        c.uncorrelatable = self.uncorrelatable
        for k, v in kw.items():
            setattr(c, k, v)
        return c

    def forbid_defaults(self, reason: str) -> _SSV:
        return self.clone(allow_defaults=False, defaults_reason=reason)

    def forbid_old_self(self, path: str) -> _SSV:
        return self if self.uncorrelatable is not None else self.clone(uncorrelatable=path)


_SUPPORTED_REASONS = ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"]


def _openapi_checks(
    s: Any,
    path: str,
    schema_errs: list[FieldError],
    cel_errs: list[FieldError],
    ssv: _SSV,
    is_root: bool,
    cel_ok: bool,
) -> None:
    if not isinstance(s, dict):
        return
    start = len(schema_errs)
    _ssv_validate(s, path, ssv, schema_errs)
    if s.get("uniqueItems") is True:
        schema_errs.append(
            forbidden(
                f"{path}.uniqueItems",
                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            )
        )
    props_raw = s.get("properties")
    props: dict[str, Any] = props_raw if isinstance(props_raw, dict) else {}
    ap = s.get("additionalProperties", MISSING)
    if ap is not MISSING and ap is not None:
        if props and (ap is False or isinstance(ap, dict)):
            schema_errs.append(
                forbidden(
                    f"{path}.additionalProperties", "additionalProperties and properties are mutual exclusive"
                )
            )
        sub = ssv
        if ssv.inside_meta:
            sub = ssv.forbid_defaults("inside additionalProperties applying to object metadata")
        if isinstance(ap, dict):
            _openapi_checks(ap, f"{path}.additionalProperties", schema_errs, cel_errs, sub, False, cel_ok)
    mt = s.get("x-kubernetes-map-type")
    for k, v in props.items():
        sub = ssv
        if mt is not None and mt not in ("granular", "atomic"):
            sub = sub.forbid_old_self(path)
        if (is_root or s.get("x-kubernetes-embedded-resource") is True) and k in _META_FIELDS:
            sub = sub.clone(inside_meta=True)
            if is_root:
                sub = sub.forbid_defaults(f"in top-level {k}")
        _openapi_checks(v, _key(f"{path}.properties", k), schema_errs, cel_errs, sub, False, cel_ok)
    if isinstance(s.get("not"), dict):
        _openapi_checks(s["not"], f"{path}.not", schema_errs, cel_errs, ssv, False, False)
    for key in ("allOf", "oneOf", "anyOf"):
        lst = s.get(key)
        if isinstance(lst, list):
            for i, sub_schema in enumerate(lst):
                _openapi_checks(sub_schema, f"{path}.{key}[{i}]", schema_errs, cel_errs, ssv, False, False)
    defs = s.get("definitions")
    if isinstance(defs, dict):
        for k, v in defs.items():
            _openapi_checks(v, _key(f"{path}.definitions", k), schema_errs, cel_errs, ssv, False, False)
    lt = s.get("x-kubernetes-list-type")
    items = s.get("items")
    if items is not None:
        sub = ssv if lt == "map" else ssv.forbid_old_self(path)
        if isinstance(items, dict):
            _openapi_checks(items, f"{path}.items", schema_errs, cel_errs, sub, False, cel_ok)
        elif isinstance(items, list):
            for i, it in enumerate(items):
                _openapi_checks(it, f"{path}.items[{i}]", schema_errs, cel_errs, sub, False, cel_ok)
    deps = s.get("dependencies")
    if isinstance(deps, dict):
        for k, v in deps.items():
            if isinstance(v, dict):
                _openapi_checks(v, _key(f"{path}.dependencies", k), schema_errs, cel_errs, ssv, False, False)

    typ = s.get("type") or ""
    pres = s.get("x-kubernetes-preserve-unknown-fields")
    if pres is False:
        schema_errs.append(
            invalid(f"{path}.x-kubernetes-preserve-unknown-fields", False, "must be true or undefined")
        )
    if mt is not None and typ != "object":
        if not typ:
            schema_errs.append(
                required(f"{path}.type", "must be object if x-kubernetes-map-type is specified")
            )
        else:
            schema_errs.append(
                invalid(f"{path}.type", typ, "must be object if x-kubernetes-map-type is specified")
            )
    if mt is not None and mt not in ("atomic", "granular"):
        schema_errs.append(not_supported(f"{path}.x-kubernetes-map-type", mt, ["atomic", "granular"]))
    if lt is not None and typ != "array":
        if not typ:
            schema_errs.append(
                required(f"{path}.type", "must be array if x-kubernetes-list-type is specified")
            )
        else:
            schema_errs.append(
                invalid(f"{path}.type", typ, "must be array if x-kubernetes-list-type is specified")
            )
    elif lt == "set" and isinstance(items, dict):
        itype = items.get("type")
        if itype == "array":
            ilt = items.get("x-kubernetes-list-type")
            if ilt is not None and ilt != "atomic":
                schema_errs.append(
                    invalid(
                        f"{path}.items.x-kubernetes-list-type",
                        ilt,
                        "must be atomic as item of a list with x-kubernetes-list-type=set",
                    )
                )
        elif itype == "object":
            if items.get("x-kubernetes-map-type") != "atomic":
                schema_errs.append(
                    invalid(
                        f"{path}.items.x-kubernetes-map-type",
                        items.get("x-kubernetes-list-type"),
                        "must be atomic as item of a list with x-kubernetes-list-type=set",
                    )
                )
    if lt is not None and lt not in ("atomic", "set", "map"):
        schema_errs.append(not_supported(f"{path}.x-kubernetes-list-type", lt, ["atomic", "set", "map"]))
    keys = s.get("x-kubernetes-list-map-keys")
    keys = keys if isinstance(keys, list) else []
    if keys:
        if lt is None:
            schema_errs.append(
                required(
                    f"{path}.x-kubernetes-list-type", "must be map if x-kubernetes-list-map-keys is non-empty"
                )
            )
        elif lt != "map":
            schema_errs.append(
                invalid(
                    f"{path}.x-kubernetes-list-type",
                    lt,
                    "must be map if x-kubernetes-list-map-keys is non-empty",
                )
            )
    if lt == "map":
        if not keys:
            schema_errs.append(
                required(
                    f"{path}.x-kubernetes-list-map-keys", "must not be empty if x-kubernetes-list-type is map"
                )
            )
        if items is None:
            schema_errs.append(
                required(f"{path}.items", "must have a schema if x-kubernetes-list-type is map")
            )
        elif not isinstance(items, dict):
            schema_errs.append(
                invalid(
                    f"{path}.items", items, "must only have a single schema if x-kubernetes-list-type is map"
                )
            )
        else:
            itype = items.get("type") or ""
            if itype != "object":
                schema_errs.append(
                    invalid(
                        f"{path}.items.type",
                        itype,
                        "must be object if parent array's x-kubernetes-list-type is map",
                    )
                )
            else:
                iprops_raw = items.get("properties")
                iprops: dict[str, Any] = iprops_raw if isinstance(iprops_raw, dict) else {}
                seen: set[str] = set()
                for k in keys:
                    kp = iprops.get(k)
                    if isinstance(kp, dict):
                        if kp.get("type") in ("array", "object"):
                            schema_errs.append(
                                invalid(
                                    f"{_key(f'{path}.items.properties', k)}.type",
                                    itype,
                                    "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                )
                            )
                    else:
                        schema_errs.append(
                            invalid(
                                f"{path}.x-kubernetes-list-map-keys",
                                keys,
                                "entries must all be names of item properties",
                            )
                        )
                    if k in seen:
                        schema_errs.append(
                            invalid(
                                f"{path}.x-kubernetes-list-map-keys",
                                keys,
                                "must not contain duplicate entries",
                            )
                        )
                    seen.add(k)
    schema_errs.extend(_map_list_keys_map_set(s, path))

    rules = s.get("x-kubernetes-validations")
    if isinstance(rules, list) and rules:
        vpath = f"{path}.x-kubernetes-validations"
        for i, rule in enumerate(rules):
            if not isinstance(rule, dict):
                schema_errs.append(invalid(f"{vpath}[{i}]", rule, "must be an object"))
                continue
            r = str(rule.get("rule") or "")
            msg_raw = rule.get("message")
            msg: str = msg_raw if isinstance(msg_raw, str) else ""
            mexpr = rule.get("messageExpression") if isinstance(rule.get("messageExpression"), str) else ""
            tr, tm = r.strip(), msg.strip()
            if not tr:
                schema_errs.append(required(f"{vpath}[{i}].rule", "rule is not specified"))
            elif msg and not tm:
                schema_errs.append(
                    invalid(f"{vpath}[{i}].message", msg, "message must be non-empty if specified")
                )
            elif re.search(r"[\n\r]", tm):
                schema_errs.append(
                    invalid(f"{vpath}[{i}].message", msg, "message must not contain line breaks")
                )
            elif re.search(r"[\n\r]", tr) and not tm:
                schema_errs.append(
                    required(
                        f"{vpath}[{i}].message", "message must be specified if rule contains line breaks"
                    )
                )
            if mexpr and not mexpr.strip():
                schema_errs.append(
                    required(
                        f"{vpath}[{i}].messageExpression", "messageExpression must be non-empty if specified"
                    )
                )
            reason = rule.get("reason")
            if reason is not None and reason not in _SUPPORTED_REASONS:
                schema_errs.append(not_supported(f"{vpath}[{i}].reason", reason, _SUPPORTED_REASONS))
            fp = rule.get("fieldPath")
            if isinstance(fp, str) and fp:
                if not fp.strip():
                    schema_errs.append(
                        invalid(f"{vpath}[{i}].fieldPath", fp, "fieldPath must be non-empty if specified")
                    )
                if re.search(r"[\n\r]", fp):
                    schema_errs.append(
                        invalid(f"{vpath}[{i}].fieldPath", fp, "fieldPath must not contain line breaks")
                    )
                if cel_ok or _structuralizable(s):
                    ok, _, _ = _valid_field_path(fp, _Node(s))
                    if not ok:
                        schema_errs.append(
                            invalid(f"{vpath}[{i}].fieldPath", fp, "fieldPath must be a valid path")
                        )
        if len(schema_errs) == start and cel_ok:
            for i, rule in enumerate(rules):
                if not isinstance(rule, dict):
                    continue
                r = str(rule.get("rule") or "")
                uses_old = False
                if r.strip():
                    prog = _compile_cel(r)
                    if prog.error is not None:
                        cel_errs.append(
                            invalid(f"{vpath}[{i}].rule", rule, f"compilation failed: {prog.error}")
                        )
                        continue
                    uses_old = prog.uses_old_self
                mexpr = rule.get("messageExpression")
                if isinstance(mexpr, str) and mexpr.strip():
                    mprog = _compile_cel(mexpr)
                    if mprog.error is not None:
                        cel_errs.append(
                            invalid(
                                f"{vpath}[{i}].messageExpression",
                                rule,
                                f"messageExpression compilation failed: {mprog.error}",
                            )
                        )
                if uses_old:
                    if ssv.uncorrelatable is not None:
                        cel_errs.append(
                            invalid(
                                f"{vpath}[{i}].rule",
                                r,
                                f"oldSelf cannot be used on the uncorrelatable portion of the schema within {ssv.uncorrelatable}",
                            )
                        )
                elif "optionalOldSelf" in rule and rule["optionalOldSelf"] is not None:
                    cel_errs.append(
                        invalid(
                            f"{vpath}[{i}].optionalOldSelf",
                            rule["optionalOldSelf"],
                            "may not be set if oldSelf is not used in rule",
                        )
                    )


def _ssv_validate(s: dict[str, Any], path: str, ssv: _SSV, errs: list[FieldError]) -> None:
    typ = s.get("type")
    if isinstance(typ, str) and typ and typ not in _OPENAPI_V3_TYPES:
        errs.append(not_supported(f"{path}.type", typ, list(_OPENAPI_V3_TYPES)))
    if "default" in s and s["default"] is not None and not ssv.allow_defaults:
        detail = "must not be set"
        if ssv.defaults_reason:
            detail += " " + ssv.defaults_reason
        errs.append(forbidden(f"{path}.default", detail))
    if s.get("id"):
        errs.append(forbidden(f"{path}.id", "id is not supported"))
    if s.get("additionalItems") is not None:
        errs.append(forbidden(f"{path}.additionalItems", "additionalItems is not supported"))
    if s.get("patternProperties"):
        errs.append(forbidden(f"{path}.patternProperties", "patternProperties is not supported"))
    if s.get("definitions"):
        errs.append(forbidden(f"{path}.definitions", "definitions is not supported"))
    if s.get("dependencies") is not None:
        errs.append(forbidden(f"{path}.dependencies", "dependencies is not supported"))
    if s.get("$ref") is not None:
        errs.append(forbidden(f"{path}.$ref", "$ref is not supported"))
    if typ == "null":
        errs.append(forbidden(f"{path}.type", "type cannot be set to null, use nullable as an alternative"))
    if isinstance(s.get("items"), list) and s["items"]:
        errs.append(forbidden(f"{path}.items", "items must be a schema object and not an array"))
    if ssv.inside_meta and s.get("x-kubernetes-embedded-resource") is True:
        errs.append(
            forbidden(f"{path}.x-kubernetes-embedded-resource", "must not be used inside of resource meta")
        )


def _map_list_keys_map_set(s: dict[str, Any], path: str) -> list[FieldError]:
    items = s.get("items")
    lt = s.get("x-kubernetes-list-type")
    if not isinstance(items, dict) or lt not in ("set", "map"):
        return []
    errs: list[FieldError] = []
    if items.get("nullable") is True:
        errs.append(
            forbidden(f"{path}.items.nullable", f"cannot be nullable when x-kubernetes-list-type is {lt}")
        )
    if lt == "map":
        req = set(items.get("required") or []) if isinstance(items.get("required"), list) else set()
        iprops_raw = items.get("properties")
        iprops: dict[str, Any] = iprops_raw if isinstance(iprops_raw, dict) else {}
        keys = s.get("x-kubernetes-list-map-keys")
        for k in keys if isinstance(keys, list) else []:
            kp = iprops.get(k)
            if not isinstance(kp, dict):
                continue
            if k not in req and kp.get("default") is None:
                errs.append(
                    required(
                        f"{_key(f'{path}.items.properties', k)}.default",
                        "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                    )
                )
            if kp.get("nullable") is True:
                errs.append(
                    forbidden(
                        f"{_key(f'{path}.items.properties', k)}.nullable",
                        "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                    )
                )
    return errs
