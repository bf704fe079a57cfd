"""core/v1 PersistentVolumeClaims (served by a simulated physical cluster): kube's defaults
(``volumeMode: Filesystem``), ``ValidatePersistentVolumeClaimSpec`` (access modes and a positive
storage request required), the update rule (spec immutable but for the storage request and a
volumeName set once), quantities stored canonically, the status subresource and kube 1.32's
printer, and the ``kubernetes.io/pvc-protection`` finalizer on create. StatefulSets'
``volumeClaimTemplates`` are defaulted with the same function.
"""

from __future__ import annotations

from typing import Any

from ...apimachinery import errors as e
from ...apimachinery.errors import FieldError
from ...apimachinery.quantity import QuantityError, canonical_quantity, parse_quantity
from ...apimachinery.validation import dns1123_subdomain_error
from ...registry import printers as pr
from ...registry.printers import AGE, NAME, Clock, Column, Printer
from ...registry.types import ResourceType
from .base import DEFINITIONS, PROTOBUF, CoreStrategy

PVC_PROTECTION = "kubernetes.io/pvc-protection"
ACCESS_MODES = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"]
VOLUME_MODES = ["Block", "Filesystem"]
#: GetAccessModesAsString's order and short forms
_SHORT_MODES = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"), ("ReadWriteOncePod", "RWOP"))


def default_claim(claim: Any) -> None:
    """``SetDefaults_PersistentVolumeClaim(Spec)``: a claim (or claim template) is a Filesystem,
    Pending until bound."""
    if not isinstance(claim, dict):
        return
    spec = claim.get("spec")
    if isinstance(spec, dict):
        spec.setdefault("volumeMode", "Filesystem")
    status = claim.get("status")
    if status is None:
        status = claim["status"] = {}
    if isinstance(status, dict) and not status.get("phase"):
        status["phase"] = "Pending"


def validate_claim_spec(spec: Any, path: str) -> list[FieldError]:
    """``ValidatePersistentVolumeClaimSpec`` for what a simulated cluster acts on."""
    if not isinstance(spec, dict):
        return [e.required(path)]
    errs: list[FieldError] = []
    modes = spec.get("accessModes")
    if not modes:
        errs.append(e.required(f"{path}.accessModes", "at least 1 access mode is required"))
    for mode in modes if isinstance(modes, list) else []:
        if mode not in ACCESS_MODES:
            errs.append(e.not_supported(f"{path}.accessModes", mode, ACCESS_MODES))
    requests = (spec.get("resources") or {}).get("requests") if isinstance(spec.get("resources"), dict) else None
    storage = requests.get("storage") if isinstance(requests, dict) else None
    key = f"{path}.resources[storage]"
    if storage is None:
        errs.append(e.required(key))
    else:
        try:
            if parse_quantity(storage) <= 0:
                errs.append(e.invalid(key, storage, "must be greater than zero"))
        except QuantityError:
            errs.append(e.invalid(key, storage, "must be a quantity"))
    cls = spec.get("storageClassName")
    if cls and dns1123_subdomain_error(str(cls)):
        errs.append(e.invalid(f"{path}.storageClassName", cls, dns1123_subdomain_error(str(cls)) or ""))
    vm = spec.get("volumeMode")
    if vm is not None and vm not in VOLUME_MODES:
        errs.append(e.not_supported(f"{path}.volumeMode", vm, VOLUME_MODES))
    return errs


def requested_storage(claim: dict) -> str | None:
    """The claim's ``spec.resources.requests.storage`` (canonical), or None."""
    value = pr.get(claim, "spec", "resources", "requests", "storage")
    return value if isinstance(value, str) else None


class PersistentVolumeClaimStrategy(CoreStrategy):
    """core/v1 PersistentVolumeClaim: status through its subresource."""

    status_subresource = True

    def default(self, obj: dict) -> None:
        default_claim(obj)

    def canonicalize(self, obj: dict) -> None:
        for values in (pr.get(obj, "spec", "resources", "requests"), pr.get(obj, "spec", "resources", "limits"),
                       pr.get(obj, "status", "capacity")):
            if not isinstance(values, dict):
                continue
            for name, q in list(values.items()):
                try:
                    values[name] = canonical_quantity(q)
                except QuantityError as exc:
                    raise e.bad_request(
                        f'PersistentVolumeClaim in version "v1" cannot be handled as a PersistentVolumeClaim: {exc}') from None

    def prepare_for_create(self, obj: dict) -> None:
        """Pending until bound; the ``kubernetes.io/pvc-protection`` finalizer kube's
        StorageObjectInUseProtection admission adds (the simulated provisioner removes it once no
        pod uses the claim)."""
        super().prepare_for_create(obj)
        obj["status"] = {"phase": "Pending"}
        meta = obj.setdefault("metadata", {})
        finalizers = meta.get("finalizers") if isinstance(meta.get("finalizers"), list) else []
        if PVC_PROTECTION not in finalizers:
            meta["finalizers"] = [*finalizers, PVC_PROTECTION]

    def prepare_for_status_update(self, obj: dict, old: dict) -> dict:
        new = dict(obj)
        if "spec" in old:
            new["spec"] = old["spec"]
        return new

    def validate(self, obj: dict) -> list[FieldError]:
        return super().validate(obj) + validate_claim_spec(obj.get("spec"), "spec")

    def validate_update(self, obj: dict, old: dict) -> list[FieldError]:
        errs = self.validate(obj)
        new_spec = dict(obj.get("spec") or {})
        old_spec = dict(old.get("spec") or {})
        if not old_spec.get("volumeName"):
            old_spec["volumeName"] = new_spec.get("volumeName")  # set once, by the binder
        if (obj.get("status") or {}).get("phase") == "Bound":
            for s in (new_spec, old_spec):  # a bound claim may be resized
                res = dict(s.get("resources") or {})
                res["requests"] = {k: v for k, v in (res.get("requests") or {}).items() if k != "storage"}
                s["resources"] = res
        if {k: v for k, v in new_spec.items() if v is not None} != {k: v for k, v in old_spec.items() if v is not None}:
            errs.append(e.forbidden("spec", "spec is immutable after creation except resources.requests and "
                                            "volumeAttributesClassName for bound claims"))
        new_size, old_size = requested_storage(obj), requested_storage(old)
        try:
            if new_size and old_size and parse_quantity(new_size) < parse_quantity(old_size):
                errs.append(e.forbidden("spec.resources.requests.storage", "field can not be less than previous value"))
        except QuantityError:
            pass
        return errs


def access_modes(modes: Any) -> str:
    """helper.GetAccessModesAsString: RWO, ROX, RWX, RWOP in that order."""
    have = set(modes) if isinstance(modes, list) else set()
    return ",".join(short for mode, short in _SHORT_MODES if mode in have)


def _pvc_cells(o: dict, clock: Clock) -> list:
    spec, status, meta = o.get("spec") or {}, o.get("status") or {}, pr.meta(o)
    phase = "Terminating" if meta.get("deletionTimestamp") else pr.string(status.get("phase"))
    capacity = modes = ""
    if spec.get("volumeName"):
        modes = access_modes(status.get("accessModes"))
        capacity = pr.string(pr.get(status, "capacity", "storage")) or "0"
    cls = (meta.get("annotations") or {}).get("volume.beta.kubernetes.io/storage-class") or pr.string(spec.get("storageClassName"))
    return [meta.get("name"), phase, pr.string(spec.get("volumeName")), capacity, modes, cls,
            pr.string(spec.get("volumeAttributesClassName")) or "<unset>", clock.since(meta.get("creationTimestamp")),
            pr.string(spec.get("volumeMode")) or "<unset>"]


def resource_types() -> list[ResourceType]:
    return [
        ResourceType("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", "persistentvolumeclaim", True,
                     PersistentVolumeClaimStrategy(), short_names=("pvc",), subresources=("status",),
                     printer=Printer((
                         NAME,
                         Column("Status", description=(DEFINITIONS + "PersistentVolumeClaimStatus", "phase")),
                         Column("Volume", description=(DEFINITIONS + "PersistentVolumeClaimSpec", "volumeName")),
                         Column("Capacity", description=(DEFINITIONS + "PersistentVolumeClaimStatus", "capacity")),
                         Column("Access Modes", description=(DEFINITIONS + "PersistentVolumeClaimStatus", "accessModes")),
                         Column("StorageClass", description="StorageClass of the pvc"),
                         Column("VolumeAttributesClass", description="VolumeAttributesClass of the pvc"),
                         AGE,
                         Column("VolumeMode", priority=1, description=(DEFINITIONS + "PersistentVolumeClaimSpec", "volumeMode")),
                     ), _pvc_cells),
                     openapi_definition=DEFINITIONS + "PersistentVolumeClaim", protobuf=PROTOBUF + "PersistentVolumeClaim"),
    ]
