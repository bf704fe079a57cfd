"""The ValidatingAdmissionPolicy admission plugin (kube's ``admission/plugin/policy/validating``).

Every write of a logical cluster is checked against that cluster's ValidatingAdmissionPolicies and
their bindings, in kube's order and words:

1. the policy's ``matchConstraints`` (namespace and object selectors, excluded rules, resource
   rules with ``matchPolicy: Equivalent`` across a resource's served versions) pick the requests;
   a policy that cannot be used (its ``paramKind`` is not served) is a configuration error;
2. each binding of it that matches (its own ``matchResources``) finds its params (``paramRef``:
   by name or selector, in the request's namespace or ``paramRef.namespace``;
   ``parameterNotFoundAction``), and for each param the ``matchConditions`` decide whether the
   validations run; the ``validations`` and ``auditAnnotations`` are evaluated with ``object``,
   ``oldObject``, ``request``, ``params``, ``namespaceObject``, ``variables`` and ``authorizer``;
3. a failed validation is acted on by the binding's ``validationActions``: ``Deny`` (the request
   fails with the validation's reason, 422 ``Invalid`` by default), ``Warn`` (a ``Warning``
   header), ``Audit`` (the ``validation.policy.admission.k8s.io/validation_failure`` audit
   annotation); an expression that fails to evaluate, and a configuration error, follow the
   policy's ``failurePolicy`` (``Fail`` denies, ``Ignore`` lets the request through).

Policies and bindings themselves are never subject to policies (kube exempts them). Compiled
policies are cached per object revision, so a request pays only for evaluation.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson
from prometheus_client import CollectorRegistry, Counter, Histogram

from ...apimachinery.errors import FieldError, StatusError
from ...apimachinery.labels import LabelSelector
from ..authorization.attributes import Attributes, Result
from .chain import CREATE, DELETE, UPDATE, BasePlugin, Request
from .policies_cel import (
    AUTHORIZER,
    NAMESPACE_OBJECT,
    OBJECT,
    OLD_OBJECT,
    PARAMS,
    REQUEST,
    Activation,
    AuthorizeFn,
    Compiled,
    Environment,
    EvaluationError,
    authorizer_value,
    compile_admission,
)

GROUP = "admissionregistration.k8s.io"
EXEMPT = frozenset({"validatingadmissionpolicies", "validatingadmissionpolicybindings",
                    "mutatingadmissionpolicies", "mutatingadmissionpolicybindings"})
VALIDATION_FAILURE_ANNOTATION = "validation.policy.admission.k8s.io/validation_failure"
MAX_VALIDATION_FAILURES = 50
MAX_AUDIT_ANNOTATION_VALUE_LENGTH = 10 * 1024
MAX_MESSAGE_BYTES = 5 * 1024
_REASON_CODES = {"Forbidden": 403, "Unauthorized": 401, "Invalid": 422, "RequestEntityTooLarge": 413}


@dataclass(frozen=True)
class ServedType:
    """What the plugin needs of a served resource type."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool


class PolicySource(Protocol):
    """Where the plugin reads a logical cluster's state (the watch cache and catalog)."""

    def policies(self, cluster: str) -> Iterable[tuple[int, dict[str, Any]]]:
        """(revision, object) of every ValidatingAdmissionPolicy."""
        ...

    def bindings(self, cluster: str) -> Iterable[tuple[int, dict[str, Any]]]:
        ...

    def namespace(self, cluster: str, name: str) -> dict[str, Any] | None:
        ...

    def served_kind(self, cluster: str, api_version: str, kind: str) -> ServedType | None:
        ...

    def versions_of(self, cluster: str, group: str, plural: str) -> list[ServedType]:
        """The served versions of one resource (matchPolicy Equivalent)."""
        ...

    def get(self, cluster: str, served: ServedType, namespace: str, name: str) -> dict[str, Any] | None:
        ...

    def list(self, cluster: str, served: ServedType, namespace: str) -> list[dict[str, Any]]:
        ...


@dataclass
class _Validation:
    expression: Compiled
    message: str
    message_expression: Compiled | None
    reason: str


@dataclass
class CompiledPolicy:
    """A policy's expressions, compiled once per revision of the object."""

    obj: dict[str, Any]
    variables: dict[str, Compiled] = field(default_factory=dict)
    match_conditions: list[tuple[str, Compiled]] = field(default_factory=list)
    validations: list[_Validation] = field(default_factory=list)
    audit_annotations: list[tuple[str, Compiled]] = field(default_factory=list)
    environment: Environment | None = None

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def spec(self) -> dict[str, Any]:
        spec = self.obj.get("spec")
        return spec if isinstance(spec, dict) else {}

    @property
    def failure_policy(self) -> str:
        return str(self.spec.get("failurePolicy") or "Fail")


def compile_policy(obj: dict[str, Any]) -> CompiledPolicy:
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    params = spec.get("paramKind") is not None
    out = CompiledPolicy(obj)
    names: list[str] = []
    for v in spec.get("variables") or []:
        name = str(v.get("name") or "")
        out.variables[name] = compile_admission(str(v.get("expression") or ""), params=params, authorizer=True,
                                                variables=tuple(names))
        names.append(name)
    known = tuple(names)
    for c in spec.get("matchConditions") or []:
        out.match_conditions.append((str(c.get("name") or ""), compile_admission(
            str(c.get("expression") or ""), params=params, authorizer=True, variables=known)))
    for v in spec.get("validations") or []:
        mexpr = str(v.get("messageExpression") or "")
        out.validations.append(_Validation(
            compile_admission(str(v.get("expression") or ""), params=params, authorizer=True, variables=known),
            str(v.get("message") or ""),
            compile_admission(mexpr, params=params, authorizer=False, variables=known) if mexpr else None,
            str(v.get("reason") or "Invalid")))
    for a in spec.get("auditAnnotations") or []:
        out.audit_annotations.append((str(a.get("key") or ""), compile_admission(
            str(a.get("valueExpression") or ""), params=params, authorizer=True, variables=known)))
    out.environment = Environment([
        *out.variables.values(), *(c for _, c in out.match_conditions), *(c for _, c in out.audit_annotations),
        *(v.expression for v in out.validations),
        *(v.message_expression for v in out.validations if v.message_expression is not None)])
    return out


class _ConfigError(Exception):
    pass


@dataclass
class _Denial:
    policy: str
    binding: str | None
    message: str
    reason: str = "Invalid"


def _rule_matches(rule: dict[str, Any], req: Request, group: str, version: str, resource: str) -> bool:
    """kube's rules.Matcher: scope, operation, group, version, resource/subresource, names."""
    is_namespace = not group and resource == "namespaces"
    scope = rule.get("scope") or "*"
    if scope == "Namespaced" and (is_namespace or not req.namespace):
        return False
    if scope == "Cluster" and not (is_namespace or not req.namespace):
        return False
    ops = rule.get("operations") or []
    if "*" not in ops and req.operation not in ops:
        return False
    groups, versions = rule.get("apiGroups") or [], rule.get("apiVersions") or []
    if "*" not in groups and group not in groups:
        return False
    if "*" not in versions and version not in versions:
        return False
    for res_sub in rule.get("resources") or []:
        res, _, sub = str(res_sub).partition("/")
        if (res == "*" or res == resource) and (sub == "*" or sub == req.subresource):
            break
    else:
        return False
    names = rule.get("resourceNames") or []
    return not names or req.name in names


def _error_type(message: str) -> str:
    """kube's ErrorType of a failed decision (its metrics' ``error_type`` label)."""
    return "compile_error" if message.startswith("compilation") else "invalid_error"


class PolicyMetrics:
    """kube's ValidatingAdmissionPolicy metrics, in an app's own registry: a decision that denied,
    warned or audited (and an evaluation error ignored by ``failurePolicy: Ignore``, as ``allow``)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        labels = ["policy", "policy_binding", "error_type", "enforcement_action"]
        self.checks = Counter("apiserver_validating_admission_policy_check_total",
                              "Validation admission policy check total, labeled by policy and further identified by "
                              "binding and enforcement action taken.", labels, registry=registry)
        self.latency = Histogram("apiserver_validating_admission_policy_check_duration_seconds",
                                 "Validation admission latency for individual validation expressions in seconds, "
                                 "labeled by policy and further including binding and enforcement action taken.",
                                 labels, buckets=(0.0000005, 0.001, 0.01, 0.1, 1.0), registry=registry)

    def observe(self, policy: str, binding: str, error_type: str, action: str, seconds: float) -> None:
        self.checks.labels(policy, binding, error_type, action).inc()
        self.latency.labels(policy, binding, error_type, action).observe(seconds)


class ValidatingAdmissionPolicyPlugin(BasePlugin):
    name = "ValidatingAdmissionPolicy"
    operations = frozenset({CREATE, UPDATE, DELETE})

    def __init__(self, source: PolicySource, authorize: AuthorizeFn, metrics: PolicyMetrics | None = None) -> None:
        self.source = source
        self.authorize = authorize
        #: kube's apiserver_validating_admission_policy_check_* (set once the app's registry exists)
        self.metrics = metrics
        self._compiled: dict[tuple[str, str], tuple[int, CompiledPolicy]] = {}

    def _policy(self, cluster: str, revision: int, obj: dict[str, Any], live: Iterable[tuple[int, dict[str, Any]]]) -> CompiledPolicy:
        key = (cluster, str(obj["metadata"]["name"]))
        hit = self._compiled.get(key)
        if hit is not None and hit[0] == revision:
            return hit[1]
        # a policy changed: forget the cluster's deleted ones too (misses are rare, hits are free)
        names = {str(p["metadata"]["name"]) for _, p in live}
        for stale in [k for k in self._compiled if k[0] == cluster and k[1] not in names]:
            del self._compiled[stale]
        compiled = compile_policy(obj)
        self._compiled[key] = (revision, compiled)
        return compiled

    # -- matching -------------------------------------------------------------------------

    def _namespace_name(self, req: Request) -> str:
        if not req.group and req.resource == "namespaces":
            return req.name or str(((req.obj or req.old or {}).get("metadata") or {}).get("name") or "")
        return req.namespace

    def _namespace_labels(self, req: Request) -> dict[str, str]:
        if not req.group and req.resource == "namespaces" and not req.subresource and req.operation in (CREATE, UPDATE):
            return dict(((req.obj or {}).get("metadata") or {}).get("labels") or {})
        ns = self.source.namespace(req.cluster, self._namespace_name(req))
        if ns is None:
            raise _ConfigError(f'namespaces "{self._namespace_name(req)}" not found')
        return dict((ns.get("metadata") or {}).get("labels") or {})

    def _matches(self, mr: dict[str, Any], req: Request, require_rules: bool) -> ServedType | None:
        """kube's matching.Matcher.Matches: the (maybe equivalent) type matched, or None. A
        namespace that cannot be found matters only if the rest matches (a configuration error)."""
        obj_selector = LabelSelector.from_match(mr.get("objectSelector") or {})
        if not obj_selector.empty():
            labels = [((o or {}).get("metadata") or {}).get("labels") for o in (req.obj, req.old) if o is not None]
            if not any(obj_selector.matches(lab or {}) for lab in labels):
                return None
        rt = req.rt
        policy = mr.get("matchPolicy") or "Equivalent"
        if self._rules_match(mr.get("excludeResourceRules") or [], req, policy) is not None:
            return None
        rules = mr.get("resourceRules") or []
        if not rules and not require_rules:
            matched: ServedType | None = ServedType(rt.group, rt.version, rt.kind, rt.plural, rt.namespaced)
        else:
            matched = self._rules_match(rules, req, policy)
        if matched is None:
            return None
        if self._namespace_name(req) or (not req.group and req.resource == "namespaces"):
            selector = LabelSelector.from_match(mr.get("namespaceSelector") or {})
            if not selector.empty() and not selector.matches(self._namespace_labels(req)):
                return None
        return matched

    def _rules_match(self, rules: list[dict[str, Any]], req: Request, policy: str) -> ServedType | None:
        rt = req.rt
        for rule in rules:
            if _rule_matches(rule, req, rt.group, rt.version, rt.plural):
                return ServedType(rt.group, rt.version, rt.kind, rt.plural, rt.namespaced)
        if policy == "Exact":
            return None
        for other in self.source.versions_of(req.cluster, rt.group, rt.plural):
            if other.version == rt.version:
                continue
            for rule in rules:
                if _rule_matches(rule, req, other.group, other.version, other.plural):
                    return other
        return None

    # -- params ---------------------------------------------------------------------------

    def _params(self, cluster: str, served: ServedType | None, binding: dict[str, Any], req: Request) -> list[Any]:
        """generic.CollectParams: the param objects to validate with ([None] if none is used);
        ``served`` is the policy's paramKind (None: it has none)."""
        ref = (binding.get("spec") or {}).get("paramRef")
        if served is None or ref is None:
            return [None]
        namespace = ""
        if served.namespaced:
            namespace = ref.get("namespace") or req.namespace
            if not namespace:
                raise _ConfigError("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources")
        elif ref.get("namespace"):
            raise _ConfigError("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
        if ref.get("name"):
            found = self.source.get(cluster, served, namespace, str(ref["name"]))
            params: list[Any] = [found] if found is not None else []
        else:
            selector = LabelSelector.from_match(ref.get("selector") or {})
            params = [o for o in self.source.list(cluster, served, namespace)
                      if selector.matches((o.get("metadata") or {}).get("labels") or {})]
        if not params and ref.get("parameterNotFoundAction") == "Deny":
            raise _ConfigError("no params found for policy binding with `Deny` parameterNotFoundAction")
        return params

    # -- evaluation -----------------------------------------------------------------------

    def _activation(self, req: Request, policy: CompiledPolicy, matched: ServedType, params: Any,
                    namespace: dict[str, Any] | None) -> Activation:
        rt = req.rt
        user = req.user
        user_info: dict[str, Any] = {"username": user.name, "uid": user.uid, "groups": list(user.groups),
                                     "extra": {k: list(v) for k, v in user.extra.items()}} if user else {}
        obj, old = req.obj, req.old
        if matched.version != rt.version:  # an equivalent version: conversion is the apiVersion
            api_version = f"{matched.group}/{matched.version}" if matched.group else matched.version
            obj = {**obj, "apiVersion": api_version} if obj is not None else None
            old = {**old, "apiVersion": api_version} if old is not None else None
        name = req.name or str(((obj or old or {}).get("metadata") or {}).get("name") or "")
        request: dict[str, Any] = {
            "kind": {"group": matched.group, "version": matched.version, "kind": matched.kind},
            "resource": {"group": matched.group, "version": matched.version, "resource": matched.plural},
            "subResource": req.subresource,
            "requestKind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
            "requestResource": {"group": rt.group, "version": rt.version, "resource": rt.plural},
            "requestSubResource": req.subresource,
            "name": name,
            "namespace": req.namespace, "operation": req.operation, "userInfo": user_info,
            "dryRun": req.dry_run, "options": req.options or None,
        }
        values: dict[str, Any] = {OBJECT: obj, OLD_OBJECT: old, REQUEST: request, PARAMS: params,
                                  NAMESPACE_OBJECT: namespace,
                                  AUTHORIZER: authorizer_value(rt.group, rt.version, rt.plural, req.subresource,
                                                               req.namespace, name)}
        return Activation(values, policy.variables, authorize=self._authorize if user is not None else None,
                          user=user, cluster=req.cluster, environment=policy.environment)

    def _authorize(self, attrs: Attributes) -> Result:
        return self.authorize(attrs)

    def _namespace_object(self, req: Request) -> dict[str, Any] | None:
        """CreateNamespaceObject: the request's namespace (metadata, spec, status), none for
        cluster-scoped objects and Namespaces themselves."""
        if not req.namespace or (not req.group and req.resource == "namespaces"):
            return None
        ns = self.source.namespace(req.cluster, req.namespace)
        if ns is None:
            return None
        meta = ns.get("metadata") or {}
        keep = ("name", "generateName", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
                "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "finalizers")
        return {"metadata": {k: meta[k] for k in keep if k in meta}, "spec": ns.get("spec") or {},
                "status": ns.get("status") or {}}

    async def validate(self, req: Request) -> list[FieldError]:
        if req.group == GROUP and req.resource in EXEMPT:
            return []
        policies = sorted(self.source.policies(req.cluster), key=lambda p: p[1]["metadata"]["name"])
        if not policies:
            return []
        by_policy: dict[str, list[dict[str, Any]]] = {}
        for _, b in sorted(self.source.bindings(req.cluster), key=lambda p: p[1]["metadata"]["name"]):
            by_policy.setdefault(str((b.get("spec") or {}).get("policyName") or ""), []).append(b)
        denials: list[_Denial] = []
        failures: list[dict[str, Any]] = []
        namespace_object: Any = False  # looked up once, on first use
        for revision, obj in policies:
            bindings = by_policy.get(str(obj["metadata"]["name"]))
            if not bindings:
                continue
            policy = self._policy(req.cluster, revision, obj, policies)
            try:
                matched = self._matches(policy.spec.get("matchConstraints") or {}, req, require_rules=True)
            except _ConfigError as exc:
                self._config_error(denials, policy, None, str(exc))
                continue
            if matched is None:
                continue
            pk = policy.spec.get("paramKind")
            param_kind = None
            if pk is not None:
                param_kind = self.source.served_kind(req.cluster, str(pk.get("apiVersion") or ""), str(pk.get("kind") or ""))
                if param_kind is None:
                    self._config_error(denials, policy, None, "failed to find resource referenced by paramKind: "
                                       f"'{_gvk_string(str(pk.get('apiVersion') or ''), str(pk.get('kind') or ''))}'")
                    continue
            annotations: dict[str, list[str]] = {}
            for binding in bindings:
                bname = str(binding["metadata"]["name"])
                bspec = binding.get("spec") or {}
                mr = bspec.get("matchResources")
                try:
                    if mr is not None and self._matches(mr, req, require_rules=False) is None:
                        continue
                    params = self._params(req.cluster, param_kind, binding, req)
                except _ConfigError as exc:
                    self._config_error(denials, policy, bname, str(exc))
                    continue
                if namespace_object is False:
                    namespace_object = self._namespace_object(req)
                actions = bspec.get("validationActions") or []
                for param in params:
                    self._evaluate(policy, bname, actions, self._activation(req, policy, matched, param, namespace_object),
                                   denials, failures, annotations, req.warnings)
            for key, values in annotations.items():
                req.audit_annotations.setdefault(f"{policy.name}/{key}", ", ".join(values))
        if failures:
            req.audit_annotations[VALIDATION_FAILURE_ANNOTATION] = orjson.dumps(failures[:MAX_VALIDATION_FAILURES]).decode()
        if denials:
            raise self._denied(req, denials[0])
        return []

    def _config_error(self, denials: list[_Denial], policy: CompiledPolicy, binding: str | None, why: str) -> None:
        fp = policy.failure_policy
        if fp == "Ignore":
            return
        if fp != "Fail":
            denials.append(_Denial(policy.name, binding, f"unrecognized failure policy: '{fp}'"))
            return
        what = "binding" if binding is not None else "policy"
        denials.append(_Denial(policy.name, binding, f"failed to configure {what}: {why}"))

    def _evaluate(self, policy: CompiledPolicy, binding: str, actions: list[str], act: Activation,
                  denials: list[_Denial], failures: list[dict[str, Any]], annotations: dict[str, list[str]],
                  warnings: list[str]) -> None:
        fail_closed = policy.failure_policy != "Ignore"
        errors: list[str] = []
        for _name, condition in policy.match_conditions:
            try:
                result = act.evaluate(condition)
            except EvaluationError as exc:
                errors.append(str(exc))
                continue
            if result is False:
                return  # a condition not met: the validations do not apply
        if errors:  # kube's matchconditions: errors and no false condition follow failurePolicy
            if fail_closed:
                denials.append(_Denial(policy.name, binding, errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]"))
            return
        for index, v in enumerate(policy.validations):
            started = time.perf_counter()
            try:
                result = act.evaluate(v.expression)
                if result is not True and result is not False:
                    raise EvaluationError("cel expression must evaluate to a bool")
            except EvaluationError as exc:
                elapsed, error_type = time.perf_counter() - started, _error_type(str(exc))
                if fail_closed:
                    self._act(actions, policy, binding, index, str(exc), "Invalid", denials, failures, warnings,
                              elapsed, error_type)
                elif self.metrics is not None:
                    self.metrics.observe(policy.name, binding, error_type, "allow", elapsed)
                continue
            if result:
                continue
            self._act(actions, policy, binding, index, self._message(v, act), v.reason, denials, failures, warnings,
                      time.perf_counter() - started, "invalid_error")
        for key, value_expression in policy.audit_annotations:
            try:
                value = act.evaluate(value_expression)
            except EvaluationError as exc:
                if fail_closed:
                    denials.append(_Denial(policy.name, binding, str(exc)))
                continue
            if value is None:
                continue
            if not isinstance(value, str):
                if fail_closed:
                    denials.append(_Denial(policy.name, binding, f"valueExpression '{value_expression.source}' resulted in "
                                           f"unsupported return type: {_cel_type(value)}. Return type must be either string or null."))
                continue
            value = value.strip()[:MAX_AUDIT_ANNOTATION_VALUE_LENGTH]
            if value and value not in annotations.setdefault(key, []):
                annotations[key].append(value)

    @staticmethod
    def _message(v: _Validation, act: Activation) -> str:
        """messageExpression, else message, else ``failed expression: <expression>``."""
        if v.message_expression is not None:
            try:
                value = act.evaluate(v.message_expression)
            except EvaluationError:
                value = None
            if isinstance(value, str):
                value = value.strip()
                if value and "\n" not in value and len(value.encode()) <= MAX_MESSAGE_BYTES:
                    return value
        if v.message.strip():
            return v.message.strip()
        return f"failed expression: {v.expression.source.strip()}"

    def _act(self, actions: list[str], policy: CompiledPolicy, binding: str, index: int, message: str, reason: str,
             denials: list[_Denial], failures: list[dict[str, Any]], warnings: list[str], elapsed: float,
             error_type: str) -> None:
        for action in actions:
            if self.metrics is not None and action in ("Deny", "Audit", "Warn"):
                self.metrics.observe(policy.name, binding, error_type, action.lower(), elapsed)
            if action == "Deny":
                denials.append(_Denial(policy.name, binding, message, reason))
            elif action == "Audit":
                failures.append({"message": message, "policy": policy.name, "binding": binding,
                                 "expressionIndex": index, "validationActions": list(actions)})
            elif action == "Warn":
                warnings.append(f"Validation failed for ValidatingAdmissionPolicy '{policy.name}' with binding "
                                    f"'{binding}': {message}")

    @staticmethod
    def _denied(req: Request, d: _Denial) -> StatusError:
        """admission.NewForbidden with the validation's reason and code (kube's dispatcher)."""
        if d.binding is not None:
            message = f"ValidatingAdmissionPolicy '{d.policy}' with binding '{d.binding}' denied request: {d.message}"
        else:
            message = f"ValidatingAdmissionPolicy '{d.policy}' denied request: {d.message}"
        name = req.name or str(((req.obj or req.old or {}).get("metadata") or {}).get("name") or "")
        resource = f"{req.resource}.{req.group}" if req.group else req.resource
        text = f'{resource} "{name}" is forbidden: {message}' if name else f"{resource} is forbidden: {message}"
        details: dict[str, Any] = {"name": name, "group": req.group, "kind": req.resource, "causes": [{"message": message}]}
        return StatusError(_REASON_CODES.get(d.reason, 422), d.reason,
                           text, {k: v for k, v in details.items() if v})


def _gvk_string(api_version: str, kind: str) -> str:
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={kind}"


def _cel_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "map"
    return type(value).__name__
