"""The runtime in-process against the hub, with hub logical clusters as members (quick): the
health gate, a custom gate, reconciles keyed by cluster, and a restart (as after a lost Lease)
engaging every ready profile again."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from fleetplane.access import Config, clear_authenticators
from fleetplane.kube.client import Client
from fleetplane.kube.kubeconfig import ApiTarget
from fleetplane.multicluster import Cluster, Manager

from ..fleet.conftest import FleetHub

pytestmark = pytest.mark.timeout(120)

CMS = "/api/v1/namespaces/default/configmaps"


def status(hub: FleetHub, member: str, healthy: bool = True, joined: bool = True) -> dict[str, Any]:
    conds = [{"type": "ControlPlaneHealthy", "status": str(healthy), "reason": "Probed", "message": "",
              "lastTransitionTime": "2026-01-01T00:00:00Z"},
             {"type": "Joined", "status": str(joined), "reason": "Probed", "message": "",
              "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    return {"status": {"conditions": conds, "accessProviders": [{"name": "tokenfile", "cluster": {
        "server": f"{hub.url}/clusters/{member}", "certificate-authority-data": base64.b64encode(hub.ca.read_bytes()).decode()}}]}}


async def until(cond: Any, timeout: float = 30, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while not (v := cond()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.02)
    return v


def test_gate_reconcile_and_restart(mc_hub: FleetHub, tmp_path: Path) -> None:
    clear_authenticators()
    token = tmp_path / "token"
    token.write_text(mc_hub.token)
    access = Config({"providers": [{"name": "tokenfile", "execConfig": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
        "args": ["-m", "fleetplane.access.plugins.tokenfile", "--token-file", str(token)]}}]})
    inv = "mc-inv-" + uuid.uuid4().hex[:6]
    members = {n: f"mc-m{n}-{uuid.uuid4().hex[:6]}" for n in ("a", "b", "c")}
    target = ApiTarget(server=mc_hub.url, ca_data=mc_hub.ca.read_text(), token=mc_hub.token)
    profiles = f"/clusters/{inv}/apis/multicluster.x-k8s.io/v1alpha1/namespaces/default/clusterprofiles"

    async def go() -> None:
        admin = Client(target, "test")
        hub = Client(target.for_logical_cluster(inv), "test-manager")
        seen: list[tuple[str, tuple[str, str]]] = []

        def joined_and_healthy(p: dict[str, Any]) -> bool:  # a stricter gate than the default
            conds = {c["type"]: c["status"] for c in (p.get("status") or {}).get("conditions") or []}
            return conds.get("ControlPlaneHealthy") == "True" and conds.get("Joined") == "True"

        mgr = Manager(hub, access, name="test_runtime", namespace="default", ready=joined_and_healthy, workers=2)
        mgr.watch(CMS)

        @mgr.reconcile
        async def reconcile(cluster: Cluster, key: tuple[str, str]) -> None:
            seen.append((cluster.name, key))

        for n, member in members.items():
            await admin.create(profiles, {"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile",
                                          "metadata": {"name": n, "namespace": "default"},
                                          "spec": {"clusterManager": {"name": "test"}}})
            await admin.patch(f"{profiles}/{n}/status", status(mc_hub, member, joined=n != "c"))
            await admin.create(f"/clusters/{member}{CMS}", {"apiVersion": "v1", "kind": "ConfigMap",
                                                             "metadata": {"name": f"cm-{n}", "namespace": "default"}})
        run = asyncio.create_task(mgr.run())
        try:
            await until(lambda: set(mgr.clusters) == {"default/a", "default/b"}, what="a and b engaged")
            # each cluster's informer reports its own objects, keyed by cluster
            await until(lambda: {("default/a", ("default", "cm-a")), ("default/b", ("default", "cm-b"))} <= set(seen),
                        what="reconciles per cluster")
            assert not any(name == "default/c" for name, _ in seen)  # c is healthy but not joined: gated out
            a = mgr.get("default/a")
            assert a is not None and a.get(CMS, ("default", "cm-a")) is not None
            assert a.get(CMS, ("default", "cm-b")) is None  # b's object is not in a's cache
            # c joins: engaged; b turns unhealthy: disengaged
            await admin.patch(f"{profiles}/c/status", status(mc_hub, members["c"]))
            await admin.patch(f"{profiles}/b/status", status(mc_hub, members["b"], healthy=False))
            await until(lambda: set(mgr.clusters) == {"default/a", "default/c"}, what="c engaged, b disengaged")
            await until(lambda: ("default/c", ("default", "cm-c")) in seen, what="c reconciled")
        finally:
            run.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await run
        assert not mgr.clusters  # stopping disengages everything
        # run again (what a regained Lease does): every ready profile is engaged again
        run = asyncio.create_task(mgr.run())
        try:
            await until(lambda: set(mgr.clusters) == {"default/a", "default/c"}, what="engaged again after a restart")
            await until(lambda: all(c.synced.is_set() for c in mgr.clusters.values()), what="synced again")
        finally:
            run.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await run
            await hub.close()
            await admin.close()

    asyncio.run(go())
