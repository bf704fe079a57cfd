"""Former import path of :mod:`fleetplane.fleet.cluster.crd`."""

from .cluster.crd import *  # noqa: F403
