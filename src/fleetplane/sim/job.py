"""The Job controller (kube-controller-manager's ``pkg/controller/job``), simplified.

A Job owns the pods that carry its controller reference. While it runs, the controller keeps
``min(parallelism, completions - succeeded)`` pods active (``generateName: <job>-``, the
template's labels, a controller reference; a NonIndexed Job: Indexed Jobs are run the same way,
without completion indexes), and counts finished pods: ``succeeded`` and ``failed`` from the
Job's pods (a finished pod deleted by hand stops being counted: kube's pod-tracking finalizers
and ``uncountedTerminatedPods`` are not simulated; the counts never go down). Failures are
``failed`` pods plus, under ``restartPolicy: OnFailure``, container restarts, as kube counts
them; beyond ``backoffLimit`` the Job fails (``BackoffLimitExceeded``), as it does past
``activeDeadlineSeconds`` from its ``startTime`` (``DeadlineExceeded``): the active pods are
deleted and the conditions go as kube 1.32's: ``FailureTarget`` first, ``Failed`` once no pod
runs; on success ``SuccessCriteriaMet`` (``CompletionsReached``) then ``Complete``, with
``completionTime``. A replacement pod is created at once (kube waits an exponential back-off
after a failure). ``suspend: true`` deletes the active pods and sets ``Suspended``
(``JobSuspended``), resuming resets ``startTime``. ``ttlSecondsAfterFinished`` deletes the
finished Job (foreground, as kube's TTL-after-finished controller). Status: ``active``,
``ready``, ``terminating``, ``succeeded``, ``failed``, ``startTime``, ``completionTime``,
``uncountedTerminatedPods``. Events as kube's: ``SuccessfulCreate``, ``SuccessfulDelete``,
``Completed``, ``BackoffLimitExceeded``, ``DeadlineExceeded``, ``Suspended``, ``Resumed``.
Timers, not polling, for the deadline and the TTL.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from ..kube.client import ApiError, Client, api_path
from ..kube.controller import run_workers
from ..kube.events import EventRecorder
from ..kube.informer import EventHandler, Informer, object_key
from ..kube.workqueue import WorkQueue
from .replicaset import Expectations
from .util import controller_ref, get_condition, meta, now, owner_ref, parse_time, pod_is_active, pod_is_ready

log = logging.getLogger(__name__)

COMPONENT = "job-controller"
JOBS = "batch/v1"


def job_path(namespace: str, name: str = "", subresource: str = "") -> str:
    return api_path(JOBS, "jobs", namespace, name, subresource)


def _finished(job: dict) -> str | None:
    for ctype in ("Complete", "Failed"):
        c = get_condition(job.get("status"), ctype)
        if c is not None and c.get("status") == "True":
            return ctype
    return None


def _condition(old: dict, ctype: str, status: str, reason: str, message: str) -> list[dict]:
    """The conditions with ``ctype`` set (its transition time kept if the status is unchanged)."""
    stamp = now()
    out, seen = [], False
    for c in old.get("conditions") or []:
        if c.get("type") == ctype:
            seen = True
            same = c.get("status") == status
            c = {"type": ctype, "status": status, "reason": reason, "message": message,
                 "lastProbeTime": stamp, "lastTransitionTime": c.get("lastTransitionTime") if same else stamp}
        out.append(c)
    if not seen:
        out.append({"type": ctype, "status": status, "reason": reason, "message": message,
                    "lastProbeTime": stamp, "lastTransitionTime": stamp})
    return out


class JobController:
    def __init__(self, kube: Client, jobs: Informer, pods: Informer, recorder: EventRecorder, workers: int = 5) -> None:
        self.kube = kube
        self.jobs = jobs
        self.pods = pods
        self.recorder = recorder
        self.workers = workers
        self.queue = WorkQueue("job", base=0.005, cap=60.0)
        self.expectations = Expectations()
        jobs.add_handler(_JobHandler(self))
        pods.add_handler(_PodHandler(self))

    async def run(self) -> None:
        await run_workers(self.queue, self.sync, self.workers)

    def owner_key(self, pod: dict) -> str | None:
        ref = controller_ref(pod)
        if ref is None or ref.get("kind") != "Job" or not str(ref.get("apiVersion") or "").startswith("batch/"):
            return None
        return f"{meta(pod).get('namespace')}/{ref.get('name')}"

    async def sync(self, key: str) -> None:
        job = self.jobs.get(key)
        if job is None:
            self.expectations.delete(key)
            return
        m, spec, status = meta(job), job.get("spec") or {}, job.get("status") or {}
        pods = list(self.pods.by_index("controller", m["uid"]))
        if _finished(job) is not None:
            await self._ttl(key, job)
            return
        if m.get("deletionTimestamp"):
            return
        if not self.expectations.satisfied(key):
            return
        active = [p for p in pods if pod_is_active(p)]
        terminating = [p for p in pods if meta(p).get("deletionTimestamp") and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
        succeeded = max(int(status.get("succeeded") or 0), sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Succeeded"))
        failed = max(int(status.get("failed") or 0), sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Failed"))
        restarts = sum(int(c.get("restartCount") or 0) for p in active
                       if (p.get("spec") or {}).get("restartPolicy") == "OnFailure"
                       for c in (p.get("status") or {}).get("containerStatuses") or [])
        new: dict[str, Any] = {k: v for k, v in status.items() if k not in ("active", "succeeded", "failed")}
        new.setdefault("uncountedTerminatedPods", {})
        completions = spec.get("completions")
        parallelism = int(spec.get("parallelism", 1) or 0)

        target = get_condition(status, "FailureTarget")
        criteria = get_condition(status, "SuccessCriteriaMet")
        failure: tuple[str, str] | None = None
        if target is not None and target.get("status") == "True":
            failure = (str(target.get("reason")), str(target.get("message")))
        elif failed + restarts > int(spec.get("backoffLimit", 6) or 0):
            failure = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
        elif spec.get("activeDeadlineSeconds") and status.get("startTime") and not spec.get("suspend"):
            start = parse_time(status.get("startTime")) or time.time()
            left = start + int(spec["activeDeadlineSeconds"]) - time.time()
            if left <= 0:
                failure = ("DeadlineExceeded", "Job was active longer than specified deadline")
            else:
                self.queue.add_after(key, left)
        complete = criteria is not None and criteria.get("status") == "True"
        if failure is None and not complete:
            complete = (succeeded >= int(completions)) if completions is not None else (succeeded > 0 and not active)
        if completions is None and succeeded > 0 and failure is None:
            complete = True  # any success: no new pods, the others finish

        if failure is not None or complete:
            conds = dict(new)
            if failure is not None:
                if target is None or target.get("status") != "True":
                    conds["conditions"] = _condition(new, "FailureTarget", "True", *failure)
                    self.recorder.event(job, "Warning", failure[0], failure[1], component=COMPONENT)
                await self._delete_pods(job, active)
                active = []
            elif criteria is None or criteria.get("status") != "True":
                conds["conditions"] = _condition(new, "SuccessCriteriaMet", "True", "CompletionsReached",
                                                 "Reached expected number of succeeded pods")
                if completions is not None:
                    await self._delete_pods(job, active)  # none left normally; extra ones go
                    active = []
            new = conds
            if not active and not terminating:
                if failure is not None:
                    new["conditions"] = _condition(new, "Failed", "True", *failure)
                else:
                    new["conditions"] = _condition(new, "Complete", "True", "CompletionsReached",
                                                   "Reached expected number of succeeded pods")
                    new["completionTime"] = now()
                    self.recorder.event(job, "Normal", "Completed", "Job completed", component=COMPONENT)
        elif spec.get("suspend"):
            await self._delete_pods(job, active)
            active = []
            suspended = get_condition(status, "Suspended")
            if suspended is None or suspended.get("status") != "True":
                new["conditions"] = _condition(new, "Suspended", "True", "JobSuspended", "Job suspended")
                new.pop("startTime", None)
                self.recorder.event(job, "Normal", "Suspended", "Job suspended", component=COMPONENT)
        else:
            suspended = get_condition(status, "Suspended")
            if suspended is not None and suspended.get("status") == "True":
                new["conditions"] = _condition(new, "Suspended", "False", "JobResumed", "Job resumed")
                new["startTime"] = now()
                self.recorder.event(job, "Normal", "Resumed", "Job resumed", component=COMPONENT)
                if spec.get("activeDeadlineSeconds"):
                    self.queue.add_after(key, int(spec["activeDeadlineSeconds"]))
            elif not new.get("startTime"):
                new["startTime"] = now()
                if spec.get("activeDeadlineSeconds"):
                    self.queue.add_after(key, int(spec["activeDeadlineSeconds"]))
            want = parallelism if completions is None else min(parallelism, max(int(completions) - succeeded, 0))
            diff = want - len(active)
            if diff > 0:
                self.expectations.expect_creations(key, diff)
                created = await asyncio.gather(*(self._create_pod(job) for _ in range(diff)))
                for ok in created:
                    if not ok:
                        self.expectations.creation_observed(key)
                active = active + [{} for ok in created if ok]
            elif diff < 0:
                victims = sorted(active, key=lambda p: (pod_is_ready(p), meta(p).get("creationTimestamp") or ""))[:-diff]
                await self._delete_pods(job, victims)
                active = [p for p in active if p not in victims]

        new["ready"] = sum(1 for p in active if p and pod_is_ready(p))
        new["terminating"] = len(terminating)
        if active:
            new["active"] = len(active)
        if succeeded:
            new["succeeded"] = succeeded
        if failed:
            new["failed"] = failed
        if new != status:
            try:
                await self.kube.request("PUT", job_path(m["namespace"], m["name"], "status"), body={**job, "status": new})
            except ApiError as err:
                if err.status == 404:
                    return
                if err.status == 409:
                    self.queue.add_after(key, 0.05)
                    return
                raise
        if _finished({"status": new}) is not None:
            await self._ttl(key, {**job, "status": new})

    async def _create_pod(self, job: dict) -> bool:
        m = meta(job)
        template = (job.get("spec") or {}).get("template") or {}
        tmeta = template.get("metadata") or {}
        pm: dict[str, Any] = {"generateName": m["name"] + "-", "namespace": m["namespace"], "ownerReferences": [owner_ref(job)]}
        for f in ("labels", "annotations", "finalizers"):
            if tmeta.get(f):
                pm[f] = tmeta[f]
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": pm, "spec": template.get("spec") or {}}
        try:
            pod = await self.kube.create(api_path("v1", "pods", m["namespace"]), body)
        except ApiError as err:
            if not err.has_cause("NamespaceTerminating"):
                self.recorder.event(job, "Warning", "FailedCreate", f"Error creating: {err.message}", component=COMPONENT)
            return False
        self.recorder.event(job, "Normal", "SuccessfulCreate", f"Created pod: {meta(pod).get('name')}", component=COMPONENT)
        return True

    async def _delete_pods(self, job: dict, pods: list[dict]) -> None:
        async def one(p: dict) -> None:
            try:
                await self.kube.delete(api_path("v1", "pods", meta(p)["namespace"], meta(p)["name"]), uid=meta(p)["uid"])
            except ApiError as err:
                if err.status not in (404, 409):
                    raise
                return
            self.recorder.event(job, "Normal", "SuccessfulDelete", f"Deleted pod: {meta(p)['name']}", component=COMPONENT)

        await asyncio.gather(*(one(p) for p in pods if p))

    async def _ttl(self, key: str, job: dict) -> None:
        """kube's TTL-after-finished controller: the Job goes ``ttlSecondsAfterFinished`` after it
        finished (foreground deletion, so its pods go first)."""
        ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
        if ttl is None or meta(job).get("deletionTimestamp"):
            return
        status = job.get("status") or {}
        kind = _finished(job)
        c = get_condition(status, kind or "")
        finished = parse_time(status.get("completionTime")) or parse_time((c or {}).get("lastTransitionTime")) or time.time()
        left = finished + int(ttl) - time.time()
        if left > 0:
            self.queue.add_after(key, left)
            return
        m = meta(job)
        try:
            await self.kube.delete(job_path(m["namespace"], m["name"]), uid=m["uid"], propagation="Foreground")
        except ApiError as err:
            if err.status not in (404, 409):
                raise


class _JobHandler(EventHandler):
    def __init__(self, c: JobController) -> None:
        self.c = c

    def on_add(self, job: dict) -> None:
        self.c.queue.add(object_key(job))

    def on_update(self, old: dict, new: dict) -> None:
        if old.get("spec") != new.get("spec") or meta(old).get("deletionTimestamp") != meta(new).get("deletionTimestamp"):
            self.c.queue.add(object_key(new))

    def on_delete(self, job: dict) -> None:
        self.c.expectations.delete(object_key(job))


class _PodHandler(EventHandler):
    def __init__(self, c: JobController) -> None:
        self.c = c

    def on_add(self, pod: dict) -> None:
        key = self.c.owner_key(pod)
        if key is not None:
            self.c.expectations.creation_observed(key)
            self.c.queue.add(key)

    def on_update(self, old: dict, new: dict) -> None:
        key = self.c.owner_key(new)
        if key is None:
            return
        o, n = old.get("status") or {}, new.get("status") or {}
        restarts = [c.get("restartCount") for c in n.get("containerStatuses") or []] != \
            [c.get("restartCount") for c in o.get("containerStatuses") or []]
        if o.get("phase") != n.get("phase") or pod_is_ready(old) != pod_is_ready(new) or restarts or \
                meta(old).get("deletionTimestamp") != meta(new).get("deletionTimestamp"):
            self.c.queue.add(key)

    def on_delete(self, pod: dict) -> None:
        key = self.c.owner_key(pod)
        if key is not None:
            self.c.queue.add(key)
