"""Type checks that kube's typed decoder does for free: a field of ObjectMeta (or of the
request's options) with the wrong JSON type is a 400 decode error, never a crash later on."""

from __future__ import annotations

from typing import Any

from ..apimachinery import errors as e

_STRINGS = ("name", "generateName", "namespace", "uid", "resourceVersion", "selfLink")
_TIMES = ("creationTimestamp", "deletionTimestamp")
_OWNER_REF_TYPES = {"apiVersion": str, "kind": str, "name": str, "uid": str, "controller": bool,
                    "blockOwnerDeletion": bool}

_GO_TYPES = {str: "string", bool: "bool", int: "int64", dict: "object", list: "array"}


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object"


def _fail(kind: str, version: str, path: str, value: Any, want: str) -> e.StatusError:
    return e.bad_request(f'{kind} in version "{version}" cannot be handled as a {kind}: json: cannot unmarshal '
                         f"{_json_type(value)} into Go struct field {path} of type {want}")


def check_object_meta(obj: dict[str, Any], kind: str, version: str) -> None:
    """Raise a 400 like kube's when metadata or one of its fields has the wrong JSON type."""
    meta = obj.get("metadata")
    if meta is None:
        return
    if not isinstance(meta, dict):
        raise _fail(kind, version, f"{kind}.metadata", meta, "v1.ObjectMeta")
    for f in _STRINGS + _TIMES:
        v = meta.get(f)
        if v is not None and not isinstance(v, str):
            raise _fail(kind, version, f"ObjectMeta.metadata.{f}", v, "string")
    gen = meta.get("generation")
    if gen is not None and (isinstance(gen, bool) or not isinstance(gen, int)):
        raise _fail(kind, version, "ObjectMeta.metadata.generation", gen, "int64")
    grace = meta.get("deletionGracePeriodSeconds")
    if grace is not None and (isinstance(grace, bool) or not isinstance(grace, int)):
        raise _fail(kind, version, "ObjectMeta.metadata.deletionGracePeriodSeconds", grace, "int64")
    for f in ("labels", "annotations"):
        v = meta.get(f)
        if v is None:
            continue
        if not isinstance(v, dict):
            raise _fail(kind, version, f"ObjectMeta.metadata.{f}", v, "map[string]string")
        for val in v.values():
            if not isinstance(val, str):
                raise _fail(kind, version, f"ObjectMeta.metadata.{f}", val, "string")
    fins = meta.get("finalizers")
    if fins is not None:
        if not isinstance(fins, list):
            raise _fail(kind, version, "ObjectMeta.metadata.finalizers", fins, "[]string")
        for f in fins:
            if not isinstance(f, str):
                raise _fail(kind, version, "ObjectMeta.metadata.finalizers", f, "string")
    refs = meta.get("ownerReferences")
    if refs is not None:
        if not isinstance(refs, list):
            raise _fail(kind, version, "ObjectMeta.metadata.ownerReferences", refs, "[]v1.OwnerReference")
        for ref in refs:
            if not isinstance(ref, dict):
                raise _fail(kind, version, "ObjectMeta.metadata.ownerReferences", ref, "v1.OwnerReference")
            for f, t in _OWNER_REF_TYPES.items():
                v = ref.get(f)
                if v is not None and not isinstance(v, t):
                    raise _fail(kind, version, f"OwnerReference.metadata.ownerReferences.{f}", v, _GO_TYPES[t])
    mf = meta.get("managedFields")
    if mf is not None:
        if not isinstance(mf, list) or not all(isinstance(m, dict) for m in mf):
            raise _fail(kind, version, "ObjectMeta.metadata.managedFields", mf, "[]v1.ManagedFieldsEntry")


def check_delete_options(options: Any) -> dict[str, Any]:
    """DeleteOptions as a dict with well-typed fields, or a 400."""
    if not isinstance(options, dict):
        raise e.bad_request("DeleteOptions in version \"v1\" cannot be handled as a DeleteOptions: the body must be an object")
    pre = options.get("preconditions")
    if pre is not None and (not isinstance(pre, dict) or any(v is not None and not isinstance(v, str) for v in pre.values())):
        raise e.bad_request("DeleteOptions in version \"v1\" cannot be handled as a DeleteOptions: json: cannot unmarshal "
                            f"{_json_type(pre)} into Go struct field DeleteOptions.preconditions of type v1.Preconditions")
    for f, t in (("propagationPolicy", str), ("gracePeriodSeconds", int), ("orphanDependents", bool)):
        v = options.get(f)
        if v is not None and (not isinstance(v, t) or (t is int and isinstance(v, bool))):
            raise e.bad_request("DeleteOptions in version \"v1\" cannot be handled as a DeleteOptions: json: cannot "
                                f"unmarshal {_json_type(v)} into Go struct field DeleteOptions.{f} of type {_GO_TYPES[t]}")
    return options


def drop_nulls(obj: dict[str, Any]) -> None:
    """Typed decoding turns ``"field": null`` into an absent field: do the same at the top and
    in metadata of built-in objects (custom resources keep nulls where their schema allows)."""
    for k in [k for k, v in obj.items() if v is None]:
        del obj[k]
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        for k in [k for k, v in meta.items() if v is None]:
            del meta[k]
