"""`make demo` as a test: run it (hub, Cluster controller and Syncers, splitter, simulated
clusters, the real kubectl) and check its transcript."""

from __future__ import annotations

import re
import subprocess
import sys
import time


def tables(out: str) -> list[dict[str, str]]:
    """Every `kubectl get deployments` table printed, as {name: READY}."""
    found = []
    for block in out.split("$ kubectl get deployments")[1:]:
        lines = block.split("\n\n")[0].splitlines()[2:]  # the command's tail, then the header
        found.append({cols[0]: cols[1] for cols in (line.split() for line in lines) if len(cols) >= 2})
    return found


def blocks(out: str, command: str) -> list[str]:
    """The output of every run of ``$ COMMAND`` (its indented lines)."""
    return [re.split(r"\n(?=\S)", part)[0] for part in out.split(f"$ {command}\n")[1:]]


def watched(out: str, args: str) -> list[str]:
    """Every table a watch printed for ``kubectl get ARGS`` (its header line ends in ``# t=...``)."""
    return [re.split(r"\n(?=\S)", part.split("\n", 1)[1])[0] for part in out.split(f"$ kubectl get {args}  ")[1:]]


def rows(block: str) -> dict[str, list[str]]:
    """The rows of a `kubectl get` output, by NAME."""
    return {cols[0]: cols for cols in (line.split() for line in block.splitlines()) if cols and cols[0] != "NAME"}


def check_application(out: str) -> None:
    """The whole application: applied as one YAML, each part where it was said to run, the hub's
    aggregated status of each."""
    assert "# a whole application" in out
    for created in ("configmap/web-config", "deployment.apps/web", "service/web", "horizontalpodautoscaler.autoscaling/web",
                    "cronjob.batch/report", "daemonset.apps/log-agent", "statefulset.apps/db"):
        assert f"{created} created" in out, created
    assert "cronjob.batch/report patched" in out
    parents = rows(watched(out, "deployment/web service/web hpa/web cronjob/report daemonset/log-agent statefulset/db")[-1])
    assert parents["deployment.apps/web"][1] == "2/2"
    ips = parents["service/web"][3].split(",")
    assert parents["service/web"][1] == "LoadBalancer" and len(ips) == 2, parents["service/web"]
    assert parents["horizontalpodautoscaler.autoscaling/web"][2:5] == ["cpu:", "40%/80%", "2"]
    assert parents["daemonset.apps/log-agent"][1:4] == ["6", "6", "6"]
    assert parents["statefulset.apps/db"][1] == "3/3"
    where = rows(blocks(out, "kubectl get deploy,svc,hpa,job,ds,sts,configmap -L kcp.dev/cluster -l kcp.dev/cluster")[0])
    clusters = {"us-east1", "us-west1"}
    for kind in ("deployment.apps/web", "service/web", "horizontalpodautoscaler.autoscaling/web",
                 "daemonset.apps/log-agent", "statefulset.apps/db"):
        assert {r[-1] for name, r in where.items() if name.startswith(kind + "--")} == clusters, (kind, where)
        assert all(name == f"{kind}--{r[-1]}" for name, r in where.items() if name.startswith(kind + "--"))
    assert sorted(r[3] for name, r in where.items() if name.startswith("service/web--")) == sorted(ips)
    assert all(r[1:4] == ["3", "3", "3"] for name, r in where.items() if name.startswith("daemonset.apps/log-agent--"))
    assert sum(int(r[1].split("/")[0]) for name, r in where.items() if name.startswith("statefulset.apps/db--")) == 3
    jobs = [r for name, r in where.items() if name.startswith("job.batch/report-")]
    assert len(jobs) == 1 and jobs[0][1:3] == ["Complete", "1/1"] and jobs[0][-1] in clusters, jobs
    assert where["configmap/web-config"][-1] == "us-west1"
    explained = blocks(out, "fleetplane placement explain statefulset/db -n default")
    ordinals = re.search(r"Ordinals now: us-east1 (\S+), us-west1 (\S+);", explained[0])
    assert ordinals, explained[0]
    # in us-west1 itself: its range's Pods' claims, bound, and the ConfigMap
    west = blocks(out, "kubectl --kubeconfig us-west1.kubeconfig get sts,pvc,configmap -n default")[0]
    first, _, last = ordinals.group(2).partition("-")
    for ordinal in range(int(first), int(last or first) + 1):
        assert re.search(rf"persistentvolumeclaim/data-db-{ordinal}\s+Bound", west), west
    assert "configmap/web-config" in west


def test_make_demo_transcript():
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "fleetplane.demo"], capture_output=True, text=True, timeout=120)
    elapsed = time.monotonic() - started
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-3000:]
    assert "cluster.cluster.example.dev/us-west1 created" in out and "cluster.cluster.example.dev/us-east1 created" in out
    assert "deployment.apps/my-deployment created" in out
    seen = tables(out)
    two = next(t for t in seen if t.get("my-deployment") == "15/15" and len(t) == 3)
    ready = {name: tuple(map(int, r.split("/"))) for name, r in two.items() if name != "my-deployment"}
    assert set(ready) == {"my-deployment--us-west1", "my-deployment--us-east1"}
    assert sum(r for r, _ in ready.values()) == 15 and all(r == d for r, d in ready.values())
    assert any(t.get("my-deployment", "").startswith(("0/15", "1/", "2/", "3/", "4/", "5/", "6/", "7/", "8/")) for t in seen), \
        "the transcript shows the parent converging, not only converged"
    assert 'deployment "my-deployment" successfully rolled out' in out
    assert re.search(r"Recorded by the splitter: 15 of 15 placed", out)
    final = {name: r for name, r in seen[-1].items() if name.startswith("my-deployment")}
    assert final == {"my-deployment": "15/15", "my-deployment--eu-central1": "5/5",
                     "my-deployment--us-east1": "5/5", "my-deployment--us-west1": "5/5"}, final
    assert seen[-1]["web"] == "2/2"
    check_application(out)
    # the third cluster: the DaemonSet on its nodes too, one of db's ordinals in each cluster
    ordinals = rows(blocks(out, "kubectl get statefulsets -l kcp.dev/cluster -o custom-columns=NAME:.metadata.name,"
                                "CLUSTER:.metadata.labels.kcp\\.dev/cluster,FIRST-ORDINAL:.spec.ordinals.start,"
                                "REPLICAS:.spec.replicas")[-1])
    assert ordinals == {"db--eu-central1": ["db--eu-central1", "eu-central1", "0", "1"],
                        "db--us-east1": ["db--us-east1", "us-east1", "1", "1"],
                        "db--us-west1": ["db--us-west1", "us-west1", "2", "1"]}, ordinals
    spread = rows(watched(out, "daemonsets,statefulsets")[-1])
    assert spread["daemonset.apps/log-agent"][1:4] == ["9", "9", "9"]
    assert {name for name in spread if name.startswith("daemonset.apps/log-agent--")} == \
        {f"daemonset.apps/log-agent--{c}" for c in ("eu-central1", "us-east1", "us-west1")}
    assert out.rstrip().endswith("everything stopped; nothing left running")
    assert elapsed < 90, f"the demo took {elapsed:.0f}s"
