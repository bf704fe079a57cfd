"""End to end: N Deployments over M simulated clusters, from a cold start to full READY, and after a
hub restart. ``python -m fleetplane.fleet.splitter.bench [--deployments 1000] [--clusters 10]``
or ``run()`` (for ``make bench``).

Real processes: the hub with the Cluster controller (one Syncer per cluster) and the splitter
(``demo.py --serve-hub``), M simulated clusters (``--serve-sim``: nodes, Deployment and ReplicaSet
controllers, scheduler, kubelets). The client creates the N Deployments (``replicas`` each,
Even) through the API with some concurrency and polls the list until every parent reports
``readyReplicas == replicas`` with ``observedGeneration == generation``:

- ``cold``: from the first create to all READY (placement, children, Syncers down, the clusters'
  controllers and kubelets, status up, aggregation);
- ``restart``: the hub is stopped (SIGTERM) and started on the same data: the time until it
  serves, until every parent is READY again, and how many children the splitter rewrote (0:
  nothing moves on a restart).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from .demo import Demo


class _Api:
    """Plain HTTPS JSON requests (aiohttp), with concurrency for the creates."""

    def __init__(self, kubeconfig: Path, lc: str) -> None:
        cfg = yaml.safe_load(kubeconfig.read_text())
        server = cfg["clusters"][0]["cluster"]["server"].split("/clusters/")[0]
        self.base = f"{server}/clusters/{lc}"
        self.token = cfg["users"][0]["user"]["token"]
        self.ssl = ssl.create_default_context()
        self.ssl.check_hostname, self.ssl.verify_mode = False, ssl.CERT_NONE

    async def __aenter__(self) -> _Api:
        import aiohttp

        self.session = aiohttp.ClientSession(headers={"Authorization": f"Bearer {self.token}"},
                                             connector=aiohttp.TCPConnector(ssl=self.ssl, limit=32))
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.session.close()

    async def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        async with self.session.request(method, self.base + path, json=body) as r:
            return r.status, await r.json(content_type=None)


def _deployment(i: int, replicas: int) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": f"app-{i:04d}", "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": f"app-{i:04d}"}},
                     "template": {"metadata": {"labels": {"app": f"app-{i:04d}"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx:1.27",
                                                           "resources": {"requests": {"cpu": "10m"}}}]}}}}


async def _all_ready(api: _Api, n: int, timeout: float, children: int = 0, t0: float | None = None) -> dict[str, Any]:
    """Poll until every parent is READY with its generation observed; the times at which 50, 90,
    99 and 100 % were, when every child existed (``placed_s``: the splitter's part), and the
    counts at the end (a timeout returns what was reached). Times count from ``t0``."""
    t0 = time.monotonic() if t0 is None else t0
    marks: dict[str, float] = {}
    last: dict = {}
    while time.monotonic() - t0 < timeout:
        code, body = await api.request("GET", "/apis/apps/v1/namespaces/default/deployments")
        if code == 200:
            parents = [d for d in body["items"] if "kcp.dev/cluster" not in (d["metadata"].get("labels") or {})]
            ready = sum(1 for d in parents if (d.get("status") or {}).get("readyReplicas") == d["spec"]["replicas"]
                        and (d.get("status") or {}).get("observedGeneration") == d["metadata"].get("generation"))
            last = {"parents": len(parents), "ready": ready, "children": len(body["items"]) - len(parents)}
            if children and "placed_s" not in marks and last["children"] >= children:
                marks["placed_s"] = round(time.monotonic() - t0, 1)
            for pct in (50, 90, 99, 100):
                if f"p{pct}_s" not in marks and ready >= n * pct / 100:
                    marks[f"p{pct}_s"] = round(time.monotonic() - t0, 1)
            if ready >= n:
                break
        await asyncio.sleep(0.5)
    return {**marks, "counts": last, "complete": last.get("ready", 0) >= n}


async def _children_versions(api: _Api) -> dict[str, str]:
    code, body = await api.request("GET", "/apis/apps/v1/namespaces/default/deployments?labelSelector=kcp.dev%2Fcluster")
    return {d["metadata"]["name"]: (d["metadata"].get("generation"), d["spec"].get("replicas"))
            for d in body.get("items") or [] if not d["metadata"].get("deletionTimestamp")}


def run(deployments: int = 1000, clusters: int = 10, replicas: int = 3, workdir: Path | None = None,
        timeout: float = 600.0, log: Any = None) -> dict[str, Any]:
    say = log or (lambda s: print(s, file=sys.stderr, flush=True))
    tmp = workdir or Path(tempfile.mkdtemp(prefix="fleetplane-split-bench-"))
    tmp.mkdir(parents=True, exist_ok=True)
    demo = Demo(tmp, fast=True, out=lambda s: None)
    result: dict[str, Any] = {"deployments": deployments, "clusters": clusters, "replicas_each": replicas}
    try:
        t = time.monotonic()
        demo.start_hub()
        names = [f"c{i:02d}" for i in range(clusters)]
        # room for every replica: 110 pods per node, with a margin
        nodes = max(2, -(-deployments * replicas * 3 // (2 * clusters * 110)))
        result["nodes_per_cluster"] = nodes
        for n in names:
            demo.start_cluster(n, nodes=nodes)
        result["processes_started_s"] = round(time.monotonic() - t, 1)
        docs = "---\n".join(demo.cluster_doc(n, "lab") for n in names)
        demo.kubectl("apply", "-f", "-", stdin=docs, show=False)
        demo.wait("clusters healthy and the Deployment type imported", lambda: len([
            p for p in demo.get("clusterprofiles")["items"]
            if any(c["type"] == "ControlPlaneHealthy" and c["status"] == "True"
                   for c in (p.get("status") or {}).get("conditions") or [])]) == clusters
            and "deployments" in demo.kubectl("api-resources", "--api-group=apps", show=False, check=False),
            timeout=120)
        result["fleet_ready_s"] = round(time.monotonic() - t, 1)
        say(f"fleet of {clusters} clusters ready in {result['fleet_ready_s']}s; creating {deployments} Deployments")

        async def cold() -> None:
            async with _Api(demo.kubeconfig, "demo") as api:
                t0 = time.monotonic()
                sem = asyncio.Semaphore(16)

                async def create(i: int) -> None:
                    async with sem:
                        code, body = await api.request("POST", "/apis/apps/v1/namespaces/default/deployments",
                                                       _deployment(i, replicas))
                        if code not in (201, 409):
                            raise RuntimeError(f"create app-{i}: {code} {body}")

                await asyncio.gather(*(create(i) for i in range(deployments)))
                result["create_s"] = round(time.monotonic() - t0, 2)
                result["cold"] = await _all_ready(api, deployments, timeout, deployments * min(replicas, clusters), t0)
                result["cold_to_ready_s"] = result["cold"].get("p100_s")
                result["versions"] = await _children_versions(api)

        asyncio.run(cold())
        say(f"cold: {deployments} Deployments: {result['cold']}")
        before = result.pop("versions")
        hub = demo.procs["hub"]
        hub.send_signal(signal.SIGTERM)
        hub.wait(30)
        t0 = time.monotonic()
        demo.procs["hub"] = subprocess.Popen(
            [sys.executable, "-m", "fleetplane.fleet.splitter.demo", "--serve-hub", str(tmp / "hub"),
             str(demo.ports["hub"]), "--grace", demo.grace],
            stdout=open(tmp / "hub.log", "ab"), stderr=subprocess.STDOUT)  # noqa: SIM115
        demo._wait_ready("hub")
        result["restart_serving_s"] = round(time.monotonic() - t0, 2)

        async def after() -> None:
            async with _Api(demo.kubeconfig, "demo") as api:
                result["restart"] = await _all_ready(api, deployments, timeout, t0=t0)
                result["restart_to_ready_s"] = round(time.monotonic() - t0, 2)
                # give the controllers time to relist and reconcile everything, then count rewrites
                await asyncio.sleep(10)
                now = await _children_versions(api)
                result["restart_children_rewritten"] = sum(1 for k, v in now.items() if before.get(k) != v)
                result["children"] = len(now)

        asyncio.run(after())
        say(f"restart: serving in {result['restart_serving_s']}s, READY in {result['restart_to_ready_s']}s, "
            f"{result['restart_children_rewritten']} children rewritten")
    finally:
        demo.stop()
        if workdir is None:
            shutil.rmtree(tmp, ignore_errors=True)
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m fleetplane.fleet.splitter.bench")
    p.add_argument("--deployments", type=int, default=1000)
    p.add_argument("--clusters", type=int, default=10)
    p.add_argument("--replicas", type=int, default=3)
    p.add_argument("--workdir")
    p.add_argument("--timeout", type=float, default=600.0, help="per phase (default 600 s)")
    args = p.parse_args(argv)
    r = run(args.deployments, args.clusters, args.replicas, Path(args.workdir) if args.workdir else None,
            timeout=args.timeout)
    print(json.dumps(r, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
