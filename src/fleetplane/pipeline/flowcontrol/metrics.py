"""API Priority and Fairness's Prometheus metrics, named and labelled as kube's
(``apiserver/pkg/util/flowcontrol/metrics/metrics.go``), registered in the app's own registry."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

WAIT_BUCKETS = (0.0, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 15, 30)
PREFIX = "apiserver_flowcontrol_"


class FlowControlMetrics:
    def __init__(self, registry: CollectorRegistry | None) -> None:
        """``registry`` None: the metrics are counted but exported nowhere (unit tests)."""
        labels = ["priority_level", "flow_schema"]
        self.inqueue = Gauge(PREFIX + "current_inqueue_requests", "Number of requests currently pending in queues "
                             "of the API Priority and Fairness subsystem", labels, registry=registry)
        self.executing = Gauge(PREFIX + "current_executing_requests", "Number of requests in initial (for a WATCH) "
                               "or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem",
                               labels, registry=registry)
        self.rejected = Counter(PREFIX + "rejected_requests", "Number of requests rejected by API Priority and "
                                "Fairness subsystem", [*labels, "reason"], registry=registry)
        self.dispatched = Counter(PREFIX + "dispatched_requests", "Number of requests executed by API Priority and "
                                  "Fairness subsystem", labels, registry=registry)
        self.wait = Histogram(PREFIX + "request_wait_duration_seconds", "Length of time a request spent waiting in "
                              "its queue", [*labels, "execute"], buckets=WAIT_BUCKETS, registry=registry)
        self._of: dict[tuple[str, str], FlowMetrics] = {}
        self.nominal_limit = Gauge(PREFIX + "nominal_limit_seats", "Nominal number of execution seats configured "
                                   "for each priority level", ["priority_level"], registry=registry)

    def of(self, level: str, schema: str) -> FlowMetrics:
        """The children of one (priority level, flow schema), made once: prometheus_client's
        ``labels()`` validates and locks on every call, and every request needs five."""
        got = self._of.get((level, schema))
        if got is None:
            if len(self._of) >= 1024:
                self._of.clear()
            got = self._of[(level, schema)] = FlowMetrics(self, level, schema)
        return got


class FlowMetrics:
    """A (priority level, flow schema)'s metric children that every request touches."""

    def __init__(self, m: FlowControlMetrics, level: str, schema: str) -> None:
        self.inqueue: Any = m.inqueue.labels(level, schema)
        self.executing: Any = m.executing.labels(level, schema)
        self.dispatched: Any = m.dispatched.labels(level, schema)
        self.waited: Any = m.wait.labels(level, schema, "true")
