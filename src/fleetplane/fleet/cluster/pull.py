"""Pull mode: the syncer that runs next to a physical cluster (``fleetplane syncer``).

:class:`PullSyncer` is one process per Cluster (``spec.syncerMode: Pull``):

- it runs the :class:`fleetplane.fleet.syncer.Syncer` for the cluster (hub: the Cluster's logical
  cluster; downstream: a kubeconfig, or the pod's service account when it runs in the cluster),
  with the Cluster's ``spec.resources``;
- every ``interval`` it probes the cluster (:func:`.probe.probe_cluster`) and renews the
  Lease ``syncer-<name>`` in the Cluster's namespace on the hub, with the probe report and the
  Syncer's health as annotations (``cluster.example.dev/report``, ``.../syncer-health``): the
  Cluster controller turns them into the Cluster's conditions and its ClusterProfile. A Lease held
  by another live syncer keeps this one idle (one syncer per cluster);
- when its Cluster is being deleted it stops the Syncer, deletes what it synced into the cluster
  if ``deletionPolicy`` is ``Delete``, and acknowledges with ``cluster.example.dev/stopped: <uid>``
  on the Lease; the controller then finishes the deletion. It stays up, idle, and starts again if
  the Cluster comes back. It never re-creates the Lease of a Cluster that is gone.

:func:`render_manifests` is what ``fleetplane syncer manifests`` prints: what a real cluster needs
to run it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import socket
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from ...apimachinery.metatime import micro_time, parse_time
from ...kube.client import Client
from ...kube.kubeconfig import hub_base, in_cluster_kubeconfig, parse_kubeconfig
from .. import identities
from . import paths
from .cleanup import delete_synced_objects
from .crd import ANNOTATION_REPORT, ANNOTATION_STOPPED, ANNOTATION_SYNCER_HEALTH, LABEL_CLUSTER, POLICY_DELETE
from .paths import lease_name
from .probe import probe_cluster
from .syncer import health_dict

__all__ = ["DEFAULT_IMAGE", "DEFAULT_SYNCER_NAMESPACE", "PullSyncer", "logical_cluster_of", "render_manifests"]

log = logging.getLogger("fleetplane.syncer.pull")

DEFAULT_IMAGE = "ghcr.io/fleetplane/fleetplane:0.1.0"
DEFAULT_SYNCER_NAMESPACE = "fleetplane-syncer"

USER_AGENT = "fleetplane-syncer"


def logical_cluster_of(server: str, explicit: str | None = None) -> str:
    """``explicit``, else the logical cluster in a hub URL (``.../clusters/<lc>``), else ``root``."""
    if explicit:
        return explicit
    head, sep, tail = server.rstrip("/").rpartition("/clusters/")
    return tail if sep and tail and "/" not in tail else "root"


def hub_kubeconfig_for(hub_kubeconfig: str | Path, logical_cluster: str | None = None, context: str | None = None,
                       server: str | None = None, token: str | None = None) -> tuple[str, dict[str, Any]]:
    """(logical cluster, a self-contained kubeconfig for it) from the hub kubeconfig; ``server``
    replaces the hub's address (as seen from inside a cluster); ``token`` replaces the
    credentials (the Syncer's own ServiceAccount token: the caller's never leaves its machine)."""
    hub = parse_kubeconfig(Path(hub_kubeconfig), context, allow_files=True)
    lc = logical_cluster_of(hub.server, logical_cluster)
    base = hub_base(server or hub.server)
    target = hub.with_server(f"{base}/clusters/{lc}")
    if token is not None:
        target = dataclasses.replace(target, token=token, client_cert_data=None, client_key_data=None)
    return lc, target.to_kubeconfig(f"hub-{lc}".replace(":", "-"))


async def provision_syncer(hub_kubeconfig: str | Path, logical_cluster: str, cluster: str, namespace: str,
                           resources: list[str], context: str | None = None) -> str:
    """:func:`~fleetplane.fleet.identities.provision_syncer_identity` as whoever runs ``syncer manifests`` (an admin of the
    logical cluster), with their kubeconfig; the returned token goes to the member cluster."""
    hub = parse_kubeconfig(Path(hub_kubeconfig), context, allow_files=True)
    client = Client(hub.with_server(hub_base(hub.server)), "fleetplane-syncer-manifests")
    try:
        return await identities.provision_syncer_identity(client, logical_cluster, cluster, namespace, resources,
                                                          "fleetplane-syncer-manifests")
    finally:
        await client.close()


def _rules(resources: list[str]) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = []
    by_group: dict[str, list[str]] = {}
    for r in resources:
        plural, _, group = r.partition(".")
        by_group.setdefault("" if group == "core" else group, []).extend([plural, f"{plural}/status"])
    for group, res in sorted(by_group.items()):
        rules.append({"apiGroups": [group], "resources": sorted(set(res)), "verbs": ["*"]})
    rules += [
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch", "create"]},
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["namespaces"], "resourceNames": ["kube-system"], "verbs": ["get"]},
        {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"],
         "verbs": ["get", "list", "watch", "create", "update", "patch"]},
        {"apiGroups": ["about.k8s.io"], "resources": ["clusterproperties"], "verbs": ["get", "list"]},
        {"nonResourceURLs": ["/version", "/livez", "/livez/*", "/readyz", "/readyz/*", "/healthz", "/api", "/api/*",
                             "/apis", "/apis/*"], "verbs": ["get"]},
    ]
    return rules


def render_manifests(*, cluster: str, namespace: str, logical_cluster: str, hub_kubeconfig: dict[str, Any],
                     resources: list[str], image: str = DEFAULT_IMAGE,
                     syncer_namespace: str = DEFAULT_SYNCER_NAMESPACE) -> list[dict[str, Any]]:
    """The objects that run the pull-mode syncer for Cluster ``namespace/cluster`` in a cluster."""
    name = f"fleetplane-syncer-{cluster}"[:63].rstrip("-.")
    labels = {"app.kubernetes.io/name": "fleetplane-syncer", "app.kubernetes.io/instance": cluster,
              "app.kubernetes.io/managed-by": "fleetplane"}
    kubeconfig_text = yaml.safe_dump(hub_kubeconfig, sort_keys=False)
    checksum = hashlib.sha256(kubeconfig_text.encode()).hexdigest()
    args = ["syncer", "--hub-kubeconfig", "/etc/fleetplane/hub/kubeconfig", "--cluster", cluster,
            "--namespace", namespace, "--logical-cluster", logical_cluster]
    if resources:
        args += ["--resources", ",".join(resources)]
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": syncer_namespace, "labels": labels}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": syncer_namespace,
                                                                   "labels": labels}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name, "labels": labels},
         "rules": _rules(resources)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": name, "labels": labels},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
         "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": syncer_namespace}]},
        {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
         "metadata": {"name": f"{name}-hub-kubeconfig", "namespace": syncer_namespace, "labels": labels},
         "stringData": {"kubeconfig": kubeconfig_text}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": syncer_namespace,
                                                                     "labels": labels},
         "spec": {
             "replicas": 1, "strategy": {"type": "Recreate"},
             "selector": {"matchLabels": {"app.kubernetes.io/name": "fleetplane-syncer",
                                          "app.kubernetes.io/instance": cluster}},
             "template": {
                 "metadata": {"labels": labels, "annotations": {"fleetplane.io/hub-kubeconfig-sha256": checksum}},
                 "spec": {
                     "serviceAccountName": name,
                     "containers": [{
                         "name": "syncer", "image": image, "command": ["fleetplane"], "args": args,
                         "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                         "volumeMounts": [{"name": "hub-kubeconfig", "mountPath": "/etc/fleetplane/hub", "readOnly": True}],
                         "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}},
                         "securityContext": {"allowPrivilegeEscalation": False, "runAsNonRoot": True,
                                             "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}},
                     }],
                     "volumes": [{"name": "hub-kubeconfig", "secret": {"secretName": f"{name}-hub-kubeconfig"}}],
                 },
             },
         }},
    ]



class PullSyncer:
    """The pull-mode syncer process (see the module docstring)."""

    def __init__(self, *, hub_kubeconfig: str | Path, cluster: str, namespace: str = "default",
                 logical_cluster: str | None = None, hub_context: str | None = None,
                 cluster_kubeconfig: str | Path | None = None, cluster_context: str | None = None,
                 resources: Sequence[str] | None = None, interval: float = 10.0, lease_duration: float = 40.0,
                 details_interval: float = 60.0, poll_interval: float | None = None,
                 identity: str | None = None) -> None:
        self.name, self.ns = cluster, namespace
        hub_ep = parse_kubeconfig(Path(hub_kubeconfig), hub_context, allow_files=True)
        self.lc = logical_cluster_of(hub_ep.server, logical_cluster)
        base = hub_base(hub_ep.server)
        self.hub_target_endpoint = hub_ep.with_server(f"{base}/clusters/{self.lc}")
        self.hub = Client(hub_ep.with_server(base), USER_AGENT, timeout=10.0, pool=32)
        if cluster_kubeconfig:
            self.down_ep = parse_kubeconfig(Path(cluster_kubeconfig), cluster_context, allow_files=True)
        else:
            self.down_ep = parse_kubeconfig(in_cluster_kubeconfig())
        self.down = Client(self.down_ep, USER_AGENT, timeout=10.0, pool=32)
        #: for a Cluster without spec.resources (None: the Syncer's default)
        self.default_resources = list(resources) if resources else None
        self.interval, self.lease_duration = interval, lease_duration
        self.details_interval, self.poll_interval = details_interval, poll_interval
        self.identity = identity or os.environ.get("POD_NAME") or socket.gethostname()
        self.syncer: Any = None
        self.syncer_task: asyncio.Task | None = None
        self.syncer_key: tuple | None = None
        self.stopped_uid: str | None = None
        #: the deleting Cluster whose stop this syncer has written into the Lease
        self.acked_uid: str | None = None
        self.report: Any = None
        self.details_at = 0.0
        self.syncer_error: dict[str, Any] | None = None
        self.retry_at = 0.0

    @property
    def cluster_path(self) -> str:
        return paths.cluster_path(self.lc, self.ns, self.name)

    @property
    def lease_path(self) -> str:
        return paths.lease_path(self.lc, self.ns, lease_name(self.name))

    async def run(self) -> None:
        log.info("pull syncer for Cluster %s|%s/%s (downstream %s)", self.lc, self.ns, self.name, self.down_ep.server)
        try:
            while True:
                try:
                    await self.step()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - the hub or the cluster is away: try again
                    log.warning("pull syncer: %s", exc)
                await asyncio.sleep(self.interval)
        finally:
            await self._stop_syncer()
            await self.hub.close()
            await self.down.close()

    async def step(self) -> None:
        """One pass: follow the Cluster, probe the cluster, renew the Lease."""
        lease = await self.hub.get(self.lease_path)
        if lease is not None and self._held_by_other(lease):
            await self._stop_syncer()
            log.info("pull syncer: the Lease is held by %s; waiting", lease["spec"].get("holderIdentity"))
            return
        cluster = await self.hub.get(self.cluster_path)
        md = (cluster or {}).get("metadata") or {}
        if cluster is None or md.get("deletionTimestamp"):
            await self._stop_syncer()
            if cluster is not None and self.stopped_uid != md.get("uid"):
                spec = cluster.get("spec") or {}
                if spec.get("deletionPolicy") == POLICY_DELETE:
                    types = (cluster.get("status") or {}).get("types") or []
                    n = await delete_synced_objects(self.down, self.name, self.lc, types)
                    log.info("pull syncer: deleted %d synced objects (deletionPolicy Delete)", n)
                self.stopped_uid = md.get("uid")
        else:
            self.stopped_uid = None
            await self._ensure_syncer(cluster)
        if cluster is None or (lease is None and md.get("deletionTimestamp") and self.acked_uid == md.get("uid")):
            # Nothing to report on: the Lease went with the Cluster, or the Cluster controller
            # removed it after reading our acknowledgement; re-creating it would outlive the Cluster.
            return
        details = time.monotonic() >= self.details_at
        self.report = await probe_cluster(self.down, details=details, previous=self.report)
        if self.report.connected and self.report.details:
            self.details_at = time.monotonic() + self.details_interval
        health = self.syncer_error
        if self.syncer is not None:
            with contextlib.suppress(Exception):
                health = health_dict(self.syncer.health())
        await self._renew(lease, {
            ANNOTATION_REPORT: json.dumps(self.report.to_dict(), sort_keys=True),
            ANNOTATION_SYNCER_HEALTH: json.dumps(health, sort_keys=True, default=str) if health else "",
            ANNOTATION_STOPPED: self.stopped_uid or "",
        })
        self.acked_uid = self.stopped_uid

    def _held_by_other(self, lease: dict) -> bool:
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity")
        if not holder or holder == self.identity:
            return False
        renewed = parse_time(spec.get("renewTime")) or 0.0
        return time.time() - renewed <= float(spec.get("leaseDurationSeconds") or self.lease_duration)

    async def _renew(self, lease: dict | None, annotations: dict[str, str]) -> None:
        now = micro_time()
        spec = {"holderIdentity": self.identity, "leaseDurationSeconds": max(int(self.lease_duration), 1), "renewTime": now}
        if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
            spec["acquireTime"] = now
        if lease is None:
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": lease_name(self.name), "namespace": self.ns,
                                 "labels": {LABEL_CLUSTER: self.name}, "annotations": annotations},
                    "spec": spec}
            await self.hub.create(paths.lease_path(self.lc, self.ns), body)
        else:
            await self.hub.patch(self.lease_path, {"metadata": {"annotations": annotations}, "spec": spec})

    async def _ensure_syncer(self, cluster: dict) -> None:
        spec = cluster.get("spec") or {}
        resources = spec.get("resources") or self.default_resources
        key = (cluster["metadata"].get("uid"), tuple(resources or ()))
        if self.syncer_task is not None and (self.syncer_key != key or self.syncer_task.done()):
            if self.syncer_task.done() and not self.syncer_task.cancelled() and self.syncer_task.exception():
                log.warning("pull syncer: the Syncer stopped: %s", self.syncer_task.exception())
            await self._stop_syncer()
        if self.syncer_task is not None or time.monotonic() < self.retry_at:
            return
        try:
            from ..syncer import Syncer

            kwargs: dict[str, Any] = {}
            if self.poll_interval is not None:
                kwargs["poll_interval"] = self.poll_interval
            if resources:
                kwargs["resources"] = list(resources)
            self.syncer = Syncer(cluster_name=self.name, hub=self.hub_target_endpoint, downstream=self.down_ep, **kwargs)
        except Exception as exc:  # noqa: BLE001 - reported through the Lease, retried
            reason = "SyncerUnavailable" if isinstance(exc, ImportError) else "ErrorStartingSyncer"
            self.syncer_error = {"connected": False, "types_synced": False, "reason": reason,
                                 "message": f"the Syncer cannot be started: {exc}"}
            self.retry_at = time.monotonic() + 10.0
            log.warning("pull syncer: %s", self.syncer_error["message"])
            return
        self.syncer_error = None
        self.syncer_key = key
        self.syncer_task = asyncio.get_running_loop().create_task(self.syncer.run(), name="syncer")
        log.info("pull syncer: Syncer started (%s)", ", ".join(self.syncer.resources))

    async def _stop_syncer(self) -> None:
        task, self.syncer_task = self.syncer_task, None
        self.syncer = None
        self.syncer_key = None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            log.info("pull syncer: Syncer stopped")
