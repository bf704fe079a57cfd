"""The watch cache: every object of every resource in memory, plus recent history.

It is fed by one ``store.watch("/")`` stream (never by polling) and serves lists and watches
for all logical clusters: a list is a scan of one cluster's dict (or all of them, for the
``/clusters/*`` wildcard), a watch is a sink called as each event arrives (the HTTP layer's, which
writes the event's shared bytes to the connection: server/watch.py) or, without one, a queue.
Lists wait until the
cache has caught up with the store's current revision, so they are consistent reads, as in
kube-apiserver's consistent-reads-from-cache.

The history a watch can resume from is bounded per resource three ways (:class:`HistoryLimits`):
by age (kube's cacher keeps about 75 s, its ``eventFreshDuration``), by the bytes of the events'
objects (so a run of 2 MiB updates cannot hold gigabytes), and by count. A watch from a
revision older than what is kept gets 410 Expired, and clients relist.

A large object written by this replica is not decoded again when its event arrives: the
registry hands the cache the object it encoded (:meth:`WatchCache.handing`), and the cache takes
it when the event's value is those very bytes. Decoding a 4 MiB value is one C call holding the
GIL for some 100 ms, in which no other request is answered. Writes of other replicas (etcd), and
small objects, are decoded from the event as before. A DELETE event's object is the one cached
before it, at the delete's revision: its value is that object's.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
from sortedcontainers import SortedDict

from ..apimachinery.jsonvalue import dumps_to_keep
from .interface import CompactedError, Event, EventType, KeyValue, Store, UnavailableError
from .keys import split_key

log = logging.getLogger(__name__)

HISTORY_PER_RESOURCE = 20_000
HISTORY_SECONDS = 75.0
HISTORY_BYTES_PER_RESOURCE = 32 * 1024 * 1024
#: events a watcher may have waiting (queued, or buffered by its sink) before it is dropped
WATCHER_QUEUE_LIMIT = 20_000
#: how often history is aged out of resources that see no writes
SWEEP_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class HistoryLimits:
    """How much history each resource keeps: the first limit reached drops the oldest events
    (the newest event is always kept, however large: one object is at most a body's size)."""

    events: int = HISTORY_PER_RESOURCE
    seconds: float = HISTORY_SECONDS
    bytes: int = HISTORY_BYTES_PER_RESOURCE


@dataclass(slots=True)
class CachedObject:
    key: str
    cluster: str
    namespace: str
    name: str
    revision: int
    obj: dict[str, Any]  # treat as immutable: copy before changing
    #: the object as a resource type serves it, memoized by the registry (kube's cachingObject):
    #: reads of one version are presented and encoded once, not once per list, get or watcher
    view: Any = None


@dataclass(slots=True)
class WatchEvent:
    """One change as watchers see it; ``encoded`` caches the JSON of ``obj`` and ``frame`` the
    whole watch event (one line of a watch stream), both made once and shared by every watcher."""

    type: str  # ADDED | MODIFIED | DELETED
    cur: CachedObject
    prev: CachedObject | None
    _encoded: bytes | None = None
    #: the bytes of the stored value (what the history's byte budget counts) and when it arrived
    size: int = 0
    arrived: float = 0.0
    _frame: bytes | None = None

    @property
    def revision(self) -> int:
        return self.cur.revision

    def encoded(self) -> bytes:
        if self._encoded is None:
            frame = self._frame
            # the frame holds the object's JSON: cut it out rather than encode it again
            self._encoded = frame[len(self.type) + 20:-2] if frame is not None else dumps_to_keep(self.cur.obj)
        return self._encoded

    def frame(self) -> bytes:
        """``{"type":"<type>","object":<the object's JSON>}`` and a newline, as a JSON watch
        stream carries it; the object's JSON is not kept apart (one copy of the bytes)."""
        if self._frame is None:
            obj = self._encoded if self._encoded is not None else orjson.dumps(self.cur.obj)
            self._frame = b'{"type":"' + self.type.encode() + b'","object":' + obj + b"}\n"
        return self._frame


def decode(kv_key: str, value: bytes, revision: int, stored: dict[str, Any] | None = None) -> CachedObject:
    """The cached object of a stored value: ``stored`` when the writer handed it over (it is what
    decoding ``value`` gives, and the cache's own from here on), else the value decoded."""
    obj = orjson.loads(value) if stored is None else stored
    obj["metadata"]["resourceVersion"] = str(revision)
    _, _, cluster, namespace, name = split_key(kv_key)
    return CachedObject(kv_key, cluster, namespace, name, revision, obj)


def deleted(prev: CachedObject, ev: Event) -> CachedObject:
    """The object of a DELETE event: the last one stored (``prev``, what decoding the event's
    value gives, as the cache applies every change in order) at the delete's revision, without
    decoding it again. Its top level and metadata are its own; the rest is shared with ``prev``
    (cached objects are never changed)."""
    obj = {**prev.obj, "metadata": {**prev.obj["metadata"], "resourceVersion": str(ev.revision)}}
    return CachedObject(prev.key, prev.cluster, prev.namespace, prev.name, ev.revision, obj)


Filter = Callable[[CachedObject], bool]


Sink = Callable[[WatchEvent], None]
#: what an event must carry to concern a watcher: (logical cluster, label key, label value), each
#: None where the watcher takes any
DispatchKey = tuple[str | None, str | None, str | None]


class Watcher:
    """One watch: matching events handed to its sink as they are applied (:meth:`attach`), or
    queued (``queue``) for a reader that has none; a watcher the HTTP layer serves has a sink."""

    __slots__ = ("cache", "cluster", "namespace", "match", "label", "_queue", "closed", "overflowed", "sink", "on_stop")

    def __init__(self, cache: ResourceCache, cluster: str | None, namespace: str | None, match: Filter,
                 label: tuple[str, str] | None = None) -> None:
        self.cache = cache
        self.cluster = cluster
        self.namespace = namespace
        self.match = match
        #: a label ``(key, value)`` every object ``match`` selects carries (see ResourceCache.concerned)
        self.label = label
        self._queue: asyncio.Queue[WatchEvent | None] | None = None
        self.closed = False
        self.overflowed = False
        self.sink: Sink | None = None
        self.on_stop: Callable[[], None] | None = None

    @property
    def dispatch_key(self) -> DispatchKey:
        return (self.cluster, *(self.label or (None, None)))

    @property
    def queue(self) -> asyncio.Queue[WatchEvent | None]:
        """The events of a watcher without a sink, then None once it is stopped."""
        if self._queue is None:
            self._queue = asyncio.Queue()
            if self.closed:
                self._queue.put_nowait(None)
        return self._queue

    def attach(self, sink: Sink, on_stop: Callable[[], None]) -> None:
        """Hand every later event to ``sink``, synchronously, in the step the cache applies it (no
        queue, no task switch per event); ``on_stop`` is called once when the watcher is stopped
        (shutdown, a relist, the store's watch breaking, or :meth:`stop`). Attach before the
        event loop runs anything else after :meth:`WatchCache.watch`, so no event is missed."""
        self.sink, self.on_stop = sink, on_stop
        if self.closed:  # stopped before it was attached: the hub is shutting down
            on_stop()

    def _scoped(self, o: CachedObject) -> bool:
        return (self.cluster is None or o.cluster == self.cluster) and (
            not self.namespace or o.namespace == self.namespace
        )

    def translate(self, ev: WatchEvent) -> WatchEvent | None:
        """``ev`` as this watcher sees it: entering or leaving its selector is ADDED or DELETED."""
        if not self._scoped(ev.cur):
            return None
        if ev.type == "DELETED":
            return ev if self.match(ev.cur) else None
        now = self.match(ev.cur)
        before = ev.prev is not None and ev.type != "ADDED" and self.match(ev.prev)
        if now and before:
            return ev
        if now:
            return ev if ev.type == "ADDED" else WatchEvent("ADDED", ev.cur, None, ev.encoded())
        if before:
            return WatchEvent("DELETED", ev.cur, None, ev.encoded())
        return None

    def offer(self, ev: WatchEvent) -> None:
        if not self.closed:
            out = self.translate(ev)
            if out is not None:
                if self.sink is not None:
                    self.sink(out)
                else:
                    self._put(out)

    def _put(self, ev: WatchEvent) -> None:
        if self.queue.qsize() >= WATCHER_QUEUE_LIMIT:
            self.overflow()
            return
        self.queue.put_nowait(ev)

    def overflow(self) -> None:
        """A watcher this far behind is dropped, as kube's cacher does; clients resume."""
        self.overflowed = True
        self.stop()

    def stop(self) -> None:
        if not self.closed:
            self.closed = True
            self.cache.remove_watcher(self)
            if self._queue is not None:
                self._queue.put_nowait(None)
            if self.on_stop is not None:
                self.on_stop()


class ResourceCache:
    """Current objects and recent events of one resource (``/<group>/<resource>/``)."""

    def __init__(self, prefix: str, start_revision: int, limits: HistoryLimits | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.prefix = prefix
        #: every object by key, in key order: a logical cluster's and a namespace's objects are
        #: each one range of it, so a list or a page reads only its range, already sorted
        self.by_key: SortedDict[str, CachedObject] = SortedDict()
        self.history: collections.deque[WatchEvent] = collections.deque()
        self.history_bytes = 0
        self.limits = limits or HistoryLimits()
        self.clock = clock
        # Events after this revision are all in history (or there were none).
        self.oldest_revision = start_revision
        #: the watchers by dispatch key, and how many are indexed by each label key: an event is
        #: offered to the watchers it can concern, not to all of them (a thousand Syncers each
        #: watching Deployments labelled with their cluster's name get one offer per event, not
        #: a thousand)
        self._dispatch: dict[DispatchKey, set[Watcher]] = {}
        self._label_keys: collections.Counter[str] = collections.Counter()

    @property
    def watchers(self) -> list[Watcher]:
        """Every registered watcher."""
        return [w for bucket in self._dispatch.values() for w in bucket]

    def add_watcher(self, w: Watcher) -> None:
        self._dispatch.setdefault(w.dispatch_key, set()).add(w)
        if w.label is not None:
            self._label_keys[w.label[0]] += 1

    def remove_watcher(self, w: Watcher) -> None:
        key = w.dispatch_key
        bucket = self._dispatch.get(key)
        if bucket is None or w not in bucket:
            return
        bucket.discard(w)
        if not bucket:
            del self._dispatch[key]
        if w.label is not None:
            self._label_keys[w.label[0]] -= 1
            if not self._label_keys[w.label[0]]:
                del self._label_keys[w.label[0]]

    def concerned(self, ev: WatchEvent) -> list[Watcher]:
        """The watchers ``ev`` may concern: those of every logical cluster or of its own, taking
        any label or one its object has now or had before (leaving a selector is a DELETED)."""
        cluster = ev.cur.cluster
        keys: list[DispatchKey] = [(None, None, None), (cluster, None, None)]
        if self._label_keys:
            now = ev.cur.obj["metadata"].get("labels") or {}
            before = (ev.prev.obj["metadata"].get("labels") or {}) if ev.prev is not None else {}
            for label in self._label_keys:
                for value in {now.get(label), before.get(label)}:
                    if value is not None:
                        keys += [(None, label, value), (cluster, label, value)]
        dispatch = self._dispatch
        return [w for key in keys if (bucket := dispatch.get(key)) for w in bucket]

    def load(self, o: CachedObject) -> None:
        self.by_key[o.key] = o

    def apply(self, ev: Event, stored: dict[str, Any] | None = None) -> WatchEvent:
        """Apply one change; ``stored``: the object of a PUT's value, handed over by its writer."""
        objects = self.by_key
        prev = objects.get(ev.key)
        if ev.type is EventType.DELETE:
            cur = deleted(prev, ev) if prev is not None else decode(ev.key, ev.value, ev.revision)
            if prev is not None:
                del objects[ev.key]
            wev = WatchEvent("DELETED", cur, prev)
        else:
            cur = decode(ev.key, ev.value, ev.revision, stored)
            objects[ev.key] = cur
            wev = WatchEvent("MODIFIED" if prev is not None else "ADDED", cur, prev)
        wev.size, wev.arrived = len(ev.value), self.clock()
        self.history.append(wev)
        self.history_bytes += wev.size
        self.trim()
        for w in self.concerned(wev):
            w.offer(wev)
        return wev

    def trim(self) -> None:
        """Drop the oldest events past any of the limits; a watch from before what is left is 410."""
        limits, history = self.limits, self.history
        too_old = self.clock() - limits.seconds
        while history and (len(history) > limits.events or history[0].arrived < too_old
                           or (self.history_bytes > limits.bytes and len(history) > 1)):
            dropped = history.popleft()
            self.history_bytes -= dropped.size
            self.oldest_revision = dropped.revision

    def objects(self, cluster: str | None, namespace: str | None, after: str = "") -> Iterator[CachedObject]:
        """The objects in scope in key order (a list's order), those after the key ``after`` only
        (a page's start); ``cluster`` None: every logical cluster's."""
        scope = self._scope(cluster, namespace)
        keys = self.by_key.irange(minimum=after, inclusive=(False, True)) if after > scope else self.by_key.irange(minimum=scope)
        objects = self.by_key
        for key in keys:
            if not key.startswith(scope):
                return
            o = objects[key]
            # across logical clusters a namespace is not one range: filtered (a rare list)
            if not namespace or o.namespace == namespace:
                yield o

    def _scope(self, cluster: str | None, namespace: str | None) -> str:
        """The prefix of the keys in scope (across logical clusters, a namespace is not one)."""
        if cluster is None:
            return self.prefix
        return f"{self.prefix}{cluster}/{namespace}/" if namespace else f"{self.prefix}{cluster}/"

    def get(self, key: str) -> CachedObject | None:
        return self.by_key.get(key)

    def count(self, cluster: str | None, namespace: str | None = None, after: str = "") -> int:
        """How many objects ``objects`` would yield; without reading them where the scope is one range."""
        if cluster is None and namespace:
            return sum(1 for _ in self.objects(cluster, namespace, after))
        scope = self._scope(cluster, namespace)
        end = self.by_key.bisect_left(scope[:-1] + "0")  # "0" follows "/": past the scope's last key
        return max(0, int(end - (self.by_key.bisect_right(after) if after > scope else self.by_key.bisect_left(scope))))


class WatchCache:
    """All resources' caches, fed by the store's change stream from one task."""

    def __init__(self, store: Store, limits: HistoryLimits | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.limits = limits or HistoryLimits()
        self.clock = clock
        self.resources: dict[str, ResourceCache] = {}
        self.revision = 0
        self._start_revision = 0
        self._task: asyncio.Task[None] | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._listeners: list[Callable[[WatchEvent], None]] = []
        #: key -> (value, its object) of this replica's writes in flight (see :meth:`handing`)
        self._handed: dict[str, tuple[bytes, dict[str, Any]]] = {}
        self.ready = asyncio.Event()
        #: the hub is shutting down: a watch opened from now on ends as soon as it starts
        self.closing = False

    async def start(self) -> None:
        kvs, rev = await self.store.range("/")
        self._load(kvs, rev)
        self._task = asyncio.create_task(self._run(rev + 1), name="watch-cache")
        self._sweeper = asyncio.create_task(self._sweep(), name="watch-cache-sweeper")
        self.ready.set()

    async def _sweep(self) -> None:
        """Age history out of resources nobody writes to (writes trim their own resource)."""
        while True:
            await asyncio.sleep(min(SWEEP_SECONDS, self.limits.seconds))
            for rc in list(self.resources.values()):
                rc.trim()

    def history_sizes(self) -> list[tuple[str, int, int]]:
        """(prefix, events, bytes) of each resource's history, for the metrics."""
        return [(rc.prefix, len(rc.history), rc.history_bytes) for rc in list(self.resources.values())]

    def _load(self, kvs: list[KeyValue], rev: int) -> None:
        self.revision = rev
        self._start_revision = rev
        for kv in kvs:
            self.resource(kv.key).load(decode(kv.key, kv.value, kv.mod_revision))

    async def close(self) -> None:
        for task in (self._task, self._sweeper):
            if task:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        self.stop_watchers()

    def shut_down(self) -> None:
        """End every open watch, and every watch opened after, for the server's shutdown: a client
        whose watch ends reconnects at once, and would otherwise hold the server's graceful
        shutdown open until its timeout with a watch it opened in the meantime."""
        self.closing = True
        self.stop_watchers()

    def stop_watchers(self) -> None:
        """End every open watch (shutdown, a relist); clients resume elsewhere or after restart."""
        for rc in self.resources.values():
            for w in rc.watchers:  # a list of its own: a stopped watcher leaves the index
                w.stop()

    def resource(self, key_or_prefix: str) -> ResourceCache:
        parts = key_or_prefix.split("/", 3)
        prefix = f"/{parts[1]}/{parts[2]}/"
        rc = self.resources.get(prefix)
        if rc is None:
            rc = self.resources[prefix] = ResourceCache(prefix, self._start_revision, self.limits, self.clock)
        return rc

    @contextlib.contextmanager
    def handing(self, key: str, value: bytes, stored: dict[str, Any]) -> Iterator[None]:
        """Around a write of ``value`` to ``key``: when its event arrives, the cache takes
        ``stored`` as the object instead of decoding ``value`` again.

        ``stored`` must be what ``orjson.loads(value)`` gives (equal, and of JSON's types only),
        and is the cache's from the write on: the writer must not change it afterwards, nor
        anything in it (what it shares with the writer's own object is read-only for both, as
        every cached object is). An event is matched by its value, so a write that lost a race,
        another replica's write or a later write to the key is decoded as usual. A write that
        fails forgets the object; one that succeeds leaves it until its event arrives (from
        etcd that can be after the write has returned)."""
        self._handed[key] = (value, stored)
        try:
            yield
        except BaseException:
            if self._handed.get(key, (None,))[0] is value:
                del self._handed[key]
            raise

    def _stored(self, ev: Event) -> dict[str, Any] | None:
        """The object a local write handed over for ``ev``'s value, if any (taken once)."""
        handed = self._handed.get(ev.key)
        if handed is None or ev.type is not EventType.PUT or handed[0] != ev.value:
            return None
        del self._handed[ev.key]
        return handed[1]

    def add_listener(self, fn: Callable[[WatchEvent], None]) -> None:
        """Call ``fn`` for every change, after the cache applied it (controllers, type registry)."""
        self._listeners.append(fn)

    async def _run(self, start: int) -> None:
        while True:
            try:
                async for ev in self.store.watch("/", start):
                    wev = self.resource(ev.key).apply(ev, self._stored(ev) if self._handed else None)
                    for fn in self._listeners:
                        try:
                            fn(wev)
                        except Exception:  # a listener's bug must not stop the cache
                            log.exception("watch cache listener failed")
                    self.revision = ev.revision
                    start = ev.revision + 1
                    if self._waiters:
                        self._wake()
            except asyncio.CancelledError:
                raise
            except CompactedError:
                # We fell behind compaction: reload everything (watchers get 410 on resume).
                log.warning("watch cache fell behind compaction; relisting")
                while True:
                    try:
                        kvs, rev = await self.store.range("/")
                        break
                    except Exception as exc:  # the store is unreachable: keep trying
                        log.warning("relist failed (%s); retrying", exc)
                        await asyncio.sleep(0.5)
                self._relist(kvs, rev)
                start = rev + 1
            except UnavailableError as exc:
                # The store is unreachable (etcd down): end every watch cleanly, so that clients
                # resume from their last resourceVersion (served from history) once it is back.
                log.warning("store watch broke (%s); ending watches and resuming at revision %d", exc, start)
                self.stop_watchers()
                await asyncio.sleep(0.2)
            except Exception:
                log.exception("store watch failed; retrying")
                await asyncio.sleep(0.5)

    def _relist(self, kvs: list[KeyValue], rev: int) -> None:
        self.stop_watchers()
        self.resources.clear()
        self._handed.clear()  # their events are skipped: what they wrote is in the relist
        self._load(kvs, rev)

    def _wake(self) -> None:
        keep = []
        for rev, fut in self._waiters:
            if rev <= self.revision:
                if not fut.done():
                    fut.set_result(None)
            else:
                keep.append((rev, fut))
        self._waiters = keep

    async def wait_for(self, revision: int, timeout: float = 3.0) -> None:
        """Wait until the cache has applied ``revision`` (consistent reads)."""
        if self.revision >= revision:
            return
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append((revision, fut))
        async with asyncio.timeout(timeout):
            await fut

    async def sync(self, timeout: float = 3.0) -> int:
        """Catch up with the store's current revision and return it."""
        rev = await self.store.current_revision()
        await self.wait_for(rev, timeout)
        return rev

    def watch(self, prefix: str, cluster: str | None, namespace: str | None, match: Filter,
              since: int | None, label: tuple[str, str] | None = None) -> tuple[Watcher, list[WatchEvent]]:
        """Register a watcher; returns it and the history after ``since`` it must replay first.
        ``label``: a label ``(key, value)`` every object ``match`` selects carries, if any (the
        watcher is then offered only events of objects that carry it or did).

        Raises CompactedError when ``since`` is older than the history kept.
        """
        rc = self.resource(prefix)
        w = Watcher(rc, cluster, namespace, match, label)
        replay: list[WatchEvent] = []
        if since is not None and since < self.revision:
            rc.trim()  # what has aged out since the last write is gone
            if since < rc.oldest_revision:
                raise CompactedError(since, rc.oldest_revision)
            for ev in rc.history:
                if ev.revision > since and (out := w.translate(ev)) is not None:
                    replay.append(out)
        rc.add_watcher(w)
        if self.closing:
            w.stop()
        return w, replay
