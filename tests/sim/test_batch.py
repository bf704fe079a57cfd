"""Jobs and CronJobs in a simulated cluster, with kubectl: kube's defaults, validation messages
and columns; pods that finish; the Job controller (completions, parallelism, backoff) and the
CronJob controller (firing, Forbid, Replace, history limits)."""

from __future__ import annotations

import textwrap
import time

from ..harness import Kubectl, wait_for
from .conftest import Sim


def _rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.strip().splitlines()]


def _cond(obj: dict, ctype: str) -> dict:
    return next((c for c in obj.get("status", {}).get("conditions") or [] if c["type"] == ctype), {})


def _job(name: str, *, completions: int = 1, parallelism: int = 1, backoff: int | None = None, policy: str = "Never",
         annotations: str = "", command: str = '["sleep", "1"]') -> str:
    return textwrap.dedent(f"""\
        apiVersion: batch/v1
        kind: Job
        metadata: {{name: {name}}}
        spec:
          completions: {completions}
          parallelism: {parallelism}
          {f"backoffLimit: {backoff}" if backoff is not None else ""}
          template:
            metadata: {{annotations: {{{annotations}}}}}
            spec:
              restartPolicy: {policy}
              containers: [{{name: main, image: busybox:1.36, command: {command}}}]
        """)


def test_job_defaults_validation_and_completions(sim: Sim, kubectl: Kubectl, ns: str):
    # a Job whose template says Always (or nothing: the pod default) is refused as kube does
    bad = _job("always", policy="Always")
    err = kubectl.fail("apply", "-f", "-", stdin=bad).err
    assert 'spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"' in err, err
    kubectl("apply", "-f", "-", stdin=_job("pi", completions=3, parallelism=2))
    job = kubectl.get_json("job", "pi")
    spec = job["spec"]
    uid = job["metadata"]["uid"]
    assert (spec["backoffLimit"], spec["completionMode"], spec["suspend"], spec["manualSelector"],
            spec["podReplacementPolicy"]) == (6, "NonIndexed", False, False, "TerminatingOrFailed")
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    labels = spec["template"]["metadata"]["labels"]
    assert labels == {"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "pi",
                      "controller-uid": uid, "job-name": "pi"}
    assert job["metadata"]["labels"] == labels
    done = wait_for(lambda: (j := kubectl.get_json("job", "pi")) and _cond(j, "Complete").get("status") == "True" and j,
                    timeout=60, what="job pi Complete")
    assert done["status"]["succeeded"] == 3 and "active" not in done["status"] and done["status"]["completionTime"]
    assert _cond(done, "SuccessCriteriaMet")["reason"] == "CompletionsReached"
    rows = _rows(kubectl("get", "jobs", "-o", "wide").out)
    assert rows[0] == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    assert rows[1][:3] == ["pi", "Complete", "3/3"] and rows[1][5:7] == ["main", "busybox:1.36"]
    assert rows[1][7] == f"batch.kubernetes.io/controller-uid={uid}"
    pods = kubectl.get_json("pods", "-l", "job-name=pi")["items"]
    assert len(pods) == 3 and {p["status"]["phase"] for p in pods} == {"Succeeded"}
    term = pods[0]["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"]) == (0, "Completed")
    assert "Completed" in kubectl("get", "pods", "-l", "job-name=pi").out
    reasons = [e["reason"] for e in kubectl.get_json("events", "--field-selector", "involvedObject.name=pi")["items"]]
    assert reasons.count("SuccessfulCreate") == 3 and "Completed" in reasons


def test_job_backoff_limit_and_restarts(sim: Sim, kubectl: Kubectl):
    kubectl("apply", "-f", "-", stdin=_job("fails", backoff=1, annotations='"sim.fleetplane.io/exit-code": "3"'))
    kubectl("apply", "-f", "-", stdin=_job("crashes", backoff=2, policy="OnFailure",
                                           annotations='"sim.fleetplane.io/exit-code": "1"'))
    failed = wait_for(lambda: (j := kubectl.get_json("job", "fails")) and _cond(j, "Failed").get("status") == "True" and j,
                      timeout=60, what="job fails Failed")
    assert _cond(failed, "Failed")["reason"] == "BackoffLimitExceeded"
    assert _cond(failed, "FailureTarget")["reason"] == "BackoffLimitExceeded"
    assert failed["status"]["failed"] == 2
    pod = kubectl.get_json("pods", "-l", "job-name=fails")["items"][0]
    assert pod["status"]["phase"] == "Failed"
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3
    assert _rows(kubectl("get", "job", "fails").out)[1][1:3] == ["Failed", "0/1"]
    crashed = wait_for(lambda: (j := kubectl.get_json("job", "crashes")) and _cond(j, "Failed").get("status") == "True" and j,
                       timeout=60, what="job crashes Failed after restarts")
    assert _cond(crashed, "Failed")["reason"] == "BackoffLimitExceeded"
    events = kubectl.get_json("events", "--field-selector", "reason=BackOff")["items"]
    assert events and "Back-off restarting failed container main" in events[0]["message"]


def _cronjob(name: str, policy: str, command: str, successful: int = 3) -> str:
    return textwrap.dedent(f"""\
        apiVersion: batch/v1
        kind: CronJob
        metadata: {{name: {name}}}
        spec:
          schedule: "* * * * *"
          concurrencyPolicy: {policy}
          successfulJobsHistoryLimit: {successful}
          jobTemplate:
            metadata: {{labels: {{app: {name}}}}}
            spec:
              template:
                spec:
                  restartPolicy: Never
                  containers: [{{name: main, image: busybox, command: {command}}}]
        """)


def _backdate(sim: Sim, ns: str, name: str) -> None:
    """Say the CronJob last ran three minutes ago (through /status, as any client may): the
    controller starts the most recent missed time at once, as kube's does."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 180))
    code, body = sim.json("PATCH", f"/apis/batch/v1/namespaces/{ns}/cronjobs/{name}/status",
                          {"status": {"lastScheduleTime": stamp}}, content_type="application/merge-patch+json")
    assert code == 200, body


def test_cronjob_validation_columns_firing_forbid_replace_history(sim: Sim, kubectl: Kubectl, ns: str):
    err = kubectl.fail("create", "cronjob", "bad", "--image=busybox", "--schedule=61 * * * *").err
    assert 'spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59): 61' in err, err
    err = kubectl.fail("create", "cronjob", "bad", "--image=busybox", "--schedule=TZ=UTC * * * * *").err
    assert "cannot use TZ or CRON_TZ in schedule, use timeZone field instead" in err, err
    kubectl("create", "cronjob", "hourly", "--image=busybox", "--schedule=@hourly")
    cj = kubectl.get_json("cronjob", "hourly")
    assert (cj["spec"]["concurrencyPolicy"], cj["spec"]["suspend"], cj["spec"]["successfulJobsHistoryLimit"],
            cj["spec"]["failedJobsHistoryLimit"]) == ("Allow", False, 3, 1)
    rows = _rows(kubectl("get", "cronjobs", "-o", "wide").out)
    assert rows[0] == ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    assert rows[1][:6] == ["hourly", "@hourly", "<none>", "False", "0", "<none>"]

    for name, policy, command, hist in (("forbid", "Forbid", '["sleep", "600"]', 3), ("replace", "Replace", '["sleep", "600"]', 3),
                                        ("quick", "Allow", '["sleep", "0"]', 1)):
        kubectl("apply", "-f", "-", stdin=_cronjob(name, policy, command, hist))
        _backdate(sim, ns, name)

    def jobs(app: str) -> list[dict]:
        return kubectl.get_json("jobs", "-l", f"app={app}")["items"]

    first = {app: wait_for(lambda a=app: jobs(a), timeout=30, what=f"first job of {app}")[0] for app in ("forbid", "replace", "quick")}
    minute = int(time.time() // 60)
    for app, job in first.items():
        assert job["metadata"]["name"] == f"{app}-{minute}", job["metadata"]["name"]
        ref = job["metadata"]["ownerReferences"][0]
        assert (ref["kind"], ref["name"], ref["controller"]) == ("CronJob", app, True)
        assert "batch.kubernetes.io/cronjob-scheduled-timestamp" in job["metadata"]["annotations"]
    cj = wait_for(lambda: (c := kubectl.get_json("cronjob", "forbid")) and c["status"].get("active") and c, timeout=20,
                  what="forbid's active list")
    assert cj["status"]["active"][0]["name"] == f"forbid-{minute}" and cj["status"]["lastScheduleTime"]
    # the next minute: Forbid skips it, Replace replaces its Job, the quick one keeps one finished Job
    nxt = f"{minute + 1}"
    wait_for(lambda: any(j["metadata"]["name"] == f"replace-{nxt}" for j in jobs("replace")), timeout=90,
             what="replace's second job")
    wait_for(lambda: [j["metadata"]["name"] for j in jobs("replace") if not j["metadata"].get("deletionTimestamp")]
             == [f"replace-{nxt}"], timeout=30, what="replace's first job deleted")
    wait_for(lambda: any(e["reason"] == "JobAlreadyActive" for e in
                         kubectl.get_json("events", "--field-selector", "involvedObject.name=forbid")["items"]),
             timeout=30, what="forbid's JobAlreadyActive event")
    assert [j["metadata"]["name"] for j in jobs("forbid")] == [f"forbid-{minute}"]
    wait_for(lambda: [j["metadata"]["name"] for j in jobs("quick")] == [f"quick-{nxt}"] and
             _cond(jobs("quick")[0], "Complete").get("status") == "True", timeout=30,
             what="quick's history limited to its last successful job")
    quick = kubectl.get_json("cronjob", "quick")
    assert quick["status"].get("lastSuccessfulTime") and not quick["status"].get("active")


def test_job_suspend_deadline_and_ttl(sim: Sim, kubectl: Kubectl):
    sleeper = _job("later", command='["sleep", "600"]').replace("  parallelism: 1\n", "  parallelism: 1\n  suspend: true\n")
    kubectl("apply", "-f", "-", stdin=sleeper)
    job = wait_for(lambda: (j := kubectl.get_json("job", "later")) and _cond(j, "Suspended").get("status") == "True" and j,
                   timeout=30, what="job later Suspended")
    assert _cond(job, "Suspended")["reason"] == "JobSuspended" and not kubectl.get_json("pods", "-l", "job-name=later")["items"]
    assert _rows(kubectl("get", "job", "later").out)[1][1] == "Suspended"
    kubectl("patch", "job", "later", "--type=merge", "-p", '{"spec": {"suspend": false, "activeDeadlineSeconds": 2}}')
    failed = wait_for(lambda: (j := kubectl.get_json("job", "later")) and _cond(j, "Failed").get("status") == "True" and j,
                      timeout=40, what="job later past its deadline")
    assert _cond(failed, "Failed")["reason"] == "DeadlineExceeded"
    assert _cond(failed, "Suspended")["reason"] == "JobResumed"
    reasons = {e["reason"] for e in kubectl.get_json("events", "--field-selector", "involvedObject.name=later")["items"]}
    assert {"Suspended", "Resumed", "DeadlineExceeded", "SuccessfulDelete"} <= reasons
    kubectl("apply", "-f", "-", stdin=_job("brief", command='["sleep", "0"]').replace(
        "  parallelism: 1\n", "  parallelism: 1\n  ttlSecondsAfterFinished: 1\n"))
    wait_for(lambda: kubectl("get", "job", "brief", check=False).code != 0, timeout=40,
             what="job brief deleted after its TTL")
