"""core/v1 Events on hub objects, sent in the background and aggregated like client-go's
EventCorrelator: the same (object, type, reason, message) within ``window`` seconds bumps
``count`` and ``lastTimestamp`` of one Event instead of writing another."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import time

from .client import ApiError, Client

log = logging.getLogger(__name__)


def now_rfc3339() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class EventRecorder:
    def __init__(self, client: Client, component: str, instance: str, *, window: float = 600.0,
                 max_pending: int = 1000) -> None:
        self.client = client
        self.component = component
        self.instance = instance
        self.window = window
        self._queue: asyncio.Queue[tuple[dict, str, str, str]] = asyncio.Queue(max_pending)
        self._seen: dict[tuple, tuple[str, str, int, float]] = {}  # key -> (namespace, name, count, first seen)
        self.sent = 0
        self.dropped = 0

    def emit(self, obj: dict, etype: str, reason: str, message: str) -> None:
        """Queue an Event about ``obj`` (a hub object with apiVersion/kind/metadata); never blocks."""
        try:
            self._queue.put_nowait((obj, etype, reason, message[:1024]))
        except asyncio.QueueFull:
            self.dropped += 1

    async def run(self) -> None:
        while True:
            obj, etype, reason, message = await self._queue.get()
            try:
                await self._send(obj, etype, reason, message)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # events are best effort
                log.debug("event %s not recorded: %s", reason, exc)

    async def _send(self, obj: dict, etype: str, reason: str, message: str) -> None:
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace") or "default"
        key = (meta.get("uid"), meta.get("name"), ns, etype, reason, message)
        ts = now_rfc3339()
        seen = self._seen.get(key)
        if seen is not None and time.monotonic() - seen[3] < self.window:
            ens, ename, count, first = seen
            with contextlib.suppress(ApiError):
                await self.client.patch(f"/api/v1/namespaces/{ens}/events/{ename}",
                                        {"count": count + 1, "lastTimestamp": ts})
                self._seen[key] = (ens, ename, count + 1, first)
                self.sent += 1
                return
        name = f"{meta.get('name', 'object')}.{time.time_ns():x}"
        event = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": ns},
            "involvedObject": {k: v for k, v in {
                "apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "name": meta.get("name"),
                "namespace": meta.get("namespace"), "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion")}.items() if v},
            "reason": reason, "message": message, "type": etype,
            "source": {"component": self.component, "host": self.instance},
            "firstTimestamp": ts, "lastTimestamp": ts, "count": 1,
            "reportingComponent": self.component, "reportingInstance": self.instance,
        }
        await self.client.request("POST", f"/api/v1/namespaces/{ns}/events", body=event)
        self.sent += 1
        if len(self._seen) > 10000:
            cutoff = time.monotonic() - self.window
            self._seen = {k: v for k, v in self._seen.items() if v[3] >= cutoff}
        self._seen[key] = (ns, name, 1, time.monotonic())
