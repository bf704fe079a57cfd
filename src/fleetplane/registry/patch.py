"""The three PATCH content types kube-apiserver accepts, applied to plain JSON objects.

* ``application/json-patch+json``: RFC 6902 (:func:`apply_json_patch`, via ``jsonpatch``).
* ``application/merge-patch+json``: RFC 7386 (:func:`apply_merge_patch`).
* ``application/strategic-merge-patch+json``: Kubernetes strategic merge patch
  (:func:`apply_strategic_merge_patch`), following
  ``k8s.io/apimachinery/pkg/util/strategicpatch`` on the server side
  (``StrategicMergeMapPatch``): merge patch, except that lists whose field is tagged
  ``patchStrategy:"merge"`` are merged (by ``patchMergeKey`` for lists of objects), plus the
  directives ``$patch``, ``$retainKeys``, ``$deleteFromPrimitiveList/<f>`` and
  ``$setElementOrder/<f>``.

Go structs carry the patch strategy in field tags; here :class:`PatchMeta` carries it as a small
tree keyed by field name, read from the OpenAPI schemas (:func:`patch_meta_from_openapi`; each
served kind's is ``ResourceType.patch_meta``).

All functions are pure: they never mutate their inputs and return new objects.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonpatch
import orjson

from fleetplane.apimachinery.errors import StatusError, bad_request, too_large, unprocessable
from fleetplane.apimachinery.jsonvalue import json_key
from fleetplane.apimachinery.limits import MAX_BODY_BYTES, exceeds_depth

__all__ = [
    "EMPTY_PATCH_META",
    "MAX_JSON_PATCH_OPERATIONS",
    "PatchMeta",
    "apply_json_patch",
    "apply_merge_patch",
    "apply_strategic_merge_patch",
    "patch_meta_from_openapi",
]

# kube-apiserver refuses JSON patches with more operations than this (maxJSONPatchOperations).
MAX_JSON_PATCH_OPERATIONS = 10000
# and copies of more than this many bytes in all (JSONPatchMaxCopyBytes, json-patch's
# AccumulatedCopySizeLimit): a few ``copy`` operations would otherwise double the object each
MAX_JSON_PATCH_COPY_BYTES = MAX_BODY_BYTES


# --------------------------------------------------------------------------------------------
# Patch metadata
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PatchMeta:
    """How one field patches, and (through ``fields``) how its children patch.

    * ``strategy``: ``"merge"`` for a list merged instead of replaced (Go tag
      ``patchStrategy:"merge"``); ``"replace"`` for a map replaced as a whole; ``""`` otherwise
      (maps merge recursively, lists are replaced).
    * ``key``: the ``patchMergeKey`` of a merged list of objects (``""`` for a list of scalars,
      which then merges as an ordered set).
    * ``retain_keys``: the field also has the ``retainKeys`` strategy. Informational: the
      ``$retainKeys`` directive is honoured wherever a patch sends it, as kube does.
    * ``fields``: children by field name. For an object they describe its fields; for a list of
      objects they describe the fields of each element (``containers`` -> ``env``, ...).
    * ``list_type`` / ``list_keys``: the server-side-apply view (``x-kubernetes-list-type`` /
      ``x-kubernetes-list-map-keys``), which may differ from the patch strategy, e.g.
      container ports merge by ``containerPort`` but are keyed by ``containerPort,protocol``
      for apply. Empty means "derive it" as structured-merge-diff's schema conversion does:
      merge+key -> map by key, merge -> set, else atomic.
    """

    strategy: str = ""
    key: str = ""
    retain_keys: bool = False
    fields: dict[str, PatchMeta] = field(default_factory=dict)
    list_type: str = ""
    list_keys: tuple[str, ...] = ()

    def child(self, name: str) -> PatchMeta:
        """The meta of field ``name`` (of this object, or of each element of this list)."""
        return self.fields.get(name, EMPTY_PATCH_META)

    def at(self, *path: str) -> PatchMeta:
        """The meta at a path of field names (list elements are not part of the path)."""
        node = self
        for name in path:
            node = node.child(name)
        return node


EMPTY_PATCH_META = PatchMeta()


def patch_meta_from_openapi(definitions: Mapping[str, Any], name: str) -> PatchMeta:
    """The patch metadata of definition ``name``, read from OpenAPI schemas as kube's
    ``NewPatchMetaFromOpenAPI`` does: ``x-kubernetes-patch-strategy`` (``merge``, ``retainKeys``,
    comma-separated), ``x-kubernetes-patch-merge-key``, and for server-side apply
    ``x-kubernetes-list-type`` / ``x-kubernetes-list-map-keys``, following ``$ref`` and
    ``allOf``. Each definition is read once; recursive schemas share their nodes."""
    return _OpenAPIReader(definitions).definition(name)


class _OpenAPIReader:
    def __init__(self, definitions: Mapping[str, Any]) -> None:
        self.definitions = definitions
        self.done: dict[str, PatchMeta] = {}

    def definition(self, name: str) -> PatchMeta:
        got = self.done.get(name)
        if got is None:
            # registered before its fields are read, so a schema that refers to itself ends
            got = self.done[name] = PatchMeta()
            got.fields.update(self.fields_of(self.definitions.get(name) or {}))
        return got

    def fields_of(self, schema: Mapping[str, Any]) -> dict[str, PatchMeta]:
        refs = self.refs(schema)
        if len(refs) == 1 and not schema.get("properties"):
            return self.definition(refs[0]).fields  # shared, so a recursive schema is complete too
        fields: dict[str, PatchMeta] = {}
        for ref in refs:
            fields.update(self.definition(ref).fields)
        for prop_name, prop in (schema.get("properties") or {}).items():
            fields[prop_name] = self.field(prop)
        return fields

    def field(self, prop: Mapping[str, Any]) -> PatchMeta:
        strategies = str(prop.get("x-kubernetes-patch-strategy") or "").split(",")
        target = prop.get("items") if prop.get("type") == "array" else prop
        children = self.fields_of(target) if isinstance(target, Mapping) else {}
        return PatchMeta(
            strategy="merge" if "merge" in strategies else "replace" if "replace" in strategies else "",
            key=str(prop.get("x-kubernetes-patch-merge-key") or ""),
            retain_keys="retainKeys" in strategies,
            fields=children,
            list_type=str(prop.get("x-kubernetes-list-type") or ""),
            list_keys=tuple(prop.get("x-kubernetes-list-map-keys") or ()),
        )

    @staticmethod
    def refs(schema: Mapping[str, Any]) -> list[str]:
        """The definitions a schema node stands for: its ``$ref``, or those of its ``allOf``."""
        nodes = [schema, *(s for s in schema.get("allOf") or () if isinstance(s, Mapping))]
        return [str(n["$ref"]).rsplit("/", 1)[-1] for n in nodes if isinstance(n.get("$ref"), str)]


# --------------------------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------------------------


def _go_type(v: Any) -> str:
    """The JSON type name Go's encoding/json uses in its unmarshal errors."""
    if isinstance(v, dict):
        return "object"
    if isinstance(v, list):
        return "array"
    if isinstance(v, str):
        return "string"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    return "null"






def _go_repr(v: Any) -> str:
    """Roughly how Go's ``%v`` prints a decoded JSON value, for error messages."""
    if isinstance(v, dict):
        return "map[" + " ".join(f"{k}:{_go_repr(v[k])}" for k in sorted(v)) + "]"
    if isinstance(v, list):
        return "[" + " ".join(_go_repr(x) for x in v) + "]"
    if v is None:
        return "<nil>"
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


# --------------------------------------------------------------------------------------------
# RFC 6902 JSON patch
# --------------------------------------------------------------------------------------------


def apply_json_patch(doc: dict[str, Any], patch: Any) -> dict[str, Any]:
    """Apply an RFC 6902 JSON patch (already parsed from JSON) to ``doc``.

    Like kube-apiserver: a document that is not a list of objects is a 400; more than
    10,000 operations is a 413; an operation that cannot be applied (failed ``test``, missing
    path, unknown op) is a 422 with kube's generic message.
    """
    if not isinstance(patch, list):
        raise bad_request(f"json: cannot unmarshal {_go_type(patch)} into Go value of type jsonpatch.Patch")
    for op in patch:
        if not isinstance(op, dict):
            raise bad_request(
                f"json: cannot unmarshal {_go_type(op)} into Go value of type jsonpatch.Operation"
            )
    if len(patch) > MAX_JSON_PATCH_OPERATIONS:
        raise too_large(
            f"The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {len(patch)}"
        )
    try:
        result = _apply_operations(doc, patch)
    except (
        jsonpatch.JsonPatchException,
        jsonpatch.JsonPointerException,  # re-exported from jsonpointer
        KeyError,
        IndexError,
        TypeError,
        ValueError,
        AttributeError,
    ) as exc:
        raise _unprocessable_because(str(exc)) from exc
    if not isinstance(result, dict):
        raise _unprocessable_because("the patched document is not a JSON object")
    if exceeds_depth(result):  # an ``add`` of a deep value at a deep path
        raise _unprocessable_because("the patched document is nested too deep")
    return result


def _apply_operations(doc: dict[str, Any], patch: list[Any]) -> Any:
    """The operations one by one on a copy of ``doc``, counting what ``copy`` operations copy
    (kube's json-patch stops past :data:`MAX_JSON_PATCH_COPY_BYTES`: a 422)."""
    result: Any = copy.deepcopy(doc)
    copied = 0
    for op in patch:
        if op.get("op") == "copy" and isinstance(op.get("from"), str):
            copied += len(orjson.dumps(jsonpatch.JsonPointer(op["from"]).resolve(result)))
            if copied > MAX_JSON_PATCH_COPY_BYTES:
                raise _unprocessable_because(
                    f"Unable to complete the copy, the accumulated size increase of copy is {copied}, "
                    f"exceeding the limit {MAX_JSON_PATCH_COPY_BYTES}")
        result = jsonpatch.JsonPatch([op]).apply(result, in_place=True)
    return result


def _unprocessable_because(reason: str) -> StatusError:
    """kube's generic 422: NewGenericServerResponse drops the reason, and so do we (kubectl
    prints causes, and kube's exact output is what users and Kopf expect)."""
    del reason
    return unprocessable()


# --------------------------------------------------------------------------------------------
# RFC 7386 JSON merge patch
# --------------------------------------------------------------------------------------------


def apply_merge_patch(doc: dict[str, Any], patch: Any) -> dict[str, Any]:
    """Apply an RFC 7386 merge patch: objects merge recursively, ``null`` deletes, anything
    else (arrays included) replaces. The top level must be an object (400 otherwise)."""
    if patch is None:
        raise bad_request("Invalid JSON Patch")
    if not isinstance(patch, dict):
        raise bad_request(
            f"json: cannot unmarshal {_go_type(patch)} into Go value of type map[string]interface {{}}"
        )
    merged: dict[str, Any] = _json_merge(copy.deepcopy(doc) if isinstance(doc, dict) else {}, patch)  # a dict patch merges into a dict
    return merged


def _json_merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = target if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = _json_merge(out.get(k), v)
    return out


# --------------------------------------------------------------------------------------------
# Strategic merge patch
# --------------------------------------------------------------------------------------------

_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_DELETE_FROM_PRIMITIVE = "$deleteFromPrimitiveList"
_SET_ELEMENT_ORDER = "$setElementOrder"

# mergepatch's error texts: these are malformed patches (BadRequest in kube).
_ERR_PRIMITIVE = "invalid patch format of primitive list"
_ERR_RETAIN_KEYS = "invalid patch format of retainKeys"
_ERR_SET_ORDER = "invalid patch format of setElementOrder list"


class _Deleted:
    """Result of a ``$patch: delete`` map: the caller decides what that means."""


_DELETED = _Deleted()


def _cannot_apply(message: str) -> StatusError:
    """A well-formed patch that does not fit the document (kube: a plain error from
    strategicpatch); 422 with the strategicpatch message."""
    return StatusError(422, "Invalid", message)


def apply_strategic_merge_patch(doc: dict[str, Any], patch: Any, meta: PatchMeta) -> dict[str, Any]:
    """Apply a Kubernetes strategic merge patch to ``doc`` using ``meta`` for list strategies
    (``ResourceType.patch_meta``; ``definitions.metadata_only()`` for an object with only ObjectMeta known)."""
    if not isinstance(patch, dict):
        raise bad_request(
            f"json: cannot unmarshal {_go_type(patch)} into Go value of type map[string]interface {{}}"
        )
    original = copy.deepcopy(doc) if isinstance(doc, dict) else {}
    result = _smp_map(original, copy.deepcopy(patch), meta)
    return {} if isinstance(result, _Deleted) else result


def _directive_target(key: str, prefix: str, error: str) -> str:
    head, sep, tail = key.partition("/")
    if not sep or head != prefix:
        raise bad_request(error)
    return tail


def _smp_map(original: dict[str, Any], patch: dict[str, Any], meta: PatchMeta) -> dict[str, Any] | _Deleted:
    """Merge ``patch`` into ``original`` (both owned by us, mutated in place)."""
    if _DIRECTIVE in patch:
        directive = patch.pop(_DIRECTIVE)
        if directive == "replace":
            # Replace the whole map by the rest of the patch (directives inside still apply).
            return _smp_map({}, patch, meta)
        if directive == "delete":
            return _DELETED
        if directive != "merge":  # "merge" is the default behaviour: accept it and go on
            raise bad_request(f"unknown patch type: {_go_repr(directive)} in map: {_go_repr(patch)}")

    _apply_retain_keys(original, patch)
    _apply_set_element_order(original, patch, meta)

    for key, value in patch.items():
        if key.startswith(_DELETE_FROM_PRIMITIVE):
            name = _directive_target(key, _DELETE_FROM_PRIMITIVE, _ERR_PRIMITIVE)
            if not isinstance(value, list):
                raise bad_request(_ERR_PRIMITIVE)
            current = original.get(name)
            if isinstance(current, list):
                doomed = {json_key(v) for v in value}
                original[name] = [v for v in current if json_key(v) not in doomed]
            continue
        if value is None:
            original.pop(key, None)
            continue
        child = meta.child(key)
        if key not in original:
            fresh = _smp_fresh(value, child)
            if fresh is not _DELETED:
                original[key] = fresh
            continue
        current = original[key]
        if isinstance(current, dict) and isinstance(value, dict):
            if child.strategy == "replace":
                merged = _smp_fresh(value, child)
            else:
                merged = _smp_map(current, value, child)
            # kube leaves an empty map behind when an existing map is deleted
            original[key] = {} if merged is _DELETED else merged
        elif isinstance(current, list) and isinstance(value, list):
            if child.strategy == "merge":
                original[key] = _smp_list(current, value, child)
            else:
                original[key] = value
        else:
            fresh = _smp_fresh(value, child)
            if fresh is _DELETED:
                original.pop(key, None)
            else:
                original[key] = fresh
    return original


def _smp_fresh(value: Any, meta: PatchMeta) -> Any:
    """A patch value with nothing to merge into: apply it to an empty value, so that nulls
    and directives inside do not leak into the object."""
    if isinstance(value, dict):
        return _smp_map({}, value, meta)
    if isinstance(value, list) and meta.strategy == "merge":
        return _smp_list([], value, meta)
    return value


def _apply_retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    """``$retainKeys: [a, b]``: drop every field of ``original`` not listed."""
    if _RETAIN_KEYS not in patch:
        return
    retain = patch.pop(_RETAIN_KEYS)
    if not isinstance(retain, list):
        raise bad_request(_ERR_RETAIN_KEYS)
    allowed = {k for k in retain if isinstance(k, str)}
    for key, value in patch.items():
        if value is None or key.startswith((_DELETE_FROM_PRIMITIVE, _SET_ELEMENT_ORDER)):
            continue
        if key not in allowed:
            raise bad_request(_ERR_RETAIN_KEYS)
    for key in list(original):
        if key not in allowed:
            del original[key]


def _item_key(item: Any, merge_key: str) -> str:
    """Identity of a list element: its merge-key value for lists of maps, itself otherwise."""
    if merge_key:
        if not isinstance(item, dict):
            raise _cannot_apply(f"expected a map, but received a {_go_type(item)}")
        return json_key(item.get(merge_key))
    return json_key(item)


def _apply_set_element_order(original: dict[str, Any], patch: dict[str, Any], meta: PatchMeta) -> None:
    """``$setElementOrder/<f>``: merge list ``f`` and put its elements in the given order.

    Precedence, as in kube: the directive's order, then the patch's, then the live order.
    The patch list for ``f`` is consumed here so the main loop does not merge it twice.
    """
    for key in [k for k in patch if k.startswith(_SET_ELEMENT_ORDER)]:
        order = patch.pop(key)
        name = _directive_target(key, _SET_ELEMENT_ORDER, _ERR_SET_ORDER)
        if not isinstance(order, list):
            raise bad_request(_ERR_SET_ORDER)
        child = meta.child(name)
        merge_key = child.key
        found_original = isinstance(original.get(name), list)
        patch_list = patch.get(name)
        if patch_list is not None and not isinstance(patch_list, list):
            raise _cannot_apply(f"expected a slice, but received a {_go_type(patch_list)}")
        if merge_key:
            for item in order:
                if not isinstance(item, dict) or merge_key not in item:
                    raise _cannot_apply(
                        f"map: {_go_repr(item)} does not contain declared merge key: {merge_key}"
                    )
        if patch_list is not None:
            _validate_patch_order(patch_list, order, merge_key)

        if found_original and patch_list is not None:
            if child.strategy == "merge":
                merged = _smp_list(original[name], patch_list, child)
            else:
                merged = patch_list
        elif patch_list is not None:
            merged = _smp_fresh(patch_list, child)
        elif found_original:
            merged = original[name]
        else:
            continue
        server_order = original[name] if found_original else []
        order_keys = [_item_key(i, merge_key) for i in order]
        in_order = [m for m in merged if _item_key(m, merge_key) in order_keys]
        server_only = [m for m in merged if _item_key(m, merge_key) not in order_keys]
        in_order.sort(key=lambda m: order_keys.index(_item_key(m, merge_key)))
        server_only = _sort_by(server_only, server_order, merge_key)
        original[name] = _interleave(server_only, in_order, server_order, merge_key)
        patch.pop(name, None)


def _validate_patch_order(patch_list: list[Any], order: list[Any], merge_key: str) -> None:
    """Every (non-directive) patch element must appear in ``$setElementOrder``, in that order."""
    if not patch_list or not order:
        return
    items = [i for i in patch_list if not (isinstance(i, dict) and _DIRECTIVE in i)]
    pi = si = 0
    while pi < len(items) and si < len(order):
        if merge_key and not isinstance(items[pi], dict):
            raise _cannot_apply(f"expected a map, but received a {_go_type(items[pi])}")
        if _item_key(items[pi], merge_key) == _item_key(order[si], merge_key):
            pi += 1
        si += 1
    if pi < len(items):
        raise _cannot_apply(
            f"The order in patch list:\n{_go_repr(patch_list)}\n doesn't match "
            f"{_SET_ELEMENT_ORDER} list:\n{_go_repr(order)}\n"
        )


def _sort_by(items: list[Any], reference: list[Any], merge_key: str) -> list[Any]:
    """Stable-sort ``items`` by their position in ``reference`` (unknown ones last)."""
    ref = [_item_key(r, merge_key) for r in reference]

    def pos(item: Any) -> int:
        k = _item_key(item, merge_key)
        return ref.index(k) if k in ref else len(ref)

    return sorted(items, key=pos)


def _interleave(server_only: list[Any], from_patch: list[Any], server_order: list[Any], merge_key: str) -> list[Any]:
    """kube's mergeSortedSlice: keep the relative order of both lists; a server-only item goes
    before a patch item only when the live list had it before that item. So new items that
    the live list never had come first, ahead of the remaining server-only items."""
    ref: dict[str, int] = {}
    for i, r in enumerate(server_order):
        ref.setdefault(_item_key(r, merge_key), i)
    out: list[Any] = []
    i = j = 0
    while i < len(server_only) or j < len(from_patch):
        if i >= len(server_only):
            out.append(from_patch[j])
            j += 1
        elif j >= len(from_patch):
            out.append(server_only[i])
            i += 1
        else:
            li = ref.get(_item_key(server_only[i], merge_key))
            ri = ref.get(_item_key(from_patch[j], merge_key))
            if li is not None and ri is not None and li < ri:
                out.append(server_only[i])
                i += 1
            else:
                out.append(from_patch[j])
                j += 1
    return out


def _smp_list(original: list[Any], patch: list[Any], meta: PatchMeta) -> list[Any]:
    """Merge two lists of a field with ``patchStrategy: merge``."""
    if not original and not patch:
        return original
    for item in (*original, *patch):
        if isinstance(item, list):
            raise _cannot_apply("lists of lists are not supported")
    if meta.key:
        return _smp_list_of_maps(original, patch, meta)
    return _smp_list_of_scalars(original, patch)


def _smp_list_of_scalars(original: list[Any], patch: list[Any]) -> list[Any]:
    """Ordered union. ``{"$patch": "replace"}`` as an element replaces the list (an extension:
    kube rejects maps in a list of scalars; its clients send $deleteFromPrimitiveList)."""
    replace = False
    items = []
    for item in patch:
        if isinstance(item, dict):
            directive = item.get(_DIRECTIVE)
            if directive == "replace":
                replace = True
            elif directive != "merge":
                raise _cannot_apply("cannot merge lists without merge key for type map")
            continue
        items.append(item)
    for item in original:
        if isinstance(item, dict):
            raise _cannot_apply("cannot merge lists without merge key for type map")
    merged = _dedupe(items if replace else [*original, *items])
    if replace:
        return merged
    patch_keys = {json_key(i) for i in items}
    from_patch = [m for m in merged if json_key(m) in patch_keys]
    server_only = [m for m in merged if json_key(m) not in patch_keys]
    return _interleave(server_only, _sort_by(from_patch, items, ""), original, "")


def _dedupe(items: list[Any]) -> list[Any]:
    seen: set[str] = set()
    out = []
    for item in items:
        k = json_key(item)
        if k not in seen:
            seen.add(k)
            out.append(item)
    return out


def _smp_list_of_maps(original: list[Any], patch: list[Any], meta: PatchMeta) -> list[Any]:
    """Merge by ``meta.key``; elements with ``$patch: delete`` remove every match, an element
    ``{"$patch": "replace"}`` makes the list exactly the other patch elements."""
    key = meta.key
    for item in (*original, *patch):
        if not isinstance(item, dict):
            raise _cannot_apply(f"expected a map, but received a {_go_type(item)}")
    current = list(original)
    elements = []
    replace = False
    for item in patch:
        if _DIRECTIVE not in item:
            elements.append(item)
            continue
        directive = item[_DIRECTIVE]
        if directive == "delete":
            if key not in item:
                raise _cannot_apply(f"map: {_go_repr(item)} does not contain declared merge key: {key}")
            doomed = json_key(item[key])
            current = [c for c in current if not (key in c and json_key(c[key]) == doomed)]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            rest = {k: v for k, v in item.items() if k != _DIRECTIVE}
            if rest:
                elements.append(rest)
        else:
            raise bad_request(f"unknown patch type: {_go_repr(directive)} in map: {_go_repr(item)}")
    if replace:
        return [_smp_map({}, e, meta) for e in elements]

    for item in elements:
        if key not in item:
            raise _cannot_apply(f"map: {_go_repr(item)} does not contain declared merge key: {key}")
        wanted = json_key(item[key])
        for idx, cur in enumerate(current):
            if key in cur and json_key(cur[key]) == wanted:
                merged = _smp_map(cur, item, meta)
                current[idx] = {key: cur[key]} if merged is _DELETED else merged
                break
        else:
            fresh = _smp_map({}, item, meta)
            if fresh is not _DELETED:
                current.append(fresh)

    patch_keys = [json_key(e[key]) for e in elements]
    from_patch = [c for c in current if json_key(c.get(key)) in patch_keys]
    server_only = [c for c in current if json_key(c.get(key)) not in patch_keys]
    from_patch.sort(key=lambda c: patch_keys.index(json_key(c.get(key))))
    server_only = _sort_by(server_only, original, key)
    return _interleave(server_only, from_patch, original, key)
