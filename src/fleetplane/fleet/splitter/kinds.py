"""What the splitter needs to know about each kind of parent it places: one :class:`WorkloadKind`
per kind, so Deployments, ClusterDaemonSets, DaemonSets and StatefulSets share the reconcile steps
(:mod:`.controller`) and differ only here.

=================  ==============  ==========  ====================================================
parent             children        strategy    a child's share
=================  ==============  ==========  ====================================================
Deployment         Deployment      split       ``spec.replicas`` (Webster over the clusters)
ClusterDaemonSet   Deployment      Duplicate   ``replicasPerCluster`` replicas in every cluster
DaemonSet          DaemonSet       Duplicate   the whole DaemonSet, once per cluster
StatefulSet        StatefulSet     split       a contiguous ordinal range (:mod:`.ordinals`):
                                               ``spec.ordinals.start`` and ``spec.replicas``
=================  ==============  ==========  ====================================================

A child is named ``<parent>--<cluster>`` on the hub; a StatefulSet child also carries
``fleetplane.io/downstream-name: <parent>``, so the Syncer creates it as ``<parent>`` in its
cluster and its Pods keep the fleet-wide identity ``<parent>-<ordinal>``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...kube.objects import as_int
from ..placement import ANNOTATION_POLICY, Policy, PolicyError, parse_policy, policy_from_dict
from ..syncer.constants import DOWNSTREAM_NAME_ANNOTATION
from .crd import CDS_GROUP, CDS_KIND, CDS_PLURAL, CDS_VERSION

__all__ = ["ANNOTATION_DOWNSTREAM_NAME", "CLUSTER_DAEMONSET", "DAEMONSET", "DEPLOYMENT", "KINDS", "STATEFULSET",
           "WorkloadKind"]

#: on a child: the name the Syncer gives it in its cluster (a StatefulSet's Pods are named after it)
ANNOTATION_DOWNSTREAM_NAME = DOWNSTREAM_NAME_ANNOTATION

#: the Deployment fields a ClusterDaemonSet passes on to its children
_CDS_FIELDS = ("strategy", "minReadySeconds", "revisionHistoryLimit", "progressDeadlineSeconds", "paused")



@dataclass(frozen=True)
class WorkloadKind:
    """One kind of parent. ``split``: the decision splits ``requested`` replicas over the clusters
    (else Duplicate: every chosen cluster gets a child); ``ordinals``: children get ordinal ranges
    (StatefulSets); ``replicas``: children have ``spec.replicas`` and Deployment-like
    replica counters (all but DaemonSets)."""

    kind: str
    group: str
    version: str
    plural: str
    child_kind: str
    split: bool
    ordinals: bool = False
    replicas: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def gvr(self) -> tuple[str, str, str]:
        return self.group, self.version, self.plural

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{self.group}"

    @property
    def child(self) -> WorkloadKind:
        return KINDS[self.child_kind]

    def requested(self, spec: Mapping[str, Any]) -> int:
        """Replicas the parent asks for (per cluster when Duplicate)."""
        if self.kind == CDS_KIND:
            return max(1, as_int(spec.get("replicasPerCluster"), 1))
        if not self.replicas:
            return 1
        return max(0, as_int(spec.get("replicas"), 1)) if spec.get("replicas") is not None else 1

    def policy(self, parent: Mapping[str, Any], requested: int) -> tuple[Policy, str | None]:
        """The parent's placement policy and the text it came from; raises PolicyError."""
        md = parent.get("metadata") or {}
        spec = parent.get("spec") or {}
        if self.kind == CDS_KIND:
            placement = dict(spec.get("placement") or {})
            placement["replicasPerCluster"] = requested
            placement.setdefault("strategy", "Duplicate")
            return (policy_from_dict(placement, path="spec.placement", strategy_default="Duplicate"),
                    json.dumps(placement, sort_keys=True))
        text = (md.get("annotations") or {}).get(ANNOTATION_POLICY)
        if self.split:
            return parse_policy(text), text
        policy = parse_policy(text, strategy_default="Duplicate")
        errors = []
        if policy.strategy != "Duplicate":
            errors.append(f"{ANNOTATION_POLICY}.strategy: a {self.kind} runs once in every chosen cluster: "
                          f"only Duplicate, not {policy.strategy!r}")
        for k in ("replicasPerCluster", "maxReplicasPerCluster", "weights"):
            if k in policy.source:
                errors.append(f"{ANNOTATION_POLICY}.{k}: not used by a {self.kind} (one per cluster)")
        for o in policy.overrides:  # per-cluster rules: a cap means nothing when one runs per cluster
            if o.max_replicas is not None:
                errors.append(f"{ANNOTATION_POLICY}.overrides[{o.index}].maxReplicas: not used by a {self.kind} "
                              "(one per cluster)")
        if errors:
            raise PolicyError(errors)
        return policy, text

    def child_spec(self, spec: Mapping[str, Any], replicas: int, start: int = 0) -> dict[str, Any]:
        """A child's spec from its parent's: ``replicas`` (and for StatefulSets the first ordinal
        ``start``) are the cluster's share."""
        out: dict[str, Any]
        if self.kind == CDS_KIND:
            out = {"selector": spec.get("selector"), "template": spec.get("template")}
            out.update({k: spec[k] for k in _CDS_FIELDS if spec.get(k) is not None})
        else:
            out = {k: v for k, v in spec.items() if k not in ("replicas", "ordinals")}
        if self.child.replicas:
            out["replicas"] = replicas
        if self.ordinals:
            out["ordinals"] = {**(spec.get("ordinals") or {}), "start": start}
        return out

    def spec_of_generation(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        """What every child shares (its share left out): hashed to tell children of this generation."""
        out = self.child_spec(spec, 0)
        out.pop("replicas", None)
        if self.ordinals:
            out["ordinals"].pop("start", None)
        return out

    def first_ordinal(self, spec: Mapping[str, Any]) -> int:
        """A StatefulSet parent's first ordinal (``spec.ordinals.start``, kube's default 0): the
        fleet's ordinals are ``first .. first+replicas-1``."""
        return max(0, as_int((spec.get("ordinals") or {}).get("start"))) if self.ordinals else 0

    def child_start(self, child: Mapping[str, Any]) -> int:
        return max(0, as_int(((child.get("spec") or {}).get("ordinals") or {}).get("start")))

    def units(self, child: Mapping[str, Any]) -> int:
        """What a child holds: its replicas, or 1 for a DaemonSet."""
        return max(0, as_int((child.get("spec") or {}).get("replicas"))) if self.replicas else 1

    def available(self, child: Mapping[str, Any]) -> int:
        """Of :meth:`units`, how many are available (a DaemonSet: 1 once its desired pods all are)."""
        st = child.get("status") or {}
        if self.replicas:
            return as_int(st.get("availableReplicas"))
        desired = as_int(st.get("desiredNumberScheduled"))
        observed = as_int(st.get("observedGeneration"), -1) >= as_int((child.get("metadata") or {}).get("generation"), 1)
        return 1 if observed and as_int(st.get("numberAvailable")) >= desired else 0

    def ready(self, child: Mapping[str, Any]) -> bool:
        """The child has observed its current spec and every replica is ready and available (for
        a StatefulSet: an ordinal just added to it is up, so its old copy may go)."""
        spec, st = child.get("spec") or {}, child.get("status") or {}
        want = as_int(spec.get("replicas"), 1)
        observed = as_int(st.get("observedGeneration"), -1) >= as_int((child.get("metadata") or {}).get("generation"), 1)
        return observed and as_int(st.get("readyReplicas")) >= want and as_int(st.get("availableReplicas", want)) >= want

    def owns(self, ref: Mapping[str, Any]) -> bool:
        """An ownerReference naming a parent whose children are of this kind."""
        return any(k.kind == ref.get("kind") and k.child_kind == self.kind for k in KINDS.values())


DEPLOYMENT = WorkloadKind("Deployment", "apps", "v1", "deployments", "Deployment", split=True)
CLUSTER_DAEMONSET = WorkloadKind(CDS_KIND, CDS_GROUP, CDS_VERSION, CDS_PLURAL, "Deployment", split=False)
DAEMONSET = WorkloadKind("DaemonSet", "apps", "v1", "daemonsets", "DaemonSet", split=False, replicas=False)
STATEFULSET = WorkloadKind("StatefulSet", "apps", "v1", "statefulsets", "StatefulSet", split=True, ordinals=True)
KINDS: dict[str, WorkloadKind] = {k.kind: k for k in (DEPLOYMENT, CLUSTER_DAEMONSET, DAEMONSET, STATEFULSET)}
