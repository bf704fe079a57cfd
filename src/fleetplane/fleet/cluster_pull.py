"""Former import path of :mod:`fleetplane.fleet.cluster.pull`."""

from .cluster.pull import *  # noqa: F403
