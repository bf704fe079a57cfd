"""Make-before-break: how far the children may go toward the decision's split right now.

Growing a cluster's share (or giving a new cluster one) is always safe and happens at once.
Shrinking one removes serving replicas, so it is rationed: replicas that are not available are
free to go (they serve nothing; a Deployment scales its unready pods down first), and available
ones may go only while the available replicas of every child together stay at or above the
requested total, i.e. once their replacements elsewhere have become available. So when a
cluster leaves, is evicted or a new one joins, the new home is scaled up first and the old one
down as the new replicas come up; and when no cluster can take the replicas at all, nothing
that serves is removed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["ChildView", "Plan", "plan"]


@dataclass(frozen=True)
class ChildView:
    """What the plan needs to know about one child (virtual Deployment)."""

    spec_replicas: int
    available: int = 0
    deleting: bool = False


@dataclass
class Plan:
    #: the spec.replicas each child should have now (children to create included)
    replicas: dict[str, int] = field(default_factory=dict)
    #: children to delete now
    delete: set[str] = field(default_factory=set)
    #: clusters whose scale-down waits for replacements: cluster -> replicas kept above target
    waiting: dict[str, int] = field(default_factory=dict)
    #: clusters that should grow but whose old child is still being deleted
    blocked: set[str] = field(default_factory=set)
    #: StatefulSets (:mod:`.ordinals`): the first ordinal of each child's range
    starts: dict[str, int] = field(default_factory=dict)
    #: available replicas now, and how many more may be removed
    available: int = 0
    budget: int = 0

    @property
    def settled(self) -> bool:
        return not self.waiting and not self.blocked


def plan(target: Mapping[str, int], children: Mapping[str, ChildView], requested: int) -> Plan:
    """The next step from ``children`` toward ``target`` (cluster -> replicas) for a parent that
    asks for ``requested`` replicas. Clusters with a child but no target lose it; with
    ``requested == 0`` children are scaled to 0 rather than deleted (unless their cluster is no
    longer a target at all)."""
    p = Plan()
    live = {c: v for c, v in children.items() if not v.deleting}
    p.available = sum(min(max(v.available, 0), max(v.spec_replicas, 0)) for v in live.values())
    budget = max(0, p.available - max(requested, 0))
    for c, t in target.items():
        v = children.get(c)
        if v is not None and v.deleting:
            if t > 0:
                p.blocked.add(c)
            continue
        if v is None:
            if t > 0:
                p.replicas[c] = t
            continue
        if t >= v.spec_replicas:
            p.replicas[c] = t
    # shrinking: clusters leaving entirely first, then by name (deterministic)
    downs = []
    for c, v in live.items():
        want = target.get(c)
        if want is not None and want >= v.spec_replicas:
            continue
        downs.append((want is not None, c, v, 0 if want is None else want))
    downs.sort(key=lambda x: (x[0], x[1]))
    for _, c, v, t in downs:
        spec = max(v.spec_replicas, 0)
        k = spec - t
        unavailable = spec - min(max(v.available, 0), spec)
        free = min(k, unavailable)
        take = min(k - free, budget)
        budget -= take
        new = spec - free - take
        if new > t:
            p.waiting[c] = new - t
        if new == 0 and c not in target:
            p.delete.add(c)
        else:
            p.replicas[c] = new
    p.budget = budget
    return p
