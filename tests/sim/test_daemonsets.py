"""DaemonSets on a simulated cluster, driven with kubectl: one pod per matching node, node
selectors and taints, rolling updates within maxUnavailable, ``kubectl rollout status``."""

from __future__ import annotations

import textwrap
import uuid

from ..harness import Kubectl, wait_for
from .conftest import Sim


def _daemonset(name: str, image: str = "nginx:1.25", *, node_selector: dict | None = None, min_ready: int = 0) -> str:
    sel = "" if not node_selector else "      nodeSelector:\n" + "".join(f"        {k}: \"{v}\"\n" for k, v in node_selector.items())
    return textwrap.dedent(f"""\
        apiVersion: apps/v1
        kind: DaemonSet
        metadata: {{name: {name}}}
        spec:
          minReadySeconds: {min_ready}
          selector: {{matchLabels: {{app: {name}}}}}
          template:
            metadata: {{labels: {{app: {name}}}}}
            spec:
              containers: [{{name: agent, image: "{image}"}}]
        """) + sel


def _pods(k: Kubectl, app: str) -> list[dict]:
    return [p for p in k.get_json("pods", "-l", f"app={app}")["items"] if not p["metadata"].get("deletionTimestamp")]


def _rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.strip().splitlines()]


def test_one_pod_per_node_printer_defaults_and_rolling_update(kubectl: Kubectl):
    kubectl("apply", "-f", "-", stdin=_daemonset("agent", min_ready=1))
    out = kubectl("rollout", "status", "daemonset/agent", "--timeout=60s").out
    assert 'daemon set "agent" successfully rolled out' in out
    rows = _rows(kubectl("get", "daemonsets").out)
    assert rows[0] == ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE", "SELECTOR", "AGE"]
    assert rows[1][:7] == ["agent", "3", "3", "3", "3", "3", "<none>"]
    wide = _rows(kubectl("get", "ds", "agent", "-o", "wide").out)
    assert wide[0][-3:] == ["CONTAINERS", "IMAGES", "SELECTOR"] and wide[1][-3:] == ["agent", "nginx:1.25", "app=agent"]

    pods = _pods(kubectl, "agent")
    assert sorted(p["spec"]["nodeName"] for p in pods) == ["sim-node-0", "sim-node-1", "sim-node-2"]
    for p in pods:
        assert p["metadata"]["name"].startswith("agent-") and p["status"]["phase"] == "Running"
        assert p["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"
        assert p["metadata"]["labels"]["pod-template-generation"] == "1"
        # bound by the scheduler through a node affinity on the node's name, as kube does
        term = p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
        assert term == {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [p["spec"]["nodeName"]]}]}
        assert {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"} in p["spec"]["tolerations"]

    ds = kubectl.get_json("ds", "agent")
    assert ds["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    assert ds["spec"]["revisionHistoryLimit"] == 10
    assert ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"] == "1"
    st = ds["status"]
    assert (st["desiredNumberScheduled"], st["currentNumberScheduled"], st["numberReady"], st["updatedNumberScheduled"],
            st["numberAvailable"], st["numberMisscheduled"], st["observedGeneration"]) == (3, 3, 3, 3, 3, 0, 1)

    kubectl("set", "image", "daemonset/agent", "agent=nginx:1.26")
    out = kubectl("rollout", "status", "daemonset/agent", "--timeout=90s").out
    assert 'daemon set "agent" successfully rolled out' in out
    pods = wait_for(lambda: (ps := _pods(kubectl, "agent")) and len(ps) == 3 and ps, 30, what="3 pods")
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {"nginx:1.26"}
    assert {p["metadata"]["labels"]["pod-template-generation"] for p in pods} == {"2"}
    assert len({p["spec"]["nodeName"] for p in pods}) == 3
    # maxUnavailable 1 with minReadySeconds 1: each node's new pod waited for the previous one to be available
    created = sorted(p["metadata"]["creationTimestamp"] for p in pods)
    assert len(set(created)) == 3, created
    ds = kubectl.get_json("ds", "agent")
    assert ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"] == "2"
    assert ds["status"]["observedGeneration"] == 2 and ds["status"]["updatedNumberScheduled"] == 3
    reasons = {e["reason"] for e in kubectl.get_json("events", "--field-selector", "involvedObject.name=agent")["items"]}
    assert {"SuccessfulCreate", "SuccessfulDelete"} <= reasons

    kubectl("delete", "daemonset", "agent")
    wait_for(lambda: not _pods(kubectl, "agent"), 60, what="the daemon pods to go with their DaemonSet")


def test_node_selector_and_taints(sim: Sim, kubectl: Kubectl):
    nodes = Kubectl(sim.kubeconfig)
    key = "pick-" + uuid.uuid4().hex[:6]
    kubectl("apply", "-f", "-", stdin=_daemonset("picky", node_selector={key: "yes"}))
    wait_for(lambda: kubectl.get_json("ds", "picky")["status"].get("observedGeneration") == 1, 30, what="status observed")
    assert _rows(kubectl("get", "ds", "picky").out)[1][:7] == ["picky", "0", "0", "0", "0", "0", f"{key}=yes"]
    nodes("label", "node", "sim-node-1", f"{key}=yes")
    try:
        pods = wait_for(lambda: (ps := _pods(kubectl, "picky")) and ps, 30, what="a pod on the labelled node")
        assert [p["spec"]["nodeName"] for p in pods] == ["sim-node-1"]
        kubectl("rollout", "status", "daemonset/picky", "--timeout=30s")
    finally:
        nodes("label", "node", "sim-node-1", f"{key}-")
    wait_for(lambda: not _pods(kubectl, "picky"), 30, what="the pod of a node that no longer matches to go")
    wait_for(lambda: kubectl.get_json("ds", "picky")["status"]["desiredNumberScheduled"] == 0, 30, what="desired 0")

    taint = f"{key}=v:NoSchedule"
    nodes("taint", "node", "sim-node-2", taint)
    try:
        kubectl("apply", "-f", "-", stdin=_daemonset("tainted"))
        kubectl("rollout", "status", "daemonset/tainted", "--timeout=60s")
        assert sorted(p["spec"]["nodeName"] for p in _pods(kubectl, "tainted")) == ["sim-node-0", "sim-node-1"]
        assert kubectl.get_json("ds", "tainted")["status"]["desiredNumberScheduled"] == 2
    finally:
        nodes("taint", "node", "sim-node-2", f"{taint}-")
    wait_for(lambda: sorted(p["spec"].get("nodeName", "") for p in _pods(kubectl, "tainted")) ==
             ["sim-node-0", "sim-node-1", "sim-node-2"], 30, what="a pod on the untainted node")


def test_validation(kubectl: Kubectl):
    bad = _daemonset("bad").replace("      containers:", "      restartPolicy: Never\n      containers:")
    err = kubectl.fail("apply", "-f", "-", stdin=bad).err
    assert 'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"' in err
    bad = _daemonset("bad") + "  updateStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 0}}\n"
    err = kubectl.fail("apply", "-f", "-", stdin=bad).err
    assert "spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0" in err
    kubectl("apply", "-f", "-", stdin=_daemonset("fixed"))
    err = kubectl.fail("patch", "ds", "fixed", "--type=merge", "-p",
                       '{"spec":{"selector":{"matchLabels":{"app":"other"}},"template":{"metadata":{"labels":{"app":"other"}}}}}').err
    assert "spec.selector: Invalid value:" in err and "field is immutable" in err


def test_surge_update_starts_the_new_pod_first(kubectl: Kubectl):
    surge = "  updateStrategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}\n"
    kubectl("apply", "-f", "-", stdin=_daemonset("surge") + surge)
    kubectl("rollout", "status", "daemonset/surge", "--timeout=60s")
    old = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in _pods(kubectl, "surge")}
    kubectl("set", "image", "daemonset/surge", "agent=nginx:1.26")
    assert 'daemon set "surge" successfully rolled out' in kubectl("rollout", "status", "daemonset/surge", "--timeout=60s").out
    new = wait_for(lambda: (ps := {p["metadata"]["name"]: p["spec"]["nodeName"] for p in _pods(kubectl, "surge")})
                   and not set(ps) & set(old) and ps, 30, what="the old pods gone")
    assert sorted(new.values()) == sorted(old.values())
    events = kubectl.get_json("events", "--field-selector", "involvedObject.name=surge")["items"]
    created = {e["message"].split(": ")[1]: int(e["metadata"]["resourceVersion"]) for e in events if e["reason"] == "SuccessfulCreate"}
    deleted = {e["message"].split(": ")[1]: int(e["metadata"]["resourceVersion"]) for e in events if e["reason"] == "SuccessfulDelete"}
    for pod, node in new.items():  # on each node the new pod was created before the old one was deleted
        (was,) = [p for p, n in old.items() if n == node]
        assert created[pod] < deleted[was], (pod, was, created, deleted)
