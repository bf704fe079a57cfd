"""The Cluster controller's sub-reconcilers one at a time, without a hub: each is given fake
functions (a hub that keeps objects in a dict, a probe, a Syncer) and a Cluster's state."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from fleetplane.fleet.cluster.connect import Connect, Health
from fleetplane.fleet.cluster.crd import ANNOTATION_REPORT, ANNOTATION_STOPPED, FINALIZER
from fleetplane.fleet.cluster.deletion import Deletion
from fleetplane.fleet.cluster.duplicates import Duplicates
from fleetplane.fleet.cluster.finalizer import EnsureFinalizer, FinalizerPatcher
from fleetplane.fleet.cluster.inventory import Inventory
from fleetplane.fleet.cluster.options import ClusterControllerOptions
from fleetplane.fleet.cluster.paths import cluster_path, core_path, lease_name, lease_path, profile_path
from fleetplane.fleet.cluster.probe import ClusterReport
from fleetplane.fleet.cluster.state import ClusterState, Next, Observed, Pass
from fleetplane.fleet.cluster.status import Status
from fleetplane.fleet.cluster.syncer import SyncerStep
from fleetplane.inventory.status import StatusWriter
from fleetplane.kube.client import ApiError
from fleetplane.kube.kubeconfig import ApiTarget

KEY = ("team-a", "default", "east")
OPTS = ClusterControllerOptions(failure_threshold=5.0)
ENDPOINT = ApiTarget(server="https://east.example:6443", token="secret-token")


class FakeHub:
    """Objects by path; every call recorded as (verb, path)."""

    def __init__(self, objects: dict[str, dict] | None = None, fail: dict[tuple[str, str], ApiError] | None = None):
        self.objects = dict(objects or {})
        self.fail = fail or {}
        self.calls: list[tuple[str, str]] = []

    def _call(self, verb: str, path: str) -> None:
        self.calls.append((verb, path))
        if (verb, path) in self.fail:
            raise self.fail[(verb, path)]

    async def get(self, path: str, query: Any = None) -> dict | None:
        self._call("get", path)
        return self.objects.get(path)

    async def create(self, path: str, obj: dict, manager: str | None = None) -> dict:
        self._call("create", path)
        created = {**obj, "metadata": {**obj["metadata"], "resourceVersion": "1"}}
        self.objects[f"{path}/{obj['metadata']['name']}"] = created
        return created

    async def patch(self, path: str, patch: Any, content_type: str = "", manager: str | None = None) -> dict:
        self._call("patch", path)
        obj = self.objects.setdefault(path, {"metadata": {}})
        for k, v in patch.items():
            obj[k] = {**obj.get(k, {}), **v} if isinstance(v, dict) else v
        obj["metadata"]["resourceVersion"] = str(int(obj["metadata"].get("resourceVersion") or 0) + 1)
        return obj

    async def delete(self, path: str, **kw: Any) -> bool:
        self._call("delete", path)
        return self.objects.pop(path, None) is not None


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    async def __call__(self, state: ClusterState, type_: str, reason: str, message: str) -> None:
        self.seen.append((type_, reason))

    @property
    def reasons(self) -> list[str]:
        return [r for _, r in self.seen]


def cluster(**spec: Any) -> dict:
    return {"metadata": {"name": "east", "namespace": "default", "uid": "u1", "resourceVersion": "5", "generation": 1,
                         "finalizers": [FINALIZER], "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"kubeconfig": json.dumps(ENDPOINT.to_kubeconfig()), **spec}}


def state_of(obj: dict, key: tuple[str, str, str] = KEY) -> ClusterState:
    state = ClusterState(key)
    state.set_object(obj)
    state.uid = obj["metadata"]["uid"]
    return state


# -- finalizer ------------------------------------------------------------------------------------


async def test_the_finalizer_is_added_first_and_a_conflict_requeues() -> None:
    obj = cluster()
    obj["metadata"]["finalizers"] = ["other"]
    path = cluster_path(*KEY)
    hub = FakeHub({path: obj})
    state = state_of(obj)
    p = Pass(state, obj)
    assert await EnsureFinalizer(patch_finalizers=FinalizerPatcher(hub)).reconcile(p) is Next.CONTINUE
    assert hub.objects[path]["metadata"]["finalizers"] == ["other", FINALIZER]
    assert state.obj is not None and FINALIZER in state.obj["metadata"]["finalizers"]
    assert await EnsureFinalizer(patch_finalizers=FinalizerPatcher(hub)).reconcile(Pass(state, state.obj)) is Next.CONTINUE
    assert len(hub.calls) == 1  # nothing more to do

    woken: list[bool] = []
    racing = state_of({**obj, "metadata": {**obj["metadata"], "finalizers": []}})
    racing.wake = lambda: woken.append(True)
    conflict = FakeHub(fail={("patch", path): ApiError(409, "Conflict", "the object has been modified")})
    p = Pass(racing, racing.obj or {})
    assert await EnsureFinalizer(patch_finalizers=FinalizerPatcher(conflict)).reconcile(p) is Next.REQUEUE
    assert woken == [True]  # looked at again at once, with the newer object


# -- duplicates -----------------------------------------------------------------------------------


async def test_the_younger_of_two_namesakes_is_refused() -> None:
    older = state_of(cluster(), ("team-a", "aaa", "east"))
    younger_obj = cluster()
    younger_obj["metadata"]["creationTimestamp"] = "2024-06-01T00:00:00Z"
    younger = state_of(younger_obj)
    stopped: list[str] = []
    written: list[Observed] = []

    async def stop(state: ClusterState, reason: str) -> None:
        stopped.append(reason)

    async def write(state: ClusterState, obj: dict, observed: Observed, published: Any) -> None:
        written.append(observed)

    step = Duplicates(clusters=lambda: [older, younger], stop_syncer=stop, write_status=write)
    assert await step.reconcile(Pass(older, older.obj or {})) is Next.CONTINUE
    assert await step.reconcile(Pass(younger, younger_obj)) is Next.REQUEUE
    assert stopped == ["DuplicateName"] and written[0].connected[:2] == (False, "DuplicateName")
    assert "aaa/east" in written[0].connected[2]


# -- connect and health ---------------------------------------------------------------------------


async def _no_lease(state: ClusterState) -> None:
    return None


async def _no_stop(state: ClusterState, reason: str, message: str = "") -> None:
    return None


def connected_report(**kw: Any) -> ClusterReport:
    return ClusterReport(connected=True, reason="Connected", message="v1.31.0", healthy=True, health_reason="Healthy",
                         health_message="livez and readyz ok", version="v1.31.0", details=True, **kw)


async def test_connect_reports_a_kubeconfig_it_cannot_use() -> None:
    obj = cluster(kubeconfig="not: [a kubeconfig")
    state = state_of(obj)
    step = Connect(OPTS, read_lease=_no_lease, stop_syncer=_no_stop)
    assert await step.reconcile(Pass(state, obj)) is Next.CONTINUE
    assert state.conn.error is not None and state.conn.error[0] == "InvalidKubeConfig"
    p = Pass(state, obj)
    await Health(OPTS, event=Events(), synced=SyncerStep.synced).reconcile(p)
    assert p.observed is not None and p.observed.connected[:2] == (False, "InvalidKubeConfig")


async def test_connect_probes_with_the_client_it_made() -> None:
    obj = cluster()
    state = state_of(obj)
    made: list[ApiTarget] = []
    probed: list[tuple[bool, bool]] = []

    def make_client(target: ApiTarget, *a: Any, **kw: Any) -> Any:
        made.append(target)
        return object()

    async def probe(client: Any, *, details: bool, previous: Any, quick: bool) -> ClusterReport:
        probed.append((details, quick))
        return connected_report()

    step = Connect(OPTS, read_lease=_no_lease, stop_syncer=_no_stop, probe=probe, make_client=make_client)
    await step.reconcile(Pass(state, obj))
    await step.reconcile(Pass(state, obj))
    assert [t.server for t in made] == [ENDPOINT.server]  # made once: the kubeconfig did not change
    # details once per details_interval; quick once a probe found the cluster connected and healthy
    assert probed == [(True, False), (False, True)]
    assert state.conn.connected_once and state.conn.known is not None and state.conn.known.version == "v1.31.0"


async def test_pull_mode_reads_the_syncers_lease() -> None:
    obj = cluster(syncerMode="Pull")
    state = state_of(obj)

    async def fresh_lease(s: ClusterState) -> dict:
        return {"metadata": {"annotations": {ANNOTATION_REPORT: json.dumps(connected_report().to_dict())}},
                "spec": {"holderIdentity": "syncer-1", "leaseDurationSeconds": 40,
                         "renewTime": time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())}}

    async def stale_lease(s: ClusterState) -> dict:
        return {"spec": {"holderIdentity": "syncer-1", "leaseDurationSeconds": 10, "renewTime": "2024-01-01T00:00:00.000000Z"}}

    stops: list[str] = []

    async def stop(s: ClusterState, reason: str, message: str = "") -> None:
        stops.append(reason)

    p = Pass(state, obj)
    await Connect(OPTS, read_lease=_no_lease, stop_syncer=stop).reconcile(p)
    assert stops == ["ModeChanged"] and p.observed is not None and p.observed.connected[1] == "WaitingForSyncer"
    p = Pass(state, obj)
    await Connect(OPTS, read_lease=fresh_lease, stop_syncer=stop).reconcile(p)
    assert p.observed is not None and p.observed.connected[0] is True and "syncer-1" in p.observed.connected[2]
    assert p.observed.synced[1] == "SyncerStarting"
    p = Pass(state, obj)
    await Connect(OPTS, read_lease=stale_lease, stop_syncer=stop).reconcile(p)
    assert p.observed is not None and p.observed.connected[:2] == (False, "SyncerHeartbeatLost")


async def test_a_healthy_cluster_keeps_its_conditions_within_the_failure_threshold() -> None:
    obj = cluster()
    state = state_of(obj)
    events = Events()
    health = Health(OPTS, event=events, synced=SyncerStep.synced)
    state.conn.report = connected_report()
    p = Pass(state, obj)
    await health.reconcile(p)
    assert p.observed is not None and p.observed.connected[0] is True
    state.conn.report = ClusterReport(connected=False, reason="Unreachable", message="connection refused")
    p = Pass(state, obj)
    await health.reconcile(p)
    assert p.observed is not None and p.observed.connected[0] is True  # still the last good state
    assert events.reasons == ["ProbeFailed"]
    assert state.conn.failing_since is not None
    state.conn.failing_since -= OPTS.failure_threshold  # the threshold has run out
    p = Pass(state, obj)
    await health.reconcile(p)
    assert p.observed is not None and p.observed.connected[:2] == (False, "Unreachable")
    assert events.reasons == ["ProbeFailed"]  # one Event for the outage


# -- syncer ---------------------------------------------------------------------------------------


class FakeSyncer:
    def __init__(self, *, cluster_name: str, hub: ApiTarget, downstream: ApiTarget, **kw: Any) -> None:
        self.hub, self.kw = hub, kw
        self.resources = kw.get("resources") or ["deployments.apps"]

    async def run(self) -> None:
        await asyncio.Event().wait()

    def health(self) -> dict:
        return {"connected": True, "types_synced": True, "types": ["deployments.v1.apps"]}


async def test_the_syncer_starts_as_its_own_identity_and_restarts_on_a_spec_change() -> None:
    obj = cluster()
    state = state_of(obj)
    state.conn.endpoint, state.conn.report = ENDPOINT, connected_report()
    events = Events()
    provisioned: list[tuple[str, str, str]] = []

    async def provision(lc: str, name: str, ns: str, types: Any) -> str:
        provisioned.append((lc, name, ns))
        return "syncer-token"

    hub_endpoint = ApiTarget(server="https://hub:6443/clusters/root", token="admin-token")
    step = SyncerStep(OPTS, hub=FakeHub(), hub_endpoint=hub_endpoint, event=events, provision=provision,
                      make_syncer=lambda: FakeSyncer)
    await step.reconcile(Pass(state, obj))
    first, first_task = state.run.syncer, state.run.task
    assert provisioned == [("team-a", "east", "default")] and state.run.running
    assert first.hub.token == "syncer-token" and first.hub.server == "https://hub:6443/clusters/team-a"
    assert step.synced(state, connected_report())[0] == (True, "Synced", "1 type in sync")
    changed = cluster(resources=["configmaps"])
    await step.reconcile(Pass(state, changed))
    assert first_task is not None and first_task.cancelled()
    assert state.run.syncer is not first and state.run.syncer.resources == ["configmaps"]
    assert events.reasons == ["SyncerStarted", "SyncerStopped", "SyncerStarted"]
    await step.stop(state, None)
    assert not state.run.running and events.reasons[-1] == "SyncerStarted"  # a quiet stop: no Event


# -- inventory ------------------------------------------------------------------------------------


def writer(lc: str, _cache: dict[str, StatusWriter] = {}) -> StatusWriter:  # noqa: B006 - one per test run
    async def write(ns: str, name: str, status: dict) -> None:
        return None

    return _cache.setdefault(lc, StatusWriter(write=write))


async def test_a_profile_managed_by_someone_else_is_left_alone() -> None:
    obj = cluster()
    state = state_of(obj)
    theirs = {"metadata": {"name": "east"}, "spec": {"clusterManager": {"name": "ocm"}}}
    hub = FakeHub({profile_path("team-a", "default", "east"): theirs})
    step = Inventory(OPTS, hub=hub, writer=writer, event=Events())
    p = Pass(state, obj, observed=Observed((True, "Connected", ""), (True, "Healthy", ""), (True, "Synced", "")))
    await step.reconcile(p)
    assert p.published is not None and p.published[:2] == (False, "ProfileConflict") and "'ocm'" in p.published[2]
    assert [v for v, _ in hub.calls] == ["get"]


async def test_the_profile_and_secret_are_created_and_published() -> None:
    obj = cluster()
    state = state_of(obj)
    state.conn.endpoint = ENDPOINT
    events = Events()
    hub = FakeHub()
    step = Inventory(OPTS, hub=hub, writer=writer, event=events)
    p = Pass(state, obj, observed=Observed((True, "Connected", ""), (True, "Healthy", ""), (True, "Synced", "")))
    await step.reconcile(p)
    assert p.published is not None and p.published[:2] == (True, "Published")
    assert profile_path("team-a", "default", "east") in hub.objects
    assert hub.objects[core_path("team-a", "default", "secrets", "east")]["data"]
    assert events.reasons == ["ClusterProfileCreated"]
    assert writer("team-a").desired("default", "east") is not None

    disabled = Inventory(ClusterControllerOptions(cluster_profiles=False), hub=FakeHub(), writer=writer, event=events)
    p = Pass(state, obj, observed=p.observed)
    await disabled.reconcile(p)
    assert p.published is not None and p.published[1] == "ClusterProfilesDisabled"


# -- status ---------------------------------------------------------------------------------------


async def test_status_is_written_when_it_changes_with_an_event_per_transition() -> None:
    obj = cluster()
    state = state_of(obj)
    patches: list[dict] = []

    async def patch_status(s: ClusterState, body: dict) -> dict:
        patches.append(body)
        return {**(s.obj or {}), "status": body["status"]}

    events = Events()
    status = Status(patch_status=patch_status, event=events)
    ok = Observed((True, "Connected", "v1.31"), (True, "Healthy", "ok"), (True, "Synced", "1 type in sync"))
    assert await status.reconcile(Pass(state, obj, observed=ok, published=(True, "Published", "p"))) is Next.REQUEUE
    conds = {c["type"]: c for c in patches[0]["status"]["conditions"]}
    assert conds["Ready"]["status"] == "True" and list(conds) == ["Connected", "Healthy", "Synced", "ProfilePublished",
                                                                   "Ready"]
    assert events.reasons == ["Connected", "Healthy", "Synced"]
    again = state.obj or {}
    await status.reconcile(Pass(state, again, observed=ok, published=(True, "Published", "p")))
    assert len(patches) == 1  # unchanged: not written again
    down = Observed((False, "Unreachable", "connection refused"), (None, "Unreachable", "x"), (True, "Synced", "1"))
    await status.reconcile(Pass(state, state.obj or {}, observed=down, published=(True, "Published", "p")))
    ready = {c["type"]: c for c in patches[-1]["status"]["conditions"]}["Ready"]
    assert (ready["status"], ready["reason"]) == ("False", "Unreachable")
    assert events.reasons[-1] == "Disconnected"


# -- deletion -------------------------------------------------------------------------------------


def deletion(hub: FakeHub, events: Events, lease: dict | None = None) -> tuple[Deletion, list[str]]:
    stops: list[str] = []

    async def stop(s: ClusterState, reason: str, message: str = "") -> None:
        stops.append(reason)

    async def load_endpoint(s: ClusterState, spec: Any, required: bool) -> None:
        s.conn.error = ("InvalidKubeConfig", "spec.kubeconfig is empty (required in Push mode)")

    async def read_lease(s: ClusterState) -> dict | None:
        return lease

    async def patch_status(s: ClusterState, body: dict) -> dict:
        return {**(s.obj or {}), **body}

    step = Deletion(OPTS, hub=hub, writer=writer, event=events, stop_syncer=stop, load_endpoint=load_endpoint,
                    read_lease=read_lease, patch_finalizers=FinalizerPatcher(hub), patch_status=patch_status)
    return step, stops


def deleting(**spec: Any) -> dict:
    obj = cluster(**spec)
    obj["metadata"]["deletionTimestamp"] = "2024-07-01T00:00:00Z"
    return obj


async def test_an_orphaning_deletion_removes_what_the_controller_kept() -> None:
    obj = deleting()
    state = state_of(obj)
    ours = {"metadata": {"name": "east", "labels": {"app.kubernetes.io/managed-by": "fleetplane-cluster-controller"}}}
    hub = FakeHub({profile_path("team-a", "default", "east"): {"spec": {"clusterManager": {"name": "fleetplane"}}},
                   core_path("team-a", "default", "secrets", "east"): ours})
    events = Events()
    step, stops = deletion(hub, events)
    assert await step.reconcile(Pass(state, obj)) is Next.DONE
    assert stops == ["ClusterDeleted"]
    deleted = {p for v, p in hub.calls if v == "delete"}
    assert {profile_path("team-a", "default", "east"), core_path("team-a", "default", "secrets", "east"),
            lease_path("team-a", "default", lease_name("east"))} <= deleted
    assert events.reasons == ["CleanupStarted", "CleanedUp"]
    assert hub.objects[cluster_path(*KEY)]["metadata"]["finalizers"] == []


async def test_a_deletion_waits_for_what_deletionPolicy_Delete_needs() -> None:
    obj = deleting(deletionPolicy="Delete")
    state = state_of(obj)
    events = Events()
    step, _ = deletion(FakeHub(), events)
    assert await step.reconcile(Pass(state, obj)) is Next.REQUEUE  # no client for the cluster: cannot delete
    assert events.reasons == ["CleanupStarted", "CleanupPending"]
    assert state.obj is not None
    ready = {c["type"]: c for c in state.obj["status"]["conditions"]}["Ready"]
    assert ready["reason"] == "CleanupPending" and "Orphan" in ready["message"]

    pulled = deleting(syncerMode="Pull")
    acked = {"metadata": {"annotations": {ANNOTATION_STOPPED: "u1"}}, "spec": {}}
    step, _ = deletion(FakeHub(), Events(), lease=acked)
    assert await step.reconcile(Pass(state_of(pulled), pulled)) is Next.DONE  # the pull-mode syncer acknowledged


@pytest.mark.parametrize("finalizers", [[], ["other"]])
async def test_a_deletion_without_our_finalizer_only_stops_the_syncer(finalizers: list[str]) -> None:
    obj = deleting()
    obj["metadata"]["finalizers"] = finalizers
    hub = FakeHub()
    step, stops = deletion(hub, Events())
    assert await step.reconcile(Pass(state_of(obj), obj)) is Next.DONE
    assert stops == ["ClusterDeleted"] and hub.calls == []
