"""The Cluster controller's entry points: ``fleetplane start``'s background task
(:func:`run_in_hub`, under leader election) and ``python -m fleetplane.fleet.cluster`` (:func:`main`)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from .options import LEASE_NAME, STANDALONE_FLAGS, ClusterControllerOptions

__all__ = ["LEASE_NAME", "lease_name", "main", "run_in_hub"]

log = logging.getLogger("fleetplane.fleet.cluster")

def lease_name(options: ClusterControllerOptions | None) -> str:
    """The Lease of ``options``' shard (:data:`LEASE_NAME` unsharded)."""
    return (options or ClusterControllerOptions()).lease_name


async def run_in_hub(kubeconfig_path: Path, options: ClusterControllerOptions | None = None) -> None:
    """Run the controller in the hub's process (``fleetplane start``, through the fleet plugin:
    :mod:`fleetplane.fleet.plugin`)."""
    try:
        import aiohttp  # noqa: F401 - the client the controller uses
    except ImportError:
        log.error("cluster controller not started: it needs aiohttp (pip install 'fleetplane[clients]')")
        return
    # With several hub replicas sharing one store exactly one runs this controller (two would run
    # two Syncers per cluster). run() is safe to cancel on losing the Lease: it stops every Syncer
    # it started, and each term starts from a fresh list (all state is in the hub).
    from ...kube.leaderelection import run_as_leader
    from .controller import ClusterController

    await run_as_leader(lease_name(options), kubeconfig_path,
                        lambda: ClusterController(kubeconfig_path, options).run())


def main(argv: Sequence[str] | None = None) -> int:
    from ...kube.entrypoint import controller_main
    from .controller import ClusterController

    return controller_main(
        argv, prog="python -m fleetplane.fleet.cluster", name="cluster-controller",
        description="Run the Cluster controller against a fleetplane hub.", options=ClusterControllerOptions,
        only=STANDALONE_FLAGS, lease=LEASE_NAME, lease_of=lease_name,
        build=lambda kubeconfig, context, opts: ClusterController(kubeconfig, opts, context=context))


if __name__ == "__main__":
    sys.exit(main())
