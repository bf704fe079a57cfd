"""Revision history on the hub, so kubectl's client-side rollout verbs work on a parent.

``kubectl rollout history|undo`` never ask the server for a rollback: for a Deployment they list
the ReplicaSets in its namespace by its selector that it controls and read
``deployment.kubernetes.io/revision`` (undo then JSON-patches the template back, with the
ReplicaSet's annotations); for a DaemonSet or StatefulSet they list its ControllerRevisions
(``revision``; ``data`` is the strategic merge patch ``{"spec": {"template": {..., "$patch":
"replace"}}}`` that undo sends). So, for a parent with a rollout policy, the splitter keeps:

- Deployment parents: a ReplicaSet ``<parent>-<hash>`` per pod template (``spec.replicas`` 0, the
  template labelled ``pod-template-hash``, the parent's annotations, controlled by the parent);
- DaemonSet and StatefulSet parents: a ControllerRevision ``<parent>-<hash>`` per template;

numbered as kube's controllers number them (each new revision takes the next number; a
template equal to an older one, as after an undo, renumbers that object) and trimmed to
``spec.revisionHistoryLimit`` (default 10). They are records only: no controller runs them, the
Syncer does not sync these types (not in its default resources), and the splitter's children
are Deployments, DaemonSets and StatefulSets, never these.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from typing import Any

from ...kube.client import MERGE_PATCH, ApiError, Client
from ...kube.objects import as_int
from ..history_crd import CONTROLLERREVISION_CRD

__all__ = ["ANNOTATION_REVISION", "CONTROLLERREVISION_CRD", "record", "template_hash"]

ANNOTATION_REVISION = "deployment.kubernetes.io/revision"
LABEL_POD_TEMPLATE_HASH = "pod-template-hash"
LABEL_REVISION_HASH = "controller-revision-hash"
FIELD_MANAGER = "fleetplane-splitter"
#: what kubectl's rollback keeps from the Deployment rather than copying from the ReplicaSet, and
#: what the splitter keeps for itself
_NOT_RECORDED = ("kubectl.kubernetes.io/last-applied-configuration", ANNOTATION_REVISION,
                 "deployment.kubernetes.io/revision-history", "deployment.kubernetes.io/desired-replicas",
                 "deployment.kubernetes.io/max-replicas", "deprecated.deployment.rollback.to",
                 "placement.fleetplane.io/decision", "kcp.io/cluster", "fleetplane.io/sync-state")
_SAFE = "bcdfghjklmnpqrstvwxz2456789"  # kube's rand.SafeEncodeString alphabet

def template_hash(template: Any) -> str:
    """A short, label-safe hash of a pod template (the role of kube's pod-template-hash)."""
    digest = hashlib.sha256(json.dumps(template, sort_keys=True, separators=(",", ":")).encode()).digest()
    return "".join(_SAFE[b % len(_SAFE)] for b in digest[:10])


def _owner(parent: Mapping[str, Any], kind: str) -> dict[str, Any]:
    md = parent.get("metadata") or {}
    return {"apiVersion": parent.get("apiVersion") or "apps/v1", "kind": kind, "name": md.get("name"),
            "uid": md.get("uid"), "controller": True, "blockOwnerDeletion": True}


def _selector_query(spec: Mapping[str, Any]) -> str:
    labels = ((spec.get("selector") or {}).get("matchLabels") or {})
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


async def record(hub: Client, lc: str, kind: str, parent: Mapping[str, Any], number: int) -> None:
    """Make the parent's current template revision ``number`` in its history objects, and trim
    the history to its revisionHistoryLimit. Idempotent."""
    md = parent.get("metadata") or {}
    spec = parent.get("spec") or {}
    template = copy.deepcopy(spec.get("template") or {})
    ns, name, uid = md.get("namespace") or "default", md.get("name") or "", md.get("uid")
    h = template_hash(template)
    if kind == "Deployment":
        plural, label = "replicasets", LABEL_POD_TEMPLATE_HASH
    else:
        plural, label = "controllerrevisions", LABEL_REVISION_HASH
    base = f"/clusters/{lc}/apis/apps/v1/namespaces/{ns}/{plural}"
    items, _ = await hub.list_all(base, {"labelSelector": _selector_query(spec)} if _selector_query(spec) else None)
    mine = [o for o in items if any(r.get("uid") == uid and r.get("controller")
                                    for r in (o.get("metadata") or {}).get("ownerReferences") or ())]
    obj_name = f"{name}-{h}"
    current = next((o for o in mine if (o.get("metadata") or {}).get("name") == obj_name), None)
    if kind == "Deployment":
        ann = {k: v for k, v in (md.get("annotations") or {}).items()
               if k not in _NOT_RECORDED and not k.startswith("rollout.fleetplane.io/")}
        ann[ANNOTATION_REVISION] = str(number)
        if current is None:
            tpl = copy.deepcopy(template)
            tpl.setdefault("metadata", {}).setdefault("labels", {})[label] = h
            sel = copy.deepcopy(spec.get("selector") or {})
            sel.setdefault("matchLabels", {})[label] = h
            body: dict[str, Any] = {
                "apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": obj_name, "namespace": ns, "annotations": ann,
                             "labels": {**((template.get("metadata") or {}).get("labels") or {}), label: h},
                             "ownerReferences": [_owner(parent, kind)]},
                "spec": {"replicas": 0, "selector": sel, "template": tpl}}
            await _create(hub, base, body)
        elif ((current.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_REVISION) != str(number):
            await hub.patch(f"{base}/{obj_name}", {"metadata": {"annotations": ann}}, MERGE_PATCH, FIELD_MANAGER)
        revision_of = {(o.get("metadata") or {}).get("name"):
                       as_int(((o.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_REVISION)) for o in mine}
    else:
        if current is None:
            body = {"apiVersion": "apps/v1", "kind": "ControllerRevision",
                    "metadata": {"name": obj_name, "namespace": ns,
                                 "labels": {**((template.get("metadata") or {}).get("labels") or {}), label: h},
                                 "ownerReferences": [_owner(parent, kind)]},
                    "data": {"spec": {"template": {**template, "$patch": "replace"}}}, "revision": number}
            await _create(hub, base, body)
        elif as_int(current.get("revision")) != number:
            await hub.patch(f"{base}/{obj_name}", {"revision": number}, MERGE_PATCH, FIELD_MANAGER)
        revision_of = {(o.get("metadata") or {}).get("name"): as_int(o.get("revision")) for o in mine}
    revision_of[obj_name] = number
    limit = max(0, as_int(spec.get("revisionHistoryLimit"), 10))
    old = sorted((r, n) for n, r in revision_of.items() if n != obj_name)
    for _, n in old[:max(0, len(old) - limit)]:
        try:
            await hub.delete(f"{base}/{n}")
        except ApiError as err:
            if err.status != 404:
                raise


async def _create(hub: Client, base: str, body: dict[str, Any]) -> None:
    try:
        await hub.create(base, body, FIELD_MANAGER)
    except ApiError as err:
        if err.status != 409:  # made by an earlier reconcile whose write we did not see
            raise
