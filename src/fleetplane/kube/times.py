"""metav1.Time and MicroTime as controllers write and read them (RFC 3339, UTC)."""

from __future__ import annotations

import datetime as dt
from typing import Any

__all__ = ["micro_time", "now_rfc3339", "parse_time"]


def now_rfc3339(now: float | None = None) -> str:
    """metav1.Time: whole seconds, UTC (``now``: a Unix time, default the current one)."""
    t = dt.datetime.fromtimestamp(now, dt.UTC) if now is not None else dt.datetime.now(dt.UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_time(t: dt.datetime | None = None) -> str:
    """metav1.MicroTime (a Lease's renewTime): microseconds, UTC."""
    return (t or dt.datetime.now(dt.UTC)).astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(value: Any) -> float | None:
    """A Time or MicroTime as a Unix time; None when absent or malformed."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
