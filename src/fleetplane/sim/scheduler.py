"""A scheduler in kube-scheduler's image, cut to what decides placement on simulated nodes.

One pod at a time from the queue of unassigned pods (``schedulerName: default-scheduler``, not
gated, not terminating), as kube's scheduling cycle; the bind (setting ``spec.nodeName``, which
the Pod strategy allows once) runs asynchronously with the pod *assumed* on its node meanwhile,
so the next decisions count it.

Filters, in kube's plugin order, stopping at a node's first failure: NodeUnschedulable
("node(s) were unschedulable"), TaintToleration ("node(s) had untolerated taint {k: v}"),
NodeAffinity (nodeSelector and required node affinity: "node(s) didn't match Pod's node
affinity/selector"), NodeResourcesFit (summed requests of the pods on the node plus this one
against allocatable: "Too many pods", "Insufficient cpu", "Insufficient memory",
"Insufficient <resource>"). Scoring: least allocated (with kube's non-zero defaults of 100m
cpu and 200Mi memory for pods without requests) plus spreading the pods of one owner across
nodes; ties go to the node that sorts first.

A pod that fits nowhere stays Pending with ``PodScheduled=False``, reason ``Unschedulable``
and kube's message ("0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are
available: 3 No preemption victims found for incoming pod."), and a ``FailedScheduling``
event; it is retried (with kube's 1 s to 10 s backoff) when the cluster changes in a way that
could help: a node added or changed, a pod on a node deleted or finished.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from typing import Any

from ..apimachinery.quantity import QuantityError, int_value, milli_value
from ..kube.client import MERGE_PATCH, STRATEGIC_PATCH, ApiError, Client, api_path
from ..kube.controller import run_workers
from ..kube.events import EventRecorder
from ..kube.informer import EventHandler, Informer, object_key
from ..kube.workqueue import WorkQueue
from .util import controller_ref, get_condition, meta, now, pod_is_terminal

log = logging.getLogger(__name__)

SCHEDULER_NAME = "default-scheduler"
COMPONENT = "default-scheduler"
DEFAULT_MILLI_CPU = 100
DEFAULT_MEMORY = 200 * 1024 * 1024
INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0
BIND_PARALLELISM = 16

R_UNSCHEDULABLE = "node(s) were unschedulable"
R_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
R_TOO_MANY_PODS = "Too many pods"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"

Resources = dict[str, int]


def _quantity(name: str, value: Any) -> int:
    return milli_value(value) if name == "cpu" else int_value(value)


def pod_resource_requests(pod: dict) -> Resources:
    """resource.PodRequests: max(sum of containers (+ sidecars), each init container) + overhead."""
    spec = pod.get("spec") or {}

    def of(c: dict) -> Resources:
        out: Resources = {}
        for k, v in (((c or {}).get("resources") or {}).get("requests") or {}).items():
            try:
                out[k] = _quantity(k, v)
            except QuantityError:
                pass
        return out

    total: Resources = {}
    for c in spec.get("containers") or []:
        for k, v in of(c).items():
            total[k] = total.get(k, 0) + v
    sidecars: Resources = {}
    for c in spec.get("initContainers") or []:
        req = of(c)
        if c.get("restartPolicy") == "Always":
            for k, v in req.items():
                sidecars[k] = sidecars.get(k, 0) + v
                total[k] = total.get(k, 0) + v
        else:
            for k, v in req.items():
                total[k] = max(total.get(k, 0), v + sidecars.get(k, 0))
    for k, v in (spec.get("overhead") or {}).items():
        try:
            total[k] = total.get(k, 0) + _quantity(k, v)
        except QuantityError:
            pass
    return total


def node_allocatable(node: dict) -> Resources:
    out: Resources = {}
    for k, v in ((node.get("status") or {}).get("allocatable") or {}).items():
        try:
            out[k] = _quantity(k, v)
        except QuantityError:
            pass
    return out


def tolerates(tolerations: list[dict], taint: dict) -> bool:
    for t in tolerations or []:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        if t.get("key") and t.get("key") != taint.get("key"):
            continue
        if not t.get("key") and t.get("operator") != "Exists":
            continue
        if t.get("operator") == "Exists":
            return True
        if (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def _match_expression(labels: dict, expr: dict) -> bool:
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    has = key in labels
    if op == "In":
        return has and labels[key] in values
    if op == "NotIn":
        return not has or labels[key] not in values
    if op == "Exists":
        return has
    if op == "DoesNotExist":
        return not has
    if op in ("Gt", "Lt") and has and values:
        try:
            a, b = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return a > b if op == "Gt" else a < b
    return False


def node_affinity_matches(pod: dict, node: dict) -> bool:
    spec = pod.get("spec") or {}
    labels = meta(node).get("labels") or {}
    for k, v in (spec.get("nodeSelector") or {}).items():
        if labels.get(k) != v:
            return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms")
    if not terms:
        return True
    fields = {"metadata.name": meta(node).get("name")}
    for term in terms:
        exprs = term.get("matchExpressions") or []
        field_exprs = term.get("matchFields") or []
        if not exprs and not field_exprs:
            continue
        if all(_match_expression(labels, x) for x in exprs) and all(_match_expression(fields, x) for x in field_exprs):
            return True
    return False


def fit_message(total: int, reasons: dict[str, int], preemption: dict[str, int]) -> str:
    """FitError.Error() with the default preemption's PostFilter message."""
    msg = f"0/{total} nodes are available: " + ", ".join(sorted(f"{v} {k}" for k, v in reasons.items())) + "."
    if preemption:
        msg += f" preemption: 0/{total} nodes are available: " + ", ".join(sorted(f"{v} {k}" for k, v in preemption.items())) + "."
    return msg


class Scheduler:
    def __init__(self, kube: Client, pods: Informer, nodes: Informer, recorder: EventRecorder) -> None:
        self.kube = kube
        self.pods = pods
        self.nodes = nodes
        self.recorder = recorder
        self.queue = WorkQueue("scheduler", base=0.005, cap=60.0)
        #: pod key -> (node, requests, owner uid) of every pod counted on a node
        self.placed: dict[str, tuple[str, Resources, str]] = {}
        #: node -> summed requests (plus "pods", and the non-zero "nz-cpu"/"nz-memory" for scoring)
        self.usage: dict[str, Resources] = collections.defaultdict(dict)
        #: node -> owner uid -> pods
        self.owners: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        #: pods bound by us that the informer has not shown on a node yet
        self.assumed: dict[str, str] = {}
        #: unschedulable pods waiting for a cluster change: key -> attempts
        self.unschedulable: dict[str, int] = {}
        self.attempts: dict[str, int] = {}
        self._bind_slots = asyncio.Semaphore(BIND_PARALLELISM)
        self._tasks: set[asyncio.Task] = set()
        pods.add_handler(_PodHandler(self))
        nodes.add_handler(_NodeHandler(self))

    async def run(self) -> None:
        for pod in self.pods.list():
            self._account(object_key(pod), pod)
        await run_workers(self.queue, self.schedule_one, 1)

    # -- accounting -----------------------------------------------------------------------------

    def _account(self, key: str, pod: dict | None) -> None:
        """Bring ``placed``/``usage`` in line with what the informer (or an assumption) says."""
        want: tuple[str, Resources, str] | None = None
        if pod is not None and not pod_is_terminal(pod):
            node = (pod.get("spec") or {}).get("nodeName") or self.assumed.get(key)
            if node:
                ref = controller_ref(pod)
                want = (node, pod_resource_requests(pod), ref.get("uid", "") if ref else "")
        have = self.placed.get(key)
        if have == want:
            return
        if have is not None:
            self._add_usage(have, -1)
            del self.placed[key]
        if want is not None:
            self._add_usage(want, 1)
            self.placed[key] = want

    def _add_usage(self, placed: tuple[str, Resources, str], sign: int) -> None:
        node, req, owner = placed
        u = self.usage[node]
        for k, v in req.items():
            u[k] = u.get(k, 0) + sign * v
        u["pods"] = u.get("pods", 0) + sign
        u["nz-cpu"] = u.get("nz-cpu", 0) + sign * (req.get("cpu") or DEFAULT_MILLI_CPU)
        u["nz-memory"] = u.get("nz-memory", 0) + sign * (req.get("memory") or DEFAULT_MEMORY)
        if owner:
            self.owners[node][owner] += sign
            if self.owners[node][owner] <= 0:
                del self.owners[node][owner]

    # -- the queue ------------------------------------------------------------------------------

    def wants(self, pod: dict) -> bool:
        spec = pod.get("spec") or {}
        return (not spec.get("nodeName") and (spec.get("schedulerName") or SCHEDULER_NAME) == SCHEDULER_NAME
                and not spec.get("schedulingGates") and not meta(pod).get("deletionTimestamp")
                and not pod_is_terminal(pod))

    def activate_unschedulable(self) -> None:
        """A cluster change that may help: retry the unschedulable pods (after their backoff)."""
        waiting, self.unschedulable = self.unschedulable, {}
        for key, attempts in waiting.items():
            delay = min(INITIAL_BACKOFF * (2 ** max(attempts - 1, 0)), MAX_BACKOFF)
            self.queue.add_after(key, delay)

    # -- one scheduling cycle -------------------------------------------------------------------

    def find_node(self, pod: dict) -> tuple[str | None, str]:
        nodes = self.nodes.list()
        if not nodes:
            return None, "no nodes available to schedule pods"
        spec = pod.get("spec") or {}
        tolerations = spec.get("tolerations") or []
        req = pod_resource_requests(pod)
        req_cpu = req.get("cpu") or DEFAULT_MILLI_CPU
        req_mem = req.get("memory") or DEFAULT_MEMORY
        ref = controller_ref(pod)
        owner = ref.get("uid", "") if ref else ""
        owner_total = sum(c.get(owner, 0) for c in self.owners.values()) if owner else 0
        reasons: collections.Counter = collections.Counter()
        preemption: collections.Counter = collections.Counter()
        best: tuple[float, str] | None = None
        for node in nodes:
            name = meta(node)["name"]
            nspec = node.get("spec") or {}
            failed: list[str] = []
            resolvable = False
            if nspec.get("unschedulable") and not tolerates(
                    tolerations, {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}):
                failed = [R_UNSCHEDULABLE]
            if not failed:
                for taint in nspec.get("taints") or []:
                    if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tolerations, taint):
                        failed = [f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value') or ''}}}"]
                        break
            if not failed and not node_affinity_matches(pod, node):
                failed = [R_AFFINITY]
            if not failed:
                alloc = node_allocatable(node)
                used = self.usage.get(name, {})
                if used.get("pods", 0) + 1 > alloc.get("pods", 0):
                    failed.append(R_TOO_MANY_PODS)
                for res in ("cpu", "memory", "ephemeral-storage", *sorted(k for k in req if k not in ("cpu", "memory", "ephemeral-storage"))):
                    want = req.get(res, 0)
                    if want and used.get(res, 0) + want > alloc.get(res, 0):
                        failed.append(f"Insufficient {res}")
                resolvable = True
            if failed:
                for r in failed:
                    reasons[r] += 1
                preemption[NO_VICTIMS if resolvable else NOT_HELPFUL] += 1
                continue
            alloc = node_allocatable(node)
            used = self.usage.get(name, {})
            score = 0.0
            for res, nz_req, key in (("cpu", req_cpu, "nz-cpu"), ("memory", req_mem, "nz-memory")):
                cap = alloc.get(res, 0)
                if cap > 0:
                    score += max(cap - used.get(key, 0) - nz_req, 0) * 50.0 / cap
            if owner and owner_total:
                score += 2 * 100.0 * (1 - self.owners[name].get(owner, 0) / (owner_total + 1))
            if best is None or score > best[0] or (score == best[0] and name < best[1]):
                best = (score, name)
        if best is not None:
            return best[1], ""
        return None, fit_message(len(nodes), dict(reasons), dict(preemption))

    async def schedule_one(self, key: str) -> None:
        pod = self.pods.get(key)
        if pod is None or not self.wants(pod) or key in self.assumed:
            self.unschedulable.pop(key, None)
            return
        node, message = self.find_node(pod)
        if node is None:
            attempts = self.attempts.get(key, 0) + 1
            self.attempts[key] = attempts
            self.unschedulable[key] = attempts
            self._spawn(self._record_failure(pod, message))
            return
        self.assumed[key] = node
        self._account(key, pod)
        self._spawn(self._bind(key, pod, node))

    def _spawn(self, coro) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _bind(self, key: str, pod: dict, node: str) -> None:
        m = meta(pod)
        async with self._bind_slots:
            try:
                await self.kube.patch(api_path("v1", "pods", m["namespace"], m["name"]), {"spec": {"nodeName": node}},
                                      MERGE_PATCH)
            except ApiError as err:
                self.assumed.pop(key, None)
                self._account(key, self.pods.get(key))
                if err.status == 404:
                    return
                log.info("binding %s to %s failed: %s", key, node, err)
                self.recorder.event(pod, "Warning", "FailedScheduling", f"Binding rejected: {err.message}", component=COMPONENT)
                self.queue.add_after(key, INITIAL_BACKOFF)
                return
            except Exception:
                self.assumed.pop(key, None)
                self._account(key, self.pods.get(key))
                self.queue.add_after(key, INITIAL_BACKOFF)
                raise
        self.attempts.pop(key, None)
        self.recorder.event(pod, "Normal", "Scheduled", f"Successfully assigned {m['namespace']}/{m['name']} to {node}",
                            component=COMPONENT)

    async def _record_failure(self, pod: dict, message: str) -> None:
        m = meta(pod)
        self.recorder.event(pod, "Warning", "FailedScheduling", message, component=COMPONENT)
        cond = get_condition(pod.get("status"), "PodScheduled")
        if cond is not None and cond.get("status") == "False" and cond.get("reason") == "Unschedulable" \
                and cond.get("message") == message:
            return
        patch = {"status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                            "message": message, "lastProbeTime": None, "lastTransitionTime": now()}]}}
        try:
            await self.kube.patch(api_path("v1", "pods", m["namespace"], m["name"], "status"), patch, STRATEGIC_PATCH)
        except ApiError as err:
            if err.status != 404:
                log.info("recording %s/%s unschedulable failed: %s", m["namespace"], m["name"], err)


class _PodHandler(EventHandler):
    def __init__(self, s: Scheduler) -> None:
        self.s = s

    def on_add(self, pod: dict) -> None:
        key = object_key(pod)
        self._placed(key, pod)
        if self.s.wants(pod):
            self.s.queue.add(key)

    def on_update(self, old: dict, new: dict) -> None:
        key = object_key(new)
        if (new.get("spec") or {}).get("nodeName"):
            self.s.assumed.pop(key, None)
        was_terminal = pod_is_terminal(old)
        self._placed(key, new)
        if pod_is_terminal(new) and not was_terminal and (new.get("spec") or {}).get("nodeName"):
            self.s.activate_unschedulable()
        if self.s.wants(new):
            if key in self.s.unschedulable:
                # only a change to the pod itself (not our own status write) makes it worth a retry
                if new.get("spec") != old.get("spec") or meta(new).get("labels") != meta(old).get("labels"):
                    self.s.unschedulable.pop(key, None)
                    self.s.queue.add(key)
            elif key not in self.s.assumed:
                self.s.queue.add(key)

    def on_delete(self, pod: dict) -> None:
        key = object_key(pod)
        self.s.assumed.pop(key, None)
        self.s.unschedulable.pop(key, None)
        self.s.attempts.pop(key, None)
        had = key in self.s.placed
        self.s._account(key, None)
        if had:
            self.s.activate_unschedulable()

    def _placed(self, key: str, pod: dict) -> None:
        self.s._account(key, pod)


class _NodeHandler(EventHandler):
    def __init__(self, s: Scheduler) -> None:
        self.s = s

    def on_add(self, node: dict) -> None:
        self.s.activate_unschedulable()

    def on_update(self, old: dict, new: dict) -> None:
        if (old.get("spec") != new.get("spec") or meta(old).get("labels") != meta(new).get("labels")
                or (old.get("status") or {}).get("allocatable") != (new.get("status") or {}).get("allocatable")):
            self.s.activate_unschedulable()

    def on_delete(self, node: dict) -> None:
        pass
