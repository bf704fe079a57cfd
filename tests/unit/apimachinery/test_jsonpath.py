"""Kubernetes JSONPath: what CRD printer columns and custom columns find, and how a match prints."""

from __future__ import annotations

import pytest

from fleetplane.apimachinery.jsonpath import compile_jsonpath, go_print

OBJ = {
    "metadata": {"name": "w", "annotations": {"example.com/key": "v", "a.b": "dotted"}},
    "spec": {"replicas": 3, "items": [{"name": "a", "n": 1}, {"name": "b", "n": 5}, {"name": "c", "n": 9}]},
    "status": {"conditions": [
        {"type": "Synced", "status": "False"},
        {"type": "Ready", "status": "True", "reason": "AllGood"},
    ]},
}


@pytest.mark.parametrize(("path", "expected"), [
    (".spec.replicas", [3]),
    ("{.spec.replicas}", [3]),
    ("spec.replicas", [3]),
    (".spec.missing", []),
    (".spec.replicas.deeper", []),
    (".spec.items[0].name", ["a"]),
    (".spec.items[-1].name", ["c"]),
    (".spec.items[7].name", []),
    (".spec.items[*].name", ["a", "b", "c"]),
    (".spec.items[0:2].name", ["a", "b"]),
    (".spec.items[0,2].name", ["a", "c"]),
    ('.status.conditions[?(@.type=="Ready")].status', ["True"]),
    (".status.conditions[?(@.type=='Ready')].reason", ["AllGood"]),
    ('.status.conditions[?(@.type!="Ready")].type', ["Synced"]),
    ('.status.conditions[?(@.type=="Gone")].status', []),
    (".spec.items[?(@.n > 4)].name", ["b", "c"]),
    (".spec.items[?(@.n<=5)].name", ["a", "b"]),
    (".status.conditions[?(@.reason)].type", ["Ready"]),
    (".metadata.annotations['example.com/key']", ["v"]),
    (".metadata.annotations.example\\.com/key", ["v"]),
    (".metadata.annotations.a\\.b", ["dotted"]),
    ("..name", ["w", "a", "b", "c"]),
    (".spec.items.*", []),
    (".spec.items[*].*", ["a", 1, "b", 5, "c", 9]),
    (".metadata.*", ["w", {"example.com/key": "v", "a.b": "dotted"}]),
])
def test_jsonpath(path, expected):
    got = compile_jsonpath(path)(OBJ)
    if path == ".metadata.*":
        assert sorted(map(str, got)) == sorted(map(str, expected))
    else:
        assert got == expected


def test_jsonpath_compiles_once():
    assert compile_jsonpath(".spec.x") is compile_jsonpath(".spec.x")


def test_jsonpath_incompatible_comparison_is_no_result():
    assert compile_jsonpath('.spec.items[?(@.n=="1")].name')(OBJ) == []


def test_jsonpath_filter_on_numbers_compares_values():
    obj = {"items": [{"n": 1}, {"n": 2.5}, {"n": 4}]}
    assert compile_jsonpath(".items[?(@.n >= 2.5)].n")(obj) == [2.5, 4]
    assert compile_jsonpath(".items[?(@.n == 1.0)].n")(obj) == [1]


def test_jsonpath_filter_comparing_two_paths():
    obj = {"items": [{"a": 1, "b": 1}, {"a": 2, "b": 3}]}
    assert compile_jsonpath(".items[?(@.a == @.b)].b")(obj) == [1]


def test_jsonpath_dollar_root_and_braces():
    assert compile_jsonpath("{$.spec.replicas}")(OBJ) == [3]


def test_jsonpath_syntax_errors():
    from fleetplane.apimachinery.jsonpath import JSONPathError

    for bad in (".spec.items[x]", ".spec.items[0", ".spec.items[1:2:0]", ".spec.items[?(@.n == one)]"):
        with pytest.raises(JSONPathError):
            compile_jsonpath(bad)


def test_go_print_floats():
    assert go_print(1.0) == "1"
    assert go_print(0.5) == "0.5"
    assert go_print(123456.0) == "123456"
    assert go_print(1e6) == "1e+06"
    assert go_print(1.5e-7) == "1.5e-07"
    assert go_print(False) == "false"
    assert go_print(["a", 1]) == '["a",1]'
    assert go_print(None) is None
    assert go_print("<a>") == "<a>"
    assert go_print({"k": "<&>"}) == '{"k":"\\u003c\\u0026\\u003e"}'


def test_jsonpath_quotes_hide_separators_and_brackets():
    obj = {"m": {"a,b]": 1, "c": 2, "x(y)": 3}}
    assert compile_jsonpath(".m['a,b]','c']")(obj) == [1, 2]
    assert compile_jsonpath(".m['x(y)']")(obj) == [3]
    items = {"items": [{"s": "a]b"}, {"s": "c"}]}
    assert compile_jsonpath('.items[?(@.s=="a]b")].s')(items) == ["a]b"]
