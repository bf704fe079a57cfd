"""ValidatingAdmissionPolicy in process: kube's validation messages, matching (rules, scopes,
excluded rules, matchPolicy Equivalent, selectors), params by selector, the CEL environment
(lazy variables, the authorizer library, messages), type checking, and the Tables."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from fleetplane.apimachinery.errors import StatusError
from fleetplane.apis.admissionregistration import policies as api
from fleetplane.apis.core import resource_types as core_types
from fleetplane.pipeline.admission.chain import CREATE, DELETE, UPDATE, Request
from fleetplane.pipeline.admission.policies import ServedType, ValidatingAdmissionPolicyPlugin
from fleetplane.pipeline.admission.policies_cel import compile_admission
from fleetplane.pipeline.admission.policies_source import MemorySource, schema_of
from fleetplane.pipeline.admission.policies_typecheck import TypeChecker
from fleetplane.pipeline.authorization.attributes import Attributes, Decision, Result
from fleetplane.pipeline.user import UserInfo
from fleetplane.registry.types import ResourceType
from fleetplane.server.tables import to_table

CORE = {rt.plural: rt for rt in core_types()}
CONFIGMAPS = ServedType("", "v1", "ConfigMap", "configmaps", True)
ALICE = UserInfo("alice", groups=("devs", "system:authenticated"))
RULE = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}


def policy(name: str = "p", validations: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    obj = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name},
           "spec": {"matchConstraints": spec.pop("matchConstraints", {"resourceRules": [RULE]}),
                    "validations": validations if validations is not None else [{"expression": "false"}], **spec}}
    api.default_policy(obj)
    return obj


def binding(policy_name: str = "p", actions: list[str] | None = None, name: str = "b", **spec: Any) -> dict[str, Any]:
    obj = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
           "metadata": {"name": name}, "spec": {"policyName": policy_name, "validationActions": ["Deny"] if actions is None else actions, **spec}}
    api.default_binding(obj)
    return obj


def cm(name: str, namespace: str = "default", labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}}, "data": data}


def ns(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def request(obj: dict[str, Any] | None, op: str = CREATE, rt: ResourceType | None = None, old: dict[str, Any] | None = None,
            user: UserInfo | None = ALICE, subresource: str = "") -> Request:
    rt = rt or CORE["configmaps"]
    meta = (obj or old or {}).get("metadata") or {}
    return Request(op, rt, "root", meta.get("namespace", "") if rt.namespaced else "", meta.get("name", ""), obj, old,
                   subresource=subresource, user=user)


def run(plugin: ValidatingAdmissionPolicyPlugin, req: Request) -> StatusError | None:
    try:
        asyncio.run(plugin.validate(req))
    except StatusError as err:
        return err
    return None


def plugin_for(policies: list[dict[str, Any]], bindings: list[dict[str, Any]], objects: list[dict[str, Any]] = (),  # type: ignore[assignment]
               types: list[ServedType] = (), allow: bool = True) -> ValidatingAdmissionPolicyPlugin:  # type: ignore[assignment]
    source = MemorySource(policies, bindings, [ns("default"), *objects], [CONFIGMAPS, *types])
    return ValidatingAdmissionPolicyPlugin(source, lambda attrs: Result(Decision.ALLOW if allow else Decision.NO_OPINION,
                                                                        "" if allow else "nobody said yes"))


# -- validation -------------------------------------------------------------------------------


def messages(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def test_policy_validation_speaks_kube() -> None:
    bad = policy(validations=[{"expression": "object.x ==", "reason": "Teapot", "message": " "},
                              {"expression": "1 == 1", "messageExpression": "authorizer.path('/').check('get').reason()"}],
                 matchConstraints={"resourceRules": [{"apiGroups": ["*", "apps"], "apiVersions": ["v1"], "operations": ["GET"],
                                                      "resources": ["*", "pods"], "scope": "Everywhere"}],
                                   "namespaceSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
                 variables=[{"name": "not valid", "expression": "variables.later"}, {"name": "later", "expression": "1"}],
                 auditAnnotations=[{"key": "k", "valueExpression": "1"}, {"key": "k", "valueExpression": "'x'"}])
    got = messages(api.validate_policy(bad))
    r = "spec.matchConstraints.resourceRules[0]"
    assert f'{r}.operations[0]: Unsupported value: "GET": supported values: "*", "CONNECT", "CREATE", "DELETE", "UPDATE"' in got
    assert f'{r}.apiGroups: Invalid value: []string{{"*", "apps"}}: if \'*\' is present, must not specify other API groups' in got
    assert (f'{r}.resources: Invalid value: []string{{"*", "pods"}}: if \'*\' is present, must not specify other resources '
            "without subresources") in got
    assert f'{r}.scope: Unsupported value: "Everywhere": supported values: "*", "Cluster", "Namespaced"' in got
    assert ("spec.matchConstraints.namespaceSelector.matchExpressions[0].values: Required value: must be specified when "
            "`operator` is 'In' or 'NotIn'") in got
    assert 'spec.variables[0].name: Invalid value: "not valid": name is not a valid CEL identifier' in got
    assert any(m.startswith("spec.variables[0].expression: Invalid value: \"variables.later\": compilation failed: "
                            "ERROR: <input>:1:10: undefined field 'later'") for m in got)
    assert any(m.startswith('spec.validations[0].expression: Invalid value: "object.x ==": compilation failed: ERROR: <input>:1:12:')
               for m in got)
    assert 'spec.validations[0].message: Invalid value: " ": message must be non-empty if specified' in got
    assert 'spec.validations[0].reason: Unsupported value: "Teapot": supported values: "Forbidden", "Invalid", "RequestEntityTooLarge"' in got
    assert ("spec.validations[1].messageExpression: Invalid value: \"authorizer.path('/').check('get').reason()\": "
            "compilation failed: ERROR: <input>:1:1: undeclared reference to 'authorizer' (in container '')") in got
    assert 'spec.auditAnnotations[1].key: Duplicate value: "k"' in got


def test_binding_validation_speaks_kube() -> None:
    got = messages(api.validate_binding(binding(actions=["Deny", "Deny", "Shout"], paramRef={"namespace": "x"},
                                                matchResources={"matchPolicy": "Fuzzy"})))
    assert 'spec.validationActions[1]: Duplicate value: "Deny"' in got
    assert 'spec.validationActions[2]: Unsupported value: "Shout": supported values: "Audit", "Deny", "Warn"' in got
    assert "spec.paramRef: Required value: one of name or selector must be specified" in got
    assert 'spec.matchResouces.matchPolicy: Unsupported value: "Fuzzy": supported values: "Equivalent", "Exact"' in got
    got = messages(api.validate_binding(binding(actions=[])))
    assert "spec.validationActions: Required value: at least one validation action is required" in got
    assert binding(paramRef={"name": "x"})["spec"]["paramRef"]["parameterNotFoundAction"] == "Deny"  # the v1 default


def test_tables() -> None:
    types = {rt.kind: rt for rt in api.resource_types()}
    pol = policy(paramKind={"apiVersion": "example.com/v1", "kind": "Limits"},
                 validations=[{"expression": "true"}, {"expression": "true"}])
    table = to_table(types["ValidatingAdmissionPolicy"], [pol])
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Validations", "ParamKind", "Age"]
    assert table["rows"][0]["cells"][:3] == ["p", 2, "example.com/v1/Limits"]
    rows = to_table(types["ValidatingAdmissionPolicyBinding"], [
        binding(name="a", paramRef={"name": "limits"}), binding(name="b", paramRef={"name": "l", "namespace": "ns"}),
        binding(name="c", paramRef={"selector": {"matchLabels": {"tier": "gold"}}}), binding(name="d")])["rows"]
    assert [r["cells"][2] for r in rows] == ["*/limits", "ns/l", "tier=gold", "<unset>"]


# -- matching and actions ---------------------------------------------------------------------


def test_rules_scopes_exclusions_and_names() -> None:
    p = policy(matchConstraints={"resourceRules": [{**RULE, "resourceNames": ["a", "b"]}],
                                 "excludeResourceRules": [{**RULE, "resourceNames": ["b"]}]})
    plugin = plugin_for([p], [binding()])
    assert run(plugin, request(cm("a"))) is not None
    assert run(plugin, request(cm("b"))) is None  # excluded
    assert run(plugin, request(cm("c"))) is None  # not named
    assert run(plugin, request(None, DELETE, old=cm("a"))) is None  # DELETE not among the operations
    cluster_only = policy(matchConstraints={"resourceRules": [{**RULE, "resources": ["namespaces"], "scope": "Cluster"}]})
    plugin = plugin_for([cluster_only], [binding()])
    assert run(plugin, request(ns("x"), rt=CORE["namespaces"])) is not None  # a Namespace is cluster-scoped
    star = policy(matchConstraints={"resourceRules": [{**RULE, "resources": ["*"]}]})
    plugin = plugin_for([star], [binding()])
    assert run(plugin, request(cm("a"), UPDATE, old=cm("a"), subresource="status")) is None  # "*" is no subresource


def test_deny_message_reason_and_status() -> None:
    p = policy(validations=[{"expression": "object.data.size() < 1", "reason": "Forbidden"},
                            {"expression": "false", "message": "never"}])
    err = run(plugin_for([p], [binding()]), request(cm("c", k="v")))
    assert err is not None and err.code == 403 and err.reason == "Forbidden"
    assert err.message == ("configmaps \"c\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: "
                           "failed expression: object.data.size() < 1")


def test_equivalent_versions_match_and_exact_does_not() -> None:
    v1 = ServedType("example.com", "v1", "Widget", "widgets", True)
    v2 = ServedType("example.com", "v2", "Widget", "widgets", True)
    rt = ResourceType("example.com", "v2", "Widget", "widgets", "widget", True)
    rule = {"apiGroups": ["example.com"], "apiVersions": ["v1"], "operations": ["*"], "resources": ["widgets"]}
    obj = {"apiVersion": "example.com/v2", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"}}
    p = policy(matchConstraints={"resourceRules": [rule]},
               validations=[{"expression": "false", "messageExpression": "object.apiVersion + ' ' + request.resource.version "
                                                                         "+ ' ' + request.requestResource.version"}])
    err = run(plugin_for([p], [binding()], types=[v1, v2]), request(obj, rt=rt))
    assert err is not None and err.message.endswith("denied request: example.com/v1 v1 v2")
    p["spec"]["matchConstraints"]["matchPolicy"] = "Exact"
    assert run(plugin_for([p], [binding()], types=[v1, v2]), request(obj, rt=rt)) is None


def test_selectors_and_namespace_object() -> None:
    p = policy(matchConstraints={"resourceRules": [RULE], "namespaceSelector": {"matchLabels": {"env": "prod"}},
                                 "objectSelector": {"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]}},
               validations=[{"expression": "false", "messageExpression": "namespaceObject.metadata.labels.env"}])
    plugin = plugin_for([p], [binding()], [ns("prod", env="prod"), ns("dev", env="dev")])
    err = run(plugin, request(cm("a", "prod")))
    assert err is not None and err.message.endswith("denied request: prod")
    assert run(plugin, request(cm("a", "dev"))) is None
    assert run(plugin, request(cm("a", "prod", labels={"skip": "1"}))) is None
    err = run(plugin, request(cm("a", "nowhere"), UPDATE, old=cm("a", "nowhere")))
    assert err is not None and err.code == 422 and err.message == (
        'configmaps "a" is forbidden: ValidatingAdmissionPolicy \'p\' denied request: failed to configure policy: '
        'namespaces "nowhere" not found')


def test_params_by_selector_and_not_found_actions() -> None:
    p = policy(paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
               matchConstraints={"resourceRules": [{**RULE, "resources": ["configmaps", "namespaces"]}]},
               validations=[{"expression": "object.data.size() <= int(params.data.max)",
                             "messageExpression": "'limit ' + params.metadata.name"}])
    limits = [{**cm("small", "default", {"kind": "limit"}), "data": {"max": "1"}},
              {**cm("large", "default", {"kind": "limit"}), "data": {"max": "5"}}]
    by_selector = binding(paramRef={"selector": {"matchLabels": {"kind": "limit"}}})
    err = run(plugin_for([p], [by_selector], limits), request(cm("c", a="1", b="2")))
    assert err is not None and err.message.endswith("denied request: limit small")
    allow = binding(paramRef={"name": "missing", "parameterNotFoundAction": "Allow"})
    assert run(plugin_for([p], [allow], limits), request(cm("c", a="1", b="2"))) is None
    cluster_scoped = binding(paramRef={"name": "small"})
    err = run(plugin_for([p], [cluster_scoped], limits), request(ns("x"), rt=CORE["namespaces"]))
    assert err is not None and "failed to configure binding: cannot use namespaced paramRef in policy binding that " \
                               "matches cluster-scoped resources" in err.message
    unknown = policy(paramKind={"apiVersion": "example.com/v1", "kind": "Nope"})
    err = run(plugin_for([unknown], [binding()]), request(cm("c")))
    assert err is not None and err.message.endswith("ValidatingAdmissionPolicy 'p' denied request: failed to configure "
                                                    "policy: failed to find resource referenced by paramKind: "
                                                    "'example.com/v1, Kind=Nope'")


def test_warn_and_audit_actions_and_annotations() -> None:
    p = policy(validations=[{"expression": "false", "message": "nope"}],
               auditAnnotations=[{"key": "who", "valueExpression": "request.userInfo.username"},
                                 {"key": "none", "valueExpression": "null"}])
    req = request(cm("c"))
    assert run(plugin_for([p], [binding(actions=["Warn", "Audit"])]), req) is None
    assert req.warnings == ["Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': nope"]
    assert req.audit_annotations["p/who"] == "alice" and "p/none" not in req.audit_annotations
    assert req.audit_annotations["validation.policy.admission.k8s.io/validation_failure"] == (
        '[{"message":"nope","policy":"p","binding":"b","expressionIndex":0,"validationActions":["Warn","Audit"]}]')


def test_lazy_variables_match_conditions_and_the_authorizer() -> None:
    seen: list[Attributes] = []
    p = policy(variables=[{"name": "broken", "expression": "object.data.missing"},
                          {"name": "canDelete", "expression": "authorizer.group('').resource('configmaps')"
                                                              ".namespace('default').check('delete').allowed()"}],
               matchConditions=[{"name": "not-exempt", "expression": "object.metadata.name != 'exempt'"}],
               validations=[{"expression": "variables.canDelete", "message": "may not delete"}])
    source = MemorySource([p], [binding()], [ns("default")], [CONFIGMAPS])
    plugin = ValidatingAdmissionPolicyPlugin(source, lambda a: (seen.append(a), Result(Decision.NO_OPINION))[1])
    err = run(plugin, request(cm("c")))
    assert err is not None and err.message.endswith("denied request: may not delete")  # "broken" is never read
    assert [(a.user.name, a.verb, a.resource, a.namespace) for a in seen] == [("alice", "delete", "configmaps", "default")]
    assert run(plugin, request(cm("exempt"))) is None
    failing = policy(matchConditions=[{"name": "boom", "expression": "object.data.missing == 'x'"}], failurePolicy="Fail")
    err = run(plugin_for([failing], [binding()]), request(cm("c")))
    assert err is not None and err.message.endswith(
        "denied request: expression 'object.data.missing == 'x'' resulted in error: no such key: missing")
    failing["spec"]["failurePolicy"] = "Ignore"
    assert run(plugin_for([failing], [binding()]), request(cm("c"))) is None


def test_policy_objects_are_exempt() -> None:
    everything = policy(matchConstraints={"resourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"],
                                                             "operations": ["*"], "resources": ["*"]}]})
    types = {rt.plural: rt for rt in api.resource_types()}
    plugin = plugin_for([everything], [binding()])
    assert run(plugin, request(policy("q"), rt=types["validatingadmissionpolicies"])) is None
    assert run(plugin, request(cm("c"))) is not None


def test_compiled_expressions_read_only_what_they_use() -> None:
    c = compile_admission("object.metadata.name == 'x' && size(object.data) > 0", params=False, authorizer=True)
    assert c.reads == {"object": {"metadata": {"name": None}, "data": None}}


# -- type checking ----------------------------------------------------------------------------


def test_type_checking_names_undefined_fields_per_kind() -> None:
    def resolve(cluster: str, group: str, version: str, resource: str) -> tuple[str, dict[str, Any]] | None:
        rt = CORE.get(resource) if not group else None
        schema = schema_of(rt) if rt is not None else None
        return (rt.kind, schema) if rt is not None and schema is not None else None

    checker = TypeChecker(resolve, lambda cluster, api_version, kind: None)
    p = policy(matchConstraints={"resourceRules": [{**RULE, "resources": ["configmaps", "secrets"]}]},
               validations=[{"expression": "object.metadata.labelz == 'x' || object.data.anything == 'y'"},
                            {"expression": "object.metadata.name.startsWith('a')",
                             "messageExpression": "'bad: ' + object.stringData.x"}])
    assert checker.check(p, "root") == [
        {"fieldRef": "spec.validations[0].expression",
         "warning": "/v1, Kind=ConfigMap: ERROR: <input>:1:16: undefined field 'labelz'\n"
                    " | object.metadata.labelz == 'x' || object.data.anything == 'y'\n | ...............^\n\n"
                    "/v1, Kind=Secret: ERROR: <input>:1:16: undefined field 'labelz'\n"
                    " | object.metadata.labelz == 'x' || object.data.anything == 'y'\n | ...............^\n"},
        {"fieldRef": "spec.validations[1].messageExpression",
         "warning": "/v1, Kind=ConfigMap: ERROR: <input>:1:17: undefined field 'stringData'\n"
                    " | 'bad: ' + object.stringData.x\n | ................^\n"},
    ]
    wildcard = policy(matchConstraints={"resourceRules": [{**RULE, "apiGroups": ["*"]}]},
                      validations=[{"expression": "object.nope"}])
    assert checker.check(wildcard, "root") == []  # nothing to check against, as kube


@pytest.mark.parametrize("generation, observed, checked", [(1, 0, True), (2, 2, False)])
def test_status_is_computed_once_per_generation(generation: int, observed: int, checked: bool) -> None:
    strategy = api.PolicyStrategy()
    calls: list[str] = []
    strategy.type_checker = lambda obj, cluster: (calls.append(cluster), [])[1]
    obj = policy()
    obj["metadata"]["generation"] = generation
    obj["status"] = {"observedGeneration": observed}
    strategy.before_write(obj, None, "team-a")
    assert (calls == ["team-a"]) is checked
    assert obj["status"]["observedGeneration"] == generation


def test_compiled_policies_follow_the_objects_revision() -> None:
    source = MemorySource([policy(validations=[{"expression": "false", "message": "first"}])], [binding()],
                          [ns("default")], [CONFIGMAPS])
    plugin = ValidatingAdmissionPolicyPlugin(source, lambda attrs: Result(Decision.ALLOW))
    err = run(plugin, request(cm("c")))
    assert err is not None and err.message.endswith("denied request: first")
    source._policies = [(2, policy(validations=[{"expression": "false", "message": "second"}]))]
    err = run(plugin, request(cm("c")))
    assert err is not None and err.message.endswith("denied request: second")
    source._policies = [(3, policy("other"))]
    source._bindings = [(1, binding("other"))]
    run(plugin, request(cm("c")))
    assert [k for k in plugin._compiled] == [("root", "other")]  # the deleted policy is forgotten


def test_a_stored_policy_that_does_not_compile_is_reported_and_failure_policy_decides() -> None:
    # validation refuses such a policy; one already stored (restored, or from an older hub) is not
    broken = policy(validations=[{"expression": "object.data.size( >"}], failurePolicy="Fail")

    def resolve(cluster: str, group: str, version: str, resource: str) -> tuple[str, dict[str, Any]] | None:
        schema = schema_of(CORE["configmaps"])
        return ("ConfigMap", schema) if resource == "configmaps" and schema is not None else None

    [warning] = TypeChecker(resolve, lambda cluster, api_version, kind: None).check(broken, "root")
    assert warning["fieldRef"] == "spec.validations[0].expression"
    assert warning["warning"].startswith("/v1, Kind=ConfigMap: ERROR: <input>:1:")
    err = run(plugin_for([broken], [binding()]), request(cm("c")))
    assert err is not None and "denied request: compilation error: compilation failed: ERROR: <input>:1:" in err.message
    broken["spec"]["failurePolicy"] = "Ignore"
    assert run(plugin_for([broken], [binding()]), request(cm("c"))) is None
    req = request(cm("c"))
    broken["spec"]["failurePolicy"] = "Fail"
    assert run(plugin_for([broken], [binding(actions=["Warn"])]), req) is None
    assert req.warnings and "compilation error: compilation failed:" in req.warnings[0]
