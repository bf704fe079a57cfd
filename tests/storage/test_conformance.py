"""The storage interface's contract, run against every backend (SQLite now; etcd joins later)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from fleetplane.storage.interface import (
    CompactedError,
    EventType,
    KeyExistsError,
    KeyNotFoundError,
    RevisionMismatchError,
)
from fleetplane.storage.sqlite import SQLiteStore


@pytest.fixture(params=["sqlite"])
async def store(request, tmp_path) -> AsyncIterator:
    s = SQLiteStore(tmp_path / "store.db")
    await s.start()
    yield s
    await s.close()


async def test_create_get_and_revisions_increase(store):
    r1 = await store.create("/core/configmaps/root/ns/a", b"A")
    r2 = await store.create("/core/configmaps/root/ns/b", b"B")
    assert r2 > r1
    kv = await store.get("/core/configmaps/root/ns/a")
    assert kv.value == b"A" and kv.create_revision == kv.mod_revision == r1
    assert await store.current_revision() == r2
    with pytest.raises(KeyExistsError):
        await store.create("/core/configmaps/root/ns/a", b"again")
    assert (await store.get("/core/configmaps/root/ns/a")).value == b"A"


async def test_update_and_delete_are_guarded_by_revision(store):
    r1 = await store.create("/k/x/root/a", b"1")
    r2 = await store.update("/k/x/root/a", b"2", r1)
    with pytest.raises(RevisionMismatchError) as exc:
        await store.update("/k/x/root/a", b"3", r1)
    assert exc.value.current.mod_revision == r2 and exc.value.current.value == b"2"
    with pytest.raises(RevisionMismatchError):
        await store.delete("/k/x/root/a", r1)
    await store.delete("/k/x/root/a", r2)
    assert await store.get("/k/x/root/a") is None
    with pytest.raises(KeyNotFoundError):
        await store.update("/k/x/root/a", b"4", r2)


async def test_range_is_a_prefix_scan_in_key_order(store):
    for key in ["/g/r/c1/b", "/g/r/c1/a", "/g/r/c2/a", "/g/r2/c1/a", "/g/r/c1x/a"]:
        await store.create(key, key.encode())
    kvs, rev = await store.range("/g/r/c1/")
    assert [kv.key for kv in kvs] == ["/g/r/c1/a", "/g/r/c1/b"]
    kvs, _ = await store.range("/g/r/")
    assert [kv.key for kv in kvs] == ["/g/r/c1/a", "/g/r/c1/b", "/g/r/c1x/a", "/g/r/c2/a"]
    assert rev == await store.current_revision()


async def test_watch_from_revision_replays_history_then_follows(store):
    r1 = await store.create("/w/r/c/a", b"1")
    r2 = await store.update("/w/r/c/a", b"2", r1)
    await store.create("/other/r/c/a", b"x")
    seen = []

    async def consume():
        async for ev in store.watch("/w/", r1):
            seen.append((ev.type, ev.key, ev.value, ev.revision))
            if len(seen) == 3:
                return

    task = asyncio.create_task(consume())
    await asyncio.sleep(0)
    r3 = await store.delete("/w/r/c/a", r2)
    await asyncio.wait_for(task, 5)
    assert seen == [(EventType.PUT, "/w/r/c/a", b"1", r1), (EventType.PUT, "/w/r/c/a", b"2", r2),
                    (EventType.DELETE, "/w/r/c/a", b"2", r3)]


async def test_compaction_expires_old_revisions(store):
    r1 = await store.create("/c/r/c/a", b"1")
    r2 = await store.update("/c/r/c/a", b"2", r1)
    await store.compact(r2)
    assert await store.compacted_revision() == r2
    with pytest.raises(CompactedError):
        async for _ in store.watch("/c/", r1):
            pass
    # watching from the compaction point itself still works
    agen = store.watch("/c/", r2)
    ev = await asyncio.wait_for(agen.__anext__(), 5)
    assert ev.revision == r2
    await agen.aclose()


async def test_concurrent_writers_get_distinct_revisions_and_one_wins_a_race(store):
    revs = await asyncio.gather(*(store.create(f"/p/r/c/k{i}", b"v") for i in range(200)))
    assert len(set(revs)) == 200
    base = (await store.get("/p/r/c/k0")).mod_revision
    results = await asyncio.gather(*(store.update("/p/r/c/k0", f"{i}".encode(), base) for i in range(10)),
                                   return_exceptions=True)
    assert sum(1 for r in results if isinstance(r, int)) == 1
    assert all(isinstance(r, RevisionMismatchError) for r in results if not isinstance(r, int))


async def test_data_survives_reopen(tmp_path):
    s = SQLiteStore(tmp_path / "s.db")
    await s.start()
    rev = await s.create("/d/r/c/a", b"kept")
    await s.close()
    s2 = SQLiteStore(tmp_path / "s.db")
    await s2.start()
    try:
        assert (await s2.get("/d/r/c/a")).value == b"kept"
        assert await s2.current_revision() == rev
        assert await s2.create("/d/r/c/b", b"next") > rev
    finally:
        await s2.close()
