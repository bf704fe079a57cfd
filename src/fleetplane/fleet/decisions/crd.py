"""The PlacementDecision CustomResourceDefinition (``placementdecisions.multicluster.x-k8s.io``).

The YAML next to this module is the source of truth (upstream's schema, see its header), so
users can ``kubectl apply`` the same document to another hub; :data:`PLACEMENTDECISION_CRD` is
that document parsed. Cheap to import (``fleetplane start`` does, to serve it).
"""

from __future__ import annotations

import copy
from importlib import resources
from typing import Any

import yaml

__all__ = ["CRD_FILE", "GROUP", "KIND", "PLACEMENTDECISION_CRD", "PLURAL", "VERSION", "crd_yaml",
           "placementdecision_crd"]

CRD_FILE = "placementdecision-crd.yaml"
GROUP = "multicluster.x-k8s.io"
VERSION = "v1alpha1"
KIND = "PlacementDecision"
PLURAL = "placementdecisions"


def crd_yaml() -> str:
    """The CRD as YAML text (what fleetplane ships for ``kubectl apply -f``)."""
    return resources.files(__package__).joinpath(CRD_FILE).read_text(encoding="utf-8")


def placementdecision_crd() -> dict[str, Any]:
    """A fresh copy of the CRD document, safe to modify."""
    return copy.deepcopy(PLACEMENTDECISION_CRD)


#: the ``placementdecisions.multicluster.x-k8s.io`` CRD (apiextensions.k8s.io/v1) as a dict
PLACEMENTDECISION_CRD: dict[str, Any] = yaml.safe_load(crd_yaml())
