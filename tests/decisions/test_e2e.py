"""PlacementDecisions for split workloads, end to end with real processes: a hub running the
splitter and the decision publisher, ClusterProfiles written by hand (no clusters needed), the
real kubectl reading what a KEP-5313 consumer would."""

from __future__ import annotations

import json
from typing import Any

import yaml

from fleetplane.fleet.decisions.crd import PLACEMENTDECISION_CRD

from ..harness import Kubectl, wait_for
from ..splitter.fixtures import Fleet, deployment
from . import upstream

PD_PATH = "/apis/multicluster.x-k8s.io/v1alpha1/namespaces/default/placementdecisions"
KEY, INDEX, REVISION = ("multicluster.x-k8s.io/placement-key", "multicluster.x-k8s.io/decision-index",
                        "multicluster.x-k8s.io/decision-revision")
DECISION_KEY = "multicluster.x-k8s.io/decision-key"
REPLICAS = "placement.fleetplane.io/replicas"


def decisions(f: Fleet, selector: str = "") -> dict[str, dict]:
    code, body = f.api("GET", PD_PATH + (f"?labelSelector={selector}" if selector else ""))
    assert code == 200, body
    return {o["metadata"]["name"]: o for o in body["items"]}


def clusters(pd: dict) -> dict[str, int]:
    return json.loads(pd["metadata"]["annotations"][REPLICAS])


def wait_decisions(f: Fleet, want: dict[str, dict[str, int]], timeout: float = 30.0) -> dict[str, dict]:
    """Until the PlacementDecisions are exactly ``want`` (name -> cluster -> replicas)."""
    def now() -> dict[str, dict[str, int]]:
        return {n: clusters(o) for n, o in decisions(f).items()}
    wait_for(lambda: now() == want, timeout, interval=0.2, what=f"placement decisions {want} (now {now()})")
    return decisions(f)


def test_a_split_deployment_gets_its_placement_decision(fleet: Fleet) -> None:
    f = fleet
    f.profile("east")
    f.profile("west")
    f.kubectl("create", "namespace", "fleet-b")
    f.profile("north", namespace="fleet-b")  # a profile's namespace need not be the workload's
    f.apply(deployment("web", 6))
    f.wait_split("web", {"east": 2, "north": 2, "west": 2})
    wait_decisions(f, {"web-deployment-0": {"east": 2, "north": 2, "west": 2}})

    out = f.kubectl("get", "placementdecisions").out.splitlines()
    assert out[0].split() == ["NAME", "AGE"] and out[1].split()[0] == "web-deployment-0", out  # upstream has no columns
    pd = yaml.safe_load(f.kubectl("get", "placementdecision", "web-deployment-0", "-o", "yaml").out)
    assert pd["apiVersion"] == "multicluster.x-k8s.io/v1alpha1" and pd["kind"] == "PlacementDecision"
    assert pd["schedulerName"] == "fleetplane"
    assert [d["clusterProfileRef"] for d in pd["decisions"]] == [
        {"name": "east", "namespace": "default"}, {"name": "north", "namespace": "fleet-b"},
        {"name": "west", "namespace": "default"}]
    for d in pd["decisions"]:
        assert d["reason"] == "2 of 6 replicas: an even split over 3 clusters (strategy Even)", d
    labels = pd["metadata"]["labels"]
    assert (labels[KEY], labels[DECISION_KEY], labels[INDEX]) == ("web", "web-deployment", "0")
    assert labels["app.kubernetes.io/managed-by"] == "fleetplane-placement-decisions" and labels[REVISION]
    assert pd["metadata"]["annotations"][REPLICAS] == '{"east":2,"north":2,"west":2}'
    (owner,) = pd["metadata"]["ownerReferences"]
    assert owner == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": f.get("web")["metadata"]["uid"],
                     "controller": True, "blockOwnerDeletion": True}
    # a consumer finds the slices by the workload's placement key (KEP-5313's recommended discovery)
    names = f.kubectl("get", "placementdecisions", "-l", f"{KEY}=web", "-o", "name").out.split()
    assert names == ["placementdecision.multicluster.x-k8s.io/web-deployment-0"]

    # the workload's own placement-key label is the one its decisions carry
    f.patch("web", {"metadata": {"labels": {KEY: "web-prod"}}})
    wait_for(lambda: decisions(f)["web-deployment-0"]["metadata"]["labels"][KEY] == "web-prod", 20,
             what="the workload's placement key on its decision")


def test_replacement_updates_it_and_only_changes_write(fleet: Fleet) -> None:
    f = fleet
    f.profile("east", labels={"env": "prod"})
    f.profile("west", labels={"env": "prod"})
    f.profile("dev", labels={"env": "dev"})
    f.apply(deployment("api", 6, policy={"required": {"labels": "env=prod"}}))
    f.wait_split("api", {"east": 3, "west": 3})
    pd = wait_decisions(f, {"api-deployment-0": {"east": 3, "west": 3}})["api-deployment-0"]
    assert pd["decisions"][0]["reason"] == ("3 of 6 replicas: an even split over 2 clusters (strategy Even); "
                                            "matches required labels env=prod")
    rev, gen = pd["metadata"]["labels"][REVISION], pd["metadata"]["generation"]

    # a new policy moves replicas: the same object, the new decision
    f.patch("api", {"metadata": {"annotations": {"placement.fleetplane.io/policy": yaml.safe_dump(
        {"strategy": "Weighted", "weights": {"east": 2, "west": 1}, "required": {"labels": "env=prod"}})}}})
    f.wait_split("api", {"east": 4, "west": 2})
    pd = wait_decisions(f, {"api-deployment-0": {"east": 4, "west": 2}})["api-deployment-0"]
    assert [d["reason"].split(";")[0] for d in pd["decisions"]] == [
        "4 of 6 replicas: a weighted split over 2 clusters (strategy Weighted)",
        "2 of 6 replicas: a weighted split over 2 clusters (strategy Weighted)"]
    assert pd["metadata"]["labels"][REVISION] != rev and pd["metadata"]["generation"] == gen + 1
    gen = pd["metadata"]["generation"]

    # a cluster leaves the selection: its decision goes
    f.profile("west", labels={"env": "staging"})
    f.wait_split("api", {"east": 6})
    pd = wait_decisions(f, {"api-deployment-0": {"east": 6}})["api-deployment-0"]
    assert [d["clusterProfileRef"]["name"] for d in pd["decisions"]] == ["east"]
    gen += 1
    assert pd["metadata"]["generation"] == gen

    # what does not change the placement writes nothing: a reconcile of the splitter that only
    # filters one more cluster, then a scale as a barrier, leave exactly one more generation
    f.wait_reconciled("api")
    f.patch("api", {"spec": {"replicas": 7}})
    pd = wait_decisions(f, {"api-deployment-0": {"east": 7}})["api-deployment-0"]
    assert pd["metadata"]["generation"] == gen + 1, pd["metadata"]


def test_more_than_100_clusters_are_sliced(fleet: Fleet) -> None:
    f = fleet
    for i in range(120):
        f.profile(f"c{i:03}", labels={"group": "a" if i < 90 else "b"})
    cds = {"apiVersion": "fleet.fleetplane.io/v1alpha1", "kind": "ClusterDaemonSet",
           "metadata": {"name": "agent", "namespace": "default"},
           "spec": {"replicasPerCluster": 2, "selector": {"matchLabels": {"app": "agent"}},
                    "template": {"metadata": {"labels": {"app": "agent"}},
                                 "spec": {"containers": [{"name": "agent", "image": "busybox"}]}}}}
    f.apply(cds)
    every = {f"c{i:03}": 2 for i in range(120)}
    pds = wait_decisions(f, {"agent-clusterdaemonset-0": {c: 2 for c in sorted(every)[:100]},
                             "agent-clusterdaemonset-1": {c: 2 for c in sorted(every)[100:]}}, timeout=120)
    first, second = pds["agent-clusterdaemonset-0"], pds["agent-clusterdaemonset-1"]
    assert len(first["decisions"]) == 100 and len(second["decisions"]) == 20
    assert (first["metadata"]["labels"][INDEX], second["metadata"]["labels"][INDEX]) == ("0", "1")
    for key in (DECISION_KEY, KEY, REVISION):
        assert first["metadata"]["labels"][key] == second["metadata"]["labels"][key], key
    assert first["metadata"]["labels"][DECISION_KEY] == "agent-clusterdaemonset"
    assert second["decisions"][0] == {"clusterProfileRef": {"name": "c100", "namespace": "default"},
                                      "reason": "2 replicas: every eligible cluster runs the workload (strategy Duplicate)"}
    assert first["metadata"]["ownerReferences"][0]["kind"] == "ClusterDaemonSet"
    out = f.kubectl("get", "placementdecisions", "-l", f"{DECISION_KEY}=agent-clusterdaemonset", "-o", "name").out.split()
    assert len(out) == 2

    # fewer clusters: back to one slice
    cds["spec"]["placement"] = {"required": {"labels": "group=a"}}
    f.apply(cds)
    wait_decisions(f, {"agent-clusterdaemonset-0": {f"c{i:03}": 2 for i in range(90)}}, timeout=120)

    f.kubectl("delete", "clusterdaemonset", "agent")
    wait_decisions(f, {}, timeout=60)


def test_deleted_or_no_longer_split_parents_lose_their_decisions(fleet: Fleet) -> None:
    f = fleet
    f.profile("east")
    f.apply(deployment("a", 2))
    f.apply(deployment("b", 2))
    wait_decisions(f, {"a-deployment-0": {"east": 2}, "b-deployment-0": {"east": 2}})
    f.kubectl("delete", "deployment", "a")
    wait_decisions(f, {"b-deployment-0": {"east": 2}})
    # a Deployment assigned to a cluster by hand is a leaf, not split: no decision of fleetplane's
    f.patch("b", {"metadata": {"labels": {"kcp.dev/cluster": "east"}}})
    wait_decisions(f, {})


def test_a_deleted_slice_comes_back(fleet: Fleet) -> None:
    f = fleet
    f.profile("east")
    f.apply(deployment("c", 1))
    pd = wait_decisions(f, {"c-deployment-0": {"east": 1}})["c-deployment-0"]
    f.kubectl("delete", "placementdecision", "c-deployment-0")
    wait_for(lambda: (decisions(f).get("c-deployment-0") or pd)["metadata"]["uid"] != pd["metadata"]["uid"], 20,
             what="the slice written again")


def test_someone_elses_namesake_is_not_overwritten(fleet: Fleet) -> None:
    f = fleet
    f.profile("east")
    theirs = _pd("d-deployment-0", [{"clusterProfileRef": {"name": "elsewhere"}}])
    theirs["schedulerName"] = "another-scheduler"
    code, body = f.api("POST", PD_PATH, theirs)
    assert code == 201, body
    f.apply(deployment("d", 1))
    f.apply(deployment("e", 1))
    wait_for(lambda: "e-deployment-0" in decisions(f), 20, what="the other workload's decision")  # d's had its turn
    pd = decisions(f)["d-deployment-0"]
    assert pd["schedulerName"] == "another-scheduler" and pd["metadata"]["uid"] == body["metadata"]["uid"]
    f.kubectl("delete", "placementdecision", "d-deployment-0")
    wait_for(lambda: (decisions(f).get("d-deployment-0") or {}).get("schedulerName") == "fleetplane", 60,
             what="fleetplane's decision once the name is free")


# -- the API as served ------------------------------------------------------------------------------


def _flatten(schema: dict, path: str = "", out: dict | None = None) -> dict[str, dict]:
    """A schema as upstream.FIELDS writes it: field path -> its keywords (not its children)."""
    out = {} if out is None else out
    out[path] = {k: v for k, v in schema.items() if k not in ("properties", "items")}
    for name, sub in (schema.get("properties") or {}).items():
        _flatten(sub, f"{path}.{name}" if path else name, out)
    if "items" in schema:
        _flatten(schema["items"], f"{path}[]", out)
    return out


def test_the_crd_document_is_upstreams() -> None:
    crd = PLACEMENTDECISION_CRD
    assert crd["metadata"]["name"] == "placementdecisions.multicluster.x-k8s.io"
    spec = crd["spec"]
    assert sorted(spec) == ["group", "names", "scope", "versions"]
    assert (spec["group"], spec["names"], spec["scope"]) == (upstream.GROUP, upstream.NAMES, upstream.SCOPE)
    (version,) = spec["versions"]
    assert sorted(version) == ["name", "schema", "served", "storage"]  # no columns, no subresources
    assert {k: version[k] for k in ("name", "served", "storage")} == upstream.VERSION
    assert _flatten(version["schema"]["openAPIV3Schema"]) == upstream.FIELDS


def test_the_served_api_is_upstreams(fleet: Fleet) -> None:
    f = fleet
    line = next(ln for ln in f.kubectl("api-resources", "--api-group=multicluster.x-k8s.io", "--no-headers").out.splitlines()
                if ln.startswith("placementdecisions"))
    assert line.split() == ["placementdecisions", "multicluster.x-k8s.io/v1alpha1", "true", "PlacementDecision"]
    code, doc = f.api("GET", "/openapi/v3/apis/multicluster.x-k8s.io/v1alpha1")
    assert code == 200, doc
    served = doc["components"]["schemas"]["io.x-k8s.multicluster.v1alpha1.PlacementDecision"]
    got = _flatten(served)
    for path, want in upstream.FIELDS.items():
        if path == "metadata":  # served as a reference to ObjectMeta, as for every CRD
            continue
        have = {k: v for k, v in got[path].items() if not k.startswith("x-kubernetes-")}
        if path in ("apiVersion", "kind"):  # kube's OpenAPI builder puts TypeMeta's own text there
            have["description"] = want["description"]
        assert have == want, (path, have)
    assert set(got) - set(upstream.FIELDS) <= {p for p in got if p.startswith("metadata")}
    explain = f.kubectl("explain", "placementdecision.decisions.clusterProfileRef").out
    assert "ClusterProfileRef is a reference to the target ClusterProfile." in explain and "-required-" in explain


def _pd(name: str, decisions: Any) -> dict:
    body: dict[str, Any] = {"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "PlacementDecision",
                            "metadata": {"name": name, "namespace": "default"}}
    if decisions is not None:
        body["decisions"] = decisions
    return body


def test_upstreams_validation(fleet: Fleet) -> None:
    f = fleet
    ref = {"clusterProfileRef": {"name": "east"}}
    code, body = f.api("POST", PD_PATH, _pd("too-many", [ref] * 101))
    assert code == 422 and "decisions: Too many: 101: must have at most 100 items" in body["message"], body
    code, body = f.api("POST", PD_PATH, _pd("none", None))
    assert code == 422 and "decisions: Required value" in body["message"], body
    code, body = f.api("POST", PD_PATH, _pd("no-name", [{"clusterProfileRef": {"namespace": "x"}}]))
    assert code == 422 and "decisions[0].clusterProfileRef.name: Required value" in body["message"], body
    code, body = f.api("POST", PD_PATH, _pd("empty", []))  # minItems 0: an empty decision is one
    assert code == 201, body
    code, body = f.api("POST", PD_PATH, _pd("hundred", [ref] * 100))
    assert code == 201, body


def test_the_publishers_identity(fleet: Fleet) -> None:
    k = Kubectl(fleet.kubeconfig)
    user = "system:fleetplane:placement-decisions"

    def can(*args: str) -> bool:
        return k("auth", "can-i", "--as", user, *args, check=False).out.strip() == "yes"

    for verb in ("create", "update", "delete", "list", "watch"):
        assert can(verb, "placementdecisions.multicluster.x-k8s.io"), verb
    for verb in ("list", "watch"):
        assert can(verb, "deployments.apps") and can(verb, "clusterprofiles.multicluster.x-k8s.io")
    assert not can("update", "deployments.apps") and not can("patch", "deployments.apps")
    assert not can("update", "clusterprofiles.multicluster.x-k8s.io") and not can("get", "secrets")
    assert not can("create", "events")
