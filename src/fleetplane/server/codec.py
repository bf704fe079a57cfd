"""Request bodies in the formats clients send: JSON, YAML, and (from kubectl's ``create``
generators) Kubernetes protobuf; patch documents by their media type."""

from __future__ import annotations

import re
from typing import Any

import orjson

from ..apimachinery import errors as e
from ..apimachinery.errors import StatusError
from ..apimachinery.limits import DEPTH_MESSAGE, MAX_DEPTH, MAX_OBJECT_BYTES, exceeds_depth, too_large_message
from ..apimachinery.yamljson import SizeError, YAMLError, yaml_to_json

PROTOBUF = "application/vnd.kubernetes.protobuf"

PATCH_TYPES = {
    "application/json-patch+json": "json",
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
    "application/apply-patch+cbor": "apply-cbor",
}


_JSON_ERROR = "couldn't get version/kind; json parse error"
_PATCH_ERROR = "error decoding patch"


def load_yaml(body: bytes) -> Any:
    """A YAML body as sigs.k8s.io/yaml turns it into JSON, within the depth and size limits."""
    try:
        return yaml_to_json(body, max_depth=MAX_DEPTH, max_bytes=MAX_OBJECT_BYTES)
    except SizeError:
        raise e.too_large(too_large_message(MAX_OBJECT_BYTES) + " (the YAML document expands beyond it)") from None
    except YAMLError as exc:
        raise e.bad_request(f"error converting YAML to JSON: {exc}") from None


#: bodies from this size on are decoded in pieces (:func:`loads_in_pieces`)
PIECES_FROM = 512 * 1024
#: about what one orjson call decodes there: a few milliseconds
PIECE = 64 * 1024
#: how deep big values are split; below, a value is decoded whole
_PIECE_DEPTH = 8
#: characters other than brackets and quotes, then a string, up to 2,048 times, then more such
#: characters (some 15 KB of a ConfigMap's data: about a millisecond)
_RUN = re.compile(rb'(?:[^"\[\]{}]*"[^"\\]*(?:\\.[^"\\]*)*"){0,2048}[^"\[\]{}]*', re.DOTALL)
#: the same up to the next bracket or comma outside a string
_TO_SEPARATOR = re.compile(rb'(?:[^"\[\]{},]*"[^"\\]*(?:\\.[^"\\]*)*")*[^"\[\]{},]*', re.DOTALL)
_WS = b" \t\r\n"
_OPEN, _CLOSE = b"{[", b"}]"


class _NotSplit(Exception):
    """The body is not what the splitter expects: it is decoded whole (and its error, if any, is orjson's)."""


def loads_in_pieces(body: bytes) -> Any:
    """``orjson.loads(body)``, in calls of some :data:`PIECE` bytes each.

    orjson decodes a 2 MiB, 150,000-key object in one C call that holds the GIL for 40-70 ms
    (more on a busy machine), in whatever thread it runs: no other request is answered meanwhile.
    Here the large objects and arrays are cut at their top-level commas (found by regular
    expressions that each scan a few kilobytes), their pieces decoded apart and joined, so the
    GIL changes hands between the pieces. The result is the same; any body the splitter does not
    follow (invalid JSON included) is decoded whole, so errors are orjson's."""
    start, end = 0, len(body)
    while start < end and body[start] in _WS:
        start += 1
    while end > start and body[end - 1] in _WS:
        end -= 1
    try:
        return _decode(memoryview(body), body, start, end, 0)
    except (_NotSplit, orjson.JSONDecodeError, RecursionError):
        return orjson.loads(body)


def _decode(view: memoryview, body: bytes, start: int, end: int, depth: int) -> Any:
    if end - start <= PIECE or depth >= _PIECE_DEPTH or body[start] not in _OPEN:
        return orjson.loads(view[start:end])
    is_object = body[start] == 0x7B  # {
    if body[end - 1] != (0x7D if is_object else 0x5D):
        raise _NotSplit
    out: Any = {} if is_object else []
    piece = start + 1  # where the members not yet decoded begin
    #: a comma was consumed: a member must follow it (JSON has no trailing commas)
    comma = False

    def flush(chunk: bytes) -> None:
        """Decode the members in ``chunk`` (no comma at either end) as one piece."""
        nonlocal comma
        if chunk.strip(_WS):
            part = orjson.loads(b"{" + chunk + b"}" if is_object else b"[" + chunk + b"]")
            if is_object:
                out.update(part)
            else:
                out.extend(part)
            comma = False

    def before(chunk: bytes) -> None:
        """The members before a large one: none right after the start or a comma, else ending with one."""
        nonlocal comma
        chunk = chunk.rstrip(_WS)
        if chunk:
            if not chunk.endswith(b","):
                raise _NotSplit
            flush(chunk[:-1])
        elif not comma and piece != start + 1:
            raise _NotSplit

    pos, level, nested = start + 1, 1, 0
    while True:
        scanned = _RUN.match(body, pos, end).end()  # type: ignore[union-attr]
        stuck, pos = scanned == pos, scanned
        if level == 1 and pos - piece >= PIECE:
            pos = _TO_SEPARATOR.match(body, pos, end).end()  # type: ignore[union-attr]
            if pos < end and body[pos] == 0x2C:  # a top-level comma: the piece ends here
                flush(bytes(view[piece:pos]))
                piece = pos = pos + 1
                comma = True
                continue
        if pos >= end:
            raise _NotSplit
        c = body[pos]
        if c == 0x22:  # the scan stopped at its bound, before a string
            if stuck:
                raise _NotSplit  # a string that does not end
            continue
        if c in _OPEN:
            if level == 1:
                nested = pos
            level += 1
        elif c in _CLOSE:
            level -= 1
            if level == 0:
                if pos != end - 1:
                    raise _NotSplit  # something after the container's end
                rest = bytes(view[piece:pos])
                if comma and not rest.strip(_WS):
                    raise _NotSplit
                flush(rest)
                return out
            if level == 1 and pos + 1 - nested > PIECE:
                # a member whose value alone is large: the members before it, then it, split in turn
                value = _decode(view, body, nested, pos + 1, depth + 1)
                head = bytes(view[piece:nested]).rstrip(_WS)
                if is_object:
                    if not head.endswith(b":"):
                        raise _NotSplit
                    head = head[:-1].rstrip(_WS)
                    key_start = _key_start(head)
                    before(head[:key_start])
                    key = orjson.loads(head[key_start:])
                    out[key] = value
                else:
                    before(head)
                    out.append(value)
                comma = False
                pos += 1
                while body[pos] in _WS:
                    pos += 1
                piece = pos
                if body[pos] == 0x2C:
                    comma = True
                    pos = piece = pos + 1
                elif pos != end - 1:
                    raise _NotSplit  # only a comma or the end may follow a value
                continue
        pos += 1


def _key_start(head: bytes) -> int:
    """Where the last string of ``head`` (which ends with its closing quote) begins."""
    if not head.endswith(b'"'):
        raise _NotSplit
    i = len(head) - 1
    while True:
        i = head.rfind(b'"', 0, i)
        if i < 0:
            raise _NotSplit
        j = i
        while j > 0 and head[j - 1] == 0x5C:  # backslash
            j -= 1
        if (i - j) % 2 == 0:  # not an escaped quote: the key's opening one
            return i


def load_json(body: bytes, context: str = _JSON_ERROR) -> Any:
    """A JSON body, nested at most :data:`MAX_DEPTH` deep (orjson itself stops at 1,024); a
    large one decoded in pieces (:func:`loads_in_pieces`)."""
    try:
        value = orjson.loads(body) if len(body) < PIECES_FROM else loads_in_pieces(body)
    except orjson.JSONDecodeError as exc:
        if str(exc).startswith("depth limit exceeded"):
            raise e.bad_request(f"{context}: {DEPTH_MESSAGE}") from None
        raise e.bad_request(f"{_JSON_ERROR}: {exc}") from None
    # nesting is at most the number of opening brackets (those in strings only add to it): a
    # body with few of them needs no walk of the decoded value
    if body.count(b"{") + body.count(b"[") > MAX_DEPTH and exceeds_depth(value):
        raise e.bad_request(f"{context}: {DEPTH_MESSAGE}")
    return value


def _checked_protobuf(body: bytes) -> Any:
    """A protobuf body as JSON, held to the same depth (raw JSON inside: RawExtension,
    FieldsV1) and size (zero values rendered) as a JSON body."""
    from .protobuf import decode

    obj = decode(body)
    if exceeds_depth(obj):
        raise e.bad_request(f"unable to decode the protobuf body: {DEPTH_MESSAGE}")
    if len(orjson.dumps(obj)) > MAX_OBJECT_BYTES:
        raise e.too_large(too_large_message(MAX_OBJECT_BYTES) + " (the protobuf object decodes beyond it)")
    return obj


def _summary(body: bytes, limit: int = 30) -> str:
    """apiserver's summarizeData: the start of a JSON object as text, of anything else in hex."""
    if not body:
        return "<empty>"
    if body[:1] == b"{":
        return body[:limit].decode("utf-8", "replace") + (" ..." if len(body) > limit else "")
    return body[:limit].hex() + (" ..." if len(body) > limit else "")


def decode_object(content_type: str, body: bytes, kind: str = "") -> dict:
    """The object of a POST or PUT body; a body that does not parse is kube's "unrecognized" 400
    naming the ``kind`` the endpoint wants (apiserver's transformDecodeError)."""
    if not body.strip():
        raise e.bad_request("the request body is empty; expected an object")
    if content_type in ("", "application/json", "*/*", "application/yaml", "application/x-yaml", "text/yaml"):
        try:
            obj = load_json(body) if "yaml" not in content_type else load_yaml(body)
        except StatusError as err:
            if kind and err.code == 400:
                err.message = f"the object provided is unrecognized (must be of type {kind}): {err.message} ({_summary(body)})"
            raise
    elif content_type == PROTOBUF:
        obj = _checked_protobuf(body)
    else:
        raise e.unsupported_media_type(
            f'the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, {PROTOBUF}')
    if not isinstance(obj, dict):
        raise e.bad_request("the request body must be a JSON object")
    return obj


def decode_patch(content_type: str, body: bytes, *, custom: bool) -> tuple[str, Any]:
    kind = PATCH_TYPES.get(content_type)
    if kind is None or kind == "apply-cbor":
        accepted = ["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"]
        if not custom:
            accepted.insert(2, "application/strategic-merge-patch+json")
        raise e.unsupported_media_type(
            "the body of the request was in an unknown format - accepted media types include: " + ", ".join(accepted))
    if kind == "apply":
        try:
            value = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            if str(exc).startswith("depth limit exceeded"):
                raise e.bad_request(f"{_PATCH_ERROR}: {DEPTH_MESSAGE}") from None
            return kind, load_yaml(body)
        if exceeds_depth(value):
            raise e.bad_request(f"{_PATCH_ERROR}: {DEPTH_MESSAGE}")
        return kind, value
    return kind, load_json(body, _PATCH_ERROR)

