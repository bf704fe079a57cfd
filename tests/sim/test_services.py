"""Services in a simulated cluster, with the real kubectl: allocation by the server (cluster IPs,
node ports), kube's defaults, validation messages and columns, EndpointSlices from the Pods, the
simulated load balancer's ingress."""

from __future__ import annotations

import ipaddress
import json
import textwrap
import uuid
from collections.abc import Iterator

import pytest

from ..harness import Kubectl, wait_for
from .conftest import Sim

CIDR = "10.100.0.0/24"
POOL = "192.168.50.0/29"


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    s = Sim(tmp_path_factory.mktemp("sim"), name="svc", extra=[
        "--kubelet-delay", "0.2", "--service-cluster-ip-range", CIDR, "--service-node-port-range", "30000-30010",
        "--load-balancer-pool", POOL]).start()
    yield s
    assert s.stop() == 0, s.logs()


@pytest.fixture
def k(sim: Sim) -> Iterator[Kubectl]:
    ns = "t-" + uuid.uuid4().hex[:8]
    code, body = sim.json("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    assert code == 201, body
    yield Kubectl(sim.kubeconfig, namespace=ns)
    sim.json("DELETE", f"/api/v1/namespaces/{ns}")


def _rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.strip().splitlines()]


def _apply(k: Kubectl, manifest: str) -> str:
    return k("apply", "-f", "-", stdin=textwrap.dedent(manifest)).out


DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx
        ports: [{name: http, containerPort: 8080}]
"""


def test_expose_load_balancer_endpointslices_and_release(k: Kubectl):
    _apply(k, DEPLOYMENT)
    k("rollout", "status", "deployment/web", "--timeout=60s")
    k("expose", "deployment", "web", "--port", "80", "--target-port", "http", "--type", "LoadBalancer")
    svc = k.get_json("svc", "web")
    spec = svc["spec"]
    assert ipaddress.ip_address(spec["clusterIP"]) in ipaddress.ip_network(CIDR) and spec["clusterIPs"] == [spec["clusterIP"]]
    assert spec["ipFamilies"] == ["IPv4"] and spec["ipFamilyPolicy"] == "SingleStack"
    assert spec["sessionAffinity"] == "None" and spec["externalTrafficPolicy"] == "Cluster"
    assert spec["internalTrafficPolicy"] == "Cluster" and spec["allocateLoadBalancerNodePorts"] is True
    node_port = spec["ports"][0]["nodePort"]
    assert 30000 <= node_port <= 30010 and spec["ports"][0]["protocol"] == "TCP"

    def ingress() -> str | None:
        lb = k.get_json("svc", "web")["status"].get("loadBalancer") or {}
        return (lb.get("ingress") or [{}])[0].get("ip")

    ip = wait_for(ingress, 30, what="the load balancer's ingress")
    assert ip == "192.168.50.1"
    svc = k.get_json("svc", "web")
    assert svc["status"]["loadBalancer"]["ingress"] == [{"ip": ip, "ipMode": "VIP"}]
    assert "service.kubernetes.io/load-balancer-cleanup" in svc["metadata"]["finalizers"]
    rows = _rows(k("get", "svc", "web", "-o", "wide").out)
    assert rows[0] == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR"]
    assert rows[1][:5] == ["web", "LoadBalancer", spec["clusterIP"], ip, f"80:{node_port}/TCP"] and rows[1][6] == "app=web"

    # one EndpointSlice: the pods' IPs, targetPort "http" resolved to the container port
    def slices() -> list[dict]:
        items = k.get_json("endpointslices", "-l", "kubernetes.io/service-name=web")["items"]
        return items if items and len(items[0].get("endpoints") or []) == 2 \
            and all(ep["conditions"]["ready"] for ep in items[0]["endpoints"]) else []

    eps = wait_for(slices, 30, what="an EndpointSlice with 2 ready endpoints")
    assert len(eps) == 1
    es = eps[0]
    pods = {p["status"]["podIP"]: p for p in k.get_json("pods", "-l", "app=web")["items"]}
    assert sorted(a for ep in es["endpoints"] for a in ep["addresses"]) == sorted(pods)
    assert es["ports"] == [{"name": "", "port": 8080, "protocol": "TCP"}] and es["addressType"] == "IPv4"
    assert es["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] == "endpointslice-controller.k8s.io"
    assert es["metadata"]["ownerReferences"][0]["kind"] == "Service" and es["metadata"]["name"].startswith("web-")
    assert {ep["targetRef"]["name"] for ep in es["endpoints"]} == {p["metadata"]["name"] for p in pods.values()}
    rows = _rows(k("get", "endpointslices").out)
    assert rows[0] == ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
    assert rows[1][1:3] == ["IPv4", "8080"] and sorted(rows[1][3].split(",")) == sorted(pods)

    k("scale", "deployment", "web", "--replicas", "3")
    wait_for(lambda: len(k.get_json("endpointslices", "-l", "kubernetes.io/service-name=web")["items"][0]["endpoints"]) == 3,
             30, what="3 endpoints after scaling")

    # LoadBalancer -> ClusterIP: node port dropped, the address back in the pool, the finalizer gone
    k("patch", "svc", "web", "-p", '{"spec":{"type":"ClusterIP"}}')
    wait_for(lambda: not ingress() and not k.get_json("svc", "web")["metadata"].get("finalizers"), 30,
             what="the load balancer released")
    svc = k.get_json("svc", "web")
    assert "nodePort" not in svc["spec"]["ports"][0] and svc["spec"]["clusterIP"] == spec["clusterIP"]
    assert "externalTrafficPolicy" not in svc["spec"] and "allocateLoadBalancerNodePorts" not in svc["spec"]
    reasons = {e["reason"] for e in k.get_json("events", "--field-selector", "involvedObject.name=web")["items"]}
    assert {"EnsuringLoadBalancer", "EnsuredLoadBalancer", "DeletingLoadBalancer", "DeletedLoadBalancer"} <= reasons

    # deleted: its cluster IP and node port can be taken again
    k("delete", "svc", "web")
    wait_for(lambda: not k.get_json("endpointslices")["items"], 30, what="the EndpointSlice collected")
    _apply(k, f"""
        apiVersion: v1
        kind: Service
        metadata: {{name: again}}
        spec: {{type: NodePort, clusterIP: {spec['clusterIP']}, ports: [{{port: 80, nodePort: {node_port}}}]}}
        """)
    assert k.get_json("svc", "again")["spec"]["clusterIP"] == spec["clusterIP"]


def test_defaults_allocation_errors_and_columns(k: Kubectl):
    out = _apply(k, """
        apiVersion: v1
        kind: Service
        metadata: {name: plain}
        spec:
          selector: {app: x}
          ports: [{port: 80}]
        """)
    assert "service/plain created" in out
    svc = k.get_json("svc", "plain")
    assert svc["spec"]["type"] == "ClusterIP" and svc["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert svc["status"] == {"loadBalancer": {}}
    taken = svc["spec"]["clusterIP"]
    # apply again (no clusterIP in the manifest): kept, nothing changes
    assert "unchanged" in _apply(k, """
        apiVersion: v1
        kind: Service
        metadata: {name: plain}
        spec:
          selector: {app: x}
          ports: [{port: 80}]
        """)
    # a PUT without the allocated values keeps them (kube's patchAllocatedValues)
    body = k.get_json("svc", "plain")
    del body["spec"]["clusterIP"], body["spec"]["clusterIPs"]
    k("replace", "-f", "-", stdin=json.dumps(body))
    assert k.get_json("svc", "plain")["spec"]["clusterIP"] == taken

    bad = k.fail("create", "service", "clusterip", "dup", "--tcp", "80", "--clusterip", taken)
    assert (f'Service "dup" is invalid: spec.clusterIPs: Invalid value: []string{{"{taken}"}}: '
            f"failed to allocate IP {taken}: provided IP is already allocated") in bad.err
    bad = k.fail("create", "service", "clusterip", "far", "--tcp", "80", "--clusterip", "10.1.2.3")
    assert ("failed to allocate IP 10.1.2.3: the provided IP (10.1.2.3) is not in the valid range. "
            f"The range of valid IPs is {CIDR}") in bad.err
    bad = k.fail("patch", "svc", "plain", "-p", '{"spec":{"clusterIP":"10.100.0.200","clusterIPs":["10.100.0.200"]}}')
    assert 'spec.clusterIPs[0]: Invalid value: []string{"10.100.0.200"}: may not change once set' in bad.err

    # node ports are cluster-wide: another test's Service (its namespace still going away) may hold
    # one, and a value handed out stays reserved for up to RESERVATION_SECONDS (5 s) after its
    # Service is gone if no allocation saw it stored (apis/core/service.py _Reservations)
    held = {p.get("nodePort") for s in k.get_json("svc", "-A")["items"] for p in s["spec"]["ports"]}
    port = next(p for p in range(30000, 30011) if p not in held)

    def created() -> bool:
        r = k("create", "service", "nodeport", "np", "--tcp", "80:8080", "--node-port", str(port), check=False)
        assert r.code == 0 or "provided port is already allocated" in r.err, r.err
        return r.code == 0
    wait_for(created, 15, interval=0.5, what=f"a NodePort Service on port {port}")
    assert k.get_json("svc", "np")["spec"]["ports"][0]["nodePort"] == port
    bad = k.fail("create", "service", "nodeport", "np2", "--tcp", "80", "--node-port", str(port))
    assert f"spec.ports[0].nodePort: Invalid value: {port}: provided port is already allocated" in bad.err
    bad = k.fail("create", "service", "nodeport", "np3", "--tcp", "80", "--node-port", "31000")
    assert ("spec.ports[0].nodePort: Invalid value: 31000: provided port is not in the valid range. "
            "The range of valid ports is 30000-30010") in bad.err
    # ClusterIP -> NodePort allocates a port
    k("patch", "svc", "plain", "-p", '{"spec":{"type":"NodePort"}}')
    assert 30000 <= k.get_json("svc", "plain")["spec"]["ports"][0]["nodePort"] <= 30010

    bad = k.fail("apply", "-f", "-", stdin=textwrap.dedent("""
        apiVersion: v1
        kind: Service
        metadata: {name: bad}
        spec:
          ports: [{port: 80, protocol: FOO}, {port: 80, name: a, nodePort: 30001}, {port: 81, name: a}]
        """))
    assert "spec.ports[0].name: Required value" in bad.err
    assert 'spec.ports[0].protocol: Unsupported value: "FOO": supported values: "SCTP", "TCP", "UDP"' in bad.err
    assert 'spec.ports[2].name: Duplicate value: "a"' in bad.err
    assert "spec.ports[1].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'" in bad.err
    bad = k.fail("apply", "-f", "-", stdin='{"apiVersion":"v1","kind":"Service","metadata":{"name":"noports"},"spec":{}}')
    assert 'The Service "noports" is invalid: spec.ports: Required value' in bad.err

    _apply(k, """
        apiVersion: v1
        kind: Service
        metadata: {name: headless}
        spec: {clusterIP: None, selector: {app: x}, ports: [{port: 80, name: web}, {port: 443, name: tls, protocol: TCP}]}
        ---
        apiVersion: v1
        kind: Service
        metadata: {name: ext}
        spec: {type: ExternalName, externalName: db.example.com}
        """)
    rows = {r[0]: r for r in _rows(k("get", "svc").out)[1:]}
    assert rows["headless"][1:5] == ["ClusterIP", "None", "<none>", "80/TCP,443/TCP"]
    assert rows["ext"][1:5] == ["ExternalName", "<none>", "db.example.com", "<none>"]
    assert rows["np"][1] == "NodePort" and rows["np"][3] == "<none>" and rows["np"][4] == f"80:{port}/TCP"
    assert "ipFamilies" not in k.get_json("svc", "ext")["spec"]
