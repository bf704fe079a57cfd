"""Hub CPU per request: ``python -m bench.cpu``.

Starts ``fleetplane start`` (its in-process controllers off, so that only the request path is
measured), drives N requests of one kind at a fixed concurrency over HTTPS with keep-alive, and
reports the hub process's CPU time (utime + stime of every thread, from /proc/<pid>/stat) over
the requests divided by N. Wall time moves with the machine's load; CPU per request barely does,
so it is the figure to compare. Each operation is measured in several rounds after a warm-up;
the median is reported.

Operations: ConfigMap create, Deployment create (apps/v1 as a CRD imported from a cluster's
OpenAPI, the large-schema type), ConfigMap get, list of a namespace holding 100 ConfigMaps.

``--profile DIR`` also records a py-spy profile of the hub per operation (py-spy on PATH or
in the venv), ``--json FILE`` writes the results.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from bench.hub import HubProcess

CONTROLLERS_OFF = ("--no-cluster-controller", "--no-splitter", "--no-service-controller", "--no-hpa-controller",
                   "--no-cronjob-controller", "--no-placement-decisions")
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of the whole process (all threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"bench": "yes", "n": name[-1]}},
            "data": {"key": "x" * 200, "index": name}}


def deployment(name: str) -> dict[str, Any]:
    """What a user writes for a small web Deployment (the imported kind's defaults fill the rest)."""
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                                                           "ports": [{"containerPort": 80}],
                                                           "resources": {"requests": {"cpu": "10m"}}}]}}}}


def deployment_crd() -> dict[str, Any]:
    """apps/v1 Deployment as the Syncer imports it from a cluster (the same schema code)."""
    from fleetplane.apis import apps
    from fleetplane.fleet.syncer.schema import crd_version_from_openapi
    from fleetplane.server import openapi

    rts = [r for r in apps.resource_types() if r.kind == "Deployment"]
    version = crd_version_from_openapi(openapi.group_version_document("apps/v1", rts), "apps", "v1", "Deployment",
                                       frozenset({"status", "scale"}))
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "deployments.apps", "annotations": {"api-approved.kubernetes.io": "https://github.com/kubernetes/kubernetes/pull/1"}},
            "spec": {"group": "apps", "scope": "Namespaced", "versions": [version],
                     "names": {"plural": "deployments", "singular": "deployment", "kind": "Deployment", "listKind": "DeploymentList"}}}


async def drive(n: int, concurrency: int, op: Callable[[int], Awaitable[None]]) -> float:
    """``n`` calls of ``op`` from ``concurrency`` workers; wall seconds."""
    it = iter(range(n))

    async def worker() -> None:
        for i in it:
            await op(i)

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - t0


class Bench:
    def __init__(self, hub: HubProcess, session: aiohttp.ClientSession, concurrency: int, profile: Path | None) -> None:
        self.hub = hub
        self.s = session
        self.concurrency = concurrency
        self.profile = profile
        self.pid = hub.proc.pid  # type: ignore[union-attr]
        self.seq = 0

    async def expect(self, method: str, path: str, status: int, body: bytes | None = None) -> bytes:
        async with self.s.request(method, self.hub.url + path, data=body) as r:
            data = await r.read()
            assert r.status == status, (r.status, data[:300])
            return data

    def names(self, prefix: str, n: int) -> list[str]:
        self.seq += 1
        return [f"{prefix}-{self.seq}-{i}" for i in range(n)]

    async def measure(self, what: str, n: int, rounds: int, make_op: Callable[[], Callable[[int], Awaitable[None]]]) -> dict[str, Any]:
        await drive(max(n // 10, 50), self.concurrency, make_op())  # warm-up
        per: list[float] = []
        rates: list[float] = []
        spy = self._spy(what)
        try:
            for _ in range(rounds):
                op = make_op()
                c0 = cpu_seconds(self.pid)
                wall = await drive(n, self.concurrency, op)
                per.append((cpu_seconds(self.pid) - c0) / n * 1e6)
                rates.append(n / wall)
        finally:
            if spy is not None:
                spy.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT, not on SIGTERM
                spy.wait(60)
        result = {"op": what, "n": n, "rounds": rounds, "cpu_us": statistics.median(per), "cpu_us_rounds": [round(p, 1) for p in per],
                  "rate": statistics.median(rates)}
        print(f"{what:<22} {result['cpu_us']:8.1f} us/request  (rounds {', '.join(f'{p:.0f}' for p in per)}; {result['rate']:.0f}/s)",
              flush=True)
        return result

    def _spy(self, what: str) -> subprocess.Popen[bytes] | None:
        if self.profile is None:
            return None
        exe = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        self.profile.mkdir(parents=True, exist_ok=True)
        out = self.profile / (what.replace(" ", "_") + ".txt")
        return subprocess.Popen([exe, "record", "--pid", str(self.pid), "--format", "raw", "--rate", "250", "--nonblocking",
                                 "--output", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def create_op(self, path: str, make: Callable[[str], dict[str, Any]], prefix: str, n: int) -> Callable[[], Callable[[int], Awaitable[None]]]:
        def make_op() -> Callable[[int], Awaitable[None]]:
            bodies = [orjson.dumps(make(name)) for name in self.names(prefix, n)]

            async def op(i: int) -> None:
                await self.expect("POST", path, 201, bodies[i % len(bodies)])

            return op

        return make_op


async def run(args: argparse.Namespace) -> dict[str, Any]:
    hub = HubProcess(*CONTROLLERS_OFF)
    results: dict[str, Any] = {"concurrency": args.concurrency, "ops": []}
    try:
        async with hub.session(args.concurrency) as s:
            b = Bench(hub, s, args.concurrency, Path(args.profile) if args.profile else None)
            ns = "/api/v1/namespaces/default/configmaps"
            await b.expect("POST", CRDS, 201, orjson.dumps(deployment_crd()))
            deadline = time.monotonic() + 60
            while True:  # served once the CRD is Established
                async with s.get(hub.url + "/apis/apps/v1/namespaces/default/deployments") as r:
                    await r.read()
                    if r.status == 200:
                        break
                assert time.monotonic() < deadline, "deployments.apps not served"
                await asyncio.sleep(0.1)
            ops = set(args.ops.split(","))
            n = args.n
            if "cm-create" in ops:
                results["ops"].append(await b.measure("ConfigMap create", n, args.rounds,
                                                      b.create_op(ns, configmap, "cm", n)))
            if "deploy-create" in ops:
                results["ops"].append(await b.measure("Deployment create", n // 2, args.rounds,
                                                      b.create_op("/apis/apps/v1/namespaces/default/deployments", deployment, "d", n // 2)))
            if "get" in ops or "list" in ops:
                await b.expect("POST", "/api/v1/namespaces", 201, orjson.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "hundred"}}))
                listed = "/api/v1/namespaces/hundred/configmaps"
                names = b.names("l", 100)
                await drive(100, args.concurrency, lambda i: b.expect("POST", listed, 201, orjson.dumps(configmap(names[i]))))
            if "get" in ops:
                def get_op() -> Callable[[int], Awaitable[None]]:
                    async def op(i: int) -> None:
                        await b.expect("GET", f"{listed}/{names[i % 100]}", 200)
                    return op
                results["ops"].append(await b.measure("ConfigMap get", n, args.rounds, get_op))
            if "list" in ops:
                def list_op() -> Callable[[int], Awaitable[None]]:
                    async def op(i: int) -> None:
                        await b.expect("GET", listed, 200)
                    return op
                results["ops"].append(await b.measure("list of 100", max(n // 10, 100), args.rounds, list_op))
            if args.rss_creates:
                before = rss_mib(b.pid)
                await drive(args.rss_creates, args.concurrency, b.create_op(ns, configmap, "rss", args.rss_creates)())
                results["rss"] = {"creates": args.rss_creates, "before_mib": before, "after_mib": rss_mib(b.pid)}
                print(f"RSS {before:.0f} MiB -> {results['rss']['after_mib']:.0f} MiB after {args.rss_creates} creates", flush=True)
    finally:
        hub.stop()
    return results


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=2000, help="requests per round (Deployment creates: half, lists: a tenth)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--ops", default="cm-create,deploy-create,get,list")
    p.add_argument("--profile", default="", help="a directory for py-spy profiles of the hub, one per operation")
    p.add_argument("--rss-creates", type=int, default=0, help="then this many creates, and the hub's RSS before and after")
    p.add_argument("--json", default="", help="write the results here")
    args = p.parse_args()
    results = asyncio.run(run(args))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
