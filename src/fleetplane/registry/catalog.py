"""Which resource types each logical cluster serves: the built-ins plus its own CRDs.

Kept current from the watch cache: a CRD written in one logical cluster (through this
replica or another) changes that cluster's catalog as soon as the event arrives, and with it
discovery, OpenAPI and routing. The ``*`` wildcard serves the union over all clusters.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from typing import Any

import orjson

from ..apis import builtin_types, logical_cluster_type, workload_types
from ..apis.apiextensions import CRDLister, no_crds
from ..storage.watchcache import WatchEvent
from . import crd as crds
from .conversion import Converter
from .types import ResourceType

log = logging.getLogger(__name__)

CRD_PREFIX = "/apiextensions.k8s.io/customresourcedefinitions/"
ROOT = "root"

GVR = tuple[str, str, str]  # group, version, plural


def imported_builtin(group: str, version: str, kind: str) -> ResourceType | None:
    """The kube built-in a custom type imports (a cluster's apps/v1 Deployment, v1 Pod), when
    fleetplane knows that kind at that version with an OpenAPI definition.

    Its definition becomes the custom type's ``openapi_definition``: strategic merge patches then
    merge with the built-in's patch metadata (merge keys, strategies), as on the cluster, where the
    imported CRD's schema cannot carry them (kube drops ``x-kubernetes-patch-*`` from CRDs). Where
    the two disagree the built-in's wins, like kube; validation, pruning and server-side apply's
    list types stay the CRD's (converted from the same OpenAPI). Its strategy's scheme defaults
    (``default`` only: no validation, allocation or admission) become the type's, so a Deployment
    on the hub has its strategy and revisionHistoryLimit as on a cluster (docs/api.md)."""
    rt = _builtin_versions().get((group, kind), {}).get(version)
    return rt if rt is not None and rt.openapi_definition else None


@cache
def _builtin_versions() -> dict[tuple[str, str], dict[str, ResourceType]]:
    """Every version fleetplane knows of each built-in kind (served by the hub or not)."""
    out: dict[tuple[str, str], dict[str, ResourceType]] = {}
    for rt in [*builtin_types(), *workload_types()]:
        out.setdefault((rt.group, rt.kind), {})[rt.version] = rt
    return out


class BuiltinConverter:
    """A built-in kind's versions converted as the built-in's: through the version the others
    are kept as (their :class:`~fleetplane.registry.types.StoredAs` converters, kube's conversion
    through the internal version), whichever version a cluster stores. For an imported built-in,
    e.g. HorizontalPodAutoscalers in autoscaling/v2 and v1 (``targetCPUUtilizationPercentage`` <->
    ``metrics``)."""

    def __init__(self, hub_version: str, versions: Mapping[str, ResourceType]) -> None:
        self.hub_version = hub_version
        self.versions = versions

    def __call__(self, obj: dict[str, Any], api_version: str) -> dict[str, Any]:
        have = str(obj.get("apiVersion") or "")
        if have == api_version:
            return orjson.loads(orjson.dumps(obj))  # type: ignore[no-any-return]
        src = self.versions.get(have.rpartition("/")[2])
        dst = self.versions.get(api_version.rpartition("/")[2])
        if src is None or dst is None:
            unknown = have if src is None else api_version
            raise ValueError(f"no conversion known for {unknown}, Kind={obj.get('kind')}")
        # each StoredAs converter returns a new dict: no copy of our own
        hub = src.stored_as.to_storage(obj) if src.stored_as is not None else obj
        if dst.stored_as is None:  # to the hub version: src was another one, so hub is a new dict
            hub["apiVersion"] = api_version
            return hub
        return dst.stored_as.from_storage(hub)


@cache
def builtin_converter(group: str, kind: str) -> BuiltinConverter | None:
    """The converter of a built-in kind fleetplane knows in several versions, each of them kept as
    one of them in the same group (None: one version, or versions fleetplane cannot convert)."""
    versions = _builtin_versions().get((group, kind), {})
    hubs = {rt.stored_as.api_version if rt.stored_as is not None else rt.api_version for rt in versions.values()}
    same_group = all(rt.stored_as is None or rt.stored_as.group == group for rt in versions.values())
    if len(versions) < 2 or len(hubs) != 1 or not same_group:
        return None
    (hub_version,) = hubs
    if hub_version.rpartition("/")[2] not in versions:
        return None
    return BuiltinConverter(hub_version, versions)


def convertible_builtins() -> dict[tuple[str, str], frozenset[str]]:
    """(group, kind) -> versions of the built-ins whose versions fleetplane converts (the Syncer
    imports them in each of these versions a cluster serves)."""
    return {gk: frozenset(versions) for gk, versions in _builtin_versions().items() if builtin_converter(*gk) is not None}


class Catalog:
    def __init__(self, extra_builtins: Iterable[ResourceType] = (), crds_in: CRDLister = no_crds,
                 converters: Mapping[tuple[str, str], Converter] | None = None) -> None:
        #: in-process converters contributed by plugins, by (group, kind)
        self.converters: dict[tuple[str, str], Converter] = dict(converters or {})
        self.builtins: dict[GVR, ResourceType] = {}
        for rt in [*builtin_types(crds_in), *extra_builtins]:
            self.builtins[(rt.group, rt.version, rt.plural)] = rt
        self.logical_cluster = logical_cluster_type()
        #: cluster -> CRD name -> its types
        self._crds: dict[str, dict[str, list[ResourceType]]] = {}
        #: cluster -> GVR -> type (CRD types only), rebuilt on change
        self._index: dict[str, dict[GVR, ResourceType]] = {}
        self._wildcard: dict[GVR, ResourceType] | None = None
        #: bumped on every change, per cluster (discovery/OpenAPI caches key on it)
        self.generation: dict[str, int] = {}
        self._listeners: list[Callable[[str], None]] = []

    def on_change(self, fn: Callable[[str], None]) -> None:
        self._listeners.append(fn)

    # -- feeding --------------------------------------------------------------------------

    def load_crd(self, cluster: str, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        try:
            types = crds.types_from_crd(obj, imported_builtin, self.converter_for) if crds.is_established(obj) else []
        except Exception:  # a CRD that got stored must never break serving the others
            log.exception("cannot serve CRD %s in %s", name, cluster)
            types = []
        bucket = self._crds.setdefault(cluster, {})
        if types:
            bucket[name] = types
        else:
            bucket.pop(name, None)
        self._reindex(cluster)

    def converter_for(self, group: str, kind: str) -> Converter | None:
        """The in-process converter of a CRD's kind: a plugin's, else the built-in's it imports."""
        return self.converters.get((group, kind)) or builtin_converter(group, kind)

    def drop_crd(self, cluster: str, name: str) -> None:
        self._crds.get(cluster, {}).pop(name, None)
        self._reindex(cluster)

    def _reindex(self, cluster: str) -> None:
        index: dict[GVR, ResourceType] = {}
        for types in self._crds.get(cluster, {}).values():
            for rt in types:
                index[(rt.group, rt.version, rt.plural)] = rt
        if index:
            self._index[cluster] = index
        else:
            self._index.pop(cluster, None)
            self._crds.pop(cluster, None)
        self._wildcard = None
        self.generation[cluster] = self.generation.get(cluster, 0) + 1
        self.generation["*"] = self.generation.get("*", 0) + 1
        for fn in self._listeners:
            fn(cluster)

    def handle_event(self, ev: WatchEvent) -> None:
        """Watch cache listener."""
        if not ev.cur.key.startswith(CRD_PREFIX):
            return
        if ev.type == "DELETED":
            self.drop_crd(ev.cur.cluster, ev.cur.name)
        else:
            self.load_crd(ev.cur.cluster, ev.cur.obj)

    # -- lookups --------------------------------------------------------------------------

    def _cluster_index(self, cluster: str) -> dict[GVR, ResourceType]:
        if cluster != "*":
            return self._index.get(cluster, {})
        if self._wildcard is None:
            merged: dict[GVR, ResourceType] = {}
            for index in self._index.values():
                for gvr, rt in index.items():
                    merged.setdefault(gvr, rt)
            self._wildcard = merged
        return self._wildcard

    def lookup(self, cluster: str, group: str, version: str, plural: str) -> ResourceType | None:
        gvr = (group, version, plural)
        rt = self.builtins.get(gvr)
        if rt is not None:
            return rt
        if gvr == (self.logical_cluster.group, self.logical_cluster.version, self.logical_cluster.plural) and cluster in (ROOT, "*"):
            return self.logical_cluster
        return self._cluster_index(cluster).get(gvr)

    def types(self, cluster: str) -> list[ResourceType]:
        """Everything served in ``cluster``, built-ins first."""
        out = list(self.builtins.values())
        if cluster in (ROOT, "*"):
            out.append(self.logical_cluster)
        out.extend(self._cluster_index(cluster).values())
        return out

    def crd_types(self, cluster: str, crd_name: str) -> list[ResourceType]:
        return list(self._crds.get(cluster, {}).get(crd_name, []))

    def group_taken(self, cluster: str, group: str) -> bool:
        return any(rt.group == group for rt in self.builtins.values())
