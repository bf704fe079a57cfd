"""``python -m fleetplane.fleet.splitter --kubeconfig HUB``: run the splitter on its own."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Sequence
from typing import Any

from .options import STANDALONE_FLAGS, SplitterOptions
from .run import LEASE_NAME, run


class _Term:
    """The splitter for one term (``run`` makes its own hub client)."""

    def __init__(self, kubeconfig: str, context: str | None, options: SplitterOptions) -> None:
        self.kubeconfig, self.context, self.options = kubeconfig, context, options

    def run(self) -> Awaitable[Any]:
        return run(self.kubeconfig, context=self.context, options=self.options)


def main(argv: Sequence[str] | None = None) -> int:
    from ...kube.entrypoint import controller_main

    return controller_main(
        argv, prog="python -m fleetplane.fleet.splitter", name="splitter",
        description="Run the Deployment Splitter (and ClusterDaemonSet controller) against a fleetplane hub, "
                    "over every logical cluster.",
        options=SplitterOptions, only=STANDALONE_FLAGS, lease=LEASE_NAME, log_format="console", use_uvloop=True,
        build=_Term)


if __name__ == "__main__":
    sys.exit(main())
