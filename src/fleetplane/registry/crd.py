"""CustomResourceDefinitions: their defaulting and validation, their status, and the
ResourceTypes they define.

kube runs the naming and establishing controllers asynchronously; fleetplane computes the
same status synchronously when a CRD is written, so a CRD is Established the moment it is
created and its resources are served in the same revision.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from ..apimachinery import errors as e
from ..apimachinery.errors import FieldError
from ..apimachinery.validation import CRD_CORE_SUFFIX, DNS1123_LABEL, DNS1123_SUBDOMAIN, crd_name
from .conversion import Converter, validate_conversion
from .types import (
    META_FIELDS,
    FieldGetter,
    PrinterColumn,
    ResourceType,
    ScaleSpec,
    Strategy,
    field_getter,
    storage_version_hash,
)

CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
#: Kubernetes' API groups without a dot: CRDs may claim them, so that a physical cluster's
#: built-in types (apps/v1 Deployments...) can be imported as CRDs, as kcp's prototype did.
KUBE_GROUPS_WITHOUT_DOT = frozenset({"apps", "batch", "autoscaling", "policy"})


def default_crd(obj: dict[str, Any]) -> None:
    """Defaults of apiextensions v1 (malformed parts are left for validation to name)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict) and isinstance(names.get("kind"), str):
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", names["kind"] + "List")
    conv = spec.setdefault("conversion", {"strategy": "None"})
    if isinstance(conv, dict):
        conv.setdefault("strategy", "None")
        webhook = conv.get("webhook")
        client = webhook.get("clientConfig") if isinstance(webhook, dict) else None
        service = client.get("service") if isinstance(client, dict) else None
        if isinstance(service, dict):
            service.setdefault("port", 443)
    versions = spec.get("versions")
    for v in versions if isinstance(versions, list) else []:
        if isinstance(v, dict) and "subresources" in v and v["subresources"] is None:
            del v["subresources"]


def validate_crd(obj: dict[str, Any], reserved_core: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())
                 ) -> list[FieldError]:
    """``reserved_core``: the plurals (and singulars) and kinds of the core types the hub serves
    itself, which a core CRD may not claim, so nobody can shadow a built-in."""
    from .schema import validate_structural

    errs: list[FieldError] = []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [e.required("spec")]
    group = spec.get("group")
    names_raw = spec.get("names")
    names: dict[str, Any] = names_raw if isinstance(names_raw, dict) else {}
    if not isinstance(spec.get("names"), dict):
        errs.append(e.required("spec.names") if spec.get("names") is None else e.invalid("spec.names", spec.get("names"), "must be an object"))
    for f in ("plural", "singular", "kind", "listKind"):
        if names.get(f) is not None and not isinstance(names.get(f), str):
            errs.append(e.invalid(f"spec.names.{f}", names[f], "must be a string"))
            names = {k: v for k, v in names.items() if k != f}
    meta_name = (obj.get("metadata") or {}).get("name")
    core = group == "" and isinstance(meta_name, str) and meta_name.endswith("." + CRD_CORE_SUFFIX)
    if core:
        plurals, kinds = reserved_core
        if names.get("plural") in plurals:
            errs.append(e.invalid("spec.names.plural", names["plural"], "the hub serves this core resource itself"))
        if names.get("kind") in kinds:
            errs.append(e.invalid("spec.names.kind", names["kind"], "the hub serves this core kind itself"))
    elif not group:
        errs.append(e.required("spec.group"))
    elif not isinstance(group, str) or not DNS1123_SUBDOMAIN.match(group) or ("." not in group and group not in KUBE_GROUPS_WITHOUT_DOT):
        errs.append(e.invalid("spec.group", group, "should be a domain with at least one dot"))
    plural = names.get("plural")
    if not plural:
        errs.append(e.required("spec.names.plural"))
    elif not DNS1123_LABEL.match(str(plural)):
        errs.append(e.invalid("spec.names.plural", plural, "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"))
    if not names.get("kind"):
        errs.append(e.required("spec.names.kind"))
    for f in ("singular",):
        if names.get(f) and not DNS1123_LABEL.match(str(names[f])):
            errs.append(e.invalid(f"spec.names.{f}", names[f], "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'"))
    for i, sn in enumerate(names.get("shortNames") or []):
        if not isinstance(sn, str) or not DNS1123_LABEL.match(sn):
            errs.append(e.invalid(f"spec.names.shortNames[{i}]", sn, "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'"))
    name = (obj.get("metadata") or {}).get("name")
    if plural and (group or core) and name != crd_name(str(plural), str(group)):
        errs.append(e.invalid("metadata.name", name, "must be spec.names.plural+\".\"+spec.group"))
    scope = spec.get("scope")
    if scope not in ("Namespaced", "Cluster"):
        errs.append(e.not_supported("spec.scope", scope, ["Cluster", "Namespaced"]) if scope else e.required("spec.scope"))
    versions = spec.get("versions")
    if not isinstance(versions, list) or not versions:
        errs.append(e.required("spec.versions", "must have exactly one version marked as storage version"))
        return errs
    storage = 0
    seen: set[Any] = set()
    for i, v in enumerate(versions):
        p = f"spec.versions[{i}]"
        if not isinstance(v, dict):
            errs.append(e.invalid(p, v, "must be an object"))
            continue
        vname = v.get("name")
        if not vname or not DNS1123_LABEL.match(str(vname)):
            errs.append(e.invalid(f"{p}.name", vname, "a DNS-1035 label is required"))
        if isinstance(vname, Hashable):  # a list or object name is invalid (above), not a TypeError
            if vname in seen:
                errs.append(e.duplicate(f"{p}.name", vname))
            seen.add(vname)
        if not isinstance(v.get("served"), bool):
            errs.append(e.required(f"{p}.served"))
        if not isinstance(v.get("storage"), bool):
            errs.append(e.required(f"{p}.storage"))
        elif v["storage"]:
            storage += 1
        schema_box = v.get("schema")
        schema = schema_box.get("openAPIV3Schema") if isinstance(schema_box, dict) else None
        if schema is None:
            errs.append(e.required(f"{p}.schema.openAPIV3Schema", "schemas are required"))
        elif not isinstance(schema, dict):
            errs.append(e.invalid(f"{p}.schema.openAPIV3Schema", schema, "must be an object"))
        else:
            errs += validate_structural(schema, f"{p}.schema.openAPIV3Schema")
        sub = v.get("subresources") or {}
        if not isinstance(sub, dict):
            errs.append(e.invalid(f"{p}.subresources", sub, "must be an object"))
            continue
        scale = sub.get("scale")
        if scale is not None and not isinstance(scale, dict):
            errs.append(e.invalid(f"{p}.subresources.scale", scale, "must be an object"))
        elif scale is not None:
            for f in ("specReplicasPath", "statusReplicasPath"):
                if not scale.get(f):
                    errs.append(e.required(f"{p}.subresources.scale.{f}"))
                elif not str(scale[f]).startswith("."):
                    errs.append(e.invalid(f"{p}.subresources.scale.{f}", scale[f], "should be a json path under .spec or .status"))
    errs += validate_conversion(spec.get("conversion"))
    if storage != 1:
        errs.append(e.invalid("spec.versions", versions if False else f"{storage} storage versions", "must have exactly one version marked as storage version"))
    return errs


def _condition(ctype: str, status: str, reason: str, message: str, now: str, old: list[dict[str, Any]]) -> dict[str, Any]:
    prev = next((c for c in old if c.get("type") == ctype), None)
    when = prev["lastTransitionTime"] if prev and prev.get("status") == status and prev.get("lastTransitionTime") else now
    return {"type": ctype, "status": status, "lastTransitionTime": when, "reason": reason, "message": message}


def compute_status(obj: dict[str, Any], others: list[dict[str, Any]], now: str) -> dict[str, Any]:
    """NamesAccepted/Established (and Terminating) as kube's controllers would set them."""
    spec = obj["spec"]
    names = spec["names"]
    old_status = obj.get("status") or {}
    old_conds = old_status.get("conditions") or []
    conflict = None
    for other in others:
        o_spec = other.get("spec") or {}
        if o_spec.get("group") != spec["group"] or other["metadata"]["name"] == obj["metadata"]["name"]:
            continue
        o_names = (other.get("status") or {}).get("acceptedNames") or o_spec.get("names") or {}
        if names["plural"] in (o_names.get("plural"), o_names.get("singular")) or names["plural"] in (o_names.get("shortNames") or []):
            conflict = ("PluralConflict", f'"{names["plural"]}" is already in use')
        elif names["kind"] == o_names.get("kind"):
            conflict = ("KindConflict", f'"{names["kind"]}" is already in use')
        elif names.get("listKind") == o_names.get("listKind"):
            conflict = ("ListKindConflict", f'"{names.get("listKind")}" is already in use')
        if conflict:
            break
    conds = []
    if conflict:
        conds.append(_condition("NamesAccepted", "False", conflict[0], conflict[1], now, old_conds))
        conds.append(_condition("Established", "False", "NotAccepted", "not all names are accepted", now, old_conds))
        accepted = old_status.get("acceptedNames") or {"plural": "", "kind": ""}
    else:
        conds.append(_condition("NamesAccepted", "True", "NoConflicts", "no conflicts found", now, old_conds))
        conds.append(_condition("Established", "True", "InitialNamesAccepted", "the initial names have been accepted", now, old_conds))
        accepted = {k: names[k] for k in ("plural", "singular", "shortNames", "kind", "listKind", "categories") if names.get(k)}
    if obj["metadata"].get("deletionTimestamp"):
        conds.append(_condition("Terminating", "True", "InstanceDeletionPending",
                                "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon", now, old_conds))
    stored = list(old_status.get("storedVersions") or [])
    storage_version = next(v["name"] for v in spec["versions"] if v.get("storage"))
    if storage_version not in stored:
        stored.append(storage_version)
    return {"conditions": conds, "acceptedNames": accepted, "storedVersions": stored}


def is_established(obj: dict[str, Any]) -> bool:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Established":
            return bool(c.get("status") == "True")
    return False


class CustomResourceStrategy(Strategy):
    """Custom resources: schema pruning, defaulting and validation; status split when enabled.

    ``builtin``: the strategy of the kube built-in an imported type stands for (a cluster's apps/v1
    Deployment): its scheme defaults (``default``, only that) apply after the schema's pruning and
    defaults, on every write and on read, so the hub stores and serves what a cluster would."""

    tracks_generation = True
    allow_unconditional_update = False

    def __init__(self, rt_schema: Any, status_subresource: bool, builtin: Strategy | None = None) -> None:
        self.schema = rt_schema
        self.status_subresource = status_subresource
        self.builtin = builtin

    def default(self, obj: dict[str, Any]) -> None:
        """The built-in's scheme defaults (kube's SetDefaults_*), kept to what the schema has fields
        for: the type's schema decides what is stored, and a field it lacks is nobody's "unknown
        field". The store runs this after the schema's own defaults, which fill a field first where
        both would (an imported schema's defaults come from the same kube OpenAPI, so they agree)."""
        if self.builtin is None:
            return
        self.builtin.default(obj)
        if self.schema is not None:
            self.schema.prune(obj)

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return self.schema.validate(obj) if self.schema is not None else []

    def validate_update(self, obj: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        return self.schema.validate(obj, old) if self.schema is not None else []

    def on_read(self, obj: dict[str, Any]) -> None:
        """Defaulting on read, as kube's decoding from storage (objects stored before a default)."""
        if self.schema is not None:
            self.schema.default(obj)
        self.default(obj)


#: the kube built-in a custom type imports, by (group, version, kind), if fleetplane knows it
BuiltinLookup = Callable[[str, str, str], "ResourceType | None"]
#: the in-process converter of a kind, by (group, kind), if there is one
ConverterLookup = Callable[[str, str], "Converter | None"]


def types_from_crd(obj: dict[str, Any], imported_builtin: BuiltinLookup | None = None,
                   converter_for: ConverterLookup | None = None) -> list[ResourceType]:
    """One ResourceType per served version of an established CRD. ``imported_builtin`` (the
    catalog's :func:`~fleetplane.registry.catalog.imported_builtin`) names the kube built-in a
    cluster's type imports: its OpenAPI definition becomes the type's ``openapi_definition`` and
    its strategy's scheme defaults the type's (:class:`CustomResourceStrategy`).
    ``converter_for`` (``Catalog.converter_for``) gives a CRD of several versions without a
    webhook its in-process converter (:mod:`.conversion`)."""
    from .schema.compiled import shared_schema

    spec = obj["spec"]
    names = (obj.get("status") or {}).get("acceptedNames") or spec["names"]
    versions = [v for v in spec["versions"] if v.get("served")]
    storage_version = next(v["name"] for v in spec["versions"] if v.get("storage"))
    ordered = sorted(versions, key=lambda v: version_priority(v["name"]))
    storage_spec = next(v for v in spec["versions"] if v.get("storage"))
    storage_schema = shared_schema(_schema_doc(storage_spec))
    conversion = spec.get("conversion")
    webhook = isinstance(conversion, dict) and conversion.get("strategy") == "Webhook"
    converter = (converter_for(spec["group"], names["kind"])
                 if converter_for is not None and not webhook and len(spec["versions"]) > 1 else None)
    out = []
    for v in versions:
        schema_doc = _schema_doc(v)
        schema = storage_schema if v is storage_spec else shared_schema(schema_doc)
        sub = v.get("subresources") or {}
        scale = sub.get("scale")
        cols = v.get("additionalPrinterColumns")
        printer = tuple(
            PrinterColumn(c["name"], c.get("type", "string"), c["jsonPath"], c.get("description", ""),
                          c.get("format", ""), int(c.get("priority", 0)))
            for c in cols
        ) if cols else None
        selectable = dict(META_FIELDS)
        for sf in v.get("selectableFields") or []:
            selectable[sf["jsonPath"].lstrip(".")] = _json_path_getter(sf["jsonPath"])
        subresources = tuple(s for s in ("status", "scale") if s in sub)
        builtin = imported_builtin(spec["group"], v["name"], names["kind"]) if imported_builtin else None
        out.append(ResourceType(
            group=spec["group"], version=v["name"], kind=names["kind"], plural=names["plural"],
            singular=names.get("singular") or names["kind"].lower(), namespaced=spec["scope"] == "Namespaced",
            strategy=CustomResourceStrategy(schema, "status" in sub, builtin.strategy if builtin is not None else None),
            short_names=tuple(names.get("shortNames") or ()), categories=tuple(names.get("categories") or ()),
            list_kind=names.get("listKind") or names["kind"] + "List", subresources=subresources,
            scale=ScaleSpec(scale["specReplicasPath"], scale["statusReplicasPath"], scale.get("labelSelectorPath")) if scale else None,
            storage_version=storage_version, field_selectors=selectable, printer_columns=printer,
            openapi_schema=schema_doc, schema=schema, custom=True, crd_name=obj["metadata"]["name"],
            conversion=spec.get("conversion"), storage_schema=storage_schema, converter=converter,
            preferred=v is ordered[0],
            storage_version_hash=storage_version_hash(spec["group"], storage_version, names["kind"]),
            warning=_deprecation_warning(v, spec, names["kind"]),
            openapi_definition=builtin.openapi_definition if builtin is not None else "",
            printer=builtin.printer if builtin is not None else None,
        ))
    return out


def accepts_strategic_merge_patch(rt: ResourceType) -> bool:
    """kube refuses strategic merge patches on custom resources (415); an imported built-in kind
    takes them with the built-in's patch metadata (``catalog.imported_builtin``)."""
    return not rt.custom or bool(rt.openapi_definition)


def _schema_doc(version: dict[str, Any]) -> dict[str, Any]:
    doc: dict[str, Any] = (version.get("schema") or {}).get("openAPIV3Schema") or {
        "type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return doc


def _json_path_getter(path: str) -> FieldGetter:
    return field_getter(*(p for p in path.lstrip(".").split(".") if p))


def _deprecation_warning(version: dict[str, Any], spec: dict[str, Any], kind: str) -> str:
    """The Warning a deprecated version's requests carry: its own text, or kube's default naming
    the highest-priority served, non-deprecated version above it."""
    if not version.get("deprecated"):
        return ""
    if version.get("deprecationWarning") is not None:
        return str(version["deprecationWarning"])
    name, group = version["name"], spec["group"]
    text = f"{group}/{name} {kind} is deprecated"
    better = sorted((v["name"] for v in spec["versions"] if v.get("served") and not v.get("deprecated")
                     and version_priority(v["name"]) < version_priority(name)), key=version_priority)
    return f"{text}; use {group}/{better[0]} {kind}" if better else text


def version_priority(v: str) -> tuple[int, int, int, str]:
    """Kubernetes version ordering: GA > beta > alpha, higher numbers first, others last by name."""
    import re

    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", v)
    if not m:
        return (3, 0, 0, v)
    major, stage, minor = int(m.group(1)), m.group(2), int(m.group(3) or 0)
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -major, -minor, v)
