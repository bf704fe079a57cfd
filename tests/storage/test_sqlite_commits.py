"""The embedded store's group commit (storage/sqlite.py): writes queued together commit in one
transaction of a few multi-row statements and still apply one after another, in order."""

from __future__ import annotations

import asyncio
from pathlib import Path

from fleetplane.storage.interface import EventType, KeyExistsError, KeyNotFoundError, RevisionMismatchError
from fleetplane.storage.sqlite import SQLiteStore


async def test_writes_queued_together_apply_in_order(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "db")
    commits: list[int] = []
    store.on_commit = lambda writes, seconds: commits.append(writes)
    await store.start()
    try:
        r0 = await store.create("/o/r/c/a", b"old")
        r1 = await store.create("/o/r/c/u", b"u1")
        commits.clear()
        results = await asyncio.gather(
            store.delete("/o/r/c/a", r0), store.create("/o/r/c/a", b"new"), store.create("/o/r/c/b", b"B"),
            store.create("/o/r/c/b", b"B2"), store.update("/o/r/c/missing", b"x", 1),
            store.update("/o/r/c/u", b"u2", r1), store.update("/o/r/c/u", b"u3", r1), return_exceptions=True)
        assert commits == [7]  # one group commit
        deleted, recreated, created_b, dup, missing, updated, stale = results
        assert isinstance(dup, KeyExistsError) and isinstance(missing, KeyNotFoundError)
        assert isinstance(stale, RevisionMismatchError) and stale.current.value == b"u2"
        assert stale.current.mod_revision == updated and stale.current.create_revision == r1
        assert deleted < recreated < created_b < updated
        kv = await store.get("/o/r/c/a")
        assert kv is not None and kv.value == b"new" and kv.create_revision == kv.mod_revision == recreated
        u = await store.get("/o/r/c/u")
        assert u is not None and (u.value, u.create_revision, u.mod_revision) == (b"u2", r1, updated)
        events = []
        async for ev in store.watch("/o/r/c/", deleted):
            events.append((ev.type, ev.key, ev.value, ev.revision))
            if len(events) == 4:
                break
        assert events == [(EventType.DELETE, "/o/r/c/a", b"old", deleted), (EventType.PUT, "/o/r/c/a", b"new", recreated),
                          (EventType.PUT, "/o/r/c/b", b"B", created_b), (EventType.PUT, "/o/r/c/u", b"u2", updated)]
        assert await store.current_revision() == updated
    finally:
        await store.close()
    reopened = SQLiteStore(tmp_path / "db")
    await reopened.start()
    try:
        assert await reopened.current_revision() == updated
        kvs, _ = await reopened.range("/o/r/c/")
        assert [(kv.key, kv.value) for kv in kvs] == [("/o/r/c/a", b"new"), ("/o/r/c/b", b"B"), ("/o/r/c/u", b"u2")]
    finally:
        await reopened.close()


async def test_a_large_batch_spans_several_statements(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "db")
    await store.start()
    try:
        revs = await asyncio.gather(*(store.create(f"/big/r/c/{i:04}", str(i).encode()) for i in range(300)))
        assert sorted(revs) == list(range(1, 301))
        kvs, rev = await store.range("/big/r/c/")
        assert len(kvs) == 300 and rev == 300 and kvs[299].value == b"299"
        revs2 = await asyncio.gather(*(store.delete(kv.key, kv.mod_revision) for kv in kvs))
        assert sorted(revs2) == list(range(301, 601))
        assert (await store.range("/big/r/c/"))[0] == []
    finally:
        await store.close()
