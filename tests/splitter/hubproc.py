"""A hub with the splitter running in its process, as ``fleetplane start`` runs it once wired
(``Options(system_crds=[CLUSTERDAEMONSET_CRD, ...])`` and ``background=[splitter.background(...)]``).

    python tests/splitter/hubproc.py --data-dir DIR --port PORT [--builtin-deployments]
        [--cluster-controller] [--unhealthy-grace S] [--join-grace S] [--unschedulable-grace S]

Deployments are the CRD ``deployments.apps`` the Syncers import from the clusters (or that the
tests apply when there are no clusters); ``--builtin-deployments`` serves them as a built-in type
instead (kube's strategy: annotation changes bump generation).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fleetplane.fleet.splitter import CLUSTERDAEMONSET_CRD
from fleetplane.fleet.splitter import background as splitter_background
from fleetplane.logs import configure_logging
from fleetplane.server.serve import Options, run


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
    p.add_argument("--no-splitter", action="store_true")
    args = p.parse_args()
    configure_logging("debug", "console")
    extra = []
    if args.builtin_deployments:
        from fleetplane.apis import workload_types

        extra = [t for t in workload_types() if t.kind == "Deployment"]
    crds = [CLUSTERDAEMONSET_CRD]
    background = []
    if not args.no_splitter:
        background.append(splitter_background(unhealthy_grace=args.unhealthy_grace, join_grace=args.join_grace,
                                              unschedulable_grace=args.unschedulable_grace, limit_ttl=args.limit_ttl))
    if args.cluster_controller:
        from fleetplane.fleet.cluster_controller import background as cc_background
        from fleetplane.fleet.cluster_crd import CLUSTER_CRD

        crds.append(CLUSTER_CRD)
        background.append(cc_background(probe_interval=args.probe_interval, details_interval=1.0, request_timeout=2.0,
                                        syncer_poll_interval=1.0, syncer_backoff=(0.2, 2.0), status_rate=2.0,
                                        status_burst=20, failure_threshold=0.0))
    from fleetplane.fleet import identities
    from fleetplane.pipeline.authorization import bootstrap

    bootstrap.add(identities.cluster_roles(), identities.cluster_role_bindings())  # as `fleetplane start` does
    run(Options(data_dir=Path(args.data_dir), port=args.port, extra_types=extra, system_crds=crds), background=background)


if __name__ == "__main__":
    main()
