"""How many simulated clusters one machine runs and syncs: N `fleetplane cluster simulate`
processes attached to one hub (`fleetplane start`, Cluster controller and push Syncers in its
process), then resident memory and CPU at rest, per cluster and for the hub."""

from __future__ import annotations

import os
import sys
import time

from fleetplane.lab import Lab


def _stat(pid: int) -> tuple[float, float]:
    """(resident MiB, CPU seconds) of a process."""
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return rss, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(clusters: int = 20) -> dict:
    with Lab() as lab:
        hub = lab.start_hub()
        names = [f"c{i}" for i in range(clusters)]
        t0 = time.monotonic()
        sims = lab.simulate_all(names, "--nodes", "2")
        lab.attach(*names)
        lab.wait_attached(names, timeout=300)
        attached_s = time.monotonic() - t0
        time.sleep(5)  # settle, then measure a quiet window
        procs = [hub, *sims]
        before = {p.pid: _stat(p.pid) for p in procs}
        time.sleep(10)
        after = {p.pid: _stat(p.pid) for p in procs}
        sim_pids = [p.pid for p in sims]
        return {
            "clusters": clusters, "all_ready_s": round(attached_s, 1),
            "sim_rss_mib_each": round(sum(after[pid][0] for pid in sim_pids) / clusters, 1),
            "sim_idle_cpu_percent_each": round(sum(after[pid][1] - before[pid][1] for pid in sim_pids) / clusters / 10 * 100, 2),
            "hub_rss_mib": round(after[hub.pid][0], 1),
            "hub_idle_cpu_percent": round((after[hub.pid][1] - before[hub.pid][1]) / 10 * 100, 1),
            "hub_rss_mib_per_cluster": round(after[hub.pid][0] / clusters, 1),
            "machine_memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        }


def render(r: dict) -> list[str]:
    per = r["sim_rss_mib_each"] + r["hub_rss_mib_per_cluster"]
    fits = int(r["machine_memory_gib"] * 1024 * 0.8 / per) if per else 0
    return [
        "## Fleet capacity on one machine", "",
        f"{r['clusters']} simulated clusters (2 nodes each) attached to one hub running the Cluster controller and"
        f" their push Syncers; all Ready {r['all_ready_s']} s after the first started.", "",
        "| measure | value |", "|---|---|",
        f"| resident memory per simulated cluster | {r['sim_rss_mib_each']} MiB |",
        f"| CPU at rest per simulated cluster | {r['sim_idle_cpu_percent_each']} % |",
        f"| hub (controller + Syncers) resident memory | {r['hub_rss_mib']} MiB ({r['hub_rss_mib_per_cluster']} MiB per cluster) |",
        f"| hub CPU at rest | {r['hub_idle_cpu_percent']} % |",
        f"| clusters this machine's memory would hold (80 % of {r['machine_memory_gib']} GiB) | about {fits} |",
    ]


if __name__ == "__main__":
    import json

    print(json.dumps(run(int(sys.argv[1]) if len(sys.argv) > 1 else 20), indent=2))
