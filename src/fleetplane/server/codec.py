"""Request bodies in the formats clients send: JSON, YAML, and (from kubectl's ``create``
generators) Kubernetes protobuf; patch documents by their media type."""

from __future__ import annotations

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


def load_json(body: bytes, context: str = _JSON_ERROR) -> Any:
    """A JSON body, nested at most :data:`MAX_DEPTH` deep (orjson itself stops at 1,024)."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        if str(exc).startswith("depth limit exceeded"):
            raise e.bad_request(f"{context}: {DEPTH_MESSAGE}") from None
        raise e.bad_request(f"{_JSON_ERROR}: {exc}") from None
    if exceeds_depth(value):
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

