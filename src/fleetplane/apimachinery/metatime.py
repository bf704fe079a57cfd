"""metav1.Time and metav1.MicroTime: RFC 3339 in UTC, as kube writes and reads them.

Time is whole seconds (``2024-05-01T12:00:00Z``), MicroTime microseconds
(``2024-05-01T12:00:00.123456Z``). Reading accepts any RFC 3339 offset and fraction, but a
timestamp without a zone is not one.
"""

from __future__ import annotations

import datetime as dt
import math
import time

__all__ = ["NoTimeZone", "format_time", "micro_time", "now_rfc3339", "parse_rfc3339", "parse_time"]

_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
_MICRO_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"

_stamp: tuple[int, str] = (0, "")


class NoTimeZone(ValueError):
    """A date and time without ``Z`` or an offset: not RFC 3339."""


def format_time(t: float | dt.datetime) -> str:
    """metav1.Time of a Unix time or a datetime (naive: UTC): whole seconds (rounded down), UTC."""
    if isinstance(t, dt.datetime):
        return _utc(t).strftime(_TIME_FORMAT)
    return time.strftime(_TIME_FORMAT, time.gmtime(math.floor(t)))


def _utc(t: dt.datetime) -> dt.datetime:
    return t.replace(tzinfo=dt.UTC) if t.tzinfo is None else t.astimezone(dt.UTC)


def now_rfc3339(now: float | None = None) -> str:
    """metav1.Time of ``now`` (a Unix time, default the current one). The current second's text
    is formatted once: every write of a busy server stamps times."""
    global _stamp
    if now is not None:
        return format_time(now)
    second = int(time.time())
    if _stamp[0] != second:
        _stamp = (second, format_time(second))
    return _stamp[1]


def micro_time(t: float | dt.datetime | None = None) -> str:
    """metav1.MicroTime of ``t`` (a Unix time or a datetime, naive: UTC; default now): a Lease's
    renewTime, an Event's eventTime, an audit event's timestamps."""
    if t is None:
        t = dt.datetime.now(dt.UTC)
    elif not isinstance(t, dt.datetime):
        t = dt.datetime.fromtimestamp(t, dt.UTC)
    return _utc(t).strftime(_MICRO_FORMAT)


def parse_rfc3339(value: str) -> dt.datetime:
    """An RFC 3339 timestamp (``Z`` or an offset, optional fraction); ValueError if it is not one."""
    s = value.strip()
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    t = dt.datetime.fromisoformat(s)
    if t.tzinfo is None:
        raise NoTimeZone("timestamp has no time zone")
    return t


def parse_time(value: object) -> float | None:
    """A Time or MicroTime as a Unix time; None when absent or malformed."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return parse_rfc3339(value).timestamp()
    except ValueError:
        return None
