"""``python -m fleetplane.fleet.cronjobs --kubeconfig HUB``: run the fleet-wide CronJob controller on its own."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Sequence
from typing import Any

from .options import STANDALONE_FLAGS, CronJobOptions
from .run import LEASE_NAME, run


class _Term:
    """The CronJob controller for one term (``run`` makes its own hub client)."""

    def __init__(self, kubeconfig: str, context: str | None, options: CronJobOptions) -> None:
        self.kubeconfig, self.context, self.options = kubeconfig, context, options

    def run(self) -> Awaitable[Any]:
        return run(self.kubeconfig, context=self.context, options=self.options)


def main(argv: Sequence[str] | None = None) -> int:
    from ...kube.entrypoint import controller_main

    return controller_main(
        argv, prog="python -m fleetplane.fleet.cronjobs", name="cronjob-controller",
        description="Run the fleet-wide CronJob controller against a fleetplane hub, over every logical cluster.",
        options=CronJobOptions, only=STANDALONE_FLAGS, lease=LEASE_NAME, log_format="console", use_uvloop=True,
        build=_Term)


if __name__ == "__main__":
    sys.exit(main())
