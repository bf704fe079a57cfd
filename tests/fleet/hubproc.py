"""A hub with the Cluster controller running in its process, exactly as ``fleetplane start`` runs
it once wired (``Options(system_crds=[CLUSTER_CRD])`` and ``background=[...]``). The fixtures use
``fleetplane start`` itself when it knows ``--cluster-probe-interval``; this script otherwise.

    python tests/fleet/hubproc.py --data-dir DIR --port PORT [--probe-interval S] [--details-interval S]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fleetplane.fleet.cluster_controller import background
from fleetplane.fleet.cluster_crd import CLUSTER_CRD
from fleetplane.logs import configure_logging
from fleetplane.server.serve import Options, run


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--data-dir", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--probe-interval", type=float, default=0.3)
    p.add_argument("--details-interval", type=float, default=1.0)
    p.add_argument("--syncer-poll-interval", type=float, default=1.0)
    args = p.parse_args()
    configure_logging("info", "console")
    opts = Options(data_dir=Path(args.data_dir), port=args.port, system_crds=[CLUSTER_CRD])
    run(opts, background=[background(probe_interval=args.probe_interval, details_interval=args.details_interval,
                                     request_timeout=2.0, syncer_poll_interval=args.syncer_poll_interval,
                                     syncer_backoff=(0.2, 2.0))])


if __name__ == "__main__":
    main()
