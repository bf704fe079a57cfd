"""What the fleet adds to a hub (``fleetplane start``): the Cluster and ClusterDaemonSet APIs,
its controllers' bootstrap roles (:mod:`.identities`), and the Cluster controller and the
splitter as background controllers, each with its own identity.

The controllers' modules are imported when they start, not when the hub is built: the client
libraries take longer to import than the hub takes to start.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

from ..plugin import Contributions, Controller, ControllerContext
from . import identities
from .cluster.crd import CLUSTER_CRD
from .cluster.options import ClusterControllerOptions
from .clusterdaemonset_crd import CLUSTERDAEMONSET_CRD
from .hpas.options import HPAControllerOptions
from .splitter.options import SplitterOptions


async def run_cluster_controller(options: ClusterControllerOptions, ctx: ControllerContext) -> None:
    from .cluster.run import run_in_hub

    await run_in_hub(ctx.kubeconfig, options)


async def run_splitter(options: SplitterOptions, ctx: ControllerContext) -> None:
    from .splitter.run import run_in_hub

    await run_in_hub(ctx.kubeconfig, options)


async def run_hpa_controller(options: HPAControllerOptions, ctx: ControllerContext) -> None:
    from .hpas.run import run_in_hub

    await run_in_hub(ctx.kubeconfig, options)


@dataclass
class FleetPlugin:
    """``cluster_controller`` and ``splitter`` are the controllers' options; None not to run that
    controller (its API is still served)."""

    cluster_controller: ClusterControllerOptions | None = field(default_factory=ClusterControllerOptions)
    splitter: SplitterOptions | None = field(default_factory=SplitterOptions)
    #: the hub HorizontalPodAutoscaler controller (fleet/hpas), None not to run it
    hpa_controller: HPAControllerOptions | None = field(default_factory=HPAControllerOptions)
    name: str = "fleet"

    def contribute(self, hub: Contributions) -> None:
        hub.crds += [CLUSTER_CRD, CLUSTERDAEMONSET_CRD]
        hub.cluster_roles += identities.cluster_roles()
        hub.cluster_role_bindings += identities.cluster_role_bindings()
        if self.cluster_controller is not None:
            hub.controllers.append(Controller("cluster-controller",
                                              partial(run_cluster_controller, self.cluster_controller),
                                              identities.CLUSTER_CONTROLLER))
        if self.splitter is not None:
            hub.controllers.append(Controller("splitter", partial(run_splitter, self.splitter),
                                              identities.SPLITTER))
        if self.hpa_controller is not None:
            hub.controllers.append(Controller("hpa-controller", partial(run_hpa_controller, self.hpa_controller),
                                              identities.HPA_CONTROLLER))
