"""batch/v1 in-process: CronJob schedules as kube reads them (robfig's messages, descriptors, time
zones, the most-recent-unmet-time decision, Job names), the Job and CronJob strategies' defaults and
validation messages, and their printers' cells (kube 1.32's columns)."""

from __future__ import annotations

import calendar
import time

import pytest

from fleetplane.apimachinery.cron import (
    due,
    history_to_delete,
    job_from_template,
    job_name_for,
    next_fire,
    parse_schedule,
    valid_time_zone_error,
)
from fleetplane.apis.batch import CronJobStrategy, JobStrategy

from .test_tables import cells, columns, ts, workload


def _t(stamp: str) -> float:
    return float(calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")))


@pytest.mark.parametrize(("schedule", "message"), [
    ("bad", "expected exactly 5 fields, found 1: [bad]"),
    ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
    ("61 * * * *", "end of range (61) above maximum (59): 61"),
    ("* 24 * * *", "end of range (24) above maximum (23): 24"),
    ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
    ("* * * * 7", "end of range (7) above maximum (6): 7"),
    ("*/0 * * * *", "step of range should be a positive number: */0"),
    ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
    ("@often", "unrecognized descriptor: @often"),
    ("", "empty spec string"),
])
def test_schedule_errors_are_robfigs(schedule: str, message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("[", r"\[").replace("]", r"\]").replace("*", r"\*")
                       .replace("(", r"\(").replace(")", r"\)") + "$"):
        parse_schedule(schedule)


def test_schedules_descriptors_names_and_zones() -> None:
    assert parse_schedule("@hourly") == "0 * * * *" and parse_schedule("@daily") == "0 0 * * *"
    assert parse_schedule("0 9 * jan-mar mon-fri") == "0 9 * jan-mar mon-fri"
    assert parse_schedule("@every 90s") == "@every 90s"
    base = _t("2026-03-01T10:20:30Z")
    assert next_fire({"schedule": "*/15 * * * *"}, base) == _t("2026-03-01T10:30:00Z")
    assert next_fire({"schedule": "0 9 * * *", "timeZone": "Europe/Paris"}, base) == _t("2026-03-02T08:00:00Z")
    assert next_fire({"schedule": "@every 90s"}, base) == base + 90
    assert valid_time_zone_error("Europe/Paris") is None
    assert valid_time_zone_error("Local") == "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
    assert valid_time_zone_error("Mars/Olympus") == "unknown time zone Mars/Olympus"
    assert valid_time_zone_error("") == "timeZone must be nil or non-empty string"


def test_due_is_the_most_recent_unmet_time() -> None:
    spec = {"schedule": "* * * * *"}
    created = _t("2026-03-01T10:00:10Z")
    d = due(spec, None, created, _t("2026-03-01T10:00:50Z"))
    assert d.scheduled is None and d.next == _t("2026-03-01T10:01:00Z")
    d = due(spec, _t("2026-03-01T10:01:00Z"), created, _t("2026-03-01T10:03:05Z"))
    assert d.scheduled == _t("2026-03-01T10:03:00Z") and not d.missed and not d.too_many
    d = due({**spec, "startingDeadlineSeconds": 2}, _t("2026-03-01T10:01:00Z"), created, _t("2026-03-01T10:03:05Z"))
    assert d.scheduled is None  # the deadline narrows the window to (now - 2 s, now]
    d = due({**spec, "startingDeadlineSeconds": 10}, _t("2026-03-01T10:01:00Z"), created, _t("2026-03-01T10:03:05Z"))
    assert d.scheduled == _t("2026-03-01T10:03:00Z") and not d.missed
    d = due(spec, _t("2026-03-01T08:00:00Z"), created, _t("2026-03-01T10:03:05Z"))
    assert d.too_many and d.scheduled == _t("2026-03-01T10:03:00Z")
    assert job_name_for("nightly", _t("2026-03-01T10:03:00Z")) == f"nightly-{int(_t('2026-03-01T10:03:00Z') // 60)}"


def test_job_from_template_and_history() -> None:
    cj = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "n", "namespace": "d", "uid": "u1"},
          "spec": {"schedule": "* * * * *", "timeZone": "Europe/Paris",
                   "jobTemplate": {"metadata": {"labels": {"app": "n"}}, "spec": {"template": {"spec": {}}}}}}
    job = job_from_template(cj, _t("2026-03-01T10:03:00Z"), labels={"kcp.dev/cluster": "east"})
    assert job["metadata"]["labels"] == {"app": "n", "kcp.dev/cluster": "east"}
    assert job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] == "2026-03-01T11:03:00+01:00"
    assert job["metadata"]["ownerReferences"][0] == {"apiVersion": "batch/v1", "kind": "CronJob", "name": "n", "uid": "u1",
                                                     "controller": True, "blockOwnerDeletion": True}

    def done(name: str, kind: str, start: str) -> dict:
        return {"metadata": {"name": name}, "status": {"startTime": start, "conditions": [{"type": kind, "status": "True"}]}}

    jobs = [done("a", "Complete", ts(300)), done("b", "Complete", ts(200)), done("c", "Failed", ts(100)),
            done("d", "Complete", ts(50)), {"metadata": {"name": "running"}, "status": {}}]
    assert [j["metadata"]["name"] for j in history_to_delete(jobs, 2, 0)] == ["a", "c"]


def _job(**spec: object) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi", "namespace": "default"},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "perl"}], **spec}}}}


def _messages(errs: list) -> list[str]:
    return [f"{e.field}: {e.message()}" for e in errs]


def test_job_strategy_defaults_selector_and_validation() -> None:
    s = JobStrategy()
    job = _job(restartPolicy="Never")
    s.default(job)
    s.prepare_for_create(job)
    uid = job["metadata"]["uid"]
    spec = job["spec"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"], spec["completionMode"], spec["suspend"],
            spec["manualSelector"], spec["podReplacementPolicy"]) == (1, 1, 6, "NonIndexed", False, False, "TerminatingOrFailed")
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert job["metadata"]["labels"]["job-name"] == "pi" and s.validate(job) == []
    always = _job()
    s.default(always)
    s.prepare_for_create(always)
    assert _messages(s.validate(always)) == [
        'spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"']
    changed = {**job, "spec": {**spec, "completions": 2}}
    assert "spec.completions: Invalid value: 2: field is immutable" in _messages(s.validate_update(changed, job))


def test_cronjob_strategy_defaults_and_validation() -> None:
    s = CronJobStrategy()
    cj = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "x" * 53, "namespace": "default"},
          "spec": {"schedule": "TZ=UTC * * * * *", "timeZone": "Local", "concurrencyPolicy": "Sometimes",
                   "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure",
                                                                  "containers": [{"name": "c", "image": "i"}]}}}}}}
    s.default(cj)
    assert (cj["spec"]["suspend"], cj["spec"]["successfulJobsHistoryLimit"], cj["spec"]["failedJobsHistoryLimit"]) == (False, 3, 1)
    got = _messages(s.validate(cj))
    assert f'metadata.name: Invalid value: "{"x" * 53}": must be no more than 52 characters' in got
    assert 'spec.schedule: Invalid value: "TZ=UTC * * * * *": cannot use TZ or CRON_TZ in schedule, use timeZone field instead' in got
    assert any(m.startswith('spec.timeZone: Invalid value: "Local": timeZone must be an explicit time zone') for m in got)
    assert 'spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"' in got


def test_job_and_cronjob_printers() -> None:
    job = workload("batch", "Job", "jobs")
    assert columns(job) == [("Name", "string", 0), ("Status", "string", 0), ("Completions", "string", 0),
                            ("Duration", "string", 0), ("Age", "string", 0), ("Containers", "string", 1),
                            ("Images", "string", 1), ("Selector", "string", 1)]
    obj = {"metadata": {"name": "pi", "creationTimestamp": ts(600)},
           "spec": {"completions": 3, "selector": {"matchLabels": {"a": "b"}},
                    "template": {"spec": {"containers": [{"name": "c", "image": "perl"}]}}},
           "status": {"succeeded": 3, "startTime": ts(590), "completionTime": ts(470),
                      "conditions": [{"type": "Complete", "status": "True"}]}}
    assert cells(job, obj) == ["pi", "Complete", "3/3", "2m", "10m", "c", "perl", "a=b"]
    running = {"metadata": {"name": "w"}, "spec": {"parallelism": 2}, "status": {"startTime": ts(30)}}
    assert cells(job, running)[:4] == ["w", "Running", "0/1 of 2", "30s"]
    cj = workload("batch", "CronJob", "cronjobs")
    assert [c[0] for c in columns(cj)] == ["Name", "Schedule", "Timezone", "Suspend", "Active", "Last Schedule", "Age",
                                          "Containers", "Images", "Selector"]
    assert cells(cj, {"metadata": {"name": "n", "creationTimestamp": ts(7200)},
                      "spec": {"schedule": "@hourly", "suspend": True, "timeZone": "Europe/Paris"},
                      "status": {"active": [{"name": "n-1"}], "lastScheduleTime": ts(60)}})[:7] == [
        "n", "@hourly", "Europe/Paris", "True", 1, "60s", "120m"]
