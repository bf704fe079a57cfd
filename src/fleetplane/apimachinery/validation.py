"""Name and label rules (k8s.io/apimachinery/pkg/util/validation) with kube's messages.

Each ``*_error`` function returns why a value breaks the rule, or None. Every pattern is a full
match: Go's ``$`` is Python's ``\\Z`` (``$`` would accept a trailing newline).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from . import errors as e
from .errors import FieldError

__all__ = [
    "DNS1123_LABEL",
    "DNS1123_LABEL_MSG",
    "DNS1123_SUBDOMAIN",
    "DNS1123_SUBDOMAIN_MSG",
    "DNS1035_LABEL",
    "LABEL_VALUE",
    "QUALIFIED_NAME",
    "dns1123_label_error",
    "dns1123_subdomain_error",
    "dns1035_label_errors",
    "is_dns1123_label",
    "is_label_value",
    "is_qualified_name",
    "label_value_error",
    "path_segment_error",
    "qualified_name_error",
    "validate_annotations",
    "validate_label_selector",
    "validate_labels",
]

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + r"(\." + _DNS1123_LABEL_FMT + ")*"
_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = "(" + _QUALIFIED_NAME_FMT + ")?"

DNS1123_LABEL = re.compile("^" + _DNS1123_LABEL_FMT + r"\Z")
DNS1123_SUBDOMAIN = re.compile("^" + _DNS1123_SUBDOMAIN_FMT + r"\Z")
#: the name part of a qualified name (a label key, a finalizer) without its length limit
QUALIFIED_NAME = re.compile("^" + _QUALIFIED_NAME_FMT + r"\Z")
LABEL_VALUE = re.compile("^" + _LABEL_VALUE_FMT + r"\Z")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?\Z")

DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
_QUALIFIED_NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
    "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def dns1123_subdomain_error(name: str) -> str | None:
    """``IsDNS1123Subdomain``: most object names."""
    if len(name) > 253:
        return "must be no more than 253 characters"
    if not DNS1123_SUBDOMAIN.match(name):
        return DNS1123_SUBDOMAIN_MSG
    return None


def dns1123_label_error(name: str) -> str | None:
    """``IsDNS1123Label``: namespace names and other names used as DNS labels."""
    if len(name) > 63:
        return "must be no more than 63 characters"
    if not DNS1123_LABEL.match(name):
        return DNS1123_LABEL_MSG
    return None


def dns1035_label_errors(name: str) -> list[str]:
    """``IsDNS1035Label``: every rule ``name`` breaks (a kind, a Service name)."""
    errs = []
    if len(name) > 63:
        errs.append("must be no more than 63 characters")
    if not DNS1035_LABEL.match(name):
        errs.append(_DNS1035_LABEL_MSG)
    return errs


def is_dns1123_label(name: str) -> bool:
    return len(name) <= 63 and DNS1123_LABEL.match(name) is not None


def qualified_name_error(key: str) -> str | None:
    """``IsQualifiedName``: a label or annotation key, ``[prefix/]name``."""
    prefix, _, name = key.rpartition("/")
    if "/" in prefix:
        return ("a qualified name must consist of alphanumeric characters, '-', '_' or '.', with an "
                "optional DNS subdomain prefix and '/'")
    if prefix and (len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix)):
        return ("prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric character")
    if not name:
        return "name part must be non-empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not QUALIFIED_NAME.match(name):
        return _QUALIFIED_NAME_MSG
    return None


def is_qualified_name(key: str) -> bool:
    return qualified_name_error(key) is None


def label_value_error(value: str) -> str | None:
    """``IsValidLabelValue``: empty, or at most 63 characters of the qualified-name alphabet."""
    if len(value) > 63:
        return "must be no more than 63 characters"
    if not LABEL_VALUE.match(value):
        return _LABEL_VALUE_MSG
    return None


def is_label_value(value: str) -> bool:
    return len(value) <= 63 and LABEL_VALUE.match(value) is not None


def path_segment_error(name: str) -> str | None:
    """Names travel in URL paths: ``ValidatePathSegmentName``."""
    if name in (".", ".."):
        return f"may not be '{name}'"
    for bad in ("/", "%"):
        if bad in name:
            return f"may not contain '{bad}'"
    return None


# -- metav1 objects (k8s.io/apimachinery/pkg/apis/meta/v1/validation) ----------------------------


def validate_labels(labels: Any, path: str) -> list[FieldError]:
    """``ValidateLabels``: every key a qualified name, every value a label value."""
    return _validate_string_map(labels, path, "label", label_value_error)


def validate_annotations(annotations: Any, path: str) -> list[FieldError]:
    """``ValidateAnnotations``: every key a qualified name, at most 256 KiB of keys and values."""
    errs = _validate_string_map(annotations, path, "annotation", lambda v: None)
    if isinstance(annotations, dict):
        total = sum(len(k) + len(v) for k, v in annotations.items() if isinstance(v, str))
        if total > _TOTAL_ANNOTATION_SIZE:
            errs.append(e.too_long(path, _TOTAL_ANNOTATION_SIZE))
    return errs


_TOTAL_ANNOTATION_SIZE = 256 * 1024


def _validate_string_map(
    m: Any, path: str, what: str, value_error: Callable[[str], str | None]
) -> list[FieldError]:
    """A map of qualified-name keys to strings; each key's errors before its value's."""
    if m is None:
        return []
    if not isinstance(m, dict):
        return [e.invalid(path, m, "must be a map of strings")]
    errs = []
    for k, v in m.items():
        why = qualified_name_error(k)
        if why:
            errs.append(e.invalid(path, k, why))
        if not isinstance(v, str):
            errs.append(e.invalid(path, v, f"{what} values must be strings"))
            continue
        why = value_error(v)
        if why:
            errs.append(e.invalid(path, v, why))
    return errs


def validate_label_selector(sel: Any, path: str) -> list[FieldError]:
    """``ValidateLabelSelector`` of a metav1.LabelSelector object: its matchLabels, and each
    expression's operator, values (required for In/NotIn, forbidden for Exists/DoesNotExist), key
    and values' syntax."""
    if not isinstance(sel, Mapping):
        return [e.invalid(path, sel, "must be an object")]
    errs = validate_labels(sel.get("matchLabels"), f"{path}.matchLabels")
    exprs = sel.get("matchExpressions") or []
    if not isinstance(exprs, list):
        return errs + [e.invalid(f"{path}.matchExpressions", exprs, "must be a list")]
    for i, expr in enumerate(exprs):
        p = f"{path}.matchExpressions[{i}]"
        if not isinstance(expr, Mapping):
            errs.append(e.invalid(p, expr, "must be an object"))
            continue
        op, values, key = expr.get("operator"), expr.get("values") or [], expr.get("key")
        if op in ("In", "NotIn"):
            if not values:
                errs.append(e.required(f"{p}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errs.append(e.forbidden(f"{p}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        else:
            errs.append(e.invalid(f"{p}.operator", op, "not a valid selector operator"))
        why = qualified_name_error(key) if isinstance(key, str) else "must be a string"
        if why:
            errs.append(e.invalid(f"{p}.key", key, why))
        for j, v in enumerate(values if isinstance(values, list) else []):
            why = label_value_error(v) if isinstance(v, str) else "must be a string"
            if why:
                errs.append(e.invalid(f"{p}.values[{j}]", v, why))
    return errs


#: the name suffix of a CRD in the core group (``spec.group: ""``): ``pods.core``, kcp's convention
#: for a physical cluster's core types (Services, Pods...) imported into a logical cluster
CRD_CORE_SUFFIX = "core"


def crd_name(plural: str, group: str) -> str:
    """A CRD's required name: ``<plural>.<group>``, ``<plural>.core`` in the core group (the hub's
    rule, shared with the Syncer, which builds the CRDs it imports)."""
    return f"{plural}.{group or CRD_CORE_SUFFIX}"
