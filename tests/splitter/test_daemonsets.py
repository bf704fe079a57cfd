"""DaemonSets on the hub: one virtual DaemonSet per selected cluster (Duplicate), the parent's status
summed from its children's, ``kubectl rollout status daemonset`` on the hub, clusters joining and
leaving. First against a hub alone, serving DaemonSets as the CRD a Syncer imports, the children's
status written as their cluster's DaemonSet controller would; then end to end, with simulated
clusters running the children."""

from __future__ import annotations

import copy
import json
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest
import yaml

from ..harness import wait_for
from .conftest import SplitHub
from .fixtures import DAEMONSET_CRD, TEMPLATE, Fleet
from .world import World

DS = "daemonsets"


def daemonset(name: str, policy: dict | str | None = None) -> dict:
    ann = {}
    if policy is not None:
        ann["placement.fleetplane.io/policy"] = policy if isinstance(policy, str) else yaml.safe_dump(policy)
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": "default", "annotations": ann, "labels": {"team": "infra"}},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": copy.deepcopy(TEMPLATE)}}


def ds_status(child: dict, nodes: int, ready: int | None = None, observed: bool = True) -> dict:
    """What a cluster's DaemonSet controller reports for ``nodes`` nodes, ``ready`` of them ready."""
    ready = nodes if ready is None else ready
    st = {"desiredNumberScheduled": nodes, "currentNumberScheduled": nodes, "numberMisscheduled": 0,
          "numberReady": ready, "updatedNumberScheduled": nodes, "numberAvailable": ready}
    if ready < nodes:
        st["numberUnavailable"] = nodes - ready
    if observed:
        st["observedGeneration"] = child["metadata"].get("generation", 1)
    return st


def status(f: Fleet, name: str) -> dict:
    return (f.obj(DS, name) or {}).get("status") or {}


def condition(f: Fleet, name: str, type_: str) -> dict:
    return next((c for c in status(f, name).get("conditions") or [] if c["type"] == type_), {})


def wait_kids(f: Fleet, name: str, want: set[str]) -> dict[str, dict]:
    return wait_for(lambda: set(k := f.kids(DS, name)) == want and k, 15, interval=0.1,
                    what=f"children of {name} in {want} (now {set(f.kids(DS, name))})")


def test_one_child_per_selected_cluster_and_the_summed_status(fleet: Fleet) -> None:
    f = fleet
    f.serve(DAEMONSET_CRD)
    f.profile("east", labels={"env": "prod"})
    f.profile("west", labels={"env": "prod"})
    f.profile("lab", labels={"env": "dev"})
    f.apply(daemonset("agent", {"required": {"labels": "env=prod"}}))
    kids = wait_kids(f, "agent", {"east", "west"})
    parent = f.obj(DS, "agent")
    assert parent is not None
    for c, k in kids.items():
        md = k["metadata"]
        assert md["name"] == f"agent--{c}"
        assert md["labels"] == {"team": "infra", "kcp.dev/cluster": c, "kcp.dev/owned-by": "agent"}
        ref = md["ownerReferences"][0]
        assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == ("DaemonSet", "agent",
                                                                              parent["metadata"]["uid"], True)
        assert "replicas" not in k["spec"]  # a DaemonSet has none: it runs on every node of its cluster
        # the parent's template and, as kube defaults them, its update strategy and pod defaults
        assert k["spec"]["template"] == parent["spec"]["template"]
        assert k["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
        assert k["spec"]["template"]["spec"]["restartPolicy"] == "Always"
        assert "fleetplane.io/downstream-name" not in (md.get("annotations") or {})
    # not rolled out: rollout status waits
    rollout = subprocess.Popen([f.kubectl.binary, "--kubeconfig", str(f.kubeconfig), "-n", "default", "rollout",
                                "status", "daemonset/agent", "--timeout=30s"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    f.put_status(DS, kids["east"], ds_status(kids["east"], 3, ready=1))
    f.put_status(DS, kids["west"], ds_status(kids["west"], 2))
    st = wait_for(lambda: (s := status(f, "agent")).get("desiredNumberScheduled") == 5 and s, 15, interval=0.1,
                  what=f"agent's status summed (now {status(f, 'agent')})")
    assert {k: st[k] for k in ("currentNumberScheduled", "numberReady", "updatedNumberScheduled", "numberAvailable",
                               "numberMisscheduled", "numberUnavailable")} == {
        "currentNumberScheduled": 5, "numberReady": 3, "updatedNumberScheduled": 5, "numberAvailable": 3,
        "numberMisscheduled": 0, "numberUnavailable": 2}
    assert st["observedGeneration"] == parent["metadata"]["generation"]
    placement = condition(f, "agent", "Placement")
    assert (placement["status"], placement["reason"]) == ("True", "Placed"), placement
    assert rollout.poll() is None  # 3 of 5 available: still waiting
    f.put_status(DS, kids["east"], ds_status(kids["east"], 3))
    out, _ = rollout.communicate(40)
    assert rollout.returncode == 0, out
    assert 'daemon set "agent" successfully rolled out' in out
    # explain: the Duplicate decision, the filtered cluster and why, the children
    out = subprocess.run([sys.executable, "-m", "fleetplane.cli.placement", "explain", "daemonset/agent",
                          "--kubeconfig", str(f.kubeconfig)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "DaemonSet default/agent" in out.stdout and "strategy Duplicate" in out.stdout
    assert "lab" in out.stdout and "labels do not match labels env=prod" in out.stdout
    assert "Children: agent--east 3/3 ready, agent--west 2/2 ready" in out.stdout


def test_clusters_joining_and_leaving(fleet: Fleet) -> None:
    f = fleet
    f.serve(DAEMONSET_CRD)
    f.profile("east")
    f.apply(daemonset("agent"))  # no policy: every eligible cluster
    kids = wait_kids(f, "agent", {"east"})
    f.put_status(DS, kids["east"], ds_status(kids["east"], 2))
    # a cluster joining gets its own child at once
    f.profile("west")
    kids = wait_kids(f, "agent", {"east", "west"})
    f.put_status(DS, kids["west"], ds_status(kids["west"], 4))
    wait_for(lambda: status(f, "agent").get("numberAvailable") == 6, 15, interval=0.1,
             what=f"6 pods available (now {status(f, 'agent')})")
    # unreachable past the grace period: evicted, as a Deployment's child is (kept there, not counted)
    f.profile("west", healthy=False)
    wait_for(lambda: condition(f, "agent", "Partitioned").get("reason") == "ReplicasEvicted", 20, interval=0.1,
             what=f"agent Partitioned=ReplicasEvicted (now {condition(f, 'agent', 'Partitioned')})")
    assert set(f.kids(DS, "agent")) == {"east", "west"}
    wait_for(lambda: status(f, "agent").get("numberAvailable") == 2, 15, interval=0.1,
             what=f"west's pods not counted (now {status(f, 'agent')})")
    # a cluster that leaves the fleet loses its child
    f.delete_profile("west")
    wait_kids(f, "agent", {"east"})
    wait_for(lambda: not condition(f, "agent", "Partitioned"), 15, interval=0.1,
             what=f"no Partitioned condition (now {condition(f, 'agent', 'Partitioned')})")
    # the decision records Duplicate
    assert f.decision_of(DS, "agent")["strategy"] == "Duplicate"


def test_a_daemonset_policy_cannot_split(fleet: Fleet) -> None:
    f = fleet
    f.serve(DAEMONSET_CRD)
    f.profile("east")
    # refused on write (the policy admission check), with the field paths, as kube's validation
    out = f.kubectl.fail("apply", "-f", "-", stdin=json.dumps(daemonset("agent", {"strategy": "Even",
                                                                                  "replicasPerCluster": 2})))
    assert 'The DaemonSet "agent" is invalid' in out.err
    assert "metadata.annotations[placement.fleetplane.io/policy].strategy: Invalid value: a DaemonSet runs once in " \
           "every chosen cluster: only Duplicate, not 'Even'" in out.err
    assert "metadata.annotations[placement.fleetplane.io/policy].replicasPerCluster: Invalid value: not used by a " \
           "DaemonSet" in out.err
    assert f.obj(DS, "agent") is None and f.kids(DS, "agent") == {}


# -- end to end: simulated clusters run the children (their DaemonSet controllers, nodes, kubelets) --


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("ds-e2e")
    hub = SplitHub(tmp / "hub", extra=["--cluster-controller"]).start()
    w = World(hub, tmp, resources=("daemonsets.apps",))
    try:
        w.join("east", nodes=2)
        w.join("west", nodes=3)
        wait_for(lambda: w.fleet.api("GET", "/apis/apps/v1/namespaces/default/daemonsets")[0] == 200, 30,
                 interval=0.2, what="the Syncers to import daemonsets.apps")
        yield w
    finally:
        for c in w.clusters.values():
            c.stop(signal.SIGTERM)
        hub.stop()


def wait_ds(f: Fleet, name: str, timeout: float = 60, **want: int) -> dict:
    return wait_for(lambda: all(status(f, name).get(k) == v for k, v in want.items()) and status(f, name), timeout,
                    interval=0.2, what=f"{name} status {want} (now {status(f, name)})")


def test_e2e_a_daemonset_runs_on_every_node_of_the_fleet(world: World) -> None:
    f = world.fleet
    f.apply(daemonset("agent"))
    wait_ds(f, "agent", desiredNumberScheduled=5, numberAvailable=5, updatedNumberScheduled=5, numberReady=5)
    out = f.kubectl("rollout", "status", "daemonset/agent", "--timeout=40s").out
    assert 'daemon set "agent" successfully rolled out' in out
    table = f.kubectl("get", "daemonsets").out.splitlines()
    assert table[0].split()[:6] == ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE"], table
    rows = {r.split()[0]: r.split()[1:6] for r in table[1:]}
    assert rows == {"agent": ["5"] * 5, "agent--east": ["2"] * 5, "agent--west": ["3"] * 5}, rows
    for name, nodes in (("east", 2), ("west", 3)):
        pods = world.clusters[name].kubectl()("get", "pods", "-n", "default", "-l", "app=web", "-o", "name").out.split()
        assert len(pods) == nodes, (name, pods)
    # a cluster joining gets its child, and its nodes their pods
    world.join("north", nodes=1)
    wait_ds(f, "agent", desiredNumberScheduled=6, numberAvailable=6)
    # north dies: past the grace period its child is evicted (kept, frozen, not counted)
    world.clusters["north"].stop(signal.SIGKILL)
    wait_for(lambda: condition(f, "agent", "Partitioned").get("reason") == "ReplicasEvicted", 40, interval=0.2,
             what=f"agent Partitioned=ReplicasEvicted (now {condition(f, 'agent', 'Partitioned')})")
    wait_ds(f, "agent", desiredNumberScheduled=5, numberAvailable=5)
    assert "north" in f.kids(DS, "agent")
    # north leaves the fleet: its child goes
    code, body = f.api("DELETE", "/apis/cluster.example.dev/v1alpha1/namespaces/default/clusters/north")
    assert code in (200, 202), body
    wait_kids(f, "agent", {"east", "west"})
    wait_for(lambda: not condition(f, "agent", "Partitioned"), 30, interval=0.2,
             what=f"no Partitioned condition (now {condition(f, 'agent', 'Partitioned')})")
