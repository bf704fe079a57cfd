"""How many simulated clusters one machine runs and syncs: N simulated clusters attached to one hub
(`fleetplane start`, Cluster controller and push Syncers in its process), then resident memory
and CPU at rest, per cluster and for the hub.

Two ways to simulate the clusters:

* ``processes``: one `fleetplane cluster simulate` process each (about 105-125 MiB each);
* ``multi`` (``--multi``): one `fleetplane cluster simulate --count N` process serving all N as
  logical clusters of one server, each its own endpoint (``/clusters/<name>``), objects and
  kubeconfig; what lets 1,000 clusters fit on one machine.

The simulators and the controller-manager shards run at a lower priority than the hub
(:data:`BACKGROUND_NICE`): they stand in for machines of their own.

Measured at rest (nothing is created; the window is observed, not slept through to assert):
the time from the first simulator start to every Cluster Ready with a healthy ClusterProfile;
resident memory and CPU of the hub and of the simulator(s); the requests per second each server
answers at rest, by verb and resource (from their ``apiserver_request_total``), which is what
polls; with ``--audit``, the hub writes a Metadata-level audit log and the window's requests are
also counted by user (the audit writer costs the hub some CPU: compare CPU without it). With ``--split``, a Deployment of N replicas (Even: one per cluster) created on the hub
and the seconds until it is Available with N/N ready.

    python -m bench.fleet_capacity 60 --multi --split
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import resource
import ssl
import time
import urllib.request
from typing import Any

from fleetplane.lab import Lab, Process

#: the hub as the e2e benchmarks start it, with room for many clusters: all the in-process
#: controllers connect from one address
HUB_FLAGS = ["--splitter-join-grace", "2", "--max-connections-per-client", "0", "--max-connections", "0"]
#: the idle window CPU and requests are measured over (``--window``)
WINDOW_S = 20.0
_SAMPLE = re.compile(r'^apiserver_request_total\{([^}]*)\} ([0-9.e+]+)$')
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def _stat(pid: int) -> tuple[float, float]:
    """(resident MiB, CPU seconds) of a process."""
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return rss, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            out += [int(c) for c in f.read().split()]
    return out


#: the niceness the simulators and controller-manager shards run at: on this one machine they
#: stand in for clusters and controller pods on machines of their own, and at the same priority as
#: the hub eight busy processes would hold it to a fraction of a core (CFS shares a core between
#: runnable threads evenly) while it has a thousand clusters' handshakes waiting
BACKGROUND_NICE = 5


def lower_priority(pids: list[int], nice: int = BACKGROUND_NICE) -> None:
    """Every thread of each process at ``nice`` (threads started later inherit it)."""
    for pid in pids:
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(ProcessLookupError):
                os.setpriority(os.PRIO_PROCESS, int(task), nice)


def controller_managers(hub: Process, count: int = 1, timeout: float = 60.0) -> list[int]:
    """The pids of the hub's ``count`` controller-manager children (its shards); [] if they do
    not all appear (the hub runs its controllers in-process)."""
    assert hub.pid is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = []
        for pid in _children(hub.pid):
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"controller-manager" in f.read().split(b"\0"):
                    found.append(pid)
        if len(found) >= count:
            return found
        time.sleep(0.5)
    return []


#: Clusters applied at once; the next wave once these are Ready
ATTACH_WAVE = 100
#: at most this many simulated clusters per simulator process and per controller-manager shard:
#: a cluster holds about 47 of its simulator's file descriptors and 39 of its shard's (a
#: connection per watch, HTTP/1.1), and this machine's hard RLIMIT_NOFILE is 20,000 per process
CLUSTERS_PER_PROCESS = 300


def processes_for(clusters: int) -> int:
    """How many simulator processes, and controller-manager shards, ``clusters`` are spread over."""
    return -(-clusters // CLUSTERS_PER_PROCESS)


#: what the ``--audit`` log records: who asked for what, once per request
AUDIT_POLICY = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n"


def audited_by_user(path: str, start: float, end: float, top: int = 20) -> dict[str, float]:
    """``user verb resource`` -> requests per second completed (or, watches, started) in the
    wall-clock window [start, end) of the audit log at ``path``."""
    import json

    from fleetplane.apimachinery.metatime import parse_time

    counts: dict[str, int] = {}
    with open(path) as f:
        for line in f:
            ev = json.loads(line)
            at = parse_time(ev.get("stageTimestamp"))
            if at is None or not start <= at < end:
                continue
            if ev.get("verb") == "watch" and ev.get("stage") != "ResponseStarted":
                continue
            if ev.get("verb") != "watch" and ev.get("stage") != "ResponseComplete":
                continue
            ref = ev.get("objectRef") or {}
            what = ref.get("resource") or ev.get("requestURI", "?").split("?")[0]
            if ref.get("subresource"):
                what += "/" + ref["subresource"]
            user = (ev.get("user") or {}).get("username", "?")
            user = re.sub(r"^system:serviceaccount:[^:]+:", "sa:", user)
            key = f"{user} {ev.get('verb')} {what}"
            counts[key] = counts.get(key, 0) + 1
    best = sorted(counts.items(), key=lambda kv: -kv[1])[:top]
    return {k: round(v / (end - start), 2) for k, v in best}


def requests_by_kind(proc: Process) -> dict[str, float]:
    """``verb resource`` -> requests answered so far (``apiserver_request_total`` summed over codes)."""
    req = urllib.request.Request(proc.url + "/metrics", headers={"Authorization": f"Bearer {proc.token}"})
    for attempt in range(5):  # a hub busy with many clusters may be slow to shake hands
        try:
            with urllib.request.urlopen(req, context=ssl.create_default_context(cafile=str(proc.ca)), timeout=60) as resp:
                text = resp.read().decode()
            break
        except OSError:
            if attempt == 4:
                raise
            time.sleep(1)
    out: dict[str, float] = {}
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if not m:
            continue
        labels = dict(_LABEL.findall(m.group(1)))
        what = labels.get("resource") or "(non-resource)"
        if labels.get("subresource"):
            what += "/" + labels["subresource"]
        key = f"{labels.get('verb', '?')} {what}"
        out[key] = out.get(key, 0.0) + float(m.group(2))
    return out


def _scraped(proc: Process, errors: list[str]) -> dict[str, float]:
    """:func:`requests_by_kind`, or nothing (the failure noted in ``errors``) when the process's
    /metrics cannot be read: the rest of the measurement still stands."""
    try:
        return requests_by_kind(proc)
    except OSError as exc:
        errors.append(f"{proc.name}: {exc}")
        return {}


def _rates(before: dict[str, float], after: dict[str, float], seconds: float, top: int = 8) -> dict[str, float]:
    rates = {k: (after.get(k, 0.0) - before.get(k, 0.0)) / seconds for k in after}
    best = sorted(((v, k) for k, v in rates.items() if v > 0), reverse=True)[:top]
    return {k: round(v, 2) for v, k in best}


def split_deployment(lab: Lab, replicas: int, timeout: float) -> float:
    """A Deployment of ``replicas`` created on the hub (Even over the healthy clusters); the
    seconds until the hub reports it Available with every replica ready."""
    manifest = f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: everywhere, namespace: default}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: everywhere}}}}
  template:
    metadata: {{labels: {{app: everywhere}}}}
    spec:
      containers: [{{name: c, image: nginx}}]
"""
    t0 = time.monotonic()
    lab.kubectl("apply", "-f", "-", stdin=manifest, check=True)

    def available() -> bool:
        d = lab.hub.get("/apis/apps/v1/namespaces/default/deployments/everywhere") or {}
        st = d.get("status") or {}
        conds = {c.get("type"): c.get("status") for c in st.get("conditions") or []}
        return st.get("readyReplicas") == replicas and conds.get("Available") == "True"

    lab.wait_until(f"the split Deployment {replicas}/{replicas} ready", available, timeout, interval=1.0)
    return time.monotonic() - t0


def run(clusters: int = 20, *, multi: bool = False, split: bool = False, nodes: int = 2,
        heartbeat: float | None = None, audit: bool = False, window: float = WINDOW_S,
        shards: int = 1, simulators: int = 1) -> dict[str, Any]:
    """With ``multi``: the clusters in ``simulators`` ``--count`` processes, synced by ``shards``
    controller-manager processes (``fleetplane start --controller-manager-shards``)."""
    # both sides hold a few connections per cluster (watches, the Syncers' pools)
    with Lab(open_files=max(20000, 64 * clusters + 4096)) as lab:
        hub_flags = list(HUB_FLAGS)
        if shards > 1:
            hub_flags += ["--controller-manager-shards", str(shards)]
        audit_log = str(lab.root / "audit.log")
        if audit:
            policy = lab.root / "audit-policy.yaml"
            policy.write_text(AUDIT_POLICY)
            hub_flags += ["--audit-log-path", audit_log, "--audit-policy-file", str(policy)]
        hub = lab.start_hub(*hub_flags)
        cms = controller_managers(hub, shards)
        assert hub.pid is not None
        start_rss = {"hub": _stat(hub.pid)[0], "cm": sum(_stat(pid)[0] for pid in cms)}
        flags = ["--nodes", str(nodes)]
        if heartbeat is not None:
            flags += ["--heartbeat-interval", str(heartbeat)]
        t0 = time.monotonic()
        if multi:
            sizes = [clusters // simulators + (1 if j < clusters % simulators else 0) for j in range(simulators)]
            prefixes = ["c"] if simulators == 1 else [f"c{j}" for j in range(simulators)]
            names = [m.name for prefix, size in zip(prefixes, sizes, strict=True)
                     for m in lab.simulate_many(prefix, size, *flags, timeout=600)]
            sims = [lab[prefix] for prefix in prefixes]
        else:
            names = [f"c{i}" for i in range(clusters)]
            sims = lab.simulate_all(names, *flags, timeout=600)
        started_s = time.monotonic() - t0
        lower_priority([p.pid for p in sims if p.pid] + cms)
        # in waves, as a fleet is onboarded: a thousand Clusters applied at once keep every
        # process on this machine saturated for minutes, and kubectl's one-by-one apply with them
        for i in range(0, len(names), ATTACH_WAVE):
            lab.attach(*names[i:i + ATTACH_WAVE])
            lab.wait_attached(names[:i + ATTACH_WAVE], timeout=max(300, ATTACH_WAVE * 3.0))
        attached_s = time.monotonic() - t0
        # settle (the first type imports, discovery caches, the watch caches filled), then a quiet window
        time.sleep(10)
        procs = [hub, *sims]
        pids = [p.pid for p in procs if p.pid] + cms
        # what each process holds before anything is asked of it at rest (the open-files limit)
        fds_at_rest = {p.name: _fds(p.pid) for p in procs if p.pid} | {f"cm{i}": _fds(pid) for i, pid in enumerate(cms)}
        scrape_errors: list[str] = []
        req0 = {p.name: _scraped(p, scrape_errors) for p in procs}
        before = {pid: _stat(pid) for pid in pids}
        t1, wall1 = time.monotonic(), time.time()
        time.sleep(window)
        window, wall2 = time.monotonic() - t1, time.time()
        after = {pid: _stat(pid) for pid in pids}
        req1 = {p.name: _scraped(p, scrape_errors) for p in procs}
        sim_pids = [p.pid for p in sims if p.pid]
        assert hub.pid is not None
        hub_cpu = (after[hub.pid][1] - before[hub.pid][1]) / window * 100
        sim_cpu = sum(after[pid][1] - before[pid][1] for pid in sim_pids) / window * 100
        sim_rss = sum(after[pid][0] for pid in sim_pids)
        sim_req: dict[str, float] = {}
        for p in sims:
            for k, v in _rates(req0[p.name], req1[p.name], window, top=30).items():
                sim_req[k] = round(sim_req.get(k, 0.0) + v, 2)
        out: dict[str, Any] = {
            "clusters": clusters, "mode": "multi" if multi else "processes", "nodes_each": nodes,
            "simulators_ready_s": round(started_s, 1), "all_ready_s": round(attached_s, 1),
            "sim_rss_mib": round(sim_rss, 1), "sim_rss_mib_each": round(sim_rss / clusters, 2),
            "sim_idle_cpu_percent": round(sim_cpu, 2), "sim_idle_cpu_percent_each": round(sim_cpu / clusters, 4),
            "hub_rss_mib": round(after[hub.pid][0], 1),
            "hub_idle_cpu_percent": round(hub_cpu, 2),
            "hub_rss_mib_per_cluster": round(after[hub.pid][0] / clusters, 2),
            "hub_rss_mib_at_start": round(start_rss["hub"], 1),
            "hub_rss_mib_added_per_cluster": round((after[hub.pid][0] - start_rss["hub"]) / clusters, 2),
            "hub_idle_cpu_percent_per_cluster": round(hub_cpu / clusters, 4),
            "hub_fds": _fds(hub.pid), "sim_fds": sum(_fds(pid) for pid in sim_pids),
            "hub_requests_per_s": _rates(req0[hub.name], req1[hub.name], window, top=15),
            "sim_requests_per_s": dict(sorted(sim_req.items(), key=lambda kv: -kv[1])[:8]),
            "machine_memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
            "simulators": len(sims), "sim_fds_max": max(_fds(pid) for pid in sim_pids),
            "fds_at_rest": fds_at_rest, "scrape_errors": scrape_errors,
        }
        if cms:
            cm_cpu = sum(after[pid][1] - before[pid][1] for pid in cms) / window * 100
            cm_rss = sum(after[pid][0] for pid in cms)
            out.update({"cm_shards": len(cms), "cm_rss_mib": round(cm_rss, 1), "cm_idle_cpu_percent": round(cm_cpu, 2),
                        "cm_rss_mib_added_per_cluster": round((cm_rss - start_rss["cm"]) / clusters, 2),
                        "cm_idle_cpu_percent_per_cluster": round(cm_cpu / clusters, 4),
                        "cm_fds": sum(_fds(pid) for pid in cms), "cm_fds_max": max(_fds(pid) for pid in cms)})
        if audit:
            out["hub_requests_per_s_by_user"] = audited_by_user(audit_log, wall1, wall2)
        if split:
            out["split_available_s"] = round(split_deployment(lab, clusters, timeout=max(300, clusters * 1.0)), 1)
            out["hub_rss_mib_after_split"] = round(_stat(hub.pid)[0], 1)
        return out


#: the sizes ``make bench`` measures (``--multi``): per-cluster costs should be flat along them
SERIES = (20, 100, 300, 1000)


def run_series(sizes: tuple[int, ...] = SERIES) -> dict[str, Any]:
    """One ``--multi --split`` run per size, smallest first, over :func:`processes_for` simulator
    processes and controller-manager shards."""
    series: list[dict[str, Any]] = []
    for n in sizes:
        try:
            series.append(run(n, multi=True, split=True, shards=processes_for(n), simulators=processes_for(n)))
        except Exception as exc:  # noqa: BLE001 - a size that fails is reported, the smaller ones kept
            series.append({"clusters": n, "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
            break
    return {"series": series, "open_files_limit": resource.getrlimit(resource.RLIMIT_NOFILE)[1]}


def render(r: dict) -> list[str]:
    if "series" not in r:
        return _render_one(r)
    rows = [x for x in r["series"] if "error" not in x]
    failed = [x for x in r["series"] if "error" in x]
    lines = [
        "## Fleet capacity on one machine (`bench/fleet_capacity.py`)", "",
        "N simulated clusters (2 nodes each) in `cluster simulate --count` processes of at most"
        f" {CLUSTERS_PER_PROCESS} clusters, each cluster its own endpoint, attached to one `fleetplane start` hub"
        " whose controller-manager (the Cluster controller and N push Syncers) runs as one process per"
        f" {CLUSTERS_PER_PROCESS} clusters (`--controller-manager-shards`); the Clusters applied {ATTACH_WAVE} at a time,"
        " each wave once the last is Ready; after all are Ready and 10 s to settle,"
        " a window at rest, then a Deployment of N replicas split one per cluster. Per cluster: each process's"
        " resident memory and CPU divided by N (memory: what it grew by since it started); the smallest size is"
        " the baseline of the ratio (flat is 1.0). A process holds at most 20,000 open files here (hard"
        " RLIMIT_NOFILE), and a cluster about 47 of its simulator's and 39 of its shard's (a connection per watch,"
        " HTTP/1.1): hence the processes. The simulators and shards run at nice"
        f" {BACKGROUND_NICE}, below the hub: they stand in for machines of their own.", "",
        "| clusters | processes: simulators / controller-manager shards | all Ready (s) | hub MiB added per cluster"
        " | hub CPU at rest per cluster (% of a core) | controller-manager MiB added / CPU % per cluster"
        " | simulator MiB / CPU % per cluster | hub fds per cluster | hub requests/s at rest"
        " | split Deployment Available (s) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for x in rows:
        reqs = sum((x.get("hub_requests_per_s") or {}).values())
        lines.append(
            f"| {x['clusters']} | {x.get('simulators', 1)} / {x.get('cm_shards', 1)} | {x['all_ready_s']}"
            f" | {x['hub_rss_mib_added_per_cluster']} | {x['hub_idle_cpu_percent_per_cluster']}"
            f" | {x.get('cm_rss_mib_added_per_cluster', '?')} / {x.get('cm_idle_cpu_percent_per_cluster', '?')}"
            f" | {x['sim_rss_mib_each']} / {x['sim_idle_cpu_percent_each']} | {round(x['hub_fds'] / x['clusters'], 1)}"
            f" | {round(reqs, 1)} | {x.get('split_available_s', '?')} |")
    lo, hi = rows[0], rows[-1]

    def ratio(key: str, per_cluster: bool = False) -> str:
        """The largest size's figure over the smallest's (a total divided by N first)."""
        if not lo.get(key) or key not in hi:
            return "?"
        n = hi["clusters"] / lo["clusters"] if per_cluster else 1
        return f"{hi[key] / lo[key] / n:.2f}"

    lines += [
        f"| ratio per cluster, {hi['clusters']} over {lo['clusters']} | | {ratio('all_ready_s', True)}"
        f" | {ratio('hub_rss_mib_added_per_cluster')} | {ratio('hub_idle_cpu_percent_per_cluster')} | | | | |"
        f" {ratio('split_available_s', True)} |", "",
        f"Goals (issue 16 item 9): hub at rest at most 0.1 % of a core and 5 MiB per cluster, flat to 1,000:"
        f" CPU {'met' if hi['hub_idle_cpu_percent_per_cluster'] <= 0.1 else 'not met'}"
        f" ({hi['hub_idle_cpu_percent_per_cluster']} %), memory"
        f" {'met' if hi['hub_rss_mib_added_per_cluster'] <= 5 else 'not met'} ({hi['hub_rss_mib_added_per_cluster']} MiB"
        f" above the hub's {hi['hub_rss_mib_at_start']} MiB at start), at {hi['clusters']} clusters.",
        *(f"{x['clusters']} clusters failed: {x['error']}" for x in failed),
    ]
    return lines


def _render_one(r: dict) -> list[str]:
    per = r["sim_rss_mib_each"] + r["hub_rss_mib_per_cluster"]
    fits = int(r["machine_memory_gib"] * 1024 * 0.8 / per) if per else 0
    how = ("one `cluster simulate --count N` process" if r.get("mode") == "multi"
           else "one `cluster simulate` process each")
    lines = [
        "## Fleet capacity on one machine", "",
        f"{r['clusters']} simulated clusters (2 nodes each, {how}) attached to one hub running the Cluster"
        f" controller and their push Syncers; all Ready {r['all_ready_s']} s after the first started.", "",
        "| measure | value |", "|---|---|",
        f"| resident memory per simulated cluster | {r['sim_rss_mib_each']} MiB |",
        f"| CPU at rest per simulated cluster | {r['sim_idle_cpu_percent_each']} % |",
        f"| hub (controller + Syncers) resident memory | {r['hub_rss_mib']} MiB ({r['hub_rss_mib_per_cluster']} MiB per cluster) |",
        f"| hub CPU at rest | {r['hub_idle_cpu_percent']} % ({r.get('hub_idle_cpu_percent_per_cluster', '?')} % per cluster) |",
        f"| clusters this machine's memory would hold (80 % of {r['machine_memory_gib']} GiB) | about {fits} |",
    ]
    if "split_available_s" in r:
        lines.append(f"| a Deployment of {r['clusters']} replicas split over all, to Available | {r['split_available_s']} s |")
    return lines


if __name__ == "__main__":
    import json

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("clusters", type=int, nargs="?", default=20)
    ap.add_argument("--multi", action="store_true", help="all clusters in one `cluster simulate --count N` process")
    ap.add_argument("--split", action="store_true", help="then a Deployment of N replicas split over all of them")
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--heartbeat-interval", type=float, default=None, help="the simulated kubelets' lease period")
    ap.add_argument("--audit", action="store_true", help="also count the idle window's hub requests by user")
    ap.add_argument("--window", type=float, default=WINDOW_S, help="seconds of the idle window (default %(default)s)")
    ap.add_argument("--processes", type=int, default=None,
                    help="with --multi: simulator processes and controller-manager shards (default: one per "
                         f"{CLUSTERS_PER_PROCESS} clusters)")
    a = ap.parse_args()
    n = a.processes or processes_for(a.clusters)
    print(json.dumps(run(a.clusters, multi=a.multi, split=a.split, nodes=a.nodes, heartbeat=a.heartbeat_interval,
                         audit=a.audit, window=a.window, shards=n, simulators=n if a.multi else 1), indent=2))
