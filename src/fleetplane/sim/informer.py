"""client-go's machinery, cut to what the simulated controllers need.

* :class:`Informer`: list, then watch from the list's resourceVersion (with bookmarks), into an
  in-memory store with indexes; relists on 410 Gone and on a broken stream, and hands every
  change to its handlers (several controllers share one informer per resource, as with a
  SharedInformerFactory). No polling: between events nothing runs.
* :class:`WorkQueue`: keys, deduplicated while waiting, never processed by two workers at
  once, re-queued if they changed while being processed; delayed and rate-limited adds.
* :func:`run_workers`: N workers draining a queue into a sync function.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import aiohttp

from .client import ApiError, Kube

log = logging.getLogger(__name__)

Handler = Callable[..., None]
IndexFunc = Callable[[dict], Iterable[str]]


def object_key(obj: dict) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


class EventHandler:
    """What an informer calls; override what you need. Must not block (enqueue and return)."""

    def on_add(self, obj: dict) -> None:
        pass

    def on_update(self, old: dict, new: dict) -> None:
        pass

    def on_delete(self, obj: dict) -> None:
        pass


class Informer:
    def __init__(self, kube: Kube, list_method: Callable[..., Any], name: str, *,
                 indexers: dict[str, IndexFunc] | None = None, alive: Callable[[], bool] = lambda: True,
                 **list_kwargs: Any) -> None:
        self.kube = kube
        #: False once the server is shutting down: a broken watch is then not resumed
        self.alive = alive
        self.list_method = list_method
        self.name = name
        self.list_kwargs = list_kwargs
        self.items: dict[str, dict] = {}
        self.handlers: list[EventHandler] = []
        self.synced = asyncio.Event()
        self.resource_version = ""
        self.indexers = dict(indexers or {})
        #: index name -> value -> keys
        self.indices: dict[str, dict[str, set[str]]] = {n: collections.defaultdict(set) for n in self.indexers}

    def add_handler(self, handler: EventHandler) -> None:
        self.handlers.append(handler)

    def get(self, key: str) -> dict | None:
        return self.items.get(key)

    def by_index(self, index: str, value: str) -> list[dict]:
        keys = self.indices[index].get(value) or ()
        return [self.items[k] for k in keys if k in self.items]

    def list(self, namespace: str | None = None) -> list[dict]:
        if namespace is None:
            return list(self.items.values())
        return [o for o in self.items.values() if (o.get("metadata") or {}).get("namespace") == namespace]

    # -- the store ----------------------------------------------------------------------------

    def _index(self, key: str, obj: dict | None, old: dict | None) -> None:
        for name, fn in self.indexers.items():
            idx = self.indices[name]
            if old is not None:
                for v in fn(old):
                    keys = idx.get(v)
                    if keys is not None:
                        keys.discard(key)
                        if not keys:
                            del idx[v]
            if obj is not None:
                for v in fn(obj):
                    idx[v].add(key)

    def _apply(self, etype: str, obj: dict) -> None:
        key = object_key(obj)
        old = self.items.get(key)
        if etype == "DELETED":
            if old is None:
                return
            del self.items[key]
            self._index(key, None, old)
            self._dispatch("on_delete", obj)
            return
        self.items[key] = obj
        self._index(key, obj, old)
        if old is None:
            self._dispatch("on_add", obj)
        elif old.get("metadata", {}).get("resourceVersion") != obj.get("metadata", {}).get("resourceVersion"):
            self._dispatch("on_update", old, obj)

    def _dispatch(self, method: str, *args: dict) -> None:
        for h in self.handlers:
            try:
                getattr(h, method)(*args)
            except Exception:
                log.exception("%s handler %s.%s failed", self.name, type(h).__name__, method)

    # -- list and watch -----------------------------------------------------------------------

    async def _list(self) -> None:
        body = await self.kube.call(self.list_method, **self.list_kwargs)
        fresh = {object_key(o): o for o in body.get("items") or []}
        kind = (body.get("kind") or "").removesuffix("List")
        api_version = body.get("apiVersion") or ""
        for o in fresh.values():
            o.setdefault("kind", kind)
            o.setdefault("apiVersion", api_version)
        for key in [k for k in self.items if k not in fresh]:
            self._apply("DELETED", self.items[key])
        for o in fresh.values():
            self._apply("MODIFIED", o)
        self.resource_version = (body.get("metadata") or {}).get("resourceVersion") or ""

    async def run(self) -> None:
        """List and watch until cancelled, or until the stream breaks while the server shuts down."""
        backoff = 0.1
        while self.alive():
            try:
                if not self.resource_version:
                    await self._list()
                    self.synced.set()
                async for ev in self.kube.stream(self.list_method, resource_version=self.resource_version,
                                                 allow_watch_bookmarks=True,
                                                 timeout_seconds=int(1800 + random.random() * 1800),
                                                 **self.list_kwargs):
                    etype = ev.get("type")
                    obj = ev.get("object") or {}
                    if etype == "ERROR":
                        if obj.get("code") == 410:
                            self.resource_version = ""
                        else:
                            log.warning("%s watch error: %s", self.name, obj.get("message"))
                        break
                    rv = (obj.get("metadata") or {}).get("resourceVersion")
                    if rv:
                        self.resource_version = rv
                    if etype in ("ADDED", "MODIFIED", "DELETED"):
                        self._apply(etype, obj)
                backoff = 0.1
            except asyncio.CancelledError:
                raise
            except ApiError as err:
                if err.status == 410:
                    self.resource_version = ""
                    continue
                log.warning("%s list/watch failed: %s", self.name, err)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
            except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as err:
                log.info("%s watch interrupted (%s); resuming", self.name, type(err).__name__)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)


async def wait_synced(informers: Iterable[Informer]) -> None:
    await asyncio.gather(*(i.synced.wait() for i in informers))


class WorkQueue:
    """client-go's rate-limited work queue (dirty/processing sets), on one event loop."""

    def __init__(self, name: str, base_delay: float = 0.005, max_delay: float = 60.0) -> None:
        self.name = name
        self._queue: collections.deque[str] = collections.deque()
        self._dirty: set[str] = set()
        self._processing: set[str] = set()
        self._waiters: collections.deque[asyncio.Future] = collections.deque()
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._failures: dict[str, int] = {}
        self.base_delay = base_delay
        self.max_delay = max_delay

    def __len__(self) -> int:
        return len(self._queue)

    def add(self, key: str) -> None:
        if key in self._dirty:
            return
        self._dirty.add(key)
        if key in self._processing:
            return
        self._queue.append(key)
        self._wake()

    def _wake(self) -> None:
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                return

    def add_after(self, key: str, delay: float) -> None:
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        when = loop.time() + delay
        timer = self._timers.get(key)
        if timer is not None and not timer.cancelled() and timer.when() <= when:
            return  # an earlier one is pending
        if timer is not None:
            timer.cancel()
        self._timers[key] = loop.call_at(when, self._fire, key)

    def _fire(self, key: str) -> None:
        self._timers.pop(key, None)
        self.add(key)

    def add_rate_limited(self, key: str) -> None:
        n = self._failures.get(key, 0)
        self._failures[key] = n + 1
        self.add_after(key, min(self.base_delay * (2 ** n), self.max_delay))

    def forget(self, key: str) -> None:
        self._failures.pop(key, None)

    async def get(self) -> str:
        while not self._queue:
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            except asyncio.CancelledError:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(fut)
                if fut.done() and not fut.cancelled() and self._queue:
                    self._wake()  # pass the wake-up on
                raise
        key = self._queue.popleft()
        self._processing.add(key)
        self._dirty.discard(key)
        return key

    def done(self, key: str) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._queue.append(key)
            self._wake()

    def close(self) -> None:
        for t in self._timers.values():
            t.cancel()
        self._timers.clear()


async def run_workers(queue: WorkQueue, sync: Callable[[str], Awaitable[None]], workers: int) -> None:
    """Drain ``queue`` with ``workers`` concurrent workers until cancelled."""

    async def worker() -> None:
        while True:
            key = await queue.get()
            try:
                await sync(key)
                queue.forget(key)
            except asyncio.CancelledError:
                raise
            except ApiError as err:
                quiet = err.status in (404, 409) or err.has_cause("NamespaceTerminating")
                level = logging.DEBUG if quiet else logging.WARNING
                log.log(level, "%s: syncing %s failed: %s", queue.name, key, err)
                queue.add_rate_limited(key)
            except (TimeoutError, aiohttp.ClientError, OSError) as err:
                log.info("%s: syncing %s interrupted: %s", queue.name, key, type(err).__name__)
                queue.add_rate_limited(key)
            except Exception:
                log.exception("%s: syncing %s failed", queue.name, key)
                queue.add_rate_limited(key)
            finally:
                queue.done(key)

    tasks = [asyncio.create_task(worker(), name=f"{queue.name}-worker-{i}") for i in range(workers)]
    try:
        await asyncio.gather(*tasks)
    finally:
        for t in tasks:
            t.cancel()
        queue.close()
