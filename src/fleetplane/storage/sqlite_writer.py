"""The embedded store's writer: a process of its own that owns SQLite's one write connection.

Run as ``python -I -S sqlite_writer.py PATH SYNCHRONOUS`` with a connected Unix socket as its
standard input (storage/sqlite.py starts it). It imports the standard library only, so it starts
in a few milliseconds and shares nothing with the hub, above all not the interpreter lock: in a
thread of the hub, every statement of a group commit waited for the busy event loop to hand the
lock back, and a commit took 6.5x the raw store's time (docs/scaling.md "Group commits").

Frames both ways are a 4-byte big-endian length and a pickle (both ends are this package, over
a private socketpair). The hub sends lists of writes ``(kind, key, value, expected)``; whatever
has arrived when a transaction starts commits in it, and the writer answers with one frame:
``(results per request frame, revision, compacted revision, commit seconds)``, each result
``(code, revision, create_revision, value)`` with a ``code`` below. The hub's first frame back
is the hello ``(revision, compacted)``. End of input means the hub is done: the writer exits.
"""

from __future__ import annotations

import functools
import os
import pickle
import select
import signal
import sqlite3
import struct
import sys
import time
from typing import TypeVar

OK, EXISTS, NOT_FOUND, MISMATCH, FAILED = range(5)

#: the most writes one transaction takes; more wait for the next
MAX_BATCH = 512

#: rows per multi-row statement (at most 5 values each, far under SQLite's 32,766 variables);
#: the statements of every size up to it fit the connection's statement cache
CHUNK = 64

SCHEMA = """
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

META_SQL = "UPDATE meta SET value = CASE name WHEN 'rev' THEN ?1 ELSE ?2 END WHERE name IN ('rev', 'compacted')"

_HEADER = struct.Struct(">I")
_T = TypeVar("_T")

Op = tuple[str, str, bytes, int]  # kind (create | update | delete | compact), key, value, expected
Result = tuple[int, int, int, bytes]  # code, revision, create_revision, value


def connect(path: str, synchronous: str) -> sqlite3.Connection:
    """A connection in WAL mode, as both the writer and the hub's readers open it."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30, cached_statements=512)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    conn.execute("PRAGMA busy_timeout=30000")
    return conn


def frame(obj: object) -> bytes:
    body = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(body)) + body


def _chunks(items: list[_T], size: int = CHUNK) -> list[list[_T]]:
    return [items[i:i + size] for i in range(0, len(items), size)]


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


class Writer:
    """Commits groups of writes in one transaction of a few statements, whatever the group's size:
    the rows they touch are read in one query, the writes applied in order in memory (a delete
    then a create of one key, a second create that loses, a stale update: each gets the answer
    it would get alone), and what they leave written with multi-row statements."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        conn.executescript(SCHEMA)
        self.rev = conn.execute("SELECT value FROM meta WHERE name='rev'").fetchone()[0]
        self.compacted = conn.execute("SELECT value FROM meta WHERE name='compacted'").fetchone()[0]

    def commit(self, batch: list[Op]) -> list[Result]:
        conn = self.conn
        results: list[Result] = []
        rev, compacted = self.rev, self.compacted
        try:
            conn.execute("BEGIN IMMEDIATE")
            keys = list({op[1]: None for op in batch if op[0] != "compact"})
            rows: dict[str, tuple[int, int, bytes] | None] = dict.fromkeys(keys)
            for chunk in _chunks(keys):
                for key, create_rev, mod_rev, value in conn.execute(_select_sql(len(chunk)), chunk):
                    rows[key] = (create_rev, mod_rev, value)
            log: list[tuple[int, str, int, bytes, int]] = []  # rev, key, deleted, value, create_rev
            for kind, key, value, expected in batch:
                if kind == "compact":
                    if expected > compacted:
                        conn.execute("DELETE FROM log WHERE rev < ?", (expected,))
                        compacted = expected
                    results.append((OK, compacted, 0, b""))
                    continue
                row = rows[key]
                if kind == "create":
                    if row is not None:
                        results.append((EXISTS, 0, 0, b""))
                        continue
                    rev += 1
                    rows[key] = (rev, rev, value)
                    log.append((rev, key, 0, value, rev))
                    results.append((OK, rev, rev, b""))
                elif row is None:
                    results.append((NOT_FOUND, 0, 0, b""))
                elif row[1] != expected:
                    results.append((MISMATCH, row[1], row[0], row[2]))
                elif kind == "update":
                    rev += 1
                    rows[key] = (row[0], rev, value)
                    log.append((rev, key, 0, value, row[0]))
                    results.append((OK, rev, row[0], b""))
                else:
                    rev += 1
                    rows[key] = None
                    log.append((rev, key, 1, row[2], row[0]))
                    results.append((OK, rev, row[0], row[2]))
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
            conn.execute(META_SQL, (rev, compacted))
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            return [(FAILED, 0, 0, f"sqlite write failed: {exc}".encode())] * len(batch)
        self.rev, self.compacted = rev, compacted
        return results


class _Input:
    """Frames from the hub's socket: block for the first, then take whatever else has arrived."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buf = bytearray()
        self.eof = False

    def _read(self) -> None:
        data = os.read(self.fd, 1 << 20)
        if data:
            self.buf += data
        else:
            self.eof = True

    def _frames(self) -> list[list[Op]]:
        out = []
        while len(self.buf) >= 4:
            (size,) = _HEADER.unpack_from(self.buf)
            if len(self.buf) < 4 + size:
                break
            out.append(pickle.loads(self.buf[4:4 + size]))
            del self.buf[:4 + size]
        return out

    def next_group(self) -> list[list[Op]]:
        """At least one request frame (empty at end of input), and up to MAX_BATCH writes."""
        frames = self._frames()
        while not frames and not self.eof:
            self._read()
            frames = self._frames()
        while not self.eof and sum(map(len, frames)) < MAX_BATCH and select.select([self.fd], [], [], 0)[0]:
            self._read()
            frames += self._frames()
        return frames


def _send(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def main(path: str, synchronous: str) -> None:
    # The hub handles interrupts and shuts its writer down by closing the socket; a Ctrl-C to the
    # terminal's process group must not kill the writer under writes the hub is still finishing.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    fd = sys.stdin.fileno()
    writer = Writer(connect(path, synchronous))
    _send(fd, frame((writer.rev, writer.compacted)))
    inp = _Input(fd)
    while frames := inp.next_group():
        started = time.perf_counter()
        results = writer.commit([op for f in frames for op in f])
        seconds = time.perf_counter() - started
        split, at = [], 0
        for f in frames:
            split.append(results[at:at + len(f)])
            at += len(f)
        try:
            _send(fd, frame((split, writer.rev, writer.compacted, seconds)))
        except OSError:  # the hub is gone
            break
    writer.conn.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
