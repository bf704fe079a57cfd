"""The Cluster controller's former import path and command (``python -m
fleetplane.fleet.cluster_controller``); it lives in the package :mod:`fleetplane.fleet.cluster`."""

import sys

from ..kube.kubeconfig import hub_base
from .cluster.controller import ClusterController
from .cluster.crd import ANNOTATION_REPORT, ANNOTATION_STOPPED, ANNOTATION_SYNCER_HEALTH
from .cluster.options import MANAGER_NAME, ClusterControllerOptions
from .cluster.paths import lease_name
from .cluster.run import background, main, run_in_hub
from .cluster.syncer import health_dict, synced_condition, type_entries

__all__ = ["ANNOTATION_REPORT", "ANNOTATION_STOPPED", "ANNOTATION_SYNCER_HEALTH", "ClusterController",
           "ClusterControllerOptions", "MANAGER_NAME", "background", "health_dict", "hub_base", "lease_name", "main",
           "run_in_hub", "synced_condition", "type_entries"]

if __name__ == "__main__":
    sys.exit(main())
