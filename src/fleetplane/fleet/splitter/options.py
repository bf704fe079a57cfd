"""The splitter's settings: one dataclass, from which ``fleetplane start``'s ``--splitter-*``
flags and ``python -m fleetplane.fleet.splitter``'s flags are generated
(:mod:`fleetplane.kube.options`). Importing it is cheap (no client libraries)."""

from __future__ import annotations

from dataclasses import dataclass

from ...kube.options import option

__all__ = ["START_FLAGS", "STANDALONE_FLAGS", "SplitterOptions"]


@dataclass
class SplitterOptions:
    #: damping: a cluster holding replicas may be unhealthy this long before they move
    unhealthy_grace: float = option(30.0, "how long a cluster may be unhealthy before its replicas move (damping)",
                                    metavar="SECONDS")
    #: damping: a cluster must be healthy this long before it receives new replicas
    join_grace: float = option(10.0, "how long a cluster must be healthy before it receives replicas (damping)",
                               metavar="SECONDS")
    #: damping: a cluster whose replicas were evicted must be healthy this long before they count again
    rejoin_grace: float = option(30.0, "how long a cluster whose replicas were evicted (unreachable past "
                                       "--unhealthy-grace) must be healthy again before they count and its share "
                                       "returns (damping)", metavar="SECONDS")
    #: how long a child's replicas may stay unavailable before its cluster counts as lacking capacity
    unschedulable_grace: float = option(60.0, "how long replicas may stay unschedulable in a cluster before they move",
                                        metavar="SECONDS")
    #: how long such a limit lasts before the cluster is tried again
    limit_ttl: float = option(600.0, "how long such a cluster is avoided before it is tried again", metavar="SECONDS")
    workers: int = option(16, "how many Deployments are reconciled at once")
    #: read ClusterProfiles of this namespace only (None: any namespace of the logical cluster)
    profile_namespace: str | None = option(None, "read ClusterProfiles of this namespace only", type=str)
    #: also run the ClusterDaemonSet controller
    cluster_daemonsets: bool = option(True, "run the ClusterDaemonSet controller (--no-cluster-daemonsets: do not)")
    request_timeout: float = 30.0


#: the flags of `fleetplane start` (prefixed ``--splitter-``)
START_FLAGS = ("join_grace", "unhealthy_grace", "rejoin_grace", "unschedulable_grace")
#: the flags of ``python -m fleetplane.fleet.splitter``
STANDALONE_FLAGS = ("unhealthy_grace", "rejoin_grace", "join_grace", "unschedulable_grace", "limit_ttl", "workers",
                    "profile_namespace", "cluster_daemonsets")
