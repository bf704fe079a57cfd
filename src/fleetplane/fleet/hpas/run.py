"""The hub HPA controller's entry point in ``fleetplane start`` (:mod:`fleetplane.fleet.plugin`):
:func:`run_in_hub`, under leader election (one among several hub replicas)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from ...kube.client import Client
from ...kube.kubeconfig import ApiTarget
from .controller import HPAController
from .options import HPAControllerOptions

__all__ = ["LEASE_NAME", "run", "run_in_hub"]

log = logging.getLogger("fleetplane.fleet.hpas")

#: the Lease (kube-system, in the kubeconfig's logical cluster) the controller's replicas elect a leader with
LEASE_NAME = "fleetplane-hpa-controller"


async def run(kubeconfig: str | Path | dict, *, leader_elect: bool = False,
              options: HPAControllerOptions | None = None) -> None:
    """Run the controller against the hub until cancelled (with ``leader_elect``, a kubeconfig path:
    only while holding the Lease ``fleetplane-hpa-controller``)."""

    async def work() -> None:
        target = ApiTarget.from_kubeconfig(kubeconfig)
        hub = Client(target.with_server(target.base), "fleetplane-hpa-controller")  # paths carry /clusters/<lc>
        try:
            await HPAController(hub, options).run()
        finally:
            await hub.close()

    if not leader_elect:
        await work()
        return
    if isinstance(kubeconfig, dict):
        raise ValueError("leader election needs a kubeconfig file whose current context is the Lease's cluster")
    from ...kube.leaderelection import run_as_leader

    await run_as_leader(LEASE_NAME, kubeconfig, work)


async def run_in_hub(kubeconfig_path: Path, options: HPAControllerOptions | None = None) -> None:
    """The ``fleetplane start`` background task."""
    try:
        await run(kubeconfig_path, leader_elect=True, options=options)
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("hpa controller stopped")
        raise
