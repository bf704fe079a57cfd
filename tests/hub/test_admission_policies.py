"""ValidatingAdmissionPolicies against a real hub, through kubectl and an HTTP client: params,
each validation action (the Warning header, the audit log), selectors, failure policies, the
authorizer, and a broken expression reported in the policy's status."""

from __future__ import annotations

import json
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..harness import Hub, Kubectl, wait_for

POLICY = "admissionregistration.k8s.io/v1"


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Hub, Path]]:
    """One hub for the module, with an audit log (each test works in its own logical cluster)."""
    tmp = tmp_path_factory.mktemp("vap")
    log = tmp / "audit.log"
    hub = Hub(tmp / "data", extra=["--audit-log-path", str(log), "--no-cluster-controller", "--no-splitter"]).start()
    yield hub, log
    hub.stop()


@pytest.fixture
def cluster() -> str:
    return "vap-" + uuid.uuid4().hex[:8]


@pytest.fixture
def k(audited: tuple[Hub, Path], cluster: str, tmp_path: Path) -> Kubectl:
    return Kubectl(audited[0].kubeconfig_for(cluster, tmp_path), namespace="default")


def audit_events(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def yaml_doc(text: str) -> str:
    return textwrap.dedent(text)


PARAMS_POLICY = yaml_doc("""\
    apiVersion: admissionregistration.k8s.io/v1
    kind: ValidatingAdmissionPolicy
    metadata: {name: max-keys}
    spec:
      paramKind: {apiVersion: v1, kind: ConfigMap}
      matchConstraints:
        resourceRules:
        - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}
        objectSelector: {matchLabels: {checked: "yes"}}
      variables:
      - {name: keys, expression: "has(object.data) ? size(object.data) : 0"}
      validations:
      - expression: "variables.keys <= int(params.data.maxKeys)"
        messageExpression: "'too many keys: ' + string(variables.keys) + ' > ' + params.data.maxKeys"
      - expression: "!has(object.data.forbidden)"
        message: no key may be called forbidden
        reason: Forbidden
      auditAnnotations:
      - {key: keys, valueExpression: "string(variables.keys)"}
    """)


def binding(actions: str, param: str = "limits") -> str:
    return yaml_doc(f"""\
        apiVersion: admissionregistration.k8s.io/v1
        kind: ValidatingAdmissionPolicyBinding
        metadata: {{name: max-keys-binding}}
        spec:
          policyName: max-keys
          validationActions: {actions}
          paramRef: {{name: {param}, namespace: default, parameterNotFoundAction: Deny}}
        """)


def configmap(name: str, keys: int, labels: str = "{checked: \"yes\"}", extra: str = "") -> str:
    data = "".join(f"\n  k{i}: v{i}" for i in range(keys)) + extra
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  labels: {labels}\ndata:{data or ' {}'}\n"


def test_a_policy_with_configmap_params_and_each_validation_action(audited: tuple[Hub, Path], k: Kubectl,
                                                                  cluster: str) -> None:
    _, log = audited
    k("create", "configmap", "limits", "--from-literal=maxKeys=2")
    k("apply", "-f", "-", stdin=PARAMS_POLICY)
    k("apply", "-f", "-", stdin=binding("[Deny]"))

    table = k("get", "validatingadmissionpolicies").out.split("\n")
    assert table[0].split() == ["NAME", "VALIDATIONS", "PARAMKIND", "AGE"]
    assert table[1].split()[:3] == ["max-keys", "2", "v1/ConfigMap"]
    table = k("get", "validatingadmissionpolicybindings").out.split("\n")
    assert table[0].split() == ["NAME", "POLICYNAME", "PARAMREF", "AGE"]
    assert table[1].split()[:3] == ["max-keys-binding", "max-keys", "default/limits"]
    got = k.get_json("validatingadmissionpolicy", "max-keys")
    assert got["spec"]["failurePolicy"] == "Fail"  # kube's defaults
    assert got["spec"]["matchConstraints"]["matchPolicy"] == "Equivalent"
    assert got["spec"]["matchConstraints"]["resourceRules"][0]["scope"] == "*"
    assert got["status"] == {"observedGeneration": 1, "typeChecking": {}}

    # Deny: a 422 with kube's message; the params' limit is read from the ConfigMap
    k("apply", "-f", "-", stdin=configmap("small", 2))
    err = k.fail("apply", "-f", "-", stdin=configmap("big", 3)).err
    assert ("ValidatingAdmissionPolicy 'max-keys' with binding 'max-keys-binding' denied request: "
            "too many keys: 3 > 2") in err
    assert k("get", "configmap", "big", check=False).code != 0
    k("apply", "-f", "-", stdin=configmap("unchecked", 5, labels="{}"))  # the object selector
    err = k.fail("apply", "-f", "-", stdin=configmap("forbidden", 1, extra="\n  forbidden: x")).err
    assert "denied request: no key may be called forbidden" in err
    # a higher limit in the params lets the same object in
    k("patch", "configmap", "limits", "-p", '{"data": {"maxKeys": "5"}}')
    k("apply", "-f", "-", stdin=configmap("big", 3))

    # Warn and Audit: the write succeeds, with a Warning header and an audit annotation
    k("patch", "configmap", "limits", "-p", '{"data": {"maxKeys": "1"}}')
    k("apply", "-f", "-", stdin=binding("[Warn, Audit]"))
    out = k("apply", "-f", "-", stdin=configmap("warned", 2))
    assert ("Warning: Validation failed for ValidatingAdmissionPolicy 'max-keys' with binding 'max-keys-binding': "
            "too many keys: 2 > 1") in out.err
    assert k.get_json("configmap", "warned")["data"] == {"k0": "v0", "k1": "v1"}

    def audited_create() -> dict[str, Any] | None:
        return next((e for e in audit_events(log) if e.get("stage") == "ResponseComplete" and e["verb"] == "create"
                     and e.get("objectRef", {}).get("resource") == "configmaps"
                     and e.get("annotations", {}).get("fleetplane.io/logical-cluster") == cluster
                     and "validation.policy.admission.k8s.io/validation_failure" in e["annotations"]), None)

    event = wait_for(audited_create, 15, what="the audited create")
    failures = json.loads(event["annotations"]["validation.policy.admission.k8s.io/validation_failure"])
    assert failures == [{"message": "too many keys: 2 > 1", "policy": "max-keys", "binding": "max-keys-binding",
                         "expressionIndex": 0, "validationActions": ["Warn", "Audit"]}]
    assert event["annotations"]["max-keys/keys"] == "2"

    code, _, raw = audited[0].request("GET", "/metrics")
    assert code == 200
    assert ('apiserver_validating_admission_policy_check_total{enforcement_action="deny",error_type="invalid_error",'
            'policy="max-keys",policy_binding="max-keys-binding"}') in raw.decode()

    # params that are not there: parameterNotFoundAction Deny is a configuration error
    k("apply", "-f", "-", stdin=binding("[Deny]", param="missing"))
    err = k.fail("apply", "-f", "-", stdin=configmap("orphan", 1)).err
    assert ("ValidatingAdmissionPolicy 'max-keys' with binding 'max-keys-binding' denied request: failed to configure "
            "binding: no params found for policy binding with `Deny` parameterNotFoundAction") in err


def _cluster_path(cluster: str, path: str) -> str:
    return f"/clusters/{cluster}{path}"


def _create(hub: Hub, cluster: str, path: str, body: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
    code, headers, raw = hub.request("POST", _cluster_path(cluster, path), body)
    return code, headers, json.loads(raw) if raw else None


def _policy(name: str, validations: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    constraints = spec.pop("matchConstraints", {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                                   "operations": ["CREATE"], "resources": ["configmaps"]}]})
    return {"apiVersion": POLICY, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name},
            "spec": {"matchConstraints": constraints, "validations": validations, **spec}}


def _binding(name: str, policy: str, actions: list[str] | None = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": POLICY, "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": name},
            "spec": {"policyName": policy, "validationActions": actions or ["Deny"], **spec}}


def _cm(name: str, data: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data or {}}


def _namespace(hub: Hub, cluster: str, name: str, labels: dict[str, str]) -> None:
    code, _, body = _create(hub, cluster, "/api/v1/namespaces",
                            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
    assert code == 201, body


def test_namespace_selectors_and_kube_status(audited: tuple[Hub, Path], cluster: str) -> None:
    hub, _ = audited
    policy = _policy("prod-names", [{"expression": "object.metadata.name.startsWith('prod-')"}],
                     matchConstraints={"namespaceSelector": {"matchLabels": {"env": "prod"}},
                                       "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                          "operations": ["CREATE"], "resources": ["configmaps"]}]})
    assert _create(hub, cluster, "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", policy)[0] == 201
    code, _, body = _create(hub, cluster, "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
                            _binding("prod-names", "prod-names"))
    assert code == 201, body
    _namespace(hub, cluster, "prod", {"env": "prod"})
    _namespace(hub, cluster, "dev", {"env": "dev"})

    assert _create(hub, cluster, "/api/v1/namespaces/dev/configmaps", _cm("anything"))[0] == 201
    assert _create(hub, cluster, "/api/v1/namespaces/prod/configmaps", _cm("prod-ok"))[0] == 201
    code, _, status = _create(hub, cluster, "/api/v1/namespaces/prod/configmaps", _cm("bad"))
    message = ("ValidatingAdmissionPolicy 'prod-names' with binding 'prod-names' denied request: "
               "failed expression: object.metadata.name.startsWith('prod-')")
    assert code == 422
    assert status["kind"] == "Status" and status["reason"] == "Invalid" and status["code"] == 422
    assert status["message"] == f'configmaps "bad" is forbidden: {message}'
    assert status["details"] == {"name": "bad", "kind": "configmaps", "causes": [{"message": message}]}
    # relabelled, the namespace is no longer selected
    code, _, raw = hub.request("PATCH", _cluster_path(cluster, "/api/v1/namespaces/prod"),
                               {"metadata": {"labels": {"env": "staging"}}}, content_type="application/merge-patch+json")
    assert code == 200, raw
    assert _create(hub, cluster, "/api/v1/namespaces/prod/configmaps", _cm("bad"))[0] == 201


def test_failure_policies_decide_for_expressions_that_fail(audited: tuple[Hub, Path], cluster: str) -> None:
    hub, _ = audited
    base = "/apis/admissionregistration.k8s.io/v1/"
    for name, fp in (("strict", "Fail"), ("lenient", "Ignore")):
        policy = _policy(name, [{"expression": "object.data.colour == 'blue'"}], failurePolicy=fp,
                         matchConditions=[{"name": "only-" + name, "expression": f"object.metadata.name.startsWith('{name}')"}])
        assert _create(hub, cluster, base + "validatingadmissionpolicies", policy)[0] == 201
        assert _create(hub, cluster, base + "validatingadmissionpolicybindings", _binding(name, name))[0] == 201
    code, _, status = _create(hub, cluster, "/api/v1/namespaces/default/configmaps", _cm("strict-1"))
    assert code == 422
    assert status["message"] == ('configmaps "strict-1" is forbidden: ValidatingAdmissionPolicy \'strict\' with binding '
                                 "'strict' denied request: expression 'object.data.colour == 'blue'' resulted in error: "
                                 "no such key: colour")
    assert _create(hub, cluster, "/api/v1/namespaces/default/configmaps", _cm("strict-2", {"colour": "blue"}))[0] == 201
    assert _create(hub, cluster, "/api/v1/namespaces/default/configmaps", _cm("lenient-1"))[0] == 201
    code, _, status = _create(hub, cluster, "/api/v1/namespaces/default/configmaps", _cm("lenient-2", {"colour": "red"}))
    assert code == 422 and "failed expression: object.data.colour == 'blue'" in status["message"]


def test_the_authorizer_and_the_request_in_expressions(audited: tuple[Hub, Path], k: Kubectl, cluster: str,
                                                       tmp_path: Path) -> None:
    hub, _ = audited
    k("create", "serviceaccount", "bot")
    k("create", "role", "configmaps", "--verb=create,get", "--resource=configmaps")
    k("create", "rolebinding", "bot-configmaps", "--role=configmaps", "--serviceaccount=default:bot")
    policy = _policy("secret-readers-only", [{
        "expression": "variables.canReadSecrets",
        "messageExpression": "request.userInfo.username + ' may not read secrets in ' + request.namespace",
    }], variables=[{"name": "canReadSecrets", "expression":
                    "authorizer.group('').resource('secrets').namespace(request.namespace).check('get').allowed()"}])
    base = "/apis/admissionregistration.k8s.io/v1/"
    assert _create(hub, cluster, base + "validatingadmissionpolicies", policy)[0] == 201
    assert _create(hub, cluster, base + "validatingadmissionpolicybindings",
                   _binding("secret-readers-only", "secret-readers-only"))[0] == 201
    token = k("create", "token", "bot").out.strip()
    path = _cluster_path(cluster, "/api/v1/namespaces/default/configmaps")
    code, _, raw = hub.request("POST", path, _cm("from-bot"), auth=False, headers={"Authorization": f"Bearer {token}"})
    assert code == 422, raw
    assert json.loads(raw)["message"].endswith(
        "denied request: system:serviceaccount:default:bot may not read secrets in default")
    assert _create(hub, cluster, "/api/v1/namespaces/default/configmaps", _cm("from-admin"))[0] == 201
    k("create", "role", "secrets", "--verb=get", "--resource=secrets")
    k("create", "rolebinding", "bot-secrets", "--role=secrets", "--serviceaccount=default:bot")
    code, _, raw = hub.request("POST", path, _cm("from-bot"), auth=False, headers={"Authorization": f"Bearer {token}"})
    assert code == 201, raw


BROKEN_SYNTAX = yaml_doc("""\
    apiVersion: admissionregistration.k8s.io/v1
    kind: ValidatingAdmissionPolicy
    metadata: {name: broken}
    spec:
      matchConstraints:
        resourceRules:
        - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
      validations:
      - expression: "object.data.size( >"
    """)

WRONG_FIELD = yaml_doc("""\
    apiVersion: admissionregistration.k8s.io/v1
    kind: ValidatingAdmissionPolicy
    metadata: {name: replicas}
    spec:
      failurePolicy: Fail
      matchConstraints:
        resourceRules:
        - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
      validations:
      - expression: "object.spec.replicas > 1"
      - expression: "object.metadata.name != ''"
    """)


def test_broken_expressions_are_refused_or_reported_in_status(k: Kubectl) -> None:
    err = k.fail("apply", "-f", "-", stdin=BROKEN_SYNTAX).err
    assert 'spec.validations[0].expression: Invalid value: "object.data.size( >": compilation failed: ERROR: <input>:1:' in err
    assert k("get", "validatingadmissionpolicy", "broken", check=False).code != 0

    k("apply", "-f", "-", stdin=WRONG_FIELD)
    status = k.get_json("validatingadmissionpolicy", "replicas")["status"]
    assert status["observedGeneration"] == 1
    assert status["typeChecking"]["expressionWarnings"] == [{
        "fieldRef": "spec.validations[0].expression",
        "warning": "/v1, Kind=ConfigMap: ERROR: <input>:1:7: undefined field 'spec'\n"
                   " | object.spec.replicas > 1\n | ......^\n",
    }]
    k("apply", "-f", "-", stdin=yaml_doc("""\
        apiVersion: admissionregistration.k8s.io/v1
        kind: ValidatingAdmissionPolicyBinding
        metadata: {name: replicas}
        spec: {policyName: replicas, validationActions: [Deny]}
        """))
    # the request is not crashed: the expression's error follows failurePolicy (Fail: denied)
    err = k.fail("create", "configmap", "c1").err
    assert "expression 'object.spec.replicas > 1' resulted in error: no such key: spec" in err
    k("patch", "validatingadmissionpolicy", "replicas", "--type=merge", "-p", '{"spec": {"failurePolicy": "Ignore"}}')
    k("create", "configmap", "c1")
    assert k.get_json("validatingadmissionpolicy", "replicas")["status"]["observedGeneration"] == 2


def test_bad_policies_and_bindings_are_422_with_kube_messages(k: Kubectl) -> None:
    err = k.fail("apply", "-f", "-", stdin=yaml_doc("""\
        apiVersion: admissionregistration.k8s.io/v1
        kind: ValidatingAdmissionPolicyBinding
        metadata: {name: both}
        spec: {policyName: p, validationActions: [Deny, Warn], paramRef: {name: a, selector: {}}}
        """)).err
    assert ('spec.validationActions: Invalid value: []admissionregistration.ValidationAction{"Deny", "Warn"}: '
            "must not contain both Deny and Warn") in err
    assert "spec.paramRef.name: Forbidden: name and selector are mutually exclusive" in err
    err = k.fail("apply", "-f", "-", stdin=yaml_doc("""\
        apiVersion: admissionregistration.k8s.io/v1
        kind: ValidatingAdmissionPolicy
        metadata: {name: empty}
        spec:
          failurePolicy: Sometimes
          matchConstraints: {}
        """)).err
    assert 'spec.failurePolicy: Unsupported value: "Sometimes": supported values: "Fail", "Ignore"' in err
    assert "spec.matchConstraints.resourceRules: Required value" in err
    assert "spec.validations: Required value: validations or auditAnnotations must contain at least one item" in err
    err = k.fail("apply", "-f", "-", stdin=yaml_doc("""\
        apiVersion: admissionregistration.k8s.io/v1
        kind: ValidatingAdmissionPolicy
        metadata: {name: params}
        spec:
          matchConstraints:
            resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
          validations: [{expression: "params.x == 1"}]
        """)).err
    assert "undeclared reference to 'params'" in err


def test_policies_are_per_logical_cluster(audited: tuple[Hub, Path], cluster: str) -> None:
    hub, _ = audited
    base = "/apis/admissionregistration.k8s.io/v1/"
    assert _create(hub, cluster, base + "validatingadmissionpolicies",
                   _policy("no-configmaps", [{"expression": "false", "message": "no"}]))[0] == 201
    assert _create(hub, cluster, base + "validatingadmissionpolicybindings", _binding("no", "no-configmaps"))[0] == 201
    assert _create(hub, cluster, "/api/v1/namespaces/default/configmaps", _cm("c"))[0] == 422
    other = cluster + "-other"
    assert _create(hub, other, "/api/v1/namespaces/default/configmaps", _cm("c"))[0] == 201


LIMITS_CRD = yaml_doc("""\
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata: {name: limits.example.com}
    spec:
      group: example.com
      scope: Cluster
      names: {plural: limits, singular: limit, kind: Limit}
      versions:
      - name: v1
        served: true
        storage: true
        schema:
          openAPIV3Schema:
            type: object
            properties:
              spec:
                type: object
                properties:
                  maxLength: {type: integer}
    """)


def test_a_custom_resource_as_params_and_its_schema_in_type_checking(k: Kubectl) -> None:
    k("apply", "-f", "-", stdin=LIMITS_CRD)
    wait_for(lambda: k("get", "limits", check=False).code == 0, 15, what="the Limit CRD served")
    k("apply", "-f", "-", stdin=yaml_doc("""\
        apiVersion: example.com/v1
        kind: Limit
        metadata: {name: names}
        spec: {maxLength: 5}
        """))
    k("apply", "-f", "-", stdin=yaml_doc("""\
        apiVersion: admissionregistration.k8s.io/v1
        kind: ValidatingAdmissionPolicy
        metadata: {name: short-names}
        spec:
          paramKind: {apiVersion: example.com/v1, kind: Limit}
          matchConstraints:
            resourceRules:
            - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
          validations:
          - expression: "size(object.metadata.name) <= params.spec.maxLength"
            messageExpression: "'names are at most ' + string(params.spec.maxLength) + ' long'"
          - expression: "params.spec.maxLenght > 0"
        ---
        apiVersion: admissionregistration.k8s.io/v1
        kind: ValidatingAdmissionPolicyBinding
        metadata: {name: short-names}
        spec:
          policyName: short-names
          validationActions: [Deny]
          paramRef: {name: names, parameterNotFoundAction: Deny}
        """))
    warnings = k.get_json("validatingadmissionpolicy", "short-names")["status"]["typeChecking"]["expressionWarnings"]
    assert warnings == [{"fieldRef": "spec.validations[1].expression",
                         "warning": "/v1, Kind=ConfigMap: ERROR: <input>:1:12: undefined field 'maxLenght'\n"
                                    " | params.spec.maxLenght > 0\n | ...........^\n"}]
    k("patch", "validatingadmissionpolicy", "short-names", "--type=json",
      "-p", '[{"op": "remove", "path": "/spec/validations/1"}]')
    k("create", "configmap", "ok")
    err = k.fail("create", "configmap", "too-long").err
    assert ("ValidatingAdmissionPolicy 'short-names' with binding 'short-names' denied request: "
            "names are at most 5 long") in err


def test_server_side_apply_and_explain(k: Kubectl) -> None:
    k("apply", "--server-side", "-f", "-", stdin=WRONG_FIELD)
    k("apply", "--server-side", "-f", "-", stdin=WRONG_FIELD.replace("object.spec.replicas > 1", "true"))
    got = k("get", "validatingadmissionpolicy", "replicas", "-o", "json", "--show-managed-fields").json()
    assert [v["expression"] for v in got["spec"]["validations"]] == ["true", "object.metadata.name != ''"]
    assert got["metadata"]["generation"] == 2 and got["status"]["observedGeneration"] == 2
    assert got["status"]["typeChecking"] == {}
    assert any(m["manager"] == "kubectl" and m["operation"] == "Apply" for m in got["metadata"]["managedFields"])
    out = k("explain", "validatingadmissionpolicy.spec.validations").out
    assert "messageExpression" in out and "reason" in out
