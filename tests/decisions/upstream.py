"""The upstream PlacementDecision CRD, written down from reading it: kubernetes-sigs/cluster-inventory-api
``config/crd/bases/multicluster.x-k8s.io_placementdecisions.yaml`` (controller-gen v0.20.0; main @
8375ac2, 2026-05-18, unchanged since the API was added in 98b5221) and the Go types it is generated
from, ``apis/v1alpha1/placementdecision_types.go`` (``Decisions`` ``+kubebuilder:validation:MinItems=0``,
``MaxItems=100``, ``+required``; ``SchedulerName`` optional; ``ClusterProfileReference.Name`` required,
``Namespace`` optional; ``ClusterDecision.ClusterProfileRef`` required, ``Reason`` optional).

Only what the schema says, field by field, as the path of each field -> its keywords; the tests
compare what the hub serves against it. Not copied from fleetplane's own YAML."""

from __future__ import annotations

GROUP = "multicluster.x-k8s.io"
NAMES = {"kind": "PlacementDecision", "listKind": "PlacementDecisionList", "plural": "placementdecisions",
         "singular": "placementdecision"}
SCOPE = "Namespaced"
#: one version, served and stored; no subresources, printer columns, short names or categories
VERSION = {"name": "v1alpha1", "served": True, "storage": True}

_API_VERSION = ("APIVersion defines the versioned schema of this representation of an object.\n"
                "Servers should convert recognized schemas to the latest internal value, and\n"
                "may reject unrecognized values.\n"
                "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources")
_KIND = ("Kind is a string value representing the REST resource this object represents.\n"
         "Servers may infer this from the endpoint the client submits requests to.\n"
         "Cannot be updated.\n"
         "In CamelCase.\n"
         "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds")

#: field path ("" is the object) -> {type, required, description, minItems, maxItems}
FIELDS: dict[str, dict] = {
    "": {"type": "object", "required": ["decisions"],
         "description": (
             "PlacementDecision publishes the set of clusters chosen by a scheduler at a point in time.\n"
             "It is a data-only resource that acts as the interface between schedulers and consumers.\n"
             "Schedulers write decisions using this format; consumers read from it.\n\n"
             "Following the EndpointSlice convention, a single scheduling decision can fan out to N\n"
             "PlacementDecision slices, each limited to 100 clusters. To correlate slices, producers\n"
             "MUST set the same multicluster.x-k8s.io/decision-key label on all slices when more than\n"
             "one slice exists.")},
    "apiVersion": {"type": "string", "description": _API_VERSION},
    "kind": {"type": "string", "description": _KIND},
    "metadata": {"type": "object"},
    "decisions": {"type": "array", "minItems": 0, "maxItems": 100,
                  "description": ("Decisions is the list of clusters chosen for this placement decision.\n"
                                  "Up to 100 ClusterDecisions per object (slice) to stay well below the etcd limit.")},
    "decisions[]": {"type": "object", "required": ["clusterProfileRef"],
                    "description": "ClusterDecision references a target ClusterProfile to apply workloads to."},
    "decisions[].clusterProfileRef": {"type": "object", "required": ["name"],
                                      "description": ("ClusterProfileRef is a reference to the target ClusterProfile.\n"
                                                      "The reference must point to a valid ClusterProfile in the fleet.")},
    "decisions[].clusterProfileRef.name": {"type": "string", "description": "Name is the name of the ClusterProfile."},
    "decisions[].clusterProfileRef.namespace": {
        "type": "string", "description": ("Namespace is the namespace of the ClusterProfile.\n"
                                          "If empty, the PlacementDecision's namespace is used.")},
    "decisions[].reason": {"type": "string",
                           "description": ("Reason is an optional explanation of why this cluster was chosen.\n"
                                           "This can be useful for debugging and auditing placement decisions.")},
    "schedulerName": {"type": "string",
                      "description": ("SchedulerName is the name of the scheduler that created this decision.\n"
                                      "This is optional and can be used for debugging and auditing purposes.")},
}

#: the label keys upstream's Go constants name (DecisionKeyLabel, DecisionIndexLabel, PlacementKeyLabel)
LABELS = ("multicluster.x-k8s.io/decision-key", "multicluster.x-k8s.io/decision-index",
          "multicluster.x-k8s.io/placement-key")
