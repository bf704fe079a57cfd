"""Hub benchmarks: API throughput and latency beside the raw store doing the same durable
writes, watch fan-out, and logical-cluster creation. Every figure comes with its baseline
from the same run, as a ratio."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import ssl
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import orjson

from fleetplane.lab import Process
from fleetplane.storage.sqlite import SQLiteStore


def percentiles(samples: list[float]) -> dict[str, float]:
    s = sorted(samples)
    if not s:
        return {"p50": 0.0, "p99": 0.0}
    return {"p50": s[len(s) // 2] * 1000, "p99": s[min(len(s) - 1, int(len(s) * 0.99))] * 1000}


def payload(i: int) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}", "labels": {"bench": "yes", "n": str(i % 10)}},
            "data": {"key": "x" * 200, "index": str(i)}}


class HubProcess(Process):
    """``fleetplane start`` on an empty data directory of its own (``fleetplane.lab``), with an
    aiohttp session for load and its resident memory. ``share_from``: another hub's data
    directory whose CA and token it uses (replicas of one hub)."""

    def __init__(self, *args: str, share_from: Path | None = None) -> None:
        super().__init__("hub", ["start", *args], Path(tempfile.mkdtemp(prefix="fleetplane-bench-")))
        if share_from is not None:
            (self.data_dir / "pki").mkdir(parents=True)
            for name in ("pki/ca.crt", "pki/ca.key", "pki/client-ca.crt", "pki/client-ca.key", "pki/service-account.key", "admin.token"):
                shutil.copy2(share_from / name, self.data_dir / name)
        self.start(timeout=30, interval=0.01)
        #: from the process start to /readyz answering 200 (on an empty data dir: start-up)
        self.ready_after = self.ready_s
        self.ssl = ssl.create_default_context(cafile=str(self.ca))

    def rss_kib(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def session(self, limit: int = 64) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=self.ssl, limit=limit),
                                     headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"})

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int | None:
        code = super().stop(sig, timeout)
        shutil.rmtree(self.data_dir.parent, ignore_errors=True)
        return code


async def _run_concurrent(n: int, concurrency: int, op) -> tuple[float, list[float]]:
    latencies: list[float] = []
    it = iter(range(n))

    async def worker():
        for i in it:
            t0 = time.perf_counter()
            await op(i)
            latencies.append(time.perf_counter() - t0)

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return n / (time.perf_counter() - t0), latencies


async def raw_store(n: int, concurrency: int) -> dict:
    d = tempfile.mkdtemp(prefix="fleetplane-raw-")
    store = SQLiteStore(Path(d) / "raw.db")
    await store.start()
    body = [orjson.dumps(payload(i)) for i in range(n)]

    async def create(i: int):
        await store.create(f"/core/configmaps/root/default/cm-{i}", body[i])

    rate, lat = await _run_concurrent(n, concurrency, create)

    async def get(i: int):
        await store.get(f"/core/configmaps/root/default/cm-{i}")

    grate, glat = await _run_concurrent(n, concurrency, get)
    t0 = time.perf_counter()
    for _ in range(20):
        await store.range("/core/configmaps/root/default/")
    lrate = 20 / (time.perf_counter() - t0)
    await store.close()
    shutil.rmtree(d, ignore_errors=True)
    return {"create": rate, "create_lat": percentiles(lat), "get": grate, "get_lat": percentiles(glat), "list": lrate}


def naive_sqlite(n: int) -> dict:
    """SQLite on its own: one durable transaction per write (WAL, synchronous=FULL), no grouping."""
    import sqlite3

    d = tempfile.mkdtemp(prefix="fleetplane-naive-")
    conn = sqlite3.connect(Path(d) / "naive.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE kv (key TEXT PRIMARY KEY, value BLOB, rev INTEGER)")
    body = [orjson.dumps(payload(i)) for i in range(n)]
    lat = []
    t0 = time.perf_counter()
    for i in range(n):
        t1 = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO kv VALUES (?,?,?)", (f"/core/configmaps/root/default/cm-{i}", body[i], i))
        conn.execute("COMMIT")
        lat.append(time.perf_counter() - t1)
    rate = n / (time.perf_counter() - t0)
    conn.close()
    shutil.rmtree(d, ignore_errors=True)
    return {"create": rate, "create_lat": percentiles(lat)}


async def api(hub: HubProcess, n: int, concurrency: int) -> dict:
    base = hub.url + "/api/v1/namespaces/default/configmaps"
    async with hub.session(concurrency) as s:
        bodies = [orjson.dumps(payload(i)) for i in range(n)]

        async def create(i: int):
            async with s.post(base, data=bodies[i]) as r:
                assert r.status == 201, await r.text()
                await r.read()

        rate, lat = await _run_concurrent(n, concurrency, create)

        async def get(i: int):
            async with s.get(f"{base}/cm-{i}") as r:
                await r.read()

        grate, glat = await _run_concurrent(n, concurrency, get)
        t0 = time.perf_counter()
        for _ in range(20):
            async with s.get(base) as r:
                await r.read()
        lrate = 20 / (time.perf_counter() - t0)
    return {"create": rate, "create_lat": percentiles(lat), "get": grate, "get_lat": percentiles(glat), "list": lrate}


async def paced_writes(hub: HubProcess, rate: int, seconds: float) -> dict:
    """Open-loop: start a write every 1/rate s whatever the previous did; latency per write."""
    base = hub.url + "/api/v1/namespaces/kube-public/configmaps"
    lat: list[float] = []
    async with hub.session(256) as s:
        tasks = []
        interval = 1.0 / rate
        start = time.perf_counter()
        n = int(rate * seconds)

        async def one(i: int):
            t0 = time.perf_counter()
            async with s.post(base, data=orjson.dumps(payload(100000 + i))) as r:
                await r.read()
            lat.append(time.perf_counter() - t0)

        for i in range(n):
            target = start + i * interval
            delay = target - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(i)))
        await asyncio.gather(*tasks)
        achieved = n / (time.perf_counter() - start)
    return {"target": rate, "achieved": achieved, **percentiles(lat)}


async def watch_fanout(hub: HubProcess, watchers: int, events: int) -> dict:
    """``watchers`` watches on one namespace; the latency from a write's response to each delivery."""
    base = hub.url + "/api/v1/namespaces/kube-system/configmaps"
    async with hub.session(watchers + 8) as s:
        ready = 0
        delivered: dict[str, list[float]] = {}
        all_ready = asyncio.Event()
        done = asyncio.Event()
        expected = watchers * events

        async def watch():
            nonlocal ready
            async with s.get(base + "?watch=true&resourceVersion=" + rv, timeout=aiohttp.ClientTimeout(total=300)) as r:
                ready += 1
                if ready == watchers:
                    all_ready.set()
                async for line in r.content:
                    ev = orjson.loads(line)
                    name = ev["object"]["metadata"]["name"]
                    delivered.setdefault(name, []).append(time.perf_counter())
                    if sum(len(v) for v in delivered.values()) >= expected:
                        done.set()
                    if len(delivered.get(name, [])) and all(len(v) >= watchers for v in delivered.values()) and len(delivered) >= events:
                        return

        async with s.get(base) as r:
            rv = (await r.json())["metadata"]["resourceVersion"]
        tasks = [asyncio.create_task(watch()) for _ in range(watchers)]
        await asyncio.wait_for(all_ready.wait(), 60)
        await asyncio.sleep(0.5)
        sent: dict[str, float] = {}
        for i in range(events):
            name = f"fan-{i}"
            t0 = time.perf_counter()
            async with s.post(base, data=orjson.dumps(payload(0) | {"metadata": {"name": name}})) as r:
                await r.read()
            sent[name] = t0
            await asyncio.sleep(0.05)
        await asyncio.wait_for(done.wait(), 120)
        for t in tasks:
            t.cancel()
        lat = [t - sent[name] for name, ts in delivered.items() for t in ts]
        last = [max(ts) - sent[name] for name, ts in delivered.items()]
    return {"watchers": watchers, "events": events, **percentiles(lat), "last_p50": statistics.median(last) * 1000}



# -- watch fan-out at scale: hub CPU per delivery, memory per watcher, p99 -------------------------


def _proc_cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _watch_conns(host: str, port: int, ctx: ssl.SSLContext, token: str, path: str, n: int, events: int,
                       report) -> None:
    """``n`` raw HTTP/1.1 watches; each records when it reads each event (time.monotonic, the same
    clock in every process); a light client: no JSON parsing, the name is cut out of the line."""
    delivered: list[tuple[str, float]] = []
    request = (f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
               "Accept: application/json\r\n\r\n").encode()

    async def one() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        for attempt in range(20):
            try:
                r, w = await asyncio.open_connection(host, port, ssl=ctx, limit=1 << 20)
                w.write(request)
                while (await r.readline()) not in (b"\r\n", b""):
                    pass  # the status line and headers
                return r, w
            except OSError:
                await asyncio.sleep(0.2 * (attempt + 1))
        raise RuntimeError("could not open a watch")

    conns = []
    sem = asyncio.Semaphore(64)

    async def opening() -> None:
        async with sem:
            conns.append(await one())

    await asyncio.gather(*(opening() for _ in range(n)))
    report.put(("open", n))

    async def read(r: asyncio.StreamReader) -> None:
        got = 0
        while got < events:
            line = await r.readline()
            if not line:
                return
            if line.startswith(b'{"type"'):
                i = line.index(b'"name":"') + 8
                delivered.append((line[i:line.index(b'"', i)].decode(), time.monotonic()))
                got += 1

    t0 = time.process_time()
    await asyncio.gather(*(read(r) for r, _ in conns))
    cpu = time.process_time() - t0
    for _, w in conns:
        w.close()
    report.put(("done", delivered, cpu))


def _watch_client_process(url: str, token: str, cafile: str, path: str, n: int, events: int, report) -> None:
    ctx = ssl.create_default_context(cafile=cafile)
    host, port = url.removeprefix("https://").rsplit(":", 1)
    asyncio.run(_watch_conns(host, int(port), ctx, token, path, n, events, report))


async def watch_scale(watchers: int, events: int = 10, clients: int = 2, gap: float = 0.05) -> dict:
    """``watchers`` watches (in ``clients`` processes of their own) on one namespace of a fresh hub;
    ``events`` creates ``gap`` s apart. Reports the latency from each write's request to each
    delivery, the hub's CPU per delivery (/proc/<pid>/stat over the events, with the CPU of the
    writes themselves measured alone and taken off) and its resident memory per open watch."""
    import multiprocessing

    hub = HubProcess("--max-connections-per-client", "0", "--max-connections", str(watchers + 1000))
    mp = multiprocessing.get_context("spawn")
    procs = []
    try:
        ns = "kube-system"
        base = hub.url + f"/api/v1/namespaces/{ns}/configmaps"
        async with hub.session(8) as s:
            async def post(name: str) -> float:
                t0 = time.monotonic()
                async with s.post(base, data=orjson.dumps(payload(0) | {"metadata": {"name": name}})) as r:
                    assert r.status == 201, await r.text()
                return t0

            # the writes alone (no watcher): their CPU is taken off the fan-out's
            await asyncio.sleep(1)
            cpu0 = _proc_cpu_seconds(hub.proc.pid)
            for i in range(events):
                await post(f"warm-{i}")
                await asyncio.sleep(gap)
            write_cpu = _proc_cpu_seconds(hub.proc.pid) - cpu0
            async with s.get(base) as r:
                rv = (await r.json())["metadata"]["resourceVersion"]
            await asyncio.sleep(1)
            rss0 = hub.rss_kib()
            report = mp.Queue()
            path = f"/api/v1/namespaces/{ns}/configmaps?watch=true&resourceVersion={rv}&labelSelector=fan%3Dyes"
            share = [watchers // clients + (1 if i < watchers % clients else 0) for i in range(clients)]
            for n in share:
                p = mp.Process(target=_watch_client_process, args=(hub.url, hub.token, str(hub.ca), path, n, events, report),
                               daemon=True)
                p.start()
                procs.append(p)
            loop = asyncio.get_running_loop()
            t_open = time.monotonic()
            opened = 0
            while opened < len(share):
                msg = await loop.run_in_executor(None, report.get, True, 600)
                assert msg[0] == "open"
                opened += 1
            open_s = time.monotonic() - t_open
            await asyncio.sleep(2)
            rss1 = hub.rss_kib()
            cpu1 = _proc_cpu_seconds(hub.proc.pid)
            spy = None
            if os.environ.get("FLEETPLANE_BENCH_PYSPY"):  # a profile of the hub over the events
                spy = await asyncio.create_subprocess_exec(
                    str(Path(sys.executable).parent / "py-spy"), "record", "-p", str(hub.proc.pid), "-r", "200", "-f", "raw",
                    "-o", os.environ["FLEETPLANE_BENCH_PYSPY"], stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
                await asyncio.sleep(1)
                cpu1 = _proc_cpu_seconds(hub.proc.pid)
            sent: dict[str, float] = {}
            for i in range(events):
                name = f"fan-{i}"
                body = payload(0) | {"metadata": {"name": name, "labels": {"fan": "yes"}}}
                t0 = time.monotonic()
                async with s.post(base, data=orjson.dumps(body)) as r:
                    assert r.status == 201, await r.text()
                sent[name] = t0
                await asyncio.sleep(gap)
            delivered: list[tuple[str, float]] = []
            client_cpu = 0.0
            for _ in share:
                msg = await loop.run_in_executor(None, report.get, True, 600)
                assert msg[0] == "done"
                delivered += msg[1]
                client_cpu += msg[2]
            cpu2 = _proc_cpu_seconds(hub.proc.pid)
            if spy is not None:
                spy.send_signal(signal.SIGINT)
                await asyncio.wait_for(spy.wait(), 30)
    finally:
        for p in procs:
            p.join(5)
            if p.is_alive():
                p.kill()
        hub.stop()
    lat = [t - sent[name] for name, t in delivered]
    by_name: dict[str, list[float]] = {}
    for name, t in delivered:
        by_name.setdefault(name, []).append(t - sent[name])
    count = len(delivered)
    assert count == watchers * events, f"{count} deliveries, expected {watchers * events}"
    return {"watchers": watchers, "events": events, "clients": clients, **percentiles(lat),
            "last_p50": statistics.median(max(v) for v in by_name.values()) * 1000,
            "hub_cpu_us_per_delivery": (cpu2 - cpu1 - write_cpu) / count * 1e6,
            "client_cpu_us_per_delivery": client_cpu / count * 1e6,
            "rss_kib_per_watcher": (rss1 - rss0) / watchers, "open_seconds": open_s,
            "load": os.getloadavg()[0]}


async def clusters(hub: HubProcess, count: int, concurrency: int = 32) -> dict:
    rss0 = hub.rss_kib()
    async with hub.session(concurrency) as s:

        async def create(i: int):
            async with s.get(f"{hub.url}/clusters/bench-{i}/api/v1/namespaces/default") as r:
                assert r.status == 200, await r.text()
                await r.read()

        rate, _ = await _run_concurrent(count, concurrency, create)
    await asyncio.sleep(1)
    rss1 = hub.rss_kib()
    return {"count": count, "rate": rate, "rss_per_cluster_kib": (rss1 - rss0) / count}


def machine() -> str:
    cpu = "unknown cpu"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {cpu}, Python {sys.version.split()[0]}"


async def run(quick: bool = False) -> dict:
    n = 1000 if quick else 4000
    conc = 32
    results: dict = {"raw": await raw_store(n, conc), "naive": naive_sqlite(n // 4)}
    hub = HubProcess()
    try:
        results["api"] = await api(hub, n, conc)
        results["paced"] = await paced_writes(hub, 500, 4 if quick else 10)
        results["watch"] = await watch_fanout(hub, 1000, 5 if quick else 10)
    finally:
        hub.stop()
    results["watch_scale"] = [await watch_scale(n, 5 if quick else 10) for n in ((1000,) if quick else (1000, 5000))]
    fresh = HubProcess()  # a hub of its own, so memory per cluster is not blurred by the runs above
    try:
        results["startup_seconds"] = fresh.ready_after
        results["clusters"] = await clusters(fresh, 1000 if quick else 10000)
    finally:
        fresh.stop()
    return results


if __name__ == "__main__":
    print(json.dumps(asyncio.run(run(quick="--quick" in sys.argv)), indent=2))
