"""List+watch caches (client-go's reflector and store, cut down), a keyed work queue with
per-key exponential backoff, and a small backoff helper."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Hashable
from typing import Any

from .client import ApiError, Client

log = logging.getLogger(__name__)

Key = tuple[str, str]  # namespace ("" for cluster-scoped), name
Handler = Callable[[Key, "dict | None", "dict | None"], None]


def key_of(obj: dict) -> Key:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""


class Backoff:
    """Exponential backoff with jitter: ``base`` doubling up to ``cap`` seconds."""

    def __init__(self, base: float = 0.2, cap: float = 10.0) -> None:
        self.base, self.cap, self.n = base, cap, 0

    def next(self) -> float:
        delay = min(self.cap, self.base * (2 ** self.n))
        self.n = min(self.n + 1, 30)
        return delay * (0.8 + 0.4 * random.random())

    def reset(self) -> None:
        self.n = 0


class Expired(Exception):
    """The watch's resourceVersion is too old (410): relist."""


class Informer:
    """Keeps ``cache`` equal to the server's objects at ``path`` (optionally label-selected):
    one paginated list, then a watch from its resourceVersion, resumed from the last seen
    version when it ends, and a relist after a 410, a watch ERROR or a lost connection (the
    server may have restarted, with other resourceVersions). Every difference between what
    the cache had and what it has now is reported to ``on_change(key, old, new)`` (new is
    None for a deletion), so a relist after an outage reports exactly what changed meanwhile.
    """

    def __init__(self, client: Client, path: str, on_change: Handler, *, label_selector: str | None = None,
                 name: str = "", timeout_seconds: int = 300,
                 on_status: Callable[[Informer, str | None], None] | None = None, missing_ok: bool = False) -> None:
        self.client = client
        self.path = path
        self.on_change = on_change
        self.label_selector = label_selector
        self.name = name or path
        self.timeout_seconds = timeout_seconds
        self.on_status = on_status
        #: a 404 (the server does not serve the type) counts as an empty list, retried with backoff
        self.missing_ok = missing_ok
        self.cache: dict[Key, dict] = {}
        self.synced = asyncio.Event()
        self.resource_version = ""
        self.error: str | None = None
        self.error_status: int | None = None

    def _query(self) -> dict:
        return {"labelSelector": self.label_selector} if self.label_selector else {}

    def _set_status(self, error: str | None, status: int | None = None) -> None:
        changed = error != self.error
        self.error, self.error_status = error, status
        if changed and self.on_status is not None:
            self.on_status(self, error)

    async def run(self) -> None:
        backoff = Backoff(0.2, 5.0)
        while True:
            try:
                await self._list()
                self._set_status(None)
                while True:
                    await self._watch()  # ended normally (server timeout): resume from resourceVersion
                    backoff.reset()
            except asyncio.CancelledError:
                raise
            except Expired:
                log.debug("%s: resourceVersion %s expired, relisting", self.name, self.resource_version)
                continue
            except ApiError as err:
                if err.status == 404 and self.missing_ok:
                    self._replace({}, "")
                self._set_status(str(err), err.status)
                log.debug("%s: %s", self.name, err)
            except Exception as exc:  # a bug must not end the informer
                self._set_status(f"{type(exc).__name__}: {exc}")
                log.exception("%s: unexpected error", self.name)
            await asyncio.sleep(backoff.next())

    async def _list(self) -> None:
        items, rv = await self.client.list_all(self.path, self._query())
        self._replace({key_of(o): o for o in items}, rv)

    def _replace(self, new: dict[Key, dict], rv: str) -> None:
        old = self.cache
        self.cache = new
        self.resource_version = rv
        for k, o in old.items():
            if k not in new:
                self._emit(k, o, None)
        for k, o in new.items():
            prev = old.get(k)
            if prev is None or (prev.get("metadata") or {}).get("resourceVersion") != (o.get("metadata") or {}).get("resourceVersion"):
                self._emit(k, prev, o)
        self.synced.set()

    async def _watch(self) -> None:
        q = {**self._query(), "resourceVersion": self.resource_version, "allowWatchBookmarks": "true"}
        timeout = max(30, int(self.timeout_seconds * (0.9 + 0.2 * random.random())))
        try:
            async for ev in self.client.watch(self.path, q, timeout):
                self._set_status(None)
                etype = ev.get("type")
                obj = ev.get("object") or {}
                if etype == "ERROR":
                    code = obj.get("code")
                    if code == 410:
                        raise Expired()
                    raise ApiError(code or 500, obj.get("reason") or "WatchError", obj.get("message") or "watch error")
                rv = (obj.get("metadata") or {}).get("resourceVersion")
                if rv:
                    self.resource_version = rv
                if etype == "BOOKMARK":
                    continue
                k = key_of(obj)
                if etype == "DELETED":
                    prev = self.cache.pop(k, None)
                    self._emit(k, prev, None)
                elif etype in ("ADDED", "MODIFIED"):
                    prev = self.cache.get(k)
                    self.cache[k] = obj
                    self._emit(k, prev, obj)
        except ApiError as err:
            if err.status == 410:
                raise Expired() from err
            raise

    def _emit(self, k: Key, old: dict | None, new: dict | None) -> None:
        try:
            self.on_change(k, old, new)
        except Exception:
            log.exception("%s: handler failed for %s", self.name, k)


class WorkQueue:
    """client-go's rate-limited work queue, for asyncio: a key is processed by one worker at a
    time; a key added while it is processed is processed again afterwards; failures back off
    per key (``base`` doubling up to ``cap``) and never hold up other keys."""

    def __init__(self, base: float = 0.05, cap: float = 30.0) -> None:
        self.base, self.cap = base, cap
        self._queue: asyncio.Queue[Hashable] = asyncio.Queue()
        self._dirty: set[Hashable] = set()
        self._processing: set[Hashable] = set()
        self._failures: dict[Hashable, int] = {}
        self._timers: dict[Hashable, asyncio.TimerHandle] = {}

    def __len__(self) -> int:
        return len(self._dirty)

    def add(self, key: Hashable) -> None:
        t = self._timers.pop(key, None)
        if t is not None:
            t.cancel()
        if key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._queue.put_nowait(key)

    def add_after(self, key: Hashable, delay: float) -> None:
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        old = self._timers.get(key)
        when = loop.time() + delay
        if old is not None:
            if old.when() <= when:
                return
            old.cancel()
        self._timers[key] = loop.call_at(when, self._fire, key)

    def _fire(self, key: Hashable) -> None:
        self._timers.pop(key, None)
        self.add(key)

    def retry(self, key: Hashable, cap: float | None = None) -> float:
        """Requeue ``key`` after its next backoff delay (at most ``cap``); returns the delay."""
        n = self._failures.get(key, 0)
        self._failures[key] = n + 1
        delay = min(self.cap if cap is None else cap, self.base * (2 ** min(n, 30)))
        self.add_after(key, delay)
        return delay

    def forget(self, key: Hashable) -> None:
        self._failures.pop(key, None)

    def failures(self, key: Hashable) -> int:
        return self._failures.get(key, 0)

    async def get(self) -> Hashable:
        while True:
            key = await self._queue.get()
            if key in self._dirty and key not in self._processing:
                self._dirty.discard(key)
                self._processing.add(key)
                return key

    def done(self, key: Hashable) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._queue.put_nowait(key)

    def drop(self, predicate: Callable[[Any], bool]) -> None:
        """Forget queued keys, their timers and failure counts, for keys matching ``predicate``."""
        self._dirty = {k for k in self._dirty if not predicate(k)}
        for k in [k for k in self._timers if predicate(k)]:
            self._timers.pop(k).cancel()
        for k in [k for k in self._failures if predicate(k)]:
            self._failures.pop(k)
