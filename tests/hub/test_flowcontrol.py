"""API Priority and Fairness against a real hub: the configuration through kubectl, the PF
headers, a FlowSchema edit reclassifying requests, 429 from a priority level with tiny queues,
and one tenant's flood not slowing another tenant's reads."""

from __future__ import annotations

import json
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from bench import fairness

from ..harness import Hub, Kubectl, wait_for

TINY_TOKEN = "tiny-user-token-0123456789abcdef"
CLASS_TOKEN = "class-user-token-0123456789abcdef"
FLOWCONTROL = "/apis/flowcontrol.apiserver.k8s.io/v1"
FS_HEADER, PL_HEADER = "x-kubernetes-pf-flowschema-uid", "x-kubernetes-pf-prioritylevel-uid"


@pytest.fixture(scope="module")
def apf_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    d = tmp_path_factory.mktemp("apfhub")
    tokens = fairness.write_token_file(d)
    with tokens.open("a") as f:
        f.write(f'{TINY_TOKEN},tiny-user,3001,"tiny-devs"\n{CLASS_TOKEN},class-user,3002,"class-devs"\n')
    h = Hub(d / "data", extra=["--token-auth-file", str(tokens), "--no-cluster-controller", "--no-splitter"]).start()
    # the hub serves at once and writes its configuration right after
    wait_for(lambda: all(h.json("GET", f"{FLOWCONTROL}/flowschemas/{name}")[0] == 200 for name in ("catch-all", "global-default"))
             and h.json("GET", f"{FLOWCONTROL}/prioritylevelconfigurations/global-default")[0] == 200,
             timeout=30, what="the bootstrap configuration")
    fairness.set_up_tenants(h.url, h.ca, h.token)
    yield h
    h.stop()


@pytest.fixture
def kubectl(apf_hub: Hub) -> Kubectl:
    return Kubectl(apf_hub.kubeconfig)


def client(hub: Hub, token: str) -> httpx.Client:
    return httpx.Client(base_url=hub.url, verify=hub.ssl_context(), headers={"Authorization": f"Bearer {token}"},
                        timeout=30)


def uid_of(hub: Hub, kind: str, name: str) -> str:
    code, body = hub.json("GET", f"{FLOWCONTROL}/{kind}/{name}")
    assert code == 200, body
    return body["metadata"]["uid"]


def metric(hub: Hub, name: str, **labels: str) -> float:
    _, _, raw = hub.request("GET", "/metrics")
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    total = 0.0
    for line in raw.decode().splitlines():
        if not line.startswith(name + "{"):
            continue
        got = line[len(name) + 1:line.index("}")]
        if all(f'{k}="{v}"' in got.split(",") for k, v in labels.items()) or not want:
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_kubectl_shows_kubes_default_configuration(apf_hub: Hub, kubectl: Kubectl, tmp_path: Path) -> None:
    out = kubectl("get", "flowschemas").out.splitlines()
    assert out[0].split() == ["NAME", "PRIORITYLEVEL", "MATCHINGPRECEDENCE", "DISTINGUISHERMETHOD", "AGE", "MISSINGPL"]
    rows = {line.split()[0]: line.split() for line in out[1:]}
    assert {"exempt", "probes", "system-leader-election", "system-node-high", "system-nodes", "kube-controller-manager",
            "kube-scheduler", "kube-system-service-accounts", "service-accounts", "global-default", "catch-all"} <= set(rows)
    assert rows["global-default"][1:4] == ["global-default", "9900", "ByUser"]
    assert rows["exempt"][1:4] == ["exempt", "1", "<none>"]
    wait_for(lambda: all(line.split()[-1] == "False" for line in kubectl("get", "flowschemas").out.splitlines()[1:]),
             timeout=30, what="every default FlowSchema's Dangling condition False")
    out = kubectl("get", "prioritylevelconfigurations").out.splitlines()
    assert out[0].split() == ["NAME", "TYPE", "NOMINALCONCURRENCYSHARES", "QUEUES", "HANDSIZE", "QUEUELENGTHLIMIT", "AGE"]
    rows = {line.split()[0]: line.split() for line in out[1:]}
    assert rows["exempt"][1:6] == ["Exempt", "<none>", "<none>", "<none>", "<none>"]
    assert rows["catch-all"][1:6] == ["Limited", "5", "<none>", "<none>", "<none>"]
    assert rows["global-default"][1:6] == ["Limited", "20", "128", "6", "50"]
    fs = kubectl.get_json("flowschema", "global-default")
    assert fs["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"] == "true"
    assert {"type": "Dangling", "status": "False", "reason": "Found",
            "message": 'This FlowSchema references the PriorityLevelConfiguration object named "global-default" and it exists'
            }.items() <= fs["status"]["conditions"][0].items()
    # a tenant sees the hub's configuration but cannot change it
    tenant = Kubectl(apf_hub.kubeconfig_for(fairness.QUIET_CLUSTER, tmp_path))
    assert "global-default" in tenant("get", "flowschemas").out
    err = tenant.fail("delete", "flowschema", "global-default").err
    assert "Forbidden" in err or "forbidden" in err
    err = tenant.fail("create", "-f", "-", stdin=yaml.safe_dump(_priority_level("mine", 1, 1, 1))).err
    assert "flow control is configured in the root logical cluster only" in err


def test_every_response_names_its_flow_schema_and_priority_level(apf_hub: Hub) -> None:
    with client(apf_hub, fairness.QUIET_TOKEN) as c:
        r = c.get(f"/clusters/{fairness.QUIET_CLUSTER}/api/v1/namespaces/default/configmaps/quiet")
        assert r.status_code == 200
        assert r.headers[FS_HEADER] == uid_of(apf_hub, "flowschemas", "global-default")
        assert r.headers[PL_HEADER] == uid_of(apf_hub, "prioritylevelconfigurations", "global-default")
        denied = c.get("/clusters/someone-else/api/v1/namespaces/default/configmaps")  # 403s are classified too
        assert denied.status_code == 403 and denied.headers[FS_HEADER] == r.headers[FS_HEADER]
    code, headers, _ = apf_hub.request("GET", "/api/v1/namespaces")  # the admin: system:masters
    assert {k.lower(): v for k, v in headers.items()}[FS_HEADER] == uid_of(apf_hub, "flowschemas", "exempt")
    for name in ("current_inqueue_requests", "current_executing_requests", "dispatched_requests_total",
                 "request_wait_duration_seconds_count", "nominal_limit_seats"):
        _, _, raw = apf_hub.request("GET", "/metrics")
        assert f"apiserver_flowcontrol_{name}{{" in raw.decode(), name
    assert metric(apf_hub, "apiserver_flowcontrol_nominal_limit_seats", priority_level="global-default") == 5  # ceil(60*20/245)
    assert metric(apf_hub, "apiserver_flowcontrol_dispatched_requests_total", priority_level="global-default",
                  flow_schema="global-default") >= 1


def test_a_deleted_mandatory_object_comes_back(apf_hub: Hub, kubectl: Kubectl) -> None:
    old = uid_of(apf_hub, "flowschemas", "catch-all")
    kubectl("delete", "flowschema", "catch-all")
    wait_for(lambda: apf_hub.json("GET", f"{FLOWCONTROL}/flowschemas/catch-all")[0] == 200
             and uid_of(apf_hub, "flowschemas", "catch-all") != old, timeout=30, what="catch-all recreated")


def _flow_schema(name: str, level: str, user: str, precedence: int = 50) -> dict:
    return {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": name},
            "spec": {"priorityLevelConfiguration": {"name": level}, "matchingPrecedence": precedence,
                     "distinguisherMethod": {"type": "ByUser"},
                     "rules": [{"subjects": [{"kind": "User", "user": {"name": user}}],
                                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                                   "clusterScope": True, "namespaces": ["*"]}]}]}}


def _priority_level(name: str, queues: int, hand: int, length: int) -> dict:
    return {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
            "metadata": {"name": name},
            "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1, "limitResponse": {
                "type": "Queue", "queuing": {"queues": queues, "handSize": hand, "queueLengthLimit": length}}}}}


def test_a_flow_schema_edit_changes_classification(apf_hub: Hub, kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump(_flow_schema("class-test", "workload-low", "class-user")))
    mine = uid_of(apf_hub, "flowschemas", "class-test")
    path = "/api/v1/namespaces"  # forbidden for class-user, classified all the same

    def classified() -> str:
        with client(apf_hub, CLASS_TOKEN) as c:
            return c.get(path).headers[FS_HEADER]

    wait_for(lambda: classified() == mine, timeout=30, what="class-user's requests in class-test")
    with client(apf_hub, CLASS_TOKEN) as c:
        assert c.get(path).headers[PL_HEADER] == uid_of(apf_hub, "prioritylevelconfigurations", "workload-low")
    kubectl("patch", "flowschema", "class-test", "--type=json", "-p",
            json.dumps([{"op": "replace", "path": "/spec/rules/0/subjects/0/user/name", "value": "somebody-else"}]))
    default = uid_of(apf_hub, "flowschemas", "global-default")
    wait_for(lambda: classified() == default, timeout=30, what="class-user back in global-default")
    # a schema naming a missing level is Dangling, and skipped
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump(_flow_schema("class-test", "no-such-level", "class-user")))
    wait_for(lambda: kubectl("get", "flowschema", "class-test").out.splitlines()[1].split()[-1] == "True",
             timeout=30, what="MissingPL True")
    assert classified() == default
    kubectl("delete", "flowschema", "class-test")


def _stall(hub: Hub, token: str, cluster: str) -> ssl.SSLSocket:
    """A create whose body never comes: the handler waits for it, holding the request's seat."""
    raw = socket.create_connection(("127.0.0.1", hub.port), timeout=30)
    sock = hub.ssl_context().wrap_socket(raw, server_hostname="127.0.0.1")
    sock.sendall((f"POST /clusters/{cluster}/api/v1/namespaces/default/configmaps HTTP/1.1\r\n"
                  f"Host: 127.0.0.1:{hub.port}\r\nAuthorization: Bearer {token}\r\n"
                  "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n").encode())
    return sock


def test_a_priority_level_with_tiny_queues_answers_429(apf_hub: Hub, kubectl: Kubectl) -> None:
    cluster = "tiny-tenant"
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "tiny-admin"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "tiny-user"}]}
    assert apf_hub.json("POST", f"/clusters/{cluster}/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", binding)[0] == 201
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all([_priority_level("tiny", 1, 1, 1),
                                                          _flow_schema("tiny", "tiny", "tiny-user", 60)]))
    fs_uid = uid_of(apf_hub, "flowschemas", "tiny")
    pl_uid = uid_of(apf_hub, "prioritylevelconfigurations", "tiny")
    path = f"/clusters/{cluster}/api/v1/namespaces/default/configmaps"
    with client(apf_hub, TINY_TOKEN) as c:
        wait_for(lambda: c.get(path).headers[FS_HEADER] == fs_uid, timeout=30, what="tiny-user in FlowSchema tiny")
        assert metric(apf_hub, "apiserver_flowcontrol_nominal_limit_seats", priority_level="tiny") == 1
        running = _stall(apf_hub, TINY_TOKEN, cluster)
        wait_for(lambda: metric(apf_hub, "apiserver_flowcontrol_current_executing_requests", priority_level="tiny") == 1,
                 timeout=30, what="the first request seated")
        queued = _stall(apf_hub, TINY_TOKEN, cluster)
        wait_for(lambda: metric(apf_hub, "apiserver_flowcontrol_current_inqueue_requests", priority_level="tiny") == 1,
                 timeout=30, what="the second request queued")
        r = c.get(path)
        assert r.status_code == 429
        assert r.text == "Too many requests, please try again later.\n"
        assert r.headers["retry-after"] == "1"
        assert r.headers["content-type"].startswith("text/plain")
        assert (r.headers[FS_HEADER], r.headers[PL_HEADER]) == (fs_uid, pl_uid)
        assert metric(apf_hub, "apiserver_flowcontrol_rejected_requests_total", priority_level="tiny",
                      reason="queue-full") >= 1
        # another tenant's reads go on meanwhile
        with client(apf_hub, fairness.QUIET_TOKEN) as quiet:
            assert quiet.get(f"/clusters/{fairness.QUIET_CLUSTER}/api/v1/namespaces/default/configmaps/quiet").status_code == 200
        running.close()
        wait_for(lambda: metric(apf_hub, "apiserver_flowcontrol_current_inqueue_requests", priority_level="tiny") == 0,
                 timeout=30, what="the queued request dispatched when the first one's client left")
        queued.close()
        wait_for(lambda: c.get(path).status_code == 200, timeout=30, what="tiny-user served again")
    kubectl("delete", "flowschema", "tiny")
    kubectl("delete", "prioritylevelconfiguration", "tiny")


def test_a_noisy_tenant_does_not_slow_a_quiet_one(apf_hub: Hub) -> None:
    """The noisy tenant creates ConfigMaps from 64 connections (another process); the quiet
    tenant's GETs keep a p99 under 100 ms. On a machine so loaded that the quiet tenant alone has
    a p99 over 12.5 ms (measured in the same test), the bound is eight times that, or else what
    flow control promises whatever the load: the quiet tenant never queues behind the flood, so
    its slowest reads are quicker than the flood's typical write (which waits its turn among 64).
    Without flow control the quiet p99 under this flood is 20 to 30 times its p99 alone."""
    result = fairness.measure(apf_hub.url, apf_hub.ca, gets=300, connections=64)
    assert result["noisy_writes_per_s"], result  # the flood did flood
    bound = max(100.0, 8 * result["alone_p99_ms"])
    assert result["flooded_p99_ms"] < bound or result["flooded_p99_ms"] < result["noisy_p50_ms"] / 2, json.dumps(result)
