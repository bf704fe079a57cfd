"""The EndpointSlice controller (kube-controller-manager's ``pkg/controller/endpointslice``), simplified.

For every Service with a selector (ExternalName excepted) it keeps one EndpointSlice
(``generateName: <service>-``, addressType IPv4) listing the active Pods of the Service's namespace
that match the selector and have an IP: one endpoint per Pod (address = pod IP, conditions
ready/serving/terminating from the Pod's Ready condition, as kube: a Pod that is not Ready is
listed with ``ready: false``), its node and a targetRef. Ports come from the Service's ports, a
targetPort number as it is, a name resolved to the matching container port of the first Pod that
has it (kube makes one slice per distinct port mapping; here every Pod shares the first mapping).
The slice carries the Service's labels plus ``kubernetes.io/service-name`` and
``endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io``, and a controller
ownerReference to the Service (garbage collection removes it with the Service). Services without
a selector are left alone (their slices are the user's). Not done: the 100-endpoint split into
several slices, topology hints, dual stack, ``publishNotReadyAddresses``.
"""

from __future__ import annotations

import logging
from typing import Any

from ..apimachinery.labels import selector_matches
from ..kube.client import ApiError, Client, api_path
from ..kube.controller import run_workers
from ..kube.informer import EnqueueKey, EventHandler, Informer, object_key
from ..kube.workqueue import WorkQueue
from .util import meta, owner_ref, pod_is_active, pod_is_ready

log = logging.getLogger(__name__)

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
MANAGED_BY = "endpointslice-controller.k8s.io"
SLICE_PATH = "/apis/discovery.k8s.io/v1/endpointslices"


def slice_indexers() -> dict[str, Any]:
    """Our slices by the ``namespace/name`` of their Service."""

    def by_service(s: dict[str, Any]) -> list[str]:
        labels = meta(s).get("labels") or {}
        if labels.get(MANAGED_BY_LABEL) != MANAGED_BY or not labels.get(SERVICE_NAME_LABEL):
            return []
        return [f"{meta(s).get('namespace')}/{labels[SERVICE_NAME_LABEL]}"]

    return {"service": by_service}


def _selects(service: dict[str, Any], labels: dict[str, str] | None) -> bool:
    selector = (service.get("spec") or {}).get("selector")
    if not selector:
        return False
    return selector_matches({"matchLabels": selector}, labels or {})


def _target_port(port: dict[str, Any], pods: list[dict[str, Any]]) -> int | None:
    """podutil.FindPort: a number as it is, a name as the first Pod's container port of that name."""
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int):
        return target
    for pod in pods:
        for c in (pod.get("spec") or {}).get("containers") or []:
            for cp in c.get("ports") or []:
                if cp.get("name") == target and (cp.get("protocol") or "TCP") == (port.get("protocol") or "TCP"):
                    return int(cp["containerPort"])
    return None


def desired_slice(service: dict[str, Any], pods: list[dict[str, Any]]) -> dict[str, Any]:
    """The EndpointSlice the controller wants for ``service`` given its matching Pods."""
    m = meta(service)
    ports = []
    for p in (service.get("spec") or {}).get("ports") or []:
        number = _target_port(p, pods)
        if number is not None:
            ports.append({"name": p.get("name") or "", "port": number, "protocol": p.get("protocol") or "TCP"})
    endpoints = []
    for pod in sorted(pods, key=lambda p: meta(p).get("name") or ""):
        ip = (pod.get("status") or {}).get("podIP")
        if not ip:
            continue
        ready = pod_is_ready(pod) and not meta(pod).get("deletionTimestamp")
        ep: dict[str, Any] = {
            "addresses": [ip],
            "conditions": {"ready": ready, "serving": pod_is_ready(pod), "terminating": bool(meta(pod).get("deletionTimestamp"))},
            "targetRef": {"kind": "Pod", "namespace": m.get("namespace"), "name": meta(pod).get("name"),
                          "uid": meta(pod).get("uid")},
        }
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            ep["nodeName"] = node
        endpoints.append(ep)
    labels = {k: v for k, v in (m.get("labels") or {}).items() if k not in (SERVICE_NAME_LABEL, MANAGED_BY_LABEL)}
    labels |= {SERVICE_NAME_LABEL: m["name"], MANAGED_BY_LABEL: MANAGED_BY}
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"generateName": m["name"] + "-", "namespace": m.get("namespace"), "labels": labels,
                         "ownerReferences": [owner_ref({"apiVersion": "v1", "kind": "Service", **service})]},
            "addressType": "IPv4", "endpoints": endpoints, "ports": ports}


def _same(have: dict[str, Any], want: dict[str, Any]) -> bool:
    return (have.get("endpoints") or []) == want["endpoints"] and (have.get("ports") or []) == want["ports"] \
        and (meta(have).get("labels") or {}) == want["metadata"]["labels"] and have.get("addressType") == want["addressType"]


class EndpointSliceController:
    def __init__(self, kube: Client, services: Informer, pods: Informer, slices: Informer, workers: int = 2) -> None:
        self.kube = kube
        self.services = services
        self.pods = pods
        self.slices = slices
        self.workers = workers
        self.queue = WorkQueue("endpointslice", base=0.005, cap=30.0)
        services.add_handler(EnqueueKey(self.queue))
        pods.add_handler(_PodHandler(self))
        slices.add_handler(_SliceHandler(self))

    async def run(self) -> None:
        await run_workers(self.queue, self.sync, self.workers)

    def enqueue_for_pod(self, pod: dict[str, Any] | None, other: dict[str, Any] | None = None) -> None:
        for p in (pod, other):
            if p is None:
                continue
            ns = meta(p).get("namespace") or ""
            for svc in self.services.list(ns):
                if _selects(svc, meta(p).get("labels")):
                    self.queue.add(object_key(svc))

    async def sync(self, key: str) -> None:
        service = self.services.get(key)
        ours = self.slices.by_index("service", key)
        spec = (service or {}).get("spec") or {}
        if service is None or not spec.get("selector") or spec.get("type") == "ExternalName" \
                or meta(service).get("deletionTimestamp"):
            for s in ours:
                await self._delete(s)
            return
        ns = meta(service)["namespace"]
        pods = [p for p in self.pods.list(ns) if pod_is_active(p) and _selects(service, meta(p).get("labels"))]
        want = desired_slice(service, pods)
        mine = [s for s in ours if any(r.get("uid") == meta(service).get("uid") for r in meta(s).get("ownerReferences") or [])]
        for s in ours:
            if s not in mine[:1]:
                await self._delete(s)
        if not mine:
            await self.kube.create(api_path("discovery.k8s.io/v1", "endpointslices", ns), want)
            return
        have = mine[0]
        if _same(have, want):
            return
        body = dict(want)
        body["metadata"] = {**meta(have), "labels": want["metadata"]["labels"]}
        await self.kube.replace(api_path("discovery.k8s.io/v1", "endpointslices", ns, meta(have)["name"]), body)

    async def _delete(self, s: dict[str, Any]) -> None:
        try:
            await self.kube.delete(api_path("discovery.k8s.io/v1", "endpointslices", meta(s)["namespace"], meta(s)["name"]),
                                   uid=meta(s).get("uid"))
        except ApiError as err:
            if err.status not in (404, 409):
                raise


class _PodHandler(EventHandler):
    def __init__(self, c: EndpointSliceController) -> None:
        self.c = c

    def on_add(self, obj: dict[str, Any]) -> None:
        self.c.enqueue_for_pod(obj)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.c.enqueue_for_pod(new, old if meta(old).get("labels") != meta(new).get("labels") else None)

    def on_delete(self, obj: dict[str, Any]) -> None:
        self.c.enqueue_for_pod(obj)


class _SliceHandler(EventHandler):
    """A slice changed or deleted behind our back is put back."""

    def __init__(self, c: EndpointSliceController) -> None:
        self.c = c

    def _enqueue(self, obj: dict[str, Any]) -> None:
        for key in slice_indexers()["service"](obj):
            self.c.queue.add(key)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self._enqueue(new)

    def on_delete(self, obj: dict[str, Any]) -> None:
        self._enqueue(obj)
