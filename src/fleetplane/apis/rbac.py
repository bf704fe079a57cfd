"""The RBAC group (``rbac.authorization.k8s.io/v1``): Roles, ClusterRoles and their bindings.

Strategies follow kube's ``pkg/registry/rbac/*/strategy.go`` and validation
``pkg/apis/rbac/validation``: core-like (no generation, unconditional PUT allowed), names only
need to be valid path segments (``system:discovery`` is a fine name), v1 defaulting of
``roleRef.apiGroup`` and subject ``apiGroup``, and an immutable ``roleRef``. Escalation checks are
not here but in the ``RBACEscalation`` admission plugin (:mod:`fleetplane.pipeline.authorization.escalation`).
The OpenAPI data has no RBAC definitions (kube's are not published by the hub), so their patch
metadata is ObjectMeta's only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..apimachinery import errors as e
from ..apimachinery.errors import FieldError
from ..apimachinery.validation import dns1123_subdomain_error, path_segment_error, validate_label_selector
from ..registry import printers as pr
from ..registry.printers import AGE, NAME, Clock, Column, Printer
from ..registry.types import ResourceType, Strategy
from ..registry.validation import validate_object_meta

RBAC_GROUP = "rbac.authorization.k8s.io"
_SUBJECT_KINDS = ["ServiceAccount", "User", "Group"]


def _rbac_name_error(name: str) -> str | None:
    """ValidateRBACName: only the path-segment rules, which validate_object_meta applies first."""
    return None


def _is_list(v: Any) -> bool:
    return isinstance(v, list)


def validate_policy_rule(rule: Any, namespaced: bool, path: str) -> list[FieldError]:
    """kube's ValidatePolicyRule."""
    if not isinstance(rule, Mapping):
        return [e.invalid(path, rule, "must be an object")]
    errs: list[FieldError] = []
    for key in ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs"):
        v = rule.get(key)
        if v is not None and not (_is_list(v) and all(isinstance(x, str) for x in v)):
            errs.append(e.invalid(f"{path}.{key}", v, "must be a list of strings"))
    if errs:
        return errs
    if not rule.get("verbs"):
        errs.append(e.required(f"{path}.verbs", "verbs must contain at least one value"))
    urls = rule.get("nonResourceURLs")
    if urls:
        if namespaced:
            errs.append(e.invalid(f"{path}.nonResourceURLs", urls, "namespaced rules cannot apply to non-resource URLs"))
        if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
            errs.append(e.invalid(f"{path}.nonResourceURLs", urls,
                                  "rules cannot apply to both regular resources and non-resource URLs"))
        return errs
    if not rule.get("apiGroups"):
        errs.append(e.required(f"{path}.apiGroups", "resource rules must supply at least one api group"))
    if not rule.get("resources"):
        errs.append(e.required(f"{path}.resources", "resource rules must supply at least one resource"))
    return errs


def _validate_rules(obj: Mapping, namespaced: bool) -> list[FieldError]:
    rules = obj.get("rules")
    if rules is None:
        return []
    if not _is_list(rules):
        return [e.invalid("rules", rules, "must be a list")]
    errs: list[FieldError] = []
    for i, r in enumerate(rules):
        errs += validate_policy_rule(r, namespaced, f"rules[{i}]")
    return errs


def validate_role_ref(ref: Any, kinds: tuple[str, ...]) -> list[FieldError]:
    ref = ref if isinstance(ref, Mapping) else {}
    errs: list[FieldError] = []
    group = ref.get("apiGroup") or ""
    if group != RBAC_GROUP:
        errs.append(e.not_supported("roleRef.apiGroup", group, [RBAC_GROUP]))
    kind = ref.get("kind") or ""
    if kind not in kinds:
        errs.append(e.not_supported("roleRef.kind", kind, list(kinds)))
    name = ref.get("name")
    if not name:
        errs.append(e.required("roleRef.name"))
    elif not isinstance(name, str):
        errs.append(e.invalid("roleRef.name", name, "must be a string"))
    else:
        why = path_segment_error(name)
        if why:
            errs.append(e.invalid("roleRef.name", name, why))
    return errs


def validate_subject(subject: Any, namespaced: bool, path: str) -> list[FieldError]:
    """kube's ValidateRoleBindingSubject."""
    if not isinstance(subject, Mapping):
        return [e.invalid(path, subject, "must be an object")]
    errs: list[FieldError] = []
    name = subject.get("name") or ""
    group = subject.get("apiGroup") or ""
    if not name:
        errs.append(e.required(f"{path}.name"))
    kind = subject.get("kind") or ""
    if kind == "ServiceAccount":
        if name:
            why = dns1123_subdomain_error(name) if isinstance(name, str) else "must be a string"
            if why:
                errs.append(e.invalid(f"{path}.name", name, why))
        if group:
            errs.append(e.not_supported(f"{path}.apiGroup", group, [""]))
        if not namespaced and not subject.get("namespace"):
            errs.append(e.required(f"{path}.namespace"))
    elif kind in ("User", "Group"):
        if group != RBAC_GROUP:
            errs.append(e.not_supported(f"{path}.apiGroup", group, [RBAC_GROUP]))
    else:
        errs.append(e.not_supported(f"{path}.kind", kind, _SUBJECT_KINDS))
    return errs


def _validate_subjects(obj: Mapping, namespaced: bool) -> list[FieldError]:
    subjects = obj.get("subjects")
    if subjects is None:
        return []
    if not _is_list(subjects):
        return [e.invalid("subjects", subjects, "must be a list")]
    errs: list[FieldError] = []
    for i, s in enumerate(subjects):
        errs += validate_subject(s, namespaced, f"subjects[{i}]")
    return errs


class RBACStrategy(Strategy):
    """What the four kinds share: core-like writes, path-segment names."""

    tracks_generation = False
    allow_unconditional_update = True
    namespaced = False

    def validate_meta(self, obj: dict) -> list[FieldError]:
        return validate_object_meta(obj, namespaced=self.namespaced, name_error=_rbac_name_error)


class RoleStrategy(RBACStrategy):
    namespaced = True

    def validate(self, obj: dict) -> list[FieldError]:
        return self.validate_meta(obj) + _validate_rules(obj, namespaced=True)


class ClusterRoleStrategy(RBACStrategy):
    def validate(self, obj: dict) -> list[FieldError]:
        errs = self.validate_meta(obj) + _validate_rules(obj, namespaced=False)
        agg = obj.get("aggregationRule")
        if agg is not None:
            selectors = agg.get("clusterRoleSelectors") if isinstance(agg, Mapping) else None
            if not selectors:
                errs.append(e.required("aggregationRule.clusterRoleSelectors",
                                       "at least one clusterRoleSelector required if aggregationRule is non-nil"))
            elif not _is_list(selectors):
                errs.append(e.invalid("aggregationRule.clusterRoleSelectors", selectors, "must be a list"))
            else:
                for i, sel in enumerate(selectors):
                    sel_path = f"aggregationRule.clusterRoleSelectors[{i}]"
                    sel_errs = validate_label_selector(sel, sel_path)
                    if sel_errs and isinstance(sel, Mapping) and _is_list(sel.get("matchExpressions") or []):
                        # requirements that do not parse: LabelSelectorAsSelector fails too, and kube
                        # reports that with the (nil) parsed selector
                        sel_errs.append(e.invalid(sel_path, None, "invalid label selector."))
                    errs += sel_errs
        return errs


def _default_binding(obj: dict) -> None:
    """v1 defaulting: roleRef.apiGroup and User/Group subjects' apiGroup."""
    ref = obj.get("roleRef")
    if isinstance(ref, dict) and not ref.get("apiGroup"):
        ref["apiGroup"] = RBAC_GROUP
    for s in obj.get("subjects") or []:
        if isinstance(s, dict) and not s.get("apiGroup") and s.get("kind") in ("User", "Group"):
            s["apiGroup"] = RBAC_GROUP


def _role_ref_value(ref: Any) -> dict:
    """The internal rbac.RoleRef as field.Invalid prints it (JSON of a struct without tags)."""
    ref = ref if isinstance(ref, Mapping) else {}
    return {"APIGroup": ref.get("apiGroup") or "", "Kind": ref.get("kind") or "", "Name": ref.get("name") or ""}


class _BindingStrategy(RBACStrategy):
    role_kinds: tuple[str, ...] = ("Role", "ClusterRole")

    def canonicalize(self, obj: dict) -> None:
        _default_binding(obj)

    def validate(self, obj: dict) -> list[FieldError]:
        return (self.validate_meta(obj) + validate_role_ref(obj.get("roleRef"), self.role_kinds)
                + _validate_subjects(obj, self.namespaced))

    def validate_update(self, obj: dict, old: dict) -> list[FieldError]:
        errs = self.validate(obj)
        if _role_ref_value(obj.get("roleRef")) != _role_ref_value(old.get("roleRef")):
            errs.append(e.invalid("roleRef", _role_ref_value(obj.get("roleRef")), "cannot change roleRef"))
        return errs


class RoleBindingStrategy(_BindingStrategy):
    namespaced = True


class ClusterRoleBindingStrategy(_BindingStrategy):
    role_kinds = ("ClusterRole",)


def _binding_cells(o: dict, clock: Clock) -> list:
    """printRoleBinding / printClusterRoleBinding, wide columns from rbac.SubjectsStrings."""
    ref: dict = o["roleRef"] if isinstance(o.get("roleRef"), dict) else {}
    users: list[str] = []
    groups: list[str] = []
    sas: list[str] = []
    for s in o.get("subjects") or []:
        if not isinstance(s, dict):
            continue
        kind, name = s.get("kind"), pr.string(s.get("name"))
        if kind == "ServiceAccount":
            sas.append(f"{pr.string(s.get('namespace'))}/{name}")
        elif kind == "User":
            users.append(name)
        elif kind == "Group":
            groups.append(name)
    return [pr.meta(o).get("name"), f"{pr.string(ref.get('kind'))}/{pr.string(ref.get('name'))}",
            clock.since(pr.meta(o).get("creationTimestamp")), ", ".join(users), ", ".join(groups), ", ".join(sas)]


def _binding_columns(kind: str, role_doc: str) -> list[Column]:
    # kube describes these from rbac/v1beta1 (the schema data has no RBAC definitions)
    return [NAME, Column("Role", description=role_doc), AGE,
            Column("Users", priority=1, description=f"Users in the {kind}"),
            Column("Groups", priority=1, description=f"Groups in the {kind}"),
            Column("ServiceAccounts", priority=1, description=f"ServiceAccounts in the {kind}")]


def _printer(kind: str, role_doc: str) -> Printer:
    return Printer(tuple(_binding_columns(kind, role_doc)), _binding_cells)


def resource_types() -> list[ResourceType]:
    """Roles and ClusterRoles have no printer in kube: the default table (Name, Created At)."""
    return [
        ResourceType(RBAC_GROUP, "v1", "Role", "roles", "role", True, RoleStrategy(),
                     protobuf="k8s.io.api.rbac.v1.Role"),
        ResourceType(RBAC_GROUP, "v1", "ClusterRole", "clusterroles", "clusterrole", False, ClusterRoleStrategy(),
                     protobuf="k8s.io.api.rbac.v1.ClusterRole"),
        ResourceType(RBAC_GROUP, "v1", "RoleBinding", "rolebindings", "rolebinding", True, RoleBindingStrategy(),
                     printer=_printer("roleBinding", "RoleRef can reference a Role in the current namespace or a "
                                      "ClusterRole in the global namespace. If the RoleRef cannot be resolved, the "
                                      "Authorizer must return an error."),
                     protobuf="k8s.io.api.rbac.v1.RoleBinding"),
        ResourceType(RBAC_GROUP, "v1", "ClusterRoleBinding", "clusterrolebindings", "clusterrolebinding", False,
                     ClusterRoleBindingStrategy(),
                     printer=_printer("clusterRoleBinding", "RoleRef can only reference a ClusterRole in the global "
                                      "namespace. If the RoleRef cannot be resolved, the Authorizer must return an error."),
                     protobuf="k8s.io.api.rbac.v1.ClusterRoleBinding"),
    ]
