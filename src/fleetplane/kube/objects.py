"""Small readers of JSON objects as the controllers see them (the API's dicts, not typed models),
shared by every controller instead of a private copy each."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .client import api_path

__all__ = ["as_int", "hub_path", "meta"]


def meta(obj: Mapping[str, Any] | None) -> dict[str, Any]:
    """An object's metadata ({} when it has none, or there is no object)."""
    md: dict[str, Any] = (obj or {}).get("metadata") or {}
    return md


def as_int(value: Any, default: int = 0) -> int:
    """A count as the API may carry it (an int, a numeric string, null): ``default`` when it is not one."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def hub_path(lc: str, api_version: str, plural: str, ns: str = "", name: str = "", sub: str = "") -> str:
    """A resource path in logical cluster ``lc`` of a hub (``/clusters/<lc>/apis/...``)."""
    return f"/clusters/{lc}" + api_path(api_version, plural, ns, name, sub)
