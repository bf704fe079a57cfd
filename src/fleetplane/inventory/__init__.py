"""fleetplane.inventory: the KEP-4322 ClusterProfile API, its model and helpers.

- :data:`CLUSTERPROFILE_CRD` (``crd``): the ``clusterprofiles.multicluster.x-k8s.io`` CRD the hub
  serves in every logical cluster (also shipped as ``clusterprofile-crd.yaml``): v1alpha1 stored,
  v1alpha2 served beside it;
- :func:`convert_profile` (``conversion``): v1alpha1 <-> v1alpha2, the hub's in-process converter;
- :func:`admit` (``admission``): the KEP's rules the schema cannot express, as hub admission;
- :class:`ClusterProfile` and friends (``model``): typed, exactly round-tripping dataclasses with
  condition, property and access-provider helpers;
- :func:`select` (``selection``): choose clusters by labels, properties, ClusterSet, CRDs;
- :class:`StatusWriter` (``status``): status updates within the KEP's budget (1/30 s, burst 10);
- :func:`find_credentials` (``credentials``): credential material a profile must not carry;
- ``conformance``: the rules ``fleetplane inventory check`` reports.

See docs/inventory.md.
"""

from __future__ import annotations

from .admission import admit, validate
from .constants import (
    API_VERSION,
    API_VERSION_V1ALPHA2,
    CONDITION_CONTROL_PLANE_HEALTHY,
    CONDITION_JOINED,
    CRD_NAME,
    GROUP,
    KIND,
    LABEL_CLUSTER_MANAGER,
    LABEL_CLUSTERSET,
    LABEL_CLUSTERSET_KEP,
    LABEL_INVENTORY_MEMBER_ID,
    PLURAL,
    VERSION,
    VERSION_V1ALPHA2,
)
from .conversion import V1ALPHA1_FIELDS_ANNOTATION
from .conversion import convert as convert_profile
from .crd import CLUSTERPROFILE_CRD, clusterprofile_crd, crd_yaml
from .credentials import Finding, find_credentials
from .model import (
    AccessProvider,
    Cluster,
    ClusterManager,
    ClusterProfile,
    ClusterProfileSpec,
    ClusterProfileStatus,
    ClusterVersion,
    Condition,
    NamedExtension,
    ProfileFormatError,
    Property,
    find_condition,
    is_condition_true,
    remove_condition,
    set_condition,
)
from .selection import ProfileSelector, PropertyRequirement, parse_property_selector, select
from .status import FakeClock, StatusWriter, SystemClock, TokenBucket, WriteError

__all__ = [
    "API_VERSION",
    "API_VERSION_V1ALPHA2",
    "CLUSTERPROFILE_CRD",
    "CONDITION_CONTROL_PLANE_HEALTHY",
    "CONDITION_JOINED",
    "CRD_NAME",
    "GROUP",
    "KIND",
    "LABEL_CLUSTERSET",
    "LABEL_CLUSTERSET_KEP",
    "LABEL_CLUSTER_MANAGER",
    "LABEL_INVENTORY_MEMBER_ID",
    "PLURAL",
    "V1ALPHA1_FIELDS_ANNOTATION",
    "VERSION",
    "VERSION_V1ALPHA2",
    "AccessProvider",
    "Cluster",
    "ClusterManager",
    "ClusterProfile",
    "ClusterProfileSpec",
    "ClusterProfileStatus",
    "ClusterVersion",
    "Condition",
    "FakeClock",
    "Finding",
    "NamedExtension",
    "ProfileFormatError",
    "ProfileSelector",
    "Property",
    "PropertyRequirement",
    "StatusWriter",
    "SystemClock",
    "TokenBucket",
    "WriteError",
    "admit",
    "clusterprofile_crd",
    "convert_profile",
    "crd_yaml",
    "find_condition",
    "find_credentials",
    "is_condition_true",
    "parse_property_selector",
    "remove_condition",
    "select",
    "set_condition",
    "validate",
]
