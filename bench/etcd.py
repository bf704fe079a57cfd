"""The hub on etcd, beside raw etcd in the same run: API create/get/list against raw puts and
ranges from the same client library (etcd3aio) with the same payloads; one, two and three
hub replicas on one etcd; watch fan-out with 1,000 watchers spread over three replicas.

``run()`` returns the figures, ``render(results)`` the BENCHMARKS.md section. etcd comes from
the Debian package ``etcd-server``; without it the section says so.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import aiohttp
import orjson

from fleetplane.lab import free_port

from .hub import HubProcess, _run_concurrent, payload, percentiles

CONCURRENCY = 32




def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return 0.0


class CPU:
    """CPU used by groups of processes over a phase, in cores (1.0 = one core busy)."""

    def __init__(self, groups: dict[str, list[int]]) -> None:
        self.groups = groups
        self.t0 = time.perf_counter()
        self.start = {g: sum(cpu_seconds(p) for p in pids) for g, pids in groups.items()}

    def cores(self) -> dict[str, float]:
        wall = time.perf_counter() - self.t0
        return {g: (sum(cpu_seconds(p) for p in pids) - self.start[g]) / wall for g, pids in self.groups.items()}


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "n/a"


class Etcd:
    """One etcd member in a temporary directory (on disk: its fsyncs are part of the figures)."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="fleetplane-bench-etcd-"))
        self.port, peer = free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [shutil.which("etcd") or "etcd", "--name", "bench", "--data-dir", str(self.dir / "data"),
             "--listen-client-urls", self.url, "--advertise-client-urls", self.url,
             "--listen-peer-urls", f"http://127.0.0.1:{peer}", "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
             "--initial-cluster", f"bench=http://127.0.0.1:{peer}", "--log-level", "error",
             "--quota-backend-bytes", str(4 * 1024**3)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=1) as r:
                    if json.loads(r.read()).get("health") == "true":
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("etcd did not start")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(20)
        shutil.rmtree(self.dir, ignore_errors=True)


def start_replicas(endpoints: str, n: int) -> list[HubProcess]:
    """``fleetplane start --storage etcd`` replicas sharing one CA and token."""
    args = ("--storage", "etcd", "--etcd-endpoints", endpoints)
    first = HubProcess(*args)
    return [first, *(HubProcess(*args, share_from=first.data_dir) for _ in range(n - 1))]


# -- raw etcd ---------------------------------------------------------------------------------


async def raw_etcd(endpoints: str, n: int, concurrency: int) -> dict:
    """Puts, single-key ranges and a prefix range with etcd3aio, the client the store uses."""
    from etcd3aio import Etcd3Client, prefix_range_end

    prefix = b"/raw/configmaps/root/default/"
    bodies = [orjson.dumps(payload(i)) for i in range(n)]
    async with Etcd3Client([endpoints.removeprefix("http://")]) as client:
        kv = client.kv

        async def put(i: int):
            await kv.put(prefix + f"cm-{i}".encode(), bodies[i])

        rate, lat = await _run_concurrent(n, concurrency, put)

        async def get(i: int):
            await kv.get(prefix + f"cm-{i}".encode())

        grate, glat = await _run_concurrent(n, concurrency, get)
        t0 = time.perf_counter()
        for _ in range(20):
            await kv.get(prefix, range_end=prefix_range_end(prefix))
        lrate = 20 / (time.perf_counter() - t0)
    return {"create": rate, "create_lat": percentiles(lat), "get": grate, "get_lat": percentiles(glat), "list": lrate}


# -- the API ----------------------------------------------------------------------------------


async def api(hubs: list[HubProcess], n: int, concurrency: int, namespace: str, lists: int = 20,
              etcd_pid: int | None = None) -> dict:
    """Creates, then gets, of ``n`` ConfigMaps by ``concurrency`` clients spread over ``hubs``;
    then lists of all of them. ``cpu``: cores used by etcd, the replicas and the load
    generator while creating."""
    groups = {"etcd": [etcd_pid] if etcd_pid else [], "replicas": [h.proc.pid for h in hubs], "client": [os.getpid()]}
    sessions = [h.session(concurrency) for h in hubs]
    try:
        first = hubs[0]
        async with sessions[0].post(first.url + "/api/v1/namespaces",
                                    data=orjson.dumps({"metadata": {"name": namespace}})) as r:
            assert r.status == 201, await r.text()
        bases = [f"{h.url}/api/v1/namespaces/{namespace}/configmaps" for h in hubs]
        bodies = [orjson.dumps(payload(i)) for i in range(n)]

        async def create(i: int):
            k = i % len(hubs)
            async with sessions[k].post(bases[k], data=bodies[i]) as r:
                assert r.status == 201, await r.text()
                await r.read()

        cpu = CPU(groups)
        rate, lat = await _run_concurrent(n, concurrency, create)
        create_cpu = cpu.cores()

        async def get(i: int):
            k = (i + 1) % len(hubs)  # read through another replica than the one that wrote
            async with sessions[k].get(f"{bases[k]}/cm-{i}") as r:
                assert r.status == 200
                await r.read()

        grate, glat = await _run_concurrent(n, concurrency, get)
        t0 = time.perf_counter()
        for j in range(lists):
            async with sessions[j % len(hubs)].get(bases[j % len(hubs)]) as r:
                await r.read()
        lrate = lists / (time.perf_counter() - t0)
    finally:
        for s in sessions:
            await s.close()
    return {"create": rate, "create_lat": percentiles(lat), "get": grate, "get_lat": percentiles(glat), "list": lrate,
            "create_cpu": create_cpu}


async def watch_fanout(hubs: list[HubProcess], watchers: int, events: int) -> dict:
    """``watchers`` watches spread over the replicas; writes through the first one; latency from
    each write's request to each watcher reading the event."""
    ns = "fanout"
    sessions = [h.session(watchers // len(hubs) + 8) for h in hubs]
    try:
        async with sessions[0].post(hubs[0].url + "/api/v1/namespaces", data=orjson.dumps({"metadata": {"name": ns}})) as r:
            assert r.status == 201
        bases = [f"{h.url}/api/v1/namespaces/{ns}/configmaps" for h in hubs]
        async with sessions[0].get(bases[0]) as r:
            rv = (await r.json())["metadata"]["resourceVersion"]
        delivered: dict[str, list[float]] = {}
        ready = 0
        all_ready = asyncio.Event()
        done = asyncio.Event()
        total = watchers * events

        async def watch(k: int):
            nonlocal ready
            async with sessions[k].get(f"{bases[k]}?watch=true&resourceVersion={rv}",
                                       timeout=aiohttp.ClientTimeout(total=300)) as r:
                ready += 1
                if ready == watchers:
                    all_ready.set()
                got = 0
                async for line in r.content:
                    ev = orjson.loads(line)
                    delivered.setdefault(ev["object"]["metadata"]["name"], []).append(time.perf_counter())
                    got += 1
                    if sum(len(v) for v in delivered.values()) >= total:
                        done.set()
                    if got >= events:
                        return

        tasks = [asyncio.create_task(watch(i % len(hubs))) for i in range(watchers)]
        await asyncio.wait_for(all_ready.wait(), 120)
        await asyncio.sleep(0.5)
        sent: dict[str, float] = {}
        for i in range(events):
            name = f"fan-{i}"
            t0 = time.perf_counter()
            async with sessions[0].post(bases[0], data=orjson.dumps(payload(0) | {"metadata": {"name": name}})) as r:
                await r.read()
            sent[name] = t0
            await asyncio.sleep(0.05)
        await asyncio.wait_for(done.wait(), 120)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        for s in sessions:
            await s.close()
    lat = [t - sent[name] for name, ts in delivered.items() for t in ts]
    last = [max(ts) - sent[name] for name, ts in delivered.items()]
    return {"watchers": watchers, "replicas": len(hubs), "events": events, **percentiles(lat),
            "last_p50": statistics.median(last) * 1000}


async def run(quick: bool = False) -> dict:
    if not shutil.which("etcd"):
        return {"skipped": "etcd is not installed (apt-get install etcd-server)"}
    n = 1000 if quick else 3000
    results: dict = {"n": n, "concurrency": CONCURRENCY}
    etcd = Etcd()
    try:
        results["raw"] = await raw_etcd(etcd.url, n, CONCURRENCY)
        results["replicas"] = {}
        for count in (1, 2, 3):
            hubs = start_replicas(etcd.url, count)
            try:
                # more replicas serve more clients: 32 concurrent clients per replica
                results["replicas"][str(count)] = await api(hubs, n * count, CONCURRENCY * count, f"bench-{count}",
                                                            etcd_pid=etcd.proc.pid)
                if count == 3:
                    results["watch"] = await watch_fanout(hubs, 1000, 5 if quick else 10)
            finally:
                for h in hubs:
                    h.stop()
        results["api"] = results["replicas"]["1"]
    finally:
        etcd.stop()
    results["cores"] = os.cpu_count()
    return results


def render(r: dict) -> list[str]:
    """Markdown lines for BENCHMARKS.md."""
    lines = ["## The hub on etcd (`bench/etcd.py`)", ""]
    if "skipped" in r:
        return [*lines, f"Not measured: {r['skipped']}.", ""]
    raw, api_ = r["raw"], r["api"]
    lines += [
        f"One etcd member on the same machine (data on disk), {r['n']} ConfigMaps of ~300 bytes, {r['concurrency']} concurrent clients.",
        "The raw figures are etcd3aio (the client the store uses) doing plain puts and ranges with the same payloads;",
        "the API does an HTTPS request, validation, managedFields, a guarded transaction and a consistent read.",
        "",
        "| operation | API, one replica | raw etcd, same client and payloads | ratio |",
        "|---|---|---|---|",
        f"| create, per second | {api_['create']:.0f} | {raw['create']:.0f} (put) | {_ratio(api_['create'], raw['create'])} |",
        f"| create latency p50 / p99 (ms) | {api_['create_lat']['p50']:.1f} / {api_['create_lat']['p99']:.1f} | {raw['create_lat']['p50']:.1f} / {raw['create_lat']['p99']:.1f} | |",
        f"| get, per second | {api_['get']:.0f} | {raw['get']:.0f} (range of one key) | {_ratio(api_['get'], raw['get'])} |",
        f"| get latency p50 / p99 (ms) | {api_['get_lat']['p50']:.1f} / {api_['get_lat']['p99']:.1f} | {raw['get_lat']['p50']:.1f} / {raw['get_lat']['p99']:.1f} | |",
        f"| list of all {r['n']}, per second | {api_['list']:.1f} | {raw['list']:.1f} (prefix range) | {_ratio(api_['list'], raw['list'])} |",
        "",
        f"Goal: at least half of raw etcd: create {'met' if api_['create'] >= raw['create'] / 2 else 'not met'} "
        f"({_ratio(api_['create'], raw['create'])}), get {'met' if api_['get'] >= raw['get'] / 2 else 'not met'} "
        f"({_ratio(api_['get'], raw['get'])}), list {'met' if api_['list'] >= raw['list'] / 2 else 'not met'} "
        f"({_ratio(api_['list'], raw['list'])}).",
        "",
        "### Replicas",
        "",
        f"{r['concurrency']} concurrent clients per replica, spread evenly; every get goes to another replica than the create "
        "of the same object.",
        "",
        "| replicas | create/s | create p50 / p99 (ms) | get/s | get p50 / p99 (ms) | list/s | cores busy while creating: etcd / replicas / load generator |",
        "|---|---|---|---|---|---|---|",
    ]
    for count, x in sorted(r["replicas"].items()):
        c = x.get("create_cpu", {})
        lines.append(f"| {count} | {x['create']:.0f} | {x['create_lat']['p50']:.1f} / {x['create_lat']['p99']:.1f} | "
                     f"{x['get']:.0f} | {x['get_lat']['p50']:.1f} / {x['get_lat']['p99']:.1f} | {x['list']:.1f} | "
                     f"{c.get('etcd', 0):.2f} / {c.get('replicas', 0):.2f} / {c.get('client', 0):.2f} |")
    one, three = r["replicas"]["1"], r["replicas"]["3"]
    lines += [
        "",
        f"Three replicas against one: create x{_ratio(three['create'], one['create'])}, get x{_ratio(three['get'], one['get'])}, "
        f"with {r['cores']} cores shared by etcd, every replica and the load generator (the last column: how many of them "
        "were busy while creating; below the core count, the limit is etcd's commit latency, not CPU).",
        "",
        "### Watch fan-out",
        "",
        "| watchers | replicas | events | delivery p50 (ms) | delivery p99 (ms) | last watcher p50 (ms) |",
        "|---|---|---|---|---|---|",
        f"| {r['watch']['watchers']} | {r['watch']['replicas']} | {r['watch']['events']} | {r['watch']['p50']:.1f} | "
        f"{r['watch']['p99']:.1f} | {r['watch']['last_p50']:.1f} |",
        "",
        "Writes go through the first replica; each replica's watch cache gets them from its own etcd watch.",
        "",
    ]
    return lines


if __name__ == "__main__":
    res = asyncio.run(run(quick="--quick" in sys.argv))
    print(json.dumps(res, indent=2))
    print("\n".join(render(res)))
