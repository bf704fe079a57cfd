"""``python -m fleetplane.fleet.cluster --kubeconfig HUB``: the Cluster controller on its own."""

import sys

from .run import main

sys.exit(main())
