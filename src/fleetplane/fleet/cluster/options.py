"""The Cluster controller's settings: one dataclass, from which ``fleetplane start``'s
``--cluster-*`` flags and ``python -m fleetplane.fleet.cluster``'s flags are generated
(:mod:`fleetplane.kube.options`). Importing it is cheap (no client libraries, not even
:mod:`fleetplane.inventory`)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ...kube.options import option, split_list

__all__ = ["ACCESS_PROVIDER", "LEASE_NAME", "MANAGER_NAME", "MAX_SHARDS", "START_FLAGS", "STANDALONE_FLAGS",
           "ClusterControllerOptions", "shard_lease_names", "shard_of"]

#: the KEP-4322 cluster manager name on the ClusterProfiles the controller keeps
MANAGER_NAME = "fleetplane"
#: the access provider it publishes (the plugin that reads the credentials Secret)
ACCESS_PROVIDER = "secretreader"
#: the Lease (kube-system, in the kubeconfig's logical cluster) the controller's replicas elect a
#: leader with; shard ``i`` of several has its own, ``<LEASE_NAME>-shard-<i>``
LEASE_NAME = "fleetplane-cluster-controller"
#: the most shards: the controller's RBAC names every shard's Lease (fleet/identities.py), and
#: RBAC cannot name a prefix
MAX_SHARDS = 32


def shard_lease_names() -> list[str]:
    """Every shard's Lease name, as RBAC lists them."""
    return [f"{LEASE_NAME}-shard-{i}" for i in range(MAX_SHARDS)]


@dataclass(frozen=True)
class ClusterControllerOptions:
    manager_name: str = option(MANAGER_NAME, "the KEP-4322 cluster manager name")
    probe_interval: float = option(10.0, "how often each Cluster's health is probed", metavar="SECONDS")
    details_interval: float = option(60.0, "how often each Cluster's version, nodes and capacity are read",
                                     metavar="SECONDS")
    request_timeout: float = option(5.0, "how long one request of the Cluster controller to a cluster may take; a "
                                         "probe that takes longer fails", metavar="SECONDS")
    #: its requests to the hub wait their turn in flow control when the hub is busy (a thousand
    #: clusters attaching): a short timeout only sends them again, adding to the load. kube's
    #: clients leave it to the server's own limit (--request-timeout, 60 s)
    hub_request_timeout: float = option(60.0, "how long one request of the Cluster controller to the hub may take",
                                        metavar="SECONDS")
    #: Karmada's --cluster-failure-threshold: a slow answer under load does not flap a ClusterProfile
    failure_threshold: float = option(30.0, "how long probes must fail without a break before a healthy Cluster is "
                                            "reported disconnected or unhealthy (its conditions and ClusterProfile "
                                            "keep their last healthy state meanwhile; the first failure is an Event)",
                                      metavar="SECONDS")
    #: what a Cluster without ``spec.resources`` syncs (None: the Syncer's default)
    resources: tuple[str, ...] | None = option(None, "resources a Cluster without spec.resources syncs "
                                                     "(comma-separated; default: the Syncer's)", type=split_list)
    syncer_poll_interval: float | None = option(None, "how often Syncers poll a cluster's types (there is no watch "
                                                      "on discovery; default: the Syncer's)", metavar="SECONDS",
                                                type=float, prefixed=False)
    access_provider_name: str = option(ACCESS_PROVIDER, "the access provider published on ClusterProfiles")
    #: the ClusterProfile status budget (None: KEP-4322's, the StatusWriter's defaults)
    status_rate: float | None = option(None, "ClusterProfile status writes per second and profile once the burst is "
                                             "spent (default: KEP-4322's budget, one every 30 s)", metavar="PER-SECOND",
                                       type=float)
    status_burst: int | None = option(None, "ClusterProfile status writes one profile may make in a burst "
                                            "(default: KEP-4322's, 10)", metavar="N", type=int)
    #: first and longest wait before a failed Syncer is started again
    syncer_backoff: tuple[float, float] = (1.0, 30.0)
    #: keep ClusterProfiles (False when the hub does not serve them: `fleetplane start --no-cluster-profiles`)
    cluster_profiles: bool = True
    #: Clusters reconciled at once (a Syncer runs on its own, outside these)
    workers: int = option(32, "how many Clusters are reconciled at once")
    #: this controller's part of the Clusters (the controller-manager's shards: fleetplane start
    #: --controller-manager-shards sets them per process): those whose :func:`shard_of` is ``shard``
    shard: int = option(0, "reconcile only the Clusters of shard SHARD (from 0) of --shards", metavar="SHARD")
    shards: int = option(1, "how many Cluster controllers share the Clusters, each with its own --shard "
                            "and Lease (default 1: all)", metavar="N")

    def __post_init__(self) -> None:
        if self.resources is not None:
            object.__setattr__(self, "resources", tuple(self.resources) or None)
        if not 1 <= self.shards <= MAX_SHARDS:
            raise ValueError(f"shards: want 1 to {MAX_SHARDS}, not {self.shards}")
        if not 0 <= self.shard < self.shards:
            raise ValueError(f"shard {self.shard} is not one of 0..{self.shards - 1} of {self.shards} shards")

    @property
    def lease_name(self) -> str:
        """The Lease of this controller's shard (:data:`LEASE_NAME` unsharded). All replicas of
        a hub must have the same number of shards: shards of different counts overlap."""
        return LEASE_NAME if self.shards == 1 else shard_lease_names()[self.shard]

    def owns(self, logical_cluster: str, name: str) -> bool:
        """Is the Cluster ``name`` of ``logical_cluster`` this controller's to reconcile?"""
        return self.shards == 1 or shard_of(logical_cluster, name, self.shards) == self.shard


def shard_of(logical_cluster: str, name: str, shards: int) -> int:
    """The shard a Cluster belongs to: a stable hash of its logical cluster and name (not its
    namespace: namesakes in one logical cluster must meet in one controller, which refuses the
    second, :mod:`.duplicates`)."""
    digest = hashlib.sha256(f"{logical_cluster}/{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % shards


#: the flags of `fleetplane start` (prefixed ``--cluster-``, but --syncer-poll-interval)
START_FLAGS = ("probe_interval", "details_interval", "request_timeout", "hub_request_timeout", "failure_threshold",
               "status_rate", "status_burst", "syncer_poll_interval")
#: the flags of ``python -m fleetplane.fleet.cluster``
STANDALONE_FLAGS = ("manager_name", "probe_interval", "details_interval", "request_timeout", "hub_request_timeout",
                    "failure_threshold", "resources", "syncer_poll_interval", "workers", "shard", "shards")
