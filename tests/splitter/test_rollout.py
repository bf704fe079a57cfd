"""Progressive rollouts across clusters (the ``rollout`` key of the placement policy).

First against a hub alone: ClusterProfiles by hand and the children's status written as their
clusters' Deployment controllers would (a child "rolls out" when the test marks it so), which
makes the stage machine's every step observable. Then end to end over five simulated clusters
(tests/splitter/test_rollout_e2e.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import yaml

from ..harness import Kubectl, wait_for
from .fixtures import Fleet, deployment

IMAGE = "/spec/template/spec/containers/0/image"


def image_of(obj: dict) -> str:
    return obj["spec"]["template"]["spec"]["containers"][0]["image"]


def images(f: Fleet, name: str) -> dict[str, str]:
    return {c: image_of(k) for c, k in f.children(name).items()}


def state(f: Fleet, name: str) -> dict:
    raw = ((f.get(name) or {}).get("metadata", {}).get("annotations") or {}).get("rollout.fleetplane.io/state")
    return json.loads(raw) if raw else {}


def set_image(f: Fleet, name: str, image: str) -> None:
    f.kubectl("patch", f"deployment/{name}", "--type=json", "-p",
              json.dumps([{"op": "replace", "path": IMAGE, "value": image}]))


def settle(f: Fleet, name: str, bad: str = "never") -> dict[str, str]:
    """Play the clusters: every child that has not observed its spec reports it rolled out (a
    child whose image is ``bad`` reports its new pods never available). Returns the images."""
    for child in f.children(name).values():
        st = child.get("status") or {}
        if st.get("observedGeneration") != child["metadata"].get("generation") or not st:
            if image_of(child) == bad:
                f.set_child_status(child, ready=0)
            else:
                f.set_child_status(child)
    return images(f, name)


def cond(f: Fleet, name: str, type_: str = "Progressing") -> dict:
    return f.conditions(name).get(type_) or {}


def reasons(f: Fleet, name: str) -> list[tuple[str, str]]:
    return [(e["reason"], e["message"]) for e in f.events(name)]


def observed(f: Fleet, name: str) -> bool:
    """Every child's status is of its current generation (the test has played every cluster)."""
    return all((k.get("status") or {}).get("observedGeneration") == k["metadata"].get("generation")
               for k in f.children(name).values())


def wait_images(f: Fleet, name: str, want: dict[str, str], bad: str = "never", timeout: float = 30) -> dict[str, str]:
    """Play the clusters until the children carry ``want`` and every one has reported its spec
    (a child the splitter updates between settle()'s read and its check must be played too, or
    the rollout waits forever for a status no cluster will write)."""
    return wait_for(lambda: settle(f, name, bad) == want and observed(f, name) and want, timeout, interval=0.2,
                    what=f"images of {name} to be {want} (now {images(f, name)}, state {state(f, name)}, "
                         f"{reasons(f, name)}, {[(k['metadata']['generation'], k.get('status')) for k in f.children(name).values()]})")


def wait_state(f: Fleet, name: str, what: str, timeout: float = 20, bad: str = "never", **want: Any) -> dict:
    """Play the clusters until the rollout state has ``want`` (e.g. phase="Complete", number=3)."""
    def check() -> dict | bool:
        settle(f, name, bad)
        s = state(f, name)
        return all(s.get(k) == v for k, v in want.items()) and s
    return wait_for(check, timeout, interval=0.2, what=f"{what} (now {state(f, name)})")


def policy(**rollout: Any) -> str:
    return yaml.safe_dump({"rollout": rollout})


def test_stage_by_stage_with_max_concurrency_and_kubectl_rollout_status(fleet: Fleet) -> None:
    f = fleet
    for c in ("a", "b", "c", "d"):
        f.profile(c)
    f.apply(deployment("web", 8, policy(stages=[{"clusters": ["a"]}, {"percent": 50, "maxConcurrency": 1}, {}],
                                        minSuccessTime="1s")))
    wait_images(f, "web", dict.fromkeys("abcd", "nginx:1.27"))
    wait_for(lambda: (s := state(f, "web")).get("phase") == "Complete" and s, 15, what="first revision complete")
    # the first revision of a new parent reaches every cluster at once; now a new template
    set_image(f, "web", "nginx:1.28")
    order: list[str] = []
    seen: set[str] = set()

    def progress() -> bool:
        for c, img in settle(f, "web").items():
            if img == "nginx:1.28" and c not in seen:
                seen.add(c)
                order.append(c)
                # while c is in flight, no other cluster of a later stage has it
                st = state(f, "web")
                assert st.get("phase") != "Failed", st
        return len(seen) == 4
    rollout_status = subprocess.Popen([Kubectl(f.kubeconfig, minor="1.28").binary, "--kubeconfig", str(f.kubeconfig), "-n", "default", "rollout",
                                       "status", "deployment/web", "--timeout=90s"], stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True)
    wait_for(progress, 60, interval=0.2, what=f"every cluster at nginx:1.28 (order so far {order})")
    # stage 1: a; stage 2: 50% of the rest (b, c), one at a time; stage 3: d
    assert order == ["a", "b", "c", "d"], order
    # still playing the clusters: the last child may have been updated after settle() read it
    st = wait_state(f, "web", "rollout complete", phase="Complete")
    assert st["stages"] == [["a"], ["b", "c"], ["d"]] and st["number"] == 2
    # each cluster was released only after the one before it was done (minSuccessTime 1 s apart)
    rel, done = st["released"], st["done"]
    assert rel["b"] >= done["a"] and rel["c"] >= done["b"] and rel["d"] >= done["c"], st
    assert all(done[c] - rel[c] >= 1.0 for c in "abcd"), st
    out, _ = rollout_status.communicate(timeout=60)
    assert rollout_status.returncode == 0, out
    assert "new replicas have been updated" in out, out  # it followed the stages
    assert 'deployment "web" successfully rolled out' in out, out
    s = f.get("web")["status"]
    assert s["updatedReplicas"] == 8 and s["observedGeneration"] == f.get("web")["metadata"]["generation"]
    msgs = [m for r, m in reasons(f, "web") if r.startswith("Rollout")]
    assert any("Rolling out revision 2 in 3 stages: 1: a; 2: b, c; 3: d" in m for m in msgs), msgs
    assert any(m.startswith("Revision 2 rolled out in 3 stages") for m in msgs), msgs


def test_a_failing_stage_stops_at_the_deadline_and_undo_rolls_back_in_reverse(fleet: Fleet) -> None:
    f = fleet
    for c in ("a", "b", "c"):
        f.profile(c)
    f.apply(deployment("api", 6, policy(stages=[{"clusters": ["a"]}, {"clusters": ["b"]}, {}],
                                        progressDeadline="4s")))
    wait_images(f, "api", dict.fromkeys("abc", "nginx:1.27"))
    wait_for(lambda: state(f, "api").get("phase") == "Complete", 15, what="first revision complete")
    set_image(f, "api", "nginx:broken")
    # a gets it, stays unavailable; past the deadline the rollout fails and b, c never get it
    wait_for(lambda: settle(f, "api", bad="nginx:broken").get("a") == "nginx:broken", 20, interval=0.2,
             what="canary a updated")
    c = wait_for(lambda: (x := cond(f, "api")).get("reason") == "ProgressDeadlineExceeded" and x, 30, interval=0.2,
                 what=f"Progressing=False ProgressDeadlineExceeded (now {cond(f, 'api')})")
    assert c["status"] == "False" and "stage 1/3 (a) not done within 4s: a:" in c["message"], (
        c, state(f, "api"), reasons(f, "api"), {k: (v["metadata"]["generation"], v["status"]) for k, v in f.children("api").items()})
    assert settle(f, "api", bad="nginx:broken") == {"a": "nginx:broken", "b": "nginx:1.27", "c": "nginx:1.27"}
    ev = [m for r, m in reasons(f, "api") if r == "RolloutFailed"]
    assert ev and "stage 1/3 (a)" in ev[0], reasons(f, "api")
    typ = next(e["type"] for e in f.events("api") if e["reason"] == "RolloutFailed")
    assert typ == "Warning"
    r = f.kubectl("rollout", "status", "deployment/api", "--timeout=20s", check=False)
    assert r.code != 0 and 'deployment "api" exceeded its progress deadline' in r.err, (r.out, r.err)
    # undo: the template goes back; the stages run in reverse (c, b: already there; then a)
    set_image(f, "api", "nginx:1.27")
    wait_images(f, "api", dict.fromkeys("abc", "nginx:1.27"), bad="nginx:broken")
    st = wait_for(lambda: (s := state(f, "api")).get("phase") == "Complete" and s, 20, interval=0.2,
                  what=f"the undo complete (now {state(f, 'api').get('message')})")
    assert st["reverse"] is True and st["stages"] == [["c"], ["b"], ["a"]] and st["number"] == 3, st
    assert wait_for(lambda: cond(f, "api").get("status") == "True", 15, what="Progressing True again")


def test_pause_resume_approval_and_abort(fleet: Fleet, tmp_path: Any) -> None:
    f = fleet
    for c in ("a", "b"):
        f.profile(c)
    f.apply(deployment("gate", 4, policy(stages=[{"clusters": ["a"], "pause": "approval"}, {}])))
    wait_images(f, "gate", dict.fromkeys("ab", "nginx:1.27"))
    wait_for(lambda: state(f, "gate").get("phase") == "Complete", 15, what="first revision complete")
    # paused before the change: nothing is released
    f.kubectl("rollout", "pause", "deployment/gate")
    set_image(f, "gate", "nginx:1.28")
    wait_for(lambda: (c := cond(f, "gate")).get("reason") == "DeploymentPaused" and c, 15, interval=0.2,
             what=f"Progressing DeploymentPaused (now {cond(f, 'gate')})")
    assert settle(f, "gate") == {"a": "nginx:1.27", "b": "nginx:1.27"}
    assert all("paused" not in k["spec"] for k in f.children("gate").values())  # the machine holds, not the children
    f.kubectl("rollout", "resume", "deployment/gate")
    wait_images(f, "gate", {"a": "nginx:1.28", "b": "nginx:1.27"})
    wait_for(lambda: state(f, "gate").get("phase") == "WaitingForApproval", 15, interval=0.2,
             what=f"waiting for approval (now {state(f, 'gate').get('message')})")
    assert "waiting for approval" in cond(f, "gate")["message"]
    cli = [sys.executable, "-m", "fleetplane.cli.main", "rollout"]
    opts = ["--kubeconfig", str(f.kubeconfig), "-n", "default"]
    out = subprocess.run([*cli, "status", "deployment/gate", *opts], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["STAGE", "CLUSTERS", "STATE"], out.stdout
    assert lines[1].split()[:3] == ["1", "a", "waiting-approval"], out.stdout
    assert lines[2].split()[:3] == ["2", "b", "waiting"], out.stdout
    out = subprocess.run([*cli, "approve", "deployment/gate", *opts], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "approved stage 1/2 of revision 2" in out.stdout, out.stdout
    wait_images(f, "gate", {"a": "nginx:1.28", "b": "nginx:1.28"})
    wait_for(lambda: state(f, "gate").get("phase") == "Complete", 15, what="complete after approval")
    # a third revision, aborted while waiting for approval: a goes back at once
    set_image(f, "gate", "nginx:1.29")
    wait_images(f, "gate", {"a": "nginx:1.29", "b": "nginx:1.28"})
    out = subprocess.run([*cli, "abort", "deployment/gate", *opts], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    wait_images(f, "gate", {"a": "nginx:1.28", "b": "nginx:1.28"})
    assert wait_for(lambda: (c := cond(f, "gate")).get("reason") == "RolloutAborted" and c, 15)
    assert any(r == "RolloutAborted" for r, _ in reasons(f, "gate"))


def test_invalid_rollout_policies_are_rejected_on_write_with_the_field_path(fleet: Fleet) -> None:
    f = fleet
    f.profile("a")
    obj = deployment("bad", 2, policy(stages=[{"clusters": ["a"]}, {"percent": 0}], progressDeadline="soon"))
    r = f.kubectl("apply", "-f", "-", stdin=json.dumps(obj), check=False)
    assert r.code != 0 and 'The Deployment "bad" is invalid' in r.err, (r.out, r.err)
    field = "metadata.annotations[placement.fleetplane.io/policy].rollout"
    assert f"{field}.stages[1].percent: Invalid value: must be 1..100, not 0" in r.err, r.err
    assert f"{field}.progressDeadline: Invalid value: must be a duration" in r.err, r.err
    assert f.get("bad") is None


def test_kubectl_133_follows_the_stages_too(fleet: Fleet) -> None:
    f = fleet
    k = Kubectl(f.kubeconfig, minor="1.33", namespace="default")
    for c in ("a", "b"):
        f.profile(c)
    f.apply(deployment("k33", 2, policy(stages=[{"clusters": ["a"]}, {}])))
    wait_images(f, "k33", dict.fromkeys("ab", "nginx:1.27"))
    wait_for(lambda: state(f, "k33").get("phase") == "Complete", 15, what="first revision complete")
    k("patch", "deployment/k33", "--type=json", "-p", json.dumps([{"op": "replace", "path": IMAGE, "value": "nginx:2"}]))
    wait_images(f, "k33", {"a": "nginx:2", "b": "nginx:2"})
    r = k("rollout", "status", "deployment/k33", "--timeout=30s")
    assert 'deployment "k33" successfully rolled out' in r.out


def test_kubectl_rollout_history_and_undo_on_a_deployment(fleet: Fleet) -> None:
    f = fleet
    k = Kubectl(f.kubeconfig, minor="1.28", namespace="default")
    for c in ("a", "b"):
        f.profile(c)
    f.apply(deployment("hist", 4, policy(stages=[{"clusters": ["a"]}, {}])))
    wait_images(f, "hist", dict.fromkeys("ab", "nginx:1.27"))
    set_image(f, "hist", "nginx:1.28")
    wait_images(f, "hist", dict.fromkeys("ab", "nginx:1.28"))
    wait_state(f, "hist", "revision 2 complete", number=2, phase="Complete")
    rows = wait_for(lambda: (r := [ln.split()[0] for ln in k("rollout", "history", "deployment/hist").out.splitlines()[2:]
                                   if ln.strip()]) == ["1", "2"] and r, 15, interval=0.2, what="kubectl rollout history")
    assert rows == ["1", "2"]
    assert (f.get("hist")["metadata"]["annotations"] or {})["deployment.kubernetes.io/revision"] == "2"
    out = k("rollout", "history", "deployment/hist", "--revision=1").out
    assert "nginx:1.27" in out, out
    # the history objects stay on the hub: no child is a ReplicaSet, and none has replicas
    code, rs = f.api("GET", "/apis/apps/v1/namespaces/default/replicasets")
    assert code == 200 and {o["spec"]["replicas"] for o in rs["items"]} == {0}
    assert all(o["metadata"]["ownerReferences"][0]["name"] == "hist" for o in rs["items"])
    r = k("rollout", "undo", "deployment/hist")
    assert "rolled back" in r.out, r.out
    wait_images(f, "hist", dict.fromkeys("ab", "nginx:1.27"))
    st = wait_state(f, "hist", "the undo rolled out", number=3, phase="Complete")
    assert st["reverse"] is True and st["stages"] == [["b"], ["a"]]
    rows = wait_for(lambda: (r := [ln.split()[0] for ln in k("rollout", "history", "deployment/hist").out.splitlines()[2:]
                                   if ln.strip()]) == ["2", "3"] and r, 15, interval=0.2,
                    what=f"renumbered history (now {k('rollout', 'history', 'deployment/hist').out!r}, "
                         f"{[(o['metadata']['name'], o['metadata']['annotations']) for o in f.api('GET', '/apis/apps/v1/namespaces/default/replicasets')[1]['items']]})")
    assert rows == ["2", "3"]  # revision 1 became 3, as kube renumbers it


def test_a_daemonset_rollout_stage_by_stage_and_kubectl_undo(fleet: Fleet) -> None:
    from .fixtures import DAEMONSET_CRD
    from .test_daemonsets import daemonset, ds_status

    f = fleet
    f.serve(DAEMONSET_CRD)
    k = Kubectl(f.kubeconfig, minor="1.33", namespace="default")
    for c in ("a", "b"):
        f.profile(c)
    ds = daemonset("agent", {"rollout": {"stages": [{"clusters": ["a"]}, {}], "minSuccessTime": "1s"}})
    f.apply(ds)

    def run_ds() -> dict[str, str]:
        kids = f.kids("daemonsets", "agent")
        for child in kids.values():
            st = child.get("status") or {}
            if st.get("observedGeneration") != child["metadata"].get("generation"):
                f.put_status("daemonsets", child, ds_status(child, 2))
        return {c: image_of(o) for c, o in kids.items()}

    wait_for(lambda: run_ds() == dict.fromkeys("ab", "nginx:1.27"), 20, interval=0.2, what="agent children")
    wait_for(lambda: (st := (f.obj("daemonsets", "agent") or {}).get("metadata", {}).get("annotations", {})
                      .get("rollout.fleetplane.io/state")) and json.loads(st)["phase"] == "Complete", 15)
    k("patch", "daemonset/agent", "--type=json", "-p", json.dumps([{"op": "replace", "path": IMAGE, "value": "nginx:2"}]))
    seen: list[tuple[str, str]] = []

    def progress() -> bool:
        imgs = run_ds()
        for c, img in sorted(imgs.items()):
            if img == "nginx:2" and (c, img) not in seen:
                seen.append((c, img))
        return set(imgs.values()) == {"nginx:2"}
    wait_for(progress, 30, interval=0.2, what=f"agent at nginx:2 (seen {seen})")
    assert [c for c, _ in seen] == ["a", "b"], seen
    r = k("rollout", "status", "daemonset/agent", "--timeout=30s")
    assert 'daemon set "agent" successfully rolled out' in r.out, r.out
    hist = k("rollout", "history", "daemonset/agent").out
    assert [ln.split()[0] for ln in hist.splitlines()[2:] if ln.strip()] == ["1", "2"], hist
    r = k("rollout", "undo", "daemonset/agent")
    assert "rolled back" in r.out, r.out
    wait_for(lambda: run_ds() == dict.fromkeys("ab", "nginx:1.27"), 30, interval=0.2, what="agent back at nginx:1.27")
    st = json.loads(f.obj("daemonsets", "agent")["metadata"]["annotations"]["rollout.fleetplane.io/state"])
    assert st["reverse"] is True and st["number"] == 3, st


def test_a_cluster_daemonset_rolls_out_stage_by_stage(fleet: Fleet) -> None:
    """A ClusterDaemonSet takes the same ``rollout`` key in ``spec.placement``. (No revision
    history: kubectl has no rollout verbs for it; ``fleetplane rollout`` covers it.)"""
    f = fleet
    for c in ("a", "b"):
        f.profile(c)
    cds = {"apiVersion": "fleet.fleetplane.io/v1alpha1", "kind": "ClusterDaemonSet",
           "metadata": {"name": "node-agent", "namespace": "default"},
           "spec": {"replicasPerCluster": 1, "selector": {"matchLabels": {"app": "node-agent"}},
                    "template": {"metadata": {"labels": {"app": "node-agent"}},
                                 "spec": {"containers": [{"name": "agent", "image": "busybox:1"}]}},
                    "placement": {"rollout": {"stages": [{"clusters": ["a"]}, {}], "minSuccessTime": "1s"}}}}
    f.apply(cds)

    def play() -> dict[str, str]:
        kids = f.kids("deployments", "node-agent")
        for child in kids.values():
            st = child.get("status") or {}
            if st.get("observedGeneration") != child["metadata"].get("generation"):
                f.set_child_status(child)
        return {c: image_of(o) for c, o in kids.items()}

    def cds_state() -> dict:
        code, body = f.api("GET", "/apis/fleet.fleetplane.io/v1alpha1/namespaces/default/clusterdaemonsets/node-agent")
        raw = (body.get("metadata", {}).get("annotations") or {}).get("rollout.fleetplane.io/state") if code == 200 else None
        return json.loads(raw) if raw else {}

    wait_for(lambda: play() == dict.fromkeys("ab", "busybox:1") and cds_state().get("phase") == "Complete", 30,
             interval=0.2, what=f"node-agent's first revision everywhere (state {cds_state()})")
    f.kubectl("patch", "clusterdaemonset/node-agent", "--type=merge", "-p", json.dumps(
        {"spec": {"template": {"spec": {"containers": [{"name": "agent", "image": "busybox:2"}]}}}}))
    first: dict[str, int] = {}  # cluster -> the poll in which its child first carried busybox:2
    polls = iter(range(10**6))

    def progress() -> bool:
        imgs, n = play(), next(polls)
        for c, img in imgs.items():
            if img == "busybox:2":
                first.setdefault(c, n)
        return set(imgs.values()) == {"busybox:2"} and cds_state().get("phase") == "Complete"
    wait_for(progress, 40, interval=0.2, what=f"node-agent at busybox:2 (first {first}, state {cds_state()})")
    assert first["a"] < first["b"], first  # b released only after a was done (1 s Available)
