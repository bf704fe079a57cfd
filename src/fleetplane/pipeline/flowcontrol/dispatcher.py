"""The flow-control stage's engine: the configuration in effect (the root logical cluster's
FlowSchemas and PriorityLevelConfigurations, read from the watch cache) and one
:class:`.queueset.QueueSet` per priority level.

``admit`` classifies a request, waits for a seat of its level (or refuses it) and returns a
:class:`Ticket` whose ``release`` gives the seat back. The server's filter
(:mod:`fleetplane.server.filters`) calls it between impersonation and authorization, as
kube's ``WithPriorityAndFairness`` sits, and releases a watch's seat once its response starts.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry

from ..authorization.attributes import Attributes
from .classify import Schema, ordered
from .metrics import FlowControlMetrics, FlowMetrics
from .queueset import QueueSet, Queuing, Rejected, Seat, flow_hash

#: kube's cap on a queued request's wait: a quarter of the 60 s request timeout
MAX_QUEUE_WAIT = 15.0
#: subresources and verbs kube treats as long-running besides watch: they bypass flow control
LONG_RUNNING_SUBRESOURCES = frozenset({"attach", "exec", "proxy", "log", "portforward"})


@dataclass(frozen=True)
class Level:
    """One PriorityLevelConfiguration as the dispatcher uses it."""

    name: str
    uid: str
    exempt: bool
    shares: int
    queuing: Queuing | None

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> Level:
        spec = obj.get("spec") or {}
        meta = obj["metadata"]
        if spec.get("type") == "Exempt":
            return cls(meta["name"], meta.get("uid", ""), True, int((spec.get("exempt") or {}).get("nominalConcurrencyShares") or 0), None)
        limited = spec.get("limited") or {}
        response = limited.get("limitResponse") or {}
        queuing = None
        if response.get("type") == "Queue":
            q = response.get("queuing") or {}
            queuing = Queuing(int(q.get("queues") or 64), int(q.get("handSize") or 8), int(q.get("queueLengthLimit") or 50))
        return cls(meta["name"], meta.get("uid", ""), False, int(limited.get("nominalConcurrencyShares") or 0), queuing)


class TooManyRequests(Exception):
    """kube's 429 from flow control: a plain-text body, Retry-After and the PF headers."""

    body = b"Too many requests, please try again later.\n"

    def __init__(self, reason: str, schema_uid: str, level_uid: str, retry_after: int = 1) -> None:
        super().__init__(reason)
        self.reason = reason
        self.headers = [("Retry-After", str(retry_after)), ("X-Content-Type-Options", "nosniff"),
                        *pf_headers(schema_uid, level_uid)]


def pf_headers(schema_uid: str, level_uid: str) -> list[tuple[str, str]]:
    """kube's ResponseHeaderMatchedFlowSchemaUID / ResponseHeaderMatchedPriorityLevelConfigurationUID."""
    return [("X-Kubernetes-PF-FlowSchema-UID", schema_uid), ("X-Kubernetes-PF-PriorityLevel-UID", level_uid)]


class Ticket:
    """An admitted request: the PF headers its response carries and the seat it holds."""

    def __init__(self, dispatcher: Dispatcher, schema: Schema, level: Level, queue_set: QueueSet, seat: Seat,
                 metrics: FlowMetrics) -> None:
        self.schema, self.level = schema, level
        self.headers = pf_headers(schema.uid, level.uid)
        self._dispatcher, self._queue_set, self._seat, self._metrics = dispatcher, queue_set, seat, metrics

    def release(self) -> None:
        """Give the seat back (once; later calls do nothing)."""
        if self._seat.released:
            return
        self._queue_set.release(self._seat)
        self._metrics.executing.dec()


class Dispatcher:
    def __init__(self, total_seats: int, registry: CollectorRegistry | None = None) -> None:
        self.total_seats = max(1, total_seats)
        self.metrics = FlowControlMetrics(registry)
        self.schemas: list[Schema] = []
        self.levels: dict[str, Level] = {}
        self.queue_sets: dict[str, QueueSet] = {}
        self._matched: dict[tuple[Any, ...], tuple[Schema, Level] | None] = {}

    # -- configuration --------------------------------------------------------------------

    def configure(self, flow_schemas: Iterable[Mapping[str, Any]], priority_levels: Iterable[Mapping[str, Any]]) -> None:
        """Take a new configuration; levels keep their queues and executing requests."""
        self.schemas = ordered(Schema.from_object(o) for o in flow_schemas)
        levels = {lv.name: lv for lv in (Level.from_object(o) for o in priority_levels)}
        share_sum = sum(lv.shares for lv in levels.values()) or 1
        for name, lv in levels.items():
            # at least one seat: fleetplane does not borrow, so a level of 0 shares would never run
            limit = 0 if lv.exempt else max(1, math.ceil(self.total_seats * lv.shares / share_sum))
            current = self.queue_sets.get(name)
            if current is None:
                self.queue_sets[name] = QueueSet(limit, lv.queuing, lv.exempt)
            else:
                current.reconfigure(limit, lv.queuing, lv.exempt)
            self.metrics.nominal_limit.labels(name).set(limit)
        for name in set(self.levels) - set(levels):
            self.metrics.nominal_limit.remove(name)
            # requests waiting or running there finish on their own QueueSet
            self.queue_sets.pop(name, None)
        self.levels = levels
        self._matched.clear()

    def limit_of(self, level: str) -> int:
        qs = self.queue_sets.get(level)
        return qs.limit if qs is not None else 0

    # -- requests -------------------------------------------------------------------------

    def match(self, attrs: Attributes) -> tuple[Schema, Level] | None:
        """The schema and level of ``attrs``: the first matching schema whose level exists
        (a dangling schema is skipped, as kube's classifier does); nothing matching: catch-all,
        kube's fallback. Remembered per what the rules look at, until the configuration changes:
        a client sends the same kind of request again and again."""
        key = (attrs.user.name, attrs.user.groups, attrs.verb, attrs.resource_request, attrs.group, attrs.resource,
               attrs.subresource, attrs.namespace, "" if attrs.resource_request else attrs.path)
        try:
            return self._matched[key]
        except KeyError:
            pass
        if len(self._matched) >= 4096:
            self._matched.clear()
        found = self._matched[key] = self._match(attrs)
        return found

    def _match(self, attrs: Attributes) -> tuple[Schema, Level] | None:
        fallback = None
        for schema in self.schemas:
            level = self.levels.get(schema.level)
            if level is None:
                continue
            if schema.matches(attrs):
                return schema, level
            if schema.name == "catch-all":
                fallback = schema, level
        return fallback

    async def admit(self, attrs: Attributes, wait: float = MAX_QUEUE_WAIT) -> Ticket | None:
        """A seat for ``attrs``; None when nothing classifies it (no configuration yet) or it is
        long-running; raises :class:`TooManyRequests`."""
        if attrs.resource_request and attrs.subresource in LONG_RUNNING_SUBRESOURCES or attrs.verb == "proxy":
            return None
        matched = self.match(attrs)
        if matched is None:
            return None
        schema, level = matched
        qs = self.queue_sets[level.name]
        m = self.metrics
        fm = m.of(level.name, schema.name)
        started = time.perf_counter()
        fm.inqueue.inc()
        try:
            seat = await qs.acquire(flow_hash(schema.name, schema.flow(attrs)), wait)
        except Rejected as exc:
            m.wait.labels(level.name, schema.name, "false").observe(time.perf_counter() - started)
            m.rejected.labels(level.name, schema.name, exc.reason).inc()
            raise TooManyRequests(exc.reason, schema.uid, level.uid) from None
        except BaseException:
            m.wait.labels(level.name, schema.name, "false").observe(time.perf_counter() - started)
            m.rejected.labels(level.name, schema.name, "cancelled").inc()
            raise
        finally:
            fm.inqueue.dec()
        fm.waited.observe(time.perf_counter() - started)
        fm.dispatched.inc()
        fm.executing.inc()
        return Ticket(self, schema, level, qs, seat, fm)
