"""What the fleet adds to a hub (``fleetplane start``): the Cluster and ClusterDaemonSet APIs,
its controllers' bootstrap roles (:mod:`.identities`), and the Cluster controller, the
splitter, the HPA, CronJob and Service controllers as background controllers, each with its own identity.

The controllers' modules are imported when they start, not when the hub is built: the client
libraries take longer to import than the hub takes to start.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import partial

from ..apis.apps import resource_types as apps_types
from ..plugin import Contributions, Controller, ControllerContext
from . import identities
from .cluster.crd import CLUSTER_CRD
from .cluster.options import ClusterControllerOptions
from .clusterdaemonset_crd import CLUSTERDAEMONSET_CRD
from .cronjobs.options import CronJobOptions
from .decisions.crd import PLACEMENTDECISION_CRD
from .decisions.options import DecisionPublisherOptions
from .history_crd import CONTROLLERREVISION_CRD
from .hpas.options import HPAControllerOptions
from .placement.admission import admission_checks
from .services.options import ServiceControllerOptions
from .splitter.options import SplitterOptions


async def run_cluster_controller(options: ClusterControllerOptions, ctx: ControllerContext) -> None:
    """The Cluster controller of the context's shard (the Clusters are divided among the
    controller-manager's processes: each one's Syncers hold connections, and a process's open files are capped)."""
    from .cluster.run import run_in_hub

    await run_in_hub(ctx.kubeconfig, dataclasses.replace(options, shard=ctx.shard, shards=ctx.shards))


async def run_splitter(options: SplitterOptions, ctx: ControllerContext) -> None:
    from .splitter.run import run_in_hub

    await run_in_hub(ctx.kubeconfig, options)


async def run_service_controller(options: ServiceControllerOptions, ctx: ControllerContext) -> None:
    from .services.run import run_in_hub

    await run_in_hub(ctx.kubeconfig, options)


async def run_hpa_controller(options: HPAControllerOptions, ctx: ControllerContext) -> None:
    from .hpas.run import run_in_hub

    await run_in_hub(ctx.kubeconfig, options)


async def run_cronjob_controller(options: CronJobOptions, ctx: ControllerContext) -> None:
    from .cronjobs.run import run_in_hub

    await run_in_hub(ctx.kubeconfig, options)


async def run_decision_publisher(options: DecisionPublisherOptions, ctx: ControllerContext) -> None:
    from .decisions.run import run_in_hub

    await run_in_hub(ctx.kubeconfig, options)


@dataclass
class FleetPlugin:
    """``cluster_controller``, ``splitter``, ``service_controller`` and ``hpa_controller`` are the
    controllers' options; None not to run that controller (its API is still served)."""

    cluster_controller: ClusterControllerOptions | None = field(default_factory=ClusterControllerOptions)
    splitter: SplitterOptions | None = field(default_factory=SplitterOptions)
    service_controller: ServiceControllerOptions | None = field(default_factory=ServiceControllerOptions)
    #: the hub HorizontalPodAutoscaler controller (fleet/hpas), None not to run it
    hpa_controller: HPAControllerOptions | None = field(default_factory=HPAControllerOptions)
    #: the fleet-wide CronJob controller's options (None: not run)
    cronjobs: CronJobOptions | None = field(default_factory=CronJobOptions)
    #: the PlacementDecision publisher (fleet/decisions), None not to run it
    placement_decisions: DecisionPublisherOptions | None = field(default_factory=DecisionPublisherOptions)
    name: str = "fleet"

    def contribute(self, hub: Contributions) -> None:
        hub.crds += [CLUSTER_CRD, CLUSTERDAEMONSET_CRD, PLACEMENTDECISION_CRD, CONTROLLERREVISION_CRD]
        hub.types += [t for t in apps_types() if t.kind == "ReplicaSet"]  # revision history (splitter/history.py)
        hub.admission.update(admission_checks())  # placement policies validated on write
        hub.cluster_roles += identities.cluster_roles()
        hub.cluster_role_bindings += identities.cluster_role_bindings()
        if self.cluster_controller is not None:
            hub.controllers.append(Controller("cluster-controller",
                                              partial(run_cluster_controller, self.cluster_controller),
                                              identities.CLUSTER_CONTROLLER, sharded=True))
        if self.splitter is not None:
            hub.controllers.append(Controller("splitter", partial(run_splitter, self.splitter),
                                              identities.SPLITTER))
        if self.service_controller is not None:
            hub.controllers.append(Controller("service-controller",
                                              partial(run_service_controller, self.service_controller),
                                              identities.SERVICE_CONTROLLER))
        if self.hpa_controller is not None:
            hub.controllers.append(Controller("hpa-controller", partial(run_hpa_controller, self.hpa_controller),
                                              identities.HPA_CONTROLLER))
        if self.cronjobs is not None:
            hub.controllers.append(Controller("cronjob-controller", partial(run_cronjob_controller, self.cronjobs),
                                              identities.CRONJOB_CONTROLLER))
        if self.placement_decisions is not None:
            hub.controllers.append(Controller("placement-decisions", partial(run_decision_publisher,
                                                                             self.placement_decisions),
                                              identities.PLACEMENT_DECISIONS))
