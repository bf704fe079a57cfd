"""Request bodies in the formats clients send: JSON, YAML, and (from kubectl's ``create``
generators) Kubernetes protobuf; patch documents by their media type."""

from __future__ import annotations

from typing import Any

import orjson
import yaml

from ..apimachinery import errors as e

PROTOBUF = "application/vnd.kubernetes.protobuf"

PATCH_TYPES = {
    "application/json-patch+json": "json",
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
    "application/apply-patch+cbor": "apply-cbor",
}


class _Loader(yaml.SafeLoader):
    """YAML 1.1 as Kubernetes reads it for our purposes; no custom tags."""


def load_yaml(body: bytes) -> Any:
    try:
        return yaml.load(body, Loader=_Loader)  # noqa: S506 - SafeLoader subclass
    except yaml.YAMLError as exc:
        raise e.bad_request(f"error converting YAML to JSON: {exc}") from None


def load_json(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise e.bad_request(f"couldn't get version/kind; json parse error: {exc}") from None


def decode_object(content_type: str, body: bytes) -> dict:
    """The object of a POST or PUT body."""
    if not body.strip():
        raise e.bad_request("the request body is empty; expected an object")
    if content_type in ("", "application/json", "*/*"):
        obj = load_json(body)
    elif content_type in ("application/yaml", "application/x-yaml", "text/yaml"):
        obj = load_yaml(body)
    elif content_type == PROTOBUF:
        from .protobuf import decode

        obj = decode(body)
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
            return kind, orjson.loads(body)
        except orjson.JSONDecodeError:
            return kind, load_yaml(body)
    return kind, load_json(body)
