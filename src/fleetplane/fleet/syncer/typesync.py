"""Type sync: the cluster's types into the hub logical cluster as CRDs, hub-defined CRDs down
to the cluster, polled (there is no watch on api-resources).

A type the cluster defines with a CRD is imported as that CRD (schema, subresources, printer
columns); a built-in type from the cluster's OpenAPI v3 as a structural CRD with status and
scale subresources from discovery; a core (v1) type as a CRD in the core group named
``<plural>.core`` (kcp's convention), which the hub serves under ``/api/v1``. Several clusters
offering one type: the first schema stays on the hub; another cluster's schema that accepts
everything the hub's does is recorded as compatible (label ``fleetplane.io/imported-from-<cluster>``),
anything else is a conflict, reported (CRD annotation, Event, health) and never applied. Nothing here deletes a CRD.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson

from ...apimachinery.validation import crd_name
from ...kube.client import MERGE_PATCH, ApiError
from . import constants as C
from .discovery import ApiResource, Discovery, discover, parse_resource
from .host import SyncerHost
from .hubcrds import CRDS
from .schema import (
    PERMISSIVE_SCHEMA,
    SchemaError,
    crd_problems,
    crd_spec_from_crd,
    crd_version_from_openapi,
    schema_fingerprint,
)

log = logging.getLogger(__name__)

#: never synced, even with "*": cluster bookkeeping, not workloads
EXCLUDED = frozenset({"events", "events.events.k8s.io", "leases.coordination.k8s.io", "endpoints",
                      "endpointslices.discovery.k8s.io", "controllerrevisions.apps", "bindings",
                      "localsubjectaccessreviews.authorization.k8s.io", "podtemplates", "limitranges",
                      "resourcequotas"})
APPROVED = "unapproved, imported from a physical cluster by fleetplane"
#: the built-in kinds whose versions the hub converts with the built-in's own converters, and those
#: versions (``registry.catalog.convertible_builtins``, which a controller may not import; a test
#: keeps the two equal): imported in each of these versions the cluster serves, the cluster's
#: preferred one the storage version. Any other built-in kind (or version, an old cluster's
#: autoscaling/v2beta2) is imported in its preferred version only, since the hub could convert
#: it by apiVersion alone.
CONVERTED_BUILTINS: dict[tuple[str, str], frozenset[str]] = {
    ("autoscaling", "HorizontalPodAutoscaler"): frozenset({"v1", "v2"}),
}


#: What every Syncer of a process shares, so that a hub syncing a thousand clusters that serve the
#: same types keeps and computes each schema once, not once per cluster (a cluster's OpenAPI v3
#: documents are about 1.7 MiB of JSON, several times that decoded), and a pass over types that
#: did not change costs no schema work: the cluster's OpenAPI v3 documents by (group version,
#: content hash); the CRD specs built from them, with their fingerprints, by (the documents'
#: hashes, kind, names); the hub CRDs' fingerprints by (uid, resourceVersion). Each is bounded.
_DOCS: dict[tuple[str, str], dict] = {}
_DOCS_KEPT = 8
_CANDIDATES: dict[tuple, tuple[dict, str]] = {}
_CANDIDATES_KEPT = 256
_HUB_FINGERPRINTS: dict[tuple[str, str], str] = {}
_HUB_FINGERPRINTS_KEPT = 4096


def hub_fingerprint(crd: dict) -> str:
    """:func:`schema_fingerprint` of a hub CRD's spec, computed once per version of the object."""
    meta = crd.get("metadata") or {}
    key = (str(meta.get("uid") or ""), str(meta.get("resourceVersion") or ""))
    if not all(key):
        return schema_fingerprint(crd.get("spec") or {})
    fp = _HUB_FINGERPRINTS.get(key)
    if fp is None:
        if len(_HUB_FINGERPRINTS) >= _HUB_FINGERPRINTS_KEPT:
            _HUB_FINGERPRINTS.clear()
        fp = _HUB_FINGERPRINTS[key] = schema_fingerprint(crd.get("spec") or {})
    return fp


@dataclass
class TypeReport:
    """The outcome of one type-sync pass."""

    offered: list[ApiResource] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    conflicts: dict[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    changed: bool = False


def import_versions(r: ApiResource, served: list[ApiResource], report: TypeReport | None = None) -> list[ApiResource]:
    """The versions of built-in ``r`` (the preferred one, first) to import: ``r`` and those of
    the others the cluster serves (``served``) that the hub converts to it (:data:`CONVERTED_BUILTINS`);
    the rest are left out, with a note in ``report``."""
    others = [v for v in served if v.version != r.version and v.kind == r.kind]
    convertible = CONVERTED_BUILTINS.get((r.group, r.kind), frozenset())
    picked = [v for v in others if r.version in convertible and v.version in convertible]
    left = [v.version for v in others if v not in picked]
    if left and report is not None:
        report.notes[r.group_resource] = (
            f"imported in {', '.join([r.version, *(v.version for v in picked)])} only: the cluster also serves "
            f"{', '.join(left)}, which the hub cannot convert to {r.version}")
    return [r, *picked]


class TypeSync:
    def __init__(self, syncer: SyncerHost) -> None:
        self.syncer = syncer
        self.hub = syncer.hub
        self.down = syncer.down
        self._openapi_index: dict[str, str] | None = None
        #: name -> last conflict message reported as an Event (to report each once)
        self._reported: dict[str, str] = {}

    # -- selection ------------------------------------------------------------------------

    def select(self, disc: Discovery, report: TypeReport, hub_crds: dict[str, dict] | None = None) -> list[ApiResource]:
        """The cluster's types to sync: namespaced, listable and watchable, as requested. A
        requested type the cluster lacks is fine when the hub defines it (it is pushed down)."""
        hub_defined = {
            n for n, crd in (hub_crds or {}).items()
            if ((crd["metadata"].get("annotations") or {}).get(C.ORIGIN_ANNOTATION) != "imported")}
        hub_plurals = {n.split(".", 1)[0] for n in hub_defined}
        out: list[ApiResource] = []
        specs = list(self.syncer.resources)
        if "*" in specs:
            for res in disc.all_preferred():
                if res.namespaced and res.watchable and res.group_resource not in EXCLUDED and "/" not in res.resource:
                    out.append(res)
            specs = [s for s in specs if s != "*"]
        for spec in specs:
            resource, group = parse_resource(spec)
            if group is None:
                cands = [v[0] for (g, res), v in sorted(disc.resources.items(), key=lambda kv: kv[0][0] != "")
                         if res == resource and v]
                r = cands[0] if cands else None
            else:
                r = disc.preferred(group, resource)
            if r is None:
                if spec in hub_defined or (group is None and resource in hub_plurals):
                    continue
                # a default type the cluster lacks (no StatefulSets in a toy cluster): skipped, not an error
                out_of = report.notes if spec in C.DEFAULT_RESOURCES else report.errors
                out_of[spec] = f"cluster {self.syncer.cluster_name} does not serve {spec}"
                continue
            if not r.namespaced:
                report.errors[spec] = f"{spec} is cluster-scoped; only namespaced types (and namespaces) are synced"
                continue
            if not r.watchable:
                report.errors[spec] = f"{spec} cannot be listed and watched"
                continue
            if r not in out:
                out.append(r)
        return out

    # -- one pass -------------------------------------------------------------------------

    async def poll(self, down_disc: Discovery | None = None, hub_disc: Discovery | None = None) -> TypeReport:
        """One pass (over both sides' discovery as given, else read now). Raises ApiError (with
        ``side``) when the cluster or the hub cannot be read."""
        report = TypeReport()
        down_disc = down_disc or await discover(self.down)
        hub_disc = hub_disc or await discover(self.hub)
        down_crds = {}
        if down_disc.get("apiextensions.k8s.io", "customresourcedefinitions"):
            items, _ = await self.down.list_all(CRDS)
            down_crds = {o["metadata"]["name"]: o for o in items}
        hub_crds = await self.syncer.hub_crds()
        self._openapi_index = None
        wanted = self.select(down_disc, report, hub_crds)
        report.offered = wanted
        for r in wanted:
            name = crd_name(r.resource, r.group)
            try:
                await self._import(r, name, down_crds.get(name), hub_crds.get(name), hub_disc, report,
                                   down_disc.get(r.group, r.resource))
            except ApiError as err:
                if err.status == 0 or err.status >= 500:
                    raise
                if err.status == 409:  # raced another writer (another cluster's syncer): next pass, soon
                    report.changed = True
                    continue
                report.errors[r.group_resource] = f"{'hub' if err.side == 'hub' else 'cluster'}: {err}"
            except SchemaError as err:
                report.errors[r.group_resource] = str(err)
        offered = {(r.group, r.resource) for r in down_disc.all_preferred()}
        for name, crd in hub_crds.items():
            try:
                await self._hub_crd_housekeeping(name, crd, down_crds.get(name), down_disc, offered, report)
            except ApiError as err:
                if err.status == 0 or err.status >= 500:
                    raise
                if err.status == 409:
                    report.changed = True
                    continue
                report.errors[name] = f"{'hub' if err.side == 'hub' else 'cluster'}: {err}"
        return report

    # -- import ---------------------------------------------------------------------------

    async def _openapi_url(self, r: ApiResource) -> tuple[str, str, dict[str, str]]:
        """(group-version key, path, query) of ``r``'s OpenAPI v3 document, from the cluster's
        index (read once per pass); the query's ``hash`` names the document's content."""
        gv = f"apis/{r.group}/{r.version}" if r.group else f"api/{r.version}"
        if self._openapi_index is None:
            root = await self.down.request("GET", "/openapi/v3")
            self._openapi_index = {k: (v or {}).get("serverRelativeURL") or f"/openapi/v3/{k}" for k, v in (root.get("paths") or {}).items()}
        url = self._openapi_index.get(gv)
        if url is None:
            raise SchemaError(f"cluster {self.syncer.cluster_name} publishes no OpenAPI v3 document for {gv}")
        u = urlsplit(url)
        return gv, u.path, {k: v[0] for k, v in parse_qs(u.query).items()}

    async def _openapi_doc(self, gv: str, path: str, query: dict[str, str]) -> dict:
        """The document at ``path``; one with a hash is fetched once per process (shared, not to
        be changed): every cluster serving the same content names it with the same hash."""
        h = query.get("hash", "")
        cached = _DOCS.get((gv, h)) if h else None
        if cached is not None:
            return cached
        doc = await self.down.request("GET", path, query=query)
        if h:
            if len(_DOCS) >= _DOCS_KEPT:
                _DOCS.pop(next(iter(_DOCS)))
            _DOCS[(gv, h)] = doc
        return doc

    async def candidate(self, r: ApiResource, down_crd: dict | None, served: list[ApiResource] | None = None,
                        report: TypeReport | None = None) -> dict:
        """The CRD spec that imports ``r`` from the cluster: a built-in in the versions
        :func:`import_versions` picks, ``r``'s (the preferred one) its storage version."""
        spec, _ = await self._candidate(r, down_crd, served, report)
        return copy.deepcopy(spec)

    async def _candidate(self, r: ApiResource, down_crd: dict | None, served: list[ApiResource] | None,
                         report: TypeReport | None) -> tuple[dict, str]:
        """:meth:`candidate` and its :func:`schema_fingerprint`, without a copy: a built-in's is
        shared by every Syncer of the process (keyed by its documents' hashes), so that a pass
        over unchanged types neither fetches, converts, copies nor hashes a schema."""
        if down_crd is not None:
            spec = crd_spec_from_crd(down_crd.get("spec") or {})
            return spec, schema_fingerprint(spec)
        picked = import_versions(r, served or [r], report)
        urls = [(v, *await self._openapi_url(v)) for v in picked]
        ckey = (tuple((gv, q.get("hash", ""), v.subresources) for v, gv, _, q in urls), r.kind, r.short_names,
                r.categories, r.singular)
        hashed = all(q.get("hash") for *_, q in urls)
        cached = _CANDIDATES.get(ckey) if hashed else None
        if cached is not None:
            return cached
        versions = []
        for v, gv, path, query in urls:
            doc = await self._openapi_doc(gv, path, query)
            version = crd_version_from_openapi(doc, v.group, v.version, v.kind, v.subresources)
            version["storage"] = v is r
            versions.append(version)
        names: dict[str, Any] = {"plural": r.resource, "singular": r.singular or r.kind.lower(), "kind": r.kind,
                 "listKind": r.kind + "List"}
        if r.short_names:
            names["shortNames"] = list(r.short_names)
        if r.categories:
            names["categories"] = list(r.categories)
        spec = {"group": r.group, "names": names, "scope": "Namespaced" if r.namespaced else "Cluster",
                "versions": versions, "conversion": {"strategy": "None"}}
        out = (spec, schema_fingerprint(spec))
        if hashed:
            if len(_CANDIDATES) >= _CANDIDATES_KEPT:
                _CANDIDATES.pop(next(iter(_CANDIDATES)))
            _CANDIDATES[ckey] = out
        return out

    async def _import(self, r: ApiResource, name: str, down_crd: dict | None, hub_crd: dict | None,
                      hub_disc: Discovery, report: TypeReport, served: list[ApiResource] | None = None) -> None:
        cluster = self.syncer.cluster_name
        if down_crd is not None and (down_crd["metadata"].get("annotations") or {}).get(C.PUSHED_FROM_ANNOTATION) == self.syncer.logical_cluster:
            return  # our own copy of a hub CRD
        if hub_crd is None and hub_disc.get(r.group, r.resource):
            return  # the hub serves this type itself
        spec, fingerprint = await self._candidate(r, down_crd, served, report)
        label = C.imported_from_label(cluster)
        if hub_crd is None:
            await self._create_hub_crd(name, spec, label, report)
            return
        hub_spec = hub_crd.get("spec") or {}
        ann = hub_crd["metadata"].get("annotations") or {}
        labels = hub_crd["metadata"].get("labels") or {}
        imported = ann.get(C.ORIGIN_ANNOTATION) == "imported"
        importers = {k for k in labels if k.startswith(C.IMPORTED_FROM_PREFIX)}
        if hub_fingerprint(hub_crd) == fingerprint:
            await self._set_importer(hub_crd, label, True, None)
            return
        if imported and ann.get(C.SCHEMA_SOURCE_ANNOTATION) == cluster and importers <= {label}:
            # the cluster's type changed (an upgrade, a CRD update): the hub follows its only source
            new = copy.deepcopy(hub_crd)
            new["spec"] = {**hub_spec, **spec}
            new.pop("status", None)
            await self.hub.request("PUT", f"{CRDS}/{name}", body=new, query={"fieldManager": self.syncer.manager})
            report.changed = True
            report.notes[name] = f"updated from cluster {cluster}"
            self.syncer.events.event(self._crd_ref(hub_crd), "Normal", "TypeUpdated",
                                    f"{name} changed in cluster {cluster}; the hub's schema follows it")
            return
        problems = crd_problems(hub_spec, spec)
        if not problems:
            await self._set_importer(hub_crd, label, imported, None)
            return
        msg = "; ".join(problems)
        report.conflicts[name] = msg
        await self._set_importer(hub_crd, label, False, msg)
        if self._reported.get(name) != msg:
            self._reported[name] = msg
            self.syncer.events.event(self._crd_ref(hub_crd), "Warning", "SchemaConflict",
                                    f"cluster {cluster} serves {name} with an incompatible schema; the hub keeps its own: {msg}")

    async def _create_hub_crd(self, name: str, spec: dict, label: str, report: TypeReport) -> None:
        cluster = self.syncer.cluster_name
        ann = {C.ORIGIN_ANNOTATION: "imported", C.SCHEMA_SOURCE_ANNOTATION: cluster}
        if spec["group"].endswith((".k8s.io", ".kubernetes.io")) or "." not in spec["group"]:
            ann["api-approved.kubernetes.io"] = APPROVED
        body: dict[str, Any] = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                                "metadata": {"name": name, "labels": {label: "true"}, "annotations": ann}, "spec": spec}
        try:
            created = await self.hub.request("POST", CRDS, body=body, query={"fieldManager": self.syncer.manager})
        except ApiError as err:
            if err.status == 409:
                report.changed = True  # another cluster's syncer was first: compared on the next pass
                return
            if err.status != 422 or "spec.versions" not in err.message:
                raise
            # the hub rejects the converted schema: import it without validation rather than not at all
            fallback = copy.deepcopy(body)
            for v in fallback["spec"]["versions"]:
                v["schema"] = {"openAPIV3Schema": copy.deepcopy(PERMISSIVE_SCHEMA)}
                v.get("subresources", {}).pop("scale", None)
            created = await self.hub.request("POST", CRDS, body=fallback, query={"fieldManager": self.syncer.manager})
            report.notes[name] = f"imported without schema validation: the hub rejected the converted schema: {err.message}"
        report.changed = True
        self.syncer.events.event(self._crd_ref(created), "Normal", "TypeImported", f"{name} imported from cluster {cluster}")

    async def _set_importer(self, hub_crd: dict, label: str, importer: bool, conflict: str | None) -> None:
        """Keep this cluster's imported-from label and its schema-conflicts entry current."""
        meta = hub_crd["metadata"]
        labels = meta.get("labels") or {}
        conflicts_raw = (meta.get("annotations") or {}).get(C.SCHEMA_CONFLICTS_ANNOTATION)
        try:
            conflicts = orjson.loads(conflicts_raw) if conflicts_raw else {}
        except orjson.JSONDecodeError:
            conflicts = {}
        cluster = self.syncer.cluster_name
        md: dict = {}
        if importer and label not in labels:
            md["labels"] = {label: "true"}
        elif not importer and label in labels:
            md["labels"] = {label: None}
        if conflicts.get(cluster) != conflict:
            if conflict is None:
                conflicts.pop(cluster, None)
            else:
                conflicts[cluster] = conflict
            md["annotations"] = {C.SCHEMA_CONFLICTS_ANNOTATION: orjson.dumps(conflicts, option=orjson.OPT_SORT_KEYS).decode() if conflicts else None}
            md["resourceVersion"] = meta.get("resourceVersion")
        if md:
            await self.hub.patch(f"{CRDS}/{meta['name']}", {"metadata": md}, MERGE_PATCH, self.syncer.manager)

    def _crd_ref(self, crd: dict) -> dict:
        return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": crd.get("metadata") or {}}

    # -- hub CRDs: push down, and types the cluster stopped serving ------------------------

    def _selected(self, crd: dict) -> bool:
        spec = crd.get("spec") or {}
        plural = (spec.get("names") or {}).get("plural")
        gr = f"{plural}.{spec.get('group')}" if spec.get("group") else str(plural)
        return any(s == "*" or s == gr or s == plural for s in self.syncer.resources)

    async def _hub_crd_housekeeping(self, name: str, crd: dict, down_crd: dict | None, down_disc: Discovery,
                                    offered: set[tuple[str, str]], report: TypeReport) -> None:
        meta = crd["metadata"]
        spec = crd.get("spec") or {}
        group: Any = spec.get("group")
        plural: Any = (spec.get("names") or {}).get("plural")
        imported = (meta.get("annotations") or {}).get(C.ORIGIN_ANNOTATION) == "imported"
        label = C.imported_from_label(self.syncer.cluster_name)
        if imported:
            if label in (meta.get("labels") or {}) and (group, plural) not in offered:
                await self.hub.patch(f"{CRDS}/{name}", {"metadata": {"labels": {label: None}}}, MERGE_PATCH, self.syncer.manager)
                report.changed = True
                self.syncer.events.event(self._crd_ref(crd), "Warning", "TypeRemoved",
                                        f"cluster {self.syncer.cluster_name} no longer serves {name}; the hub keeps the type")
            return
        if meta.get("deletionTimestamp") or not self._selected(crd):
            return
        if not group:
            # a cluster's kube-apiserver refuses a CRD in the core group: such a type is the cluster's own
            if (group, plural) not in offered:
                report.notes[name] = f"{name} is a core-group type; it is never pushed to cluster {self.syncer.cluster_name}"
            return
        # a hub-defined CRD: push it down
        want = crd_spec_from_crd(spec)
        if down_crd is None:
            if down_disc.get(group, plural):
                report.conflicts[name] = f"cluster {self.syncer.cluster_name} serves {name} itself; the hub's CRD is not pushed"
                return
            body = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                    "metadata": {"name": name, "labels": {C.MANAGED_LABEL: self.syncer.label_value},
                                 "annotations": {C.PUSHED_FROM_ANNOTATION: self.syncer.logical_cluster}},
                    "spec": want}
            try:
                await self.down.request("POST", CRDS, body=body, query={"fieldManager": self.syncer.manager})
            except ApiError as err:
                if err.status != 409:
                    raise
            report.changed = True
            report.notes[name] = f"pushed to cluster {self.syncer.cluster_name}"
            return
        if (down_crd["metadata"].get("annotations") or {}).get(C.PUSHED_FROM_ANNOTATION) == self.syncer.logical_cluster:
            have = crd_spec_from_crd(down_crd.get("spec") or {})
            if schema_fingerprint(have) != schema_fingerprint(want) or have.get("versions") != want.get("versions"):
                new = copy.deepcopy(down_crd)
                new["spec"] = {**(down_crd.get("spec") or {}), **want}
                new.pop("status", None)
                await self.down.request("PUT", f"{CRDS}/{name}", body=new, query={"fieldManager": self.syncer.manager})
                report.changed = True
            return
        # the cluster has its own CRD of that name (compared as an import when it is synced)
        problems = crd_problems(spec, crd_spec_from_crd(down_crd.get("spec") or {}))
        if problems and name not in report.conflicts:
            report.conflicts[name] = ("the cluster has its own CRD, incompatible with the hub's (not overwritten): "
                                      + "; ".join(problems))
