"""Storage key layout: ``/<group>/<resource>/<cluster>/[<namespace>/]<name>``.

Group and resource come first so that one resource across every logical cluster (the
``/clusters/*`` wildcard) is a single prefix scan, and one logical cluster's objects of a
resource are a narrower one. Same layout kcp uses on etcd.
"""

from __future__ import annotations


def resource_prefix(group: str, resource: str) -> str:
    return f"/{group or 'core'}/{resource}/"


def cluster_prefix(group: str, resource: str, cluster: str) -> str:
    return f"/{group or 'core'}/{resource}/{cluster}/"


def namespace_prefix(group: str, resource: str, cluster: str, namespace: str) -> str:
    return f"/{group or 'core'}/{resource}/{cluster}/{namespace}/"


def object_key(group: str, resource: str, cluster: str, namespace: str, name: str) -> str:
    if namespace:
        return f"/{group or 'core'}/{resource}/{cluster}/{namespace}/{name}"
    return f"/{group or 'core'}/{resource}/{cluster}/{name}"


def split_key(key: str) -> tuple[str, str, str, str, str]:
    """(group, resource, cluster, namespace, name); namespace is "" for cluster-scoped keys."""
    parts = key.split("/")
    group = "" if parts[1] == "core" else parts[1]
    if len(parts) == 6:
        return group, parts[2], parts[3], parts[4], parts[5]
    return group, parts[2], parts[3], "", parts[4]
