"""Event-loop stall: how long a small GET waits while a 2 MiB, 150,000-key ConfigMap is
written, against the same GET with nothing else going on, measured in the same run.

The GETs come from a thread of their own (its own event loop and connection), so the writer's
client work does not delay them on the client side. Besides each GET's latency, the hub's CPU
time while it was in flight (all its threads, from the kernel's accounting), capped by the
latency: what the hub itself made the GET wait, which a busy machine does not inflate (the
figure tests/hub/test_stall.py holds to the goal)."""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
from pathlib import Path

import aiohttp
import orjson

from .hub import HubProcess, percentiles

KEYS = 150_000


def big_configmap(name: str) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                         "data": {f"k{i:06d}": "v" for i in range(KEYS)}})


def cpu_seconds(pid: int) -> float:
    """The CPU time every thread of process ``pid`` has run, in seconds (``schedstat``: ns)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total / 1e9


class Poller:
    """Small GETs back to back from another thread until stopped."""

    def __init__(self, hub: HubProcess, path: str) -> None:
        self.hub, self.url = hub, hub.url + path
        self.latencies: list[float] = []
        #: the hub's CPU time during each GET, at most its latency
        self.waits: list[float] = []
        self.pid = hub.proc.pid
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()))

    async def _run(self) -> None:
        async with self.hub.session(limit=1) as s:
            while not self._stop.is_set():
                c0, t0 = cpu_seconds(self.pid), time.perf_counter()
                async with s.get(self.url) as r:
                    await r.read()
                    assert r.status == 200, r.status
                wall = time.perf_counter() - t0
                self.latencies.append(wall)
                self.waits.append(min(wall, cpu_seconds(self.pid) - c0))

    def start(self) -> Poller:
        self._thread.start()
        return self

    def stop(self) -> Poller:
        self._stop.set()
        self._thread.join(120)
        return self


async def run(quick: bool = False) -> dict:
    rounds = 2 if quick else 5
    hub = HubProcess()
    try:
        small = "/api/v1/namespaces/default/configmaps/small"
        async with hub.session() as s:
            async with s.post(hub.url + "/api/v1/namespaces/default/configmaps",
                              data=orjson.dumps({"metadata": {"name": "small"}, "data": {"a": "b"}})) as r:
                assert r.status == 201, await r.text()
            alone: list[float] = []
            during: list[float] = []
            waits: list[float] = []
            writes: list[float] = []
            body_bytes = 0
            for i in range(rounds):
                poller = Poller(hub, small).start()
                await asyncio.sleep(2.0)  # a fixed window of GETs alone
                alone += poller.stop().latencies
                body = big_configmap(f"big-{i}")
                body_bytes = len(body)
                poller = Poller(hub, small).start()
                t0 = time.perf_counter()
                async with s.post(hub.url + "/api/v1/namespaces/default/configmaps", data=body,
                                  timeout=aiohttp.ClientTimeout(total=600)) as r:
                    await r.read()
                    assert r.status == 201, r.status
                writes.append(time.perf_counter() - t0)
                done = poller.stop()
                during += done.latencies
                waits += done.waits
    finally:
        hub.stop()
    return {"keys": KEYS, "body_bytes": body_bytes, "rounds": rounds,
            "write_s": statistics.median(writes),
            "alone": {**percentiles(alone), "max": max(alone) * 1000, "count": len(alone)},
            "during": {**percentiles(during), "max": max(during) * 1000, "count": len(during)},
            "hub_cpu_wait": {**percentiles(waits), "max": max(waits) * 1000}}


def render(st: dict) -> list[str]:
    a, d, w = st["alone"], st["during"], st["hub_cpu_wait"]
    return [
        "## Event-loop stall under a large write",
        "",
        f"A small GET, back to back from its own connection, while a {st['body_bytes'] / 2**20:.1f} MiB ConfigMap of "
        f"{st['keys']:,} keys is created ({st['rounds']} rounds; a create takes {st['write_s']:.2f} s, median), "
        "against the same GET with nothing else going on, in the same run.",
        "",
        "| small GET | p50 (ms) | p99 (ms) | max (ms) | GETs |",
        "|---|---|---|---|---|",
        f"| alone | {a['p50']:.1f} | {a['p99']:.1f} | {a['max']:.1f} | {a['count']} |",
        f"| during the 2 MiB creates | {d['p50']:.1f} | {d['p99']:.1f} | {d['max']:.1f} | {d['count']} |",
        f"| ratio | {d['p50'] / a['p50']:.1f}x | {d['p99'] / a['p99']:.1f}x | {d['max'] / a['max']:.1f}x | |",
        f"| the hub's CPU time during each GET (during the creates) | {w['p50']:.1f} | {w['p99']:.1f} | {w['max']:.1f} | |",
        "",
        f"Goal: the longest stall under 100 ms. Held on the event loop, the GET would have waited the whole "
        f"create ({st['write_s'] * 1000:.0f} ms); the longest wait was {d['max']:.0f} ms.",
    ]


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(asyncio.run(run(quick="--quick" in sys.argv)), indent=2))
