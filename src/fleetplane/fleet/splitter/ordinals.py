"""StatefulSets over the fleet: contiguous ordinal ranges, moved one ordinal at a time.

A parent StatefulSet of N replicas owns the ordinals 0..N-1; the decision says how many each
cluster runs, and each cluster's child runs one contiguous range of them (``spec.ordinals.start``
and ``spec.replicas``), so every Pod keeps its fleet-wide identity ``<name>-<ordinal>``.

**Layout** (:func:`layout`): the target ranges are laid out from 0 in the clusters' name order,
with the decision's counts. The layout depends on the counts alone (not on where ordinals run
now), so every move brings one ordinal to its final cluster and a re-balance ends; it shifts the
boundaries between neighbouring ranges: a cluster joining takes ordinals from its neighbours'
ends (the highest of the one below it, the lowest of the one above), a cluster leaving gives its
ordinals to its neighbours. The price of contiguity: a joining cluster may shift boundaries
further up or down (with ``a`` 0-7 and ``b`` 8-14, ``aa`` joining gets 0-4, ``a`` 5-9, ``b``
10-14: seven moves, not five).

**Moves** (:func:`plan`), make-before-break, one ordinal at a time: the highest ordinal whose
holder is not its target cluster, and that sits at the boundary between the two (at an end of
the holder's range, next to the target's range), is added to the target's child (its range grows
by one at that end, so both ranges stay contiguous and overlap in that one ordinal); once the
target's child reports all its replicas ready (for its current generation), the ordinal is removed
from the old holder. Then the next. Ordinals nobody holds (a scale-up, or an evicted cluster's,
which are frozen there and not counted) are added to their target at once, and ordinals at or
above N are removed at once (a scale-down, highest first as a StatefulSet scales down).

A cluster back from eviction counts again with the range its frozen child kept, whose ordinals
now also run elsewhere: of an ordinal running twice, the copy in its target cluster is kept once
ready (else a ready one), the others go as soon as they are at an end of their range. When no
ordinal sits at a boundary (such a range left in the middle of another), the highest one its
target can take next to its range is copied there, so the re-balance still ends.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .rollout import Plan

__all__ = ["OrdinalView", "Range", "layout", "plan"]


@dataclass(frozen=True)
class Range:
    start: int
    count: int

    @property
    def end(self) -> int:
        return self.start + self.count

    def __str__(self) -> str:
        if self.count <= 0:
            return "none"
        return str(self.start) if self.count == 1 else f"{self.start}-{self.end - 1}"


@dataclass(frozen=True)
class OrdinalView:
    """What the plan needs to know about one child StatefulSet."""

    start: int
    replicas: int
    #: every replica ready, for the child's current generation
    ready: bool = False
    deleting: bool = False

    @property
    def range(self) -> Range:
        return Range(max(0, self.start), max(0, self.replicas))


def layout(target: Mapping[str, int]) -> dict[str, Range]:
    """The target range of every cluster of ``target`` (cluster -> count): contiguous from 0, in
    the clusters' name order (see the module docstring)."""
    out: dict[str, Range] = {}
    pos = 0
    for c in sorted(target):
        n = max(0, target[c])
        out[c] = Range(pos, n)
        pos += n
    return out


def plan(target: Mapping[str, int], children: Mapping[str, OrdinalView], requested: int) -> Plan:
    """The next step toward ``target`` (cluster -> count of ``requested`` ordinals). The plan's
    ``replicas`` and ``starts`` are each child's range now; ``waiting``: clusters that keep an
    ordinal until its copy elsewhere is ready (cluster -> how many); ``blocked``: clusters that
    should gain ordinals but whose child is still being deleted."""
    p = Plan()
    n_total = max(0, requested)
    live = {c: v.range for c, v in children.items() if not v.deleting}
    ready = {c for c, v in children.items() if v.ready and not v.deleting}
    goal = layout(target)
    owner: dict[int, str] = {k: c for c, r in goal.items() for k in range(r.start, r.end)}
    # scale-down: ordinals at or above N go at once (they are the top of the ranges)
    cur: dict[str, list[int]] = {}
    for c, r in live.items():
        end = min(r.end, n_total)
        cur[c] = [r.start, max(r.start, end)] if r.start < n_total else [r.start, r.start]

    def holders(k: int) -> list[str]:
        return [c for c, (s, e) in cur.items() if s <= k < e]

    def at_end(c: str, k: int) -> bool:
        s, e = cur[c]
        return k in (s, e - 1)

    def can_add(c: str, k: int) -> bool:
        if c in children and children[c].deleting:
            p.blocked.add(c)
            return False
        if c not in cur or cur[c][0] == cur[c][1]:
            return True
        s, e = cur[c]
        return k in (s - 1, e)

    def add(c: str, k: int) -> None:
        if c not in cur or cur[c][0] == cur[c][1]:
            cur[c] = [k, k + 1]
        else:
            s, e = cur[c]
            cur[c] = [min(s, k), max(e, k + 1)]

    def remove(c: str, k: int) -> None:
        s, e = cur[c]
        cur[c] = [s + 1, e] if k == s else [s, e - 1]
        if cur[c][0] >= cur[c][1]:
            cur[c] = [cur[c][0], cur[c][0]]

    # an ordinal copied to its target is removed from the others once the target's child is ready;
    # one that runs twice elsewhere (a cluster back from eviction) keeps one copy, a ready one
    changed = True
    while changed:
        changed = False
        for k in range(n_total):
            hs = holders(k)
            if len(hs) < 2:
                continue
            t = owner.get(k)
            if t in hs and t not in ready:
                continue
            keep = t if t in hs else next((c for c in hs if c in ready), hs[0])
            for c in hs:
                if c != keep and at_end(c, k):
                    remove(c, k)
                    changed = True
    # ordinals nobody holds go to their target at once
    changed = True
    while changed:
        changed = False
        for k in range(n_total - 1, -1, -1):
            t = owner.get(k)
            if t is not None and not holders(k) and can_add(t, k):
                add(t, k)
                changed = True
    # moves waiting for their new copy to be ready (a copy that is ready but cannot be removed from
    # the middle of an old range yet does not hold the others back)
    in_flight = [k for k in range(n_total)
                 if len(hs := holders(k)) > 1 and owner.get(k) in hs and owner.get(k) not in ready]
    if not in_flight:
        # the next move: the highest misplaced ordinal at a boundary; failing that (a range left
        # in the middle of another by a cluster back from eviction), any its target can take
        for at_boundary in (True, False):
            move = next((k for k in range(n_total - 1, -1, -1)
                         if (t := owner.get(k)) is not None and (hs := holders(k)) and t not in hs
                         and (not at_boundary or (len(hs) == 1 and at_end(hs[0], k))) and can_add(t, k)), None)
            if move is not None:
                add(owner[move], move)
                in_flight.append(move)
                break
    for k in in_flight:
        for c in holders(k):
            if c != owner.get(k):
                p.waiting[c] = p.waiting.get(c, 0) + 1
    if not in_flight:  # no move possible (a layout out of name order): not settled, so it shows
        for k in range(n_total):
            hs = holders(k)
            if hs and owner.get(k) not in hs:
                p.waiting[hs[0]] = p.waiting.get(hs[0], 0) + 1
    # a move that cannot start yet (a target still being deleted) keeps the plan unsettled too
    for c, (s, e) in cur.items():
        count = e - s
        if count <= 0 and c not in target:
            if c in children:
                p.delete.add(c)
            continue
        p.replicas[c] = count
        p.starts[c] = s if count > 0 else (children[c].start if c in children else 0)
    p.available = sum(v.replicas for c, v in children.items() if c in ready)
    return p
