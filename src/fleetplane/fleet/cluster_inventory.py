"""Former import path of :mod:`fleetplane.fleet.cluster.profile`."""

from .cluster.profile import *  # noqa: F403
