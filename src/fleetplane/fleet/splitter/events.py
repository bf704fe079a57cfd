"""core/v1 Events on the parents, sent in the background (recording never blocks a reconcile).

Repeats of the same (object, type, reason, message) within ``window`` seconds bump the first
Event's ``count`` and ``lastTimestamp`` instead of creating another, as client-go's correlator.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import time
import uuid
from collections.abc import Mapping
from typing import Any

from .client import ApiError, HubClient, logical_cluster_of

log = logging.getLogger(__name__)


def _micro() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _seconds() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class EventRecorder:
    def __init__(self, hub: HubClient, component: str, window: float = 600.0, max_pending: int = 5000) -> None:
        self.hub = hub
        self.component = component
        self.window = window
        self._queue: asyncio.Queue[tuple[dict, str, str, str]] = asyncio.Queue(max_pending)
        self._seen: dict[tuple, tuple[str, str, int, float]] = {}  # key -> (lc, name, count, first)
        self.sent = 0

    def event(self, obj: Mapping[str, Any], etype: str, reason: str, message: str) -> None:
        md = obj.get("metadata") or {}
        ref = {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "name": md.get("name"),
               "namespace": md.get("namespace"), "uid": md.get("uid"),
               "resourceVersion": md.get("resourceVersion"), "lc": logical_cluster_of(obj)}
        with contextlib.suppress(asyncio.QueueFull):
            self._queue.put_nowait((ref, etype, reason, message[:1024]))

    async def run(self) -> None:
        while True:
            ref, etype, reason, message = await self._queue.get()
            try:
                await self._send(ref, etype, reason, message)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - events are best effort
                log.debug("event %s %s: %s", reason, message, exc)
            finally:
                self._queue.task_done()

    async def flush(self, timeout: float = 5.0) -> None:
        """Wait until every Event queued so far has been sent (or ``timeout``)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._queue.join()

    async def _send(self, ref: dict, etype: str, reason: str, message: str) -> None:
        lc, ns = ref.pop("lc"), ref.get("namespace") or "default"
        key = (lc, ref.get("uid"), etype, reason, message)
        base = f"/clusters/{lc}/api/v1/namespaces/{ns}/events"
        now_mono = time.monotonic()
        seen = self._seen.get(key)
        if seen is not None and now_mono - seen[3] < self.window:
            _, name, count, first = seen
            try:
                await self.hub.patch(f"{base}/{name}", {"count": count + 1, "lastTimestamp": _seconds()})
                self._seen[key] = (lc, name, count + 1, first)
                self.sent += 1
                return
            except ApiError as err:
                if err.status != 404:
                    raise
        name = f"{ref.get('name')}.{uuid.uuid4().hex[:16]}"
        ts = _seconds()
        body = {"apiVersion": "v1", "kind": "Event",
                "metadata": {"name": name, "namespace": ns},
                "involvedObject": {k: v for k, v in ref.items() if v is not None},
                "reason": reason, "message": message, "type": etype, "count": 1,
                "firstTimestamp": ts, "lastTimestamp": ts, "eventTime": None,
                "source": {"component": self.component}, "reportingComponent": self.component,
                "reportingInstance": self.component}
        body.pop("eventTime")
        await self.hub.create(base, body, self.component)
        self.sent += 1
        if len(self._seen) > 20000:
            cutoff = now_mono - self.window
            self._seen = {k: v for k, v in self._seen.items() if v[3] >= cutoff}
        self._seen[key] = (lc, name, 1, now_mono)
