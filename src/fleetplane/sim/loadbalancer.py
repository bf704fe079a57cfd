"""A simulated load balancer: the cloud controller manager's Service controller
(``k8s.io/cloud-provider/controllers/service``) over a pool of addresses, in the spirit of MetalLB.

Every Service of ``type: LoadBalancer`` (without a ``loadBalancerClass``: those belong to another
implementation) gets the finalizer ``service.kubernetes.io/load-balancer-cleanup`` and then
``status.loadBalancer.ingress: [{ip, ipMode: VIP}]``: the ``spec.loadBalancerIP`` it asks for if
that is in the pool and free, else the lowest free address of the pool (``--load-balancer-pool``,
by default ``172.18.<n>.0/24`` with ``n`` derived from the cluster's name, so two simulated
clusters hand out different addresses). Events ``EnsuringLoadBalancer``/``EnsuredLoadBalancer``
as kube's. When the Service is deleted or stops being a LoadBalancer the address goes back to
the pool, the ingress is cleared and the finalizer removed (``DeletingLoadBalancer``,
``DeletedLoadBalancer``). A pool that is full is reported with a ``SyncLoadBalancerFailed``
Warning and retried.
"""

from __future__ import annotations

import ipaddress
import logging
import zlib
from typing import Any

from ..kube.client import MERGE_PATCH, ApiError, Client, api_path
from ..kube.controller import run_workers
from ..kube.events import EventRecorder
from ..kube.informer import EnqueueKey, Informer, object_key
from ..kube.workqueue import WorkQueue
from .util import meta

log = logging.getLogger(__name__)

COMPONENT = "service-controller"
FINALIZER = "service.kubernetes.io/load-balancer-cleanup"


def default_pool(cluster_name: str) -> str:
    """``172.18.<n>.0/24``, ``n`` in 1..254 from the cluster's name (distinct for most names)."""
    return f"172.18.{zlib.crc32(cluster_name.encode()) % 254 + 1}.0/24"


def _wants_lb(svc: dict[str, Any]) -> bool:
    spec = svc.get("spec") or {}
    return spec.get("type") == "LoadBalancer" and not spec.get("loadBalancerClass") \
        and not meta(svc).get("deletionTimestamp")


def _ingress_ips(svc: dict[str, Any]) -> list[str]:
    lb = (svc.get("status") or {}).get("loadBalancer") or {}
    return [str(i["ip"]) for i in lb.get("ingress") or [] if isinstance(i, dict) and i.get("ip")]


class LoadBalancerController:
    def __init__(self, kube: Client, services: Informer, recorder: EventRecorder, pool: str, workers: int = 2) -> None:
        self.kube = kube
        self.services = services
        self.recorder = recorder
        self.pool = ipaddress.ip_network(pool, strict=False)
        self.workers = workers
        self.queue = WorkQueue("loadbalancer", base=0.05, cap=30.0)
        #: service key -> its address (what we handed out, also before the informer shows it)
        self.assigned: dict[str, str] = {}
        services.add_handler(EnqueueKey(self.queue))

    async def run(self) -> None:
        await run_workers(self.queue, self.sync, self.workers)

    def _taken(self, key: str) -> set[str]:
        taken = {ip for k, ip in self.assigned.items() if k != key}
        for svc in self.services.list():
            if object_key(svc) != key and (svc.get("spec") or {}).get("type") == "LoadBalancer":
                taken.update(_ingress_ips(svc))
        return taken

    def _pick(self, svc: dict[str, Any], key: str) -> str | None:
        taken = self._taken(key)
        for ip in _ingress_ips(svc):  # keep what it has (a restart of the controller)
            if ipaddress.ip_address(ip) in self.pool and ip not in taken:
                return ip
        asked = (svc.get("spec") or {}).get("loadBalancerIP")
        if asked:
            try:
                if ipaddress.ip_address(asked) in self.pool and asked not in taken:
                    return str(asked)
            except ValueError:
                pass
            return None
        return next((str(h) for h in self.pool.hosts() if str(h) not in taken), None)

    async def sync(self, key: str) -> None:
        svc = self.services.get(key)
        if svc is None:
            self.assigned.pop(key, None)
            return
        ns, name = meta(svc)["namespace"], meta(svc)["name"]
        path = api_path("v1", "services", ns, name)
        finalizers = list(meta(svc).get("finalizers") or [])
        if not _wants_lb(svc):
            if FINALIZER in finalizers or _ingress_ips(svc):
                await self._release(svc, path, finalizers)
            self.assigned.pop(key, None)
            return
        if FINALIZER not in finalizers:
            self.recorder.event(svc, "Normal", "EnsuringLoadBalancer", "Ensuring load balancer", component=COMPONENT)
            await self.kube.patch(path, {"metadata": {"finalizers": [*finalizers, FINALIZER],
                                                      "resourceVersion": meta(svc)["resourceVersion"]}}, MERGE_PATCH)
            return  # the informer brings the new version back
        ip = self._pick(svc, key)
        if ip is None:
            asked = (svc.get("spec") or {}).get("loadBalancerIP")
            why = f"requested address {asked} is not available in pool {self.pool}" if asked else f"pool {self.pool} is full"
            self.recorder.event(svc, "Warning", "SyncLoadBalancerFailed", f"Error syncing load balancer: {why}",
                                component=COMPONENT)
            raise RuntimeError(f"service {key}: {why}")
        self.assigned[key] = ip
        if _ingress_ips(svc) == [ip]:
            return
        await self.kube.patch(path + "/status", {"metadata": {"resourceVersion": meta(svc)["resourceVersion"]},
                                                 "status": {"loadBalancer": {"ingress": [{"ip": ip, "ipMode": "VIP"}]}}},
                              MERGE_PATCH)
        self.recorder.event(svc, "Normal", "EnsuredLoadBalancer", "Ensured load balancer", component=COMPONENT)

    async def _release(self, svc: dict[str, Any], path: str, finalizers: list[str]) -> None:
        self.recorder.event(svc, "Normal", "DeletingLoadBalancer", "Deleting load balancer", component=COMPONENT)
        try:
            if _ingress_ips(svc):
                svc = await self.kube.patch(path + "/status", {"metadata": {"resourceVersion": meta(svc)["resourceVersion"]},
                                                               "status": {"loadBalancer": {"ingress": None}}}, MERGE_PATCH)
            if FINALIZER in finalizers:
                await self.kube.patch(path, {"metadata": {"finalizers": [f for f in finalizers if f != FINALIZER] or None,
                                                          "resourceVersion": meta(svc)["resourceVersion"]}}, MERGE_PATCH)
        except ApiError as err:
            if err.status == 404:
                return
            raise
        self.recorder.event(svc, "Normal", "DeletedLoadBalancer", "Deleted load balancer", component=COMPONENT)

