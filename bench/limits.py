"""Limits: the watch cache's memory for large objects under its byte budget beside the count-only
cap it had before (the same updates, the same run), and the YAML loader against PyYAML's.

Watch cache: one ConfigMap updated again and again with a 2 MiB value, fed to a resource's cache
as the store's watch feeds it. The count-only rule (20,000 events, no byte or age bound) keeps
every update; the byte budget keeps what fits in 32 MiB. Memory is what tracemalloc sees
held after the updates (the cached objects, their history, their encodings), counted object by object.

YAML: a ~200 KB manifest decoded by :func:`fleetplane.apimachinery.yamljson.yaml_to_json` (libyaml's
events, go-yaml's rules and limits) beside ``yaml.safe_load`` (the hub's previous loader).
"""

from __future__ import annotations

import collections
import sys
import time
from collections.abc import Iterator
from typing import Any

import orjson
import yaml

from fleetplane.apimachinery.limits import MAX_DEPTH, MAX_OBJECT_BYTES
from fleetplane.apimachinery.yamljson import yaml_to_json
from fleetplane.storage.interface import Event, EventType
from fleetplane.storage.watchcache import HISTORY_PER_RESOURCE, HistoryLimits, ResourceCache

MIB = 1024 * 1024
KEY = "/core/configmaps/root/default/big"


def _updates(n: int, size: int) -> Iterator[Event]:
    return (Event(EventType.PUT, KEY, orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                                                    "metadata": {"name": "big", "namespace": "default"},
                                                    "data": {"blob": chr(ord("a") + i % 26) * size}}), 100 + i, 100)
            for i in range(n))


def _retained(rc: ResourceCache) -> int:
    """Bytes of the Python objects the resource's cache holds (history, current objects, cached
    encodings), each object counted once. (tracemalloc would count orjson's output buffers at the
    size they were allocated with, not the size they are shrunk to.)"""
    seen: set[int] = set()
    total = 0
    stack: list[Any] = [rc.history, rc.by_cluster]
    for ev in rc.history:
        stack += [ev, ev.cur, ev.cur.obj, ev._encoded]
        if ev.prev is not None:
            stack += [ev.prev, ev.prev.obj]
    while stack:
        o = stack.pop()
        if o is None or id(o) in seen:
            continue
        seen.add(id(o))
        total += sys.getsizeof(o)
        if isinstance(o, dict):
            stack += list(o.keys()) + list(o.values())
        elif isinstance(o, (list, collections.deque)):
            stack += list(o)
    return total


def _held(limits: HistoryLimits, n: int, size: int) -> dict[str, Any]:
    rc = ResourceCache("/core/configmaps/", 99, limits)
    for ev in _updates(n, size):
        rc.apply(ev).encoded()  # as a watcher's fan-out would encode it
    held = _retained(rc)
    kept = len(rc.history)
    return {"updates": n, "kept": kept, "held_mib": round(held / MIB, 1), "history_mib": round(rc.history_bytes / MIB, 1),
            "per_update_mib": round(held / MIB / n, 2), "per_kept_event_mib": round(held / MIB / max(kept, 1), 2)}


def _manifest() -> str:
    doc = {"apiVersion": "example.com/v1", "kind": "Blob", "metadata": {"name": "m", "labels": {"app": "web"}},
           "spec": {"items": [{"name": f"item-{i}", "port": 8000 + i, "enabled": i % 2 == 0, "ratio": i / 7,
                               "tags": ["a", "b", "c"], "nested": {"p": {"q": {"r": str(i)}}}} for i in range(1500)]}}
    return yaml.safe_dump(doc)


def _timed(fn: Any, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def run(quick: bool = False) -> dict[str, Any]:
    n = 20 if quick else 60
    count_only = HistoryLimits(events=HISTORY_PER_RESOURCE, seconds=float("inf"), bytes=1 << 62)
    before = _held(count_only, n, 2 * MIB)
    now = _held(HistoryLimits(), n, 2 * MIB)
    text = _manifest()
    body = text.encode()
    assert yaml_to_json(body, max_depth=MAX_DEPTH, max_bytes=MAX_OBJECT_BYTES) == yaml.safe_load(text)
    rounds = 3 if quick else 7
    new_s = _timed(lambda: yaml_to_json(body, max_depth=MAX_DEPTH, max_bytes=MAX_OBJECT_BYTES), rounds)
    old_s = _timed(lambda: yaml.safe_load(text), rounds)
    return {"watch_cache": {"object_mib": 2, "before": before, "now": now,
                            "ratio_held": round(now["held_mib"] / before["held_mib"], 3)},
            "yaml": {"bytes": len(body), "new_ms": round(new_s * 1000, 1), "old_ms": round(old_s * 1000, 1),
                     "ratio": round(new_s / old_s, 2)}}


def render(r: dict[str, Any]) -> list[str]:
    w, y = r["watch_cache"], r["yaml"]
    b, n = w["before"], w["now"]
    return [
        "## Limits: watch-cache memory for large objects, and the YAML loader", "",
        f"One ConfigMap updated {b['updates']} times with a {w['object_mib']} MiB value, fed to a resource's watch cache;"
        " memory is what the cache's objects (history, current state, encodings) hold afterwards.", "",
        "| history rule | events kept | memory held | per update written | per event kept |", "|---|---|---|---|---|",
        f"| count only (20,000 events; before) | {b['kept']} | {b['held_mib']} MiB | {b['per_update_mib']} MiB |"
        f" {b['per_kept_event_mib']} MiB |",
        f"| count, 75 s and 32 MiB of objects (now) | {n['kept']} | {n['held_mib']} MiB | {n['per_update_mib']} MiB |"
        f" {n['per_kept_event_mib']} MiB |",
        f"| ratio now / before | | {w['ratio_held']} | | |", "",
        "Before, the cache would have kept up to 20,000 such events (some 80 GiB at 4 MiB each: the parsed object and"
        " its shared encoding); now a resource's history holds at most its 32 MiB budget of stored JSON, about twice"
        " that in memory.", "",
        f"YAML: a {y['bytes'] // 1024} KiB manifest decoded in {y['new_ms']} ms by the go-yaml-compatible loader beside"
        f" {y['old_ms']} ms by `yaml.safe_load` (the previous loader): ratio {y['ratio']}.",
    ]


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick=True), indent=2))
