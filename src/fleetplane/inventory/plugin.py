"""What the inventory adds to a hub: the ClusterProfile API (KEP-4322) in every logical cluster,
with the KEP's rules that the schema cannot express as an admission check, and the converter
between its versions (v1alpha1 stored, v1alpha2 served)."""

from __future__ import annotations

from dataclasses import dataclass

from ..plugin import Contributions
from .admission import admit
from .constants import GROUP, KIND
from .conversion import convert
from .crd import CLUSTERPROFILE_CRD


@dataclass
class InventoryPlugin:
    name: str = "inventory"

    def contribute(self, hub: Contributions) -> None:
        hub.crds.append(CLUSTERPROFILE_CRD)
        hub.admission[(GROUP, KIND)] = admit
        hub.converters[(GROUP, KIND)] = convert  # v1alpha1 (stored) <-> v1alpha2
