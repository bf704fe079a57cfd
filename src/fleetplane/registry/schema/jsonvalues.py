"""Helpers for unstructured JSON values: the "absent" sentinel, equality, copying and hashing.

Shared by every pass (pruning, defaulting, validation, CEL); kept apart so that they all agree on
what "the same value" means (Go's reflect.DeepEqual on unstructured data keeps types apart).
"""

from __future__ import annotations

import json
from typing import Any

_MISSING: Any = object()


def _same(a: Any, b: Any) -> bool:
    """JSON deep equality that, like Go's reflect.DeepEqual on unstructured data, keeps types apart."""
    if a is b:
        return True
    ta = type(a)
    if ta is not type(b):
        return False
    if ta is dict:
        if len(a) != len(b):
            return False
        for k, v in a.items():
            w = b.get(k, _MISSING)
            if w is _MISSING or not _same(v, w):
                return False
        return True
    if ta is list:
        if len(a) != len(b):
            return False
        for v, w in zip(a, b, strict=True):
            if not _same(v, w):
                return False
        return True
    return a == b


def _copy_json(v: Any) -> Any:
    t = type(v)
    if t is dict:
        return {k: _copy_json(x) for k, x in v.items()}
    if t is list:
        return [_copy_json(x) for x in v]
    return v


def _json_eq_loose(a: Any, b: Any) -> bool:
    """Enum comparison: numbers compare by value, booleans only with booleans."""
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return a.keys() == b.keys() and all(_json_eq_loose(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(_json_eq_loose(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _hashable_key(v: Any) -> Any:
    t = type(v)
    if t is dict or t is list:
        return ("json", json.dumps(v, sort_keys=True, separators=(",", ":")))
    return (t.__name__, v)
