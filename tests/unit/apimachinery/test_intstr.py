"""IntOrString: a Deployment's maxSurge and maxUnavailable as counts of replicas."""

from __future__ import annotations

import pytest

from fleetplane.apimachinery.intstr import PERCENT, scaled_value


@pytest.mark.parametrize(("value", "total", "round_up", "expected"), [
    (3, 10, True, 3),
    ("25%", 10, True, 3),
    ("25%", 10, False, 2),
    ("25%", 8, False, 2),
    ("0%", 10, True, 0),
    ("100%", 7, False, 7),
    ("5", 10, False, 5),
])
def test_scaled_value(value, total, round_up, expected):
    assert scaled_value(value, total, round_up) == expected


@pytest.mark.parametrize("value", ["x%", "25 %", None, True, 1.5])
def test_not_an_int_or_percent(value):
    with pytest.raises(ValueError, match="invalid value for IntOrString"):
        scaled_value(value, 10, True)


def test_percent_is_a_full_match():
    assert PERCENT.match("93%") and not PERCENT.match("93%\n") and not PERCENT.match("-1%")
