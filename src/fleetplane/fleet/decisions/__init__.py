"""The decision publisher: standard PlacementDecisions (``multicluster.x-k8s.io/v1alpha1``,
KEP-5313) for every workload the splitter has split, so a consumer (Argo CD, Kueue, any
KEP-5313 reader) learns where it runs without reading fleetplane's own annotations.

- :mod:`.crd`: the PlacementDecision CRD, upstream's schema (the hub serves it in every logical cluster);
- :mod:`.publish`: what a parent's PlacementDecisions should be (pure: no I/O);
- :mod:`.controller`: :class:`~.controller.DecisionPublisher`, informers over ``/clusters/*``;
- :mod:`.run`: its entry point in ``fleetplane start`` (under leader election).

Only the names below are defined here: ``fleetplane start`` imports this package before the hub
runs, without the client libraries. See docs/placement.md#placementdecisions.
"""

from __future__ import annotations

__all__ = ["ANNOTATION_REPLICAS", "LABEL_DECISION_INDEX", "LABEL_DECISION_KEY", "LABEL_DECISION_REVISION",
           "LABEL_MANAGED_BY", "LABEL_PLACEMENT_KEY", "MANAGED_BY", "MAX_DECISIONS", "SCHEDULER_NAME"]

#: upstream's ``PlacementKeyLabel``: links the slices to the workload. Its value is the parent's own
#: label of this key when it has one (KEP-5313: the key "is applied on the workload"), else its name
LABEL_PLACEMENT_KEY = "multicluster.x-k8s.io/placement-key"
#: upstream's ``DecisionKeyLabel``: the same on every slice of one decision
LABEL_DECISION_KEY = "multicluster.x-k8s.io/decision-key"
#: upstream's ``DecisionIndexLabel``: the slice's position, from 0
LABEL_DECISION_INDEX = "multicluster.x-k8s.io/decision-index"
#: KEP-5313's "Consumer Discovery": a value common to the slices of one version of the decision, so
#: a consumer does not assemble a half-updated set (no upstream Go constant)
LABEL_DECISION_REVISION = "multicluster.x-k8s.io/decision-revision"
#: which PlacementDecisions the publisher keeps (as EndpointSlices' ``endpointslice.kubernetes.io/managed-by``)
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY = "fleetplane-placement-decisions"
#: fleetplane's addition: the replicas each cluster of this slice runs, JSON ``{"<cluster>": n}``
ANNOTATION_REPLICAS = "placement.fleetplane.io/replicas"
#: ``schedulerName`` of every PlacementDecision fleetplane writes
SCHEDULER_NAME = "fleetplane"
#: upstream's ``+kubebuilder:validation:MaxItems=100`` on ``decisions``
MAX_DECISIONS = 100
