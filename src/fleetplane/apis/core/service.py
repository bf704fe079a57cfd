"""core/v1 Services (served by a simulated physical cluster), with kube's defaults
(``SetDefaults_Service``), validation messages (``ValidateService``, ``ValidateServiceUpdate``),
printer and status subresource, and the allocation kube-apiserver's Service storage does as it
stores a Service (not a controller): ``spec.clusterIP``/``clusterIPs`` from the cluster's Service
range, ``nodePort``s (NodePort, and LoadBalancer unless ``allocateLoadBalancerNodePorts: false``)
and ``healthCheckNodePort`` (LoadBalancer with ``externalTrafficPolicy: Local``) from the
node-port range.

Allocation, simplified: kube keeps a bitmap per range in etcd; here the taken values are read
from the stored Services of the logical cluster (the watch cache, bound through
``Strategy.bind_stored``), plus the values handed out to a write the cache does not show yet (a
create between allocation and the cache seeing it; dropped once the stored Service carries them,
or after 5 s for a write that failed). So a value is released when its Service is deleted, or
changes type, with nothing to clean up. Free values are picked at random, as kube does. The same
strategy unbound (the hub's shared copy in ``known_type``) allocates nothing.
"""

from __future__ import annotations

import ipaddress
import random
import re
import time
from collections.abc import Callable, Iterable
from typing import Any

from ...apimachinery import errors as e
from ...apimachinery.errors import FieldError
from ...apimachinery.gofmt import go_quote
from ...apimachinery.validation import (
    dns1035_label_errors,
    dns1123_label_error,
    dns1123_subdomain_error,
    validate_labels,
)
from ...registry import printers as pr
from ...registry.printers import AGE, NAME, Clock, Column, Printer
from ...registry.types import META_FIELDS, ResourceType, field_getter
from ...registry.validation import validate_object_meta
from .base import DEFINITIONS, PROTOBUF, CoreStrategy

SERVICE_TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]
PROTOCOLS = ["SCTP", "TCP", "UDP"]
SESSION_AFFINITIES = ["ClientIP", "None"]
TRAFFIC_POLICIES = ["Cluster", "Local"]
IP_FAMILY_POLICIES = ["PreferDualStack", "RequireDualStack", "SingleStack"]
DEFAULT_CLIENT_IP_TIMEOUT = 10800
KUBELET_PORT = 10250
DEFAULT_SERVICE_CIDR = "10.96.0.0/16"
DEFAULT_NODE_PORTS = (30000, 32767)
#: how long a handed-out value counts as taken if the cache never shows it with its Service
RESERVATION_SECONDS = 5.0

_PORT_NAME_CHARS = re.compile(r"^[-a-z0-9]+$")
_HAS_LETTER = re.compile(r"[a-z]")

#: ``objects(cluster)``: the stored Services of a logical cluster
StoredObjects = Callable[[str], Iterable[dict[str, Any]]]


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def needs_cluster_ip(spec: dict[str, Any]) -> bool:
    return spec.get("type") != "ExternalName"


def is_headless(spec: dict[str, Any]) -> bool:
    return spec.get("clusterIP") == "None"


def needs_node_ports(spec: dict[str, Any]) -> bool:
    t = spec.get("type")
    return t == "NodePort" or (t == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is not False)


def needs_health_check_node_port(spec: dict[str, Any]) -> bool:
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def externally_accessible(spec: dict[str, Any]) -> bool:
    return spec.get("type") in ("LoadBalancer", "NodePort")


def _ports(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in spec.get("ports") or [] if isinstance(p, dict)]


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def _go_strings(values: Any) -> str:
    """A []string as Go's %#v prints it."""
    if not isinstance(values, list):
        return "[]string(nil)"
    return "[]string{" + ", ".join(go_quote(str(v)) for v in values) + "}"


def port_num_errors(port: Any) -> list[str]:
    """``IsValidPortNum``."""
    return [] if isinstance(port, int) and not isinstance(port, bool) and 1 <= port <= 65535 else [
        "must be between 1 and 65535, inclusive"]


def port_name_errors(name: str) -> list[str]:
    """``IsValidPortName`` (an IANA service name), every rule ``name`` breaks."""
    errs = []
    if len(name) > 15:
        errs.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARS.match(name):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if "--" in name:
        errs.append("must not contain consecutive hyphens")
    if not _HAS_LETTER.search(name):
        errs.append("must contain at least one letter (a-z)")
    if name.startswith("-") or name.endswith("-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def _normalize_cluster_ips(spec: dict[str, Any]) -> None:
    """kube's normalizeClusterIPs: ``clusterIP`` and ``clusterIPs[0]`` say the same, given either."""
    ip, ips = spec.get("clusterIP"), spec.get("clusterIPs")
    if ip and not ips:
        spec["clusterIPs"] = [ip]
    elif ips and isinstance(ips, list) and not ip:
        spec["clusterIP"] = ips[0]


def _init_ip_families(spec: dict[str, Any], old: dict[str, Any] | None) -> None:
    """kube's initIPFamilyFields on a single-stack IPv4 cluster: policy SingleStack (or the old
    one), families [IPv4]; headless without selector: RequireDualStack, both families."""
    if not needs_cluster_ip(spec):
        return
    if spec.get("ipFamilyPolicy") is None:
        if old is not None and old.get("ipFamilyPolicy") is not None:
            spec["ipFamilyPolicy"] = old["ipFamilyPolicy"]
        elif is_headless(spec) and not spec.get("selector"):
            spec["ipFamilyPolicy"] = "RequireDualStack"
        else:
            spec["ipFamilyPolicy"] = "SingleStack"
    if not spec.get("ipFamilies"):
        if old is not None and old.get("ipFamilies") and needs_cluster_ip(old):
            spec["ipFamilies"] = list(old["ipFamilies"])
        else:
            spec["ipFamilies"] = ["IPv4"]
    if is_headless(spec) and not spec.get("selector") and spec["ipFamilyPolicy"] != "SingleStack" \
            and len(spec["ipFamilies"]) < 2:
        spec["ipFamilies"] = [*spec["ipFamilies"], "IPv6" if spec["ipFamilies"][0] == "IPv4" else "IPv4"]


def _patch_allocated_values(spec: dict[str, Any], old: dict[str, Any]) -> None:
    """kube's patchAllocatedValues: an update that leaves out what the server allocated (a PUT of
    the user's manifest, a Syncer's copy) keeps it."""
    if needs_cluster_ip(old) and needs_cluster_ip(spec):
        if not spec.get("clusterIP") and old.get("clusterIP"):
            spec["clusterIP"] = old["clusterIP"]
        if not spec.get("clusterIPs") and old.get("clusterIPs"):
            spec["clusterIPs"] = list(old["clusterIPs"])
    if needs_node_ports(old) and needs_node_ports(spec):
        used = {_int(p.get("nodePort")) for p in _ports(old)} & {_int(p.get("nodePort")) for p in _ports(spec)}
        by_name = {p.get("name") or "": _int(p.get("nodePort")) for p in _ports(old)}
        for p in _ports(spec):
            if not _int(p.get("nodePort")):
                was = by_name.get(p.get("name") or "", 0)
                if was and was not in used:
                    p["nodePort"] = was
    if needs_health_check_node_port(old) and needs_health_check_node_port(spec) \
            and not spec.get("healthCheckNodePort") and old.get("healthCheckNodePort"):
        spec["healthCheckNodePort"] = old["healthCheckNodePort"]


def _drop_type_dependent_fields(spec: dict[str, Any], old: dict[str, Any]) -> None:
    """kube's dropTypeDependentFields: a type change clears what only the old type needed, when
    the update left it as it was (so ``kubectl patch -p '{"spec":{"type":"ClusterIP"}}'`` on a
    NodePort Service works)."""
    if needs_cluster_ip(old) and not needs_cluster_ip(spec):
        if spec.get("clusterIPs") == old.get("clusterIPs") and spec.get("clusterIP") == old.get("clusterIP"):
            spec.pop("clusterIP", None)
            spec.pop("clusterIPs", None)
        if spec.get("ipFamilies") == old.get("ipFamilies"):
            spec.pop("ipFamilies", None)
        if spec.get("ipFamilyPolicy") == old.get("ipFamilyPolicy"):
            spec.pop("ipFamilyPolicy", None)
    if needs_node_ports(old) and not needs_node_ports(spec):
        old_ports = {(p.get("name"), p.get("port"), p.get("protocol")): p.get("nodePort") for p in _ports(old)}
        for p in _ports(spec):
            if p.get("nodePort") and old_ports.get((p.get("name"), p.get("port"), p.get("protocol"))) == p["nodePort"]:
                p.pop("nodePort")
    if needs_health_check_node_port(old) and not needs_health_check_node_port(spec) \
            and spec.get("healthCheckNodePort") == old.get("healthCheckNodePort"):
        spec.pop("healthCheckNodePort", None)
    if old.get("type") == "LoadBalancer" and spec.get("type") != "LoadBalancer":
        for f in ("allocateLoadBalancerNodePorts", "loadBalancerClass"):
            if spec.get(f) == old.get(f):
                spec.pop(f, None)
    if externally_accessible(old) and not externally_accessible(spec) \
            and spec.get("externalTrafficPolicy") == old.get("externalTrafficPolicy"):
        spec.pop("externalTrafficPolicy", None)
    if spec.get("type") == "ExternalName" and old.get("type") != "ExternalName" \
            and spec.get("internalTrafficPolicy") == old.get("internalTrafficPolicy"):
        spec.pop("internalTrafficPolicy", None)


class _Reservations:
    """Values handed out a moment ago, per logical cluster, by the uid of the Service they went
    to: taken until the stored Service shows them (its write landed) or for a few seconds (a
    write that failed after allocation)."""

    def __init__(self) -> None:
        self._by_cluster: dict[str, dict[Any, tuple[str, float]]] = {}

    def held(self, cluster: str, exclude: str, stored: dict[str, set[Any]]) -> set[Any]:
        """What is held for other Services; ``stored``: uid -> the values its stored version has."""
        now = time.monotonic()
        bucket = self._by_cluster.setdefault(cluster, {})
        for v in [v for v, (uid, until) in bucket.items() if until < now or v in stored.get(uid, ())]:
            del bucket[v]
        return {v for v, (uid, _) in bucket.items() if uid != exclude}

    def hold(self, cluster: str, value: Any, uid: str) -> None:
        self._by_cluster.setdefault(cluster, {})[value] = (uid, time.monotonic() + RESERVATION_SECONDS)


class ServiceStrategy(CoreStrategy):
    """core/v1 Service: defaults, validation, status subresource, cluster IP and node port allocation."""

    status_subresource = True

    def __init__(self) -> None:
        super().__init__(namespaced=True)
        self.service_cidr = ipaddress.ip_network(DEFAULT_SERVICE_CIDR)
        self.node_ports = DEFAULT_NODE_PORTS
        self._stored: StoredObjects | None = None
        self._reserved = _Reservations()

    def configure(self, service_cidr: str = DEFAULT_SERVICE_CIDR, node_ports: tuple[int, int] = DEFAULT_NODE_PORTS) -> None:
        """kube-apiserver's ``--service-cluster-ip-range`` and ``--service-node-port-range``."""
        self.service_cidr = ipaddress.ip_network(service_cidr, strict=False)
        self.node_ports = node_ports

    def bind_stored(self, objects: StoredObjects) -> None:
        self._stored = objects

    # -- defaults and preparation -----------------------------------------------------------

    def default(self, obj: dict[str, Any]) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        if not spec.get("sessionAffinity"):
            spec["sessionAffinity"] = "None"
        if spec["sessionAffinity"] == "None":
            spec.pop("sessionAffinityConfig", None)
        elif spec["sessionAffinity"] == "ClientIP":
            cfg = spec.get("sessionAffinityConfig")
            client = cfg.get("clientIP") if isinstance(cfg, dict) else None
            if not isinstance(client, dict) or client.get("timeoutSeconds") is None:
                spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": DEFAULT_CLIENT_IP_TIMEOUT}}
        if not spec.get("type"):
            spec["type"] = "ClusterIP"
        for p in _ports(spec):
            if not p.get("protocol"):
                p["protocol"] = "TCP"
            if p.get("targetPort") in (None, 0, ""):
                p["targetPort"] = p.get("port")
        if externally_accessible(spec) and not spec.get("externalTrafficPolicy"):
            spec["externalTrafficPolicy"] = "Cluster"
        if spec.get("internalTrafficPolicy") is None and spec["type"] in ("ClusterIP", "NodePort", "LoadBalancer"):
            spec["internalTrafficPolicy"] = "Cluster"
        if spec["type"] == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
            spec["allocateLoadBalancerNodePorts"] = True
        self._default_ip_mode(obj)

    @staticmethod
    def _default_ip_mode(obj: dict[str, Any]) -> None:
        """LoadBalancerIPMode (on by default since 1.30): an ingress with an IP is a VIP."""
        if _spec(obj).get("type") != "LoadBalancer":
            return
        lb = (obj.get("status") or {}).get("loadBalancer") if isinstance(obj.get("status"), dict) else None
        for ing in (lb or {}).get("ingress") or [] if isinstance(lb, dict) else []:
            if isinstance(ing, dict) and ing.get("ip") and ing.get("ipMode") is None:
                ing["ipMode"] = "VIP"

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        obj["status"] = {"loadBalancer": {}}
        spec = obj.get("spec")
        if isinstance(spec, dict):
            _normalize_cluster_ips(spec)
            _init_ip_families(spec, None)

    def prepare_for_update(self, obj: dict[str, Any], old: dict[str, Any]) -> None:
        super().prepare_for_update(obj, old)
        spec, old_spec = obj.get("spec"), _spec(old)
        if isinstance(spec, dict):
            _patch_allocated_values(spec, old_spec)
            _normalize_cluster_ips(spec)
            _drop_type_dependent_fields(spec, old_spec)
            _init_ip_families(spec, old_spec)

    def prepare_for_status_update(self, obj: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
        new = super().prepare_for_status_update(obj, old)
        self._default_ip_mode(new)
        return new

    # -- validation --------------------------------------------------------------------------

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        errs = validate_object_meta(obj, namespaced=True, name_error=lambda n: next(iter(dns1035_label_errors(n)), None))
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return errs + [e.required("spec")]
        stype = spec.get("type")
        ips = _list(spec.get("clusterIPs"))
        ports = _list(spec.get("ports"))
        if not ports and not is_headless(spec) and stype != "ExternalName":
            errs.append(e.required("spec.ports"))
        if stype in ("LoadBalancer", "NodePort") and is_headless(spec):
            errs.append(e.invalid("spec.clusterIPs[0]", "None", f"may not be set to 'None' for {stype} services"))
        if stype == "LoadBalancer":
            for i, p in enumerate(ports):
                if isinstance(p, dict) and p.get("port") == KUBELET_PORT:
                    errs.append(e.invalid(f"spec.ports[{i}]", KUBELET_PORT,
                                          f"may not expose port {KUBELET_PORT} externally since it is used by kubelet"))
        if stype == "ExternalName":
            if ips:
                errs.append(e.forbidden("spec.clusterIPs", "may not be set for ExternalName services"))
            if spec.get("ipFamilies"):
                errs.append(e.forbidden("spec.ipFamilies", "may not be set for ExternalName services"))
            if spec.get("ipFamilyPolicy") is not None:
                errs.append(e.forbidden("spec.ipFamilyPolicy", "may not be set for ExternalName services"))
            name = str(spec.get("externalName") or "").removesuffix(".")
            if not name:
                errs.append(e.required("spec.externalName"))
            elif (msg := dns1123_subdomain_error(name)) is not None:
                errs.append(e.invalid("spec.externalName", name, msg))
        names: set[str] = set()
        for i, p in enumerate(ports):
            errs += self._validate_port(p, len(ports) > 1, names, f"spec.ports[{i}]")
        if spec.get("selector") is not None:
            errs += validate_labels(spec.get("selector"), "spec.selector")
        affinity = spec.get("sessionAffinity")
        if not affinity:
            errs.append(e.required("spec.sessionAffinity"))
        elif affinity not in SESSION_AFFINITIES:
            errs.append(e.not_supported("spec.sessionAffinity", affinity, SESSION_AFFINITIES))
        if not stype:
            errs.append(e.required("spec.type"))
        elif stype not in SERVICE_TYPES:
            errs.append(e.not_supported("spec.type", stype, SERVICE_TYPES))
        if stype == "ClusterIP":
            for i, p in enumerate(ports):
                if isinstance(p, dict) and _int(p.get("nodePort")):
                    errs.append(e.forbidden(f"spec.ports[{i}].nodePort", "may not be used when `type` is 'ClusterIP'"))
        seen_node_ports: set[tuple[Any, int]] = set()
        seen_ports: set[tuple[Any, Any]] = set()
        for i, p in enumerate(ports):
            if not isinstance(p, dict):
                continue
            np = _int(p.get("nodePort"))
            if np:
                if (p.get("protocol"), np) in seen_node_ports:
                    errs.append(e.duplicate(f"spec.ports[{i}].nodePort", np))
                seen_node_ports.add((p.get("protocol"), np))
            key = (p.get("protocol"), p.get("port"))
            if key in seen_ports:
                errs.append(e.duplicate(f"spec.ports[{i}]", f"{p.get('port')}/{p.get('protocol')}"))
            seen_ports.add(key)
        etp = spec.get("externalTrafficPolicy")
        if not externally_accessible(spec):
            if etp:
                errs.append(e.invalid("spec.externalTrafficPolicy", etp, "may only be set for externally-accessible services"))
        elif not etp:
            errs.append(e.required("spec.externalTrafficPolicy"))
        elif etp not in TRAFFIC_POLICIES:
            errs.append(e.not_supported("spec.externalTrafficPolicy", etp, TRAFFIC_POLICIES))
        itp = spec.get("internalTrafficPolicy")
        if stype in ("ClusterIP", "NodePort", "LoadBalancer"):
            if itp is None:
                errs.append(e.required("spec.internalTrafficPolicy"))
            elif itp not in TRAFFIC_POLICIES:
                errs.append(e.not_supported("spec.internalTrafficPolicy", itp, TRAFFIC_POLICIES))
        hc = spec.get("healthCheckNodePort")
        if hc and not needs_health_check_node_port(spec):
            errs.append(e.invalid("spec.healthCheckNodePort", hc,
                                  "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
        errs += self._validate_cluster_ips(spec)
        return errs

    @staticmethod
    def _validate_port(p: Any, require_name: bool, names: set[str], path: str) -> list[FieldError]:
        if not isinstance(p, dict):
            return [e.invalid(path, p, "must be an object")]
        errs: list[FieldError] = []
        name = p.get("name")
        if require_name and not name:
            errs.append(e.required(f"{path}.name"))
        elif name:
            if (msg := dns1123_label_error(str(name))) is not None:
                errs.append(e.invalid(f"{path}.name", name, msg))
            if name in names:
                errs.append(e.duplicate(f"{path}.name", name))
            names.add(str(name))
        errs += [e.invalid(f"{path}.port", p.get("port"), m) for m in port_num_errors(p.get("port"))]
        proto = p.get("protocol")
        if not proto:
            errs.append(e.required(f"{path}.protocol"))
        elif proto not in PROTOCOLS:
            errs.append(e.not_supported(f"{path}.protocol", proto, PROTOCOLS))
        target = p.get("targetPort")
        if isinstance(target, str):
            errs += [e.invalid(f"{path}.targetPort", target, m) for m in port_name_errors(target)]
        elif target is not None:
            errs += [e.invalid(f"{path}.targetPort", target, m) for m in port_num_errors(target)]
        return errs

    @staticmethod
    def _validate_cluster_ips(spec: dict[str, Any]) -> list[FieldError]:
        """The single-stack part of ValidateServiceClusterIPsRelatedFields."""
        if not needs_cluster_ip(spec):
            return []
        errs: list[FieldError] = []
        ips = _list(spec.get("clusterIPs"))
        policy = spec.get("ipFamilyPolicy")
        if policy is None:
            errs.append(e.required("spec.ipFamilyPolicy"))
        elif policy not in IP_FAMILY_POLICIES:
            errs.append(e.not_supported("spec.ipFamilyPolicy", policy, IP_FAMILY_POLICIES))
        if ips and spec.get("clusterIP") != ips[0]:
            errs.append(e.invalid_literal("spec.clusterIPs", _go_strings(ips), "first value must match `clusterIP`"))
        if len(ips) > 2:
            errs.append(e.invalid_literal("spec.clusterIPs", _go_strings(ips), "may only hold up to 2 values"))
        for i, ip in enumerate(ips):
            if ip == "None":
                if i != 0 or len(ips) > 1:
                    errs.append(e.invalid_literal("spec.clusterIPs", _go_strings(ips),
                                                  "'None' must be the first and only value"))
                continue
            try:
                ipaddress.ip_address(ip)
            except ValueError:
                errs.append(e.invalid(f"spec.clusterIPs[{i}]", ip, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
        for i, fam in enumerate(spec.get("ipFamilies") or []):
            if fam not in ("IPv4", "IPv6"):
                errs.append(e.not_supported(f"spec.ipFamilies[{i}]", fam, ["IPv4", "IPv6"]))
        return errs

    def validate_update(self, obj: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        errs = self.validate(obj)
        spec, old_spec = _spec(obj), _spec(old)
        if "ExternalName" in (spec.get("type"), old_spec.get("type")) or (is_headless(spec) and is_headless(old_spec)):
            return errs
        new_ips = _list(spec.get("clusterIPs"))
        old_ips = _list(old_spec.get("clusterIPs"))
        if new_ips[:1] != old_ips[:1] and old_ips:
            if not new_ips:
                errs.append(e.invalid_literal("spec.clusterIPs[0]", _go_strings(new_ips), "primary clusterIP can not be unset"))
            else:
                errs.append(e.invalid_literal("spec.clusterIPs[0]", _go_strings(new_ips), "may not change once set"))
        return errs

    # -- allocation --------------------------------------------------------------------------

    def before_write(self, obj: dict[str, Any], old: dict[str, Any] | None, cluster: str) -> None:
        spec = obj.get("spec")
        if self._stored is None or not isinstance(spec, dict):
            return
        meta = obj.get("metadata") or {}
        owner = str(meta.get("uid") or "")
        old_spec = _spec(old) if old is not None else {}
        taken_ips, taken_ports = self._taken(cluster, owner)
        errs: list[FieldError] = []
        if needs_cluster_ip(spec) and not is_headless(spec):
            errs += self._allocate_ip(spec, old_spec, taken_ips, cluster, owner)
        if needs_node_ports(spec):
            held = {_int(p.get("nodePort")) for p in _ports(old_spec)} | {_int(old_spec.get("healthCheckNodePort"))}
            for i, p in enumerate(_ports(spec)):
                errs += self._allocate_port(p, "nodePort", f"spec.ports[{i}].nodePort", held, taken_ports, cluster, owner)
        if needs_health_check_node_port(spec):
            held = {_int(old_spec.get("healthCheckNodePort"))}
            errs += self._allocate_port(spec, "healthCheckNodePort", "spec.healthCheckNodePort", held, taken_ports,
                                        cluster, owner)
        if errs:
            raise e.invalid_object("", "Service", str(meta.get("name") or ""), errs)

    def _taken(self, cluster: str, owner: str) -> tuple[set[str], set[int]]:
        """Cluster IPs and node ports of every other stored Service, and those reserved."""
        ips: set[str] = set()
        ports: set[int] = set()
        stored: dict[str, set[Any]] = {}
        assert self._stored is not None
        for o in self._stored(cluster):
            s = _spec(o)
            values: set[Any] = {ip for ip in _list(s.get("clusterIPs")) if ip and ip != "None"}
            values |= {_int(p.get("nodePort")) for p in _ports(s)} | {_int(s.get("healthCheckNodePort"))}
            uid = str((o.get("metadata") or {}).get("uid") or "")
            stored[uid] = values
            if uid != owner:
                ips.update(v for v in values if isinstance(v, str))
                ports.update(v for v in values if isinstance(v, int))
        for v in self._reserved.held(cluster, owner, stored):
            (ips if isinstance(v, str) else ports).add(v)
        ports.discard(0)
        return ips, ports

    def _allocate_ip(self, spec: dict[str, Any], old: dict[str, Any], taken: set[str], cluster: str,
                     owner: str) -> list[FieldError]:
        ip = spec.get("clusterIP")
        if ip:
            if ip == old.get("clusterIP") and needs_cluster_ip(old):
                return []  # already this Service's
            why = self._ip_unavailable(ip, taken)
            if why:
                return [e.invalid_literal("spec.clusterIPs", _go_strings(spec.get("clusterIPs") or [ip]),
                                          f"failed to allocate IP {ip}: {why}")]
        else:
            ip = self._next_ip(taken)
        self._reserved.hold(cluster, ip, owner)
        spec["clusterIP"] = ip
        spec["clusterIPs"] = [ip, *(spec.get("clusterIPs") or [])[1:]]
        return []

    def _ip_unavailable(self, ip: str, taken: set[str]) -> str:
        net = self.service_cidr
        try:
            addr = ipaddress.ip_address(ip)
        except ValueError:  # validation said so already
            addr = None
        if addr is None or addr not in net or addr in (net.network_address, net.broadcast_address):
            return f"the provided IP ({ip}) is not in the valid range. The range of valid IPs is {net}"
        return "provided IP is already allocated" if ip in taken else ""

    def _next_ip(self, taken: set[str]) -> str:
        net = self.service_cidr
        size = net.num_addresses - 2
        if size - len(taken) <= 0:
            raise e.internal("Internal error occurred: failed to allocate a serviceIP: range is full")
        first = int(net.network_address) + 1
        start = random.randrange(size)
        for k in range(size):
            ip = str(ipaddress.ip_address(first + (start + k) % size))
            if ip not in taken:
                return ip
        raise e.internal("Internal error occurred: failed to allocate a serviceIP: range is full")

    def _allocate_port(self, holder: dict[str, Any], key: str, path: str, held: set[int], taken: set[int],
                       cluster: str, owner: str) -> list[FieldError]:
        lo, hi = self.node_ports
        port = _int(holder.get(key))
        if port:
            if port in held:
                taken.add(port)
                return []
            if not lo <= port <= hi:
                return [e.invalid(path, port, f"provided port is not in the valid range. The range of valid ports is {lo}-{hi}")]
            if port in taken:
                return [e.invalid(path, port, "provided port is already allocated")]
        else:
            free = hi - lo + 1 - len({p for p in taken if lo <= p <= hi})
            if free <= 0:
                raise e.internal("Internal error occurred: failed to allocate a nodePort: range is full")
            start = random.randrange(hi - lo + 1)
            port = next(lo + (start + k) % (hi - lo + 1) for k in range(hi - lo + 1)
                        if lo + (start + k) % (hi - lo + 1) not in taken)
            holder[key] = port
        taken.add(port)
        self._reserved.hold(cluster, port, owner)
        return []


def _port_string(ports: list[dict[str, Any]]) -> str:
    """kube's makePortString: ``80/TCP``, ``80:30080/TCP``, comma-joined."""
    pieces = []
    for p in ports:
        np = _int(p.get("nodePort"))
        pieces.append(f"{_int(p.get('port'))}:{np}/{p.get('protocol') or ''}" if np > 0
                      else f"{_int(p.get('port'))}/{p.get('protocol') or ''}")
    return ",".join(pieces)


def load_balancer_ips(status: Any) -> str:
    """kube's loadBalancerStatusStringer (wide, as a server-side Table is): the ingress IPs or
    hostnames, sorted and deduplicated."""
    lb = status.get("loadBalancer") if isinstance(status, dict) else None
    found = set()
    for ing in (lb.get("ingress") if isinstance(lb, dict) else None) or []:
        if isinstance(ing, dict):
            if ing.get("ip"):
                found.add(str(ing["ip"]))
            elif ing.get("hostname"):
                found.add(str(ing["hostname"]))
    return ",".join(sorted(found))


def _external_ip(o: dict[str, Any]) -> str:
    """kube's getServiceExternalIP."""
    spec = _spec(o)
    stype = spec.get("type")
    external = [str(x) for x in spec.get("externalIPs") or []]
    if stype in ("ClusterIP", "NodePort"):
        return ",".join(external) or "<none>"
    if stype == "LoadBalancer":
        lb = load_balancer_ips(o.get("status"))
        if external:
            return ",".join([*(lb.split(",") if lb else []), *external])
        return lb or "<pending>"
    if stype == "ExternalName":
        return pr.string(spec.get("externalName"))
    return "<unknown>"


def _service_cells(o: dict[str, Any], clock: Clock) -> list[Any]:
    spec, meta = _spec(o), pr.meta(o)
    ips = spec.get("clusterIPs") or []
    selector = _dict(spec.get("selector"))
    return [meta.get("name"), pr.string(spec.get("type")), ips[0] if ips else "<none>", _external_ip(o),
            _port_string(_ports(spec)) or "<none>", clock.since(meta.get("creationTimestamp")),
            ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>"]


SERVICE_FIELDS = {**META_FIELDS, "spec.clusterIP": field_getter("spec", "clusterIP"),
                  "spec.type": field_getter("spec", "type")}


def resource_types() -> list[ResourceType]:
    spec_doc = DEFINITIONS + "ServiceSpec"
    return [
        ResourceType("", "v1", "Service", "services", "service", True, ServiceStrategy(), short_names=("svc",),
                     categories=("all",), subresources=("status",), field_selectors=SERVICE_FIELDS,
                     printer=Printer((
                         NAME,
                         Column("Type", description=(spec_doc, "type")),
                         Column("Cluster-IP", description=(spec_doc, "clusterIP")),
                         Column("External-IP", description=(spec_doc, "externalIPs")),
                         Column("Port(s)", description=(spec_doc, "ports")),
                         AGE,
                         Column("Selector", priority=1, description=(spec_doc, "selector")),
                     ), _service_cells),
                     openapi_definition=DEFINITIONS + "Service", protobuf=PROTOBUF + "Service"),
    ]
