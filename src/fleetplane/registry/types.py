"""What the hub knows about one resource: names, scope, subresources, strategy, printer, schema.

A ``ResourceType`` is the registry's unit, like kube-apiserver's per-resource REST storage:
built-in types are declared in :mod:`fleetplane.apis` (one module per API group), custom
resources are derived from CRDs in :mod:`.crd`. The ``Strategy`` holds the type-specific
semantics (defaulting, validation, what an update may change), while :mod:`.store` applies the
generic ones to every type. Everything else the server needs about a kind hangs off the type
too: its Table printer, its OpenAPI definition (from which the patch and apply list metadata
are derived) and its protobuf message name.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ..apimachinery.errors import FieldError
from .apply import ListTypeAt, list_types_from_meta
from .definitions import patch_meta
from .patch import PatchMeta

if TYPE_CHECKING:
    from .printers import Printer
    from .schema import StructuralSchema

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
SUBRESOURCE_VERBS = ("get", "patch", "update")

FieldGetter = Callable[[dict[str, Any]], Any]


def _meta(field_name: str) -> FieldGetter:
    return lambda o: (o.get("metadata") or {}).get(field_name)


def field_getter(*path: str) -> FieldGetter:
    """The getter of a field selector on ``path`` (``status.phase``); None where it is missing."""
    def getter(obj: dict[str, Any]) -> Any:
        cur: Any = obj
        for p in path:
            if not isinstance(cur, dict):
                return None
            cur = cur.get(p)
        return cur

    return getter


def bool_field_getter(*path: str) -> FieldGetter:
    """A boolean field as field selectors compare it: "true", or "false" when unset."""
    get = field_getter(*path)
    return lambda o: "true" if get(o) is True else "false"


META_FIELDS: dict[str, FieldGetter] = {
    "metadata.name": _meta("name"),
    "metadata.namespace": _meta("namespace"),
}


@dataclass(frozen=True)
class ScaleSpec:
    """Where a type keeps what the ``/scale`` subresource shows (CRD ``subresources.scale``)."""

    spec_replicas_path: str
    status_replicas_path: str
    label_selector_path: str | None = None


@dataclass(frozen=True)
class PrinterColumn:
    name: str
    type: str
    json_path: str
    description: str = ""
    format: str = ""
    priority: int = 0


class Strategy:
    """Type-specific behaviour; the defaults are those of a plain custom resource."""

    #: bump metadata.generation on spec change (CRs and CRDs do; ConfigMaps don't)
    tracks_generation = True
    #: PUT without metadata.resourceVersion allowed (core kinds) or 422 (CRs, CRDs)
    allow_unconditional_update = False
    #: status can only change through the /status subresource
    status_subresource = False
    #: an immediate DELETE answers the deleted object, not a Status (kube's ReturnDeletedObject:
    #: Pods, ServiceAccounts, ...)
    returns_deleted_object = False

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        """Clear or default fields the client may not set on create."""
        if self.status_subresource:
            obj.pop("status", None)

    def prepare_for_update(self, obj: dict[str, Any], old: dict[str, Any]) -> None:
        """Reset fields the main endpoint may not change (status, with a status subresource)."""
        if self.status_subresource:
            if "status" in old:
                obj["status"] = old["status"]
            else:
                obj.pop("status", None)

    def prepare_for_status_update(self, obj: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
        """What a write through /status stores: the old object with the new status."""
        new = dict(old)
        new["metadata"] = dict(old["metadata"])
        for k in ("managedFields",):
            if k in obj.get("metadata", {}):
                new["metadata"][k] = obj["metadata"][k]
        if "status" in obj:
            new["status"] = obj["status"]
        else:
            new.pop("status", None)
        return new

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return []

    def validate_update(self, obj: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        return self.validate(obj)

    def spec_changed(self, obj: dict[str, Any], old: dict[str, Any]) -> bool:
        """Whether the change bumps generation: anything outside metadata (and status, if split)."""
        skip = {"metadata", "status"} if self.status_subresource else {"metadata"}
        keys = (set(obj) | set(old)) - skip - {"apiVersion", "kind"}
        return any(obj.get(k) != old.get(k) for k in keys)

    def before_write(self, obj: dict[str, Any], old: dict[str, Any] | None, cluster: str) -> None:
        """Last step before storing: fields computed from the rest of the cluster (CRD status)."""

    def canonicalize(self, obj: dict[str, Any]) -> None:
        """Normalize a stored form (e.g. Secret stringData folded into data)."""

    def grace_period(self, obj: dict[str, Any], options: dict[str, Any]) -> int | None:
        """kube's CheckGracefulDelete: how many seconds a DELETE (with these DeleteOptions) leaves
        the object before it goes, or None for a kind that is deleted at once."""
        return None

    def default(self, obj: dict[str, Any]) -> None:
        """The type's scheme defaults (kube's SetDefaults_*, applied as a body is decoded): set
        before managedFields are computed and before admission sees the object."""

    def on_read(self, obj: dict[str, Any]) -> None:
        """Adjust an object as it is served (e.g. defaulting on read for CRs)."""

    def bind_stored(self, objects: Callable[[str], Iterable[dict[str, Any]]]) -> None:
        """Called once by the registry that serves the type: ``objects(cluster)`` reads the
        kind's stored objects in a logical cluster, current as of every acknowledged write. For
        strategies that allocate from what exists in ``before_write`` (a Service's cluster IP
        and node ports, as kube's Service storage keeps its allocators)."""


class CreateOnly:
    """The storage of a virtual resource that is created and answered, never stored (the access
    reviews, TokenReview, SelfSubjectReview): ``ResourceType.rest``."""

    def __init__(self, create: Callable[..., Any]) -> None:
        self.create = create


@dataclass(frozen=True)
class StoredAs:
    """A kind kept in another kind's storage, converted on the way in and out (kube's cohabitating
    resources: an events.k8s.io/v1 Event is a core/v1 Event in storage, so either API sees every
    Event). Field selectors of the cohabiting kind read the stored form."""

    group: str
    plural: str
    #: the stored form's apiVersion
    api_version: str
    to_storage: Callable[[dict[str, Any]], dict[str, Any]]
    from_storage: Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class ResourceType:
    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    strategy: Strategy = field(default_factory=Strategy)
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    list_kind: str = ""
    #: subresources served: "status", "scale", or built-in extras like "finalize"
    subresources: tuple[str, ...] = ()
    scale: ScaleSpec | None = None
    #: the version objects are stored in (CRDs: the storage version)
    storage_version: str = ""
    #: field selector whitelist: field name -> getter
    field_selectors: Mapping[str, FieldGetter] = field(default_factory=lambda: META_FIELDS)
    printer_columns: tuple[PrinterColumn, ...] | None = None
    #: a built-in kind's Table printer (columns and row cells, :mod:`.printers`); None: the
    #: default table (custom resources print their ``printer_columns``)
    printer: Printer | None = None
    #: a built-in kind's definition in the OpenAPI data (:mod:`.definitions`), e.g.
    #: ``io.k8s.api.core.v1.ConfigMap``: its documents, ``kubectl explain`` and patch metadata
    openapi_definition: str = ""
    #: the fully-qualified protobuf message of a built-in kind (``k8s.io.api.core.v1.ConfigMap``),
    #: by which the protobuf codec finds it; None: JSON only
    protobuf: str | None = None
    #: the kind's OpenAPI v3 schema (components form, without the envelope), for docs and explain
    openapi_schema: dict[str, Any] | None = None
    #: the CRD's structural schema for this version, for custom resources
    schema: StructuralSchema | None = None
    #: custom resource? (merge patch only; defaulting on read; 422 on PUT without RV)
    custom: bool = False
    #: served at all (CRD versions may be served: false)
    served: bool = True
    #: from a CRD: its name and uid, for discovery and cleanup
    crd_name: str = ""
    #: from a CRD: its ``spec.conversion`` (``strategy: Webhook`` converts through a webhook, see
    #: :mod:`.conversion`); None: versions differ only in apiVersion
    conversion: Mapping[str, Any] | None = None
    #: an in-process converter between the kind's versions (``(obj, api_version) -> obj``, see
    #: :mod:`.conversion`): an imported built-in's own, or a plugin's; None: ``conversion`` decides
    converter: Callable[[dict[str, Any], str], dict[str, Any]] | None = None
    #: from a CRD: the storage version's structural schema (prunes what a webhook converts to it)
    storage_schema: StructuralSchema | None = None
    #: the group's preferred version when it has several
    preferred: bool = True
    #: kept in another kind's storage (see :class:`StoredAs`); None: its own
    stored_as: StoredAs | None = None
    #: a Warning header every request for this type carries (a deprecated CRD version)
    warning: str = ""
    #: discovery's storageVersionHash (see :func:`storage_version_hash`); "" for a built-in: its own
    storage_version_hash: str = ""
    #: a virtual resource's own storage (``async create(ctx, obj) -> dict``): the access reviews,
    #: TokenReview and SelfSubjectReview are created, answered and never stored. None: the
    #: generic store. Its verbs are then just ``("create",)``.
    rest: Any = None
    #: subresources with their own storage (``async create(ctx, name, obj) -> dict``), e.g.
    #: ``serviceaccounts/token`` (TokenRequest)
    subresource_rest: dict[str, Any] = field(default_factory=dict)
    #: objects every logical cluster has without storing them (kube's bootstrap ClusterRoles and
    #: bindings, shared by all): cluster -> {name: object}. Served by get and list; the first
    #: write to one stores a copy, which then shadows it in that logical cluster.
    defaults: Callable[[str], Mapping[str, dict[str, Any]]] | None = None

    def __post_init__(self) -> None:
        if self.rest is not None:
            self.verbs = ("create",)
        if not self.list_kind:
            self.list_kind = self.kind + "List"
        if not self.storage_version:
            self.storage_version = self.version

    @cached_property
    def patch_meta(self) -> PatchMeta:
        """Strategic-merge-patch metadata, derived from the kind's OpenAPI definition (kube's
        NewPatchMetaFromOpenAPI); a kind without one has ObjectMeta's only. Custom resources
        take merge patches only, so theirs is never used."""
        return patch_meta(self.openapi_definition)

    @cached_property
    def list_type_at(self) -> ListTypeAt:
        """Server-side apply's list types: from the CRD's structural schema, or else from the
        same OpenAPI extensions the patch metadata is read from."""
        if self.schema is not None:
            return self.schema.list_type_at
        return list_types_from_meta(self.patch_meta)

    def subresource_verbs(self, sub: str) -> list[str]:
        """What discovery advertises for a subresource, from what serves it."""
        storage = self.subresource_rest.get(sub)
        if hasattr(storage, "stream"):
            return ["get"]
        if hasattr(storage, "connect"):
            return ["create", "get"]
        if storage is not None:
            return ["create"]
        return ["update"] if sub == "finalize" else list(SUBRESOURCE_VERBS)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version(self) -> str:
        return self.api_version

    @property
    def group_resource(self) -> str:
        """``plural.group`` as kube writes it in messages (``configmaps``, ``widgets.example.com``)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def qualified_kind(self) -> str:
        return f"{self.kind}.{self.group}" if self.group else self.kind

    def storage_api_version(self) -> str:
        return f"{self.group}/{self.storage_version}" if self.group else self.storage_version


def storage_version_hash(group: str, version: str, kind: str) -> str:
    """kube's discovery.StorageVersionHash: base64 of the first 8 bytes of sha256("group/version/kind")
    of the storage version; clients (the storage-version migrator) compare it to see a storage change."""
    return base64.b64encode(hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()[:8]).decode()
