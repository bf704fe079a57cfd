"""core/v1 ConfigMaps and Secrets: data keys, base64, ``immutable``, Secret ``stringData`` folded
into ``data`` (write-only), the Secret type immutable."""

from __future__ import annotations

import base64
import re

from ...apimachinery import errors as e
from ...apimachinery.errors import FieldError
from ...apimachinery.gofmt import go_base64_decode, is_go_base64
from ...registry import printers as pr
from ...registry.printers import AGE, NAME, Clock, Column, Printer
from ...registry.types import META_FIELDS, ResourceType, field_getter
from .base import DEFINITIONS, PROTOBUF, CoreStrategy

_DATA_KEY = re.compile(r"^[-._a-zA-Z0-9]+\Z")
#: kube's core.MaxSecretSize: what a ConfigMap's or a Secret's data may hold in all
MAX_DATA_BYTES = 1024 * 1024


def _validate_data_keys(data: object, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if data is None:
        return errs
    if not isinstance(data, dict):
        return [e.invalid(path, data, "must be a map")]
    for k in data:
        if len(k) > 253 or not _DATA_KEY.match(k):
            errs.append(e.invalid(path, k, "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"))
    return errs


def _immutable_errors(obj: dict, old: dict, fields: tuple[str, ...]) -> list[FieldError]:
    errs = []
    if old.get("immutable"):
        if not obj.get("immutable"):
            errs.append(e.forbidden("immutable", "field is immutable when `immutable` is set"))
        for f in fields:
            if obj.get(f) != old.get(f):
                errs.append(e.forbidden(f, "field is immutable when `immutable` is set"))
    return errs


class ConfigMapStrategy(CoreStrategy):
    def canonicalize(self, obj: dict) -> None:
        super().canonicalize(obj)
        _canonical_base64(obj.get("binaryData"))

    def validate(self, obj: dict) -> list[FieldError]:
        errs = super().validate(obj)
        data, binary = obj.get("data"), obj.get("binaryData")
        errs += _validate_data_keys(data, "data")
        errs += _validate_data_keys(binary, "binaryData")
        if isinstance(data, dict):
            for k, v in data.items():
                if not isinstance(v, str):
                    errs.append(e.invalid(f"data[{k}]", v, "must be a string"))
        if isinstance(data, dict) and isinstance(binary, dict):
            for k in set(data) & set(binary):
                errs.append(e.invalid("data", k, "duplicate of key present in binaryData"))
        if isinstance(binary, dict):
            errs += _check_base64(binary, "binaryData")
        # kube's ValidateConfigMap: data and binaryData together at most MaxSecretSize (1 MiB),
        # the error on the whole object (field "")
        size = sum(len(v.encode()) for v in (data or {}).values() if isinstance(v, str)) if isinstance(data, dict) else 0
        if isinstance(binary, dict):
            size += sum(len(v) * 3 // 4 for v in binary.values() if isinstance(v, str))
        if size > MAX_DATA_BYTES:
            errs.append(e.too_long("", MAX_DATA_BYTES))
        return errs

    def validate_update(self, obj: dict, old: dict) -> list[FieldError]:
        return self.validate(obj) + _immutable_errors(obj, old, ("data", "binaryData"))


def _check_base64(data: dict, path: str) -> list[FieldError]:
    return [e.invalid(f"{path}[{k}]", "<value>", "must be base64-encoded")
            for k, v in data.items() if not (isinstance(v, str) and is_go_base64(v))]


def _canonical_base64(data: object) -> None:
    """Values decoded as Go decodes []byte (line breaks skipped) are stored as kube re-encodes them."""
    if not isinstance(data, dict):
        return
    for k, v in data.items():
        if isinstance(v, str) and ("\n" in v or "\r" in v) and is_go_base64(v):
            data[k] = base64.b64encode(go_base64_decode(v)).decode()


class SecretStrategy(CoreStrategy):
    def canonicalize(self, obj: dict) -> None:
        # stringData is write-only: folded into data, never stored or returned.
        string_data = obj.pop("stringData", None)
        if isinstance(string_data, dict):
            data = obj.setdefault("data", {}) or {}
            for k, v in string_data.items():
                if isinstance(v, str):
                    data[k] = base64.b64encode(v.encode()).decode()
            obj["data"] = data
        obj.setdefault("type", "Opaque")
        _canonical_base64(obj.get("data"))

    def validate(self, obj: dict) -> list[FieldError]:
        errs = super().validate(obj)
        data = obj.get("data")
        errs += _validate_data_keys(data, "data")
        if isinstance(data, dict):
            errs += _check_base64(data, "data")
            size = sum(len(v) * 3 // 4 for v in data.values() if isinstance(v, str))
            if size > MAX_DATA_BYTES:
                errs.append(e.too_long("data", MAX_DATA_BYTES))
        return errs

    def validate_update(self, obj: dict, old: dict) -> list[FieldError]:
        errs = self.validate(obj) + _immutable_errors(obj, old, ("data",))
        if obj.get("type") != old.get("type"):
            errs.append(e.invalid("type", obj.get("type"), "field is immutable"))
        return errs


def _configmap_cells(o: dict, clock: Clock) -> list:
    return [pr.meta(o).get("name"), pr.length(o.get("data")) + pr.length(o.get("binaryData")),
            clock.since(pr.meta(o).get("creationTimestamp"))]


def _secret_cells(o: dict, clock: Clock) -> list:
    return [pr.meta(o).get("name"), pr.string(o.get("type")), pr.length(o.get("data")), clock.since(pr.meta(o).get("creationTimestamp"))]


def resource_types() -> list[ResourceType]:
    return [
        ResourceType("", "v1", "ConfigMap", "configmaps", "configmap", True, ConfigMapStrategy(),
                     short_names=("cm",),
                     printer=Printer((NAME, Column("Data", description=(DEFINITIONS + "ConfigMap", "data")), AGE),
                                     _configmap_cells),
                     openapi_definition=DEFINITIONS + "ConfigMap", protobuf=PROTOBUF + "ConfigMap"),
        ResourceType("", "v1", "Secret", "secrets", "secret", True, SecretStrategy(),
                     field_selectors=dict(META_FIELDS) | {"type": field_getter("type")},
                     printer=Printer((NAME, Column("Type", description=(DEFINITIONS + "Secret", "type")),
                                      Column("Data", description=(DEFINITIONS + "Secret", "data")), AGE), _secret_cells),
                     openapi_definition=DEFINITIONS + "Secret", protobuf=PROTOBUF + "Secret"),
    ]
