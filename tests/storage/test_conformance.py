"""The storage interface's contract, run against every backend (SQLite and etcd).

The ``backend``/``store`` fixtures (conftest.py) parametrize each test over both; etcd is a
real single-member etcd process started once per module.
"""

from __future__ import annotations

import asyncio

import pytest

from fleetplane.storage.interface import (
    CompactedError,
    EventType,
    KeyExistsError,
    KeyNotFoundError,
    RevisionMismatchError,
)


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


async def test_data_survives_reopen(backend):
    s = await backend.open()
    rev = await s.create("/d/r/c/a", b"kept")
    await s.close()
    s2 = await backend.open()
    try:
        assert (await s2.get("/d/r/c/a")).value == b"kept"
        assert await s2.current_revision() >= rev
        assert await s2.create("/d/r/c/b", b"next") > rev
    finally:
        await s2.close()


async def test_guards_on_absent_keys_and_recreation(store):
    with pytest.raises(KeyNotFoundError):
        await store.update("/g/r/c/none", b"x", 1)
    with pytest.raises(KeyNotFoundError):
        await store.delete("/g/r/c/none", 1)
    r1 = await store.create("/g/r/c/a", b"1")
    r2 = await store.update("/g/r/c/a", b"2", r1)
    kv = await store.get("/g/r/c/a")
    assert (kv.create_revision, kv.mod_revision) == (r1, r2)  # create_revision survives updates
    r3 = await store.delete("/g/r/c/a", r2)
    assert r3 > r2 and await store.get("/g/r/c/a") is None
    with pytest.raises(KeyNotFoundError):
        await store.update("/g/r/c/a", b"3", r2)
    r4 = await store.create("/g/r/c/a", b"again")
    kv = await store.get("/g/r/c/a")
    assert kv.create_revision == kv.mod_revision == r4 > r3


async def test_concurrent_creates_of_one_key_one_wins(store):
    results = await asyncio.gather(*(store.create("/o/r/c/k", f"{i}".encode()) for i in range(10)),
                                   return_exceptions=True)
    wins = [r for r in results if isinstance(r, int)]
    assert len(wins) == 1
    assert all(isinstance(r, KeyExistsError) for r in results if not isinstance(r, int))


async def test_watch_events_carry_revisions_and_the_deleted_value(store):
    start = await store.current_revision() + 1
    agen = store.watch("/e/", start)
    first = asyncio.ensure_future(agen.__anext__())
    await asyncio.sleep(0.05)
    r1 = await store.create("/e/r/c/a", b"v1")
    r2 = await store.delete("/e/r/c/a", r1)
    evs = [await asyncio.wait_for(first, 5), await asyncio.wait_for(agen.__anext__(), 5)]
    await agen.aclose()
    assert [(ev.type, ev.value, ev.revision, ev.create_revision) for ev in evs] == [
        (EventType.PUT, b"v1", r1, r1), (EventType.DELETE, b"v1", r2, r1)]


async def test_watch_from_zero_sees_only_later_changes(store):
    await store.create("/z/r/c/old", b"old")
    agen = store.watch("/z/", 0)
    nxt = asyncio.ensure_future(agen.__anext__())
    await asyncio.sleep(0.1)
    r = await store.create("/z/r/c/new", b"new")
    ev = await asyncio.wait_for(nxt, 5)
    await agen.aclose()
    assert (ev.key, ev.revision) == ("/z/r/c/new", r)


async def test_watch_resume_after_a_break_has_no_gap_and_no_duplicate(store):
    revs = [await store.create(f"/res/r/c/k{i}", b"x") for i in range(5)]
    seen = []
    agen = store.watch("/res/", revs[0])
    for _ in range(3):
        seen.append((await asyncio.wait_for(agen.__anext__(), 5)).revision)
    await agen.aclose()  # the stream breaks here; more writes happen meanwhile
    revs += [await store.create(f"/res/r/c/k{i}", b"x") for i in range(5, 8)]
    agen = store.watch("/res/", seen[-1] + 1)
    while len(seen) < len(revs):
        seen.append((await asyncio.wait_for(agen.__anext__(), 5)).revision)
    await agen.aclose()
    assert seen == revs


async def test_compaction_keeps_current_state_and_later_history(store):
    r1 = await store.create("/k/r/c/a", b"1")
    r2 = await store.create("/k/r/c/b", b"2")
    r3 = await store.update("/k/r/c/a", b"3", r1)
    await store.compact(r3)
    assert await store.compacted_revision() >= r3
    kvs, _ = await store.range("/k/")
    assert [(kv.key, kv.value, kv.mod_revision) for kv in kvs] == [("/k/r/c/a", b"3", r3), ("/k/r/c/b", b"2", r2)]
    with pytest.raises(CompactedError) as exc:
        async for _ in store.watch("/k/", r2):
            pass
    assert exc.value.compacted >= r3
    # compacting to an older revision again is harmless
    await store.compact(r2)
    r4 = await store.update("/k/r/c/b", b"4", r2)
    assert (await store.get("/k/r/c/b")).mod_revision == r4


async def test_current_revision_is_read_your_writes(store):
    for i in range(20):
        r = await store.create(f"/ryw/r/c/k{i}", b"x")
        assert await store.current_revision() >= r
        assert (await store.get(f"/ryw/r/c/k{i}")).mod_revision == r


async def test_range_over_many_keys_pages_at_one_revision(store, monkeypatch):
    from fleetplane.storage import etcd

    monkeypatch.setattr(etcd, "RANGE_PAGE", 7)  # etcd reads in pages; SQLite in one go
    await asyncio.gather(*(store.create(f"/pg/r/c/k{i:03d}", f"{i}".encode()) for i in range(50)))
    kvs, rev = await store.range("/pg/")
    assert [kv.key for kv in kvs] == [f"/pg/r/c/k{i:03d}" for i in range(50)]
    assert rev == await store.current_revision()
