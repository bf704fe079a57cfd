"""A hub with the splitter running in its process, as ``fleetplane start`` runs it (the fleet
plugin, with test-sized options; the Cluster controller only with ``--cluster-controller``).

    python tests/splitter/hubproc.py --data-dir DIR --port PORT [--builtin-deployments]
        [--cluster-controller] [--unhealthy-grace S] [--join-grace S] [--unschedulable-grace S]
        [--rejoin-grace S] [--failure-threshold S] [--request-timeout S] [--disable-admission-plugins A,B]

Deployments are the CRD ``deployments.apps`` the Syncers import from the clusters (or that the
tests apply when there are no clusters); ``--builtin-deployments`` serves them as a built-in type
instead (kube's strategy: annotation changes bump generation).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fleetplane.fleet.cluster.options import ClusterControllerOptions
from fleetplane.fleet.plugin import FleetPlugin
from fleetplane.fleet.splitter.options import SplitterOptions
from fleetplane.hub import Contributions, HubConfig, Plugin, run_hub
from fleetplane.inventory.plugin import InventoryPlugin
from fleetplane.logs import configure_logging


class BuiltinDeployments:
    """Deployments as a built-in type (kube's strategy), not the CRD a Syncer imports."""

    name = "builtin-deployments"

    def contribute(self, hub: Contributions) -> None:
        from fleetplane.apis import workload_types

        hub.types += [t for t in workload_types() if t.kind == "Deployment"]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--data-dir", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--builtin-deployments", action="store_true")
    p.add_argument("--cluster-controller", action="store_true")
    p.add_argument("--probe-interval", type=float, default=0.3)
    p.add_argument("--unhealthy-grace", type=float, default=2.0)
    p.add_argument("--join-grace", type=float, default=0.0)
    p.add_argument("--unschedulable-grace", type=float, default=1.5)
    p.add_argument("--limit-ttl", type=float, default=120.0)
    p.add_argument("--rejoin-grace", type=float, default=2.0)
    p.add_argument("--failure-threshold", type=float, default=0.0)
    p.add_argument("--request-timeout", type=float, default=2.0)
    p.add_argument("--no-splitter", action="store_true")
    p.add_argument("--disable-admission-plugins", default="", help="e.g. DeploymentAdmission (the policy check)")
    args = p.parse_args()
    configure_logging("debug", "console")
    splitter = None if args.no_splitter else SplitterOptions(
        unhealthy_grace=args.unhealthy_grace, join_grace=args.join_grace, unschedulable_grace=args.unschedulable_grace,
        limit_ttl=args.limit_ttl, rejoin_grace=args.rejoin_grace)
    cluster_controller: ClusterControllerOptions | None = None
    if args.cluster_controller:
        cluster_controller = ClusterControllerOptions(
            probe_interval=args.probe_interval, details_interval=1.0, request_timeout=args.request_timeout,
            syncer_poll_interval=1.0, syncer_backoff=(0.2, 2.0), status_rate=2.0, status_burst=20,
            failure_threshold=args.failure_threshold)
    plugins: list[Plugin] = [FleetPlugin(cluster_controller=cluster_controller, splitter=splitter), InventoryPlugin()]
    if args.builtin_deployments:
        plugins.append(BuiltinDeployments())
    disabled = tuple(n for n in args.disable_admission_plugins.split(",") if n)
    run_hub(HubConfig(data_dir=Path(args.data_dir), port=args.port, disable_admission_plugins=disabled), plugins)


if __name__ == "__main__":
    main()
