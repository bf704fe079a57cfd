"""The runtime's Prometheus metrics, registered once on the default registry; ``name`` is the
Manager's name, so several managers in one process stay apart."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

ENGAGED = Gauge("multicluster_engaged_clusters", "Clusters currently engaged (informers running)", ["name"])
ENGAGEMENTS = Counter("multicluster_engagements_total",
                      "Clusters engaged (a re-engagement after an access change counts again)", ["name"])
DISENGAGEMENTS = Counter("multicluster_disengagements_total", "Clusters disengaged, by reason",
                         ["name", "reason"])
ENGAGE_ERRORS = Counter("multicluster_engage_errors_total",
                        "Failed attempts to engage a ClusterProfile (access provider or client errors)",
                        ["name", "reason"])
ENGAGE_LATENCY = Histogram("multicluster_engage_duration_seconds",
                           "From a ready ClusterProfile being seen to the cluster's informers being synced",
                           ["name"], buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))
RECONCILES = Counter("multicluster_reconcile_total", "Reconciles, by result (success, requeue, error)",
                     ["name", "result"])
RECONCILE_ERRORS = Counter("multicluster_reconcile_errors_total", "Reconciles that raised", ["name"])
RECONCILE_LATENCY = Histogram("multicluster_reconcile_duration_seconds", "Time spent in reconcile", ["name"])
