"""Leader election lives in :mod:`fleetplane.kube.leaderelection` (client-go's
``tools/leaderelection``); this name stays for the controllers and tools that import it here."""

from ..kube.leaderelection import (
    IN_HUB_TIMING,
    LeaderElectionConfig,
    LeaderElector,
    LeadershipLost,
    default_identity,
    run_as_leader,
)

__all__ = ["IN_HUB_TIMING", "LeaderElectionConfig", "LeaderElector", "LeadershipLost", "default_identity",
           "run_as_leader"]
