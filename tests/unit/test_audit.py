"""Audit: kube's policy matching and validation, and the JSON lines the log writes."""

from __future__ import annotations

import json
import os
import re
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import REGISTRY

from fleetplane.pipeline.audit import (
    AuditLog,
    Level,
    Policy,
    PolicyError,
    Stage,
    load_policy,
    parse_policy,
)
from fleetplane.pipeline.user import UserInfo

ALICE = UserInfo("alice", "uid-1", ("devs", "system:authenticated"), {"scope": ("a",)})
BOB = UserInfo("bob", groups=("ops",))
MICRO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def policy(*rules: dict[str, Any], **top: Any) -> Policy:
    return parse_policy({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": list(rules), **top})


def level(p: Policy, user: UserInfo = ALICE, verb: str = "get", **kw: Any) -> Level:
    return p.decide(user, verb, **kw).level


# -- matching ------------------------------------------------------------------------------------


def test_first_matching_rule_wins_and_no_match_is_none() -> None:
    p = policy({"level": "None", "users": ["bob"]},
               {"level": "RequestResponse", "userGroups": ["devs"], "verbs": ["create"]},
               {"level": "Metadata", "verbs": ["get", "create"]})
    assert level(p, BOB, "get", resource="pods") is Level.NONE
    assert level(p, ALICE, "create", resource="pods") is Level.REQUEST_RESPONSE
    assert level(p, ALICE, "get", resource="pods") is Level.METADATA
    assert level(p, ALICE, "delete", resource="pods") is Level.NONE  # no rule matched
    assert p.decide(ALICE, "delete", resource="pods") == (Level.NONE, frozenset(), False)


def test_resource_patterns() -> None:
    p = policy({"level": "Request", "resources": [{"group": "", "resources": ["pods/*"]}]},
               {"level": "RequestResponse", "resources": [{"group": "*", "resources": ["*/scale"]}]},
               {"level": "Metadata", "resources": [{"group": "apps", "resources": ["*"]}]},
               {"level": "Request", "resources": [{"group": "", "resources": ["configmaps"],
                                                   "resourceNames": ["settings"]}]},
               {"level": "Metadata", "resources": [{"group": "batch"}]})
    assert level(p, resource="pods") is Level.REQUEST  # as kube: pods/* covers pods itself
    assert level(p, resource="pods", subresource="log") is Level.REQUEST
    assert level(p, group="apps", resource="deployments", subresource="scale") is Level.REQUEST_RESPONSE
    assert level(p, group="", resource="replicationcontrollers", subresource="scale") is Level.REQUEST_RESPONSE
    assert level(p, group="apps", resource="deployments") is Level.METADATA
    assert level(p, group="apps", resource="deployments", subresource="status") is Level.METADATA  # "*" covers subresources
    assert level(p, resource="configmaps", name="settings") is Level.REQUEST
    assert level(p, resource="configmaps", name="other") is Level.NONE
    assert level(p, group="batch", resource="jobs", subresource="status") is Level.METADATA  # no resources: all
    assert level(p, resource="services") is Level.NONE
    assert level(p, resource_request=False, path="/api") is Level.NONE


def test_namespaces_and_cluster_scope() -> None:
    p = policy({"level": "Request", "namespaces": [""]},
               {"level": "Metadata", "namespaces": ["kube-system"], "resources": [{"resources": ["configmaps"]}]})
    assert level(p, resource="namespaces", name="x") is Level.REQUEST  # cluster-scoped
    assert level(p, resource="configmaps", namespace="kube-system") is Level.METADATA
    assert level(p, resource="configmaps", namespace="default") is Level.NONE
    assert level(p, resource_request=False, path="/healthz") is Level.NONE  # namespaces: resource requests only


def test_non_resource_urls() -> None:
    p = policy({"level": "None", "nonResourceURLs": ["/healthz*", "/version"]},
               {"level": "Metadata", "nonResourceURLs": ["*"]},
               {"level": "Request"})
    assert level(p, resource_request=False, path="/healthz") is Level.NONE
    assert level(p, resource_request=False, path="/healthz/etcd") is Level.NONE
    assert level(p, resource_request=False, path="/version") is Level.NONE
    assert level(p, resource_request=False, path="/version/x") is Level.METADATA
    assert level(p, resource_request=False, path="/metrics") is Level.METADATA
    assert level(p, resource="pods") is Level.REQUEST  # URL rules never match resource requests


def test_omit_stages_union_and_managed_fields_override() -> None:
    p = policy({"level": "Metadata", "verbs": ["get"], "omitStages": ["ResponseStarted"], "omitManagedFields": False},
               {"level": "Metadata"}, omitStages=["RequestReceived"], omitManagedFields=True)
    assert p.decide(ALICE, "get") == (Level.METADATA, {Stage.REQUEST_RECEIVED, Stage.RESPONSE_STARTED}, False)
    assert p.decide(ALICE, "list") == (Level.METADATA, {Stage.REQUEST_RECEIVED}, True)


# -- loading -------------------------------------------------------------------------------------


def _error(**doc: Any) -> str:
    with pytest.raises(PolicyError) as exc:
        parse_policy({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", **doc})
    return str(exc.value)


def test_invalid_policies_refused_with_kubes_messages() -> None:
    assert _error(rules=[{"level": "Metadata", "resources": [{"resources": ["pods"]}], "nonResourceURLs": ["/x"]}]) == (
        'rules[0].nonResourceURLs: Invalid value: ["/x"]: rules cannot apply to both regular resources and non-resource URLs')
    assert _error(rules=[{"level": "Metadata", "namespaces": ["a"], "nonResourceURLs": ["/x"]}]).endswith(
        "rules cannot apply to both regular resources and non-resource URLs")
    assert _error(rules=[{"verbs": ["get"]}]) == "rules[0].level: Required value"
    assert _error(rules=[{"level": "Everything"}]) == (
        'rules[0].level: Unsupported value: "Everything": supported values: "None", "Metadata", "Request", "RequestResponse"')
    assert _error(rules=[{"level": "None", "omitStages": ["Done"]}]) == (
        'rules[0].omitStages[0]: Invalid value: "Done": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic')
    assert _error(rules=[{"level": "None", "nonResourceURLs": ["healthz", "/a*b"]}]) == (
        '[rules[0].nonResourceURLs[0]: Invalid value: "healthz": non-resource URL rules must begin with a \'/\' character, '
        "rules[0].nonResourceURLs[1]: Invalid value: \"/a*b\": non-resource URL wildcards '*' must be the final character of the rule]")
    assert _error(rules=[{"level": "None", "resources": [{"group": "Apps"}]}]).startswith(
        'rules[0].resources.group: Invalid value: "Apps": a lowercase RFC 1123 subdomain')
    assert _error(rules=[{"level": "None", "resources": [{"resourceNames": ["x"]}]}]) == (
        'rules[0].resources.resourceNames: Invalid value: ["x"]: using resourceNames requires at least one resource')
    assert _error(rules=[]) == "loaded illegal policy with 0 rules"
    with pytest.raises(PolicyError, match="unknown group version field audit.k8s.io/v1beta1, Kind=Policy in policy"):
        parse_policy({"apiVersion": "audit.k8s.io/v1beta1", "kind": "Policy", "rules": [{"level": "None"}]})


def test_load_policy_from_file(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
                                    "rules": [{"level": "Metadata", "extra": 1}]}))
    p = load_policy(path)
    assert p.decide(ALICE, "get").level is Level.METADATA
    assert "falling back to lenient decoding" in caplog.text  # unknown fields: a warning, as kube
    path.write_text(yaml.safe_dump({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": []}))
    with pytest.raises(PolicyError, match=f"loaded illegal policy with 0 rules: from file {re.escape(str(path))}"):
        load_policy(path)


# -- the log -------------------------------------------------------------------------------------


@pytest.fixture
def audit_path(tmp_path: Path) -> Path:
    return tmp_path / "audit.log"


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def make(path: Path, lvl: str, **kw: Any) -> AuditLog:
    return AuditLog(path, policy({"level": lvl}), **kw)


POD: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default", "uid": "u-1",
                                                       "resourceVersion": "7", "managedFields": [{"manager": "kubectl"}]},
       "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def create_pod(log: AuditLog, **kw: Any) -> None:
    ctx = log.begin(ALICE, verb="create", request_uri="/clusters/team-a/api/v1/namespaces/default/pods?fieldManager=x",
                    impersonated_user=BOB, source_ips=["10.0.0.1", "127.0.0.1"], user_agent="kubectl/v1.34",
                    group="", version="v1", resource="pods", namespace="default", cluster="team-a", **kw)
    assert ctx is not None
    ctx.request_object({**POD, "metadata": {k: v for k, v in POD["metadata"].items() if k != "uid"}})
    ctx.annotate("authorization.k8s.io/decision", "allow")
    ctx.response_object(POD)
    ctx.finish(201)


@pytest.mark.parametrize("lvl,request_body,response_body", [
    ("Metadata", False, False), ("Request", True, False), ("RequestResponse", True, True)])
def test_event_lines_per_level(audit_path: Path, lvl: str, request_body: bool, response_body: bool) -> None:
    log = make(audit_path, lvl)
    create_pod(log)
    log.close()
    received, complete = lines(audit_path)
    assert [received["stage"], complete["stage"]] == ["RequestReceived", "ResponseComplete"]
    assert received["auditID"] == complete["auditID"] and len(complete["auditID"]) == 36
    assert list(complete)[:8] == ["kind", "apiVersion", "level", "auditID", "stage", "requestURI", "verb", "user"]
    assert complete["kind"] == "Event" and complete["apiVersion"] == "audit.k8s.io/v1" and complete["level"] == lvl
    assert complete["requestURI"] == "/clusters/team-a/api/v1/namespaces/default/pods?fieldManager=x"
    assert complete["verb"] == "create"
    assert complete["user"] == {"username": "alice", "uid": "uid-1", "groups": ["devs", "system:authenticated"],
                                "extra": {"scope": ["a"]}}
    assert complete["impersonatedUser"] == {"username": "bob", "groups": ["ops"]}
    assert complete["sourceIPs"] == ["10.0.0.1", "127.0.0.1"] and complete["userAgent"] == "kubectl/v1.34"
    assert received["objectRef"] == {"resource": "pods", "namespace": "default", "apiVersion": "v1"}
    assert complete["objectRef"] == {"resource": "pods", "namespace": "default", "name": "web",
                                     "resourceVersion": "7", "apiVersion": "v1"}  # completed from the body
    assert "responseStatus" not in received
    assert complete["responseStatus"] == {"metadata": {}, "code": 201}
    assert complete["annotations"] == {"fleetplane.io/logical-cluster": "team-a",
                                       "authorization.k8s.io/decision": "allow"}
    assert received["annotations"] == {"fleetplane.io/logical-cluster": "team-a"}
    assert MICRO.match(complete["requestReceivedTimestamp"]) and MICRO.match(complete["stageTimestamp"])
    assert received["stageTimestamp"] == received["requestReceivedTimestamp"]
    assert ("requestObject" in complete) is request_body and ("responseObject" in complete) is response_body
    if request_body:
        assert complete["requestObject"]["spec"] == POD["spec"]
    if response_body:
        assert complete["responseObject"] == POD  # managedFields kept unless omitted
    assert "requestObject" not in received


def test_failures_record_the_status_and_managed_fields_can_be_omitted(audit_path: Path) -> None:
    log = AuditLog(audit_path, policy({"level": "RequestResponse", "omitStages": ["RequestReceived"]},
                                      omitManagedFields=True))
    ctx = log.begin(ALICE, verb="get", request_uri="/api/v1/namespaces/default/pods/web", version="v1",
                    resource="pods", namespace="default", name="web")
    assert ctx is not None
    ctx.response_object(POD)
    ctx.finish(200)
    ctx = log.begin(ALICE, verb="get", request_uri="/api/v1/namespaces/default/pods/gone", version="v1",
                    resource="pods", namespace="default", name="gone")
    assert ctx is not None
    status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": 'pods "gone" not found',
              "reason": "NotFound", "details": {"name": "gone", "kind": "pods"}, "code": 404}
    ctx.response_object(status)
    ctx.finish(404, status)
    log.close()
    ok, failed = lines(audit_path)  # RequestReceived omitted
    assert "managedFields" not in ok["responseObject"]["metadata"] and ok["responseObject"]["spec"] == POD["spec"]
    assert "managedFields" in POD["metadata"]  # the caller's object is untouched
    assert failed["responseStatus"] == {"metadata": {}, "status": "Failure", "message": 'pods "gone" not found',
                                        "reason": "NotFound", "details": {"name": "gone", "kind": "pods"}, "code": 404}


def test_watch_panic_non_resource_and_user_agent(audit_path: Path) -> None:
    log = make(audit_path, "RequestResponse")
    ctx = log.begin(ALICE, verb="watch", request_uri="/api/v1/pods?watch=1", version="v1", resource="pods",
                    user_agent="x" * 2000)
    assert ctx is not None
    ctx.response_started()
    ctx.finish(200)
    ctx = log.begin(ALICE, verb="get", request_uri="/metrics", resource_request=False)
    assert ctx is not None
    ctx.request_object({"ignored": True})
    ctx.response_object({"ignored": True})
    ctx.finish(200)
    ctx = log.begin(ALICE, verb="list", request_uri="/api/v1/pods", version="v1", resource="pods")
    assert ctx is not None
    ctx.panic("boom")
    ctx.finish(200)  # after a panic nothing more is emitted
    log.close()
    stages = [(e["verb"], e["stage"]) for e in lines(audit_path)]
    assert stages == [("watch", "RequestReceived"), ("watch", "ResponseStarted"), ("watch", "ResponseComplete"),
                      ("get", "RequestReceived"), ("get", "ResponseComplete"),
                      ("list", "RequestReceived"), ("list", "Panic")]
    events = lines(audit_path)
    assert events[1]["responseStatus"] == {"metadata": {}, "code": 200}
    assert events[0]["userAgent"] == "x" * 1024 + "...TRUNCATED"
    assert "objectRef" not in events[4] and "requestObject" not in events[4] and "responseObject" not in events[4]
    assert events[6]["responseStatus"] == {"metadata": {}, "status": "Failure", "message": "APIServer panic'd: boom",
                                           "reason": "InternalError", "code": 500}


def test_level_none_is_not_audited(audit_path: Path) -> None:
    log = AuditLog(audit_path, policy({"level": "None", "users": ["alice"]}, {"level": "Metadata"}))
    assert log.begin(ALICE, verb="get", request_uri="/api", resource_request=False) is None
    assert log.begin(BOB, verb="get", request_uri="/api", resource_request=False) is not None
    log.close()
    assert [e["user"]["username"] for e in lines(audit_path)] == ["bob"]


SECRET: dict[str, Any] = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "default"},
          "data": {"password": "aHVudGVyMg=="}, "stringData": {"token": "s3cr3t-t0ken"}}


@pytest.mark.parametrize("verb,group,resource,subresource,body", [
    ("create", "", "secrets", "", SECRET),
    ("get", "", "secrets", "", SECRET),
    ("create", "", "serviceaccounts", "token",
     {"kind": "TokenRequest", "status": {"token": "s3cr3t-t0ken"}, "spec": {"audiences": ["x"]}}),
    ("create", "authentication.k8s.io", "tokenreviews", "",
     {"kind": "TokenReview", "spec": {"token": "s3cr3t-t0ken"}}),
])
def test_credentials_never_written_even_at_request_response(audit_path: Path, verb: str, group: str, resource: str,
                                                            subresource: str, body: dict[str, Any]) -> None:
    log = make(audit_path, "RequestResponse")
    ctx = log.begin(ALICE, verb=verb, request_uri="/x", group=group, version="v1", resource=resource,
                    subresource=subresource, namespace="default", name="db")
    assert ctx is not None and ctx.level is Level.METADATA
    ctx.request_object(body)
    ctx.request_object(json.dumps(body).encode())  # a patch's raw bytes alike
    ctx.response_object(body)
    ctx.finish(201)
    log.close()
    data = audit_path.read_bytes()
    assert b"aHVudGVyMg==" not in data and b"s3cr3t-t0ken" not in data
    events = lines(audit_path)
    assert [e["level"] for e in events] == ["Metadata", "Metadata"]
    assert all("requestObject" not in e and "responseObject" not in e for e in events)


def test_file_is_created_0600_and_appended(audit_path: Path) -> None:
    old = os.umask(0)
    try:
        log = make(audit_path, "Metadata")
    finally:
        os.umask(old)
    assert stat.S_IMODE(audit_path.stat().st_mode) == 0o600
    create_pod(log)
    log.close()
    log.close()  # idempotent
    log = make(audit_path, "Metadata")
    create_pod(log)
    log.close()
    assert len(lines(audit_path)) == 4


def _sample(name: str, labels: dict[str, str] | None = None) -> float:
    return REGISTRY.get_sample_value(name, labels or {}) or 0.0


class _StuckFile:
    """A file whose writes wait until released (a disk that stopped answering)."""

    def __init__(self, path: Path) -> None:
        self.release = threading.Event()
        self._f = path.open("ab")

    def write(self, data: bytes) -> int:
        self.release.wait(10)
        return self._f.write(data)

    def flush(self) -> None:
        self._f.flush()

    def close(self) -> None:
        self._f.close()


@pytest.fixture
def stuck(audit_path: Path) -> Iterator[tuple[AuditLog, _StuckFile]]:
    log = make(audit_path, "Metadata", max_queue=5)
    log._out.close()
    out = log._out = _StuckFile(audit_path)  # type: ignore[assignment]
    yield log, out
    out.release.set()
    log.close()


def test_a_full_queue_drops_events_without_blocking(stuck: tuple[AuditLog, _StuckFile], audit_path: Path) -> None:
    log, out = stuck
    dropped_before = _sample("apiserver_audit_error_total", {"plugin": "buffered"})
    events_before = _sample("apiserver_audit_event_total")
    started = time.monotonic()
    for _ in range(50):  # 100 events; the writer holds one batch, the queue five more
        create_pod(log)
    assert time.monotonic() - started < 1.0
    assert log.dropped >= 50  # the writer is stuck on its first batch: at most it and five more get through
    assert _sample("apiserver_audit_error_total", {"plugin": "buffered"}) - dropped_before == log.dropped
    assert _sample("apiserver_audit_event_total") - events_before == 100  # generated, written or not
    out.release.set()
    log.close()
    assert len(lines(audit_path)) == 100 - log.dropped


def test_failed_authentication_is_recorded_with_an_empty_user(audit_path: Path) -> None:
    log = make(audit_path, "Metadata")
    ctx = log.begin(None, verb="get", request_uri="/api", resource_request=False, source_ips=["10.1.1.1"])
    assert ctx is not None
    ctx.finish(401, {"kind": "Status", "status": "Failure", "message": "Unauthorized", "reason": "Unauthorized",
                     "code": 401})
    log.close()
    event = lines(audit_path)[-1]
    assert event["user"] == {} and "impersonatedUser" not in event and "objectRef" not in event
    assert event["responseStatus"] == {"metadata": {}, "status": "Failure", "message": "Unauthorized",
                                       "reason": "Unauthorized", "code": 401}
