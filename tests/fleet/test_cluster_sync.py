"""Issue 4 end to end with real processes: a hub running the Cluster controller, two simulated
clusters, Clusters created with kubectl; ClusterProfiles turn healthy, the clusters' types appear
on the hub, objects labelled for a cluster appear in it and their status comes back; a cluster is
killed and restarted and the Syncer converges (nothing lost, nothing duplicated); Clusters are
deleted under both deletion policies.
"""

from __future__ import annotations

import json
import signal

import pytest
import yaml

from ..harness import wait_for
from .conftest import Fleet, PhysicalCluster

pytestmark = [pytest.mark.timeout(180)]


def deployment(name: str, cluster: str, replicas: int = 2) -> str:
    return yaml.safe_dump({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "demo", "labels": {"kcp.dev/cluster": cluster, "app": name}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}})


def downstream(cluster: PhysicalCluster, ns: str = "demo") -> dict[str, dict]:
    r = cluster.kubectl()("get", "deployments", "-n", ns, "-o", "json", check=False)
    return {d["metadata"]["name"]: d for d in (json.loads(r.out)["items"] if r.code == 0 else [])}


def hub_deployment(fleet: Fleet, name: str) -> dict | None:
    return fleet.get("deployment", name, "demo")


def ready_replicas(fleet: Fleet, name: str, n: int) -> bool:
    d = hub_deployment(fleet, name)
    return bool(d) and (d.get("status") or {}).get("readyReplicas") == n


@pytest.fixture(scope="module")
def synced(fleet_hub, cluster_a: PhysicalCluster, cluster_b: PhysicalCluster, tmp_path_factory) -> Fleet:
    """One logical cluster with both clusters connected (push mode, created with kubectl)."""
    fleet = Fleet(fleet_hub, tmp_path_factory.mktemp("synced"))
    fleet.apply_cluster("cluster-a", cluster_a.kubeconfig_text(), location="us-east-1",
                        labels={"tier": "gold"}, publishLabels=["tier"])
    fleet.apply_cluster("cluster-b", cluster_b.kubeconfig_text(), location="eu-west-1", deletionPolicy="Delete")
    for name in ("cluster-a", "cluster-b"):
        fleet.wait_condition(name, "Ready", "True", "Ready", timeout=30)
    fleet.kubectl("create", "namespace", "demo")
    return fleet


def test_clusters_turn_ready_and_profiles_healthy(synced: Fleet, cluster_a: PhysicalCluster) -> None:
    table = synced.kubectl("get", "clusters").out.splitlines()
    assert [r.split()[:4] for r in table[1:]] == [["cluster-a", "us-east-1", "True", "True"],
                                                  ["cluster-b", "eu-west-1", "True", "True"]]
    for name in ("cluster-a", "cluster-b"):
        synced.wait_condition(name, "ControlPlaneHealthy", "True", "Healthy", kind="clusterprofile")
        synced.wait_condition(name, "Joined", "True", kind="clusterprofile")
    prof = synced.get("clusterprofile", "cluster-a")
    props = {p["name"]: p["value"] for p in prof["status"]["properties"]}
    assert props["location"] == "us-east-1" and props["tier"] == "gold"
    assert props["fleetplane.io/node-count"] == str(cluster_a.nodes)
    assert props["resources.fleetplane.io/allocatable-cpu"] == str(4 * cluster_a.nodes)  # the sim's default nodes
    cluster = synced.get("cluster", "cluster-a")
    assert cluster["status"]["nodes"] == cluster_a.nodes
    assert prof["status"]["version"]["kubernetes"] == cluster["status"]["version"]


def test_the_clusters_types_appear_on_the_hub(synced: Fleet) -> None:
    out = synced.kubectl("api-resources", "--api-group=apps", "-o", "name").out.split()
    assert "deployments.apps" in out
    types = synced.get("cluster", "cluster-a")["status"]["types"]
    assert {"group": "apps", "version": "v1", "resource": "deployments", "state": "Synced"} in types
    assert synced.conditions("cluster-a")["Synced"][:2] == ("True", "Synced")


def test_labelled_objects_go_to_their_cluster_and_status_comes_back(synced: Fleet, cluster_a: PhysicalCluster,
                                                                   cluster_b: PhysicalCluster) -> None:
    synced.kubectl("apply", "-n", "demo", "-f", "-", stdin=deployment("web", "cluster-a", 2))
    synced.kubectl("apply", "-n", "demo", "-f", "-", stdin=deployment("db", "cluster-b", 1))
    wait_for(lambda: "web" in downstream(cluster_a), 20, what="web in cluster-a")
    wait_for(lambda: "db" in downstream(cluster_b), 20, what="db in cluster-b")
    assert "web" not in downstream(cluster_b) and "db" not in downstream(cluster_a)
    wait_for(lambda: ready_replicas(synced, "web", 2), 30, what="web's status back on the hub")
    wait_for(lambda: ready_replicas(synced, "db", 1), 30, what="db's status back on the hub")


def test_a_cluster_killed_and_restarted_converges(synced: Fleet, cluster_a: PhysicalCluster) -> None:
    synced.kubectl("apply", "-n", "demo", "-f", "-", stdin=deployment("web", "cluster-a", 2))
    wait_for(lambda: ready_replicas(synced, "web", 2), 30, what="web ready before the outage")
    synced.kubectl("apply", "-n", "demo", "-f", "-", stdin=deployment("old", "cluster-a", 1))
    wait_for(lambda: "old" in downstream(cluster_a), 20, what="old in cluster-a")

    cluster_a.stop(signal.SIGKILL)
    try:
        _outage(synced, cluster_a)
    finally:
        cluster_a.ensure_running()
    synced.wait_condition("cluster-a", "Connected", "True", timeout=30)

    synced.wait_condition("cluster-a", "Ready", "True", timeout=30)
    synced.wait_condition("cluster-a", "ControlPlaneHealthy", "True", kind="clusterprofile")
    wait_for(lambda: set(downstream(cluster_a)) == {"web", "api"}, 30, what="cluster-a to hold exactly web and api")
    wait_for(lambda: downstream(cluster_a)["web"]["spec"]["replicas"] == 3, 20, what="web scaled to 3 downstream")
    wait_for(lambda: ready_replicas(synced, "web", 3), 30, what="web's new status back on the hub")
    wait_for(lambda: ready_replicas(synced, "api", 1), 30, what="api's status back on the hub")
    wait_for(lambda: hub_deployment(synced, "old") is None, 20, what="old gone from the hub")
    assert set(downstream(cluster_a)) == {"web", "api"}  # nothing duplicated


def _outage(synced: Fleet, cluster_a: PhysicalCluster) -> None:
    synced.wait_condition("cluster-a", "Connected", "False", "Unreachable")
    synced.wait_condition("cluster-a", "Ready", "False")
    synced.wait_condition("cluster-a", "ControlPlaneHealthy", "False", "Unreachable", kind="clusterprofile")
    assert synced.conditions("cluster-a", kind="clusterprofile")["Joined"][0] == "True"  # still under management
    assert synced.conditions("cluster-b")["Ready"][0] == "True"  # the other cluster is unaffected
    # Changes made while the cluster is away: a scale-up, a new object, a deletion.
    synced.kubectl("scale", "deployment", "web", "-n", "demo", "--replicas=3")
    synced.kubectl("apply", "-n", "demo", "-f", "-", stdin=deployment("api", "cluster-a", 1))
    synced.kubectl("delete", "deployment", "old", "-n", "demo", "--wait=false")
    reasons = {e["reason"] for e in synced.events("cluster-a")}
    assert "Disconnected" in reasons


def test_deleting_clusters_under_both_policies(synced: Fleet, cluster_a: PhysicalCluster,
                                               cluster_b: PhysicalCluster) -> None:
    synced.kubectl("apply", "-n", "demo", "-f", "-", stdin=deployment("db", "cluster-b", 1))
    wait_for(lambda: "db" in downstream(cluster_b) and "web" in downstream(cluster_a), 20, what="synced objects")
    # Delete: the objects synced into cluster-b are deleted from it; the hub keeps its objects.
    synced.kubectl("delete", "cluster", "cluster-b", "--timeout=30s")
    assert "db" not in downstream(cluster_b)
    assert synced.get("clusterprofile", "cluster-b") is None and synced.get("secret", "cluster-b") is None
    db = hub_deployment(synced, "db")
    assert db is not None and not any(f.startswith("fleetplane.io/syncer-") for f in db["metadata"].get("finalizers") or [])
    assert "DeletedSyncedObjects" in {e["reason"] for e in synced.events("cluster-b")}
    # Orphan (the default): cluster-a keeps running what it was given.
    synced.kubectl("delete", "cluster", "cluster-a", "--timeout=30s")
    assert {"web", "api"} <= set(downstream(cluster_a))
    assert synced.get("clusterprofile", "cluster-a") is None
    # Nothing on the hub is left waiting for a Syncer that is gone.
    synced.kubectl("delete", "deployment", "web", "db", "-n", "demo", "--timeout=10s")
    assert hub_deployment(synced, "web") is None
    assert "web" in downstream(cluster_a)


def test_deleting_the_cluster_of_a_dead_cluster(fleet: Fleet, tmp_path) -> None:
    """The cluster is gone for good and its Cluster is deleted: with deletionPolicy Delete the
    finalizer holds (the synced objects cannot be deleted) and Ready says why; switching to
    Orphan lets the Cluster go, with its ClusterProfile and credentials Secret."""
    dead = PhysicalCluster(tmp_path / "dead", "dead").start()
    try:
        fleet.apply_cluster("dead", dead.kubeconfig_text(), deletionPolicy="Delete")
        fleet.wait_condition("dead", "Ready", "True", "Ready", timeout=30)
        assert fleet.get("clusterprofile", "dead") is not None
        dead.stop()
        fleet.kubectl("delete", "cluster", "dead", "--wait=false")
        status, _, message = fleet.wait_condition("dead", "Ready", "False", "CleanupPending", timeout=60)
        assert "Orphan" in message, message  # says how to give up
        assert fleet.get("cluster", "dead") is not None
        fleet.kubectl("patch", "cluster", "dead", "--type=merge", "-p", '{"spec":{"deletionPolicy":"Orphan"}}')
        wait_for(lambda: fleet.get("cluster", "dead") is None, 30, what="the Cluster gone")
        assert fleet.get("clusterprofile", "dead") is None and fleet.get("secret", "dead") is None
    finally:
        dead.stop()
