"""Decode Kubernetes protobuf request bodies (``application/vnd.kubernetes.protobuf``) to kube JSON.

kubectl 1.32+ POSTs the objects its generators build (``kubectl create namespace|configmap|secret|
serviceaccount|deployment|service|role|...``, ``create token``, ``auth can-i``, ``auth whoami``,
``debug --copy-to``, ``certificate approve``) as protobuf and gets no JSON retry after a 415, so the
server has to read that encoding. :func:`decode` turns such a body into the JSON object that kube's own
JSON encoding of the same Go value would produce, so everything after the HTTP layer only sees JSON.

Wire form (k8s.io/apimachinery ``runtime/serializer/protobuf``): the 4-byte magic ``k8s\\x00`` and then
a ``runtime.Unknown`` message: ``typeMeta`` = 1 {``apiVersion`` = 1, ``kind`` = 2}, ``raw`` = 2,
``contentEncoding`` = 3, ``contentType`` = 4. ``raw`` is the object encoded with the messages of
k8s.io/api ``<group>/<version>/generated.proto`` and apimachinery ``pkg/apis/meta/v1/generated.proto``
(plus ``api/resource``, ``util/intstr`` and ``runtime``).

Why a hand-written reader: there are no generated Python classes for Kubernetes' protos (no package
ships them), so this module carries a ~60-line protobuf wire reader (varint, 64-bit, length-delimited,
32-bit; packed repeated scalars accepted; unknown field numbers skipped for forward compatibility)
driven by a table of message schemas, :data:`~fleetplane.server.protobuf_messages.MESSAGES`. That table
is generated at development time by ``tools/gen_protobuf.py`` from the ``generated.proto`` files of
k8s.io/api and apimachinery (field numbers, wire types, maps, message references) joined with the Go
struct tags of the same types (json names, ``omitempty``, pointer-ness, inlining), keeping only the
messages reachable from the kinds listed there.

The table maps a fully-qualified proto message name (``"k8s.io.api.core.v1.ConfigMap"``) to
``{field number: (json name, type, flags)}`` listed in Go struct order (so the output keeps kube's key
order). ``type`` is a scalar (``string``, ``bool``, ``int32``, ``int64``, ``bytes``, ...), another
message of the table, one of the apimachinery types with their own JSON form (:data:`CUSTOM_JSON`,
below), or ``map<string,V>`` (a repeated map-entry message: key = 1, value = 2). ``flags``:

- ``r``: repeated (a Go slice);
- ``*``: the Go field is a pointer, so it is rendered whenever it is on the wire, even when zero
  (gogo-protobuf writes pointer fields only when non-nil, and writes every non-pointer scalar);
- ``o``: the json tag has ``omitempty`` (zero scalars, empty slices/maps and nil pointers are left
  out; without it they render as the zero value or ``null``, as Go's encoding/json does);
- ``i``: an embedded struct whose fields are inlined into the parent (``json:",inline"``).

Non-pointer struct fields are always rendered (encoding/json ignores ``omitempty`` on structs), which
is why an empty Namespace decodes to ``{"metadata": {"name": ..., "creationTimestamp": null},
"spec": {}, "status": {}}`` exactly as kubectl's JSON body would read. ``("list", T)`` entries are
named slice types (``ExtraValue []string``), which protobuf wraps in a message with ``repeated items = 1``.

The apimachinery types with their own JSON forms:

- ``meta/v1.Time``: {seconds = 1, nanos = 2}; RFC 3339 in UTC to the second; an empty message is the
  zero time and renders ``null``;
- ``meta/v1.MicroTime``: same message, rendered with microseconds (``...T10:00:00.123456Z``);
- ``resource.Quantity``: {string = 1}; the string (``"0"`` when empty);
- ``intstr.IntOrString``: {type = 1, intVal = 2, strVal = 3}; an int or a string;
- ``meta/v1.FieldsV1`` and ``runtime.RawExtension``: {raw = 1}; the raw bytes are JSON, parsed;
- ``bytes`` fields (Secret.data, ConfigMap.binaryData, CSR.request): standard base64 strings.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from fleetplane.apimachinery.errors import bad_request, unsupported_media_type
from fleetplane.apimachinery.limits import DEPTH_MESSAGE

from .protobuf_messages import KINDS, MESSAGES

__all__ = ["CONTENT_TYPE", "MAGIC", "decode", "is_protobuf", "message_for", "supported_kinds", "supported_messages"]

CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"

_MAX_DEPTH = 64
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ZERO_TIME_SECONDS = -62135596800  # Go's time.Time{} (0001-01-01T00:00:00Z) as Unix seconds


class ProtobufError(ValueError):
    """A body that is not valid protobuf wire format (truncated, bad tag, bad wire type)."""


def is_protobuf(content_type: str | None) -> bool:
    """Whether a Content-Type header names kube's protobuf encoding (parameters ignored)."""
    if not content_type:
        return False
    return content_type.split(";", 1)[0].strip().lower() == CONTENT_TYPE


def supported_kinds() -> list[tuple[str, str]]:
    """The (apiVersion, kind) pairs :func:`decode` understands, sorted."""
    return sorted(KINDS)


def supported_messages() -> list[str]:
    """The fully-qualified proto names of the kinds :func:`decode` understands, sorted."""
    return sorted(KINDS.values())


def message_for(api_version: str, kind: str) -> str | None:
    """The proto message (``"k8s.io.api.core.v1.ConfigMap"``) of a kind, None when not decodable."""
    return KINDS.get((api_version, kind))


def decode(body: bytes, message: str | None = None) -> dict[str, Any]:
    """Decode one protobuf-encoded object (magic + ``runtime.Unknown``) to its kube JSON form.

    ``message`` names the proto message of the object (a served type's ``protobuf`` name); by
    default it is the one of the envelope's apiVersion/kind. Raises a 400 :class:`StatusError` for a
    body without the magic or with a truncated/garbled message, and a 415 one for a kind this server
    cannot decode (the client should send JSON).
    """
    body = bytes(body)
    if not body:
        raise bad_request("empty body")
    if not body.startswith(MAGIC):
        raise bad_request(
            "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
        )
    if len(body) == len(MAGIC):
        raise bad_request("empty body: the protobuf envelope (runtime.Unknown) is missing")
    try:
        env = _fields_by_number(body[len(MAGIC) :])
        type_meta = _fields_by_number(_last_bytes(env, 1, "typeMeta"))
        api_version = _text(_last_bytes(type_meta, 1, "typeMeta.apiVersion"))
        kind = _text(_last_bytes(type_meta, 2, "typeMeta.kind"))
        raw = _last_bytes(env, 2, "raw")
        encoding = _text(_last_bytes(env, 3, "contentEncoding"))
        content_type = _text(_last_bytes(env, 4, "contentType"))
    except ProtobufError as e:
        raise bad_request(f"unable to decode the protobuf envelope (runtime.Unknown): {e}") from None
    if encoding:
        raise unsupported_media_type(
            f"protobuf content encoding {encoding!r} is not supported; send the object as JSON "
            "(Content-Type: application/json)"
        )
    if not kind or not api_version:
        raise bad_request("protobuf envelope (runtime.Unknown) has no apiVersion/kind in typeMeta")
    if content_type and content_type.split(";", 1)[0].strip().lower() == "application/json":
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            if str(e).startswith("depth limit exceeded"):
                raise bad_request(f"unable to decode the protobuf body: {DEPTH_MESSAGE}") from None
            raise bad_request(f"unable to decode the JSON inside the protobuf envelope: {e}") from None
        if not isinstance(obj, dict):
            raise bad_request("the JSON inside the protobuf envelope is not an object")
        return obj
    if content_type and not is_protobuf(content_type):
        raise unsupported_media_type(
            f"protobuf envelope carries content type {content_type!r}; send the object as JSON "
            "(Content-Type: application/json)"
        )
    root = message if message is not None else message_for(api_version, kind)
    if root is None or root not in MESSAGES:
        raise unsupported_media_type(
            f"this server cannot decode {kind} ({api_version}) from protobuf; "
            "send it as JSON (Content-Type: application/json)"
        )
    try:
        obj = _message(root, raw, 0)
    except ProtobufError as e:
        raise bad_request(f"unable to decode {kind} ({api_version}) from protobuf: {e}") from None
    return {"kind": kind, "apiVersion": api_version, **obj}


# ---------------------------------------------------------------------------------------------
# Wire format reader.


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    result = 0
    shift = 0
    n = len(buf)
    while True:
        if i >= n:
            raise ProtobufError("truncated varint")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7
        if shift >= 70:
            raise ProtobufError("varint longer than 10 bytes")


def _iter_fields(buf: bytes) -> Iterator[tuple[int, int, Any]]:
    """Yield (field number, wire type, value): int for varint/fixed, bytes for length-delimited."""
    i = 0
    n = len(buf)
    while i < n:
        key, i = _varint(buf, i)
        num, wire = key >> 3, key & 7
        value: int | bytes
        if num == 0:
            raise ProtobufError("field number 0")
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 1:
            if i + 8 > n:
                raise ProtobufError(f"truncated 64-bit value in field {num}")
            value = int.from_bytes(buf[i : i + 8], "little")
            i += 8
        elif wire == 2:
            length, i = _varint(buf, i)
            if i + length > n:
                raise ProtobufError(f"truncated length-delimited field {num} ({length} bytes)")
            value = buf[i : i + length]
            i += length
        elif wire == 5:
            if i + 4 > n:
                raise ProtobufError(f"truncated 32-bit value in field {num}")
            value = int.from_bytes(buf[i : i + 4], "little")
            i += 4
        else:
            raise ProtobufError(f"unsupported wire type {wire} in field {num}")
        yield num, wire, value


def _fields_by_number(buf: bytes) -> dict[int, list[tuple[int, Any]]]:
    out: dict[int, list[tuple[int, Any]]] = {}
    for num, wire, value in _iter_fields(buf):
        out.setdefault(num, []).append((wire, value))
    return out


def _last_bytes(fields: dict[int, list[tuple[int, Any]]], num: int, what: str) -> bytes:
    values = fields.get(num)
    if not values:
        return b""
    wire, value = values[-1]
    if wire != 2:
        raise ProtobufError(f"{what}: expected a length-delimited field, got wire type {wire}")
    return value


def _text(b: bytes) -> str:
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        raise ProtobufError("string field is not valid UTF-8") from None


_VARINT_TYPES = {"int32", "int64", "uint32", "uint64", "sint32", "sint64", "bool", "enum"}
_FIXED64_TYPES = {"double", "fixed64", "sfixed64"}
_FIXED32_TYPES = {"float", "fixed32", "sfixed32"}
_SCALAR_ZERO: dict[str, Any] = {
    "string": "", "bytes": b"", "bool": False, "double": 0.0, "float": 0.0,
    "int32": 0, "int64": 0, "uint32": 0, "uint64": 0, "sint32": 0, "sint64": 0,
    "fixed32": 0, "fixed64": 0, "sfixed32": 0, "sfixed64": 0,
}  # fmt: skip


def _scalar(typ: str, wire: int, value: Any) -> Any:
    if typ == "string":
        if wire != 2:
            raise ProtobufError(f"string field has wire type {wire}")
        return _text(value)
    if typ == "bytes":
        if wire != 2:
            raise ProtobufError(f"bytes field has wire type {wire}")
        return value
    if typ in _VARINT_TYPES:
        if wire != 0:
            raise ProtobufError(f"{typ} field has wire type {wire}")
        if typ == "bool":
            return value != 0
        if typ in ("int32", "int64"):
            value &= (1 << 64) - 1
            if value >= 1 << 63:
                value -= 1 << 64
            if typ == "int32":
                value = ((value + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
            return value
        if typ in ("sint32", "sint64"):
            return (value >> 1) ^ -(value & 1)
        if typ == "uint32":
            return value & 0xFFFFFFFF
        return value & ((1 << 64) - 1)
    if typ in _FIXED64_TYPES:
        if wire != 1:
            raise ProtobufError(f"{typ} field has wire type {wire}")
        if typ == "double":
            return struct.unpack("<d", value.to_bytes(8, "little"))[0]
        return value - (1 << 64) if typ == "sfixed64" and value >= 1 << 63 else value
    if typ in _FIXED32_TYPES:
        if wire != 5:
            raise ProtobufError(f"{typ} field has wire type {wire}")
        if typ == "float":
            return struct.unpack("<f", value.to_bytes(4, "little"))[0]
        return value - (1 << 32) if typ == "sfixed32" and value >= 1 << 31 else value
    raise ProtobufError(f"unknown scalar type {typ}")


def _packed(typ: str, buf: bytes) -> list[Any]:
    """Values of a packed repeated scalar (proto2 k8s never packs, but a reader should accept it)."""
    out = []
    i = 0
    n = len(buf)
    while i < n:
        if typ in _VARINT_TYPES:
            v, i = _varint(buf, i)
            out.append(_scalar(typ, 0, v))
        else:
            size = 8 if typ in _FIXED64_TYPES else 4
            if i + size > n:
                raise ProtobufError("truncated packed field")
            out.append(_scalar(typ, 1 if size == 8 else 5, int.from_bytes(buf[i : i + size], "little")))
            i += size
    return out


# ---------------------------------------------------------------------------------------------
# Schema-driven decoding to kube JSON.


def _message(name: str, buf: bytes, depth: int) -> Any:
    """Decode ``buf`` as message ``name`` and render it as encoding/json would the Go value."""
    if depth > _MAX_DEPTH:  # kube's messages nest far less; only a crafted body gets here
        raise ProtobufError(f"messages nested past {_MAX_DEPTH} levels")
    special = CUSTOM_JSON.get(name)
    if special is not None:
        return special(buf)
    schema = MESSAGES.get(name)
    if schema is None:  # pragma: no cover - the table is closed under references
        raise ProtobufError(f"no schema for message {name}")
    if isinstance(schema, tuple):  # ("list", T): a named slice type wrapped as {repeated items = 1}
        return _repeated(schema[1], _fields_by_number(buf).get(1, []), depth) or None
    fields = _fields_by_number(buf)
    out: dict[str, Any] = {}
    for num, (jname, typ, flags) in schema.items():
        values = fields.get(num)
        omitempty = "o" in flags
        if "r" in flags:
            items = _repeated(typ, values or [], depth)
            if items:
                out[jname] = items
            elif not omitempty:
                out[jname] = None
        elif typ.startswith("map<"):
            entries = _map(typ, values or [], depth)
            if entries:
                out[jname] = entries
            elif not omitempty:
                out[jname] = None
        elif "*" in flags:
            if values:
                out[jname] = _single(typ, values, depth)
            elif not omitempty:
                out[jname] = None
        elif typ in _SCALAR_ZERO:
            if values:
                value = _scalar_last(typ, values)
                if omitempty and value == _SCALAR_ZERO[typ]:
                    continue
                out[jname] = _json_scalar(typ, value)
            elif not omitempty:
                out[jname] = None if typ == "bytes" else _SCALAR_ZERO[typ]
        else:  # a non-pointer struct: always rendered (encoding/json never omits structs)
            value = _single(typ, values or [(2, b"")], depth)
            if "i" in flags:
                if isinstance(value, dict):
                    out.update(value)
            elif isinstance(MESSAGES.get(typ), tuple) and omitempty and not value:
                continue  # a named slice type with omitempty
            else:
                out[jname] = value
    return out


def _json_scalar(typ: str, value: Any) -> Any:
    if typ == "bytes":
        return base64.b64encode(value).decode("ascii")
    return value


def _scalar_last(typ: str, values: list[tuple[int, Any]]) -> Any:
    """A singular scalar: the last occurrence on the wire wins (as in every protobuf decoder)."""
    wire, value = values[-1]
    if wire == 2 and typ not in ("string", "bytes"):
        packed = _packed(typ, value)
        if not packed:
            raise ProtobufError(f"empty packed value for singular {typ}")
        return packed[-1]
    return _scalar(typ, wire, value)


def _single(typ: str, values: list[tuple[int, Any]], depth: int) -> Any:
    """A singular field's JSON value."""
    if typ in _SCALAR_ZERO:
        return _json_scalar(typ, _scalar_last(typ, values))
    parts = []
    for wire, value in values:  # a repeated singular message merges: concatenating is merging
        if wire != 2:
            raise ProtobufError(f"message field {typ} has wire type {wire}")
        parts.append(value)
    return _message(typ, b"".join(parts), depth + 1)


def _repeated(typ: str, values: list[tuple[int, Any]], depth: int) -> list[Any]:
    out: list[Any] = []
    if typ in _SCALAR_ZERO:
        for wire, value in values:
            if wire == 2 and typ not in ("string", "bytes"):
                out.extend(_json_scalar(typ, v) for v in _packed(typ, value))
            else:
                out.append(_json_scalar(typ, _scalar(typ, wire, value)))
        return out
    for wire, value in values:
        if wire != 2:
            raise ProtobufError(f"message field {typ} has wire type {wire}")
        out.append(_message(typ, value, depth + 1))
    return out


def _map(typ: str, values: list[tuple[int, Any]], depth: int) -> dict[str, Any]:
    key_type, value_type = typ[4:-1].split(",", 1)
    out: dict[str, Any] = {}
    for wire, value in values:
        if wire != 2:
            raise ProtobufError(f"map entry has wire type {wire}")
        entry = _fields_by_number(value)
        key = _scalar_last(key_type, entry[1]) if 1 in entry else _SCALAR_ZERO[key_type]
        if 2 in entry:
            out[str(key)] = _single(value_type, entry[2], depth)
        elif value_type in _SCALAR_ZERO:
            out[str(key)] = _json_scalar(value_type, _SCALAR_ZERO[value_type])
        else:
            out[str(key)] = _message(value_type, b"", depth + 1)
    return dict(sorted(out.items()))  # encoding/json writes map keys sorted


# ---------------------------------------------------------------------------------------------
# apimachinery types with their own JSON forms.


def _timestamp(buf: bytes) -> tuple[int, int] | None:
    if not buf:
        return None
    fields = _fields_by_number(buf)
    seconds = _scalar_last("int64", fields[1]) if 1 in fields else 0
    nanos = _scalar_last("int32", fields[2]) if 2 in fields else 0
    if seconds == _ZERO_TIME_SECONDS and nanos == 0:
        return None
    return seconds, nanos


def _datetime(seconds: int, micros: int = 0) -> datetime:
    try:
        t = _EPOCH + timedelta(seconds=seconds, microseconds=micros)
    except OverflowError:
        raise ProtobufError(f"timestamp {seconds}s is out of range") from None
    return t


def _time(buf: bytes) -> str | None:
    # metav1.Time keeps whole seconds only (its proto Unmarshal drops nanos; JSON is RFC 3339).
    ts = _timestamp(buf)
    if ts is None:
        return None
    return _datetime(ts[0]).strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro_time(buf: bytes) -> str | None:
    ts = _timestamp(buf)
    if ts is None:
        return None
    seconds, nanos = ts
    if not 0 <= nanos < 1_000_000_000:
        raise ProtobufError(f"MicroTime nanos {nanos} out of range")
    return _datetime(seconds, nanos // 1000).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _quantity(buf: bytes) -> str:
    fields = _fields_by_number(buf)
    return (_scalar_last("string", fields[1]) if 1 in fields else "") or "0"


def _int_or_string(buf: bytes) -> int | str:
    fields = _fields_by_number(buf)
    kind = _scalar_last("int64", fields[1]) if 1 in fields else 0
    if kind == 0:
        return _scalar_last("int32", fields[2]) if 2 in fields else 0
    if kind == 1:
        return _scalar_last("string", fields[3]) if 3 in fields else ""
    raise ProtobufError(f"impossible IntOrString.Type {kind}")


def _raw_json(buf: bytes) -> Any:
    fields = _fields_by_number(buf)
    raw = _scalar_last("bytes", fields[1]) if 1 in fields else b""
    if not raw:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise ProtobufError("raw field (FieldsV1/RawExtension) is not JSON") from None


# Messages whose Go types have their own MarshalJSON (tools/gen_protobuf.py leaves them out of MESSAGES).
CUSTOM_JSON: dict[str, Callable[[bytes], Any]] = {
    "k8s.io.apimachinery.pkg.apis.meta.v1.Time": _time,
    "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime": _micro_time,
    "k8s.io.apimachinery.pkg.api.resource.Quantity": _quantity,
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": _int_or_string,
    "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1": _raw_json,
    "k8s.io.apimachinery.pkg.runtime.RawExtension": _raw_json,
}
