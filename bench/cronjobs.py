"""Fleet-wide CronJob scheduling lag: from a run's scheduled time to its Job existing in a member
cluster, for N CronJobs firing at the same minute, beside a same-run baseline: the same CronJobs
given to one simulated cluster's own CronJob controller.
``python -m bench.cronjobs [--cronjobs 100]`` or ``await run()`` (part ``cronjobs`` of ``make bench``).

Real processes through :class:`fleetplane.lab.Lab`: two simulated clusters and the hub
(``fleetplane start``: the Cluster controller with a Syncer per cluster importing ``jobs.batch``
and ``cronjobs.batch``, and the fleet-wide CronJob controller). The lag of a run is the time a
watch on the clusters' Jobs sees it arrive minus its scheduled time (the Job's
``batch.kubernetes.io/cronjob-scheduled-timestamp``): the scheduler's wake-up, the hub write
and, for the fleet, the Syncer taking it down.

- ``baseline``: N CronJobs ``* * * * *`` created in cluster c1 (namespace ``baseline``), the next
  minute's N Jobs timed as they appear in c1;
- ``fleet``: N CronJobs ``* * * * *`` created on the hub; the next minute's N Jobs timed as they
  appear in either cluster (placement: least recently used, so the first runs spread by name order
  of the CronJob's own history: all new, so all go to the first cluster by name).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import ssl
import time
from pathlib import Path
from typing import Any

from fleetplane.apimachinery.metatime import parse_time
from fleetplane.lab import Lab, Process

RESOURCES = ["jobs.batch", "cronjobs.batch"]
SCHEDULED = "batch.kubernetes.io/cronjob-scheduled-timestamp"


def _cronjob(name: str, namespace: str) -> dict:
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name, "namespace": namespace},
            "spec": {"schedule": "* * * * *", "successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 1,
                     "jobTemplate": {"spec": {"template": {"spec": {
                         "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "1"]}]}}}}}}


class _Api:
    def __init__(self, proc: Process) -> None:
        self.base, self.token = proc.url, proc.token
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

    async def watch_jobs(self, seen: dict[str, float], minute: float, stop: asyncio.Event, n: int) -> None:
        """Record, per Job scheduled for ``minute``, when this cluster's watch first shows it; set
        ``stop`` once ``n`` were seen."""
        import aiohttp

        async with self.session.get(self.base + "/apis/batch/v1/jobs", params={"watch": "1"},
                                    timeout=aiohttp.ClientTimeout(total=None, sock_read=None)) as r:
            async for line in r.content:
                if stop.is_set():
                    return
                ev = json.loads(line)
                md = (ev.get("object") or {}).get("metadata") or {}
                when = parse_time((md.get("annotations") or {}).get(SCHEDULED))
                key = f"{md.get('namespace')}/{md.get('name')}"
                if ev.get("type") == "ADDED" and when is not None and abs(when - minute) < 1 and key not in seen:
                    seen[key] = time.time()
                    if len(seen) >= n:
                        stop.set()


def _stats(lags: list[float], n: int) -> dict[str, Any]:
    if not lags:
        return {"jobs": 0, "of": n}
    lags = sorted(lags)

    def pct(p: float) -> float:
        return round(lags[min(len(lags) - 1, int(round(p / 100 * len(lags))) - 1 if p < 100 else len(lags) - 1)], 3)

    return {"jobs": len(lags), "of": n, "p50_s": pct(50), "p90_s": pct(90), "p99_s": pct(99), "max_s": round(lags[-1], 3)}


async def _fire(create: list[tuple[_Api, str, dict]], watch: list[_Api], n: int, timeout: float = 150.0) -> dict[str, Any]:
    """Create the CronJobs with at least 15 s to spare before a minute boundary, then time the Jobs
    of that minute as the clusters' watches see them."""
    if time.time() % 60 > 40:
        await asyncio.sleep(60.5 - time.time() % 60)
    minute = (int(time.time() // 60) + 1) * 60.0
    sem = asyncio.Semaphore(16)

    async def one(api: _Api, path: str, body: dict) -> None:
        async with sem:
            code, got = await api.request("POST", path, body)
            if code not in (201, 409):
                raise RuntimeError(f"create {body['metadata']['name']}: {code} {got}")

    await asyncio.gather(*(one(*c) for c in create))
    seen: dict[str, float] = {}
    stop = asyncio.Event()
    tasks = [asyncio.create_task(api.watch_jobs(seen, minute, stop, n)) for api in watch]
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), minute + timeout - time.time())
    stop.set()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return _stats([t - minute for t in seen.values()], n)


async def run(cronjobs: int = 100, workdir: Path | None = None) -> dict[str, Any]:
    """The two runs (the lab's process control blocks the loop between them, as nothing else runs)."""
    with Lab(workdir) as lab:
        names = ["c1", "c2"]
        sims = dict(zip(names, lab.simulate_all(names, "--nodes", "2", "--kubelet-delay", "0.2"), strict=True))

        async def baseline() -> dict[str, Any]:
            async with _Api(sims["c1"]) as c1:
                await c1.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                                "metadata": {"name": "baseline"}})
                out = await _fire([(c1, "/apis/batch/v1/namespaces/baseline/cronjobs", _cronjob(f"cj-{i:03d}", "baseline"))
                                   for i in range(cronjobs)], [c1], cronjobs)
                await c1.request("DELETE", "/api/v1/namespaces/baseline")
                return out

        base = await baseline()
        lab.start_hub("--cluster-probe-interval", "2", "--cronjob-join-grace", "0", "--no-splitter")
        # (jobs.batch and cronjobs.batch are among the Syncer's default types: no extra grant)
        lab.attach(*names, resources=RESOURCES)
        lab.wait_attached(names, timeout=120)
        lab.wait_served("batch/v1", "cronjobs", timeout=120)

        async def fleet() -> dict[str, Any]:
            async with _Api(lab.hub) as hub, _Api(sims["c1"]) as c1, _Api(sims["c2"]) as c2:
                return await _fire([(hub, "/apis/batch/v1/namespaces/default/cronjobs", _cronjob(f"cj-{i:03d}", "default"))
                                    for i in range(cronjobs)], [c1, c2], cronjobs)

        fl = await fleet()
    ratio = round(fl["p99_s"] / base["p99_s"], 2) if fl.get("p99_s") and base.get("p99_s") else None
    return {"cronjobs": cronjobs, "clusters": len(names), "baseline": base, "fleet": fl, "ratio_p99": ratio}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cronjobs", type=int, default=100)
    args = p.parse_args()
    print(json.dumps(asyncio.run(run(args.cronjobs)), indent=2))


if __name__ == "__main__":
    main()
