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
ships them) and protoc cannot be run on them here, so this module carries a ~60-line protobuf wire
reader (varint, 64-bit, length-delimited, 32-bit; packed repeated scalars accepted; unknown field
numbers skipped for forward compatibility) and a declarative table of message schemas, ``_MESSAGES``.

The table maps ``"<pkg>.<Message>"`` to ``{field number: (json name, type, flags)}`` listed in Go
struct order (so the output keeps kube's key order). ``type`` is a scalar (``string``, ``bool``,
``int32``, ``int64``, ``bytes``, ...), another message of the table, one of the special apimachinery
types below, or ``map<string,V>`` (a repeated map-entry message: key = 1, value = 2). ``flags``:

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

Field numbers, types and order were taken from the generated.proto descriptors of k8s.io/api and
apimachinery v0.32/v0.33 (as embedded in kubectl 1.32/1.33) and checked against the published
``generated.proto`` files; json names, ``omitempty`` and pointer-ness from the Go struct tags of the
same types. Special types and their JSON forms:

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
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from fleetplane.apimachinery.errors import bad_request, unsupported_media_type

__all__ = ["CONTENT_TYPE", "MAGIC", "decode", "is_protobuf", "supported_kinds"]

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
    return sorted(_KINDS)


def decode(body: bytes) -> dict[str, Any]:
    """Decode one protobuf-encoded object (magic + ``runtime.Unknown``) to its kube JSON form.

    Raises a 400 :class:`StatusError` for a body without the magic or with a truncated/garbled
    message, and a 415 one for a kind this server cannot decode (the client should send JSON).
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
            raise bad_request(f"unable to decode the JSON inside the protobuf envelope: {e}") from None
        if not isinstance(obj, dict):
            raise bad_request("the JSON inside the protobuf envelope is not an object")
        return obj
    if content_type and not is_protobuf(content_type):
        raise unsupported_media_type(
            f"protobuf envelope carries content type {content_type!r}; send the object as JSON "
            "(Content-Type: application/json)"
        )
    root = _KINDS.get((api_version, kind))
    if root is None:
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


def _iter_fields(buf: bytes):
    """Yield (field number, wire type, value): int for varint/fixed, bytes for length-delimited."""
    i = 0
    n = len(buf)
    while i < n:
        key, i = _varint(buf, i)
        num, wire = key >> 3, key & 7
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
    if depth > _MAX_DEPTH:
        raise ProtobufError("message nesting too deep")
    special = _SPECIAL.get(name)
    if special is not None:
        return special(buf)
    schema = _MESSAGES.get(name)
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
            elif isinstance(_MESSAGES.get(typ), tuple) and omitempty and not value:
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


_SPECIAL = {
    "meta/v1.Time": _time,
    "meta/v1.MicroTime": _micro_time,
    "resource.Quantity": _quantity,
    "intstr.IntOrString": _int_or_string,
    "meta/v1.FieldsV1": _raw_json,
    "runtime.RawExtension": _raw_json,
}


# ---------------------------------------------------------------------------------------------
# Message schemas. Generated from the k8s.io/api + apimachinery v0.32/v0.33 descriptors and Go
# struct tags (see the module docstring); keep one line per field, in Go struct order.

_MESSAGES: dict[str, Any] = {
    # ---- meta/v1 -----------------------------------------------------------------------------------------
    "meta/v1.Condition": {
        1: ("type", "string", ""),
        2: ("status", "string", ""),
        3: ("observedGeneration", "int64", "o"),
        4: ("lastTransitionTime", "meta/v1.Time", ""),
        5: ("reason", "string", ""),
        6: ("message", "string", ""),
    },
    "meta/v1.DeleteOptions": {
        1: ("gracePeriodSeconds", "int64", "*o"),
        2: ("preconditions", "meta/v1.Preconditions", "*o"),
        3: ("orphanDependents", "bool", "*o"),
        4: ("propagationPolicy", "string", "*o"),
        5: ("dryRun", "string", "ro"),
        6: ("ignoreStoreReadErrorWithClusterBreakingPotential", "bool", "*o"),
    },
    "meta/v1.FieldSelectorRequirement": {
        1: ("key", "string", ""),
        2: ("operator", "string", ""),
        3: ("values", "string", "ro"),
    },
    "meta/v1.LabelSelector": {
        1: ("matchLabels", "map<string,string>", "o"),
        2: ("matchExpressions", "meta/v1.LabelSelectorRequirement", "ro"),
    },
    "meta/v1.LabelSelectorRequirement": {
        1: ("key", "string", ""),
        2: ("operator", "string", ""),
        3: ("values", "string", "ro"),
    },
    "meta/v1.ManagedFieldsEntry": {
        1: ("manager", "string", "o"),
        2: ("operation", "string", "o"),
        3: ("apiVersion", "string", "o"),
        4: ("time", "meta/v1.Time", "*o"),
        6: ("fieldsType", "string", "o"),
        7: ("fieldsV1", "meta/v1.FieldsV1", "*o"),
        8: ("subresource", "string", "o"),
    },
    "meta/v1.ObjectMeta": {
        1: ("name", "string", "o"),
        2: ("generateName", "string", "o"),
        3: ("namespace", "string", "o"),
        4: ("selfLink", "string", "o"),
        5: ("uid", "string", "o"),
        6: ("resourceVersion", "string", "o"),
        7: ("generation", "int64", "o"),
        8: ("creationTimestamp", "meta/v1.Time", "o"),
        9: ("deletionTimestamp", "meta/v1.Time", "*o"),
        10: ("deletionGracePeriodSeconds", "int64", "*o"),
        11: ("labels", "map<string,string>", "o"),
        12: ("annotations", "map<string,string>", "o"),
        13: ("ownerReferences", "meta/v1.OwnerReference", "ro"),
        14: ("finalizers", "string", "ro"),
        17: ("managedFields", "meta/v1.ManagedFieldsEntry", "ro"),
    },
    "meta/v1.OwnerReference": {
        5: ("apiVersion", "string", ""),
        1: ("kind", "string", ""),
        3: ("name", "string", ""),
        4: ("uid", "string", ""),
        6: ("controller", "bool", "*o"),
        7: ("blockOwnerDeletion", "bool", "*o"),
    },
    "meta/v1.Preconditions": {
        1: ("uid", "string", "*o"),
        2: ("resourceVersion", "string", "*o"),
    },
    # ---- apps/v1 -----------------------------------------------------------------------------------------
    "apps/v1.ControllerRevision": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("data", "runtime.RawExtension", "o"),
        3: ("revision", "int64", ""),
    },
    "apps/v1.DaemonSet": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "apps/v1.DaemonSetSpec", "o"),
        3: ("status", "apps/v1.DaemonSetStatus", "o"),
    },
    "apps/v1.DaemonSetCondition": {
        1: ("type", "string", ""),
        2: ("status", "string", ""),
        3: ("lastTransitionTime", "meta/v1.Time", "o"),
        4: ("reason", "string", "o"),
        5: ("message", "string", "o"),
    },
    "apps/v1.DaemonSetSpec": {
        1: ("selector", "meta/v1.LabelSelector", "*"),
        2: ("template", "core/v1.PodTemplateSpec", ""),
        3: ("updateStrategy", "apps/v1.DaemonSetUpdateStrategy", "o"),
        4: ("minReadySeconds", "int32", "o"),
        6: ("revisionHistoryLimit", "int32", "*o"),
    },
    "apps/v1.DaemonSetStatus": {
        1: ("currentNumberScheduled", "int32", ""),
        2: ("numberMisscheduled", "int32", ""),
        3: ("desiredNumberScheduled", "int32", ""),
        4: ("numberReady", "int32", ""),
        5: ("observedGeneration", "int64", "o"),
        6: ("updatedNumberScheduled", "int32", "o"),
        7: ("numberAvailable", "int32", "o"),
        8: ("numberUnavailable", "int32", "o"),
        9: ("collisionCount", "int32", "*o"),
        10: ("conditions", "apps/v1.DaemonSetCondition", "ro"),
    },
    "apps/v1.DaemonSetUpdateStrategy": {
        1: ("type", "string", "o"),
        2: ("rollingUpdate", "apps/v1.RollingUpdateDaemonSet", "*o"),
    },
    "apps/v1.Deployment": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "apps/v1.DeploymentSpec", "o"),
        3: ("status", "apps/v1.DeploymentStatus", "o"),
    },
    "apps/v1.DeploymentCondition": {
        1: ("type", "string", ""),
        2: ("status", "string", ""),
        6: ("lastUpdateTime", "meta/v1.Time", "o"),
        7: ("lastTransitionTime", "meta/v1.Time", "o"),
        4: ("reason", "string", "o"),
        5: ("message", "string", "o"),
    },
    "apps/v1.DeploymentSpec": {
        1: ("replicas", "int32", "*o"),
        2: ("selector", "meta/v1.LabelSelector", "*"),
        3: ("template", "core/v1.PodTemplateSpec", ""),
        4: ("strategy", "apps/v1.DeploymentStrategy", "o"),
        5: ("minReadySeconds", "int32", "o"),
        6: ("revisionHistoryLimit", "int32", "*o"),
        7: ("paused", "bool", "o"),
        9: ("progressDeadlineSeconds", "int32", "*o"),
    },
    "apps/v1.DeploymentStatus": {
        1: ("observedGeneration", "int64", "o"),
        2: ("replicas", "int32", "o"),
        3: ("updatedReplicas", "int32", "o"),
        7: ("readyReplicas", "int32", "o"),
        4: ("availableReplicas", "int32", "o"),
        5: ("unavailableReplicas", "int32", "o"),
        9: ("terminatingReplicas", "int32", "*o"),
        6: ("conditions", "apps/v1.DeploymentCondition", "ro"),
        8: ("collisionCount", "int32", "*o"),
    },
    "apps/v1.DeploymentStrategy": {
        1: ("type", "string", "o"),
        2: ("rollingUpdate", "apps/v1.RollingUpdateDeployment", "*o"),
    },
    "apps/v1.ReplicaSet": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "apps/v1.ReplicaSetSpec", "o"),
        3: ("status", "apps/v1.ReplicaSetStatus", "o"),
    },
    "apps/v1.ReplicaSetCondition": {
        1: ("type", "string", ""),
        2: ("status", "string", ""),
        3: ("lastTransitionTime", "meta/v1.Time", "o"),
        4: ("reason", "string", "o"),
        5: ("message", "string", "o"),
    },
    "apps/v1.ReplicaSetSpec": {
        1: ("replicas", "int32", "*o"),
        4: ("minReadySeconds", "int32", "o"),
        2: ("selector", "meta/v1.LabelSelector", "*"),
        3: ("template", "core/v1.PodTemplateSpec", "o"),
    },
    "apps/v1.ReplicaSetStatus": {
        1: ("replicas", "int32", ""),
        2: ("fullyLabeledReplicas", "int32", "o"),
        4: ("readyReplicas", "int32", "o"),
        5: ("availableReplicas", "int32", "o"),
        7: ("terminatingReplicas", "int32", "*o"),
        3: ("observedGeneration", "int64", "o"),
        6: ("conditions", "apps/v1.ReplicaSetCondition", "ro"),
    },
    "apps/v1.RollingUpdateDaemonSet": {
        1: ("maxUnavailable", "intstr.IntOrString", "*o"),
        2: ("maxSurge", "intstr.IntOrString", "*o"),
    },
    "apps/v1.RollingUpdateDeployment": {
        1: ("maxUnavailable", "intstr.IntOrString", "*o"),
        2: ("maxSurge", "intstr.IntOrString", "*o"),
    },
    "apps/v1.RollingUpdateStatefulSetStrategy": {
        1: ("partition", "int32", "*o"),
        2: ("maxUnavailable", "intstr.IntOrString", "*o"),
    },
    "apps/v1.StatefulSet": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "apps/v1.StatefulSetSpec", "o"),
        3: ("status", "apps/v1.StatefulSetStatus", "o"),
    },
    "apps/v1.StatefulSetCondition": {
        1: ("type", "string", ""),
        2: ("status", "string", ""),
        3: ("lastTransitionTime", "meta/v1.Time", "o"),
        4: ("reason", "string", "o"),
        5: ("message", "string", "o"),
    },
    "apps/v1.StatefulSetOrdinals": {
        1: ("start", "int32", ""),
    },
    "apps/v1.StatefulSetPersistentVolumeClaimRetentionPolicy": {
        1: ("whenDeleted", "string", "o"),
        2: ("whenScaled", "string", "o"),
    },
    "apps/v1.StatefulSetSpec": {
        1: ("replicas", "int32", "*o"),
        2: ("selector", "meta/v1.LabelSelector", "*"),
        3: ("template", "core/v1.PodTemplateSpec", ""),
        4: ("volumeClaimTemplates", "core/v1.PersistentVolumeClaim", "ro"),
        5: ("serviceName", "string", ""),
        6: ("podManagementPolicy", "string", "o"),
        7: ("updateStrategy", "apps/v1.StatefulSetUpdateStrategy", "o"),
        8: ("revisionHistoryLimit", "int32", "*o"),
        9: ("minReadySeconds", "int32", "o"),
        10: (
            "persistentVolumeClaimRetentionPolicy",
            "apps/v1.StatefulSetPersistentVolumeClaimRetentionPolicy",
            "*o",
        ),
        11: ("ordinals", "apps/v1.StatefulSetOrdinals", "*o"),
    },
    "apps/v1.StatefulSetStatus": {
        1: ("observedGeneration", "int64", "o"),
        2: ("replicas", "int32", ""),
        3: ("readyReplicas", "int32", "o"),
        4: ("currentReplicas", "int32", "o"),
        5: ("updatedReplicas", "int32", "o"),
        6: ("currentRevision", "string", "o"),
        7: ("updateRevision", "string", "o"),
        9: ("collisionCount", "int32", "*o"),
        10: ("conditions", "apps/v1.StatefulSetCondition", "ro"),
        11: ("availableReplicas", "int32", ""),
    },
    "apps/v1.StatefulSetUpdateStrategy": {
        1: ("type", "string", "o"),
        2: ("rollingUpdate", "apps/v1.RollingUpdateStatefulSetStrategy", "*o"),
    },
    # ---- authentication/v1 -------------------------------------------------------------------------------
    "authentication/v1.BoundObjectReference": {
        1: ("kind", "string", "o"),
        2: ("apiVersion", "string", "o"),
        3: ("name", "string", "o"),
        4: ("uid", "string", "o"),
    },
    "authentication/v1.ExtraValue": ("list", "string"),
    "authentication/v1.SelfSubjectReview": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("status", "authentication/v1.SelfSubjectReviewStatus", "o"),
    },
    "authentication/v1.SelfSubjectReviewStatus": {
        1: ("userInfo", "authentication/v1.UserInfo", "o"),
    },
    "authentication/v1.TokenRequest": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "authentication/v1.TokenRequestSpec", ""),
        3: ("status", "authentication/v1.TokenRequestStatus", "o"),
    },
    "authentication/v1.TokenRequestSpec": {
        1: ("audiences", "string", "r"),
        4: ("expirationSeconds", "int64", "*"),
        3: ("boundObjectRef", "authentication/v1.BoundObjectReference", "*"),
    },
    "authentication/v1.TokenRequestStatus": {
        1: ("token", "string", ""),
        2: ("expirationTimestamp", "meta/v1.Time", ""),
    },
    "authentication/v1.TokenReview": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "authentication/v1.TokenReviewSpec", ""),
        3: ("status", "authentication/v1.TokenReviewStatus", "o"),
    },
    "authentication/v1.TokenReviewSpec": {
        1: ("token", "string", "o"),
        2: ("audiences", "string", "ro"),
    },
    "authentication/v1.TokenReviewStatus": {
        1: ("authenticated", "bool", "o"),
        2: ("user", "authentication/v1.UserInfo", "o"),
        4: ("audiences", "string", "ro"),
        3: ("error", "string", "o"),
    },
    "authentication/v1.UserInfo": {
        1: ("username", "string", "o"),
        2: ("uid", "string", "o"),
        3: ("groups", "string", "ro"),
        4: ("extra", "map<string,authentication/v1.ExtraValue>", "o"),
    },
    # ---- authorization/v1 --------------------------------------------------------------------------------
    "authorization/v1.ExtraValue": ("list", "string"),
    "authorization/v1.FieldSelectorAttributes": {
        1: ("rawSelector", "string", "o"),
        2: ("requirements", "meta/v1.FieldSelectorRequirement", "ro"),
    },
    "authorization/v1.LabelSelectorAttributes": {
        1: ("rawSelector", "string", "o"),
        2: ("requirements", "meta/v1.LabelSelectorRequirement", "ro"),
    },
    "authorization/v1.LocalSubjectAccessReview": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "authorization/v1.SubjectAccessReviewSpec", ""),
        3: ("status", "authorization/v1.SubjectAccessReviewStatus", "o"),
    },
    "authorization/v1.NonResourceAttributes": {
        1: ("path", "string", "o"),
        2: ("verb", "string", "o"),
    },
    "authorization/v1.NonResourceRule": {
        1: ("verbs", "string", "r"),
        2: ("nonResourceURLs", "string", "ro"),
    },
    "authorization/v1.ResourceAttributes": {
        1: ("namespace", "string", "o"),
        2: ("verb", "string", "o"),
        3: ("group", "string", "o"),
        4: ("version", "string", "o"),
        5: ("resource", "string", "o"),
        6: ("subresource", "string", "o"),
        7: ("name", "string", "o"),
        8: ("fieldSelector", "authorization/v1.FieldSelectorAttributes", "*o"),
        9: ("labelSelector", "authorization/v1.LabelSelectorAttributes", "*o"),
    },
    "authorization/v1.ResourceRule": {
        1: ("verbs", "string", "r"),
        2: ("apiGroups", "string", "ro"),
        3: ("resources", "string", "ro"),
        4: ("resourceNames", "string", "ro"),
    },
    "authorization/v1.SelfSubjectAccessReview": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "authorization/v1.SelfSubjectAccessReviewSpec", ""),
        3: ("status", "authorization/v1.SubjectAccessReviewStatus", "o"),
    },
    "authorization/v1.SelfSubjectAccessReviewSpec": {
        1: ("resourceAttributes", "authorization/v1.ResourceAttributes", "*o"),
        2: ("nonResourceAttributes", "authorization/v1.NonResourceAttributes", "*o"),
    },
    "authorization/v1.SelfSubjectRulesReview": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "authorization/v1.SelfSubjectRulesReviewSpec", ""),
        3: ("status", "authorization/v1.SubjectRulesReviewStatus", "o"),
    },
    "authorization/v1.SelfSubjectRulesReviewSpec": {
        1: ("namespace", "string", "o"),
    },
    "authorization/v1.SubjectAccessReview": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "authorization/v1.SubjectAccessReviewSpec", ""),
        3: ("status", "authorization/v1.SubjectAccessReviewStatus", "o"),
    },
    "authorization/v1.SubjectAccessReviewSpec": {
        1: ("resourceAttributes", "authorization/v1.ResourceAttributes", "*o"),
        2: ("nonResourceAttributes", "authorization/v1.NonResourceAttributes", "*o"),
        3: ("user", "string", "o"),
        4: ("groups", "string", "ro"),
        5: ("extra", "map<string,authorization/v1.ExtraValue>", "o"),
        6: ("uid", "string", "o"),
    },
    "authorization/v1.SubjectAccessReviewStatus": {
        1: ("allowed", "bool", ""),
        4: ("denied", "bool", "o"),
        2: ("reason", "string", "o"),
        3: ("evaluationError", "string", "o"),
    },
    "authorization/v1.SubjectRulesReviewStatus": {
        1: ("resourceRules", "authorization/v1.ResourceRule", "r"),
        2: ("nonResourceRules", "authorization/v1.NonResourceRule", "r"),
        3: ("incomplete", "bool", ""),
        4: ("evaluationError", "string", "o"),
    },
    # ---- autoscaling/v1 ----------------------------------------------------------------------------------
    "autoscaling/v1.CrossVersionObjectReference": {
        1: ("kind", "string", ""),
        2: ("name", "string", ""),
        3: ("apiVersion", "string", "o"),
    },
    "autoscaling/v1.HorizontalPodAutoscaler": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "autoscaling/v1.HorizontalPodAutoscalerSpec", "o"),
        3: ("status", "autoscaling/v1.HorizontalPodAutoscalerStatus", "o"),
    },
    "autoscaling/v1.HorizontalPodAutoscalerSpec": {
        1: ("scaleTargetRef", "autoscaling/v1.CrossVersionObjectReference", ""),
        2: ("minReplicas", "int32", "*o"),
        3: ("maxReplicas", "int32", ""),
        4: ("targetCPUUtilizationPercentage", "int32", "*o"),
    },
    "autoscaling/v1.HorizontalPodAutoscalerStatus": {
        1: ("observedGeneration", "int64", "*o"),
        2: ("lastScaleTime", "meta/v1.Time", "*o"),
        3: ("currentReplicas", "int32", ""),
        4: ("desiredReplicas", "int32", ""),
        5: ("currentCPUUtilizationPercentage", "int32", "*o"),
    },
    "autoscaling/v1.Scale": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "autoscaling/v1.ScaleSpec", "o"),
        3: ("status", "autoscaling/v1.ScaleStatus", "o"),
    },
    "autoscaling/v1.ScaleSpec": {
        1: ("replicas", "int32", "o"),
    },
    "autoscaling/v1.ScaleStatus": {
        1: ("replicas", "int32", ""),
        2: ("selector", "string", "o"),
    },
    # ---- autoscaling/v2 ----------------------------------------------------------------------------------
    "autoscaling/v2.ContainerResourceMetricSource": {
        1: ("name", "string", ""),
        2: ("target", "autoscaling/v2.MetricTarget", ""),
        3: ("container", "string", ""),
    },
    "autoscaling/v2.ContainerResourceMetricStatus": {
        1: ("name", "string", ""),
        2: ("current", "autoscaling/v2.MetricValueStatus", ""),
        3: ("container", "string", ""),
    },
    "autoscaling/v2.CrossVersionObjectReference": {
        1: ("kind", "string", ""),
        2: ("name", "string", ""),
        3: ("apiVersion", "string", "o"),
    },
    "autoscaling/v2.ExternalMetricSource": {
        1: ("metric", "autoscaling/v2.MetricIdentifier", ""),
        2: ("target", "autoscaling/v2.MetricTarget", ""),
    },
    "autoscaling/v2.ExternalMetricStatus": {
        1: ("metric", "autoscaling/v2.MetricIdentifier", ""),
        2: ("current", "autoscaling/v2.MetricValueStatus", ""),
    },
    "autoscaling/v2.HPAScalingPolicy": {
        1: ("type", "string", ""),
        2: ("value", "int32", ""),
        3: ("periodSeconds", "int32", ""),
    },
    "autoscaling/v2.HPAScalingRules": {
        3: ("stabilizationWindowSeconds", "int32", "*o"),
        1: ("selectPolicy", "string", "*o"),
        2: ("policies", "autoscaling/v2.HPAScalingPolicy", "ro"),
        4: ("tolerance", "resource.Quantity", "*o"),
    },
    "autoscaling/v2.HorizontalPodAutoscaler": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "autoscaling/v2.HorizontalPodAutoscalerSpec", "o"),
        3: ("status", "autoscaling/v2.HorizontalPodAutoscalerStatus", "o"),
    },
    "autoscaling/v2.HorizontalPodAutoscalerBehavior": {
        1: ("scaleUp", "autoscaling/v2.HPAScalingRules", "*o"),
        2: ("scaleDown", "autoscaling/v2.HPAScalingRules", "*o"),
    },
    "autoscaling/v2.HorizontalPodAutoscalerCondition": {
        1: ("type", "string", ""),
        2: ("status", "string", ""),
        3: ("lastTransitionTime", "meta/v1.Time", "o"),
        4: ("reason", "string", "o"),
        5: ("message", "string", "o"),
    },
    "autoscaling/v2.HorizontalPodAutoscalerSpec": {
        1: ("scaleTargetRef", "autoscaling/v2.CrossVersionObjectReference", ""),
        2: ("minReplicas", "int32", "*o"),
        3: ("maxReplicas", "int32", ""),
        4: ("metrics", "autoscaling/v2.MetricSpec", "ro"),
        5: ("behavior", "autoscaling/v2.HorizontalPodAutoscalerBehavior", "*o"),
    },
    "autoscaling/v2.HorizontalPodAutoscalerStatus": {
        1: ("observedGeneration", "int64", "*o"),
        2: ("lastScaleTime", "meta/v1.Time", "*o"),
        3: ("currentReplicas", "int32", "o"),
        4: ("desiredReplicas", "int32", ""),
        5: ("currentMetrics", "autoscaling/v2.MetricStatus", "r"),
        6: ("conditions", "autoscaling/v2.HorizontalPodAutoscalerCondition", "ro"),
    },
    "autoscaling/v2.MetricIdentifier": {
        1: ("name", "string", ""),
        2: ("selector", "meta/v1.LabelSelector", "*o"),
    },
    "autoscaling/v2.MetricSpec": {
        1: ("type", "string", ""),
        2: ("object", "autoscaling/v2.ObjectMetricSource", "*o"),
        3: ("pods", "autoscaling/v2.PodsMetricSource", "*o"),
        4: ("resource", "autoscaling/v2.ResourceMetricSource", "*o"),
        7: ("containerResource", "autoscaling/v2.ContainerResourceMetricSource", "*o"),
        5: ("external", "autoscaling/v2.ExternalMetricSource", "*o"),
    },
    "autoscaling/v2.MetricStatus": {
        1: ("type", "string", ""),
        2: ("object", "autoscaling/v2.ObjectMetricStatus", "*o"),
        3: ("pods", "autoscaling/v2.PodsMetricStatus", "*o"),
        4: ("resource", "autoscaling/v2.ResourceMetricStatus", "*o"),
        7: ("containerResource", "autoscaling/v2.ContainerResourceMetricStatus", "*o"),
        5: ("external", "autoscaling/v2.ExternalMetricStatus", "*o"),
    },
    "autoscaling/v2.MetricTarget": {
        1: ("type", "string", ""),
        2: ("value", "resource.Quantity", "*o"),
        3: ("averageValue", "resource.Quantity", "*o"),
        4: ("averageUtilization", "int32", "*o"),
    },
    "autoscaling/v2.MetricValueStatus": {
        1: ("value", "resource.Quantity", "*o"),
        2: ("averageValue", "resource.Quantity", "*o"),
        3: ("averageUtilization", "int32", "*o"),
    },
    "autoscaling/v2.ObjectMetricSource": {
        1: ("describedObject", "autoscaling/v2.CrossVersionObjectReference", ""),
        2: ("target", "autoscaling/v2.MetricTarget", ""),
        3: ("metric", "autoscaling/v2.MetricIdentifier", ""),
    },
    "autoscaling/v2.ObjectMetricStatus": {
        1: ("metric", "autoscaling/v2.MetricIdentifier", ""),
        2: ("current", "autoscaling/v2.MetricValueStatus", ""),
        3: ("describedObject", "autoscaling/v2.CrossVersionObjectReference", ""),
    },
    "autoscaling/v2.PodsMetricSource": {
        1: ("metric", "autoscaling/v2.MetricIdentifier", ""),
        2: ("target", "autoscaling/v2.MetricTarget", ""),
    },
    "autoscaling/v2.PodsMetricStatus": {
        1: ("metric", "autoscaling/v2.MetricIdentifier", ""),
        2: ("current", "autoscaling/v2.MetricValueStatus", ""),
    },
    "autoscaling/v2.ResourceMetricSource": {
        1: ("name", "string", ""),
        2: ("target", "autoscaling/v2.MetricTarget", ""),
    },
    "autoscaling/v2.ResourceMetricStatus": {
        1: ("name", "string", ""),
        2: ("current", "autoscaling/v2.MetricValueStatus", ""),
    },
    # ---- batch/v1 ----------------------------------------------------------------------------------------
    "batch/v1.CronJob": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "batch/v1.CronJobSpec", "o"),
        3: ("status", "batch/v1.CronJobStatus", "o"),
    },
    "batch/v1.CronJobSpec": {
        1: ("schedule", "string", ""),
        8: ("timeZone", "string", "*o"),
        2: ("startingDeadlineSeconds", "int64", "*o"),
        3: ("concurrencyPolicy", "string", "o"),
        4: ("suspend", "bool", "*o"),
        5: ("jobTemplate", "batch/v1.JobTemplateSpec", ""),
        6: ("successfulJobsHistoryLimit", "int32", "*o"),
        7: ("failedJobsHistoryLimit", "int32", "*o"),
    },
    "batch/v1.CronJobStatus": {
        1: ("active", "core/v1.ObjectReference", "ro"),
        4: ("lastScheduleTime", "meta/v1.Time", "*o"),
        5: ("lastSuccessfulTime", "meta/v1.Time", "*o"),
    },
    "batch/v1.Job": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "batch/v1.JobSpec", "o"),
        3: ("status", "batch/v1.JobStatus", "o"),
    },
    "batch/v1.JobCondition": {
        1: ("type", "string", ""),
        2: ("status", "string", ""),
        3: ("lastProbeTime", "meta/v1.Time", "o"),
        4: ("lastTransitionTime", "meta/v1.Time", "o"),
        5: ("reason", "string", "o"),
        6: ("message", "string", "o"),
    },
    "batch/v1.JobSpec": {
        1: ("parallelism", "int32", "*o"),
        2: ("completions", "int32", "*o"),
        3: ("activeDeadlineSeconds", "int64", "*o"),
        11: ("podFailurePolicy", "batch/v1.PodFailurePolicy", "*o"),
        16: ("successPolicy", "batch/v1.SuccessPolicy", "*o"),
        7: ("backoffLimit", "int32", "*o"),
        12: ("backoffLimitPerIndex", "int32", "*o"),
        13: ("maxFailedIndexes", "int32", "*o"),
        4: ("selector", "meta/v1.LabelSelector", "*o"),
        5: ("manualSelector", "bool", "*o"),
        6: ("template", "core/v1.PodTemplateSpec", ""),
        8: ("ttlSecondsAfterFinished", "int32", "*o"),
        9: ("completionMode", "string", "*o"),
        10: ("suspend", "bool", "*o"),
        14: ("podReplacementPolicy", "string", "*o"),
        15: ("managedBy", "string", "*o"),
    },
    "batch/v1.JobStatus": {
        1: ("conditions", "batch/v1.JobCondition", "ro"),
        2: ("startTime", "meta/v1.Time", "*o"),
        3: ("completionTime", "meta/v1.Time", "*o"),
        4: ("active", "int32", "o"),
        5: ("succeeded", "int32", "o"),
        6: ("failed", "int32", "o"),
        11: ("terminating", "int32", "*o"),
        7: ("completedIndexes", "string", "o"),
        10: ("failedIndexes", "string", "*o"),
        8: ("uncountedTerminatedPods", "batch/v1.UncountedTerminatedPods", "*o"),
        9: ("ready", "int32", "*o"),
    },
    "batch/v1.JobTemplateSpec": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "batch/v1.JobSpec", "o"),
    },
    "batch/v1.PodFailurePolicy": {
        1: ("rules", "batch/v1.PodFailurePolicyRule", "r"),
    },
    "batch/v1.PodFailurePolicyOnExitCodesRequirement": {
        1: ("containerName", "string", "*o"),
        2: ("operator", "string", ""),
        3: ("values", "int32", "r"),
    },
    "batch/v1.PodFailurePolicyOnPodConditionsPattern": {
        1: ("type", "string", ""),
        2: ("status", "string", ""),
    },
    "batch/v1.PodFailurePolicyRule": {
        1: ("action", "string", ""),
        2: ("onExitCodes", "batch/v1.PodFailurePolicyOnExitCodesRequirement", "*o"),
        3: ("onPodConditions", "batch/v1.PodFailurePolicyOnPodConditionsPattern", "ro"),
    },
    "batch/v1.SuccessPolicy": {
        1: ("rules", "batch/v1.SuccessPolicyRule", "r"),
    },
    "batch/v1.SuccessPolicyRule": {
        1: ("succeededIndexes", "string", "*o"),
        2: ("succeededCount", "int32", "*o"),
    },
    "batch/v1.UncountedTerminatedPods": {
        1: ("succeeded", "string", "ro"),
        2: ("failed", "string", "ro"),
    },
    # ---- certificates/v1 ---------------------------------------------------------------------------------
    "certificates/v1.CertificateSigningRequest": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "certificates/v1.CertificateSigningRequestSpec", ""),
        3: ("status", "certificates/v1.CertificateSigningRequestStatus", "o"),
    },
    "certificates/v1.CertificateSigningRequestCondition": {
        1: ("type", "string", ""),
        6: ("status", "string", ""),
        2: ("reason", "string", "o"),
        3: ("message", "string", "o"),
        4: ("lastUpdateTime", "meta/v1.Time", "o"),
        5: ("lastTransitionTime", "meta/v1.Time", "o"),
    },
    "certificates/v1.CertificateSigningRequestSpec": {
        1: ("request", "bytes", "*"),
        7: ("signerName", "string", ""),
        8: ("expirationSeconds", "int32", "*o"),
        5: ("usages", "string", "ro"),
        2: ("username", "string", "o"),
        3: ("uid", "string", "o"),
        4: ("groups", "string", "ro"),
        6: ("extra", "map<string,certificates/v1.ExtraValue>", "o"),
    },
    "certificates/v1.CertificateSigningRequestStatus": {
        1: ("conditions", "certificates/v1.CertificateSigningRequestCondition", "ro"),
        2: ("certificate", "bytes", "*o"),
    },
    "certificates/v1.ExtraValue": ("list", "string"),
    # ---- coordination/v1 ---------------------------------------------------------------------------------
    "coordination/v1.Lease": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "coordination/v1.LeaseSpec", "o"),
    },
    "coordination/v1.LeaseSpec": {
        1: ("holderIdentity", "string", "*o"),
        2: ("leaseDurationSeconds", "int32", "*o"),
        3: ("acquireTime", "meta/v1.MicroTime", "*o"),
        4: ("renewTime", "meta/v1.MicroTime", "*o"),
        5: ("leaseTransitions", "int32", "*o"),
        6: ("strategy", "string", "*o"),
        7: ("preferredHolder", "string", "*o"),
    },
    # ---- core/v1 -----------------------------------------------------------------------------------------
    "core/v1.AWSElasticBlockStoreVolumeSource": {
        1: ("volumeID", "string", ""),
        2: ("fsType", "string", "o"),
        3: ("partition", "int32", "o"),
        4: ("readOnly", "bool", "o"),
    },
    "core/v1.Affinity": {
        1: ("nodeAffinity", "core/v1.NodeAffinity", "*o"),
        2: ("podAffinity", "core/v1.PodAffinity", "*o"),
        3: ("podAntiAffinity", "core/v1.PodAntiAffinity", "*o"),
    },
    "core/v1.AppArmorProfile": {
        1: ("type", "string", ""),
        2: ("localhostProfile", "string", "*o"),
    },
    "core/v1.AttachedVolume": {
        1: ("name", "string", ""),
        2: ("devicePath", "string", ""),
    },
    "core/v1.AzureDiskVolumeSource": {
        1: ("diskName", "string", ""),
        2: ("diskURI", "string", ""),
        3: ("cachingMode", "string", "*o"),
        4: ("fsType", "string", "*o"),
        5: ("readOnly", "bool", "*o"),
        6: ("kind", "string", "*o"),
    },
    "core/v1.AzureFilePersistentVolumeSource": {
        1: ("secretName", "string", ""),
        2: ("shareName", "string", ""),
        3: ("readOnly", "bool", "o"),
        4: ("secretNamespace", "string", "*"),
    },
    "core/v1.AzureFileVolumeSource": {
        1: ("secretName", "string", ""),
        2: ("shareName", "string", ""),
        3: ("readOnly", "bool", "o"),
    },
    "core/v1.Binding": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("target", "core/v1.ObjectReference", ""),
    },
    "core/v1.CSIPersistentVolumeSource": {
        1: ("driver", "string", ""),
        2: ("volumeHandle", "string", ""),
        3: ("readOnly", "bool", "o"),
        4: ("fsType", "string", "o"),
        5: ("volumeAttributes", "map<string,string>", "o"),
        6: ("controllerPublishSecretRef", "core/v1.SecretReference", "*o"),
        7: ("nodeStageSecretRef", "core/v1.SecretReference", "*o"),
        8: ("nodePublishSecretRef", "core/v1.SecretReference", "*o"),
        9: ("controllerExpandSecretRef", "core/v1.SecretReference", "*o"),
        10: ("nodeExpandSecretRef", "core/v1.SecretReference", "*o"),
    },
    "core/v1.CSIVolumeSource": {
        1: ("driver", "string", ""),
        2: ("readOnly", "bool", "*o"),
        3: ("fsType", "string", "*o"),
        4: ("volumeAttributes", "map<string,string>", "o"),
        5: ("nodePublishSecretRef", "core/v1.LocalObjectReference", "*o"),
    },
    "core/v1.Capabilities": {
        1: ("add", "string", "ro"),
        2: ("drop", "string", "ro"),
    },
    "core/v1.CephFSPersistentVolumeSource": {
        1: ("monitors", "string", "r"),
        2: ("path", "string", "o"),
        3: ("user", "string", "o"),
        4: ("secretFile", "string", "o"),
        5: ("secretRef", "core/v1.SecretReference", "*o"),
        6: ("readOnly", "bool", "o"),
    },
    "core/v1.CephFSVolumeSource": {
        1: ("monitors", "string", "r"),
        2: ("path", "string", "o"),
        3: ("user", "string", "o"),
        4: ("secretFile", "string", "o"),
        5: ("secretRef", "core/v1.LocalObjectReference", "*o"),
        6: ("readOnly", "bool", "o"),
    },
    "core/v1.CinderPersistentVolumeSource": {
        1: ("volumeID", "string", ""),
        2: ("fsType", "string", "o"),
        3: ("readOnly", "bool", "o"),
        4: ("secretRef", "core/v1.SecretReference", "*o"),
    },
    "core/v1.CinderVolumeSource": {
        1: ("volumeID", "string", ""),
        2: ("fsType", "string", "o"),
        3: ("readOnly", "bool", "o"),
        4: ("secretRef", "core/v1.LocalObjectReference", "*o"),
    },
    "core/v1.ClientIPConfig": {
        1: ("timeoutSeconds", "int32", "*o"),
    },
    "core/v1.ClusterTrustBundleProjection": {
        1: ("name", "string", "*o"),
        2: ("signerName", "string", "*o"),
        3: ("labelSelector", "meta/v1.LabelSelector", "*o"),
        5: ("optional", "bool", "*o"),
        4: ("path", "string", ""),
    },
    "core/v1.ConfigMap": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        4: ("immutable", "bool", "*o"),
        2: ("data", "map<string,string>", "o"),
        3: ("binaryData", "map<string,bytes>", "o"),
    },
    "core/v1.ConfigMapEnvSource": {
        1: ("", "core/v1.LocalObjectReference", "i"),
        2: ("optional", "bool", "*o"),
    },
    "core/v1.ConfigMapKeySelector": {
        1: ("", "core/v1.LocalObjectReference", "i"),
        2: ("key", "string", ""),
        3: ("optional", "bool", "*o"),
    },
    "core/v1.ConfigMapNodeConfigSource": {
        1: ("namespace", "string", ""),
        2: ("name", "string", ""),
        3: ("uid", "string", "o"),
        4: ("resourceVersion", "string", "o"),
        5: ("kubeletConfigKey", "string", ""),
    },
    "core/v1.ConfigMapProjection": {
        1: ("", "core/v1.LocalObjectReference", "i"),
        2: ("items", "core/v1.KeyToPath", "ro"),
        4: ("optional", "bool", "*o"),
    },
    "core/v1.ConfigMapVolumeSource": {
        1: ("", "core/v1.LocalObjectReference", "i"),
        2: ("items", "core/v1.KeyToPath", "ro"),
        3: ("defaultMode", "int32", "*o"),
        4: ("optional", "bool", "*o"),
    },
    "core/v1.Container": {
        1: ("name", "string", ""),
        2: ("image", "string", "o"),
        3: ("command", "string", "ro"),
        4: ("args", "string", "ro"),
        5: ("workingDir", "string", "o"),
        6: ("ports", "core/v1.ContainerPort", "ro"),
        19: ("envFrom", "core/v1.EnvFromSource", "ro"),
        7: ("env", "core/v1.EnvVar", "ro"),
        8: ("resources", "core/v1.ResourceRequirements", "o"),
        23: ("resizePolicy", "core/v1.ContainerResizePolicy", "ro"),
        24: ("restartPolicy", "string", "*o"),
        9: ("volumeMounts", "core/v1.VolumeMount", "ro"),
        21: ("volumeDevices", "core/v1.VolumeDevice", "ro"),
        10: ("livenessProbe", "core/v1.Probe", "*o"),
        11: ("readinessProbe", "core/v1.Probe", "*o"),
        22: ("startupProbe", "core/v1.Probe", "*o"),
        12: ("lifecycle", "core/v1.Lifecycle", "*o"),
        13: ("terminationMessagePath", "string", "o"),
        20: ("terminationMessagePolicy", "string", "o"),
        14: ("imagePullPolicy", "string", "o"),
        15: ("securityContext", "core/v1.SecurityContext", "*o"),
        16: ("stdin", "bool", "o"),
        17: ("stdinOnce", "bool", "o"),
        18: ("tty", "bool", "o"),
    },
    "core/v1.ContainerImage": {
        1: ("names", "string", "r"),
        2: ("sizeBytes", "int64", "o"),
    },
    "core/v1.ContainerPort": {
        1: ("name", "string", "o"),
        2: ("hostPort", "int32", "o"),
        3: ("containerPort", "int32", ""),
        4: ("protocol", "string", "o"),
        5: ("hostIP", "string", "o"),
    },
    "core/v1.ContainerResizePolicy": {
        1: ("resourceName", "string", ""),
        2: ("restartPolicy", "string", ""),
    },
    "core/v1.ContainerState": {
        1: ("waiting", "core/v1.ContainerStateWaiting", "*o"),
        2: ("running", "core/v1.ContainerStateRunning", "*o"),
        3: ("terminated", "core/v1.ContainerStateTerminated", "*o"),
    },
    "core/v1.ContainerStateRunning": {
        1: ("startedAt", "meta/v1.Time", "o"),
    },
    "core/v1.ContainerStateTerminated": {
        1: ("exitCode", "int32", ""),
        2: ("signal", "int32", "o"),
        3: ("reason", "string", "o"),
        4: ("message", "string", "o"),
        5: ("startedAt", "meta/v1.Time", "o"),
        6: ("finishedAt", "meta/v1.Time", "o"),
        7: ("containerID", "string", "o"),
    },
    "core/v1.ContainerStateWaiting": {
        1: ("reason", "string", "o"),
        2: ("message", "string", "o"),
    },
    "core/v1.ContainerStatus": {
        1: ("name", "string", ""),
        2: ("state", "core/v1.ContainerState", "o"),
        3: ("lastState", "core/v1.ContainerState", "o"),
        4: ("ready", "bool", ""),
        5: ("restartCount", "int32", ""),
        6: ("image", "string", ""),
        7: ("imageID", "string", ""),
        8: ("containerID", "string", "o"),
        9: ("started", "bool", "*o"),
        10: ("allocatedResources", "map<string,resource.Quantity>", "o"),
        11: ("resources", "core/v1.ResourceRequirements", "*o"),
        12: ("volumeMounts", "core/v1.VolumeMountStatus", "ro"),
        13: ("user", "core/v1.ContainerUser", "*o"),
        14: ("allocatedResourcesStatus", "core/v1.ResourceStatus", "ro"),
        15: ("stopSignal", "string", "*o"),
    },
    "core/v1.ContainerUser": {
        1: ("linux", "core/v1.LinuxContainerUser", "*o"),
    },
    "core/v1.DaemonEndpoint": {
        1: ("Port", "int32", ""),
    },
    "core/v1.DownwardAPIProjection": {
        1: ("items", "core/v1.DownwardAPIVolumeFile", "ro"),
    },
    "core/v1.DownwardAPIVolumeFile": {
        1: ("path", "string", ""),
        2: ("fieldRef", "core/v1.ObjectFieldSelector", "*o"),
        3: ("resourceFieldRef", "core/v1.ResourceFieldSelector", "*o"),
        4: ("mode", "int32", "*o"),
    },
    "core/v1.DownwardAPIVolumeSource": {
        1: ("items", "core/v1.DownwardAPIVolumeFile", "ro"),
        2: ("defaultMode", "int32", "*o"),
    },
    "core/v1.EmptyDirVolumeSource": {
        1: ("medium", "string", "o"),
        2: ("sizeLimit", "resource.Quantity", "*o"),
    },
    "core/v1.EndpointAddress": {
        1: ("ip", "string", ""),
        3: ("hostname", "string", "o"),
        4: ("nodeName", "string", "*o"),
        2: ("targetRef", "core/v1.ObjectReference", "*o"),
    },
    "core/v1.EndpointPort": {
        1: ("name", "string", "o"),
        2: ("port", "int32", ""),
        3: ("protocol", "string", "o"),
        4: ("appProtocol", "string", "*o"),
    },
    "core/v1.EndpointSubset": {
        1: ("addresses", "core/v1.EndpointAddress", "ro"),
        2: ("notReadyAddresses", "core/v1.EndpointAddress", "ro"),
        3: ("ports", "core/v1.EndpointPort", "ro"),
    },
    "core/v1.Endpoints": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("subsets", "core/v1.EndpointSubset", "ro"),
    },
    "core/v1.EnvFromSource": {
        1: ("prefix", "string", "o"),
        2: ("configMapRef", "core/v1.ConfigMapEnvSource", "*o"),
        3: ("secretRef", "core/v1.SecretEnvSource", "*o"),
    },
    "core/v1.EnvVar": {
        1: ("name", "string", ""),
        2: ("value", "string", "o"),
        3: ("valueFrom", "core/v1.EnvVarSource", "*o"),
    },
    "core/v1.EnvVarSource": {
        1: ("fieldRef", "core/v1.ObjectFieldSelector", "*o"),
        2: ("resourceFieldRef", "core/v1.ResourceFieldSelector", "*o"),
        3: ("configMapKeyRef", "core/v1.ConfigMapKeySelector", "*o"),
        4: ("secretKeyRef", "core/v1.SecretKeySelector", "*o"),
    },
    "core/v1.EphemeralContainer": {
        1: ("", "core/v1.EphemeralContainerCommon", "i"),
        2: ("targetContainerName", "string", "o"),
    },
    "core/v1.EphemeralContainerCommon": {
        1: ("name", "string", ""),
        2: ("image", "string", "o"),
        3: ("command", "string", "ro"),
        4: ("args", "string", "ro"),
        5: ("workingDir", "string", "o"),
        6: ("ports", "core/v1.ContainerPort", "ro"),
        19: ("envFrom", "core/v1.EnvFromSource", "ro"),
        7: ("env", "core/v1.EnvVar", "ro"),
        8: ("resources", "core/v1.ResourceRequirements", "o"),
        23: ("resizePolicy", "core/v1.ContainerResizePolicy", "ro"),
        24: ("restartPolicy", "string", "*o"),
        9: ("volumeMounts", "core/v1.VolumeMount", "ro"),
        21: ("volumeDevices", "core/v1.VolumeDevice", "ro"),
        10: ("livenessProbe", "core/v1.Probe", "*o"),
        11: ("readinessProbe", "core/v1.Probe", "*o"),
        22: ("startupProbe", "core/v1.Probe", "*o"),
        12: ("lifecycle", "core/v1.Lifecycle", "*o"),
        13: ("terminationMessagePath", "string", "o"),
        20: ("terminationMessagePolicy", "string", "o"),
        14: ("imagePullPolicy", "string", "o"),
        15: ("securityContext", "core/v1.SecurityContext", "*o"),
        16: ("stdin", "bool", "o"),
        17: ("stdinOnce", "bool", "o"),
        18: ("tty", "bool", "o"),
    },
    "core/v1.EphemeralVolumeSource": {
        1: ("volumeClaimTemplate", "core/v1.PersistentVolumeClaimTemplate", "*o"),
    },
    "core/v1.Event": {
        1: ("metadata", "meta/v1.ObjectMeta", ""),
        2: ("involvedObject", "core/v1.ObjectReference", ""),
        3: ("reason", "string", "o"),
        4: ("message", "string", "o"),
        5: ("source", "core/v1.EventSource", "o"),
        6: ("firstTimestamp", "meta/v1.Time", "o"),
        7: ("lastTimestamp", "meta/v1.Time", "o"),
        8: ("count", "int32", "o"),
        9: ("type", "string", "o"),
        10: ("eventTime", "meta/v1.MicroTime", "o"),
        11: ("series", "core/v1.EventSeries", "*o"),
        12: ("action", "string", "o"),
        13: ("related", "core/v1.ObjectReference", "*o"),
        14: ("reportingComponent", "string", ""),
        15: ("reportingInstance", "string", ""),
    },
    "core/v1.EventSeries": {
        1: ("count", "int32", "o"),
        2: ("lastObservedTime", "meta/v1.MicroTime", "o"),
    },
    "core/v1.EventSource": {
        1: ("component", "string", "o"),
        2: ("host", "string", "o"),
    },
    "core/v1.ExecAction": {
        1: ("command", "string", "ro"),
    },
    "core/v1.FCVolumeSource": {
        1: ("targetWWNs", "string", "ro"),
        2: ("lun", "int32", "*o"),
        3: ("fsType", "string", "o"),
        4: ("readOnly", "bool", "o"),
        5: ("wwids", "string", "ro"),
    },
    "core/v1.FlexPersistentVolumeSource": {
        1: ("driver", "string", ""),
        2: ("fsType", "string", "o"),
        3: ("secretRef", "core/v1.SecretReference", "*o"),
        4: ("readOnly", "bool", "o"),
        5: ("options", "map<string,string>", "o"),
    },
    "core/v1.FlexVolumeSource": {
        1: ("driver", "string", ""),
        2: ("fsType", "string", "o"),
        3: ("secretRef", "core/v1.LocalObjectReference", "*o"),
        4: ("readOnly", "bool", "o"),
        5: ("options", "map<string,string>", "o"),
    },
    "core/v1.FlockerVolumeSource": {
        1: ("datasetName", "string", "o"),
        2: ("datasetUUID", "string", "o"),
    },
    "core/v1.GCEPersistentDiskVolumeSource": {
        1: ("pdName", "string", ""),
        2: ("fsType", "string", "o"),
        3: ("partition", "int32", "o"),
        4: ("readOnly", "bool", "o"),
    },
    "core/v1.GRPCAction": {
        1: ("port", "int32", ""),
        2: ("service", "string", "*"),
    },
    "core/v1.GitRepoVolumeSource": {
        1: ("repository", "string", ""),
        2: ("revision", "string", "o"),
        3: ("directory", "string", "o"),
    },
    "core/v1.GlusterfsPersistentVolumeSource": {
        1: ("endpoints", "string", ""),
        2: ("path", "string", ""),
        3: ("readOnly", "bool", "o"),
        4: ("endpointsNamespace", "string", "*o"),
    },
    "core/v1.GlusterfsVolumeSource": {
        1: ("endpoints", "string", ""),
        2: ("path", "string", ""),
        3: ("readOnly", "bool", "o"),
    },
    "core/v1.HTTPGetAction": {
        1: ("path", "string", "o"),
        2: ("port", "intstr.IntOrString", ""),
        3: ("host", "string", "o"),
        4: ("scheme", "string", "o"),
        5: ("httpHeaders", "core/v1.HTTPHeader", "ro"),
    },
    "core/v1.HTTPHeader": {
        1: ("name", "string", ""),
        2: ("value", "string", ""),
    },
    "core/v1.HostAlias": {
        1: ("ip", "string", ""),
        2: ("hostnames", "string", "ro"),
    },
    "core/v1.HostIP": {
        1: ("ip", "string", ""),
    },
    "core/v1.HostPathVolumeSource": {
        1: ("path", "string", ""),
        2: ("type", "string", "*o"),
    },
    "core/v1.ISCSIPersistentVolumeSource": {
        1: ("targetPortal", "string", ""),
        2: ("iqn", "string", ""),
        3: ("lun", "int32", ""),
        4: ("iscsiInterface", "string", "o"),
        5: ("fsType", "string", "o"),
        6: ("readOnly", "bool", "o"),
        7: ("portals", "string", "ro"),
        8: ("chapAuthDiscovery", "bool", "o"),
        11: ("chapAuthSession", "bool", "o"),
        10: ("secretRef", "core/v1.SecretReference", "*o"),
        12: ("initiatorName", "string", "*o"),
    },
    "core/v1.ISCSIVolumeSource": {
        1: ("targetPortal", "string", ""),
        2: ("iqn", "string", ""),
        3: ("lun", "int32", ""),
        4: ("iscsiInterface", "string", "o"),
        5: ("fsType", "string", "o"),
        6: ("readOnly", "bool", "o"),
        7: ("portals", "string", "ro"),
        8: ("chapAuthDiscovery", "bool", "o"),
        11: ("chapAuthSession", "bool", "o"),
        10: ("secretRef", "core/v1.LocalObjectReference", "*o"),
        12: ("initiatorName", "string", "*o"),
    },
    "core/v1.ImageVolumeSource": {
        1: ("reference", "string", "o"),
        2: ("pullPolicy", "string", "o"),
    },
    "core/v1.KeyToPath": {
        1: ("key", "string", ""),
        2: ("path", "string", ""),
        3: ("mode", "int32", "*o"),
    },
    "core/v1.Lifecycle": {
        1: ("postStart", "core/v1.LifecycleHandler", "*o"),
        2: ("preStop", "core/v1.LifecycleHandler", "*o"),
        3: ("stopSignal", "string", "*o"),
    },
    "core/v1.LifecycleHandler": {
        1: ("exec", "core/v1.ExecAction", "*o"),
        2: ("httpGet", "core/v1.HTTPGetAction", "*o"),
        3: ("tcpSocket", "core/v1.TCPSocketAction", "*o"),
        4: ("sleep", "core/v1.SleepAction", "*o"),
    },
    "core/v1.LimitRange": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "core/v1.LimitRangeSpec", "o"),
    },
    "core/v1.LimitRangeItem": {
        1: ("type", "string", ""),
        2: ("max", "map<string,resource.Quantity>", "o"),
        3: ("min", "map<string,resource.Quantity>", "o"),
        4: ("default", "map<string,resource.Quantity>", "o"),
        5: ("defaultRequest", "map<string,resource.Quantity>", "o"),
        6: ("maxLimitRequestRatio", "map<string,resource.Quantity>", "o"),
    },
    "core/v1.LimitRangeSpec": {
        1: ("limits", "core/v1.LimitRangeItem", "r"),
    },
    "core/v1.LinuxContainerUser": {
        1: ("uid", "int64", ""),
        2: ("gid", "int64", ""),
        3: ("supplementalGroups", "int64", "ro"),
    },
    "core/v1.LoadBalancerIngress": {
        1: ("ip", "string", "o"),
        2: ("hostname", "string", "o"),
        3: ("ipMode", "string", "*o"),
        4: ("ports", "core/v1.PortStatus", "ro"),
    },
    "core/v1.LoadBalancerStatus": {
        1: ("ingress", "core/v1.LoadBalancerIngress", "ro"),
    },
    "core/v1.LocalObjectReference": {
        1: ("name", "string", "o"),
    },
    "core/v1.LocalVolumeSource": {
        1: ("path", "string", ""),
        2: ("fsType", "string", "*o"),
    },
    "core/v1.ModifyVolumeStatus": {
        1: ("targetVolumeAttributesClassName", "string", "o"),
        2: ("status", "string", ""),
    },
    "core/v1.NFSVolumeSource": {
        1: ("server", "string", ""),
        2: ("path", "string", ""),
        3: ("readOnly", "bool", "o"),
    },
    "core/v1.Namespace": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "core/v1.NamespaceSpec", "o"),
        3: ("status", "core/v1.NamespaceStatus", "o"),
    },
    "core/v1.NamespaceCondition": {
        1: ("type", "string", ""),
        2: ("status", "string", ""),
        4: ("lastTransitionTime", "meta/v1.Time", "o"),
        5: ("reason", "string", "o"),
        6: ("message", "string", "o"),
    },
    "core/v1.NamespaceSpec": {
        1: ("finalizers", "string", "ro"),
    },
    "core/v1.NamespaceStatus": {
        1: ("phase", "string", "o"),
        2: ("conditions", "core/v1.NamespaceCondition", "ro"),
    },
    "core/v1.Node": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "core/v1.NodeSpec", "o"),
        3: ("status", "core/v1.NodeStatus", "o"),
    },
    "core/v1.NodeAddress": {
        1: ("type", "string", ""),
        2: ("address", "string", ""),
    },
    "core/v1.NodeAffinity": {
        1: ("requiredDuringSchedulingIgnoredDuringExecution", "core/v1.NodeSelector", "*o"),
        2: ("preferredDuringSchedulingIgnoredDuringExecution", "core/v1.PreferredSchedulingTerm", "ro"),
    },
    "core/v1.NodeCondition": {
        1: ("type", "string", ""),
        2: ("status", "string", ""),
        3: ("lastHeartbeatTime", "meta/v1.Time", "o"),
        4: ("lastTransitionTime", "meta/v1.Time", "o"),
        5: ("reason", "string", "o"),
        6: ("message", "string", "o"),
    },
    "core/v1.NodeConfigSource": {
        2: ("configMap", "core/v1.ConfigMapNodeConfigSource", "*o"),
    },
    "core/v1.NodeConfigStatus": {
        1: ("assigned", "core/v1.NodeConfigSource", "*o"),
        2: ("active", "core/v1.NodeConfigSource", "*o"),
        3: ("lastKnownGood", "core/v1.NodeConfigSource", "*o"),
        4: ("error", "string", "o"),
    },
    "core/v1.NodeDaemonEndpoints": {
        1: ("kubeletEndpoint", "core/v1.DaemonEndpoint", "o"),
    },
    "core/v1.NodeFeatures": {
        1: ("supplementalGroupsPolicy", "bool", "*o"),
    },
    "core/v1.NodeRuntimeHandler": {
        1: ("name", "string", ""),
        2: ("features", "core/v1.NodeRuntimeHandlerFeatures", "*o"),
    },
    "core/v1.NodeRuntimeHandlerFeatures": {
        1: ("recursiveReadOnlyMounts", "bool", "*o"),
        2: ("userNamespaces", "bool", "*o"),
    },
    "core/v1.NodeSelector": {
        1: ("nodeSelectorTerms", "core/v1.NodeSelectorTerm", "r"),
    },
    "core/v1.NodeSelectorRequirement": {
        1: ("key", "string", ""),
        2: ("operator", "string", ""),
        3: ("values", "string", "ro"),
    },
    "core/v1.NodeSelectorTerm": {
        1: ("matchExpressions", "core/v1.NodeSelectorRequirement", "ro"),
        2: ("matchFields", "core/v1.NodeSelectorRequirement", "ro"),
    },
    "core/v1.NodeSpec": {
        1: ("podCIDR", "string", "o"),
        7: ("podCIDRs", "string", "ro"),
        3: ("providerID", "string", "o"),
        4: ("unschedulable", "bool", "o"),
        5: ("taints", "core/v1.Taint", "ro"),
        6: ("configSource", "core/v1.NodeConfigSource", "*o"),
        2: ("externalID", "string", "o"),
    },
    "core/v1.NodeStatus": {
        1: ("capacity", "map<string,resource.Quantity>", "o"),
        2: ("allocatable", "map<string,resource.Quantity>", "o"),
        3: ("phase", "string", "o"),
        4: ("conditions", "core/v1.NodeCondition", "ro"),
        5: ("addresses", "core/v1.NodeAddress", "ro"),
        6: ("daemonEndpoints", "core/v1.NodeDaemonEndpoints", "o"),
        7: ("nodeInfo", "core/v1.NodeSystemInfo", "o"),
        8: ("images", "core/v1.ContainerImage", "ro"),
        9: ("volumesInUse", "string", "ro"),
        10: ("volumesAttached", "core/v1.AttachedVolume", "ro"),
        11: ("config", "core/v1.NodeConfigStatus", "*o"),
        12: ("runtimeHandlers", "core/v1.NodeRuntimeHandler", "ro"),
        13: ("features", "core/v1.NodeFeatures", "*o"),
    },
    "core/v1.NodeSwapStatus": {
        1: ("capacity", "int64", "*o"),
    },
    "core/v1.NodeSystemInfo": {
        1: ("machineID", "string", ""),
        2: ("systemUUID", "string", ""),
        3: ("bootID", "string", ""),
        4: ("kernelVersion", "string", ""),
        5: ("osImage", "string", ""),
        6: ("containerRuntimeVersion", "string", ""),
        7: ("kubeletVersion", "string", ""),
        8: ("kubeProxyVersion", "string", ""),
        9: ("operatingSystem", "string", ""),
        10: ("architecture", "string", ""),
        11: ("swap", "core/v1.NodeSwapStatus", "*o"),
    },
    "core/v1.ObjectFieldSelector": {
        1: ("apiVersion", "string", "o"),
        2: ("fieldPath", "string", ""),
    },
    "core/v1.ObjectReference": {
        1: ("kind", "string", "o"),
        2: ("namespace", "string", "o"),
        3: ("name", "string", "o"),
        4: ("uid", "string", "o"),
        5: ("apiVersion", "string", "o"),
        6: ("resourceVersion", "string", "o"),
        7: ("fieldPath", "string", "o"),
    },
    "core/v1.PersistentVolume": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "core/v1.PersistentVolumeSpec", "o"),
        3: ("status", "core/v1.PersistentVolumeStatus", "o"),
    },
    "core/v1.PersistentVolumeClaim": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "core/v1.PersistentVolumeClaimSpec", "o"),
        3: ("status", "core/v1.PersistentVolumeClaimStatus", "o"),
    },
    "core/v1.PersistentVolumeClaimCondition": {
        1: ("type", "string", ""),
        2: ("status", "string", ""),
        3: ("lastProbeTime", "meta/v1.Time", "o"),
        4: ("lastTransitionTime", "meta/v1.Time", "o"),
        5: ("reason", "string", "o"),
        6: ("message", "string", "o"),
    },
    "core/v1.PersistentVolumeClaimSpec": {
        1: ("accessModes", "string", "ro"),
        4: ("selector", "meta/v1.LabelSelector", "*o"),
        2: ("resources", "core/v1.VolumeResourceRequirements", "o"),
        3: ("volumeName", "string", "o"),
        5: ("storageClassName", "string", "*o"),
        6: ("volumeMode", "string", "*o"),
        7: ("dataSource", "core/v1.TypedLocalObjectReference", "*o"),
        8: ("dataSourceRef", "core/v1.TypedObjectReference", "*o"),
        9: ("volumeAttributesClassName", "string", "*o"),
    },
    "core/v1.PersistentVolumeClaimStatus": {
        1: ("phase", "string", "o"),
        2: ("accessModes", "string", "ro"),
        3: ("capacity", "map<string,resource.Quantity>", "o"),
        4: ("conditions", "core/v1.PersistentVolumeClaimCondition", "ro"),
        5: ("allocatedResources", "map<string,resource.Quantity>", "o"),
        7: ("allocatedResourceStatuses", "map<string,string>", "o"),
        8: ("currentVolumeAttributesClassName", "string", "*o"),
        9: ("modifyVolumeStatus", "core/v1.ModifyVolumeStatus", "*o"),
    },
    "core/v1.PersistentVolumeClaimTemplate": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "core/v1.PersistentVolumeClaimSpec", ""),
    },
    "core/v1.PersistentVolumeClaimVolumeSource": {
        1: ("claimName", "string", ""),
        2: ("readOnly", "bool", "o"),
    },
    "core/v1.PersistentVolumeSource": {
        1: ("gcePersistentDisk", "core/v1.GCEPersistentDiskVolumeSource", "*o"),
        2: ("awsElasticBlockStore", "core/v1.AWSElasticBlockStoreVolumeSource", "*o"),
        3: ("hostPath", "core/v1.HostPathVolumeSource", "*o"),
        4: ("glusterfs", "core/v1.GlusterfsPersistentVolumeSource", "*o"),
        5: ("nfs", "core/v1.NFSVolumeSource", "*o"),
        6: ("rbd", "core/v1.RBDPersistentVolumeSource", "*o"),
        7: ("iscsi", "core/v1.ISCSIPersistentVolumeSource", "*o"),
        8: ("cinder", "core/v1.CinderPersistentVolumeSource", "*o"),
        9: ("cephfs", "core/v1.CephFSPersistentVolumeSource", "*o"),
        10: ("fc", "core/v1.FCVolumeSource", "*o"),
        11: ("flocker", "core/v1.FlockerVolumeSource", "*o"),
        12: ("flexVolume", "core/v1.FlexPersistentVolumeSource", "*o"),
        13: ("azureFile", "core/v1.AzureFilePersistentVolumeSource", "*o"),
        14: ("vsphereVolume", "core/v1.VsphereVirtualDiskVolumeSource", "*o"),
        15: ("quobyte", "core/v1.QuobyteVolumeSource", "*o"),
        16: ("azureDisk", "core/v1.AzureDiskVolumeSource", "*o"),
        17: ("photonPersistentDisk", "core/v1.PhotonPersistentDiskVolumeSource", "*o"),
        18: ("portworxVolume", "core/v1.PortworxVolumeSource", "*o"),
        19: ("scaleIO", "core/v1.ScaleIOPersistentVolumeSource", "*o"),
        20: ("local", "core/v1.LocalVolumeSource", "*o"),
        21: ("storageos", "core/v1.StorageOSPersistentVolumeSource", "*o"),
        22: ("csi", "core/v1.CSIPersistentVolumeSource", "*o"),
    },
    "core/v1.PersistentVolumeSpec": {
        1: ("capacity", "map<string,resource.Quantity>", "o"),
        2: ("", "core/v1.PersistentVolumeSource", "i"),
        3: ("accessModes", "string", "ro"),
        4: ("claimRef", "core/v1.ObjectReference", "*o"),
        5: ("persistentVolumeReclaimPolicy", "string", "o"),
        6: ("storageClassName", "string", "o"),
        7: ("mountOptions", "string", "ro"),
        8: ("volumeMode", "string", "*o"),
        9: ("nodeAffinity", "core/v1.VolumeNodeAffinity", "*o"),
        10: ("volumeAttributesClassName", "string", "*o"),
    },
    "core/v1.PersistentVolumeStatus": {
        1: ("phase", "string", "o"),
        2: ("message", "string", "o"),
        3: ("reason", "string", "o"),
        4: ("lastPhaseTransitionTime", "meta/v1.Time", "*o"),
    },
    "core/v1.PhotonPersistentDiskVolumeSource": {
        1: ("pdID", "string", ""),
        2: ("fsType", "string", "o"),
    },
    "core/v1.Pod": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "core/v1.PodSpec", "o"),
        3: ("status", "core/v1.PodStatus", "o"),
    },
    "core/v1.PodAffinity": {
        1: ("requiredDuringSchedulingIgnoredDuringExecution", "core/v1.PodAffinityTerm", "ro"),
        2: ("preferredDuringSchedulingIgnoredDuringExecution", "core/v1.WeightedPodAffinityTerm", "ro"),
    },
    "core/v1.PodAffinityTerm": {
        1: ("labelSelector", "meta/v1.LabelSelector", "*o"),
        2: ("namespaces", "string", "ro"),
        3: ("topologyKey", "string", ""),
        4: ("namespaceSelector", "meta/v1.LabelSelector", "*o"),
        5: ("matchLabelKeys", "string", "ro"),
        6: ("mismatchLabelKeys", "string", "ro"),
    },
    "core/v1.PodAntiAffinity": {
        1: ("requiredDuringSchedulingIgnoredDuringExecution", "core/v1.PodAffinityTerm", "ro"),
        2: ("preferredDuringSchedulingIgnoredDuringExecution", "core/v1.WeightedPodAffinityTerm", "ro"),
    },
    "core/v1.PodCondition": {
        1: ("type", "string", ""),
        7: ("observedGeneration", "int64", "o"),
        2: ("status", "string", ""),
        3: ("lastProbeTime", "meta/v1.Time", "o"),
        4: ("lastTransitionTime", "meta/v1.Time", "o"),
        5: ("reason", "string", "o"),
        6: ("message", "string", "o"),
    },
    "core/v1.PodDNSConfig": {
        1: ("nameservers", "string", "ro"),
        2: ("searches", "string", "ro"),
        3: ("options", "core/v1.PodDNSConfigOption", "ro"),
    },
    "core/v1.PodDNSConfigOption": {
        1: ("name", "string", "o"),
        2: ("value", "string", "*o"),
    },
    "core/v1.PodIP": {
        1: ("ip", "string", ""),
    },
    "core/v1.PodOS": {
        1: ("name", "string", ""),
    },
    "core/v1.PodReadinessGate": {
        1: ("conditionType", "string", ""),
    },
    "core/v1.PodResourceClaim": {
        1: ("name", "string", ""),
        3: ("resourceClaimName", "string", "*o"),
        4: ("resourceClaimTemplateName", "string", "*o"),
    },
    "core/v1.PodResourceClaimStatus": {
        1: ("name", "string", ""),
        2: ("resourceClaimName", "string", "*o"),
    },
    "core/v1.PodSchedulingGate": {
        1: ("name", "string", ""),
    },
    "core/v1.PodSecurityContext": {
        1: ("seLinuxOptions", "core/v1.SELinuxOptions", "*o"),
        8: ("windowsOptions", "core/v1.WindowsSecurityContextOptions", "*o"),
        2: ("runAsUser", "int64", "*o"),
        6: ("runAsGroup", "int64", "*o"),
        3: ("runAsNonRoot", "bool", "*o"),
        4: ("supplementalGroups", "int64", "ro"),
        12: ("supplementalGroupsPolicy", "string", "*o"),
        5: ("fsGroup", "int64", "*o"),
        7: ("sysctls", "core/v1.Sysctl", "ro"),
        9: ("fsGroupChangePolicy", "string", "*o"),
        10: ("seccompProfile", "core/v1.SeccompProfile", "*o"),
        11: ("appArmorProfile", "core/v1.AppArmorProfile", "*o"),
        13: ("seLinuxChangePolicy", "string", "*o"),
    },
    "core/v1.PodSpec": {
        1: ("volumes", "core/v1.Volume", "ro"),
        20: ("initContainers", "core/v1.Container", "ro"),
        2: ("containers", "core/v1.Container", "r"),
        34: ("ephemeralContainers", "core/v1.EphemeralContainer", "ro"),
        3: ("restartPolicy", "string", "o"),
        4: ("terminationGracePeriodSeconds", "int64", "*o"),
        5: ("activeDeadlineSeconds", "int64", "*o"),
        6: ("dnsPolicy", "string", "o"),
        7: ("nodeSelector", "map<string,string>", "o"),
        8: ("serviceAccountName", "string", "o"),
        9: ("serviceAccount", "string", "o"),
        21: ("automountServiceAccountToken", "bool", "*o"),
        10: ("nodeName", "string", "o"),
        11: ("hostNetwork", "bool", "o"),
        12: ("hostPID", "bool", "o"),
        13: ("hostIPC", "bool", "o"),
        27: ("shareProcessNamespace", "bool", "*o"),
        14: ("securityContext", "core/v1.PodSecurityContext", "*o"),
        15: ("imagePullSecrets", "core/v1.LocalObjectReference", "ro"),
        16: ("hostname", "string", "o"),
        17: ("subdomain", "string", "o"),
        18: ("affinity", "core/v1.Affinity", "*o"),
        19: ("schedulerName", "string", "o"),
        22: ("tolerations", "core/v1.Toleration", "ro"),
        23: ("hostAliases", "core/v1.HostAlias", "ro"),
        24: ("priorityClassName", "string", "o"),
        25: ("priority", "int32", "*o"),
        26: ("dnsConfig", "core/v1.PodDNSConfig", "*o"),
        28: ("readinessGates", "core/v1.PodReadinessGate", "ro"),
        29: ("runtimeClassName", "string", "*o"),
        30: ("enableServiceLinks", "bool", "*o"),
        31: ("preemptionPolicy", "string", "*o"),
        32: ("overhead", "map<string,resource.Quantity>", "o"),
        33: ("topologySpreadConstraints", "core/v1.TopologySpreadConstraint", "ro"),
        35: ("setHostnameAsFQDN", "bool", "*o"),
        36: ("os", "core/v1.PodOS", "*o"),
        37: ("hostUsers", "bool", "*o"),
        38: ("schedulingGates", "core/v1.PodSchedulingGate", "ro"),
        39: ("resourceClaims", "core/v1.PodResourceClaim", "ro"),
        40: ("resources", "core/v1.ResourceRequirements", "*o"),
    },
    "core/v1.PodStatus": {
        17: ("observedGeneration", "int64", "o"),
        1: ("phase", "string", "o"),
        2: ("conditions", "core/v1.PodCondition", "ro"),
        3: ("message", "string", "o"),
        4: ("reason", "string", "o"),
        11: ("nominatedNodeName", "string", "o"),
        5: ("hostIP", "string", "o"),
        16: ("hostIPs", "core/v1.HostIP", "ro"),
        6: ("podIP", "string", "o"),
        12: ("podIPs", "core/v1.PodIP", "ro"),
        7: ("startTime", "meta/v1.Time", "*o"),
        10: ("initContainerStatuses", "core/v1.ContainerStatus", "ro"),
        8: ("containerStatuses", "core/v1.ContainerStatus", "ro"),
        9: ("qosClass", "string", "o"),
        13: ("ephemeralContainerStatuses", "core/v1.ContainerStatus", "ro"),
        14: ("resize", "string", "o"),
        15: ("resourceClaimStatuses", "core/v1.PodResourceClaimStatus", "ro"),
    },
    "core/v1.PodTemplate": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("template", "core/v1.PodTemplateSpec", "o"),
    },
    "core/v1.PodTemplateSpec": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "core/v1.PodSpec", "o"),
    },
    "core/v1.PortStatus": {
        1: ("port", "int32", ""),
        2: ("protocol", "string", ""),
        3: ("error", "string", "*o"),
    },
    "core/v1.PortworxVolumeSource": {
        1: ("volumeID", "string", ""),
        2: ("fsType", "string", "o"),
        3: ("readOnly", "bool", "o"),
    },
    "core/v1.PreferredSchedulingTerm": {
        1: ("weight", "int32", ""),
        2: ("preference", "core/v1.NodeSelectorTerm", ""),
    },
    "core/v1.Probe": {
        1: ("", "core/v1.ProbeHandler", "i"),
        2: ("initialDelaySeconds", "int32", "o"),
        3: ("timeoutSeconds", "int32", "o"),
        4: ("periodSeconds", "int32", "o"),
        5: ("successThreshold", "int32", "o"),
        6: ("failureThreshold", "int32", "o"),
        7: ("terminationGracePeriodSeconds", "int64", "*o"),
    },
    "core/v1.ProbeHandler": {
        1: ("exec", "core/v1.ExecAction", "*o"),
        2: ("httpGet", "core/v1.HTTPGetAction", "*o"),
        3: ("tcpSocket", "core/v1.TCPSocketAction", "*o"),
        4: ("grpc", "core/v1.GRPCAction", "*o"),
    },
    "core/v1.ProjectedVolumeSource": {
        1: ("sources", "core/v1.VolumeProjection", "r"),
        2: ("defaultMode", "int32", "*o"),
    },
    "core/v1.QuobyteVolumeSource": {
        1: ("registry", "string", ""),
        2: ("volume", "string", ""),
        3: ("readOnly", "bool", "o"),
        4: ("user", "string", "o"),
        5: ("group", "string", "o"),
        6: ("tenant", "string", "o"),
    },
    "core/v1.RBDPersistentVolumeSource": {
        1: ("monitors", "string", "r"),
        2: ("image", "string", ""),
        3: ("fsType", "string", "o"),
        4: ("pool", "string", "o"),
        5: ("user", "string", "o"),
        6: ("keyring", "string", "o"),
        7: ("secretRef", "core/v1.SecretReference", "*o"),
        8: ("readOnly", "bool", "o"),
    },
    "core/v1.RBDVolumeSource": {
        1: ("monitors", "string", "r"),
        2: ("image", "string", ""),
        3: ("fsType", "string", "o"),
        4: ("pool", "string", "o"),
        5: ("user", "string", "o"),
        6: ("keyring", "string", "o"),
        7: ("secretRef", "core/v1.LocalObjectReference", "*o"),
        8: ("readOnly", "bool", "o"),
    },
    "core/v1.ReplicationController": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "core/v1.ReplicationControllerSpec", "o"),
        3: ("status", "core/v1.ReplicationControllerStatus", "o"),
    },
    "core/v1.ReplicationControllerCondition": {
        1: ("type", "string", ""),
        2: ("status", "string", ""),
        3: ("lastTransitionTime", "meta/v1.Time", "o"),
        4: ("reason", "string", "o"),
        5: ("message", "string", "o"),
    },
    "core/v1.ReplicationControllerSpec": {
        1: ("replicas", "int32", "*o"),
        4: ("minReadySeconds", "int32", "o"),
        2: ("selector", "map<string,string>", "o"),
        3: ("template", "core/v1.PodTemplateSpec", "*o"),
    },
    "core/v1.ReplicationControllerStatus": {
        1: ("replicas", "int32", ""),
        2: ("fullyLabeledReplicas", "int32", "o"),
        4: ("readyReplicas", "int32", "o"),
        5: ("availableReplicas", "int32", "o"),
        3: ("observedGeneration", "int64", "o"),
        6: ("conditions", "core/v1.ReplicationControllerCondition", "ro"),
    },
    "core/v1.ResourceClaim": {
        1: ("name", "string", ""),
        2: ("request", "string", "o"),
    },
    "core/v1.ResourceFieldSelector": {
        1: ("containerName", "string", "o"),
        2: ("resource", "string", ""),
        3: ("divisor", "resource.Quantity", "o"),
    },
    "core/v1.ResourceHealth": {
        1: ("resourceID", "string", ""),
        2: ("health", "string", "o"),
    },
    "core/v1.ResourceQuota": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "core/v1.ResourceQuotaSpec", "o"),
        3: ("status", "core/v1.ResourceQuotaStatus", "o"),
    },
    "core/v1.ResourceQuotaSpec": {
        1: ("hard", "map<string,resource.Quantity>", "o"),
        2: ("scopes", "string", "ro"),
        3: ("scopeSelector", "core/v1.ScopeSelector", "*o"),
    },
    "core/v1.ResourceQuotaStatus": {
        1: ("hard", "map<string,resource.Quantity>", "o"),
        2: ("used", "map<string,resource.Quantity>", "o"),
    },
    "core/v1.ResourceRequirements": {
        1: ("limits", "map<string,resource.Quantity>", "o"),
        2: ("requests", "map<string,resource.Quantity>", "o"),
        3: ("claims", "core/v1.ResourceClaim", "ro"),
    },
    "core/v1.ResourceStatus": {
        1: ("name", "string", ""),
        2: ("resources", "core/v1.ResourceHealth", "ro"),
    },
    "core/v1.SELinuxOptions": {
        1: ("user", "string", "o"),
        2: ("role", "string", "o"),
        3: ("type", "string", "o"),
        4: ("level", "string", "o"),
    },
    "core/v1.ScaleIOPersistentVolumeSource": {
        1: ("gateway", "string", ""),
        2: ("system", "string", ""),
        3: ("secretRef", "core/v1.SecretReference", "*"),
        4: ("sslEnabled", "bool", "o"),
        5: ("protectionDomain", "string", "o"),
        6: ("storagePool", "string", "o"),
        7: ("storageMode", "string", "o"),
        8: ("volumeName", "string", "o"),
        9: ("fsType", "string", "o"),
        10: ("readOnly", "bool", "o"),
    },
    "core/v1.ScaleIOVolumeSource": {
        1: ("gateway", "string", ""),
        2: ("system", "string", ""),
        3: ("secretRef", "core/v1.LocalObjectReference", "*"),
        4: ("sslEnabled", "bool", "o"),
        5: ("protectionDomain", "string", "o"),
        6: ("storagePool", "string", "o"),
        7: ("storageMode", "string", "o"),
        8: ("volumeName", "string", "o"),
        9: ("fsType", "string", "o"),
        10: ("readOnly", "bool", "o"),
    },
    "core/v1.ScopeSelector": {
        1: ("matchExpressions", "core/v1.ScopedResourceSelectorRequirement", "ro"),
    },
    "core/v1.ScopedResourceSelectorRequirement": {
        1: ("scopeName", "string", ""),
        2: ("operator", "string", ""),
        3: ("values", "string", "ro"),
    },
    "core/v1.SeccompProfile": {
        1: ("type", "string", ""),
        2: ("localhostProfile", "string", "*o"),
    },
    "core/v1.Secret": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        5: ("immutable", "bool", "*o"),
        2: ("data", "map<string,bytes>", "o"),
        4: ("stringData", "map<string,string>", "o"),
        3: ("type", "string", "o"),
    },
    "core/v1.SecretEnvSource": {
        1: ("", "core/v1.LocalObjectReference", "i"),
        2: ("optional", "bool", "*o"),
    },
    "core/v1.SecretKeySelector": {
        1: ("", "core/v1.LocalObjectReference", "i"),
        2: ("key", "string", ""),
        3: ("optional", "bool", "*o"),
    },
    "core/v1.SecretProjection": {
        1: ("", "core/v1.LocalObjectReference", "i"),
        2: ("items", "core/v1.KeyToPath", "ro"),
        4: ("optional", "bool", "*o"),
    },
    "core/v1.SecretReference": {
        1: ("name", "string", "o"),
        2: ("namespace", "string", "o"),
    },
    "core/v1.SecretVolumeSource": {
        1: ("secretName", "string", "o"),
        2: ("items", "core/v1.KeyToPath", "ro"),
        3: ("defaultMode", "int32", "*o"),
        4: ("optional", "bool", "*o"),
    },
    "core/v1.SecurityContext": {
        1: ("capabilities", "core/v1.Capabilities", "*o"),
        2: ("privileged", "bool", "*o"),
        3: ("seLinuxOptions", "core/v1.SELinuxOptions", "*o"),
        10: ("windowsOptions", "core/v1.WindowsSecurityContextOptions", "*o"),
        4: ("runAsUser", "int64", "*o"),
        8: ("runAsGroup", "int64", "*o"),
        5: ("runAsNonRoot", "bool", "*o"),
        6: ("readOnlyRootFilesystem", "bool", "*o"),
        7: ("allowPrivilegeEscalation", "bool", "*o"),
        9: ("procMount", "string", "*o"),
        11: ("seccompProfile", "core/v1.SeccompProfile", "*o"),
        12: ("appArmorProfile", "core/v1.AppArmorProfile", "*o"),
    },
    "core/v1.Service": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "core/v1.ServiceSpec", "o"),
        3: ("status", "core/v1.ServiceStatus", "o"),
    },
    "core/v1.ServiceAccount": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("secrets", "core/v1.ObjectReference", "ro"),
        3: ("imagePullSecrets", "core/v1.LocalObjectReference", "ro"),
        4: ("automountServiceAccountToken", "bool", "*o"),
    },
    "core/v1.ServiceAccountTokenProjection": {
        1: ("audience", "string", "o"),
        2: ("expirationSeconds", "int64", "*o"),
        3: ("path", "string", ""),
    },
    "core/v1.ServicePort": {
        1: ("name", "string", "o"),
        2: ("protocol", "string", "o"),
        6: ("appProtocol", "string", "*o"),
        3: ("port", "int32", ""),
        4: ("targetPort", "intstr.IntOrString", "o"),
        5: ("nodePort", "int32", "o"),
    },
    "core/v1.ServiceSpec": {
        1: ("ports", "core/v1.ServicePort", "ro"),
        2: ("selector", "map<string,string>", "o"),
        3: ("clusterIP", "string", "o"),
        18: ("clusterIPs", "string", "ro"),
        4: ("type", "string", "o"),
        5: ("externalIPs", "string", "ro"),
        7: ("sessionAffinity", "string", "o"),
        8: ("loadBalancerIP", "string", "o"),
        9: ("loadBalancerSourceRanges", "string", "ro"),
        10: ("externalName", "string", "o"),
        11: ("externalTrafficPolicy", "string", "o"),
        12: ("healthCheckNodePort", "int32", "o"),
        13: ("publishNotReadyAddresses", "bool", "o"),
        14: ("sessionAffinityConfig", "core/v1.SessionAffinityConfig", "*o"),
        19: ("ipFamilies", "string", "ro"),
        17: ("ipFamilyPolicy", "string", "*o"),
        20: ("allocateLoadBalancerNodePorts", "bool", "*o"),
        21: ("loadBalancerClass", "string", "*o"),
        22: ("internalTrafficPolicy", "string", "*o"),
        23: ("trafficDistribution", "string", "*o"),
    },
    "core/v1.ServiceStatus": {
        1: ("loadBalancer", "core/v1.LoadBalancerStatus", "o"),
        2: ("conditions", "meta/v1.Condition", "ro"),
    },
    "core/v1.SessionAffinityConfig": {
        1: ("clientIP", "core/v1.ClientIPConfig", "*o"),
    },
    "core/v1.SleepAction": {
        1: ("seconds", "int64", ""),
    },
    "core/v1.StorageOSPersistentVolumeSource": {
        1: ("volumeName", "string", "o"),
        2: ("volumeNamespace", "string", "o"),
        3: ("fsType", "string", "o"),
        4: ("readOnly", "bool", "o"),
        5: ("secretRef", "core/v1.ObjectReference", "*o"),
    },
    "core/v1.StorageOSVolumeSource": {
        1: ("volumeName", "string", "o"),
        2: ("volumeNamespace", "string", "o"),
        3: ("fsType", "string", "o"),
        4: ("readOnly", "bool", "o"),
        5: ("secretRef", "core/v1.LocalObjectReference", "*o"),
    },
    "core/v1.Sysctl": {
        1: ("name", "string", ""),
        2: ("value", "string", ""),
    },
    "core/v1.TCPSocketAction": {
        1: ("port", "intstr.IntOrString", ""),
        2: ("host", "string", "o"),
    },
    "core/v1.Taint": {
        1: ("key", "string", ""),
        2: ("value", "string", "o"),
        3: ("effect", "string", ""),
        4: ("timeAdded", "meta/v1.Time", "*o"),
    },
    "core/v1.Toleration": {
        1: ("key", "string", "o"),
        2: ("operator", "string", "o"),
        3: ("value", "string", "o"),
        4: ("effect", "string", "o"),
        5: ("tolerationSeconds", "int64", "*o"),
    },
    "core/v1.TopologySpreadConstraint": {
        1: ("maxSkew", "int32", ""),
        2: ("topologyKey", "string", ""),
        3: ("whenUnsatisfiable", "string", ""),
        4: ("labelSelector", "meta/v1.LabelSelector", "*o"),
        5: ("minDomains", "int32", "*o"),
        6: ("nodeAffinityPolicy", "string", "*o"),
        7: ("nodeTaintsPolicy", "string", "*o"),
        8: ("matchLabelKeys", "string", "ro"),
    },
    "core/v1.TypedLocalObjectReference": {
        1: ("apiGroup", "string", "*"),
        2: ("kind", "string", ""),
        3: ("name", "string", ""),
    },
    "core/v1.TypedObjectReference": {
        1: ("apiGroup", "string", "*"),
        2: ("kind", "string", ""),
        3: ("name", "string", ""),
        4: ("namespace", "string", "*o"),
    },
    "core/v1.Volume": {
        1: ("name", "string", ""),
        2: ("", "core/v1.VolumeSource", "i"),
    },
    "core/v1.VolumeDevice": {
        1: ("name", "string", ""),
        2: ("devicePath", "string", ""),
    },
    "core/v1.VolumeMount": {
        1: ("name", "string", ""),
        2: ("readOnly", "bool", "o"),
        7: ("recursiveReadOnly", "string", "*o"),
        3: ("mountPath", "string", ""),
        4: ("subPath", "string", "o"),
        5: ("mountPropagation", "string", "*o"),
        6: ("subPathExpr", "string", "o"),
    },
    "core/v1.VolumeMountStatus": {
        1: ("name", "string", ""),
        2: ("mountPath", "string", ""),
        3: ("readOnly", "bool", "o"),
        4: ("recursiveReadOnly", "string", "*o"),
    },
    "core/v1.VolumeNodeAffinity": {
        1: ("required", "core/v1.NodeSelector", "*o"),
    },
    "core/v1.VolumeProjection": {
        1: ("secret", "core/v1.SecretProjection", "*o"),
        2: ("downwardAPI", "core/v1.DownwardAPIProjection", "*o"),
        3: ("configMap", "core/v1.ConfigMapProjection", "*o"),
        4: ("serviceAccountToken", "core/v1.ServiceAccountTokenProjection", "*o"),
        5: ("clusterTrustBundle", "core/v1.ClusterTrustBundleProjection", "*o"),
    },
    "core/v1.VolumeResourceRequirements": {
        1: ("limits", "map<string,resource.Quantity>", "o"),
        2: ("requests", "map<string,resource.Quantity>", "o"),
    },
    "core/v1.VolumeSource": {
        1: ("hostPath", "core/v1.HostPathVolumeSource", "*o"),
        2: ("emptyDir", "core/v1.EmptyDirVolumeSource", "*o"),
        3: ("gcePersistentDisk", "core/v1.GCEPersistentDiskVolumeSource", "*o"),
        4: ("awsElasticBlockStore", "core/v1.AWSElasticBlockStoreVolumeSource", "*o"),
        5: ("gitRepo", "core/v1.GitRepoVolumeSource", "*o"),
        6: ("secret", "core/v1.SecretVolumeSource", "*o"),
        7: ("nfs", "core/v1.NFSVolumeSource", "*o"),
        8: ("iscsi", "core/v1.ISCSIVolumeSource", "*o"),
        9: ("glusterfs", "core/v1.GlusterfsVolumeSource", "*o"),
        10: ("persistentVolumeClaim", "core/v1.PersistentVolumeClaimVolumeSource", "*o"),
        11: ("rbd", "core/v1.RBDVolumeSource", "*o"),
        12: ("flexVolume", "core/v1.FlexVolumeSource", "*o"),
        13: ("cinder", "core/v1.CinderVolumeSource", "*o"),
        14: ("cephfs", "core/v1.CephFSVolumeSource", "*o"),
        15: ("flocker", "core/v1.FlockerVolumeSource", "*o"),
        16: ("downwardAPI", "core/v1.DownwardAPIVolumeSource", "*o"),
        17: ("fc", "core/v1.FCVolumeSource", "*o"),
        18: ("azureFile", "core/v1.AzureFileVolumeSource", "*o"),
        19: ("configMap", "core/v1.ConfigMapVolumeSource", "*o"),
        20: ("vsphereVolume", "core/v1.VsphereVirtualDiskVolumeSource", "*o"),
        21: ("quobyte", "core/v1.QuobyteVolumeSource", "*o"),
        22: ("azureDisk", "core/v1.AzureDiskVolumeSource", "*o"),
        23: ("photonPersistentDisk", "core/v1.PhotonPersistentDiskVolumeSource", "*o"),
        26: ("projected", "core/v1.ProjectedVolumeSource", "*o"),
        24: ("portworxVolume", "core/v1.PortworxVolumeSource", "*o"),
        25: ("scaleIO", "core/v1.ScaleIOVolumeSource", "*o"),
        27: ("storageos", "core/v1.StorageOSVolumeSource", "*o"),
        28: ("csi", "core/v1.CSIVolumeSource", "*o"),
        29: ("ephemeral", "core/v1.EphemeralVolumeSource", "*o"),
        30: ("image", "core/v1.ImageVolumeSource", "*o"),
    },
    "core/v1.VsphereVirtualDiskVolumeSource": {
        1: ("volumePath", "string", ""),
        2: ("fsType", "string", "o"),
        3: ("storagePolicyName", "string", "o"),
        4: ("storagePolicyID", "string", "o"),
    },
    "core/v1.WeightedPodAffinityTerm": {
        1: ("weight", "int32", ""),
        2: ("podAffinityTerm", "core/v1.PodAffinityTerm", ""),
    },
    "core/v1.WindowsSecurityContextOptions": {
        1: ("gmsaCredentialSpecName", "string", "*o"),
        2: ("gmsaCredentialSpec", "string", "*o"),
        3: ("runAsUserName", "string", "*o"),
        4: ("hostProcess", "bool", "*o"),
    },
    # ---- events/v1 ---------------------------------------------------------------------------------------
    "events/v1.Event": {
        1: ("metadata", "meta/v1.ObjectMeta", ""),
        2: ("eventTime", "meta/v1.MicroTime", ""),
        3: ("series", "events/v1.EventSeries", "*o"),
        4: ("reportingController", "string", "o"),
        5: ("reportingInstance", "string", "o"),
        6: ("action", "string", "o"),
        7: ("reason", "string", "o"),
        8: ("regarding", "core/v1.ObjectReference", "o"),
        9: ("related", "core/v1.ObjectReference", "*o"),
        10: ("note", "string", "o"),
        11: ("type", "string", "o"),
        12: ("deprecatedSource", "core/v1.EventSource", "o"),
        13: ("deprecatedFirstTimestamp", "meta/v1.Time", "o"),
        14: ("deprecatedLastTimestamp", "meta/v1.Time", "o"),
        15: ("deprecatedCount", "int32", "o"),
    },
    "events/v1.EventSeries": {
        1: ("count", "int32", ""),
        2: ("lastObservedTime", "meta/v1.MicroTime", ""),
    },
    # ---- networking/v1 -----------------------------------------------------------------------------------
    "networking/v1.HTTPIngressPath": {
        1: ("path", "string", "o"),
        3: ("pathType", "string", "*"),
        2: ("backend", "networking/v1.IngressBackend", ""),
    },
    "networking/v1.HTTPIngressRuleValue": {
        1: ("paths", "networking/v1.HTTPIngressPath", "r"),
    },
    "networking/v1.IPBlock": {
        1: ("cidr", "string", ""),
        2: ("except", "string", "ro"),
    },
    "networking/v1.Ingress": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "networking/v1.IngressSpec", "o"),
        3: ("status", "networking/v1.IngressStatus", "o"),
    },
    "networking/v1.IngressBackend": {
        4: ("service", "networking/v1.IngressServiceBackend", "*o"),
        3: ("resource", "core/v1.TypedLocalObjectReference", "*o"),
    },
    "networking/v1.IngressClass": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "networking/v1.IngressClassSpec", "o"),
    },
    "networking/v1.IngressClassParametersReference": {
        1: ("apiGroup", "string", "*o"),
        2: ("kind", "string", ""),
        3: ("name", "string", ""),
        4: ("scope", "string", "*"),
        5: ("namespace", "string", "*o"),
    },
    "networking/v1.IngressClassSpec": {
        1: ("controller", "string", "o"),
        2: ("parameters", "networking/v1.IngressClassParametersReference", "*o"),
    },
    "networking/v1.IngressLoadBalancerIngress": {
        1: ("ip", "string", "o"),
        2: ("hostname", "string", "o"),
        4: ("ports", "networking/v1.IngressPortStatus", "ro"),
    },
    "networking/v1.IngressLoadBalancerStatus": {
        1: ("ingress", "networking/v1.IngressLoadBalancerIngress", "ro"),
    },
    "networking/v1.IngressPortStatus": {
        1: ("port", "int32", ""),
        2: ("protocol", "string", ""),
        3: ("error", "string", "*o"),
    },
    "networking/v1.IngressRule": {
        1: ("host", "string", "o"),
        2: ("", "networking/v1.IngressRuleValue", "i"),
    },
    "networking/v1.IngressRuleValue": {
        1: ("http", "networking/v1.HTTPIngressRuleValue", "*o"),
    },
    "networking/v1.IngressServiceBackend": {
        1: ("name", "string", ""),
        2: ("port", "networking/v1.ServiceBackendPort", "o"),
    },
    "networking/v1.IngressSpec": {
        4: ("ingressClassName", "string", "*o"),
        1: ("defaultBackend", "networking/v1.IngressBackend", "*o"),
        2: ("tls", "networking/v1.IngressTLS", "ro"),
        3: ("rules", "networking/v1.IngressRule", "ro"),
    },
    "networking/v1.IngressStatus": {
        1: ("loadBalancer", "networking/v1.IngressLoadBalancerStatus", "o"),
    },
    "networking/v1.IngressTLS": {
        1: ("hosts", "string", "ro"),
        2: ("secretName", "string", "o"),
    },
    "networking/v1.NetworkPolicy": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "networking/v1.NetworkPolicySpec", "o"),
    },
    "networking/v1.NetworkPolicyEgressRule": {
        1: ("ports", "networking/v1.NetworkPolicyPort", "ro"),
        2: ("to", "networking/v1.NetworkPolicyPeer", "ro"),
    },
    "networking/v1.NetworkPolicyIngressRule": {
        1: ("ports", "networking/v1.NetworkPolicyPort", "ro"),
        2: ("from", "networking/v1.NetworkPolicyPeer", "ro"),
    },
    "networking/v1.NetworkPolicyPeer": {
        1: ("podSelector", "meta/v1.LabelSelector", "*o"),
        2: ("namespaceSelector", "meta/v1.LabelSelector", "*o"),
        3: ("ipBlock", "networking/v1.IPBlock", "*o"),
    },
    "networking/v1.NetworkPolicyPort": {
        1: ("protocol", "string", "*o"),
        2: ("port", "intstr.IntOrString", "*o"),
        3: ("endPort", "int32", "*o"),
    },
    "networking/v1.NetworkPolicySpec": {
        1: ("podSelector", "meta/v1.LabelSelector", ""),
        2: ("ingress", "networking/v1.NetworkPolicyIngressRule", "ro"),
        3: ("egress", "networking/v1.NetworkPolicyEgressRule", "ro"),
        4: ("policyTypes", "string", "ro"),
    },
    "networking/v1.ServiceBackendPort": {
        1: ("name", "string", "o"),
        2: ("number", "int32", "o"),
    },
    # ---- policy/v1 ---------------------------------------------------------------------------------------
    "policy/v1.Eviction": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("deleteOptions", "meta/v1.DeleteOptions", "*o"),
    },
    "policy/v1.PodDisruptionBudget": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("spec", "policy/v1.PodDisruptionBudgetSpec", "o"),
        3: ("status", "policy/v1.PodDisruptionBudgetStatus", "o"),
    },
    "policy/v1.PodDisruptionBudgetSpec": {
        1: ("minAvailable", "intstr.IntOrString", "*o"),
        2: ("selector", "meta/v1.LabelSelector", "*o"),
        3: ("maxUnavailable", "intstr.IntOrString", "*o"),
        4: ("unhealthyPodEvictionPolicy", "string", "*o"),
    },
    "policy/v1.PodDisruptionBudgetStatus": {
        1: ("observedGeneration", "int64", "o"),
        2: ("disruptedPods", "map<string,meta/v1.Time>", "o"),
        3: ("disruptionsAllowed", "int32", ""),
        4: ("currentHealthy", "int32", ""),
        5: ("desiredHealthy", "int32", ""),
        6: ("expectedPods", "int32", ""),
        7: ("conditions", "meta/v1.Condition", "ro"),
    },
    # ---- rbac/v1 -----------------------------------------------------------------------------------------
    "rbac/v1.AggregationRule": {
        1: ("clusterRoleSelectors", "meta/v1.LabelSelector", "ro"),
    },
    "rbac/v1.ClusterRole": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("rules", "rbac/v1.PolicyRule", "r"),
        3: ("aggregationRule", "rbac/v1.AggregationRule", "*o"),
    },
    "rbac/v1.ClusterRoleBinding": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("subjects", "rbac/v1.Subject", "ro"),
        3: ("roleRef", "rbac/v1.RoleRef", ""),
    },
    "rbac/v1.PolicyRule": {
        1: ("verbs", "string", "r"),
        2: ("apiGroups", "string", "ro"),
        3: ("resources", "string", "ro"),
        4: ("resourceNames", "string", "ro"),
        5: ("nonResourceURLs", "string", "ro"),
    },
    "rbac/v1.Role": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("rules", "rbac/v1.PolicyRule", "r"),
    },
    "rbac/v1.RoleBinding": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("subjects", "rbac/v1.Subject", "ro"),
        3: ("roleRef", "rbac/v1.RoleRef", ""),
    },
    "rbac/v1.RoleRef": {
        1: ("apiGroup", "string", ""),
        2: ("kind", "string", ""),
        3: ("name", "string", ""),
    },
    "rbac/v1.Subject": {
        1: ("kind", "string", ""),
        2: ("apiGroup", "string", "o"),
        3: ("name", "string", ""),
        4: ("namespace", "string", "o"),
    },
    # ---- scheduling/v1 -----------------------------------------------------------------------------------
    "scheduling/v1.PriorityClass": {
        1: ("metadata", "meta/v1.ObjectMeta", "o"),
        2: ("value", "int32", ""),
        3: ("globalDefault", "bool", "o"),
        4: ("description", "string", "o"),
        5: ("preemptionPolicy", "string", "*o"),
    },
}

# (apiVersion, kind) of the Unknown envelope -> root message.
_KINDS: dict[tuple[str, str], str] = {
    ("apps/v1", "ControllerRevision"): "apps/v1.ControllerRevision",
    ("apps/v1", "DaemonSet"): "apps/v1.DaemonSet",
    ("apps/v1", "Deployment"): "apps/v1.Deployment",
    ("apps/v1", "ReplicaSet"): "apps/v1.ReplicaSet",
    ("apps/v1", "StatefulSet"): "apps/v1.StatefulSet",
    ("authentication.k8s.io/v1", "SelfSubjectReview"): "authentication/v1.SelfSubjectReview",
    ("authentication.k8s.io/v1", "TokenRequest"): "authentication/v1.TokenRequest",
    ("authentication.k8s.io/v1", "TokenReview"): "authentication/v1.TokenReview",
    ("authorization.k8s.io/v1", "LocalSubjectAccessReview"): "authorization/v1.LocalSubjectAccessReview",
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): "authorization/v1.SelfSubjectAccessReview",
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): "authorization/v1.SelfSubjectRulesReview",
    ("authorization.k8s.io/v1", "SubjectAccessReview"): "authorization/v1.SubjectAccessReview",
    ("autoscaling/v1", "HorizontalPodAutoscaler"): "autoscaling/v1.HorizontalPodAutoscaler",
    ("autoscaling/v1", "Scale"): "autoscaling/v1.Scale",
    ("autoscaling/v2", "HorizontalPodAutoscaler"): "autoscaling/v2.HorizontalPodAutoscaler",
    ("batch/v1", "CronJob"): "batch/v1.CronJob",
    ("batch/v1", "Job"): "batch/v1.Job",
    ("certificates.k8s.io/v1", "CertificateSigningRequest"): "certificates/v1.CertificateSigningRequest",
    ("coordination.k8s.io/v1", "Lease"): "coordination/v1.Lease",
    ("events.k8s.io/v1", "Event"): "events/v1.Event",
    ("networking.k8s.io/v1", "Ingress"): "networking/v1.Ingress",
    ("networking.k8s.io/v1", "IngressClass"): "networking/v1.IngressClass",
    ("networking.k8s.io/v1", "NetworkPolicy"): "networking/v1.NetworkPolicy",
    ("policy/v1", "Eviction"): "policy/v1.Eviction",
    ("policy/v1", "PodDisruptionBudget"): "policy/v1.PodDisruptionBudget",
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): "rbac/v1.ClusterRole",
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): "rbac/v1.ClusterRoleBinding",
    ("rbac.authorization.k8s.io/v1", "Role"): "rbac/v1.Role",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): "rbac/v1.RoleBinding",
    ("scheduling.k8s.io/v1", "PriorityClass"): "scheduling/v1.PriorityClass",
    ("v1", "Binding"): "core/v1.Binding",
    ("v1", "ConfigMap"): "core/v1.ConfigMap",
    ("v1", "Endpoints"): "core/v1.Endpoints",
    ("v1", "Event"): "core/v1.Event",
    ("v1", "LimitRange"): "core/v1.LimitRange",
    ("v1", "Namespace"): "core/v1.Namespace",
    ("v1", "Node"): "core/v1.Node",
    ("v1", "PersistentVolume"): "core/v1.PersistentVolume",
    ("v1", "PersistentVolumeClaim"): "core/v1.PersistentVolumeClaim",
    ("v1", "Pod"): "core/v1.Pod",
    ("v1", "PodTemplate"): "core/v1.PodTemplate",
    ("v1", "ReplicationController"): "core/v1.ReplicationController",
    ("v1", "ResourceQuota"): "core/v1.ResourceQuota",
    ("v1", "Secret"): "core/v1.Secret",
    ("v1", "Service"): "core/v1.Service",
    ("v1", "ServiceAccount"): "core/v1.ServiceAccount",
}
