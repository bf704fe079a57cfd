"""Validation shared by every type: object names and ObjectMeta, with kube's messages."""

from __future__ import annotations

import re
from typing import Any

from ..apimachinery import errors as e
from ..apimachinery.errors import FieldError
from ..apimachinery.selectors import label_key_error, label_value_error

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
CLUSTER_PATH = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(:[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*\Z")
#: as kcp's messages print the rule (Go's ``$`` is Python's ``\Z``: no match before a final newline)
CLUSTER_PATH_TEXT = CLUSTER_PATH.pattern.removesuffix("\\Z") + "$"

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


def dns_subdomain_error(name: str) -> str | None:
    if len(name) > 253:
        return "must be no more than 253 characters"
    if not DNS1123_SUBDOMAIN.match(name):
        return SUBDOMAIN_MSG
    return None


def dns_label_error(name: str) -> str | None:
    if len(name) > 63:
        return "must be no more than 63 characters"
    if not DNS1123_LABEL.match(name):
        return LABEL_MSG
    return None


def path_segment_error(name: str) -> str | None:
    """Names travel in URL paths: kube's ValidatePathSegmentName."""
    if name in (".", ".."):
        return f'may not be \'{name}\''
    for bad in ("/", "%"):
        if bad in name:
            return f"may not contain '{bad}'"
    return None


def validate_object_meta(obj: dict, *, namespaced: bool, name_error=dns_subdomain_error) -> list[FieldError]:
    """ObjectMeta rules every type shares (apimachinery/pkg/api/validation/objectmeta.go)."""
    errs: list[FieldError] = []
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return [e.required("metadata")]
    name = meta.get("name")
    if not name:
        errs.append(e.required("metadata.name", "name or generateName is required"))
    elif not isinstance(name, str):
        errs.append(e.invalid("metadata.name", name, "must be a string"))
    else:
        why = path_segment_error(name) or name_error(name)
        if why:
            errs.append(e.invalid("metadata.name", name, why))
    ns = meta.get("namespace")
    if namespaced:
        if not ns:
            errs.append(e.required("metadata.namespace"))
    elif ns:
        errs.append(e.forbidden("metadata.namespace", "not allowed on this type"))
    errs += validate_labels(meta.get("labels"), "metadata.labels")
    errs += validate_annotations(meta.get("annotations"), "metadata.annotations")
    fins = meta.get("finalizers") or []
    if not isinstance(fins, list):
        errs.append(e.invalid("metadata.finalizers", fins, "must be a list of strings"))
    else:
        for i, f in enumerate(fins):
            if not isinstance(f, str) or label_key_error(f):
                errs.append(e.invalid(f"metadata.finalizers[{i}]", f, "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"))
    for i, ref in enumerate(meta.get("ownerReferences") or []):
        p = f"metadata.ownerReferences[{i}]"
        if not isinstance(ref, dict):
            errs.append(e.invalid(p, ref, "must be an object"))
            continue
        for k in ("apiVersion", "kind", "name", "uid"):
            if not ref.get(k):
                errs.append(e.required(f"{p}.{k}", f"{k} must not be empty"))
    return errs


def validate_labels(labels: Any, path: str) -> list[FieldError]:
    if labels is None:
        return []
    if not isinstance(labels, dict):
        return [e.invalid(path, labels, "must be a map of strings")]
    errs = []
    for k, v in labels.items():
        why = label_key_error(k)
        if why:
            errs.append(e.invalid(path, k, why))
        if not isinstance(v, str):
            errs.append(e.invalid(f"{path}", v, "label values must be strings"))
            continue
        why = label_value_error(v)
        if why:
            errs.append(e.invalid(f"{path}", v, why))
    return errs


def validate_annotations(annotations: Any, path: str) -> list[FieldError]:
    if annotations is None:
        return []
    if not isinstance(annotations, dict):
        return [e.invalid(path, annotations, "must be a map of strings")]
    errs = []
    total = 0
    for k, v in annotations.items():
        why = label_key_error(k)
        if why:
            errs.append(e.invalid(path, k, why))
        if not isinstance(v, str):
            errs.append(e.invalid(f"{path}", v, "annotation values must be strings"))
            continue
        total += len(k) + len(v)
    if total > 256 * 1024:
        errs.append(e.too_long(path, 256 * 1024))
    return errs
