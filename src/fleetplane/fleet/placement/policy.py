"""The placement policy: what a workload asks of the clusters it runs in.

A Deployment declares it in one annotation, ``placement.fleetplane.io/policy``, whose value is a
YAML (or JSON) mapping; a ClusterDaemonSet in ``spec.placement`` (same fields). Every field is
optional; an absent policy is ``strategy: Even`` over every healthy cluster::

    strategy: Weighted              # Even (default) | Weighted | Capacity
    weights:                        # Weighted: cluster name -> weight, or a list of rules
      east: 2
      west: 1
    required:                       # a term, or a list of terms (any one must match)
      labels: env=prod              #   ClusterProfile labels: selector syntax or {matchLabels, matchExpressions}
      properties: location in (us-east-1,us-west-2)   # status.properties, selector syntax plus > and <
      clusters: [east, west]        #   by name
      clusterSet: prod              #   the KEP's ClusterSet (namespace label, profile label or property)
      location: us-east-1           #   the location, region or zone property
    preferred:                      # scored: replicas fill the best-scoring clusters first
      - weight: 50                  #   1..100
        properties: location=us-east-1
    spread:                         # across the values of a property (or ClusterProfile label)
      - topologyKey: topology.kubernetes.io/zone
        maxSkew: 1
        whenUnsatisfiable: DoNotSchedule    # or ScheduleAnyway
    tolerations:                    # of cluster taints (see fleet.py)
      - key: maintenance
        operator: Exists            # Equal (default, with value) | Exists
        effect: NoSchedule          # NoSchedule | PreferNoSchedule | NoExecute | "" (all)
    maxReplicasPerCluster: 5        # a hard cap per cluster
    rebalanceTolerance: 0           # keep the current split while every cluster is within this many
                                    # replicas of its ideal share (default 0; 1 for Capacity)
    overrides: [...]                # per-cluster changes to the child (see overrides.py)

:func:`parse_policy` turns the annotation text into a :class:`Policy` or raises
:class:`PolicyError` whose message names every bad field (it becomes the parent's
``InvalidPlacement`` condition and Event).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from .overrides import Override, parse_overrides
from .rollout import RolloutPolicy, rollout_from_dict
from .terms import ClusterTerm, PolicyError, _int, _kind, _term, _terms

__all__ = [
    "ANNOTATION_POLICY",
    "DEFAULT_POLICY",
    "EFFECTS",
    "STRATEGIES",
    "ClusterTerm",
    "Policy",
    "PolicyError",
    "Preference",
    "Spread",
    "Toleration",
    "WeightRule",
    "parse_policy",
    "policy_from_dict",
]

ANNOTATION_POLICY = "placement.fleetplane.io/policy"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
STRATEGIES = ("Even", "Weighted", "Capacity", "Duplicate")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_TOP_KEYS = ("strategy", "weights", "required", "preferred", "spread", "tolerations", "maxReplicasPerCluster",
             "rebalanceTolerance", "replicasPerCluster", "overrides", "rollout")


@dataclass(frozen=True)
class Preference:
    weight: int
    term: ClusterTerm


@dataclass(frozen=True)
class WeightRule:
    weight: int
    term: ClusterTerm


@dataclass(frozen=True)
class Spread:
    topology_key: str
    max_skew: int = 1
    hard: bool = True  # whenUnsatisfiable: DoNotSchedule (True) | ScheduleAnyway

    def describe(self) -> str:
        return (f"spread over {self.topology_key} with maxSkew {self.max_skew}"
                f" ({'DoNotSchedule' if self.hard else 'ScheduleAnyway'})")


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Any) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if not self.key:  # empty key with Exists tolerates everything
            return self.operator == "Exists"
        if self.key != taint.key:
            return False
        return self.operator == "Exists" or self.value == (taint.value or "")


@dataclass(frozen=True)
class Policy:
    strategy: str = "Even"
    required: tuple[ClusterTerm, ...] = ()
    preferred: tuple[Preference, ...] = ()
    spread: tuple[Spread, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    weights: tuple[WeightRule, ...] = ()
    max_per_cluster: int | None = None
    rebalance_tolerance: int | None = None
    #: Duplicate (ClusterDaemonSet): replicas every chosen cluster gets
    per_cluster: int = 1
    source: Mapping[str, Any] = field(default_factory=dict, compare=False)
    #: per-cluster changes to the children (fleet/placement/overrides.py), in order
    overrides: tuple[Override, ...] = ()
    #: progressive rollout across clusters (:mod:`.rollout`); None: every child at once
    rollout: RolloutPolicy | None = None

    @property
    def tolerance(self) -> int:
        if self.rebalance_tolerance is not None:
            return self.rebalance_tolerance
        return 1 if self.strategy == "Capacity" else 0

    def describe(self) -> list[str]:
        """One line per rule, for ``explain``."""
        out = [f"strategy {self.strategy}"]
        if self.weights:
            out.append("weights " + ", ".join(f"{w.term.text or 'any'}={w.weight}" for w in self.weights))
        for t in self.required:
            out.append(f"required {t.text or 'any cluster'}")
        for p in self.preferred:
            out.append(f"preferred (weight {p.weight}) {p.term.text}")
        for s in self.spread:
            out.append(s.describe())
        for tol in self.tolerations:
            out.append("tolerates " + (f"{tol.key}{'=' + tol.value if tol.value else ''}" if tol.key else "everything")
                       + (f":{tol.effect}" if tol.effect else ""))
        if self.max_per_cluster is not None:
            out.append(f"at most {self.max_per_cluster} replicas per cluster")
        if self.tolerance:
            out.append(f"rebalance tolerance {self.tolerance}")
        return out


DEFAULT_POLICY = Policy()


# -- parsing --------------------------------------------------------------------------------------


def parse_policy(text: str | None, *, strategy_default: str = "Even") -> Policy:
    """The policy in an annotation's text (YAML or JSON); an empty text is the default policy."""
    if text is None or not str(text).strip():
        return Policy(strategy=strategy_default)
    return _parse_cached(str(text), strategy_default)


@functools.lru_cache(maxsize=4096)
def _parse_cached(text: str, strategy_default: str) -> Policy:
    """Policies are immutable: the same annotation text parses once (errors are not cached)."""
    try:
        doc = yaml.load(text, Loader=_LOADER)  # noqa: S506 - a safe loader (libyaml's when present)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise PolicyError([f"{ANNOTATION_POLICY}: not valid YAML{where}: {problem}"]) from None
    if doc is None:
        return Policy(strategy=strategy_default)
    return policy_from_dict(doc, path=ANNOTATION_POLICY, strategy_default=strategy_default)


def policy_from_dict(doc: Any, *, path: str = "placement", strategy_default: str = "Even") -> Policy:
    errors: list[str] = []
    if not isinstance(doc, Mapping):
        raise PolicyError([f"{path}: must be a mapping of placement fields, not {_kind(doc)}"])
    for key in doc:
        if key not in _TOP_KEYS:
            errors.append(f"{path}.{key}: unknown field (known: {', '.join(_TOP_KEYS)})")
    strategy = doc.get("strategy", strategy_default)
    if strategy not in STRATEGIES[:3] and not (strategy == "Duplicate" and strategy_default == "Duplicate"):
        errors.append(f"{path}.strategy: must be one of Even, Weighted, Capacity, not {strategy!r}")
        strategy = strategy_default
    required = _terms(doc.get("required"), f"{path}.required", errors)
    preferred = []
    for i, item in enumerate(_list(doc.get("preferred"), f"{path}.preferred", errors)):
        where = f"{path}.preferred[{i}]"
        if not isinstance(item, Mapping):
            errors.append(f"{where}: must be a mapping with weight and a term, not {_kind(item)}")
            continue
        weight = _int(item.get("weight"), f"{where}.weight", errors, lo=1, hi=100, required=True)
        term = _term({k: v for k, v in item.items() if k not in ("weight", "preference")}
                     | dict(item.get("preference") or {}), where, errors, extra_ok=("weight", "preference"))
        if weight is not None and term is not None:
            preferred.append(Preference(weight, term))
    spread = []
    for i, item in enumerate(_list(doc.get("spread"), f"{path}.spread", errors)):
        where = f"{path}.spread[{i}]"
        if isinstance(item, str):
            item = {"topologyKey": item}
        if not isinstance(item, Mapping):
            errors.append(f"{where}: must be a mapping with topologyKey, not {_kind(item)}")
            continue
        for k in item:
            if k not in ("topologyKey", "maxSkew", "whenUnsatisfiable"):
                errors.append(f"{where}.{k}: unknown field (known: topologyKey, maxSkew, whenUnsatisfiable)")
        key = item.get("topologyKey")
        if not isinstance(key, str) or not key:
            errors.append(f"{where}.topologyKey: required: a property or label name such as topology.kubernetes.io/zone")
            continue
        skew = _int(item.get("maxSkew", 1), f"{where}.maxSkew", errors, lo=1)
        when = item.get("whenUnsatisfiable", "DoNotSchedule")
        if when not in ("DoNotSchedule", "ScheduleAnyway"):
            errors.append(f"{where}.whenUnsatisfiable: must be DoNotSchedule or ScheduleAnyway, not {when!r}")
            continue
        if skew is not None:
            spread.append(Spread(key, skew, when == "DoNotSchedule"))
    if len({s.topology_key for s in spread}) != len(spread):
        errors.append(f"{path}.spread: a topologyKey may appear only once")
    tolerations = []
    for i, item in enumerate(_list(doc.get("tolerations"), f"{path}.tolerations", errors)):
        where = f"{path}.tolerations[{i}]"
        if not isinstance(item, Mapping):
            errors.append(f"{where}: must be a mapping (key, operator, value, effect), not {_kind(item)}")
            continue
        for k in item:
            if k not in ("key", "operator", "value", "effect"):
                errors.append(f"{where}.{k}: unknown field (known: key, operator, value, effect)")
        op = item.get("operator", "Equal")
        effect = item.get("effect") or ""
        key = str(item.get("key") or "")
        value = item.get("value")
        if op not in ("Equal", "Exists"):
            errors.append(f"{where}.operator: must be Equal or Exists, not {op!r}")
        elif effect and effect not in EFFECTS:
            errors.append(f"{where}.effect: must be one of {', '.join(EFFECTS)} or empty, not {effect!r}")
        elif op == "Exists" and value not in (None, ""):
            errors.append(f"{where}.value: must be empty when operator is Exists")
        elif op == "Equal" and not key:
            errors.append(f"{where}.key: required when operator is Equal")
        else:
            tolerations.append(Toleration(key, op, "" if value is None else str(value), effect))
    weights = _weights(doc.get("weights"), f"{path}.weights", errors)
    if strategy == "Weighted" and not weights and "weights" not in doc:
        errors.append(f"{path}.weights: required by strategy Weighted (cluster name -> weight, or rules)")
    if weights and strategy != "Weighted":
        errors.append(f"{path}.weights: only used by strategy Weighted (strategy is {strategy})")
    cap = _int(doc.get("maxReplicasPerCluster"), f"{path}.maxReplicasPerCluster", errors, lo=0)
    tol = _int(doc.get("rebalanceTolerance"), f"{path}.rebalanceTolerance", errors, lo=0)
    per = _int(doc.get("replicasPerCluster", 1), f"{path}.replicasPerCluster", errors, lo=1)
    overrides = parse_overrides(doc.get("overrides"), f"{path}.overrides", errors, term=_term)
    rollout = None
    if doc.get("rollout") is not None:
        rollout = rollout_from_dict(doc["rollout"], f"{path}.rollout", errors)
    if errors:
        raise PolicyError(errors)
    return Policy(strategy=strategy, required=tuple(required), preferred=tuple(preferred), spread=tuple(spread),
                  tolerations=tuple(tolerations), weights=tuple(weights), max_per_cluster=cap,
                  rebalance_tolerance=tol, per_cluster=per or 1, source=dict(doc),
                  overrides=tuple(overrides), rollout=rollout)


def _list(v: Any, where: str, errors: list[str]) -> list:
    if v is None:
        return []
    if not isinstance(v, list):
        errors.append(f"{where}: must be a list, not {_kind(v)}")
        return []
    return v


def _weights(v: Any, where: str, errors: list[str]) -> list[WeightRule]:
    if v is None:
        return []
    out = []
    if isinstance(v, Mapping):  # cluster name -> weight
        for name, w in v.items():
            weight = _int(w, f"{where}.{name}", errors, lo=0)
            if weight is not None:
                out.append(WeightRule(weight, ClusterTerm(clusters=frozenset([str(name)]), text=str(name))))
        if not v:
            errors.append(f"{where}: empty: give at least one cluster a weight")
        return out
    for i, item in enumerate(_list(v, where, errors)):
        w = f"{where}[{i}]"
        if not isinstance(item, Mapping):
            errors.append(f"{w}: must be a mapping with weight and a term, not {_kind(item)}")
            continue
        weight = _int(item.get("weight"), f"{w}.weight", errors, lo=0, required=True)
        term = _term({k: x for k, x in item.items() if k != "weight"}, w, errors)
        if weight is not None and term is not None:
            out.append(WeightRule(weight, term))
    return out
