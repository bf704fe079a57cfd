"""``python -m fleetplane.fleet.splitter --kubeconfig HUB``: run the splitter on its own."""

from __future__ import annotations

import argparse
import os
import sys

from . import run
from .controller import SplitterOptions


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m fleetplane.fleet.splitter",
                                description="Run the Deployment Splitter (and ClusterDaemonSet controller) "
                                            "against a fleetplane hub, over every logical cluster.")
    p.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"), help="the hub's admin kubeconfig")
    p.add_argument("--context", help="kubeconfig context (default: current-context)")
    d = SplitterOptions()
    p.add_argument("--unhealthy-grace", type=float, default=d.unhealthy_grace, metavar="SECONDS",
                   help=f"how long a cluster may be unhealthy before its replicas move (default {d.unhealthy_grace:g})")
    p.add_argument("--join-grace", type=float, default=d.join_grace, metavar="SECONDS",
                   help=f"how long a cluster must be healthy before it gets new replicas (default {d.join_grace:g})")
    p.add_argument("--unschedulable-grace", type=float, default=d.unschedulable_grace, metavar="SECONDS",
                   help="how long a child's replicas may stay unavailable before they move "
                        f"(default {d.unschedulable_grace:g})")
    p.add_argument("--limit-ttl", type=float, default=d.limit_ttl, metavar="SECONDS",
                   help=f"how long such a cluster is avoided before it is tried again (default {d.limit_ttl:g})")
    p.add_argument("--workers", type=int, default=d.workers)
    p.add_argument("--profile-namespace", default=None, help="read ClusterProfiles of this namespace only")
    p.add_argument("--no-cluster-daemonsets", action="store_true", help="do not run the ClusterDaemonSet controller")
    p.add_argument("--leader-elect", action="store_true",
                   help="run only while holding the Lease kube-system/fleetplane-splitter in root")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.add_argument("--log-format", default="console", choices=["json", "console"])
    return p


def options_from(args: argparse.Namespace) -> SplitterOptions:
    return SplitterOptions(unhealthy_grace=args.unhealthy_grace, join_grace=args.join_grace,
                           unschedulable_grace=args.unschedulable_grace, limit_ttl=args.limit_ttl,
                           workers=args.workers, profile_namespace=args.profile_namespace,
                           cluster_daemonsets=not args.no_cluster_daemonsets)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from ...logs import configure_logging

    configure_logging(args.log_level, args.log_format)
    if not args.kubeconfig:
        print("splitter: error: --kubeconfig (or $KUBECONFIG) is required", file=sys.stderr)
        return 2
    try:
        import uvloop

        uvloop.run(run(args.kubeconfig, context=args.context, leader_elect=args.leader_elect,
                       options=options_from(args)))
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
