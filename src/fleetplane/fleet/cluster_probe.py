"""Former import path of :mod:`fleetplane.fleet.cluster.probe`."""

from .cluster.probe import *  # noqa: F403
