"""Micro-benchmark of the Syncer: sync latency at a fixed write rate over N clusters.

:func:`run` starts a hub (``fleetplane start``) and N clusters as processes: hub processes by
default (the Syncer's path is the same against any API server; a hub process answers faster
and more steadily than a simulated cluster with controllers running beside it), or simulated
clusters (``fleetplane cluster simulate``) with ``backend="sim"``. Each cluster defines a CRD
with a status subresource (``benchwidgets.bench.fleetplane.io``), which the Syncers import into
the hub. The N Syncers run in one separate process, as the Cluster controller runs them.

Two measurements, each open loop at ``rate`` objects per second (spread over the clusters):

* **down**: from the start of the hub write (create) to the object's ADDED event on a watch of
  the cluster it is labelled for;
* **up**: from the start of a status write in the cluster (as a controller there would) to the
  MODIFIED event carrying that status on a watch of the hub.

Everything shares the machine's cores. ``python -m bench.syncer`` prints JSON.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from fleetplane.kube.client import MERGE_PATCH, ApiError, Client
from fleetplane.kube.kubeconfig import ApiTarget

from .sim import SIMULATE

GROUP = "bench.fleetplane.io"
PLURAL = "benchwidgets"
LC = "bench"
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {"group": GROUP, "scope": "Namespaced",
             "names": {"plural": PLURAL, "singular": "benchwidget", "kind": "BenchWidget", "listKind": "BenchWidgetList"},
             "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "properties": {"n": {"type": "integer"}}},
                               "status": {"type": "object", "properties": {"token": {"type": "string"}}}}}}}]},
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(p / 100 * len(s)) - 1))]


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def _summary(lat: list[float]) -> dict[str, float]:
    ms = [v * 1000 for v in lat]
    return {"p50": _pct(ms, 50), "p99": _pct(ms, 99), "max": max(ms) if ms else float("nan"), "n": len(ms)}


class _Proc:
    def __init__(self, cmd: list[str], data_dir: Path) -> None:
        self.data_dir = data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        self.log = open(data_dir / "process.log", "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


async def _start_server(cmd: list[str], data_dir: Path, timeout: float = 60.0) -> tuple[_Proc, ApiTarget]:
    p = _Proc(cmd, data_dir)
    kubeconfig = data_dir / "admin.kubeconfig"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if p.proc.poll() is not None:
            raise RuntimeError(f"{cmd[:6]} exited: {(data_dir / 'process.log').read_text()[-2000:]}")
        if kubeconfig.exists():
            t = ApiTarget.from_kubeconfig(kubeconfig)
            c = Client(t, "bench")
            try:
                await c.request("GET", "/api/v1/namespaces/default")
                return p, t
            except ApiError:
                pass
            finally:
                await c.close()
        await asyncio.sleep(0.1)
    p.stop()
    raise RuntimeError(f"{cmd[:6]} did not become ready")


def _hub_cmd(data_dir: Path, port: int) -> list[str]:
    return [sys.executable, "-m", "fleetplane.cli.main", "--log-level", "warning", "start",
            "--data-dir", str(data_dir), "--port", str(port)]


def _sim_cmd(name: str, data_dir: Path, port: int) -> list[str]:
    return [*SIMULATE, "--name", name, "--data-dir", str(data_dir), "--port", str(port), "--nodes", "1"]


def _target_json(t: ApiTarget) -> dict:
    return {k: getattr(t, k) for k in ("server", "ca_data", "token", "client_cert_data", "client_key_data", "insecure")}


async def _watch_into(client: Client, path: str, seen: dict[str, float], match: Any, stop: asyncio.Event,
                      label_selector: str | None = None) -> None:
    """Record when each object first satisfies ``match`` on a watch of ``path``."""
    rv = ""
    while not stop.is_set():
        try:
            if not rv:
                lst = await client.request("GET", path, query={"labelSelector": label_selector} if label_selector else None)
                rv = lst["metadata"]["resourceVersion"]
            q = {"resourceVersion": rv, "allowWatchBookmarks": "true"}
            if label_selector:
                q["labelSelector"] = label_selector
            async for ev in client.watch(path, q, 300):
                obj = ev.get("object") or {}
                rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                if ev.get("type") in ("ADDED", "MODIFIED"):
                    key = match(obj)
                    if key and key not in seen:
                        seen[key] = time.perf_counter()
        except ApiError:
            rv = ""
            await asyncio.sleep(0.2)


async def _paced(n: int, rate: float, fn: Any) -> float:
    """Call ``fn(i)`` for i in range(n) at ``rate`` per second (open loop); returns the achieved rate."""
    start = time.perf_counter()
    tasks = []
    for i in range(n):
        delay = start + i / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(fn(i)))
    await asyncio.gather(*tasks)
    return n / max(time.perf_counter() - start, 1e-9)


async def _wait_all(seen: dict[str, float], keys: list[str], timeout: float) -> None:
    for _ in range(int(timeout / 0.05)):
        if all(k in seen for k in keys):
            return
        await asyncio.sleep(0.05)


async def run(clusters: int = 3, objects: int = 600, rate: float = 100.0, backend: str = "hub",
              quick: bool = False) -> dict:
    """Measure; returns latencies in milliseconds. ``backend``: "hub" or "sim"."""
    if quick:
        objects = min(objects, 200)
    tmp = Path(tempfile.mkdtemp(prefix="fleetplane-syncer-bench-"))
    procs: list[_Proc] = []
    clients: list[Client] = []
    stop = asyncio.Event()
    watchers: list[asyncio.Task] = []
    try:
        hub_proc, hub_t = await _start_server(_hub_cmd(tmp / "hub", _free_port()), tmp / "hub")
        procs.append(hub_proc)
        starts = []
        for i in range(clusters):
            d = tmp / f"cluster-{i}"
            cmd = _sim_cmd(f"c{i}", d, _free_port()) if backend == "sim" else _hub_cmd(d, _free_port())
            starts.append(_start_server(cmd, d))
        downs = await asyncio.gather(*starts)
        procs += [p for p, _ in downs]
        down_ts = [t for _, t in downs]
        names = [f"c{i}" for i in range(clusters)]
        hub = Client(hub_t.for_logical_cluster(LC), "bench")
        clients.append(hub)
        dcs = [Client(t, "bench") for t in down_ts]
        clients += dcs
        for c in dcs:
            await c.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body=CRD)
        await hub.request("POST", "/api/v1/namespaces", body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "b"}})

        config = {"hub": _target_json(hub_t.for_logical_cluster(LC)),
                  "clusters": [{"name": n, "target": _target_json(t)} for n, t in zip(names, down_ts, strict=True)]}
        (tmp / "syncers.json").write_text(json.dumps(config))
        procs.append(_Proc([sys.executable, "-m", "bench.syncer", "--serve-syncers", str(tmp / "syncers.json")],
                           tmp / "syncers"))
        path = f"/apis/{GROUP}/v1/namespaces/b/{PLURAL}"
        deadline = time.monotonic() + 60
        while True:  # the type is imported and every syncer is past its first pass
            try:
                await hub.request("GET", path)
                break
            except ApiError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the Syncers did not import the bench type") from None
                await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)

        # down: hub create -> ADDED in the cluster
        created: dict[str, float] = {}
        seen_down: dict[str, float] = {}
        for c in dcs:
            watchers.append(asyncio.create_task(_watch_into(
                c, f"/apis/{GROUP}/v1/{PLURAL}", seen_down, lambda o: o["metadata"]["name"], stop)))
        await asyncio.sleep(0.5)

        async def create(i: int) -> None:
            name = f"w{i}"
            body = {"apiVersion": f"{GROUP}/v1", "kind": "BenchWidget",
                    "metadata": {"name": name, "labels": {"kcp.dev/cluster": names[i % clusters]}}, "spec": {"n": i}}
            created[name] = time.perf_counter()
            await hub.request("POST", path, body=body)

        down_rate = await _paced(objects, rate, create)
        keys = [f"w{i}" for i in range(objects)]
        await _wait_all(seen_down, keys, 60)
        down_lat = [seen_down[k] - created[k] for k in keys if k in seen_down]

        # up: status written in the cluster -> MODIFIED with that status on the hub
        await asyncio.sleep(1.0)
        written: dict[str, float] = {}
        seen_up: dict[str, float] = {}
        watchers.append(asyncio.create_task(_watch_into(
            hub, path, seen_up, lambda o: ((o.get("status") or {}).get("token") or None), stop,
            label_selector="kcp.dev/cluster")))
        await asyncio.sleep(0.5)

        async def status(i: int) -> None:
            token = f"t{i}"
            written[token] = time.perf_counter()
            await dcs[i % clusters].patch(f"{path}/w{i}/status", {"status": {"token": token}}, MERGE_PATCH, "bench-controller")

        up_rate = await _paced(objects, rate, status)
        tokens = [f"t{i}" for i in range(objects)]
        await _wait_all(seen_up, tokens, 60)
        up_lat = [seen_up[t] - written[t] for t in tokens if t in seen_up]
        cpu = {"hub": _cpu_seconds(procs[0].proc.pid),
               "clusters": sum(_cpu_seconds(p.proc.pid) for p in procs[1:-1]),
               "syncers": _cpu_seconds(procs[-1].proc.pid)}
        return {
            "backend": "simulated clusters" if backend == "sim" else "hub processes as clusters",
            "clusters": clusters, "objects": objects, "target_rate": rate,
            "down": {**_summary(down_lat), "achieved_rate": round(down_rate, 1), "missing": objects - len(down_lat)},
            "up": {**_summary(up_lat), "achieved_rate": round(up_rate, 1), "missing": objects - len(up_lat)},
            "cpu_seconds": {k: round(v, 2) for k, v in cpu.items()},
        }
    finally:
        stop.set()
        for t in watchers:
            t.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.gather(*watchers, return_exceptions=True)
        for c in clients:
            await c.close()
        for p in reversed(procs):
            p.stop()
        shutil.rmtree(tmp, ignore_errors=True)


async def _serve_syncers(cfg: dict) -> None:
    """The Syncers of the benchmark, all in this process (as the Cluster controller runs them)."""
    from fleetplane.fleet.syncer import Syncer

    hub = ApiTarget(**cfg["hub"])
    syncers = [Syncer(cluster_name=c["name"], hub=hub, downstream=ApiTarget(**c["target"]),
                      resources=(f"{PLURAL}.{GROUP}",), poll_interval=2.0) for c in cfg["clusters"]]
    await asyncio.gather(*(s.run() for s in syncers))


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--serve-syncers"]:
        cfg = json.loads(Path(argv[1]).read_text())
        with contextlib.suppress(KeyboardInterrupt):
            try:
                import uvloop

                uvloop.run(_serve_syncers(cfg))
            except ImportError:
                asyncio.run(_serve_syncers(cfg))
        return 0
    kw: dict[str, Any] = {"quick": "--quick" in argv}
    if "--sim" in argv:
        kw["backend"] = "sim"
    for flag, key, conv in (("--clusters", "clusters", int), ("--objects", "objects", int), ("--rate", "rate", float)):
        if flag in argv:
            kw[key] = conv(argv[argv.index(flag) + 1])
    print(json.dumps(asyncio.run(run(**kw)), indent=2))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
