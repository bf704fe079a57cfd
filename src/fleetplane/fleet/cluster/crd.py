"""The Cluster CustomResourceDefinition (``clusters.cluster.example.dev``), after the kcp prototype.

The seed's shape is kept as is: a ``Cluster`` with ``spec.kubeconfig`` (a kubeconfig document,
as a string) is valid, and means "connect this cluster and sync to it in push mode". Everything
else is optional:

``spec``
  - ``kubeconfig``: how to reach and authenticate with the cluster (required in push mode).
    Credentials must be inline (``token``, ``client-certificate-data``/``client-key-data``,
    ``certificate-authority-data``): the controller never reads files named by a Cluster, and
    does not run exec or auth-provider plugins on a Cluster's behalf.
  - ``context``: the kubeconfig context to use (default: its current-context).
  - ``location``: where the cluster is; published as the ClusterProfile's ``location`` property.
  - ``publishLabels``: keys of this Cluster's labels to publish as ClusterProfile properties
    (property name = label key, value = label value).
  - ``resources``: the resources the Syncer syncs (``deployments.apps``, ``configmaps``, ...;
    default: the controller's list).
  - ``syncerMode``: ``Push`` (default: the Syncer runs inside the controller) or ``Pull`` (a
    ``fleetplane syncer`` process runs next to the cluster and reports through a Lease).
  - ``deletionPolicy``: what deleting the Cluster does to the objects synced into the cluster:
    ``Orphan`` (default: they keep running, unmanaged) or ``Delete`` (they are deleted first).

``status``
  - ``conditions``: ``Connected``, ``Healthy``, ``Synced``, ``Ready`` (the three together) and
    ``ProfilePublished`` (the KEP-4322 ClusterProfile and its credentials), each with a reason
    and a message saying exactly what is wrong;
  - ``version`` (the cluster's gitVersion), ``types`` (the resources it offers the hub),
    ``allocatable`` and ``nodes`` (capacity summed over its Nodes), ``clusterProfile`` (the name
    of the ClusterProfile kept for it), ``observedGeneration``.

The Cluster is **namespaced** (see docs/fleet.md): its ClusterProfile and the credentials Secret
live in the same logical cluster and namespace (KEP-4322 recommends namespaced profiles: the
namespace is the inventory and the unit of RBAC; the kubeconfig is a credential, so namespace
RBAC matters for Clusters too). The seed's example, which has no namespace, lands in the
context's namespace (``default``). Because objects are assigned to a cluster by the label
``kcp.dev/cluster: <name>`` within a logical cluster, a Cluster's name must be unique in its
logical cluster; the controller reports a second one with ``Ready=False, reason DuplicateName``.

:data:`CLUSTER_CRD` is the document; the hub serves it in every logical cluster as a system CRD.
``crd_yaml()`` renders it for ``kubectl apply`` on other hubs.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml

GROUP = "cluster.example.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "Cluster"
LIST_KIND = "ClusterList"
PLURAL = "clusters"
SINGULAR = "cluster"
CRD_NAME = f"{PLURAL}.{GROUP}"

#: Held by every Cluster the controller manages; removed once the cleanup is done.
FINALIZER = f"{GROUP}/cleanup"

#: The seed's assignment label: objects on the hub labelled ``kcp.dev/cluster: <name>`` are for
#: the Cluster ``<name>`` of the same logical cluster.
LABEL_SYNC = "kcp.dev/cluster"
#: On the ClusterProfile and Secret the controller keeps for a Cluster: the Cluster's name.
LABEL_CLUSTER = f"{GROUP}/cluster"

MODE_PUSH, MODE_PULL = "Push", "Pull"
#: On the pull-mode syncer's Lease: its latest ClusterReport and SyncerHealth (JSON), and the uid
#: of the Cluster whose deletion it has carried out.
ANNOTATION_REPORT = f"{GROUP}/report"
ANNOTATION_SYNCER_HEALTH = f"{GROUP}/syncer-health"
ANNOTATION_STOPPED = f"{GROUP}/stopped"
POLICY_ORPHAN, POLICY_DELETE = "Orphan", "Delete"

# Condition types.
CONNECTED = "Connected"
HEALTHY = "Healthy"
SYNCED = "Synced"
READY = "Ready"
PROFILE_PUBLISHED = "ProfilePublished"
CONDITION_TYPES = (CONNECTED, HEALTHY, SYNCED, PROFILE_PUBLISHED, READY)

_CONDITION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "metav1.Condition.",
    "required": ["type", "status", "lastTransitionTime", "reason", "message"],
    "properties": {
        "type": {"type": "string", "maxLength": 316},
        "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
        "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
        "lastTransitionTime": {"type": "string", "format": "date-time"},
        "reason": {"type": "string", "maxLength": 1024},
        "message": {"type": "string", "maxLength": 32768},
    },
}

_SPEC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "How to reach the cluster and what to do with it.",
    "properties": {
        "kubeconfig": {
            "type": "string",
            "description": "A kubeconfig (YAML or JSON) to locate and authenticate with the cluster. Credentials "
                           "must be inline; file references, exec and auth-provider users are refused. Required "
                           "unless syncerMode is Pull.",
        },
        "context": {"type": "string", "description": "The kubeconfig context to use (default: current-context)."},
        "location": {"type": "string", "maxLength": 1024,
                     "description": "Where the cluster is; published as the ClusterProfile property `location`."},
        "publishLabels": {
            "type": "array", "x-kubernetes-list-type": "set",
            "description": "Keys of this Cluster's labels to publish as ClusterProfile properties.",
            "items": {"type": "string", "maxLength": 253},
        },
        "resources": {
            "type": "array", "x-kubernetes-list-type": "set",
            "description": "Resources to sync, as `<plural>[.<group>]` (deployments.apps, configmaps). "
                           "Default: the controller's list.",
            "items": {"type": "string", "maxLength": 317},
        },
        "syncerMode": {
            "type": "string", "enum": [MODE_PUSH, MODE_PULL], "default": MODE_PUSH,
            "description": "Push: the Syncer runs in the controller. Pull: `fleetplane syncer` runs next to the "
                           "cluster (see `fleetplane syncer manifests`) and reports through a Lease.",
        },
        "deletionPolicy": {
            "type": "string", "enum": [POLICY_ORPHAN, POLICY_DELETE], "default": POLICY_ORPHAN,
            "description": "What deleting this Cluster does to the objects synced into the cluster: Orphan leaves "
                           "them running, Delete deletes them.",
        },
    },
    "x-kubernetes-validations": [
        {"rule": "self.syncerMode == 'Pull' || (has(self.kubeconfig) && self.kubeconfig != '')",
         "message": "spec.kubeconfig is required unless spec.syncerMode is Pull"},
    ],
}

_TYPE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "A resource the cluster offers the hub.",
    "properties": {
        "group": {"type": "string"},
        "version": {"type": "string"},
        "resource": {"type": "string"},
        "kind": {"type": "string"},
        "state": {"type": "string", "description": "Synced, Pending or Failed."},
        "message": {"type": "string"},
    },
}

_STATUS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "observedGeneration": {"type": "integer", "format": "int64"},
        "conditions": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
                       "items": _CONDITION_SCHEMA},
        "version": {"type": "string", "description": "The cluster's Kubernetes version (gitVersion)."},
        "types": {"type": "array", "items": _TYPE_SCHEMA,
                  "description": "The resources the cluster offers (what its Syncer syncs)."},
        "allocatable": {"type": "object", "additionalProperties": {"type": "string"},
                        "description": "Allocatable cpu (cores), memory (bytes) and pods, summed over Nodes."},
        "nodes": {"type": "integer", "description": "Number of Nodes."},
        "clusterProfile": {"type": "string", "description": "The ClusterProfile kept for this Cluster."},
    },
}

#: The ``clusters.cluster.example.dev`` CRD (apiextensions.k8s.io/v1) as a dict.
CLUSTER_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": CRD_NAME, "labels": {"app.kubernetes.io/part-of": "fleetplane"}},
    "spec": {
        "group": GROUP,
        "names": {"kind": KIND, "listKind": LIST_KIND, "plural": PLURAL, "singular": SINGULAR,
                  "categories": ["fleet"]},
        "scope": "Namespaced",
        "versions": [{
            "name": VERSION,
            "served": True,
            "storage": True,
            "subresources": {"status": {}},
            "additionalPrinterColumns": [
                {"name": "Location", "type": "string", "jsonPath": ".spec.location"},
                {"name": "Connected", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Connected")].status'},
                {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
                {"name": "Version", "type": "string", "jsonPath": ".status.version"},
                {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
            ],
            "schema": {"openAPIV3Schema": {
                "type": "object",
                "description": "A physical cluster connected to the hub (after the kcp prototype).",
                "required": ["spec"],
                "properties": {
                    "apiVersion": {"type": "string"},
                    "kind": {"type": "string"},
                    "metadata": {"type": "object"},
                    "spec": _SPEC_SCHEMA,
                    "status": _STATUS_SCHEMA,
                },
            }},
        }],
    },
}


def cluster_crd() -> dict[str, Any]:
    """A fresh copy of the CRD document, safe to modify."""
    return copy.deepcopy(CLUSTER_CRD)


def crd_yaml() -> str:
    """The CRD as YAML, for ``kubectl apply -f -`` on hubs that do not serve it built in."""
    return yaml.safe_dump(CLUSTER_CRD, sort_keys=False)
