"""The fleet-wide CronJob controller.

One :class:`CronJobController` serves every logical cluster of a hub through ``/clusters/*``:
informers on CronJobs and Jobs (``batch/v1``: the CRDs the Syncers import from the clusters),
ClusterProfiles and CRDs (to notice the batch types appear) feed one work queue of CronJobs.

A **CronJob without** ``kcp.dev/cluster`` (a parent; one with it is synced down and run by its
cluster) keeps its schedule on the hub. Each reconcile:

1. reads the CronJob's Jobs on the hub (its controller reference) and its fleet (the logical
   cluster's ClusterProfiles, :class:`~fleetplane.fleet.placement.ClusterInfo`);
2. finds **lost** Jobs: unfinished Jobs whose cluster has been unhealthy (ControlPlaneHealthy not
   True) for longer than ``unhealthy_grace``, or whose ClusterProfile is gone. Under ``Allow`` and
   ``Replace`` the run is retried at once on another cluster (a Job ``<job>-r<n>``; Replace deletes
   the lost one first, Allow leaves it, since it may still finish). Under ``Forbid`` nothing runs
   beside it: the lost Job stays active, and the rerun starts only once the lost Job is known
   gone: its ClusterProfile deleted (the controller then deletes the hub Job) or the hub Job
   deleted by someone; a cluster that comes back and finishes it needs no rerun;
3. computes ``status.active`` (unfinished Jobs), ``lastSuccessfulTime`` (Complete Jobs), deletes
   finished Jobs beyond the history limits, and decides as kube's controller does whether a run is
   due (``apimachinery/cron.due``: startingDeadlineSeconds, timeZone, suspend, concurrencyPolicy
   fleet-wide: Forbid skips while a Job runs anywhere, Replace deletes it first);
4. places a due run: the placement engine (``placement.fleetplane.io/policy``, healthy
   ClusterProfiles past ``join_grace``) gives the eligible clusters, and of those the least
   recently used by this CronJob gets it (ties by name), so runs spread over time; the Job
   (kube's name ``<cronjob>-<minutes>``, template from ``jobTemplate``, controller reference to the
   CronJob) is created on the hub labelled ``kcp.dev/cluster: <cluster>``, and the Syncer takes it
   down and its status back up;
5. writes ``status`` (``/status``) and the annotation ``placement.fleetplane.io/decision`` (JSON:
   the candidates, the last cluster of each, lost Jobs, and the ``Placed`` condition: batch/v1
   CronJobStatus has no conditions, so the condition is kept there), with Events on changes
   (``SuccessfulCreate``, ``FailedPlacement``, ``JobLost``, ``SawCompletedJob``,
   ``SuccessfulDelete``, ``JobAlreadyActive``, ``MissSchedule``).

Nothing polls: the next fire time and the grace periods are work-queue timers.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Mapping
from typing import Any

from ...apimachinery.cron import (
    due,
    history_to_delete,
    job_finished,
    job_from_template,
    job_name_for,
    job_ref,
)
from ...inventory import constants as ic
from ...kube.client import MERGE_PATCH, ApiError, Client, api_path
from ...kube.controller import run_workers, stop_tasks
from ...kube.events import EventRecorder
from ...kube.informer import ClusterKey as Key
from ...kube.informer import Informer
from ...kube.informer import cluster_key as key_of
from ...kube.objects import meta
from ...kube.workqueue import WorkQueue
from ..placement import (
    ANNOTATION_POLICY,
    DEFAULT_POLICY,
    ClusterInfo,
    Decision,
    Options,
    PolicyError,
    decide,
    parse_policy,
    requests_of,
)
from .options import CronJobOptions

__all__ = ["ANNOTATION_DECISION", "ANNOTATION_LOST", "ANNOTATION_RETRY_OF", "CronJobController", "LABEL_CLUSTER",
           "choose_cluster", "eligible_clusters"]

log = logging.getLogger("fleetplane.fleet.cronjobs")

LABEL_CLUSTER = "kcp.dev/cluster"
ANNOTATION_DECISION = "placement.fleetplane.io/decision"
#: on a hub Job: the cluster it was lost with, and since when (RFC 3339)
ANNOTATION_LOST = "placement.fleetplane.io/lost"
#: on a rerun Job: the Job it reruns
ANNOTATION_RETRY_OF = "placement.fleetplane.io/retry-of"
#: on a Forbid CronJob: a lost Job whose rerun waits until it is known gone
ANNOTATION_RERUN = "placement.fleetplane.io/rerun-after"
FIELD_MANAGER = "fleetplane-cronjob-controller"
COMPONENT = "fleetplane-cronjob-controller"
NEXT_SCHEDULE_SLACK = 0.1



def _path(lc: str, plural: str, ns: str = "", name: str = "", sub: str = "") -> str:
    return f"/clusters/{lc}" + api_path("batch/v1", plural, ns, name, sub)


def _time(value: Any) -> float | None:
    from ...apimachinery.metatime import parse_time

    return parse_time(value)


def _stamp(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def eligible_clusters(cronjob: Mapping[str, Any], fleet: list[ClusterInfo], now: float,
                      options: Options) -> tuple[list[str], Decision]:
    """The clusters a run of ``cronjob`` may go to (the placement engine's Selected clusters for
    one replica of its policy), and the engine's Decision (what ``placement explain`` shows; a
    policy that does not parse is a Decision with its ``error``)."""
    try:
        policy = parse_policy((meta(cronjob).get("annotations") or {}).get(ANNOTATION_POLICY))
    except PolicyError as err:
        return [], Decision(replicas=1, policy=DEFAULT_POLICY, error=f"invalid {ANNOTATION_POLICY}: {err}")
    template = (((cronjob.get("spec") or {}).get("jobTemplate") or {}).get("spec") or {}).get("template")
    decision = decide(1, policy, fleet, {}, requests=requests_of(template), now=now, options=options,
                      seed=f"{meta(cronjob).get('namespace')}/{meta(cronjob).get('name')}")
    return sorted(c.name for c in decision.clusters if c.status == "Selected"), decision


def choose_cluster(eligible: list[str], last_used: Mapping[str, float]) -> str | None:
    """The least recently used eligible cluster (never used first; ties by name)."""
    if not eligible:
        return None
    return min(eligible, key=lambda c: (last_used.get(c, -1.0), c))


class CronJobController:
    """Run with :meth:`run` (until cancelled). See the module docstring."""

    def __init__(self, hub: Client, options: CronJobOptions | None = None) -> None:
        self.hub = hub
        self.opts = options or CronJobOptions()
        self.queue = WorkQueue("cronjobs", jitter=True)
        self.events = EventRecorder(hub, COMPONENT, instance=COMPONENT, max_pending=5000, per_logical_cluster=True)
        self.batch_types = asyncio.Event()

        def informer(path: str, on_change: Any, name: str, wake: asyncio.Event | None = None,
                     indexers: dict | None = None) -> Informer:
            return Informer(hub, path, on_change, name=name, key=key_of, missing_ok=True, wake=wake, indexers=indexers)

        def by_owner(job: dict) -> list[str]:
            return [str(r["uid"]) for r in meta(job).get("ownerReferences") or []
                    if r.get("controller") and r.get("kind") == "CronJob" and r.get("uid")]

        self.cronjobs = informer("/clusters/*/apis/batch/v1/cronjobs", self._on_cronjob, "cronjobs", self.batch_types)
        self.jobs = informer("/clusters/*/apis/batch/v1/jobs", self._on_job, "jobs", self.batch_types,
                             {"owner": by_owner})
        self.profiles = informer(f"/clusters/*/apis/{ic.GROUP}/{ic.VERSION}/{ic.PLURAL}", self._on_profile,
                                 "clusterprofiles")
        self.crds = informer("/clusters/*/apis/apiextensions.k8s.io/v1/customresourcedefinitions", self._on_crd, "crds")
        #: (lc, ns, name) of a CronJob -> cluster -> when it last got a run (this process)
        self.last_used: dict[Key, dict[str, float]] = {}
        self.reconciles = 0
        self.ready = asyncio.Event()
        #: observed fire -> created lags (seconds), for the benchmark
        self.lags: list[float] = []

    def informers(self) -> list[Informer]:
        return [self.crds, self.profiles, self.cronjobs, self.jobs]

    async def run(self) -> None:
        tasks = [asyncio.create_task(i.run(), name=f"cronjobs-informer-{i.name}") for i in self.informers()]
        tasks.append(asyncio.create_task(self.events.run(), name="cronjobs-events"))
        try:
            await asyncio.gather(*(i.synced.wait() for i in self.informers()))
            self.ready.set()
            log.info("cronjob controller: informers synced (%d cronjobs, %d jobs, %d cluster profiles)",
                     len(self.cronjobs.cache), len(self.jobs.cache), len(self.profiles.cache))
            tasks.append(asyncio.create_task(run_workers(self.queue, self.reconcile, self.opts.workers),
                                             name="cronjobs-workers"))
            await asyncio.gather(*tasks)
        finally:
            await stop_tasks(tasks)
            self.queue.close()

    # -- events ---------------------------------------------------------------------------------

    @staticmethod
    def _is_parent(obj: Mapping[str, Any] | None) -> bool:
        return obj is not None and LABEL_CLUSTER not in (meta(obj).get("labels") or {})

    def _on_crd(self, key: Key, old: dict | None, new: dict | None) -> None:
        if meta(new or old).get("name") in ("cronjobs.batch", "jobs.batch"):
            self.batch_types.set()

    def _on_cronjob(self, key: Key, old: dict | None, new: dict | None) -> None:
        if new is None:
            self.queue.cancel_timer(key)
            self.last_used.pop(key, None)
            return
        if self._is_parent(new):
            self.queue.add(key)

    def _on_job(self, key: Key, old: dict | None, new: dict | None) -> None:
        job = new or old or {}
        for ref in meta(job).get("ownerReferences") or []:
            if ref.get("controller") and ref.get("kind") == "CronJob":
                self.queue.add((key[0], key[1], str(ref.get("name"))))

    def _on_profile(self, key: Key, old: dict | None, new: dict | None) -> None:
        if self.opts.profile_namespace and key[1] != self.opts.profile_namespace:
            return
        if old is not None and new is not None and ClusterInfo.from_profile(old).fingerprint() == \
                ClusterInfo.from_profile(new).fingerprint():
            return
        for ck in self.cronjobs.cache:
            if ck[0] == key[0]:
                self.queue.add(ck)

    def fleet(self, lc: str) -> list[ClusterInfo]:
        """The logical cluster's ClusterProfiles as placement reads them."""
        return sorted((ClusterInfo.from_profile(p) for (plc, ns, _), p in self.profiles.cache.items()
                       if plc == lc and (not self.opts.profile_namespace or ns == self.opts.profile_namespace)),
                      key=lambda c: c.name)

    # -- reconcile ------------------------------------------------------------------------------

    async def reconcile(self, key: Key) -> None:
        self.reconciles += 1
        cj = self.cronjobs.cache.get(key)
        if cj is None or not self._is_parent(cj):
            return
        lc, ns, name = key
        m, spec = meta(cj), cj.get("spec") or {}
        now = time.time()
        jobs = [j for j in self.jobs.by_index("owner", str(m.get("uid"))) if meta(j).get("namespace") == ns]
        fleet = {c.name: c for c in self.fleet(lc)}
        annotations = dict(m.get("annotations") or {})
        decision_doc: dict[str, Any] = _load(annotations.get(ANNOTATION_DECISION))
        used = {**{str(k): float(v) for k, v in (decision_doc.get("lastUsed") or {}).items()}, **self.last_used.get(key, {})}
        for j in jobs:
            c = (meta(j).get("labels") or {}).get(LABEL_CLUSTER)
            t = _time(meta(j).get("creationTimestamp"))
            if c and t is not None and t > used.get(c, -1.0):
                used[c] = t
        policy = spec.get("concurrencyPolicy") or "Allow"
        opts = Options(unhealthy_grace=self.opts.unhealthy_grace, join_grace=self.opts.join_grace)
        wake: list[float] = []

        # 2. lost Jobs
        lost: dict[str, str] = {}
        for j in jobs:
            if job_finished(j) is not None or meta(j).get("deletionTimestamp"):
                continue
            cluster = (meta(j).get("labels") or {}).get(LABEL_CLUSTER) or ""
            why, at = self._lost(fleet.get(cluster), now)
            if why is None:
                if at is not None:
                    wake.append(at)
                continue
            lost[meta(j)["name"]] = f"{cluster}: {why}"
            if ANNOTATION_LOST not in (meta(j).get("annotations") or {}):
                self.events.event(cj, "Warning", "JobLost", f"Job {meta(j)['name']} lost with cluster {cluster} ({why})")
                await self._patch_job(lc, j, {"metadata": {"annotations": {ANNOTATION_LOST: f"{cluster} {_stamp(now)}"}}})
        rerun_after = annotations.get(ANNOTATION_RERUN)
        by_name = {meta(j)["name"]: j for j in jobs}
        retries = {(meta(j).get("annotations") or {}).get(ANNOTATION_RETRY_OF) for j in jobs}
        eligible, decision = eligible_clusters(cj, list(fleet.values()), now, opts)
        if decision.recheck_at:
            wake.append(decision.recheck_at)
        placed_condition: dict[str, Any] | None = None

        async def start(job_name: str, scheduled: float, retry_of: str = "") -> bool:
            nonlocal placed_condition
            pick = choose_cluster([c for c in eligible if not (retry_of and c == _job_cluster(by_name.get(retry_of)))], used)
            if pick is None:
                msg = decision.error or ("no eligible cluster: " + (decision.message() or "no ClusterProfiles"))
                placed_condition = {"type": "Placed", "status": "False", "reason": "NoEligibleCluster", "message": msg,
                                    "lastTransitionTime": _stamp(now)}
                self.events.event(cj, "Warning", "FailedPlacement", f"Job {job_name} not started: {msg}")
                return False
            extra = {ANNOTATION_RETRY_OF: retry_of} if retry_of else {}
            body = job_from_template(cj, scheduled, name=job_name, labels={LABEL_CLUSTER: pick}, annotations=extra)
            body["metadata"]["ownerReferences"][0]["apiVersion"] = cj.get("apiVersion") or "batch/v1"
            try:
                created = await self.hub.create(_path(lc, "jobs", ns), body, manager=FIELD_MANAGER)
            except ApiError as err:
                if err.status == 409:  # made already: our cache is behind our own write
                    self.queue.add_after(key, 0.2)
                    return False
                self.events.event(cj, "Warning", "FailedCreate", f"Error creating job {job_name}: {err.message}")
                raise
            self.lags.append(time.time() - scheduled)
            used[pick] = now
            self.last_used.setdefault(key, {})[pick] = now
            by_name[job_name] = created
            jobs.append(created)
            placed_condition = {"type": "Placed", "status": "True", "reason": "Placed",
                                "message": f"Job {job_name} placed on cluster {pick}", "lastTransitionTime": _stamp(now)}
            self.events.event(cj, "Normal", "SuccessfulCreate", f"Created job {job_name} on cluster {pick}")
            return True

        for jname in lost:
            job = by_name[jname]
            scheduled = _time((meta(job).get("annotations") or {}).get("batch.kubernetes.io/cronjob-scheduled-timestamp")) or now
            if policy == "Forbid":
                if rerun_after != jname:
                    annotations[ANNOTATION_RERUN] = jname
                continue
            if jname in retries:
                continue
            if policy == "Replace":
                await self._delete_job(lc, cj, job)
            await start(_rerun_name(jname, by_name), scheduled, retry_of=jname)
        if policy == "Forbid" and rerun_after and rerun_after not in lost:
            old = by_name.get(rerun_after)
            gone = old is None or bool(meta(old).get("deletionTimestamp"))  # deleted on the hub by someone
            if old is not None and not gone:
                if job_finished(old) is not None:  # its cluster came back and finished it: nothing to rerun
                    annotations.pop(ANNOTATION_RERUN, None)
                elif _job_cluster(old) not in fleet:  # its ClusterProfile is deleted: the cluster left the fleet
                    await self._delete_job(lc, cj, old)
                    gone = True
            if gone:
                when = _time((meta(old).get("annotations") or {}).get(
                    "batch.kubernetes.io/cronjob-scheduled-timestamp")) if old is not None else None
                jobs = [j for j in jobs if meta(j)["name"] != rerun_after]
                by_name.pop(rerun_after, None)
                if rerun_after in retries or await start(_rerun_name(rerun_after, by_name), when or now,
                                                         retry_of=rerun_after):
                    annotations.pop(ANNOTATION_RERUN, None)

        # 3. status, history
        status = dict(cj.get("status") or {})
        prev_active = {r.get("name") for r in status.get("active") or []}
        active = []
        for j in jobs:
            jm = meta(j)
            if jm.get("deletionTimestamp") or jm.get("name") not in by_name:
                continue
            kind = job_finished(j)
            if kind is None:
                active.append(job_ref(j))
            elif jm["name"] in prev_active:
                self.events.event(cj, "Normal", "SawCompletedJob", f"Saw completed job: {jm['name']}, condition: {kind}")
            if kind == "Complete":
                done = (j.get("status") or {}).get("completionTime")
                if done and (not status.get("lastSuccessfulTime") or done > status["lastSuccessfulTime"]):
                    status["lastSuccessfulTime"] = done
        status["active"] = sorted(active, key=lambda r: str(r.get("name")))
        for old_job in history_to_delete(jobs, spec.get("successfulJobsHistoryLimit"), spec.get("failedJobsHistoryLimit")):
            await self._delete_job(lc, cj, old_job)

        # 4. a due run
        if not m.get("deletionTimestamp") and not spec.get("suspend"):
            created_at = _time(m.get("creationTimestamp")) or now
            d = due(spec, _time(status.get("lastScheduleTime")), created_at, now)
            if d.next is not None:
                wake.append(d.next + NEXT_SCHEDULE_SLACK)
            if d.scheduled is not None and d.missed:
                self.events.event(cj, "Warning", "MissSchedule", f"Missed scheduled time to start a job: {_stamp(d.scheduled)}")
            elif d.scheduled is not None and job_name_for(name, d.scheduled) not in by_name:
                jname = job_name_for(name, d.scheduled)
                if policy == "Forbid" and status["active"]:
                    self.events.event(cj, "Normal", "JobAlreadyActive",
                                      "Not starting job because prior execution is running and concurrency policy is Forbid")
                else:
                    if policy == "Replace":
                        for ref in list(status["active"]):
                            running = by_name.get(str(ref.get("name")))
                            if running is not None:
                                await self._delete_job(lc, cj, running)
                        status["active"] = []
                    if await start(jname, d.scheduled):
                        status["active"] = sorted(status["active"] + [job_ref(by_name[jname])],
                                                  key=lambda r: str(r.get("name")))
                        status["lastScheduleTime"] = _stamp(d.scheduled)
                    else:
                        status["lastScheduleTime"] = _stamp(d.scheduled)  # retried at the next fire, as kube skips it

        # 5. status and the decision annotation
        await self._write(lc, cj, status, annotations, {
            "candidates": eligible, "lastUsed": {c: round(t, 3) for c, t in sorted(used.items())},
            "lost": lost, "filtered": {c.name: c.reason for c in decision.clusters if c.status == "Filtered"},
            "conditions": [placed_condition or next((c for c in decision_doc.get("conditions") or []), None)
                           or {"type": "Placed", "status": "Unknown", "reason": "NotScheduledYet", "message": ""}],
        })
        if wake:
            self.queue.add_after(key, max(min(wake) - time.time(), 0.05), replace=True)

    def _lost(self, ci: ClusterInfo | None, now: float) -> tuple[str | None, float | None]:
        """Why a running Job's cluster counts as lost (None: it does not), and when to look again."""
        if ci is None:
            return "its ClusterProfile is gone", None
        if ci.healthy is True:
            return None, None
        since = ci.since or now
        if now - since >= self.opts.unhealthy_grace:
            return f"ControlPlaneHealthy {ci.health_reason or 'not True'} for {int(now - since)}s", None
        return None, since + self.opts.unhealthy_grace

    async def _patch_job(self, lc: str, job: dict, patch: dict) -> None:
        jm = meta(job)
        try:
            await self.hub.patch(_path(lc, "jobs", jm["namespace"], jm["name"]), patch, MERGE_PATCH, manager=FIELD_MANAGER)
        except ApiError as err:
            if err.status != 404:
                raise

    async def _delete_job(self, lc: str, cj: dict, job: dict) -> None:
        jm = meta(job)
        try:
            await self.hub.delete(_path(lc, "jobs", jm["namespace"], jm["name"]), uid=jm.get("uid"))
        except ApiError as err:
            if err.status not in (404, 409):
                raise
            return
        self.events.event(cj, "Normal", "SuccessfulDelete", f"Deleted job {jm['name']}")

    async def _write(self, lc: str, cj: dict, status: dict, annotations: dict, decision: dict) -> None:
        m = meta(cj)
        if not status.get("active"):
            status.pop("active", None)
        rv = m.get("resourceVersion")
        if status != (cj.get("status") or {}):
            try:  # guarded by the resourceVersion read: a reconcile from a stale cache must not win
                out = await self.hub.patch(_path(lc, "cronjobs", m["namespace"], m["name"], "status"),
                                           {"metadata": {"resourceVersion": rv},
                                            "status": {**{k: None for k in cj.get("status") or {}}, **status}},
                                           MERGE_PATCH, manager=FIELD_MANAGER)
                rv = meta(out).get("resourceVersion")
            except ApiError as err:
                if err.status == 404:
                    return
                if err.status == 409:
                    self.queue.add_after(key_of(cj), 0.05)
                    return
                raise
        old = dict(m.get("annotations") or {})
        text = json.dumps(decision, sort_keys=True, separators=(",", ":"))
        want = {**annotations, ANNOTATION_DECISION: text}
        if _load(old.get(ANNOTATION_DECISION)) == decision and {k: v for k, v in old.items() if k != ANNOTATION_DECISION} \
                == {k: v for k, v in want.items() if k != ANNOTATION_DECISION}:
            return
        patch = {k: v for k, v in want.items() if old.get(k) != v}
        patch.update({k: None for k in old if k not in want})
        try:
            await self.hub.patch(_path(lc, "cronjobs", m["namespace"], m["name"]),
                                 {"metadata": {"annotations": patch, "resourceVersion": rv}}, MERGE_PATCH,
                                 manager=FIELD_MANAGER)
        except ApiError as err:
            if err.status == 409:
                self.queue.add_after(key_of(cj), 0.05)
            elif err.status != 404:
                raise


def _load(text: Any) -> dict[str, Any]:
    try:
        doc = json.loads(text) if isinstance(text, str) else {}
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def _job_cluster(job: Mapping[str, Any] | None) -> str:
    return str((meta(job).get("labels") or {}).get(LABEL_CLUSTER) or "")


def _rerun_name(name: str, taken: Mapping[str, Any]) -> str:
    """``<job>-r<n>``: the first free one (a rerun's rerun is ``<job>-r2``, not ``-r1-r1``)."""
    base, _, n = name.rpartition("-r")
    if base and n.isdigit():
        name, start = base, int(n) + 1
    else:
        start = 1
    i = start
    while f"{name}-r{i}" in taken:
        i += 1
    return f"{name}-r{i}"
