"""Logical clusters at scale (issue 16 item 8): ``python -m bench.logical_clusters [--count N]``.

A fresh ``fleetplane start`` (the fleet controllers off, as bench/cpu.py runs it: only the hub's
own work is measured) gets N logical clusters made on first use by wrk
(bench/wrk/clusters.lua: each request a GET of ``/clusters/<a new name>/api/v1/namespaces/default``,
which writes the LogicalCluster and its four namespaces), in rounds of whole seconds until N
exist. After each round the same wrk creates plain ConfigMaps in one logical cluster of a
second hub started alike (the baseline: one durable write per request; a hub of its own, so
its ConfigMaps are not in the first one's memory). Then, with all N there, the lists kubectl
makes, one request at a time, gzip accepted as client-go does: every LogicalCluster (root's
``logicalclusters``), and every namespace through ``/clusters/*``, whole and in pages of 500
with ``continue``. Memory is the hub's RSS, CPU its process tree's (/proc)."""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import time
import zlib
from typing import Any

import aiohttp
import orjson

from .cpu import CONTROLLERS_OFF
from .hub import HubProcess, tree_cpu_seconds, wrk

LOGICAL_CLUSTERS = "/apis/tenancy.fleetplane.io/v1alpha1/logicalclusters"
NAMESPACES = "/clusters/*/api/v1/namespaces"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
#: client-go's pager (and kubectl's --chunk-size) default
PAGE = 500
GOAL_KIB = 30
GOAL_RATE = 1000
WARM = 20
#: long enough to take in two of the lifecycle controllers' 5 s resyncs
REST_SECONDS = 10.0
#: whole lists after the first
AGAIN = 3


def count(target: HubProcess, path: str) -> int:
    """How many objects ``path`` lists, from a page of one (its remainingItemCount): the
    requests wrk had in flight when it stopped were answered too, but not counted by it."""
    code, body = target.request("GET", path + "?limit=1", timeout=120)
    assert code == 200, (code, body)
    return len(body["items"]) + int(body["metadata"].get("remainingItemCount") or 0)


def _cpu_s(run: dict[str, Any]) -> float:
    """The server's CPU over a wrk run and until it was idle again, in seconds."""
    return (run["server_cpu_us"] + run["after_cpu_us"]) * max(run["requests"], 1) / 1e6


def create(hub: HubProcess, base: HubProcess, n: int, seconds: int, baseline_seconds: int) -> dict[str, Any]:
    """Rounds of cluster creation on ``hub`` until ``n`` logical clusters were made, each followed
    by a round of ConfigMap creates on ``base``; a few of each made first, so that memory is
    measured from a hub that has served the kind of request once."""
    for i in range(WARM):
        assert hub.request("GET", f"/clusters/warm-{i}/api/v1/namespaces/default")[0] == 200
        assert base.request("POST", CONFIGMAPS, {"metadata": {"name": f"warm-{i}"}, "data": {"a": "b"}})[0] == 201
    before, cms_before = count(hub, LOGICAL_CLUSTERS), count(base, CONFIGMAPS)
    rss0, base_rss0 = hub.rss_kib(), base.rss_kib()
    rounds: list[dict[str, Any]] = []
    baseline: list[dict[str, Any]] = []
    t0 = time.monotonic()
    while (answered := sum(r["requests"] for r in rounds)) < n:
        # the last round only as long as what is left takes at the last round's rate
        d = seconds if not rounds else max(1, min(seconds, math.ceil((n - answered) / max(rounds[-1]["rps"], 1))))
        rounds.append(wrk(hub, "clusters.lua", "/", [f"lc{len(rounds)}"], d))
        baseline.append(wrk(base, "create.lua", CONFIGMAPS, ["configmap", f"b{len(baseline)}"], baseline_seconds))
    wall = time.monotonic() - t0
    made, cms = count(hub, LOGICAL_CLUSTERS) - before, count(base, CONFIGMAPS) - cms_before
    rss1, base_rss1 = hub.rss_kib(), base.rss_kib()
    return {
        "clusters": made, "errors": sum(r["errors"] for r in rounds), "rounds": len(rounds), "round_seconds": seconds, "wall_s": wall,
        "rate": statistics.median(r["rps"] for r in rounds), "rates": [round(r["rps"]) for r in rounds],
        "p50_ms": statistics.median(r["p50"] for r in rounds), "p99_ms": statistics.median(r["p99"] for r in rounds),
        "hub_cpu_us": sum(_cpu_s(r) for r in rounds) / made * 1e6,
        "wrk_cpu_us": statistics.median(r["client_cpu_us"] for r in rounds),
        "rss_before_mib": rss0 / 1024, "rss_after_mib": rss1 / 1024, "rss_kib": (rss1 - rss0) / made,
        "baseline": {"configmaps": cms, "errors": sum(r["errors"] for r in baseline), "rate": statistics.median(r["rps"] for r in baseline),
                     "rates": [round(r["rps"]) for r in baseline], "round_seconds": baseline_seconds,
                     "p50_ms": statistics.median(r["p50"] for r in baseline),
                     "p99_ms": statistics.median(r["p99"] for r in baseline),
                     "hub_cpu_us": sum(_cpu_s(r) for r in baseline) / cms * 1e6,
                     "wrk_cpu_us": statistics.median(r["client_cpu_us"] for r in baseline),
                     "rss_kib": (base_rss1 - base_rss0) / cms},
    }


def at_rest(targets: list[HubProcess], seconds: float = REST_SECONDS) -> list[float]:
    """Each target's CPU over the same ``seconds`` of no requests, in % of a core (the hub's own
    controllers look again at every namespace and logical cluster every 5 s)."""
    before = [tree_cpu_seconds(t.pid or 0) for t in targets]
    time.sleep(seconds)
    return [(tree_cpu_seconds(t.pid or 0) - b) / seconds * 100 for t, b in zip(targets, before, strict=True)]


def _json(body: bytes, gzipped: bool) -> bytes:
    return zlib.decompress(body, 31) if gzipped else body


async def _get(s: aiohttp.ClientSession, url: str) -> tuple[float, bytes, bool]:
    """One GET read to its end: seconds, the body as sent, whether it came gzipped."""
    t0 = time.perf_counter()
    async with s.get(url) as r:
        body = await r.read()
        assert r.status == 200, (r.status, body[:300])
        return time.perf_counter() - t0, body, r.headers.get("Content-Encoding") == "gzip"


async def full_list(hub: HubProcess, s: aiohttp.ClientSession, path: str) -> dict[str, Any]:
    """``path`` listed whole: once, which encodes each object (memoized on it), then AGAIN times
    serving what the first kept (their median: one list is one sample of a noisy machine)."""
    runs: list[tuple[float, float, bytes, bool]] = []
    for _ in range(1 + AGAIN):
        cpu0 = tree_cpu_seconds(hub.pid or 0)
        seconds, body, gzipped = await _get(s, hub.url + path)
        runs.append((seconds, tree_cpu_seconds(hub.pid or 0) - cpu0, body, gzipped))
    text = _json(runs[0][2], runs[0][3])
    items = len(orjson.loads(text)["items"])

    def figures(seconds: float, cpu: float, body: bytes) -> dict[str, Any]:
        return {"seconds": seconds, "hub_cpu_s": cpu, "items": items, "wire_bytes": len(body), "json_bytes": len(text),
                "us_per_item": seconds / max(items, 1) * 1e6}

    again = sorted(runs[1:], key=lambda r: r[0])[len(runs[1:]) // 2]
    return {"first": figures(*runs[0][:3]), "again": figures(*again[:3])}


async def paged_list(hub: HubProcess, s: aiohttp.ClientSession, path: str, budget: float) -> dict[str, Any]:
    """``path`` in pages of PAGE, each next page asked with the last one's ``continue`` (as
    client-go's pager does), until the last page or ``budget`` seconds; past the budget the total
    is projected from the pages read (every page asks the same of the hub)."""
    pages = items = wire = 0
    total, cont = 0, ""
    cpu0 = tree_cpu_seconds(hub.pid or 0)
    t0 = time.perf_counter()
    while True:
        url = f"{hub.url}{path}?limit={PAGE}" + (f"&continue={cont}" if cont else "")
        _, body, gzipped = await _get(s, url)
        page = orjson.loads(_json(body, gzipped))
        pages, items, wire = pages + 1, items + len(page["items"]), wire + len(body)
        if pages == 1:
            total = len(page["items"]) + int(page["metadata"].get("remainingItemCount") or 0)
        cont = page["metadata"].get("continue") or ""
        elapsed = time.perf_counter() - t0
        if not cont or elapsed > budget:
            break
    cpu = tree_cpu_seconds(hub.pid or 0) - cpu0
    all_pages = math.ceil(total / PAGE)
    return {"pages": pages, "of_pages": all_pages, "items": items, "of_items": total, "finished": not cont,
            "seconds": elapsed, "budget_s": budget, "wire_bytes": wire, "hub_cpu_s": cpu,
            "ms_per_page": elapsed / pages * 1000,
            "projected_s": elapsed if not cont else elapsed / pages * all_pages}


async def lists(hub: HubProcess, budget: float) -> dict[str, Any]:
    async with aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=hub.ssl, limit=1), auto_decompress=False,
            headers={"Authorization": f"Bearer {hub.token}", "Accept": "application/json", "Accept-Encoding": "gzip"},
            timeout=aiohttp.ClientTimeout(total=600)) as s:
        lcs = await full_list(hub, s, LOGICAL_CLUSTERS)
        namespaces = await full_list(hub, s, NAMESPACES)
        paged = await paged_list(hub, s, NAMESPACES, budget)
    return {"logical_clusters": lcs, "namespaces": namespaces, "namespaces_paged": paged}


def run(n: int, seconds: int, baseline_seconds: int, budget: float) -> dict[str, Any]:
    """``n`` clusters on a fresh hub in rounds of ``seconds`` (baseline rounds of ``baseline_seconds``),
    then the lists (the paged one for at most ``budget`` seconds)."""
    hub = HubProcess(*CONTROLLERS_OFF)
    base = HubProcess(*CONTROLLERS_OFF)
    try:
        result = create(hub, base, n, seconds, baseline_seconds)
        result["rest_cpu_percent"], result["baseline"]["rest_cpu_percent"] = at_rest([hub, base])
        base.stop()
        result["lists"] = asyncio.run(lists(hub, budget))
        rss = hub.rss_kib()
        result["rss_after_lists_mib"] = rss / 1024
        result["rss_after_lists_kib"] = (rss - result["rss_before_mib"] * 1024) / result["clusters"]
    finally:
        base.stop()
        hub.stop()
    return result


def _s(seconds: float) -> str:
    return f"{seconds:.2f} s" if seconds < 10 else f"{seconds:.0f} s"


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def render(r: dict[str, Any]) -> list[str]:
    b, ls = r["baseline"], r["lists"]
    lcs, ns, paged = ls["logical_clusters"], ls["namespaces"], ls["namespaces_paged"]
    n = r["clusters"]
    met = lambda ok: "met" if ok else "not met"  # noqa: E731
    cpu_ratio = r["hub_cpu_us"] / b["hub_cpu_us"] if b["hub_cpu_us"] else float("nan")
    paged_ratio = paged["projected_s"] / ns["again"]["seconds"] if ns["again"]["seconds"] else float("nan")
    paged_time = (_s(paged["seconds"]) if paged["finished"] else
                  f"{_s(paged['projected_s'])} projected ({paged['pages']} of {paged['of_pages']} pages in the"
                  f" {paged['budget_s']:.0f} s budget)")

    def listed(label: str, x: dict[str, Any]) -> str:
        f, a = x["first"], x["again"]
        return (f"| {label} | {f['items']:,} | {_s(f['seconds'])} / {_s(a['seconds'])} | {f['us_per_item']:.1f} /"
                f" {a['us_per_item']:.1f} | {f['hub_cpu_s']:.2f} / {a['hub_cpu_s']:.2f} s | {_mb(a['json_bytes'])}"
                f" ({_mb(a['wire_bytes'])} gzipped) |")

    return [
        "## Logical clusters at scale (`bench/logical_clusters.py`)", "",
        f"{n:,} logical clusters made on first use on a fresh `fleetplane start` (fleet controllers off), each by one"
        " GET of `/clusters/<new name>/api/v1/namespaces/default` from `wrk` (32 connections), which writes its"
        f" LogicalCluster and four namespaces: five durable writes. {r['rounds']} rounds of up to {r['round_seconds']} s"
        f" (per second: {', '.join(map(str, r['rates']))}). Baseline: after each round the same `wrk` creates ConfigMaps"
        " (~300 bytes, one durable write each) in one logical cluster of a second hub started alike"
        f" ({b['round_seconds']} s rounds, {b['configmaps']:,} in all; a hub of its own, so that its ConfigMaps are not in"
        " the first one's memory). Rates and latencies are medians of the rounds; the hub's CPU (its process tree's,"
        " over the rounds and until it was idle again) and its resident memory are divided by what was made.", "",
        "| measure | a logical cluster | baseline: a ConfigMap | ratio | goal |", "|---|---|---|---|---|",
        f"| created per second | {r['rate']:.0f} | {b['rate']:.0f} | {r['rate'] / b['rate']:.2f} | at least {GOAL_RATE:,}"
        f" logical clusters: {met(r['rate'] >= GOAL_RATE)} |",
        f"| request p50 / p99 (ms) | {r['p50_ms']:.0f} / {r['p99_ms']:.0f} | {b['p50_ms']:.0f} / {b['p99_ms']:.0f} | | |",
        f"| hub CPU for each (µs) | {r['hub_cpu_us']:.0f} | {b['hub_cpu_us']:.0f} | {cpu_ratio:.2f} | |",
        f"| wrk CPU per request (µs) | {r['wrk_cpu_us']:.0f} | {b['wrk_cpu_us']:.0f} | | |",
        f"| hub resident memory for each (KiB) | {r['rss_kib']:.1f} | {b['rss_kib']:.1f} | {r['rss_kib'] / b['rss_kib']:.2f} |"
        f" under {GOAL_KIB} KiB: {met(r['rss_kib'] < GOAL_KIB)} |",
        f"| the same after the lists below (KiB) | {r['rss_after_lists_kib']:.1f} | | | under {GOAL_KIB} KiB:"
        f" {met(r['rss_after_lists_kib'] < GOAL_KIB)} |",
        f"| hub CPU at rest, all of them made ({REST_SECONDS:.0f} s, % of a core) | {r['rest_cpu_percent']:.1f} |"
        f" {b['rest_cpu_percent']:.1f} | | |", "",
        *([f"**{r['errors']:,} cluster requests and {b['errors']:,} ConfigMap creates failed** (wrk's errors: non-2xx"
           " answers, timeouts, broken connections); the counts above are what the hubs hold.", ""]
          if r["errors"] or b["errors"] else []),
        f"The hub's RSS went from {r['rss_before_mib']:.0f} MiB to {r['rss_after_mib']:.0f} MiB with the clusters and to"
        f" {r['rss_after_lists_mib']:.0f} MiB after the lists; creation took {_s(r['wall_s'])} with the baseline's rounds.",
        "",
        f"Then, with all {n:,} there, lists one request at a time (aiohttp, gzip accepted as client-go asks), each whole"
        f" list {1 + AGAIN} times: the first encodes each object's JSON (kept on it), the others (their median) serve what"
        " the first kept. The"
        " baseline of the list across `/clusters/*` is the list of every LogicalCluster: as many objects as there are"
        " logical clusters, of about a namespace's size, all in one logical cluster (root), so what differs per object is"
        " the wildcard's walk over every logical cluster. The paged list's baseline is the whole list of the same"
        " namespaces; each page is a request of its own (its own TLS records, gzip, JSON head) and starts at its"
        " `continue` key in the watch cache's key-ordered index; a paged list that has not ended within its budget"
        " is projected from the pages it read.", "",
        "| list | objects | first / again | µs per object, first / again | hub CPU, first / again | JSON (wire) |",
        "|---|---|---|---|---|---|",
        listed("every LogicalCluster (root's `logicalclusters`): the baseline", lcs),
        listed("every namespace through `/clusters/*/api/v1/namespaces`", ns),
        f"| the same in pages of {PAGE} (`limit`, `continue`) | {paged['items']:,} of {paged['of_items']:,} | {paged_time} |"
        f" {paged['ms_per_page']:.0f} ms per page | {paged['hub_cpu_s']:.1f} s | {_mb(paged['wire_bytes'])} gzipped |",
        f"| ratio: paged over whole (again) | | {paged_ratio:.1f} | | | |",
    ]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--count", type=int, default=2000, help="logical clusters to make (make bench: 100000)")
    p.add_argument("--seconds", type=int, default=3, help="length of a creation round (wrk's -d: whole seconds)")
    p.add_argument("--baseline-seconds", type=int, default=2, help="length of a baseline round")
    p.add_argument("--budget", type=float, default=60, help="seconds the paged list may take before it is projected")
    args = p.parse_args()
    result = run(args.count, args.seconds, args.baseline_seconds, args.budget)
    print(json.dumps(result, indent=2))
    print("\n".join(render(result)))


if __name__ == "__main__":
    main()
