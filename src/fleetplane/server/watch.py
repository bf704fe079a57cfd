"""Watch streams: newline-delimited JSON events, served from the watch cache.

The start of a watch (initial ADDED events, or the history after a resourceVersion) and
its registration happen in the same event-loop step, so no event falls between them.
"""

from __future__ import annotations

import asyncio
import contextlib
import random

import orjson
from prometheus_client import Gauge

from ..apimachinery import errors as e
from ..apimachinery.errors import StatusError
from ..registry.conversion import converts
from ..registry.store import Context, GenericStore, ListOptions
from ..registry.types import ResourceType
from ..storage.watchcache import CachedObject, WatchEvent
from . import tables
from .http import Request, end_stream, start_stream, stream_chunk

#: kube's cacher sends a bookmark about every minute; Kopf gives up on a stream after 70 s
DEFAULT_BOOKMARK_INTERVAL = 60.0


def _parse_rv(value: str) -> int | None:
    if value in ("", "0"):
        return None
    try:
        return int(value)
    except ValueError:
        raise e.bad_request(f'invalid resource version "{value}"') from None


def _error_event(err: StatusError) -> bytes:
    return orjson.dumps({"type": "ERROR", "object": err.status()}) + b"\n"


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

    await start_stream(req)
    gauge = watchers.labels(rt.group_resource)
    gauge.inc()
    disconnected = asyncio.Event()

    async def watch_disconnect() -> None:
        while True:
            msg = await req.receive()
            if msg["type"] == "http.disconnect":
                disconnected.set()
                watcher.stop()
                return

    listener = asyncio.create_task(watch_disconnect())
    try:
        chunk = [await encoder.events([("ADDED", o) for o in initial] + list(replay))]
        if send_initial.lower() == "true" and bookmarks:
            chunk.append(encoder.bookmark(start_rev, initial_end=True))
        if chunk:
            await stream_chunk(req, b"".join(chunk))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        last_rev = start_rev
        while not disconnected.is_set():
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            wait = min(remaining, bookmark_interval) if bookmarks else remaining
            try:
                async with asyncio.timeout(wait):
                    ev = await watcher.queue.get()
            except TimeoutError:
                if bookmarks and loop.time() < deadline:
                    await stream_chunk(req, encoder.bookmark(max(last_rev, store.cache.revision)))
                continue
            if ev is None:
                if watcher.overflowed:
                    await stream_chunk(req, _error_event(e.gone("the watcher fell too far behind; please resume")))
                break
            ready = [ev]
            last_rev = ev.revision
            while not watcher.queue.empty():  # write whatever else is ready in one chunk
                nxt = watcher.queue.get_nowait()
                if nxt is None:
                    watcher.queue.put_nowait(None)
                    break
                ready.append(nxt)
                last_rev = nxt.revision
            await stream_chunk(req, await encoder.events(list(ready)))
    except StatusError as err:  # a conversion webhook failed: the stream ends with its Status
        with contextlib.suppress(OSError):
            await stream_chunk(req, _error_event(err))
    except OSError:
        pass
    finally:
        gauge.dec()
        watcher.stop()
        listener.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await listener
    if not disconnected.is_set():
        with contextlib.suppress(Exception):
            await end_stream(req)


class _Encoder:
    """Encodes events for one watch; plain JSON reuses the bytes cached on the event."""

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
            return b'{"type":"' + ev.type.encode() + b'","object":' + ev.encoded() + b"}\n"
        return self.event(ev.type, ev.cur)

    def bookmark(self, revision: int, initial_end: bool = False) -> bytes:
        meta: dict = {"resourceVersion": str(revision)}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        obj = {"kind": self.rt.kind, "apiVersion": self.rt.api_version, "metadata": meta}
        return orjson.dumps({"type": "BOOKMARK", "object": obj}) + b"\n"
