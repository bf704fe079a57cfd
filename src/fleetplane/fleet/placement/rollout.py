"""The ``rollout`` key of a placement policy: how a new revision of a parent reaches its clusters.

::

    rollout:
      stages:                       # in order; a cluster belongs to the first stage that selects it
        - clusters: [canary-1]      # a term (clusters / labels / properties / clusterSet / location)
          pause: 30s                #   a Go duration, or "approval" (until `fleetplane rollout approve`)
        - percent: 50               # or a share of the clusters no earlier stage took (rounded up,
          maxConcurrency: 1         #   in name order); at most this many in flight (number or "25%")
        - {}                        # the rest
      minSuccessTime: 10s           # a cluster is done once updated and healthy this long (default 0s)
      progressDeadline: 5m          # a stage not done by then fails the rollout (default 10m, kube's)
      healthCheck: "self.status.availableReplicas >= self.spec.replicas"   # optional CEL over the child

Clusters that no stage selects go in an implicit last stage. Pure: parsing and stage assignment
only; the machine that runs the stages is :mod:`fleetplane.fleet.splitter.stages`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .terms import ClusterTerm, PolicyError, _int, _kind, _term

__all__ = ["DEFAULT_PROGRESS_DEADLINE", "Named", "RolloutPolicy", "Stage", "go_duration", "parse_rollout"]

#: kube's progressDeadlineSeconds default
DEFAULT_PROGRESS_DEADLINE = 600.0
_STAGE_KEYS = ("clusters", "labels", "properties", "clusterSet", "location", "percent", "pause", "maxConcurrency")
_SELECTOR_KEYS = ("clusters", "labels", "properties", "clusterSet", "location")
_ROLLOUT_KEYS = ("stages", "minSuccessTime", "progressDeadline", "healthCheck")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def go_duration(text: str) -> float:
    """Seconds in a Go duration (``time.ParseDuration``: ``30s``, ``1h30m``, ``250ms``, ``0``);
    ValueError in Go's words."""
    s = text.strip()
    if s in ("0", "+0", "-0"):
        return 0.0
    if s.startswith("-"):
        raise ValueError(f'time: invalid duration "{text}": must not be negative')
    body = s[1:] if s.startswith("+") else s
    pos, total = 0, 0.0
    for m in _PART.finditer(body):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if not body or pos != len(body):
        raise ValueError(f'time: invalid duration "{text}"')
    return total


@dataclass(frozen=True)
class Stage:
    """One stage: which clusters (``term``, or ``percent`` of those left, or, with neither, all
    that are left), how many may be in flight at once, and what follows it."""

    term: ClusterTerm | None = None
    percent: int | None = None
    #: seconds to wait once the stage is done (None: none)
    pause: float | None = None
    #: wait until approved once the stage is done
    approval: bool = False
    #: an absolute number, or a percentage of the stage's clusters (rounded up, at least 1)
    max_concurrency: int | None = None
    max_concurrency_percent: int | None = None

    def concurrency(self, n: int) -> int:
        """Clusters of an ``n``-cluster stage that may be in flight at once."""
        if self.max_concurrency is not None:
            return max(1, self.max_concurrency)
        if self.max_concurrency_percent is not None:
            return max(1, math.ceil(n * self.max_concurrency_percent / 100))
        return max(1, n)

    def describe(self) -> str:
        if self.term is not None:
            what = self.term.text or "any cluster"
        elif self.percent is not None:
            what = f"{self.percent}% of the rest"
        else:
            what = "the rest"
        parts = [what]
        if self.max_concurrency is not None:
            parts.append(f"{self.max_concurrency} at a time")
        elif self.max_concurrency_percent is not None:
            parts.append(f"{self.max_concurrency_percent}% at a time")
        if self.approval:
            parts.append("then wait for approval")
        elif self.pause:
            parts.append(f"then pause {self.pause:g}s")
        return ", ".join(parts)


@dataclass(frozen=True)
class RolloutPolicy:
    stages: tuple[Stage, ...]
    min_success: float = 0.0
    progress_deadline: float = DEFAULT_PROGRESS_DEADLINE
    health_check: str | None = None

    def assign(self, clusters: Iterable[Any], reverse: bool = False) -> list[list[str]]:
        """The clusters of each stage, in order (``clusters``: objects with ``name``, as
        :class:`~.fleet.ClusterInfo`, or names). A cluster goes to the first stage that selects
        it; a percent takes that share of the clusters left, rounded up, in name order; clusters
        no stage took make an implicit last stage. ``reverse``: the same stages, last first (an
        undo rolls back the way it came)."""
        left = sorted((Named(c) if isinstance(c, str) else c for c in clusters), key=_name)
        out: list[list[str]] = []
        for stage in self.stages:
            if stage.term is not None:
                term = stage.term
                chosen = [c for c in left if term.matches(c)]
            elif stage.percent is not None:
                chosen = left[:math.ceil(len(left) * stage.percent / 100)]
            else:
                chosen = list(left)
            picked = {_name(c) for c in chosen}
            left = [c for c in left if _name(c) not in picked]
            out.append(sorted(picked))
        if left:
            out.append(sorted(_name(c) for c in left))
        return out[::-1] if reverse else out

    def stage_of(self, index: int) -> Stage:
        """The stage at ``index`` of :meth:`assign` (the implicit last stage has no options)."""
        return self.stages[index] if index < len(self.stages) else Stage()

    def describe(self) -> list[str]:
        out = [f"stage {i + 1}: {s.describe()}" for i, s in enumerate(self.stages)]
        out.append(f"minSuccessTime {self.min_success:g}s, progressDeadline {self.progress_deadline:g}s"
                   + (f", healthCheck {self.health_check}" if self.health_check else ""))
        return out


def _name(c: Any) -> str:
    return str(c.name)


@dataclass(frozen=True)
class Named:
    """A cluster known only by name (its profile gone): matches name terms only."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    properties: Mapping[str, str] = field(default_factory=dict)
    clusterset: str | None = None
    locations: tuple[str, ...] = ()


def _duration(v: Any, where: str, errors: list[str]) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        errors.append(f"{where}: must be a duration such as 30s, 5m or 1h30m, not {_kind(v)}")
        return None
    if isinstance(v, (int, float)):
        if v < 0:
            errors.append(f"{where}: must not be negative, not {v}")
            return None
        return float(v)
    try:
        return go_duration(v)
    except ValueError as exc:
        errors.append(f"{where}: must be a duration such as 30s, 5m or 1h30m: {exc}")
        return None


def _concurrency(v: Any, where: str, errors: list[str]) -> tuple[int | None, int | None]:
    if v is None:
        return None, None
    if isinstance(v, str) and v.strip().endswith("%"):
        num = v.strip()[:-1]
        if not num.isdigit() or not 1 <= int(num) <= 100:
            errors.append(f"{where}: a percentage must be 1%..100%, not {v!r}")
            return None, None
        return None, int(num)
    n = _int(v, where, errors, lo=1)
    return n, None


def parse_rollout(doc: Any, path: str) -> RolloutPolicy:
    """The ``rollout`` mapping at ``path`` (e.g. ``placement.fleetplane.io/policy.rollout``);
    raises :class:`~.terms.PolicyError` naming every bad field."""
    errors: list[str] = []
    out = rollout_from_dict(doc, path, errors)
    if errors or out is None:
        raise PolicyError(errors or [f"{path}: invalid"])
    return out


def rollout_from_dict(doc: Any, path: str, errors: list[str]) -> RolloutPolicy | None:
    """As :func:`parse_rollout`, appending to ``errors`` (the policy parser's list)."""
    if not isinstance(doc, Mapping):
        errors.append(f"{path}: must be a mapping with stages, not {_kind(doc)}")
        return None
    n = len(errors)
    for k in doc:
        if k not in _ROLLOUT_KEYS:
            errors.append(f"{path}.{k}: unknown field (known: {', '.join(_ROLLOUT_KEYS)})")
    raw = doc.get("stages")
    stages: list[Stage] = []
    if raw is None:
        errors.append(f"{path}.stages: required: a list of stages, e.g. [{{clusters: [canary]}}, {{}}]")
    elif not isinstance(raw, list):
        errors.append(f"{path}.stages: must be a list, not {_kind(raw)}")
    elif not raw:
        errors.append(f"{path}.stages: must have at least 1 item")
    else:
        for i, item in enumerate(raw):
            st = _stage(item, f"{path}.stages[{i}]", errors)
            if st is not None:
                stages.append(st)
    min_success = _duration(doc.get("minSuccessTime"), f"{path}.minSuccessTime", errors)
    deadline = _duration(doc.get("progressDeadline"), f"{path}.progressDeadline", errors)
    if deadline is not None and deadline <= 0:
        errors.append(f"{path}.progressDeadline: must be greater than 0")
    check = doc.get("healthCheck")
    if check is not None:
        if not isinstance(check, str) or not check.strip():
            errors.append(f"{path}.healthCheck: must be a CEL expression over the child (self), not {_kind(check)}")
            check = None
        else:
            from ...apimachinery.cel import compile_expression

            prog = compile_expression(check, frozenset(("self",)))
            if prog.error:
                errors.append(f"{path}.healthCheck: compilation failed: {prog.error}")
                check = None
    if len(errors) > n:
        return None
    return RolloutPolicy(stages=tuple(stages), min_success=min_success or 0.0,
                         progress_deadline=deadline if deadline else DEFAULT_PROGRESS_DEADLINE,
                         health_check=check)


def _stage(item: Any, where: str, errors: list[str]) -> Stage | None:
    if item is None:
        item = {}
    if not isinstance(item, Mapping):
        errors.append(f"{where}: must be a mapping (clusters, labels, properties, percent, pause, maxConcurrency), "
                      f"not {_kind(item)}")
        return None
    n = len(errors)
    for k in item:
        if k not in _STAGE_KEYS:
            errors.append(f"{where}.{k}: unknown field (known: {', '.join(_STAGE_KEYS)})")
    selector = {k: v for k, v in item.items() if k in _SELECTOR_KEYS}
    term = _term(selector, where, errors) if selector else None
    percent = None
    if item.get("percent") is not None:
        p = item["percent"]
        if isinstance(p, str) and p.strip().endswith("%"):
            p = p.strip()[:-1]
        if isinstance(p, bool) or not (isinstance(p, int) or (isinstance(p, str) and p.isdigit())) \
                or not 1 <= int(p) <= 100:
            errors.append(f"{where}.percent: must be 1..100, not {p!r}" if not isinstance(p, int) or isinstance(p, bool)
                          else f"{where}.percent: must be 1..100, not {p}")
        else:
            percent = int(p)
        if selector:
            errors.append(f"{where}.percent: may not be combined with {', '.join(selector)}: a stage selects "
                          "clusters by a term or by a percent of the rest")
    pause = item.get("pause")
    approval = False
    pause_s = None
    if pause == "approval":
        approval = True
    elif pause is not None:
        pause_s = _duration(pause, f"{where}.pause", errors)
    mc, mcp = _concurrency(item.get("maxConcurrency"), f"{where}.maxConcurrency", errors)
    if len(errors) > n:
        return None
    return Stage(term=term, percent=percent, pause=pause_s or None, approval=approval, max_concurrency=mc,
                 max_concurrency_percent=mcp)


def stage_names(assignment: Sequence[Sequence[str]]) -> list[str]:
    """``"stage i/n"`` labels for an assignment (for messages)."""
    return [f"stage {i + 1}/{len(assignment)}" for i in range(len(assignment))]
