"""The fleet as the placement engine sees it: one :class:`ClusterInfo` per ClusterProfile.

fleetplane is a KEP-4322 *consumer*: everything it knows about a cluster comes from the
cluster's ClusterProfile, read once per change into a small, immutable :class:`ClusterInfo`:

- ``name``: the profile's name, which is the Cluster's name and the ``kcp.dev/cluster`` value;
- ``labels`` and ``properties`` (``status.properties``), matched by the policy's terms;
- health: ``ControlPlaneHealthy`` (True / False / Unknown) and its ``lastTransitionTime``,
  which the engine uses for damping (a cluster must stay unhealthy for a grace period before its
  replicas move, and stay healthy for a while before it receives new ones);
- ``clusterset`` (the namespace's clusterset label, the profile's own, or the
  ``clusterset.k8s.io`` property) and ``locations`` (``location``, region and zone properties);
- **taints**: the KEP has no taints, so fleetplane reads them from the property *or* the
  profile annotation ``fleetplane.io/taints`` (both are merged): a comma-separated list of
  ``key[=value]:Effect`` with effects ``NoSchedule`` (no new replicas; those there stay),
  ``PreferNoSchedule`` (used only when nothing else fits) and ``NoExecute`` (replicas move away);
  e.g. ``kubectl annotate clusterprofile east fleetplane.io/taints=maintenance:NoExecute``;
- **capacity**: spare resources from ``resources.fleetplane.io/available-{cpu,memory,pods}``
  (net of what runs there) or, failing those, ``resources.fleetplane.io/allocatable-{...}``
  (what the Cluster controller publishes: the nodes' total).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ...apimachinery.metatime import parse_time
from ...apimachinery.quantity import QuantityError, parse_quantity
from ...inventory import constants as ic

__all__ = ["ANNOTATION_TAINTS", "PROPERTY_TAINTS", "RESOURCES", "ClusterInfo", "Taint", "parse_taints", "parse_time"]

PROPERTY_TAINTS = "fleetplane.io/taints"
ANNOTATION_TAINTS = "fleetplane.io/taints"
AVAILABLE_PREFIX = "resources.fleetplane.io/available-"
ALLOCATABLE_PREFIX = "resources.fleetplane.io/allocatable-"
#: resources the capacity estimate looks at (pods counts one per replica)
RESOURCES = ("cpu", "memory", "pods")


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        return f"{self.key}{'=' + self.value if self.value else ''}:{self.effect}"


def parse_taints(text: str | None) -> tuple[list[Taint], list[str]]:
    """``"a=b:NoSchedule,c:NoExecute"`` -> taints, and notes about entries that do not parse."""
    taints: list[Taint] = []
    notes: list[str] = []
    for part in (p.strip() for p in (text or "").split(",")):
        if not part:
            continue
        kv, sep, effect = part.rpartition(":")
        if not sep or effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute") or not kv:
            notes.append(f"ignored taint {part!r}: want key[=value]:NoSchedule|PreferNoSchedule|NoExecute")
            continue
        key, _, value = kv.partition("=")
        taints.append(Taint(key.strip(), value.strip(), effect))
    return taints, notes


def _number(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        n = parse_quantity(value.strip())
    except (QuantityError, ValueError, AttributeError):
        return None
    return float(n) if n >= 0 else None


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    name: str
    namespace: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    properties: Mapping[str, str] = field(default_factory=dict)
    #: ControlPlaneHealthy: True, False, or None (Unknown or not reported)
    healthy: bool | None = True
    #: when ControlPlaneHealthy last changed (epoch seconds), if known
    since: float | None = None
    health_reason: str = ""
    health_message: str = ""
    taints: tuple[Taint, ...] = ()
    clusterset: str | None = None
    deleting: bool = False
    #: spare resources (cpu cores, memory bytes, pods); None: not reported
    capacity: Mapping[str, float] | None = None
    #: capacity is net of what already runs there (available-*), not the total (allocatable-*)
    capacity_net: bool = False
    created: str = ""
    notes: tuple[str, ...] = ()

    @classmethod
    def from_profile(cls, obj: Mapping[str, Any], namespace_labels: Mapping[str, str] | None = None) -> ClusterInfo:
        """From a ClusterProfile dict (as listed from the hub)."""
        md = obj.get("metadata") or {}
        status = obj.get("status") or {}
        labels = md.get("labels") or {}
        annotations = md.get("annotations") or {}
        props: dict[str, str] = {}
        for p in status.get("properties") or ():
            if isinstance(p, Mapping) and p.get("name") and p.get("value") is not None:
                props[str(p["name"])] = str(p["value"])
        healthy: bool | None = None
        since = None
        reason = message = ""
        for c in status.get("conditions") or ():
            if isinstance(c, Mapping) and c.get("type") == ic.CONDITION_CONTROL_PLANE_HEALTHY:
                s = c.get("status")
                healthy = True if s in ("True", True) else False if s in ("False", False) else None
                since = parse_time(c.get("lastTransitionTime"))
                reason, message = str(c.get("reason") or ""), str(c.get("message") or "")
        t1, n1 = parse_taints(props.get(PROPERTY_TAINTS))
        t2, n2 = parse_taints(annotations.get(ANNOTATION_TAINTS))
        taints = tuple(dict.fromkeys(t1 + t2))
        clusterset = None
        for key in ic.CLUSTERSET_LABELS:
            if namespace_labels and namespace_labels.get(key):
                clusterset = namespace_labels[key]
                break
        if clusterset is None:
            clusterset = next((labels[k] for k in ic.CLUSTERSET_LABELS if labels.get(k)), None) \
                or props.get(ic.PROPERTY_CLUSTERSET)
        capacity: dict[str, float] | None = None
        net = any(AVAILABLE_PREFIX + r in props for r in RESOURCES)
        prefix = AVAILABLE_PREFIX if net else ALLOCATABLE_PREFIX
        for r in RESOURCES:
            n = _number(props.get(prefix + r))
            if n is not None:
                capacity = capacity or {}
                capacity[r] = n
        return cls(name=str(md.get("name") or ""), namespace=str(md.get("namespace") or ""), labels=dict(labels),
                   properties=props, healthy=healthy, since=since, health_reason=reason, health_message=message,
                   taints=taints, clusterset=clusterset,
                   deleting=bool(md.get("deletionTimestamp")), capacity=capacity, capacity_net=net and bool(capacity),
                   created=str(md.get("creationTimestamp") or ""), notes=tuple(n1 + n2))

    @property
    def locations(self) -> tuple[str, ...]:
        """The location, region and zone properties (what a policy's ``location`` matches)."""
        p = self.properties
        return tuple(v for v in (p.get(ic.PROPERTY_LOCATION), p.get(ic.PROPERTY_REGION), p.get(ic.PROPERTY_ZONE)) if v)

    def topology(self, key: str) -> str | None:
        """The cluster's value for a spread key: a property, else a profile label."""
        v = self.properties.get(key)
        if v is None:
            v = self.labels.get(key)
        return v

    def fingerprint(self) -> tuple:
        """What placement depends on (a change of anything else needs no new decision)."""
        return (self.name, tuple(sorted(self.labels.items())), tuple(sorted(self.properties.items())), self.healthy,
                self.since, self.taints, self.clusterset, self.deleting, self.health_reason)


def requests_of(template: Mapping[str, Any] | None) -> dict[str, float]:
    """Per-replica resource requests of a pod template: cpu cores and memory bytes summed over
    containers (the larger of that and any init container, as the scheduler does), pods 1."""
    spec = ((template or {}).get("spec") or {}) if isinstance(template, Mapping) else {}
    total = {"cpu": 0.0, "memory": 0.0}
    init = {"cpu": 0.0, "memory": 0.0}
    for key, acc, combine in (("containers", total, "sum"), ("initContainers", init, "max")):
        for c in spec.get(key) or ():
            if not isinstance(c, Mapping):
                continue
            res = c.get("resources") or {}
            req = res.get("requests") or res.get("limits") or {}  # limits default requests, as kube
            for r in ("cpu", "memory"):
                v = req.get(r) if isinstance(req, Mapping) else None
                if v is None:
                    continue
                try:
                    n = float(parse_quantity(v))
                except (QuantityError, ValueError):
                    continue
                acc[r] = acc[r] + n if combine == "sum" else max(acc[r], n)
    out = {r: max(total[r], init[r]) for r in total}
    overhead = spec.get("overhead") or {}
    for r in ("cpu", "memory"):
        if isinstance(overhead, Mapping) and overhead.get(r) is not None:
            try:
                out[r] += float(parse_quantity(overhead[r]))
            except (QuantityError, ValueError):
                pass
    out["pods"] = 1.0
    return {r: v for r, v in out.items() if v > 0}


def format_resource(r: str, v: float) -> str:
    if r == "cpu":
        return f"{Decimal(str(round(v, 3))).normalize():f}"
    if r == "memory":
        for unit, n in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if v >= n:
                return f"{v / n:.1f}{unit}".replace(".0" + unit, unit)
        return f"{int(v)}"
    return str(int(v))
