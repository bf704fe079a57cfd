"""API discovery documents: legacy (/api, /apis, /apis/<g>/<v>) and aggregated v2.

Built from a logical cluster's catalog and cached until its generation changes, so a new
CRD shows up in the next discovery request.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from ..registry.crd import version_priority
from ..registry.types import ResourceType, storage_version_hash


def aggregated_version(accept: str) -> str | None:
    """"v2" or "v2beta1" when the client asks for aggregated discovery (first acceptable wins)."""
    for entry in accept.split(","):
        params = dict(p.strip().partition("=")[::2] for p in entry.split(";")[1:])
        if params.get("g") == "apidiscovery.k8s.io" and params.get("as") == "APIGroupDiscoveryList" \
                and params.get("v") in ("v2", "v2beta1"):
            return params["v"]
    return None


def aggregated_content_type(version: str) -> str:
    return f"application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"


def _versions_sorted(types: list[ResourceType]) -> list[str]:
    """Group versions, preferred first: each type's preferred version (a CRD's by its version
    priority), the highest priority of those first, as kube orders a group several CRDs share
    (multicluster.x-k8s.io: ClusterProfiles v1alpha2/v1alpha1, PlacementDecisions v1alpha1)."""
    versions: list[str] = []
    for rt in sorted(types, key=lambda r: (not r.preferred, version_priority(r.version))):
        if rt.version not in versions:
            versions.append(rt.version)
    return versions


def by_group(types: Iterable[ResourceType]) -> dict[str, list[ResourceType]]:
    groups: dict[str, list[ResourceType]] = defaultdict(list)
    for rt in types:
        if rt.served:
            groups[rt.group].append(rt)
    return groups


def api_versions(server_address: str) -> dict:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}


def _group_entry(group: str, types: list[ResourceType]) -> dict:
    versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in _versions_sorted(types)]
    return {"name": group, "versions": versions, "preferredVersion": dict(versions[0])}


def api_group_list(types: Iterable[ResourceType]) -> dict:
    groups = by_group(types)
    return {"kind": "APIGroupList", "apiVersion": "v1",
            "groups": [_group_entry(g, ts) for g, ts in groups.items() if g]}


def api_group(group: str, types: Iterable[ResourceType]) -> dict | None:
    ts = by_group(types).get(group)
    if not ts or not group:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(group, ts)}


def api_resource_list(group: str, version: str, types: Iterable[ResourceType]) -> dict | None:
    ts = [rt for rt in types if rt.group == group and rt.version == version and rt.served]
    if not ts:
        return None
    resources = []
    for rt in ts:
        entry = {"name": rt.plural, "singularName": rt.singular, "namespaced": rt.namespaced,
                 "kind": rt.kind, "verbs": list(rt.verbs)}
        if rt.short_names:
            entry["shortNames"] = list(rt.short_names)
        if rt.categories:
            entry["categories"] = list(rt.categories)
        if rt.rest is None:  # stored (the reviews are not): the storage version's hash, as kube
            entry["storageVersionHash"] = rt.storage_version_hash or storage_version_hash(rt.group, rt.version, rt.kind)
        resources.append(entry)
        for sub in rt.subresources:
            sub_entry = {"name": f"{rt.plural}/{sub}", "singularName": "", "namespaced": rt.namespaced,
                         "kind": rt.kind, "verbs": rt.subresource_verbs(sub)}
            if sub == "scale":
                sub_entry |= {"group": "autoscaling", "version": "v1", "kind": "Scale"}
            resources.append(sub_entry)
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}


def aggregated(types: Iterable[ResourceType], core: bool, version: str = "v2") -> dict:
    """The APIGroupDiscoveryList for /api (core only) or /apis (named groups)."""
    items = []
    for group, ts in by_group(types).items():
        if bool(group) == core:
            continue
        versions = []
        for v in _versions_sorted(ts):
            resources = []
            for rt in (r for r in ts if r.version == v):
                gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
                res: dict[str, Any] = {"resource": rt.plural, "singularResource": rt.singular,
                       "scope": "Namespaced" if rt.namespaced else "Cluster",
                       "responseKind": gvk, "verbs": list(rt.verbs)}
                if rt.short_names:
                    res["shortNames"] = list(rt.short_names)
                if rt.categories:
                    res["categories"] = list(rt.categories)
                subs = []
                for sub in rt.subresources:
                    kind = {"group": "autoscaling", "version": "v1", "kind": "Scale"} if sub == "scale" else gvk
                    subs.append({"subresource": sub, "responseKind": kind,
                                 "verbs": rt.subresource_verbs(sub)})
                if subs:
                    res["subresources"] = subs
                resources.append(res)
            versions.append({"version": v, "resources": resources, "freshness": "Current"})
        items.append({"metadata": {"name": group} if group else {}, "versions": versions})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": f"apidiscovery.k8s.io/{version}", "metadata": {}, "items": items}
