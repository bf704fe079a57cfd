"""The watch cache in-process over a temporary SQLite file: consistent reads wait for the store's
revision, watches start from history, a resourceVersion older than the history is 410 Expired,
a watcher too far behind is dropped, and each event is encoded once for every watcher."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from fleetplane.storage import watchcache
from fleetplane.storage.interface import CompactedError
from fleetplane.storage.sqlite import SQLiteStore
from fleetplane.storage.watchcache import CachedObject, WatchCache, Watcher, WatchEvent

PREFIX = "/core/configmaps/"


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


async def test_history_beyond_its_limit_is_too_old(store: SQLiteStore, cache: WatchCache,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watchcache, "HISTORY_PER_RESOURCE", 2)
    revs = [await store.create(key(f"h{i}"), value(f"h{i}")) for i in range(4)]  # a new resource's history
    await cache.sync()
    w, replay = cache.watch(PREFIX, "root", None, everything, revs[2])
    w.stop()
    assert [ev.revision for ev in replay] == [revs[3]]
    with pytest.raises(CompactedError):
        cache.watch(PREFIX, "root", None, everything, revs[0])


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
