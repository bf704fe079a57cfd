"""What deleting a Cluster does to the objects its Syncer synced (after the Syncer has stopped).

- :func:`delete_synced_objects` (``deletionPolicy: Delete``): deletes, in the physical cluster,
  the objects of the synced types that the Syncer manages for this Cluster (its
  ``fleetplane.io/logical-cluster`` label and ``fleetplane.io/cluster`` annotation; each delete
  is guarded by the object's uid). Namespaces the Syncer created stay, as the Syncer leaves them.
- :func:`release_hub_objects` (both policies): on the hub, the objects labelled
  ``kcp.dev/cluster: <name>`` lose the Syncer's finalizer and its sync-state annotation (no
  Syncer will ever remove them now, and a later deletion of such an object must not hang), and the
  CRDs the Syncer imported from this cluster lose their ``imported-from`` label. The objects
  themselves, and the CRDs, stay: they are the desired state the user wrote (and what other
  clusters may still use).

The types are those of the Cluster's ``status.types`` (what its Syncer last reported syncing).
The label, annotation and finalizer names come from :mod:`fleetplane.fleet.syncer.constants`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ...kube.client import ApiError, Client

__all__ = ["delete_synced_objects", "release_hub_objects", "type_paths"]


def type_paths(types: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """``status.types`` entries -> (API base path, plural) for those with a known version."""
    out = []
    for t in types:
        resource, version, group = t.get("resource"), t.get("version"), t.get("group") or ""
        if not resource or not version or resource == "namespaces":
            continue
        out.append((f"/apis/{group}/{version}" if group else f"/api/{version}", resource))
    return sorted(set(out))


def _constants() -> Any:
    from ..syncer import constants

    return constants


async def delete_synced_objects(client: Client, cluster_name: str, logical_cluster: str,
                                types: Iterable[Mapping[str, Any]]) -> int:
    """Delete the objects the Syncer of ``logical_cluster``/``cluster_name`` put into the cluster."""
    C = _constants()
    deleted = 0
    for base, plural in type_paths(types):
        lst = await client.get(f"{base}/{plural}", {"labelSelector": f"{C.MANAGED_LABEL}={C.label_value(logical_cluster)}"})
        if lst is None:
            continue  # the cluster does not serve the type (any more)
        for item in lst.get("items") or []:
            md = item.get("metadata") or {}
            ann = md.get("annotations") or {}
            if ann.get(C.LOGICAL_CLUSTER_ANNOTATION, logical_cluster) != logical_cluster:
                continue
            if ann.get(C.CLUSTER_NAME_ANNOTATION, cluster_name) != cluster_name:
                continue
            ns = md.get("namespace")
            path = f"{base}/namespaces/{ns}/{plural}/{md['name']}" if ns else f"{base}/{plural}/{md['name']}"
            try:
                if await client.delete(path, uid=md.get("uid")):
                    deleted += 1
            except ApiError as exc:
                if exc.status != 409:  # replaced by someone else's object
                    raise
    return deleted


async def release_hub_objects(hub: Client, logical_cluster: str, cluster_name: str,
                              types: Iterable[Mapping[str, Any]]) -> int:
    """Take the Syncer's finalizer and sync state off the hub objects it synced; returns how many."""
    C = _constants()
    fin = C.finalizer(cluster_name)
    prefix = f"/clusters/{logical_cluster}"
    released = 0
    for base, plural in type_paths(types):
        try:
            lst = await hub.get(f"{prefix}{base}/{plural}", {"labelSelector": f"{C.CLUSTER_LABEL}={cluster_name}"})
        except ApiError as exc:
            if exc.status != 403:
                raise
            continue  # a type we may not read holds nothing we synced (the Syncer has our rights or fewer)
        for item in (lst or {}).get("items") or []:
            if await _release(hub, f"{prefix}{base}", plural, item, fin, cluster_name, C):
                released += 1
    crds = f"{prefix}/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    label = C.imported_from_label(cluster_name)
    lst = await hub.get(crds, {"labelSelector": label})
    for crd in (lst or {}).get("items") or []:
        try:
            await hub.patch(f"{crds}/{crd['metadata']['name']}", {"metadata": {"labels": {label: None}}})
        except ApiError as exc:
            if exc.status != 404:
                raise
    return released


async def _release(hub: Client, base: str, plural: str, obj: dict, fin: str, cluster_name: str, C: Any) -> bool:
    for _ in range(3):
        md = obj.get("metadata") or {}
        fins = list(md.get("finalizers") or [])
        ann = md.get("annotations") or {}
        patch: dict[str, Any] = {}
        if fin in fins:
            patch["finalizers"] = [f for f in fins if f != fin]
        state = ann.get(C.SYNC_STATE_ANNOTATION)
        if state is not None:
            try:
                mine = json.loads(state).get("cluster") in (None, cluster_name)
            except (ValueError, AttributeError):
                mine = True
            if mine:
                patch["annotations"] = {C.SYNC_STATE_ANNOTATION: None}
        if not patch:
            return False
        patch["resourceVersion"] = md.get("resourceVersion")
        ns = md.get("namespace")
        path = f"{base}/namespaces/{ns}/{plural}/{md['name']}" if ns else f"{base}/{plural}/{md['name']}"
        try:
            await hub.patch(path, {"metadata": patch})
            return True
        except ApiError as exc:
            if exc.status == 404:
                return False
            if exc.status != 409:
                raise
            obj = await hub.get(path)
            if obj is None:
                return False
    return False
