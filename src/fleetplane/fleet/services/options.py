"""The Service controller's settings: one dataclass, from which ``fleetplane start``'s
``--service-controller-*`` flags are generated (:mod:`fleetplane.kube.options`). Importing it is
cheap (no client libraries)."""

from __future__ import annotations

from dataclasses import dataclass

from ...kube.options import option

__all__ = ["START_FLAGS", "ServiceControllerOptions"]


@dataclass
class ServiceControllerOptions:
    workers: int = option(8, "how many Services are reconciled at once")
    #: read ClusterProfiles of this namespace only (None: any namespace of the logical cluster), as the splitter
    profile_namespace: str | None = option(None, "read ClusterProfiles of this namespace only", type=str)
    #: placement by policy: a cluster must be healthy this long before it gets a child (the splitter's)
    join_grace: float = option(10.0, "with a placement policy: how long a cluster must be healthy before it gets "
                                     "the Service", metavar="SECONDS")


#: the flags of `fleetplane start` (prefixed ``--service-controller-``)
START_FLAGS = ("workers",)
