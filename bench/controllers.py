"""Where the controllers run, measured: ``fleetplane start --controllers=separate`` (a
controller-manager process) against ``in-process`` (the server's own event loop).

``python -m bench.controllers [--modes in-process,separate] [--deployments 300] [--clusters 5]``:

- ``split``: N Deployments x 3 replicas over M simulated clusters (bench/split.py's cold phase):
  wall time to all READY, the CPU seconds of the hub's process and of the controller-manager's,
  and the hub's event-loop lag as a client sees it (a small GET back to back from another thread:
  its latency's p50, p99 and max);
- ``idle``: the hub's ConfigMap create and get throughput with its controllers idle (no clusters),
  through wrk (a C load generator: 2 threads, 32 connections, 10 s each), and the hub's CPU per
  request.

A mode of ``main`` runs the same with the flag left out (a tree without the flag: set PYTHONPATH).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from fleetplane.lab import Lab, Process

from .split import (
    HUB_FLAGS,
    JOIN_GRACE,
    KUBELET_DELAY,
    NAMESPACE,
    _all_ready,
    _Api,
    _create_all,
    _deployment,
    _name,
    _nodes_ready,
)
from .stall import cpu_seconds


def controller_manager_pid(hub: Process) -> int | None:
    assert hub.proc is not None
    for task in Path(f"/proc/{hub.proc.pid}/task").iterdir():
        try:
            kids = [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue
        for kid in kids:
            with open(f"/proc/{kid}/cmdline", "rb") as f:
                if b"controller-manager" in f.read():
                    return kid
    return None


def _cpu(pid: int | None) -> float:
    return cpu_seconds(pid) if pid else 0.0


class LagProbe:
    """GET /version back to back on one kept-alive connection, in a thread of its own."""

    def __init__(self, hub: Process) -> None:
        import threading

        self.hub = hub
        self.latencies: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    async def _run(self) -> None:
        async with _Api(self.hub) as api:
            while not self._stop.is_set():
                t0 = time.perf_counter()
                await api.request("GET", "/version")
                self.latencies.append(time.perf_counter() - t0)
                await asyncio.sleep(0.02)

    def __enter__(self) -> LagProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(30)

    def summary(self) -> dict[str, float]:
        s = sorted(self.latencies) or [0.0]
        return {"samples": len(s), "p50_ms": round(s[len(s) // 2] * 1000, 1),
                "p99_ms": round(s[min(len(s) - 1, int(len(s) * 0.99))] * 1000, 1), "max_ms": round(s[-1] * 1000, 1)}


def _mode_flags(mode: str) -> list[str]:
    return [] if mode == "main" else [f"--controllers={mode}"]


def split(mode: str, deployments: int, clusters: int, replicas: int, timeout: float) -> dict[str, Any]:
    out: dict[str, Any] = {"mode": mode, "deployments": deployments, "clusters": clusters, "replicas": replicas}
    with Lab() as lab:
        names = [f"c{i:02d}" for i in range(clusters)]
        nodes = max(2, -(-deployments * replicas * 3 // (2 * clusters * 110)))
        sims = lab.simulate_all(names, "--nodes", str(nodes), "--kubelet-delay", KUBELET_DELAY)
        lab.wait_until("nodes Ready", lambda: all(_nodes_ready(p, nodes) for p in sims))
        hub = lab.start_hub(*HUB_FLAGS, *_mode_flags(mode))
        lab.attach(*names, location="lab", resources=["deployments.apps"])
        lab.wait_attached(names, timeout=180)
        lab.wait_served("apps/v1", "deployments", timeout=180)
        time.sleep(JOIN_GRACE + 0.5)
        assert hub.proc is not None
        child = controller_manager_pid(hub)
        hub0, child0 = _cpu(hub.proc.pid), _cpu(child)

        async def cold() -> dict:
            async with _Api(hub) as api:
                path = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments"
                t0 = time.monotonic()
                await _create_all([(api, path, _deployment(_name(i), replicas)) for i in range(deployments)])
                return await _all_ready(api, deployments, timeout, 0, t0)

        with LagProbe(hub) as probe:
            t = time.monotonic()
            ready = asyncio.run(cold())
            wall = time.monotonic() - t
        out.update(wall_s=round(wall, 1), ready=ready, hub_cpu_s=round(_cpu(hub.proc.pid) - hub0, 1),
                   controller_manager_cpu_s=round(_cpu(child) - child0, 1), lag=probe.summary())
    return out


CREATE_LUA = """
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("id", threads)
end
local n = 0
local token = os.getenv("TOKEN")
request = function()
  local prefix = "cm-" .. id .. "-"
  n = n + 1
  local body = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"' .. prefix .. n .. '"},"data":{"k":"v"}}'
  return wrk.format("POST", nil, {["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. token}, body)
end
"""

GET_LUA = """
local token = os.getenv("TOKEN")
request = function()
  return wrk.format("GET", nil, {["Authorization"] = "Bearer " .. token})
end
"""


def _wrk(url: str, script: str, token: str, seconds: int = 10) -> float:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(script)
    try:
        res = subprocess.run(["wrk", "-t2", "-c32", f"-d{seconds}s", "-s", f.name, url], capture_output=True,
                             text=True, env={**os.environ, "TOKEN": token}, timeout=seconds + 60)
    finally:
        os.unlink(f.name)
    m = re.search(r"Requests/sec:\s+([\d.]+)", res.stdout)
    if not m or "Non-2xx" in res.stdout:
        raise RuntimeError(f"wrk: {res.stdout}\n{res.stderr}")
    return float(m.group(1))


def idle(mode: str) -> dict[str, Any]:
    out: dict[str, Any] = {"mode": mode}
    with Lab() as lab:
        hub = lab.start_hub(*_mode_flags(mode))
        assert hub.proc is not None
        time.sleep(8)  # the controllers started and synced (nothing to do: no clusters)
        child = controller_manager_pid(hub)
        base = f"{hub.url}/api/v1/namespaces/default/configmaps"
        hub.request("POST", "/api/v1/namespaces/default/configmaps",
                    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe"}, "data": {"k": "v"}})
        for what, url, script in (("create", base, CREATE_LUA), ("get", base + "/probe", GET_LUA)):
            c0, k0 = _cpu(hub.proc.pid), _cpu(child)
            rps = _wrk(url, script, hub.token)
            c1, k1 = _cpu(hub.proc.pid), _cpu(child)
            out[what] = {"per_s": round(rps), "hub_cpu_us": round((c1 - c0) / (rps * 10) * 1e6),
                         "controller_manager_cpu_s": round(k1 - k0, 2)}
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.controllers")
    p.add_argument("--modes", default="in-process,separate")
    p.add_argument("--parts", default="idle,split")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--deployments", type=int, default=300)
    p.add_argument("--clusters", type=int, default=5)
    p.add_argument("--replicas", type=int, default=3)
    p.add_argument("--timeout", type=float, default=600.0)
    args = p.parse_args(argv)
    if "idle" in args.parts and not shutil.which("wrk"):
        raise SystemExit("the idle part needs wrk (apt-get install wrk)")
    results = []
    for _ in range(args.rounds):  # interleaved: the machine's load moves
        for mode in args.modes.split(","):
            if "idle" in args.parts:
                results.append({"part": "idle", **idle(mode)})
                print(json.dumps(results[-1]), file=sys.stderr, flush=True)
            if "split" in args.parts:
                results.append({"part": "split", **split(mode, args.deployments, args.clusters, args.replicas,
                                                         args.timeout)})
                print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
