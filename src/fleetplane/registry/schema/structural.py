"""Is a CRD schema structural? kube's ValidateStructural (apiextensions ``schema`` package).

Structural invariants (types everywhere, metadata restrictions, int-or-string and embedded
resource rules), the restrictions on value validations inside junctors (anyOf, allOf, oneOf,
not), and completeness (junctors may only mention fields the structural part specifies).
"""

from __future__ import annotations

from typing import Any

from fleetplane.apimachinery.errors import FieldError, forbidden, invalid, required

from ...apimachinery.goregex import _regex_error
from ...apimachinery.jsonvalue import MISSING
from .fieldpath import _key


def _is_int_or_string_any_of(anyof: Any) -> bool:
    return bool(anyof == [{"type": "integer"}, {"type": "string"}])


# Schema keywords that are not part of kube's Structural type (dropped by NewStructural), plus the
# two that the root-metadata check clears before comparing.
_NOT_STRUCTURAL_KEYS = frozenset(
    (
        "type",
        "default",
        "example",
        "id",
        "$schema",
        "$ref",
        "definitions",
        "dependencies",
        "patternProperties",
    )
)


def _is_zero(v: Any) -> bool:
    return v is None or v is False or v == 0 and not isinstance(v, bool) or v in ("", [], {})


def _structuralizable(s: Any) -> bool:
    """NewStructural only fails on shapes that the schema checks report anyway (items arrays)."""
    if not isinstance(s, dict):
        return False
    items = s.get("items")
    if isinstance(items, list):
        return False
    subs: list[Any] = []
    if isinstance(items, dict):
        subs.append(items)
    for key in ("properties",):
        v = s.get(key)
        if isinstance(v, dict):
            subs.extend(v.values())
    ap = s.get("additionalProperties")
    if isinstance(ap, dict):
        subs.append(ap)
    for key in ("allOf", "anyOf", "oneOf"):
        v = s.get(key)
        if isinstance(v, list):
            subs.extend(v)
    if isinstance(s.get("not"), dict):
        subs.append(s["not"])
    return all(_structuralizable(x) for x in subs if isinstance(x, dict))


def _structural_invariants(s: dict[str, Any], lvl: str, path: str, errs: list[FieldError]) -> None:
    typ = s.get("type") or ""
    items = s.get("items")
    props_raw = s.get("properties")
    props: dict[str, Any] = props_raw if isinstance(props_raw, dict) else {}
    ap = s.get("additionalProperties", MISSING)
    preserve = s.get("x-kubernetes-preserve-unknown-fields") is True
    embedded = s.get("x-kubernetes-embedded-resource") is True
    ios = s.get("x-kubernetes-int-or-string") is True

    if typ == "array" and items is None:
        errs.append(required(f"{path}.items", "must be specified"))
    if isinstance(items, dict):
        _structural_invariants(items, "item", f"{path}.items", errs)
    for k, v in props.items():
        if isinstance(v, dict):
            _structural_invariants(v, "field", _key(f"{path}.properties", k), errs)
    if ap is not MISSING and ap is not None:
        if lvl == "root":
            errs.append(forbidden(f"{path}.additionalProperties", "must not be used at the root"))
        if isinstance(ap, dict):
            _structural_invariants(ap, "field", f"{path}.additionalProperties", errs)

    if ios and preserve:
        errs.append(
            invalid(
                f"{path}.x-kubernetes-preserve-unknown-fields",
                True,
                "must be false if x-kubernetes-int-or-string is true",
            )
        )
    if ios and embedded:
        errs.append(
            invalid(
                f"{path}.x-kubernetes-embedded-resource",
                True,
                "must be false if x-kubernetes-int-or-string is true",
            )
        )

    skip_any_of = _is_int_or_string_any_of(s.get("anyOf"))
    all_of = s.get("allOf")
    skip_first_all_of_any_of = (
        isinstance(all_of, list)
        and all_of
        and isinstance(all_of[0], dict)
        and _is_int_or_string_any_of(all_of[0].get("anyOf"))
    )
    _value_validation(s, bool(skip_any_of), bool(skip_first_all_of_any_of), path, errs)

    check_metadata = lvl == "root" or embedded
    if embedded and typ != "object":
        if not typ:
            errs.append(required(f"{path}.type", "must be object if x-kubernetes-embedded-resource is true"))
        else:
            errs.append(
                invalid(f"{path}.type", typ, "must be object if x-kubernetes-embedded-resource is true")
            )
    elif not typ and not ios and not preserve:
        detail = {
            "root": "must not be empty at the root",
            "item": "must not be empty for specified array items",
            "field": "must not be empty for specified object fields",
        }[lvl]
        errs.append(required(f"{path}.type", detail))
    if embedded and ap is not MISSING and ap is not None:
        errs.append(
            forbidden(
                f"{path}.additionalProperties", "must not be used if x-kubernetes-embedded-resource is set"
            )
        )
    if lvl == "root" and typ and typ != "object":
        errs.append(invalid(f"{path}.type", typ, "must be object at the root"))
    for meta_field in ("kind", "apiVersion"):
        sub = props.get(meta_field)
        if isinstance(sub, dict) and check_metadata and (sub.get("type") or "") != "string":
            errs.append(
                invalid(
                    f"{_key(f'{path}.properties', meta_field)}.type", sub.get("type") or "", "must be string"
                )
            )
    meta = props.get("metadata")
    if isinstance(meta, dict):
        mpath = _key(f"{path}.properties", "metadata")
        if check_metadata and (meta.get("type") or "") != "object":
            errs.append(invalid(f"{mpath}.type", meta.get("type") or "", "must be object"))
        if lvl == "root":
            rest = {k: v for k, v in meta.items() if k not in _NOT_STRUCTURAL_KEYS}
            mprops = rest.pop("properties", None)
            if isinstance(mprops, dict) and set(mprops) - {"name", "generateName"}:
                rest["properties"] = mprops
            if any(not _is_zero(v) for v in rest.values()):
                errs.append(
                    forbidden(
                        mpath,
                        "must not specify anything other than name and generateName, but metadata is implicitly specified",
                    )
                )
    if embedded and not preserve and not props:
        errs.append(
            required(
                f"{path}.properties",
                "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
            )
        )


def _value_validation(
    s: dict[str, Any], skip_any_of: bool, skip_first_all_of_any_of: bool, path: str, errs: list[FieldError]
) -> None:
    any_of = s.get("anyOf")
    if isinstance(any_of, list) and not skip_any_of:
        for i, v in enumerate(any_of):
            if isinstance(v, dict):
                _nested_value_validation(v, False, f"{path}.anyOf[{i}]", errs)
    all_of = s.get("allOf")
    if isinstance(all_of, list):
        for i, v in enumerate(all_of):
            if isinstance(v, dict):
                _nested_value_validation(v, skip_first_all_of_any_of and i == 0, f"{path}.allOf[{i}]", errs)
    one_of = s.get("oneOf")
    if isinstance(one_of, list):
        for i, v in enumerate(one_of):
            if isinstance(v, dict):
                _nested_value_validation(v, False, f"{path}.oneOf[{i}]", errs)
    nt = s.get("not")
    if isinstance(nt, dict):
        _nested_value_validation(nt, False, f"{path}.not", errs)
    pattern = s.get("pattern")
    if isinstance(pattern, str) and pattern:
        err = _regex_error(pattern)
        if err:
            errs.append(
                invalid(f"{path}.pattern", pattern, f"must be a valid regular expression, but isn't: {err}")
            )


_NESTED_FORBIDDEN = (
    ("type", "must be empty to be structural"),
    ("default", "must be undefined to be structural"),
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"),
    ("externalDocs", "must be undefined to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
    ("x-kubernetes-embedded-resource", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
    ("x-kubernetes-list-type", "must be undefined to be structural"),
    ("x-kubernetes-map-type", "must be undefined to be structural"),
    ("x-kubernetes-validations", "must be empty to be structural"),
)


def _nested_value_validation(v: dict[str, Any], skip_any_of: bool, path: str, errs: list[FieldError]) -> None:
    _value_validation(v, skip_any_of, False, path, errs)
    items = v.get("items")
    if isinstance(items, dict):
        _nested_value_validation(items, False, f"{path}.items", errs)
    props = v.get("properties")
    if isinstance(props, dict):
        for k, p in props.items():
            if isinstance(p, dict):
                _nested_value_validation(p, False, _key(f"{path}.properties", k), errs)
    if "additionalProperties" in v and v["additionalProperties"] is not None:
        errs.append(forbidden(f"{path}.additionalProperties", "must be undefined to be structural"))
    for key, detail in _NESTED_FORBIDDEN:
        val = v.get(key)
        if key == "default":
            if key in v and val is not None:
                errs.append(forbidden(f"{path}.{key}", detail))
        elif not _is_zero(val):
            errs.append(forbidden(f"{path}.{key}", detail))
    if isinstance(props, dict) and "metadata" in props:
        errs.append(
            forbidden(_key(f"{path}.properties", "metadata"), "must not be specified in a nested context")
        )


def _structural_completeness(s: dict[str, Any], spath: str, vpath: str, errs: list[FieldError]) -> None:
    _value_validation_completeness(s, s, spath, vpath, errs)


def _value_validation_completeness(
    v: dict[str, Any], s: Any, spath: str, vpath: str, errs: list[FieldError]
) -> None:
    if not isinstance(s, dict):
        errs.append(required(spath, f"because it is defined in {vpath}"))
        return
    nt = v.get("not")
    if isinstance(nt, dict):
        _nested_completeness(nt, s, spath, f"{vpath}.not", errs)
    for key in ("allOf", "anyOf", "oneOf"):
        lst = v.get(key)
        if isinstance(lst, list):
            for i, sub in enumerate(lst):
                if isinstance(sub, dict):
                    _nested_completeness(sub, s, spath, f"{vpath}.{key}[{i}]", errs)


def _nested_completeness(v: dict[str, Any], s: Any, spath: str, vpath: str, errs: list[FieldError]) -> None:
    if not isinstance(s, dict):
        errs.append(required(spath, f"because it is defined in {vpath}"))
        return
    _value_validation_completeness(v, s, spath, vpath, errs)
    items = v.get("items")
    if isinstance(items, dict):
        sitems = s.get("items")
        _nested_completeness(
            items, sitems if isinstance(sitems, dict) else None, f"{spath}.items", f"{vpath}.items", errs
        )
    props = v.get("properties")
    if isinstance(props, dict):
        sprops_raw = s.get("properties")
        sprops: dict[str, Any] = sprops_raw if isinstance(sprops_raw, dict) else {}
        for k, vp in props.items():
            if not isinstance(vp, dict):
                continue
            sp = sprops.get(k)
            if not isinstance(sp, dict):
                errs.append(
                    required(
                        _key(f"{spath}.properties", k),
                        f"because it is defined in {_key(f'{vpath}.properties', k)}",
                    )
                )
            else:
                _nested_completeness(
                    vp, sp, _key(f"{spath}.properties", k), _key(f"{vpath}.properties", k), errs
                )
