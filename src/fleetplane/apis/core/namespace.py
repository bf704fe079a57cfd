"""core/v1 Namespaces: ``spec.finalizers`` change only through ``/finalize``, status only through
``/status``; names are DNS labels; no deletecollection (as kube)."""

from __future__ import annotations

from ...apimachinery.errors import FieldError
from ...apimachinery.validation import dns1123_label_error
from ...registry import printers as pr
from ...registry.printers import AGE, NAME, Clock, Column, Printer
from ...registry.types import META_FIELDS, ResourceType, field_getter
from ...registry.validation import validate_object_meta
from .base import DEFINITIONS, PROTOBUF, CoreStrategy


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
        return validate_object_meta(obj, namespaced=False, name_error=dns1123_label_error)


def _namespace_cells(o: dict, clock: Clock) -> list:
    return [pr.meta(o).get("name"), pr.string(pr.get(o, "status", "phase")), clock.since(pr.meta(o).get("creationTimestamp"))]


def resource_types() -> list[ResourceType]:
    return [
        ResourceType("", "v1", "Namespace", "namespaces", "namespace", False, NamespaceStrategy(),
                     short_names=("ns",), subresources=("status", "finalize"),
                     verbs=("create", "delete", "get", "list", "patch", "update", "watch"),  # as kube: no deletecollection
                     field_selectors=dict(META_FIELDS) | {"status.phase": field_getter("status", "phase")},
                     printer=Printer((NAME, Column("Status", description="The status of the namespace"), AGE),
                                     _namespace_cells),
                     openapi_definition=DEFINITIONS + "Namespace", protobuf=PROTOBUF + "Namespace"),
    ]
