"""Service sync latency through the hub, beside the same run's Deployment figure.
``python -m bench.services [--services 50] [--clusters 3]`` or ``await run()`` (part ``services``
of ``make bench``).

Real processes through :class:`fleetplane.lab.Lab`: M simulated clusters and the hub
(``fleetplane start``: the Cluster controller with a Syncer per cluster syncing deployments.apps
and services, the splitter, the Service controller). N Deployments (M replicas each, so Even gives
every cluster one) are created on the hub, 16 requests in flight; every cluster is listed every
0.2 s and a Deployment's latency is from its create on the hub to its split child present in
*all* clusters. Once all are, N Services selecting them (ClusterIP, one port) are created the same
way, and a Service's latency is from its create to its child present (allocated a ClusterIP by
that cluster) in all clusters: the Service controller's part (it follows the Deployment's
children) plus the Syncers'. p50/p99 of both.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from fleetplane.lab import Lab, Process

from .split import _Api, _nodes_ready

JOIN_GRACE = 2.0
HUB_FLAGS = ["--cluster-probe-interval", "2", "--splitter-join-grace", str(JOIN_GRACE)]
NAMESPACE = "default"


def _name(i: int) -> str:
    return f"svc-{i:04d}"


def _deployment(name: str, replicas: int) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx:1.27",
                                                           "ports": [{"containerPort": 8080}],
                                                           "resources": {"requests": {"cpu": "10m"}}}]}}}}


def _service(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"selector": {"app": name}, "ports": [{"port": 80, "targetPort": 8080}]}}


def _pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return round(s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))], 3)


def _parent_of(name: str, cluster: str) -> str:
    """A synced object's hub parent: named ``<parent>--<cluster>`` (or ``<parent>`` with the
    Syncer's downstream-name)."""
    return name.removesuffix(f"--{cluster}")


async def _measure(hub: _Api, clusters: dict[str, _Api], path: str, bodies: list[dict], timeout: float,
                   present: Any) -> dict[str, Any]:
    """Create ``bodies`` on the hub and time each until it is present in every cluster."""
    names = {b["metadata"]["name"] for b in bodies}
    created: dict[str, float] = {}
    seen: dict[str, dict[str, float]] = {n: {} for n in names}

    async def create_all() -> None:
        sem = asyncio.Semaphore(16)

        async def one(body: dict) -> None:
            async with sem:
                t = time.monotonic()
                code, got = await hub.request("POST", path, body)
                if code not in (201, 409):
                    raise RuntimeError(f"create {body['metadata']['name']}: {code} {got}")
                created[body["metadata"]["name"]] = t

        await asyncio.gather(*(one(b) for b in bodies))

    t0 = time.monotonic()
    creating = asyncio.create_task(create_all())
    try:
        while time.monotonic() - t0 < timeout:
            lists = await asyncio.gather(*(api.request("GET", path) for api in clusters.values()))
            now = time.monotonic()
            for cluster, (code, body) in zip(clusters, lists, strict=True):
                if code != 200:
                    continue
                for o in body.get("items") or []:
                    parent = _parent_of(o["metadata"]["name"], cluster)
                    if parent in seen and cluster not in seen[parent] and present(o):
                        seen[parent][cluster] = now
            if creating.done() and all(len(s) == len(clusters) for s in seen.values()):
                break
            await asyncio.sleep(0.2)
        await creating
    finally:
        if not creating.done():
            creating.cancel()
    lat = [max(s.values()) - created[n] for n, s in seen.items() if len(s) == len(clusters) and n in created]
    return {"n": len(names), "complete": len(lat), "p50_s": _pct(lat, 50), "p99_s": _pct(lat, 99),
            "max_s": round(max(lat), 3) if lat else None, "wall_s": round(time.monotonic() - t0, 1)}


async def run(services: int = 50, clusters: int = 3, workdir: Path | None = None, timeout: float = 300.0,
              log: Any = None) -> dict[str, Any]:
    say = log or (lambda s: print(s, file=sys.stderr, flush=True))
    result: dict[str, Any] = {"services": services, "clusters": clusters}
    with Lab(workdir) as lab:
        names = [f"c{i:02d}" for i in range(clusters)]
        nodes = max(2, -(-services * 2 // 110))
        sims: dict[str, Process] = dict(zip(names, await asyncio.to_thread(
            lab.simulate_all, names, "--nodes", str(nodes), "--kubelet-delay", "0.2"), strict=True))
        await asyncio.to_thread(lab.wait_until, "every cluster's nodes Ready",
                                lambda: all(_nodes_ready(p, nodes) for p in sims.values()))
        t = time.monotonic()
        hub = await asyncio.to_thread(lab.start_hub, *HUB_FLAGS)
        await asyncio.to_thread(lab.attach, *names, location="lab", resources=["deployments.apps", "services"])
        await asyncio.to_thread(lab.wait_attached, names, 120)
        await asyncio.to_thread(lab.wait_served, "apps/v1", "deployments", 120)
        await asyncio.to_thread(lab.wait_served, "v1", "services", 120)
        await asyncio.sleep(JOIN_GRACE + 0.5)
        result["fleet_ready_s"] = round(time.monotonic() - t, 1)
        say(f"services bench: fleet of {clusters} ready in {result['fleet_ready_s']}s")
        async with contextlib.AsyncExitStack() as stack:
            api = await stack.enter_async_context(_Api(hub))
            apis = {n: await stack.enter_async_context(_Api(p)) for n, p in sims.items()}
            result["deployments"] = await _measure(
                api, apis, f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments",
                [_deployment(_name(i), clusters) for i in range(services)], timeout, lambda o: True)
            say(f"deployments: {result['deployments']}")
            result["service_sync"] = await _measure(
                api, apis, f"/api/v1/namespaces/{NAMESPACE}/services", [_service(_name(i)) for i in range(services)],
                timeout, lambda o: bool((o.get("spec") or {}).get("clusterIP")))
            say(f"services: {result['service_sync']}")
    return result


def render(r: dict[str, Any]) -> list[str]:
    """The BENCHMARKS.md section."""
    rows = [("Deployment: hub create -> split child in every cluster", r.get("deployments") or {}),
            ("Service: hub create -> child in every cluster, with its ClusterIP", r.get("service_sync") or {})]
    return ["## Services across the fleet", "",
            f"{r.get('services')} Services (each selecting a Deployment with one replica per cluster) on "
            f"{r.get('clusters')} simulated clusters, created on the hub 16 at a time; latency until present in all.", "",
            "| object | p50 (s) | p99 (s) | max (s) | complete |", "|---|---|---|---|---|",
            *[f"| {what} | {m.get('p50_s')} | {m.get('p99_s')} | {m.get('max_s')} | {m.get('complete')}/{m.get('n')} |"
              for what, m in rows]]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.services")
    p.add_argument("--services", type=int, default=50)
    p.add_argument("--clusters", type=int, default=3)
    p.add_argument("--workdir", help="keep the processes' data and logs here (default: a temporary directory)")
    p.add_argument("--timeout", type=float, default=300.0, help="per phase (default 300 s)")
    args = p.parse_args(argv)
    r = asyncio.run(run(args.services, args.clusters, Path(args.workdir) if args.workdir else None, args.timeout))
    print(json.dumps(r, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
