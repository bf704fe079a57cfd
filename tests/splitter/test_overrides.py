"""Per-cluster overrides end to end: a hub running the Cluster controller and the splitter, and three
simulated clusters (``fleetplane cluster simulate``). The overrides of a Deployment's policy reach
its children on the hub and the Deployments and Pods in the member clusters; a replica cap moves
replicas to other clusters; a rule change rewrites only the children it concerns; a cluster label
change moves a rule's effect; bad policies are refused on write by kubectl with the field path;
``fleetplane placement explain`` lists each cluster's rules. Then, against a hub alone (profiles
and child status written by hand): the other split kinds, a template change that breaks a rule
(InvalidOverride), and a policy stored before the check (InvalidPlacement, as before)."""

from __future__ import annotations

import copy
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from ..harness import wait_for
from .conftest import SplitHub
from .fixtures import DAEMONSET_CRD, STATEFULSET_CRD, TEMPLATE, Fleet, deployment
from .world import World

POLICY = {"overrides": [
    {"name": "eu-registry", "labels": "region=eu", "image": {"registry": "eu.gcr.io/acme", "tag": "1.2.3"},
     "env": {"LOG_LEVEL": "debug"}},
    {"clusters": ["us-1"], "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}}, "labels": {"tier": "edge"}},
    {"clusters": ["eu-2"], "maxReplicas": 1},
]}


def container(obj: dict) -> dict:
    return obj["spec"]["template"]["spec"]["containers"][0]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("overrides")
    hub = SplitHub(tmp / "hub", extra=["--cluster-controller"]).start()
    w = World(hub, tmp)
    try:
        for name in ("eu-1", "eu-2", "us-1"):
            w.join(name, nodes=1)
        for name, region in (("eu-1", "eu"), ("eu-2", "eu"), ("us-1", "us")):
            w.fleet.kubectl("label", "clusterprofile", name, f"region={region}", "--overwrite")
        yield w
    finally:
        for c in w.clusters.values():
            c.stop(signal.SIGTERM)
        hub.stop()


def member_pods(world: World, cluster: str) -> list[dict]:
    return world.clusters[cluster].kubectl()("get", "pods", "-n", "default", "-l", "app=web", "-o", "json").json()["items"]


def member_deployment(world: World, cluster: str, name: str) -> dict | None:
    out = world.clusters[cluster].kubectl()("get", "deployment", name, "-n", "default", "-o", "json", check=False)
    return json.loads(out.out) if out.code == 0 else None


def test_overrides_reach_the_children_and_the_member_clusters(world: World) -> None:
    f = world.fleet
    f.apply(deployment("web", 6, policy=POLICY))
    split = wait_for(lambda: sum((s := f.split("web")).values()) == 6 and len(s) == 3 and s, 40, interval=0.2,
                     what=f"web split over three clusters (now {f.split('web')})")
    assert split["eu-2"] == 1 and split["eu-1"] + split["us-1"] == 5  # the cap moved replicas elsewhere
    world.wait_ready("web", 6, timeout=60)
    kids = f.children("web")
    for eu in ("eu-1", "eu-2"):
        c = container(kids[eu])
        assert c["image"] == "eu.gcr.io/acme/nginx:1.2.3"
        assert {"name": "LOG_LEVEL", "value": "debug"} in c["env"]
        assert kids[eu]["metadata"]["annotations"]["placement.fleetplane.io/overrides"] == "0"
        assert "tier" not in kids[eu]["metadata"]["labels"]
    us = kids["us-1"]
    assert container(us)["image"] == "nginx:1.27" and "env" not in container(us)
    assert container(us)["resources"] == {"requests": {"cpu": "100m", "memory": "64Mi"},
                                          "limits": {"cpu": "500m", "memory": "256Mi"}}
    assert us["metadata"]["labels"]["tier"] == "edge"
    assert us["spec"]["template"]["metadata"]["labels"] == {"app": "web", "tier": "edge"}
    assert us["metadata"]["annotations"]["placement.fleetplane.io/overrides"] == "1"
    hashes = {c: k["metadata"]["annotations"]["placement.fleetplane.io/overrides-hash"] for c, k in kids.items()}
    assert hashes["eu-1"] == hashes["eu-2"] != hashes["us-1"]
    # in the member clusters: the Deployments the Syncers made, and their Pods
    for eu in ("eu-1", "eu-2"):
        pods = member_pods(world, eu)
        assert pods and {p["spec"]["containers"][0]["image"] for p in pods} == {"eu.gcr.io/acme/nginx:1.2.3"}
        assert all({"name": "LOG_LEVEL", "value": "debug"} in p["spec"]["containers"][0]["env"] for p in pods)
    dep = member_deployment(world, "us-1", "web--us-1")
    assert dep is not None and dep["metadata"]["labels"]["tier"] == "edge"
    pods = member_pods(world, "us-1")
    assert len(pods) == split["us-1"]
    assert all(p["metadata"]["labels"]["tier"] == "edge" for p in pods)
    assert all(p["spec"]["containers"][0]["resources"]["limits"] == {"cpu": "500m", "memory": "256Mi"} for p in pods)
    # explain: per cluster, which rules apply and what they change
    out = subprocess.run([sys.executable, "-m", "fleetplane.cli.placement", "explain", "deployment/web",
                          "--kubeconfig", str(f.kubeconfig)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "Overrides (rules in order, later ones win):" in text
    assert "    image eu.gcr.io/acme/nginx:1.2.3 (overrides[0] eu-registry)" in text
    assert "    env LOG_LEVEL=debug (overrides[0] eu-registry)" in text
    assert "    maxReplicas 1 (overrides[2])" in text
    assert "    resources limits cpu=500m, memory=256Mi (overrides[1])" in text
    assert "    labels tier=edge (overrides[1])" in text
    assert "at most 1 replicas (overrides[2] maxReplicas)" in text
    doc = json.loads(subprocess.run([sys.executable, "-m", "fleetplane.cli.placement", "explain", "deployment/web",
                                     "-o", "json", "--kubeconfig", str(f.kubeconfig)],
                                    capture_output=True, text=True, timeout=60).stdout)
    assert doc["overrides"]["eu-2"]["rules"] == [0, 2] and doc["overrides"]["us-1"]["recorded"] == "1"


def test_a_rule_change_rewrites_only_the_children_it_concerns(world: World) -> None:
    f = world.fleet
    kids = wait_for(lambda: len(k := f.children("web")) == 3 and k, 30, what="web's children")
    before = {c: k["metadata"]["generation"] for c, k in kids.items()}
    policy = copy.deepcopy(POLICY)
    policy["overrides"][1]["resources"]["limits"]["cpu"] = "250m"
    f.kubectl("annotate", "deployment/web", "--overwrite", f"placement.fleetplane.io/policy={yaml.safe_dump(policy)}")
    wait_for(lambda: container(f.children("web")["us-1"])["resources"]["limits"]["cpu"] == "250m", 30, interval=0.2,
             what="us-1's child with the new limit")
    f.wait_reconciled("web", timeout=30)
    kids = f.children("web")
    assert kids["us-1"]["metadata"]["generation"] > before["us-1"]
    assert {c: kids[c]["metadata"]["generation"] for c in ("eu-1", "eu-2")} == {c: before[c] for c in ("eu-1", "eu-2")}
    wait_for(lambda: {p["spec"]["containers"][0]["resources"]["limits"]["cpu"] for p in member_pods(world, "us-1")}
             == {"250m"}, 60, interval=0.3, what="us-1's pods with the new limit")
    assert any(e["reason"] == "OverridesApplied" and "web--us-1" in e["message"] for e in f.events("web"))


def test_a_cluster_label_change_moves_a_rule(world: World) -> None:
    f = world.fleet
    wait_for(lambda: len(f.children("web")) == 3, 30, what="web's children")
    f.kubectl("label", "clusterprofile", "us-1", "region=eu", "--overwrite")
    try:
        wait_for(lambda: container(f.children("web")["us-1"])["image"] == "eu.gcr.io/acme/nginx:1.2.3", 30,
                 interval=0.2, what="the eu rule on us-1's child")
        us = f.children("web")["us-1"]
        assert us["metadata"]["annotations"]["placement.fleetplane.io/overrides"] == "0,1"
        wait_for(lambda: (pods := member_pods(world, "us-1")) and all(
            p["spec"]["containers"][0]["image"] == "eu.gcr.io/acme/nginx:1.2.3" for p in pods), 60, interval=0.3,
            what="us-1's pods from the eu registry")
    finally:
        f.kubectl("label", "clusterprofile", "us-1", "region=us", "--overwrite")
    wait_for(lambda: container(f.children("web")["us-1"])["image"] == "nginx:1.27", 30, interval=0.2,
             what="the eu rule off us-1's child again")
    assert "LOG_LEVEL" not in json.dumps(container(f.children("web")["us-1"]))


def test_bad_policies_are_refused_on_write_with_the_field_path(world: World) -> None:
    f = world.fleet
    bad = {"overrides": [{"clusters": ["eu-1"], "env": {"A": "1"}},
                         {"jsonPatch": [{"op": "replace", "path": "/spec/template/spec/containers/3/image",
                                         "value": "nginx:1.28"}]}]}
    out = f.kubectl.fail("apply", "-f", "-", stdin=json.dumps(deployment("bad", 2, policy=bad)))
    assert 'The Deployment "bad" is invalid' in out.err
    assert ("metadata.annotations[placement.fleetplane.io/policy].overrides[1].jsonPatch[0]: Invalid value: "
            "path /spec/template/spec/containers/3/image does not exist") in out.err
    bad = {"overrides": [{"env": {"9LIVES": "x"}, "resources": {"limits": {"memory": "a lot"}}}]}
    out = f.kubectl.fail("apply", "-f", "-", stdin=json.dumps(deployment("bad", 2, policy=bad)))
    assert "metadata.annotations[placement.fleetplane.io/policy].overrides[0].env[9LIVES]: Invalid value: " \
           "\"9LIVES\": a valid environment variable name" in out.err
    assert "metadata.annotations[placement.fleetplane.io/policy].overrides[0].resources.limits[memory]: Invalid " \
           "value: \"a lot\": quantities must match the regular expression" in out.err
    assert f.get("bad") is None
    # an update that breaks the policy of a stored object is refused too; the object is unchanged
    out = f.kubectl.fail("annotate", "deployment/web", "--overwrite",
                         "placement.fleetplane.io/policy=overrides: [{labels: {app: other}}]")
    assert ("metadata.annotations[placement.fleetplane.io/policy].overrides[0].labels[app]: Forbidden: "
            "spec.selector uses this label") in out.err
    assert "eu-registry" in f.get("web")["metadata"]["annotations"]["placement.fleetplane.io/policy"]


# -- against a hub alone: profiles and child status written by hand ---------------------------------


def test_every_split_kind_gets_its_overrides(fleet: Fleet) -> None:
    f = fleet
    f.serve(DAEMONSET_CRD)
    f.serve(STATEFULSET_CRD)
    f.profile("east", labels={"region": "us"})
    f.profile("west", labels={"region": "eu"})
    rule = "overrides: [{labels: region=eu, image: {tag: '1.28'}, annotations: {team: eu}}]"
    meta = {"name": "agent", "namespace": "default", "annotations": {"placement.fleetplane.io/policy": rule}}
    spec = {"selector": {"matchLabels": {"app": "web"}}, "template": copy.deepcopy(TEMPLATE)}
    f.apply({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta, "spec": spec})
    f.apply({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {**meta, "name": "db"},
             "spec": {**spec, "replicas": 2, "serviceName": "db"}})
    f.apply({"apiVersion": "fleet.fleetplane.io/v1alpha1", "kind": "ClusterDaemonSet",
             "metadata": {"name": "node", "namespace": "default"},
             "spec": {**spec, "placement": yaml.safe_load(rule)}})
    for plural, name in (("daemonsets", "agent"), ("statefulsets", "db"), ("deployments", "node")):
        kids = wait_for(lambda p=plural, n=name: set(k := f.kids(p, n)) == {"east", "west"} and k, 20, interval=0.1,
                        what=f"{plural}/{name} in east and west (now {set(f.kids(plural, name))})")
        assert container(kids["west"])["image"] == "nginx:1.28", (plural, kids["west"])
        assert container(kids["east"])["image"] == "nginx:1.27", (plural, kids["east"])
        assert kids["west"]["metadata"]["annotations"]["team"] == "eu"
        assert kids["west"]["spec"]["template"]["metadata"]["annotations"] == {"team": "eu"}
    # a ClusterDaemonSet's spec.placement is checked on write too
    code, body = f.api("POST", "/apis/fleet.fleetplane.io/v1alpha1/namespaces/default/clusterdaemonsets",
                       {"apiVersion": "fleet.fleetplane.io/v1alpha1", "kind": "ClusterDaemonSet",
                        "metadata": {"name": "bad"},
                        "spec": {**spec, "placement": {"overrides": [{"container": "nope", "env": {"A": "1"}}]}}})
    assert code == 422, body
    assert body["details"]["causes"] == [{"reason": "FieldValueInvalid", "field": "spec.placement.overrides[0].container",
                                          "message": 'Invalid value: no container named "nope" in the pod template '
                                                     "(containers: web)"}]


def test_a_template_change_that_breaks_a_rule_is_reported_not_applied(fleet: Fleet) -> None:
    f = fleet
    f.profile("east")
    f.profile("west")
    two = copy.deepcopy(TEMPLATE)
    two["spec"]["containers"].append({"name": "log", "image": "busybox:1.36"})
    policy = {"overrides": [{"clusters": ["west"], "jsonPatch": [
        {"op": "replace", "path": "/spec/template/spec/containers/1/image", "value": "busybox:1.37"}]}]}
    f.apply(deployment("web", 4, policy=policy, template=two))
    f.wait_split("web", {"east": 2, "west": 2})
    assert f.children("web")["west"]["spec"]["template"]["spec"]["containers"][1]["image"] == "busybox:1.37"
    f.ready_all("web")
    # the policy is unchanged, so the update is not checked again (ratcheting): the splitter finds out
    code, body = f.api("PATCH", "/apis/apps/v1/namespaces/default/deployments/web",
                       [{"op": "replace", "path": "/spec/template", "value": copy.deepcopy(TEMPLATE)}],
                       "application/json-patch+json")
    assert code == 200, body

    def placement() -> dict:
        return f.conditions("web").get("Placement") or {}

    c = wait_for(lambda: placement().get("reason") == "InvalidOverride" and placement(), 20, interval=0.1,
                 what=f"Placement=InvalidOverride (now {placement()})")
    assert c["status"] == "False"
    assert c["message"] == ("cluster west: overrides[0].jsonPatch[0]: path /spec/template/spec/containers/1/image "
                            "does not exist")
    assert f.conditions("web")["ReplicaFailure"]["reason"] == "InvalidOverride"
    kids = f.children("web")
    assert len(kids["east"]["spec"]["template"]["spec"]["containers"]) == 1  # the new template
    assert len(kids["west"]["spec"]["template"]["spec"]["containers"]) == 2  # kept as it was
    wait_for(lambda: any(e["reason"] == "InvalidOverride" for e in f.events("web")), 10, what="the Event")


@pytest.fixture(scope="module")
def unchecked_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SplitHub]:
    """A hub whose policy checks are off (``--disable-admission-plugins``): it stores what a hub
    before the check stored."""
    h = SplitHub(tmp_path_factory.mktemp("unchecked"),
                 extra=["--disable-admission-plugins=DeploymentAdmission,DaemonSetAdmission"]).start()
    yield h
    h.stop()


def test_a_policy_stored_before_the_check_is_reported_on_the_parent(unchecked_hub: SplitHub, tmp_path: Path) -> None:
    f = Fleet(unchecked_hub, tmp_path)
    f.serve(DAEMONSET_CRD)
    f.profile("east")
    f.apply(deployment("web", 3, policy="strategy: Weighted\nspread: [{}]"))

    def placement(plural: str, name: str) -> dict:
        obj = f.obj(plural, name) or {}
        return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == "Placement"), {})

    c = wait_for(lambda: placement("deployments", "web").get("reason") == "InvalidPlacement"
                 and placement("deployments", "web"), 20, interval=0.1, what="InvalidPlacement")
    assert c["status"] == "False"
    assert "strategy Weighted" in c["message"] and "spread[0].topologyKey: required" in c["message"]
    assert f.children("web") == {}
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet",
          "metadata": {"name": "agent", "namespace": "default",
                       "annotations": {"placement.fleetplane.io/policy": "strategy: Even"}},
          "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": copy.deepcopy(TEMPLATE)}}
    f.apply(ds)
    c = wait_for(lambda: placement("daemonsets", "agent").get("reason") == "InvalidPlacement"
                 and placement("daemonsets", "agent"), 20, interval=0.1, what="InvalidPlacement")
    assert "a DaemonSet runs once in every chosen cluster: only Duplicate, not 'Even'" in c["message"]
    assert "lastUpdateTime" not in c  # the DaemonSetCondition shape
    assert f.kids("daemonsets", "agent") == {}
