"""The fleet-wide CronJob controller with real processes: a hub running the Cluster controller (its
Syncers import ``jobs.batch`` and ``cronjobs.batch``) and the CronJob controller, and two
simulated clusters. CronJobs live on the hub; each run is one Job on the hub labelled with one
cluster, which the Syncer takes down and whose status comes back up.

Firing without waiting for a schedule: a client may write a CronJob's status, and a
``lastScheduleTime`` in the past makes the controller start the most recent missed time at once,
as kube's does (no test-only clock). Only the spreading test waits for a minute boundary.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fleetplane.fleet import identities as ids

from ..fleet.conftest import PhysicalCluster
from ..harness import Hub, wait_for
from ..splitter.fixtures import Fleet

HUBPROC = Path(__file__).with_name("hubproc.py")
UNHEALTHY_GRACE = 3.0
RESOURCES = ("jobs.batch", "cronjobs.batch")


class CronHub(Hub):
    start_timeout = 30.0

    def command(self, cli: list[str]) -> list[str]:
        return [sys.executable, str(HUBPROC), "--data-dir", str(self.data_dir), "--port", str(self.port), *self.extra]


class World:
    def __init__(self, hub: CronHub, tmp: Path) -> None:
        self.hub = hub
        self.tmp = tmp
        self.fleet = Fleet(hub, tmp, crd=False)
        self.clusters: dict[str, PhysicalCluster] = {}

    def join(self, name: str) -> None:
        c = PhysicalCluster(self.tmp / name, name, nodes=1).start()
        self.clusters[name] = c
        # the batch types are beyond the Syncer's default grant: the logical cluster's administrator
        # gives it the rights for them (docs/security.md), as the roles' docstring says
        for obj in ids.syncer_role_binding(self.fleet.lc, name, resources=list(RESOURCES)):
            if obj["metadata"]["name"].endswith(":types"):
                plural = "clusterroles" if obj["kind"] == "ClusterRole" else "clusterrolebindings"
                code, body = self.api("POST", f"/apis/rbac.authorization.k8s.io/v1/{plural}", obj)
                assert code == 201, body
        self.fleet.apply({"apiVersion": "cluster.example.dev/v1alpha1", "kind": "Cluster",
                          "metadata": {"name": name, "namespace": "default"},
                          "spec": {"kubeconfig": c.kubeconfig_text(), "resources": list(RESOURCES)}})
        wait_for(lambda: name in self.healthy(), 40, interval=0.1, what=f"ClusterProfile {name} healthy")

    def healthy(self) -> set[str]:
        items = self.fleet.api("GET", "/apis/multicluster.x-k8s.io/v1alpha1/clusterprofiles")[1]["items"]
        return {p["metadata"]["name"] for p in items
                if any(c["type"] == "ControlPlaneHealthy" and c["status"] == "True"
                       for c in (p.get("status") or {}).get("conditions") or [])}

    def api(self, method: str, path: str, body: object = None) -> tuple[int, dict]:
        return self.fleet.api(method, path, body)

    def cronjob(self, name: str) -> dict:
        code, body = self.api("GET", f"/apis/batch/v1/namespaces/default/cronjobs/{name}")
        assert code == 200, body
        return body

    def jobs(self, cronjob: str) -> dict[str, dict]:
        code, body = self.api("GET", "/apis/batch/v1/namespaces/default/jobs")
        assert code == 200, body
        return {j["metadata"]["name"]: j for j in body["items"]
                if any(r.get("name") == cronjob for r in j["metadata"].get("ownerReferences") or [])}

    def decision(self, name: str) -> dict:
        raw = (self.cronjob(name)["metadata"].get("annotations") or {}).get("placement.fleetplane.io/decision")
        return json.loads(raw) if raw else {}

    def events(self, name: str) -> list[dict]:
        return self.fleet.events(name)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("cronjobs")
    hub = CronHub(tmp / "hub", extra=["--unhealthy-grace", str(UNHEALTHY_GRACE)]).start()
    w = World(hub, tmp)
    try:
        for name in ("east", "west"):
            w.join(name)
        wait_for(lambda: w.api("GET", "/apis/batch/v1/namespaces/default/cronjobs")[0] == 200, 30, interval=0.2,
                 what="cronjobs.batch imported")
        yield w
    finally:
        for c in w.clusters.values():
            if c.proc is not None and c.proc.poll() is None:
                c.proc.send_signal(signal.SIGCONT)
                c.stop(signal.SIGTERM)
        hub.stop()


def cronjob(name: str, policy: str, command: str, schedule: str = "* * * * *", history: int = 3) -> str:
    return textwrap.dedent(f"""\
        apiVersion: batch/v1
        kind: CronJob
        metadata: {{name: {name}, namespace: default}}
        spec:
          schedule: "{schedule}"
          concurrencyPolicy: {policy}
          successfulJobsHistoryLimit: {history}
          jobTemplate:
            metadata: {{labels: {{app: {name}}}}}
            spec:
              template:
                spec:
                  restartPolicy: Never
                  containers: [{{name: main, image: busybox, command: {command}}}]
        """)


def backdate(w: World, name: str, stamp: str) -> None:
    """Say the CronJob last ran at ``stamp`` (its status, as any client may write it)."""
    code, body = w.fleet.api("PATCH", f"/apis/batch/v1/namespaces/default/cronjobs/{name}/status",
                             {"status": {"lastScheduleTime": stamp}}, "application/merge-patch+json")
    assert code == 200, body


def cluster_of(job: dict) -> str:
    return job["metadata"]["labels"]["kcp.dev/cluster"]


def test_a_lost_cluster_reruns_allow_elsewhere_and_forbid_only_once_the_job_is_gone(world: World) -> None:
    w = world
    yearly = "0 0 1 1 *"  # backdated to last year: the run due is this 1 January, started at once
    w.fleet.kubectl("apply", "-f", "-", stdin=cronjob("long", "Allow", '["sleep", "600"]', yearly))
    w.fleet.kubectl("apply", "-f", "-", stdin=cronjob("solo", "Forbid", '["sleep", "600"]', yearly))
    last_year = time.strftime("%Y-06-01T00:00:00Z", time.gmtime(time.time() - 366 * 86400))
    for name in ("long", "solo"):
        backdate(w, name, last_year)
    long_job = wait_for(lambda: list(w.jobs("long").values()), 30, what="long's first Job")[0]
    solo_job = wait_for(lambda: list(w.jobs("solo").values()), 30, what="solo's first Job")[0]
    assert cluster_of(long_job) == cluster_of(solo_job) == "east"  # least recently used, ties by name
    assert long_job["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    # the Syncer takes it down; its status comes back up
    east = w.clusters["east"].kubectl()
    wait_for(lambda: east("get", "jobs", "-n", "default", "-o", "json").json()["items"], 30, what="the Job on east")
    wait_for(lambda: (w.jobs("long")[long_job["metadata"]["name"]].get("status") or {}).get("active") == 1, 30,
             interval=0.2, what="the Job's status from east")
    wait_for(lambda: [r["name"] for r in w.cronjob("long").get("status", {}).get("active") or []]
             == [long_job["metadata"]["name"]], 20, what="long's active list")

    proc = w.clusters["east"].proc
    assert proc is not None
    proc.send_signal(signal.SIGSTOP)  # partitioned: accepts connections, answers nothing
    try:
        rerun_name = long_job["metadata"]["name"] + "-r1"
        rerun = wait_for(lambda: w.jobs("long").get(rerun_name), 60, interval=0.2, what="long's rerun")
        assert cluster_of(rerun) == "west"
        assert rerun["metadata"]["annotations"]["placement.fleetplane.io/retry-of"] == long_job["metadata"]["name"]
        assert any(e["reason"] == "JobLost" for e in w.events("long"))
        # Forbid: lost, but never two at once; the decision that records it is written in the same pass
        wait_for(lambda: solo_job["metadata"]["name"] in w.decision("solo").get("lost", {}), 30, interval=0.2,
                 what="solo's Job lost")
        assert list(w.jobs("solo")) == [solo_job["metadata"]["name"]]
        # known gone (deleted by its owner on the hub): now it runs again, elsewhere
        code, body = w.api("DELETE", f"/apis/batch/v1/namespaces/default/jobs/{solo_job['metadata']['name']}")
        assert code in (200, 202), body
        solo_rerun = wait_for(lambda: w.jobs("solo").get(solo_job["metadata"]["name"] + "-r1"), 30, interval=0.2,
                              what="solo's rerun")
        assert cluster_of(solo_rerun) == "west"
    finally:
        proc.send_signal(signal.SIGCONT)
    wait_for(lambda: "east" in w.healthy(), 40, interval=0.2, what="east healthy again")


def test_runs_spread_over_time_with_history_limits(world: World) -> None:
    w = world
    w.fleet.kubectl("apply", "-f", "-", stdin=cronjob("tick", "Allow", '["sleep", "1"]', history=1))
    backdate(w, "tick", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 180)))
    first = wait_for(lambda: list(w.jobs("tick").values()), 30, what="tick's first Job")[0]
    minute = int(first["metadata"]["name"].rsplit("-", 1)[1])
    assert first["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"].endswith("Z")
    wait_for(lambda: w.cronjob("tick").get("status", {}).get("lastSuccessfulTime"), 40, interval=0.2,
             what="tick's first run Complete (status from its cluster)")
    # the next minute's run goes to the other cluster; once it completes, only it is kept
    nxt = f"tick-{minute + 1}"
    second = wait_for(lambda: w.jobs("tick").get(nxt), 90, interval=0.2, what="tick's second Job")
    assert {cluster_of(first), cluster_of(second)} == {"east", "west"}
    wait_for(lambda: list(w.jobs("tick")) == [nxt], 40, interval=0.2, what="history limited to the last Job")
    status = w.cronjob("tick")["status"]
    assert status["lastScheduleTime"] and not status.get("active")
    # what the last fire recorded (a cluster that blinked unhealthy on a loaded machine is left out then)
    assert w.decision("tick")["candidates"] and set(w.decision("tick")["candidates"]) <= {"east", "west"}
    assert w.decision("tick")["conditions"][0]["reason"] == "Placed"

    # fleetplane placement explain, computed now: the candidates, and the next run's cluster (the first
    # one's again, the least recently used) once both clusters are healthy
    def explain() -> dict | None:
        out = subprocess.run([sys.executable, "-m", "fleetplane.cli.placement", "explain", "cronjob/tick", "-n", "default",
                              "--kubeconfig", str(w.fleet.kubeconfig), "-o", "json"], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0, out.stderr
        doc = json.loads(out.stdout)
        return doc if doc["candidates"] == ["east", "west"] else None

    explained = wait_for(explain, 60, interval=1.0, what="both clusters candidates in explain")
    assert explained["next"] == cluster_of(first)
    assert explained["jobs"] == {nxt: cluster_of(second)}


def test_no_eligible_cluster_is_said_and_retried(world: World) -> None:
    w = world
    w.fleet.kubectl("apply", "-f", "-", stdin=cronjob("nowhere", "Allow", '["sleep", "1"]', "0 0 1 1 *"))
    code, body = w.fleet.api("PATCH", "/apis/batch/v1/namespaces/default/cronjobs/nowhere",
                             {"metadata": {"annotations": {"placement.fleetplane.io/policy": "required: {clusters: [mars]}"}}},
                             "application/merge-patch+json")
    assert code == 200, body
    backdate(w, "nowhere", time.strftime("%Y-06-01T00:00:00Z", time.gmtime(time.time() - 366 * 86400)))
    cond = wait_for(lambda: (w.decision("nowhere").get("conditions") or [{}])[0].get("reason") == "NoEligibleCluster"
                    and w.decision("nowhere")["conditions"][0], 30, interval=0.2, what="nowhere's Placed=False")
    assert cond["status"] == "False" and "mars" not in w.decision("nowhere")["candidates"]
    assert any(e["reason"] == "FailedPlacement" for e in w.events("nowhere"))
    assert w.jobs("nowhere") == {}
