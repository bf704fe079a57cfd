"""The CronJob controller (kube-controller-manager's ``pkg/controller/cronjob``, v2), simplified.

Each CronJob is looked at when it or one of its Jobs changes, and at its next scheduled time
(a work-queue timer: nothing polls). The decision is ``apimachinery/cron.due``: the most recent
scheduled time since ``lastScheduleTime`` (or creation), within ``startingDeadlineSeconds``
(else a ``MissSchedule`` Warning), read in ``timeZone`` (UTC by default). A Job for it is named
``<cronjob>-<minutes since the epoch>`` (so a time is never run twice), carries the
jobTemplate's labels and annotations plus ``batch.kubernetes.io/cronjob-scheduled-timestamp``
and a controller reference, and its spec is the jobTemplate's. ``concurrencyPolicy``: Allow
runs Jobs side by side; Forbid skips a time while one is active (``JobAlreadyActive``); Replace
deletes the active ones first. ``suspend`` stops new Jobs. Status: ``active`` (references to
the unfinished Jobs it owns), ``lastScheduleTime``, ``lastSuccessfulTime``. Finished Jobs beyond
``successfulJobsHistoryLimit`` / ``failedJobsHistoryLimit`` are deleted, oldest first (in the
background: their pods go by garbage collection). Events as kube's: ``SuccessfulCreate``,
``SawCompletedJob``, ``SuccessfulDelete``, ``MissSchedule``, ``JobAlreadyActive``,
``TooManyMissedTimes``, ``UnexpectedJob``.
"""

from __future__ import annotations

import logging
import time

from ..apimachinery.cron import due, history_to_delete, job_finished, job_from_template, job_name_for, job_ref
from ..kube.client import ApiError, Client, api_path
from ..kube.controller import run_workers
from ..kube.events import EventRecorder
from ..kube.informer import EnqueueKey, EventHandler, Informer, object_key
from ..kube.workqueue import WorkQueue
from .util import controller_ref, meta, parse_time

log = logging.getLogger(__name__)

COMPONENT = "cronjob-controller"
#: kube adds 100 ms to the wait for the next schedule, so it wakes after the time, not before
NEXT_SCHEDULE_SLACK = 0.1


class CronJobController:
    def __init__(self, kube: Client, cronjobs: Informer, jobs: Informer, recorder: EventRecorder, workers: int = 5) -> None:
        self.kube = kube
        self.cronjobs = cronjobs
        self.jobs = jobs
        self.recorder = recorder
        self.workers = workers
        self.queue = WorkQueue("cronjob", base=0.005, cap=60.0)
        cronjobs.add_handler(_CronJobHandler(self.queue))
        jobs.add_handler(_JobHandler(self))

    async def run(self) -> None:
        await run_workers(self.queue, self.sync, self.workers)

    def owner_key(self, job: dict) -> str | None:
        ref = controller_ref(job)
        if ref is None or ref.get("kind") != "CronJob":
            return None
        return f"{meta(job).get('namespace')}/{ref.get('name')}"

    async def sync(self, key: str) -> None:
        cj = self.cronjobs.get(key)
        if cj is None:
            return
        m, spec = meta(cj), cj.get("spec") or {}
        status = dict(cj.get("status") or {})
        jobs = list(self.jobs.by_index("controller", m["uid"]))
        by_name = {meta(j)["name"]: j for j in jobs}
        # active: drop finished or vanished Jobs, add unfinished owned ones it does not list
        active: list[dict] = []
        for ref in status.get("active") or []:
            job = by_name.get(ref.get("name"))
            if job is None:
                continue
            kind = job_finished(job)
            if kind is None:
                active.append(ref)
                continue
            self.recorder.event(cj, "Normal", "SawCompletedJob", f"Saw completed job: {ref.get('name')}, condition: {kind}",
                                component=COMPONENT)
        listed = {r.get("name") for r in active}
        for job in jobs:
            if job_finished(job) is None and meta(job)["name"] not in listed and not meta(job).get("deletionTimestamp"):
                active.append(job_ref(job))
        for job in jobs:
            if job_finished(job) == "Complete":
                done = (job.get("status") or {}).get("completionTime")
                if done and (not status.get("lastSuccessfulTime") or done > status["lastSuccessfulTime"]):
                    status["lastSuccessfulTime"] = done
        status["active"] = active
        for old in history_to_delete(jobs, spec.get("successfulJobsHistoryLimit"), spec.get("failedJobsHistoryLimit")):
            await self._delete_job(cj, old)
        if not m.get("deletionTimestamp") and not spec.get("suspend"):
            await self._schedule(key, cj, status, by_name)
        await self._write_status(cj, status)

    async def _schedule(self, key: str, cj: dict, status: dict, by_name: dict[str, dict]) -> None:
        m, spec = meta(cj), cj.get("spec") or {}
        t = time.time()
        created = parse_time(m.get("creationTimestamp")) or t
        decision = due(spec, parse_time(status.get("lastScheduleTime")), created, t)
        if decision.next is not None:
            self.queue.add_after(key, decision.next - t + NEXT_SCHEDULE_SLACK, replace=True)
        if decision.too_many:
            self.recorder.event(cj, "Warning", "TooManyMissedTimes",
                                "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew",
                                component=COMPONENT)
        if decision.scheduled is None:
            return
        scheduled = decision.scheduled
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(scheduled))
        if decision.missed:
            self.recorder.event(cj, "Warning", "MissSchedule", f"Missed scheduled time to start a job: {stamp}",
                                component=COMPONENT)
            return
        name = job_name_for(m["name"], scheduled)
        if name in by_name:
            return
        policy = spec.get("concurrencyPolicy") or "Allow"
        if policy == "Forbid" and status["active"]:
            self.recorder.event(cj, "Normal", "JobAlreadyActive",
                                "Not starting job because prior execution is running and concurrency policy is Forbid",
                                component=COMPONENT)
            return
        if policy == "Replace":
            for ref in list(status["active"]):
                job = by_name.get(ref.get("name"))
                if job is not None:
                    await self._delete_job(cj, job)
                status["active"].remove(ref)
        try:
            job = await self.kube.create(api_path("batch/v1", "jobs", m["namespace"]), job_from_template(cj, scheduled))
        except ApiError as err:
            if err.status == 409:  # made already (a cache behind its own write)
                status["lastScheduleTime"] = stamp
                return
            self.recorder.event(cj, "Warning", "FailedCreate", f"Error creating job: {err.message}", component=COMPONENT)
            raise
        self.recorder.event(cj, "Normal", "SuccessfulCreate", f"Created job {meta(job)['name']}", component=COMPONENT)
        status["active"].append(job_ref(job))
        status["lastScheduleTime"] = stamp

    async def _delete_job(self, cj: dict, job: dict) -> None:
        jm = meta(job)
        try:
            await self.kube.delete(api_path("batch/v1", "jobs", jm["namespace"], jm["name"]), uid=jm["uid"])
        except ApiError as err:
            if err.status not in (404, 409):
                raise
            return
        self.recorder.event(cj, "Normal", "SuccessfulDelete", f"Deleted job {jm['name']}", component=COMPONENT)

    async def _write_status(self, cj: dict, status: dict) -> None:
        if not status.get("active"):
            status.pop("active", None)
        if status == (cj.get("status") or {}):
            return
        m = meta(cj)
        try:
            await self.kube.request("PUT", api_path("batch/v1", "cronjobs", m["namespace"], m["name"], "status"),
                                    body={**cj, "status": status})
        except ApiError as err:
            if err.status == 404:
                return
            if err.status == 409:
                self.queue.add_after(object_key(cj), 0.05)
                return
            raise


class _CronJobHandler(EnqueueKey):
    """A CronJob's key on any change, as kube's controller (a client may rewrite the status it
    works from); a deleted one's pending fire is cancelled."""

    def on_delete(self, obj: dict) -> None:
        self.queue.cancel_timer(object_key(obj))


class _JobHandler(EventHandler):
    def __init__(self, c: CronJobController) -> None:
        self.c = c

    def _enqueue(self, job: dict) -> None:
        key = self.c.owner_key(job)
        if key is not None:
            self.c.queue.add(key)

    def on_add(self, job: dict) -> None:
        self._enqueue(job)

    def on_update(self, old: dict, new: dict) -> None:
        if job_finished(old) != job_finished(new) or (old.get("status") or {}).get("completionTime") != \
                (new.get("status") or {}).get("completionTime"):
            self._enqueue(new)

    def on_delete(self, job: dict) -> None:
        self._enqueue(job)
