"""ClusterProfile between v1alpha1 (the storage version) and v1alpha2: the inventory's in-process
converter, which the plugin contributes to the hub by (group, kind).

The two versions differ in what v1alpha2 dropped: ``status.credentialProviders`` (deprecated
in v1alpha1 for ``accessProviders``) and ``certificate-authority`` (a file path) in each access
provider's cluster. Everything else has the same JSON shape, so the conversion moves only those.
Following kube's rule for fields a version lacks (autoscaling/v1 keeps v2's metrics in an
annotation), a v1alpha1 object read as v1alpha2 keeps them in the annotation
:data:`V1ALPHA1_FIELDS_ANNOTATION` (compact JSON ``{"credentialProviders": [...],
"certificate-authority": {provider: path}}``), and a v1alpha2 object written back restores them
from it, so a round trip through v1alpha2 is lossless: a v1alpha2 client that updates, patches
or applies a profile leaves its stored credentialProviders as they were (its write carries the
annotation it read, or the patch leaves it). A v1alpha2 write that removes the annotation
removes them. The annotation is read tolerantly: what is not JSON, or entries without a name
and a cluster server, are dropped rather than stored unvalidated.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from .constants import API_VERSION, API_VERSION_V1ALPHA2

__all__ = ["V1ALPHA1_FIELDS_ANNOTATION", "convert"]

#: Where a profile read as v1alpha2 keeps the v1alpha1-only fields.
V1ALPHA1_FIELDS_ANNOTATION = "inventory.fleetplane.io/v1alpha1-fields"
_CREDENTIAL_PROVIDERS = "credentialProviders"
_CA_FILE = "certificate-authority"


def convert(obj: dict[str, Any], api_version: str) -> dict[str, Any]:
    """``obj`` (a ClusterProfile in either version) as ``api_version`` has it, a new dict."""
    have = obj.get("apiVersion")
    out: dict[str, Any] = orjson.loads(orjson.dumps(obj))  # a deep copy, faster than copy.deepcopy
    if have == api_version:
        return out
    if have == API_VERSION and api_version == API_VERSION_V1ALPHA2:
        return _to_v1alpha2(out)
    if have == API_VERSION_V1ALPHA2 and api_version == API_VERSION:
        return _to_v1alpha1(out)
    raise ValueError(f"cannot convert {have}, Kind=ClusterProfile to {api_version}")


def _to_v1alpha2(out: dict[str, Any]) -> dict[str, Any]:
    out["apiVersion"] = API_VERSION_V1ALPHA2
    kept: dict[str, Any] = {}
    status = out.get("status")
    if isinstance(status, dict):
        providers = status.pop(_CREDENTIAL_PROVIDERS, None)
        if providers:
            kept[_CREDENTIAL_PROVIDERS] = providers
        ca_files = {}
        for ap in status.get("accessProviders") or []:
            cluster = ap.get("cluster") if isinstance(ap, dict) else None
            if isinstance(cluster, dict) and _CA_FILE in cluster:
                path = cluster.pop(_CA_FILE)
                if path:
                    ca_files[str(ap.get("name"))] = path
        if ca_files:
            kept[_CA_FILE] = ca_files
    meta = out.setdefault("metadata", {})
    annotations = dict(meta.get("annotations") or {})
    annotations.pop(V1ALPHA1_FIELDS_ANNOTATION, None)
    if kept:
        annotations[V1ALPHA1_FIELDS_ANNOTATION] = json.dumps(kept, separators=(",", ":"), sort_keys=True)
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    return out


def _to_v1alpha1(out: dict[str, Any]) -> dict[str, Any]:
    out["apiVersion"] = API_VERSION
    meta = out.get("metadata")
    annotations = dict(meta.get("annotations") or {}) if isinstance(meta, dict) else {}
    raw = annotations.pop(V1ALPHA1_FIELDS_ANNOTATION, None)
    if isinstance(meta, dict):
        if annotations:
            meta["annotations"] = annotations
        else:
            meta.pop("annotations", None)
    try:
        kept = json.loads(raw) if isinstance(raw, str) else {}
    except ValueError:
        kept = {}
    if not isinstance(kept, dict) or not kept:
        return out
    providers = [p for p in kept.get(_CREDENTIAL_PROVIDERS) or [] if _is_provider(p)]
    raw_ca = kept.get(_CA_FILE)
    ca_files: dict[str, Any] = raw_ca if isinstance(raw_ca, dict) else {}
    if not providers and not ca_files:
        return out
    status = out.setdefault("status", {})
    if not isinstance(status, dict):
        return out
    if providers:
        status[_CREDENTIAL_PROVIDERS] = providers
    for ap in status.get("accessProviders") or []:
        cluster = ap.get("cluster") if isinstance(ap, dict) else None
        path = ca_files.get(str(ap.get("name"))) if isinstance(ap, dict) else None
        if isinstance(cluster, dict) and isinstance(path, str) and path:
            cluster[_CA_FILE] = path
    return out


def _is_provider(p: Any) -> bool:
    """What v1alpha1's schema requires of a credential provider: a name, and a server if a cluster."""
    if not isinstance(p, dict) or not isinstance(p.get("name"), str) or not p["name"]:
        return False
    cluster = p.get("cluster")
    return cluster is None or (isinstance(cluster, dict) and isinstance(cluster.get("server"), str))
