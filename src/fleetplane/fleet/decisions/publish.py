"""What a split workload's PlacementDecisions should be: pure functions, no I/O.

The input is what the splitter already publishes on the parent (the decision summary in
``placement.fleetplane.io/decision``, :meth:`fleetplane.fleet.placement.Decision.summary` plus the
splitter's own keys), its children ``<name>--<cluster>`` and the logical cluster's ClusterProfiles;
the output is the full set of PlacementDecision objects, sliced at :data:`~. MAX_DECISIONS`.
The kinds of parents are one table, :data:`KINDS`: a new kind the splitter learns to split is
one entry.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ...apimachinery.validation import is_label_value
from ...kube.objects import as_int, meta
from ..clusterdaemonset_crd import CDS_GROUP, CDS_KIND, CDS_PLURAL, CDS_VERSION
from ..hpas import ANNOTATION_HPA
from ..placement import ANNOTATION_POLICY, Policy, PolicyError, parse_policy, policy_from_dict
from . import (
    ANNOTATION_REPLICAS,
    LABEL_DECISION_INDEX,
    LABEL_DECISION_KEY,
    LABEL_DECISION_REVISION,
    LABEL_MANAGED_BY,
    LABEL_PLACEMENT_KEY,
    MANAGED_BY,
    MAX_DECISIONS,
    SCHEDULER_NAME,
)
from .crd import GROUP, KIND, VERSION

__all__ = ["ANNOTATION_DECISION", "KINDS", "LABEL_CLUSTER", "ProfileRef", "SplitKind", "desired", "is_parent",
           "kind_of", "placements", "slice_name"]

#: what the splitter writes and labels (fleet/splitter/controller.py): its decision summary on the
#: parent, and the cluster label on each child. Read here, never written.
ANNOTATION_DECISION = "placement.fleetplane.io/decision"
LABEL_CLUSTER = "kcp.dev/cluster"

ProfileRef = tuple[str, str]  # the ClusterProfile's namespace, name


def _deployment_policy(parent: Mapping[str, Any]) -> Policy:
    return parse_policy(((parent.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_POLICY))


def _cds_policy(parent: Mapping[str, Any]) -> Policy:
    placement = dict((parent.get("spec") or {}).get("placement") or {})
    placement.setdefault("strategy", "Duplicate")
    return policy_from_dict(placement, path="spec.placement", strategy_default="Duplicate")


@dataclass(frozen=True)
class SplitKind:
    """A kind of parent the splitter splits: where it is served, where its children are, and
    where its placement policy is (for the reasons)."""

    kind: str
    api_version: str
    plural: str
    child_api_version: str
    child_plural: str
    policy: Callable[[Mapping[str, Any]], Policy]


#: the parents the splitter splits today (DaemonSets and StatefulSets: one entry each, as they come)
KINDS: tuple[SplitKind, ...] = (
    SplitKind("Deployment", "apps/v1", "deployments", "apps/v1", "deployments", _deployment_policy),
    SplitKind(CDS_KIND, f"{CDS_GROUP}/{CDS_VERSION}", CDS_PLURAL, "apps/v1", "deployments", _cds_policy),
)


def kind_of(name: str) -> SplitKind | None:
    return next((k for k in KINDS if k.kind == name), None)



def _count(v: Any) -> int:
    """A non-negative count (0 when absent or malformed)."""
    return max(0, as_int(v))


def _hash(text: str, n: int = 10) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def controller_ref(obj: Mapping[str, Any]) -> dict | None:
    return next((r for r in meta(obj).get("ownerReferences") or () if r.get("controller")), None)


def is_parent(kind: SplitKind, obj: Mapping[str, Any]) -> bool:
    """The splitter's test (its ``reconcile``): not a child (no ``kcp.dev/cluster``), not being
    deleted, not controlled by another split parent."""
    md = meta(obj)
    if md.get("deletionTimestamp") or LABEL_CLUSTER in (md.get("labels") or {}):
        return False
    ref = controller_ref(obj)
    return ref is None or kind_of(str(ref.get("kind"))) is None


def summary_of(parent: Mapping[str, Any]) -> dict | None:
    raw = (meta(parent).get("annotations") or {}).get(ANNOTATION_DECISION)
    if not raw:
        return None
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


_SPLIT = {"Even": "an even split", "Weighted": "a weighted split", "Capacity": "a split by capacity"}


def _policy_note(kind: SplitKind, parent: Mapping[str, Any]) -> str:
    """What every chosen cluster satisfies: the policy's required terms."""
    try:
        policy = kind.policy(parent)
    except PolicyError:
        return ""
    return "; ".join(f"matches required {t.text}" for t in policy.required if t.text)


def placements(kind: SplitKind, parent: Mapping[str, Any], doc: Mapping[str, Any],
               children: Mapping[str, Mapping[str, Any]]) -> dict[str, tuple[int, str]]:
    """cluster -> (replicas, reason): where the summary puts the workload, and why, in words.

    The replicas are the summary's shares, except that a parent a hub HPA scales runs what its
    children run (the clusters' HPAs own those: the splitter keeps them), a Deployment scaled to 0
    is still placed where its children are, and a summary without shares (an invalid policy: the
    splitter then keeps the children as they are) is the children."""
    shares = doc.get("shares")
    live = {c: o for c, o in children.items() if not meta(o).get("deletionTimestamp")}
    if not isinstance(shares, dict):
        why = str(doc.get("error") or "no decision")
        return {c: (_count((o.get("spec") or {}).get("replicas")), f"kept where it runs: {why}")
                for c, o in live.items()}
    strategy = str(doc.get("strategy") or "")
    requested = _count(doc.get("replicas"))
    shares = {str(c): _count(n) for c, n in shares.items()}
    if requested == 0 and strategy != "Duplicate":
        filtered = doc.get("filtered") or {}
        shares = {c: 0 for c in live if c not in filtered}
    if kind.kind == "Deployment" and (meta(parent).get("annotations") or {}).get(ANNOTATION_HPA):
        shares = {c: _count((live[c].get("spec") or {}).get("replicas")) if c in live else n for c, n in shares.items()}
    held = doc.get("held") or {}
    limits = doc.get("limits") or {}
    full = doc.get("full") or {}
    note = _policy_note(kind, parent)
    out: dict[str, tuple[int, str]] = {}
    for c, n in sorted(shares.items()):
        if strategy == "Duplicate":
            parts = [f"{n} replicas: every eligible cluster runs the workload (strategy Duplicate)"]
        elif requested == 0:
            parts = ["0 replicas requested: kept placed here"]
        else:
            parts = [f"{n} of {requested} replicas: {_SPLIT.get(strategy, 'a split')} over {len(shares)} "
                     f"cluster{'s' if len(shares) != 1 else ''} (strategy {strategy})"]
        if note:
            parts.append(note)
        if c in held:
            parts.append(f"held: {held[c]}")
        lim = limits.get(c)
        if isinstance(lim, dict):
            parts.append(f"limited to {lim.get('max')}: {lim.get('message')}")
        if c in full:
            parts.append(f"full: {full[c]}")
        if doc.get("kept"):
            parts.append("current split kept (within the rebalance tolerance)")
        out[c] = (n, "; ".join(parts))
    return out


def _label(value: str) -> str:
    return value if is_label_value(value) else _hash(value, 16)


def slice_name(kind: SplitKind, name: str, index: int) -> str:
    """``<parent>-<kind>-<index>`` (KEP-5313's deterministic ``<base>-<slice-index>``; the kind keeps
    a Deployment and a ClusterDaemonSet of one name apart), shortened with a hash past 253 characters."""
    base = f"{name}-{kind.kind.lower()}"
    if len(base) + 1 + len(str(index)) > 253:
        base = f"{name[:200]}-{_hash(name)}-{kind.kind.lower()}"
    return f"{base}-{index}"


def desired(kind: SplitKind, parent: Mapping[str, Any] | None, children: Mapping[str, Mapping[str, Any]],
            profiles: Mapping[str, ProfileRef]) -> list[dict[str, Any]]:
    """The parent's PlacementDecisions (without resourceVersions), or none when it is gone, not a
    split parent, or has no decision summary yet. Clusters without a ClusterProfile are left out
    (a reference must point to one, KEP-5313); the decisions are sorted by cluster name (the KEP's
    deterministic order: an unchanged set is an unchanged object)."""
    if parent is None or not is_parent(kind, parent):
        return []
    doc = summary_of(parent)
    if doc is None:
        return []
    md = meta(parent)
    name, ns = str(md.get("name") or ""), str(md.get("namespace") or "")
    chosen = [(c, n, why) for c, (n, why) in sorted(placements(kind, parent, doc, children).items()) if c in profiles]
    slices = [chosen[i:i + MAX_DECISIONS] for i in range(0, len(chosen), MAX_DECISIONS)] or [[]]
    revision = _hash(json.dumps([[c, n, why, profiles[c]] for c, n, why in chosen]))
    own = (md.get("labels") or {}).get(LABEL_PLACEMENT_KEY)
    placement_key = own if isinstance(own, str) and is_label_value(own) and own else _label(name)
    owner = {"apiVersion": parent.get("apiVersion") or kind.api_version, "kind": kind.kind, "name": name,
             "uid": md.get("uid"), "controller": True, "blockOwnerDeletion": True}
    out = []
    for i, part in enumerate(slices):
        out.append({
            "apiVersion": f"{GROUP}/{VERSION}", "kind": KIND,
            "metadata": {
                "name": slice_name(kind, name, i), "namespace": ns,
                "labels": {LABEL_PLACEMENT_KEY: placement_key,
                           LABEL_DECISION_KEY: _label(f"{name}-{kind.kind.lower()}"),
                           LABEL_DECISION_INDEX: str(i), LABEL_DECISION_REVISION: revision,
                           LABEL_MANAGED_BY: MANAGED_BY},
                "annotations": {ANNOTATION_REPLICAS: json.dumps({c: n for c, n, _ in part}, sort_keys=True,
                                                                separators=(",", ":"))},
                "ownerReferences": [owner]},
            "decisions": [{"clusterProfileRef": {"name": profiles[c][1], "namespace": profiles[c][0]}, "reason": why}
                          for c, _, why in part],
            "schedulerName": SCHEDULER_NAME})
    return out
