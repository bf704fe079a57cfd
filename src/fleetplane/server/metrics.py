"""Prometheus metrics, named as kube-apiserver names the same things.

Each hub app has its own :class:`Metrics` in its own ``CollectorRegistry``, so two apps in one
process (tests, benchmarks) count their own requests and report their own store; ``/metrics``
serves that registry, which also relays the process-wide collectors of ``prometheus_client``'s
default registry (process and GC figures, the audit log's and the access library's counters).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.metrics_core import GaugeMetricFamily, Metric

if TYPE_CHECKING:
    from .http import Request
    from .request import RequestInfo

#: label sets whose metric children are kept at hand (paths are the client's: bounded)
_MAX_CHILDREN = 4096
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


class _ProcessWide:
    """The default registry's samples, relayed: they describe the process, not one app."""

    def collect(self) -> Iterable[Metric]:
        return REGISTRY.collect()

    def describe(self) -> list[Metric]:
        return []  # nothing to check for clashes: the app's own names are not in the default registry


#: (key prefix ``/<group>/<resource>/``, events, bytes) of each resource's watch-cache history
HistorySizes = Callable[[], list[tuple[str, int, int]]]


class _WatchCacheHistory:
    """The watch cache's history per resource, read when scraped (resources come and go)."""

    def __init__(self, sizes: HistorySizes) -> None:
        self.sizes = sizes

    def collect(self) -> Iterable[Metric]:
        events = GaugeMetricFamily("fleetplane_watch_cache_history_events",
                                   "Events the watch cache keeps for watches to resume from.", labels=["group", "resource"])
        size = GaugeMetricFamily("fleetplane_watch_cache_history_bytes",
                                 "Bytes of the objects of those events (bounded per resource).", labels=["group", "resource"])
        for prefix, count, nbytes in self.sizes():
            group, resource = prefix.strip("/").split("/", 1)
            labels = ["" if group == "core" else group, resource]
            events.add_metric(labels, count)
            size.add_metric(labels, nbytes)
        return [events, size]

    def describe(self) -> list[Metric]:
        return []


class Metrics:
    """One app's request counters and latencies, open watches, logical clusters and revision."""

    def __init__(self, logical_clusters: Callable[[], float], storage_revision: Callable[[], float],
                 watch_cache_history: HistorySizes | None = None) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("apiserver_request_total", "Requests by verb, resource and code.",
                                ["verb", "group", "resource", "subresource", "code"], registry=self.registry)
        self.latency = Histogram("apiserver_request_duration_seconds",
                                 "Request latency (watches: stream lifetime excluded).", ["verb", "resource"],
                                 buckets=LATENCY_BUCKETS, registry=self.registry)
        #: the request counter's and latency histogram's children by label values
        self._children: dict[tuple[str, str, str, str, int], tuple[Any, Any]] = {}
        self.watchers = Gauge("apiserver_registered_watchers", "Open watch streams.", ["resource"],
                              registry=self.registry)
        #: connections the server closed for a limit (server/tls.py): header_timeout, per_client, total
        self.connections_closed = Counter("fleetplane_connections_closed_total",
                                          "Connections closed for a limit, by limit.", ["reason"],
                                          registry=self.registry)
        Gauge("fleetplane_logical_clusters", "Logical clusters that exist.",
              registry=self.registry).set_function(logical_clusters)
        Gauge("fleetplane_storage_revision", "The store's current revision.",
              registry=self.registry).set_function(storage_revision)
        self.conversion_requests = Counter(
            "apiserver_conversion_webhook_request_total",
            "Counter for conversion webhook requests with success/failure and failure error type",
            ["result", "failure_type"], registry=self.registry)
        self.conversion_latency = Histogram(
            "apiserver_conversion_webhook_duration_seconds", "Conversion webhook request latency",
            ["result", "failure_type"], buckets=LATENCY_BUCKETS, registry=self.registry)
        self.crd_conversion_latency = Histogram(
            "apiserver_crd_conversion_webhook_duration_seconds", "CRD webhook conversion duration in seconds",
            ["crd_name", "from_version", "to_version", "succeeded"], buckets=LATENCY_BUCKETS, registry=self.registry)
        if watch_cache_history is not None:
            self.registry.register(_WatchCacheHistory(watch_cache_history))  # type: ignore[arg-type]
        self.registry.register(_ProcessWide())  # type: ignore[arg-type]

    def observe(self, req: Request, info: RequestInfo | None, code: int, seconds: float) -> None:
        verb = verb_of(req, info)
        resource = info.resource if info is not None and info.is_resource else ""
        key = (verb, info.group if info else "", resource, info.subresource if info else "", code)
        children = self._children.get(key)
        if children is None:
            # prometheus_client's labels() validates and locks on every call: once per label set
            if len(self._children) >= _MAX_CHILDREN:
                self._children.clear()
            children = self._children[key] = (self.requests.labels(*key[:4], str(code)),
                                               self.latency.labels(verb, resource) if verb != "watch" else None)
        children[0].inc()
        if children[1] is not None:
            children[1].observe(seconds)

    def observe_conversion(self, crd_name: str, from_version: str, to_version: str, seconds: float,
                           failure_type: str | None) -> None:
        """One call of a CRD's conversion webhook (registry.conversion's ``observe``)."""
        result = "failure" if failure_type else "success"
        self.conversion_requests.labels(result, failure_type or "").inc()
        self.conversion_latency.labels(result, failure_type or "").observe(seconds)
        self.crd_conversion_latency.labels(crd_name, from_version, to_version, str(failure_type is None).lower()).observe(seconds)

    def exposition(self) -> bytes:
        """The text format ``/metrics`` answers with."""
        return generate_latest(self.registry)


def verb_of(req: Request, info: RequestInfo | None) -> str:
    m = req.method
    if info is None or not info.is_resource:
        return m.lower()
    if m == "GET":
        if info.name:
            return "get"
        return "watch" if req.flag("watch") else "list"
    return {"POST": "create", "PUT": "update", "PATCH": "apply" if "apply-patch" in req.content_type else "patch",
            "DELETE": "delete" if info.name else "deletecollection"}.get(m, m.lower())


class StoreMetrics:
    """The embedded store's group commits (storage/sqlite.py): how long each takes and how many
    writes it carries, as the writer process reports them (the time is the writer's own)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.duration = Histogram("fleetplane_storage_commit_duration_seconds",
                                  "Time of one group commit of the embedded store, fsync included.",
                                  buckets=COMMIT_BUCKETS, registry=registry)
        self.writes = Histogram("fleetplane_storage_commit_writes", "Writes per group commit of the embedded store.",
                                buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512), registry=registry)

    def observe(self, writes: int, seconds: float) -> None:
        self.duration.observe(seconds)
        self.writes.observe(writes)


COMMIT_BUCKETS = (0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024)
