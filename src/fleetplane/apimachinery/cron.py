"""CronJobs, as kube reads them: schedules parsed as robfig/cron's ``ParseStandard`` (five fields
or a ``@descriptor``, robfig's error messages, which kube's validation shows) and evaluated by
croniter in the CronJob's time zone (:func:`due`: what a controller should start now); the Job a
CronJob starts (kube's names, labels, annotation), finished Jobs and history limits.

One place for the API's validation (``apis/batch.py``), the simulated cluster's CronJob
controller (``sim/cronjob.py``) and the hub's fleet-wide one (``fleet/cronjobs/``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timezone
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

__all__ = ["SCHEDULED_TIMESTAMP", "Due", "due", "history_to_delete", "job_finished", "job_from_template", "job_name_for",
           "job_ref", "next_fire", "parse_schedule", "schedule_zone", "scheduled_between", "scheduled_timestamp",
           "valid_time_zone_error"]

_DESCRIPTORS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
                "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
_BOUNDS = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 6)]
_MONTHS = {m: i + 1 for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split())}
_DAYS = {d: i for i, d in enumerate("sun mon tue wed thu fri sat".split())}
_NAMES: list[dict[str, int]] = [{}, {}, {}, _MONTHS, _DAYS]
_GO_DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_TZ_PART = re.compile(r"^[A-Za-z._+\-0-9]+$")


def _strip_tz(schedule: str) -> tuple[str | None, str]:
    """robfig's ``TZ=zone`` / ``CRON_TZ=zone`` prefix: (zone, the rest)."""
    if schedule.startswith(("TZ=", "CRON_TZ=")):
        head, _, rest = schedule.partition(" ")
        return head.split("=", 1)[1], rest.strip()
    return None, schedule


def _parse_int(expr: str, names: dict[str, int]) -> int:
    if expr.lower() in names:
        return names[expr.lower()]
    if not expr.isdigit():
        raise ValueError(f'failed to parse int from {expr}: strconv.Atoi: parsing "{expr}": invalid syntax')
    return int(expr)


def _check_field(field: str, index: int) -> None:
    lo, hi = _BOUNDS[index]
    for part in field.split(","):
        rng, _, step = part.partition("/")
        if step:
            if _parse_int(step, {}) <= 0:
                raise ValueError(f"step of range should be a positive number: {part}")
        if rng in ("*", "?"):
            continue
        start_s, _, end_s = rng.partition("-")
        start = _parse_int(start_s, _NAMES[index])
        end = _parse_int(end_s, _NAMES[index]) if end_s else start
        if start < lo:
            raise ValueError(f"beginning of range ({start}) below minimum ({lo}): {part}")
        if end > hi:
            raise ValueError(f"end of range ({end}) above maximum ({hi}): {part}")
        if start > end:
            raise ValueError(f"beginning of range ({start}) beyond end of range ({end}): {part}")


def parse_schedule(schedule: str) -> str:
    """``cron.ParseStandard``: the five-field form croniter evaluates (a descriptor expanded;
    ``@every <duration>`` kept), or ValueError with robfig's message."""
    zone, spec = _strip_tz(schedule)
    if zone is not None:
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"provided bad location {zone}: unknown time zone {zone}") from None
    if not spec:
        raise ValueError("empty spec string")
    if spec.startswith("@"):
        if spec.startswith("@every "):
            d = spec[7:].strip()
            if not _GO_DURATION.match(d):
                raise ValueError(f'failed to parse duration {spec}: time: invalid duration "{d}"')
            return spec
        if spec not in _DESCRIPTORS:
            raise ValueError(f"unrecognized descriptor: {spec}")
        return _DESCRIPTORS[spec]
    fields = spec.split()
    if len(fields) != 5:
        raise ValueError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    for i, f in enumerate(fields):
        _check_field(f, i)
    if not croniter.is_valid(spec):
        raise ValueError(f"unparseable schedule: {spec}")
    return spec


def valid_time_zone_error(tz: object) -> str | None:
    """kube's ``validateTimeZone``: None for an IANA zone name, else why not."""
    if not isinstance(tz, str) or tz == "":
        return "timeZone must be nil or non-empty string"
    for part in tz.split("/"):
        if part in (".", "..") or part.startswith("-") or not _TZ_PART.match(part):
            return f"unknown time zone {tz}"
    if tz.lower() == "local":
        return "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        return f"unknown time zone {tz}"
    return None


def schedule_zone(spec: dict[str, object]) -> ZoneInfo | timezone:
    """The zone a CronJob's schedule is read in: ``timeZone``, a ``TZ=`` prefix, else UTC (the
    zone kube-controller-manager runs in)."""
    tz = spec.get("timeZone") or _strip_tz(str(spec.get("schedule") or ""))[0]
    if isinstance(tz, str) and tz:
        try:
            return ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError):
            pass
    return UTC


def next_fire(spec: dict[str, object], after: float) -> float | None:
    """The first scheduled time strictly after ``after`` (epoch seconds) for a CronJob's spec, or
    None if its schedule does not parse. ``@every d`` is robfig's ConstantDelaySchedule: ``after``
    plus d in whole seconds."""
    try:
        parsed = parse_schedule(str(spec.get("schedule") or ""))
    except ValueError:
        return None
    if parsed.startswith("@every "):
        every = max(1.0, sum(float(n) * _UNIT_SECONDS[u] for n, u in _DURATION_PART.findall(parsed[7:])))
        return float(int(after + every))
    start = datetime.fromtimestamp(after, schedule_zone(spec))
    nxt = croniter(parsed, start).get_next(datetime)
    assert isinstance(nxt, datetime)
    return nxt.timestamp()


def scheduled_between(spec: dict[str, object], since: float, until: float, limit: int = 101) -> list[float]:
    """The scheduled times in (since, until], oldest first, at most ``limit`` (kube's controller
    stops counting past 100 missed starts and says so)."""
    out: list[float] = []
    t = since
    while len(out) < limit:
        nxt = next_fire(spec, t)
        if nxt is None or nxt > until:
            break
        out.append(nxt)
        t = nxt
    return out


def job_name_for(cronjob_name: str, scheduled: float) -> str:
    """kube's ``getJobName``: ``<cronjob>-<scheduled time in minutes since the epoch>``."""
    return f"{cronjob_name}-{int(scheduled // 60)}"


@dataclass(frozen=True)
class Due:
    """What a CronJob controller should do now (kube's ``mostRecentScheduleTime`` and the
    checks after it): ``scheduled`` is the most recent unmet time to start a Job at (None: none
    due); ``missed`` that it is past ``startingDeadlineSeconds``; ``too_many`` that more than 100
    start times were missed; ``next`` the next time to look (None: the schedule never fires)."""

    scheduled: float | None
    missed: bool
    too_many: bool
    next: float | None


def due(spec: dict[str, object], last_schedule: float | None, created: float, now: float) -> Due:
    """The decision at ``now`` for a CronJob created at ``created`` that last scheduled a Job at
    ``last_schedule``."""
    earliest = last_schedule if last_schedule is not None else created
    deadline = spec.get("startingDeadlineSeconds")
    if isinstance(deadline, int) and not isinstance(deadline, bool):
        earliest = max(earliest, now - deadline)
    times = scheduled_between(spec, earliest, now)
    nxt = next_fire(spec, now)
    if not times:
        return Due(None, False, False, nxt)
    scheduled = times[-1]
    if len(times) > 100:  # the last of them is not the most recent: find it from now backwards
        scheduled = _latest_before(spec, times[-1], now)
    missed = isinstance(deadline, int) and not isinstance(deadline, bool) and scheduled + deadline < now
    return Due(scheduled, missed, len(times) > 100, nxt)


def _latest_before(spec: dict[str, object], start: float, now: float) -> float:
    latest = start
    while True:
        nxt = next_fire(spec, latest)
        if nxt is None or nxt > now:
            return latest
        latest = nxt


def scheduled_timestamp(spec: dict[str, object], scheduled: float) -> str:
    """The ``batch.kubernetes.io/cronjob-scheduled-timestamp`` annotation: RFC 3339 in the
    CronJob's zone, as kube writes it."""
    return datetime.fromtimestamp(scheduled, schedule_zone(spec)).isoformat().replace("+00:00", "Z")


SCHEDULED_TIMESTAMP = "batch.kubernetes.io/cronjob-scheduled-timestamp"


def _meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def job_finished(job: Mapping[str, Any]) -> str | None:
    """``Complete`` or ``Failed`` once a Job has finished (kube's IsJobFinished), else None."""
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return str(c["type"])
    return None


def job_from_template(cronjob: Mapping[str, Any], scheduled: float, *, name: str | None = None,
                      labels: Mapping[str, str] | None = None, annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
    """kube's ``getJobFromTemplate2``: the Job a CronJob starts for ``scheduled`` (named
    :func:`job_name_for` unless ``name``), the jobTemplate's labels and annotations plus
    ``labels``/``annotations`` and the scheduled-timestamp annotation, a controller reference."""
    m, spec = _meta(cronjob), cronjob.get("spec") or {}
    template = spec.get("jobTemplate") or {}
    tmeta = template.get("metadata") or {}
    all_labels = dict(tmeta.get("labels") or {}) | dict(labels or {})
    all_annotations = dict(tmeta.get("annotations") or {}) | dict(annotations or {}) | \
        {SCHEDULED_TIMESTAMP: scheduled_timestamp(spec, scheduled)}
    owner = {"apiVersion": cronjob.get("apiVersion") or "batch/v1", "kind": cronjob.get("kind") or "CronJob",
             "name": m.get("name"), "uid": m.get("uid"), "controller": True, "blockOwnerDeletion": True}
    jm: dict[str, Any] = {"name": name or job_name_for(str(m.get("name")), scheduled), "namespace": m.get("namespace"),
                          "annotations": all_annotations, "ownerReferences": [owner]}
    if all_labels:
        jm["labels"] = all_labels
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": jm, "spec": template.get("spec") or {}}


def job_ref(job: Mapping[str, Any]) -> dict[str, Any]:
    """An ObjectReference to a Job, as a CronJob's ``status.active`` lists it."""
    m = _meta(job)
    return {"apiVersion": "batch/v1", "kind": "Job", "name": m.get("name"), "namespace": m.get("namespace"),
            "uid": m.get("uid"), "resourceVersion": m.get("resourceVersion", "")}


def history_to_delete(jobs: list[dict[str, Any]], successful_limit: Any, failed_limit: Any) -> list[dict[str, Any]]:
    """The finished Jobs beyond a CronJob's history limits, oldest (by start time) first."""
    out: list[dict[str, Any]] = []
    for kind, limit in (("Complete", successful_limit), ("Failed", failed_limit)):
        if limit is None:
            continue
        done = sorted((j for j in jobs if job_finished(j) == kind and not _meta(j).get("deletionTimestamp")),
                      key=lambda j: ((j.get("status") or {}).get("startTime") or _meta(j).get("creationTimestamp") or "",
                                     _meta(j).get("name") or ""))
        out += done[:max(len(done) - int(limit), 0)]
    return out
