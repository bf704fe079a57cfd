"""field.Path strings and the field.Error constructors kube's schema validators use.

Paths are plain strings; ``None`` stands for kube's nil root path (printed as ``<nil>``).
"""

from __future__ import annotations

from typing import Any

from fleetplane.apimachinery.errors import FieldError, too_long


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _fp_child(path: str | None, name: str) -> str:
    """field.Path.Child for a path that may be the nil root (None)."""
    return f"{path}.{name}" if path else name


def _fp_key(path: str | None, key: str) -> str:
    return f"{path}[{key}]" if path else f"[{key}]"


def _fp_index(path: str | None, i: int) -> str:
    return f"{path}[{i}]" if path else f"[{i}]"


def _fp(path: str | None) -> str:
    return path if path else "<nil>"


def _key(path: str, name: str) -> str:
    return f"{path}[{name}]"


def _type_invalid(field: str, value: Any, detail: str) -> FieldError:
    return FieldError("FieldValueTypeInvalid", field, detail, value, True)


def _too_many(field: str, actual: int, maximum: int) -> FieldError:
    noun = "item" if maximum == 1 else "items"
    return FieldError("FieldValueTooMany", field, f"must have at most {maximum} {noun}", actual, True)


def _too_long(field: str, maximum: int) -> FieldError:
    if maximum == 1:
        return FieldError("FieldValueTooLong", field, "may not be more than 1 byte")
    return too_long(field, maximum)


def _duplicate_value(field: str, value: Any) -> FieldError:
    return FieldError("FieldValueDuplicate", field, "", value, True)
