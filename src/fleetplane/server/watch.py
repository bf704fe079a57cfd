"""Watch streams: newline-delimited JSON events, served from the watch cache.

The start of a watch (initial ADDED events, or the history after a resourceVersion) and
its registration happen in the same event-loop step, so no event falls between them.

Delivery costs each watch as little as the event loop allows, for thousands of watches on one
resource (docs/scaling.md, "Watch fan-out"). The watch cache calls each watch's sink
(:class:`_Stream`) in the step it applies an event; the sink appends the event's line, encoded
once per event and shared by every watch (``WatchEvent.frame``), and once per event-loop step
every watch that gathered lines writes them as one HTTP chunk straight to its connection
(uvicorn's transport, past the per-message ASGI ``send``), unless the connection is paused
(its client reads slower than it is written to): then the lines wait, and the serving task
writes them once the connection drains. No queue, no task switch and no timer per event: one
deadline per watch and one bookmark time per interval, all in one heap per loop (:class:`Timers`).
A watch with more than ``WATCHER_QUEUE_LIMIT`` events or ``WATCHER_BUFFER_BYTES`` waiting is
dropped: it ends with a 410 ERROR event (as before; kube's cacher closes such a watcher) and its
client relists or resumes.

Where events go through a conversion webhook (asynchronous), or the response is not uvicorn's
chunked HTTP/1.1 (another ASGI server), the serving task encodes and sends each batch through
ASGI instead, woken once per batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import math
import random
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from prometheus_client import Gauge
from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

from ..apimachinery import errors as e
from ..apimachinery.errors import StatusError
from ..registry.conversion import converts
from ..registry.store import Context, GenericStore, ListOptions
from ..registry.types import ResourceType
from ..storage import watchcache
from ..storage.watchcache import CachedObject, Watcher, WatchEvent
from . import tables
from .http import Request, end_stream, start_stream, stream_chunk
from .tls import PeerCertProtocol

log = logging.getLogger("fleetplane.server")

#: kube's cacher sends a bookmark about every minute; Kopf gives up on a stream after 70 s
DEFAULT_BOOKMARK_INTERVAL = 60.0
#: bytes of events a watch may have waiting for its client before it is dropped (with
#: ``watchcache.WATCHER_QUEUE_LIMIT`` events: whichever comes first)
WATCHER_BUFFER_BYTES = 16 * 1024 * 1024
#: how long a dropped watch's 410 ERROR event and end may wait for a client that reads nothing,
#: before its connection is closed
DROP_GRACE_SECONDS = 10.0


def _parse_rv(value: str) -> int | None:
    if value in ("", "0"):
        return None
    try:
        return int(value)
    except ValueError:
        raise e.bad_request(f'invalid resource version "{value}"') from None


def _error_event(err: StatusError) -> bytes:
    return orjson.dumps({"type": "ERROR", "object": err.status()}) + b"\n"


def _server_cycle(req: Request) -> RequestResponseCycle | None:
    """uvicorn's HTTP response cycle beneath ``req``; None under another server or for a WebSocket."""
    cycle = getattr(req.server_send, "__self__", None)
    return cycle if req.websocket is None and isinstance(cycle, RequestResponseCycle) else None


def _direct_cycle(req: Request) -> RequestResponseCycle | None:
    """uvicorn's response cycle of a started chunked response, whose transport a watch may
    write whole chunks to; None for anything else (another server, HEAD, a WebSocket)."""
    cycle = _server_cycle(req)
    if cycle is not None and cycle.chunked_encoding is True and cycle.response_started and not cycle.response_complete:
        return cycle
    return None


class _Flusher:
    """Writes every watch that gathered lines, once per event-loop step: the events the cache
    applies in one step leave as one chunk (one TLS record, one send) per watch."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.dirty: list[_Stream] = []

    def add(self, stream: _Stream) -> None:
        if not self.dirty:
            self.loop.call_soon(self.run)
        self.dirty.append(stream)

    def run(self) -> None:
        dirty, self.dirty = self.dirty, []
        for stream in dirty:
            stream.flush()


#: a timer of :class:`Timers`: [when, sequence, callback, or None once cancelled]
TimerEntry = list[Any]


class Timers:
    """Every watch's deadline and bookmark times on one loop, in one heap under one loop timer:
    a uvloop timer per watch costs about 0.7 KiB, an entry here about 0.15. A cancelled entry
    stays, emptied, until its time; the heap is rebuilt once most of it is cancelled."""

    #: entries due this close to now run now (the loop's timers have millisecond resolution)
    SLACK = 0.001

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.heap: list[TimerEntry] = []
        self.sequence = itertools.count()
        self.cancelled = 0
        self.handle: asyncio.TimerHandle | None = None
        self.armed = math.inf

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerEntry:
        entry: TimerEntry = [when, next(self.sequence), callback]
        heapq.heappush(self.heap, entry)
        if when < self.armed:
            self._arm(when)
        return entry

    def cancel(self, entry: TimerEntry) -> None:
        if entry[2] is None:
            return
        entry[2] = None
        self.cancelled += 1
        if self.cancelled > 64 and 2 * self.cancelled > len(self.heap):
            self.heap = [e for e in self.heap if e[2] is not None]
            heapq.heapify(self.heap)
            self.cancelled = 0

    def _arm(self, when: float) -> None:
        if self.handle is not None:
            self.handle.cancel()
        self.armed = when
        self.handle = self.loop.call_at(when, self._run)

    def _run(self) -> None:
        self.handle, self.armed = None, math.inf
        heap, now = self.heap, self.loop.time() + self.SLACK
        while heap and heap[0][0] <= now:
            callback = heapq.heappop(heap)[2]
            if callback is None:
                self.cancelled -= 1
                continue
            try:
                callback()
            except Exception:
                log.exception("a watch timer failed")
        if heap and heap[0][0] < self.armed:
            self._arm(heap[0][0])


_per_loop: dict[asyncio.AbstractEventLoop, tuple[_Flusher, Timers]] = {}


def _loop_parts(loop: asyncio.AbstractEventLoop) -> tuple[_Flusher, Timers]:
    """The flusher and timers every watch on ``loop`` shares."""
    parts = _per_loop.get(loop)
    if parts is None:
        for old in [lp for lp in _per_loop if lp.is_closed()]:
            del _per_loop[old]
        parts = _per_loop[loop] = (_Flusher(loop), Timers(loop))
    return parts


class _Stream:
    """One watch's delivery: the watch cache's sink on one side, the connection on the other."""

    __slots__ = ("req", "store", "watcher", "encoder", "loop", "cycle", "flusher", "bookmark_interval", "live",
                 "timers", "pending", "pending_bytes", "events", "scheduled", "ended", "disconnected", "blocked", "bookmark_due",
                 "error", "last_rev", "last_write", "deadline", "deadline_timer", "bookmark_timer", "waiter")

    def __init__(self, req: Request, store: GenericStore, watcher: Watcher, encoder: _Encoder,
                 loop: asyncio.AbstractEventLoop, start_rev: int) -> None:
        self.req, self.store, self.watcher, self.encoder, self.loop = req, store, watcher, encoder, loop
        #: set once the response started, when its lines can go straight to the transport
        self.cycle: RequestResponseCycle | None = None
        self.flusher, self.timers = _loop_parts(loop)
        self.bookmark_interval: float | None = None
        self.live = False  # the initial events are out: later lines may be written
        #: lines (direct) or events (through ASGI) waiting to be written
        self.pending: list[bytes] = []
        self.pending_bytes = 0
        self.events: list[WatchEvent] = []
        self.scheduled = False
        self.ended = False
        self.disconnected = False
        self.blocked = False  # the connection is paused: the serving task waits for it to drain
        self.bookmark_due = False
        self.error: StatusError | None = None
        self.last_rev = start_rev
        self.last_write = 0.0
        self.deadline = 0.0
        self.deadline_timer: TimerEntry | None = None
        self.bookmark_timer: TimerEntry | None = None
        self.waiter: asyncio.Future[None] | None = None
        watcher.attach(self.sink, self.end)

    # -- the watch cache's side: called in the step an event is applied ----------------------

    def sink(self, ev: WatchEvent) -> None:
        self.last_rev = ev.revision
        if self.cycle is None:
            self.events.append(ev)
            if len(self.events) > watchcache.WATCHER_QUEUE_LIMIT:
                self.watcher.overflow()
            elif self.live:
                self._wake()
            return
        try:
            line = self.encoder.frame(ev)
        except StatusError as err:
            self.error = err
            self.watcher.stop()
            return
        except Exception:
            log.exception("encoding a watch event failed")
            self.error = e.internal("an error on the server has prevented the watch event from being sent")
            self.watcher.stop()
            return
        self._add(line)

    def _add(self, line: bytes) -> None:
        self.pending.append(line)
        self.pending_bytes += len(line)
        if len(self.pending) > watchcache.WATCHER_QUEUE_LIMIT or self.pending_bytes > WATCHER_BUFFER_BYTES:
            self.watcher.overflow()
        elif self.live and not self.scheduled and not self.blocked:
            self.scheduled = True
            self.flusher.add(self)

    def disconnect(self) -> None:
        """The client is gone: the watch stops, nothing more is written."""
        self.disconnected = True
        self.watcher.stop()

    def end(self) -> None:
        """The watcher stopped (timeout, shutdown, overflow, the client gone): the task ends the stream."""
        self.ended = True
        self._wake()

    # -- the connection's side ----------------------------------------------------------------

    def flush(self) -> None:
        """Write the waiting lines as one chunk, if the connection takes them now."""
        self.scheduled = False
        cycle = self.cycle
        if not self.pending or cycle is None or self.ended and self.watcher.overflowed:
            return
        if cycle.disconnected or cycle.transport.is_closing():
            self.watcher.stop()
            return
        if cycle.flow.write_paused:
            self.blocked = True  # the serving task waits for the drain, then flushes
            self._wake()
            return
        lines, size = self.pending, self.pending_bytes
        self.pending, self.pending_bytes = [], 0
        cycle.transport.write(b"".join([b"%x\r\n" % size, *lines, b"\r\n"]))
        if self.bookmark_interval is not None:
            self.last_write = self.loop.time()

    def go_live(self, timeout: float, bookmark_interval: float | None) -> None:
        """The initial events are written: arm the deadline (and bookmarks), write what came since."""
        now = self.loop.time()
        self.live, self.last_write, self.deadline = True, now, now + timeout
        self.deadline_timer = self.timers.call_at(self.deadline, self.watcher.stop)
        if bookmark_interval is not None:
            self.bookmark_interval = bookmark_interval
            self.bookmark_timer = self.timers.call_at(now + bookmark_interval, self._bookmark)
        if self.pending:
            self.scheduled = True
            self.flusher.add(self)
        if self.events:
            self._wake()

    def _bookmark(self) -> None:
        """A bookmark when nothing was written for an interval (one timer per interval, not per event)."""
        assert self.bookmark_interval is not None
        now = self.loop.time()
        if self.ended or now >= self.deadline:
            return
        due = self.last_write + self.bookmark_interval
        if now >= due - 0.001:
            if self.cycle is not None:
                self._add(self.encoder.bookmark(max(self.last_rev, self.store.cache.revision)))
                self.last_write = now
            else:
                self.bookmark_due = True
                self._wake()
            due = now + self.bookmark_interval
        self.bookmark_timer = self.timers.call_at(due, self._bookmark)

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    async def wait(self) -> None:
        """Until the serving task has something to do."""
        if self.ended or self.blocked or self.bookmark_due or self.events:
            return
        self.waiter = self.loop.create_future()
        try:
            await self.waiter
        finally:
            self.waiter = None

    def cancel_timers(self) -> None:
        for timer in (self.deadline_timer, self.bookmark_timer):
            if timer is not None:
                self.timers.cancel(timer)
        self.deadline_timer = self.bookmark_timer = None

    async def drain(self, grace: float | None = None) -> bool:
        """Wait until the connection takes writes again; False if it is gone (or did not drain in ``grace`` s)."""
        cycle = self.cycle
        assert cycle is not None
        if cycle.flow.write_paused and not cycle.disconnected:
            try:
                async with asyncio.timeout(grace):
                    await cycle.flow.drain()
            except TimeoutError:
                cycle.transport.abort()
                return False
        return not cycle.disconnected and not cycle.transport.is_closing()


async def serve_watch(req: Request, store: GenericStore, rt: ResourceType, ctx: Context, opts: ListOptions,
                      *, table: bool, include_object: str, bookmark_interval: float = DEFAULT_BOOKMARK_INTERVAL,
                      watchers: Gauge) -> None:
    """Stream ``rt``'s events; ``watchers`` counts the open streams per resource."""
    send_initial = req.param("sendInitialEvents")
    initial_events = send_initial.lower() == "true" if send_initial else opts.resource_version in ("", "0")
    since = None if initial_events and not send_initial else _parse_rv(opts.resource_version)
    bookmarks = req.flag("allowWatchBookmarks")
    timeout_param = req.param("timeoutSeconds")
    try:
        timeout = float(timeout_param) if timeout_param else 1800 * (1 + random.random())
    except ValueError:
        raise e.bad_request(f'invalid timeoutSeconds "{timeout_param}"') from None

    await store.cache.sync()
    try:
        watcher, replay = store.watch(rt, ctx, opts, since if not initial_events else None)
    except StatusError as err:
        # Too old: answered 200 with one ERROR event, as kube's cacher does.
        await start_stream(req)
        await stream_chunk(req, _error_event(err))
        await end_stream(req)
        return
    initial = store.initial_objects(rt, ctx, opts) if initial_events else []
    start_rev = store.cache.revision
    encoder = _Encoder(rt, store, table, include_object)
    loop = asyncio.get_running_loop()
    stream = _Stream(req, store, watcher, encoder, loop, start_rev)  # from here on, events gather in it

    gauge = watchers.labels(rt.group_resource)
    gauge.inc()
    stop_listening = _on_disconnect(req, stream)
    try:
        await start_stream(req)
        chunk = [await encoder.events([("ADDED", o) for o in initial] + list(replay))]
        if send_initial.lower() == "true" and bookmarks:
            chunk.append(encoder.bookmark(start_rev, initial_end=True))
        if not converts(rt):  # later lines are encoded as events arrive, and written straight to the connection
            stream.cycle = _direct_cycle(req)
            if stream.cycle is not None and stream.events:  # what arrived while the response started
                early, stream.events = stream.events, []
                for ev in early:
                    stream.sink(ev)
        await stream_chunk(req, b"".join(chunk))
        # not held for the watch's life (up to an hour): the initial events' list and their bytes
        del chunk, initial, replay
        stream.go_live(timeout, bookmark_interval if bookmarks else None)
        while True:
            await stream.wait()
            if stream.ended:
                break
            if stream.blocked:  # direct: the client reads slowly; write once it has caught up
                if not await stream.drain():
                    break
                stream.blocked = False
                stream.flush()
            if stream.events:  # through ASGI: the batch that gathered, in one chunk
                batch, stream.events = stream.events, []
                await stream_chunk(req, await encoder.events(list(batch)))
                stream.last_write = loop.time()
            if stream.bookmark_due:
                stream.bookmark_due = False
                if loop.time() < stream.deadline:
                    await stream_chunk(req, encoder.bookmark(max(stream.last_rev, store.cache.revision)))
                stream.last_write = loop.time()
        stream.cancel_timers()
        if watcher.overflowed:
            stream.pending.clear()
            stream.events.clear()
            await _last_words(req, stream, _error_event(e.gone("the watcher fell too far behind; please resume")))
        elif not stream.disconnected:
            if stream.pending and await stream.drain():
                stream.flush()
            if stream.events:
                await stream_chunk(req, await encoder.events(list(stream.events)))
            if stream.error is not None:
                await _last_words(req, stream, _error_event(stream.error))
    except StatusError as err:  # a conversion webhook failed: the stream ends with its Status
        with contextlib.suppress(OSError):
            await stream_chunk(req, _error_event(err))
    except OSError:
        pass
    finally:
        gauge.dec()
        watcher.stop()
        stream.cancel_timers()
        await stop_listening()
    if not stream.disconnected:
        with contextlib.suppress(Exception):
            await end_stream(req)


def _on_disconnect(req: Request, stream: _Stream) -> Callable[[], Awaitable[None]]:
    """Stop the watch when its client goes: told by the hub's own connection protocol (no task,
    which would cost every open watch a task and its frames), else by a task reading ``receive()``
    for ``http.disconnect`` (another ASGI server). Returns what stops listening, once the watch ends."""
    cycle = _server_cycle(req)
    protocol = cycle.transport.get_protocol() if cycle is not None else None
    if cycle is not None and isinstance(protocol, PeerCertProtocol):
        if cycle.disconnected:
            stream.disconnect()
        else:
            protocol.on_lost = stream.disconnect

        async def forget() -> None:  # the connection may serve other requests after this one
            if protocol.on_lost == stream.disconnect:
                protocol.on_lost = None
        return forget

    async def listen() -> None:
        while (await req.receive())["type"] != "http.disconnect":
            pass
        stream.disconnect()

    listener = asyncio.create_task(listen())

    async def cancel() -> None:
        listener.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await listener
    return cancel


async def _last_words(req: Request, stream: _Stream, line: bytes) -> None:
    """A watch's closing ERROR event; a client that reads nothing gets its connection closed
    after ``DROP_GRACE_SECONDS`` (an unread ERROR must not hold the serving task forever)."""
    if stream.cycle is not None:
        if await stream.drain(DROP_GRACE_SECONDS):
            stream.cycle.transport.write(b"%x\r\n%s\r\n" % (len(line), line))
        return
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(DROP_GRACE_SECONDS):
            await stream_chunk(req, line)


class _Encoder:
    """Encodes events for one watch; plain JSON reuses the bytes cached on the event."""

    __slots__ = ("rt", "store", "table", "include_object", "headers_sent", "plain")

    def __init__(self, rt: ResourceType, store: GenericStore, table: bool, include_object: str) -> None:
        self.rt = rt
        self.store = store
        self.table = table
        self.include_object = include_object
        self.headers_sent = False
        self.plain = not table and not rt.custom and rt.stored_as is None  # the stored bytes as they are

    def _object_bytes(self, co: CachedObject, converted: dict | None = None) -> bytes:
        if self.table:
            presented = converted if converted is not None else self.store.presented(self.rt, co)
            body = tables.to_table(self.rt, [presented], include_object=self.include_object, no_headers=self.headers_sent)
            self.headers_sent = True
            return orjson.dumps(body)
        if converted is not None:
            return orjson.dumps(converted)
        return self.store.presented_json(self.rt, co)

    def event(self, etype: str, co: CachedObject, converted: dict | None = None) -> bytes:
        return b'{"type":"' + etype.encode() + b'","object":' + self._object_bytes(co, converted) + b"}\n"

    async def events(self, events: list[tuple[str, CachedObject] | WatchEvent]) -> bytes:
        """Several events (initial objects or watch events) in one chunk; objects served through
        a conversion webhook are converted together, in one review (a failure raises its StatusError)."""
        if not events:
            return b""
        pairs = [(ev.type, ev.cur) if isinstance(ev, WatchEvent) else ev for ev in events]
        if converts(self.rt):
            objs = await self.store.converted(self.rt, [co.obj for _, co in pairs])
            return b"".join(self.event(etype, co, obj) for (etype, co), obj in zip(pairs, objs, strict=True))
        return b"".join(self.watch_event(ev) if isinstance(ev, WatchEvent) else self.event(*ev) for ev in events)

    def watch_event(self, ev: WatchEvent) -> bytes:
        if self.plain:
            return ev.frame()  # the same bytes for every watch
        return self.event(ev.type, ev.cur)

    #: one event's line, synchronously (not for objects served through a conversion webhook)
    frame = watch_event

    def bookmark(self, revision: int, initial_end: bool = False) -> bytes:
        meta: dict = {"resourceVersion": str(revision)}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        obj = {"kind": self.rt.kind, "apiVersion": self.rt.api_version, "metadata": meta}
        return orjson.dumps({"type": "BOOKMARK", "object": obj}) + b"\n"
