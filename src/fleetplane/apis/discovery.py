"""The discovery group (``discovery.k8s.io/v1``) as a simulated physical cluster serves it:
EndpointSlices, with kube's defaults (a port's name "" and protocol TCP), the core of its
validation (addressType required, supported and immutable; every endpoint has 1 to 100
addresses; port names and protocols as a Service's) and printer (NAME ADDRESSTYPE PORTS
ENDPOINTS AGE, at most 3 of each and ``+ N more...``). The simulated cluster's EndpointSlice
controller (``sim/endpointslice.py``) writes them.
"""

from __future__ import annotations

from typing import Any

from ..apimachinery import errors as e
from ..apimachinery.errors import FieldError
from ..apimachinery.validation import dns1123_label_error
from ..registry import printers as pr
from ..registry.printers import AGE, NAME, Clock, Column, Printer
from ..registry.types import ResourceType, Strategy
from ..registry.validation import validate_object_meta
from .core.service import PROTOCOLS

DEFINITIONS = "io.k8s.api.discovery.v1."
ADDRESS_TYPES = ["FQDN", "IPv4", "IPv6"]
MAX_ADDRESSES = 100
MAX_ENDPOINTS = 1000
MAX_PORTS = 100
#: labels kube's EndpointSlice controller sets (``discovery.LabelServiceName``, ``LabelManagedBy``)
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"


class EndpointSliceStrategy(Strategy):
    """discovery.k8s.io/v1 EndpointSlice: generation on change, unconditional PUT, no status."""

    tracks_generation = True
    allow_unconditional_update = True

    def default(self, obj: dict[str, Any]) -> None:
        for p in obj.get("ports") or []:
            if isinstance(p, dict):
                if p.get("name") is None:
                    p["name"] = ""
                if p.get("protocol") is None:
                    p["protocol"] = "TCP"

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        errs = validate_object_meta(obj, namespaced=True)
        at = obj.get("addressType")
        if not at:
            errs.append(e.required("addressType"))
        elif at not in ADDRESS_TYPES:
            errs.append(e.not_supported("addressType", at, ADDRESS_TYPES))
        endpoints = obj.get("endpoints") or []
        if len(endpoints) > MAX_ENDPOINTS:
            errs.append(e.FieldError("FieldValueTooMany", "endpoints", f"must have at most {MAX_ENDPOINTS} items",
                                     len(endpoints), True))
        for i, ep in enumerate(endpoints):
            addresses = ep.get("addresses") if isinstance(ep, dict) else None
            if not addresses:
                errs.append(e.required(f"endpoints[{i}].addresses", "must contain at least 1 address"))
            elif len(addresses) > MAX_ADDRESSES:
                errs.append(e.FieldError("FieldValueTooMany", f"endpoints[{i}].addresses",
                                         f"must have at most {MAX_ADDRESSES} items", len(addresses), True))
        names: set[str] = set()
        for i, p in enumerate(obj.get("ports") or []):
            if not isinstance(p, dict):
                continue
            name = p.get("name") or ""
            if name:
                if (msg := dns1123_label_error(name)) is not None:
                    errs.append(e.invalid(f"ports[{i}].name", name, msg))
            if name in names:
                errs.append(e.duplicate(f"ports[{i}].name", name))
            names.add(name)
            proto = p.get("protocol")
            if not proto:
                errs.append(e.required(f"ports[{i}].protocol"))
            elif proto not in PROTOCOLS:
                errs.append(e.not_supported(f"ports[{i}].protocol", proto, PROTOCOLS))
        return errs

    def validate_update(self, obj: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        errs = self.validate(obj)
        if obj.get("addressType") != old.get("addressType"):
            errs.append(e.invalid("addressType", obj.get("addressType"), "field is immutable"))
        return errs


def _with_more(items: list[str], count: int, most: int = 3) -> str:
    """kube's listWithMoreString."""
    text = ",".join(items[:most])
    if count > most:
        text += f" + {count - most} more..."
    return text or "<unset>"


def _ports_cell(ports: Any) -> str:
    shown = []
    for p in ports or []:
        if isinstance(p, dict):
            port, name = p.get("port"), p.get("name")
            shown.append(str(port) if port is not None else (str(name) if name is not None else "*"))
    return _with_more(shown, len(shown))


def _endpoints_cell(endpoints: Any) -> str:
    addresses = [str(a) for ep in endpoints or [] if isinstance(ep, dict) for a in ep.get("addresses") or []]
    return _with_more(addresses, len(addresses))


def _slice_cells(o: dict[str, Any], clock: Clock) -> list[Any]:
    meta = pr.meta(o)
    return [meta.get("name"), pr.string(o.get("addressType")), _ports_cell(o.get("ports")),
            _endpoints_cell(o.get("endpoints")), clock.since(meta.get("creationTimestamp"))]


def resource_types() -> list[ResourceType]:
    return [
        ResourceType("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", "endpointslice", True,
                     EndpointSliceStrategy(),
                     printer=Printer((
                         NAME,
                         Column("AddressType", description=(DEFINITIONS + "EndpointSlice", "addressType")),
                         Column("Ports", description=(DEFINITIONS + "EndpointSlice", "ports")),
                         Column("Endpoints", description=(DEFINITIONS + "EndpointSlice", "endpoints")),
                         AGE,
                     ), _slice_cells),
                     openapi_definition=DEFINITIONS + "EndpointSlice"),
    ]
