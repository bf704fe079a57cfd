"""Partitions: graceful eviction of an unreachable cluster's replicas, and their damped return.

A cluster's Syncer cannot reach it while it is partitioned, so its hub child keeps the last
status it synced: counting it would report replicas nobody knows to be serving, and writing to the
child (scaling it down, deleting it) would change nothing now but tear its pods down the moment the
cluster returns. So, per parent and cluster holding replicas (after Karmada's graceful eviction
tasks, `ResourceBinding.spec.gracefulEvictionTasks`):

1. **Unreachable** (``ControlPlaneHealthy`` not True, which the Cluster controller reports once
   its probes have failed for ``--cluster-failure-threshold``), for less than ``unhealthy_grace``:
   the cluster keeps its share (the engine holds it), but its child's replicas no longer count
   (not available, not in the parent's sums, not in the make-before-break budget).
2. **Evicted**, once unreachable for ``unhealthy_grace``: an :class:`Eviction` is recorded; the
   child is *frozen* (never written, scaled or deleted, not counted) and left out of the
   decision, so its share is placed on the other clusters. The wanted total over the counted
   clusters stays the parent's replicas; the frozen replicas keep running in the cluster,
   unreachable, uncounted.
3. **Returning**: healthy again. Still frozen until it has been healthy for ``rejoin_grace``
   without a break (a cluster that fails again stays evicted: flapping moves nothing more).
4. **Restored**: the record ends; the child counts again with the replicas it kept, the decision
   gives the cluster its share back (ties go to the replicas a cluster runs), and the
   replacements are removed make-before-break, as the returned replicas are available
   (:mod:`.rollout`). The child never drops to 0 on the way.

So a cluster causes at most one move out (its eviction) and one move back (its restoration) per
``unhealthy_grace + rejoin_grace`` seconds (plus the failure threshold), however it flaps; one
that flaps faster than ``rejoin_grace`` stays evicted and moves nothing after the first time.

A cluster whose ClusterProfile is deleted is not partitioned but gone: its child is removed once
the replacements are available (its last status counts), as before. Pure: no I/O, ``now`` is an
input; the records survive restarts in the parent's decision annotation.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..placement import ClusterInfo

__all__ = ["Eviction", "PartitionState", "Partitions", "step"]


def _clock(t: float) -> str:
    return time.strftime("%H:%M:%SZ", time.gmtime(t))


@dataclass
class Eviction:
    """A cluster's replicas of one parent, evicted while it is unreachable (kept there, uncounted)."""

    #: the child's spec.replicas when evicted: what it keeps, frozen
    replicas: int
    #: when the replicas were evicted (epoch seconds)
    since: float
    #: the cluster's health when they were
    reason: str
    #: healthy again since (its stabilization window runs), or None while it is not
    healthy_since: float | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"replicas": self.replicas, "since": round(self.since, 3), "reason": self.reason}
        if self.healthy_since is not None:
            d["healthySince"] = round(self.healthy_since, 3)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Eviction:
        hs = d.get("healthySince")
        return cls(int(d["replicas"]), float(d["since"]), str(d.get("reason") or ""),
                   None if hs is None else float(hs))


@dataclass
class PartitionState:
    """What a parent remembers: its evictions, and the phase last announced per cluster (so each
    step is one Event, not one per reconcile)."""

    evictions: dict[str, Eviction] = field(default_factory=dict)
    announced: dict[str, str] = field(default_factory=dict)


@dataclass
class Partitions:
    """One step's outcome."""

    #: clusters whose child is frozen: not counted, not written, left out of the decision
    frozen: set[str] = field(default_factory=set)
    #: clusters whose child's replicas do not count (frozen ones included), and why
    uncounted: dict[str, str] = field(default_factory=dict)
    #: when a time-based rule changes the outcome
    rechecks: list[float] = field(default_factory=list)
    #: (type, reason, message) Events for phases entered in this step
    events: list[tuple[str, str, str]] = field(default_factory=list)
    #: the parent's ``Partitioned`` condition (status, reason, message), None when nothing is
    condition: tuple[str, str, str] | None = None
    #: clusters restored in this step (they count again)
    restored: set[str] = field(default_factory=set)
    #: why each frozen cluster gets no share (for the decision annotation)
    filtered: dict[str, str] = field(default_factory=dict)


def _health(ci: ClusterInfo) -> str:
    why = "ControlPlaneHealthy=" + ("False" if ci.healthy is False else "Unknown")
    if ci.health_reason:
        why += f", {ci.health_reason}"
    if ci.health_message:
        msg = " ".join(ci.health_message.split())
        why += f": {msg if len(msg) <= 120 else msg[:117] + '...'}"
    return why


def _unhealthy(ci: ClusterInfo, rec: Eviction) -> str:
    since = f" since {_clock(ci.since)}" if ci.since is not None else ""
    return f"unhealthy{since}: {_health(ci)}; its {rec.replicas} replicas evicted at {_clock(rec.since)}"


def step(state: PartitionState, cluster: Callable[[str], ClusterInfo | None], children: Mapping[str, int],
         now: float, unhealthy_grace: float, rejoin_grace: float) -> Partitions:
    """Advance ``state`` for one reconcile. ``cluster(name)``: the fleet's view of a cluster (None:
    no ClusterProfile); ``children``: cluster -> spec.replicas of the parent's live children."""
    out = Partitions()
    phases: dict[str, str] = {}
    reasons: list[tuple[int, str, str]] = []  # (rank, reason, message)
    for c, rec in sorted(state.evictions.items()):
        ci = cluster(c)
        if c not in children or ci is None or ci.deleting:
            del state.evictions[c]  # the child is gone, or the cluster left the fleet: nothing is frozen
            continue
        if ci.healthy is True:
            # from when this splitter first saw it healthy (the profile's time has seconds only),
            # or later if it flapped since
            back = max(now if rec.healthy_since is None else rec.healthy_since, ci.since or 0.0, rec.since)
            rec.healthy_since = back
            if now - back >= rejoin_grace:
                del state.evictions[c]
                out.restored.add(c)
                phases[c] = f"restored:{rec.since}"
                out.events.append(("Normal", "ReplicasRestored",
                                   f"{c} has been healthy since {_clock(back)} ({rejoin_grace:g}s): its "
                                   f"{rec.replicas} replicas count again; their replacements are removed as "
                                   "they are available"))
                continue
            out.frozen.add(c)
            out.rechecks.append(back + rejoin_grace)
            msg = (f"{c} is back since {_clock(back)}: its {rec.replicas} replicas count again at "
                   f"{_clock(back + rejoin_grace)} if it stays healthy")
            out.uncounted[c] = f"back since {_clock(back)}, counted again at {_clock(back + rejoin_grace)}"
            out.filtered[c] = (f"returning: healthy since {_clock(back)}, its {rec.replicas} evicted replicas "
                               f"return once healthy for {rejoin_grace:g}s")
            phases[c] = f"returning:{back}"
            reasons.append((2, "ClusterReturning", msg))
            if state.announced.get(c) != phases[c]:
                out.events.append(("Normal", "ClusterReturning", msg))
            continue
        if rec.healthy_since is not None and state.announced.get(c, "").startswith("returning:"):
            out.events.append(("Warning", "ClusterUnreachable",
                               f"{c} is unreachable again ({_health(ci)}) before its {rejoin_grace:g}s of "
                               f"stability: its {rec.replicas} replicas stay evicted"))
        rec.healthy_since = None
        out.frozen.add(c)
        msg = (f"{c} unreachable ({_health(ci)}): its {rec.replicas} replicas were replaced elsewhere at "
               f"{_clock(rec.since)}; they stay in {c}, unchanged and not counted, until it has been "
               f"healthy for {rejoin_grace:g}s")
        out.uncounted[c] = f"unreachable, {rec.replicas} replicas evicted at {_clock(rec.since)}"
        out.filtered[c] = _unhealthy(ci, rec)
        phases[c] = f"evicted:{rec.since}"
        reasons.append((0, "ReplicasEvicted", msg))
    for c, n in sorted(children.items()):
        if c in state.evictions or c in out.restored or n <= 0:
            continue
        ci = cluster(c)
        if ci is None or ci.deleting or ci.healthy is True:
            continue
        since = ci.since
        if since is not None and now - since < unhealthy_grace:
            out.rechecks.append(since + unhealthy_grace)
            msg = (f"{c} unreachable since {_clock(since)} ({_health(ci)}): its {n} replicas are not counted; "
                   f"they are replaced elsewhere at {_clock(since + unhealthy_grace)} unless it returns")
            out.uncounted[c] = f"unreachable since {_clock(since)}, replicas not counted"
            phases[c] = f"unreachable:{since}"
            reasons.append((1, "ClusterUnreachable", msg))
            if state.announced.get(c) != phases[c]:
                out.events.append(("Warning", "ClusterUnreachable", msg))
            continue
        rec = Eviction(n, now, _health(ci))
        state.evictions[c] = rec
        out.frozen.add(c)
        out.uncounted[c] = f"unreachable, {n} replicas evicted at {_clock(now)}"
        out.filtered[c] = _unhealthy(ci, rec)
        msg = (f"{c} unreachable" + (f" since {_clock(since)}" if since is not None else "") + f" ({_health(ci)}): "
               f"its {n} replicas are replaced in other clusters; those in {c} stay, unchanged and not counted, "
               f"until it has been healthy for {rejoin_grace:g}s")
        phases[c] = f"evicted:{now}"
        reasons.append((0, "ReplicasEvicted", msg))
        out.events.append(("Warning", "ReplicasEvicted", msg))
    state.announced = {c: p for c, p in phases.items() if not p.startswith("restored:")}
    if reasons:
        reasons.sort(key=lambda r: r[0])
        out.condition = ("True", reasons[0][1], "; ".join(m for _, _, m in reasons))
    return out
