"""Labels, annotations and finalizers the syncer reads and writes."""

from __future__ import annotations

import hashlib

from ...apimachinery.validation import QUALIFIED_NAME, is_label_value

#: on hub objects: the physical cluster an object is for (the 2021 prototype's contract)
CLUSTER_LABEL = "kcp.dev/cluster"
#: the hub adds it to every object; never copied downstream
KCP_CLUSTER_ANNOTATION = "kcp.io/cluster"

PREFIX = "fleetplane.io/"

#: synced when the Cluster does not say otherwise ("*" = every namespaced, watchable type). Only
#: the ones the cluster serves are synced: a type of this set the cluster lacks is a note, not an
#: error (a type named beyond it that the cluster lacks is a TypeImportFailed error)
DEFAULT_RESOURCES: tuple[str, ...] = (
    "deployments.apps", "configmaps", "secrets", "serviceaccounts", "services", "persistentvolumeclaims",
    "daemonsets.apps", "statefulsets.apps", "jobs.batch", "cronjobs.batch", "horizontalpodautoscalers.autoscaling")
#: downstream: objects (and namespaces) the syncer manages carry this label; the value is the
#: hub logical cluster, ':' written as '.' (a label value cannot hold ':'; a cluster name has no '.')
MANAGED_LABEL = PREFIX + "logical-cluster"
#: downstream: the hub logical cluster, verbatim
LOGICAL_CLUSTER_ANNOTATION = PREFIX + "logical-cluster"
#: downstream: the physical cluster's name as the hub knows it
CLUSTER_NAME_ANNOTATION = PREFIX + "cluster"
#: downstream: hash of what the syncer last applied (the hub's intent, retained fields excluded)
SPEC_HASH_ANNOTATION = PREFIX + "spec-hash"
#: downstream namespaces the syncer created only to hold objects ("true"): never deleted by it
AUTO_NAMESPACE_ANNOTATION = PREFIX + "auto-created"

#: hub objects: the sync state, JSON {"cluster", "state", "reason", "message", "time"}
SYNC_STATE_ANNOTATION = PREFIX + "sync-state"
#: hub objects: "true" lets the syncer take over a pre-existing, unmanaged downstream object
ADOPT_ANNOTATION = PREFIX + "adopt"
#: hub objects: comma-separated field paths kept as the cluster has them (retain rule "annotation")
RETAIN_ANNOTATION = PREFIX + "retain"
#: hub objects: the name the object has in its cluster (same namespace), when it is not its hub
#: name: a Service or StatefulSet split over clusters keeps the parent's name in every cluster
#: while the hub holds one child per cluster, ``<name>--<cluster>`` (set by the splitter)
DOWNSTREAM_NAME_ANNOTATION = PREFIX + "downstream-name"
#: downstream: the hub object's name, on a cluster object synced under a downstream name
UPSTREAM_NAME_ANNOTATION = PREFIX + "upstream-name"

#: hub CRDs imported from clusters: one label per cluster offering a compatible schema
IMPORTED_FROM_PREFIX = PREFIX + "imported-from-"
#: hub CRDs: "imported" when the syncer created it from a cluster's type (else it is hub-defined)
ORIGIN_ANNOTATION = PREFIX + "origin"
#: hub CRDs: the cluster whose schema the hub currently serves
SCHEMA_SOURCE_ANNOTATION = PREFIX + "schema-source"
#: hub CRDs: JSON {cluster: problem} for clusters whose schema conflicts with the hub's
SCHEMA_CONFLICTS_ANNOTATION = PREFIX + "schema-conflicts"
#: downstream CRDs pushed from the hub: the hub logical cluster
PUSHED_FROM_ANNOTATION = PREFIX + "pushed-from"

#: annotations of hub objects that never go downstream
HUB_ONLY_ANNOTATIONS = frozenset({
    KCP_CLUSTER_ANNOTATION, SYNC_STATE_ANNOTATION, ADOPT_ANNOTATION, RETAIN_ANNOTATION,
    "kubectl.kubernetes.io/last-applied-configuration",
})



def _short_hash(s: str, n: int = 10) -> str:
    return hashlib.sha256(s.encode()).hexdigest()[:n]


def label_value(logical_cluster: str) -> str:
    """A label value naming a logical cluster (':' -> '.', hashed when too long)."""
    v = logical_cluster.replace(":", ".")
    if is_label_value(v):
        return v
    return f"{v[:40].strip('.-_')}-{_short_hash(logical_cluster)}"


def qualified_suffix(prefix: str, name: str) -> str:
    """``prefix + name`` as a valid qualified name (the part after '/' at most 63 characters)."""
    tail = prefix.split("/", 1)[1] + name
    if len(tail) <= 63 and QUALIFIED_NAME.match(tail):
        return prefix + name
    keep = 63 - len(prefix.split("/", 1)[1]) - 11
    return f"{prefix}{name[:max(keep, 1)].strip('.-_')}-{_short_hash(name)}"


def finalizer(cluster: str) -> str:
    """The finalizer a cluster's syncer keeps on hub objects it has synced."""
    return qualified_suffix(PREFIX + "syncer-", cluster)


def imported_from_label(cluster: str) -> str:
    return qualified_suffix(IMPORTED_FROM_PREFIX, cluster)
