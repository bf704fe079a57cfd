"""metav1.Time and MicroTime: RFC 3339 in UTC out, any RFC 3339 offset in, no zone no time."""

from __future__ import annotations

import datetime as dt
import time

import pytest

from fleetplane.apimachinery.metatime import (
    NoTimeZone,
    format_time,
    micro_time,
    now_rfc3339,
    parse_rfc3339,
    parse_time,
)

T = 1_700_000_000  # 2023-11-14T22:13:20Z


def test_time_is_whole_seconds_in_utc():
    assert format_time(T + 0.9) == "2023-11-14T22:13:20Z"
    assert format_time(dt.datetime(2023, 11, 15, 1, 13, 20, 5, tzinfo=dt.timezone(dt.timedelta(hours=3)))) == \
        "2023-11-14T22:13:20Z"
    assert format_time(-0.5) == "1969-12-31T23:59:59Z"  # rounded down, as Go's Unix time
    assert now_rfc3339(T) == "2023-11-14T22:13:20Z"


def test_now_is_the_current_second():
    before = int(time.time())
    stamp = parse_time(now_rfc3339())
    assert stamp is not None and before <= stamp <= time.time()
    assert now_rfc3339().endswith("Z")


def test_micro_time_keeps_microseconds():
    t = dt.datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=dt.UTC)
    assert micro_time(t) == "2024-05-01T12:00:00.123456Z"
    assert micro_time(t.astimezone(dt.timezone(dt.timedelta(hours=-7)))) == "2024-05-01T12:00:00.123456Z"
    assert micro_time().endswith("Z")


@pytest.mark.parametrize(("text", "expected"), [
    ("2023-11-14T22:13:20Z", T),
    ("2023-11-14T22:13:20z", T),
    ("2023-11-14T22:13:20.5Z", T + 0.5),
    ("2023-11-15T00:13:20+02:00", T),
    ("2023-11-14T22:13:20.000000Z", T),
])
def test_parse(text, expected):
    assert parse_rfc3339(text).timestamp() == expected
    assert parse_time(text) == expected


def test_a_time_without_a_zone_is_not_rfc3339():
    with pytest.raises(NoTimeZone):
        parse_rfc3339("2023-11-14T22:13:20")
    assert parse_time("2023-11-14T22:13:20") is None


@pytest.mark.parametrize("value", [None, "", "yesterday", 17, "2023-13-01T00:00:00Z"])
def test_parse_time_of_anything_else_is_none(value):
    assert parse_time(value) is None
