"""How a hub HPA's bounds are split over the clusters that run its target (pure functions)."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["apportion", "split_bounds"]


def apportion(total: int, weights: Mapping[str, int], floor: int = 1) -> dict[str, int]:
    """``total`` over the clusters of ``weights``, each at least ``floor``, the rest in proportion to
    the weights (largest remainder, ties by name; zero weights count as equal). When ``total`` is
    below ``floor`` per cluster every cluster still gets ``floor``: the sum is then larger."""
    names = sorted(weights)
    if not names:
        return {}
    out = {c: floor for c in names}
    rest = total - floor * len(names)
    if rest <= 0:
        return out
    w = {c: max(0, weights[c]) for c in names}
    if not sum(w.values()):
        w = {c: 1 for c in names}
    wsum = sum(w.values())
    exact = {c: rest * w[c] / wsum for c in names}
    for c in names:
        out[c] += int(exact[c])
    left = rest - sum(int(exact[c]) for c in names)
    for c in sorted(names, key=lambda c: (-(exact[c] - int(exact[c])), c))[:left]:
        out[c] += 1
    return out


def split_bounds(min_replicas: int, max_replicas: int, weights: Mapping[str, int]) -> dict[str, tuple[int, int]]:
    """Each cluster's (minReplicas, maxReplicas): both bounds apportioned like the replicas, every
    minimum at least 1 and every maximum at least its minimum. The sums are the parent's bounds
    unless there are more clusters than ``min_replicas`` (each minimum is then 1, summing above it)
    or than ``max_replicas`` (each maximum 1)."""
    mins = apportion(min_replicas, weights)
    maxs = apportion(max_replicas, weights)
    return {c: (mins[c], max(mins[c], maxs[c])) for c in mins}
