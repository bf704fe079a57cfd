"""The Deployment controller (kube-controller-manager's ``pkg/controller/deployment``).

A Deployment owns ReplicaSets, one per pod template: the *new* one is named
``<deployment>-<pod-template-hash>`` and carries the hash as a label in its template and
selector. The controller follows kube's sync loop:

* paused deployments and scaling events (``spec.replicas`` differs from the
  ``deployment.kubernetes.io/desired-replicas`` annotation of an active ReplicaSet) are scaled
  proportionally across the active ReplicaSets;
* ``RollingUpdate``: scale the new ReplicaSet up within ``maxSurge``, then old ones down within
  ``maxUnavailable`` (unhealthy old replicas first); ``Recreate``: scale old ones to zero, wait
  for their pods to go, then scale the new one up;
* revisions: ``deployment.kubernetes.io/revision`` on the ReplicaSets and the Deployment;
  the deployment's other annotations are copied to its new ReplicaSet; old ReplicaSets beyond
  ``revisionHistoryLimit`` are deleted once a rollout is complete;
* status: replicas, updatedReplicas, readyReplicas, availableReplicas, unavailableReplicas,
  observedGeneration, collisionCount and the conditions Available (MinimumReplicasAvailable /
  MinimumReplicasUnavailable), Progressing (NewReplicaSetCreated, FoundNewReplicaSet,
  ReplicaSetUpdated, NewReplicaSetAvailable, ProgressDeadlineExceeded, DeploymentPaused,
  DeploymentResumed, ReplicaSetCreateError) and ReplicaFailure (copied from the ReplicaSets);
  a stuck rollout is requeued for when its progress deadline passes (a timer, not polling).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import orjson

from ..apimachinery.intstr import scaled_value
from ..apimachinery.labels import selector_matches
from ..apis.apps import POD_TEMPLATE_HASH, REVISION_ANNOTATION
from ..kube.client import ApiError, Client, api_path
from ..kube.controller import run_workers
from ..kube.events import EventRecorder
from ..kube.informer import EnqueueKey, EventHandler, Informer, object_key
from ..kube.workqueue import WorkQueue
from .util import controller_ref, get_condition, meta, now, owner_ref, parse_time

log = logging.getLogger(__name__)

COMPONENT = "deployment-controller"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
SKIP_ANNOTATIONS = frozenset({
    "kubectl.kubernetes.io/last-applied-configuration", REVISION_ANNOTATION, REVISION_HISTORY,
    DESIRED_REPLICAS, MAX_REPLICAS, "deprecated.deployment.rollback.to", "kcp.io/cluster",
})
MAX_REV_HISTORY_CHARS = 2000
MAX_INT32 = 2**31 - 1

# reasons (deploymentutil)
NEW_RS_REASON = "NewReplicaSetCreated"
FOUND_NEW_RS_REASON = "FoundNewReplicaSet"
RS_UPDATED_REASON = "ReplicaSetUpdated"
NEW_RS_AVAILABLE_REASON = "NewReplicaSetAvailable"
TIMED_OUT_REASON = "ProgressDeadlineExceeded"
PAUSED_REASON = "DeploymentPaused"
RESUMED_REASON = "DeploymentResumed"
FAILED_RS_CREATE_REASON = "ReplicaSetCreateError"

_SAFE = "bcdfghjklmnpqrstvwxz2456789"


# -- pod-template-hash -------------------------------------------------------------------------------


def _fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for b in data:
        h ^= b
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def compute_hash(template: dict, collision_count: int | None) -> str:
    """controller.ComputeHash: fnv32a of the template (canonical JSON here, Go's deep-hash in kube)
    and the collision count, encoded with rand.SafeEncodeString."""
    data = orjson.dumps(template, option=orjson.OPT_SORT_KEYS)
    if collision_count is not None:
        data += int(collision_count).to_bytes(4, "little")
    return "".join(_SAFE[ord(ch) % len(_SAFE)] for ch in str(_fnv32a(data)))


def _without_hash(template: dict) -> dict:
    t = dict(template or {})
    m = dict(t.get("metadata") or {})
    labels = dict(m.get("labels") or {})
    labels.pop(POD_TEMPLATE_HASH, None)
    if labels:
        m["labels"] = labels
    else:
        m.pop("labels", None)
    t["metadata"] = m
    return t


def equal_ignore_hash(a: dict, b: dict) -> bool:
    return _without_hash(a) == _without_hash(b)


# -- deploymentutil ----------------------------------------------------------------------------------


def replicas(obj: dict) -> int:
    return int((obj.get("spec") or {}).get("replicas", 1) or 0)


def status_int(obj: dict | None, field: str) -> int:
    return int(((obj or {}).get("status") or {}).get(field) or 0)


def is_rolling(d: dict) -> bool:
    return ((d.get("spec") or {}).get("strategy") or {}).get("type", "RollingUpdate") == "RollingUpdate"


def resolve_fenceposts(d: dict) -> tuple[int, int]:
    ru = ((d.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}
    desired = replicas(d)
    surge = scaled_value(ru.get("maxSurge", 0), desired, True)
    unavailable = scaled_value(ru.get("maxUnavailable", 0), desired, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def max_surge(d: dict) -> int:
    if not is_rolling(d):
        return 0
    return resolve_fenceposts(d)[0]


def max_unavailable(d: dict) -> int:
    if not is_rolling(d) or replicas(d) == 0:
        return 0
    return min(resolve_fenceposts(d)[1], replicas(d))


def revision_of(obj: dict | None) -> int:
    try:
        return int((meta(obj or {}).get("annotations") or {}).get(REVISION_ANNOTATION, 0))
    except ValueError:
        return 0


def has_progress_deadline(d: dict) -> bool:
    pds = (d.get("spec") or {}).get("progressDeadlineSeconds")
    return pds is not None and pds != MAX_INT32


def new_condition(ctype: str, status: str, reason: str, message: str) -> dict:
    t = now()
    return {"type": ctype, "status": status, "lastUpdateTime": t, "lastTransitionTime": t, "reason": reason, "message": message}


def set_condition(status: dict, cond: dict) -> None:
    conds = status.get("conditions") or []
    cur = next((c for c in conds if c.get("type") == cond["type"]), None)
    if cur is not None and cur.get("status") == cond["status"] and cur.get("reason") == cond["reason"]:
        return
    if cur is not None and cur.get("status") == cond["status"]:
        cond = dict(cond, lastTransitionTime=cur.get("lastTransitionTime"))
    status["conditions"] = [c for c in conds if c.get("type") != cond["type"]] + [cond]


def remove_condition(status: dict, ctype: str) -> None:
    if status.get("conditions"):
        status["conditions"] = [c for c in status["conditions"] if c.get("type") != ctype]
        if not status["conditions"]:
            del status["conditions"]


def active(rss: Sequence[dict | None]) -> list[dict]:
    return [rs for rs in rss if rs is not None and replicas(rs) > 0]


def by_creation(rss: list[dict]) -> list[dict]:
    return sorted(rss, key=lambda r: (meta(r).get("creationTimestamp") or "", meta(r).get("name") or ""))


def deployment_complete(d: dict, status: dict) -> bool:
    want = replicas(d)
    return (int(status.get("updatedReplicas") or 0) == want and int(status.get("replicas") or 0) == want
            and int(status.get("availableReplicas") or 0) == want
            and int(status.get("observedGeneration") or 0) >= int(meta(d).get("generation") or 0))


def deployment_progressing(d: dict, new: dict) -> bool:
    old = d.get("status") or {}
    old_old = int(old.get("replicas") or 0) - int(old.get("updatedReplicas") or 0)
    new_old = int(new.get("replicas") or 0) - int(new.get("updatedReplicas") or 0)
    return (int(new.get("updatedReplicas") or 0) > int(old.get("updatedReplicas") or 0) or new_old < old_old
            or int(new.get("readyReplicas") or 0) > int(old.get("readyReplicas") or 0)
            or int(new.get("availableReplicas") or 0) > int(old.get("availableReplicas") or 0))


def deployment_timed_out(d: dict, status: dict) -> bool:
    if not has_progress_deadline(d):
        return False
    cond = get_condition(status, "Progressing")
    if cond is None or cond.get("reason") == NEW_RS_AVAILABLE_REASON:
        return False
    if cond.get("reason") == TIMED_OUT_REASON:
        return True
    since = parse_time(cond.get("lastUpdateTime"))
    if since is None:
        return False
    return since + int(d["spec"]["progressDeadlineSeconds"]) < time.time()


class DeploymentController:
    def __init__(self, kube: Client, deployments: Informer, replicasets: Informer, pods: Informer,
                 recorder: EventRecorder, workers: int = 5) -> None:
        self.kube = kube
        self.deployments = deployments
        self.rs = replicasets
        self.pods = pods
        self.recorder = recorder
        self.workers = workers
        self.queue = WorkQueue("deployment", base=0.005, cap=60.0)
        deployments.add_handler(EnqueueKey(self.queue))
        replicasets.add_handler(_RSHandler(self))
        pods.add_handler(_PodHandler(self))

    async def run(self) -> None:
        await run_workers(self.queue, self.sync, self.workers)

    def event(self, d: dict, etype: str, reason: str, message: str) -> None:
        self.recorder.event(d, etype, reason, message, component=COMPONENT)

    # -- lookups --------------------------------------------------------------------------------

    def resolve(self, namespace: str, ref: dict) -> dict | None:
        if ref.get("kind") != "Deployment" or not (ref.get("apiVersion") or "").startswith("apps/"):
            return None
        d = self.deployments.get(f"{namespace}/{ref.get('name')}")
        if d is None or meta(d).get("uid") != ref.get("uid"):
            return None
        return d

    def deployments_for_orphan(self, rs: dict) -> list[dict]:
        ns = meta(rs).get("namespace") or ""
        labels = meta(rs).get("labels") or {}
        out = []
        for d in self.deployments.list(ns):
            sel = (d.get("spec") or {}).get("selector")
            if isinstance(sel, dict) and (sel.get("matchLabels") or sel.get("matchExpressions")) and selector_matches(sel, labels):
                out.append(d)
        return out

    # -- API writes -----------------------------------------------------------------------------

    async def update_rs(self, rs: dict) -> dict:
        m = meta(rs)
        return await self.kube.replace(api_path("apps/v1", "replicasets", m["namespace"], m["name"]), rs)

    async def update_status(self, d: dict) -> dict:
        m = meta(d)
        updated = await self.kube.replace(api_path("apps/v1", "deployments", m["namespace"], m["name"], "status"), d)
        d["metadata"] = updated["metadata"]
        return updated

    # -- sync -----------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        cached = self.deployments.get(key)
        if cached is None:
            return
        d = orjson.loads(orjson.dumps(cached))
        d.setdefault("status", {})
        selector = (d.get("spec") or {}).get("selector") or {}
        if not selector.get("matchLabels") and not selector.get("matchExpressions"):
            self.event(d, "Warning", "SelectingAll", "This deployment is selecting all pods. A non-empty selector is required.")
            if int(d["status"].get("observedGeneration") or 0) < int(meta(d).get("generation") or 0):
                d["status"]["observedGeneration"] = meta(d).get("generation")
                await self.update_status(d)
            return
        rs_list = await self._claim_replicasets(d, selector)
        if meta(d).get("deletionTimestamp"):
            new_rs, old_rss = await self._all_rs_and_sync_revision(d, rs_list, create=False)
            await self._sync_status(d, [*old_rss, new_rs], new_rs)
            return
        await self._check_paused_conditions(d)
        if d["spec"].get("paused"):
            await self._sync_scale(d, rs_list)
            return
        if await self._is_scaling_event(d, rs_list):
            await self._sync_scale(d, rs_list)
            return
        if is_rolling(d):
            await self._rollout_rolling(d, rs_list)
        else:
            await self._rollout_recreate(d, rs_list)

    async def _claim_replicasets(self, d: dict, selector: dict) -> list[dict]:
        """ControllerRefManager.ClaimReplicaSets: adopt matching orphans, release non-matching owned ones."""
        uid = meta(d)["uid"]
        ns = meta(d)["namespace"]
        deleting = bool(meta(d).get("deletionTimestamp"))
        out = []
        for rs in self.rs.by_index("controller", uid):
            if selector_matches(selector, meta(rs).get("labels")):
                out.append(rs)
            elif not deleting:
                rs2 = orjson.loads(orjson.dumps(rs))
                rs2["metadata"]["ownerReferences"] = [r for r in meta(rs).get("ownerReferences") or [] if r.get("uid") != uid]
                try:
                    await self.update_rs(rs2)
                except ApiError as err:
                    if err.status not in (404, 409):
                        raise
        if deleting:
            return out
        for rs in self.rs.by_index("orphans", ns):
            if meta(rs).get("deletionTimestamp") or not selector_matches(selector, meta(rs).get("labels")):
                continue
            rs2 = orjson.loads(orjson.dumps(rs))
            rs2["metadata"]["ownerReferences"] = [*(meta(rs).get("ownerReferences") or []), owner_ref(d)]
            try:
                out.append(await self.update_rs(rs2))
            except ApiError as err:
                if err.status not in (404, 409, 422):
                    raise
        return out

    async def _is_scaling_event(self, d: dict, rs_list: list[dict]) -> bool:
        new_rs, old_rss = await self._all_rs_and_sync_revision(d, rs_list, create=False)
        for rs in active([*old_rss, new_rs]):
            desired = (meta(rs).get("annotations") or {}).get(DESIRED_REPLICAS)
            if desired is None:
                continue
            try:
                if int(desired) != replicas(d):
                    return True
            except ValueError:
                continue
        return False

    # -- new and old ReplicaSets ----------------------------------------------------------------

    def _find_new(self, d: dict, rs_list: list[dict]) -> dict | None:
        template = d["spec"].get("template") or {}
        for rs in by_creation(rs_list):
            if equal_ignore_hash((rs.get("spec") or {}).get("template") or {}, template):
                return rs
        return None

    async def _all_rs_and_sync_revision(self, d: dict, rs_list: list[dict], *, create: bool) -> tuple[dict | None, list[dict]]:
        new = self._find_new(d, rs_list)
        old = [rs for rs in rs_list if rs is not new]
        new_rs = await self._get_new_rs(d, rs_list, old, new, create)
        return new_rs, old

    def _set_new_rs_annotations(self, d: dict, rs: dict, new_revision: str, exists: bool) -> bool:
        annotations = rs["metadata"].setdefault("annotations", {})
        changed = False
        for k, v in (meta(d).get("annotations") or {}).items():
            if k in SKIP_ANNOTATIONS:
                continue
            if annotations.get(k) != v:
                annotations[k] = v
                changed = True
        old_revision = annotations.get(REVISION_ANNOTATION)
        try:
            old_int = int(old_revision) if old_revision else 0
        except ValueError:
            return False
        new_int = int(new_revision)
        if old_int < new_int:
            annotations[REVISION_ANNOTATION] = new_revision
            changed = True
            if old_revision:
                history = annotations.get(REVISION_HISTORY, "")
                revs = [r for r in history.split(",") if r] + [old_revision]
                while len(",".join(revs)) > MAX_REV_HISTORY_CHARS and len(revs) > 1:
                    revs.pop(0)
                annotations[REVISION_HISTORY] = ",".join(revs)
        if not exists and self._set_replicas_annotations(rs, replicas(d), replicas(d) + max_surge(d)):
            changed = True
        return changed

    @staticmethod
    def _set_replicas_annotations(rs: dict, desired: int, maximum: int) -> bool:
        annotations = rs["metadata"].setdefault("annotations", {})
        changed = False
        for k, v in ((DESIRED_REPLICAS, str(desired)), (MAX_REPLICAS, str(maximum))):
            if annotations.get(k) != v:
                annotations[k] = v
                changed = True
        return changed

    @staticmethod
    def _set_deployment_revision(d: dict, revision: str) -> bool:
        annotations = d["metadata"].setdefault("annotations", {})
        if annotations.get(REVISION_ANNOTATION) != revision:
            annotations[REVISION_ANNOTATION] = revision
            return True
        return False

    async def _get_new_rs(self, d: dict, rs_list: list[dict], old_rss: list[dict], existing: dict | None,
                          create: bool) -> dict | None:
        max_old = max((revision_of(rs) for rs in old_rss), default=0)
        new_revision = str(max_old + 1)
        if existing is not None:
            rs = orjson.loads(orjson.dumps(existing))
            annotations_updated = self._set_new_rs_annotations(d, rs, new_revision, True)
            min_ready = int(d["spec"].get("minReadySeconds") or 0)
            if annotations_updated or int(rs["spec"].get("minReadySeconds") or 0) != min_ready:
                if min_ready:
                    rs["spec"]["minReadySeconds"] = min_ready
                else:
                    rs["spec"].pop("minReadySeconds", None)
                return await self.update_rs(rs)
            needs_update = self._set_deployment_revision(d, (meta(rs).get("annotations") or {}).get(REVISION_ANNOTATION, ""))
            if has_progress_deadline(d) and get_condition(d["status"], "Progressing") is None:
                set_condition(d["status"], new_condition("Progressing", "True", FOUND_NEW_RS_REASON,
                                                         f'Found new replica set "{meta(rs)["name"]}"'))
                needs_update = True
            if needs_update:
                await self.update_status(d)
            return rs
        if not create:
            return None
        collision = d["status"].get("collisionCount")
        template = orjson.loads(orjson.dumps(d["spec"].get("template") or {}))
        h = compute_hash(template, collision)
        tmeta = template.setdefault("metadata", {})
        tmeta["labels"] = {**(tmeta.get("labels") or {}), POD_TEMPLATE_HASH: h}
        selector = orjson.loads(orjson.dumps(d["spec"]["selector"]))
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), POD_TEMPLATE_HASH: h}
        name = f"{meta(d)['name']}-{h}"
        new_rs: dict[str, Any] = {
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": meta(d)["namespace"], "ownerReferences": [owner_ref(d)],
                         "labels": dict(tmeta["labels"])},
            "spec": {"replicas": 0, "selector": selector, "template": template},
        }
        if d["spec"].get("minReadySeconds"):
            new_rs["spec"]["minReadySeconds"] = d["spec"]["minReadySeconds"]
        new_count = self._new_rs_new_replicas(d, [*old_rss, new_rs], new_rs)
        new_rs["spec"]["replicas"] = new_count
        self._set_new_rs_annotations(d, new_rs, new_revision, False)
        already = False
        try:
            created = await self.kube.create(api_path("apps/v1", "replicasets", meta(d)["namespace"]), new_rs)
        except ApiError as err:
            if err.status == 409 and err.reason == "AlreadyExists":
                already = True
                found = await self.kube.request("GET", api_path("apps/v1", "replicasets", meta(d)["namespace"], name))
                ref = controller_ref(found)
                if ref is not None and ref.get("uid") == meta(d)["uid"] and equal_ignore_hash(
                        (found.get("spec") or {}).get("template") or {}, d["spec"].get("template") or {}):
                    created = found
                else:
                    d["status"]["collisionCount"] = int(collision or 0) + 1
                    await self.update_status(d)
                    raise
            elif err.has_cause("NamespaceTerminating"):
                raise
            else:
                msg = f'Failed to create new replica set "{name}": {err.message}'
                if has_progress_deadline(d):
                    set_condition(d["status"], new_condition("Progressing", "False", FAILED_RS_CREATE_REASON, msg))
                    try:
                        await self.update_status(d)
                    except ApiError:
                        pass
                self.event(d, "Warning", FAILED_RS_CREATE_REASON, msg)
                raise
        if not already and new_count > 0:
            self.event(d, "Normal", "ScalingReplicaSet", f"Scaled up replica set {name} from 0 to {new_count}")
        needs_update = self._set_deployment_revision(d, new_revision)
        if not already and has_progress_deadline(d):
            set_condition(d["status"], new_condition("Progressing", "True", NEW_RS_REASON, f'Created new replica set "{name}"'))
            needs_update = True
        if needs_update:
            await self.update_status(d)
        return created

    # -- scaling --------------------------------------------------------------------------------

    def _new_rs_new_replicas(self, d: dict, all_rss: list[dict], new_rs: dict) -> int:
        if is_rolling(d):
            surge = max_surge(d)
            current = sum(replicas(rs) for rs in all_rss)
            max_total = replicas(d) + surge
            if current >= max_total:
                return replicas(new_rs)
            up = min(max_total - current, replicas(d) - replicas(new_rs))
            return replicas(new_rs) + up
        return replicas(d)

    async def _scale_rs(self, rs: dict, new_scale: int, d: dict, operation: str) -> tuple[bool, dict]:
        size_change = replicas(rs) != new_scale
        desired, maximum = replicas(d), replicas(d) + max_surge(d)
        annotations = meta(rs).get("annotations") or {}
        ann_change = annotations.get(DESIRED_REPLICAS) != str(desired) or annotations.get(MAX_REPLICAS) != str(maximum)
        if not size_change and not ann_change:
            return False, rs
        old_scale = replicas(rs)
        copy = orjson.loads(orjson.dumps(rs))
        copy["spec"]["replicas"] = new_scale
        self._set_replicas_annotations(copy, desired, maximum)
        updated = await self.update_rs(copy)
        if size_change:
            word = "up" if old_scale < new_scale else "down"
            self.event(d, "Normal", "ScalingReplicaSet", f"Scaled {word} replica set {meta(rs)['name']} from {old_scale} to {new_scale}")
        return size_change, updated

    async def _scale_and_record(self, rs: dict, new_scale: int, d: dict) -> tuple[bool, dict]:
        if replicas(rs) == new_scale:
            return False, rs
        return await self._scale_rs(rs, new_scale, d, "up" if replicas(rs) < new_scale else "down")

    async def _scale(self, d: dict, new_rs: dict | None, old_rss: list[dict]) -> None:
        target = self._active_or_latest(new_rs, old_rss)
        if target is not None:
            if replicas(target) == replicas(d):
                return
            await self._scale_and_record(target, replicas(d), d)
            return
        if self._is_saturated(d, new_rs):
            for old in active(old_rss):
                await self._scale_and_record(old, 0, d)
            return
        if not is_rolling(d):
            return
        all_rss = active([*old_rss, new_rs])
        total = sum(replicas(rs) for rs in all_rss)
        allowed = replicas(d) + max_surge(d) if replicas(d) > 0 else 0
        to_add = allowed - total
        operation = ""
        if to_add > 0:
            all_rss.sort(key=lambda r: (-replicas(r), _neg_time(r)))  # bigger first, newer first
            operation = "up"
        elif to_add < 0:
            all_rss.sort(key=lambda r: (-replicas(r), meta(r).get("creationTimestamp") or ""))  # bigger, older first
            operation = "down"
        added = 0
        sizes: dict[str, int] = {}
        for rs in all_rss:
            if to_add != 0:
                prop = self._proportion(rs, d, to_add, added)
                sizes[meta(rs)["name"]] = replicas(rs) + prop
                added += prop
            else:
                sizes[meta(rs)["name"]] = replicas(rs)
        for i, rs in enumerate(all_rss):
            name = meta(rs)["name"]
            if i == 0 and to_add != 0:
                sizes[name] = max(sizes[name] + to_add - added, 0)
            await self._scale_rs(rs, sizes[name], d, operation)

    def _proportion(self, rs: dict, d: dict, to_add: int, added: int) -> int:
        if replicas(rs) == 0 or to_add == 0 or to_add == added:
            return 0
        if replicas(d) == 0:
            fraction = -replicas(rs)
        else:
            deployment_replicas = replicas(d) + max_surge(d)
            raw: Any = (meta(rs).get("annotations") or {}).get(MAX_REPLICAS)
            try:
                annotated = int(raw)
            except (TypeError, ValueError):
                annotated = status_int(d, "replicas")
            if annotated <= 0:
                annotated = max(status_int(d, "replicas"), 1)
            fraction = int(_round_half_away(replicas(rs) * deployment_replicas / annotated)) - replicas(rs)
        allowed = to_add - added
        return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)

    @staticmethod
    def _active_or_latest(new_rs: dict | None, old_rss: list[dict]) -> dict | None:
        if new_rs is None and not old_rss:
            return None
        olds = sorted(old_rss, key=lambda r: meta(r).get("creationTimestamp") or "", reverse=True)
        act = active([*olds, new_rs])
        if not act:
            return new_rs if new_rs is not None else olds[0]
        if len(act) == 1:
            return act[0]
        return None

    @staticmethod
    def _is_saturated(d: dict, rs: dict | None) -> bool:
        if rs is None:
            return False
        raw: Any = (meta(rs).get("annotations") or {}).get(DESIRED_REPLICAS)
        try:
            desired = int(raw)
        except (TypeError, ValueError):
            return False
        return replicas(rs) == replicas(d) and desired == replicas(d) and status_int(rs, "availableReplicas") == replicas(d)

    async def _sync_scale(self, d: dict, rs_list: list[dict]) -> None:
        """The paused and scaling-event path (``dc.sync``)."""
        new_rs, old_rss = await self._all_rs_and_sync_revision(d, rs_list, create=False)
        await self._scale(d, new_rs, old_rss)
        if d["spec"].get("paused"):
            await self._cleanup(d, old_rss)
        await self._sync_status(d, [*old_rss, new_rs], new_rs)

    # -- rollouts -------------------------------------------------------------------------------

    async def _rollout_rolling(self, d: dict, rs_list: list[dict]) -> None:
        new_rs, old_rss = await self._all_rs_and_sync_revision(d, rs_list, create=True)
        assert new_rs is not None
        all_rss = [*old_rss, new_rs]
        scaled_up, new_rs = await self._reconcile_new(d, all_rss, new_rs)
        all_rss = [*old_rss, new_rs]
        if scaled_up:
            await self._sync_rollout_status(d, all_rss, new_rs)
            return
        scaled_down, old_rss = await self._reconcile_old(d, all_rss, active(old_rss), old_rss, new_rs)
        all_rss = [*old_rss, new_rs]
        if scaled_down:
            await self._sync_rollout_status(d, all_rss, new_rs)
            return
        if deployment_complete(d, d["status"]):
            await self._cleanup(d, old_rss)
        await self._sync_rollout_status(d, all_rss, new_rs)

    async def _reconcile_new(self, d: dict, all_rss: list[dict], new_rs: dict) -> tuple[bool, dict]:
        if replicas(new_rs) == replicas(d):
            return False, new_rs
        if replicas(new_rs) > replicas(d):
            return await self._scale_and_record(new_rs, replicas(d), d)
        count = self._new_rs_new_replicas(d, all_rss, new_rs)
        return await self._scale_and_record(new_rs, count, d)

    async def _reconcile_old(self, d: dict, all_rss: list[dict], old_active: list[dict], old_all: list[dict],
                             new_rs: dict) -> tuple[bool, list[dict]]:
        old_count = sum(replicas(rs) for rs in old_active)
        if old_count == 0:
            return False, old_all
        all_count = sum(replicas(rs) for rs in all_rss)
        min_available = replicas(d) - max_unavailable(d)
        new_unavailable = replicas(new_rs) - status_int(new_rs, "availableReplicas")
        max_scaled_down = all_count - min_available - new_unavailable
        if max_scaled_down <= 0:
            return False, old_all
        updated: dict[str, dict] = {}
        # clean up unhealthy replicas first
        cleaned = 0
        for rs in by_creation(old_active):
            if cleaned >= max_scaled_down:
                break
            rs = updated.get(meta(rs)["name"], rs)
            if replicas(rs) == 0 or replicas(rs) == status_int(rs, "availableReplicas"):
                continue
            n = min(max_scaled_down - cleaned, replicas(rs) - status_int(rs, "availableReplicas"))
            _, rs2 = await self._scale_and_record(rs, replicas(rs) - n, d)
            updated[meta(rs)["name"]] = rs2
            cleaned += n
        olds = [updated.get(meta(rs)["name"], rs) for rs in old_active]
        # then scale down within maxUnavailable
        available = sum(status_int(rs, "availableReplicas") for rs in [*olds, new_rs])
        scaled = 0
        if available > min_available:
            total = available - min_available
            for rs in by_creation(olds):
                if scaled >= total:
                    break
                if replicas(rs) == 0:
                    continue
                n = min(replicas(rs), total - scaled)
                _, rs2 = await self._scale_and_record(rs, replicas(rs) - n, d)
                updated[meta(rs)["name"]] = rs2
                scaled += n
        return cleaned + scaled > 0, [updated.get(meta(rs)["name"], rs) for rs in old_all]

    async def _rollout_recreate(self, d: dict, rs_list: list[dict]) -> None:
        new_rs, old_rss = await self._all_rs_and_sync_revision(d, rs_list, create=False)
        all_rss = [*old_rss, new_rs]
        scaled_down = False
        for rs in active(old_rss):
            changed, _ = await self._scale_and_record(rs, 0, d)
            scaled_down = scaled_down or changed
        if scaled_down:
            await self._sync_rollout_status(d, all_rss, new_rs)
            return
        if self._old_pods_running(new_rs, old_rss):
            await self._sync_rollout_status(d, all_rss, new_rs)
            return
        if new_rs is None:
            new_rs, old_rss = await self._all_rs_and_sync_revision(d, rs_list, create=True)
            all_rss = [*old_rss, new_rs]
        assert new_rs is not None
        if replicas(new_rs) != replicas(d):
            _, new_rs = await self._scale_and_record(new_rs, replicas(d), d)
            all_rss = [*old_rss, new_rs]
        if deployment_complete(d, d["status"]):
            await self._cleanup(d, old_rss)
        await self._sync_rollout_status(d, all_rss, new_rs)

    def _old_pods_running(self, new_rs: dict | None, old_rss: list[dict]) -> bool:
        if sum(status_int(rs, "replicas") for rs in old_rss) > 0:
            return True
        for rs in old_rss:
            for pod in self.pods.by_index("controller", meta(rs)["uid"]):
                if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                    return True
        return False

    async def _cleanup(self, d: dict, old_rss: list[dict]) -> None:
        limit = d["spec"].get("revisionHistoryLimit")
        if limit is None:
            return
        alive = [rs for rs in old_rss if rs is not None and not meta(rs).get("deletionTimestamp")]
        diff = len(alive) - int(limit)
        if diff <= 0:
            return
        for rs in sorted(alive, key=lambda r: (revision_of(r), meta(r).get("creationTimestamp") or ""))[:diff]:
            if status_int(rs, "replicas") != 0 or replicas(rs) != 0 or \
                    int(meta(rs).get("generation") or 0) > status_int(rs, "observedGeneration"):
                continue
            try:
                await self.kube.request("DELETE", api_path("apps/v1", "replicasets", meta(rs)["namespace"], meta(rs)["name"]))
            except ApiError as err:
                if err.status != 404:
                    raise

    # -- status ---------------------------------------------------------------------------------

    def _calculate_status(self, d: dict, all_rss: Sequence[dict | None], new_rs: dict | None) -> dict:
        rss = [rs for rs in all_rss if rs is not None]
        available = sum(status_int(rs, "availableReplicas") for rs in rss)
        total = sum(replicas(rs) for rs in rss)
        status: dict[str, Any] = {
            "observedGeneration": int(meta(d).get("generation") or 0),
            "replicas": sum(status_int(rs, "replicas") for rs in rss),
            "updatedReplicas": status_int(new_rs, "replicas") if new_rs is not None else 0,
            "readyReplicas": sum(status_int(rs, "readyReplicas") for rs in rss),
            "availableReplicas": available,
            "unavailableReplicas": max(total - available, 0),
        }
        old = d.get("status") or {}
        if old.get("collisionCount") is not None:
            status["collisionCount"] = old["collisionCount"]
        if old.get("conditions"):
            status["conditions"] = [dict(c) for c in old["conditions"]]
        if available >= replicas(d) - max_unavailable(d):
            set_condition(status, new_condition("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability."))
        else:
            set_condition(status, new_condition("Available", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability."))
        return status

    async def _sync_status(self, d: dict, all_rss: Sequence[dict | None], new_rs: dict | None) -> None:
        status = self._calculate_status(d, all_rss, new_rs)
        if _status_equal(d.get("status") or {}, status):
            return
        d["status"] = status
        await self.update_status(d)

    async def _sync_rollout_status(self, d: dict, all_rss: Sequence[dict | None], new_rs: dict | None) -> None:
        status = self._calculate_status(d, all_rss, new_rs)
        if not has_progress_deadline(d):
            remove_condition(status, "Progressing")
        current = get_condition(d.get("status"), "Progressing")
        complete_already = (int(status.get("replicas") or 0) == int(status.get("updatedReplicas") or 0)
                            and current is not None and current.get("reason") == NEW_RS_AVAILABLE_REASON)
        name = f'ReplicaSet "{meta(new_rs)["name"]}"' if new_rs is not None else f'Deployment "{meta(d)["name"]}"'
        if has_progress_deadline(d) and not complete_already:
            if deployment_complete(d, status):
                set_condition(status, new_condition("Progressing", "True", NEW_RS_AVAILABLE_REASON, f"{name} has successfully progressed."))
            elif deployment_progressing(d, status):
                cond = new_condition("Progressing", "True", RS_UPDATED_REASON, f"{name} is progressing.")
                if current is not None:
                    if current.get("status") == "True":
                        cond["lastTransitionTime"] = current.get("lastTransitionTime")
                    remove_condition(status, "Progressing")
                conds = status.get("conditions") or []
                status["conditions"] = [*conds, cond]
            elif deployment_timed_out(d, status):
                set_condition(status, new_condition("Progressing", "False", TIMED_OUT_REASON, f"{name} has timed out progressing."))
        failures = self._replica_failures([rs for rs in all_rss if rs is not None], new_rs)
        if failures:
            set_condition(status, failures[0])
        else:
            remove_condition(status, "ReplicaFailure")
        if _status_equal(d.get("status") or {}, status):
            self._requeue_stuck(d, status)
            return
        d["status"] = status
        await self.update_status(d)

    @staticmethod
    def _replica_failures(all_rss: list[dict], new_rs: dict | None) -> list[dict]:
        def failures(rs: dict) -> list[dict]:
            out = []
            for c in (rs.get("status") or {}).get("conditions") or []:
                if c.get("type") == "ReplicaFailure":
                    out.append({"type": "ReplicaFailure", "status": c.get("status"), "lastUpdateTime": c.get("lastTransitionTime"),
                                "lastTransitionTime": c.get("lastTransitionTime"), "reason": c.get("reason"), "message": c.get("message")})
            return out

        if new_rs is not None:
            found = failures(new_rs)
            if found:
                return found
        for rs in all_rss:
            found = failures(rs)
            if found:
                return found
        return []

    def _requeue_stuck(self, d: dict, status: dict) -> None:
        current = get_condition(d.get("status"), "Progressing")
        if not has_progress_deadline(d) or current is None:
            return
        if deployment_complete(d, status) or current.get("reason") == TIMED_OUT_REASON:
            return
        since = parse_time(current.get("lastUpdateTime"))
        if since is None:
            return
        after = since + int(d["spec"]["progressDeadlineSeconds"]) - time.time()
        key = object_key(d)
        if after < 1:
            self.queue.retry(key)
        else:
            self.queue.add_after(key, after + 1)

    async def _check_paused_conditions(self, d: dict) -> None:
        if not has_progress_deadline(d):
            return
        cond = get_condition(d["status"], "Progressing")
        if cond is not None and cond.get("reason") == TIMED_OUT_REASON:
            return
        paused_exists = cond is not None and cond.get("reason") == PAUSED_REASON
        if d["spec"].get("paused") and not paused_exists:
            set_condition(d["status"], new_condition("Progressing", "Unknown", PAUSED_REASON, "Deployment is paused"))
        elif not d["spec"].get("paused") and paused_exists:
            set_condition(d["status"], new_condition("Progressing", "Unknown", RESUMED_REASON, "Deployment is resumed"))
        else:
            return
        await self.update_status(d)


def _round_half_away(x: float) -> float:
    return float(int(x + 0.5)) if x >= 0 else -float(int(-x + 0.5))


def _neg_time(rs: dict) -> str:
    stamp = meta(rs).get("creationTimestamp") or ""
    return "".join(chr(0x10FFFF - ord(ch)) for ch in stamp)


_STATUS_FIELDS = ("observedGeneration", "replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
                  "unavailableReplicas", "collisionCount")


def _status_equal(old: dict, new: dict) -> bool:
    for f in _STATUS_FIELDS:
        if (old.get(f) or 0) != (new.get(f) or 0):
            return False
    return (old.get("conditions") or []) == (new.get("conditions") or [])


class _RSHandler(EventHandler):
    def __init__(self, c: DeploymentController) -> None:
        self.c = c

    def on_add(self, rs: dict) -> None:
        ref = controller_ref(rs)
        ns = meta(rs).get("namespace") or ""
        if ref is not None:
            d = self.c.resolve(ns, ref)
            if d is not None:
                self.c.queue.add(object_key(d))
            return
        for d in self.c.deployments_for_orphan(rs):
            self.c.queue.add(object_key(d))

    def on_update(self, old: dict, new: dict) -> None:
        ns = meta(new).get("namespace") or ""
        cur_ref, old_ref = controller_ref(new), controller_ref(old)
        if cur_ref != old_ref and old_ref is not None:
            d = self.c.resolve(ns, old_ref)
            if d is not None:
                self.c.queue.add(object_key(d))
        if cur_ref is not None:
            d = self.c.resolve(ns, cur_ref)
            if d is not None:
                self.c.queue.add(object_key(d))
            return
        if meta(old).get("labels") != meta(new).get("labels") or cur_ref != old_ref:
            for d in self.c.deployments_for_orphan(new):
                self.c.queue.add(object_key(d))

    def on_delete(self, rs: dict) -> None:
        ref = controller_ref(rs)
        if ref is None:
            return
        d = self.c.resolve(meta(rs).get("namespace") or "", ref)
        if d is not None:
            self.c.queue.add(object_key(d))


class _PodHandler(EventHandler):
    """Recreate deployments wait for their old pods to go."""

    def __init__(self, c: DeploymentController) -> None:
        self.c = c

    def on_delete(self, pod: dict) -> None:
        ref = controller_ref(pod)
        if ref is None:
            return
        ns = meta(pod).get("namespace") or ""
        rs = self.c.rs.get(f"{ns}/{ref.get('name')}")
        if rs is None:
            return
        rs_ref = controller_ref(rs)
        d = self.c.resolve(ns, rs_ref) if rs_ref else None
        if d is not None and not is_rolling(d):
            self.c.queue.add(object_key(d))
