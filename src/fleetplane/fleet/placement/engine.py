"""The placement engine: a pure, deterministic function from (replicas, policy, fleet, current
assignment, observations) to a :class:`Decision`. No I/O, no clocks (``now`` is an input).

1. **Filter** every cluster, first failure wins, and say why: leaving (profile being deleted),
   unhealthy (``ControlPlaneHealthy`` not True), joining (healthy for less than ``join_grace``),
   required affinity, untolerated taints, weight 0, no value for a hard spread key, no capacity
   ("0/15 pods fit: insufficient cpu"). Damping: a cluster that *holds* replicas and turns
   unhealthy, or gets a ``NoSchedule`` taint, is **held**: it keeps what it has (no new replicas)
   until it has been unhealthy for ``unhealthy_grace``; only then are its replicas **evicted**.
2. **Score**: the sum of the weights of the ``preferred`` terms a cluster matches; clusters with an
   untolerated ``PreferNoSchedule`` taint rank below every other. Replicas fill the best-scoring
   tier first and spill to lower tiers only when caps, capacity or spread leave no room.
3. **Apportion** with Webster/Sainte-Laguë's highest-averages rule: seat after seat goes to the
   cluster with the highest ``weight / (2n + 1)`` (weights: 1 for Even, the rules' for Weighted,
   the capacity estimate for Capacity). Ties go to a cluster that already runs that many replicas
   (fewer moves), then by name, or, given a ``seed`` (the workload's namespace/name, as the
   splitter does), by a hash of seed and name: stable for one workload, different across workloads,
   so many small workloads spread over the fleet instead of piling onto the first names (Karmada
   hashes the binding for the same reason). The rule is house-monotone: scaling up adds seats to the previous
   result and scaling down removes the last ones, so a change of replicas moves only the
   difference, and the same inputs always give the same split. Hard limits: the per-cluster cap
   and ``DoNotSchedule`` spread (a domain may lead the least-filled one by at most ``maxSkew``).
   Soft limits: the capacity estimate and observed limits (a cluster whose replicas stayed
   unavailable); replicas beyond every soft limit stay where they run (or go by weight), rather
   than be dropped. What hard limits leave over is *unplaced*, with reasons.
4. **Stability**: when the current assignment is still valid and within ``rebalanceTolerance`` of
   the ideal on every cluster, it is kept (damps capacity-weighted splits).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import heapq
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .fleet import ClusterInfo, format_resource
from .overrides import cap_for
from .policy import DEFAULT_POLICY, Policy

__all__ = ["ClusterDecision", "Decision", "Limit", "Options", "Prepared", "decide", "tie_order"]

SELECTED, HELD, FILTERED, GONE = "Selected", "Held", "Filtered", "Gone"


@dataclass(frozen=True)
class Limit:
    """Observed: the cluster ran at most ``max`` replicas of this workload (the rest stayed
    unavailable for longer than the grace period), noted at ``since``."""

    max: int
    since: float
    message: str = ""


@dataclass(frozen=True)
class Options:
    #: how long a cluster that holds replicas may be unhealthy before they move
    unhealthy_grace: float = 30.0
    #: how long a cluster must have been healthy before it receives new replicas
    join_grace: float = 10.0


class ClusterDecision:
    """One cluster in a :class:`Decision`: its status (Selected, Held, Filtered, Gone), why, its
    score, weight, estimated fit, caps, current and new replicas."""

    __slots__ = ("name", "status", "reason", "score", "weight", "cap", "soft_cap", "fit", "current", "replicas",
                 "domain", "tier", "note")

    def __init__(self, name: str, status: str = SELECTED, reason: str = "", current: int = 0, *, score: int = 0,
                 weight: float = 0.0, cap: int | None = None, soft_cap: int | None = None, fit: int | None = None,
                 replicas: int = 0, domain: tuple[str, ...] = (), tier: tuple[int, int] = (1, 0),
                 note: str = "") -> None:
        self.name = name
        self.status = status
        self.reason = reason
        self.current = current
        self.score = score
        self.weight = weight
        self.cap = cap
        self.soft_cap = soft_cap
        self.fit = fit
        self.replicas = replicas
        self.domain = domain
        self.tier = tier
        self.note = note

    def __repr__(self) -> str:
        return (f"ClusterDecision({self.name!r}, {self.status}, replicas={self.replicas}, current={self.current}"
                + (f", reason={self.reason!r}" if self.reason else "") + ")")

    @property
    def eligible(self) -> bool:
        return self.status in (SELECTED, HELD)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"status": self.status, "replicas": self.replicas}
        if self.reason:
            d["reason"] = self.reason
        if self.current:
            d["current"] = self.current
        if self.score:
            d["score"] = self.score
        if self.status in (SELECTED, HELD):
            d["weight"] = self.weight
        if self.fit is not None:
            d["fit"] = self.fit
        if self.note:
            d["note"] = self.note
        return d


@dataclass
class Decision:
    replicas: int
    policy: Policy
    clusters: list[ClusterDecision] = field(default_factory=list)
    placed: int = 0
    unplaced: int = 0
    #: why replicas are unplaced (cluster by cluster where it is about clusters)
    reasons: list[str] = field(default_factory=list)
    #: the current assignment was kept (valid, and within the rebalance tolerance)
    kept: bool = False
    #: the earliest time (epoch seconds) at which a time-based rule changes this decision
    recheck_at: float | None = None
    error: str | None = None

    def assignment(self) -> dict[str, int]:
        return {c.name: c.replicas for c in self.clusters if c.replicas > 0}

    def by_name(self) -> dict[str, ClusterDecision]:
        return {c.name: c for c in self.clusters}

    @property
    def eligible(self) -> list[ClusterDecision]:
        return [c for c in self.clusters if c.eligible]

    def filtered_reasons(self, limit: int = 20) -> list[str]:
        out = [f"{c.name}: {c.reason}" for c in self.clusters if c.status in (FILTERED, GONE) and c.reason]
        if len(out) > limit:
            out = out[:limit] + [f"... and {len(out) - limit} more"]
        return out

    def message(self) -> str:
        """One line: the split, or why replicas are unplaced."""
        if self.error:
            return self.error
        split = ", ".join(f"{k} {v}" for k, v in self.assignment().items())
        if self.unplaced:
            why = "; ".join(self.reasons) or "no room"
            return f"{self.unplaced} of {self.replicas} replicas cannot be placed: {why}" + (
                f" (placed {self.placed}: {split})" if split else "")
        if self.replicas == 0:
            return "0 replicas requested"
        return f"{self.placed} replicas placed: {split}"

    def summary(self, max_filtered: int = 30) -> dict[str, Any]:
        """A compact JSON form, for the parent's decision annotation."""
        d: dict[str, Any] = {"replicas": self.replicas, "placed": self.placed, "strategy": self.policy.strategy,
                             "shares": self.assignment()}
        if self.unplaced:
            d["unplaced"] = self.unplaced
            d["reasons"] = self.reasons[:20]
        held = {c.name: c.reason for c in self.clusters if c.status == HELD}
        if held:
            d["held"] = held
        filtered = {c.name: c.reason for c in self.clusters if c.status in (FILTERED, GONE)}
        if filtered:
            names = sorted(filtered)[:max_filtered]
            d["filtered"] = {n: filtered[n] for n in names}
            if len(filtered) > max_filtered:
                d["filteredOmitted"] = len(filtered) - max_filtered
        if self.kept:
            d["kept"] = True
        if self.error:
            d["error"] = self.error
        return d

    def explain(self) -> list[str]:
        """A table of every cluster considered, for ``fleetplane placement explain``."""
        lines = [f"Policy: {'; '.join(self.policy.describe())}",
                 f"Replicas: {self.replicas} requested, {self.placed} placed"
                 + (f", {self.unplaced} unplaced" if self.unplaced else "")
                 + (" (current split kept: within the rebalance tolerance)" if self.kept else "")]
        if self.error:
            lines.append(f"Error: {self.error}")
        rows = [("CLUSTER", "STATUS", "SCORE", "WEIGHT", "FIT", "CURRENT", "SHARE", "REASON")]
        order = sorted(self.clusters, key=lambda c: (not c.eligible, c.name))
        for c in order:
            fit = "-" if c.fit is None else str(c.fit)
            if c.soft_cap is not None and c.soft_cap != c.fit:
                fit = f"{fit}→{c.soft_cap}" if c.fit is not None else f"≤{c.soft_cap}"
            weight = _fmt_weight(c.weight) if c.eligible else "-"
            reason = c.reason or c.note
            if c.reason and c.note:
                reason = f"{c.reason}; {c.note}"
            rows.append((c.name, c.status, str(c.score) if c.eligible else "-", weight, fit, str(c.current),
                         str(c.replicas), reason))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
        for r in rows:
            lines.append("  ".join(v.ljust(widths[i]) for i, v in enumerate(r[:-1])) + "  " + r[-1])
        if self.unplaced:
            lines.append(f"Unplaced: {self.unplaced}: " + "; ".join(self.reasons))
        return lines


def _fmt_weight(w: float) -> str:
    return str(int(w)) if float(w).is_integer() else f"{w:.3g}"


def _bucket(n: float) -> int:
    """Two significant digits, at least 1: capacity weights that wobble do not change the split."""
    if n <= 0:
        return 0
    if n < 100:
        return max(1, int(round(n)))
    mag = 10 ** (int(math.log10(n)) - 1)
    return int(round(n / mag) * mag)


def _age(now: float, since: float | None) -> str:
    """`` since 12:01:05Z`` (absolute, so a reason does not change while time passes)."""
    if since is None:
        return ""
    t = _dt.datetime.fromtimestamp(since, _dt.UTC)
    return f" since {t.strftime('%H:%M:%SZ') if now - since < 86400 else t.strftime('%Y-%m-%dT%H:%M:%SZ')}"


# -- the decision ---------------------------------------------------------------------------------


class _Static:
    """What placement concludes about one cluster from the policy alone (no time, no current
    split): cached per (policy, requests, fleet) by :class:`Prepared`."""

    __slots__ = ("ci", "fail", "noschedule", "prefer_no", "note", "weight", "domain", "score", "cap", "fit",
                 "short", "simple", "tier", "cap_rule")

    def __init__(self, ci: ClusterInfo) -> None:
        self.ci = ci
        self.fail: str | None = None
        self.noschedule: Any = None
        self.prefer_no = False
        self.note = ""
        self.weight = 1.0
        self.domain: tuple[str, ...] = ()
        self.score = 0
        self.cap: int | None = None
        self.fit: int | None = None
        self.short: tuple | None = None
        #: nothing but the policy decides about this cluster when it holds no replicas (fast path)
        self.simple = False
        self.tier = (1, 0)
        #: the override rule (``overrides[i]``) whose maxReplicas is the cap, if one is
        self.cap_rule = ""


class Prepared:
    """The policy evaluated against a fleet: reuse it while neither changes (the splitter keeps
    one per workload), and :func:`decide` only adds time and the current split. :meth:`refresh`
    re-evaluates only the clusters whose :class:`ClusterInfo` object changed."""

    # set by :meth:`ranks` on first use (declarations only: no class attributes)
    _seed: str
    _ranks: dict[str, Any]

    def __init__(self, policy: Policy, clusters: Iterable[ClusterInfo],
                 requests: Mapping[str, float] | None = None) -> None:
        self.policy = policy
        self.requests = dict(requests or {"pods": 1.0})
        self.static: list[_Static] = []
        self.names: set[str] = set()
        self.refresh(clusters)

    def ranks(self, seed: str | None, names: Iterable[str]) -> dict[str, Any]:
        """:func:`tie_order` for ``names``, cached per seed."""
        if not seed:
            return {n: n for n in names}
        if seed != getattr(self, "_seed", None):
            self._seed, self._ranks = seed, {}
        cache: dict[str, Any] = self._ranks
        missing = [n for n in names if n not in cache]
        if missing:
            cache.update(tie_order(missing, seed))
        return cache

    def refresh(self, clusters: Iterable[ClusterInfo]) -> Prepared:
        old = {id(st.ci): st for st in self.static}
        seen: set[str] = set()
        static: list[_Static] = []
        for ci in clusters:
            if not ci.name or ci.name in seen:
                continue
            seen.add(ci.name)
            st = old.get(id(ci))
            static.append(st if st is not None and st.ci is ci else _static(ci, self.policy, self.requests))
        static.sort(key=lambda st: st.ci.name)
        self.static, self.names = static, seen
        return self


def _static(ci: ClusterInfo, policy: Policy, requests: Mapping[str, float]) -> _Static:
    st = _Static(ci)
    if policy.required and not any(term.matches(ci) for term in policy.required):
        st.fail = f"does not match required affinity: {policy.required[0].mismatch(ci)}"
        return st
    for t in ci.taints:
        if policy.tolerations and any(tol.tolerates(t) for tol in policy.tolerations):
            continue
        if t.effect == "NoExecute":
            st.fail = f"taint {t} not tolerated"
            return st
        if t.effect == "NoSchedule":
            st.noschedule = t
        elif t.effect == "PreferNoSchedule":
            st.prefer_no = True
            st.note = _join(st.note, f"taint {t}: used only when other clusters are full")
    if policy.strategy == "Weighted":
        w = 0
        for rule in policy.weights:
            if rule.weight > w and rule.term.matches(ci):
                w = rule.weight
        if w <= 0:
            st.fail = "weight 0 (no weights rule gives it any)"
            return st
        st.weight = float(w)
    if policy.spread:
        domain = []
        for s in policy.spread:
            v = ci.properties.get(s.topology_key)
            if v is None:
                v = ci.labels.get(s.topology_key)
            if v is None:
                if s.hard:
                    st.fail = f"has no {s.topology_key} property or label (needed to spread)"
                    return st
                v = ""
            domain.append(v)
        st.domain = tuple(domain)
    if policy.preferred:
        st.score = sum(p.weight for p in policy.preferred if p.term.matches(ci))
    if policy.max_per_cluster is not None:
        st.cap = policy.max_per_cluster
    if policy.overrides:  # a rule's maxReplicas: a per-cluster cap, so the rest goes elsewhere
        rule_cap = cap_for(policy.overrides, ci)
        if rule_cap is not None and (st.cap is None or rule_cap[0] < st.cap):
            st.cap, st.cap_rule = rule_cap[0], rule_cap[1].ref
            st.note = _join(st.note, f"at most {st.cap} replicas ({st.cap_rule} maxReplicas)")
    cap = ci.capacity
    if cap:
        fit = None
        for r, need in requests.items():
            have = cap.get(r)
            if have is None or need <= 0:
                continue
            n = int(math.floor(have / need + 1e-9))
            if fit is None or n < fit:
                fit, st.short = n, (r, have, need)
        st.fit = fit
    st.tier = (0 if st.prefer_no else 1, st.score)
    st.simple = st.noschedule is None and st.cap != 0 and st.fit != 0
    return st


def decide(replicas: int, policy: Policy | None, clusters: Iterable[ClusterInfo] | None = None,
           current: Mapping[str, int] | None = None, *, requests: Mapping[str, float] | None = None,
           limits: Mapping[str, Limit] | None = None, now: float = 0.0,
           options: Options = Options(), prepared: Prepared | None = None, seed: str | None = None) -> Decision:
    """Place ``replicas`` (per cluster for strategy Duplicate: ``policy.per_cluster``) on ``clusters``,
    or with ``prepared`` (the policy evaluated earlier against the fleet, see :class:`Prepared`:
    its policy, clusters and requests are used and those arguments ignored). ``seed`` (the
    workload's ``namespace/name``) orders ties by a hash instead of by name (:func:`tie_order`)."""
    if prepared is None:
        prepared = Prepared(policy or DEFAULT_POLICY, clusters or (), requests)
    policy = prepared.policy
    current = current or {}
    limits = limits or {}
    duplicate = policy.strategy == "Duplicate"
    dec = Decision(replicas=max(0, int(replicas)), policy=policy)
    total = dec.replicas
    rechecks: list[float] = []
    grace, join_grace = options.unhealthy_grace, options.join_grace
    out = dec.clusters
    joining: list[tuple[ClusterDecision, _Static]] = []
    for st in prepared.static:
        ci = st.ci
        name = ci.name
        cur = current.get(name, 0)
        if cur < 0:
            cur = 0
        if cur == 0 and ci.healthy is True and not ci.deleting and (
                ci.since is None or now - ci.since >= join_grace) and name not in limits:
            # the common case: a healthy cluster that runs nothing of this workload
            if st.fail is not None:
                out.append(ClusterDecision(name, FILTERED, st.fail, 0))
                continue
            if st.simple:
                out.append(ClusterDecision(name, SELECTED, "", 0, score=st.score, weight=st.weight, cap=st.cap,
                                           soft_cap=st.fit, fit=st.fit, domain=st.domain, tier=st.tier,
                                           note=st.note))
                continue
        cd = ClusterDecision(name, SELECTED, "", cur)
        out.append(cd)
        if ci.deleting:
            cd.status, cd.reason = FILTERED, "leaving: its ClusterProfile is being deleted"
            continue
        if ci.healthy is not True:
            why = "ControlPlaneHealthy=" + ("False" if ci.healthy is False else "Unknown")
            if ci.health_reason:
                why += f" ({ci.health_reason}: {ci.health_message})" if ci.health_message else f" ({ci.health_reason})"
            if cur > 0 and ci.since is not None and now - ci.since < grace:
                cd.status, cd.cap = HELD, cur if st.cap is None else min(cur, st.cap)
                cd.reason = f"unhealthy{_age(now, ci.since)}: {why}; its {cur} replicas stay until {int(grace)}s"
                rechecks.append(ci.since + grace)
            else:
                cd.status, cd.reason = FILTERED, f"unhealthy{_age(now, ci.since)}: {why}"
                continue
        elif cur == 0 and ci.since is not None and now - ci.since < join_grace:
            rechecks.append(ci.since + join_grace)
            joining.append((cd, st))
            cd.status = FILTERED
            cd.reason = (f"joining: healthy{_age(now, ci.since)}, receives replicas once healthy for "
                         f"{int(join_grace)}s")
            continue
        _admit(cd, st, cur, total, policy, duplicate, limits)
    for name in sorted(n for n in current if n not in prepared.names):
        if current[name] > 0:
            out.append(ClusterDecision(name, status=GONE, current=int(current[name]),
                                       reason="no longer in the fleet (no ClusterProfile)"))
            out.sort(key=lambda c: c.name)
    dec.recheck_at = min(rechecks) if rechecks else None

    eligible = [c for c in out if c.status == SELECTED or c.status == HELD]
    if joining and not eligible:
        # damping delays moving replicas onto a cluster that just (re)joined; with no other
        # cluster to run them, it would only delay the first placement: use it now
        for cd, st in joining:
            cd.status, cd.reason, cd.note = SELECTED, "", "joining (healthy for less than the join grace), " \
                "used as no other cluster is available"
            _admit(cd, st, 0, total, policy, duplicate, limits)
        eligible = [c for c in out if c.status == SELECTED or c.status == HELD]
    if policy.strategy == "Capacity":
        known = [c.fit for c in eligible if c.fit is not None]
        default = _bucket(sum(known) / len(known)) if known else 1
        for c in eligible:
            c.weight = float(_bucket(c.fit) if c.fit is not None else default)
            if c.fit is None:
                c.note = _join(c.note, f"capacity not reported: weighted as the average ({default})")

    if duplicate:
        _duplicate(dec, eligible, policy)
        return dec
    if not eligible:
        dec.placed = 0
        dec.unplaced = total
        if total:
            dec.reasons = dec.filtered_reasons() or ["the fleet has no clusters (no ClusterProfiles)"]
        return dec

    _apportion(dec, eligible, policy, current, prepared.ranks(seed, (c.name for c in eligible)))
    if dec.placed == total and policy.tolerance and _keep_current(dec, eligible, policy, current):
        dec.kept = True
    return dec


def _admit(cd: ClusterDecision, st: _Static, cur: int, total: int, policy: Policy, duplicate: bool,
           limits: Mapping[str, Limit]) -> None:
    """The policy's checks for a cluster that is healthy (or held): affinity, taints, caps, fit."""
    if st.fail is not None:
        cd.status, cd.reason = FILTERED, st.fail
        return
    cd.weight, cd.score, cd.domain, cd.note = st.weight, st.score, st.domain, _join(cd.note, st.note)
    if st.prefer_no or st.score:
        cd.tier = (0 if st.prefer_no else 1, st.score)
    if st.cap is not None:
        cd.cap = st.cap if cd.cap is None else min(cd.cap, st.cap)
    if st.noschedule is not None:
        if cur > 0:
            cd.status = HELD
            cd.cap = cur if cd.cap is None else min(cd.cap, cur)
            cd.reason = _join(cd.reason, f"taint {st.noschedule}: no new replicas, its {cur} stay")
        else:
            cd.status, cd.reason = FILTERED, f"taint {st.noschedule} not tolerated"
            return
    if cd.cap == 0 and cd.status != HELD:
        cd.status, cd.reason = FILTERED, (f"{st.cap_rule} maxReplicas is 0" if st.cap_rule and st.cap == 0
                                          else "maxReplicasPerCluster is 0")
        return
    if st.fit is not None:
        fit = st.fit + cur if st.ci.capacity_net else st.fit
        cd.fit = cd.soft_cap = fit
        if fit == 0:
            assert st.short is not None  # set together with st.fit
            r, have, need = st.short
            want = policy.per_cluster if duplicate else total
            cd.status = FILTERED
            cd.reason = (f"0/{want} pods fit: insufficient {r} ({format_resource(r, have)} spare, "
                         f"{format_resource(r, need)} per replica)")
            return
    lim = limits.get(cd.name)
    if lim is not None:
        cd.soft_cap = lim.max if cd.soft_cap is None else min(cd.soft_cap, lim.max)
        cd.note = _join(cd.note, f"limited to {lim.max}: {lim.message}" if lim.message
                        else f"limited to {lim.max} (replicas stayed unavailable)")


def _join(a: str, b: str) -> str:
    return f"{a}; {b}" if a else b


def _duplicate(dec: Decision, eligible: list[ClusterDecision], policy: Policy) -> None:
    per = policy.per_cluster
    for c in eligible:
        n = per if c.cap is None else min(per, c.cap)
        if c.status == HELD:
            n = min(per, c.current) if c.current else 0
        c.replicas = n
        if c.soft_cap is not None and c.soft_cap < n:
            c.note = _join(c.note, f"only {c.soft_cap} may fit")
    dec.replicas = per * len([c for c in eligible if c.status == SELECTED]) + sum(
        c.replicas for c in eligible if c.status == HELD)
    dec.placed = sum(c.replicas for c in eligible)
    dec.unplaced = max(0, dec.replicas - dec.placed)
    if not eligible:
        dec.reasons = dec.filtered_reasons()


# -- apportionment --------------------------------------------------------------------------------


class _Seats:
    """Sequential Webster allocation over per-domain heaps (see the module docstring)."""

    def __init__(self, eligible: list[ClusterDecision], policy: Policy, current: Mapping[str, int],
                 rank: Mapping[str, Any]) -> None:
        self.cs = eligible
        self.policy = policy
        self.current = current
        self.rank = rank
        self.n = {c.name: 0 for c in eligible}
        self.spread = policy.spread
        # per constraint: value -> count over the eligible clusters' domains
        self.counts: list[dict[str, int]] = [dict() for _ in self.spread]
        for c in eligible:
            for i, v in enumerate(c.domain):
                self.counts[i].setdefault(v, 0)

    def _key(self, c: ClusterDecision, keep_first: bool) -> tuple:
        n = self.n[c.name]
        holds = n < self.current.get(c.name, 0)
        if keep_first:
            return (not holds, -c.tier[0], -c.tier[1], -c.weight / (2 * n + 1), not holds, self.rank[c.name])
        return (-c.tier[0], -c.tier[1], -c.weight / (2 * n + 1), not holds, self.rank[c.name])

    def run(self, seats: int, caps: dict[str, int | None], keep_first: bool) -> int:
        """Give out up to ``seats`` seats within ``caps``; returns how many were given."""
        n = self.n
        key = self._key
        heaps: dict[tuple[str, ...], list] = {}
        cur_get, rank = self.current.get, self.rank
        for c in self.cs:  # the keys of _key, inlined: this loop runs over every eligible cluster
            name = c.name
            cap = caps[name]
            k = n[name]
            if cap is not None and k >= cap:
                continue
            holds = k < cur_get(name, 0)
            tier = c.tier
            entry: tuple[tuple[Any, ...], ClusterDecision]
            if keep_first:
                entry = ((not holds, -tier[0], -tier[1], -c.weight / (2 * k + 1), not holds, rank[name]), c)
            else:
                entry = ((-tier[0], -tier[1], -c.weight / (2 * k + 1), not holds, rank[name]), c)
            h = heaps.get(c.domain)
            if h is None:
                heaps[c.domain] = [entry]
            else:
                h.append(entry)
        for h in heaps.values():
            heapq.heapify(h)
        given = 0
        push, pop = heapq.heappush, heapq.heappop
        if not self.spread:
            h = heaps.get((), [])
            while given < seats and h:
                _, c = pop(h)
                n[c.name] += 1
                given += 1
                cap = caps[c.name]
                if cap is None or n[c.name] < cap:
                    push(h, (key(c, keep_first), c))
            return given
        counts = self.counts
        hard = [(cnt, s.max_skew, i) for i, (cnt, s) in enumerate(zip(counts, self.spread, strict=True)) if s.hard]
        soft = [(cnt, s.max_skew, i) for i, (cnt, s) in enumerate(zip(counts, self.spread, strict=True)) if not s.hard]
        if not soft:
            return given + self._run_hard(seats, caps, keep_first, heaps, hard)
        split = 1 if keep_first else 2  # where the soft-spread flag goes in the comparison key
        while given < seats and heaps:
            hmins = [(cnt, min(cnt.values()), skew, i) for cnt, skew, i in hard]
            smins = [(cnt, min(cnt.values()), skew, i) for cnt, skew, i in soft]
            best = best_key = None
            for dom, h in heaps.items():
                blocked = False
                for cnt, lo, skew, i in hmins:
                    if cnt[dom[i]] - lo >= skew:
                        blocked = True
                        break
                if blocked:
                    continue
                dkey = h[0][0]
                if smins:
                    soft_ok = True
                    for cnt, lo, skew, i in smins:
                        if cnt[dom[i]] - lo >= skew:
                            soft_ok = False
                            break
                    dkey = (*dkey[:split], not soft_ok, *dkey[split:])
                if best_key is None or dkey < best_key:
                    best_key, best = dkey, dom
            if best is None:
                break  # every domain with room is blocked by a DoNotSchedule spread constraint
            h = heaps[best]
            _, c = pop(h)
            n[c.name] += 1
            for i, v in enumerate(best):
                counts[i][v] += 1
            given += 1
            cap = caps[c.name]
            if cap is None or n[c.name] < cap:
                push(h, (key(c, keep_first), c))
            elif not h:
                del heaps[best]
        return given


    def _run_hard(self, seats: int, caps: dict[str, int | None], keep_first: bool,
                  heaps: dict[tuple[str, ...], list], hard: list[tuple[dict[str, int], int, int]]) -> int:
        """:meth:`run` with DoNotSchedule spread only: a heap of the allowed domains' best clusters,
        blocked domains set aside until the least-filled domain's count rises."""
        n, key = self.n, self._key
        push, pop = heapq.heappush, heapq.heappop
        lo = [min(cnt.values()) for cnt, _, _ in hard]
        at_lo = [sum(1 for x in cnt.values() if x == lo[j]) for j, (cnt, _, _) in enumerate(hard)]
        if len(hard) == 1:  # the usual case, without the loop
            cnt0, skew0, i0 = hard[0]

            def allowed(dom: tuple[str, ...]) -> bool:
                return cnt0[dom[i0]] - lo[0] < skew0
        else:
            def allowed(dom: tuple[str, ...]) -> bool:
                for j, (cnt, skew, i) in enumerate(hard):
                    if cnt[dom[i]] - lo[j] >= skew:
                        return False
                return True

        top: list = []
        blocked: set[tuple[str, ...]] = set()
        h: list[Any] | None
        for dom, h in heaps.items():
            if allowed(dom):
                top.append((h[0][0], dom))
            else:
                blocked.add(dom)
        heapq.heapify(top)
        given = 0
        while given < seats and top:
            k, dom = pop(top)
            h = heaps.get(dom)
            if not h or h[0][0] != k:
                continue  # stale: a fresher entry for this domain is in the heap (or it is full)
            if not allowed(dom):
                blocked.add(dom)
                continue
            _, c = pop(h)
            n[c.name] += 1
            given += 1
            raised = False
            for j, (cnt, _, i) in enumerate(hard):
                v = dom[i]
                if cnt[v] == lo[j]:
                    at_lo[j] -= 1
                cnt[v] += 1
                if at_lo[j] == 0:
                    lo[j] += 1
                    at_lo[j] = sum(1 for x in cnt.values() if x == lo[j])
                    raised = True
            cap = caps[c.name]
            if cap is None or n[c.name] < cap:
                push(h, (key(c, keep_first), c))
            if h:
                if allowed(dom):
                    push(top, (h[0][0], dom))
                else:
                    blocked.add(dom)
            else:
                del heaps[dom]
            if raised and blocked:
                for b in [b for b in blocked if allowed(b)]:
                    blocked.discard(b)
                    hb = heaps.get(b)
                    if hb:
                        push(top, (hb[0][0], b))
        return given


def tie_order(names: Iterable[str], seed: str | None) -> dict[str, Any]:
    """The order ties are broken in: by name without a seed; with one (the workload's namespace/name)
    by a hash of seed and name (BLAKE2b), then name: stable for a workload, different across workloads."""
    if not seed:
        return {n: n for n in names}
    prefix = seed.encode() + b"\x00"
    return {n: (hashlib.blake2b(prefix + n.encode(), digest_size=8).digest(), n) for n in names}


def _apportion(dec: Decision, eligible: list[ClusterDecision], policy: Policy, current: Mapping[str, int],
               rank: Mapping[str, Any]) -> None:
    total = dec.replicas
    first = eligible[0]
    if (not policy.spread and all(c.cap is None and c.soft_cap is None and c.weight == first.weight
                                  and c.tier == first.tier for c in eligible)):
        # equal weights, no limits: Webster gives everyone total // n and the remainder to the
        # first clusters in tie-break order (those that already run more, then by name)
        base, rest = divmod(total, len(eligible))
        order = sorted(eligible, key=lambda c: (current.get(c.name, 0) <= base, rank[c.name]))
        for i, c in enumerate(order):
            c.replicas = base + (1 if i < rest else 0)
        dec.placed, dec.unplaced = total, 0
        return
    seats = _Seats(eligible, policy, current, rank)
    both = {c.name: _min(c.cap, c.soft_cap) for c in eligible}
    given = seats.run(total, both, keep_first=False)
    overflow = 0
    if given < total:  # soft limits are full: overflow stays where it runs, else goes by weight
        hard = {c.name: c.cap for c in eligible}
        overflow = seats.run(total - given, hard, keep_first=True)
        given += overflow
    for c in eligible:
        c.replicas = seats.n[c.name]
        if c.soft_cap is not None and c.replicas > c.soft_cap:
            c.note = _join(c.note, f"{c.replicas - c.soft_cap} over its estimated room (nowhere else to go)")
    dec.placed = given
    dec.unplaced = total - given
    if dec.unplaced:
        dec.reasons = _unplaced_reasons(dec, eligible, policy, seats)


def _min(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def _unplaced_reasons(dec: Decision, eligible: list[ClusterDecision], policy: Policy, seats: _Seats) -> list[str]:
    out = []
    full = [c for c in eligible if c.cap is not None and c.replicas >= c.cap]
    if len(full) == len(eligible):
        for c in full:
            why = ("held at its current replicas" if c.status == HELD
                   else f"at maxReplicasPerCluster ({c.cap})" if c.cap == policy.max_per_cluster
                   else f"at its overrides' maxReplicas ({c.cap})")
            out.append(f"{c.name}: {why}")
    else:
        for i, s in enumerate(policy.spread):
            if not s.hard:
                continue
            cnt = seats.counts[i]
            lo = min(cnt.values()) if cnt else 0
            stuck = sorted(v for v, n in cnt.items() if n == lo)
            names = {v: sorted(c.name for c in eligible if c.domain[i] == v) for v in stuck}
            doms = ", ".join(f"{v} ({', '.join(names[v])})" for v in stuck)
            out.append(f"{s.describe()}: {doms} cannot take more, so no other {s.topology_key} may lead it "
                       f"by more than {s.max_skew}")
    out.extend(dec.filtered_reasons(10))
    return out


def _keep_current(dec: Decision, eligible: list[ClusterDecision], policy: Policy, current: Mapping[str, int]) -> bool:
    """Keep the current split if it is valid and within the tolerance of the ideal everywhere."""
    byname = {c.name: c for c in eligible}
    if sum(v for v in current.values() if v > 0) != dec.placed:
        return False
    for name, n in current.items():
        if n <= 0:
            continue
        c = byname.get(name)
        if c is None or (c.cap is not None and n > c.cap) or (c.soft_cap is not None and n > c.soft_cap):
            return False
    for c in eligible:
        if abs(c.replicas - current.get(c.name, 0)) > policy.tolerance:
            return False
    for i, s in enumerate(policy.spread):
        if not s.hard:
            continue
        cnt: dict[str, int] = {}
        for c in eligible:
            cnt[c.domain[i]] = cnt.get(c.domain[i], 0) + max(0, current.get(c.name, 0))
        if cnt and max(cnt.values()) - min(cnt.values()) > s.max_skew:
            return False
    for c in eligible:
        c.replicas = max(0, current.get(c.name, 0))
    return True
