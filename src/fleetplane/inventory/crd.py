"""The ClusterProfile CustomResourceDefinition (``clusterprofiles.multicluster.x-k8s.io``).

The YAML next to this module is the source of truth, so users can ``kubectl apply`` the very
same document to any other hub; :data:`CLUSTERPROFILE_CRD` is that document parsed.
"""

from __future__ import annotations

import copy
from importlib import resources
from typing import Any

import yaml

CRD_FILE = "clusterprofile-crd.yaml"


def crd_yaml() -> str:
    """The CRD as YAML text (what ``fleetplane`` ships for ``kubectl apply -f``)."""
    return resources.files(__package__).joinpath(CRD_FILE).read_text(encoding="utf-8")


def clusterprofile_crd() -> dict[str, Any]:
    """A fresh copy of the CRD document, safe to modify."""
    return copy.deepcopy(CLUSTERPROFILE_CRD)


#: The ``clusterprofiles.multicluster.x-k8s.io`` CRD (apiextensions.k8s.io/v1) as a dict.
CLUSTERPROFILE_CRD: dict[str, Any] = yaml.safe_load(crd_yaml())
