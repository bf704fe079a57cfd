"""The coordination group (``coordination.k8s.io/v1``): Leases, as leader election uses them."""

from __future__ import annotations

from ..registry import printers as pr
from ..registry.printers import AGE, NAME, Clock, Column, Printer
from ..registry.types import ResourceType
from .core.base import CoreStrategy


def _lease_cells(o: dict, clock: Clock) -> list:
    return [pr.meta(o).get("name"), pr.string(pr.get(o, "spec", "holderIdentity")), clock.since(pr.meta(o).get("creationTimestamp"))]


def resource_types() -> list[ResourceType]:
    return [
        ResourceType("coordination.k8s.io", "v1", "Lease", "leases", "lease", True, CoreStrategy(),
                     printer=Printer((NAME, Column("Holder", description=("io.k8s.api.coordination.v1.LeaseSpec",
                                                                           "holderIdentity")), AGE), _lease_cells),
                     openapi_definition="io.k8s.api.coordination.v1.Lease",
                     protobuf="k8s.io.api.coordination.v1.Lease"),
    ]
