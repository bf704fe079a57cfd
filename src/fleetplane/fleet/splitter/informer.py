"""List+watch caches over the hub's ``/clusters/*`` wildcard and a keyed work queue.

:class:`Informer` keeps ``cache`` equal to the objects at one path (every logical cluster):
one paginated list, then a watch from its resourceVersion, resumed after it ends and relisted
after a 410, an ERROR or a lost connection; every difference is reported to
``on_change(key, old, new)``. A 404 (no logical cluster serves the type yet) is an empty list,
retried when ``wake`` is set (the CRD informer sets it) or after a backoff. Nothing polls.

:class:`WorkQueue` is client-go's: a key is processed by one worker at a time, added again while
processing means processed again afterwards, ``add_after`` is a timer (the grace periods), and
``retry`` backs off per key.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable, Hashable
from typing import Any

from .client import ApiError, HubClient, logical_cluster_of

log = logging.getLogger(__name__)

Key = tuple[str, str, str]  # logical cluster, namespace ("" for cluster-scoped), name
Handler = Callable[[Key, "dict | None", "dict | None"], None]


def key_of(obj: dict) -> Key:
    md = obj.get("metadata") or {}
    return logical_cluster_of(obj), md.get("namespace") or "", md.get("name") or ""


class Informer:
    def __init__(self, hub: HubClient, path: str, on_change: Handler, *, name: str = "",
                 wake: asyncio.Event | None = None, timeout_seconds: int = 300) -> None:
        self.hub = hub
        self.path = path
        self.on_change = on_change
        self.name = name or path
        self.wake = wake
        self.timeout_seconds = timeout_seconds
        self.cache: dict[Key, dict] = {}
        self.synced = asyncio.Event()
        self.served = False
        self.error: str | None = None

    async def run(self) -> None:
        delay = 0.2
        rv: str | None = None
        while True:
            try:
                if rv is None:
                    rv = await self._relist()
                    if rv is None:  # not served yet
                        await self._wait_for_type(delay)
                        delay = min(delay * 2, 30.0)
                        continue
                rv = await self._watch(rv)
                delay = 0.2
            except asyncio.CancelledError:
                raise
            except ApiError as err:
                if err.status == 410:
                    rv = None
                    continue
                self.error = str(err)
                log.info("informer %s: %s", self.name, err)
                rv = None if err.status in (0, 404) else rv
                await asyncio.sleep(delay * (0.8 + 0.4 * random.random()))
                delay = min(delay * 2, 10.0)
            except Exception as exc:  # noqa: BLE001 - keep the cache alive whatever happens
                self.error = f"{type(exc).__name__}: {exc}"
                log.warning("informer %s failed: %s", self.name, exc, exc_info=True)
                rv = None
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10.0)

    async def _wait_for_type(self, delay: float) -> None:
        if self.wake is None:
            await asyncio.sleep(delay)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.wake.wait(), timeout=max(delay, 5.0))
        self.wake.clear()

    async def _relist(self) -> str | None:
        try:
            items, rv = await self.hub.list_all(self.path)
        except ApiError as err:
            if err.status != 404:
                raise
            self.served = False
            self._replace({})
            self.synced.set()
            return None
        self.served = True
        self.error = None
        self._replace({key_of(o): o for o in items})
        self.synced.set()
        return rv

    def _replace(self, new: dict[Key, dict]) -> None:
        old = self.cache
        self.cache = new
        for k, o in old.items():
            if k not in new:
                self.on_change(k, o, None)
        for k, o in new.items():
            prev = old.get(k)
            if prev is None or (prev.get("metadata") or {}).get("resourceVersion") != \
                    (o.get("metadata") or {}).get("resourceVersion"):
                self.on_change(k, prev, o)

    async def _watch(self, rv: str) -> str | None:
        async for ev in self.hub.watch(self.path, rv, self.timeout_seconds):
            typ, obj = ev.get("type"), ev.get("object") or {}
            if typ == "ERROR":
                if obj.get("code") == 410:
                    return None
                raise ApiError(int(obj.get("code") or 500), obj.get("reason") or "Unknown", obj.get("message") or "")
            new_rv = (obj.get("metadata") or {}).get("resourceVersion")
            if new_rv:
                rv = str(new_rv)
            if typ == "BOOKMARK":
                continue
            k = key_of(obj)
            old = self.cache.get(k)
            if typ == "DELETED":
                self.cache.pop(k, None)
                self.on_change(k, old, None)
            else:
                self.cache[k] = obj
                self.on_change(k, old, obj)
        return rv


class WorkQueue:
    """Keys to reconcile: deduplicated, one worker per key at a time, timers, per-key backoff."""

    def __init__(self, base_delay: float = 0.05, max_delay: float = 30.0) -> None:
        self._queue: asyncio.Queue[Hashable] = asyncio.Queue()
        self._dirty: set[Hashable] = set()
        self._processing: set[Hashable] = set()
        self._timers: dict[Hashable, tuple[float, asyncio.TimerHandle]] = {}
        self._failures: dict[Hashable, int] = {}
        self.base_delay, self.max_delay = base_delay, max_delay

    def __len__(self) -> int:
        return len(self._dirty)

    def add(self, key: Hashable) -> None:
        if key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._queue.put_nowait(key)

    def add_after(self, key: Hashable, delay: float) -> None:
        """Add ``key`` in ``delay`` seconds (an earlier timer for the key wins)."""
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        when = loop.time() + delay
        cur = self._timers.get(key)
        if cur is not None:
            if cur[0] <= when + 0.01:
                return
            cur[1].cancel()
        self._timers[key] = (when, loop.call_at(when, self._fire, key))

    def _fire(self, key: Hashable) -> None:
        self._timers.pop(key, None)
        self.add(key)

    def retry(self, key: Hashable) -> float:
        n = self._failures.get(key, 0)
        self._failures[key] = n + 1
        delay = min(self.max_delay, self.base_delay * (2 ** n)) * (0.8 + 0.4 * random.random())
        self.add_after(key, delay)
        return delay

    def forget(self, key: Hashable) -> None:
        self._failures.pop(key, None)

    async def get(self) -> Hashable:
        key = await self._queue.get()
        self._dirty.discard(key)
        self._processing.add(key)
        return key

    def done(self, key: Hashable) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._queue.put_nowait(key)

    def close(self) -> None:
        for _, t in self._timers.values():
            t.cancel()
        self._timers.clear()


def relevant_meta(obj: dict | None) -> Any:
    """What of a parent's metadata matters to the splitter (not status, not resourceVersion)."""
    if obj is None:
        return None
    md = obj.get("metadata") or {}
    return (md.get("uid"), md.get("generation"), md.get("labels"), md.get("deletionTimestamp"))
