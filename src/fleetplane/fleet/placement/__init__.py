"""fleetplane.fleet.placement: the placement engine (pure, deterministic, no I/O).

- :func:`decide` (``engine``): replicas + policy + fleet + current split -> :class:`Decision`;
- :func:`parse_policy` (``policy``): the ``placement.fleetplane.io/policy`` annotation -> :class:`Policy`;
- :class:`ClusterInfo` (``fleet``): what placement reads from a ClusterProfile.

See docs/placement.md.
"""

from __future__ import annotations

from .engine import ClusterDecision, Decision, Limit, Options, decide
from .fleet import ClusterInfo, Taint, parse_taints, requests_of
from .policy import (
    ANNOTATION_POLICY,
    DEFAULT_POLICY,
    ClusterTerm,
    Policy,
    PolicyError,
    Preference,
    Spread,
    Toleration,
    WeightRule,
    parse_policy,
    policy_from_dict,
)

__all__ = [
    "ANNOTATION_POLICY",
    "DEFAULT_POLICY",
    "ClusterDecision",
    "ClusterInfo",
    "ClusterTerm",
    "Decision",
    "Limit",
    "Options",
    "Policy",
    "PolicyError",
    "Preference",
    "Spread",
    "Taint",
    "Toleration",
    "WeightRule",
    "decide",
    "parse_policy",
    "parse_taints",
    "policy_from_dict",
    "requests_of",
]
