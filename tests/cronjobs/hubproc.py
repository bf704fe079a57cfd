"""A hub with the Cluster controller (its Syncers) and the fleet-wide CronJob controller in its
process, as ``fleetplane start`` runs them, with test-sized options (no splitter).

    python tests/cronjobs/hubproc.py --data-dir DIR --port PORT [--unhealthy-grace S]
        [--failure-threshold S]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fleetplane.fleet.cluster.options import ClusterControllerOptions
from fleetplane.fleet.cronjobs.options import CronJobOptions
from fleetplane.fleet.plugin import FleetPlugin
from fleetplane.hub import HubConfig, run_hub
from fleetplane.inventory.plugin import InventoryPlugin
from fleetplane.logs import configure_logging


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--data-dir", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--unhealthy-grace", type=float, default=3.0)
    p.add_argument("--failure-threshold", type=float, default=2.0)
    args = p.parse_args()
    configure_logging("debug", "console")
    cluster_controller = ClusterControllerOptions(
        probe_interval=0.3, details_interval=1.0, request_timeout=2.0, syncer_poll_interval=1.0,
        syncer_backoff=(0.2, 2.0), status_rate=2.0, status_burst=20, failure_threshold=args.failure_threshold)
    cronjobs = CronJobOptions(unhealthy_grace=args.unhealthy_grace, join_grace=0.0)
    run_hub(HubConfig(data_dir=Path(args.data_dir), port=args.port),
            [FleetPlugin(cluster_controller=cluster_controller, splitter=None, cronjobs=cronjobs), InventoryPlugin()])


if __name__ == "__main__":
    main()
