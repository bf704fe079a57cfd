"""The runtime's example operator (examples/configmap_everywhere.py) against a hub running the
Cluster controller and simulated member clusters: clusters are engaged and disengaged as their
ClusterProfiles change, and what it keeps in them is put back."""

from __future__ import annotations

import base64
import json
import signal
import uuid
from pathlib import Path

import pytest
import yaml

from ..fleet.conftest import Fleet, FleetHub, PhysicalCluster
from ..harness import Kubectl, wait_for
from .conftest import Operator

pytestmark = pytest.mark.timeout(300)

ENGAGED = "multicluster_engaged_clusters"


def configmap(cluster: PhysicalCluster, name: str = "fleet-info") -> dict | None:
    r = cluster.kubectl()("get", "configmap", name, "-n", "default", "-o", "json", check=False)
    return json.loads(r.out) if r.code == 0 else None


def wait_configmap(cluster: PhysicalCluster, data: dict, not_uid: str | None = None, timeout: float = 60) -> dict:
    def ok() -> dict | None:
        cm = configmap(cluster)
        if cm and cm.get("data") == data and cm["metadata"]["uid"] != not_uid:
            return cm
        return None

    return wait_for(ok, timeout, interval=0.2, what=f"ConfigMap default/fleet-info {data} in {cluster.name}")


def wait_metric(op: Operator, name: str, value: float, timeout: float = 60, **labels: str) -> None:
    wait_for(lambda: op.metric(name, **labels) == value, timeout, interval=0.2,
             what=f"{name}{labels} == {value} (now {op.metric(name, **labels)})")


def healthy_profile(fleet: Fleet, name: str, timeout: float = 60) -> dict:
    fleet.wait_condition(name, "ControlPlaneHealthy", "True", kind="clusterprofile", timeout=timeout)
    return wait_for(lambda: (p := fleet.get("clusterprofile", name)) and p["status"].get("accessProviders") and p,
                    30, what=f"access providers of {name}")


def test_engage_reconcile_disengage_and_reengage(fleet: Fleet, member: PhysicalCluster, tmp_path: Path) -> None:
    flaky = PhysicalCluster(tmp_path / "flaky", "mc-flaky").start()
    op: Operator | None = None
    try:
        fleet.apply_cluster("east", member.kubeconfig_text())
        fleet.apply_cluster("flaky", flaky.kubeconfig_text())
        healthy_profile(fleet, "east")
        healthy_profile(fleet, "flaky")
        op = Operator(fleet, "--data", "owner=team-a", "--leader-elect")

        # engaged: the ConfigMap appears in both, naming the profile it came through
        east_cm = wait_configmap(member, {"owner": "team-a", "clusterProfile": "default/east"})
        wait_configmap(flaky, {"owner": "team-a", "clusterProfile": "default/flaky"})
        wait_metric(op, ENGAGED, 2)
        assert east_cm["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "configmap-everywhere"
        lease = fleet.kubectl("get", "lease", "configmap-everywhere", "-n", "default", "-o", "json").json()
        assert lease["spec"]["holderIdentity"]

        # reconcile: a deleted ConfigMap comes back, an edited one is restored
        member.kubectl()("delete", "configmap", "fleet-info", "-n", "default")
        wait_configmap(member, {"owner": "team-a", "clusterProfile": "default/east"}, not_uid=east_cm["metadata"]["uid"])
        flaky.kubectl()("patch", "configmap", "fleet-info", "-n", "default", "--type=merge", "-p", '{"data":{"owner":"x"}}')
        wait_configmap(flaky, {"owner": "team-a", "clusterProfile": "default/flaky"})
        assert op.metric("multicluster_reconcile_total", result="success") >= 4

        # the cluster stops: its profile turns unhealthy, it is disengaged, the other stays
        flaky.stop(signal.SIGKILL)
        fleet.wait_condition("flaky", "ControlPlaneHealthy", "False", kind="clusterprofile", timeout=60)
        wait_metric(op, ENGAGED, 1)
        assert op.metric("multicluster_disengagements_total", reason="NotReady") == 1
        member.kubectl()("delete", "configmap", "fleet-info", "-n", "default")
        wait_configmap(member, {"owner": "team-a", "clusterProfile": "default/east"})

        # it returns: engaged again, with fresh informers (a deletion is seen and repaired)
        flaky.start()
        healthy_profile(fleet, "flaky")
        wait_metric(op, ENGAGED, 2)
        assert op.metric("multicluster_engagements_total") == 3
        before = wait_configmap(flaky, {"owner": "team-a", "clusterProfile": "default/flaky"})
        flaky.kubectl()("delete", "configmap", "fleet-info", "-n", "default")
        wait_configmap(flaky, {"owner": "team-a", "clusterProfile": "default/flaky"}, not_uid=before["metadata"]["uid"])

        # its Cluster is deleted, and with it the profile: disengaged for good
        fleet.kubectl("delete", "cluster", "flaky", "-n", "default")
        wait_for(lambda: fleet.get("clusterprofile", "flaky") is None, 60, what="profile flaky gone")
        wait_metric(op, ENGAGED, 1)
        assert op.metric("multicluster_disengagements_total", reason="Deleted") == 1
        assert "engaged cluster default/east" in op.log.read_text()
    finally:
        if op is not None:
            op.stop()
        flaky.stop(signal.SIGTERM)
    assert op.proc.returncode == 0, op.log.read_text()[-3000:]


def test_a_profile_whose_access_provider_fails_is_retried_and_others_are_unaffected(
        fleet: Fleet, member: PhysicalCluster, mc_hub: FleetHub, tmp_path: Path) -> None:
    fleet.apply_cluster("east", member.kubeconfig_text())
    healthy_profile(fleet, "east")
    # a profile of another manager for a hub logical cluster, naming a Secret that does not exist
    # yet: the secret reader plugin fails
    other = "mc-" + uuid.uuid4().hex[:8]
    other_kubectl = Kubectl(mc_hub.kubeconfig_for(other, tmp_path))
    other_kubectl("apply", "-f", "-", stdin=yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace",
                                                           "metadata": {"name": "default"}}))
    cluster = {"server": f"{mc_hub.url}/clusters/{other}",
               "certificate-authority-data": base64.b64encode(mc_hub.ca.read_bytes()).decode(),
               "extensions": [{"name": "client.authentication.k8s.io/exec", "extension": {"clusterName": "elsewhere"}}]}
    fleet.kubectl("apply", "-f", "-", stdin=yaml.safe_dump({
        "apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile",
        "metadata": {"name": "broken", "namespace": "default"}, "spec": {"clusterManager": {"name": "by-hand"}}}))
    fleet.kubectl("patch", "clusterprofile", "broken", "--subresource=status", "--type=merge", "-p", json.dumps({
        "status": {"conditions": [{"type": "ControlPlaneHealthy", "status": "True", "reason": "Healthy", "message": "",
                                   "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                   "accessProviders": [{"name": "secretreader", "cluster": cluster}]}}))
    op = Operator(fleet)
    try:
        wait_configmap(member, {"clusterProfile": "default/east"})
        wait_metric(op, ENGAGED, 1)
        wait_for(lambda: op.metric("multicluster_engage_errors_total", reason="ExecFailedError") >= 2, 60, interval=0.2,
                 what="the failing profile retried")
        log = op.log.read_text()
        assert "cannot engage cluster default/broken" in log and "retrying in" in log
        # the unaffected cluster is still served
        member.kubectl()("delete", "configmap", "fleet-info", "-n", "default")
        wait_configmap(member, {"clusterProfile": "default/east"})
        # the Secret turns up: a retry engages the profile
        fleet.kubectl("create", "secret", "generic", "elsewhere", "-n", "default", f"--from-literal=token={mc_hub.token}")
        wait_metric(op, ENGAGED, 2)
        cm = wait_for(lambda: (r := other_kubectl("get", "configmap", "fleet-info", "-n", "default", "-o", "json",
                                                  check=False)).code == 0 and r.json(), 60, interval=0.2,
                      what="the ConfigMap in the hub logical cluster")
        assert cm["data"] == {"clusterProfile": "default/broken"}
        # its access configuration changes (another Secret): re-engaged with a new client
        fleet.kubectl("create", "secret", "generic", "elsewhere-2", "-n", "default", f"--from-literal=token={mc_hub.token}")
        cluster["extensions"][0]["extension"]["clusterName"] = "elsewhere-2"
        fleet.kubectl("patch", "clusterprofile", "broken", "--subresource=status", "--type=merge", "-p",
                      json.dumps({"status": {"accessProviders": [{"name": "secretreader", "cluster": cluster}]}}))
        wait_metric(op, "multicluster_disengagements_total", 1, reason="AccessChanged")
        wait_metric(op, ENGAGED, 2)
        assert op.metric("multicluster_engagements_total") == 3
        other_kubectl("delete", "configmap", "fleet-info", "-n", "default")
        wait_for(lambda: other_kubectl("get", "configmap", "fleet-info", "-n", "default", check=False).code == 0, 60,
                 interval=0.2, what="the ConfigMap put back through the new client")
    finally:
        op.stop()
    assert op.proc.returncode == 0, op.log.read_text()[-3000:]


def test_with_leader_election_one_operator_works_and_the_other_takes_over(fleet: Fleet, member: PhysicalCluster) -> None:
    fleet.apply_cluster("east", member.kubeconfig_text())
    healthy_profile(fleet, "east")
    first = Operator(fleet, "--leader-elect", "--data", "n=1")
    second: Operator | None = None
    try:
        wait_configmap(member, {"n": "1", "clusterProfile": "default/east"})
        wait_metric(first, ENGAGED, 1)
        second = Operator(fleet, "--leader-elect", "--data", "n=2")
        wait_for(second.metrics, 30, interval=0.2, what="the second operator's metrics endpoint")
        # the follower engages nothing while the leader holds the Lease (the leader's ConfigMap stays)
        assert second.metric(ENGAGED) == 0 and second.metric("multicluster_engagements_total") == 0
        assert configmap(member)["data"] == {"n": "1", "clusterProfile": "default/east"}
        first.stop()  # a clean stop releases the Lease
        assert first.proc.returncode == 0, first.log.read_text()[-3000:]
        wait_configmap(member, {"n": "2", "clusterProfile": "default/east"})
        wait_metric(second, ENGAGED, 1)
    finally:
        first.stop()
        if second is not None:
            second.stop()
