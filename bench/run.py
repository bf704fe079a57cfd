"""``make bench``: run every benchmark and write BENCHMARKS.md (figures beside same-run baselines)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import platform
import sys
from pathlib import Path

from . import etcd as etcd_bench
from . import hub as hub_bench
from . import logical_clusters as lclusters_bench
from . import rbac as rbac_bench
from . import stall as stall_bench


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "n/a"


def _reached(phase: dict | None, total: int, key: str = "p100_s") -> str:
    """"12.3 s", or how far a phase got when it timed out."""
    phase = phase or {}
    if phase.get(key) is not None:
        return f"{phase[key]} s"
    ready = phase.get("ready", (phase.get("counts") or {}).get("ready", "?"))
    return f"not reached ({ready} of {total} READY at the timeout)"


def _render_split(sp: dict) -> list[str]:
    n, m, reps = sp["deployments"], sp["clusters"], sp["replicas_each"]
    cold, restart, base = sp.get("cold") or {}, sp.get("restart") or {}, sp.get("baseline") or {}
    marks = " / ".join(str(cold.get(f"p{p}_s", "-")) for p in (50, 90, 99))
    ratio = sp.get("ratio_cold_over_baseline")
    return [
        "## Deployments over the fleet, end to end", "",
        f"{n} Deployments of {reps} replicas (strategy Even) over {m} simulated clusters"
        f" ({sp.get('nodes_per_cluster')} nodes each, `fleetplane cluster simulate`),",
        "through the hub (`fleetplane start`: the Cluster controller with one Syncer per cluster, and the",
        f"splitter), all processes on this machine; the hub started and attached the clusters in {sp.get('fleet_ready_s')} s.",
        "Baseline, measured first on the same cluster processes: each cluster given its share directly (the",
        f"{base.get('deployments', '?')} per-cluster Deployments the splitter makes, in a namespace deleted before the fleet run),",
        f"no hub, splitter or Syncer; {sp.get('baseline_same_split', '?')} of the {n} Deployments were then split by the"
        " splitter exactly so.", "",
        "| run | time | notes |", "|---|---|---|",
        f"| cold start: first create on the hub to every Deployment READY | {_reached(cold, n)} |"
        f" {n} creates took {sp.get('create_s')} s; every child existed at {cold.get('placed_s', '-')} s;"
        f" 50 / 90 / 99 % READY at {marks} s |",
        f"| after a hub restart: serving | {sp.get('restart_serving_s')} s | SIGTERM, then `fleetplane start` on the same data |",
        f"| after a hub restart: every Deployment READY | {_reached(restart, n)} | from the new process's start |",
        f"| after a hub restart: children rewritten | {sp.get('restart_children_rewritten')} of {sp.get('children')} |"
        " children whose generation, replicas or cluster changed (goal: 0) |",
        f"| baseline: the same Deployments directly in the clusters, to READY | {_reached(base, base.get('deployments', '?'))} |"
        f" {base.get('deployments', '?')} creates took {base.get('create_s', '-')} s |",
        f"| ratio: cold start over baseline | {ratio if ratio is not None else 'n/a'} | the fleet's cost over the clusters' own |",
    ]


def _render_api(api: dict, minimal: dict | None, raw: dict, naive: dict) -> list[str]:
    """The hub's API beside the minimal server (same client, same run) and the raw store."""
    lines = ["## Hub API against a minimal server and the raw store", ""]
    if minimal and "cpu_us" in api:
        cpu, mcpu, wcpu, mwcpu = api["cpu_us"], minimal["cpu_us"], api["client_cpu_us"], minimal["client_cpu_us"]
        lines += [
            f"Load from `wrk` (C; {api.get('client', 'wrk')}, bearer token), {api.get('rounds', '?')} rounds"
            " alternating the hub (`fleetplane start`) and the minimal server (`bench/minimal_server.py`: uvicorn +"
            " uvloop + httptools with the hub's TLS setup, JSON decoded, uid and timestamp added, written durably"
            " through SQLiteStore; gets and lists from memory), medians. CPU per request: the server's process and"
            " its store writer (utime + stime from /proc; not the controller-manager process, a client of the API)"
            " and wrk's own, over the requests answered.", "",
            "| operation | hub per second | minimal per second | ratio | hub CPU per request (µs) |"
            " minimal CPU per request (µs) | ratio | wrk CPU per request, hub / minimal (µs) |"
            " hub p50 / p99 (ms) | minimal p50 / p99 (ms) |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for op, label in (("create", "ConfigMap create (~300 bytes)"),
                          ("deploy", "Deployment create (the imported CRD, full schema)"),
                          ("get", "ConfigMap get"), ("list", "list of 100 ConfigMaps")):
            if op not in api or op not in minimal:
                continue
            h, m = api[f"{op}_lat"], minimal[f"{op}_lat"]
            lines.append(f"| {label} | {api[op]:.0f} | {minimal[op]:.0f} | {_ratio(api[op], minimal[op])} |"
                         f" {cpu[op]:.0f} | {mcpu[op]:.0f} | {_ratio(cpu[op], mcpu[op])} | {wcpu[op]:.0f} / {mwcpu[op]:.0f} |"
                         f" {h['p50']:.1f} / {h['p99']:.1f} | {m['p50']:.1f} / {m['p99']:.1f} |")
        quiet = api.get("deploy_alone")
        if quiet and "deploy" in quiet:
            q = quiet["deploy_lat"]
            lines.append(f"| Deployment create on a hub with no controllers (the request alone) | {quiet['deploy']:.0f} |"
                         f" {minimal['deploy']:.0f} | {_ratio(quiet['deploy'], minimal['deploy'])} |"
                         f" {quiet['cpu_us']['deploy']:.0f} | {mcpu['deploy']:.0f} | {_ratio(quiet['cpu_us']['deploy'], mcpu['deploy'])} |"
                         f" {quiet['client_cpu_us']['deploy']:.0f} / {mwcpu['deploy']:.0f} | {q['p50']:.1f} / {q['p99']:.1f} |"
                         f" {minimal['deploy_lat']['p50']:.1f} / {minimal['deploy_lat']['p99']:.1f} |")
        after = api.get("after_cpu_us") or {}
        if after:
            lines += ["", "After each run, until the hub was idle again (its controllers acting on what was created), the"
                      " hub used per request answered: " + ", ".join(f"{op} {us:.0f} µs" for op, us in after.items())
                      + " (the splitter places each Deployment: its annotation, status and an Event, with no clusters)."]
        goal = cpu["create"] <= 1.25 * mcpu["create"]
        dcpu = quiet["cpu_us"]["deploy"] if quiet and "deploy" in quiet else cpu.get("deploy", 1e9)
        lines += ["", f"Goals (issue 16): hub CPU per ConfigMap create at most 1.25x the minimal server's:"
                  f" {'met' if goal else 'not met'} ({_ratio(cpu['create'], mcpu['create'])}x);"
                  f" per Deployment create (the request alone) at most 600 µs: {'met' if dcpu <= 600 else 'not met'}"
                  f" ({dcpu:.0f} µs).", ""]
    lines += [
        "Against the raw store (same durable writes in process, 32 concurrent callers, no HTTP):", "",
        "| operation | API | raw SQLiteStore | ratio | SQLite alone, one transaction per write | ratio |",
        "|---|---|---|---|---|---|",
        f"| create, per second | {api['create']:.0f} | {raw['create']:.0f} | {_ratio(api['create'], raw['create'])} | {naive['create']:.0f} | {_ratio(api['create'], naive['create'])} |",
        f"| create latency p50 / p99 (ms) | {api['create_lat']['p50']:.1f} / {api['create_lat']['p99']:.1f} | {raw['create_lat']['p50']:.1f} / {raw['create_lat']['p99']:.1f} | | {naive['create_lat']['p50']:.2f} / {naive['create_lat']['p99']:.2f} | |",
        f"| get, per second | {api['get']:.0f} | {raw['get']:.0f} | {_ratio(api['get'], raw['get'])} | | |",
        f"| get latency p50 / p99 (ms) | {api['get_lat']['p50']:.1f} / {api['get_lat']['p99']:.1f} | {raw['get_lat']['p50']:.1f} / {raw['get_lat']['p99']:.1f} | | | |",
        f"| list of 100 objects, per second | {api['list']:.1f} | {raw['list']:.1f} | {_ratio(api['list'], raw['list'])} | | |",
        "",
        f"Goal: API create throughput at least half of the raw store's: {'met' if api['create'] >= raw['create'] / 2 else 'not met'}"
        f" ({_ratio(api['create'], raw['create'])}). The raw store commits groups of writes with one fsync each",
        "and pays no HTTP, TLS, JSON, validation or managedFields; SQLite committing each write on its own is the",
        f"baseline of a naive embedded store; the API reaches {_ratio(api['create'], naive['create'])} of it.",
        "",
    ]
    return lines


def _watch_scale_rows(rows: list[dict]) -> list[str]:
    """bench.hub.watch_scale: hub CPU per delivery, memory per watcher, p99 (item 6's goals)."""
    if not rows:
        return []
    out = ["| watchers (clients in 2 processes) | events | hub CPU per delivery (us, goal <= 40) | client CPU per delivery (us) |"
           " hub KiB per watcher (goal < 40) | delivery p50 / p99 (ms, goal p99 < 300 at 5000) | load average |",
           "|---|---|---|---|---|---|---|"]
    for w in rows:
        out.append(f"| {w['watchers']} | {w['events']} | {w['hub_cpu_us_per_delivery']:.1f} | {w['client_cpu_us_per_delivery']:.1f} |"
                   f" {w['rss_kib_per_watcher']:.1f} | {w['p50']:.0f} / {w['p99']:.0f} | {w['load']:.1f} |")
    return [*out, ""]


def _selective_rows(sel: dict | None) -> list[str]:
    """bench.hub.selective_watches: the watch cache's dispatch index, against its own absence."""
    if not sel:
        return []
    alone = sel["alone_us_per_write"]
    over = {k: sel[f"{k}_us_per_write"] - alone for k in ("indexed", "unindexed")}
    return [f"{sel['watchers']} watches on one namespace, each selecting its own label value (as a thousand Syncers"
            " each watch the objects labelled with their cluster), one write per watch, each delivered once:"
            " the hub's CPU per write, over the same writes with no watch open.", "",
            "| selectors | hub CPU per write (us) | over the writes alone (us) |", "|---|---|---|",
            f"| no watch open | {alone:.0f} | - |",
            f"| `fleet=c<i>` (the watch cache offers each event to the watches of its label value) | {sel['indexed_us_per_write']:.0f} | {over['indexed']:.0f} |",
            f"| `fleet in (c<i>,none)` (the same selection, not indexed: every watch offered every event) | {sel['unindexed_us_per_write']:.0f} | {over['unindexed']:.0f} |",
            f"| ratio, indexed over not indexed | {_ratio(sel['indexed_us_per_write'], sel['unindexed_us_per_write'])} | |", "",
            "CPU is read in clock ticks (10 ms over the 1,000 writes: 10 us per write), so a cost under that"
            " reads as 0 or as noise.", ""]


def render(r: dict, machine: str, when: str) -> str:
    raw, naive, api, paced, watch = r["raw"], r["naive"], r["api"], r["paced"], r["watch"]
    lines = [
        "# Benchmarks",
        "",
        f"Measured {when} on {machine} by `make bench` (`bench/`). Machines are noisy: compare the ratios,",
        "each figure against a baseline measured in the same run. The client runs on the same two cores.",
        "",
        *_render_api(api, r.get("minimal"), raw, naive),
        "## Mutating latency at a fixed rate (open loop)",
        "",
        f"ConfigMap creates started every 1/rate s whatever the previous did (aiohttp, keep-alive HTTPS) on a"
        f" hub of its own, after {hub_bench.PACED_WARMUP_S:g} s at the same rate not counted (the hub serving its"
        " controller-manager's start).",
        "",
        "| target writes/s | achieved | p50 (ms) | p99 (ms) | goal |",
        "|---|---|---|---|---|",
        f"| {paced['target']} | {paced['achieved']:.0f} | {paced['p50']:.1f} | {paced['p99']:.1f} | p99 under 25 ms |",
        "",
        "## Watch fan-out",
        "",
        "| watchers | events | delivery p50 (ms) | delivery p99 (ms) | last watcher p50 (ms) |",
        "|---|---|---|---|---|",
        f"| {watch['watchers']} | {watch['events']} | {watch['p50']:.1f} | {watch['p99']:.1f} | {watch['last_p50']:.1f} |",
        "",
        "Latency from a write's request to each watcher reading the event (all on one machine).",
        "",
        *_watch_scale_rows(r.get("watch_scale") or []),
        *_selective_rows(r.get("selective_watches")),
        "## Start-up",
        "",
        (f"`fleetplane start` on an empty data dir answers `/readyz` 200 after {r['startup_seconds']:.2f} s"
         " (goal: within 1 s), measured from the process start, certificates generated included."
         if "startup_seconds" in r else "Start-up time was not measured in this run."),
        "",
    ]
    if "lclusters" in r:
        lines += lclusters_bench.render(r["lclusters"])
    if r.get("measured"):
        lines += ["", "When each part was last measured (`python -m bench.run --only=PART` reruns one): "
                  + "; ".join(f"{k} {v}" for k, v in sorted(r["measured"].items())) + "."]
    if "etcd" in r:
        lines += ["", *etcd_bench.render(r["etcd"])]
    if "rbac" in r:
        lines += ["", *rbac_bench.render(r["rbac"])]
    if "webhook" in r:
        from . import webhook as webhook_bench

        lines += ["", *webhook_bench.render(r["webhook"])]
    if "stall" in r:
        lines += ["", *stall_bench.render(r["stall"])]
    if "fairness" in r:
        from . import fairness as fairness_bench

        lines += ["", *fairness_bench.render(r["fairness"])]
    if "placement" in r:
        pl = r["placement"]
        lines += [
            "", "## Placement decisions", "",
            f"{pl['clusters']} clusters ({pl['eligible']} eligible), {pl['replicas']} replicas, required affinity + spread with"
            f" maxSkew; {pl['decisions']} decisions per case. Goal: p99 under {pl['goal_p99_ms']:.0f} ms;"
            f" Karmada's published p99 is {pl['karmada_p99_ms_at_100_clusters']:.0f} ms at 100 clusters.", "",
            "| case | wall p50 (ms) | wall p99 (ms) | CPU p50 (ms) | CPU p99 (ms) |", "|---|---|---|---|---|",
            *[f"| {case} | {pl[case]['p50_ms']:.2f} | {pl[case]['p99_ms']:.2f} | {pl[case]['cpu_p50_ms']:.2f} | {pl[case]['cpu_p99_ms']:.2f} |"
              for case in ("steady", "profile_changed", "cold", "even") if case in pl],
            "",
            "steady: same fleet and policy (a scale or a child's status change); profile_changed: one ClusterProfile",
            "changed; cold: everything rebuilt; even: an even split with no policy. Wall time includes whatever else",
            "the machine was doing; CPU time is the decision's own.",
        ]
    if "split" in r:
        lines += ["", *_render_split(r["split"])]
    if "cronjobs" in r:
        cj = r["cronjobs"]
        b, f = cj.get("baseline") or {}, cj.get("fleet") or {}
        lines += ["", "## CronJobs over the fleet: scheduling lag", "",
                  f"{cj['cronjobs']} CronJobs `* * * * *` firing at the same minute: from the scheduled time to the Job"
                  f" seen in a member cluster ({cj['clusters']} simulated clusters; `bench/cronjobs.py`).", "",
                  "| run | p50 | p90 | p99 | max | jobs |", "|---|---|---|---|---|---|",
                  f"| baseline: the cluster's own CronJob controller | {b.get('p50_s')} s | {b.get('p90_s')} s | {b.get('p99_s')} s"
                  f" | {b.get('max_s')} s | {b.get('jobs')} of {b.get('of')} |",
                  f"| fleet: hub CronJob controller, placement, Syncer down | {f.get('p50_s')} s | {f.get('p90_s')} s |"
                  f" {f.get('p99_s')} s | {f.get('max_s')} s | {f.get('jobs')} of {f.get('of')} |",
                  f"| ratio p99 fleet over baseline | | | {cj.get('ratio_p99')} | | |"]
    if "capacity" in r:
        from . import fleet_capacity

        lines += ["", *fleet_capacity.render(r["capacity"])]
    if "services" in r:
        from . import services as services_bench

        lines += ["", *services_bench.render(r["services"])]
    if "syncer" in r:
        y = r["syncer"]
        lines += [
            "", "## Syncer", "",
            f"{y['clusters']} clusters ({y['backend']}), {y['objects']} objects at {y['target_rate']:.0f}/s, open loop."
            " Karmada's published push-mode p99 is 1,298 ms; the aim is a p99 under 250 ms.", "",
            "| path | p50 (ms) | p99 (ms) | max (ms) | achieved/s |", "|---|---|---|---|---|",
            f"| hub write -> object in the cluster | {y['down']['p50']:.1f} | {y['down']['p99']:.1f} | {y['down']['max']:.1f} | {y['down']['achieved_rate']} |",
            f"| status in the cluster -> hub | {y['up']['p50']:.1f} | {y['up']['p99']:.1f} | {y['up']['max']:.1f} | {y['up']['achieved_rate']} |",
        ]
    if "sim" in r:
        s = r["sim"]
        lines += [
            "", "## Simulated physical cluster (`fleetplane cluster simulate`, 10 nodes)", "",
            "| measure | value |", "|---|---|",
            f"| pods brought to Ready per second (a 300-replica Deployment) | {s['pods_ready_per_second']:.0f} |",
            f"| server CPU per pod (API writes of the controllers, scheduler, kubelet) | {s['server_cpu_seconds_per_pod_ms']:.1f} ms |",
            f"| start-up to ready | {s['startup_seconds']:.2f} s |",
            f"| resident memory at rest / with 300 pods | {s['rss_mib_idle']:.0f} MiB / {s['rss_mib_with_pods']:.0f} MiB |",
            f"| CPU at rest | {s['idle_cpu_percent']:.1f} % |",
        ]
    if "limits" in r:
        from . import limits as limits_bench

        lines += ["", *limits_bench.render(r["limits"])]
    if "policy" in r:
        from . import policy as policy_bench

        lines += ["", *policy_bench.render(r["policy"])]
    if "access" in r:
        a = r["access"]
        lines += [
            "", "## Credential library (`fleetplane.access`)", "",
            "| measure | value | baseline | ratio |", "|---|---|---|---|",
            f"| credential fetch, warm cache, p50 | {a['warm_cache_us']['p50']:.1f} µs | cold exec of a `/bin/sh` plugin, p50 {a['cold_exec_ms']['p50']:.2f} ms | {a['cold_over_warm_p50']:.0f}× faster |",
            f"| credential fetch, warm cache, async p50 | {a['warm_cache_async_us']['p50']:.1f} µs | | |",
            f"| client config builds for {a['n_profiles']} ClusterProfiles | {a['config_builds_per_second']:.0f} per second | | |",
            "",
            "A cold fetch runs the exec plugin (KEP-541 protocol); a warm one returns the cached credential until",
            "its expirationTimestamp. Real plugins (cloud CLIs) take 100 ms to seconds, so the cache matters more.",
        ]
    if "multicluster" in r:
        from . import multicluster as multicluster_bench

        lines += ["", *multicluster_bench.render(r["multicluster"])]
    if "commit" in r:
        from . import commit as commit_bench

        lines += ["", *commit_bench.render(r["commit"])]
    if "rollout" in r:
        from . import rollout as rollout_bench

        lines += ["", *rollout_bench.render(r["rollout"])]
    return "\n".join(lines) + "\n"


def collect(quick: bool, only: set[str] | None) -> dict:
    """Run the benchmarks (``only``: just these parts; the others keep last run's results)."""
    results: dict = {}
    if only:
        with contextlib.suppress(OSError, ValueError):
            results = json.loads(Path("bench/results.json").read_text())

    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    measured = results.setdefault("measured", {})

    def want(part: str) -> bool:
        if not only or part in only:
            measured[part] = now
            return True
        return False

    if want("hub"):
        results.update(asyncio.run(hub_bench.run(quick=quick)))
    if want("lclusters"):
        # 100,000 logical clusters (issue 16 item 8): at 700/s some 2.5 minutes of creation, 5 in all
        results["lclusters"] = (lclusters_bench.run(10_000, 4, 2, 60) if quick else
                                lclusters_bench.run(100_000, 15, 2, 60))
    if want("etcd"):
        results["etcd"] = asyncio.run(etcd_bench.run(quick=quick))
    if want("rbac"):
        results["rbac"] = asyncio.run(rbac_bench.run(quick=quick))
    if want("stall"):
        results["stall"] = asyncio.run(stall_bench.run(quick=quick))
    if want("fairness"):
        from . import fairness as fairness_bench

        results["fairness"] = fairness_bench.run(quick=quick)
    if want("sim"):
        from . import sim as sim_bench

        results["sim"] = sim_bench.run()
    if want("syncer"):
        from . import syncer as syncer_bench

        # the setting: 100 objects/s over 10 simulated clusters (quick: 3 hub processes as clusters)
        results["syncer"] = asyncio.run(syncer_bench.run(quick=True) if quick else
                                        syncer_bench.run(clusters=10, objects=1000, backend="sim"))
    if want("placement"):
        from . import placement as placement_bench

        results["placement"] = placement_bench.run()
    if want("cronjobs"):
        from . import cronjobs as cronjobs_bench

        results["cronjobs"] = asyncio.run(cronjobs_bench.run(20 if quick else 100))
    if want("split"):
        from . import split as split_bench

        results["split"] = split_bench.run(100 if quick else 1000, 3 if quick else 10, 3)
    if want("services"):
        from . import services as services_bench

        results["services"] = asyncio.run(services_bench.run(20 if quick else 100, 3))
    if want("capacity"):
        from . import fleet_capacity

        results["capacity"] = fleet_capacity.run_series((5,) if quick else fleet_capacity.SERIES)
    if want("policy"):
        from . import policy as policy_bench

        results["policy"] = asyncio.run(policy_bench.run(quick=quick))
    if want("access"):
        from . import access as access_bench

        results["access"] = access_bench.run()
    if want("multicluster"):
        from . import multicluster as multicluster_bench

        results["multicluster"] = asyncio.run(multicluster_bench.run(20 if quick else 100))
    if want("webhook"):
        from . import webhook as webhook_bench

        results["webhook"] = asyncio.run(webhook_bench.run(quick=quick))
    if want("limits"):
        from . import limits as limits_bench

        results["limits"] = limits_bench.run(quick=quick)
    if want("commit"):
        from . import commit as commit_bench

        results["commit"] = asyncio.run(commit_bench.run(rounds=3 if quick else 5))
    if want("rollout"):
        from . import rollout as rollout_bench

        results["rollout"] = rollout_bench.run(10, 1 if quick else 3)
    return results


def main() -> int:
    quick = "--quick" in sys.argv
    only = {a.split("=", 1)[1] for a in sys.argv if a.startswith("--only=")}
    only = {p for o in only for p in o.split(",")} or None
    results = collect(quick, only)
    Path("bench/results.json").write_text(json.dumps(results, indent=2) + "\n")
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    machine = hub_bench.machine() + f", {platform.system()} {platform.release()}"
    text = render(results, machine, when)
    Path("BENCHMARKS.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
