"""The embedded default backend: SQLite in WAL mode, durable on commit.

One writer thread owns the write connection and commits writes in groups: whatever is queued
when a transaction starts goes into it, so one fsync covers many writes under load while a
lone write still commits at once. Every write appends to a ``log`` table that is the change
stream's history (kept until compaction); the newest state is in ``kv`` for fast gets and
prefix ranges. Reads use their own connections and never wait for the writer.
"""

from __future__ import annotations

import asyncio
import functools
import queue
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from .interface import (
    CompactedError,
    Event,
    EventType,
    KeyExistsError,
    KeyNotFoundError,
    KeyValue,
    RevisionMismatchError,
    UnavailableError,
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS kv (
  key TEXT PRIMARY KEY,
  value BLOB NOT NULL,
  create_rev INTEGER NOT NULL,
  mod_rev INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS log (
  rev INTEGER PRIMARY KEY,
  key TEXT NOT NULL,
  deleted INTEGER NOT NULL,
  value BLOB NOT NULL,
  create_rev INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO meta VALUES ('rev', 0), ('compacted', 0);
"""

_MAX_BATCH = 512

#: rows per multi-row statement (at most 5 values each, far under SQLite's 32,766 variables);
#: the statements of every size up to it fit the connection's statement cache
_CHUNK = 64
_META_SQL = "UPDATE meta SET value = CASE name WHEN 'rev' THEN ?1 ELSE ?2 END WHERE name IN ('rev', 'compacted')"

_T = TypeVar("_T")


def _chunks(items: list[_T]) -> list[list[_T]]:
    return [items[i:i + _CHUNK] for i in range(0, len(items), _CHUNK)]


@functools.cache
def _select_sql(n: int) -> str:
    return f"SELECT key, create_rev, mod_rev, value FROM kv WHERE key IN ({','.join('?' * n)})"


@functools.cache
def _delete_sql(n: int) -> str:
    return f"DELETE FROM kv WHERE key IN ({','.join('?' * n)})"


@functools.cache
def _upsert_sql(n: int) -> str:
    return ("INSERT INTO kv (key, value, create_rev, mod_rev) VALUES " + ",".join(["(?,?,?,?)"] * n)
            + " ON CONFLICT(key) DO UPDATE SET value=excluded.value, create_rev=excluded.create_rev,"
              " mod_rev=excluded.mod_rev")


@functools.cache
def _log_sql(n: int) -> str:
    return "INSERT INTO log (rev, key, deleted, value, create_rev) VALUES " + ",".join(["(?,?,?,?,?)"] * n)


@dataclass
class _Op:
    kind: str  # create | update | delete | compact
    key: str
    value: bytes = b""
    expected: int = 0
    future: asyncio.Future[int] | None = None  # set by _submit, before the op is queued


def _prefix_end(prefix: str) -> str:
    """The smallest string greater than every string starting with ``prefix``."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


class SQLiteStore:
    """A :class:`~fleetplane.storage.interface.Store` in one SQLite file."""

    def __init__(self, path: str | Path, *, synchronous: str = "FULL") -> None:
        self.path = str(path)
        self.synchronous = synchronous
        self._rev = 0
        self._compacted = 0
        self._queue: queue.SimpleQueue[_Op | None] = queue.SimpleQueue()
        self._writer: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._subscribers: list[_Subscriber] = []
        self._local = threading.local()
        self._closed = False
        #: called from the writer thread after each group commit with (writes, seconds): metrics
        self.on_commit: Callable[[int, float], None] | None = None
        self._started = 0.0  # the current group commit's start (writer thread)

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        conn = self._connect()
        conn.executescript(_SCHEMA)
        conn.commit()
        self._rev = conn.execute("SELECT value FROM meta WHERE name='rev'").fetchone()[0]
        self._compacted = conn.execute("SELECT value FROM meta WHERE name='compacted'").fetchone()[0]
        self._writer = threading.Thread(target=self._write_loop, args=(conn,), name="sqlite-writer", daemon=True)
        self._writer.start()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        if self._writer:
            await asyncio.to_thread(self._writer.join)
        for sub in list(self._subscribers):
            sub.close()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30,
                               cached_statements=512)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={self.synchronous}")
        conn.execute("PRAGMA busy_timeout=30000")
        return conn

    def _reader(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
        return conn

    # -- reads -------------------------------------------------------------------------------

    async def current_revision(self) -> int:
        return self._rev

    async def compacted_revision(self) -> int:
        return self._compacted

    def _get_sync(self, key: str) -> KeyValue | None:
        row = self._reader().execute(
            "SELECT value, create_rev, mod_rev FROM kv WHERE key=?", (key,)
        ).fetchone()
        return KeyValue(key, row[0], row[1], row[2]) if row else None

    async def get(self, key: str) -> KeyValue | None:
        return await asyncio.to_thread(self._get_sync, key)

    def _range_sync(self, prefix: str) -> tuple[list[KeyValue], int]:
        conn = self._reader()
        conn.execute("BEGIN")
        try:
            rows = conn.execute(
                "SELECT key, value, create_rev, mod_rev FROM kv WHERE key >= ? AND key < ? ORDER BY key",
                (prefix, _prefix_end(prefix)),
            ).fetchall()
            rev = conn.execute("SELECT value FROM meta WHERE name='rev'").fetchone()[0]
        finally:
            conn.execute("COMMIT")
        return [KeyValue(*r) for r in rows], rev

    async def range(self, prefix: str) -> tuple[list[KeyValue], int]:
        return await asyncio.to_thread(self._range_sync, prefix)

    # -- writes ------------------------------------------------------------------------------

    async def _submit(self, op: _Op) -> int:
        if self._closed:
            raise UnavailableError("store is closed")
        assert self._loop is not None
        future: asyncio.Future[int] = self._loop.create_future()
        op.future = future
        self._queue.put(op)
        return await future

    async def create(self, key: str, value: bytes) -> int:
        return await self._submit(_Op("create", key, value))

    async def update(self, key: str, value: bytes, expected_revision: int) -> int:
        return await self._submit(_Op("update", key, value, expected_revision))

    async def delete(self, key: str, expected_revision: int) -> int:
        return await self._submit(_Op("delete", key, b"", expected_revision))

    async def compact(self, revision: int) -> None:
        await self._submit(_Op("compact", "", b"", revision))

    def _write_loop(self, conn: sqlite3.Connection) -> None:
        while True:
            op = self._queue.get()
            if op is None:
                break
            batch = [op]
            stop = False
            while len(batch) < _MAX_BATCH:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
            self._started = time.perf_counter()
            self._commit_batch(conn, batch)
            if stop:
                break
        conn.close()

    def _commit_batch(self, conn: sqlite3.Connection, batch: list[_Op]) -> None:
        """Commit ``batch`` in one transaction of a few statements, whatever its size: the ops run
        in order against the rows they touch, read in one query, and what they leave is written
        with multi-row statements. Every statement lets go of the interpreter lock and takes it
        back; inside a busy hub each retake waits for the event loop, so the number of statements,
        not of writes, is what a group commit costs there (docs/scaling.md "Group commits")."""
        results: list[int | Exception] = []
        events: list[Event] = []
        rev = self._rev
        compacted = self._compacted
        try:
            conn.execute("BEGIN IMMEDIATE")
            keys = list({op.key: None for op in batch if op.kind != "compact"})
            rows: dict[str, tuple[int, int, bytes] | None] = dict.fromkeys(keys)
            for chunk in _chunks(keys):
                for key, create_rev, mod_rev, value in conn.execute(_select_sql(len(chunk)), chunk):
                    rows[key] = (create_rev, mod_rev, value)
            log: list[tuple[int, str, int, bytes, int]] = []  # rev, key, deleted, value, create_rev
            for op in batch:
                if op.kind == "compact":
                    if op.expected > compacted:
                        conn.execute("DELETE FROM log WHERE rev < ?", (op.expected,))
                        compacted = op.expected
                    results.append(compacted)
                    continue
                row = rows[op.key]
                if op.kind == "create":
                    if row is not None:
                        results.append(KeyExistsError(op.key))
                        continue
                    rev += 1
                    rows[op.key] = (rev, rev, op.value)
                    log.append((rev, op.key, 0, op.value, rev))
                    events.append(Event(EventType.PUT, op.key, op.value, rev, rev))
                elif row is None:
                    results.append(KeyNotFoundError(op.key))
                    continue
                elif row[1] != op.expected:
                    results.append(RevisionMismatchError(op.key, KeyValue(op.key, row[2], row[0], row[1])))
                    continue
                elif op.kind == "update":
                    rev += 1
                    rows[op.key] = (row[0], rev, op.value)
                    log.append((rev, op.key, 0, op.value, row[0]))
                    events.append(Event(EventType.PUT, op.key, op.value, rev, row[0]))
                else:
                    rev += 1
                    rows[op.key] = None
                    log.append((rev, op.key, 1, row[2], row[0]))
                    events.append(Event(EventType.DELETE, op.key, row[2], rev, row[0]))
                results.append(rev)
            if log:
                touched = list({entry[1]: None for entry in log})
                gone = [k for k in touched if rows[k] is None]
                live = [(k, *r) for k in touched if (r := rows[k]) is not None]
                for chunk in _chunks(gone):
                    conn.execute(_delete_sql(len(chunk)), chunk)
                for kchunk in _chunks(live):
                    conn.execute(_upsert_sql(len(kchunk)), [v for k, c, m, val in kchunk for v in (k, val, c, m)])
                for lchunk in _chunks(log):
                    conn.execute(_log_sql(len(lchunk)), [v for e in lchunk for v in e])
            conn.execute(_META_SQL, (rev, compacted))
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            err = UnavailableError(f"sqlite write failed: {exc}")
            self._finish(batch, [err] * len(batch), [])
            return
        self._rev = rev
        self._compacted = compacted
        self._finish(batch, results, events)

    def _finish(self, batch: list[_Op], results: list[int | Exception], events: list[Event]) -> None:
        loop = self._loop
        assert loop is not None
        if self.on_commit is not None:  # before the writers hear back
            self.on_commit(len(batch), time.perf_counter() - self._started)

        def deliver() -> None:
            # Events first, so that the watch cache has seen a write before its writer hears back.
            if events:
                for sub in list(self._subscribers):
                    sub.push(events)
            for op, res in zip(batch, results, strict=True):
                assert op.future is not None  # every queued op was _submit's
                if op.future.done():
                    continue
                if isinstance(res, Exception):
                    op.future.set_exception(res)
                else:
                    op.future.set_result(res)

        loop.call_soon_threadsafe(deliver)

    # -- watch -------------------------------------------------------------------------------

    def _history_sync(self, prefix: str, start: int, end: int) -> list[Event]:
        rows = self._reader().execute(
            "SELECT rev, key, deleted, value, create_rev FROM log "
            "WHERE rev >= ? AND rev <= ? AND key >= ? AND key < ? ORDER BY rev",
            (start, end, prefix, _prefix_end(prefix)),
        ).fetchall()
        return [Event(EventType(r[2]), r[1], r[3], r[0], r[4]) for r in rows]

    async def watch(self, prefix: str, start_revision: int) -> AsyncIterator[Event]:
        if start_revision and start_revision < self._compacted:
            raise CompactedError(start_revision, self._compacted)
        sub = _Subscriber(prefix)
        self._subscribers.append(sub)
        try:
            seen = start_revision - 1 if start_revision else self._rev
            if start_revision and start_revision <= self._rev:
                upto = self._rev
                for ev in await asyncio.to_thread(self._history_sync, prefix, start_revision, upto):
                    yield ev
                seen = upto
            while True:
                batch = await sub.next()
                if batch is None:
                    return
                for ev in batch:
                    if ev.revision > seen and ev.key.startswith(prefix):
                        seen = ev.revision
                        yield ev
        finally:
            self._subscribers.remove(sub)


class _Subscriber:
    """Buffers committed batches for one watch until it reads them."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._queue: asyncio.Queue[list[Event] | None] = asyncio.Queue()

    def push(self, events: list[Event]) -> None:
        self._queue.put_nowait(events)

    def close(self) -> None:
        self._queue.put_nowait(None)

    async def next(self) -> list[Event] | None:
        return await self._queue.get()
