"""Names KEP-4322 (and the upstream cluster-inventory-api code) give to labels, conditions and properties."""

from __future__ import annotations

GROUP = "multicluster.x-k8s.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
#: served beside v1alpha1 (the storage version), converted by :mod:`.conversion`
VERSION_V1ALPHA2 = "v1alpha2"
API_VERSION_V1ALPHA2 = f"{GROUP}/{VERSION_V1ALPHA2}"
KIND = "ClusterProfile"
LIST_KIND = "ClusterProfileList"
PLURAL = "clusterprofiles"
SINGULAR = "clusterprofile"
CRD_NAME = f"{PLURAL}.{GROUP}"

#: On every ClusterProfile; its value MUST equal ``spec.clusterManager.name`` (KEP-4322).
LABEL_CLUSTER_MANAGER = "x-k8s.io/cluster-manager"

#: On a namespace whose ClusterProfiles form a ClusterSet; the value is the ClusterSet's name.
#: Upstream code (``LabelClusterSetKey`` in cluster-inventory-api) uses this key ...
LABEL_CLUSTERSET = "multicluster.x-k8s.io/clusterset"
#: ... while the KEP text spells it this way. fleetplane accepts both (see docs/inventory.md).
LABEL_CLUSTERSET_KEP = "clusterset.multicluster.x-k8s.io"
CLUSTERSET_LABELS = (LABEL_CLUSTERSET, LABEL_CLUSTERSET_KEP)

#: v1alpha2's ``LabelInventoryMemberIDKey``: links the profiles (of different managers) that represent
#: one member cluster; non-empty when set (admission checks it in both versions).
LABEL_INVENTORY_MEMBER_ID = "multicluster.x-k8s.io/inventory-member-id"

#: Predefined condition types (KEP-4322). Only ControlPlaneHealthy has an upstream constant.
CONDITION_CONTROL_PLANE_HEALTHY = "ControlPlaneHealthy"
CONDITION_JOINED = "Joined"

#: Well-known property names (KEP-2149 ClusterProperty, used by KEP-4322's examples).
PROPERTY_CLUSTER_ID = "id.k8s.io"
PROPERTY_CLUSTER_ID_LEGACY = "cluster.clusterset.k8s.io"
PROPERTY_CLUSTERSET = "clusterset.k8s.io"
#: Location: the KEP's example uses ``location``; the SIG's site docs use the topology labels' names.
PROPERTY_LOCATION = "location"
PROPERTY_REGION = "topology.kubernetes.io/region"
PROPERTY_ZONE = "topology.kubernetes.io/zone"
#: fleetplane's convention for "this CRD is installed" (the KEP names no such property):
#: one property per CRD, ``crd.fleetplane.io/<crd name>``, whose value lists its served versions.
PROPERTY_CRD_PREFIX = "crd.fleetplane.io/"

#: Reserved extension names inside ``status.accessProviders[].cluster.extensions``.
EXTENSION_EXEC = "client.authentication.k8s.io/exec"
EXTENSION_ADDITIONAL_ARGS = "clusterprofiles.multicluster.x-k8s.io/exec/additional-args"
EXTENSION_ADDITIONAL_ENVS = "clusterprofiles.multicluster.x-k8s.io/exec/additional-envs"

#: KEP-4322 "Scalability implication": per profile, QPS below 1/30 and a burst of 10.
STATUS_UPDATE_RATE = 1 / 30
STATUS_UPDATE_BURST = 10
