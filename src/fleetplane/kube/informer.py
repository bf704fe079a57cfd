"""client-go's reflector and store, cut to what the controllers need: :class:`Informer`.

It keeps ``cache`` equal to the objects at one path (optionally label-selected): one paginated
list, then a watch from its resourceVersion (with bookmarks), resumed when the server ends it,
and a relist after a 410, a watch ERROR or a broken stream (the server may have restarted with
other resourceVersions). Every difference between what the cache had and what it has now goes to
the change callbacks as ``(key, old, new)`` (new is None for a deletion), so a relist after an
outage reports exactly what changed meanwhile. Nothing polls: between events nothing runs.
Callbacks must not block (enqueue and return).
"""

from __future__ import annotations

import asyncio
import builtins
import collections
import contextlib
import logging
import random
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

from .client import ApiError, Client
from .workqueue import Backoff, WorkQueue

__all__ = ["ClusterKey", "EnqueueKey", "EventHandler", "Informer", "NamespacedKey", "cluster_key", "logical_cluster_of",
           "namespaced_key", "object_key", "wait_synced"]

log = logging.getLogger(__name__)

NamespacedKey = tuple[str, str]  # namespace ("" for cluster-scoped), name
ClusterKey = tuple[str, str, str]  # logical cluster, namespace, name
Handler = Callable[[Any, dict[str, Any] | None, dict[str, Any] | None], None]
IndexFunc = Callable[[dict[str, Any]], Iterable[str]]


def namespaced_key(obj: Mapping[str, Any]) -> NamespacedKey:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""


def object_key(obj: Mapping[str, Any]) -> str:
    """client-go's ``namespace/name`` (``name`` when cluster-scoped)."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


def logical_cluster_of(obj: Mapping[str, Any], default: str = "root") -> str:
    """The hub's logical cluster of an object listed through ``/clusters/*``."""
    return ((obj.get("metadata") or {}).get("annotations") or {}).get("kcp.io/cluster") or default


def cluster_key(obj: Mapping[str, Any]) -> ClusterKey:
    return (logical_cluster_of(obj), *namespaced_key(obj))


def _rv(obj: Mapping[str, Any] | None) -> Any:
    return ((obj or {}).get("metadata") or {}).get("resourceVersion")


class EventHandler:
    """client-go's ResourceEventHandler: an informer callback split into add, update and delete.
    Override what you need."""

    def on_add(self, obj: dict[str, Any]) -> None:
        pass

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        pass

    def on_delete(self, obj: dict[str, Any]) -> None:
        pass

    def __call__(self, key: Any, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if new is None:
            if old is not None:
                self.on_delete(old)
        elif old is None:
            self.on_add(new)
        else:
            self.on_update(old, new)


class EnqueueKey(EventHandler):
    """The handler most controllers need: every add, update and delete of an object queues its
    ``namespace/name`` (the reconcile reads the latest state from the cache)."""

    def __init__(self, queue: WorkQueue) -> None:
        self.queue = queue

    def on_add(self, obj: dict[str, Any]) -> None:
        self.queue.add(object_key(obj))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.queue.add(object_key(new))

    def on_delete(self, obj: dict[str, Any]) -> None:
        self.queue.add(object_key(obj))


class _Expired(Exception):
    """The watch's resourceVersion is too old (410): relist."""


class Informer:
    """See the module docstring. ``key`` makes cache keys of objects; ``indexers`` name functions
    of an object to index values (:meth:`by_index`). ``on_status(informer, error)`` hears when
    listing/watching starts or stops failing. With ``missing_ok`` a 404 (the type is not served)
    is an empty list, retried after a backoff or as soon as ``wake`` is set. ``alive`` False ends
    :meth:`run` instead of resuming (the server is going away)."""

    def __init__(self, client: Client, path: str, on_change: Handler | None = None, *, name: str = "",
                 label_selector: str | None = None, key: Callable[[dict[str, Any]], Hashable] = namespaced_key,
                 indexers: Mapping[str, IndexFunc] | None = None,
                 on_status: Callable[[Informer, str | None], None] | None = None, missing_ok: bool = False,
                 wake: asyncio.Event | None = None, timeout_seconds: int = 300,
                 alive: Callable[[], bool] = lambda: True) -> None:
        self.client = client
        self.path = path
        self.name = name or path
        self.label_selector = label_selector
        self.key = key
        self.handlers: list[Handler] = [on_change] if on_change is not None else []
        self.indexers = dict(indexers or {})
        #: index name -> value -> keys
        self.indices: dict[str, dict[str, set[Hashable]]] = {n: collections.defaultdict(set) for n in self.indexers}
        self.on_status = on_status
        self.missing_ok = missing_ok
        self.wake = wake
        self.timeout_seconds = timeout_seconds
        self.alive = alive
        self.cache: dict[Any, dict[str, Any]] = {}
        self.synced = asyncio.Event()
        self.resource_version = ""
        self.error: str | None = None
        self.error_status: int | None = None

    def add_handler(self, handler: Handler) -> None:
        self.handlers.append(handler)

    # -- reading the cache ------------------------------------------------------------------------

    def get(self, key: Hashable) -> dict[str, Any] | None:
        return self.cache.get(key)

    def list(self, namespace: str | None = None) -> builtins.list[dict[str, Any]]:
        if namespace is None:
            return list(self.cache.values())
        return [o for o in self.cache.values() if (o.get("metadata") or {}).get("namespace") == namespace]

    def by_index(self, index: str, value: str) -> builtins.list[dict[str, Any]]:
        keys = self.indices[index].get(value) or ()
        return [self.cache[k] for k in keys if k in self.cache]

    # -- running ----------------------------------------------------------------------------------

    async def run(self) -> None:
        """List and watch until cancelled (or until ``alive()`` turns False)."""
        errors, idle = Backoff(0.2, 5.0), Backoff(0.2, 30.0 if self.wake is not None else 5.0)
        while self.alive():
            try:
                if not await self._list():
                    await self._idle(idle.next())
                    continue
                idle.reset()
                self._set_status(None)
                while self.alive():
                    await self._watch()  # ended by the server's timeout: resume from resourceVersion
                    errors.reset()
                return
            except asyncio.CancelledError:
                raise
            except _Expired:
                log.debug("%s: resourceVersion %s expired, relisting", self.name, self.resource_version)
                continue
            except ApiError as err:
                self._set_status(str(err), err.status)
                log.log(logging.DEBUG if err.status == 0 else logging.INFO, "%s: %s", self.name, err)
            except Exception as exc:  # a bug must not end the informer
                self._set_status(f"{type(exc).__name__}: {exc}")
                log.exception("%s: unexpected error", self.name)
            if not self.alive():
                return
            await asyncio.sleep(errors.next())

    async def _idle(self, delay: float) -> None:
        if self.wake is None:
            await asyncio.sleep(delay)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.wake.wait(), timeout=max(delay, 5.0))
        self.wake.clear()

    def _query(self) -> dict[str, Any]:
        return {"labelSelector": self.label_selector} if self.label_selector else {}

    def _set_status(self, error: str | None, status: int | None = None) -> None:
        changed = error != self.error
        self.error, self.error_status = error, status
        if changed and self.on_status is not None:
            self.on_status(self, error)

    async def _list(self) -> bool:
        """Relist into the cache; False when the type is not served (``missing_ok``)."""
        try:
            items, rv = await self.client.list_all(self.path, self._query())
        except ApiError as err:
            if err.status != 404 or not self.missing_ok:
                raise
            self._replace([], "")
            self._set_status(str(err), err.status)
            return False
        self._replace(items, rv)
        return True

    def _replace(self, items: builtins.list[dict[str, Any]], rv: str) -> None:
        old: dict[Any, dict[str, Any]] = self.cache
        fresh: dict[Any, dict[str, Any]] = {}
        for o in items:
            fresh[self.key(o)] = o
        self.cache = fresh
        self.resource_version = rv
        changes: builtins.list[tuple[Hashable, dict[str, Any] | None, dict[str, Any] | None]]
        changes = [(k, o, None) for k, o in old.items() if k not in fresh]
        changes += [(k, old.get(k), o) for k, o in fresh.items() if k not in old or _rv(old[k]) != _rv(o)]
        for k, before, after in changes:
            self._index(k, after, before)
        for k, before, after in changes:
            self._emit(k, before, after)
        self.synced.set()

    async def _watch(self) -> None:
        q = {**self._query(), "resourceVersion": self.resource_version}
        timeout = max(30, int(self.timeout_seconds * (0.9 + 0.2 * random.random())))
        try:
            async for ev in self.client.watch(self.path, q, timeout):
                self._set_status(None)
                etype = ev.get("type")
                obj = ev.get("object") or {}
                if etype == "ERROR":
                    if obj.get("code") == 410:
                        raise _Expired()
                    raise ApiError(int(obj.get("code") or 500), obj.get("reason") or "WatchError",
                                   obj.get("message") or "watch error")
                rv = _rv(obj)
                if rv:
                    self.resource_version = str(rv)
                if etype not in ("ADDED", "MODIFIED", "DELETED"):
                    continue  # BOOKMARK
                k = self.key(obj)
                if etype == "DELETED":
                    before = self.cache.pop(k, None)
                    self._index(k, None, before)
                    self._emit(k, before, None)
                else:
                    before = self.cache.get(k)
                    self.cache[k] = obj
                    self._index(k, obj, before)
                    self._emit(k, before, obj)
        except ApiError as err:
            if err.status == 410:
                raise _Expired() from err
            raise

    def _index(self, key: Hashable, new: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
        for name, fn in self.indexers.items():
            idx = self.indices[name]
            if old is not None:
                for v in fn(old):
                    keys = idx.get(v)
                    if keys is not None:
                        keys.discard(key)
                        if not keys:
                            del idx[v]
            if new is not None:
                for v in fn(new):
                    idx[v].add(key)

    def _emit(self, key: Hashable, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        for handler in self.handlers:
            try:
                handler(key, old, new)
            except Exception:
                log.exception("%s: handler %s failed for %s", self.name, getattr(handler, "__qualname__", handler), key)


async def wait_synced(informers: Iterable[Informer]) -> None:
    await asyncio.gather(*(i.synced.wait() for i in informers))
