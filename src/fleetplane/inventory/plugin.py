"""What the inventory adds to a hub: the ClusterProfile API (KEP-4322) in every logical cluster,
with the KEP's rules that the schema cannot express as an admission check."""

from __future__ import annotations

from dataclasses import dataclass

from ..plugin import Contributions
from .admission import admit
from .constants import GROUP, KIND
from .crd import CLUSTERPROFILE_CRD


@dataclass
class InventoryPlugin:
    name: str = "inventory"

    def contribute(self, hub: Contributions) -> None:
        hub.crds.append(CLUSTERPROFILE_CRD)
        hub.admission[(GROUP, KIND)] = admit
