"""core/v1 ServiceAccounts (their tokens: ``serviceaccounts/token``, wired by the server)."""

from __future__ import annotations

from ...registry import printers as pr
from ...registry.printers import AGE, NAME, Clock, Column, Printer
from ...registry.types import ResourceType
from .base import DEFINITIONS, PROTOBUF, CoreStrategy


class ServiceAccountStrategy(CoreStrategy):
    """core/v1 ServiceAccount: a DELETE answers the deleted object, as kube's registry does."""

    returns_deleted_object = True


def _service_account_cells(o: dict, clock: Clock) -> list:
    return [pr.meta(o).get("name"), pr.length(o.get("secrets")), clock.since(pr.meta(o).get("creationTimestamp"))]


def resource_types() -> list[ResourceType]:
    return [
        ResourceType("", "v1", "ServiceAccount", "serviceaccounts", "serviceaccount", True, ServiceAccountStrategy(),
                     short_names=("sa",),
                     printer=Printer((NAME, Column("Secrets", description=(DEFINITIONS + "ServiceAccount", "secrets")),
                                      AGE), _service_account_cells),
                     openapi_definition=DEFINITIONS + "ServiceAccount",
                     protobuf=PROTOBUF + "ServiceAccount"),
    ]
