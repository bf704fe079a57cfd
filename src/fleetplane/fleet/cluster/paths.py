"""Where the Cluster controller reads and writes on the hub (every path carries its logical
cluster, ``/clusters/<lc>``), and the names it writes under."""

from __future__ import annotations

from ...inventory import constants as ic
from .crd import GROUP, PLURAL, VERSION

__all__ = ["COMPONENT", "FIELD_MANAGER", "cluster_path", "core_path", "crds_path", "lease_name", "lease_path", "profile_path"]

#: the controller's user agent and Event source
COMPONENT = "fleetplane-cluster-controller"
#: the field manager of its ClusterProfile status (server-side apply)
FIELD_MANAGER = "fleetplane-cluster-controller"


def lease_name(cluster: str) -> str:
    """The Lease a pull-mode syncer renews for Cluster ``cluster`` (in the Cluster's namespace)."""
    return f"syncer-{cluster}"


def cluster_path(lc: str, ns: str, name: str = "", sub: str = "") -> str:
    tail = f"/{name}{sub}" if name else ""
    return f"/clusters/{lc}/apis/{GROUP}/{VERSION}/namespaces/{ns}/{PLURAL}{tail}"


def profile_path(lc: str, ns: str, name: str = "", sub: str = "") -> str:
    tail = f"/{name}{sub}" if name else ""
    return f"/clusters/{lc}/apis/{ic.GROUP}/{ic.VERSION}/namespaces/{ns}/{ic.PLURAL}{tail}"


def core_path(lc: str, ns: str, plural: str, name: str = "") -> str:
    return f"/clusters/{lc}/api/v1/namespaces/{ns}/{plural}" + (f"/{name}" if name else "")


def lease_path(lc: str, ns: str, name: str = "") -> str:
    return f"/clusters/{lc}/apis/coordination.k8s.io/v1/namespaces/{ns}/leases" + (f"/{name}" if name else "")


def crds_path(lc: str) -> str:
    return f"/clusters/{lc}/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
