"""Services through the hub, end to end with real processes: a hub running the Cluster controller
(with its Syncers), the splitter and the Service controller, and two simulated clusters with
different Service ranges and load-balancer pools. Only Clusters, a Deployment and Services are
written, all with kubectl; the rest is the controllers'."""

from __future__ import annotations

import ipaddress
import json
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest

from ..fleet.conftest import PhysicalCluster
from ..harness import wait_for
from ..splitter.conftest import SplitHub
from ..splitter.world import World

RANGES = {"east": "10.10.0.0/16", "west": "10.20.0.0/16"}
POOLS = {"east": "172.18.9.0/24", "west": "172.18.21.0/24"}  # the defaults for these names

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 4
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{name: http, containerPort: 8080}]
        resources: {requests: {cpu: 100m, memory: 64Mi}}
"""

SERVICE = """
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  type: LoadBalancer
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
"""


class ServiceWorld(World):
    """The splitter's end-to-end world, with Services synced and a range per cluster."""

    def join(self, name: str, nodes: int = 2) -> PhysicalCluster:
        c = PhysicalCluster(self.tmp / name, name, nodes=nodes)
        c.server.extra += ["--service-cluster-ip-range", RANGES[name]]
        c.start()
        self.clusters[name] = c
        self.fleet.apply({"apiVersion": "cluster.example.dev/v1alpha1", "kind": "Cluster",
                          "metadata": {"name": name, "namespace": "default"},
                          "spec": {"kubeconfig": c.kubeconfig_text(), "resources": ["deployments.apps", "services"],
                                   "location": "eu"}})
        wait_for(lambda: name in self.healthy(), 30, interval=0.1, what=f"ClusterProfile {name} healthy")
        return c

    def services_in(self, cluster: str, parent: str) -> list[dict]:
        """The cluster's Services that came from the hub for ``parent``: its child arrives under the
        parent's own name (``fleetplane.io/downstream-name``)."""
        items = self.clusters[cluster].kubectl().get_json("services", "-n", "default")["items"]
        return [s for s in items if s["metadata"]["name"] == parent
                and "fleetplane.io/logical-cluster" in (s["metadata"].get("labels") or {})]

    def hub_service(self, name: str) -> dict:
        return self.fleet.kubectl.get_json("service", name)

    def ingress(self, name: str) -> list[str]:
        lb = (self.hub_service(name).get("status") or {}).get("loadBalancer") or {}
        return sorted(i.get("ip") for i in lb.get("ingress") or [])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceWorld]:
    tmp = tmp_path_factory.mktemp("svc-e2e")
    hub = SplitHub(tmp / "hub", extra=["--cluster-controller"]).start()
    w = ServiceWorld(hub, tmp)
    try:
        w.join("east")
        w.join("west")
        yield w
    finally:
        for c in w.clusters.values():
            c.stop(signal.SIGTERM)
        hub.stop()


def test_a_load_balancer_service_through_the_hub(world: ServiceWorld) -> None:
    k = world.fleet.kubectl
    k("apply", "-f", "-", stdin=textwrap.dedent(DEPLOYMENT))
    world.fleet.wait_split("web", {"east": 2, "west": 2}, timeout=40)
    wait_for(lambda: world.fleet.kubectl("get", "crd", "services.core", check=False).code == 0, 40,
             what="the hub to serve Services (imported from the clusters)")
    k("apply", "-f", "-", stdin=textwrap.dedent(SERVICE))

    # one child per cluster on the hub, each reaching its cluster, with that cluster's own ClusterIP
    def synced() -> dict[str, dict] | None:
        got = {c: world.services_in(c, "web") for c in ("east", "west")}
        return {c: s[0] for c, s in got.items()} if all(len(s) == 1 and s[0]["spec"].get("clusterIP") for s in got.values()) else None

    down = wait_for(synced, 60, interval=0.3, what="the Service in both clusters")
    for c, svc in down.items():
        assert ipaddress.ip_address(svc["spec"]["clusterIP"]) in ipaddress.ip_network(RANGES[c]), (c, svc["spec"])
        assert svc["spec"]["type"] == "LoadBalancer" and svc["spec"]["ports"][0]["targetPort"] == "http"
        rows = [r.split() for r in world.clusters[c].kubectl()("get", "svc", "-n", "default").out.splitlines()]
        assert rows[0][:5] == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)"]
    assert down["east"]["spec"]["clusterIP"] != down["west"]["spec"]["clusterIP"]
    children = {s["metadata"]["name"]: s for s in k.get_json("services", "-l", "kcp.dev/owned-by=web")["items"]}
    assert set(children) == {"web--east", "web--west"}
    for name, child in children.items():
        assert child["metadata"]["labels"]["kcp.dev/cluster"] == name.split("--")[1]
        assert child["metadata"]["annotations"]["fleetplane.io/downstream-name"] == "web"
        assert child["metadata"]["ownerReferences"][0]["kind"] == "Service"
        assert "clusterIP" not in child["spec"] and "nodePort" not in child["spec"]["ports"][0]

    # the hub's status: both clusters' load-balancer ingresses
    ips = wait_for(lambda: len(world.ingress("web")) == 2 and world.ingress("web"), 60, interval=0.3,
                   what="both ingresses on the hub")
    assert {str(ipaddress.ip_address(ip)) for ip in ips} == {"172.18.9.1", "172.18.21.1"}
    rows = [r.split() for r in k("get", "svc", "web", "-o", "wide").out.splitlines()]
    assert rows[0] == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR"]
    assert rows[1][:4] == ["web", "LoadBalancer", "<none>", ",".join(ips)] and rows[1][6] == "app=web"
    placed = next(c for c in world.hub_service("web")["status"]["conditions"] if c["type"] == "Placed")
    assert placed["status"] == "True" and "east (Deployment web--east runs 2 replicas there)" in placed["message"]
    decision = json.loads(world.hub_service("web")["metadata"]["annotations"]["placement.fleetplane.io/decision"])
    assert {c: d["ingress"] for c, d in decision["clusters"].items()} == {"east": ["172.18.9.1"], "west": ["172.18.21.1"]}
    out = subprocess.run([sys.executable, "-m", "fleetplane.cli.main", "placement", "explain", "service/web",
                          "-n", "default", "--kubeconfig", str(world.fleet.kubeconfig)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "east" in out.stdout and "Deployment web--east runs 2 replicas there" in out.stdout, out.stdout

    # kubectl expose on the hub: the Service is created there, and follows the Deployment
    k("expose", "deployment", "web", "--name", "web-internal", "--port", "8080")
    wait_for(lambda: all(world.services_in(c, "web-internal") for c in ("east", "west")), 60, interval=0.3,
             what="the exposed Service in both clusters")
    # a change on the hub reaches the clusters; each keeps the ClusterIP it allocated
    ips_before = {c: world.services_in(c, "web-internal")[0]["spec"]["clusterIP"] for c in ("east", "west")}
    k("patch", "service", "web-internal", "--type=merge", "-p", '{"spec":{"ports":[{"port":9090,"targetPort":8080}]}}')
    wait_for(lambda: all(world.services_in(c, "web-internal")[0]["spec"]["ports"][0]["port"] == 9090
                         for c in ("east", "west")), 60, interval=0.3, what="the new port in both clusters")
    assert {c: world.services_in(c, "web-internal")[0]["spec"]["clusterIP"] for c in ("east", "west")} == ips_before

    # scaled out of a cluster: that cluster's Service children go (on the hub and in the cluster)
    k("scale", "deployment/web", "--replicas=1")
    def one_cluster() -> dict[str, int] | None:
        s = {c: n for c, n in world.fleet.split("web").items() if n > 0}
        return s if len(s) == 1 and len(world.fleet.split("web")) == 1 else None

    split = wait_for(one_cluster, 60, what="web in one cluster")
    (stays,) = split
    gone = next(c for c in ("east", "west") if c != stays)
    wait_for(lambda: {s["metadata"]["labels"]["kcp.dev/cluster"]
                      for s in k.get_json("services", "-l", "kcp.dev/owned-by=web")["items"]} == {stays}, 40,
             interval=0.3, what=f"web--{gone} removed from the hub")
    wait_for(lambda: not world.services_in(gone, "web") and not world.services_in(gone, "web-internal"), 60,
             interval=0.3, what=f"the Services removed from {gone}")
    assert world.services_in(stays, "web")
    wait_for(lambda: len(world.ingress("web")) == 1, 40, interval=0.3, what="one ingress left on the hub")
    reasons = {(e["reason"], e["message"]) for e in k.get_json("events", "--field-selector",
                                                                "involvedObject.name=web,involvedObject.kind=Service")["items"]}
    assert ("SuccessfulCreate", "Created service web--east in cluster east") in reasons
    assert ("SuccessfulDelete", f"Deleted service web--{gone} from cluster {gone}") in reasons
