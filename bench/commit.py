"""Group commits inside a loaded hub against the raw store's for the same batch (issue 16 item 3).

The hub's embedded store reports every group commit (``fleetplane_storage_commit_duration_seconds``
and ``fleetplane_storage_commit_writes`` on /metrics, the writer process's own time). Under
ConfigMap creates from wrk (32 connections) the mean commit time and batch size are read from there; the raw SQLiteStore then commits batches of
that size back to back in a quiet process, timed by the same hook. Rounds alternate raw, hub,
raw, ... and the medians are compared."""

from __future__ import annotations

import asyncio
import shutil
import statistics
import tempfile
from pathlib import Path

import orjson

from fleetplane.storage.sqlite import SQLiteStore

from .hub import CONNECTIONS, HubProcess, payload, wrk


def _histogram(text: str, name: str) -> tuple[float, float]:
    """(sum, count) of a histogram in the Prometheus text format."""
    total = count = 0.0
    for line in text.splitlines():
        if line.startswith(name + "_sum"):
            total = float(line.split()[-1])
        elif line.startswith(name + "_count"):
            count = float(line.split()[-1])
    return total, count


async def _scrape(hub: HubProcess) -> tuple[float, float, float]:
    """(commit seconds, commits, writes) so far."""
    async with hub.session(2) as s, s.get(hub.url + "/metrics") as r:
        text = await r.text()
    seconds, commits = _histogram(text, "fleetplane_storage_commit_duration_seconds")
    writes, _ = _histogram(text, "fleetplane_storage_commit_writes")
    return seconds, commits, writes


async def hub_round(hub: HubProcess, tag: str, seconds: float) -> dict:
    """ConfigMap creates from wrk (C, 32 keep-alive connections) for ``seconds``: the commits the
    hub reports over them. A C client leaves the writer process the CPU a Python one would take."""
    before = await _scrape(hub)
    w = wrk(hub, "create.lua", "/api/v1/namespaces/default/configmaps", ["configmap", tag], seconds)
    after = await _scrape(hub)
    seconds_, commits, writes = (a - b for a, b in zip(after, before, strict=True))
    return {"commit_ms": 1000 * seconds_ / max(commits, 1), "batch": writes / max(commits, 1), "creates_per_s": w["rps"]}


async def raw_round(batch: int, rounds: int) -> float:
    """Mean commit time (ms) of the raw store committing ``batch`` writes at a time."""
    d = tempfile.mkdtemp(prefix="fleetplane-commit-")
    store = SQLiteStore(Path(d) / "raw.db")
    times: list[float] = []
    store.on_commit = lambda writes, seconds: times.append(seconds) if writes >= batch else None
    await store.start()
    body = orjson.dumps(payload(0))
    for r in range(rounds):
        await asyncio.gather(*(store.create(f"/core/configmaps/root/default/cm-{r}-{i}", body) for i in range(batch)))
    await store.close()
    shutil.rmtree(d, ignore_errors=True)
    return 1000 * statistics.mean(times) if times else 0.0


async def run(rounds: int = 3, seconds: float = 3.0) -> dict:
    hub = HubProcess()
    try:
        hubs: list[dict] = []
        raws: list[float] = []
        await hub_round(hub, "warm", 1.0)
        for r in range(rounds):
            hubs.append(await hub_round(hub, f"r{r}", seconds))
            batch = max(1, round(hubs[-1]["batch"]))
            raws.append(await raw_round(batch, 200))
    finally:
        hub.stop()
    hub_ms = statistics.median(h["commit_ms"] for h in hubs)
    raw_ms = statistics.median(raws)
    return {"rounds": rounds, "seconds": seconds, "concurrency": CONNECTIONS,
            "hub_commit_ms": round(hub_ms, 2), "raw_commit_ms": round(raw_ms, 2),
            "batch": round(statistics.median(h["batch"] for h in hubs), 1),
            "creates_per_s": round(statistics.median(h["creates_per_s"] for h in hubs)),
            "ratio": round(hub_ms / raw_ms, 2) if raw_ms else None}


def render(r: dict) -> list[str]:
    return [
        "## Group commits inside the loaded hub", "",
        f"ConfigMap creates from wrk ({r['concurrency']} connections, {r['seconds']} s per round, {r['rounds']} rounds,"
        f" {r['creates_per_s']}/s): the hub's own commit metrics against the raw SQLiteStore committing batches of"
        " the same size in a quiet process, rounds interleaved, medians.", "",
        "| | mean group commit (ms) | writes per commit |", "|---|---|---|",
        f"| inside the hub | {r['hub_commit_ms']} | {r['batch']} |",
        f"| raw store, same batch | {r['raw_commit_ms']} | {r['batch']} |",
        f"| ratio | {r['ratio']} | goal at most 1.5 |",
    ]


if __name__ == "__main__":
    print(asyncio.run(run()))
