"""``meta.k8s.io/v1`` Table responses (``kubectl get`` human output), as kube-apiserver makes them.

* Built-in kinds use printers like kube's ``pkg/printers/internalversion/printers.go``. The
  server always prints the wide (``priority: 1``) columns too; kubectl hides them without
  ``-o wide``. Register more with :func:`register_printer`.
* Custom resources follow apiextensions-apiserver's ``tableconvertor``: ``Name`` and then one
  column per ``additionalPrinterColumns`` entry, evaluated with Kubernetes JSONPath (first
  match, missing -> ``null``), or ``Age`` when the CRD has none.
* Other kinds (CRDs among them) get the default table: ``Name`` and ``Created At``.

Rows carry the object as ``includeObject`` asks: ``Metadata`` (a PartialObjectMetadata with
the full metadata, the default), ``Object`` (the object itself) or ``None`` (no object).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

from ..apimachinery.jsonpath import compile_jsonpath, go_print
from ..apimachinery.labels import format_label_selector
from ..apimachinery.metatime import format_time, parse_rfc3339
from ..registry.types import PrinterColumn, ResourceType

TABLE_API_VERSION = "meta.k8s.io/v1"
INCLUDE_OBJECT_VALUES = ("Metadata", "Object", "None")

# -- durations and timestamps ------------------------------------------------------------------


def human_duration(seconds: float) -> str:
    """apimachinery's ``duration.HumanDuration``: ~2-3 significant figures ("5s", "3m2s", "4h5m", "12d")."""
    ns = int(seconds * 1e9)
    secs = int(ns / 1e9)  # truncates toward zero, like int(d.Seconds())
    if secs < -1:
        return "<invalid>"
    if secs < 0:
        return "0s"
    if secs < 60 * 2:
        return f"{secs}s"
    minutes = ns // 60_000_000_000
    if minutes < 10:
        s = (ns // 1_000_000_000) % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = ns // 3_600_000_000_000
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


_ZERO = object()


def _parse_time(value: Any) -> float | object | None:
    """An RFC 3339 timestamp as epoch seconds; ``_ZERO`` for Go's zero time; None if invalid."""
    if not isinstance(value, str) or not value:
        return None
    try:
        dt = parse_rfc3339(value)
    except ValueError:
        return None
    if dt.year <= 1:
        return _ZERO
    return dt.timestamp()


class _Clock:
    """``time.Since`` for one table: parses each distinct timestamp once."""

    __slots__ = ("now", "_ages", "_dates")

    def __init__(self, now: float | None) -> None:
        self.now = time.time() if now is None else now
        self._ages: dict[Any, str] = {}
        self._dates: dict[Any, str] = {}

    def since(self, value: Any) -> str:
        """kube's translateTimestampSince: "<unknown>" for a missing or zero time."""
        got = self._ages.get(value)
        if got is None:
            t = _parse_time(value)
            got = "<unknown>" if t is None or t is _ZERO else human_duration(self.now - t)  # type: ignore[operator]
            self._ages[value] = got
        return got

    def date_cell(self, value: Any) -> str:
        """A CRD ``date`` column: "<invalid>" when not a timestamp (metatable.ConvertToHumanReadableDateType)."""
        got = self._dates.get(value)
        if got is None:
            t = _parse_time(value)
            if t is None:
                got = "<invalid>"
            elif t is _ZERO:
                got = "<unknown>"
            else:
                got = human_duration(self.now - t)  # type: ignore[operator]
            self._dates[value] = got
        return got


def _rfc3339(value: Any) -> str:
    """The default table's ``Created At``: the timestamp in UTC RFC 3339, Go's zero time when unset."""
    t = _parse_time(value)
    if t is None or t is _ZERO:
        return "0001-01-01T00:00:00Z"
    return format_time(t)  # type: ignore[arg-type]


# -- column definitions --------------------------------------------------------------------------

META_DEF = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


@cache
def _describe(spec: Any) -> str:
    if isinstance(spec, str):
        return spec
    from .openapi import field_description  # lazy: loads the schema data once

    try:
        return field_description(*spec)
    except (OSError, ValueError):
        return ""


@dataclass(frozen=True)
class Column:
    name: str
    type: str = "string"
    #: a description, or (definition, field, ...) to read it from the schema data
    description: Any = ""
    format: str = ""
    priority: int = 0

    def definition(self) -> dict:
        return {"name": self.name, "type": self.type, "format": self.format,
                "description": _describe(self.description), "priority": self.priority}


NAME = Column("Name", format="name", description=(META_DEF, "name"))
AGE = Column("Age", description=(META_DEF, "creationTimestamp"))

Cells = Callable[[dict, _Clock], list]


@dataclass(eq=False)
class Printer:
    columns: tuple[Column, ...]
    cells: Cells
    conditions: Callable[[dict], list | None] | None = None
    _definitions: list[dict] | None = field(default=None, repr=False)

    def column_definitions(self) -> list[dict]:
        """The Table's columnDefinitions (built once; shared, read-only)."""
        if self._definitions is None:
            self._definitions = [c.definition() for c in self.columns]
        return self._definitions


_PRINTERS: dict[tuple[str, str], Printer] = {}


def register_printer(group: str, kind: str, columns: Iterable[Column], cells: Cells,
                     conditions: Callable[[dict], list | None] | None = None) -> None:
    """Add (or replace) the printer of a built-in kind, for every version of it."""
    _PRINTERS[(group, kind)] = Printer(tuple(columns), cells, conditions)


# -- helpers for printers --------------------------------------------------------------------------


def _meta(o: dict) -> dict:
    return o.get("metadata") or {}


def _get(o: Any, *path: str) -> Any:
    for p in path:
        if not isinstance(o, dict):
            return None
        o = o.get(p)
    return o


def _int(v: Any, default: int = 0) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def _len(v: Any) -> int:
    return len(v) if isinstance(v, dict | list) else 0


def _str(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _containers_cells(containers: Any) -> tuple[str, str]:
    cs = [c for c in containers if isinstance(c, dict)] if isinstance(containers, list) else []
    return ",".join(_str(c.get("name")) for c in cs), ",".join(_str(c.get("image")) for c in cs)




# -- built-in printers ------------------------------------------------------------------------------

CORE = "io.k8s.api.core.v1."
APPS = "io.k8s.api.apps.v1."
CONTAINERS = Column("Containers", priority=1, description="Names of each container in the template.")
IMAGES = Column("Images", priority=1, description="Images referenced by each container in the template.")


def _namespace_cells(o: dict, clock: _Clock) -> list:
    return [_meta(o).get("name"), _str(_get(o, "status", "phase")), clock.since(_meta(o).get("creationTimestamp"))]


def _configmap_cells(o: dict, clock: _Clock) -> list:
    return [_meta(o).get("name"), _len(o.get("data")) + _len(o.get("binaryData")),
            clock.since(_meta(o).get("creationTimestamp"))]


def _secret_cells(o: dict, clock: _Clock) -> list:
    return [_meta(o).get("name"), _str(o.get("type")), _len(o.get("data")), clock.since(_meta(o).get("creationTimestamp"))]


def _service_account_cells(o: dict, clock: _Clock) -> list:
    return [_meta(o).get("name"), _len(o.get("secrets")), clock.since(_meta(o).get("creationTimestamp"))]


def _lease_cells(o: dict, clock: _Clock) -> list:
    return [_meta(o).get("name"), _str(_get(o, "spec", "holderIdentity")), clock.since(_meta(o).get("creationTimestamp"))]


def _logical_cluster_cells(o: dict, clock: _Clock) -> list:
    name = _meta(o).get("name")
    return [name, _str(_get(o, "status", "phase")), f"/clusters/{name}", clock.since(_meta(o).get("creationTimestamp"))]


def _event_source(component: str, host: str) -> str:
    return component if not host else f"{component}, {host}"


def _event_cells_from(o: dict, clock: _Clock, *, involved: Any, message: Any, first: Any, last: Any, count: Any,
                      source: Any) -> list:
    first_ts = clock.since(first) if _present_time(first) else clock.since(o.get("eventTime"))
    last_ts = clock.since(last) if _present_time(last) else first_ts
    series = o.get("series")
    cnt = _int(count)
    if isinstance(series, dict):
        last_ts = clock.since(series.get("lastObservedTime"))
        cnt = _int(series.get("count"))
    elif cnt == 0:
        cnt = 1
    involved = involved if isinstance(involved, dict) else {}
    kind = _str(involved.get("kind")).lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = source if isinstance(source, dict) else {}
    src = _event_source(_str(source.get("component")) or _str(o.get("reportingController") or o.get("reportingComponent")),
                        _str(source.get("host")) or _str(o.get("reportingInstance")))
    return [last_ts, _str(o.get("type")), _str(o.get("reason")), target, _str(involved.get("fieldPath")), src,
            _str(message).strip(), first_ts, cnt, _meta(o).get("name")]


def _present_time(v: Any) -> bool:
    t = _parse_time(v)
    return t is not None and t is not _ZERO


def _core_event_cells(o: dict, clock: _Clock) -> list:
    return _event_cells_from(o, clock, involved=o.get("involvedObject"), message=o.get("message"),
                             first=o.get("firstTimestamp"), last=o.get("lastTimestamp"), count=o.get("count"),
                             source=o.get("source"))


def _events_v1_cells(o: dict, clock: _Clock) -> list:
    # events.k8s.io/v1 converted to the internal (core) Event, as kube prints it
    return _event_cells_from(o, clock, involved=o.get("regarding"), message=o.get("note"),
                             first=o.get("deprecatedFirstTimestamp"), last=o.get("deprecatedLastTimestamp"),
                             count=o.get("deprecatedCount"), source=o.get("deprecatedSource"))


def _deployment_cells(o: dict, clock: _Clock) -> list:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    desired = _int(spec.get("replicas"), 1)
    names, images = _containers_cells(_get(spec, "template", "spec", "containers"))
    return [_meta(o).get("name"), f"{_int(status.get('readyReplicas'))}/{desired}", _int(status.get("updatedReplicas")),
            _int(status.get("availableReplicas")), clock.since(_meta(o).get("creationTimestamp")), names, images,
            format_label_selector(spec.get("selector"), empty="")]


def _replicaset_cells(o: dict, clock: _Clock) -> list:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    names, images = _containers_cells(_get(spec, "template", "spec", "containers"))
    return [_meta(o).get("name"), _int(spec.get("replicas"), 1), _int(status.get("replicas")),
            _int(status.get("readyReplicas")), clock.since(_meta(o).get("creationTimestamp")), names, images,
            format_label_selector(spec.get("selector"))]


def _condition(conditions: Any, ctype: str) -> dict | None:
    for c in conditions if isinstance(conditions, list) else ():
        if isinstance(c, dict) and c.get("type") == ctype:
            return c
    return None


def _pod_cells(o: dict, clock: _Clock) -> list:
    """printPod (Kubernetes 1.32), restartable init containers (sidecars) included."""
    spec, status = o.get("spec") or {}, o.get("status") or {}
    meta = _meta(o)
    containers = spec.get("containers") if isinstance(spec.get("containers"), list) else []
    init_specs = [c for c in spec.get("initContainers") or [] if isinstance(c, dict)]
    restartable = {c.get("name") for c in init_specs if c.get("restartPolicy") == "Always"}
    total = len(containers) + len(restartable)
    ready = 0
    restarts = 0
    sidecar_restarts = 0
    last_restart: float = 0.0
    last_sidecar_restart: float = 0.0
    phase = _str(status.get("phase"))
    reason = _str(status.get("reason")) or phase
    conditions = status.get("conditions")
    for c in conditions if isinstance(conditions, list) else ():
        if isinstance(c, dict) and c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"

    def finished_at(cs: dict) -> float:
        t = _parse_time(_get(cs, "lastState", "terminated", "finishedAt"))
        return t if isinstance(t, float) else 0.0

    initializing = False
    init_statuses = [c for c in status.get("initContainerStatuses") or [] if isinstance(c, dict)]
    for i, cs in enumerate(init_statuses):
        restarts += _int(cs.get("restartCount"))
        last_restart = max(last_restart, finished_at(cs))
        is_sidecar = cs.get("name") in restartable
        if is_sidecar:
            sidecar_restarts += _int(cs.get("restartCount"))
            last_sidecar_restart = max(last_sidecar_restart, finished_at(cs))
        state = cs.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if isinstance(terminated, dict) and _int(terminated.get("exitCode")) == 0:
            continue
        if is_sidecar and cs.get("started") is True:
            if cs.get("ready"):
                ready += 1
            continue
        if isinstance(terminated, dict):
            if not terminated.get("reason"):
                if _int(terminated.get("signal")):
                    reason = f"Init:Signal:{_int(terminated.get('signal'))}"
                else:
                    reason = f"Init:ExitCode:{_int(terminated.get('exitCode'))}"
            else:
                reason = "Init:" + _str(terminated.get("reason"))
        elif isinstance(waiting, dict) and waiting.get("reason") and waiting.get("reason") != "PodInitializing":
            reason = "Init:" + _str(waiting.get("reason"))
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break

    initialized = (_condition(conditions, "Initialized") or {}).get("status") == "True"
    if not initializing or initialized:
        restarts = sidecar_restarts
        last_restart = last_sidecar_restart
        has_running = False
        statuses = [c for c in status.get("containerStatuses") or [] if isinstance(c, dict)]
        for cs in reversed(statuses):
            restarts += _int(cs.get("restartCount"))
            last_restart = max(last_restart, finished_at(cs))
            state = cs.get("state") or {}
            terminated, waiting = state.get("terminated"), state.get("waiting")
            if isinstance(waiting, dict) and waiting.get("reason"):
                reason = _str(waiting.get("reason"))
            elif isinstance(terminated, dict) and terminated.get("reason"):
                reason = _str(terminated.get("reason"))
            elif isinstance(terminated, dict):
                if _int(terminated.get("signal")):
                    reason = f"Signal:{_int(terminated.get('signal'))}"
                else:
                    reason = f"ExitCode:{_int(terminated.get('exitCode'))}"
            elif cs.get("ready") and isinstance(state.get("running"), dict):
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            reason = "Running" if (_condition(conditions, "Ready") or {}).get("status") == "True" else "NotReady"

    if meta.get("deletionTimestamp") and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif meta.get("deletionTimestamp") and phase not in ("Failed", "Succeeded"):
        reason = "Terminating"

    restarts_str = str(restarts)
    if restarts and last_restart:
        restarts_str = f"{restarts} ({human_duration(clock.now - last_restart)} ago)"

    ips = status.get("podIPs")
    pod_ip = _str(ips[0].get("ip")) if isinstance(ips, list) and ips and isinstance(ips[0], dict) else ""
    gates = spec.get("readinessGates")
    readiness = "<none>"
    if isinstance(gates, list) and gates:
        true_count = 0
        for g in gates:
            c = _condition(conditions, _get(g, "conditionType"))
            if c is not None and c.get("status") == "True":
                true_count += 1
        readiness = f"{true_count}/{len(gates)}"
    return [meta.get("name"), f"{ready}/{total}", reason, restarts_str, clock.since(meta.get("creationTimestamp")),
            pod_ip or "<none>", _str(spec.get("nodeName")) or "<none>",
            _str(status.get("nominatedNodeName")) or "<none>", readiness]


def _pod_conditions(o: dict) -> list | None:
    phase = _get(o, "status", "phase")
    if phase == "Succeeded":
        return [{"type": "Completed", "status": "True", "reason": "Succeeded", "message": "The pod has completed successfully."}]
    if phase == "Failed":
        return [{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]
    return None


def _node_cells(o: dict, clock: _Clock) -> list:
    spec, status, meta = o.get("spec") or {}, o.get("status") or {}, _meta(o)
    ready = _condition(status.get("conditions"), "Ready")
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
    internal = next((_str(a.get("address")) for a in addresses if a.get("type") == "InternalIP"), "<none>")
    external = next((_str(a.get("address")) for a in addresses if a.get("type") == "ExternalIP"), "<none>")
    return [meta.get("name"), ",".join(states), ",".join(sorted(roles)) or "<none>",
            clock.since(meta.get("creationTimestamp")), _str(info.get("kubeletVersion")), internal, external,
            _str(info.get("osImage")) or "<unknown>", _str(info.get("kernelVersion")) or "<unknown>",
            _str(info.get("containerRuntimeVersion")) or "<unknown>"]


def _event_columns(event_def: str) -> list[Column]:
    return [
        Column("Last Seen", description=(event_def, "lastTimestamp")),
        Column("Type", description=(event_def, "type")),
        Column("Reason", description=(event_def, "reason")),
        Column("Object", description=(event_def, "involvedObject")),
        Column("Subobject", priority=1, description=(CORE + "ObjectReference", "fieldPath")),
        Column("Source", priority=1, description=(event_def, "source")),
        Column("Message", description=(event_def, "message")),
        Column("First Seen", priority=1, description=(event_def, "firstTimestamp")),
        Column("Count", priority=1, description=(event_def, "count")),
        Column("Name", priority=1, format="name", description=(META_DEF, "name")),
    ]


register_printer("", "Namespace", [NAME, Column("Status", description="The status of the namespace"), AGE],
                 _namespace_cells)
register_printer("", "ConfigMap", [NAME, Column("Data", description=(CORE + "ConfigMap", "data")), AGE], _configmap_cells)
register_printer("", "Secret", [NAME, Column("Type", description=(CORE + "Secret", "type")),
                                Column("Data", description=(CORE + "Secret", "data")), AGE], _secret_cells)
register_printer("", "ServiceAccount", [NAME, Column("Secrets", description=(CORE + "ServiceAccount", "secrets")), AGE],
                 _service_account_cells)
register_printer("", "Event", _event_columns(CORE + "Event"), _core_event_cells)
# kube prints events.k8s.io Events with the core printer (same internal type and descriptions)
register_printer("events.k8s.io", "Event", _event_columns(CORE + "Event"), _events_v1_cells)
register_printer("coordination.k8s.io", "Lease",
                 [NAME, Column("Holder", description=("io.k8s.api.coordination.v1.LeaseSpec", "holderIdentity")), AGE],
                 _lease_cells)
register_printer("tenancy.fleetplane.io", "LogicalCluster", [
    NAME,
    Column("Phase", description=("io.fleetplane.tenancy.v1alpha1.LogicalClusterStatus", "phase")),
    Column("URL", description="The path that serves the logical cluster, relative to the server URL."),
    AGE,
], _logical_cluster_cells)
register_printer("apps", "Deployment", [
    NAME,
    Column("Ready", description="Number of the pod with ready state"),
    Column("Up-to-date", description=(APPS + "DeploymentStatus", "updatedReplicas")),
    Column("Available", description=(APPS + "DeploymentStatus", "availableReplicas")),
    AGE, CONTAINERS, IMAGES,
    Column("Selector", priority=1, description=(APPS + "DeploymentSpec", "selector")),
], _deployment_cells)
register_printer("apps", "ReplicaSet", [
    NAME,
    Column("Desired", "integer", description=(APPS + "ReplicaSetSpec", "replicas")),
    Column("Current", "integer", description=(APPS + "ReplicaSetStatus", "replicas")),
    Column("Ready", "integer", description=(APPS + "ReplicaSetStatus", "readyReplicas")),
    AGE, CONTAINERS, IMAGES,
    Column("Selector", priority=1, description=(APPS + "ReplicaSetSpec", "selector")),
], _replicaset_cells)
register_printer("", "Pod", [
    NAME,
    Column("Ready", description="The aggregate readiness state of this pod for accepting traffic."),
    Column("Status", description="The aggregate status of the containers in this pod."),
    Column("Restarts", description="The number of times the containers in this pod have been restarted and when the "
                                   "last container in this pod has restarted."),
    AGE,
    Column("IP", priority=1, description=(CORE + "PodStatus", "podIP")),
    Column("Node", priority=1, description=(CORE + "PodSpec", "nodeName")),
    Column("Nominated Node", priority=1, description=(CORE + "PodStatus", "nominatedNodeName")),
    Column("Readiness Gates", priority=1, description=(CORE + "PodSpec", "readinessGates")),
], _pod_cells, _pod_conditions)
register_printer("", "Node", [
    NAME,
    Column("Status", description="The status of the node"),
    Column("Roles", description="The roles of the node"),
    AGE,
    Column("Version", description=(CORE + "NodeSystemInfo", "kubeletVersion")),
    Column("Internal-IP", priority=1, description=(CORE + "NodeStatus", "addresses")),
    Column("External-IP", priority=1, description=(CORE + "NodeStatus", "addresses")),
    Column("OS-Image", priority=1, description=(CORE + "NodeSystemInfo", "osImage")),
    Column("Kernel-Version", priority=1, description=(CORE + "NodeSystemInfo", "kernelVersion")),
    Column("Container-Runtime", priority=1, description=(CORE + "NodeSystemInfo", "containerRuntimeVersion")),
], _node_cells)


def _binding_cells(o: dict, clock: _Clock) -> list:
    """printRoleBinding / printClusterRoleBinding, wide columns from rbac.SubjectsStrings."""
    ref = o.get("roleRef") if isinstance(o.get("roleRef"), dict) else {}
    users: list[str] = []
    groups: list[str] = []
    sas: list[str] = []
    for s in o.get("subjects") or []:
        if not isinstance(s, dict):
            continue
        kind, name = s.get("kind"), _str(s.get("name"))
        if kind == "ServiceAccount":
            sas.append(f"{_str(s.get('namespace'))}/{name}")
        elif kind == "User":
            users.append(name)
        elif kind == "Group":
            groups.append(name)
    return [_meta(o).get("name"), f"{_str(ref.get('kind'))}/{_str(ref.get('name'))}",
            clock.since(_meta(o).get("creationTimestamp")), ", ".join(users), ", ".join(groups), ", ".join(sas)]


def _binding_columns(kind: str, role_doc: str) -> list[Column]:
    # kube describes these from rbac/v1beta1 (the schema data has no RBAC definitions)
    return [NAME, Column("Role", description=role_doc), AGE,
            Column("Users", priority=1, description=f"Users in the {kind}"),
            Column("Groups", priority=1, description=f"Groups in the {kind}"),
            Column("ServiceAccounts", priority=1, description=f"ServiceAccounts in the {kind}")]


# Roles and ClusterRoles have no printer in kube: the default table (Name, Created At).
register_printer("rbac.authorization.k8s.io", "RoleBinding", _binding_columns(
    "roleBinding", "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. "
                   "If the RoleRef cannot be resolved, the Authorizer must return an error."), _binding_cells)
register_printer("rbac.authorization.k8s.io", "ClusterRoleBinding", _binding_columns(
    "clusterRoleBinding", "RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot "
                          "be resolved, the Authorizer must return an error."), _binding_cells)


def _default_cells(o: dict, clock: _Clock) -> list:
    return [_meta(o).get("name"), _rfc3339(_meta(o).get("creationTimestamp"))]


DEFAULT_PRINTER = Printer((NAME, Column("Created At", "date", description=(META_DEF, "creationTimestamp"))),
                          _default_cells)

# -- custom resources ---------------------------------------------------------------------------

#: apiextensions' serveDefaultColumnsIfEmpty: a CRD version without printer columns shows Age
DEFAULT_CR_COLUMNS = (PrinterColumn("Age", "date", ".metadata.creationTimestamp"),)


def _cr_cell(col_type: str, find: Callable[[Any], list]) -> Callable[[dict, _Clock], Any]:
    """tableconvertor's cell: the first match, typed by the column (cellForJSONValue)."""
    def cell(o: dict, clock: _Clock) -> Any:
        results = find(o)
        if not results:
            return None
        value = results[0]
        if value is None:
            return None
        if col_type == "string":
            return go_print(value)
        if isinstance(value, bool):
            return value if col_type == "boolean" else None
        if col_type == "integer":
            return value if isinstance(value, int) else int(value) if isinstance(value, float) else None
        if col_type == "number":
            return float(value) if isinstance(value, int | float) else None
        if col_type == "date":
            return clock.date_cell(value) if isinstance(value, str) else None
        return None
    return cell


@lru_cache(maxsize=512)
def _custom_printer(columns: tuple[PrinterColumn, ...], default_age: bool = False) -> Printer:
    cell_fns = [_cr_cell(c.type, compile_jsonpath(c.json_path)) for c in columns]
    defs = [Column(c.name, c.type, c.description, c.format, c.priority) for c in columns]
    if default_age:
        defs = [Column("Age", "date", (META_DEF, "creationTimestamp"))]

    def cells(o: dict, clock: _Clock) -> list:
        return [_meta(o).get("name"), *[fn(o, clock) for fn in cell_fns]]

    return Printer((NAME, *defs), cells)


def printer_for(rt: ResourceType) -> Printer:
    """The printer a type's tables use. A cluster's built-in kind imported as a CRD (apps/v1
    Deployment) prints like the built-in, so READY shows ready/desired as kube-apiserver does."""
    if rt.custom and (rt.group, rt.kind) in _PRINTERS:
        return _PRINTERS[(rt.group, rt.kind)]
    if rt.printer_columns:
        return _custom_printer(tuple(rt.printer_columns))
    if rt.custom:
        return _custom_printer(DEFAULT_CR_COLUMNS, True)
    return _PRINTERS.get((rt.group, rt.kind), DEFAULT_PRINTER)


# -- the table -----------------------------------------------------------------------------------


def to_table(rt: ResourceType, objects: list[dict], *, include_object: str = "Metadata",
             list_metadata: dict | None = None, no_headers: bool = False, now: float | None = None) -> dict:
    """A ``meta.k8s.io/v1`` Table of ``objects`` (one for a GET or a watch event).

    ``list_metadata`` is the list's metadata (``resourceVersion``, ``continue``,
    ``remainingItemCount``); without it a single object's resourceVersion is used, as kube
    does for a GET. ``no_headers`` leaves the column definitions empty (watch events after
    the first). ``now`` (epoch seconds) fixes the clock for ages.
    """
    if include_object not in INCLUDE_OBJECT_VALUES:
        raise ValueError(f"includeObject must be one of {', '.join(INCLUDE_OBJECT_VALUES)}")
    printer = printer_for(rt)
    clock = _Clock(now)
    cells_fn = printer.cells
    conditions_fn = printer.conditions
    rows = []
    append = rows.append
    if include_object == "Metadata":
        for o in objects:
            row = {"cells": cells_fn(o, clock),
                   "object": {"kind": "PartialObjectMetadata", "apiVersion": TABLE_API_VERSION,
                              "metadata": o.get("metadata") or {}}}
            if conditions_fn is not None and (conds := conditions_fn(o)):
                row["conditions"] = conds
            append(row)
    elif include_object == "Object":
        for o in objects:
            row = {"cells": cells_fn(o, clock), "object": o}
            if conditions_fn is not None and (conds := conditions_fn(o)):
                row["conditions"] = conds
            append(row)
    else:
        for o in objects:
            row = {"cells": cells_fn(o, clock)}
            if conditions_fn is not None and (conds := conditions_fn(o)):
                row["conditions"] = conds
            append(row)
    meta: dict = {}
    if list_metadata is not None:
        for k in ("resourceVersion", "continue", "remainingItemCount"):
            v = list_metadata.get(k)
            if v is not None and v != "":
                meta[k] = v
    elif len(objects) == 1:
        rv = (objects[0].get("metadata") or {}).get("resourceVersion")
        if rv:
            meta["resourceVersion"] = rv
    return {
        "kind": "Table",
        "apiVersion": TABLE_API_VERSION,
        "metadata": meta,
        "columnDefinitions": [] if no_headers else printer.column_definitions(),
        "rows": rows,
    }
