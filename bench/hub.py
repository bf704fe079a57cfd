"""Hub benchmarks: API throughput and latency beside the raw store doing the same durable
writes, watch fan-out, start-up (logical clusters at scale are bench/logical_clusters.py).
Every figure comes with its baseline from the same run, as a ratio."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import shutil
import signal
import ssl
import statistics
import subprocess
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
    for i in range(READ_OBJECTS):  # the API's list reads a namespace of READ_OBJECTS
        await store.create(f"/core/configmaps/root/bench-read/cm-{i}", body[i])
    t0 = time.perf_counter()
    for _ in range(200):
        await store.range("/core/configmaps/root/bench-read/")
    lrate = 200 / (time.perf_counter() - t0)
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


# -- throughput with a C load generator: the hub beside the minimal server ---------------------

WRK_DIR = Path(__file__).resolve().parent / "wrk"
NAMESPACES = ("bench-create", "bench-deploy", "bench-read")
READ_OBJECTS = 100
CONNECTIONS = 32


class MinimalProcess(Process):
    """``python -m bench.minimal_server`` (``stack``: uvicorn, granian or httptools) on a data
    directory of its own: the same certificate layout and token file as the hub's, so
    :class:`~fleetplane.lab.Process`'s requests and readiness work unchanged."""

    def __init__(self, stack: str = "uvicorn") -> None:
        self.stack = stack
        super().__init__(f"minimal-{stack}", [], Path(tempfile.mkdtemp(prefix="fleetplane-minimal-")))
        self.start(timeout=30, interval=0.01)

    @property
    def command(self) -> list[str]:
        return [sys.executable, "-m", "bench.minimal_server", "--port", str(self.port),
                "--data", str(self.data_dir), "--stack", self.stack]

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int | None:
        code = super().stop(sig, timeout)
        shutil.rmtree(self.data_dir.parent, ignore_errors=True)
        return code


#: a hub with none of its controllers: the request path alone
CONTROLLERS_OFF = ("--no-cluster-controller", "--no-splitter", "--no-service-controller", "--no-hpa-controller",
                   "--no-cronjob-controller", "--no-placement-decisions")


def tree_cpu_seconds(pid: int, skip: str = "") -> float:
    """utime + stime of ``pid`` and every live descendant (granian serves from a child process;
    the hub's store writer is one), leaving out the subtrees whose command line has ``skip``."""
    tick = os.sysconf("SC_CLK_TCK")
    stats: dict[int, tuple[int, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if skip:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if skip.encode() in f.read():
                        continue
        except OSError:
            continue
        # after the command: state ppid ... utime (14th field of the line) stime (15th)
        stats[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        total += stats.get(p, (0, 0.0))[1]
        todo += [c for c, (ppid, _) in stats.items() if ppid == p]
    return total


def wait_idle(target: Process, timeout: float = 120.0) -> float:
    """Until ``target`` uses under 5 % of a core over half a second: the work a run left behind
    (controllers reacting to the creates, a new CRD's OpenAPI and discovery rebuilt) is done
    before the next run measures. Returns the CPU seconds it used meanwhile."""
    assert target.pid is not None
    deadline = time.monotonic() + timeout
    start = before = tree_cpu_seconds(target.pid)
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = tree_cpu_seconds(target.pid)
        if now - before < 0.025:
            return now - start
        before = now
    return before - start


def _children_cpu_seconds() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def parse_wrk(out: str) -> dict:
    """wrk's summary: the ``WRK {json}`` line of bench/wrk/report.lua (requests, errors, latency
    in microseconds), and ``Requests/sec`` with the ``--latency`` distribution from wrk's text."""
    result: dict = {}
    dist: dict[str, float] = {}
    units = {"us": 1e-3, "ms": 1.0, "s": 1e3}
    in_dist = False
    for line in out.splitlines():
        s = line.strip()
        if s.startswith("WRK {"):
            result.update(orjson.loads(s[4:]))
        elif s.startswith("Requests/sec:"):
            result["rps"] = float(s.split()[1])
        elif s.startswith("Latency Distribution"):
            in_dist = True
        elif in_dist and s.endswith(tuple(units)) and "%" in s:
            pct, value = s.split()
            num = value.rstrip("usm")
            dist[pct] = float(num) * units[value[len(num):]]
        else:
            in_dist = False
    if "requests" not in result:
        raise RuntimeError(f"wrk printed no summary:\n{out}")
    result["latency_ms"] = dist
    return result


#: the server's CPU leaves out the controller-manager: a client of the API, as kube-controller-manager
SERVER_ONLY = "controller-manager"


def wrk(target: Process, script: str, path: str, args: list[str], seconds: float,
        connections: int = CONNECTIONS, threads: int = 2) -> dict:
    """One wrk run against ``target``: requests/s, latency, and CPU per request of the server
    (its process tree, from /proc) and of wrk itself (the reaped child's rusage), in µs; then
    the server's CPU until it is idle again (``after_cpu_us``: what its controllers did about
    the requests once answered), so the next run starts on an idle server."""
    cmd = ["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{seconds:g}s", "--latency", "--timeout", "30s",
           "-s", str(WRK_DIR / script), "-H", f"Authorization: Bearer {target.token}",
           "-H", "Content-Type: application/json", target.url + path, "--", *args]
    assert target.pid is not None
    server0, client0 = tree_cpu_seconds(target.pid, SERVER_ONLY), _children_cpu_seconds()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=seconds + 120).stdout
    server1, client1 = tree_cpu_seconds(target.pid, SERVER_ONLY), _children_cpu_seconds()
    after = wait_idle(target)
    w = parse_wrk(out)
    n = max(w["requests"], 1)
    lat = w["latency_us"]
    return {"rps": w.get("rps", n / (w["duration_us"] / 1e6)), "requests": w["requests"],
            "p50": lat["p50"] / 1000, "p90": lat["p90"] / 1000, "p99": lat["p99"] / 1000,
            "server_cpu_us": (server1 - server0) / n * 1e6, "client_cpu_us": (client1 - client0) / n * 1e6,
            "after_cpu_us": after / n * 1e6, "errors": sum(w["errors"].values()), "non2xx": w["errors"]["status"]}


def deployment_crd() -> dict:
    """deployments.apps as a Syncer imports it from a cluster: the structural CRD built from the
    OpenAPI v3 document a simulated cluster serves (fleetplane's own, the full Deployment schema)."""
    from fleetplane.apis import workload_types
    from fleetplane.fleet.syncer import constants as C
    from fleetplane.fleet.syncer.schema import crd_version_from_openapi
    from fleetplane.server.openapi import group_version_document

    t = next(t for t in workload_types() if t.kind == "Deployment")
    version = crd_version_from_openapi(group_version_document("apps/v1", [t]), "apps", "v1", "Deployment",
                                       frozenset(t.subresources))
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "deployments.apps", "labels": {C.imported_from_label("bench"): "true"},
                         "annotations": {C.ORIGIN_ANNOTATION: "imported", C.SCHEMA_SOURCE_ANNOTATION: "bench",
                                         "api-approved.kubernetes.io": "unapproved, imported from a physical cluster by fleetplane"}},
            "spec": {"group": "apps", "scope": "Namespaced", "conversion": {"strategy": "None"},
                     "names": {"plural": "deployments", "singular": "deployment", "kind": "Deployment",
                               "listKind": "DeploymentList", "shortNames": ["deploy"], "categories": ["all"]},
                     "versions": [version]}}


def prepare(target: Process, hub: bool) -> None:
    """The namespaces, the Deployment type on the hub, and the objects gets and lists read."""
    for ns in NAMESPACES:
        code, body = target.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                                    "metadata": {"name": ns}})
        assert code in (201, 409), (code, body)
    if hub:
        code, body = target.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                    deployment_crd(), timeout=60)
        assert code == 201, (code, body)
        deadline = time.monotonic() + 60
        while target.request("GET", "/apis/apps/v1/namespaces/bench-deploy/deployments")[0] != 200:
            if time.monotonic() > deadline:
                raise RuntimeError("deployments.apps not served 60 s after its CRD was created")
            time.sleep(0.1)
    for i in range(READ_OBJECTS):
        body = payload(i) | {"metadata": {"name": f"cm-{i}", "labels": {"bench": "yes"}}}
        code, out = target.request("POST", "/api/v1/namespaces/bench-read/configmaps", body)
        assert code == 201, (code, out)
    wait_idle(target)


#: (operation, wrk script, collection path, the script's arguments: {round} is the round's tag)
OPERATIONS: tuple[tuple[str, str, str, list[str]], ...] = (
    ("create", "create.lua", "/api/v1/namespaces/bench-create/configmaps", ["configmap", "{round}"]),
    ("deploy", "create.lua", "/apis/apps/v1/namespaces/bench-deploy/deployments", ["deployment", "{round}"]),
    ("get", "get.lua", "/api/v1/namespaces/bench-read/configmaps", ["cm", str(READ_OBJECTS)]),
    ("list", "list.lua", "/api/v1/namespaces/bench-read/configmaps", []),
)


def _summary(runs: list[dict]) -> dict:
    """The medians over rounds of one operation on one server."""
    med = {k: statistics.median(r[k] for r in runs)
           for k in ("rps", "p50", "p99", "server_cpu_us", "client_cpu_us", "after_cpu_us")}
    return {**med, "requests": sum(r["requests"] for r in runs), "errors": sum(r["errors"] for r in runs),
            "non2xx": sum(r["non2xx"] for r in runs), "rounds": len(runs)}


def throughput(targets: dict[str, Process], rounds: int, seconds: float,
               only: dict[str, set[str]] | None = None) -> dict[str, dict]:
    """Every operation on every target with the same wrk client, the targets interleaved within a
    round and their order reversed every other round (A B, B A, ...): on a loaded machine the
    medians compare like with like (after a warm-up second each). ``only``: a target measured on
    these operations alone. Returns {target: {operation: medians}}."""
    only = only or {}

    def wanted(name: str, op: str) -> bool:
        return name not in only or op in only[name]

    runs: dict[str, dict[str, list[dict]]] = {t: {op[0]: [] for op in OPERATIONS if wanted(t, op[0])} for t in targets}
    names = list(targets)
    for op, script, path, args in OPERATIONS:  # warm-up, not counted: caches, compiled validators
        for name in names:
            if wanted(name, op):
                wrk(targets[name], script, path, [a.format(round="warm") for a in args], 1)
    for rnd in range(rounds):
        order = names if rnd % 2 == 0 else names[::-1]
        for op, script, path, args in OPERATIONS:
            for name in order:
                if not wanted(name, op):
                    continue
                target = targets[name]
                target.check()
                run_args = [a.format(round=f"r{rnd}") for a in args]
                runs[name][op].append(wrk(target, script, path, run_args, seconds))
    return {t: {op: _summary(r) for op, r in ops.items()} for t, ops in runs.items()}


def api_result(ops: dict[str, dict]) -> dict:
    """One server's figures in the shape BENCHMARKS.md reads (``create``, ``create_lat`` ...),
    with CPU per request of server and client beside."""
    out: dict = {"client": f"wrk, {CONNECTIONS} connections, 2 threads, HTTPS keep-alive"}
    for op, m in ops.items():
        out[op] = m["rps"]
        out[f"{op}_lat"] = {"p50": m["p50"], "p99": m["p99"]}
    out["cpu_us"] = {op: m["server_cpu_us"] for op, m in ops.items()}
    out["client_cpu_us"] = {op: m["client_cpu_us"] for op, m in ops.items()}
    out["after_cpu_us"] = {op: m["after_cpu_us"] for op, m in ops.items()}
    out["errors"] = {op: m["errors"] for op, m in ops.items()}
    out["rounds"] = min(m["rounds"] for m in ops.values())
    return out


def stacks(rounds: int = 5, seconds: float = 5) -> dict[str, dict]:
    """The HTTP stack by measurement (docs/dependencies.md, "The HTTP stack"): the minimal server's
    create and get on uvicorn + httptools (the hub's), granian (when installed: it is measured,
    not a dependency) and a protocol on httptools directly, the same wrk client, interleaved."""
    import importlib.util

    names = ["uvicorn", "httptools"] + (["granian"] if importlib.util.find_spec("granian") else [])
    targets: dict[str, Process] = {}
    try:
        for name in names:
            targets[name] = MinimalProcess(name)
            prepare(targets[name], hub=False)
        ops = [op for op in OPERATIONS if op[0] in ("create", "get")]
        runs: dict[str, dict[str, list[dict]]] = {t: {op[0]: [] for op in ops} for t in targets}
        for rnd in range(rounds):
            order = names[rnd % len(names):] + names[:rnd % len(names)]
            for op, script, path, args in ops:
                for name in order:
                    runs[name][op].append(wrk(targets[name], script, path, [a.format(round=f"r{rnd}") for a in args], seconds))
    finally:
        for t in targets.values():
            t.stop()
    return {t: {op: _summary(r) for op, r in o.items()} for t, o in runs.items()}


#: the paced writes' first seconds, not counted: a hub just started is still serving its
#: controller-manager's start (discovery, the informers' lists and watches), a stall of up to
#: a few hundred ms that is start-up, not the steady state a p99 goal is about
PACED_WARMUP_S = 3.0


async def paced_writes(hub: HubProcess, rate: int, seconds: float, warmup: float = PACED_WARMUP_S) -> dict:
    """Open-loop: start a write every 1/rate s whatever the previous did; latency per write
    (those started in the first ``warmup`` seconds are not counted)."""
    base = hub.url + "/api/v1/namespaces/kube-public/configmaps"
    lat: list[float] = []
    skip = int(rate * warmup)
    async with hub.session(256) as s:
        tasks = []
        interval = 1.0 / rate
        start = time.perf_counter()
        n = int(rate * (seconds + warmup))

        async def one(i: int):
            t0 = time.perf_counter()
            async with s.post(base, data=orjson.dumps(payload(100000 + i))) as r:
                await r.read()
            if i >= skip:
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
                       report, first: int = 0) -> None:
    """``n`` raw HTTP/1.1 watches; each records when it reads each event (time.monotonic, the same
    clock in every process); a light client: no JSON parsing, the name is cut out of the line.
    ``path`` may hold ``{i}``: the watch's number (from ``first``), e.g. in its label selector."""
    delivered: list[tuple[str, float]] = []
    numbers = iter(range(first, first + n))

    async def one() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        request = (f"GET {path.format(i=next(numbers))} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
                   "Accept: application/json\r\n\r\n").encode()
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


def _watch_client_process(url: str, token: str, cafile: str, path: str, n: int, events: int, report,
                          first: int = 0) -> None:
    ctx = ssl.create_default_context(cafile=cafile)
    host, port = url.removeprefix("https://").rsplit(":", 1)
    asyncio.run(_watch_conns(host, int(port), ctx, token, path, n, events, report, first))


#: each watch's label selector in :func:`selective_watches`: one the watch cache indexes by, and the
#: same selection the index cannot use (a two-value ``in``), which is offered every event
SELECTIVE = {"indexed": "fleet%3Dc{i}", "unindexed": "fleet+in+%28c{i}%2Cnone%29"}


async def selective_watches(watchers: int, clients: int = 2) -> dict:
    """``watchers`` watches on one namespace, watch i selecting label ``fleet=c<i>`` (as each of a
    thousand Syncers watches the objects labelled with its cluster), then one write per watcher,
    each labelled for one of them, so every write is delivered once: the hub's CPU per write over
    the same writes with no watch open, with selectors the watch cache indexes its watchers by
    and with ones it cannot (offered every event, as before the index). One hub, all measured in
    this run."""
    import multiprocessing

    hub = HubProcess("--max-connections-per-client", "0", "--max-connections", str(2 * watchers + 1000))
    mp = multiprocessing.get_context("spawn")
    result: dict = {"watchers": watchers}
    try:
        ns = "kube-system"
        base = hub.url + f"/api/v1/namespaces/{ns}/configmaps"
        async with hub.session(8) as s:
            async def writes(tag: str) -> float:
                """The hub's CPU per write of one ConfigMap per watcher, 8 at a time."""
                sem = asyncio.Semaphore(8)

                async def post(i: int) -> None:
                    body = payload(i) | {"metadata": {"name": f"{tag}-{i}", "labels": {"fleet": f"c{i}"}}}
                    async with sem, s.post(base, data=orjson.dumps(body)) as r:
                        assert r.status == 201, await r.text()

                cpu0 = _proc_cpu_seconds(hub.proc.pid)
                await asyncio.gather(*(post(i) for i in range(watchers)))
                return (_proc_cpu_seconds(hub.proc.pid) - cpu0) / watchers * 1e6

            await writes("warm")
            result["alone_us_per_write"] = await writes("alone")
            for kind, selector in SELECTIVE.items():
                async with s.get(base) as r:
                    rv = (await r.json())["metadata"]["resourceVersion"]
                report = mp.Queue()
                path = f"/api/v1/namespaces/{ns}/configmaps?watch=true&resourceVersion={rv}&labelSelector={selector}"
                share = [watchers // clients + (1 if i < watchers % clients else 0) for i in range(clients)]
                procs = [mp.Process(target=_watch_client_process, daemon=True,
                                    args=(hub.url, hub.token, str(hub.ca), path, n, 1, report, sum(share[:k])))
                         for k, n in enumerate(share)]
                loop = asyncio.get_running_loop()
                try:
                    for p in procs:
                        p.start()
                    for _ in procs:
                        msg = await loop.run_in_executor(None, report.get, True, 600)
                        assert msg[0] == "open"
                    result[f"{kind}_us_per_write"] = await writes(kind)
                    delivered = []
                    for _ in procs:
                        msg = await loop.run_in_executor(None, report.get, True, 600)
                        assert msg[0] == "done"
                        delivered += msg[1]
                    assert sorted(name for name, _ in delivered) == sorted(f"{kind}-{i}" for i in range(watchers))
                finally:
                    for p in procs:
                        p.join(10)
                        if p.is_alive():
                            p.kill()
    finally:
        hub.stop()
    return result


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
    minimal = MinimalProcess()
    # the request alone: with the splitter on, each Deployment create sets it placing (patches, Events)
    quiet = HubProcess(*CONTROLLERS_OFF)
    try:
        for target in (hub, minimal, quiet):
            prepare(target, hub=target is not minimal)
        measured = throughput({"hub": hub, "minimal": minimal, "alone": quiet}, 2 if quick else 3,
                              3 if quick else 6, only={"alone": {"deploy"}})
        minimal.stop()
        quiet.stop()
        results["api"], results["minimal"] = api_result(measured["hub"]), api_result(measured["minimal"])
        results["api"]["deploy_alone"] = api_result(measured["alone"])
    finally:
        minimal.stop()
        quiet.stop()
        hub.stop()
    # a hub of its own: the thousands of Deployments above keep the splitter busy for minutes
    hub = HubProcess()
    try:
        results["paced"] = await paced_writes(hub, 500, 4 if quick else 10)
        results["watch"] = await watch_fanout(hub, 1000, 5 if quick else 10)
    finally:
        hub.stop()
    results["watch_scale"] = [await watch_scale(n, 5 if quick else 10) for n in ((1000,) if quick else (1000, 5000))]
    results["selective_watches"] = await selective_watches(1000)
    fresh = HubProcess()  # start-up on an empty data directory (logical clusters: bench/logical_clusters.py)
    results["startup_seconds"] = fresh.ready_after
    fresh.stop()
    return results


if __name__ == "__main__":
    if "--stacks" in sys.argv:
        print(json.dumps(stacks(), indent=2))
    else:
        print(json.dumps(asyncio.run(run(quick="--quick" in sys.argv)), indent=2))
