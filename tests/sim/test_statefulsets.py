"""StatefulSets on a simulated cluster, driven with kubectl: ordered pods ``<name>-<ordinal>`` with
their claims, scale down from the highest ordinal (claims kept), rolling updates from the highest
ordinal, ``spec.ordinals.start``, Parallel, ``kubectl scale`` and ``kubectl rollout status``."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from datetime import datetime

from ..harness import Kubectl, wait_for
from .conftest import Sim


def _statefulset(name: str, image: str = "nginx:1.25", *, replicas: int = 3, extra: str = "") -> str:
    return textwrap.dedent(f"""\
        apiVersion: apps/v1
        kind: StatefulSet
        metadata: {{name: {name}}}
        spec:
          serviceName: {name}-svc
          replicas: {replicas}
          selector: {{matchLabels: {{app: {name}}}}}
          template:
            metadata: {{labels: {{app: {name}}}}}
            spec:
              containers:
              - name: db
                image: "{image}"
                volumeMounts: [{{name: data, mountPath: /data}}]
          volumeClaimTemplates:
          - metadata: {{name: data}}
            spec:
              accessModes: [ReadWriteOnce]
              resources: {{requests: {{storage: 1Gi}}}}
        """) + extra


def _pods(k: Kubectl, app: str) -> dict[str, dict]:
    return {p["metadata"]["name"]: p for p in k.get_json("pods", "-l", f"app={app}")["items"]
            if not p["metadata"].get("deletionTimestamp")}


def _rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.strip().splitlines()]


def _events(k: Kubectl, name: str, verb: str) -> list[str]:
    """The pods named in the StatefulSet's "<verb> Pod ..." events, oldest first (events are stored in order)."""
    items = k.get_json("events", "--field-selector", f"involvedObject.name={name},involvedObject.kind=StatefulSet")["items"]
    items.sort(key=lambda e: int(e["metadata"]["resourceVersion"]))
    return [e["message"].split()[2] for e in items if e["message"].startswith(f"{verb} Pod ")]


def _track(sim: Sim, ns: str, app: str, done: Callable[[dict], bool], count: int) -> list[str]:
    """Watch (by polling the API quickly) the order in which the pods become ``done``."""
    order: list[str] = []

    def step() -> bool:
        code, body = sim.json("GET", f"/api/v1/namespaces/{ns}/pods?labelSelector=app%3D{app}")
        assert code == 200, body
        for p in body["items"]:
            if done(p) and p["metadata"]["name"] not in order:
                order.append(p["metadata"]["name"])
        return len(order) == count

    wait_for(step, 120, interval=0.02, what=f"{count} pods of {app}")
    return order


def _stamp(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def _ready_since(pod: dict) -> str:
    return next(c["lastTransitionTime"] for c in pod["status"]["conditions"] if c["type"] == "Ready")


def test_ordered_pods_claims_scale_and_rolling_update(sim: Sim, ns: str, kubectl: Kubectl):
    kubectl("apply", "-f", "-", stdin=_statefulset("web", extra="  minReadySeconds: 1\n"))
    out = kubectl("rollout", "status", "statefulset/web", "--timeout=90s").out
    assert "partitioned roll out complete: 3 new pods have been updated..." in out
    rows = _rows(kubectl("get", "statefulsets").out)
    assert rows[0] == ["NAME", "READY", "AGE"] and rows[1][:2] == ["web", "3/3"]
    wide = _rows(kubectl("get", "sts", "web", "-o", "wide").out)
    assert wide[0] == ["NAME", "READY", "AGE", "CONTAINERS", "IMAGES"] and wide[1][-2:] == ["db", "nginx:1.25"]

    pods = _pods(kubectl, "web")
    assert sorted(pods) == ["web-0", "web-1", "web-2"]
    sts = kubectl.get_json("sts", "web")
    for i in range(3):
        p = pods[f"web-{i}"]
        labels = p["metadata"]["labels"]
        assert labels["statefulset.kubernetes.io/pod-name"] == f"web-{i}" and labels["apps.kubernetes.io/pod-index"] == str(i)
        assert labels["controller-revision-hash"] == sts["status"]["updateRevision"]
        assert p["spec"]["hostname"] == f"web-{i}" and p["spec"]["subdomain"] == "web-svc"
        assert {"name": "data", "persistentVolumeClaim": {"claimName": f"data-web-{i}"}} in p["spec"]["volumes"]
    # OrderedReady: each pod was created once the one before it was available (Ready for minReadySeconds)
    assert _events(kubectl, "web", "create") == ["web-0", "web-1", "web-2"]
    for i in (1, 2):
        assert _stamp(_ready_since(pods[f"web-{i - 1}"])) + 1 <= _stamp(pods[f"web-{i}"]["metadata"]["creationTimestamp"])
    assert sts["spec"]["podManagementPolicy"] == "OrderedReady"
    assert sts["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert sts["spec"]["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    assert sts["spec"]["revisionHistoryLimit"] == 10
    assert sts["spec"]["volumeClaimTemplates"][0]["spec"]["volumeMode"] == "Filesystem"
    # rollout status waits for Ready pods; availableReplicas follows minReadySeconds later
    st = wait_for(lambda: (s := kubectl.get_json("sts", "web")["status"]) and s["availableReplicas"] == 3 and s, 30,
                  what="3 available replicas")
    assert (st["replicas"], st["readyReplicas"], st["currentReplicas"], st["updatedReplicas"], st["availableReplicas"],
            st["observedGeneration"]) == (3, 3, 3, 3, 3, 1)
    assert st["currentRevision"] == st["updateRevision"] and st["updateRevision"].startswith("web-")

    claims = wait_for(lambda: (cs := kubectl.get_json("pvc")["items"]) and all(c["status"]["phase"] == "Bound" for c in cs)
                      and len(cs) == 3 and cs, 30, what="3 bound claims")
    uids = {c["metadata"]["name"]: c["metadata"]["uid"] for c in claims}
    assert sorted(uids) == ["data-web-0", "data-web-1", "data-web-2"]
    assert all(c["metadata"]["labels"] == {"app": "web"} for c in claims)

    # scale down: the highest ordinal first, one at a time; the claims stay (whenScaled: Retain)
    assert "statefulset.apps/web scaled" in kubectl("scale", "statefulset", "web", "--replicas=1").out
    wait_for(lambda: sorted(_pods(kubectl, "web")) == ["web-0"] and not kubectl.get_json("pods", "-l", "app=web")["items"][1:],
             60, what="web-1 and web-2 gone")
    assert _events(kubectl, "web", "delete") == ["web-2", "web-1"]
    kubectl("rollout", "status", "statefulset/web", "--timeout=30s")
    assert {c["metadata"]["name"]: c["metadata"]["uid"] for c in kubectl.get_json("pvc")["items"]} == uids
    kubectl("scale", "statefulset", "web", "--replicas=3")
    kubectl("rollout", "status", "statefulset/web", "--timeout=90s")
    assert sorted(_pods(kubectl, "web")) == ["web-0", "web-1", "web-2"]
    assert {c["metadata"]["name"]: c["metadata"]["uid"] for c in kubectl.get_json("pvc")["items"]} == uids

    # rolling update: from the highest ordinal down
    before = kubectl.get_json("sts", "web")["status"]["updateRevision"]
    kubectl("set", "image", "statefulset/web", "db=nginx:1.26")
    order = _track(sim, ns, "web", lambda p: bool(p["metadata"].get("deletionTimestamp"))
                   and p["spec"]["containers"][0]["image"] == "nginx:1.25", 3)
    assert order == ["web-2", "web-1", "web-0"]
    out = kubectl("rollout", "status", "statefulset/web", "--timeout=120s").out
    assert "partitioned roll out complete: 3 new pods have been updated..." in out
    pods = wait_for(lambda: (ps := _pods(kubectl, "web")) and len(ps) == 3 and all(
        p["spec"]["containers"][0]["image"] == "nginx:1.26" for p in ps.values()) and ps, 30, what="updated pods")
    st = wait_for(lambda: (s := kubectl.get_json("sts", "web")["status"]) and s["currentRevision"] == s["updateRevision"] and s,
                  30, what="currentRevision to catch up")
    assert st["updateRevision"] != before and st["observedGeneration"] == 4  # two scales and the image and st["updatedReplicas"] == 3
    assert {p["metadata"]["labels"]["controller-revision-hash"] for p in pods.values()} == {st["updateRevision"]}


def test_ordinals_start_parallel_and_claims_deleted_on_scale_down(kubectl: Kubectl):
    extra = ("  ordinals: {start: 5}\n  podManagementPolicy: Parallel\n"
             "  persistentVolumeClaimRetentionPolicy: {whenScaled: Delete}\n")
    kubectl("apply", "-f", "-", stdin=_statefulset("db", replicas=2, extra=extra))
    kubectl("rollout", "status", "statefulset/db", "--timeout=60s")
    pods = _pods(kubectl, "db")
    assert sorted(pods) == ["db-5", "db-6"] and pods["db-6"]["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == "6"
    assert kubectl.get_json("sts", "db")["spec"]["persistentVolumeClaimRetentionPolicy"] == {"whenScaled": "Delete", "whenDeleted": "Retain"}
    wait_for(lambda: sorted(c["metadata"]["name"] for c in kubectl.get_json("pvc")["items"]) == ["data-db-5", "data-db-6"],
             30, what="the claims")
    kubectl("scale", "sts", "db", "--replicas=1")
    wait_for(lambda: [c["metadata"]["name"] for c in kubectl.get_json("pvc")["items"]] == ["data-db-5"], 60,
             what="the scaled-down pod's claim to be deleted with it")
    assert sorted(_pods(kubectl, "db")) == ["db-5"]


def test_validation(kubectl: Kubectl):
    err = kubectl.fail("apply", "-f", "-", stdin=_statefulset("bad", extra="  ordinals: {start: -1}\n")).err
    assert "spec.ordinals.start: Invalid value: -1: must be greater than or equal to 0" in err
    # as kube, a bad claim template is accepted and reported when the controller creates the claim
    kubectl("apply", "-f", "-", stdin=_statefulset("nomodes", replicas=1).replace("      accessModes: [ReadWriteOnce]\n", ""))
    events = wait_for(lambda: [e for e in kubectl.get_json("events", "--field-selector", "involvedObject.name=nomodes")["items"]
                               if e["reason"] == "FailedCreate"], 30, what="a FailedCreate event")
    assert events[0]["type"] == "Warning" and events[0]["message"] == (
        'create Claim data-nomodes-0 for Pod nomodes-0 in StatefulSet nomodes failed error: PersistentVolumeClaim '
        '"data-nomodes-0" is invalid: spec.accessModes: Required value: at least 1 access mode is required')
    assert kubectl.get_json("pods", "-l", "app=nomodes")["items"] == []  # no pod without its claims
    kubectl("apply", "-f", "-", stdin=_statefulset("fixed", replicas=0))
    err = kubectl.fail("patch", "sts", "fixed", "--type=merge", "-p", '{"spec":{"serviceName":"other"}}').err
    assert ("spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
            "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden") in err
