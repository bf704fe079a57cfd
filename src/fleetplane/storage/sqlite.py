"""The embedded default backend: SQLite in WAL mode, durable on commit.

Writes go to a writer process of the store's own (storage/sqlite_writer.py), which owns the write
connection and commits them in groups: whatever has arrived when a transaction starts goes into
it, so one fsync covers many writes under load while a lone write still commits at once. The
writer has its own interpreter lock, so a busy event loop does not slow its commits. Every write
appends to a ``log`` table that is the change stream's history (kept until compaction); the
newest state is in ``kv`` for fast gets and prefix ranges. Reads use their own connections, in
threads of the hub, and never wait for the writer.
"""

from __future__ import annotations

import asyncio
import pickle
import socket
import sqlite3
import sys
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from . import sqlite_writer as wire
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

_Pending = tuple[list[wire.Op], list["asyncio.Future[int]"]]


def _prefix_end(prefix: str) -> str:
    """The smallest string greater than every string starting with ``prefix``."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1) if prefix else "\U0010ffff"


class SQLiteStore:
    """A :class:`~fleetplane.storage.interface.Store` in one SQLite file."""

    def __init__(self, path: str | Path, *, synchronous: str = "FULL") -> None:
        self.path = str(path)
        self.synchronous = synchronous
        self._rev = 0
        self._compacted = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._subscribers: list[_Subscriber] = []
        self._local = threading.local()
        self._closed = False
        #: called after each group commit with (writes, seconds the writer took): metrics
        self.on_commit: Callable[[int, float], None] | None = None
        self._writer: asyncio.subprocess.Process | None = None
        self._sock: socket.socket | None = None
        self._out: asyncio.StreamWriter | None = None
        self._replies: asyncio.Task[None] | None = None
        self._spawning: asyncio.Lock | None = None
        self._unsent: _Pending = ([], [])  # writes of this loop iteration, sent together
        self._inflight: deque[_Pending] = deque()  # sent, in order, awaiting the writer's answer

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._spawning = asyncio.Lock()
        self._rev, self._compacted = await self._spawn()

    async def _spawn(self) -> tuple[int, int]:
        """Start the writer process; its hello is the store's (revision, compacted revision)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        with theirs:
            self._writer = await asyncio.create_subprocess_exec(
                sys.executable, "-I", "-S", wire.__file__, self.path, self.synchronous,
                stdin=theirs.fileno(), stdout=asyncio.subprocess.DEVNULL)
        reader, self._out = await asyncio.open_unix_connection(sock=ours, limit=1 << 24)
        self._sock = ours
        try:
            revision, compacted = await self._read_frame(reader)
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            raise UnavailableError(f"sqlite writer for {self.path} did not start") from exc
        self._replies = asyncio.create_task(self._read_replies(reader), name="sqlite-writer-replies")
        return int(revision), int(compacted)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._send()
        if self._out is not None:
            self._out.write_eof()  # the writer answers what it has, then exits
        if self._replies is not None:
            await self._replies
        if self._writer is not None:
            await self._writer.wait()
        for sub in list(self._subscribers):
            sub.close()

    def _reader(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = wire.connect(self.path, self.synchronous)
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

    async def _submit(self, op: wire.Op) -> int:
        if self._closed:
            raise UnavailableError("store is closed")
        assert self._loop is not None and self._spawning is not None
        if self._replies is None or self._replies.done():
            async with self._spawning:  # the writer died: start another, catch watchers up
                if self._replies is None or self._replies.done():
                    await self._respawn()
        future: asyncio.Future[int] = self._loop.create_future()
        ops, futures = self._unsent
        if not ops:
            self._loop.call_soon(self._send)
        ops.append(op)
        futures.append(future)
        return await future

    def _send(self) -> None:
        """One frame for every write submitted in this loop iteration."""
        ops, futures = self._unsent
        if not ops:
            return
        self._unsent = ([], [])
        if self._out is None or self._replies is None or self._replies.done():
            _fail(futures, UnavailableError("sqlite writer is not running"))
            return
        self._inflight.append((ops, futures))
        self._out.write(wire.frame(ops))

    async def create(self, key: str, value: bytes) -> int:
        return await self._submit(("create", key, value, 0))

    async def update(self, key: str, value: bytes, expected_revision: int) -> int:
        return await self._submit(("update", key, value, expected_revision))

    async def delete(self, key: str, expected_revision: int) -> int:
        return await self._submit(("delete", key, b"", expected_revision))

    async def compact(self, revision: int) -> None:
        await self._submit(("compact", "", b"", revision))

    @staticmethod
    async def _read_frame(reader: asyncio.StreamReader) -> Any:
        size = int.from_bytes(await reader.readexactly(4), "big")
        return pickle.loads(await reader.readexactly(size))

    async def _read_replies(self, reader: asyncio.StreamReader) -> None:
        """Answer each write as its commit is reported, until the writer exits."""
        try:
            while True:
                groups, rev, compacted, seconds = await self._read_frame(reader)
                self._rev, self._compacted = rev, compacted
                sent = [self._inflight.popleft() for _ in groups]
                if self.on_commit is not None:
                    self.on_commit(sum(len(ops) for ops, _ in sent), seconds)
                answers = [self._answer(op, res) for (ops, _), results in zip(sent, groups, strict=True)
                           for op, res in zip(ops, results, strict=True)]
                events = [a for a in answers if isinstance(a, Event)]
                if events:  # before the writers hear back, so the watch cache has seen each write
                    for sub in list(self._subscribers):
                        sub.push(events)
                futures = [f for _, fs in sent for f in fs]
                for future, answer in zip(futures, answers, strict=True):
                    if future.done():
                        continue
                    if isinstance(answer, Exception):
                        future.set_exception(answer)
                    else:
                        future.set_result(answer.revision if isinstance(answer, Event) else answer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            error = UnavailableError("sqlite writer exited; the write's outcome is unknown")
            while self._inflight:
                _fail(self._inflight.popleft()[1], error)
            if self._out is not None:
                self._out.close()

    @staticmethod
    def _answer(op: wire.Op, result: wire.Result) -> Event | Exception | int:
        kind, key, value, _ = op
        code, rev, create_rev, old = result
        if code == wire.OK:
            if kind == "compact":
                return rev
            if kind == "delete":
                return Event(EventType.DELETE, key, old, rev, create_rev)
            return Event(EventType.PUT, key, value, rev, create_rev)
        if code == wire.EXISTS:
            return KeyExistsError(key)
        if code == wire.NOT_FOUND:
            return KeyNotFoundError(key)
        if code == wire.MISMATCH:
            return RevisionMismatchError(key, KeyValue(key, old, create_rev, rev))
        return UnavailableError(old.decode())

    async def _respawn(self) -> None:
        """A new writer after the last one died. What it committed without answering reaches the
        watchers from the log, so the change stream has no gap."""
        if self._writer is not None:
            await self._writer.wait()
        seen = self._rev
        rev, self._compacted = await self._spawn()
        if rev > seen:
            missed = await asyncio.to_thread(self._history_sync, "", seen + 1, rev)
            self._rev = rev
            for sub in list(self._subscribers):
                sub.push(missed)

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


def _fail(futures: list[asyncio.Future[int]], error: Exception) -> None:
    for future in futures:
        if not future.done():
            future.set_exception(error)


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
