"""The parent's status, from its children's (pure functions).

Counters (``replicas``, ``updatedReplicas``, ``readyReplicas``, ``availableReplicas``) are sums
over the children that are not being deleted; ``unavailableReplicas`` is the larger of the
children's sum and what the parent misses (requested minus available, unplaced replicas included).
``observedGeneration`` becomes the parent's generation only once every child carries the spec of
that generation and has itself observed it (GitOps tools and ``kubectl rollout status`` wait on it);
until then the previous value stays.

Conditions (Deployment's shape: type, status, reason, message, lastUpdateTime, lastTransitionTime;
times move only when status, reason or message change):

- ``Available``: True only when every child is Available (and every replica is placed); the
  message names the clusters that are not.
- ``Progressing``: False ``ProgressDeadlineExceeded`` if any child's is (naming them, so
  ``kubectl rollout status`` fails as it would for one cluster); True ``NewReplicaSetAvailable``
  once every child is rolled out and placement has settled; else True ``ReplicaSetUpdated`` with
  per-cluster progress and what re-balancing waits for.
- ``ReplicaFailure``: True while replicas fail: a child's own ReplicaFailure, replicas that
  could not be placed (``NoEligibleClusters``, ``PlacementFailed``), replicas unavailable past
  the grace period (``Unschedulable``), a malformed policy (``InvalidPlacement``); cluster by
  cluster. Removed when nothing fails.
- ``Placement`` (fleetplane): True ``Placed`` (the split) or ``Rebalancing`` (moving, and what it
  waits for); False with the failure reasons above.
- ``Partitioned`` (fleetplane): True while a cluster holding replicas is unreachable or returning
  (:mod:`.eviction`): ``ClusterUnreachable`` (its replicas are not counted, not yet replaced),
  ``ReplicasEvicted`` (replaced elsewhere, kept there uncounted), ``ClusterReturning`` (back,
  within its stabilization window); removed when every cluster counts again. The clusters
  whose replicas are not counted (``uncounted``) are left out of every sum, and ``Available``
  names them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...apimachinery.metatime import now_rfc3339
from ...kube.objects import as_int

__all__ = ["COUNTERS", "DAEMONSET_COUNTERS", "PARTITIONED", "STATEFULSET_COUNTERS", "child_counts", "condition",
           "daemonset", "merge_condition", "now_rfc3339", "statefulset"]

COUNTERS = ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas")
#: the parent's condition about unreachable clusters (see the module docstring)
PARTITIONED = "Partitioned"


def _count(v: Any) -> int:
    """A non-negative count (0 when absent or malformed)."""
    return max(0, as_int(v))


def child_counts(child: Mapping[str, Any]) -> dict[str, int]:
    st = child.get("status") or {}
    return {k: _count(st.get(k)) for k in COUNTERS}


def condition(obj: Mapping[str, Any] | None, type_: str) -> dict[str, Any] | None:
    for c in ((obj or {}).get("status") or {}).get("conditions") or ():
        if isinstance(c, Mapping) and c.get("type") == type_:
            return dict(c)
    return None


def merge_condition(prev: Mapping[str, Any] | None, type_: str, status: str, reason: str, message: str,
                    now: str) -> dict[str, Any]:
    """A Deployment condition; times kept from ``prev`` unless status/reason/message changed."""
    message = message if len(message) <= 4000 else message[:3997] + "..."
    c = {"type": type_, "status": status, "reason": reason, "message": message}
    if prev and prev.get("status") == status and prev.get("reason") == reason and prev.get("message") == message:
        c["lastUpdateTime"] = prev.get("lastUpdateTime") or now
        c["lastTransitionTime"] = prev.get("lastTransitionTime") or now
    else:
        c["lastUpdateTime"] = now
        c["lastTransitionTime"] = (prev.get("lastTransitionTime") or now) if prev and prev.get("status") == status else now
    return c


def _cond_status(child: Mapping[str, Any], type_: str) -> tuple[str | None, str, str]:
    c = condition(child, type_)
    if c is None:
        return None, "", ""
    return str(c.get("status")), str(c.get("reason") or ""), str(c.get("message") or "")


def _short(text: str, n: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3] + "..."


def aggregate(*, generation: int, requested: int, children: Mapping[str, Mapping[str, Any]],
              target: Mapping[str, int], observed: bool, prev: Mapping[str, Any] | None,
              problems: list[tuple[str, str]], placement: tuple[str, str, str], progress_note: str = "",
              stale: Mapping[str, str] | None = None, uncounted: Mapping[str, str] | None = None,
              partitioned: tuple[str, str, str] | None = None, now: str | None = None) -> dict[str, Any]:
    """The parent's new status.

    ``children``: cluster -> child object (not being deleted); ``target``: the decision's split;
    ``observed``: every child carries this generation's spec and has observed it;
    ``problems``: (reason, message) failures for ReplicaFailure, most important first;
    ``placement``: the Placement condition (status, reason, message); ``progress_note``: what
    re-balancing waits for; ``stale``: clusters whose status may be out of date, and why;
    ``uncounted``: clusters whose child's replicas do not count (unreachable), and why;
    ``partitioned``: the ``Partitioned`` condition, None when no cluster is.
    """
    now = now or now_rfc3339()
    prev = prev or {}
    stale = stale or {}
    uncounted = uncounted or {}
    totals = dict.fromkeys(COUNTERS, 0)
    child: Mapping[str, Any] | None
    for cluster, child in children.items():
        if cluster in uncounted:
            continue
        for k, v in child_counts(child).items():
            totals[k] += v
    totals["unavailableReplicas"] = max(totals["unavailableReplicas"], requested - totals["availableReplicas"], 0)
    status: dict[str, Any] = {}
    og = prev.get("observedGeneration")
    if observed:
        og = generation
    if og is not None:
        status["observedGeneration"] = og
    for k in COUNTERS:
        if totals[k]:
            status[k] = totals[k]
    prev_conds = {c.get("type"): c for c in prev.get("conditions") or () if isinstance(c, Mapping)}
    conds = []

    # Available: only when every child is
    not_available = []
    for cluster in sorted(set(target) | set(children)):
        child = children.get(cluster)
        want = target.get(cluster, 0)
        if child is None:
            if want:
                not_available.append(f"{cluster} (not created yet)")
            continue
        s, reason, msg = _cond_status(child, "Available")
        spec = _count((child.get("spec") or {}).get("replicas"))
        if cluster in uncounted and (spec or want):
            not_available.append(f"{cluster} ({uncounted[cluster]})")
        elif s != "True" and (spec or want):
            why = f"{reason}: {_short(msg, 100)}" if reason else "no status yet"
            not_available.append(f"{cluster} ({why}{'; ' + stale[cluster] if cluster in stale else ''})")
    if requested == 0:
        conds.append(("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability."))
    elif not children and not target:
        conds.append(("Available", "False", "MinimumReplicasUnavailable",
                      "no cluster runs it: " + (problems[0][1] if problems else "no placement yet")))
    elif not_available:
        conds.append(("Available", "False", "MinimumReplicasUnavailable",
                      "not available in " + ", ".join(not_available)))
    elif any(r in ("NoEligibleClusters", "PlacementFailed") for r, _ in problems):
        conds.append(("Available", "False", "MinimumReplicasUnavailable",
                      next(m for r, m in problems if r in ("NoEligibleClusters", "PlacementFailed"))))
    else:
        conds.append(("Available", "True", "MinimumReplicasAvailable",
                      "available in every cluster: " + ", ".join(sorted(children))))

    # Progressing
    timed_out = []
    progress = []
    complete = observed and bool(children or requested == 0)
    for cluster in sorted(children):
        child = children[cluster]
        s, reason, msg = _cond_status(child, "Progressing")
        c = child_counts(child) if cluster not in uncounted else dict.fromkeys(COUNTERS, 0)
        spec = _count((child.get("spec") or {}).get("replicas"))
        if s == "False" and reason == "ProgressDeadlineExceeded" and cluster not in uncounted:
            timed_out.append(f"{cluster}: {_short(msg)}")
        done = c["updatedReplicas"] >= spec and c["availableReplicas"] >= spec and c["replicas"] <= spec \
            and c["updatedReplicas"] == c["replicas"]
        if not done:
            complete = False
        progress.append(f"{cluster} {c['readyReplicas']}/{spec}")
    if any(cluster not in children for cluster, n in target.items() if n):
        complete = False
    if progress_note:
        complete = False
    if timed_out:
        conds.append(("Progressing", "False", "ProgressDeadlineExceeded",
                      "exceeded its progress deadline in " + "; ".join(timed_out)))
    elif complete:
        conds.append(("Progressing", "True", "NewReplicaSetAvailable",
                      "rolled out in every cluster" + (f": {', '.join(progress)}" if progress else "")))
    else:
        msg = "rolling out: " + (", ".join(progress) if progress else "no children yet")
        if progress_note:
            msg += f"; {progress_note}"
        conds.append(("Progressing", "True", "ReplicaSetUpdated", msg))

    # ReplicaFailure: the children's own, then placement problems
    failures = []
    for cluster in sorted(children):
        s, reason, msg = _cond_status(children[cluster], "ReplicaFailure")
        if s == "True":
            failures.append(("FailedCreate" if not reason else reason, f"{cluster}: {_short(msg)}"))
    allp = list(problems) + failures
    if allp:
        reason = allp[0][0]
        conds.append(("ReplicaFailure", "True", reason, "; ".join(m for _, m in allp)))

    conds.append(("Placement", *placement))
    if partitioned is not None:
        conds.append((PARTITIONED, *partitioned))
    status["conditions"] = [merge_condition(prev_conds.get(t), t, s, r, m, now) for t, s, r, m in conds]
    return status


# -- DaemonSets and StatefulSets -------------------------------------------------------------------

#: a DaemonSet's status counters, summed over its children
DAEMONSET_COUNTERS = ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady",
                      "updatedNumberScheduled", "numberAvailable", "numberUnavailable")
#: a StatefulSet's status counters, summed over its children
STATEFULSET_COUNTERS = ("replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas")


def _apps_status(counters: tuple[str, ...], *, generation: int, children: Mapping[str, Mapping[str, Any]],
                 observed: bool, prev: Mapping[str, Any] | None, placement: tuple[str, str, str],
                 uncounted: Mapping[str, str] | None, partitioned: tuple[str, str, str] | None,
                 now: str | None) -> dict[str, Any]:
    """Sums of ``counters`` over the counted children, ``observedGeneration`` as a Deployment's,
    and the fleetplane conditions (``Placement``, ``Partitioned``) in the DaemonSet/StatefulSet
    condition shape (no lastUpdateTime)."""
    now = now or now_rfc3339()
    prev = prev or {}
    uncounted = uncounted or {}
    status: dict[str, Any] = dict.fromkeys(counters, 0)
    for cluster, child in children.items():
        if cluster in uncounted:
            continue
        cs = child.get("status") or {}
        for k in counters:
            status[k] += _count(cs.get(k))
    og = generation if observed else prev.get("observedGeneration")
    if og is not None:
        status["observedGeneration"] = og
    prev_conds = {c.get("type"): c for c in prev.get("conditions") or () if isinstance(c, Mapping)}
    conds = [("Placement", *placement)]
    if partitioned is not None:
        conds.append((PARTITIONED, *partitioned))
    status["conditions"] = []
    for t, s, r, m in conds:
        c = merge_condition(prev_conds.get(t), t, s, r, m, now)
        c.pop("lastUpdateTime", None)
        status["conditions"].append(c)
    return status


def daemonset(*, generation: int, name: str, spec_hash: str, children: Mapping[str, Mapping[str, Any]],
              observed: bool, prev: Mapping[str, Any] | None, placement: tuple[str, str, str],
              uncounted: Mapping[str, str] | None = None, partitioned: tuple[str, str, str] | None = None,
              now: str | None = None) -> dict[str, Any]:
    """A parent DaemonSet's status: its children's counters summed (``kubectl rollout status
    daemonset`` compares updatedNumberScheduled and numberAvailable with desiredNumberScheduled
    once observedGeneration has caught up)."""
    return _apps_status(DAEMONSET_COUNTERS, generation=generation, children=children, observed=observed, prev=prev,
                        placement=placement, uncounted=uncounted, partitioned=partitioned, now=now)


def statefulset(*, generation: int, name: str, spec_hash: str, children: Mapping[str, Mapping[str, Any]],
                observed: bool, prev: Mapping[str, Any] | None, placement: tuple[str, str, str],
                uncounted: Mapping[str, str] | None = None, partitioned: tuple[str, str, str] | None = None,
                now: str | None = None) -> dict[str, Any]:
    """A parent StatefulSet's status: its children's counters summed; ``updateRevision`` names
    this generation's spec (``<name>-<hash>``), and ``currentRevision`` becomes it once every
    counted child has rolled it out (its currentRevision is its updateRevision and every replica
    is updated), so ``kubectl rollout status statefulset`` waits for the whole fleet."""
    status = _apps_status(STATEFULSET_COUNTERS, generation=generation, children=children, observed=observed,
                          prev=prev, placement=placement, uncounted=uncounted, partitioned=partitioned, now=now)
    revision = f"{name}-{spec_hash[:10]}"
    counted = [c for k, c in children.items() if k not in (uncounted or {})]
    done = observed and all(
        (c.get("status") or {}).get("currentRevision") == (c.get("status") or {}).get("updateRevision")
        and _count((c.get("status") or {}).get("updatedReplicas")) >= _count((c.get("spec") or {}).get("replicas"))
        for c in counted)
    status["updateRevision"] = revision
    current = revision if done else (prev or {}).get("currentRevision")
    if current:
        status["currentRevision"] = current
    return status


# -- progressive rollouts (:mod:`.stages`) ---------------------------------------------------------

#: the counter of replicas at the new revision, per parent kind
_UPDATED = {"Deployment": "updatedReplicas", "ClusterDaemonSet": "updatedReplicas",
            "DaemonSet": "updatedNumberScheduled", "StatefulSet": "updatedReplicas"}


def with_rollout(kind: str, status: dict[str, Any], *, children: Mapping[str, Mapping[str, Any]],
                 at_revision: set[str], uncounted: Mapping[str, str], phase: str, message: str, held: bool,
                 prev: Mapping[str, Any], now: str | None = None) -> dict[str, Any]:
    """The parent's status under a progressive rollout: only children at the new revision count
    as updated (so ``kubectl rollout status`` follows the stages); ``Progressing`` names the stage
    (False ``ProgressDeadlineExceeded`` once the rollout failed, Unknown ``DeploymentPaused``
    while held); a StatefulSet's ``currentRevision`` moves only once every stage is done."""
    now = now or now_rfc3339()
    out = dict(status)
    key = _UPDATED.get(kind, "updatedReplicas")
    updated = sum(_count((c.get("status") or {}).get(key)) for n, c in children.items()
                  if n in at_revision and n not in uncounted)
    if updated or kind in ("DaemonSet", "StatefulSet", "ClusterDaemonSet"):
        out[key] = updated
    else:
        out.pop(key, None)
    if kind == "StatefulSet" and phase != "Complete":
        cur = (prev or {}).get("currentRevision")
        if cur and cur != out.get("updateRevision"):
            out["currentRevision"] = cur
        elif not cur:
            out.pop("currentRevision", None)
    conds = [dict(c) for c in out.get("conditions") or ()]
    old = next((c for c in conds if c.get("type") == "Progressing"), None)
    prev_cond = next((c for c in (prev or {}).get("conditions") or () if c.get("type") == "Progressing"), None)
    if phase == "Failed":
        want: tuple[str, str, str] | None = ("False", "ProgressDeadlineExceeded", message)
    elif held and phase != "Complete":
        want = ("Unknown", "DeploymentPaused", f"Deployment is paused; {message}")
    elif phase == "Aborted":
        want = ("False", "RolloutAborted", message)
    elif phase != "Complete":
        want = ("True", "ReplicaSetUpdated", message)
    else:
        want = None if old is not None else ("True", "NewReplicaSetAvailable", message)
    if want is not None and not (old is not None and old.get("reason") == "ProgressDeadlineExceeded"):
        c = merge_condition(prev_cond, "Progressing", *want, now)
        if kind in ("DaemonSet", "StatefulSet"):
            c.pop("lastUpdateTime", None)
        conds = [x for x in conds if x.get("type") != "Progressing"]
        conds.insert(1 if kind in ("Deployment", "ClusterDaemonSet") else 0, c)
    out["conditions"] = conds
    return out
