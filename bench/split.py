"""End to end: N Deployments over M simulated clusters, from a cold start to full READY, and after a
hub restart, beside a baseline of the same run: what the clusters alone take.
``python -m bench.split [--deployments 1000] [--clusters 10]`` or ``run()``
(part ``split`` of ``make bench``).

Real processes, started through the CLI by :class:`fleetplane.lab.Lab`: M simulated clusters
(``fleetplane cluster simulate``: nodes, Deployment and ReplicaSet controllers, scheduler,
kubelets) and the hub (``fleetplane start``: the Cluster controller with one Syncer per cluster,
and the splitter). The N Deployments (``replicas`` each, Even) are created through the API with
16 requests in flight, and the list is polled every 0.5 s until every Deployment reports
``readyReplicas == replicas`` with ``observedGeneration == generation``:

- ``baseline``: before the hub starts, the same work given to the clusters directly: in each
  cluster, in namespace ``baseline``, the Deployments the splitter will give it (same names, its
  share of the replicas, computed with the placement engine the splitter uses), from the first
  create to all READY. The namespace is then deleted (and waited for) before the fleet run;
- ``cold``: the hub starts, the clusters are attached (Cluster objects) and healthy for longer
  than the splitter's join grace; from the first create on the hub to all parents READY (placement, children, Syncers down, the clusters' controllers
  and kubelets, status up, aggregation); ``ratio``: cold over baseline;
- ``restart``: the hub is stopped (SIGTERM) and started on the same data: the time until it
  serves, until every parent is READY again, and how many children the splitter rewrote (0:
  nothing moves on a restart);
- ``writes``: the hub writes of the cold start per Deployment, by kind (issue 16 item 5), counted
  through watches on the hub (Deployments, Events, PlacementDecisions) from before the first create
  until every parent is READY and the count has settled: each ADDED / MODIFIED / DELETED is one
  write; a MODIFIED Deployment is classified by what it changed; the users' creates are not counted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import ssl
import sys
import time
from pathlib import Path
from typing import Any

from fleetplane.fleet.placement import ClusterInfo, decide
from fleetplane.lab import Lab, Process

JOIN_GRACE = 2.0
#: ``fleetplane start``'s defaults (probe timeouts, Syncer type polling, grace periods, the KEP's
#: status budget) but a quicker first probe and join grace, so the fleet is ready sooner; nothing
#: that the measured part depends on is tuned
HUB_FLAGS = ["--cluster-probe-interval", "2", "--splitter-join-grace", str(JOIN_GRACE)]
KUBELET_DELAY = "0.2"
NAMESPACE = "default"
BASELINE_NAMESPACE = "baseline"


class _Api:
    """Plain HTTPS JSON requests (aiohttp) to one process, with concurrency."""

    def __init__(self, proc: Process) -> None:
        self.base = proc.url
        self.token = proc.token
        self.ssl = ssl.create_default_context(cafile=str(proc.ca))

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


#: what the write count watches: (label, path)
WATCHED = (("deployments", "/apis/apps/v1/deployments"), ("events", "/api/v1/events"),
           ("placementdecisions", "/apis/multicluster.x-k8s.io/v1alpha1/placementdecisions"))


def _write_kind(label: str, etype: str, old: dict | None, new: dict) -> str:
    """One watch event as a kind of write: ``child status``, ``parent annotation <key>``, ``Event <reason>``..."""
    md = new.get("metadata") or {}
    if label == "events":
        return f"Event {new.get('reason')}" + (" (count bumped)" if etype == "MODIFIED" else "")
    if label == "placementdecisions":
        return f"PlacementDecision {etype.lower()}"
    who = "child" if "kcp.dev/cluster" in (md.get("labels") or {}) else "parent"
    if etype != "MODIFIED" or old is None:
        return f"{who} {etype.lower()}"
    om = old.get("metadata") or {}
    parts = [p for p in ("spec", "status") if old.get(p) != new.get(p)]
    if om.get("finalizers") != md.get("finalizers"):
        parts.append("finalizers")
    oa, na = om.get("annotations") or {}, md.get("annotations") or {}
    parts += [f"annotation {k}" for k in sorted(set(oa) | set(na)) if oa.get(k) != na.get(k)]
    return f"{who} " + ("+".join(parts) or "metadata")


class _WriteCount:
    """Watches of :data:`WATCHED` from the current resourceVersion; ``kinds`` counts the writes."""

    def __init__(self, api: _Api) -> None:
        self.api = api
        self.kinds: dict[str, int] = {}
        self.total = 0
        self.tasks: list[asyncio.Task] = []

    async def start(self) -> None:
        for label, path in WATCHED:
            code, body = await self.api.request("GET", path + "?limit=1")
            if code != 200:
                continue  # (PlacementDecisions not served: nothing to count)
            rv = body["metadata"]["resourceVersion"]
            self.tasks.append(asyncio.create_task(self._watch(label, f"{path}?watch=1&resourceVersion={rv}")))

    async def _watch(self, label: str, path: str) -> None:
        import aiohttp

        last: dict[tuple[str, str], dict] = {}
        async with self.api.session.get(self.api.base + path, timeout=aiohttp.ClientTimeout(total=None)) as r:
            async for line in r.content:
                if not line.strip():
                    continue
                ev = json.loads(line)
                if ev.get("type") not in ("ADDED", "MODIFIED", "DELETED"):
                    continue
                obj = ev["object"]
                key = ((obj.get("metadata") or {}).get("namespace") or "", (obj.get("metadata") or {}).get("name") or "")
                kind = _write_kind(label, ev["type"], last.get(key), obj)
                last[key] = obj
                self.kinds[kind] = self.kinds.get(kind, 0) + 1
                self.total += 1

    async def settle(self, quiet: float = 3.0, timeout: float = 60.0) -> None:
        """Until nothing more is written for ``quiet`` seconds (what is in flight lands), or ``timeout``."""
        t0, seen = time.monotonic(), -1
        while self.total != seen and time.monotonic() - t0 < timeout:
            seen = self.total
            await asyncio.sleep(quiet)

    async def stop(self) -> None:
        for t in self.tasks:
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    def per(self, n: int) -> dict[str, Any]:
        """Per Deployment: each kind, and the total without the users' creates."""
        kinds = {k: round(v / n, 2) for k, v in sorted(self.kinds.items()) if k != "parent added"}
        return {"total": round(sum(v for k, v in self.kinds.items() if k != "parent added") / n, 2), "by_kind": kinds}


def _name(i: int) -> str:
    return f"app-{i:04d}"


def _deployment(name: str, replicas: int, namespace: str = NAMESPACE) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx:1.27",
                                                           "resources": {"requests": {"cpu": "10m"}}}]}}}}


def planned_split(deployments: int, clusters: list[str], replicas: int) -> dict[str, dict[str, int]]:
    """{deployment: {cluster: replicas}}: what the splitter decides for the bench's Deployments on
    a fleet of healthy clusters with room (the same engine, the same tie seed)."""
    fleet = [ClusterInfo(name=c, since=0.0) for c in clusters]
    now = time.time()
    return {_name(i): decide(replicas, None, fleet, now=now, seed=f"{NAMESPACE}/{_name(i)}").assignment()
            for i in range(deployments)}


def _is_ready(d: dict) -> bool:
    st = d.get("status") or {}
    return st.get("readyReplicas") == d["spec"]["replicas"] and st.get("observedGeneration") == d["metadata"].get("generation")


class _Marks:
    """When 50, 90, 99 and 100 % of ``n`` were READY (seconds from ``t0``)."""

    def __init__(self, n: int, t0: float) -> None:
        self.n, self.t0 = n, t0
        self.marks: dict[str, float] = {}

    def update(self, ready: int) -> bool:
        for pct in (50, 90, 99, 100):
            if f"p{pct}_s" not in self.marks and ready >= self.n * pct / 100:
                self.marks[f"p{pct}_s"] = round(time.monotonic() - self.t0, 1)
        return ready >= self.n


async def _create_all(items: list[tuple[_Api, str, dict]], concurrency: int = 16) -> None:
    sem = asyncio.Semaphore(concurrency)

    async def create(api: _Api, path: str, body: dict) -> None:
        async with sem:
            code, got = await api.request("POST", path, body)
            if code not in (201, 409):
                raise RuntimeError(f"create {body['metadata']['name']}: {code} {got}")

    await asyncio.gather(*(create(*item) for item in items))


async def _all_ready(api: _Api, n: int, timeout: float, children: int = 0, t0: float | None = None) -> dict[str, Any]:
    """Poll the hub until every parent is READY with its generation observed; the times at which
    50, 90, 99 and 100 % were, when every child existed (``placed_s``: the splitter's part), and the
    counts at the end (a timeout returns what was reached). Times count from ``t0``."""
    marks = _Marks(n, time.monotonic() if t0 is None else t0)
    last: dict = {}
    while time.monotonic() - marks.t0 < timeout:
        code, body = await api.request("GET", f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments")
        if code == 200:
            parents = [d for d in body["items"] if "kcp.dev/cluster" not in (d["metadata"].get("labels") or {})]
            ready = sum(1 for d in parents if _is_ready(d))
            last = {"parents": len(parents), "ready": ready, "children": len(body["items"]) - len(parents)}
            if children and "placed_s" not in marks.marks and last["children"] >= children:
                marks.marks["placed_s"] = round(time.monotonic() - marks.t0, 1)
            if marks.update(ready):
                break
        await asyncio.sleep(0.5)
    return {**marks.marks, "counts": last, "complete": last.get("ready", 0) >= n}


async def _children(api: _Api) -> dict[str, tuple]:
    """The live children: name -> (generation, replicas, cluster, parent)."""
    code, body = await api.request(
        "GET", f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments?labelSelector=kcp.dev%2Fcluster")
    out = {}
    for d in body.get("items") or []:
        md = d["metadata"]
        if not md.get("deletionTimestamp"):
            labels = md.get("labels") or {}
            out[md["name"]] = (md.get("generation"), d["spec"].get("replicas"), labels.get("kcp.dev/cluster"),
                               labels.get("kcp.dev/owned-by"))
    return out


async def _baseline(sims: dict[str, Process], plan: dict[str, dict[str, int]], timeout: float,
                    say: Any) -> dict[str, Any]:
    """The planned per-cluster Deployments created directly in the clusters, timed to all READY;
    then their namespace deleted and waited for."""
    async with contextlib.AsyncExitStack() as stack:
        apis = {name: await stack.enter_async_context(_Api(proc)) for name, proc in sims.items()}
        path = f"/apis/apps/v1/namespaces/{BASELINE_NAMESPACE}/deployments"
        for api in apis.values():
            code, body = await api.request("POST", "/api/v1/namespaces", {
                "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": BASELINE_NAMESPACE}})
            if code not in (201, 409):
                raise RuntimeError(f"create namespace {BASELINE_NAMESPACE}: {code} {body}")
        items = [(apis[cluster], path, _deployment(name, n, BASELINE_NAMESPACE))
                 for name, split in plan.items() for cluster, n in sorted(split.items())]
        per_cluster = {c: sum(1 for api, _, _ in items if api is apis[c]) for c in apis}
        result: dict[str, Any] = {"deployments": len(items)}
        t0 = time.monotonic()
        await _create_all(items)
        result["create_s"] = round(time.monotonic() - t0, 2)
        marks = _Marks(len(items), t0)
        ready = 0
        while time.monotonic() - t0 < timeout:
            lists = await asyncio.gather(*(api.request("GET", path) for api in apis.values()))
            ready = sum(1 for code, body in lists if code == 200 for d in body["items"] if _is_ready(d))
            if marks.update(ready):
                break
            await asyncio.sleep(0.5)
        result.update(marks.marks, ready=ready, complete=ready >= len(items))
        say(f"baseline: {len(items)} Deployments ({per_cluster}) directly in the clusters: {result}")
        # clean up: the namespace and everything in it, before the fleet run starts
        t1 = time.monotonic()
        for api in apis.values():
            await api.request("DELETE", f"/api/v1/namespaces/{BASELINE_NAMESPACE}")
        while time.monotonic() - t1 < timeout:
            codes = [c for c, _ in await asyncio.gather(*(
                api.request("GET", f"/api/v1/namespaces/{BASELINE_NAMESPACE}") for api in apis.values()))]
            if all(c == 404 for c in codes):
                break
            await asyncio.sleep(0.5)
        else:
            raise RuntimeError(f"namespace {BASELINE_NAMESPACE} not deleted in {timeout:.0f}s")
        result["cleanup_s"] = round(time.monotonic() - t1, 1)
        return result


def _nodes_ready(proc: Process, nodes: int) -> bool:
    items = (proc.get("/api/v1/nodes") or {}).get("items") or []
    return sum(1 for n in items if any(c.get("type") == "Ready" and c.get("status") == "True"
                                       for c in (n.get("status") or {}).get("conditions") or [])) >= nodes


def run(deployments: int = 1000, clusters: int = 10, replicas: int = 3, workdir: Path | None = None,
        timeout: float = 600.0, log: Any = None) -> dict[str, Any]:
    say = log or (lambda s: print(s, file=sys.stderr, flush=True))
    result: dict[str, Any] = {"deployments": deployments, "clusters": clusters, "replicas_each": replicas}
    with Lab(workdir) as lab:
        t = time.monotonic()
        names = [f"c{i:02d}" for i in range(clusters)]
        # room for every replica: 110 pods per node, with a margin
        nodes = max(2, -(-deployments * replicas * 3 // (2 * clusters * 110)))
        result["nodes_per_cluster"] = nodes
        sims = dict(zip(names, lab.simulate_all(names, "--nodes", str(nodes), "--kubelet-delay", KUBELET_DELAY),
                        strict=True))
        lab.wait_until("every cluster's nodes Ready", lambda: all(_nodes_ready(p, nodes) for p in sims.values()))
        result["processes_started_s"] = round(time.monotonic() - t, 1)

        plan = planned_split(deployments, names, replicas)
        result["baseline"] = asyncio.run(_baseline(sims, plan, timeout, say))
        result["baseline_to_ready_s"] = result["baseline"].get("p100_s")

        t = time.monotonic()
        hub = lab.start_hub(*HUB_FLAGS)
        lab.attach(*names, location="lab", resources=["deployments.apps"])
        lab.wait_attached(names, timeout=120)
        lab.wait_served("apps/v1", "deployments", timeout=120)
        time.sleep(JOIN_GRACE + 0.5)  # the clusters are past the splitter's join damping: they take replicas now
        result["fleet_ready_s"] = round(time.monotonic() - t, 1)
        say(f"fleet of {clusters} clusters ready in {result['fleet_ready_s']}s; creating {deployments} Deployments")

        async def cold() -> dict:
            async with _Api(hub) as api:
                path = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments"
                writes = _WriteCount(api)
                await writes.start()
                t0 = time.monotonic()
                await _create_all([(api, path, _deployment(_name(i), replicas)) for i in range(deployments)])
                result["create_s"] = round(time.monotonic() - t0, 2)
                result["cold"] = await _all_ready(api, deployments, timeout, sum(len(s) for s in plan.values()), t0)
                result["cold_to_ready_s"] = result["cold"].get("p100_s")
                await writes.settle()
                await writes.stop()
                result["writes_per_deployment"] = writes.per(deployments)
                return await _children(api)

        before = asyncio.run(cold())
        placed: dict[str, dict[str, int]] = {}
        for _, n, cluster, parent in before.values():
            placed.setdefault(parent, {})[cluster] = n
        result["baseline_same_split"] = sum(1 for name, split in plan.items() if placed.get(name) == split)
        say(f"cold: {deployments} Deployments: {result['cold']}; "
            f"{result['baseline_same_split']} of {deployments} split as in the baseline; "
            f"hub writes per Deployment: {result['writes_per_deployment']}")

        hub.restart()
        t0 = hub.spawned_at
        result["restart_serving_s"] = round(hub.ready_s, 2)

        async def after() -> None:
            async with _Api(hub) as api:
                result["restart"] = await _all_ready(api, deployments, timeout, t0=t0)
                result["restart_to_ready_s"] = round(time.monotonic() - t0, 2)
                # give the controllers time to relist and reconcile everything, then count rewrites
                await asyncio.sleep(10)
                now = await _children(api)
                result["restart_children_rewritten"] = sum(1 for k, v in now.items() if before.get(k) != v)
                result["children"] = len(now)

        asyncio.run(after())
        say(f"restart: serving in {result['restart_serving_s']}s, READY in {result['restart_to_ready_s']}s, "
            f"{result['restart_children_rewritten']} children rewritten")
    cold_s, base_s = result.get("cold_to_ready_s"), result.get("baseline_to_ready_s")
    result["ratio_cold_over_baseline"] = round(cold_s / base_s, 2) if cold_s and base_s else None
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.split")
    p.add_argument("--deployments", type=int, default=1000)
    p.add_argument("--clusters", type=int, default=10)
    p.add_argument("--replicas", type=int, default=3)
    p.add_argument("--workdir", help="keep the processes' data and logs here (default: a temporary directory)")
    p.add_argument("--timeout", type=float, default=600.0, help="per phase (default 600 s)")
    args = p.parse_args(argv)
    r = run(args.deployments, args.clusters, args.replicas, Path(args.workdir) if args.workdir else None,
            timeout=args.timeout)
    print(json.dumps(r, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
