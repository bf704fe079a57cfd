"""The splitter in a hub process (as ``fleetplane start`` will run it), driven with kubectl and the
API: ClusterProfiles written by hand, children's status written as their clusters would.
Grace periods are short: unhealthy 2 s (profile times have whole seconds), unschedulable 1.5 s, join 0 s."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

from ..harness import wait_for
from .fixtures import Fleet, deployment


def status(f: Fleet, name: str) -> dict:
    return (f.get(name) or {}).get("status") or {}


def wait_status(f: Fleet, name: str, **want) -> dict:
    return wait_for(lambda: all(status(f, name).get(k) == v for k, v in want.items()) and status(f, name), 15,
                    interval=0.1, what=f"{name} status {want} (now {status(f, name)})")


def wait_condition(f: Fleet, name: str, type_: str, status_: str, reason: str | None = None) -> dict:
    def check():
        c = f.conditions(name).get(type_)
        return c if c and c["status"] == status_ and (reason is None or c["reason"] == reason) else None
    return wait_for(check, 15, interval=0.1, what=f"{name} {type_}={status_} {reason} (now {f.conditions(name).get(type_)})")


def reasons(f: Fleet, name: str) -> list[tuple[str, str]]:
    return [(e["reason"], e["message"]) for e in f.events(name)]


def test_the_seeds_walkthrough(fleet: Fleet) -> None:
    """15 replicas over two clusters: two virtual Deployments, READY 8/15 while converging, 15/15 when
    done, kubectl rollout status on the parent, and the status sums."""
    f = fleet
    f.profile("cluster-1")
    f.profile("cluster-2")
    f.apply(deployment("my-deployment", 15))
    # Webster: 8 and 7; which cluster gets the 8th is a hash of the Deployment's name (stable)
    f.wait_split("my-deployment", {"cluster-1": 7, "cluster-2": 8})
    kids = f.children("my-deployment")
    for c, k in kids.items():
        md = k["metadata"]
        assert md["name"] == f"my-deployment--{c}"
        assert md["labels"]["kcp.dev/cluster"] == c and md["labels"]["kcp.dev/owned-by"] == "my-deployment"
        ref = md["ownerReferences"][0]
        assert (ref["kind"], ref["name"], ref["controller"], ref["blockOwnerDeletion"]) == \
            ("Deployment", "my-deployment", True, True)
        assert k["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    f.set_child_status(kids["cluster-1"], 1)
    f.set_child_status(kids["cluster-2"], 7)
    wait_status(f, "my-deployment", readyReplicas=8, replicas=15)
    rows = {r.split()[0]: r.split()[1] for r in f.kubectl("get", "deployments").out.splitlines()[1:]}
    assert rows == {"my-deployment": "8/15", "my-deployment--cluster-1": "1/7", "my-deployment--cluster-2": "7/8"}
    assert f.conditions("my-deployment")["Available"]["status"] == "False"
    assert "cluster-1" in f.conditions("my-deployment")["Available"]["message"]
    rollout = subprocess.Popen([f.kubectl.binary, "--kubeconfig", str(f.kubeconfig), "-n", "default", "rollout",
                                "status", "deployment/my-deployment", "--timeout=20s"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    f.ready_all("my-deployment")
    out, _ = rollout.communicate(30)
    assert rollout.returncode == 0, out
    assert 'deployment "my-deployment" successfully rolled out' in out
    st = wait_status(f, "my-deployment", readyReplicas=15, availableReplicas=15, updatedReplicas=15)
    assert st["observedGeneration"] == f.get("my-deployment")["metadata"]["generation"]
    assert "unavailableReplicas" not in st
    conds = f.conditions("my-deployment")
    assert conds["Available"]["status"] == "True" and conds["Progressing"]["reason"] == "NewReplicaSetAvailable"
    assert conds["Placement"]["message"] == "15 replicas placed: cluster-1 7, cluster-2 8"
    assert "ReplicaFailure" not in conds
    rows = {r.split()[0]: r.split()[1] for r in f.kubectl("get", "deployments").out.splitlines()[1:]}
    assert rows["my-deployment"] == "15/15"
    assert ("Placed", "15 replicas placed: cluster-1 7, cluster-2 8") in reasons(f, "my-deployment")
    # the template flows down; observedGeneration waits for the children to observe it
    gen = f.get("my-deployment")["metadata"]["generation"]
    # (kubectl set image sends a strategic merge patch, which the hub refuses for CRDs, as kube does)
    f.kubectl("patch", "deployment/my-deployment", "--type=json", "-p",
              '[{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "nginx:1.28"}]')
    wait_for(lambda: {k["spec"]["template"]["spec"]["containers"][0]["image"]
                      for k in f.children("my-deployment").values()} == {"nginx:1.28"}, 10, what="template down")
    assert f.split("my-deployment") == {"cluster-1": 7, "cluster-2": 8}
    assert status(f, "my-deployment")["observedGeneration"] <= gen
    f.ready_all("my-deployment")
    wait_for(lambda: status(f, "my-deployment").get("observedGeneration") == f.get("my-deployment")["metadata"]["generation"],
             10, what="observedGeneration caught up")
    # deleting the parent deletes the children (ownerReferences)
    f.kubectl("delete", "deployment/my-deployment")
    wait_for(lambda: not f.children("my-deployment"), 15, what="children garbage-collected")


def test_scale_up_and_down_moves_only_the_difference(fleet: Fleet) -> None:
    f = fleet
    for c in ("a", "b", "c"):
        f.profile(c)
    f.apply(deployment("web", 10))
    f.wait_split("web", {"a": 3, "b": 3, "c": 4})
    f.ready_all("web")
    gens = {c: k["metadata"]["generation"] for c, k in f.children("web").items()}
    f.kubectl("scale", "deployment/web", "--replicas=14")
    f.wait_split("web", {"a": 4, "b": 5, "c": 5})
    f.ready_all("web")
    f.kubectl("scale", "deployment/web", "--replicas=11")
    f.wait_split("web", {"a": 3, "b": 4, "c": 4})
    f.kubectl("scale", "deployment/web", "--replicas=0")
    f.wait_split("web", {"a": 0, "b": 0, "c": 0})  # the children stay, at 0
    for k in f.children("web").values():
        f.set_child_status(k, 0)
    wait_condition(f, "web", "Available", "True")
    f.kubectl("scale", "deployment/web", "--replicas=3")
    f.wait_split("web", {"a": 1, "b": 1, "c": 1})
    assert set(gens) == set(f.children("web"))  # never re-created
    events = [m for r, m in reasons(f, "web") if r == "ScalingReplicaSet"]
    assert "Scaled web--c in cluster c from 4 to 5" in events


def test_a_third_cluster_joins_make_before_break(fleet: Fleet) -> None:
    f = fleet
    f.profile("east")
    f.profile("west")
    f.apply(deployment("web", 15))
    f.wait_split("web", {"east": 7, "west": 8})
    f.ready_all("web")
    wait_status(f, "web", availableReplicas=15)
    f.profile("north")
    f.wait_split("web", {"east": 7, "west": 8, "north": 5})  # the new home first
    wait_condition(f, "web", "Placement", "True", "Rebalancing")
    f.wait_reconciled("web")
    assert f.split("web") == {"east": 7, "west": 8, "north": 5}, "nothing serving goes before its replacement"
    north = f.children("web")["north"]
    f.set_child_status(north, 2)  # two replacements up: two may go
    f.wait_split("web", {"east": 5, "west": 8, "north": 5})
    f.set_child_status(f.children("web")["north"], 5)
    f.wait_split("web", {"east": 5, "west": 5, "north": 5})
    f.ready_all("web")
    wait_condition(f, "web", "Placement", "True", "Placed")
    wait_status(f, "web", readyReplicas=15)
    assert any(r == "Rebalancing" for r, _ in reasons(f, "web"))


def test_an_unhealthy_cluster_loses_its_replicas_after_the_grace_period(fleet: Fleet) -> None:
    f = fleet
    f.profile("east")
    f.profile("west")
    f.apply(deployment("web", 10))
    f.wait_split("web", {"east": 5, "west": 5})
    f.ready_all("web")
    wait_status(f, "web", availableReplicas=10)
    f.profile("west", healthy=False, reason="Unreachable")
    # at once: west's (stale) status stops counting; after the grace period its replicas are
    # evicted: east grows, west's child is frozen (kept, not counted, never written)
    f.wait_split("web", {"east": 10, "west": 5})
    d = wait_for(lambda: "west" in f.decision("web").get("filtered", {}) and f.decision("web"), 10, what="decision")
    assert d["filtered"]["west"].startswith("unhealthy since") and "Unreachable" in d["filtered"]["west"]
    assert d["evicted"]["west"]["replicas"] == 5 and d["shares"] == {"east": 10}
    cond = wait_condition(f, "web", "Partitioned", "True", "ReplicasEvicted")
    assert "west unreachable" in cond["message"] and "not counted" in cond["message"]
    wait_status(f, "web", availableReplicas=5, replicas=5)  # east's 5: west's do not count
    f.set_child_status(f.children("web")["east"], 10)
    wait_status(f, "web", readyReplicas=10, availableReplicas=10)
    f.wait_reconciled("web")
    assert f.split("web") == {"east": 10, "west": 5}
    assert not any(r == "SuccessfulDelete" for r, _ in reasons(f, "web"))
    assert {"ReplicasEvicted"} <= {r for r, _ in reasons(f, "web")}
    # it comes back: its replicas count again after the rejoin grace (2 s here), then east shrinks
    # (west's child says its 5 are available); west's child is never written meanwhile
    west_rv = f.children("web")["west"]["metadata"]["resourceVersion"]
    back = time.monotonic()
    f.profile("west", healthy=True)
    wait_condition(f, "web", "Partitioned", "True", "ClusterReturning")
    assert f.split("web") == {"east": 10, "west": 5}
    f.wait_split("web", {"east": 5, "west": 5})
    assert time.monotonic() - back >= 2.0
    assert f.children("web")["west"]["metadata"]["resourceVersion"] == west_rv
    wait_for(lambda: "Partitioned" not in f.conditions("web"), 10, what="Partitioned removed")
    assert {"ClusterReturning", "ReplicasRestored"} <= {r for r, _ in reasons(f, "web")}


def test_a_flapping_cluster_does_not_thrash(fleet: Fleet) -> None:
    f = fleet
    f.profile("east")
    f.profile("west")
    f.apply(deployment("web", 10))
    f.wait_split("web", {"east": 5, "west": 5})
    f.ready_all("web")
    before = {c: (k["metadata"]["generation"], k["spec"]["replicas"]) for c, k in f.children("web").items()}
    deadline = time.monotonic() + 3.0
    healthy = True
    while time.monotonic() < deadline:  # down for 0.4 s at a time, under the 2 s grace period
        healthy = not healthy
        f.profile("west", healthy=healthy)
        time.sleep(0.4 if not healthy else 0.2)
    f.profile("west", healthy=True)
    f.wait_reconciled("web")
    after = {c: (k["metadata"]["generation"], k["spec"]["replicas"]) for c, k in f.children("web").items()}
    assert after == before


def test_affinity_spread_and_explain(fleet: Fleet, tmp_path) -> None:
    f = fleet
    zones = {"a1": "zone-a", "a2": "zone-a", "b1": "zone-b", "c1": "zone-c"}
    for name, zone in zones.items():
        f.profile(name, labels={"env": "prod"}, properties={"topology.kubernetes.io/zone": zone, "location": "eu"})
    f.profile("dev1", labels={"env": "dev"}, properties={"topology.kubernetes.io/zone": "zone-a"})
    policy = {"required": {"labels": "env=prod"},
              "spread": [{"topologyKey": "topology.kubernetes.io/zone", "maxSkew": 1}],
              "preferred": [{"weight": 10, "clusters": ["a2"]}]}
    f.apply(deployment("web", 9, policy=policy))
    got = wait_for(lambda: sum(f.split("web").values()) == 9 and f.split("web"), 15, what="9 placed")
    per_zone = {}
    for c, n in got.items():
        per_zone[zones[c]] = per_zone.get(zones[c], 0) + n
    assert per_zone == {"zone-a": 3, "zone-b": 3, "zone-c": 3} and "dev1" not in got
    assert got["a2"] == 3  # preferred within its zone
    out = subprocess.run([sys.executable, "-m", "fleetplane.cli.placement", "explain", "deployment/web",
                          "--kubeconfig", str(f.kubeconfig)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "spread over topology.kubernetes.io/zone with maxSkew 1" in text
    assert "dev1" in text and "does not match required affinity: labels do not match labels env=prod" in text
    assert "Recorded by the splitter: 9 of 9 placed" in text
    out = subprocess.run([sys.executable, "-m", "fleetplane.cli.placement", "explain", "deployment/web", "-o", "json",
                          "--kubeconfig", str(f.kubeconfig)], capture_output=True, text=True, timeout=60)
    doc = json.loads(out.stdout)
    assert doc["decision"]["clusters"]["a2"]["score"] == 10, doc
    assert doc["decision"]["shares"] == got, (doc, f.split("web"))


def test_bad_input_is_explained_on_the_parent(fleet: Fleet) -> None:
    f = fleet
    f.profile("east", properties={"location": "us-east-1"})
    f.profile("west", properties={"location": "us-west-2"})
    # a rule that matches nothing
    f.apply(deployment("nowhere", 3, policy={"required": {"location": "mars"}}))
    c = wait_condition(f, "nowhere", "Placement", "False", "NoEligibleClusters")
    assert c["message"] == ("no cluster can take its 3 replicas: east: does not match required affinity: location is "
                            "not mars (us-east-1); west: does not match required affinity: location is not mars "
                            "(us-west-2)")
    assert f.conditions("nowhere")["ReplicaFailure"]["reason"] == "NoEligibleClusters"
    assert f.conditions("nowhere")["Available"]["status"] == "False"
    wait_for(lambda: any(r == "NoEligibleClusters" for r, _ in reasons(f, "nowhere")), 10, what="event")
    assert f.children("nowhere") == {}
    # fixed: placed
    f.patch("nowhere", {"metadata": {"annotations": {"placement.fleetplane.io/policy": "required: {location: us-east-1}"}}})
    f.wait_split("nowhere", {"east": 3})
    wait_condition(f, "nowhere", "Placement", "True", "Placed")
    # malformed: refused on write (422, every bad field named), the children stay as they are
    # (a policy stored before the check: tests/splitter/test_overrides.py, InvalidPlacement)
    code, body = f.api("PATCH", "/apis/apps/v1/namespaces/default/deployments/nowhere",
                       {"metadata": {"annotations": {"placement.fleetplane.io/policy": "strategy: Weighted\nspread: [{}]"}}},
                       "application/merge-patch+json")
    assert code == 422 and body["reason"] == "Invalid", body
    assert [c["field"] for c in body["details"]["causes"]] == [
        "metadata.annotations[placement.fleetplane.io/policy].spread[0].topologyKey",
        "metadata.annotations[placement.fleetplane.io/policy].weights"]
    assert "required by strategy Weighted" in body["message"]
    assert f.split("nowhere") == {"east": 3}
    # scaling still works with the last good split kept... and a Deployment no cluster can take (capacity)
    f.profile("tiny", properties={"resources.fleetplane.io/allocatable-cpu": "0.05"})
    f.apply(deployment("big", 4, policy={"required": {"clusters": ["tiny"]}}))
    c = wait_condition(f, "big", "Placement", "False", "NoEligibleClusters")
    assert "tiny: 0/4 pods fit: insufficient cpu (0.05 spare, 0.1 per replica)" in c["message"]


def test_replicas_that_stay_unschedulable_move(fleet: Fleet) -> None:
    f = fleet
    f.profile("east")
    f.profile("west")
    f.apply(deployment("web", 10))
    f.wait_split("web", {"east": 5, "west": 5})
    kids = f.children("web")
    f.set_child_status(kids["west"], 5)
    # east: only 2 of 5 come up, with the scheduler's reason reported on the child
    k = kids["east"]
    k["metadata"].setdefault("annotations", {})["placement.fleetplane.io/unschedulable"] = json.dumps(
        {"replicas": 3, "message": "0/3 nodes are available: 3 Insufficient cpu."})
    code, out = f.api("PUT", f"/apis/apps/v1/namespaces/default/deployments/{k['metadata']['name']}", k)
    assert code == 200, out
    f.set_child_status(f.children("web")["east"], 2)
    f.wait_split("web", {"east": 2, "west": 8})
    f.set_child_status(f.children("web")["west"], 8)
    c = wait_condition(f, "web", "Placement", "True", "Placed")
    assert "east limited to 2 until" in c["message"] and "3 of 5 replicas unavailable" in c["message"]
    assert "Insufficient cpu" in c["message"]
    events = wait_for(lambda: [m for r, m in reasons(f, "web") if r == "Unschedulable"], 10, what="Unschedulable event")
    assert re.match(r"east: 3 of 5 replicas unavailable for \d+s: 0/3 nodes are available: 3 Insufficient cpu\.; "
                    r"moving up to 3 replicas to other clusters$", events[0]), events
    assert wait_for(lambda: f.decision("web").get("limits"), 10, what="limits")["east"]["max"] == 2
    wait_status(f, "web", availableReplicas=10)
    assert "ReplicaFailure" not in f.conditions("web")
    # east is full for everyone for now: a new Deployment does not grow there
    f.apply(deployment("other", 4))
    f.wait_split("other", {"west": 4})
    full = wait_for(lambda: f.decision("other").get("full"), 10, what="the decision annotation")
    assert "default/web has replicas that stay unschedulable there" in full["east"]
    # nowhere else to go: the replicas stay and the parent says so
    k = f.children("web")["west"]
    k["metadata"]["annotations"]["placement.fleetplane.io/unschedulable"] = json.dumps(
        {"replicas": 2, "message": "0/2 nodes are available: 2 Too many pods."})
    code, out = f.api("PUT", f"/apis/apps/v1/namespaces/default/deployments/{k['metadata']['name']}", k)
    assert code == 200, out
    f.set_child_status(f.children("web")["west"], 6)
    c = wait_condition(f, "web", "ReplicaFailure", "True", "Unschedulable")
    assert "west: 2 of 8 replicas unavailable" in c["message"] and "no other cluster has room" in c["message"]
    assert f.conditions("web")["Placement"]["reason"] == "Unschedulable"
    f.wait_reconciled("web")
    assert f.split("web") == {"east": 2, "west": 8}, "no replica lost, none thrashing"


def test_taints_and_caps(fleet: Fleet) -> None:
    f = fleet
    f.profile("east")
    f.profile("west")
    f.apply(deployment("web", 6, policy="maxReplicasPerCluster: 4"))
    f.wait_split("web", {"east": 3, "west": 3})
    f.ready_all("web")
    f.profile("east", annotations={"fleetplane.io/taints": "maintenance:NoExecute"})
    f.wait_split("web", {"east": 3, "west": 4})  # the cap: 2 cannot go anywhere, east keeps serving them
    f.set_child_status(f.children("web")["west"], 4)
    f.wait_split("web", {"east": 2, "west": 4})
    c = wait_condition(f, "web", "Placement", "False", "PlacementFailed")
    assert "west: at maxReplicasPerCluster (4)" in c["message"] and "east: taint maintenance:NoExecute" in c["message"]
    f.patch("web", {"metadata": {"annotations": {"placement.fleetplane.io/policy":
                                                 "tolerations: [{key: maintenance, operator: Exists}]"}}})
    f.wait_split("web", {"east": 3, "west": 3})


def test_cluster_daemonset(fleet: Fleet) -> None:
    f = fleet
    f.profile("east", labels={"env": "prod"})
    f.profile("west", labels={"env": "prod"})
    f.profile("dev", labels={"env": "dev"})
    cds = {"apiVersion": "fleet.fleetplane.io/v1alpha1", "kind": "ClusterDaemonSet",
           "metadata": {"name": "agent", "namespace": "default"},
           "spec": {"replicasPerCluster": 1, "selector": {"matchLabels": {"app": "agent"}},
                    "template": {"metadata": {"labels": {"app": "agent"}},
                                 "spec": {"containers": [{"name": "agent", "image": "busybox"}]}},
                    "placement": {"required": {"labels": "env=prod"}}}}
    f.apply(cds)

    def kids():
        code, body = f.api("GET", "/apis/apps/v1/namespaces/default/deployments")
        return {o["metadata"]["labels"]["kcp.dev/cluster"]: o for o in body["items"]
                if o["metadata"]["name"].startswith("agent--") and not o["metadata"].get("deletionTimestamp")}

    wait_for(lambda: set(kids()) == {"east", "west"}, 15, what="one child per prod cluster")
    assert {k["spec"]["replicas"] for k in kids().values()} == {1}
    for k in kids().values():
        f.set_child_status(k)

    def cstatus():
        return f.api("GET", "/apis/fleet.fleetplane.io/v1alpha1/namespaces/default/clusterdaemonsets/agent")[1].get("status") or {}

    wait_for(lambda: cstatus().get("numberClustersAvailable") == 2, 10, what="2 clusters available")
    assert cstatus()["desiredNumberClusters"] == 2
    out = f.kubectl("get", "clusterdaemonsets").out
    assert out.split("\n")[1].split()[:4] == ["agent", "2", "2", "2"], out
    f.profile("north", labels={"env": "prod"})
    wait_for(lambda: set(kids()) == {"east", "west", "north"}, 15, what="a child for the new cluster")
    f.profile("west", labels={"env": "prod"}, healthy=False)
    # past the grace period west's child is evicted: kept (frozen), no longer desired or counted
    wait_for(lambda: cstatus().get("desiredNumberClusters") == 2, 15, what="west no longer desired")
    assert set(kids()) == {"east", "west", "north"}
    conds = {c["type"]: c for c in cstatus()["conditions"]}
    assert conds["Available"]["status"] == "False" and "north" in conds["Available"]["message"]
    assert conds["Partitioned"]["reason"] == "ReplicasEvicted" and "west" in conds["Partitioned"]["message"]


def test_the_splitter_resumes_after_a_hub_restart(split_hub, tmp_path) -> None:
    f = Fleet(split_hub, tmp_path)
    f.profile("east")
    f.profile("west")
    f.apply(deployment("web", 9))
    f.wait_split("web", {"east": 4, "west": 5})
    f.ready_all("web")
    wait_status(f, "web", readyReplicas=9)
    rv = {c: k["metadata"]["resourceVersion"] for c, k in f.children("web").items()}
    split_hub.stop()
    split_hub.start()
    f.apply(deployment("web2", 3))
    f.wait_split("web2", {"east": 1, "west": 2})  # the splitter runs again
    assert {c: k["metadata"]["resourceVersion"] for c, k in f.children("web").items()} == rv  # nothing rewritten
    f.kubectl("scale", "deployment/web", "--replicas=10")
    f.wait_split("web", {"east": 5, "west": 5})
