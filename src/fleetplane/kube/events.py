"""core/v1 Events, as client-go's event recorder writes them.

Best effort, as in kube: :meth:`EventRecorder.event` never blocks a reconcile; events go through
a bounded queue (more are dropped, as client-go's broadcaster drops them) to sender tasks. A repeat
of the same event (same source, object, type, reason and message) within ``window`` seconds of the
last one bumps the stored Event's ``count`` and ``lastTimestamp`` instead of creating another
(client-go's EventCorrelator), for up to ``max_correlated`` distinct events.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from collections.abc import Mapping
from typing import Any

from ..apimachinery.metatime import now_rfc3339
from .client import ApiError, Client
from .informer import logical_cluster_of

__all__ = ["EventRecorder"]

log = logging.getLogger(__name__)

#: (prefix, involvedObject, type, reason, message, component, host, timestamp, monotonic time): _send's arguments
_Item = tuple[str, dict[str, Any], str, str, str, str, str, str, float]


class EventRecorder:
    """Events written through ``client`` as ``component`` (``source.component``); ``host`` is
    ``source.host`` and ``instance`` the ``reportingInstance`` (default: the host). Both may be
    given per event instead. With ``per_logical_cluster`` the client talks to the whole hub and
    each Event goes to the logical cluster of its object."""

    def __init__(self, client: Client, component: str = "", *, host: str = "", instance: str = "",
                 window: float = 600.0, max_pending: int = 1000, senders: int = 1,
                 per_logical_cluster: bool = False, max_correlated: int = 4096) -> None:
        self.client = client
        self.component, self.host, self.instance = component, host, instance
        self.window = window
        self.senders = senders
        self.per_logical_cluster = per_logical_cluster
        self.max_correlated = max_correlated
        self._queue: asyncio.Queue[_Item] = asyncio.Queue(max_pending)
        #: correlation key -> [events path, name, count, monotonic time of the last one]
        self._seen: collections.OrderedDict[tuple[Any, ...], list[Any]] = collections.OrderedDict()
        self.sent = 0
        self.dropped = 0

    def event(self, obj: Mapping[str, Any], etype: str, reason: str, message: str, *, component: str | None = None,
              host: str | None = None) -> None:
        """Queue an Event about ``obj`` (apiVersion, kind, metadata); never blocks."""
        try:
            self._queue.put_nowait(self._item(obj, etype, reason, message, component, host))
        except asyncio.QueueFull:
            self.dropped += 1

    async def record(self, obj: Mapping[str, Any], etype: str, reason: str, message: str) -> None:
        """Write an Event now (for callers that must see it written before they go on)."""
        try:
            await self._send(*self._item(obj, etype, reason, message, None, None))
        except Exception as exc:  # best effort
            log.debug("event %s not recorded: %s", reason, exc)

    def _item(self, obj: Mapping[str, Any], etype: str, reason: str, message: str, component: str | None,
              host: str | None) -> _Item:
        md = obj.get("metadata") or {}
        ref = {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "namespace": md.get("namespace"),
               "name": md.get("name"), "uid": md.get("uid"), "resourceVersion": md.get("resourceVersion")}
        prefix = f"/clusters/{logical_cluster_of(obj)}" if self.per_logical_cluster else ""
        return (prefix, ref, etype, reason, message[:1024], self.component if component is None else component,
                self.host if host is None else host, now_rfc3339(), time.monotonic())

    async def run(self) -> None:
        """Send queued Events until cancelled."""
        await asyncio.gather(*(self._sender() for _ in range(self.senders)))

    async def _sender(self) -> None:
        while True:
            item = await self._queue.get()
            try:
                await self._send(*item)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # best effort, as kube's recorder
                log.debug("event %s not recorded: %s", item[3], exc)
            finally:
                self._queue.task_done()

    async def flush(self, timeout: float = 5.0) -> None:
        """Wait until every Event queued so far has been sent (or ``timeout``)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._queue.join()

    async def _send(self, prefix: str, ref: dict[str, Any], etype: str, reason: str, message: str, component: str, host: str,
                    stamp: str, mono: float) -> None:
        ns = ref.get("namespace") or "default"
        path = f"{prefix}/api/v1/namespaces/{ns}/events"
        key = (prefix, component, host, ref.get("uid"), ref.get("name"), ns, etype, reason, message)
        seen = self._seen.get(key)
        if seen is not None and mono - seen[3] < self.window:
            seen[2] += 1
            seen[3] = mono
            self._seen.move_to_end(key)
            try:
                await self.client.patch(f"{seen[0]}/{seen[1]}", {"count": seen[2], "lastTimestamp": stamp})
                self.sent += 1
                return
            except ApiError as err:
                if err.status != 404:
                    raise
        name = f"{ref.get('name')}.{time.time_ns():x}"
        body: dict[str, Any] = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": ns},
            "involvedObject": {k: v for k, v in ref.items() if v},
            "reason": reason, "message": message, "type": etype,
            "source": {"component": component, **({"host": host} if host else {})},
            "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
            "reportingComponent": component, "reportingInstance": self.instance or host,
        }
        await self.client.create(path, body)
        self.sent += 1
        if self.window > 0:
            self._seen[key] = [path, name, 1, mono]
            self._seen.move_to_end(key)
            while len(self._seen) > self.max_correlated:
                self._seen.popitem(last=False)
