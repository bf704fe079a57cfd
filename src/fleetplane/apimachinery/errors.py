"""Kubernetes API errors as exceptions that carry a ``Status`` object.

Every layer raises these; the HTTP layer turns them into the Status JSON body with the same
code. Messages follow kube-apiserver's wording (k8s.io/apimachinery/pkg/api/errors) because
clients and people match on them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class FieldError:
    """One field.Error: a problem with a single field, shown as a Status cause."""

    type: str  # FieldValueInvalid, FieldValueRequired, FieldValueNotSupported, ...
    field: str  # dotted path, e.g. "spec.size" or "metadata.labels[app]"
    detail: str = ""
    bad_value: Any = None
    has_value: bool = False

    _TEXT = {
        "FieldValueRequired": "Required value",
        "FieldValueInvalid": "Invalid value",
        "FieldValueNotSupported": "Unsupported value",
        "FieldValueForbidden": "Forbidden",
        "FieldValueDuplicate": "Duplicate value",
        "FieldValueTooLong": "Too long",
        "FieldValueTooMany": "Too many",
        "FieldValueTypeInvalid": "Invalid value",
        "FieldValueNotFound": "Not found",
        "InternalError": "Internal error",
    }

    def message(self) -> str:
        """The cause message as Go prints it: ``Invalid value: "x": detail``."""
        text = self._TEXT.get(self.type, self.type)
        if self.has_value:
            text += ": " + _go_value(self.bad_value)
        if self.detail:
            text += ": " + self.detail
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.message()}" if self.field else self.message()

    def cause(self) -> dict[str, Any]:
        return {"reason": self.type, "message": self.message(), "field": self.field}


def required(path: str, detail: str = "") -> FieldError:
    return FieldError("FieldValueRequired", path, detail)


def invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError("FieldValueInvalid", path, detail, value, True)


class _LiteralInvalid(FieldError):
    """FieldValueInvalid whose value is printed verbatim (a Go literal such as ``map[string]string{...}``)."""

    def message(self) -> str:
        return f"Invalid value: {self.bad_value}: {self.detail}" if self.detail else f"Invalid value: {self.bad_value}"


def invalid_literal(path: str, literal: str, detail: str) -> FieldError:
    """An Invalid value shown as ``literal`` itself, where kube prints a Go value with %#v."""
    return _LiteralInvalid("FieldValueInvalid", path, detail, literal, True)


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError("FieldValueForbidden", path, detail)


def not_supported(path: str, value: Any, allowed: list[str]) -> FieldError:
    detail = "supported values: " + ", ".join(f'"{a}"' for a in allowed)
    return FieldError("FieldValueNotSupported", path, detail, value, True)


def duplicate(path: str, value: Any) -> FieldError:
    return FieldError("FieldValueDuplicate", path, "", value, True)


def too_long(path: str, max_len: int) -> FieldError:
    return FieldError("FieldValueTooLong", path, f"may not be more than {max_len} bytes")


def _go_value(v: Any) -> str:
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    import orjson

    return orjson.dumps(v).decode()


@dataclass
class StatusError(Exception):
    """An API error: HTTP code, reason and message, as a kube ``Status``."""

    code: int
    reason: str
    message: str
    details: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}"

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        if self.details:
            body["details"] = self.details
        body["code"] = self.code  # metav1.Status's field order: ... reason, details, code
        return body


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(group: str, resource: str, name: str) -> StatusError:
    return StatusError(
        404,
        "NotFound",
        f'{_qualified(resource, group)} "{name}" not found',
        {"name": name, "group": group, "kind": resource},
    )


def already_exists(group: str, resource: str, name: str) -> StatusError:
    return StatusError(
        409,
        "AlreadyExists",
        f'{_qualified(resource, group)} "{name}" already exists',
        {"name": name, "group": group, "kind": resource},
    )


def conflict(group: str, resource: str, name: str, why: str) -> StatusError:
    return StatusError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {why}',
        {"name": name, "group": group, "kind": resource},
    )


OPTIMISTIC_LOCK = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def invalid_object(group: str, kind: str, name: str, errors: list[FieldError]) -> StatusError:
    """422 Invalid with one cause per field error (``Kind.group "name" is invalid: ...``)."""
    agg = ", ".join(str(e) for e in errors)
    if len(errors) > 1:
        agg = "[" + agg + "]"
    return StatusError(
        422,
        "Invalid",
        f'{_qualified(kind, group)} "{name}" is invalid: {agg}',
        {"name": name, "group": group, "kind": kind, "causes": [e.cause() for e in errors]},
    )


def bad_request(message: str) -> StatusError:
    return StatusError(400, "BadRequest", message)


def forbidden_error(group: str, resource: str, name: str, why: str) -> StatusError:
    return StatusError(
        403,
        "Forbidden",
        f'{_qualified(resource, group)} "{name}" is forbidden: {why}',
        {"name": name, "group": group, "kind": resource},
    )


def method_not_allowed(message: str = "the server does not allow this method on the requested resource") -> StatusError:
    return StatusError(405, "MethodNotAllowed", message)


def gone(message: str) -> StatusError:
    return StatusError(410, "Expired", message)


def unprocessable(message: str = "the server rejected our request due to an error in our request") -> StatusError:
    """The generic 422 kube answers for a patch that cannot be applied (e.g. a failed JSON-patch test)."""
    return StatusError(422, "Invalid", message)


def unsupported_media_type(message: str) -> StatusError:
    return StatusError(415, "UnsupportedMediaType", message)


def too_large(message: str = "the request entity is too large") -> StatusError:
    return StatusError(413, "RequestEntityTooLarge", message)


def not_acceptable(message: str) -> StatusError:
    return StatusError(406, "NotAcceptable", message)


def internal(message: str) -> StatusError:
    return StatusError(500, "InternalError", message)


def unavailable(message: str) -> StatusError:
    return StatusError(503, "ServiceUnavailable", message)


def timeout(message: str) -> StatusError:
    return StatusError(504, "Timeout", message)
