"""What the admission webhook configurations and the admission policies share: the rules that
say which requests they see, validated as kube's ``validateRuleWithOperations`` and
``validateNamedRuleWithOperations`` do (pkg/apis/admissionregistration/validation)."""

from __future__ import annotations

from typing import Any

from ...apimachinery import errors as e
from ...apimachinery.errors import FieldError
from ...apimachinery.gofmt import go_quote
from ...apimachinery.validation import path_segment_error

GROUP = "admissionregistration.k8s.io"
VERSION = "v1"
OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
SCOPES = ("*", "Cluster", "Namespaced")
MAX_MATCH_CONDITIONS = 64


def as_list(v: Any) -> list[Any]:
    """A list field as validation walks it (anything else: no items)."""
    return v if isinstance(v, list) else []


def invalid_slice(path: str, items: list[Any], detail: str, element: str = "string") -> FieldError:
    """A slice named as Go's ``%#v`` prints it in a field error: ``[]string{"*/*", "pods"}``."""
    literal = f"[]{element}{{" + ", ".join(go_quote(str(i)) for i in items) + "}"
    return e.invalid_literal(path, literal, detail)


def _wildcard_with_others(items: list[Any]) -> bool:
    return len(items) > 1 and "*" in items


def validate_resources(resources: list[Any], path: str) -> list[FieldError]:
    """validateResources: ``pods``, ``pods/status``, ``*``, ``*/*``, ``pods/*``, ``*/scale``."""
    errs: list[FieldError] = []
    if not resources:
        errs.append(e.required(path))
    with_wild_sub: set[str] = set()  # x/*
    with_wild_res: set[str] = set()  # */x
    double = single = plain = False
    for i, res_sub in enumerate(resources):
        if not res_sub:
            errs.append(e.required(f"{path}[{i}]"))
            continue
        res_sub = str(res_sub)
        double = double or res_sub == "*/*"
        single = single or res_sub == "*"
        if "/" not in res_sub:
            plain = res_sub != "*"  # kube's: the last plain entry decides
            continue
        res, sub = res_sub.split("/", 1)
        if res in with_wild_sub:
            errs.append(e.invalid(f"{path}[{i}]", res_sub, f"if '{res}/*' is present, must not specify {res_sub}"))
        if sub in with_wild_res:
            errs.append(e.invalid(f"{path}[{i}]", res_sub, f"if '*/{sub}' is present, must not specify {res_sub}"))
        if sub == "*":
            with_wild_sub.add(res)
        if res == "*":
            with_wild_res.add(sub)
    if len(resources) > 1 and double:
        errs.append(invalid_slice(path, resources, "if '*/*' is present, must not specify other resources"))
    if single and plain:
        errs.append(invalid_slice(path, resources, "if '*' is present, must not specify other resources without subresources"))
    return errs


def validate_rule(rule: Any, path: str, *, named: bool = False) -> list[FieldError]:
    """A rule's operations, groups, versions, resources and scope (and, ``named``, its
    resourceNames: a policy's NamedRuleWithOperations)."""
    if not isinstance(rule, dict):
        return [e.invalid(path, rule, "must be an object")]
    errs: list[FieldError] = []
    if named:
        names: set[str] = set()
        for i, n in enumerate(as_list(rule.get("resourceNames"))):
            why = path_segment_error(str(n))
            if why:
                errs.append(e.invalid(f"{path}.resourceNames[{i}]", n, why))
            if n in names:
                errs.append(e.duplicate(f"{path}.resourceNames[{i}]", n))
            names.add(str(n))
    ops = as_list(rule.get("operations"))
    if not ops:
        errs.append(e.required(f"{path}.operations"))
    if _wildcard_with_others(ops):
        errs.append(invalid_slice(f"{path}.operations", ops, "if '*' is present, must not specify other operations",
                                  "admissionregistration.OperationType"))
    for i, op in enumerate(ops):
        if op not in OPERATIONS:
            errs.append(e.not_supported(f"{path}.operations[{i}]", op, list(OPERATIONS)))
    groups = as_list(rule.get("apiGroups"))
    if not groups:
        errs.append(e.required(f"{path}.apiGroups"))
    if _wildcard_with_others(groups):
        errs.append(invalid_slice(f"{path}.apiGroups", groups, "if '*' is present, must not specify other API groups"))
    versions = as_list(rule.get("apiVersions"))
    if not versions:
        errs.append(e.required(f"{path}.apiVersions"))
    if _wildcard_with_others(versions):
        errs.append(invalid_slice(f"{path}.apiVersions", versions, "if '*' is present, must not specify other API versions"))
    errs += [e.required(f"{path}.apiVersions[{i}]") for i, v in enumerate(versions) if not v]
    errs += validate_resources(as_list(rule.get("resources")), f"{path}.resources")
    scope = rule.get("scope")
    if scope is not None and scope not in SCOPES:
        errs.append(e.not_supported(f"{path}.scope", scope, list(SCOPES)))
    return errs
