"""The hub HPA controller's settings: one dataclass, from which ``fleetplane start``'s ``--hpa-*``
flags are generated (:mod:`fleetplane.kube.options`). Importing it is cheap (no client libraries)."""

from __future__ import annotations

from dataclasses import dataclass

from ...kube.options import option

__all__ = ["START_FLAGS", "HPAControllerOptions"]


@dataclass
class HPAControllerOptions:
    #: how often every hub HPA is looked at again (its children's status aggregated), as kube's sync period
    resync: float = option(15.0, "how often each hub HorizontalPodAutoscaler is synced again (its clusters' HPAs "
                                 "aggregated into its status)", metavar="SECONDS")
    workers: int = option(4, "how many HorizontalPodAutoscalers are reconciled at once")


#: the flags of `fleetplane start` (prefixed ``--hpa-``)
START_FLAGS = ("resync",)
