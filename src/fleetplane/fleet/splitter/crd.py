"""The ClusterDaemonSet CRD lives in :mod:`fleetplane.fleet.clusterdaemonset_crd` (importable
without the splitter and its client libraries, for ``fleetplane start``); re-exported here."""

from ..clusterdaemonset_crd import *  # noqa: F403
from ..clusterdaemonset_crd import __all__  # noqa: F401
