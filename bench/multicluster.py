"""The multicluster runtime's engage latency: ``async run() -> dict`` (wired into ``make bench``).

From a healthy ClusterProfile (its status written with ``ControlPlaneHealthy=True``) to a synced
per-cluster informer, at ``n`` clusters. ``n`` hub processes are too many for a small machine, so
the ``n`` ClusterProfiles point at ``n`` logical clusters of one hub process (``fleetplane
start``): each is its own API endpoint (``/clusters/<name>``), credential (an exec plugin run per
profile: a ``/bin/sh`` plugin, so the figure is the runtime's and not an interpreter start-up),
client and informer, but they share one server process.

- ``burst``: the ``n`` profiles created and made healthy as fast as the client can; per-profile
  latency (status written -> informer synced) percentiles, and the time until all ``n`` are engaged;
- ``single``: one profile at a time with the others engaged: the uncontended latency;
- ``disengage_all_s``: every profile turned unhealthy -> none engaged;
- ``baseline``: ``n`` plain informers on the same paths, started at once without the runtime (no
  profiles, no plugin, no provider): the floor the burst figure is compared with.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import statistics
import tempfile
import time
from typing import Any

from fleetplane.access import Config, clear_authenticators
from fleetplane.kube.client import ApiError, Client
from fleetplane.kube.controller import stop_tasks
from fleetplane.kube.informer import Informer
from fleetplane.kube.kubeconfig import ApiTarget
from fleetplane.multicluster import Manager

from .hub import HubProcess

INVENTORY = "mc-bench"
NS = "fleet"
PROFILES = f"/clusters/{INVENTORY}/apis/multicluster.x-k8s.io/v1alpha1/namespaces/{NS}/clusterprofiles"
WATCHED = "/api/v1/namespaces/default/configmaps"


def _stats(samples: list[float]) -> dict[str, float]:
    s = sorted(x * 1000 for x in samples)
    if not s:
        return {}
    return {"p50_ms": round(statistics.median(s), 1), "p95_ms": round(s[min(len(s) - 1, int(len(s) * 0.95))], 1),
            "max_ms": round(s[-1], 1)}


def _plugin(d: str, token: str) -> str:
    path = os.path.join(d, "token-plugin")
    body = json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                       "status": {"token": token}}, separators=(",", ":"))
    with open(path, "w") as f:
        f.write(f"#!/bin/sh\nprintf '%s' '{body}'\n")
    os.chmod(path, 0o700)
    return path


def _healthy(hub: HubProcess, i: int, status: str = "True") -> dict[str, Any]:
    return {"status": {
        "conditions": [{"type": "ControlPlaneHealthy", "status": status, "reason": "Healthy" if status == "True" else "Unhealthy",
                        "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
        "accessProviders": [{"name": "bench", "cluster": {
            "server": f"{hub.url}/clusters/mc-bench-{i}",
            "certificate-authority-data": base64.b64encode(hub.ca.read_bytes()).decode()}}]}}


async def _make_profile(client: Client, hub: HubProcess, i: int) -> float:
    """Create profile ``c<i>`` and make it healthy; the monotonic time the status was accepted."""
    await client.create(PROFILES, {"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile",
                                   "metadata": {"name": f"c{i}", "namespace": NS},
                                   "spec": {"clusterManager": {"name": "bench"}}})
    await client.patch(f"{PROFILES}/c{i}/status", _healthy(hub, i))
    return time.monotonic()


async def _wait(cond: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


async def run(n: int = 100, singles: int = 10, timeout: float = 300.0) -> dict[str, Any]:
    hub = HubProcess()
    d = tempfile.mkdtemp(prefix="fleetplane-mc-bench-")
    target = ApiTarget(server=hub.url, ca_data=hub.ca.read_text(), token=hub.token)
    client = Client(target, "mc-bench", pool=n + 32)  # the baseline's n watches each hold a connection
    clear_authenticators()
    out: dict[str, Any] = {"clusters": n, "hub_processes": 1, "endpoints": "hub logical clusters"}
    try:
        with contextlib.suppress(ApiError):
            await client.create(f"/clusters/{INVENTORY}/api/v1/namespaces",
                                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})

        # baseline: n informers on the same paths, straight on the hub's client
        t0 = time.monotonic()
        base = [Informer(client, f"/clusters/mc-bench-{i}{WATCHED}") for i in range(n)]
        tasks = [asyncio.create_task(i.run()) for i in base]
        await asyncio.gather(*(i.synced.wait() for i in base))
        out["baseline"] = {"all_synced_s": round(time.monotonic() - t0, 3)}
        await stop_tasks(tasks)

        access = Config({"providers": [{"name": "bench", "execConfig": {
            "apiVersion": "client.authentication.k8s.io/v1", "command": _plugin(d, hub.token),
            "interactiveMode": "Never"}}]})
        mgr_hub = Client(target.for_logical_cluster(INVENTORY), "mc-bench-manager")
        mgr = Manager(mgr_hub, access, name="bench", namespace=NS, workers=4)
        mgr.watch(WATCHED)

        async def reconcile(cluster: Any, key: Any) -> None:
            return None

        mgr.reconcile(reconcile)
        runner = asyncio.create_task(mgr.run())
        try:
            def synced(i: int) -> bool:
                c = mgr.get(f"{NS}/c{i}")
                return c is not None and c.synced_at is not None

            # burst
            t0 = time.monotonic()
            sem = asyncio.Semaphore(16)

            async def one(i: int) -> float:
                async with sem:
                    return await _make_profile(client, hub, i)

            ready_at = await asyncio.gather(*(one(i) for i in range(n)))
            out["burst_writes_s"] = round(time.monotonic() - t0, 3)
            ok = await _wait(lambda: all(synced(i) for i in range(n)), timeout)
            all_s = time.monotonic() - t0
            lat = [mgr.clusters[f"{NS}/c{i}"].synced_at - ready_at[i] for i in range(n) if synced(i)]  # type: ignore[operator]
            out["burst"] = {"engaged": len(lat), "all_engaged_s": round(all_s, 3) if ok else None, **_stats(lat)}
            out["ratio_burst_over_baseline"] = round(all_s / max(out["baseline"]["all_synced_s"], 1e-9), 2)

            # one at a time, the others engaged
            single: list[float] = []
            for j in range(n, n + singles):
                at = await _make_profile(client, hub, j)
                if await _wait(lambda j=j: synced(j), 60):  # type: ignore[misc]
                    single.append(mgr.clusters[f"{NS}/c{j}"].synced_at - at)  # type: ignore[operator]
            out["single"] = {"samples": len(single), **_stats(single)}

            # every profile unhealthy -> nothing engaged
            t0 = time.monotonic()
            await asyncio.gather(*(client.patch(f"{PROFILES}/c{i}/status", _healthy(hub, i, "False"))
                                   for i in range(n + singles)))
            gone = await _wait(lambda: not mgr.clusters, timeout)
            out["disengage_all_s"] = round(time.monotonic() - t0, 3) if gone else None
            out["engage_errors"] = dict(mgr.failures)
        finally:
            runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await runner
            await mgr_hub.close()
    finally:
        await client.close()
        hub.stop()
    return out


def render(r: dict[str, Any]) -> list[str]:
    b, s, base = r.get("burst") or {}, r.get("single") or {}, r.get("baseline") or {}
    n = r["clusters"]
    return [
        "## Multicluster runtime (`fleetplane.multicluster`): engage latency", "",
        f"{n} ClusterProfiles pointing at {n} logical clusters of one hub process (each its own endpoint,",
        "exec credential, client and informer; one server process because this machine cannot run",
        f"{n} hubs). Latency: profile status written healthy -> the cluster's informer synced.", "",
        "| measure | value | baseline | ratio |", "|---|---|---|---|",
        f"| burst: all {n} engaged | {b.get('all_engaged_s')} s (writes took {r.get('burst_writes_s')} s) |"
        f" {n} plain informers on the same paths: {base.get('all_synced_s')} s | {r.get('ratio_burst_over_baseline')} |",
        f"| burst: per profile p50 / p95 / max | {b.get('p50_ms')} / {b.get('p95_ms')} / {b.get('max_ms')} ms | | |",
        f"| one profile, the others engaged: p50 / p95 | {s.get('p50_ms')} / {s.get('p95_ms')} ms | | |",
        f"| all {n} turned unhealthy -> none engaged | {r.get('disengage_all_s')} s | | |",
    ]


if __name__ == "__main__":
    print(json.dumps(asyncio.run(run()), indent=2))
