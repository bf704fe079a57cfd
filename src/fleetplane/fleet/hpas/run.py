"""The hub HPA controller's entry points: :func:`run` and :func:`run_in_hub` (``fleetplane start``)."""

from __future__ import annotations

from pathlib import Path

from ...kube import entrypoint
from .controller import HPAController
from .options import HPAControllerOptions

__all__ = ["LEASE_NAME", "run", "run_in_hub"]

#: the Lease (kube-system, in the kubeconfig's logical cluster) its replicas elect a leader with
LEASE_NAME = "fleetplane-hpa-controller"
AGENT = "fleetplane-hpa-controller"


async def run(kubeconfig: str | Path | dict, *, context: str | None = None, leader_elect: bool = False,
              options: HPAControllerOptions | None = None) -> None:
    """Run it against the hub until cancelled; with ``leader_elect`` (a kubeconfig path) only while
    this process holds the Lease ``fleetplane-hpa-controller`` (:func:`fleetplane.kube.entrypoint.run_hub_wide`)."""
    await entrypoint.run_hub_wide(lambda hub: HPAController(hub, options), AGENT, kubeconfig, context=context,
                                  lease=LEASE_NAME if leader_elect else None)


async def run_in_hub(kubeconfig_path: Path, options: HPAControllerOptions | None = None) -> None:
    """The ``fleetplane start`` background task, under leader election (one among several hub replicas)."""
    await entrypoint.run_in_hub(lambda hub: HPAController(hub, options), AGENT, LEASE_NAME, kubeconfig_path)
