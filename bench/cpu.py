"""Hub CPU per request: ``python -m bench.cpu``.

Starts ``fleetplane start`` (its in-process controllers off, so that only the request path is
measured), drives N requests of one kind at a fixed concurrency over HTTPS with keep-alive, and
reports the hub process's CPU time (utime + stime of every thread, from /proc/<pid>/stat) over
the requests divided by N. Wall time moves with the machine's load; CPU per request barely does,
so it is the figure to compare. Each operation is measured in several rounds after a warm-up;
the median is reported.

Operations: ConfigMap create, Deployment create (apps/v1 as a CRD imported from a cluster's
OpenAPI, the large-schema type), ConfigMap get, list of a namespace holding 100 ConfigMaps.

``--compare SRC`` runs a second hub on another source tree (e.g. ``git archive`` of the commit
before a change, its ``src``) and measures both in alternating rounds: on a loaded machine the
ratio of the two is the robust figure. ``--profile DIR`` records a py-spy profile of each hub
per operation (py-spy on PATH or in the venv), ``--json FILE`` writes the results.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import ssl
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from bench.hub import CONTROLLERS_OFF, HubProcess, MinimalProcess
from fleetplane.lab import Process

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


class Target:
    """One hub under load: its process, an HTTPS session, the objects the operations use."""

    def __init__(self, label: str, hub: Process, session: aiohttp.ClientSession) -> None:
        self.label = label
        self.hub = hub
        self.s = session
        self.pid = hub.proc.pid  # type: ignore[union-attr]
        self.seq = 0
        self.listed: list[str] = []

    async def expect(self, method: str, path: str, status: int, body: bytes | None = None) -> bytes:
        async with self.s.request(method, self.hub.url + path, data=body) as r:
            data = await r.read()
            assert r.status == status, (r.status, data[:300])
            return data

    def names(self, prefix: str, n: int) -> list[str]:
        self.seq += 1
        return [f"{prefix}-{self.seq}-{i}" for i in range(n)]

    async def setup(self) -> None:
        await self.expect("POST", CRDS, 201, orjson.dumps(deployment_crd()))
        deadline = time.monotonic() + 60
        while True:  # served once the CRD is Established
            async with self.s.get(self.hub.url + DEPLOYMENTS) as r:
                await r.read()
                if r.status == 200:
                    break
            assert time.monotonic() < deadline, "deployments.apps not served"
            await asyncio.sleep(0.1)
        await self.expect("POST", "/api/v1/namespaces", 201,
                          orjson.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "hundred"}}))
        self.listed = self.names("l", 100)
        await drive(100, 16, lambda i: self.expect("POST", LISTED, 201, orjson.dumps(configmap(self.listed[i]))))

    def op(self, what: str, n: int) -> Callable[[int], Awaitable[None]]:
        """``n`` requests of operation ``what`` (new objects for creates)."""
        if what in ("cm-create", "deploy-create"):
            path, make = (CONFIGMAPS, configmap) if what == "cm-create" else (DEPLOYMENTS, deployment)
            bodies = [orjson.dumps(make(name)) for name in self.names(what[0], n)]
            return lambda i: self.expect("POST", path, 201, bodies[i])
        if what == "get":
            return lambda i: self.expect("GET", f"{LISTED}/{self.listed[i % 100]}", 200)
        assert what == "list"
        return lambda i: self.expect("GET", LISTED, 200)


CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
LISTED = "/api/v1/namespaces/hundred/configmaps"
OPS = {"cm-create": ("ConfigMap create", 1.0), "deploy-create": ("Deployment create", 0.5), "get": ("ConfigMap get", 1.0),
       "list": ("list of 100", 0.1)}


def session_for(proc: Process, limit: int) -> aiohttp.ClientSession:
    ctx = ssl.create_default_context(cafile=str(proc.ca))
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx, limit=limit),
                                 headers={"Authorization": f"Bearer {proc.token}", "Content-Type": "application/json"})


def start_hub(src: str | None) -> HubProcess:
    """``fleetplane start`` running the sources in ``src`` (None: the ones this runs)."""
    if src is None:
        return HubProcess(*CONTROLLERS_OFF)
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([src, *([saved] if saved else [])])
    try:
        return HubProcess(*CONTROLLERS_OFF)
    finally:
        if saved is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = saved


def spy(pid: int, out: Path) -> subprocess.Popen[bytes]:
    exe = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    out.parent.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([exe, "record", "--pid", str(pid), "--format", "raw", "--rate", "250", "--nonblocking",
                             "--output", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def measure(targets: list[Target], what: str, n: int, rounds: int, concurrency: int, profile: Path | None) -> dict[str, Any]:
    """Rounds of ``n`` requests, alternating between the targets (ABAB...: the machine's load
    falls on both alike); hub CPU per request, median of the rounds."""
    for t in targets:
        await drive(max(n // 10, 50), concurrency, t.op(what, max(n // 10, 50)))  # warm-up
    per: dict[str, list[float]] = {t.label: [] for t in targets}
    rates: dict[str, list[float]] = {t.label: [] for t in targets}
    spies = [spy(t.pid, profile / f"{t.label}-{what}.txt") for t in targets] if profile else []
    try:
        for _ in range(rounds):
            for t in targets:
                op = t.op(what, n)
                c0 = cpu_seconds(t.pid)
                wall = await drive(n, concurrency, op)
                per[t.label].append((cpu_seconds(t.pid) - c0) / n * 1e6)
                rates[t.label].append(n / wall)
    finally:
        for p in spies:
            p.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT, not on SIGTERM
            p.wait(60)
    result: dict[str, Any] = {"op": OPS[what][0], "n": n, "rounds": rounds}
    for t in targets:
        result[t.label] = {"cpu_us": statistics.median(per[t.label]), "cpu_us_rounds": [round(x, 1) for x in per[t.label]],
                           "rate": statistics.median(rates[t.label])}
    line = "  ".join(f"{t.label} {result[t.label]['cpu_us']:7.1f} us ({', '.join(f'{x:.0f}' for x in per[t.label])})" for t in targets)
    for t in targets[1:]:
        line += f"  this/{t.label} {result['this']['cpu_us'] / result[t.label]['cpu_us']:.2f}"
    print(f"{OPS[what][0]:<18} {line}", flush=True)
    return result


async def run(args: argparse.Namespace) -> dict[str, Any]:
    sources: list[tuple[str, str | None]] = [("this", None)] + ([("other", args.compare)] if args.compare else [])
    hubs: list[Process] = [start_hub(src) for _, src in sources]
    labels = [label for label, _ in sources]
    if args.minimal:
        hubs.append(MinimalProcess())
        labels.append("minimal")
    results: dict[str, Any] = {"concurrency": args.concurrency, "ops": [], "compare": args.compare}
    try:
        async with contextlib.AsyncExitStack() as stack:
            targets = []
            for label, hub in zip(labels, hubs, strict=True):
                session = await stack.enter_async_context(session_for(hub, args.concurrency))
                targets.append(Target(label, hub, session))
            for t in targets:
                await t.setup()
            for what in args.ops.split(","):
                n = max(int(args.n * OPS[what][1]), 100)
                results["ops"].append(await measure(targets, what, n, args.rounds, args.concurrency,
                                                    Path(args.profile) if args.profile else None))
            if args.rss_creates:
                t = targets[0]
                before = rss_mib(t.pid)
                await drive(args.rss_creates, args.concurrency, t.op("cm-create", args.rss_creates))
                results["rss"] = {"creates": args.rss_creates, "before_mib": before, "after_mib": rss_mib(t.pid)}
                print(f"RSS {before:.0f} MiB -> {results['rss']['after_mib']:.0f} MiB after {args.rss_creates} creates", flush=True)
    finally:
        for hub in hubs:
            hub.stop()
    return results


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=2000, help="requests per round (Deployment creates: half, lists: a tenth)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--ops", default="cm-create,deploy-create,get,list")
    p.add_argument("--compare", default="", help="another source tree (its src/ directory): a second hub runs it, "
                   "measured in alternating rounds with this one")
    p.add_argument("--minimal", action="store_true", help="also measure bench/minimal_server.py (the baseline), alternating")
    p.add_argument("--profile", default="", help="a directory for py-spy profiles of the hub, one per operation")
    p.add_argument("--rss-creates", type=int, default=0, help="then this many creates, and the hub's RSS before and after")
    p.add_argument("--json", default="", help="write the results here")
    args = p.parse_args()
    results = asyncio.run(run(args))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
