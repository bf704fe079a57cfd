"""core/v1 Events as client-go's legacy event recorder writes them.

Asynchronous and best effort, as in kube: events go through a bounded queue (1000; more are
dropped, as client-go's broadcaster drops them) to a few sender tasks. A repeat of the same
event (same source, object, type, reason and message) within 10 minutes increments the stored
event's ``count`` and ``lastTimestamp`` instead of creating another one (the EventCorrelator).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from typing import Any

from .client import MERGE_PATCH, ApiError, Kube
from .util import now

log = logging.getLogger(__name__)

QUEUE_SIZE = 1000
SENDERS = 2
CORRELATION_WINDOW = 600.0
MAX_CORRELATED = 4096


class EventRecorder:
    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.queue: asyncio.Queue[tuple] = asyncio.Queue(QUEUE_SIZE)
        #: correlation key -> [namespace, name, count, first timestamp, monotonic time of last]
        self._seen: collections.OrderedDict[tuple, list] = collections.OrderedDict()
        self.dropped = 0

    def event(self, obj: dict, etype: str, reason: str, message: str, *, component: str, host: str = "") -> None:
        meta = obj.get("metadata") or {}
        ref = {"kind": obj.get("kind"), "namespace": meta.get("namespace"), "name": meta.get("name"),
               "uid": meta.get("uid"), "apiVersion": obj.get("apiVersion"), "resourceVersion": meta.get("resourceVersion")}
        try:
            self.queue.put_nowait((ref, etype, reason, message, component, host, now(), time.monotonic()))
        except asyncio.QueueFull:
            self.dropped += 1

    async def run(self) -> None:
        await asyncio.gather(*(self._sender() for _ in range(SENDERS)))

    async def _sender(self) -> None:
        while True:
            item = await self.queue.get()
            try:
                await self._send(*item)
            except asyncio.CancelledError:
                raise
            except ApiError as err:
                log.debug("event not recorded: %s", err)
            except Exception as err:  # best effort, as kube's recorder
                log.debug("event not recorded: %s", err)

    async def _send(self, ref: dict, etype: str, reason: str, message: str, component: str, host: str,
                    stamp: str, mono: float) -> None:
        namespace = ref.get("namespace") or "default"
        key = (component, host, ref.get("uid"), etype, reason, message)
        seen = self._seen.get(key)
        if seen is not None and mono - seen[4] < CORRELATION_WINDOW:
            seen[2] += 1
            seen[4] = mono
            self._seen.move_to_end(key)
            try:
                await self.kube.call(self.kube.core.patch_namespaced_event, seen[1], seen[0],
                                     {"count": seen[2], "lastTimestamp": stamp}, _content_type=MERGE_PATCH)
                return
            except ApiError as err:
                if err.status != 404:
                    raise
        name = f"{ref.get('name')}.{time.time_ns():x}"
        body: dict[str, Any] = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {k: v for k, v in ref.items() if v},
            "reason": reason, "message": message, "type": etype,
            "source": {"component": component, **({"host": host} if host else {})},
            "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
            "reportingComponent": component, "reportingInstance": host,
        }
        await self.kube.call(self.kube.core.create_namespaced_event, namespace, body)
        self._seen[key] = [namespace, name, 1, stamp, mono]
        self._seen.move_to_end(key)
        while len(self._seen) > MAX_CORRELATED:
            self._seen.popitem(last=False)
