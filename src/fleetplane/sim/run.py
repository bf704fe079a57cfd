"""``fleetplane cluster simulate``: the hub's server in "physical" mode plus its controllers.

The server serves the hub's types and the workload types of :mod:`fleetplane.apis` (Deployments,
ReplicaSets, DaemonSets, StatefulSets, Pods, Nodes, PersistentVolumeClaims) and reports
``gitVersion: v1.32.0+fleetplane-sim``. Once it is ready, the controllers start in the same process and talk to it only through its HTTP API with ``<data-dir>/admin.kubeconfig``,
like kube-controller-manager, kube-scheduler and the kubelets of a real cluster: one shared
informer per resource (Deployments, ReplicaSets, DaemonSets, StatefulSets, HorizontalPodAutoscalers,
Pods, Nodes, PersistentVolumeClaims) feeds the Deployment, ReplicaSet, DaemonSet, StatefulSet and
HPA controllers, the volume provisioner, the scheduler and the simulated kubelets. They act on the ``root``
logical cluster, which is where requests without a ``/clusters/<name>`` prefix go.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import yaml

from ..apis import workload_types
from ..hub import Contributions, Controller, ControllerContext, HubConfig, run_hub
from ..kube.client import Client
from ..kube.controller import stop_tasks
from ..kube.events import EventRecorder
from ..kube.informer import Informer, object_key, wait_synced
from ..kube.kubeconfig import ApiTarget
from .daemonset import DaemonSetController
from .deployment import DeploymentController
from .hpa import HPAController
from .kubelet import Kubelet
from .nodes import NodeShape, ensure_nodes
from .replicaset import ReplicaSetController, pod_indexers, rs_indexers
from .scheduler import Scheduler
from .statefulset import StatefulSetController
from .streams import add_pod_streams
from .volumes import VolumeProvisioner

log = logging.getLogger("fleetplane.sim")

GIT_VERSION = "v1.32.0+fleetplane-sim"


@dataclass
class SimOptions:
    name: str
    data_dir: Path = Path(".fleetplane-sim")
    bind: str = "127.0.0.1"
    port: int = 6443
    tls: bool = True
    nodes: int = 3
    node_cpu: str = "4"
    node_memory: str = "16Gi"
    node_pods: int = 110
    labels: dict[str, str] = field(default_factory=dict)
    kubelet_delay: float = 1.0
    heartbeat_interval: float = 10.0
    #: as kube-apiserver's flag: e.g. ServiceAccount and DefaultTolerationSeconds, for a cluster whose
    #: Pods should be stored as sent (kube's own test/cmd runs its apiserver so)
    disable_admission_plugins: tuple[str, ...] = ()
    #: the HPA controller's --horizontal-pod-autoscaler-sync-period and
    #: --horizontal-pod-autoscaler-downscale-stabilization (kube: 15 s, 5 min)
    hpa_sync_period: float = 15.0
    hpa_downscale_stabilization: float = 300.0


def server_config(sim: SimOptions) -> HubConfig:
    """The hub's server as a physical cluster: its own version string; no inventory plugin (the
    fleet's ClusterProfile API lives on the hub, not on member clusters)."""
    return HubConfig(data_dir=sim.data_dir, bind=sim.bind, port=sim.port, tls=sim.tls, git_version=GIT_VERSION,
                     disable_admission_plugins=sim.disable_admission_plugins)


@dataclass
class SimulatedClusterPlugin:
    """The workload types (Deployments, ReplicaSets, Pods, Nodes, ...) and the controllers that run them."""

    sim: SimOptions
    name: str = "sim"

    def contribute(self, hub: Contributions) -> None:
        types = workload_types()
        add_pod_streams(next(rt for rt in types if rt.kind == "Pod" and not rt.group))
        hub.types += types
        hub.controllers.append(Controller(f"simulated-cluster-{self.sim.name}", partial(controllers, self.sim)))


def write_cluster_kubeconfig(path: Path, name: str) -> None:
    """Name the kubeconfig's cluster, context and user after the simulated cluster, and point it at
    the server itself (no ``/clusters/root``), as a physical cluster's kubeconfig reads; so
    several simulated clusters' kubeconfigs merge without clashing."""
    cfg = yaml.safe_load(path.read_text())
    cluster = dict(cfg["clusters"][0]["cluster"])
    server = cluster["server"]
    if "/clusters/" in server:
        cluster["server"] = server.split("/clusters/", 1)[0]
    user = dict(cfg["users"][0]["user"])
    out = {"apiVersion": "v1", "kind": "Config",
           "clusters": [{"name": name, "cluster": cluster}],
           "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
           "current-context": name, "users": [{"name": name, "user": user}], "preferences": {}}
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump(out, f, sort_keys=False)
    os.replace(tmp, path)


class SimulatedCluster:
    """The controllers of one simulated cluster, wired to its API server."""

    def __init__(self, sim: SimOptions, kube: Client, alive: Callable[[], bool] = lambda: True) -> None:
        self.sim = sim
        self.kube = kube
        self.alive = alive

        def informer(path: str, name: str, indexers: dict | None = None) -> Informer:
            return Informer(kube, path, name=name, key=object_key, indexers=indexers, alive=alive, timeout_seconds=2700)

        self.pods = informer("/api/v1/pods", "pods", pod_indexers())
        self.replicasets = informer("/apis/apps/v1/replicasets", "replicasets", rs_indexers())
        self.deployments = informer("/apis/apps/v1/deployments", "deployments")
        self.nodes = informer("/api/v1/nodes", "nodes")
        self.daemonsets = informer("/apis/apps/v1/daemonsets", "daemonsets")
        self.statefulsets = informer("/apis/apps/v1/statefulsets", "statefulsets")
        self.claims = informer("/api/v1/persistentvolumeclaims", "persistentvolumeclaims")
        self.hpas = informer("/apis/autoscaling/v2/horizontalpodautoscalers", "horizontalpodautoscalers")
        #: per event: the component (kube-controller-manager, kubelet, ...) and host that report it
        self.recorder = EventRecorder(kube, senders=2)
        kcm = kube.as_manager("kube-controller-manager")
        self.deployment = DeploymentController(kcm, self.deployments, self.replicasets, self.pods, self.recorder)
        self.replicaset = ReplicaSetController(kcm, self.replicasets, self.pods, self.recorder)
        self.hpa = HPAController(kcm, self.hpas, self.pods, self.recorder, sync_period=sim.hpa_sync_period,
                                 downscale_stabilization=sim.hpa_downscale_stabilization)
        self.scheduler = Scheduler(kube.as_manager("kube-scheduler"), self.pods, self.nodes, self.recorder)
        self.kubelet = Kubelet(kube.as_manager("kubelet"), self.pods, self.nodes, self.recorder, delay=sim.kubelet_delay,
                               heartbeat_interval=sim.heartbeat_interval, alive=alive)
        self.daemonset = DaemonSetController(kcm, self.daemonsets, self.pods, self.nodes, self.recorder)
        self.statefulset = StatefulSetController(kcm, self.statefulsets, self.pods, self.claims, self.recorder)
        self.volumes = VolumeProvisioner(kcm, self.claims, self.pods, self.recorder)
        self.informers = [self.pods, self.replicasets, self.deployments, self.nodes, self.daemonsets, self.statefulsets,
                          self.claims, self.hpas]

    async def run(self) -> None:
        shape = NodeShape(cpu=self.sim.node_cpu, memory=self.sim.node_memory, pods=self.sim.node_pods,
                          labels=dict(self.sim.labels))
        await ensure_nodes(self.kube.as_manager("kubelet"), self.sim.name, self.sim.nodes, shape)
        tasks = [asyncio.create_task(i.run(), name=f"informer-{i.name}") for i in self.informers]
        tasks.append(asyncio.create_task(self.recorder.run(), name="events"))
        try:
            await wait_synced(self.informers)
            log.info("simulated cluster %s: controllers running (%d nodes)", self.sim.name, len(self.nodes.cache))
            tasks += [asyncio.create_task(c.run(), name=type(c).__name__)
                      for c in (self.deployment, self.replicaset, self.hpa, self.scheduler, self.kubelet, self.daemonset,
                                self.statefulset, self.volumes)]
            # everything runs until cancelled; an informer returns when the server is going away
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for t in done:
                t.result()
        finally:
            await stop_tasks(tasks)


async def controllers(sim: SimOptions, ctx: ControllerContext) -> None:
    """The simulated cluster's controllers, against its own server (restarted if they fail)."""
    write_cluster_kubeconfig(ctx.kubeconfig, sim.name)
    kube = Client(ApiTarget.from_kubeconfig(ctx.kubeconfig), f"fleetplane-sim/{sim.name}")
    alive = ctx.alive

    try:
        while alive():
            try:
                await SimulatedCluster(sim, kube, alive).run()
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                if not alive():
                    return
                log.exception("simulated cluster %s: controllers failed; restarting them", sim.name)
                await asyncio.sleep(1.0)
    finally:
        await kube.close()


def run(sim: SimOptions) -> None:
    """Serve the simulated cluster until SIGTERM/SIGINT."""
    run_hub(server_config(sim), [SimulatedClusterPlugin(sim)])
