"""What the Cluster controller remembers about one Cluster between reconciles, and what one
reconcile passes from one sub-reconciler to the next.

:class:`ClusterState` is the Cluster as last seen plus one small record per concern (the
connection, the Syncer, the inventory), each owned by the sub-reconciler of that concern. A
Cluster deleted and created again under the same name starts from fresh records
(:meth:`ClusterState.forget`): nothing is reset field by field.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ...inventory.model import Condition
from ...kube.client import ApiError, Client, Unreachable
from ...kube.kubeconfig import ApiTarget
from .crd import MODE_PULL, MODE_PUSH
from .probe import ClusterReport

__all__ = ["ClusterState", "Cond", "Connection", "Event", "Key", "Next", "Observed", "Pass", "Publication",
           "SubReconciler", "SyncerRun", "condition_list", "refusals_ignored", "resource_version"]

Key = tuple[str, str, str]  # (logical cluster, namespace, name)
Cond = tuple[bool | None, str, str]  # (status, reason, message)


class Next(enum.Enum):
    """What a sub-reconciler says: go on to the next one; stop this pass (the Cluster is looked at
    again at the probe interval, or at once when it changes); or the Cluster is done with (gone,
    or its cleanup finished: the controller forgets it)."""

    CONTINUE = "continue"
    REQUEUE = "requeue"
    DONE = "done"


class SubReconciler(Protocol):
    """One step of a pass: looks at (and may write) one concern of the Cluster."""

    async def reconcile(self, p: Pass) -> Next: ...


#: records an Event on the Cluster: (state, type, reason, message)
Event = Callable[["ClusterState", str, str, str], Awaitable[None]]


def resource_version(obj: Mapping[str, Any] | None) -> int:
    try:
        return int(((obj or {}).get("metadata") or {}).get("resourceVersion") or 0)
    except (TypeError, ValueError):
        return 0


def relevant(obj: Mapping[str, Any]) -> str:
    """What, when it changes, needs a reconcile (not our own status writes)."""
    md = obj.get("metadata") or {}
    return json.dumps([md.get("uid"), md.get("generation"), md.get("labels"), md.get("deletionTimestamp"),
                       md.get("finalizers"), obj.get("spec")], sort_keys=True, default=str)


@contextlib.contextmanager
def refusals_ignored() -> Iterator[None]:
    """Suppress what the hub refuses (an HTTP error), not its absence: an Unreachable hub fails the
    reconcile, which is retried, rather than skipping a step of it."""
    try:
        yield
    except Unreachable:
        raise
    except ApiError:
        pass


def condition_list(status: Mapping[str, Any] | None) -> list[Condition]:
    out = []
    for c in (status or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type"):
            out.append(Condition.from_dict(c))
    return out


@dataclass
class Connection:
    """The cluster's endpoint and what its probes found (push mode; in pull mode, its reports)."""

    #: (spec.kubeconfig, spec.context) the endpoint was made from
    source: tuple[Any, Any] | None = None
    endpoint: ApiTarget | None = None
    #: (reason, message) when no endpoint can be made of the spec
    error: tuple[str, str] | None = None
    client: Client | None = None
    #: the last probe, and the last one that reached the cluster (its details kept)
    report: ClusterReport | None = None
    known: ClusterReport | None = None
    details_at: float = 0.0
    connected_once: bool = False
    #: the last healthy probe's conditions, and since when probes have failed without a break
    last_good: tuple[Cond, Cond] | None = None
    failing_since: float | None = None

    async def close_client(self) -> None:
        client, self.client = self.client, None
        if client is not None:
            await client.close()


@dataclass
class SyncerRun:
    """The push-mode Syncer running for the Cluster, and its restarts."""

    syncer: Any = None
    task: asyncio.Task | None = None
    #: what it was started with (endpoint and resources): a change restarts it
    fingerprint: str | None = None
    failures: int = 0
    retry_at: float = 0.0
    error: tuple[str, str] | None = None

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()


@dataclass
class Publication:
    """The ClusterProfile and the credentials Secret as last verified."""

    profile_ok: bool = False
    profile_verify_at: float = 0.0
    profile_conditions: list[Condition] = field(default_factory=list)
    secret_fingerprint: str | None = None
    secret_verify_at: float = 0.0
    secret_conflict: str = ""


@dataclass
class ClusterState:
    key: Key
    obj: dict[str, Any] | None = None
    uid: str | None = None
    fingerprint: str | None = None
    conn: Connection = field(default_factory=Connection)
    run: SyncerRun = field(default_factory=SyncerRun)
    inventory: Publication = field(default_factory=Publication)
    cleanup_started: bool = False
    #: enqueues the Cluster (set by the controller)
    wake: Callable[[], None] = field(default=lambda: None, repr=False, compare=False)

    @property
    def lc(self) -> str:
        return self.key[0]

    @property
    def ns(self) -> str:
        return self.key[1]

    @property
    def name(self) -> str:
        return self.key[2]

    @property
    def label(self) -> str:
        return f"{self.lc}|{self.ns}/{self.name}"

    def set_object(self, obj: dict[str, Any] | None) -> None:
        """Take a newer copy of the Cluster (from the watch, or a write of ours); ``wake`` when it
        changed in a way that needs a reconcile."""
        if obj is None:
            self.obj = None
            self.wake()
            return
        if self.obj is not None and resource_version(obj) and resource_version(obj) < resource_version(self.obj):
            return  # older than what a write of ours already returned
        self.obj = obj
        fp = relevant(obj)
        if fp != self.fingerprint:
            self.fingerprint = fp
            self.wake()

    def forget(self) -> None:
        """Start over (the Cluster was replaced by another of the same name): fresh records."""
        self.conn, self.run, self.inventory = Connection(), SyncerRun(), Publication()
        self.cleanup_started = False


@dataclass
class Observed:
    """The Cluster's conditions as the connection, the Syncer and the probes found them."""

    connected: Cond
    healthy: Cond
    synced: Cond
    types: list[dict[str, str]] | None = None


@dataclass
class Pass:
    """One reconcile of one Cluster: the object it started from and what each step found."""

    state: ClusterState
    obj: dict[str, Any]
    observed: Observed | None = None
    published: Cond | None = None

    @property
    def spec(self) -> Mapping[str, Any]:
        return self.obj.get("spec") or {}

    @property
    def pull(self) -> bool:
        """Pull mode: the Syncer runs next to the cluster and reports through a Lease."""
        return (self.spec.get("syncerMode") or MODE_PUSH) == MODE_PULL
