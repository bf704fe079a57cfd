"""Progressive rollouts across clusters: the stage machine (pure; the policy is
:mod:`fleetplane.fleet.placement.rollout`).

When a parent's policy has ``rollout``, a new revision (the hash of what every child shares plus
the policy's ``overrides``) does not reach every child at once. Its clusters are split into the
policy's stages (frozen when the rollout starts; a cluster that joins later goes to the last
stage) and, stage after stage:

- at most ``maxConcurrency`` clusters of the stage are *in flight* (released: their child gets the
  new spec; not done yet). The others keep their child's spec (replicas still move);
- a released cluster is *done* once its child carries the revision, has observed it, is updated
  and available (the kind's own notion), passes the CEL ``healthCheck``, all of it without a break
  for ``minSuccessTime``; a cluster that is unreachable (not counted) is not done;
- a stage is done when all its clusters are; then its ``pause`` (a duration, or until approved
  with an approval naming this revision and stage), then the next stage;
- a stage not done ``progressDeadline`` after it started *fails* the rollout: nothing more is
  released until a new revision (an undo, an edit) starts another;
- ``paused`` (``spec.paused`` or ``rollout.fleetplane.io/paused``) holds the machine: nothing new is
  released, and the stage's deadline restarts on resume (kube does not count paused time either);
- ``abort`` (``rollout.fleetplane.io/abort: <revision>``) sends the released clusters back to the
  previous revision at once;
- a revision equal to an older one (``kubectl rollout undo``) rolls out with the stages reversed.

The state lives on the parent, in ``rollout.fleetplane.io/state`` (JSON), so it survives a
restart of the splitter. Times are epoch seconds; :func:`step` returns when to look again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ...apimachinery.cel import compile_expression
from ...kube.objects import as_int
from ..placement.rollout import RolloutPolicy

__all__ = ["ANNOTATION_ABORT", "ANNOTATION_APPROVE", "ANNOTATION_PAUSED", "ANNOTATION_PREFIX", "ANNOTATION_STATE",
           "HISTORY_LIMIT", "ClusterView", "Outcome", "RolloutState", "health", "load", "rolled_out", "step"]

ANNOTATION_PREFIX = "rollout.fleetplane.io/"
ANNOTATION_STATE = ANNOTATION_PREFIX + "state"
#: ``<revision>/<stage number>``: lifts that stage's "approval" pause (a stale one lifts nothing)
ANNOTATION_APPROVE = ANNOTATION_PREFIX + "approve"
#: ``<revision>``: stop that rollout and send its released clusters back to the previous revision
ANNOTATION_ABORT = ANNOTATION_PREFIX + "abort"
#: ``"true"``: hold the machine (for kinds without spec.paused)
ANNOTATION_PAUSED = ANNOTATION_PREFIX + "paused"
#: revisions remembered (kube's revisionHistoryLimit default)
HISTORY_LIMIT = 10

PROGRESSING, PAUSING, APPROVAL, FAILED, ABORTED, COMPLETE = (
    "Progressing", "Pausing", "WaitingForApproval", "Failed", "Aborted", "Complete")


@dataclass
class RolloutState:
    """What the machine remembers about a parent's rollout (see the module docstring)."""

    revision: str
    #: the spec hash children of this revision carry
    spec_hash: str = ""
    #: kube-style revision number (each new revision, and each undo, takes the next)
    number: int = 1
    #: older revisions: revision -> [number, spec hash], oldest first
    history: dict[str, list[Any]] = field(default_factory=dict)
    #: the revision this one replaces, its spec hash and a spec of it (for new children, abort)
    previous: str = ""
    previous_hash: str = ""
    previous_spec: dict[str, Any] | None = None
    reverse: bool = False
    stages: list[list[str]] = field(default_factory=list)
    stage: int = 0
    stage_start: float = 0.0
    released: dict[str, float] = field(default_factory=dict)
    healthy_since: dict[str, float] = field(default_factory=dict)
    done: dict[str, float] = field(default_factory=dict)
    phase: str = PROGRESSING
    pause_until: float | None = None
    held: bool = False
    message: str = ""
    started: float = 0.0
    finished: float | None = None

    def to_json(self) -> str:
        d = asdict(self)
        for k in ("released", "healthy_since", "done"):
            d[k] = {c: round(t, 3) for c, t in sorted(d[k].items())}
        return json.dumps(d, sort_keys=True, separators=(",", ":"))

    def stage_label(self, i: int | None = None) -> str:
        i = self.stage if i is None else i
        return f"stage {min(i, len(self.stages) - 1) + 1}/{len(self.stages)}" if self.stages else "no stages"

    @property
    def active(self) -> bool:
        return self.phase in (PROGRESSING, PAUSING, APPROVAL)


def load(text: str | None) -> RolloutState | None:
    """The state in the annotation's text (None when absent or unreadable: a new rollout)."""
    if not text:
        return None
    try:
        d = json.loads(text)
        names = set(RolloutState.__dataclass_fields__)
        st = RolloutState(**{k: v for k, v in d.items() if k in names})
        st.stages = [list(map(str, s)) for s in st.stages]
        return st
    except (ValueError, TypeError, AttributeError):
        return None


@dataclass(frozen=True)
class ClusterView:
    """One cluster of the parent, as the machine needs it."""

    #: a child exists (not being deleted)
    exists: bool
    #: it carries the new revision's spec
    at_revision: bool = False
    #: observed, updated, available (the kind's notion) and the healthCheck passes
    healthy: bool = False
    #: reachable (its child's status counts)
    counted: bool = True
    #: why it is not healthy, for messages
    why: str = ""


@dataclass
class Outcome:
    #: clusters whose child gets the new revision now
    new: set[str] = field(default_factory=set)
    #: clusters whose child goes (back) to the previous revision (abort), or is created with it
    old: set[str] = field(default_factory=set)
    requeue: list[float] = field(default_factory=list)
    events: list[tuple[str, str, str]] = field(default_factory=list)
    #: what the Progressing condition says ("stage 2/3: b updating")
    message: str = ""


def rolled_out(kind: Any, child: Mapping[str, Any]) -> tuple[bool, str]:
    """Whether a child has rolled out its spec (``kind``: the child's WorkloadKind): observed
    it, every replica updated and available (a DaemonSet: on every node)."""
    spec, st = child.get("spec") or {}, child.get("status") or {}
    observed = as_int(st.get("observedGeneration"), -1) >= as_int((child.get("metadata") or {}).get("generation"), 1)
    if not observed:
        return False, "has not observed its spec yet"
    if not kind.replicas:
        desired = as_int(st.get("desiredNumberScheduled"))
        upd, avail = as_int(st.get("updatedNumberScheduled")), as_int(st.get("numberAvailable"))
        ok = upd >= desired and avail >= desired
        return ok, "" if ok else f"{upd} updated, {avail} available of {desired}"
    want = as_int(spec.get("replicas"), 1)
    upd, avail = as_int(st.get("updatedReplicas")), as_int(st.get("availableReplicas"))
    ok = kind.ready(child) and upd >= want
    return ok, "" if ok else f"{upd} updated, {avail} available of {want}"


def health(check: str | None, child: Mapping[str, Any]) -> tuple[bool, str]:
    """The policy's CEL ``healthCheck`` over the child (``self``); a failure to evaluate (a
    missing field) is not healthy."""
    if not check:
        return True, ""
    prog = compile_expression(check, frozenset(("self",)))
    if prog.error:
        return False, f"healthCheck: {prog.error}"
    try:
        ok = prog.run({"self": json.loads(json.dumps(child))}) is True
    except Exception as exc:  # noqa: BLE001 - an evaluation error (no such key, overload) is a failed check
        return False, f"healthCheck {check!r}: {exc}"
    return ok, "" if ok else f"healthCheck {check!r} is false"


def _dur(s: float) -> str:
    s = int(round(s))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return (f"{h}h" if h else "") + (f"{m}m" if m or h else "") + f"{sec}s"


def step(state: RolloutState | None, policy: RolloutPolicy, *, revision: str, spec_hash: str, clusters: Sequence[Any],
         views: Mapping[str, ClusterView], now: float | None = None, held: bool = False, approval: str = "",
         abort: str = "", previous_spec: Mapping[str, Any] | None = None) -> tuple[RolloutState, Outcome]:
    """The next step of the rollout of ``revision`` over ``clusters`` (ClusterInfo-likes: the
    parent's clusters now, decision and children), given each cluster's ``views``.
    ``previous_spec``: a spec of the revision being replaced, when one is at hand (a child's), kept
    for children created later and for abort."""
    now = time.time() if now is None else now
    out = Outcome()
    names = sorted({str(getattr(c, "name", c)) for c in clusters})
    if state is None or state.revision != revision:
        state = _start(state, policy, revision, spec_hash, clusters, views, now, previous_spec, out)
    # clusters that joined since the rollout started go to the last stage
    staged = {c for s in state.stages for c in s}
    if not state.stages:
        state.stages = [[]]
    for c in names:
        if c not in staged:
            state.stages[-1].append(c)
    present = set(names)
    if state.phase == COMPLETE:
        out.new = present
        out.message = f"revision {state.number} rolled out to every cluster"
        return state, out
    if state.phase != ABORTED and abort and abort == revision:
        state.phase, state.finished = ABORTED, now
        back = sorted(c for c in state.released if c in present)
        state.released = {}
        state.message = (f"aborted at {state.stage_label()}: " + (", ".join(back) + " back to the previous revision"
                                                                     if back else "nothing was released"))
        out.events.append(("Warning", "RolloutAborted", f"Rollout of revision {state.number} {state.message}"))
    if state.phase == ABORTED:
        if state.previous_spec is not None:
            out.old = present
        out.message = state.message
        return state, out
    for c in list(state.released):
        _check(state, policy, views, c, now, out)
    was_held, state.held = state.held, held
    if was_held and not held and state.phase == PROGRESSING:
        state.stage_start = now  # the deadline does not count paused time
    while state.phase not in (FAILED, COMPLETE):
        members = [c for c in state.stages[state.stage] if c in present] if state.stage < len(state.stages) else []
        stage = policy.stage_of(_forward_index(state, policy))
        label = state.stage_label()
        if state.phase == PROGRESSING:
            in_flight = [c for c in members if c in state.released and not _done(state, views, c)]
            waiting = [c for c in members if c not in state.released]
            room = stage.concurrency(len(members)) - len(in_flight)
            if not held:
                fresh = waiting[:max(0, room)]
                for c in fresh:
                    state.released[c] = now
                    out.events.append(("Normal", "RolloutStageUpdate",
                                       f"Updating cluster {c} to revision {state.number} ({label})"))
                    _check(state, policy, views, c, now, out)  # already there (an undo): no change to wait for
                if any(_done(state, views, c) for c in fresh):
                    continue
                in_flight += fresh
                waiting = [c for c in members if c not in state.released]
            if in_flight or waiting:
                deadline = state.stage_start + policy.progress_deadline
                if not held and now >= deadline:
                    state.phase, state.finished = FAILED, now
                    detail = "; ".join(f"{c}: {_why(views.get(c))}" for c in in_flight) or "no cluster done"
                    state.message = (f"{label} ({', '.join(members)}) not done within "
                                     f"{_dur(policy.progress_deadline)}: {detail}")
                    out.events.append(("Warning", "RolloutFailed", f"Rollout of revision {state.number} failed: "
                                                                    f"{state.message}"))
                    break
                if not held:
                    out.requeue.append(deadline)
                parts = [f"{', '.join(in_flight)} updating"] if in_flight else []
                if waiting:
                    parts.append(f"{', '.join(waiting)} waiting")
                state.message = f"{label}: {'; '.join(parts)}" + (" (paused: nothing new is released)" if held else "")
                break
            # stage done
            state.healthy_since = {c: t for c, t in state.healthy_since.items() if c not in members}
            out.events.append(("Normal", "RolloutStageDone", f"{label} done: {', '.join(members) or 'no clusters'}"))
            if stage.approval:
                state.phase = APPROVAL
            elif stage.pause and state.stage < len(state.stages) - 1:
                state.phase, state.pause_until = PAUSING, now + stage.pause
            else:
                _advance(state, now, out)
                continue
        if state.phase == APPROVAL:
            want = f"{revision}/{state.stage + 1}"
            if approval == want:
                out.events.append(("Normal", "RolloutApproved", f"{label} approved"))
                _advance(state, now, out)
                continue
            state.message = f"{label} done; waiting for approval (fleetplane rollout approve)"
            break
        if state.phase == PAUSING:
            if held or state.pause_until is None or now < state.pause_until:
                if state.pause_until is not None:
                    out.requeue.append(state.pause_until)
                state.message = (f"{label} done; pausing until "
                                 f"{time.strftime('%H:%M:%SZ', time.gmtime(state.pause_until or now))}")
                break
            _advance(state, now, out)
            continue
    if state.phase == FAILED:
        out.message = state.message
    elif state.phase == COMPLETE:
        out.message = f"revision {state.number} rolled out to every cluster"
    else:
        out.message = state.message
    out.new = {c for c in state.released if c in present} if state.phase != COMPLETE else present
    if state.previous_spec is not None:
        out.old = {c for c in present if c not in out.new and not (views.get(c) or ClusterView(False)).exists}
    return state, out


def _check(state: RolloutState, policy: RolloutPolicy, views: Mapping[str, ClusterView], c: str, now: float,
           out: Outcome) -> None:
    """A released cluster's health: done once healthy at the revision for minSuccessTime."""
    v = views.get(c)
    if not (v is not None and v.exists and v.at_revision and v.healthy and v.counted):
        state.healthy_since.pop(c, None)
        return
    since = state.healthy_since.setdefault(c, now)
    if c not in state.done:
        if now - since >= policy.min_success:
            state.done[c] = now
        else:
            out.requeue.append(since + policy.min_success)


def _forward_index(state: RolloutState, policy: RolloutPolicy) -> int:
    """The policy stage the current stage is (stages run last-first in reverse)."""
    if not state.reverse:
        return state.stage
    return len(state.stages) - 1 - state.stage


def _done(state: RolloutState, views: Mapping[str, ClusterView], c: str) -> bool:
    v = views.get(c)
    return c in state.done and v is not None and v.counted and v.at_revision


def _why(v: ClusterView | None) -> str:
    if v is None or not v.exists:
        return "no child"
    if not v.counted:
        return "unreachable"
    if not v.at_revision:
        return "not at the new revision yet"
    return v.why or "not healthy for minSuccessTime yet"


def _advance(state: RolloutState, now: float, out: Outcome) -> None:
    state.stage += 1
    state.stage_start, state.pause_until = now, None
    if state.stage >= len(state.stages):
        state.stage = len(state.stages) - 1
        state.phase, state.finished = COMPLETE, now
        state.previous_spec = None
        state.message = f"revision {state.number} rolled out to every cluster"
        out.events.append(("Normal", "RolloutComplete", f"Revision {state.number} rolled out in "
                                                         f"{len(state.stages)} stages"))
    else:
        state.phase = PROGRESSING


def _start(prev: RolloutState | None, policy: RolloutPolicy, revision: str, spec_hash: str, clusters: Sequence[Any],
           views: Mapping[str, ClusterView], now: float, previous_spec: Mapping[str, Any] | None,
           out: Outcome) -> RolloutState:
    history: dict[str, list[Any]] = {}
    number = 1
    reverse = False
    if prev is not None:
        history = {k: v for k, v in prev.history.items() if k != revision}
        history[prev.revision] = [prev.number, prev.spec_hash]
        number = max([prev.number, *(as_int(v[0]) for v in history.values())]) + 1
        reverse = revision in prev.history
        while len(history) > HISTORY_LIMIT:
            history.pop(next(iter(history)))
    st = RolloutState(revision=revision, spec_hash=spec_hash, number=number, history=history, reverse=reverse,
                      stages=policy.assign(clusters, reverse=reverse), stage_start=now, started=now)
    if prev is not None:
        st.previous, st.previous_hash = prev.revision, prev.spec_hash
        st.previous_spec = dict(previous_spec) if previous_spec is not None else None
    old = [c for c, v in views.items() if v.exists and not v.at_revision]
    if prev is None and not old:
        # the first revision of a new parent: nothing older runs anywhere, nothing to stage
        st.phase, st.finished = COMPLETE, now
        st.message = f"revision {number} rolled out to every cluster"
        return st
    out.events.append(("Normal", "RolloutStarted",
                       f"Rolling out revision {number}{' (an undo: stages in reverse)' if reverse else ''} in "
                       f"{len(st.stages)} stages: " + "; ".join(f"{i + 1}: {', '.join(s) or '-'}"
                                                               for i, s in enumerate(st.stages))))
    return st
