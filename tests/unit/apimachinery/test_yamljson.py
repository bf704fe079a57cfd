"""YAML to JSON values as sigs.k8s.io/yaml over go-yaml v2 makes them, with go-yaml's limits."""

from __future__ import annotations

import time

import pytest

from fleetplane.apimachinery.yamljson import DepthError, SizeError, YAMLError, yaml_to_json


def load(text: str, max_depth: int = 200, max_bytes: int = 3 << 20):
    return yaml_to_json(text.encode(), max_depth=max_depth, max_bytes=max_bytes)


@pytest.mark.parametrize("scalar,value", [
    ("1", 1), ("-7", -7), ("0x1f", 31), ("0o17", 15), ("017", 15), ("0b101", 5), ("1_000", 1000),
    ("08", 8.0), ("1e3", 1000.0), (".5", 0.5), ("1.5", 1.5), ("18446744073709551615", 18446744073709551615),
    ("99999999999999999999", 1e20), ("1e400", "1e400"), (".5_0", ".5_0"),
    ("y", True), ("Yes", True), ("on", True), ("TRUE", True), ("n", False), ("off", False), ("False", False),
    ("~", None), ("null", None), ("", None),
    ("2024-01-01", "2024-01-01"), ("2024-01-01T10:00:00Z", "2024-01-01T10:00:00Z"), ("1:20", "1:20"),
    ("'1'", "1"), ('"yes"', "yes"), ("!!str 12", "12"), ("!!float 1", 1.0), ("!foo bar", "bar"),
    ("!!binary aGVsbG8=", "hello"), ("!!binary /w==", "\ufffd"),
])
def test_scalars_resolve_as_go_yaml_v2(scalar: str, value: object):
    got = load(f"k: {scalar}\n")["k"]
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize("key,text", [
    ("1", "1"), ("0x10", "16"), ("true", "true"), ("no", "false"), ("0.5", "0.5"), ("0.1", "0.1"),
    ("1e6", "1e+06"), ("123456", "123456"), ("1e-5", "1e-05"), (".inf", ".inf"), ("2024-01-01", "2024-01-01"),
])
def test_keys_become_strings_as_sigs_yaml_converts_them(key: str, text: str):
    assert load(f"{key}: v\n") == {text: "v"}


@pytest.mark.parametrize("text,message", [
    ("~: v\n", 'unsupported map key of type: %!s(<nil>), key: <nil>, value: "v"'),
    ("18446744073709551615: v\n", 'unsupported map key of type: uint64, key: 0xffffffffffffffff, value: "v"'),
    ("? [1, 2]\n: v\n", "yaml: line 1: invalid map key: []interface {}{1, 2}"),
    ("k: !!binary bad!\n", "yaml: !!binary value contains invalid base64 data"),
    ("k: !!int abc\n", "yaml: cannot decode !!str `abc` as a !!int"),
    ("k: .nan\n", "json: unsupported value: NaN"),
    ("k: [-.inf]\n", "json: unsupported value: -Inf"),
    ("a: *nope\n", "yaml: unknown anchor 'nope' referenced"),
    ("a: &a [*a]\n", "yaml: anchor 'a' value contains itself"),
    ("m:\n  <<: 1\n", "yaml: map merge requires map or sequence of maps as the value"),
    ("a:\n  b: c\n d: e\n", "yaml: line 2: did not find expected key"),
])
def test_what_kube_refuses(text: str, message: str):
    with pytest.raises(YAMLError) as err:
        load(text)
    assert str(err.value) == message


def test_merges_overwrite_in_order_and_aliases_are_copies():
    doc = load("base: &b {x: 1, z: 1}\nm:\n  z: 0\n  <<: *b\n  w: 2\nl: &l [1]\nk: *l\n")
    assert doc["m"] == {"z": 1, "x": 1, "w": 2}  # go-yaml v2: the merge overwrites the earlier key
    doc["k"].append(2)
    assert doc["l"] == [1]
    assert load("a: 1\n---\nb: 2\n") == {"a": 1}  # the first document only
    assert load("") is None


def test_billion_laughs_is_refused_by_go_yamls_alias_rule_without_expanding():
    text = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    prev = "a"
    for n in "bcdefghi":
        text += f"{n}: &{n} [" + ",".join([f"*{prev}"] * 9) + "]\n"
        prev = n
    started = time.monotonic()
    with pytest.raises(YAMLError, match="^yaml: document contains excessive aliasing$"):
        load(text)
    assert time.monotonic() - started < 2
    # a few aliases (fewer than 100 alias-driven decodes) are fine
    assert load("a: &a [1, 2]\nb: [*a, *a]\n") == {"a": [1, 2], "b": [[1, 2], [1, 2]]}


def test_depth_and_size_limits():
    assert load("[" * 10 + "]" * 10, max_depth=10) == eval("[" * 9 + "[]" + "]" * 9)  # noqa: S307
    with pytest.raises(DepthError, match="^yaml: line 1: exceeded max depth of 10$"):
        load("[" * 11 + "]" * 11, max_depth=10)
    with pytest.raises(DepthError):  # an alias that takes a deep anchor deeper
        load("a: &a [[[]]]\nb: [[*a]]\n", max_depth=5)
    with pytest.raises(DepthError):
        load("[" * 100_000 + "]" * 100_000, max_depth=200)  # no RecursionError
    with pytest.raises(SizeError):
        load("a: &s " + "x" * 1000 + "\nb: [*s, *s, *s, *s]\n", max_bytes=4000)
    assert len(load("a: &s " + "x" * 1000 + "\nb: [*s, *s]\n", max_bytes=4000)["b"]) == 2
