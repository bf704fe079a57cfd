"""Prometheus metrics, named as kube-apiserver names the same things."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import Counter, Gauge, Histogram

if TYPE_CHECKING:
    from .http import Request
    from .request import RequestInfo

REQUESTS = Counter("apiserver_request_total", "Requests by verb, resource and code.",
                   ["verb", "group", "resource", "subresource", "code"])
LATENCY = Histogram("apiserver_request_duration_seconds", "Request latency (watches: stream lifetime excluded).",
                    ["verb", "resource"],
                    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
WATCHERS = Gauge("apiserver_registered_watchers", "Open watch streams.", ["resource"])
LOGICAL_CLUSTERS = Gauge("fleetplane_logical_clusters", "Logical clusters that exist.")
STORAGE_REVISION = Gauge("fleetplane_storage_revision", "The store's current revision.")


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


def observe(req: Request, info: RequestInfo | None, code: int, seconds: float) -> None:
    verb = verb_of(req, info)
    resource = info.resource if info is not None and info.is_resource else ""
    REQUESTS.labels(verb, info.group if info else "", resource, info.subresource if info else "", str(code)).inc()
    if verb != "watch":
        LATENCY.labels(verb, resource).observe(seconds)
