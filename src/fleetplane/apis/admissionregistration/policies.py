"""ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding (``admissionregistration.k8s.io/v1``).

Cluster-scoped, one set per logical cluster. Defaults and validation are kube's
(``pkg/apis/admissionregistration/v1/defaults.go``, ``validation/validation.go``), CEL
expressions compiled in the admission environment (``pipeline/admission/policies_cel``), so a
policy that does not compile is refused with kube's ``compilation failed: ...`` field error.
The policy's status (``observedGeneration``, ``typeChecking``) is what kube's type-checking
controller writes; here it is computed as the policy is written (as a CRD's conditions are), by
the checker the hub installs (``PolicyStrategy.type_checker``), whenever ``generation`` moved past
``observedGeneration``. The admission plugin acting on these objects is
``pipeline/admission/policies.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ...apimachinery import errors as e
from ...apimachinery.errors import FieldError
from ...apimachinery.labels import LabelSelector
from ...apimachinery.validation import (
    dns1035_label_errors,
    dns1123_subdomain_error,
    path_segment_error,
    qualified_name_error,
    validate_label_selector,
)
from ...pipeline.admission.policies_cel import compile_admission, is_cel_identifier
from ...registry import printers as pr
from ...registry.printers import AGE, NAME, Clock, Column, Printer
from ...registry.types import ResourceType, Strategy
from ...registry.validation import validate_object_meta
from .rules import (
    GROUP,
    MAX_MATCH_CONDITIONS,
    VERSION,
    as_list,
    invalid_slice,
    validate_rule,
)

FAIL, IGNORE = "Fail", "Ignore"
EXACT, EQUIVALENT = "Exact", "Equivalent"
DENY, WARN, AUDIT = "Deny", "Warn", "Audit"
ALLOW_ACTION, DENY_ACTION = "Allow", "Deny"
FAILURE_POLICIES = [FAIL, IGNORE]
MATCH_POLICIES = [EQUIVALENT, EXACT]
REASONS = ["Forbidden", "Invalid", "RequestEntityTooLarge"]
VALIDATION_ACTIONS = [AUDIT, DENY, WARN]
MAX_AUDIT_ANNOTATIONS = 20
MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION = 5 * 1024
_RX_NEWLINES = re.compile(r"[\n\r]+")

#: (policy, cluster) -> status.typeChecking.expressionWarnings
TypeChecker = Callable[[dict[str, Any], str], list[dict[str, str]]]


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}



# -- defaults --------------------------------------------------------------------------------


def default_match_resources(mr: Any) -> None:
    """SetDefaults_MatchResources, and each rule's scope ``*`` (SetDefaults_Rule)."""
    if not isinstance(mr, dict):
        return
    mr.setdefault("matchPolicy", EQUIVALENT)
    if mr.get("namespaceSelector") is None:
        mr["namespaceSelector"] = {}
    if mr.get("objectSelector") is None:
        mr["objectSelector"] = {}
    for key in ("resourceRules", "excludeResourceRules"):
        for rule in as_list(mr.get(key)):
            if isinstance(rule, dict) and rule.get("scope") is None:
                rule["scope"] = "*"


def default_policy(obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("failurePolicy", FAIL)
    default_match_resources(spec.get("matchConstraints"))


def default_binding(obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    ref = spec.get("paramRef")
    if isinstance(ref, dict) and not ref.get("parameterNotFoundAction"):
        ref["parameterNotFoundAction"] = DENY_ACTION
    default_match_resources(spec.get("matchResources"))


# -- validation -------------------------------------------------------------------------------


def validate_match_resources(mr: Any, path: str) -> list[FieldError]:
    """validateMatchResources (after defaulting, so the selectors and matchPolicy are set)."""
    if mr is None:
        return []
    if not isinstance(mr, dict):
        return [e.invalid(path, mr, "must be an object")]
    errs: list[FieldError] = []
    policy = mr.get("matchPolicy")
    if policy is None:
        errs.append(e.required(f"{path}.matchPolicy"))
    elif policy not in MATCH_POLICIES:
        errs.append(e.not_supported(f"{path}.matchPolicy", policy, MATCH_POLICIES))
    for key in ("namespaceSelector", "objectSelector"):
        if mr.get(key) is None:
            errs.append(e.required(f"{path}.{key}"))
        else:
            errs += validate_label_selector(mr[key], f"{path}.{key}")
    for key in ("resourceRules", "excludeResourceRules"):
        for i, rule in enumerate(as_list(mr.get(key))):
            errs += validate_rule(rule, f"{path}.{key}[{i}]", named=True)
    return errs


def _validate_param_kind(pk: Any, path: str) -> list[FieldError]:
    if not isinstance(pk, dict):
        return [e.invalid(path, pk, "must be an object")]
    errs: list[FieldError] = []
    api_version = str(pk.get("apiVersion") or "")
    if not api_version:
        errs.append(e.required(f"{path}.apiVersion"))
    elif api_version.count("/") > 1:
        errs.append(e.invalid(f"{path}.apiVersion", api_version, f"unexpected GroupVersion string: {api_version}"))
    elif api_version != "/":
        group, _, version = api_version.rpartition("/")
        if group and (why := dns1123_subdomain_error(group)):
            errs.append(e.invalid(f"{path}.apiVersion", group, why))
        if not version:
            errs.append(e.invalid(f"{path}.apiVersion", api_version, "version must be specified"))
        elif msgs := dns1035_label_errors(version):
            errs.append(e.invalid(f"{path}.apiVersion", version, ",".join(msgs)))
    kind = str(pk.get("kind") or "")
    if not kind:
        errs.append(e.required(f"{path}.kind"))
    elif msgs := dns1035_label_errors(kind.lower()):
        errs.append(e.invalid(f"{path}.kind", kind, "may have mixed case, but should otherwise match: " + ",".join(msgs)))
    return errs


def _compile_error(path: str, source: str, **env: Any) -> list[FieldError]:
    compiled = compile_admission(source, **env)
    return [e.invalid(path, source, compiled.error)] if compiled.error else []


def validate_policy(obj: dict[str, Any]) -> list[FieldError]:
    """ValidateValidatingAdmissionPolicy, kube's messages and paths."""
    errs = validate_object_meta(obj, namespaced=False)
    spec = _spec(obj)
    has_params = spec.get("paramKind") is not None
    fp = spec.get("failurePolicy")
    if fp is None:
        errs.append(e.required("spec.failurePolicy"))
    elif fp not in FAILURE_POLICIES:
        errs.append(e.not_supported("spec.failurePolicy", fp, FAILURE_POLICIES))
    if has_params:
        errs += _validate_param_kind(spec["paramKind"], "spec.paramKind")
    mc = spec.get("matchConstraints")
    if mc is None:
        errs.append(e.required("spec.matchConstraints"))
    else:
        errs += validate_match_resources(mc, "spec.matchConstraints")
        if isinstance(mc, dict) and not as_list(mc.get("resourceRules")):
            errs.append(e.required("spec.matchConstraints.resourceRules"))
    conditions = as_list(spec.get("matchConditions"))
    if len(conditions) > MAX_MATCH_CONDITIONS:
        errs.append(FieldError("FieldValueTooMany", "spec.matchConditions",
                               f"must have at most {MAX_MATCH_CONDITIONS} items", len(conditions), True))
    names: set[str] = set()
    for i, c in enumerate(conditions):
        p = f"spec.matchConditions[{i}]"
        c = c if isinstance(c, dict) else {}
        expr = str(c.get("expression") or "")
        if not expr.strip():
            errs.append(e.required(f"{p}.expression"))
        else:
            errs += _compile_error(f"{p}.expression", expr.strip(), params=has_params, authorizer=True)
        name = str(c.get("name") or "")
        if not name:
            errs.append(e.required(f"{p}.name"))
        else:
            if why := qualified_name_error(name):
                errs.append(e.invalid(f"{p}.name", name, why))
            if name in names:
                errs.append(e.duplicate(f"{p}.name", name))
            names.add(name)
    known: list[str] = []
    for i, v in enumerate(as_list(spec.get("variables"))):
        p = f"spec.variables[{i}]"
        v = v if isinstance(v, dict) else {}
        name, expr = str(v.get("name") or ""), str(v.get("expression") or "")
        if not name.strip():
            errs.append(e.required(f"{p}.name", "name is not specified"))
        elif not is_cel_identifier(name):
            errs.append(e.invalid(f"{p}.name", name, "name is not a valid CEL identifier"))
        if not expr.strip():
            errs.append(e.required(f"{p}.expression", "expression is not specified"))
        else:
            errs += _compile_error(f"{p}.expression", expr, params=has_params, authorizer=True, variables=tuple(known))
        known.append(name)
    variables = tuple(known)
    validations = as_list(spec.get("validations"))
    annotations = as_list(spec.get("auditAnnotations"))
    if not validations and not annotations:
        msg = "validations or auditAnnotations must contain at least one item"
        return errs + [e.required("spec.validations", msg), e.required("spec.auditAnnotations", msg)]
    for i, v in enumerate(validations):
        p = f"spec.validations[{i}]"
        v = v if isinstance(v, dict) else {}
        expr, msg, mexpr = str(v.get("expression") or ""), str(v.get("message") or ""), str(v.get("messageExpression") or "")
        if not expr.strip():
            errs.append(e.required(f"{p}.expression", "expression is not specified"))
        else:
            errs += _compile_error(f"{p}.expression", expr, params=has_params, authorizer=True, variables=variables)
        if mexpr and not mexpr.strip():
            errs.append(e.invalid(f"{p}.messageExpression", mexpr, "must be non-empty if specified"))
        elif mexpr.strip():
            errs += _compile_error(f"{p}.messageExpression", mexpr, params=has_params, authorizer=False, variables=variables)
        if msg and not msg.strip():
            errs.append(e.invalid(f"{p}.message", msg, "message must be non-empty if specified"))
        elif _RX_NEWLINES.search(msg.strip()):
            errs.append(e.invalid(f"{p}.message", msg, "message must not contain line breaks"))
        reason = v.get("reason")
        if reason is not None and reason not in REASONS:
            errs.append(e.not_supported(f"{p}.reason", reason, REASONS))
    if len(annotations) > MAX_AUDIT_ANNOTATIONS:
        errs.append(e.invalid("spec.auditAnnotations", annotations, f"must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations"))
    policy_name = str((obj.get("metadata") or {}).get("name") or "")
    keys: set[str] = set()
    for i, a in enumerate(annotations):
        p = f"spec.auditAnnotations[{i}]"
        a = a if isinstance(a, dict) else {}
        key, vexpr = str(a.get("key") or ""), str(a.get("valueExpression") or "")
        if policy_name:
            if why := qualified_name_error(f"{policy_name}/{key}"):
                errs.append(e.invalid(f"{p}.key", f"{policy_name}/{key}", why))
        else:
            errs.append(e.invalid(f"{p}.key", key, "requires metadata.name be non-empty"))
        trimmed = vexpr.strip()
        if not trimmed:
            errs.append(e.required(f"{p}.valueExpression", "valueExpression is not specified"))
        elif len(trimmed) > MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION:
            errs.append(e.required(f"{p}.valueExpression", f"must not exceed {MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION} bytes in length"))
        else:
            compiled = compile_admission(trimmed, params=has_params, authorizer=True, variables=variables)
            if compiled.error:
                errs.append(e.invalid(f"{p}.valueExpression", vexpr, compiled.error))
        if key in keys:
            errs.append(e.duplicate(f"{p}.key", key))
        keys.add(key)
    return errs


def validate_policy_status(obj: dict[str, Any]) -> list[FieldError]:
    """validateValidatingAdmissionPolicyStatus: each expression warning names a field and says something."""
    errs: list[FieldError] = []
    status = obj.get("status") if isinstance(obj.get("status"), dict) else {}
    tc = (status or {}).get("typeChecking")
    for i, w in enumerate(as_list((tc or {}).get("expressionWarnings") if isinstance(tc, dict) else None)):
        w = w if isinstance(w, dict) else {}
        if not w.get("warning"):
            errs.append(e.required(f"status.typeChecking.expressionWarnings[{i}].warning"))
        if not str(w.get("fieldRef") or "").strip():
            errs.append(e.required(f"status.typeChecking.expressionWarnings[{i}].fieldRef"))
    return errs


def validate_binding(obj: dict[str, Any]) -> list[FieldError]:
    """ValidateValidatingAdmissionPolicyBinding (kube's ``matchResouces`` path typo included)."""
    errs = validate_object_meta(obj, namespaced=False)
    spec = _spec(obj)
    name = str(spec.get("policyName") or "")
    if not name:
        errs.append(e.required("spec.policyName"))
    else:
        why = path_segment_error(name) or dns1123_subdomain_error(name)
        if why:
            errs.append(e.invalid("spec.policyName", name, why))
    ref = spec.get("paramRef")
    if ref is not None:
        ref = ref if isinstance(ref, dict) else {}
        ref_name, selector = str(ref.get("name") or ""), ref.get("selector")
        if ref_name:
            if why := path_segment_error(ref_name):
                errs.append(e.invalid("spec.paramRef.name", ref_name, why))
            if selector is not None:
                errs.append(e.forbidden("spec.paramRef.name", "name and selector are mutually exclusive"))
        if selector is not None:
            errs += validate_label_selector(selector, "spec.paramRef.selector")
            if ref_name:
                errs.append(e.forbidden("spec.paramRef.selector", "name and selector are mutually exclusive"))
        if not ref_name and selector is None:
            errs.append(e.required("spec.paramRef", "one of name or selector must be specified"))
        action = ref.get("parameterNotFoundAction")
        if not action:
            errs.append(e.required("spec.paramRef.parameterNotFoundAction"))
        elif action not in (DENY_ACTION, ALLOW_ACTION):
            errs.append(e.not_supported("spec.paramRef.parameterNotFoundAction", action, [DENY_ACTION, ALLOW_ACTION]))
    errs += validate_match_resources(spec.get("matchResources"), "spec.matchResouces")
    actions = as_list(spec.get("validationActions"))
    seen: set[str] = set()
    for i, a in enumerate(actions):
        if a not in VALIDATION_ACTIONS:
            errs.append(e.not_supported(f"spec.validationActions[{i}]", a, VALIDATION_ACTIONS))
        if a in seen:
            errs.append(e.duplicate(f"spec.validationActions[{i}]", a))
        seen.add(str(a))
    if DENY in seen and WARN in seen:
        errs.append(invalid_slice("spec.validationActions", actions, "must not contain both Deny and Warn (repeating "
                                   "the same validation failure information in the API response and headers serves no "
                                   "purpose)", "admissionregistration.ValidationAction"))
    if not seen:
        errs.append(e.required("spec.validationActions", "at least one validation action is required"))
    return errs


# -- strategies -------------------------------------------------------------------------------


class PolicyStrategy(Strategy):
    """Generation on spec changes, status through ``/status``; status computed on write."""

    status_subresource = True

    def __init__(self) -> None:
        #: installed by the hub (it needs the catalog's schemas); None: status left as it is
        self.type_checker: TypeChecker | None = None

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        default_policy(obj)

    def prepare_for_update(self, obj: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_for_update(obj, old)
        default_policy(obj)

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_policy(obj)

    def validate_update(self, obj: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        return validate_policy(obj) + validate_policy_status(obj)

    def before_write(self, obj: dict[str, Any], old: dict[str, Any] | None, cluster: str) -> None:
        """kube's type-checking controller, at write time: once per generation."""
        if self.type_checker is None:
            return
        generation = int((obj.get("metadata") or {}).get("generation") or 0)
        status = obj.get("status") if isinstance(obj.get("status"), dict) else {}
        if generation <= int((status or {}).get("observedGeneration") or 0):
            return
        warnings = self.type_checker(obj, cluster)
        new_status = dict(status or {})
        new_status["observedGeneration"] = generation
        new_status["typeChecking"] = {"expressionWarnings": warnings} if warnings else {}
        obj["status"] = new_status


class BindingStrategy(Strategy):
    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        default_binding(obj)

    def prepare_for_update(self, obj: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_for_update(obj, old)
        default_binding(obj)

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_binding(obj)


# -- printers (kube's printValidatingAdmissionPolicy / ...Binding) ----------------------------


def _policy_cells(o: dict[str, Any], clock: Clock) -> list[Any]:
    spec = _spec(o)
    pk = spec.get("paramKind")
    param_kind = f"{pk.get('apiVersion', '')}/{pk.get('kind', '')}" if isinstance(pk, dict) else "<unset>"
    return [pr.meta(o).get("name"), pr.length(spec.get("validations")), param_kind,
            clock.since(pr.meta(o).get("creationTimestamp"))]


def _param_ref_cell(ref: Any) -> str:
    if not isinstance(ref, dict):
        return "<unset>"
    if ref.get("name"):
        return f"{ref['namespace']}/{ref['name']}" if ref.get("namespace") else f"*/{ref['name']}"
    if isinstance(ref.get("selector"), dict):
        try:
            return str(LabelSelector.from_match(ref["selector"]))
        except e.StatusError:
            return "<error>"
    return "<unset>"


def _binding_cells(o: dict[str, Any], clock: Clock) -> list[Any]:
    spec = _spec(o)
    return [pr.meta(o).get("name"), pr.string(spec.get("policyName")), _param_ref_cell(spec.get("paramRef")),
            clock.since(pr.meta(o).get("creationTimestamp"))]


POLICY_PRINTER = Printer((NAME, Column("Validations", "integer", "Validations indicates the number of validation rules defined in this configuration"),
                          Column("ParamKind", description="ParamKind specifies the kind of resources used to parameterize this policy"), AGE),
                         _policy_cells)
BINDING_PRINTER = Printer((NAME, Column("PolicyName", description="PolicyName indicates the policy definition which the policy binding binded to"),
                           Column("ParamRef", description="ParamRef indicates the param resource which sets the configration param"), AGE),
                          _binding_cells)


def resource_types() -> list[ResourceType]:
    return [
        ResourceType(GROUP, VERSION, "ValidatingAdmissionPolicy", "validatingadmissionpolicies",
                     "validatingadmissionpolicy", False, PolicyStrategy(), categories=("api-extensions",),
                     subresources=("status",), printer=POLICY_PRINTER,
                     openapi_definition="io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicy"),
        ResourceType(GROUP, VERSION, "ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings",
                     "validatingadmissionpolicybinding", False, BindingStrategy(), categories=("api-extensions",),
                     printer=BINDING_PRINTER,
                     openapi_definition="io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBinding"),
    ]
