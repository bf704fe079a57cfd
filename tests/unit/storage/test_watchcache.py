"""The watch cache in-process over a temporary SQLite file: consistent reads wait for the store's
revision, watches start from history, a resourceVersion older than the history is 410 Expired,
history is bounded by count, bytes and age, a watcher too far behind is dropped, and each event is encoded once for every watcher."""

from __future__ import annotations

import asyncio
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from fleetplane.storage import watchcache
from fleetplane.storage.interface import CompactedError
from fleetplane.storage.sqlite import SQLiteStore
from fleetplane.storage.watchcache import CachedObject, HistoryLimits, WatchCache, Watcher, WatchEvent

PREFIX = "/core/configmaps/"
MIB = 1024 * 1024


def key(name: str, cluster: str = "root", namespace: str = "default") -> str:
    return f"{PREFIX}{cluster}/{namespace}/{name}"


def value(name: str, **data: str) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})


def everything(_: CachedObject) -> bool:
    return True


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "kv.db", synchronous="OFF")
    await s.start()
    try:
        yield s
    finally:
        await s.close()


@pytest.fixture
async def cache(store: SQLiteStore) -> AsyncIterator[WatchCache]:
    c = WatchCache(store)
    await c.start()
    try:
        yield c
    finally:
        await c.close()


async def next_event(w: Watcher) -> WatchEvent:
    ev = await asyncio.wait_for(w.queue.get(), 10)
    assert ev is not None, "the watch ended"
    return ev


async def test_a_consistent_read_waits_for_the_store_revision(store: SQLiteStore, cache: WatchCache) -> None:
    rev = await store.create(key("a"), value("a", k="v"))
    assert await cache.sync() == rev  # returns once the cache has applied the write
    got = cache.resource(PREFIX).get(key("a"))
    assert got is not None and got.revision == rev
    assert got.obj["metadata"]["resourceVersion"] == str(rev) and got.obj["data"] == {"k": "v"}
    updated = await store.update(key("a"), value("a", k="w"), rev)
    await cache.sync()
    assert cache.resource(PREFIX).get(key("a")).obj["data"] == {"k": "w"}  # type: ignore[union-attr]
    assert cache.revision == updated


async def test_waiting_for_a_revision_not_written_times_out(store: SQLiteStore, cache: WatchCache) -> None:
    rev = await store.create(key("a"), value("a"))
    await cache.sync()
    with pytest.raises(TimeoutError):
        await cache.wait_for(rev + 1, timeout=0.2)


async def test_lists_are_scoped_by_cluster_and_namespace(store: SQLiteStore, cache: WatchCache) -> None:
    for k in (key("a"), key("b", namespace="other"), key("c", cluster="team")):
        await store.create(k, value(k.rsplit("/", 1)[1]))
    await cache.sync()
    rc = cache.resource(PREFIX)
    assert sorted(o.name for o in rc.objects("root", None)) == ["a", "b"]
    assert [o.name for o in rc.objects("root", "other")] == ["b"]
    assert sorted(o.name for o in rc.objects(None, None)) == ["a", "b", "c"]  # every logical cluster
    assert rc.count("team") == 1


async def test_a_watch_replays_history_after_its_revision_then_follows(store: SQLiteStore, cache: WatchCache) -> None:
    a = await store.create(key("a"), value("a"))
    b = await store.create(key("b"), value("b"))
    a2 = await store.update(key("a"), value("a", v="2"), a)
    deleted = await store.delete(key("b"), b)
    await cache.sync()
    w, replay = cache.watch(PREFIX, "root", None, everything, a)
    try:
        assert [(ev.type, ev.cur.name, ev.revision) for ev in replay] == [
            ("ADDED", "b", b), ("MODIFIED", "a", a2), ("DELETED", "b", deleted)]
        c = await store.create(key("c"), value("c"))
        ev = await next_event(w)
        assert (ev.type, ev.cur.name, ev.revision) == ("ADDED", "c", c)
    finally:
        w.stop()
    _, none_yet = cache.watch(PREFIX, "root", None, everything, None)  # no revision: from now on
    assert none_yet == []


async def test_a_watch_from_before_the_cache_started_is_too_old(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "kv.db", synchronous="OFF")
    await store.start()
    try:
        first = await store.create(key("a"), value("a"))
        await store.create(key("b"), value("b"))
        cache = WatchCache(store)  # as after a restart: no history before its start
        await cache.start()
        try:
            with pytest.raises(CompactedError) as info:
                cache.watch(PREFIX, "root", None, everything, first)
            assert (info.value.requested, info.value.compacted) == (first, cache.revision)
        finally:
            await cache.close()
    finally:
        await store.close()


@pytest.fixture
async def bounded(store: SQLiteStore) -> AsyncIterator[tuple[WatchCache, list[float]]]:
    """A cache with small history limits and a clock the test moves."""
    now = [1000.0]
    c = WatchCache(store, HistoryLimits(events=3, seconds=75, bytes=5 * MIB), clock=lambda: now[0])
    await c.start()
    try:
        yield c, now
    finally:
        await c.close()


async def test_history_beyond_its_count_is_too_old(store: SQLiteStore, bounded: tuple[WatchCache, list[float]]) -> None:
    cache, _ = bounded
    revs = [await store.create(key(f"h{i}"), value(f"h{i}")) for i in range(5)]  # a new resource's history
    await cache.sync()
    w, replay = cache.watch(PREFIX, "root", None, everything, revs[2])
    w.stop()
    assert [ev.revision for ev in replay] == [revs[3], revs[4]]
    assert len(cache.resource(PREFIX).history) == 3
    with pytest.raises(CompactedError):
        cache.watch(PREFIX, "root", None, everything, revs[0])


async def test_large_updates_do_not_pile_up_past_the_byte_budget(store: SQLiteStore,
                                                                 bounded: tuple[WatchCache, list[float]]) -> None:
    cache, _ = bounded
    rev = await store.create(key("big"), value("big", blob="x"))
    revs = [rev]
    for i in range(6):  # 2 MiB each: a count-only cap of 3 would keep 6 MiB
        rev = await store.update(key("big"), value("big", blob=str(i) * (2 * MIB)), rev)
        revs.append(rev)
    await cache.sync()
    rc = cache.resource(PREFIX)
    assert rc.history_bytes <= 5 * MIB
    assert [ev.revision for ev in rc.history] == revs[-2:]
    assert rc.history_bytes == sum(ev.size for ev in rc.history)
    assert cache.history_sizes() == [(PREFIX, 2, rc.history_bytes)]
    w, replay = cache.watch(PREFIX, "root", None, everything, revs[-3])  # the newest two replayed
    w.stop()
    assert [ev.revision for ev in replay] == revs[-2:]
    with pytest.raises(CompactedError):  # what the byte budget dropped: 410, the client relists
        cache.watch(PREFIX, "root", None, everything, revs[-4])
    # one event larger than the whole budget is still kept: a watch can resume right before it
    huge = await store.update(key("big"), value("big", blob="y" * (6 * MIB)), rev)
    await cache.sync()
    assert [ev.revision for ev in rc.history] == [huge]
    w, replay = cache.watch(PREFIX, "root", None, everything, rev)
    w.stop()
    assert [ev.revision for ev in replay] == [huge]


async def test_old_events_age_out(store: SQLiteStore, bounded: tuple[WatchCache, list[float]]) -> None:
    cache, now = bounded
    first = await store.create(key("a"), value("a"))
    second = await store.create(key("b"), value("b"))
    await cache.sync()
    now[0] += 50
    third = await store.create(key("c"), value("c"))
    await cache.sync()
    now[0] += 30  # the first two are 80 s old, the third 30 s
    with pytest.raises(CompactedError):  # aged out without another write to the resource
        cache.watch(PREFIX, "root", None, everything, first)
    w, replay = cache.watch(PREFIX, "root", None, everything, second)
    w.stop()
    assert [ev.revision for ev in replay] == [third]
    now[0] += 60
    cache.resource(PREFIX).trim()  # as the sweeper does for a resource nobody writes to
    assert cache.history_sizes() == [(PREFIX, 0, 0)]
    w, replay = cache.watch(PREFIX, "root", None, everything, third)  # nothing missed since: no 410
    w.stop()
    assert replay == []


async def test_a_watcher_too_far_behind_is_dropped(store: SQLiteStore, cache: WatchCache,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watchcache, "WATCHER_QUEUE_LIMIT", 2)
    slow, _ = cache.watch(PREFIX, "root", None, everything, None)
    keeping_up, _ = cache.watch(PREFIX, "root", None, everything, None)
    seen: list[str] = []
    for i in range(3):
        await store.create(key(f"s{i}"), value(f"s{i}"))
        await cache.sync()
        seen.append((await next_event(keeping_up)).cur.name)
    assert seen == ["s0", "s1", "s2"] and not keeping_up.closed
    assert slow.overflowed and slow.closed
    assert slow not in cache.resource(PREFIX).watchers
    drained = [slow.queue.get_nowait() for _ in range(slow.queue.qsize())]
    assert [ev.cur.name for ev in drained if ev is not None] == ["s0", "s1"] and drained[-1] is None  # then it ends
    keeping_up.stop()


async def test_each_event_is_encoded_once_for_every_watcher(store: SQLiteStore, cache: WatchCache) -> None:
    first, _ = cache.watch(PREFIX, "root", None, everything, None)
    second, _ = cache.watch(PREFIX, None, None, everything, None)
    try:
        await store.create(key("a"), value("a", k="v"))
        one, other = await next_event(first), await next_event(second)
        assert one is other  # the same event object, fanned out
        assert one.encoded() is other.encoded()
        assert orjson.loads(one.encoded())["data"] == {"k": "v"}
    finally:
        first.stop()
        second.stop()


async def test_an_events_json_is_kept_at_its_own_size(store: SQLiteStore, cache: WatchCache) -> None:
    """The encoded event stays in the history: not in orjson's 4 KiB buffer."""
    w, _ = cache.watch(PREFIX, None, None, everything, None)
    try:
        await store.create(key("a"), value("a", k="v" * 300))
        ev = await next_event(w)
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            encoded = ev.encoded()
            kept = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        assert orjson.loads(encoded)["data"] == {"k": "v" * 300}
        assert kept < 2 * len(encoded), (kept, len(encoded))
    finally:
        w.stop()


async def test_a_watcher_sees_an_object_leave_its_selector_as_deleted(store: SQLiteStore, cache: WatchCache) -> None:
    def web(o: CachedObject) -> bool:
        return o.obj.get("data", {}).get("app") == "web"

    w, _ = cache.watch(PREFIX, "root", None, web, None)
    try:
        rev = await store.create(key("a"), value("a", app="web"))
        assert (await next_event(w)).type == "ADDED"
        rev = await store.update(key("a"), value("a", app="db"), rev)
        left = await next_event(w)
        assert (left.type, left.revision) == ("DELETED", rev)
        # and the shared encoding is kept for the translated event
        assert left.encoded() == orjson.dumps(cache.resource(PREFIX).get(key("a")).obj)  # type: ignore[union-attr]
    finally:
        w.stop()


async def test_a_scope_lists_its_range_in_key_order_through_every_change(store: SQLiteStore, cache: WatchCache) -> None:
    """objects(cluster, namespace, after) reads the scope's range of the key index, in key order,
    from just after ``after``: right after creates (also loaded at start), updates and deletes;
    count() agrees with it without reading the objects."""
    a = await store.create(key("a"), value("a"))
    await store.create(key("b", namespace="other"), value("b"))
    await store.create(key("c", cluster="east"), value("c"))
    await store.create(key("d"), value("d"))
    await store.create(key("e", cluster="east-2"), value("e"))  # a cluster whose name extends another's
    await cache.sync()
    rc = cache.resource(PREFIX)

    def names(cluster: str | None, ns: str | None, after: str = "") -> list[str]:
        found = [o.name for o in rc.objects(cluster, ns, after)]
        assert rc.count(cluster, ns, after) == len(found)
        return found

    assert names("root", "default") == ["a", "d"] and names("root", "other") == ["b"] and names("east", "default") == ["c"]
    assert names("root", None) == ["a", "d", "b"] and names(None, "default") == ["e", "c", "a", "d"]
    assert names(None, None) == ["e", "c", "a", "d", "b"]  # "-" sorts before "/"
    # a page's start: after a key in scope, before the scope, past it
    assert names("root", None, after=key("a")) == ["d", "b"] and names("root", "default", after=key("d")) == []
    assert names("root", None, after=key("c", cluster="east")) == ["a", "d", "b"]
    assert names("east", None, after=key("a")) == [] and names(None, "default", after=key("e", cluster="east-2")) == ["c", "a", "d"]
    a2 = await store.update(key("a"), value("a", v="2"), a)
    await cache.sync()
    assert [o.obj["data"] for o in rc.objects("root", "default")] == [{"v": "2"}, {}]
    await store.delete(key("a"), a2)
    await cache.sync()
    assert names("root", "default") == ["d"] and rc.get(key("a")) is None
    restarted = WatchCache(store)  # loaded from the store at start: indexed too
    await restarted.start()
    try:
        assert [o.name for o in restarted.resource(PREFIX).objects(None, None)] == ["e", "c", "d", "b"]
    finally:
        await restarted.close()


def labelled(name: str, **labels: str) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}})


async def test_watchers_indexed_by_a_label_see_what_unindexed_ones_see(store: SQLiteStore, cache: WatchCache) -> None:
    """Objects moving between label values, appearing and going, in two logical clusters: a
    watcher offered only the events its label index admits gets exactly the events of one
    offered every event (entering its selector as ADDED, leaving as DELETED)."""
    import random

    rng = random.Random(7)
    values = ["a", "b", "c"]

    def selecting(v: str) -> watchcache.Filter:
        return lambda o: (o.obj["metadata"].get("labels") or {}).get("cluster") == v

    pairs = [(cache.watch(PREFIX, c, None, selecting(v), None, label=("cluster", v))[0],
              cache.watch(PREFIX, c, None, selecting(v), None)[0]) for v in values for c in ("root", None)]
    revs: dict[str, int] = {}
    try:
        for step in range(60):
            name, cluster = f"o{rng.randrange(4)}", rng.choice(["root", "other"])
            k = key(name, cluster)
            if k in revs and rng.random() < 0.25:
                await store.delete(k, revs.pop(k))
                continue
            labels = {"cluster": rng.choice(values)} if rng.random() < 0.8 else {"other": "x"}
            body = labelled(name, step=str(step), **labels)
            revs[k] = await store.update(k, body, revs[k]) if k in revs else await store.create(k, body)
        await cache.sync()
        for indexed, full in pairs:
            got, want = [], []
            while not indexed.queue.empty():
                got.append(indexed.queue.get_nowait())
            while not full.queue.empty():
                want.append(full.queue.get_nowait())
            assert want, "the sequence gave every watcher something to see"
            assert [(e.type, e.cur.key, e.revision) for e in got] == [(e.type, e.cur.key, e.revision) for e in want]
    finally:
        for pair in pairs:
            for w in pair:
                w.stop()
    assert not cache.resource(PREFIX).watchers and not cache.resource(PREFIX)._dispatch


async def test_an_event_is_offered_only_to_the_watchers_its_labels_concern(store: SQLiteStore, cache: WatchCache) -> None:
    """A thousand watchers each selecting its own label value: an object's change is offered to
    the one watching its value (and to unindexed watchers), not to the thousand."""
    def selecting(v: str) -> watchcache.Filter:
        return lambda o: (o.obj["metadata"].get("labels") or {}).get("cluster") == v

    many = [cache.watch(PREFIX, "root", None, selecting(f"c{i}"), None, label=("cluster", f"c{i}"))[0] for i in range(1000)]
    unindexed, _ = cache.watch(PREFIX, None, None, everything, None)
    try:
        rev = await store.create(key("x"), labelled("x", cluster="c7"))
        await cache.sync()
        rc = cache.resource(PREFIX)
        last = rc.history[-1]
        assert set(rc.concerned(last)) == {many[7], unindexed}
        await store.update(key("x"), labelled("x", cluster="c8"), rev)
        await cache.sync()
        moved = rc.history[-1]
        assert set(rc.concerned(moved)) == {many[7], many[8], unindexed}
        assert (await next_event(many[7])).type == "ADDED" and (await next_event(many[7])).type == "DELETED"
        assert (await next_event(many[8])).type == "ADDED"
    finally:
        for w in [*many, unindexed]:
            w.stop()
