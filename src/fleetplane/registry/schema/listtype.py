"""``x-kubernetes-list-type`` set/map uniqueness (kube's listtype package) and list correlation.

Correlating new list items with old ones (map lists by key, sets by value) is what ratcheting and
transition rules need.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fleetplane.apimachinery.errors import FieldError, invalid

from ...apimachinery.gofmt import bad_value
from ...apimachinery.jsonvalue import MISSING, deep_key
from .fieldpath import _duplicate_value, _fp_index
from .tree import _Node


def _non_unique(items: list[Any]) -> list[int]:
    """Indices of the second appearance of each duplicated element (listtype.validateListSet)."""
    if len(items) <= 1:
        return []
    seen: dict[Any, int] = {}
    out: list[int] = []
    for i, v in enumerate(items):
        k = deep_key(v)
        times = seen.get(k, 0)
        if times == 1:
            out.append(i)
        seen[k] = times + 1
    return out


_UNSPECIFIED = ("unspecified-key",)


def _validate_list_map(path: str, n: _Node, items: list[Any]) -> list[FieldError]:
    for i, v in enumerate(items):
        if v is not None and type(v) is not dict:
            return [invalid(_fp_index(path, i), bad_value(v), "must be an object for an array of list-type map")]
    if len(items) <= 1:
        return []
    keys_fields = n.list_map_keys
    errs: list[FieldError] = []
    if len(keys_fields) == 1:
        kf = keys_fields[0]
        keys = [v.get(kf, _UNSPECIFIED) if v is not None else _UNSPECIFIED for v in items]
        hashed = [("unspecified",) if k is _UNSPECIFIED else deep_key(k) for k in keys]
        for i in _non_unique_hashed(hashed):
            value = {} if keys[i] is _UNSPECIFIED else {kf: keys[i]}
            errs.append(_duplicate_value(_fp_index(path, i), value))
        return errs
    composite = []
    for v in items:
        key: dict[str, Any] = {}
        if v is not None:
            for kf in keys_fields:
                if kf in v:
                    key[kf] = v[kf]
        composite.append(key)
    for i in _non_unique(composite):
        errs.append(_duplicate_value(_fp_index(path, i), composite[i]))
    return errs


def _non_unique_hashed(hashed: list[Any]) -> list[int]:
    seen: dict[Any, int] = {}
    out: list[int] = []
    for i, k in enumerate(hashed):
        times = seen.get(k, 0)
        if times == 1:
            out.append(i)
        seen[k] = times + 1
    return out


def _map_key(item: Any, keys: list[str]) -> Any:
    if type(item) is not dict:
        return None
    return tuple(deep_key(item.get(k, _UNSPECIFIED)) if k in item else ("unspecified",) for k in keys)


def _map_list_correlator(n: _Node, old: Any) -> Callable[[Any], Any] | None:
    """Old-item lookup for ``x-kubernetes-list-type: map`` lists (the only correlatable lists)."""
    if n.list_type != "map" or not n.list_map_keys or type(old) is not list:
        return None
    keys = n.list_map_keys
    index: dict[Any, Any] = {}
    for item in old:
        k = _map_key(item, keys)
        if k is not None:
            index.setdefault(k, item)

    def find(item: Any) -> Any:
        k = _map_key(item, keys)
        return index.get(k, MISSING) if k is not None else MISSING

    return find


def _correlator(n: _Node, old: Any) -> Callable[[Any], Any] | None:
    """Ratcheting correlation for list items: map lists by key, sets by value."""
    if type(old) is not list:
        return None
    if n.list_type == "map":
        return _map_list_correlator(n, old)
    if n.list_type == "set":
        present = {deep_key(v) for v in old}
        return lambda v: v if deep_key(v) in present else MISSING
    return None
