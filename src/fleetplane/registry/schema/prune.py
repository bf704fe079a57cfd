"""Pruning: dropping fields a custom resource's schema does not specify (kube's pruning package).

Also strips ``metadata`` down to ObjectMeta's fields and removes nulls of non-nullable fields.
"""

from __future__ import annotations

from typing import Any

from .fieldpath import _child
from .tree import _Node

# Fields of a resource that pruning never touches at a resource root (top level or embedded).
_META_FIELDS = frozenset(("apiVersion", "kind", "metadata"))
# metav1.ObjectMeta JSON fields; anything else under metadata is dropped like a strict decode would.
_OBJECT_META_FIELDS = frozenset(
    (
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    )
)
_OWNER_REFERENCE_FIELDS = frozenset(("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"))
_MANAGED_FIELDS_ENTRY_FIELDS = frozenset(
    ("manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1", "subresource")
)


def _prune_object_meta(meta: Any, path: str, out: list[str]) -> None:
    if type(meta) is not dict:
        return
    for k in list(meta):
        if k not in _OBJECT_META_FIELDS:
            out.append(f"{path}.{k}")
            del meta[k]
            continue
        v = meta[k]
        if k == "ownerReferences":
            allowed = _OWNER_REFERENCE_FIELDS
        elif k == "managedFields":
            allowed = _MANAGED_FIELDS_ENTRY_FIELDS
        else:
            continue
        if type(v) is list:
            for i, entry in enumerate(v):
                if type(entry) is dict:
                    for ek in list(entry):
                        if ek not in allowed:
                            out.append(f"{path}.{k}[{i}].{ek}")
                            del entry[ek]


class _PruneMixin:
    """The pruning methods of :class:`~.compiled.StructuralSchema`."""

    _root: _Node

    def prune(self, obj: dict[str, Any], *, prune_nulls: bool = True) -> list[str]:
        """Drop fields the schema does not specify, in place; return their paths, sorted.

        Paths are in the format kube reports as ``unknown field "<path>"``: ``spec.foo``,
        ``spec.items[0].bar``, ``bar`` for a top-level field, ``metadata.foo`` for ObjectMeta.
        ``apiVersion`` and ``kind`` are kept; ``metadata`` is pruned to ObjectMeta's fields.
        With ``prune_nulls`` (kube's decoding does this too) null values of non-nullable fields
        that have no default are removed.
        """
        out: list[str] = []
        if type(obj) is not dict:
            return out
        root = self._root
        self._prune_map(obj, root, "", out, prune_nulls, True, root.preserve)
        out.sort()
        return out

    def prune_nulls(self, obj: Any) -> None:
        """kube's PruneNonNullableNullsWithoutDefaults on its own."""
        self._prune_nulls(obj, self._root)

    def _prune_nulls(self, x: Any, n: _Node | None) -> None:
        if n is None:
            return
        if type(x) is dict:
            props = n.props
            for k in list(x):
                v = x[k]
                p = props.get(k)
                if p is None:
                    p = n.additional
                if p is None:
                    continue
                if v is None:
                    if not p.nullable and not p.has_default:
                        del x[k]
                elif type(v) is dict or type(v) is list:
                    self._prune_nulls(v, p)
        elif type(x) is list and n.items is not None:
            for v in x:
                if type(v) is dict or type(v) is list:
                    self._prune_nulls(v, n.items)

    def _prune(self, x: Any, n: _Node | None, path: str, out: list[str], nulls: bool) -> None:
        tx = type(x)
        if n is not None and n.preserve:
            if tx is dict:
                self._prune_map(x, n, path, out, nulls, n.embedded, True)
            elif tx is list and n.items is not None:
                for i, v in enumerate(x):
                    if type(v) is dict or type(v) is list:
                        self._skip_prune(v, n.items, f"{path}[{i}]", out, nulls)
            return
        if tx is dict:
            if n is None:
                for k in list(x):
                    out.append(_child(path, k))
                    del x[k]
                return
            self._prune_map(x, n, path, out, nulls, n.embedded, False)
        elif tx is list:
            items = n.items if n is not None else None
            for i, v in enumerate(x):
                if type(v) is dict or type(v) is list:
                    self._prune(v, items, f"{path}[{i}]", out, nulls)

    def _skip_prune(self, x: Any, n: _Node | None, path: str, out: list[str], nulls: bool) -> None:
        if n is None:
            return
        if type(x) is dict:
            self._prune_map(x, n, path, out, nulls, n.embedded, True)
        elif type(x) is list and n.items is not None:
            for i, v in enumerate(x):
                if type(v) is dict or type(v) is list:
                    self._skip_prune(v, n.items, f"{path}[{i}]", out, nulls)

    def _prune_map(
        self, x: dict[str, Any], n: _Node, path: str, out: list[str], nulls: bool, embedded: bool, skip: bool
    ) -> None:
        props = n.props
        add_mode = n.add_mode
        additional = n.additional
        for k in list(x):
            if embedded and k in _META_FIELDS:
                if k == "metadata":
                    _prune_object_meta(x[k], _child(path, "metadata"), out)
                continue
            v = x[k]
            p = props.get(k)
            if p is None and add_mode:
                p = additional
                known = True
            else:
                known = p is not None
            if known:
                if v is None:
                    if nulls and p is not None and not p.nullable and not p.has_default:
                        del x[k]
                elif type(v) is dict or type(v) is list:
                    self._prune(v, p, _child(path, k), out, nulls)
            elif not skip:
                if k not in _META_FIELDS or path:
                    out.append(_child(path, k))
                del x[k]
