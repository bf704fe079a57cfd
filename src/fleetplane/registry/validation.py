"""Validation shared by every type: ObjectMeta (names, labels, annotations, finalizers, owner
references) and kcp's logical-cluster paths, with kube's messages. The name and label rules
themselves are :mod:`fleetplane.apimachinery.validation`."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..apimachinery import errors as e
from ..apimachinery.errors import FieldError
from ..apimachinery.validation import (
    dns1123_subdomain_error,
    path_segment_error,
    qualified_name_error,
    validate_annotations,
    validate_labels,
)

CLUSTER_PATH = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(:[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*\Z")
#: as kcp's messages print the rule (Go's ``$`` is Python's ``\Z``: no match before a final newline)
CLUSTER_PATH_TEXT = CLUSTER_PATH.pattern.removesuffix("\\Z") + "$"


def validate_object_meta(obj: dict[str, Any], *, namespaced: bool, name_error: Callable[[str], str | None] = dns1123_subdomain_error) -> list[FieldError]:
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
            if not isinstance(f, str) or qualified_name_error(f):
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
