"""``fleetplane cluster simulate``: the hub's server in "physical" mode plus its controllers.

The server serves the hub's types and the workload types of :mod:`fleetplane.apis` (Deployments,
ReplicaSets, DaemonSets, StatefulSets, HorizontalPodAutoscalers, Jobs, CronJobs, Pods, Nodes,
PersistentVolumeClaims) and reports ``gitVersion: v1.32.0+fleetplane-sim``. Once it is ready, the
controllers start in the same process and talk to it only through its HTTP API with ``<data-dir>/admin.kubeconfig``,
like kube-controller-manager, kube-scheduler and the kubelets of a real cluster: one shared
informer per resource feeds the Deployment, ReplicaSet, DaemonSet, StatefulSet, HPA, Job and
CronJob controllers, the volume provisioner, the scheduler, the simulated kubelets, the
EndpointSlice controller and the simulated load balancer. Services get their cluster IPs and node
ports from the server as they are stored (``apis/core/service.py``), from the ranges in
:class:`SimOptions`. They act on the ``root``
logical cluster, which is where requests without a ``/clusters/<name>`` prefix go.

``--count N`` (:func:`run_many`) serves N simulated clusters from one process, one socket and one
store: each is a logical cluster of the server, ``https://<bind>:<port>/clusters/<name>``, with
its own objects (Nodes, namespaces, Services' IPs are per logical cluster), its own kubeconfig
``<data-dir>/clusters/<name>/admin.kubeconfig`` and its own set of controllers acting on it through
that URL. Python's modules, the types and their schemas, the server and the store are paid
for once instead of once per cluster (see docs/sim.md, "Many clusters in one process").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import resource
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import uvloop
import yaml

from ..apis import workload_types
from ..apis.core.service import ServiceStrategy
from ..hub import Contributions, Controller, ControllerContext, HubConfig, build_hub, run_hub
from ..kube.client import SHARED_POOL, Client
from ..kube.controller import stop_tasks
from ..kube.events import EventRecorder
from ..kube.informer import Informer, object_key, wait_synced
from ..kube.kubeconfig import ApiTarget
from .cronjob import CronJobController
from .daemonset import DaemonSetController
from .deployment import DeploymentController
from .endpointslice import EndpointSliceController, slice_indexers
from .hpa import HPAController
from .job import JobController
from .kubelet import Kubelet
from .loadbalancer import LoadBalancerController, default_pool
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
    #: kube-apiserver's --service-cluster-ip-range and --service-node-port-range
    service_cluster_ip_range: str = "10.96.0.0/16"
    service_node_port_range: tuple[int, int] = (30000, 32767)
    #: the simulated load balancer's addresses; "" for default_pool(name)
    load_balancer_pool: str = ""
    #: the HPA controller's --horizontal-pod-autoscaler-sync-period and
    #: --horizontal-pod-autoscaler-downscale-stabilization (kube: 15 s, 5 min)
    hpa_sync_period: float = 15.0
    hpa_downscale_stabilization: float = 300.0


def server_config(sim: SimOptions, clusters: int = 1) -> HubConfig:
    """The hub's server as a physical cluster: its own version string; no inventory plugin (the
    fleet's ClusterProfile API lives on the hub, not on member clusters). Serving ``clusters``
    simulated clusters, every client of all of them comes from one address (their controllers,
    the hub's Syncers): the per-client and total connection caps go (0)."""
    many = clusters > 1
    return HubConfig(data_dir=sim.data_dir, bind=sim.bind, port=sim.port, tls=sim.tls, git_version=GIT_VERSION,
                     disable_admission_plugins=sim.disable_admission_plugins,
                     max_connections=0 if many else HubConfig.max_connections,
                     max_connections_per_client=0 if many else HubConfig.max_connections_per_client)


@dataclass
class SimulatedClusterPlugin:
    """The workload types (Deployments, ReplicaSets, Pods, Nodes, ...) and the controllers that run them."""

    sim: SimOptions
    name: str = "sim"
    #: the simulated clusters served as logical clusters (:func:`run_many`); none: one, ``root``
    members: list[SimOptions] = field(default_factory=list)

    def contribute(self, hub: Contributions) -> None:
        types = workload_types()
        add_pod_streams(next(rt for rt in types if rt.kind == "Pod" and not rt.group))
        services = next(rt.strategy for rt in types if rt.kind == "Service" and not rt.group)
        assert isinstance(services, ServiceStrategy)
        services.configure(self.sim.service_cluster_ip_range, self.sim.service_node_port_range)
        hub.types += types
        if not self.members:
            hub.controllers.append(Controller(f"simulated-cluster-{self.sim.name}", partial(controllers, self.sim)))
            return
        # one start-up at a time per few clusters: a thousand clusters listing twelve resources
        # and creating their nodes at once would only queue in the server's flow control
        starting = asyncio.Semaphore(STARTING_AT_ONCE)
        for m in self.members:
            hub.controllers.append(Controller(f"simulated-cluster-{m.name}", partial(
                controllers, m, kubeconfig=member_kubeconfig(self.sim.data_dir, m.name), starting=starting)))


#: how many of :func:`run_many`'s clusters start their controllers (nodes, informers' lists) at once
STARTING_AT_ONCE = 8
#: the connections each of :func:`run_many`'s clusters has for its controllers, a pool of its own
#: as a cluster of its own would have (more than kube/client.py's SHARED_POOL: not shared). Their
#: clients have one identity (the server's admin token) and one address, so they would share one
#: pool of 64: the twelve watches of the first five clusters took it, the next clusters' informers
#: waited for a connection forever, and, holding STARTING_AT_ONCE's slots, kept the rest from
#: starting at all (no Nodes).
MEMBER_POOL = 128


def member_kubeconfig(data_dir: Path, name: str) -> Path:
    """Where :func:`run_many` writes simulated cluster ``name``'s kubeconfig."""
    return data_dir / "clusters" / name / "admin.kubeconfig"


def write_cluster_kubeconfig(path: Path, name: str, source: Path | None = None, logical_cluster: str = "") -> None:
    """Name the kubeconfig's cluster, context and user after the simulated cluster, and point it at
    the server itself (no ``/clusters/root``), as a physical cluster's kubeconfig reads; so
    several simulated clusters' kubeconfigs merge without clashing. From the server's own
    kubeconfig at ``source`` (default: ``path`` itself); with ``logical_cluster``, at
    ``/clusters/<logical_cluster>`` of the server (one of :func:`run_many`'s clusters)."""
    cfg = yaml.safe_load((source or path).read_text())
    cluster = dict(cfg["clusters"][0]["cluster"])
    server = cluster["server"]
    if "/clusters/" in server:
        server = server.split("/clusters/", 1)[0]
    cluster["server"] = f"{server}/clusters/{logical_cluster}" if logical_cluster else server
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
        self.services = informer("/api/v1/services", "services")
        self.endpointslices = informer("/apis/discovery.k8s.io/v1/endpointslices", "endpointslices", slice_indexers())
        self.daemonsets = informer("/apis/apps/v1/daemonsets", "daemonsets")
        self.statefulsets = informer("/apis/apps/v1/statefulsets", "statefulsets")
        self.claims = informer("/api/v1/persistentvolumeclaims", "persistentvolumeclaims")
        self.hpas = informer("/apis/autoscaling/v2/horizontalpodautoscalers", "horizontalpodautoscalers")
        self.jobs = informer("/apis/batch/v1/jobs", "jobs", rs_indexers())
        self.cronjobs = informer("/apis/batch/v1/cronjobs", "cronjobs")
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
        self.endpointslice = EndpointSliceController(kcm, self.services, self.pods, self.endpointslices)
        self.loadbalancer = LoadBalancerController(kube.as_manager("cloud-controller-manager"), self.services, self.recorder,
                                                   sim.load_balancer_pool or default_pool(sim.name))
        self.daemonset = DaemonSetController(kcm, self.daemonsets, self.pods, self.nodes, self.recorder)
        self.statefulset = StatefulSetController(kcm, self.statefulsets, self.pods, self.claims, self.recorder)
        self.volumes = VolumeProvisioner(kcm, self.claims, self.pods, self.recorder)
        self.job = JobController(kcm, self.jobs, self.pods, self.recorder)
        self.cronjob = CronJobController(kcm, self.cronjobs, self.jobs, self.recorder)
        self.informers = [self.pods, self.replicasets, self.deployments, self.nodes, self.daemonsets, self.statefulsets,
                          self.claims, self.hpas, self.jobs, self.cronjobs, self.services, self.endpointslices]

    async def run(self, starting: asyncio.Semaphore | None = None) -> None:
        """Run the controllers until cancelled; ``starting`` bounds how many clusters create their
        nodes and fill their caches at the same time."""
        shape = NodeShape(cpu=self.sim.node_cpu, memory=self.sim.node_memory, pods=self.sim.node_pods,
                          labels=dict(self.sim.labels))
        tasks: list[asyncio.Task] = []
        try:
            async with starting or contextlib.nullcontext():
                await ensure_nodes(self.kube.as_manager("kubelet"), self.sim.name, self.sim.nodes, shape)
                tasks += [asyncio.create_task(i.run(), name=f"informer-{i.name}") for i in self.informers]
                tasks.append(asyncio.create_task(self.recorder.run(), name="events"))
                await wait_synced(self.informers)
            log.info("simulated cluster %s: controllers running (%d nodes)", self.sim.name, len(self.nodes.cache))
            tasks += [asyncio.create_task(c.run(), name=type(c).__name__)
                      for c in (self.deployment, self.replicaset, self.hpa, self.scheduler, self.kubelet, self.daemonset,
                                self.statefulset, self.volumes, self.job, self.cronjob, self.endpointslice, self.loadbalancer)]
            # everything runs until cancelled; an informer returns when the server is going away
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for t in done:
                t.result()
        finally:
            await stop_tasks(tasks)


async def controllers(sim: SimOptions, ctx: ControllerContext, *, kubeconfig: Path | None = None,
                      starting: asyncio.Semaphore | None = None) -> None:
    """The simulated cluster's controllers, against its own server (restarted if they fail); with
    ``kubeconfig`` (written by :func:`run_many`), against that logical cluster of the server."""
    pool = SHARED_POOL
    if kubeconfig is None:
        write_cluster_kubeconfig(ctx.kubeconfig, sim.name)
        kubeconfig = ctx.kubeconfig
    else:
        pool = MEMBER_POOL
    kube = Client(ApiTarget.from_kubeconfig(kubeconfig), f"fleetplane-sim/{sim.name}", pool=pool)
    alive = ctx.alive

    try:
        while alive():
            try:
                await SimulatedCluster(sim, kube, alive).run(starting)
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


#: file descriptors per simulated cluster of :func:`run_many`: both ends of its controllers'
#: connections (a watch each for twelve resources, a few for requests) and the hub's Syncer's
FDS_PER_MEMBER = 48


def raise_fd_limit(wanted: int) -> int:
    """Raise this process's open-file limit to ``wanted`` if it is lower (the hard limit too,
    when the process may); the soft limit it ends with."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return soft
    for limits in ((wanted, max(hard, wanted)), (min(wanted, hard), hard)):
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, limits)
            break
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def run_many(sim: SimOptions, names: list[str]) -> None:
    """Serve one simulated cluster per name (``sim``'s options, the name replaced, the load
    balancer pool derived from each name unless given) as logical clusters of one server, until
    SIGTERM/SIGINT. Each kubeconfig is written before the server listens."""
    members = [SimOptions(**{**sim.__dict__, "name": n, "labels": dict(sim.labels)}) for n in names]
    limit = raise_fd_limit(RESERVED_FDS + FDS_PER_MEMBER * len(names))
    if limit < RESERVED_FDS + FDS_PER_MEMBER * len(names):
        log.warning("%d simulated clusters may need %d file descriptors; the limit is %d", len(names),
                    RESERVED_FDS + FDS_PER_MEMBER * len(names), limit)
    plugin = SimulatedClusterPlugin(sim, members=members)

    async def main() -> None:
        hub = build_hub(server_config(sim, len(names)), [plugin])
        for m in members:
            path = member_kubeconfig(sim.data_dir, m.name)
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            write_cluster_kubeconfig(path, m.name, source=sim.data_dir / "admin.kubeconfig", logical_cluster=m.name)
        await hub.serve()

    uvloop.run(main())


#: descriptors kept for the store, logs and the rest beside the clusters' connections
RESERVED_FDS = 1024
