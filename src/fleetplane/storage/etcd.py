"""The etcd v3 backend: the same revisioned store, shared by every hub replica.

Revisions are etcd's own (a key's ``mod_revision`` is its resourceVersion), so a
resourceVersion means the same on every replica. Writes are transactions guarded the way
kube-apiserver guards them: create compares ``create_revision == 0``, update and delete
compare ``mod_revision`` with the revision the write was computed from. Values are the same
bytes the SQLite store holds, under the same keys.

The client is :mod:`etcd3aio` (asyncio, ``grpc.aio``): its KV facade for ranges,
transactions and compaction, and its generated etcd v3 bindings for the watch stream. This
module adds what a shared API server needs on top (see ``docs/scaling.md``):

* one gRPC channel per endpoint, picked round-robin, with failover: an endpoint that fails
  is skipped for a moment and the request goes to the next one;
* retries that are safe for writes: a transaction whose outcome is unknown (the member died
  with it in flight) is retried under the same guard, and a guard that then fails because
  the key already holds exactly the bytes written is that same write having landed;
* watches that survive the loss of a member (resumed on another from the next revision) and
  end with :class:`UnavailableError` only when no member answers;
* consistent reads: :meth:`EtcdStore.current_revision` is a linearizable read, mapped onto
  the newest revision the root watch (``/``, the watch cache's) has to deliver, so a read
  waiting for it never waits for a revision outside the hub's keys.

A write returns when etcd has committed it, as kube-apiserver's do, not when the watch cache
has it (the SQLite store delivers to the cache first); reads catch up with the store before
they answer, so a client still reads its own writes, on this replica or any other.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

import grpc
import grpc.aio
from etcd3aio import EtcdConnectionError, EtcdError, EtcdTransientError
from etcd3aio._protobuf import WatchStub, rpc_pb2
from etcd3aio.kv import KVService, prefix_range_end

from .interface import (
    CompactedError,
    Event,
    EventType,
    KeyExistsError,
    KeyNotFoundError,
    KeyValue,
    RevisionMismatchError,
    StorageError,
    UnavailableError,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

#: kube-apiserver's key for coordinating compaction between replicas (outside ``/``)
COMPACT_KEY = b"compact_rev_key"
#: the shortest an attempt on one member may take before it is retried (see EtcdStore.attempt_timeout)
MIN_ATTEMPT_TIMEOUT = 1.0
#: keys per page when ranging a prefix
RANGE_PAGE = 5000
#: ``hasleader``: a member cut off from the cluster cancels our watches instead of going quiet
_WATCH_METADATA = (("hasleader", "true"),)
_ALL_KEYS = (b"\x00", b"\x00")


class StoreTimeoutError(UnavailableError):
    """etcd did not answer in time; the outcome of a write is unknown (HTTP 504)."""

    http_status = 504


class RequestTooLargeError(StorageError):
    """etcd refused a value larger than its ``--max-request-bytes`` (HTTP 413)."""

    http_status = 413


@dataclass
class _Endpoint:
    url: str
    channel: grpc.aio.Channel
    kv: KVService
    watch: WatchStub
    down_until: float = 0.0


def parse_endpoints(endpoints: str | Sequence[str]) -> list[tuple[str, bool]]:
    """``http://h:p,https://h:p`` (or a list) as ``(host:port, tls)`` pairs."""
    items = endpoints.split(",") if isinstance(endpoints, str) else list(endpoints)
    out = []
    for item in items:
        item = item.strip()
        if not item:
            continue
        if "://" not in item:
            item = "http://" + item
        u = urlsplit(item)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"invalid etcd endpoint {item!r}: want http(s)://host:port")
        host = f"[{u.hostname}]" if ":" in u.hostname else u.hostname
        out.append((f"{host}:{u.port or 2379}", u.scheme == "https"))
    if not out:
        raise ValueError("no etcd endpoints given")
    return out


def _code(exc: BaseException) -> grpc.StatusCode | None:
    cause = exc if isinstance(exc, grpc.aio.AioRpcError) else exc.__cause__
    return cause.code() if isinstance(cause, grpc.aio.AioRpcError) else None


def _details(exc: BaseException) -> str:
    cause = exc if isinstance(exc, grpc.aio.AioRpcError) else exc.__cause__
    return (cause.details() or "") if isinstance(cause, grpc.aio.AioRpcError) else str(exc)


def _transient(exc: BaseException) -> bool:
    """Errors after which another try (maybe on another member) can succeed."""
    if isinstance(exc, (EtcdConnectionError, EtcdTransientError, TimeoutError)):
        return True
    return _code(exc) in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
                          grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.ABORTED,
                          grpc.StatusCode.CANCELLED, grpc.StatusCode.UNKNOWN)


@dataclass
class _RootStream:
    """What the watch of ``/`` has received, for consistent reads."""

    #: every revision <= this has been received (the watch covers the whole keyspace)
    received: int
    #: the newest revision of a ``/`` event received
    last_event: int
    waiters: list[tuple[int, asyncio.Future[None]]] = field(default_factory=list)

    def advance(self, rev: int, matched: bool) -> None:
        self.received = max(self.received, rev)
        if matched:
            self.last_event = rev
        if self.waiters:
            keep = []
            for want, fut in self.waiters:
                if fut.done():
                    continue
                if self.received >= want:
                    fut.set_result(None)
                else:
                    keep.append((want, fut))
            self.waiters = keep

    async def wait(self, rev: int, timeout: float) -> bool:
        """Wait until every revision up to ``rev`` has been received; False on timeout or end."""
        if self.received >= rev:
            return True
        fut = asyncio.get_running_loop().create_future()
        self.waiters.append((rev, fut))
        try:
            async with asyncio.timeout(timeout):
                await fut
        except TimeoutError:
            return False
        return self.received >= rev

    def end(self) -> None:
        """The stream is gone: let every waiter go (they see their condition unmet)."""
        for _, fut in self.waiters:
            if not fut.done():
                fut.set_result(None)
        self.waiters = []


def _header_revision(resp: Any) -> int:
    """The revision in a response's header (the generated etcd messages are untyped)."""
    rev: int = resp.header.revision
    return rev


class EtcdStore:
    """A :class:`~fleetplane.storage.interface.Store` on an etcd v3 cluster (3.4 or later).

    ``endpoints``: ``http(s)://host:port`` URLs (a comma-separated string or a list).
    ``cacert``/``cert``/``key``: PEM files for TLS (the CA that signed the members'
    certificates, and a client certificate for mutual TLS). ``timeout`` bounds every
    request; ``retry_window`` how long unreachable members are retried before a request
    fails with :class:`UnavailableError`.
    """

    def __init__(self, endpoints: str | Sequence[str], *, cacert: str | None = None, cert: str | None = None,
                 key: str | None = None, timeout: float = 5.0, retry_window: float = 3.0,
                 dial_timeout: float = 10.0, attempt_timeout: float | None = None) -> None:
        self.endpoints = parse_endpoints(endpoints)
        self.cacert, self.cert, self.key = cacert, cert, key
        if (cert is None) != (key is None):
            raise ValueError("an etcd client certificate needs its key, and the other way round")
        self.timeout = timeout
        self.retry_window = retry_window
        #: how long one attempt may wait for its member. A member whose leader died holds a
        #: request until a new leader is elected (or for good, if it was the leader and its
        #: answer is lost): the attempt is abandoned and retried, under the same guard, while
        #: the request still has time, rather than spending all of it on one member. Each
        #: attempt after a timed-out one may take twice as long (a member that is merely slow).
        self.attempt_timeout = attempt_timeout if attempt_timeout is not None else max(MIN_ATTEMPT_TIMEOUT, timeout / 3)
        self.dial_timeout = dial_timeout
        self._eps: list[_Endpoint] = []
        self._rr = itertools.count()
        self._closed = False
        self._compacted = 0
        self._roots: list[_RootStream] = []
        self._rev_next: asyncio.Future[int] | None = None
        self._rev_task: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"EtcdStore({','.join(t for t, _ in self.endpoints)})"

    # -- lifecycle ---------------------------------------------------------------------------

    def _credentials(self) -> grpc.ChannelCredentials:
        def read(path: str | None) -> bytes | None:
            if path is None:
                return None
            with open(path, "rb") as f:
                return f.read()

        return grpc.ssl_channel_credentials(root_certificates=read(self.cacert), private_key=read(self.key),
                                            certificate_chain=read(self.cert))

    async def start(self) -> None:
        options = [
            ("grpc.max_receive_message_length", 512 * 1024 * 1024),
            ("grpc.max_send_message_length", 64 * 1024 * 1024),
            ("grpc.keepalive_time_ms", 10_000),
            ("grpc.keepalive_timeout_ms", 5_000),
            ("grpc.keepalive_permit_without_calls", 1),
            # reconnect within a second of a member coming back (gRPC's default backs off to 2 min)
            ("grpc.initial_reconnect_backoff_ms", 100),
            ("grpc.min_reconnect_backoff_ms", 100),
            ("grpc.max_reconnect_backoff_ms", 1000),
        ]
        for target, tls in self.endpoints:
            if tls or self.cacert:
                channel = grpc.aio.secure_channel(target, self._credentials(), options=options)
            else:
                channel = grpc.aio.insecure_channel(target, options=options)
            self._eps.append(_Endpoint(target, channel, KVService(channel, max_attempts=1), WatchStub(channel)))
        deadline = time.monotonic() + self.dial_timeout
        while True:
            try:
                await self._read_revision()
                return
            except UnavailableError as exc:
                if time.monotonic() > deadline:
                    await self.close()
                    raise UnavailableError(f"etcd at {','.join(t for t, _ in self.endpoints)} is unreachable: {exc}") from None
                await asyncio.sleep(0.2)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._rev_task is not None:
            self._rev_task.cancel()
        for root in self._roots:
            root.end()
        for ep in self._eps:
            with contextlib.suppress(Exception):
                await ep.channel.close()

    # -- calling etcd ------------------------------------------------------------------------

    def _pick(self) -> _Endpoint:
        if not self._eps:
            raise UnavailableError("etcd store is not started")
        now = time.monotonic()
        n = len(self._eps)
        first = next(self._rr)
        for i in range(n):
            ep = self._eps[(first + i) % n]
            if ep.down_until <= now:
                return ep
        return min(self._eps, key=lambda e: e.down_until)

    def _mark_down(self, ep: _Endpoint, exc: BaseException) -> None:
        if len(self._eps) > 1:
            ep.down_until = time.monotonic() + 1.0
        log.debug("etcd endpoint %s failed: %s %s", ep.url, type(exc).__name__, _details(exc))

    async def _call(self, attempt_fn: Callable[[_Endpoint, float, bool], Awaitable[T]], what: str) -> T:
        """Run ``attempt_fn(endpoint, timeout, retried)`` until it succeeds, retrying
        transient failures on the next endpoint for ``retry_window`` (within ``timeout``)."""
        if self._closed:
            raise UnavailableError("etcd store is closed")
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + self.timeout
        backoff = 0.05
        retried = False
        attempt_timeout = self.attempt_timeout
        while True:
            ep = self._pick()
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise StoreTimeoutError(f"etcd {what}: no answer within {self.timeout:g}s")
            try:
                return await attempt_fn(ep, min(remaining, attempt_timeout), retried)
            except StorageError:
                raise
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._raise_permanent(exc, what)
                self._mark_down(ep, exc)
                timed_out = isinstance(exc, (EtcdTransientError, TimeoutError)) or _code(exc) == grpc.StatusCode.DEADLINE_EXCEEDED
                if loop.time() + backoff >= deadline:
                    if timed_out:
                        raise StoreTimeoutError(f"etcd {what}: no answer within {self.timeout:g}s") from None
                    raise UnavailableError(f"etcd {what}: {_details(exc)}") from None
                if not timed_out and loop.time() - started + backoff > self.retry_window:
                    # unreachable for the whole window (a stuck attempt is retried until the deadline)
                    raise UnavailableError(f"etcd {what}: {_details(exc)}") from None
                retried = True
                if timed_out:
                    attempt_timeout *= 2  # slow rather than stuck (a loaded member): give it longer
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 0.4)

    @staticmethod
    def _raise_permanent(exc: BaseException, what: str) -> None:
        details = _details(exc)
        if "required revision has been compacted" in details:
            raise CompactedError(0, 0) from None
        if "request is too large" in details:
            raise RequestTooLargeError(f"etcd {what}: {details}") from None
        if not _transient(exc):
            raise StorageError(f"etcd {what}: {details or type(exc).__name__}") from exc

    # -- reads -------------------------------------------------------------------------------

    async def _read_revision(self) -> int:
        """etcd's current revision, read linearizably (through the leader)."""

        async def attempt(ep: _Endpoint, timeout: float, _: bool) -> int:
            resp = await ep.kv.get(b"/", count_only=True, timeout=timeout)
            return _header_revision(resp)

        return await self._call(attempt, "read revision")

    async def _batched_revision(self) -> int:
        """Concurrent callers share one read, and a read always starts after its callers
        arrived (a caller that comes while one is in flight waits for the next)."""
        loop = asyncio.get_running_loop()
        if self._rev_next is None:
            self._rev_next = loop.create_future()
            self._rev_next.add_done_callback(lambda f: f.cancelled() or f.exception())
            if self._rev_task is None or self._rev_task.done():
                self._rev_task = loop.create_task(self._revision_rounds())
        return await asyncio.shield(self._rev_next)

    async def _revision_rounds(self) -> None:
        while self._rev_next is not None:
            fut, self._rev_next = self._rev_next, None
            try:
                rev = await self._read_revision()
            except Exception as exc:
                if not fut.done():
                    fut.set_exception(exc)
            else:
                if not fut.done():
                    fut.set_result(rev)

    async def current_revision(self) -> int:
        rev = await self._batched_revision()
        root = max(self._roots, key=lambda r: r.received, default=None)
        if root is None:
            return rev
        if root.last_event >= rev:
            return rev
        if root.received < rev and not await root.wait(rev, self.timeout):
            if root in self._roots:
                raise StoreTimeoutError(f"etcd watch did not reach revision {rev} within {self.timeout:g}s")
            return rev  # the watch ended (its consumer restarts it): no better answer than etcd's
        # No event under "/" between the last one and rev: a read at last_event sees it all.
        return rev if root.last_event >= rev else root.last_event

    async def compacted_revision(self) -> int:
        kv = await self._get_raw(COMPACT_KEY)
        if kv is not None:
            with contextlib.suppress(ValueError):
                self._compacted = max(self._compacted, int(kv.value))
        return self._compacted

    async def _get_raw(self, key: bytes) -> Any:
        async def attempt(ep: _Endpoint, timeout: float, _: bool) -> Any:
            resp = await ep.kv.get(key, timeout=timeout)
            return resp.kvs[0] if resp.kvs else None

        return await self._call(attempt, "get")

    async def get(self, key: str) -> KeyValue | None:
        kv = await self._get_raw(key.encode())
        return KeyValue(key, kv.value, kv.create_revision, kv.mod_revision) if kv is not None else None

    async def range(self, prefix: str) -> tuple[list[KeyValue], int]:
        start, end = prefix.encode(), prefix_range_end(prefix.encode())
        for _ in range(5):
            try:
                return await self._range_pages(start, end)
            except CompactedError:
                continue  # compacted between pages: start over at a newer revision
        raise UnavailableError(f"range {prefix}: compacted repeatedly while paging")

    async def _range_pages(self, start: bytes, end: bytes) -> tuple[list[KeyValue], int]:
        out: list[KeyValue] = []
        rev = 0
        key = start
        while True:
            async def attempt(ep: _Endpoint, timeout: float, _: bool, key: bytes = key, rev: int = rev) -> Any:
                return await ep.kv.get(key, range_end=end, revision=rev, limit=RANGE_PAGE, timeout=timeout)

            resp = await self._call(attempt, "range")
            if rev == 0:
                rev = resp.header.revision
            out.extend(KeyValue(kv.key.decode(), kv.value, kv.create_revision, kv.mod_revision) for kv in resp.kvs)
            if not resp.more or not resp.kvs:
                return out, rev
            key = resp.kvs[-1].key + b"\x00"

    # -- writes ------------------------------------------------------------------------------

    async def _txn(self, compare: list[Any], success: list[Any], failure: list[Any], what: str,
                   resolve: Callable[[Any, bool], int]) -> int:
        """One guarded transaction; ``resolve(response, retried)`` turns it into a revision
        or raises. A retry after an unknown outcome may find its own write already there."""

        async def attempt(ep: _Endpoint, timeout: float, retried: bool) -> int:
            resp = await ep.kv.txn(compare, success, failure, timeout=timeout)
            return resolve(resp, retried)

        return await self._call(attempt, what)

    @staticmethod
    def _mod_compare(key: bytes, revision: int) -> rpc_pb2.Compare:
        return rpc_pb2.Compare(result=rpc_pb2.Compare.EQUAL, target=rpc_pb2.Compare.MOD, key=key, mod_revision=revision)

    @staticmethod
    def _exists_compare(key: bytes) -> rpc_pb2.Compare:
        return KVService.txn_compare_create_revision(key, 0, result=rpc_pb2.Compare.GREATER)

    @staticmethod
    def _failed_kv(resp: Any) -> Any:
        """The key as the failure branch read it (None if absent)."""
        for r in resp.responses:
            if r.HasField("response_range") and r.response_range.kvs:
                return r.response_range.kvs[0]
        return None

    async def create(self, key: str, value: bytes) -> int:
        k = key.encode()

        def resolve(resp: Any, retried: bool) -> int:
            if resp.succeeded:
                return _header_revision(resp)
            cur = self._failed_kv(resp)
            if retried and cur is not None and cur.value == value and cur.version == 1:
                own: int = cur.mod_revision
                return own  # our own create, landed before its answer was lost
            raise KeyExistsError(key)

        return await self._txn([KVService.txn_compare_create_revision(k, 0)], [KVService.txn_op_put(k, value)],
                               [KVService.txn_op_get(k)], "create", resolve)

    async def update(self, key: str, value: bytes, expected_revision: int) -> int:
        k = key.encode()

        def resolve(resp: Any, retried: bool) -> int:
            if resp.succeeded:
                return _header_revision(resp)
            cur = self._failed_kv(resp)
            if cur is None:
                raise KeyNotFoundError(key)
            if retried and cur.value == value and cur.mod_revision > expected_revision:
                own: int = cur.mod_revision
                return own  # our own update, landed before its answer was lost
            raise RevisionMismatchError(key, KeyValue(key, cur.value, cur.create_revision, cur.mod_revision))

        return await self._txn([self._mod_compare(k, expected_revision), self._exists_compare(k)],
                               [KVService.txn_op_put(k, value)], [KVService.txn_op_get(k)], "update", resolve)

    async def delete(self, key: str, expected_revision: int) -> int:
        k = key.encode()

        def resolve(resp: Any, retried: bool) -> int:
            if resp.succeeded:
                return _header_revision(resp)
            cur = self._failed_kv(resp)
            if cur is None:
                if retried:
                    # Our delete may have landed before its answer was lost; the key is gone
                    # either way. Its revision is unknown: report the current one.
                    return _header_revision(resp)
                raise KeyNotFoundError(key)
            raise RevisionMismatchError(key, KeyValue(key, cur.value, cur.create_revision, cur.mod_revision))

        return await self._txn([self._mod_compare(k, expected_revision), self._exists_compare(k)],
                               [KVService.txn_op_delete(k)], [KVService.txn_op_get(k)], "delete", resolve)

    async def compact(self, revision: int) -> None:
        """Compact etcd's history before ``revision``. Replicas coordinate as kube-apiserver
        does: a guarded write of ``compact_rev_key`` decides which one compacts."""
        cur = await self._get_raw(COMPACT_KEY)
        done = int(cur.value) if cur is not None and cur.value.isdigit() else 0
        self._compacted = max(self._compacted, done)
        if revision <= done:
            return
        guard = (self._mod_compare(COMPACT_KEY, cur.mod_revision) if cur is not None
                 else KVService.txn_compare_create_revision(COMPACT_KEY, 0))

        async def claim(ep: _Endpoint, timeout: float, _: bool) -> bool:
            resp = await ep.kv.txn([guard], [KVService.txn_op_put(COMPACT_KEY, str(revision).encode())], [], timeout=timeout)
            claimed: bool = resp.succeeded
            return claimed

        if not await self._call(claim, "compact"):
            return  # another replica is compacting

        async def compact(ep: _Endpoint, timeout: float, _: bool) -> None:
            try:
                await ep.kv.compact(revision, timeout=timeout)
            except grpc.aio.AioRpcError as exc:
                if "required revision has been compacted" not in (exc.details() or ""):
                    raise

        try:
            await self._call(compact, "compact")
        except CompactedError:
            pass
        self._compacted = max(self._compacted, revision)

    # -- watch -------------------------------------------------------------------------------

    async def watch(self, prefix: str, start_revision: int) -> AsyncIterator[Event]:
        """Every change under ``prefix`` from ``start_revision`` (0: from now on), in order.

        The watch of ``/`` covers the whole keyspace, so that it knows when it has seen every
        revision up to one a consistent read asks for (writes outside ``/`` included). A
        broken stream is resumed on another member from the next revision; when none
        answers for ``retry_window`` the watch ends with :class:`UnavailableError`.
        """
        if self._closed:
            raise UnavailableError("etcd store is closed")
        root_watch = prefix == "/"
        if start_revision <= 0:
            start_revision = await self._read_revision() + 1
        pfx = prefix.encode()
        key, end = _ALL_KEYS if root_watch else (pfx, prefix_range_end(pfx))
        root = _RootStream(start_revision - 1, start_revision - 1) if root_watch else None
        if root is not None:
            self._roots.append(root)
        next_rev = start_revision
        loop = asyncio.get_running_loop()
        failing_since: float | None = None
        backoff = 0.05
        try:
            while not self._closed:
                ep = self._pick()
                requests: asyncio.Queue[Any] = asyncio.Queue()
                create = rpc_pb2.WatchCreateRequest(key=key, range_end=end, start_revision=next_rev, prev_kv=True)
                requests.put_nowait(rpc_pb2.WatchRequest(create_request=create))
                call = ep.watch.Watch(_drain(requests), metadata=_WATCH_METADATA)
                try:
                    while True:
                        resp = await call.read()
                        if resp is grpc.aio.EOF:
                            raise UnavailableError("etcd closed the watch stream")
                        if resp.compact_revision:
                            raise CompactedError(next_rev, resp.compact_revision)
                        if resp.canceled:
                            raise UnavailableError(f"etcd canceled the watch: {resp.cancel_reason or 'no reason'}")
                        if resp.created:
                            failing_since, backoff = None, 0.05
                        for ev in resp.events:
                            kv = ev.kv
                            rev = kv.mod_revision
                            next_rev = rev + 1
                            k = kv.key
                            if not k.startswith(pfx):
                                if root is not None:
                                    root.advance(rev, False)
                                continue
                            out = self._event(ev)
                            if out is None:  # a delete whose previous value etcd no longer has
                                raise CompactedError(rev, rev)
                            if root is not None:
                                root.advance(rev, True)
                            yield out
                except (UnavailableError, grpc.aio.AioRpcError, EtcdError) as exc:
                    if self._closed:
                        return
                    self._mark_down(ep, exc)
                    now = loop.time()
                    failing_since = failing_since if failing_since is not None else now
                    if now - failing_since > self.retry_window:
                        raise UnavailableError(f"etcd watch: {_details(exc)}") from None
                    log.info("etcd watch on %s broke (%s); resuming at revision %d", ep.url, _details(exc), next_rev)
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, 0.4)
                finally:
                    requests.put_nowait(None)
                    call.cancel()
        finally:
            if root is not None:
                self._roots.remove(root)
                root.end()

    @staticmethod
    def _event(ev: Any) -> Event | None:
        kv = ev.kv
        key = kv.key.decode()
        if ev.type == ev.PUT:
            return Event(EventType.PUT, key, kv.value, kv.mod_revision, kv.create_revision)
        if not ev.HasField("prev_kv"):
            return None
        return Event(EventType.DELETE, key, ev.prev_kv.value, kv.mod_revision, ev.prev_kv.create_revision)


async def _drain(queue: asyncio.Queue[Any]) -> AsyncIterator[Any]:
    while True:
        item = await queue.get()
        if item is None:
            return
        yield item
