"""The fleet-wide CronJob controller's entry points: :func:`run` (against a hub, optionally under
leader election) and :func:`run_in_hub` (``fleetplane start``'s background task)."""

from __future__ import annotations

from pathlib import Path

from ...kube import entrypoint
from .controller import CronJobController
from .options import CronJobOptions

__all__ = ["LEASE_NAME", "run", "run_in_hub"]

#: the Lease (kube-system, in the kubeconfig's logical cluster) its replicas elect a leader with
LEASE_NAME = "fleetplane-cronjob-controller"
AGENT = "fleetplane-cronjob-controller"


async def run(kubeconfig: str | Path | dict, *, context: str | None = None, leader_elect: bool = False,
              options: CronJobOptions | None = None) -> None:
    """Run it against the hub until cancelled; with ``leader_elect`` (a kubeconfig path) only while
    this process holds the Lease ``fleetplane-cronjob-controller`` (:func:`fleetplane.kube.entrypoint.run_hub_wide`)."""
    await entrypoint.run_hub_wide(lambda hub: CronJobController(hub, options), AGENT, kubeconfig, context=context,
                                  lease=LEASE_NAME if leader_elect else None)


async def run_in_hub(kubeconfig_path: Path, options: CronJobOptions | None = None) -> None:
    """The ``fleetplane start`` background task, under leader election (one among several hub replicas)."""
    await entrypoint.run_in_hub(lambda hub: CronJobController(hub, options), AGENT, LEASE_NAME, kubeconfig_path)
