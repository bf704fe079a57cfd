"""What the Cluster controller (push mode) or the pull-mode syncer finds out about a cluster.

:func:`probe_cluster` asks the cluster's API server, in this order:

1. ``/version`` (reachable at all? its version);
2. ``/api`` (do the credentials work? 401 is ``Unauthorized``, 403 ``Forbidden``);
3. ``/livez`` and ``/readyz`` (``/healthz`` where they are not served): the control plane's
   health, KEP-4322's ``ControlPlaneHealthy``;
4. now and then (``details``): Nodes (allocatable cpu, memory and pods summed, and the node
   count), the ``kube-system`` namespace's uid (the KEP-2149 cluster id) and the cluster's own
   ``about.k8s.io`` ClusterProperties, which a cluster manager should copy into the profile.

Between full probes of a cluster that was found connected and healthy, a ``quick`` probe is one
request, ``/readyz`` with the credentials (as Karmada's cluster status controller probes): a 200
says the cluster is reachable, takes the credentials and is ready (kube's readyz checks include
livez's), so the last report stands; anything else is looked at with the full probe, which says
what is wrong exactly as before. One request instead of four per probe interval is most of what an
idle cluster costs its manager.

The result is a :class:`ClusterReport`, which serializes to JSON so the pull-mode syncer can hand it
to the controller through its Lease.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from decimal import Decimal
from typing import Any

from ...apimachinery.quantity import Quantity, parse_quantity
from ...kube.client import ApiError, Client, Unreachable

__all__ = ["ClusterReport", "format_cores", "probe_cluster"]

def format_cores(value: Decimal) -> str:
    """Cores as a plain decimal number without trailing zeros (``8``, ``7.5``, ``0.25``)."""
    text = format(value.quantize(Decimal("0.001")).normalize(), "f")
    return text


@dataclass
class ClusterReport:
    """One look at a cluster. ``reason``/``message`` explain ``connected`` (and ``healthy``)."""

    connected: bool = False
    reason: str = "Unknown"
    message: str = ""
    healthy: bool | None = None
    health_reason: str = "Unknown"
    health_message: str = ""
    version: str | None = None
    #: allocatable resources summed over Nodes: cpu (cores), memory (bytes), pods
    allocatable: dict[str, str] | None = None
    nodes: int | None = None
    cluster_id: str | None = None
    #: the cluster's own about.k8s.io ClusterProperties (name -> value)
    properties: dict[str, str] = field(default_factory=dict)
    details: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> ClusterReport:
        if not isinstance(data, dict):
            raise ValueError("a cluster report must be a JSON object")
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


def _short(text: str, limit: int = 400) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


async def _health(client: Client, path: str) -> tuple[int, str]:
    status, data = await client.raw("GET", path, query={"verbose": "true"} if path != "/healthz" else None)
    return status, data.decode("utf-8", "replace")


def _failed_checks(body: str) -> str:
    if body.lstrip().startswith("{"):
        try:
            doc = json.loads(body)
        except ValueError:
            doc = None
        if isinstance(doc, dict) and doc.get("message"):
            return _short(str(doc["message"]), 300)
    failed = [line.strip()[3:].strip() for line in body.splitlines() if line.strip().startswith("[-]")]
    return ", ".join(failed) if failed else _short(body, 200)


def _unreachable(r: ClusterReport, exc: Unreachable) -> ClusterReport:
    r.reason, r.message = exc.reason, exc.message
    r.health_reason, r.health_message = exc.reason, exc.message
    r.healthy = False
    return r


async def probe_cluster(client: Client, *, details: bool = True, previous: ClusterReport | None = None,
                        quick: bool = False) -> ClusterReport:
    """Look at the cluster behind ``client``; never raises for the cluster's faults (see the module doc).

    Without ``details`` the Node, id and property fields are copied from ``previous``. ``quick``
    (``previous`` was connected and healthy): ``/readyz`` alone, unless it answers anything but 200.
    """
    r = ClusterReport()
    if previous is not None and not details:
        r.allocatable, r.nodes, r.cluster_id = previous.allocatable, previous.nodes, previous.cluster_id
        r.properties = dict(previous.properties)
    if quick and previous is not None and previous.connected and previous.healthy and not details:
        try:
            status, _ = await client.raw("GET", "/readyz")
        except Unreachable as exc:
            return _unreachable(r, exc)
        if status == 200:
            return replace(previous, details=False, properties=dict(previous.properties))
    try:
        try:
            version = await client.request("GET", "/version")
            r.version = version.get("gitVersion") if isinstance(version, dict) else None
        except ApiError as exc:
            if exc.status not in (401, 403):  # some clusters hide /version from anonymous users only
                raise
        await client.request("GET", "/api")
    except Unreachable as exc:
        return _unreachable(r, exc)
    except ApiError as exc:
        if exc.status == 401:
            r.reason = "Unauthorized"
            r.message = f"{client.server} rejected the credentials (HTTP 401: {exc.message})"
        elif exc.status == 403:
            r.reason = "Forbidden"
            r.message = f"the credentials may not read {client.server}/api (HTTP 403: {exc.message})"
        else:
            r.reason = "ErrorConnecting"
            r.message = f"{client.server}: {exc}"
        r.health_reason, r.health_message, r.healthy = r.reason, r.message, False
        return r
    r.connected, r.reason = True, "Connected"
    r.message = f"connected to {client.server}" + (f" ({r.version})" if r.version else "")
    try:
        problems = []
        for path in ("/livez", "/readyz"):
            status, body = await _health(client, path)
            if status == 404:
                status, body = await _health(client, "/healthz")
            if status != 200:
                problems.append(f"{path}: HTTP {status}: {_failed_checks(body)}")
        if problems:
            r.healthy, r.health_reason, r.health_message = False, "Unhealthy", "; ".join(problems)
        else:
            r.healthy, r.health_reason, r.health_message = True, "Healthy", "livez and readyz ok"
    except Unreachable as exc:
        r.connected, r.reason, r.message = False, exc.reason, exc.message
        r.healthy, r.health_reason, r.health_message = False, exc.reason, exc.message
        return r
    if details:
        r.details = True
        await _details(client, r)
    return r


async def _details(client: Client, r: ClusterReport) -> None:
    try:
        nodes = await client.request("GET", "/api/v1/nodes")
        cpu = mem = pods = Quantity(0)
        items = nodes.get("items") or []
        for node in items:
            alloc = (node.get("status") or {}).get("allocatable") or {}
            try:
                cpu += parse_quantity(alloc.get("cpu", 0))
                mem += parse_quantity(alloc.get("memory", 0))
                pods += parse_quantity(alloc.get("pods", 0))
            except ValueError:
                continue
        r.nodes = len(items)
        r.allocatable = {"cpu": format_cores(cpu.as_dec()), "memory": str(int(mem.number)), "pods": str(int(pods.number))}
    except (ApiError, AttributeError):
        r.allocatable, r.nodes = None, None  # no Nodes served (or not readable): no capacity properties
    try:
        ns = await client.request("GET", "/api/v1/namespaces/kube-system")
        r.cluster_id = (ns.get("metadata") or {}).get("uid")
    except (ApiError, AttributeError):
        r.cluster_id = None
    try:
        props = await client.request("GET", "/apis/about.k8s.io/v1alpha1/clusterproperties")
        r.properties = {
            p["metadata"]["name"]: str(p["spec"]["value"])
            for p in props.get("items") or []
            if isinstance(p.get("spec"), dict) and p["spec"].get("value") is not None
        }
    except (ApiError, AttributeError, KeyError, TypeError):
        r.properties = {}
