"""The built-in types the hub serves, and nothing that acts on workloads.

Namespaces, ConfigMaps, Secrets, ServiceAccounts, Events (core/v1 and events.k8s.io/v1),
Leases, CustomResourceDefinitions, and fleetplane's own LogicalCluster (in ``root``).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable

from ..apimachinery import errors as e
from ..apimachinery.errors import FieldError
from . import crd
from .meta import now_rfc3339
from .rbac import rbac_types
from .types import META_FIELDS, ResourceType, Strategy
from .validation import CLUSTER_PATH, CLUSTER_PATH_TEXT, dns_label_error, validate_object_meta

_DATA_KEY = re.compile(r"^[-._a-zA-Z0-9]+\Z")


class CoreStrategy(Strategy):
    """Core kinds: no generation, unconditional PUT allowed."""

    tracks_generation = False
    allow_unconditional_update = True

    def __init__(self, namespaced: bool = True) -> None:
        self.namespaced = namespaced

    def validate(self, obj: dict) -> list[FieldError]:
        return validate_object_meta(obj, namespaced=self.namespaced)


class NamespaceStrategy(CoreStrategy):
    status_subresource = True

    def __init__(self) -> None:
        super().__init__(namespaced=False)

    def prepare_for_create(self, obj: dict) -> None:
        obj["spec"] = {"finalizers": ["kubernetes"]}
        obj["status"] = {"phase": "Active"}

    def prepare_for_update(self, obj: dict, old: dict) -> None:
        # spec.finalizers change only through /finalize; status only through /status.
        obj["spec"] = old.get("spec", {})
        obj["status"] = old.get("status", {})

    def prepare_for_finalize(self, obj: dict, old: dict) -> dict:
        """PUT .../finalize changes spec.finalizers and nothing else."""
        new = dict(old)
        new["spec"] = {"finalizers": list((obj.get("spec") or {}).get("finalizers") or [])}
        return new

    def validate(self, obj: dict) -> list[FieldError]:
        return validate_object_meta(obj, namespaced=False, name_error=dns_label_error)


def _validate_data_keys(data: object, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if data is None:
        return errs
    if not isinstance(data, dict):
        return [e.invalid(path, data, "must be a map")]
    for k in data:
        if len(k) > 253 or not _DATA_KEY.match(k):
            errs.append(e.invalid(path, k, "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"))
    return errs


def _immutable_errors(obj: dict, old: dict, fields: tuple[str, ...]) -> list[FieldError]:
    errs = []
    if old.get("immutable"):
        if not obj.get("immutable"):
            errs.append(e.forbidden("immutable", "field is immutable when `immutable` is set"))
        for f in fields:
            if obj.get(f) != old.get(f):
                errs.append(e.forbidden(f, "field is immutable when `immutable` is set"))
    return errs


class ConfigMapStrategy(CoreStrategy):
    def validate(self, obj: dict) -> list[FieldError]:
        errs = super().validate(obj)
        data, binary = obj.get("data"), obj.get("binaryData")
        errs += _validate_data_keys(data, "data")
        errs += _validate_data_keys(binary, "binaryData")
        if isinstance(data, dict):
            for k, v in data.items():
                if not isinstance(v, str):
                    errs.append(e.invalid(f"data[{k}]", v, "must be a string"))
        if isinstance(data, dict) and isinstance(binary, dict):
            for k in set(data) & set(binary):
                errs.append(e.invalid("data", k, "duplicate of key present in binaryData"))
        if isinstance(binary, dict):
            errs += _check_base64(binary, "binaryData")
        return errs

    def validate_update(self, obj: dict, old: dict) -> list[FieldError]:
        return self.validate(obj) + _immutable_errors(obj, old, ("data", "binaryData"))


def _check_base64(data: dict, path: str) -> list[FieldError]:
    errs = []
    for k, v in data.items():
        try:
            if not isinstance(v, str):
                raise ValueError
            base64.b64decode(v, validate=True)
        except (ValueError, binascii.Error):
            errs.append(e.invalid(f"{path}[{k}]", "<value>", "must be base64-encoded"))
    return errs


class SecretStrategy(CoreStrategy):
    def canonicalize(self, obj: dict) -> None:
        # stringData is write-only: folded into data, never stored or returned.
        string_data = obj.pop("stringData", None)
        if isinstance(string_data, dict):
            data = obj.setdefault("data", {}) or {}
            for k, v in string_data.items():
                if isinstance(v, str):
                    data[k] = base64.b64encode(v.encode()).decode()
            obj["data"] = data
        obj.setdefault("type", "Opaque")

    def validate(self, obj: dict) -> list[FieldError]:
        errs = super().validate(obj)
        data = obj.get("data")
        errs += _validate_data_keys(data, "data")
        if isinstance(data, dict):
            errs += _check_base64(data, "data")
            size = sum(len(v) * 3 // 4 for v in data.values() if isinstance(v, str))
            if size > 1024 * 1024:
                errs.append(e.too_long("data", 1024 * 1024))
        return errs

    def validate_update(self, obj: dict, old: dict) -> list[FieldError]:
        errs = self.validate(obj) + _immutable_errors(obj, old, ("data",))
        if obj.get("type") != old.get("type"):
            errs.append(e.invalid("type", obj.get("type"), "field is immutable"))
        return errs


#: the CRDs stored in a logical cluster (the registry reads them from its watch cache)
CRDLister = Callable[[str], list[dict]]


def no_crds(cluster: str) -> list[dict]:
    """A catalog without storage behind it (tables, OpenAPI) has no stored CRDs."""
    return []


class CRDStrategy(Strategy):
    status_subresource = True
    tracks_generation = True
    allow_unconditional_update = False

    def __init__(self, crds_in: CRDLister) -> None:
        #: the stored CRDs of a logical cluster, for name conflicts
        self.crds_in = crds_in

    def before_write(self, obj: dict, old: dict | None, cluster: str) -> None:
        if old is None:
            fins = obj["metadata"].setdefault("finalizers", [])
            if crd.CLEANUP_FINALIZER not in fins:
                fins.append(crd.CLEANUP_FINALIZER)
        others = [o for o in self.crds_in(cluster) if o["metadata"]["name"] != obj["metadata"]["name"]]
        obj["status"] = crd.compute_status(obj, others, now_rfc3339())

    def prepare_for_create(self, obj: dict) -> None:
        obj.pop("status", None)
        crd.default_crd(obj)

    def prepare_for_update(self, obj: dict, old: dict) -> None:
        super().prepare_for_update(obj, old)
        crd.default_crd(obj)

    def spec_changed(self, obj: dict, old: dict) -> bool:
        return obj.get("spec") != old.get("spec")

    def validate(self, obj: dict) -> list[FieldError]:
        return validate_object_meta(obj, namespaced=False) + crd.validate_crd(obj)

    def validate_update(self, obj: dict, old: dict) -> list[FieldError]:
        errs = self.validate(obj)
        if (obj.get("spec") or {}).get("scope") != (old.get("spec") or {}).get("scope"):
            errs.append(e.invalid("spec.scope", (obj.get("spec") or {}).get("scope"), "field is immutable"))
        if (obj.get("spec") or {}).get("group") != (old.get("spec") or {}).get("group"):
            errs.append(e.invalid("spec.group", (obj.get("spec") or {}).get("group"), "field is immutable"))
        return errs


class LogicalClusterStrategy(Strategy):
    """fleetplane's LogicalCluster: names follow kcp's path grammar (``root``, ``team-a:dev``)."""

    tracks_generation = False
    allow_unconditional_update = True
    status_subresource = True

    def prepare_for_create(self, obj: dict) -> None:
        obj["status"] = {"phase": "Ready"}

    def before_write(self, obj: dict, old: dict | None, cluster: str) -> None:
        fins = obj["metadata"].setdefault("finalizers", [])
        if old is None and LOGICAL_CLUSTER_FINALIZER not in fins:
            fins.append(LOGICAL_CLUSTER_FINALIZER)
        if obj["metadata"].get("deletionTimestamp"):
            obj.setdefault("status", {})["phase"] = "Deleting"

    def validate(self, obj: dict) -> list[FieldError]:
        return validate_object_meta(obj, namespaced=False, name_error=cluster_name_error)


def cluster_name_error(name: str) -> str | None:
    if CLUSTER_PATH.match(name):
        return None
    return "does not match the regex " + CLUSTER_PATH_TEXT


def _get(*path: str):
    def getter(obj: dict):
        cur: object = obj
        for p in path:
            if not isinstance(cur, dict):
                return None
            cur = cur.get(p)
        return cur

    return getter


EVENT_FIELDS = dict(META_FIELDS) | {
    f"involvedObject.{f}": _get("involvedObject", f)
    for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
} | {
    "reason": _get("reason"),
    "reportingComponent": _get("reportingComponent"),
    "source": _get("source", "component"),
    "type": _get("type"),
}

EVENTS_V1_FIELDS = dict(META_FIELDS) | {
    f"regarding.{f}": _get("regarding", f)
    for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
} | {"reason": _get("reason"), "reportingController": _get("reportingController"), "type": _get("type")}

LOGICAL_CLUSTER_GROUP = "tenancy.fleetplane.io"
LOGICAL_CLUSTER_FINALIZER = "tenancy.fleetplane.io/logical-cluster"


def builtin_types(crds_in: CRDLister = no_crds) -> list[ResourceType]:
    """Fresh ResourceType objects for every built-in resource; ``crds_in`` tells the CRD strategy
    which CRDs a logical cluster already has."""
    return [
        ResourceType("", "v1", "Namespace", "namespaces", "namespace", False, NamespaceStrategy(),
                     short_names=("ns",), subresources=("status", "finalize"),
                     verbs=("create", "delete", "get", "list", "patch", "update", "watch"),  # as kube: no deletecollection
                     field_selectors=dict(META_FIELDS) | {"status.phase": _get("status", "phase")}),
        ResourceType("", "v1", "ConfigMap", "configmaps", "configmap", True, ConfigMapStrategy(),
                     short_names=("cm",)),
        ResourceType("", "v1", "Secret", "secrets", "secret", True, SecretStrategy(),
                     field_selectors=dict(META_FIELDS) | {"type": _get("type")}),
        ResourceType("", "v1", "ServiceAccount", "serviceaccounts", "serviceaccount", True, CoreStrategy(),
                     short_names=("sa",)),
        ResourceType("", "v1", "Event", "events", "event", True, CoreStrategy(), short_names=("ev",),
                     field_selectors=EVENT_FIELDS),
        ResourceType("events.k8s.io", "v1", "Event", "events", "event", True, CoreStrategy(),
                     short_names=("ev",), field_selectors=EVENTS_V1_FIELDS),
        ResourceType("coordination.k8s.io", "v1", "Lease", "leases", "lease", True, CoreStrategy()),
        ResourceType("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions",
                     "customresourcedefinition", False, CRDStrategy(crds_in), short_names=("crd", "crds"),
                     categories=("api-extensions",), subresources=("status",)),
        *rbac_types(),
    ]


def logical_cluster_type() -> ResourceType:
    """Served in ``root`` only: the list of logical clusters, and a way to delete one."""
    return ResourceType(LOGICAL_CLUSTER_GROUP, "v1alpha1", "LogicalCluster", "logicalclusters",
                        "logicalcluster", False, LogicalClusterStrategy(), short_names=("lc",),
                        subresources=("status",))
