"""Simulated kubelets: one controller plays the kubelet of every Node in the cluster (as KWOK
with ``--manage-all-nodes``), with no containers behind it.

Pods: a pod bound to a node is admitted (requests against the node's allocatable minus the
pods already running there; a pod that does not fit fails with ``OutOfcpu``/``OutOfmemory``/
``OutOfpods`` as the kubelet rejects it), then shown ``ContainerCreating`` (phase Pending, hostIP,
startTime, waiting container statuses, conditions PodReadyToStartContainers/Initialized/
ContainersReady/Ready/PodScheduled), and after ``--kubelet-delay`` seconds ``Running``: a
podIP from the node's pod CIDR, running and ready containers with ids and image ids, every
condition True (Ready waits for a readiness probe's ``initialDelaySeconds`` if one is set).
Pods that finish: a pod whose run time is known (the annotation ``sim.fleetplane.io/run-seconds``,
else every container's command and args reading ``sleep N``, ``sh -c "sleep N"`` or ``exit N``:
see :func:`run_seconds`) stops that long after its containers started, with exit code 0, or
the annotation ``sim.fleetplane.io/exit-code`` (``exit N`` in the command gives N too). Under
``restartPolicy: Never`` the pod ends ``Succeeded`` or ``Failed`` (containers ``terminated``,
reason Completed or Error); under ``OnFailure`` a failed container (``Always``: any container)
restarts in place after a back-off (``--kubelet-delay`` doubling per restart, at most 5 min: kube's
10 s doubling scaled down), ``restartCount`` and ``lastState`` as kube's, ``CrashLoopBackOff``
waiting meanwhile; a pod that succeeds under OnFailure ends Succeeded. Other pods run forever.
Timers, not polling, bring each pod to its next state; a restart picks up where the stored
status is. Deleted pods release their IPs; pods on a deleted node are deleted (pod GC).

Nodes: any Node without a Ready condition gets a kubelet's registration status (conditions,
addresses, nodeInfo, a pod CIDR if it has none). Heartbeats as the kubelet's with leases:
every ``heartbeat_interval`` (10 s) one renew of each node's Lease in ``kube-node-lease``
(all renewed together, so one wake-up), and the Node's conditions' ``lastHeartbeatTime``
every 5 minutes (``nodeStatusReportFrequency``).
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import logging
import re
import time
from collections.abc import Callable
from typing import Any

from ..kube.client import MERGE_PATCH, ApiError, Client, api_path
from ..kube.controller import run_workers
from ..kube.events import EventRecorder
from ..kube.informer import EventHandler, Informer, object_key
from ..kube.workqueue import WorkQueue
from .nodes import NODE_NETWORK, cidr_prefix, node_conditions, node_info, pod_cidr
from .scheduler import node_allocatable, pod_resource_requests
from .util import get_condition, meta, now, now_micro, parse_time, pod_is_terminal

log = logging.getLogger(__name__)

COMPONENT = "kubelet"
LEASE_NAMESPACE = "kube-node-lease"
LEASE_DURATION = 40
NODE_STATUS_REPORT = 300.0
RUN_SECONDS = "sim.fleetplane.io/run-seconds"
EXIT_CODE = "sim.fleetplane.io/exit-code"
MAX_RESTART_BACKOFF = 300.0
_SLEEP = re.compile(r"^\s*(?:sleep\s+(\d+(?:\.\d+)?)|exit\s+(\d+))\s*;?\s*$")


def _script_seconds(argv: list[str]) -> tuple[float, int] | None:
    """(seconds, exit code) of ``sleep N``, ``exit N`` or ``sh -c '<one of those>'``; None otherwise."""
    if len(argv) >= 3 and argv[0].rsplit("/", 1)[-1] in ("sh", "bash", "ash") and argv[1] == "-c":
        argv = [argv[2]]
    m = _SLEEP.match(" ".join(argv))
    if m is None:
        return None
    return (float(m.group(1)), 0) if m.group(1) is not None else (0.0, int(m.group(2)))


def run_seconds(pod: dict) -> tuple[float, int] | None:
    """How long a pod's containers run and the exit code they end with, or None (they run
    forever): the annotations, else every container's ``command`` + ``args`` as a script."""
    ann = meta(pod).get("annotations") or {}
    code: int | None = None
    if ann.get(EXIT_CODE) is not None:
        try:
            code = int(ann[EXIT_CODE])
        except ValueError:
            code = 1
    if ann.get(RUN_SECONDS) is not None:
        try:
            return max(0.0, float(ann[RUN_SECONDS])), code or 0
        except ValueError:
            return None
    longest: tuple[float, int] | None = None
    for c in (pod.get("spec") or {}).get("containers") or []:
        got = _script_seconds([str(a) for a in (c.get("command") or []) + (c.get("args") or [])])
        if got is None:
            return None
        longest = got if longest is None or got[0] > longest[0] else (longest[0], longest[1] or got[1])
    if longest is None:
        return None
    return longest[0], code if code is not None else longest[1]


def _lease_path(name: str = "") -> str:
    return api_path("coordination.k8s.io/v1", "leases", LEASE_NAMESPACE, name)


def normalize_image(image: str) -> str:
    """The reference containerd reports: ``nginx`` -> ``docker.io/library/nginx:latest``."""
    name, digest = (image.split("@", 1) + [""])[:2]
    last = name.rsplit("/", 1)[-1]
    if ":" not in last and not digest:
        name += ":latest"
    first = name.split("/", 1)[0]
    if "/" not in name:
        name = "docker.io/library/" + name
    elif "." not in first and ":" not in first and first != "localhost":
        name = "docker.io/" + name
    return name + ("@" + digest if digest else "")


def image_id(image: str) -> str:
    ref = normalize_image(image)
    repo = ref.split("@", 1)[0].rsplit(":", 1)[0] if "@" not in ref else ref.split("@", 1)[0]
    return f"{repo}@sha256:{hashlib.sha256(ref.encode()).hexdigest()}"


def container_id(pod_uid: str, name: str) -> str:
    return "containerd://" + hashlib.sha256(f"{pod_uid}/{name}".encode()).hexdigest()


class NodeIPs:
    """host-local IPAM for one node's pod CIDR: round-robin, skipping addresses in use."""

    def __init__(self, cidr: str) -> None:
        net = ipaddress.ip_network(cidr, strict=False)
        self.first = int(net.network_address) + 2
        self.last = int(net.broadcast_address) - 1
        self.next = self.first
        self.used: set[int] = set()

    def take(self, ip: str) -> None:
        try:
            self.used.add(int(ipaddress.ip_address(ip)))
        except ValueError:
            pass

    def allocate(self) -> str | None:
        size = self.last - self.first + 1
        for i in range(size):
            cand = self.first + (self.next - self.first + i) % size
            if cand not in self.used:
                self.used.add(cand)
                self.next = cand + 1 if cand < self.last else self.first
                return str(ipaddress.ip_address(cand))
        return None

    def release(self, ip: str) -> None:
        try:
            self.used.discard(int(ipaddress.ip_address(ip)))
        except ValueError:
            pass


def _cond(ctype: str, status: str, old: dict | None, reason: str = "", message: str = "") -> dict:
    prev = get_condition(old, ctype)
    stamp = prev.get("lastTransitionTime") if prev and prev.get("status") == status and prev.get("lastTransitionTime") else now()
    c: dict[str, Any] = {"type": ctype, "status": status, "lastProbeTime": None, "lastTransitionTime": stamp}
    if reason:
        c["reason"] = reason
    if message:
        c["message"] = message
    return c


class Kubelet:
    def __init__(self, kube: Client, pods: Informer, nodes: Informer, recorder: EventRecorder, *,
                 delay: float = 1.0, heartbeat_interval: float = 10.0, workers: int = 8,
                 alive: Callable[[], bool] = lambda: True) -> None:
        self.kube = kube
        self.alive = alive
        self.pods = pods
        self.nodes = nodes
        self.recorder = recorder
        self.delay = max(delay, 0.0)
        self.heartbeat_interval = heartbeat_interval
        self.workers = workers
        self.queue = WorkQueue("kubelet", base=0.005, cap=60.0)
        self.node_queue = WorkQueue("kubelet-nodes", base=0.005, cap=60.0)
        #: pod uid -> monotonic time its containers started being created (this process)
        self.creating: dict[str, float] = {}
        #: pod uid -> monotonic time its containers started stopping (deletion requested)
        self.stopping: dict[str, float] = {}
        #: pod uid -> monotonic time its containers (last) started running (this process)
        self.running: dict[str, float] = {}
        self.ips: dict[str, NodeIPs] = {}
        #: pod key -> (node, ip) allocated
        self.pod_ips: dict[str, tuple[str, str]] = {}
        self.leases: dict[str, dict] = {}
        self._last_status_report = 0.0
        pods.add_handler(_PodHandler(self))
        nodes.add_handler(_NodeHandler(self))

    async def run(self) -> None:
        for pod in self.pods.list():
            ip = (pod.get("status") or {}).get("podIP")
            node = (pod.get("spec") or {}).get("nodeName")
            if not (ip and node and not pod_is_terminal(pod)):
                continue
            ipam = self._ipam(node)
            if ipam is not None:
                ipam.take(ip)
                self.pod_ips[object_key(pod)] = (node, ip)
        for node in self.nodes.list():
            self.node_queue.add(meta(node)["name"])
            self.recorder.event({**node, "metadata": {**meta(node), "namespace": ""}}, "Normal", "Starting",
                                "Starting kubelet.", component=COMPONENT, host=meta(node)["name"])
        for pod in self.pods.list():
            if (pod.get("spec") or {}).get("nodeName"):
                self.queue.add(object_key(pod))
        await asyncio.gather(run_workers(self.queue, self.sync_pod, self.workers),
                             run_workers(self.node_queue, self.sync_node, 2),
                             self.heartbeat())

    # -- IPAM -----------------------------------------------------------------------------------

    def _ipam(self, node_name: str) -> NodeIPs | None:
        ipam = self.ips.get(node_name)
        if ipam is not None:
            return ipam
        node = self.nodes.get(node_name)
        cidr = ((node or {}).get("spec") or {}).get("podCIDR")
        if not cidr:
            return None
        ipam = self.ips[node_name] = NodeIPs(cidr)
        return ipam

    def release_ip(self, key: str) -> None:
        got = self.pod_ips.pop(key, None)
        if got is not None:
            ipam = self.ips.get(got[0])
            if ipam is not None:
                ipam.release(got[1])

    # -- pods -----------------------------------------------------------------------------------

    async def sync_pod(self, key: str) -> None:
        pod = self.pods.get(key)
        if pod is None:
            return
        spec = pod.get("spec") or {}
        node = self.nodes.get(spec.get("nodeName") or "")
        if node is not None and meta(pod).get("deletionTimestamp"):
            await self._stop(key, pod)
            return
        if node is None or pod_is_terminal(pod):
            return
        status = pod.get("status") or {}
        uid = meta(pod)["uid"]
        if not status.get("startTime"):
            rejection = self._admit(pod, node)
            if rejection is not None:
                await self._patch_status(pod, rejection)
                return
            if self.delay <= 0:  # no time to see ContainerCreating: one write, as KWOK's pod-ready stage
                await self._start(key, pod, node)
                return
            await self._patch_status(pod, self._creating_status(pod, node))
            self.creating[uid] = time.monotonic()
            self.queue.add_after(key, self.delay)
            return
        if status.get("phase") == "Pending":
            started = self.creating.get(uid)
            if started is not None:
                remaining = started + self.delay - time.monotonic()
            else:  # after a restart: the stored startTime (whole seconds) is the best clock we have
                start = parse_time(status.get("startTime")) or time.time()
                remaining = min(start + self.delay - time.time(), self.delay)
            if remaining > 0.001:
                self.queue.add_after(key, remaining)
                return
            await self._start(key, pod, node)
            return
        backing_off = any("waiting" in (c.get("state") or {}) for c in status.get("containerStatuses") or [])
        if status.get("phase") == "Running" and not backing_off and get_condition(status, "Ready") is not None \
                and get_condition(status, "Ready").get("status") != "True":  # type: ignore[union-attr]
            running_since = min((parse_time(((c.get("state") or {}).get("running") or {}).get("startedAt")) or time.time())
                                for c in status.get("containerStatuses") or [{}])
            remaining = running_since + _readiness_delay(pod) - time.time()
            if remaining > 0:
                self.queue.add_after(key, remaining)
                return
            ip = status.get("podIP") or self._pod_ip(key, node)
            await self._patch_status(pod, self._running_status(pod, node, ip or "", ready=True))
            return
        if status.get("phase") == "Running":
            await self._run(key, pod, node)

    async def _run(self, key: str, pod: dict, node: dict) -> None:
        """A running pod whose run time is known: its containers exit when it is up, and the pod
        ends or its containers restart (restartPolicy), each step on a timer."""
        known = run_seconds(pod)
        if known is None:
            return
        seconds, code = known
        status = pod.get("status") or {}
        uid = meta(pod)["uid"]
        statuses = status.get("containerStatuses") or []
        waiting = [c for c in statuses if ((c.get("state") or {}).get("waiting") or {}).get("reason") == "CrashLoopBackOff"]
        if waiting:  # back-off over? the containers run again
            finished = max(parse_time(((c.get("lastState") or {}).get("terminated") or {}).get("finishedAt")) or 0.0 for c in waiting)
            remaining = finished + self._backoff(max(int(c.get("restartCount") or 0) for c in waiting)) - time.time()
            if remaining > 0.001:
                self.queue.add_after(key, remaining)
                return
            stamp = now()
            restarted = [{**c, "state": {"running": {"startedAt": stamp}}, "ready": True, "started": True} if c in waiting else c
                         for c in statuses]
            await self._patch_status(pod, {"containerStatuses": restarted,
                                           "conditions": _ready_conditions(status, all(c.get("ready") for c in restarted))})
            self.running[uid] = time.monotonic()
            self.queue.add_after(key, max(seconds, 0.001))
            return
        started = self.running.get(uid)
        if started is not None:
            remaining = started + seconds - time.monotonic()
        else:  # after a restart of this process: the stored startedAt (whole seconds)
            since = max((parse_time(((c.get("state") or {}).get("running") or {}).get("startedAt")) or time.time())
                        for c in statuses or [{}])
            remaining = since + seconds - time.time()
        if remaining > 0.001:
            self.queue.add_after(key, remaining)
            return
        await self._exit(key, pod, node, code)

    def _backoff(self, restarts: int) -> float:
        return min(max(self.delay, 0.05) * (2 ** max(restarts - 1, 0)), MAX_RESTART_BACKOFF)

    async def _exit(self, key: str, pod: dict, node: dict, code: int) -> None:
        """The containers exited with ``code``: the pod is Succeeded or Failed, or (OnFailure
        with a failure, Always) its containers wait out a back-off and restart in place."""
        status = pod.get("status") or {}
        policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
        uid = meta(pod)["uid"]
        stamp = now()
        restart = policy == "Always" or (policy == "OnFailure" and code != 0)
        reason = "Completed" if code == 0 else "Error"
        host = meta(node)["name"]
        out = []
        for c in status.get("containerStatuses") or []:
            terminated: dict[str, Any] = {"exitCode": code, "reason": reason, "finishedAt": stamp,
                                          "startedAt": ((c.get("state") or {}).get("running") or {}).get("startedAt", stamp)}
            if c.get("containerID"):
                terminated["containerID"] = c["containerID"]
            if restart:
                restarts = int(c.get("restartCount") or 0) + 1
                msg = f"back-off {_go_seconds(self._backoff(restarts))} restarting failed container={c.get('name')} pod={meta(pod)['name']}_{meta(pod)['namespace']}({uid})"
                out.append({**c, "ready": False, "started": False, "restartCount": restarts,
                            "lastState": {"terminated": terminated},
                            "state": {"waiting": {"reason": "CrashLoopBackOff", "message": msg}}})
                self.recorder.event(pod, "Warning", "BackOff", f"Back-off restarting failed container {c.get('name')} in pod "
                                    f"{meta(pod)['name']}_{meta(pod)['namespace']}({uid})", component=COMPONENT, host=host)
            else:
                out.append({**c, "ready": False, "started": False, "state": {"terminated": terminated}})
        self.running.pop(uid, None)
        if restart:
            await self._patch_status(pod, {"containerStatuses": out, "conditions": _ready_conditions(status, False)})
            self.queue.add_after(key, self._backoff(max(int(c.get("restartCount") or 0) for c in out)))
            return
        phase = "Succeeded" if code == 0 else "Failed"
        why = "PodCompleted" if code == 0 else "PodFailed"
        conditions = [{**c, "status": "False", "reason": why, "lastTransitionTime": stamp}
                      if c.get("type") in ("Ready", "ContainersReady") else
                      {**c, "status": "False", "lastTransitionTime": stamp} if c.get("type") == "PodReadyToStartContainers" else c
                      for c in status.get("conditions") or []]
        await self._patch_status(pod, {"phase": phase, "containerStatuses": out, "conditions": conditions})

    async def _stop(self, key: str, pod: dict) -> None:
        """A Pod being deleted: its containers stop (as fast as the simulated runtime goes, within
        the grace period), its status says so, then the kubelet removes it (DELETE with grace
        period 0, guarded by its uid), as the real kubelet's status manager does."""
        uid = meta(pod)["uid"]
        stopping = self.stopping.setdefault(uid, time.monotonic())
        remaining = stopping + min(self.delay, float(meta(pod).get("deletionGracePeriodSeconds") or 0)) - time.monotonic()
        if remaining > 0.001:
            self.queue.add_after(key, remaining)
            return
        status = pod.get("status") or {}
        if any("terminated" not in (c.get("state") or {}) for c in status.get("containerStatuses") or []):
            finished = now()
            stopped = [{**c, "ready": False, "started": False,
                        "state": {"terminated": {"exitCode": 0, "reason": "Completed", "finishedAt": finished,
                                                 "startedAt": ((c.get("state") or {}).get("running") or {}).get("startedAt", finished),
                                                 **({"containerID": c["containerID"]} if c.get("containerID") else {})}}}
                       for c in status.get("containerStatuses") or []]
            conditions = [{**c, "status": "False", "lastTransitionTime": finished}
                          if c.get("type") in ("Ready", "ContainersReady") and c.get("status") == "True" else c
                          for c in status.get("conditions") or []]
            await self._patch_status(pod, {"containerStatuses": stopped, "conditions": conditions})
        try:
            await self.kube.request("DELETE", api_path("v1", "pods", meta(pod)["namespace"], meta(pod)["name"]),
                                    body={"gracePeriodSeconds": 0, "preconditions": {"uid": uid}})
        except ApiError as err:
            if err.status not in (404, 409):
                raise
        self.stopping.pop(uid, None)

    async def _start(self, key: str, pod: dict, node: dict) -> None:
        """The containers run: podIP, running container statuses, Ready (unless a probe delays it)."""
        ip = self._pod_ip(key, node)
        if ip is None:
            log.warning("no pod IP left on node %s for %s", meta(node)["name"], key)
            self.queue.add_after(key, 5.0)
            return
        ready_after = _readiness_delay(pod)
        new_status = self._running_status(pod, node, ip, ready=ready_after <= 0)
        try:
            await self._patch_status(pod, new_status)
        except ApiError:
            self.release_ip(key)
            raise
        self.creating.pop(meta(pod)["uid"], None)
        host = meta(node)["name"]
        known = run_seconds(pod)
        if known is not None:
            self.running[meta(pod)["uid"]] = time.monotonic()
            self.queue.add_after(key, max(known[0], 0.001))
        for c in (pod.get("spec") or {}).get("containers") or []:
            cname = c.get("name")
            self.recorder.event(pod, "Normal", "Pulled", f'Container image "{c.get("image")}" already present on machine',
                                component=COMPONENT, host=host)
            self.recorder.event(pod, "Normal", "Created", f"Created container: {cname}", component=COMPONENT, host=host)
            self.recorder.event(pod, "Normal", "Started", f"Started container {cname}", component=COMPONENT, host=host)
        if ready_after > 0:
            self.queue.add_after(key, ready_after)

    def _pod_ip(self, key: str, node: dict) -> str | None:
        name = meta(node)["name"]
        got = self.pod_ips.get(key)
        if got is not None and got[0] == name:
            return got[1]
        ipam = self._ipam(name)
        if ipam is None:
            return None
        ip = ipam.allocate()
        if ip is not None:
            self.pod_ips[key] = (name, ip)
        return ip

    def _admit(self, pod: dict, node: dict) -> dict | None:
        """The kubelet's resource admission: a pod that does not fit fails (OutOf<resource>)."""
        name = meta(node)["name"]
        key = object_key(pod)
        alloc = node_allocatable(node)
        used: dict[str, int] = {"pods": 0}
        for other in self.pods.by_index("node", name):
            if object_key(other) == key or pod_is_terminal(other) or not (other.get("status") or {}).get("startTime"):
                continue
            used["pods"] += 1
            for k, v in pod_resource_requests(other).items():
                used[k] = used.get(k, 0) + v
        req = {"pods": 1, **pod_resource_requests(pod)}
        for res in ("pods", "cpu", "memory", *sorted(k for k in req if k not in ("pods", "cpu", "memory"))):
            want = req.get(res, 0)
            if want and used.get(res, 0) + want > alloc.get(res, 0):
                msg = (f"Pod was rejected: Node didn't have enough resource: {res}, requested: {want}, "
                       f"used: {used.get(res, 0)}, capacity: {alloc.get(res, 0)}")
                self.recorder.event(pod, "Warning", f"OutOf{res}", msg, component=COMPONENT, host=name)
                return {"phase": "Failed", "reason": f"OutOf{res}", "message": msg, "startTime": now()}
        return None

    def _creating_status(self, pod: dict, node: dict) -> dict:
        spec = pod.get("spec") or {}
        old = pod.get("status") or {}
        containers = spec.get("containers") or []
        inits = spec.get("initContainers") or []
        names = " ".join(c.get("name", "") for c in containers)
        host_ip = _node_ip(node)
        conditions = [
            _cond("PodReadyToStartContainers", "False", old),
            _cond("Initialized", "False", old, "ContainersNotInitialized",
                  f"containers with incomplete status: [{' '.join(c.get('name', '') for c in inits)}]") if inits
            else _cond("Initialized", "True", old),
            _cond("Ready", "False", old, "ContainersNotReady", f"containers with unready status: [{names}]"),
            _cond("ContainersReady", "False", old, "ContainersNotReady", f"containers with unready status: [{names}]"),
            _cond("PodScheduled", "True", old),
        ]
        status: dict[str, Any] = {
            "phase": "Pending", "conditions": conditions, "hostIP": host_ip, "hostIPs": [{"ip": host_ip}],
            "startTime": now(),
            "containerStatuses": [_container_status(c, {"waiting": {"reason": "PodInitializing" if inits else "ContainerCreating"}})
                                  for c in containers],
        }
        if inits:
            status["initContainerStatuses"] = [_container_status(c, {"waiting": {"reason": "PodInitializing"}}) for c in inits]
        return status

    def _running_status(self, pod: dict, node: dict, ip: str, *, ready: bool) -> dict:
        spec = pod.get("spec") or {}
        old = pod.get("status") or {}
        uid = meta(pod)["uid"]
        stamp = now()
        started_at = {}
        for cs in old.get("containerStatuses") or []:
            running = (cs.get("state") or {}).get("running")
            if running:
                started_at[cs.get("name")] = running.get("startedAt")
        containers = spec.get("containers") or []
        names = " ".join(c.get("name", "") for c in containers)
        conditions = [
            _cond("PodReadyToStartContainers", "True", old),
            _cond("Initialized", "True", old),
            _cond("Ready", "True", old) if ready else _cond("Ready", "False", old, "ContainersNotReady", f"containers with unready status: [{names}]"),
            _cond("ContainersReady", "True", old) if ready else _cond("ContainersReady", "False", old, "ContainersNotReady", f"containers with unready status: [{names}]"),
            _cond("PodScheduled", "True", old),
        ]
        host_ip = _node_ip(node)
        status: dict[str, Any] = {
            "phase": "Running", "conditions": conditions, "hostIP": host_ip, "hostIPs": [{"ip": host_ip}],
            "podIP": ip, "podIPs": [{"ip": ip}], "startTime": old.get("startTime") or stamp,
            "containerStatuses": [
                _container_status(c, {"running": {"startedAt": started_at.get(c.get("name")) or stamp}}, ready=ready,
                                  started=True, cid=container_id(uid, c.get("name", "")))
                for c in containers],
        }
        inits = spec.get("initContainers") or []
        if inits:
            status["initContainerStatuses"] = [
                _container_status(c, {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": stamp, "finishedAt": stamp,
                                                     "containerID": container_id(uid, c.get("name", ""))}},
                                  cid=container_id(uid, c.get("name", "")))
                for c in inits]
        return status

    async def _patch_status(self, pod: dict, status: dict) -> None:
        m = meta(pod)
        try:
            await self.kube.patch(api_path("v1", "pods", m["namespace"], m["name"], "status"), {"status": status},
                                  MERGE_PATCH)
        except ApiError as err:
            if err.status != 404:
                raise

    # -- nodes ----------------------------------------------------------------------------------

    async def sync_node(self, name: str) -> None:
        node = self.nodes.get(name)
        if node is None:
            return
        spec, status = node.get("spec") or {}, node.get("status") or {}
        if not spec.get("podCIDR"):
            pods = int((status.get("capacity") or {}).get("pods") or 110)
            taken = {n.get("spec", {}).get("podCIDR") for n in self.nodes.list()}
            i = 0
            while pod_cidr(i, cidr_prefix(pods)) in taken:
                i += 1
            cidr = pod_cidr(i, cidr_prefix(pods))
            await self.kube.patch(api_path("v1", "nodes", name=name), {"spec": {"podCIDR": cidr, "podCIDRs": [cidr]}},
                                  MERGE_PATCH)
        if get_condition(status, "Ready") is None:
            patch: dict[str, Any] = {"conditions": node_conditions(now()), "nodeInfo": status.get("nodeInfo") or node_info(name),
                                     "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}}}
            if not status.get("addresses"):
                taken_ips = {a.get("address") for n in self.nodes.list() for a in (n.get("status") or {}).get("addresses") or []}
                ip = next(str(NODE_NETWORK.network_address + i) for i in range(2, 65000)
                          if str(NODE_NETWORK.network_address + i) not in taken_ips)
                patch["addresses"] = [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}]
            if not status.get("capacity"):
                capacity = {"cpu": "4", "memory": "16Gi", "pods": "110", "ephemeral-storage": "100Gi"}
                patch["capacity"] = capacity
                patch["allocatable"] = status.get("allocatable") or capacity
            await self.kube.patch(api_path("v1", "nodes", name=name, subresource="status"), {"status": patch}, MERGE_PATCH)
            self.recorder.event({**node, "metadata": {**meta(node), "namespace": ""}}, "Normal", "NodeReady",
                                f"Node {name} status is now: NodeReady", component=COMPONENT, host=name)

    async def heartbeat(self) -> None:
        """Renew every node's lease each interval (one wake-up for all); report node status every 5 min."""
        loop = asyncio.get_running_loop()
        while True:
            names = [meta(n)["name"] for n in self.nodes.list()]
            results = await asyncio.gather(*(self._renew_lease(n) for n in names), return_exceptions=True)
            for name, r in zip(names, results, strict=True):
                if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError) and self.alive():
                    log.info("renewing the lease of node %s failed: %s", name, r)
            if loop.time() - self._last_status_report >= NODE_STATUS_REPORT:
                self._last_status_report = loop.time()
                await asyncio.gather(*(self._report_status(n) for n in names), return_exceptions=True)
            await asyncio.sleep(self.heartbeat_interval)

    async def _renew_lease(self, name: str) -> None:
        node = self.nodes.get(name)
        if node is None:
            return
        lease = self.leases.get(name)
        if lease is not None:
            lease["spec"]["renewTime"] = now_micro()
            try:
                self.leases[name] = await self.kube.replace(_lease_path(name), lease)
                return
            except ApiError as err:
                if err.status not in (404, 409):
                    raise
                self.leases.pop(name, None)
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": name, "namespace": LEASE_NAMESPACE,
                             "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name, "uid": meta(node)["uid"]}]},
                "spec": {"holderIdentity": name, "leaseDurationSeconds": LEASE_DURATION, "renewTime": now_micro()}}
        try:
            self.leases[name] = await self.kube.create(_lease_path(), body)
        except ApiError as err:
            if err.status != 409:
                raise
            cur = await self.kube.request("GET", _lease_path(name))
            cur["spec"] = body["spec"]
            self.leases[name] = await self.kube.replace(_lease_path(name), cur)

    async def _report_status(self, name: str) -> None:
        node = self.nodes.get(name)
        if node is None or get_condition(node.get("status"), "Ready") is None:
            return
        transitions = {c.get("type"): c.get("lastTransitionTime") for c in (node.get("status") or {}).get("conditions") or []}
        await self.kube.patch(api_path("v1", "nodes", name=name, subresource="status"),
                              {"status": {"conditions": node_conditions(now(), transitions)}}, MERGE_PATCH)

    async def delete_pods_on(self, node_name: str) -> None:
        """Pod GC: pods bound to a node that no longer exists are deleted."""
        for pod in list(self.pods.by_index("node", node_name)):
            m = meta(pod)
            try:
                await self.kube.request("DELETE", api_path("v1", "pods", m["namespace"], m["name"]),
                                        body={"gracePeriodSeconds": 0})
            except ApiError as err:
                if err.status != 404:
                    log.info("deleting %s/%s of deleted node %s failed: %s", m["namespace"], m["name"], node_name, err)


def _node_ip(node: dict) -> str:
    for a in (node.get("status") or {}).get("addresses") or []:
        if a.get("type") == "InternalIP":
            return str(a.get("address"))
    return ""


def _go_seconds(s: float) -> str:
    """A back-off as Go prints a Duration in the kubelet's message ("10s", "1m20s", "500ms")."""
    if s < 1:
        return f"{int(s * 1000)}ms"
    m, sec = divmod(int(s), 60)
    return f"{m}m{sec}s" if m else f"{sec}s"


def _ready_conditions(status: dict, ready: bool) -> list[dict]:
    """The pod's conditions with Ready and ContainersReady set to ``ready``."""
    names = " ".join(str(c.get("name", "")) for c in status.get("containerStatuses") or [])
    out = []
    for c in status.get("conditions") or []:
        if c.get("type") in ("Ready", "ContainersReady"):
            c = _cond(str(c["type"]), "True", status) if ready else \
                _cond(str(c["type"]), "False", status, "ContainersNotReady", f"containers with unready status: [{names}]")
        out.append(c)
    return out


def _readiness_delay(pod: dict) -> float:
    delay = 0.0
    for c in (pod.get("spec") or {}).get("containers") or []:
        probe = c.get("readinessProbe")
        if isinstance(probe, dict):
            delay = max(delay, float(probe.get("initialDelaySeconds") or 0))
    return delay


def _container_status(c: dict, state: dict, *, ready: bool = False, started: bool = False, cid: str = "") -> dict:
    image = str(c.get("image") or "")
    out: dict[str, Any] = {"name": c.get("name"), "image": normalize_image(image) if image else image,
                           "imageID": image_id(image) if cid else "", "ready": ready, "restartCount": 0,
                           "started": started, "state": state, "lastState": {}}
    if cid:
        out["containerID"] = cid
    return out


class _PodHandler(EventHandler):
    def __init__(self, k: Kubelet) -> None:
        self.k = k

    def on_add(self, pod: dict) -> None:
        if (pod.get("spec") or {}).get("nodeName"):
            self.k.queue.add(object_key(pod))

    def on_update(self, old: dict, new: dict) -> None:
        if not (new.get("spec") or {}).get("nodeName"):
            return
        if meta(new).get("deletionTimestamp") and not meta(old).get("deletionTimestamp"):
            self.k.queue.add(object_key(new))
            return
        if pod_is_terminal(new):
            self.k.release_ip(object_key(new))
            return
        if not (old.get("spec") or {}).get("nodeName") or (new.get("status") or {}).get("phase") != \
                (old.get("status") or {}).get("phase") or not (new.get("status") or {}).get("startTime"):
            self.k.queue.add(object_key(new))

    def on_delete(self, pod: dict) -> None:
        key = object_key(pod)
        self.k.release_ip(key)
        self.k.creating.pop(meta(pod).get("uid", ""), None)
        self.k.stopping.pop(meta(pod).get("uid", ""), None)
        self.k.running.pop(meta(pod).get("uid", ""), None)


class _NodeHandler(EventHandler):
    def __init__(self, k: Kubelet) -> None:
        self.k = k

    def on_add(self, node: dict) -> None:
        name = meta(node)["name"]
        self.k.node_queue.add(name)
        for pod in self.k.pods.by_index("node", name):  # pods bound before their node registered
            self.k.queue.add(object_key(pod))

    def on_update(self, old: dict, new: dict) -> None:
        if not (new.get("spec") or {}).get("podCIDR") or get_condition(new.get("status"), "Ready") is None:
            self.k.node_queue.add(meta(new)["name"])

    def on_delete(self, node: dict) -> None:
        name = meta(node)["name"]
        self.k.ips.pop(name, None)
        self.k.leases.pop(name, None)
        task = asyncio.get_running_loop().create_task(self.k.delete_pods_on(name))
        _BACKGROUND.add(task)
        task.add_done_callback(_BACKGROUND.discard)


_BACKGROUND: set[asyncio.Task] = set()
