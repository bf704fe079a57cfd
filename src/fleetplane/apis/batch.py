"""The batch group (``batch/v1``) as a simulated physical cluster serves it: Jobs and CronJobs.

Defaulting as ``pkg/apis/batch/v1/defaults.go`` (Job: parallelism and completions 1 when both
are unset, backoffLimit 6, completionMode NonIndexed, suspend false, manualSelector false,
podReplacementPolicy TerminatingOrFailed (Failed with a podFailurePolicy); CronJob:
concurrencyPolicy Allow, suspend false, history limits 3 and 1). A Job's selector is generated
as kube's strategy does (``batch.kubernetes.io/controller-uid`` and ``job-name`` labels, and
their legacy unprefixed forms, on the template; the Job takes the template's labels when it has
none, as kube's read-time defaulting shows it). Validation with kube's messages for the common
mistakes; a CronJob's schedule and timeZone as kube's rules (``apimachinery/cron.py``: robfig's
``ParseStandard``, IANA zone names, no ``Local``, no ``TZ=`` in a new schedule).
"""

from __future__ import annotations

from typing import Any

from ..apimachinery import errors as e
from ..apimachinery.cron import parse_schedule, valid_time_zone_error
from ..apimachinery.errors import FieldError
from ..apimachinery.gofmt import go_label_selector
from ..apimachinery.labels import format_label_selector
from ..apimachinery.validation import validate_label_selector
from ..registry import printers as pr
from ..registry.meta import new_uid
from ..registry.printers import AGE, NAME, Clock, Column, Printer
from ..registry.types import META_FIELDS, ResourceType, Strategy
from ..registry.validation import validate_object_meta
from .core.podspec import canonicalize_resources, default_template, validate_template

BATCH = "io.k8s.api.batch.v1."
CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID = "controller-uid"
LEGACY_JOB_NAME = "job-name"
JOB_RESTART_POLICIES = ["OnFailure", "Never"]
CONCURRENCY_POLICIES = ["Allow", "Forbid", "Replace"]
#: kube: a CronJob's name leaves room for the 11-character suffix of its Jobs' names
CRONJOB_NAME_MAX = 52


def _non_negative(path: str, value: Any) -> list[FieldError]:
    if value is None:
        return []
    if not isinstance(value, int) or isinstance(value, bool):
        return [e.invalid(path, value, "must be an integer")]
    return [e.invalid(path, value, "must be greater than or equal to 0")] if value < 0 else []


# -- Jobs ---------------------------------------------------------------------------------------


def default_job_spec(spec: Any) -> None:
    """``SetDefaults_Job``'s spec half (a CronJob's jobTemplate gets none of it, as in kube)."""
    if not isinstance(spec, dict):
        return
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    spec.setdefault("parallelism", 1)
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = 2147483647 if spec.get("backoffLimitPerIndex") is not None else 6
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("manualSelector", False)
    spec.setdefault("podReplacementPolicy", "Failed" if spec.get("podFailurePolicy") is not None else "TerminatingOrFailed")


def _validate_job_spec(spec: Any, path: str, *, template_only: bool) -> list[FieldError]:
    """``validateJobSpec``: counts, completion mode, selector (a Job's, not a template's), the
    template with a Job's restart policies."""
    if not isinstance(spec, dict):
        return [e.required(path)]
    errs: list[FieldError] = []
    for f in ("parallelism", "completions", "backoffLimit", "ttlSecondsAfterFinished"):
        errs += _non_negative(f"{path}.{f}", spec.get(f))
    ads = spec.get("activeDeadlineSeconds")
    if ads is not None and (not isinstance(ads, int) or isinstance(ads, bool) or ads <= 0):
        errs.append(e.invalid(f"{path}.activeDeadlineSeconds", ads, "must be greater than 0"))
    mode = spec.get("completionMode")
    if mode is not None and mode not in ("NonIndexed", "Indexed"):
        errs.append(e.not_supported(f"{path}.completionMode", mode, ["NonIndexed", "Indexed"]))
    if mode == "Indexed" and spec.get("completions") is None:
        errs.append(e.required(f"{path}.completions", "when completion mode is Indexed"))
    prp = spec.get("podReplacementPolicy")
    if prp is not None and prp not in ("TerminatingOrFailed", "Failed"):
        errs.append(e.not_supported(f"{path}.podReplacementPolicy", prp, ["TerminatingOrFailed", "Failed"]))
    sel = spec.get("selector")
    if sel is None:
        if not template_only:
            errs.append(e.required(f"{path}.selector"))
    else:
        errs += validate_label_selector(sel, f"{path}.selector")
    errs += validate_template(spec.get("template"), f"{path}.template", sel, restart_policies=JOB_RESTART_POLICIES)
    return errs


def _generate_selector(job: dict) -> None:
    """kube's ``generateSelector``: the Job's uid and name as template labels (prefixed and
    legacy), the uid label as its selector; a label the user set is left for validation to judge."""
    m, spec = job["metadata"], job.get("spec")
    if not isinstance(spec, dict):
        return
    template = spec.get("template")
    if not isinstance(template, dict):
        return
    tmeta = template.setdefault("metadata", {})
    if not isinstance(tmeta, dict):
        return
    labels = tmeta.get("labels")
    if not isinstance(labels, dict):
        labels = tmeta["labels"] = {}
    name, uid = str(m.get("name") or ""), str(m["uid"])
    for key, value in ((CONTROLLER_UID, uid), (JOB_NAME, name), (LEGACY_CONTROLLER_UID, uid), (LEGACY_JOB_NAME, name)):
        labels.setdefault(key, value)
    sel = spec.get("selector")
    if not isinstance(sel, dict):
        sel = spec["selector"] = {}
    ml = sel.get("matchLabels")
    if not isinstance(ml, dict):
        ml = sel["matchLabels"] = {}
    ml.setdefault(CONTROLLER_UID, uid)


class JobStrategy(Strategy):
    tracks_generation = True
    allow_unconditional_update = True
    status_subresource = True

    def default(self, obj: dict) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            default_job_spec(spec)
            default_template(spec.get("template"))

    def canonicalize(self, obj: dict) -> None:
        template = (obj.get("spec") or {}).get("template") if isinstance(obj.get("spec"), dict) else None
        if isinstance(template, dict):
            canonicalize_resources(template.get("spec"), "Job", "batch/v1")

    def prepare_for_create(self, obj: dict) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {}
        m = obj["metadata"]
        m["uid"] = new_uid()  # kube sets the uid before Validate; the selector names it
        spec = obj.get("spec")
        if isinstance(spec, dict) and not spec.get("manualSelector"):
            _generate_selector(obj)
        tlabels = (((spec or {}).get("template") or {}).get("metadata") or {}).get("labels") if isinstance(spec, dict) else None
        if isinstance(tlabels, dict) and tlabels and not m.get("labels"):
            m["labels"] = dict(tlabels)

    def validate(self, obj: dict) -> list[FieldError]:
        errs = validate_object_meta(obj, namespaced=True)
        return errs + _validate_job_spec(obj.get("spec"), "spec", template_only=False)

    def validate_update(self, obj: dict, old: dict) -> list[FieldError]:
        errs = self.validate(obj)
        new, prev = obj.get("spec") or {}, old.get("spec") or {}
        if new.get("selector") != prev.get("selector") and new.get("selector") is not None:
            errs.append(e.invalid_literal("spec.selector", go_label_selector(new.get("selector")), "field is immutable"))
        for f in ("completionMode", "manualSelector", "podFailurePolicy", "backoffLimitPerIndex"):
            if new.get(f) != prev.get(f):
                errs.append(e.invalid(f"spec.{f}", new.get(f), "field is immutable"))
        if new.get("completions") != prev.get("completions"):
            elastic = new.get("completionMode") == "Indexed" and new.get("completions") == new.get("parallelism")
            if not elastic:
                errs.append(e.invalid("spec.completions", new.get("completions"), "field is immutable"))
        if new.get("template") != prev.get("template") and not _template_change_allowed(new, prev, old):
            errs.append(e.invalid("spec.template", new.get("template"), "field is immutable"))
        return errs


_SCHEDULING_DIRECTIVES = ("nodeSelector", "affinity", "tolerations", "schedulingGates")


def _template_change_allowed(new: dict, prev: dict, old: dict) -> bool:
    """kube: a suspended Job that never started may change its template's scheduling
    directives and labels/annotations (for queueing controllers such as Kueue), nothing else."""
    if not prev.get("suspend") or (old.get("status") or {}).get("startTime"):
        return False
    a, b = dict(new.get("template") or {}), dict(prev.get("template") or {})
    a_spec = {k: v for k, v in (a.get("spec") or {}).items() if k not in _SCHEDULING_DIRECTIVES}
    b_spec = {k: v for k, v in (b.get("spec") or {}).items() if k not in _SCHEDULING_DIRECTIVES}
    a_meta = {k: v for k, v in (a.get("metadata") or {}).items() if k not in ("labels", "annotations")}
    b_meta = {k: v for k, v in (b.get("metadata") or {}).items() if k not in ("labels", "annotations")}
    return a_spec == b_spec and a_meta == b_meta


def job_condition(job: dict, ctype: str) -> bool:
    """Whether the Job has condition ``ctype`` with status True (kube's hasJobCondition)."""
    c = pr.condition((job.get("status") or {}).get("conditions"), ctype)
    return c is not None and c.get("status") == "True"


def job_finished(job: dict) -> str | None:
    """``Complete`` or ``Failed`` once the Job has finished, else None (IsJobFinished)."""
    for ctype in ("Complete", "Failed"):
        if job_condition(job, ctype):
            return ctype
    return None


def _containers_cells(containers: Any) -> tuple[str, str]:
    cs = [c for c in containers if isinstance(c, dict)] if isinstance(containers, list) else []
    return ",".join(pr.string(c.get("name")) for c in cs), ",".join(pr.string(c.get("image")) for c in cs)


def _job_cells(o: dict, clock: Clock) -> list:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    succeeded = pr.integer(status.get("succeeded"))
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{pr.integer(spec.get('completions'))}"
    elif pr.integer(spec.get("parallelism")) > 1:
        completions = f"{succeeded}/1 of {pr.integer(spec.get('parallelism'))}"
    else:
        completions = f"{succeeded}/1"
    start, done = clock.epoch(status.get("startTime")), clock.epoch(status.get("completionTime"))
    duration = "" if start is None else clock.elapsed(start) if done is None else clock.elapsed(clock.now - (done - start))
    if job_condition(o, "Complete"):
        state = "Complete"
    elif job_condition(o, "Failed"):
        state = "Failed"
    elif pr.meta(o).get("deletionTimestamp"):
        state = "Terminating"
    elif job_condition(o, "Suspended"):
        state = "Suspended"
    elif job_condition(o, "FailureTarget"):
        state = "FailureTarget"
    elif job_condition(o, "SuccessCriteriaMet"):
        state = "SuccessCriteriaMet"
    else:
        state = "Running"
    names, images = _containers_cells(pr.get(spec, "template", "spec", "containers"))
    return [pr.meta(o).get("name"), state, completions, duration, clock.since(pr.meta(o).get("creationTimestamp")),
            names, images, format_label_selector(spec.get("selector"))]


# -- CronJobs -------------------------------------------------------------------------------------


class CronJobStrategy(Strategy):
    tracks_generation = True
    allow_unconditional_update = True
    status_subresource = True

    def default(self, obj: dict) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        spec.setdefault("concurrencyPolicy", "Allow")
        spec.setdefault("suspend", False)
        spec.setdefault("successfulJobsHistoryLimit", 3)
        spec.setdefault("failedJobsHistoryLimit", 1)
        jt = spec.get("jobTemplate")
        if isinstance(jt, dict) and isinstance(jt.get("spec"), dict):
            default_template(jt["spec"].get("template"))

    def canonicalize(self, obj: dict) -> None:
        template = pr.get(obj, "spec", "jobTemplate", "spec", "template")
        if isinstance(template, dict):
            canonicalize_resources(template.get("spec"), "CronJob", "batch/v1")

    def prepare_for_create(self, obj: dict) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {}

    def _validate(self, obj: dict, *, allow_tz: bool) -> list[FieldError]:
        errs = validate_object_meta(obj, namespaced=True)
        name = pr.meta(obj).get("name")
        if isinstance(name, str) and len(name) > CRONJOB_NAME_MAX:
            errs.append(e.invalid("metadata.name", name, f"must be no more than {CRONJOB_NAME_MAX} characters"))
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return errs + [e.required("spec")]
        schedule = spec.get("schedule")
        tz = spec.get("timeZone")
        if not schedule:
            errs.append(e.required("spec.schedule"))
        elif not isinstance(schedule, str):
            errs.append(e.invalid("spec.schedule", schedule, "must be a string"))
        else:
            try:
                parse_schedule(schedule)
            except ValueError as err:
                errs.append(e.invalid("spec.schedule", schedule, str(err)))
            if "TZ" in schedule:
                if allow_tz and tz is not None:
                    errs.append(e.invalid("spec.schedule", schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
                elif not allow_tz:
                    errs.append(e.invalid("spec.schedule", schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
        if tz is not None:
            why = valid_time_zone_error(tz)
            if why:
                errs.append(e.invalid("spec.timeZone", tz, why))
        cp = spec.get("concurrencyPolicy")
        if cp not in CONCURRENCY_POLICIES:
            errs.append(e.required("spec.concurrencyPolicy") if not cp
                        else e.not_supported("spec.concurrencyPolicy", cp, CONCURRENCY_POLICIES))
        for f in ("startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
            errs += _non_negative(f"spec.{f}", spec.get(f))
        jt = spec.get("jobTemplate")
        if not isinstance(jt, dict):
            errs.append(e.required("spec.jobTemplate"))
        else:
            errs += _validate_job_spec(jt.get("spec"), "spec.jobTemplate.spec", template_only=True)
        return errs

    def validate(self, obj: dict) -> list[FieldError]:
        return self._validate(obj, allow_tz=False)

    def validate_update(self, obj: dict, old: dict) -> list[FieldError]:
        """kube keeps a ``TZ=`` schedule stored before the rule valid (but not with timeZone)."""
        return self._validate(obj, allow_tz="TZ" in str((old.get("spec") or {}).get("schedule") or ""))


def _cronjob_cells(o: dict, clock: Clock) -> list:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    last = status.get("lastScheduleTime")
    suspend = spec.get("suspend")
    names, images = _containers_cells(pr.get(spec, "jobTemplate", "spec", "template", "spec", "containers"))
    return [pr.meta(o).get("name"), pr.string(spec.get("schedule")), spec.get("timeZone") or "<none>",
            "<unset>" if suspend is None else ("True" if suspend else "False"), pr.length(status.get("active")),
            clock.since(last) if last else "<none>", clock.since(pr.meta(o).get("creationTimestamp")),
            names, images, format_label_selector(pr.get(spec, "jobTemplate", "spec", "selector"))]


JOB_FIELDS = dict(META_FIELDS) | {"status.successful": lambda o: str(((o.get("status") or {}).get("succeeded")) or 0)}
CONTAINERS = Column("Containers", priority=1, description="Names of each container in the template.")
IMAGES = Column("Images", priority=1, description="Images referenced by each container in the template.")


def resource_types() -> list[ResourceType]:
    return [
        ResourceType("batch", "v1", "Job", "jobs", "job", True, JobStrategy(), categories=("all",),
                     subresources=("status",), field_selectors=JOB_FIELDS,
                     printer=Printer((
                         NAME,
                         Column("Status", description="Status of the job."),
                         Column("Completions", description=(BATCH + "JobStatus", "succeeded")),
                         Column("Duration", description="Time required to complete the job."),
                         AGE, CONTAINERS, IMAGES,
                         Column("Selector", priority=1, description=(BATCH + "JobSpec", "selector")),
                     ), _job_cells),
                     openapi_definition=BATCH + "Job", protobuf="k8s.io.api.batch.v1.Job"),
        ResourceType("batch", "v1", "CronJob", "cronjobs", "cronjob", True, CronJobStrategy(),
                     short_names=("cj",), categories=("all",), subresources=("status",),
                     printer=Printer((
                         NAME,
                         Column("Schedule", description=(BATCH + "CronJobSpec", "schedule")),
                         Column("Timezone", description=(BATCH + "CronJobSpec", "timeZone")),
                         Column("Suspend", "boolean", description=(BATCH + "CronJobSpec", "suspend")),
                         Column("Active", "integer", description=(BATCH + "CronJobStatus", "active")),
                         Column("Last Schedule", description=(BATCH + "CronJobStatus", "lastScheduleTime")),
                         AGE, CONTAINERS, IMAGES,
                         Column("Selector", priority=1, description=(BATCH + "JobSpec", "selector")),
                     ), _cronjob_cells),
                     openapi_definition=BATCH + "CronJob", protobuf="k8s.io.api.batch.v1.CronJob"),
    ]


