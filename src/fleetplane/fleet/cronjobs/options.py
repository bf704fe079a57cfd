"""The fleet-wide CronJob controller's settings: one dataclass, from which ``fleetplane start``'s
``--cronjob-*`` flags and ``python -m fleetplane.fleet.cronjobs``'s flags are generated
(:mod:`fleetplane.kube.options`). Importing it is cheap (no client libraries)."""

from __future__ import annotations

from dataclasses import dataclass

from ...kube.options import option

__all__ = ["START_FLAGS", "STANDALONE_FLAGS", "CronJobOptions"]


@dataclass
class CronJobOptions:
    #: a Job's cluster may be unhealthy this long before the Job counts as lost (the splitter's grace)
    unhealthy_grace: float = option(30.0, "how long a running Job's cluster may be unhealthy before the Job counts "
                                          "as lost and is retried elsewhere (Allow, Replace)", metavar="SECONDS")
    #: a cluster must be healthy this long before it is given Jobs
    join_grace: float = option(10.0, "how long a cluster must be healthy before it is given Jobs", metavar="SECONDS")
    workers: int = option(8, "how many CronJobs are reconciled at once")
    #: read ClusterProfiles of this namespace only (None: any namespace of the logical cluster)
    profile_namespace: str | None = option(None, "read ClusterProfiles of this namespace only", type=str)
    request_timeout: float = 30.0


#: the flags of `fleetplane start` (prefixed ``--cronjob-``)
START_FLAGS = ("unhealthy_grace", "join_grace")
#: the flags of ``python -m fleetplane.fleet.cronjobs``
STANDALONE_FLAGS = ("unhealthy_grace", "join_grace", "workers", "profile_namespace")
