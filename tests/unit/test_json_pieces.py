"""A large JSON body is decoded in pieces (server/codec.py's ``loads_in_pieces``) so that no
single orjson call holds the GIL for long; the result is always what ``orjson.loads`` gives,
and a body it cannot split, or that is not JSON, is decoded whole (errors are orjson's)."""

from __future__ import annotations

import random
import time
from typing import Any

import orjson
import pytest

from fleetplane.server import codec


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pieces of 256 bytes: small documents are split as a 2 MiB body is."""
    monkeypatch.setattr(codec, "PIECE", 256)


def random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.choice(["str", "num", "lit", "obj", "arr"] if depth < 4 else ["str", "num", "lit"])
    if kind == "str":
        return rng.choice(["", "v", 'quote " inside', "back\\slash\\", "\\\"", "{[,]}:", "naïve ☃ \u2028", "\n\t", "x" * 300])
    if kind == "num":
        return rng.choice([0, -1, 3.5, 1e300, 2**62, -0.25])
    if kind == "lit":
        return rng.choice([True, False, None])
    n = rng.randrange(0, 12)
    if kind == "obj":
        return {rng.choice(["k", '"k"', "k\\", "{", ",", "ü"]) + str(i): random_value(rng, depth + 1) for i in range(n)}
    return [random_value(rng, depth + 1) for _ in range(n)]


@pytest.mark.parametrize("seed", range(60))
def test_pieces_decode_as_orjson_does(small_pieces: None, seed: int) -> None:
    rng = random.Random(seed)
    value = {"apiVersion": "v1", "kind": "ConfigMap", "data": random_value(rng), "list": [random_value(rng) for _ in range(20)]}
    for option in (0, orjson.OPT_INDENT_2):
        body = orjson.dumps(value, option=option)
        if seed % 3 == 0:
            body = b" \n" + body + b"\r\n "
        got = codec.loads_in_pieces(body)
        assert got == orjson.loads(body)
        assert orjson.dumps(got) == orjson.dumps(orjson.loads(body))  # key order too


@pytest.mark.parametrize("body", [
    b'{"a": 1,, "b": 2}' + b' ' * 300,
    b'{"a": "' + b"x" * 300 + b'", "b": [1, 2}',
    b'{"a": ' + b"[1," * 100 + b"1" + b"]" * 99 + b"}",
    b'{"a": "' + b"x" * 300 + b'"} trailing',
    b'{"a": "' + b"x" * 300 + b'"}{"b": 1}',
    b'{"a": "unterminated ' + b"x" * 300,
    b'{"a" "' + b"x" * 300 + b'"}',
    b'["' + b"x" * 300 + b'" "y"]',
    b'{"k": {"' + b"x" * 300 + b'": 1} "after": 2}',
    b'[' * 2000 + b']' * 2000,
    b'{"a": 1, "b": "' + b"x" * 300 + b'",}',
    b'{"a": 1 "big": {"k": "' + b"x" * 300 + b'"}}',
    b'{"big": {"k": "' + b"x" * 300 + b'"},}',
    b'{"big": {"k": "' + b"x" * 300 + b'"} "b": 2}',
    b'{"big": {"k": "' + b"x" * 300 + b'"}, , "b": 2}',
    b'[{"k": "' + b"x" * 300 + b'"} {"k": 1}]',
    b'[1, {"k": "' + b"x" * 300 + b'"},]',
    b'{"a": "' + b"x" * 300 + b'", "b": 1,' + b" " * 10 + b"}",
])
def test_what_is_not_json_fails_as_orjson_fails(small_pieces: None, body: bytes) -> None:
    with pytest.raises(orjson.JSONDecodeError) as whole:
        orjson.loads(body)
    with pytest.raises(orjson.JSONDecodeError) as pieces:
        codec.loads_in_pieces(body)
    assert str(pieces.value) == str(whole.value)


def test_duplicate_keys_keep_the_last_value_in_the_first_place(small_pieces: None) -> None:
    body = b'{"a": 1, "b": "' + b"x" * 300 + b'", "a": 2, "c": 3}'
    assert list(codec.loads_in_pieces(body).items()) == list(orjson.loads(body).items())


def test_a_2mib_configmap_is_decoded_in_short_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    body = orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"},
                         "data": {f"k{i:06d}": "v" for i in range(150_000)}})
    calls: list[float] = []
    real = orjson.loads

    def timed(data: Any) -> Any:
        t0 = time.thread_time()
        try:
            return real(data)
        finally:
            calls.append(time.thread_time() - t0)

    monkeypatch.setattr(codec.orjson, "loads", timed)
    got = codec.loads_in_pieces(body)
    monkeypatch.undo()
    assert got == orjson.loads(body)
    assert len(calls) > 20  # 2 MiB in pieces of 64 KiB
    # each call decodes some 64 KiB: a few milliseconds of CPU at most, where the whole body takes tens
    assert max(calls) < 0.25 * sum(calls), calls


@pytest.mark.parametrize("key", ['', 'a"b', 'a\\', '\\"', 'x\\\\"y'])
def test_keys_before_a_large_value(small_pieces: None, key: str) -> None:
    body = orjson.dumps({"first": 1, key: {"k": "x" * 300}, "last": [{"k": "y" * 300}]})
    assert codec.loads_in_pieces(body) == orjson.loads(body)
