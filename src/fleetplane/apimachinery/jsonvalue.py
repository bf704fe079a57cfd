"""Unstructured JSON values: the "absent" sentinel, equality, copying, hashing, and encoding
for keeping.

Two equalities, because kube has two: :func:`deep_equal` is Go's ``reflect.DeepEqual`` on
unstructured data (``1`` is not ``1.0``), what schema defaulting, ratcheting and CRD checks use;
:func:`json_equal` is JSON's (``1`` is ``1.0``, ``true`` is not ``1``), what patches, apply
and enum checks use. Each has its hashable key for sets of values.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

__all__ = ["MISSING", "copy_json", "deep_equal", "deep_key", "dumps_to_keep", "json_equal", "json_key"]

#: a value that is not there (as opposed to JSON null)
MISSING: Any = object()


def deep_equal(a: Any, b: Any) -> bool:
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
            w = b.get(k, MISSING)
            if w is MISSING or not deep_equal(v, w):
                return False
        return True
    if ta is list:
        if len(a) != len(b):
            return False
        for v, w in zip(a, b, strict=True):
            if not deep_equal(v, w):
                return False
        return True
    return bool(a == b)


def copy_json(v: Any) -> Any:
    """A deep copy of a JSON value (faster than copy.deepcopy on plain dicts and lists)."""
    t = type(v)
    if t is dict:
        return {k: copy_json(x) for k, x in v.items()}
    if t is list:
        return [copy_json(x) for x in v]
    return v


def dumps_to_keep(v: Any) -> bytes:
    """``orjson.dumps`` for bytes kept long (a cache): orjson hands back its whole buffer, 4 KiB
    or more however short the JSON (orjson 3.12 on), so what is kept is copied to its own size."""
    return bytes(memoryview(orjson.dumps(v)))


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: numbers compare by value (``1`` is ``1.0``), booleans only with booleans
    (Python says ``True == 1``)."""
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return bool(a.keys() == b.keys()) and all(json_equal(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def json_key(v: Any) -> str:
    """A hashable identity under :func:`json_equal` (list elements, merge-key values)."""
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return json.dumps(v, sort_keys=True, separators=(",", ":"))


def deep_key(v: Any) -> Any:
    """A hashable identity under :func:`deep_equal` (uniqueness of set items)."""
    t = type(v)
    if t is dict or t is list:
        return ("json", json.dumps(v, sort_keys=True, separators=(",", ":")))
    return (t.__name__, v)
