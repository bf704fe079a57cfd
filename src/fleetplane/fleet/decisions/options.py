"""The decision publisher's settings: one dataclass, from which ``fleetplane start``'s
``--placement-decisions-*`` flags are generated (:mod:`fleetplane.kube.options`). Cheap to import."""

from __future__ import annotations

from dataclasses import dataclass

from ...kube.options import option

__all__ = ["START_FLAGS", "DecisionPublisherOptions"]


@dataclass
class DecisionPublisherOptions:
    workers: int = option(4, "how many workloads' PlacementDecisions are written at once")


#: the flags of `fleetplane start` (prefixed ``--placement-decisions-``)
START_FLAGS = ("workers",)
