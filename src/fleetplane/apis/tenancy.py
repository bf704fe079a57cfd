"""fleetplane's tenancy group (``tenancy.fleetplane.io/v1alpha1``): LogicalCluster, served in
``root`` only: the list of logical clusters, and a way to delete one. Names follow kcp's path
grammar (``root``, ``team-a:dev``)."""

from __future__ import annotations

from ..apimachinery.errors import FieldError
from ..registry import printers as pr
from ..registry.printers import AGE, NAME, Clock, Column, Printer
from ..registry.types import ResourceType, Strategy
from ..registry.validation import CLUSTER_PATH, CLUSTER_PATH_TEXT, validate_object_meta

LOGICAL_CLUSTER_GROUP = "tenancy.fleetplane.io"
LOGICAL_CLUSTER_FINALIZER = "tenancy.fleetplane.io/logical-cluster"


class LogicalClusterStrategy(Strategy):
    """fleetplane's LogicalCluster: names follow kcp's path grammar (``root``, ``team-a:dev``)."""

    tracks_generation = False
    allow_unconditional_update = True
    status_subresource = True

    def prepare_for_create(self, obj: dict) -> None:
        obj["status"] = {"phase": "Ready"}

    def before_write(self, obj: dict, old: dict | None, cluster: str) -> None:
        fins = obj["metadata"].setdefault("finalizers", [])
        if old is None and LOGICAL_CLUSTER_FINALIZER not in fins:
            fins.append(LOGICAL_CLUSTER_FINALIZER)
        if obj["metadata"].get("deletionTimestamp"):
            obj.setdefault("status", {})["phase"] = "Deleting"

    def validate(self, obj: dict) -> list[FieldError]:
        return validate_object_meta(obj, namespaced=False, name_error=cluster_name_error)


def cluster_name_error(name: str) -> str | None:
    if CLUSTER_PATH.match(name):
        return None
    return "does not match the regex " + CLUSTER_PATH_TEXT


def _logical_cluster_cells(o: dict, clock: Clock) -> list:
    name = pr.meta(o).get("name")
    return [name, pr.string(pr.get(o, "status", "phase")), f"/clusters/{name}", clock.since(pr.meta(o).get("creationTimestamp"))]


def logical_cluster_type() -> ResourceType:
    """Served in ``root`` only (no protobuf message: kubectl's protobuf is for built-in kinds)."""
    return ResourceType(LOGICAL_CLUSTER_GROUP, "v1alpha1", "LogicalCluster", "logicalclusters",
                        "logicalcluster", False, LogicalClusterStrategy(), short_names=("lc",),
                        subresources=("status",),
                        printer=Printer((
                            NAME,
                            Column("Phase", description=("io.fleetplane.tenancy.v1alpha1.LogicalClusterStatus", "phase")),
                            Column("URL", description="The path that serves the logical cluster, relative to the server URL."),
                            AGE,
                        ), _logical_cluster_cells),
                        openapi_definition="io.fleetplane.tenancy.v1alpha1.LogicalCluster")
