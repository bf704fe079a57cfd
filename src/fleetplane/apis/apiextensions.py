"""The apiextensions group (``apiextensions.k8s.io/v1``): CustomResourceDefinitions. The CRD
machinery (defaulting, validation, status, the types a CRD defines) is :mod:`fleetplane.registry.crd`;
this is the kind's strategy. No printer: kube prints CRDs with the default table."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from ..apimachinery import errors as e
from ..apimachinery.errors import FieldError
from ..apimachinery.metatime import now_rfc3339
from ..registry import crd
from ..registry.types import ResourceType, Strategy
from ..registry.validation import validate_object_meta
from .core import resource_types as core_resource_types

CRD_DEFINITION = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"


#: the CRDs stored in a logical cluster (the registry reads them from its watch cache)
CRDLister = Callable[[str], list[dict]]


def no_crds(cluster: str) -> list[dict]:
    """A catalog without storage behind it (tables, OpenAPI) has no stored CRDs."""
    return []


@cache
def _core_builtins() -> tuple[frozenset[str], frozenset[str]]:
    """The plurals (and singulars) and kinds of the core types the hub serves itself."""
    core = core_resource_types()
    return frozenset(n for rt in core for n in (rt.plural, rt.singular)), frozenset(rt.kind for rt in core)


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
        return validate_object_meta(obj, namespaced=False) + crd.validate_crd(obj, _core_builtins())

    def validate_update(self, obj: dict, old: dict) -> list[FieldError]:
        if obj.get("spec") == old.get("spec"):
            # Ratcheting, as kube's CRD update validation spares what an update leaves as it was:
            # the spec was valid when written. A metadata-only change (each cluster's Syncer adds
            # its imported-from label) then skips compiling every version's schema, which with
            # 1,000 clusters attaching was 40 % of the hub's CPU.
            return validate_object_meta(obj, namespaced=False)
        errs = self.validate(obj)
        if (obj.get("spec") or {}).get("scope") != (old.get("spec") or {}).get("scope"):
            errs.append(e.invalid("spec.scope", (obj.get("spec") or {}).get("scope"), "field is immutable"))
        if (obj.get("spec") or {}).get("group") != (old.get("spec") or {}).get("group"):
            errs.append(e.invalid("spec.group", (obj.get("spec") or {}).get("group"), "field is immutable"))
        return errs


def resource_types(crds_in: CRDLister = no_crds) -> list[ResourceType]:
    """``crds_in`` tells the CRD strategy which CRDs a logical cluster already has."""
    return [
        ResourceType("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions",
                     "customresourcedefinition", False, CRDStrategy(crds_in), short_names=("crd", "crds"),
                     categories=("api-extensions",), subresources=("status",),
                     openapi_definition=CRD_DEFINITION,
                     protobuf="k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"),
    ]
