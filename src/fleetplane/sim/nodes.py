"""The simulated cluster's Nodes: ``--nodes N`` of one shape, registered as a kubelet does.

Node ``<cluster>-node-<i>`` gets the capacity given on the command line (allocatable = capacity:
nothing is reserved for system daemons), kube's well-known labels (``kubernetes.io/hostname``,
``kubernetes.io/os``, ``kubernetes.io/arch``, ``node.kubernetes.io/instance-type``,
``topology.kubernetes.io/region``/``zone``) plus the ``--labels`` of the cluster, a pod CIDR from
10.244.0.0/14 and an InternalIP from 172.18.0.0/16 (kind's ranges). On a restart the nodes are
brought back in line with the flags: missing ones are created, existing ones get the flags'
capacity and labels, and simulated nodes beyond N are deleted (their pods go with them).
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import math
import uuid
from dataclasses import dataclass, field

from ..apimachinery.quantity import canonical_quantity
from ..kube.client import MERGE_PATCH, ApiError, Client, api_path
from .util import now

log = logging.getLogger(__name__)

CLUSTER_CIDR = ipaddress.ip_network("10.244.0.0/14")
NODE_NETWORK = ipaddress.ip_network("172.18.0.0/16")
SIMULATED_ANNOTATION = "fleetplane.io/simulated"
KUBELET_VERSION = "v1.32.0"


@dataclass
class NodeShape:
    cpu: str = "4"
    memory: str = "16Gi"
    pods: int = 110
    ephemeral_storage: str = "100Gi"
    labels: dict[str, str] = field(default_factory=dict)

    def capacity(self) -> dict[str, str]:
        return {"cpu": canonical_quantity(self.cpu), "ephemeral-storage": canonical_quantity(self.ephemeral_storage),
                "hugepages-1Gi": "0", "hugepages-2Mi": "0", "memory": canonical_quantity(self.memory),
                "pods": str(self.pods)}


def cidr_prefix(pods: int) -> int:
    """A per-node pod CIDR with room for ``pods`` addresses (a /24 for kube's default 110)."""
    return min(24, 32 - math.ceil(math.log2(max(pods, 1) + 4)))


def pod_cidr(index: int, prefix: int = 24) -> str:
    net = CLUSTER_CIDR
    size = 2 ** (32 - prefix)
    base = int(net.network_address) + index * size
    return str(ipaddress.ip_network((base % (2**32), prefix), strict=False))


def node_ip(index: int) -> str:
    return str(NODE_NETWORK.network_address + 2 + index)


def node_conditions(stamp: str, transition: dict[str, str] | None = None) -> list[dict]:
    transition = transition or {}
    rows = [
        ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
    ]
    return [{"type": t, "status": s, "lastHeartbeatTime": stamp, "lastTransitionTime": transition.get(t, stamp),
             "reason": r, "message": m} for t, s, r, m in rows]


def node_info(name: str) -> dict:
    digest = hashlib.sha256(name.encode()).hexdigest()
    return {"architecture": "amd64", "bootID": str(uuid.UUID(digest[:32])), "containerRuntimeVersion": "containerd://1.7.24",
            "kernelVersion": "6.8.0-fleetplane", "kubeProxyVersion": KUBELET_VERSION, "kubeletVersion": KUBELET_VERSION,
            "machineID": digest[32:64], "operatingSystem": "linux", "osImage": "fleetplane simulated node",
            "systemUUID": str(uuid.UUID(digest[16:48]))}


def node_status(name: str, ip: str, capacity: dict[str, str], stamp: str) -> dict:
    return {
        "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
        "allocatable": dict(capacity), "capacity": dict(capacity),
        "conditions": node_conditions(stamp),
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": node_info(name),
    }


def node_labels(name: str, cluster: str, shape: NodeShape) -> dict[str, str]:
    labels = {
        "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": "fleetplane-sim",
        "topology.kubernetes.io/region": cluster, "topology.kubernetes.io/zone": f"{cluster}-a",
    }
    labels.update(shape.labels)
    return labels


def node_manifest(cluster: str, index: int, shape: NodeShape) -> dict:
    name = f"{cluster}-node-{index}"
    cidr = pod_cidr(index, cidr_prefix(shape.pods))
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": node_labels(name, cluster, shape),
                     "annotations": {"node.alpha.kubernetes.io/ttl": "0", SIMULATED_ANNOTATION: "true"}},
        "spec": {"podCIDR": cidr, "podCIDRs": [cidr], "providerID": f"fleetplane://{cluster}/{name}"},
        "status": node_status(name, node_ip(index), shape.capacity(), now()),
    }


async def ensure_nodes(kube: Client, cluster: str, count: int, shape: NodeShape) -> list[str]:
    """Create or reconcile ``<cluster>-node-0`` .. ``-<count-1>``; delete simulated nodes beyond."""
    existing = await kube.request("GET", "/api/v1/nodes")
    have = {(n.get("metadata") or {}).get("name"): n for n in existing.get("items") or []}
    names = []
    for i in range(count):
        want = node_manifest(cluster, i, shape)
        name = want["metadata"]["name"]
        names.append(name)
        cur = have.get(name)
        if cur is None:
            try:
                await kube.create("/api/v1/nodes", want)
            except ApiError as err:
                if err.status != 409:
                    raise
            continue
        labels = dict((cur.get("metadata") or {}).get("labels") or {})
        if any(labels.get(k) != v for k, v in want["metadata"]["labels"].items()):
            await kube.patch(api_path("v1", "nodes", name=name), {"metadata": {"labels": want["metadata"]["labels"]}},
                             MERGE_PATCH)
        capacity = want["status"]["capacity"]
        status = cur.get("status") or {}
        if status.get("capacity") != capacity or status.get("allocatable") != capacity:
            await kube.patch(api_path("v1", "nodes", name=name, subresource="status"),
                             {"status": {"capacity": capacity, "allocatable": capacity}}, MERGE_PATCH)
    prefix = f"{cluster}-node-"
    for name, node in have.items():
        annotations = (node.get("metadata") or {}).get("annotations") or {}
        if name and name.startswith(prefix) and name not in names and annotations.get(SIMULATED_ANNOTATION) == "true":
            suffix = name[len(prefix):]
            if suffix.isdigit():
                log.info("deleting simulated node %s (the cluster has %d nodes now)", name, count)
                try:
                    await kube.request("DELETE", api_path("v1", "nodes", name=name))
                except ApiError as err:
                    if err.status != 404:
                        raise
    return names
