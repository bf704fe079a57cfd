"""The ClusterDaemonSet CRD (``clusterdaemonsets.fleet.fleetplane.io``, v1alpha1, namespaced).

"A ClusterDaemonSet CRD and controller can ensure that at least one replica of a Pod is running
on every available Cluster" (the 2021 prototype's notes). The hub serves it in every logical
cluster as a system CRD (the fleet plugin contributes it: :mod:`fleetplane.fleet.plugin`), like ClusterProfile;
other hubs take ``kubectl apply -f`` of :func:`crd_yaml`.

::

    apiVersion: fleet.fleetplane.io/v1alpha1
    kind: ClusterDaemonSet
    metadata: {name: node-agent, namespace: default}
    spec:
      replicasPerCluster: 1          # at least 1 (default 1)
      selector: {matchLabels: {app: node-agent}}
      template: {metadata: {labels: {app: node-agent}}, spec: {containers: [...]}}
      placement:                     # optional: the Deployment policy's fields (required,
        required: {labels: env=prod} # tolerations, maxReplicasPerCluster, ...); strategy Duplicate
      # optional, copied to every child Deployment: strategy, minReadySeconds,
      # revisionHistoryLimit, progressDeadlineSeconds, paused
    status:
      observedGeneration, desiredNumberClusters, numberClustersAvailable, replicas, readyReplicas,
      availableReplicas, updatedReplicas, clusters[] {name, replicas, readyReplicas,
      availableReplicas, available, note}, conditions[] (Available, Placement)
"""

from __future__ import annotations

import copy
from typing import Any

import yaml

__all__ = ["CDS_GROUP", "CDS_KIND", "CDS_PLURAL", "CDS_VERSION", "CLUSTERDAEMONSET_CRD", "clusterdaemonset_crd",
           "crd_yaml"]

CDS_GROUP = "fleet.fleetplane.io"
CDS_VERSION = "v1alpha1"
CDS_KIND = "ClusterDaemonSet"
CDS_PLURAL = "clusterdaemonsets"

_CONDITION = {
    "type": "object", "required": ["type", "status"],
    "properties": {"type": {"type": "string"}, "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
                   "reason": {"type": "string"}, "message": {"type": "string"},
                   "lastUpdateTime": {"type": "string", "format": "date-time"},
                   "lastTransitionTime": {"type": "string", "format": "date-time"}},
}

CLUSTERDAEMONSET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{CDS_PLURAL}.{CDS_GROUP}"},
    "spec": {
        "group": CDS_GROUP,
        "scope": "Namespaced",
        "names": {"plural": CDS_PLURAL, "singular": "clusterdaemonset", "kind": CDS_KIND,
                  "listKind": f"{CDS_KIND}List", "shortNames": ["cds"], "categories": ["fleet"]},
        "versions": [{
            "name": CDS_VERSION, "served": True, "storage": True,
            "subresources": {"status": {}},
            "additionalPrinterColumns": [
                {"name": "Desired", "type": "integer", "jsonPath": ".status.desiredNumberClusters",
                 "description": "clusters that should run it"},
                {"name": "Available", "type": "integer", "jsonPath": ".status.numberClustersAvailable",
                 "description": "clusters where it is available"},
                {"name": "Replicas", "type": "integer", "jsonPath": ".status.readyReplicas",
                 "description": "ready replicas over every cluster"},
                {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
            ],
            "schema": {"openAPIV3Schema": {
                "type": "object",
                "required": ["spec"],
                "properties": {
                    "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
                    "spec": {
                        "type": "object", "required": ["selector", "template"],
                        "properties": {
                            "replicasPerCluster": {"type": "integer", "minimum": 1, "default": 1},
                            "selector": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                            "template": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                            "placement": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                            "strategy": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                            "minReadySeconds": {"type": "integer", "minimum": 0},
                            "revisionHistoryLimit": {"type": "integer", "minimum": 0},
                            "progressDeadlineSeconds": {"type": "integer", "minimum": 1},
                            "paused": {"type": "boolean"},
                        },
                    },
                    "status": {
                        "type": "object",
                        "properties": {
                            "observedGeneration": {"type": "integer"},
                            "desiredNumberClusters": {"type": "integer"},
                            "numberClustersAvailable": {"type": "integer"},
                            "replicas": {"type": "integer"}, "readyReplicas": {"type": "integer"},
                            "availableReplicas": {"type": "integer"}, "updatedReplicas": {"type": "integer"},
                            "clusters": {"type": "array", "items": {
                                "type": "object",
                                "properties": {"name": {"type": "string"}, "replicas": {"type": "integer"},
                                               "readyReplicas": {"type": "integer"},
                                               "availableReplicas": {"type": "integer"},
                                               "available": {"type": "boolean"}, "note": {"type": "string"}}}},
                            "conditions": {"type": "array", "items": _CONDITION,
                                           "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
                        },
                    },
                },
            }},
        }],
    },
}


def clusterdaemonset_crd() -> dict[str, Any]:
    return copy.deepcopy(CLUSTERDAEMONSET_CRD)


def crd_yaml() -> str:
    return yaml.safe_dump(CLUSTERDAEMONSET_CRD, sort_keys=False)
