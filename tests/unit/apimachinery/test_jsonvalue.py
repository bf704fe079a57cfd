"""JSON values: the two equalities (JSON's and Go's DeepEqual), their keys, copying."""

from __future__ import annotations

from fleetplane.apimachinery.jsonvalue import MISSING, copy_json, deep_equal, deep_key, json_equal, json_key


def test_json_equal_compares_numbers_by_value_but_keeps_booleans_apart():
    assert json_equal(1, 1.0)
    assert json_equal({"a": [1, {"b": 2.0}]}, {"a": [1.0, {"b": 2}]})
    assert not json_equal(True, 1)
    assert not json_equal(0, False)
    assert json_equal(True, True)
    assert not json_equal({"a": 1}, {"a": 1, "b": 2})
    assert not json_equal([1, 2], [2, 1])
    assert not json_equal("1", 1)
    assert not json_equal({}, [])
    assert json_equal(None, None)


def test_deep_equal_keeps_every_type_apart():
    assert deep_equal({"a": [1, "x", None]}, {"a": [1, "x", None]})
    assert not deep_equal(1, 1.0)
    assert not deep_equal(True, 1)
    assert not deep_equal({"a": 1}, {"b": 1})
    assert not deep_equal({"a": None}, {})


def test_keys_agree_with_their_equalities():
    assert json_key(1) == json_key(1.0)
    assert json_key(True) != json_key(1)
    assert json_key({"b": 1, "a": 2}) == json_key({"a": 2, "b": 1})
    assert deep_key(1) != deep_key(1.0)
    assert deep_key({"b": 1, "a": 2}) == deep_key({"a": 2, "b": 1})
    assert deep_key([1]) != deep_key("[1]")


def test_copy_json_is_deep():
    v = {"a": [{"b": 1}]}
    c = copy_json(v)
    c["a"][0]["b"] = 2
    assert v == {"a": [{"b": 1}]}


def test_missing_is_not_null():
    assert MISSING is not None
    assert {}.get("x", MISSING) is MISSING
