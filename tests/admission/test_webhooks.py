"""Admission webhooks on a real hub: kube's matching, calling, mutation, failure and messages,
against a real HTTPS webhook server with its own CA."""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from typing import Any

from ..harness import Hub, Kubectl, wait_for
from .conftest import GROUP_VERSION, Api, audit_events, hook
from .webhook_server import SERVICE_NAME, WebhookServer, allow, deny, make_ca_and_cert, patch


def unique(prefix: str) -> str:
    return f"/{prefix}-{uuid.uuid4().hex[:8]}"


def created_event(hub: Hub, api: Api) -> dict[str, Any]:
    """The audit log's ResponseComplete event of the first ConfigMap created in ``api``'s cluster."""
    def find() -> dict[str, Any] | None:
        return next((ev for ev in audit_events(hub) if ev.get("stage") == "ResponseComplete" and ev["verb"] == "create"
                     and ev["requestURI"].startswith(api.base.removeprefix(hub.url) + "/api/v1/namespaces/default/configmaps")
                     and ev["responseStatus"]["code"] == 201), None)
    return wait_for(find, timeout=30, what="the audit event")


def requests_for(server: WebhookServer, path: str, name: str) -> list[dict[str, Any]]:
    return [r["request"] for r in server.reviews(path) if r["request"].get("name") == name]


# -- the configuration kinds -------------------------------------------------------------------------


def test_kubectl_creates_and_prints_configurations(webhook_hub: Hub, server: WebhookServer, cluster: str, tmp_path) -> None:
    k = Kubectl(webhook_hub.kubeconfig_for(cluster, tmp_path))
    config = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
              "metadata": {"name": "checks"},
              "webhooks": [hook(server, "one.example.com", "/never"), hook(server, "two.example.com", "/never")]}
    k("apply", "-f", "-", stdin=json.dumps(config))
    out = k("get", "validatingwebhookconfigurations").out
    assert out.split("\n")[0].split() == ["NAME", "WEBHOOKS", "AGE"]
    assert out.split("\n")[1].split()[:2] == ["checks", "2"]
    stored = k.get_json("validatingwebhookconfiguration", "checks")
    one = stored["webhooks"][0]
    assert (one["failurePolicy"], one["matchPolicy"], one["timeoutSeconds"]) == ("Fail", "Equivalent", 10)
    assert one["namespaceSelector"] == {} and one["objectSelector"] == {} and one["rules"][0]["scope"] == "*"
    k("apply", "-f", "-", stdin=json.dumps(config))  # apply twice: unchanged
    assert "FailurePolicy defines how unrecognized errors" in k("explain", "validatingwebhookconfiguration.webhooks.failurePolicy").out
    mutating = {**config, "kind": "MutatingWebhookConfiguration"}
    k("create", "-f", "-", stdin=json.dumps(mutating))
    assert k.get_json("mutatingwebhookconfiguration", "checks")["webhooks"][0]["reinvocationPolicy"] == "Never"
    assert "checks" not in Kubectl(webhook_hub.kubeconfig_for(cluster + "-other", tmp_path))(
        "get", "validatingwebhookconfigurations").out  # per logical cluster


def test_invalid_configurations_are_refused_with_kubes_messages(api: Api, server: WebhookServer) -> None:
    bad = [
        {**hook(server, "x.example.com", "/x"), "timeoutSeconds": 31},
        {k: v for k, v in hook(server, "y.example.com", "/x").items() if k != "sideEffects"},
        {**hook(server, "z.example.com", "/x"), "clientConfig": {"url": "http://example.com/x"}},
        {**hook(server, "example.com", "/x")},
        {**hook(server, "w.example.com", "/x"), "matchConditions": [{"name": "c", "expression": "object.x in [1, 2, "}]},
        {**hook(server, "v.example.com", "/x"), "rules": [{"operations": ["PATCH"], "apiGroups": [""], "apiVersions": ["v1"],
                                                         "resources": ["*/*", "pods"]}]},
    ]
    r = api("POST", f"{GROUP_VERSION}/validatingwebhookconfigurations",
            {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
             "metadata": {"name": "bad"}, "webhooks": bad})
    assert r.status_code == 422, r.text
    message = r.json()["message"]
    assert message.startswith('ValidatingWebhookConfiguration.admissionregistration.k8s.io "bad" is invalid: ')
    for text in ("webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
                 "webhooks[1].sideEffects: Required value: must specify one of None, NoneOnDryRun",
                 "webhooks[2].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
                 'webhooks[3].name: Invalid value: "example.com": should be a domain with at least three segments separated by dots',
                 'webhooks[4].matchConditions[0].expression: Invalid value: "object.x in [1, 2,": compilation failed: ERROR:',
                 'webhooks[5].rules[0].operations[0]: Unsupported value: "PATCH": supported values: "*", "CONNECT", "CREATE", "DELETE", "UPDATE"',
                 "webhooks[5].rules[0].resources: Invalid value: []string{\"*/*\", \"pods\"}: if '*/*' is present, must not specify other resources"):
        assert text in message, (text, message)
    assert api("GET", f"{GROUP_VERSION}/validatingwebhookconfigurations/bad").status_code == 404
    r = api("POST", f"{GROUP_VERSION}/validatingwebhookconfigurations",
            {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "b64"},
             "webhooks": [{**hook(server, "a.example.com", "/x"), "clientConfig": {"url": server.url("/x"), "caBundle": "not!base64"}}]})
    assert r.status_code == 400 and r.json()["message"] == (
        'ValidatingWebhookConfiguration in version "v1" cannot be handled as a ValidatingWebhookConfiguration: '
        "illegal base64 data at input byte 3")
    more = [
        {**hook(server, "a.example.com", "/x"), "clientConfig": {"service": {"namespace": "ns", "name": "n", "path": "foo/", "port": 0}}},
        {**hook(server, "a.example.com", "/x"), "failurePolicy": "other", "matchPolicy": "Sometimes", "reinvocationPolicy": "Always"},
        {**hook(server, "b.example.com", "/x"), "clientConfig": {}, "admissionReviewVersions": ["v1", "v1"],
         "matchConditions": [{"name": "same", "expression": "true"}, {"name": "same", "expression": "true"}],
         "namespaceSelector": {"matchExpressions": [{"key": "k", "operator": "In"}]}},
    ]
    r = api("POST", f"{GROUP_VERSION}/mutatingwebhookconfigurations",
            {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
             "metadata": {"name": "worse"}, "webhooks": more})
    assert r.status_code == 422, r.text
    message = r.json()["message"]
    for text in ("webhooks[0].clientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive",
                 "webhooks[0].clientConfig.service.path: Invalid value: \"foo/\": must start with a '/'",
                 'webhooks[1].name: Duplicate value: "a.example.com"',
                 'webhooks[1].failurePolicy: Unsupported value: "other": supported values: "Fail", "Ignore"',
                 'webhooks[1].matchPolicy: Unsupported value: "Sometimes": supported values: "Equivalent", "Exact"',
                 'webhooks[1].reinvocationPolicy: Unsupported value: "Always": supported values: "IfNeeded", "Never"',
                 "webhooks[2].clientConfig: Required value: exactly one of url or service is required",
                 'webhooks[2].admissionReviewVersions[1]: Invalid value: "v1": duplicate version',
                 'webhooks[2].matchConditions[1].name: Duplicate value: "same"',
                 "webhooks[2].namespaceSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"):
        assert text in message, (text, message)


# -- validating ----------------------------------------------------------------------------------------


def test_a_validating_webhook_denies_with_kubes_message_and_sees_the_review(api: Api, server: WebhookServer) -> None:
    path = unique("deny")
    server.handle(path, lambda rv: deny(rv, "names must not start with bad", code=403)
                  if rv["request"]["object"]["metadata"]["name"].startswith("bad") else allow(rv))
    api.configure("ValidatingWebhookConfiguration", "names", [hook(server, "names.example.com", path)])
    r = api.configmap("bad-one")
    assert r.status_code == 403, r.text
    body = r.json()
    assert body["message"] == 'admission webhook "names.example.com" denied the request: names must not start with bad'
    assert api("GET", "/api/v1/namespaces/default/configmaps/bad-one").status_code == 404
    assert api.configmap("good-one").status_code == 201
    req = requests_for(server, path, "good-one")[0]
    assert req["operation"] == "CREATE" and req["namespace"] == "default" and req["dryRun"] is False
    assert req["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
    assert req["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
    assert req["userInfo"]["username"] == "admin" or "system:masters" in req["userInfo"].get("groups", [])
    assert req["object"]["data"] == {"k": "v"} and req["oldObject"] is None
    assert req["options"] == {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
    assert server.reviews(path)[-1]["_query"] == "timeout=10s"
    metrics = api.client.get(api.hub.url + "/metrics").text
    assert ('apiserver_admission_webhook_rejection_count_total{error_type="no_error",name="names.example.com",'
            'operation="CREATE",rejection_code="403",type="validate"} 1.0') in metrics
    assert 'apiserver_admission_webhook_admission_duration_seconds_count{name="names.example.com",operation="CREATE",rejected="false",type="validate"} 1.0' in metrics


def test_a_denial_without_a_message_and_a_low_code(api: Api, server: WebhookServer) -> None:
    path = unique("bare")
    server.handle(path, lambda rv: {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                    "response": {"uid": rv["request"]["uid"], "allowed": False, "status": {"code": 200}}})
    api.configure("ValidatingWebhookConfiguration", "bare", [hook(server, "bare.example.com", path)])
    r = api.configmap("c1")
    assert r.status_code == 400
    assert r.json()["message"] == 'admission webhook "bare.example.com" denied the request without explanation'


def test_warnings_and_audit_annotations(webhook_hub: Hub, api: Api, server: WebhookServer) -> None:
    path = unique("warn")
    server.handle(path, lambda rv: allow(rv, warnings=["mind the gap", "second warning"],
                                         auditAnnotations={"checked": "yes"}))
    api.configure("ValidatingWebhookConfiguration", "warn", [hook(server, "warn.example.com", path)])
    r = api.configmap("warned")
    assert r.status_code == 201, r.text
    warnings = r.headers.get_list("warning")
    assert warnings == ['299 - "mind the gap"', '299 - "second warning"'], warnings
    event = created_event(webhook_hub, api)
    assert event["annotations"]["warn.example.com/checked"] == "yes", event


def test_rules_operations_resources_subresources_and_scope(api: Api, server: WebhookServer) -> None:
    path = unique("rules")
    server.handle(path, lambda rv: allow(rv))
    rules = [{"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["namespaces/status"]},
             {"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["secrets"], "scope": "Cluster"},
             {"operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["*"], "resources": ["*"], "scope": "Namespaced"}]
    api.configure("ValidatingWebhookConfiguration", "rules", [hook(server, "rules.example.com", path, rules=rules)])
    ns = "r-" + uuid.uuid4().hex[:6]
    assert api("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}).status_code == 201
    assert api("PATCH", f"/api/v1/namespaces/{ns}", [{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}]).status_code == 200
    assert requests_for(server, path, ns) == []  # the main resource: no rule names it
    r = api("PATCH", f"/api/v1/namespaces/{ns}/status", [{"op": "add", "path": "/status/conditions", "value": []}])
    assert r.status_code == 200, r.text
    calls = requests_for(server, path, ns)
    assert [(c["operation"], c.get("subResource")) for c in calls] == [("UPDATE", "status")]
    assert calls[0]["oldObject"]["metadata"]["name"] == ns and "namespace" not in calls[0]
    # secrets are namespaced: the Cluster-scoped rule does not match them
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s1"}, "stringData": {"a": "b"}}
    assert api("POST", f"/api/v1/namespaces/{ns}/secrets", secret).status_code == 201
    assert requests_for(server, path, "s1") == []
    assert api.configmap("cm1", namespace=ns).status_code == 201
    assert requests_for(server, path, "cm1") == []  # CREATE is not in the rules
    assert api("DELETE", f"/api/v1/namespaces/{ns}/configmaps/cm1").status_code == 200
    deleted = requests_for(server, path, "cm1")
    assert [c["operation"] for c in deleted] == ["DELETE"]
    assert deleted[0]["object"] is None and deleted[0]["oldObject"]["data"] == {"k": "v"}
    assert deleted[0]["options"]["kind"] == "DeleteOptions"


def test_namespace_and_object_selectors(api: Api, server: WebhookServer) -> None:
    path = unique("sel")
    server.handle(path, lambda rv: deny(rv, "selected"))
    api.configure("ValidatingWebhookConfiguration", "sel", [hook(
        server, "sel.example.com", path, namespaceSelector={"matchLabels": {"guarded": "true"}},
        objectSelector={"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]})])
    for ns, labels in (("guarded-" + uuid.uuid4().hex[:6], {"guarded": "true"}), ("open-" + uuid.uuid4().hex[:6], {})):
        r = api("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}})
        assert r.status_code == 201
        if labels:
            guarded = ns
        else:
            open_ns = ns
    assert api.configmap("a", namespace=open_ns).status_code == 201
    assert api.configmap("b", namespace=guarded, labels={"skip": "yes"}).status_code == 201
    r = api.configmap("c", namespace=guarded)
    assert r.status_code == 403 and r.json()["message"].endswith("denied the request: selected")


def test_match_conditions_in_cel(api: Api, server: WebhookServer) -> None:
    path = unique("cel")
    server.handle(path, lambda rv: deny(rv, "matched"))
    api.configure("ValidatingWebhookConfiguration", "cel", [hook(server, "cel.example.com", path, matchConditions=[
        {"name": "prefixed", "expression": "object.metadata.name.startsWith('check-')"},
        {"name": "not-admin-exempt", "expression": "!('exempt' in object.metadata.labels)"},
        {"name": "create", "expression": "request.operation == 'CREATE' && oldObject == null"}])])
    assert api.configmap("plain").status_code == 201
    assert api.configmap("check-exempt", labels={"exempt": "x"}).status_code == 201
    assert requests_for(server, path, "plain") == [] and requests_for(server, path, "check-exempt") == []
    assert api.configmap("check-me").status_code == 403


def test_a_failing_match_condition_follows_the_failure_policy(api: Api, server: WebhookServer) -> None:
    path = unique("celerr")
    server.handle(path, lambda rv: allow(rv))
    cond = [{"name": "missing", "expression": "object.spec.replicas > 1"}]  # ConfigMaps have no spec
    api.configure("ValidatingWebhookConfiguration", "a-fail", [hook(server, "fail.example.com", path, matchConditions=cond)])
    r = api.configmap("c1")
    assert r.status_code == 500
    assert r.json()["message"].startswith('Internal error occurred: failed calling webhook "fail.example.com": '
                                          "failed to evaluate match condition 'missing': no such key")


# -- mutating ------------------------------------------------------------------------------------------


def test_a_mutating_webhook_patches_and_the_result_is_validated_and_audited(webhook_hub: Hub, api: Api, server: WebhookServer) -> None:
    path = unique("mutate")

    def mutate(rv: dict[str, Any]) -> dict[str, Any]:
        name = rv["request"]["object"]["metadata"]["name"]
        if name == "breaks":
            return patch(rv, [{"op": "add", "path": "/metadata/labels/bad", "value": "not a valid label value!"}])
        return patch(rv, [{"op": "add", "path": "/metadata/labels/injected", "value": "yes"},
                          {"op": "add", "path": "/data/extra", "value": "1"}])

    server.handle(path, mutate)
    rule = [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]
    api.configure("MutatingWebhookConfiguration", "inject", [hook(server, "inject.example.com", path, rules=rule)])
    r = api.configmap("patched", labels={"own": "x"})
    assert r.status_code == 201, r.text
    assert r.json()["metadata"]["labels"] == {"own": "x", "injected": "yes"} and r.json()["data"]["extra"] == "1"
    stored = api("GET", "/api/v1/namespaces/default/configmaps/patched").json()
    assert stored["metadata"]["labels"]["injected"] == "yes" and stored["metadata"]["uid"]
    r = api.configmap("breaks")
    assert r.status_code == 422 and "metadata.labels: Invalid value: \"not a valid label value!\"" in r.json()["message"]
    # an update is patched and validated again
    r = api("PATCH", "/api/v1/namespaces/default/configmaps/patched", [{"op": "replace", "path": "/data/k", "value": "w"}])
    assert r.status_code == 200 and r.json()["data"] == {"k": "w", "extra": "1"}
    event = created_event(webhook_hub, api)
    assert json.loads(event["annotations"]["mutation.webhook.admission.k8s.io/round_0_index_0"]) == {
        "configuration": "inject", "webhook": "inject.example.com", "mutated": True}


def test_reinvocation_if_needed(api: Api, server: WebhookServer) -> None:
    first, second = unique("first"), unique("second")

    def add_label(key: str):
        def handler(rv: dict[str, Any]) -> dict[str, Any]:
            labels = rv["request"]["object"]["metadata"].get("labels") or {}
            if key in labels:
                return allow(rv)
            return patch(rv, [{"op": "add", "path": f"/metadata/labels/{key}", "value": "1"}])
        return handler

    server.handle(first, add_label("first"))
    server.handle(second, add_label("second"))
    api.configure("MutatingWebhookConfiguration", "a-first", [hook(server, "first.example.com", first, reinvocationPolicy="IfNeeded")])
    api.configure("MutatingWebhookConfiguration", "b-second", [hook(server, "second.example.com", second)])
    r = api.configmap("twice", labels={"x": "y"})
    assert r.status_code == 201, r.text
    assert r.json()["metadata"]["labels"] == {"x": "y", "first": "1", "second": "1"}
    calls = requests_for(server, first, "twice")
    assert len(calls) == 2 and calls[1]["object"]["metadata"]["labels"]["second"] == "1"
    assert len(requests_for(server, second, "twice")) == 1


def test_dry_run_calls_side_effect_free_webhooks_and_stores_nothing(api: Api, server: WebhookServer) -> None:
    path = unique("dry")
    server.handle(path, lambda rv: patch(rv, [{"op": "add", "path": "/data/dry", "value": str(rv["request"]["dryRun"])}]))
    api.configure("MutatingWebhookConfiguration", "dry", [hook(server, "dry.example.com", path, sideEffects="NoneOnDryRun")])
    r = api.configmap("dry", dryRun="All")
    assert r.status_code == 201 and r.json()["data"]["dry"] == "True"
    assert requests_for(server, path, "dry")[0]["options"]["dryRun"] == ["All"]
    assert api("GET", "/api/v1/namespaces/default/configmaps/dry").status_code == 404


def test_a_service_reference_resolves_through_the_hub_setting(api: Api, server: WebhookServer) -> None:
    path = unique("svc")
    server.handle(path, lambda rv: deny(rv, "via service"))
    api.configure("ValidatingWebhookConfiguration", "svc", [{
        **hook(server, "svc.example.com", path),
        "clientConfig": {"service": {"namespace": "default", "name": "webhook", "port": server.port, "path": path},
                         "caBundle": server.ca_bundle}}])
    r = api.configmap("x")
    assert r.status_code == 403 and r.json()["message"].endswith("denied the request: via service")
    assert SERVICE_NAME == "webhook.default.svc"


# -- faults --------------------------------------------------------------------------------------------


def test_a_slow_webhook_fails_closed_within_its_timeout_and_stalls_nobody_else(webhook_hub: Hub, server: WebhookServer, cluster: str) -> None:
    path = unique("slow")
    release = threading.Event()
    server.handle(path, lambda rv: (release.wait(60), allow(rv))[1])
    api = Api(webhook_hub, cluster)
    other = Api(webhook_hub, cluster + "-other")
    try:
        api.configure("ValidatingWebhookConfiguration", "slow", [hook(server, "slow.example.com", path, timeoutSeconds=2)])
        result: dict[str, Any] = {}

        def slow_create() -> None:
            started = time.monotonic()
            result["response"] = api.configmap("slow")
            result["took"] = time.monotonic() - started

        t = threading.Thread(target=slow_create)
        t.start()
        wait_for(lambda: requests_for(server, path, "slow"), timeout=30, what="the webhook called")
        started = time.monotonic()
        assert other.configmap("meanwhile").status_code == 201  # not behind the stalled call
        assert time.monotonic() - started < 2 or t.is_alive()
        t.join(60)
        r = result["response"]
        assert r.status_code == 500
        assert r.json()["message"] == (f'Internal error occurred: failed calling webhook "slow.example.com": failed to call webhook: '
                                       f'Post "{server.url(path)}?timeout=2s": context deadline exceeded')
        assert result["took"] < 20
    finally:
        release.set()
        api.client.close()
        other.client.close()


def test_failure_policy_ignore_goes_on_and_is_audited(webhook_hub: Hub, api: Api, server: WebhookServer) -> None:
    path = unique("garbage")
    server.handle(path, lambda rv: b"this is not json")
    api.configure("ValidatingWebhookConfiguration", "garbage", [
        hook(server, "ignored.example.com", path, failurePolicy="Ignore"),
    ])
    r = api.configmap("went-on")
    assert r.status_code == 201, r.text
    event = created_event(webhook_hub, api)
    assert event["annotations"]["failed-open.validating.webhook.admission.k8s.io/round_0_index_0"] == "ignored.example.com"


def test_garbage_and_wrong_answers_fail_closed(api: Api, server: WebhookServer) -> None:
    garbage, wrong_uid = unique("garbage"), unique("uid")
    server.handle(garbage, lambda rv: b"<html>oops</html>")
    server.handle(wrong_uid, lambda rv: {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                         "response": {"uid": "nope", "allowed": True}})
    api.configure("ValidatingWebhookConfiguration", "a", [hook(server, "garbage.example.com", garbage)])
    r = api.configmap("c1")
    assert r.status_code == 500
    assert r.json()["message"].startswith('Internal error occurred: failed calling webhook "garbage.example.com": '
                                          "failed to call webhook: couldn't get version/kind; json parse error")
    assert api("DELETE", f"{GROUP_VERSION}/validatingwebhookconfigurations/a").status_code == 200
    api.configure("ValidatingWebhookConfiguration", "b", [hook(server, "uid.example.com", wrong_uid)])
    r = wait_for(lambda: (resp := api.configmap("c2")).status_code == 500 and resp, timeout=30, what="the uid check")
    assert 'failed calling webhook "uid.example.com": failed to call webhook: expected response.uid="' in r.json()["message"]


def test_tls_is_verified_against_the_ca_bundle(api: Api, server: WebhookServer) -> None:
    path = unique("tls")
    server.handle(path, lambda rv: allow(rv))
    other_ca = base64.b64encode(make_ca_and_cert(["x"])[0].encode()).decode()
    api.configure("ValidatingWebhookConfiguration", "tls", [{**hook(server, "tls.example.com", path),
                                                             "clientConfig": {"url": server.url(path), "caBundle": other_ca}}])
    r = api.configmap("c1")
    assert r.status_code == 500
    assert r.json()["message"] == (f'Internal error occurred: failed calling webhook "tls.example.com": failed to call webhook: '
                                   f'Post "{server.url(path)}?timeout=10s": tls: failed to verify certificate: '
                                   "x509: certificate signed by unknown authority")
    assert requests_for(server, path, "c1") == []


def test_match_policy_equivalent_sends_the_version_the_rule_names(api: Api, server: WebhookServer) -> None:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"},
                    "versions": [{"name": v, "served": True, "storage": v == "v1",
                                  "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
                                 for v in ("v1", "v2")]}}
    assert api("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd).status_code == 201
    equivalent, exact = unique("equivalent"), unique("exact")
    server.handle(equivalent, lambda rv: allow(rv))
    server.handle(exact, lambda rv: allow(rv))
    rule = [{"operations": ["CREATE"], "apiGroups": ["example.com"], "apiVersions": ["v1"], "resources": ["widgets"]}]
    api.configure("ValidatingWebhookConfiguration", "versions", [
        hook(server, "equivalent.example.com", equivalent, rules=rule),
        hook(server, "exact.example.com", exact, rules=rule, matchPolicy="Exact")])

    def create(version: str, name: str) -> int:
        return api("POST", f"/apis/example.com/{version}/namespaces/default/widgets",
                   {"apiVersion": f"example.com/{version}", "kind": "Widget", "metadata": {"name": name}}).status_code

    assert wait_for(lambda: create("v2", "through-v2") == 201, timeout=30, what="the CRD served")
    assert create("v1", "through-v1") == 201
    calls = requests_for(server, equivalent, "through-v2")
    assert len(calls) == 1
    assert calls[0]["kind"] == {"group": "example.com", "version": "v1", "kind": "Widget"}
    assert calls[0]["requestKind"] == {"group": "example.com", "version": "v2", "kind": "Widget"}
    assert calls[0]["object"]["apiVersion"] == "example.com/v1"
    assert requests_for(server, exact, "through-v2") == []
    assert len(requests_for(server, exact, "through-v1")) == 1


def test_a_broken_catch_all_webhook_cannot_lock_its_own_configuration_in(api: Api) -> None:
    everything = [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"]}]
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        api.configure(kind, "broken", [{"name": "broken.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                                        "clientConfig": {"url": "https://127.0.0.1:1/nothing-listens"}, "rules": everything}])
    r = api.configmap("blocked")
    assert r.status_code == 500 and 'failed calling webhook "broken.example.com": failed to call webhook: Post ' in r.json()["message"]
    for plural in ("validatingwebhookconfigurations", "mutatingwebhookconfigurations"):
        assert api("DELETE", f"{GROUP_VERSION}/{plural}/broken").status_code == 200
    assert wait_for(lambda: api.configmap("unblocked").status_code == 201, timeout=30, what="the webhooks gone")


def test_a_server_that_refuses_tls_follows_the_failure_policy(api: Api) -> None:
    import socket

    plain = socket.socket()
    plain.bind(("127.0.0.1", 0))
    plain.listen(16)
    port = plain.getsockname()[1]

    def serve() -> None:
        while True:
            try:
                conn, _ = plain.accept()
            except OSError:
                return
            with conn:
                conn.recv(64)
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")

    threading.Thread(target=serve, daemon=True).start()
    try:
        url = f"https://127.0.0.1:{port}/plain"
        base = {"sideEffects": "None", "admissionReviewVersions": ["v1"], "clientConfig": {"url": url},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]}
        api.configure("ValidatingWebhookConfiguration", "plain", [
            {**base, "name": "ignored.example.com", "failurePolicy": "Ignore",
             "objectSelector": {"matchLabels": {"policy": "ignore"}}},
            {**base, "name": "closed.example.com", "objectSelector": {"matchLabels": {"policy": "fail"}}}])
        assert api.configmap("let-through", labels={"policy": "ignore"}).status_code == 201
        r = api.configmap("refused", labels={"policy": "fail"})
        assert r.status_code == 500
        assert r.json()["message"] == ('Internal error occurred: failed calling webhook "closed.example.com": failed to call webhook: '
                                       f'Post "{url}?timeout=10s": http: server gave HTTP response to HTTPS client')
    finally:
        plain.close()


def test_a_v1beta1_only_webhook_gets_a_v1beta1_review(api: Api, server: WebhookServer) -> None:
    path = unique("beta")
    server.handle(path, lambda rv: {**deny(rv, f"got {rv['apiVersion']}"), "apiVersion": rv["apiVersion"]})
    api.configure("ValidatingWebhookConfiguration", "beta", [hook(server, "beta.example.com", path, admissionReviewVersions=["v1beta1"])])
    r = api.configmap("c1")
    assert r.status_code == 403 and r.json()["message"].endswith("denied the request: got admission.k8s.io/v1beta1")
