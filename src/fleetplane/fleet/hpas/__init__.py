"""The hub's HorizontalPodAutoscaler controller: an HPA on a split Deployment becomes one HPA per
cluster running a child of it (see :mod:`.controller`)."""

#: on a parent Deployment: the hub HPA scaling it. The splitter then keeps the replicas its
#: children have (the clusters' HPAs own them) and only gives new clusters a share.
ANNOTATION_HPA = "autoscaling.fleetplane.io/hpa"
