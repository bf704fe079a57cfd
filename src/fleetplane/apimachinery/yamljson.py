"""YAML to JSON values as kube-apiserver reads a YAML body: sigs.k8s.io/yaml's ``YAMLToJSON``
over go-yaml v2, with its limits.

Why not ``yaml.safe_load``: PyYAML resolves scalars by YAML 1.1 as Python sees it (``y`` is a
string, ``2024-01-01`` a date, ``1:20`` a sexagesimal int, ``!!binary`` bytes, keys may be ints,
bools or None), shares one object between an anchor and its aliases (so a 400-byte "billion
laughs" document is cheap to load and explodes later, when it is copied or encoded), and
composes recursively (a few hundred levels of nesting are a RecursionError). This module reads
libyaml's events (the C parser go-yaml was translated from, so syntax errors read the same) and
builds the JSON value itself, iteratively, as go-yaml and sigs.k8s.io/yaml would:

- scalars resolve as go-yaml v2's ``resolve``: ``y``/``yes``/``on`` are true, ``n``/``no``/``off``
  false, ints in any Go base (``0x1f``, ``0o17``, ``017``, ``0b11``, underscores dropped), floats,
  ``.inf``/``.nan``; timestamps stay strings; quoted scalars and ``!!str`` are strings; a tagged
  scalar that does not resolve to its tag is ``cannot decode !!str `x` as a !!int``;
- ``!!binary`` is base64-decoded to a string (invalid UTF-8 becomes U+FFFD per byte, as Go's
  encoding/json writes it);
- map keys become strings as sigs.k8s.io/yaml's ``convertToJSONableObject`` makes them: ints in
  decimal, bools ``true``/``false``, floats as Go's ``FormatFloat(f, 'g', -1, 32)``; a null key
  (or one beyond int64 that only fits uint64) is ``unsupported map key of type: ...``;
- ``<<`` merges maps in place, later keys overwriting earlier ones (go-yaml v2's order);
- only the first document is read; NaN and infinities are ``json: unsupported value: NaN``.

Limits (each checked while reading, before anything is copied): go-yaml's alias rule
(``document contains excessive aliasing``: more than 100 alias-driven node decodes, more than
1,000 decodes in all, and an alias share above 99% for up to 400,000 decodes, falling to 10% at
4,000,000), the nesting depth, and the size of the JSON the document expands to.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct
from dataclasses import dataclass
from typing import Any

import yaml
from yaml import events

from .jsonvalue import copy_json

__all__ = ["DepthError", "SizeError", "YAMLError", "yaml_to_json"]

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_TAG = "tag:yaml.org,2002:"
_STR, _INT, _FLOAT, _BOOL, _NULL = _TAG + "str", _TAG + "int", _TAG + "float", _TAG + "bool", _TAG + "null"
_BINARY, _TIMESTAMP, _MERGE = _TAG + "binary", _TAG + "timestamp", _TAG + "merge"
_RESOLVABLE = {"", _STR, _BOOL, _INT, _FLOAT, _NULL, _TIMESTAMP}

_WORDS: dict[str, tuple[str, Any]] = {}
for _words, _value, _tag in (
    ("y Y yes Yes YES true True TRUE on On ON", True, _BOOL),
    ("n N no No NO false False FALSE off Off OFF", False, _BOOL),
    ("~ null Null NULL", None, _NULL),
    (".nan .NaN .NAN", math.nan, _FLOAT),
    (".inf .Inf .INF +.inf +.Inf +.INF", math.inf, _FLOAT),
    ("-.inf -.Inf -.INF", -math.inf, _FLOAT),
):
    for _w in _words.split():
        _WORDS[_w] = (_tag, _value)
_WORDS[""] = (_NULL, None)

_YAML_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_TIMESTAMP_RE = re.compile(
    r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
    r"(([Tt][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\.[0-9]{1,9})?(Z|[-+][0-9]{2}:[0-9]{2}))"
    r"|( [0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\.[0-9]{1,9})?))?")
_INT64 = 1 << 63
_UINT64 = 1 << 64

# go-yaml v2's alias rule (decode.go allowedAliasRatio)
_ALIAS_RATIO_LOW = 400_000
_ALIAS_RATIO_HIGH = 4_000_000


class YAMLError(ValueError):
    """A document go-yaml or sigs.k8s.io/yaml would refuse; the message is theirs."""


class DepthError(YAMLError):
    """Nested deeper than the limit."""


class SizeError(YAMLError):
    """Expands to more JSON than the limit."""


class _UInt64(int):
    """An int that go-yaml returns as uint64 (above int64): a number as a value, not a key."""


def _allowed_alias_ratio(decodes: int) -> float:
    if decodes <= _ALIAS_RATIO_LOW:
        return 0.99
    if decodes >= _ALIAS_RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decodes - _ALIAS_RATIO_LOW) / (_ALIAS_RATIO_HIGH - _ALIAS_RATIO_LOW)


def _go_int(text: str) -> int | None:
    """strconv.ParseInt(s, 0, 64), then ParseUint: Go's base prefixes, a leading 0 is octal."""
    s = text
    sign = 1
    if s[:1] in "+-":
        sign = -1 if s[0] == "-" else 1
        s = s[1:]
    if not s:
        return None
    low = s[:2].lower()
    try:
        if low == "0x":
            n = int(s[2:], 16)
        elif low == "0o":
            n = int(s[2:], 8)
        elif low == "0b":
            n = int(s[2:], 2)
        elif len(s) > 1 and s[0] == "0":
            n = int(s[1:], 8)
        else:
            if not s.isdigit():
                return None
            n = int(s, 10)
    except ValueError:
        return None
    n *= sign
    if -_INT64 <= n < _INT64:
        return n
    if sign > 0 and n < _UINT64:
        return _UInt64(n)
    return None


def _resolve(tag: str, value: str) -> tuple[str, Any]:
    """go-yaml v2's ``resolve`` for a plain or tagged scalar, into an untyped value."""
    if tag not in _RESOLVABLE:
        return tag, value
    rtag, out = _resolve_plain(tag, value)
    if tag in ("", rtag, _STR):
        return rtag, out
    if tag == _FLOAT and rtag == _INT:
        return _FLOAT, float(out)
    raise YAMLError(f"yaml: cannot decode {_short(rtag)} `{value}` as a {_short(tag)}")


def _resolve_plain(tag: str, value: str) -> tuple[str, Any]:
    hint = value[:1]
    if tag == _STR or not (hint == "" or hint in "+-0123456789.yYnNtTfFoO~"):
        return _STR, value
    word = _WORDS.get(value)
    if word is not None:
        return word
    if hint == ".":
        try:  # strconv.ParseFloat: no underscores without a base prefix, ErrRange beyond float64
            f = float(value) if "_" not in value else math.inf
        except ValueError:
            f = math.inf
        return (_STR, value) if math.isinf(f) else (_FLOAT, f)
    if hint in "+-0123456789":
        if tag in ("", _TIMESTAMP) and _TIMESTAMP_RE.fullmatch(value):
            return _TIMESTAMP, value  # go-yaml keeps timestamps as strings in untyped values
        plain = value.replace("_", "")
        n = _go_int(plain)
        if n is not None:
            return _INT, n
        if _YAML_FLOAT.fullmatch(plain):
            f = float(plain)
            if not math.isinf(f):  # strconv.ParseFloat fails (ErrRange) beyond float64
                return _FLOAT, f
    return _STR, value


def _short(tag: str) -> str:
    return "!!" + tag[len(_TAG):] if tag.startswith(_TAG) else tag


def _go_bytes_string(data: bytes) -> str:
    """A Go string of arbitrary bytes as encoding/json writes it: each invalid byte is U+FFFD."""
    out: list[str] = []
    i = 0
    while i < len(data):
        try:
            out.append(data[i:].decode("utf-8"))
            break
        except UnicodeDecodeError as err:
            out.append(data[i:i + err.start].decode("utf-8"))
            out.append("\ufffd")
            i += err.start + 1
    return "".join(out)


def _float32_g(f: float) -> str:
    """strconv.FormatFloat(f, 'g', -1, 32): the shortest digits that round-trip as float32."""
    if math.isnan(f):
        return ".nan"
    if math.isinf(f):
        return ".inf" if f > 0 else "-.inf"
    f32 = struct.unpack("<f", struct.pack("<f", f))[0] if abs(f) < 3.5e38 else f
    if f32 == 0:
        return "-0" if math.copysign(1, f32) < 0 else "0"
    for precision in range(1, 18):
        text = f"{f32:.{precision - 1}e}"
        if struct.unpack("<f", struct.pack("<f", float(text)))[0] == f32:
            break
    mantissa, exp_text = text.split("e")
    exp = int(exp_text)
    digits = mantissa.replace(".", "").lstrip("-").rstrip("0") or "0"
    sign = "-" if f32 < 0 else ""
    if exp < -4 or exp >= 6:  # Go's 'g' with the shortest precision decides at 6
        frac = digits[1:]
        return f"{sign}{digits[0]}{'.' + frac if frac else ''}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exp < 0:
        return f"{sign}0.{'0' * (-exp - 1)}{digits}"
    whole = digits[:exp + 1].ljust(exp + 1, "0")
    frac = digits[exp + 1:]
    return f"{sign}{whole}{'.' + frac if frac else ''}"


def _go_repr(v: Any) -> str:
    """``%+#v`` of a decoded YAML value, for sigs.k8s.io/yaml's key error."""
    if v is None:
        return "<nil>"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, _UInt64):
        return hex(v)
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[]interface {}{" + ", ".join(_go_repr(x) for x in v) + "}"
    return "map[interface {}]interface {}{" + ", ".join(f"{_go_repr(k)}:{_go_repr(x)}" for k, x in v.items()) + "}"


def _key(k: Any, v: Any) -> str:
    """sigs.k8s.io/yaml's conversion of a map key to a JSON object key."""
    if isinstance(k, str):
        return k
    if isinstance(k, bool):
        return "true" if k else "false"
    if isinstance(k, int) and not isinstance(k, _UInt64):
        return str(k)
    if isinstance(k, float):
        return _float32_g(k)
    go_type = "%!s(<nil>)" if k is None else "uint64"
    raise YAMLError(f"unsupported map key of type: {go_type}, key: {_go_repr(k)}, value: {_go_repr(v)}")


def _scalar_size(v: Any) -> int:
    if isinstance(v, str):
        return len(v) + 2
    if v is None or v is True:
        return 4
    if v is False:
        return 5
    return len(repr(v))


@dataclass(slots=True)
class _Node:
    """A collection being built: its value, what it costs under the alias rule and in JSON
    bytes, and its own depth below it (so an alias to it can be measured without walking it)."""

    value: Any
    anchor: str | None
    depth: int  # of this collection, the document's top being 1
    cost_start: int
    size_start: int
    height: int = 1
    key: Any = None
    has_key: bool = False
    merge: bool = False
    line: int = 0


@dataclass(slots=True)
class _Anchored:
    value: Any
    cost: int
    size: int
    height: int
    line: int


class _Builder:
    def __init__(self, max_depth: int, max_bytes: int) -> None:
        self.max_depth = max_depth
        self.max_bytes = max_bytes
        self.decodes = 1  # the document node
        self.alias_decodes = 0
        self.size = 0
        self.stack: list[_Node] = []
        self.anchors: dict[str, _Anchored] = {}
        self.open_anchors: set[str] = set()
        self.result: Any = None
        self.done = False

    # -- accounting -------------------------------------------------------------------------

    def _count(self, decodes: int, aliased: int) -> None:
        self.decodes += decodes
        self.alias_decodes += aliased
        if (self.alias_decodes > 100 and self.decodes > 1000
                and self.alias_decodes / self.decodes > _allowed_alias_ratio(self.decodes)):
            raise YAMLError("yaml: document contains excessive aliasing")

    def _grow(self, size: int) -> None:
        self.size += size
        if self.size > self.max_bytes:
            raise SizeError(f"the document expands to more than {self.max_bytes} bytes of JSON")

    def _check_depth(self, depth: int, line: int) -> None:
        if depth > self.max_depth:
            raise DepthError(f"yaml: line {line}: exceeded max depth of {self.max_depth}")

    # -- events -----------------------------------------------------------------------------

    def start(self, value: Any, anchor: str | None, line: int) -> None:
        depth = len(self.stack) + 1
        self._check_depth(depth, line)
        self._count(1, 0)
        self._grow(2)
        if anchor is not None:
            self.open_anchors.add(anchor)
        self.stack.append(_Node(value, anchor, depth, self.decodes, self.size, line=line))

    def end(self) -> None:
        node = self.stack.pop()
        if node.anchor is not None:
            self.open_anchors.discard(node.anchor)
            self.anchors[node.anchor] = _Anchored(node.value, self.decodes - node.cost_start + 1,
                                                  self.size - node.size_start + 2, node.height, node.line)
        if self.stack:
            parent = self.stack[-1]
            parent.height = max(parent.height, node.height + 1)
        self._add(node.value, node.line)

    def scalar(self, ev: events.ScalarEvent) -> None:
        tag = ev.tag or ""
        line = ev.start_mark.line + 1
        if tag == "!" or (not tag and not ev.implicit[0]):
            rtag, value = _STR, ev.value
        else:
            rtag, value = _resolve(tag, ev.value)
        if rtag == _BINARY:
            text = ev.value.replace("\n", "").replace("\r", "")
            try:
                value = _go_bytes_string(base64.b64decode(text, validate=True))
            except (binascii.Error, ValueError):
                raise YAMLError("yaml: !!binary value contains invalid base64 data") from None
        top = self.stack[-1] if self.stack else None
        is_key = top is not None and isinstance(top.value, dict) and not top.has_key
        merge_key = ev.value == "<<" and (tag == _MERGE or (not tag and ev.implicit[0]))  # go-yaml's isMerge
        if is_key and merge_key:  # go-yaml does not decode the merge key itself
            assert top is not None
            top.has_key, top.merge, top.key = True, True, None
            return
        self._count(1, 0)
        self._grow(_scalar_size(value))
        if not is_key and isinstance(value, _UInt64):
            value = int(value)  # a number like any other, except as a key
        if not is_key and isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
            raise YAMLError(f"json: unsupported value: {'NaN' if math.isnan(value) else '+Inf' if value > 0 else '-Inf'}")
        if ev.anchor is not None:
            self.anchors[ev.anchor] = _Anchored(value, 1, _scalar_size(value), 0, line)
        self._add(value, line)

    def alias(self, ev: events.AliasEvent) -> None:
        name = ev.anchor
        line = ev.start_mark.line + 1
        if name in self.open_anchors:
            raise YAMLError(f"yaml: anchor '{name}' value contains itself")
        anchored = self.anchors.get(name)
        if anchored is None:
            raise YAMLError(f"yaml: unknown anchor '{name}' referenced")
        self._count(1, 0)
        self._count(anchored.cost, anchored.cost)
        self._grow(anchored.size)
        depth = len(self.stack) + anchored.height
        self._check_depth(depth, line)
        if self.stack:
            self.stack[-1].height = max(self.stack[-1].height, anchored.height + 1)
        value = anchored.value
        # go-yaml decodes an alias afresh each time: a copy, so that changing one leaves the others
        self._add(copy_json(value) if isinstance(value, (dict, list)) else value, line)

    def _add(self, value: Any, line: int) -> None:
        if not self.stack:
            self.result = value
            self.done = True
            return
        top = self.stack[-1]
        if isinstance(top.value, list):
            if top.value:
                self._grow(1)
            top.value.append(value)
            return
        if not top.has_key:
            if isinstance(value, (dict, list)):
                raise YAMLError(f"yaml: line {line}: invalid map key: {_go_repr(value)}")
            top.key, top.has_key = value, True
            return
        top.has_key = False
        if top.merge:
            top.merge = False
            self._merge(top, value)
            return
        key = _key(top.key, value)
        if key not in top.value:
            self._grow(len(key) + 3 + (1 if top.value else 0))
        top.value[key] = value

    def _merge(self, top: _Node, value: Any) -> None:
        want = "map merge requires map or sequence of maps as the value"
        if isinstance(value, dict):
            top.value.update(value)
        elif isinstance(value, list) and all(isinstance(v, dict) for v in value):
            for v in reversed(value):
                top.value.update(v)
        else:
            raise YAMLError(f"yaml: {want}")


def yaml_to_json(body: bytes | str, *, max_depth: int, max_bytes: int) -> Any:
    """The JSON value of the first YAML document in ``body`` (None when there is none).

    Raises :class:`YAMLError` (go-yaml's or sigs.k8s.io/yaml's message), :class:`DepthError`
    when it nests deeper than ``max_depth`` and :class:`SizeError` when it would encode to more
    than ``max_bytes`` of JSON once its aliases are expanded.
    """
    builder = _Builder(max_depth, max_bytes)
    loader = _Loader(body)
    try:
        while not builder.done and loader.check_event():
            ev = loader.get_event()
            if isinstance(ev, events.ScalarEvent):
                builder.scalar(ev)
            elif isinstance(ev, events.MappingStartEvent):
                builder.start({}, ev.anchor, ev.start_mark.line + 1)
            elif isinstance(ev, events.SequenceStartEvent):
                builder.start([], ev.anchor, ev.start_mark.line + 1)
            elif isinstance(ev, (events.MappingEndEvent, events.SequenceEndEvent)):
                builder.end()
            elif isinstance(ev, events.AliasEvent):
                builder.alias(ev)
            elif isinstance(ev, events.DocumentEndEvent):
                break
    except yaml.MarkedYAMLError as err:
        raise YAMLError(_go_yaml_message(err)) from None
    except yaml.YAMLError as err:
        raise YAMLError(f"yaml: {err}") from None
    finally:
        loader.dispose()
    return builder.result


def _go_yaml_message(err: yaml.MarkedYAMLError) -> str:
    """libyaml's problem as go-yaml words it: ``yaml: line N: <problem>``."""
    line = 0
    if err.problem_mark is not None and err.problem_mark.line:
        line = err.problem_mark.line + (1 if isinstance(err, yaml.scanner.ScannerError) else 0)
    elif err.context_mark is not None:
        line = err.context_mark.line
    where = f"line {line}: " if line else ""
    return f"yaml: {where}{err.problem or 'unknown problem parsing YAML content'}"
