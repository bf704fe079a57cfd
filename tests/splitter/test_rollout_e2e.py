"""Progressive rollouts end to end: five simulated clusters (one ``fleetplane cluster simulate
--count 5`` process) joined to a hub running the Cluster controller and the splitter. Nothing
plays the clusters: the children's status comes from the simulated clusters' own Deployment,
StatefulSet and ReplicaSet controllers and kubelets.

A template that never becomes Available uses the simulated kubelet's readiness knob (a
readinessProbe's ``initialDelaySeconds`` delays Ready that long: docs/sim.md)."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from ..harness import Kubectl, SimulatedCluster, wait_for
from .conftest import SplitHub
from .fixtures import deployment
from .test_statefulsets import statefulset
from .world import World

CLUSTERS = [f"m{i}" for i in range(5)]
SPEC_HASH = "placement.fleetplane.io/spec-hash"
IMAGE = "/spec/template/spec/containers/0/image"
#: a readiness probe whose delay outlasts the test: the simulated kubelet never makes the pods Ready
NEVER_READY = {"initialDelaySeconds": 3600, "httpGet": {"path": "/", "port": 80}}
POLICY = {"rollout": {"stages": [{"clusters": ["m0"]}, {"percent": 50}, {}], "minSuccessTime": "1s",
                      "progressDeadline": "15s"}}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("rollout-e2e")
    hub = SplitHub(tmp / "hub", extra=["--cluster-controller"]).start()
    sims = SimulatedCluster(tmp / "sims", "m{i}", nodes=1, extra=["--count", "5", "--kubelet-delay", "0.1"],
                            log_name="cluster.log")
    w = World(hub, tmp, resources=("deployments.apps", "statefulsets.apps"))
    try:
        sims.start()
        for name in CLUSTERS:
            kubeconfig = (tmp / "sims" / "clusters" / name / "admin.kubeconfig").read_text()
            w.fleet.apply({"apiVersion": "cluster.example.dev/v1alpha1", "kind": "Cluster",
                           "metadata": {"name": name, "namespace": "default"},
                           "spec": {"kubeconfig": kubeconfig, "resources": w.resources}})
        wait_for(lambda: set(CLUSTERS) <= w.healthy(), 60, interval=0.2, what="five healthy ClusterProfiles")
        for plural in ("deployments", "statefulsets"):
            wait_for(lambda p=plural: w.fleet.api("GET", f"/apis/apps/v1/namespaces/default/{p}")[0] == 200, 30,  # type: ignore[misc]
                     interval=0.2, what=f"the Syncers to import {plural}.apps")
        yield w
    finally:
        sims.stop(signal.SIGTERM)
        hub.stop()


def state(world: World, name: str, kind: str = "deployments") -> dict:
    obj = world.fleet.api("GET", f"/apis/apps/v1/namespaces/default/{kind}/{name}")[1]
    raw = ((obj.get("metadata") or {}).get("annotations") or {}).get("rollout.fleetplane.io/state")
    return json.loads(raw) if raw else {}


def kids(world: World, name: str, kind: str = "deployments") -> dict[str, dict]:
    code, body = world.fleet.api("GET", f"/apis/apps/v1/namespaces/default/{kind}?labelSelector=kcp.dev/owned-by%3D{name}")
    assert code == 200, body
    return {o["metadata"]["labels"]["kcp.dev/cluster"]: o for o in body["items"]
            if not o["metadata"].get("deletionTimestamp")}


def hashes(world: World, name: str, kind: str = "deployments") -> dict[str, str]:
    return {c: o["metadata"]["annotations"].get(SPEC_HASH, "") for c, o in kids(world, name, kind).items()}


def available(child: dict) -> bool:
    st = child.get("status") or {}
    n = child["spec"].get("replicas", 1)
    return (st.get("observedGeneration") == child["metadata"]["generation"] and st.get("updatedReplicas") == n
            and st.get("availableReplicas", st.get("readyReplicas")) == n)


def watch_order(world: World, name: str, spec_hash: str, kind: str = "deployments",
                timeout: float = 60) -> list[set[str]]:
    """The clusters whose child carries ``spec_hash``, in the order they got it (one set per poll
    that saw new ones), until every child has it and is Available."""
    seen: set[str] = set()
    order: list[set[str]] = []

    def progress() -> bool:
        children = kids(world, name, kind)
        new = {c for c, o in children.items() if o["metadata"]["annotations"].get(SPEC_HASH) == spec_hash} - seen
        if new:
            order.append(new)
            seen.update(new)
        return len(children) == len(CLUSTERS) and seen == set(children) and all(map(available, children.values()))
    wait_for(progress, timeout, interval=0.2,
             what=f"every child of {name} at {spec_hash} and Available (order {order}, state {state(world, name, kind)})")
    return order


def rollout_status(world: World, ref: str) -> subprocess.Popen:
    k = Kubectl(world.fleet.kubeconfig, minor="1.28")
    return subprocess.Popen([k.binary, "--kubeconfig", str(world.fleet.kubeconfig), "-n", "default", "rollout",
                             "status", ref, "--timeout=120s"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


def condition(world: World, name: str, type_: str) -> dict:
    return next((c for c in world.status(name).get("conditions") or [] if c["type"] == type_), {})


def complete(world: World, name: str, number: int, kind: str = "deployments") -> dict:
    return wait_for(lambda: (s := state(world, name, kind)).get("phase") == "Complete" and s.get("number") == number
                    and s, 30, interval=0.2, what=f"revision {number} of {name} complete (now {state(world, name, kind)})")


def test_three_stages_over_five_clusters_a_failing_stage_and_undo_in_reverse(world: World) -> None:
    f = world.fleet
    f.apply(deployment("web", 10, POLICY))
    world.wait_ready("web", 10, timeout=60)
    complete(world, "web", 1)
    # -- a template change rolls out stage by stage: m0, then 50 % of the rest, then the rest --
    follow = rollout_status(world, "deployment/web")
    f.kubectl("set", "image", "deployment/web", "web=nginx:1.28")
    st = wait_for(lambda: (s := state(world, "web")).get("number") == 2 and s, 20, what="revision 2 started")
    s1, s2, s3 = (set(s) for s in st["stages"])
    assert s1 == {"m0"} and len(s2) == 2 and len(s3) == 2 and s1 | s2 | s3 == set(CLUSTERS), st
    order = watch_order(world, "web", st["spec_hash"])
    firsts = [next(i for i, got in enumerate(order) if c in got) for c in CLUSTERS]
    at = dict(zip(CLUSTERS, firsts, strict=True))
    assert max(at[c] for c in s1) < min(at[c] for c in s2) and max(at[c] for c in s2) < min(at[c] for c in s3), order
    st = complete(world, "web", 2)
    rel, done = st["released"], st["done"]
    assert min(rel[c] for c in s2) >= done["m0"] and min(rel[c] for c in s3) >= max(done[c] for c in s2), st
    out, _ = follow.communicate(timeout=90)
    assert follow.returncode == 0 and 'deployment "web" successfully rolled out' in out, out
    good = st["spec_hash"]
    # -- a template that never becomes Available stops at its stage at progressDeadline --
    patch = [{"op": "replace", "path": IMAGE, "value": "nginx:1.29-broken"},
             {"op": "add", "path": "/spec/template/spec/containers/0/readinessProbe", "value": NEVER_READY}]
    f.kubectl("patch", "deployment/web", "--type=json", "-p", json.dumps(patch))
    c = wait_for(lambda: (x := condition(world, "web", "Progressing")).get("reason") == "ProgressDeadlineExceeded" and x,
                 60, interval=0.2, what=f"Progressing=False ProgressDeadlineExceeded (now {condition(world, 'web', 'Progressing')}, "
                                        f"{state(world, 'web').get('message')})")
    assert c["status"] == "False" and "stage 1/3 (m0) not done within 15s: m0:" in c["message"], c
    bad = state(world, "web")
    assert bad["phase"] == "Failed" and bad["number"] == 3, bad
    # read after the failure: only the canary ever got the new spec, the later stages were never released
    assert hashes(world, "web") == {"m0": bad["spec_hash"], **{c: good for c in CLUSTERS if c != "m0"}}
    assert set(bad["released"]) == {"m0"}, bad
    failed = [e for e in f.events("web") if e["reason"] == "RolloutFailed"]
    assert failed and failed[0]["type"] == "Warning" and "stage 1/3 (m0)" in failed[0]["message"], failed
    r = f.kubectl("rollout", "status", "deployment/web", "--timeout=20s", check=False)
    assert r.code != 0 and 'deployment "web" exceeded its progress deadline' in r.err, (r.out, r.err)
    # -- kubectl rollout undo: back to revision 2, stages in reverse (the rest, the 50 %, then m0) --
    r = f.kubectl("rollout", "undo", "deployment/web")
    assert "rolled back" in r.out, r.out
    st = wait_for(lambda: (s := state(world, "web")).get("number") == 4 and s, 20, what="the undo started")
    assert st["reverse"] is True and st["spec_hash"] == good, st
    assert [set(s) for s in st["stages"]] == [s3, s2, s1], st
    order = watch_order(world, "web", good)
    st = complete(world, "web", 4)
    rel, done = st["released"], st["done"]
    assert rel["m0"] >= max(done[c] for c in s2) and min(rel[c] for c in s2) >= max(done[c] for c in s3), st
    assert all(o["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.28" and
               "readinessProbe" not in o["spec"]["template"]["spec"]["containers"][0]
               for o in kids(world, "web").values())
    r = f.kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    assert 'deployment "web" successfully rolled out' in r.out, r.out
    assert world.wait_ready("web", 10)
    hist = [ln.split()[0] for ln in f.kubectl("rollout", "history", "deployment/web").out.splitlines()[2:] if ln.strip()]
    assert hist == ["1", "3", "4"], hist  # revision 2 became 4, as kube renumbers an undone revision


def test_a_statefulset_in_two_stages(world: World) -> None:
    f = world.fleet
    policy = {"rollout": {"stages": [{"clusters": ["m0", "m1"]}, {}], "minSuccessTime": "1s",
                          "progressDeadline": "30s"}}
    f.apply(statefulset("db", 5, yaml.safe_dump(policy)))
    wait_for(lambda: (s := (f.api("GET", "/apis/apps/v1/namespaces/default/statefulsets/db")[1].get("status") or {}))
             .get("readyReplicas") == 5 and s, 90, interval=0.3, what="db 5/5 ready")
    complete(world, "db", 1, "statefulsets")
    follow = rollout_status(world, "statefulset/db")
    f.kubectl("patch", "statefulset/db", "--type=json", "-p",
              json.dumps([{"op": "replace", "path": IMAGE, "value": "nginx:1.28"}]))
    st = wait_for(lambda: (s := state(world, "db", "statefulsets")).get("number") == 2 and s, 20, what="db revision 2")
    first, rest = (set(s) for s in st["stages"])
    assert first == {"m0", "m1"} and rest == {"m2", "m3", "m4"}, st
    order = watch_order(world, "db", st["spec_hash"], "statefulsets", timeout=90)
    at: dict[str, Any] = {c: next(i for i, got in enumerate(order) if c in got) for c in CLUSTERS}
    assert max(at[c] for c in first) < min(at[c] for c in rest), order
    st = complete(world, "db", 2, "statefulsets")
    assert min(st["released"][c] for c in rest) >= max(st["done"][c] for c in first), st
    out, _ = follow.communicate(timeout=90)
    assert follow.returncode == 0, out
    hist = [ln.split()[0] for ln in f.kubectl("rollout", "history", "statefulset/db").out.splitlines()[2:] if ln.strip()]
    assert hist == ["1", "2"], hist
