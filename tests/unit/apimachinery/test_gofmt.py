"""Values printed as Go prints them: strconv.Quote, float64 in messages and in Table cells."""

from __future__ import annotations

import math

import pytest

from fleetplane.apimachinery.gofmt import bad_value, format_float, go_quote, json_text, sprint_float


def test_go_quote():
    assert go_quote('a"b\\c') == '"a\\"b\\\\c"'
    assert go_quote("tab\there\nnl\r") == '"tab\\there\\nnl\\r"'
    assert go_quote("\x01\x7f") == '"\\x01\\x7f"'
    assert go_quote("ünïcode") == '"ünïcode"'


@pytest.mark.parametrize(("f", "message", "cell"), [
    (0.0, "0", "0"),
    (-0.0, "-0", "-0"),
    (1.0, "1", "1"),
    (0.5, "0.5", "0.5"),
    (123456.0, "123456", "123456"),
    (1e6, "1000000", "1e+06"),
    (1.5e-7, "1.5e-07", "1.5e-07"),
    (0.0001, "0.0001", "0.0001"),
    (1e20, "100000000000000000000", "1e+20"),
    (1e21, "1e+21", "1e+21"),
    (-2.5e-5, "-2.5e-05", "-2.5e-05"),
    (math.inf, "+Inf", "+Inf"),
    (-math.inf, "-Inf", "-Inf"),
    (math.nan, "NaN", "NaN"),
])
def test_floats(f, message, cell):
    assert format_float(f) == message
    assert sprint_float(f) == cell


def test_bad_values_and_json():
    assert bad_value(None) == "null"
    assert bad_value(3.0) == 3 and type(bad_value(3.0)) is int
    assert bad_value(3.5) == 3.5
    assert bad_value("x") == "x"
    assert json_text({"a": [1, "ü"]}) == '{"a":[1,"ü"]}'
