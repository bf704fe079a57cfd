"""How many simulated clusters one machine runs and syncs: N `fleetplane cluster simulate`
processes attached to one hub (`fleetplane start`, Cluster controller and push Syncers in its
process), then resident memory and CPU at rest, per cluster and for the hub."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from pathlib import Path


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ready(data: Path, port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            ctx = ssl.create_default_context(cafile=str(data / "pki" / "ca.crt"))
            if urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", context=ctx, timeout=1).status == 200:
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"port {port} not ready")


def _stat(pid: int) -> tuple[float, float]:
    """(resident MiB, CPU seconds) of a process."""
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return rss, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(clusters: int = 20) -> dict:
    root = Path(tempfile.mkdtemp(prefix="fleetplane-capacity-"))
    procs: list[subprocess.Popen] = []
    log = open(root / "log", "ab")  # noqa: SIM115
    cli = [sys.executable, "-m", "fleetplane.cli.main", "--log-level", "warning"]
    try:
        hub_dir, hub_port = root / "hub", _port()
        hub = subprocess.Popen([*cli, "start", "--data-dir", str(hub_dir), "--port", str(hub_port)], stdout=log, stderr=log)
        procs.append(hub)
        _ready(hub_dir, hub_port)
        sims = []
        t0 = time.monotonic()
        for i in range(clusters):
            d, p = root / f"c{i}", _port()
            procs.append(subprocess.Popen([*cli, "cluster", "simulate", "--name", f"c{i}", "--data-dir", str(d),
                                           "--port", str(p), "--nodes", "2"], stdout=log, stderr=log))
            sims.append((d, p, procs[-1]))
        for d, p, _ in sims:
            _ready(d, p, 120)
        env = {**os.environ, "KUBECONFIG": str(hub_dir / "admin.kubeconfig")}
        for i, (d, _, _) in enumerate(sims):
            doc = (f"apiVersion: cluster.example.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: c{i}\nspec:\n"
                   "  kubeconfig: |\n" + textwrap.indent((d / "admin.kubeconfig").read_text(), "    "))
            subprocess.run(["kubectl", "apply", "-f", "-"], input=doc, text=True, env=env, check=True, capture_output=True)
        jp = "jsonpath={range .items[*]}{.status.conditions[?(@.type=='Ready')].status}{' '}{end}"
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            out = subprocess.run(["kubectl", "get", "clusters", "-o", jp], text=True, env=env, capture_output=True).stdout
            if out.split().count("True") == clusters:
                break
            time.sleep(1)
        else:
            raise RuntimeError("not every cluster became Ready")
        attached_s = time.monotonic() - t0
        time.sleep(5)  # settle, then measure a quiet window
        before = {p.pid: _stat(p.pid) for p in procs}
        time.sleep(10)
        after = {p.pid: _stat(p.pid) for p in procs}
        sim_pids = [p.pid for _, _, p in sims]
        return {
            "clusters": clusters, "all_ready_s": round(attached_s, 1),
            "sim_rss_mib_each": round(sum(after[pid][0] for pid in sim_pids) / clusters, 1),
            "sim_idle_cpu_percent_each": round(sum(after[pid][1] - before[pid][1] for pid in sim_pids) / clusters / 10 * 100, 2),
            "hub_rss_mib": round(after[hub.pid][0], 1),
            "hub_idle_cpu_percent": round((after[hub.pid][1] - before[hub.pid][1]) / 10 * 100, 1),
            "hub_rss_mib_per_cluster": round(after[hub.pid][0] / clusters, 1),
            "machine_memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        }
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
        log.close()
        shutil.rmtree(root, ignore_errors=True)


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
