"""core/v1 Nodes (served by a simulated physical cluster): cluster-scoped; the registering
kubelet sets status on create, with capacity and allocatable as canonical quantities."""

from __future__ import annotations

from ...apimachinery import errors as e
from ...apimachinery.errors import FieldError
from ...apimachinery.quantity import QuantityError, canonical_quantity
from ...registry import printers as pr
from ...registry.printers import AGE, NAME, Clock, Column, Printer
from ...registry.types import META_FIELDS, ResourceType, Strategy, bool_field_getter
from ...registry.validation import validate_object_meta
from .base import DEFINITIONS, PROTOBUF
from .podspec import TAINT_EFFECTS


class NodeStrategy(Strategy):
    """core/v1 Node: cluster-scoped; the registering kubelet sets status on create."""

    tracks_generation = False
    allow_unconditional_update = True
    status_subresource = True

    def canonicalize(self, obj: dict) -> None:
        status = obj.get("status")
        if not isinstance(status, dict):
            return
        for part in ("capacity", "allocatable"):
            values = status.get(part)
            if isinstance(values, dict):
                for name, q in list(values.items()):
                    try:
                        values[name] = canonical_quantity(q)
                    except QuantityError as exc:
                        raise e.bad_request(f'Node in version "v1" cannot be handled as a Node: {exc}') from None

    def prepare_for_create(self, obj: dict) -> None:
        status = obj.get("status")
        if isinstance(status, dict) and isinstance(status.get("capacity"), dict) and "allocatable" not in status:
            status["allocatable"] = dict(status["capacity"])

    def prepare_for_status_update(self, obj: dict, old: dict) -> dict:
        new = dict(obj)
        new["spec"] = old.get("spec", {})
        if "spec" not in old:
            new.pop("spec", None)
        return new

    def validate(self, obj: dict) -> list[FieldError]:
        errs = validate_object_meta(obj, namespaced=False)
        spec = obj.get("spec") or {}
        for i, t in enumerate(spec.get("taints") or []):
            p = f"spec.taints[{i}]"
            if not isinstance(t, dict) or not t.get("key"):
                errs.append(e.required(f"{p}.key"))
                continue
            if t.get("effect") not in TAINT_EFFECTS:
                errs.append(e.required(f"{p}.effect") if not t.get("effect")
                            else e.not_supported(f"{p}.effect", t.get("effect"), TAINT_EFFECTS))
        return errs

    def validate_update(self, obj: dict, old: dict) -> list[FieldError]:
        errs = self.validate(obj)
        old_cidr = (old.get("spec") or {}).get("podCIDR")
        if old_cidr and (obj.get("spec") or {}).get("podCIDR") != old_cidr:
            errs.append(e.forbidden("spec.podCIDR", "node updates may not change podCIDR except from \"\" to valid"))
        return errs


NODE_FIELDS = {"metadata.name": META_FIELDS["metadata.name"], "spec.unschedulable": bool_field_getter("spec", "unschedulable")}


def _node_cells(o: dict, clock: Clock) -> list:
    spec, status, meta = o.get("spec") or {}, o.get("status") or {}, pr.meta(o)
    ready = pr.condition(status.get("conditions"), "Ready")
    states = []
    if ready is not None:
        states.append("Ready" if ready.get("status") == "True" else "NotReady")
    if not states:
        states.append("Unknown")
    if spec.get("unschedulable"):
        states.append("SchedulingDisabled")
    roles = set()
    for k, v in (meta.get("labels") or {}).items():
        if k.startswith("node-role.kubernetes.io/"):
            role = k[len("node-role.kubernetes.io/"):]
            if role:
                roles.add(role)
        elif k == "kubernetes.io/role" and v:
            roles.add(v)
    info = status.get("nodeInfo") or {}
    addresses = [a for a in status.get("addresses") or [] if isinstance(a, dict)]
    internal = next((pr.string(a.get("address")) for a in addresses if a.get("type") == "InternalIP"), "<none>")
    external = next((pr.string(a.get("address")) for a in addresses if a.get("type") == "ExternalIP"), "<none>")
    return [meta.get("name"), ",".join(states), ",".join(sorted(roles)) or "<none>",
            clock.since(meta.get("creationTimestamp")), pr.string(info.get("kubeletVersion")), internal, external,
            pr.string(info.get("osImage")) or "<unknown>", pr.string(info.get("kernelVersion")) or "<unknown>",
            pr.string(info.get("containerRuntimeVersion")) or "<unknown>"]


def resource_types() -> list[ResourceType]:
    return [
        ResourceType("", "v1", "Node", "nodes", "node", False, NodeStrategy(), short_names=("no",),
                     subresources=("status",), field_selectors=NODE_FIELDS,
                     printer=Printer((
                         NAME,
                         Column("Status", description="The status of the node"),
                         Column("Roles", description="The roles of the node"),
                         AGE,
                         Column("Version", description=(DEFINITIONS + "NodeSystemInfo", "kubeletVersion")),
                         Column("Internal-IP", priority=1, description=(DEFINITIONS + "NodeStatus", "addresses")),
                         Column("External-IP", priority=1, description=(DEFINITIONS + "NodeStatus", "addresses")),
                         Column("OS-Image", priority=1, description=(DEFINITIONS + "NodeSystemInfo", "osImage")),
                         Column("Kernel-Version", priority=1, description=(DEFINITIONS + "NodeSystemInfo", "kernelVersion")),
                         Column("Container-Runtime", priority=1,
                                description=(DEFINITIONS + "NodeSystemInfo", "containerRuntimeVersion")),
                     ), _node_cells),
                     openapi_definition=DEFINITIONS + "Node", protobuf=PROTOBUF + "Node"),
    ]
