"""Fairness between tenants (API Priority and Fairness): a quiet tenant's GET latency alone, and
while a noisy tenant (its own user in its own logical cluster) floods writes from many
connections, in the same hub, same run; the ratio of the p99s is the figure.

The flood runs in a process of its own (``python -m bench.fairness flood ...``), so the quiet
client's timings are not the flooder's GIL; both run on the hub's machine. The test
``tests/hub/test_flowcontrol.py`` uses the same pieces.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

QUIET_TOKEN = "quiet-tenant-token-0123456789abcdef"
NOISY_TOKEN = "noisy-tenant-token-0123456789abcdef"
TOKEN_FILE_LINES = (f'{QUIET_TOKEN},quiet-user,2001,"quiet-devs"\n', f'{NOISY_TOKEN},noisy-user,2002,"noisy-devs"\n')
QUIET_CLUSTER, NOISY_CLUSTER = "quiet-tenant", "noisy-tenant"


def write_token_file(directory: Path) -> Path:
    path = directory / "fairness-tokens.csv"
    path.write_text("".join(TOKEN_FILE_LINES))
    path.chmod(0o600)
    return path


def _binding(user: str) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{user}-admin"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}


def set_up_tenants(url: str, ca: Path, admin_token: str, flow_control: bool = True) -> None:
    """Each tenant admin of its own logical cluster; the quiet tenant's ConfigMap to read; the
    hub's flow-control configuration in place (it is written just after the hub starts)."""
    with httpx.Client(base_url=url, verify=ssl.create_default_context(cafile=str(ca)),
                      headers={"Authorization": f"Bearer {admin_token}"}, timeout=30) as c:
        deadline = time.monotonic() + 30
        while flow_control and c.get("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/global-default").status_code != 200:
            assert time.monotonic() < deadline, "no flow-control configuration"
            time.sleep(0.1)
        for cluster, user in ((QUIET_CLUSTER, "quiet-user"), (NOISY_CLUSTER, "noisy-user")):
            r = c.post(f"/clusters/{cluster}/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", json=_binding(user))
            assert r.status_code in (201, 409), r.text
        r = c.post(f"/clusters/{QUIET_CLUSTER}/api/v1/namespaces/default/configmaps",
                   json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "quiet"}, "data": {"k": "v"}})
        assert r.status_code in (201, 409), r.text


def quiet_latencies(url: str, ca: Path, n: int) -> list[float]:
    """``n`` GETs of one ConfigMap, one after another on one connection, as the quiet tenant."""
    out: list[float] = []
    with httpx.Client(base_url=url, verify=ssl.create_default_context(cafile=str(ca)),
                      headers={"Authorization": f"Bearer {QUIET_TOKEN}"}, timeout=30) as c:
        path = f"/clusters/{QUIET_CLUSTER}/api/v1/namespaces/default/configmaps/quiet"
        assert c.get(path).status_code == 200  # the connection is open before timing starts
        for _ in range(n):
            t0 = time.perf_counter()
            r = c.get(path)
            out.append(time.perf_counter() - t0)
            assert r.status_code == 200, r.text
    return out


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Flood:
    """The noisy tenant's flood in a process of its own; ``started`` once its first write landed."""

    def __init__(self, url: str, ca: Path, connections: int) -> None:
        self.report = Path(tempfile.mkstemp(prefix="fleetplane-flood-")[1])
        self.proc = subprocess.Popen([sys.executable, "-m", "bench.fairness", "flood", "--url", url, "--ca", str(ca),
                                      "--connections", str(connections), "--report", str(self.report)],
                                     cwd=Path(__file__).resolve().parent.parent, stdout=subprocess.PIPE, text=True,
                                     env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                         [str(Path(__file__).resolve().parent.parent), os.environ.get("PYTHONPATH", "")])})

    def wait_started(self, timeout: float = 60.0) -> None:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if line.strip() == "flooding":
                return
            if not line and self.proc.poll() is not None:
                raise AssertionError(f"the flood exited with {self.proc.returncode}")
        raise AssertionError("the flood did not start")

    def stop(self) -> dict[str, float]:
        """End the flood; what it did: writes, 429s, seconds."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)
        values: dict[str, float] = {}
        with contextlib.suppress(OSError, ValueError):
            for line in self.report.read_text().splitlines():
                k, _, v = line.partition("=")
                values[k] = float(v)
        self.report.unlink(missing_ok=True)
        return values


async def _flood(url: str, ca: str, connections: int, report: str) -> None:
    import aiohttp

    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    counts = {"created": 0, "rejected": 0}
    latencies: list[float] = []
    context = ssl.create_default_context(cafile=ca)
    path = f"{url}/clusters/{NOISY_CLUSTER}/api/v1/namespaces/default/configmaps"
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "flood-"}, "data": {"k": "x" * 200}}
    started = [time.perf_counter()]
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context, limit=connections),
                                     headers={"Authorization": f"Bearer {NOISY_TOKEN}"}) as s:
        answered: set[int] = set()

        async def writer(i: int) -> None:
            while not stop.is_set():
                t0 = time.perf_counter()
                async with s.post(path, json=body) as r:
                    await r.read()
                    if r.status == 201:
                        counts["created"] += 1
                        latencies.append(time.perf_counter() - t0)
                    elif r.status == 429:
                        counts["rejected"] += 1
                        await asyncio.sleep(0.01)  # a real client backs off; the flood stays a flood
                    else:
                        raise AssertionError(f"{r.status}: {await r.text()}")
                if i not in answered:
                    answered.add(i)
                    if len(answered) == connections:  # every connection is open and writing
                        print("flooding", flush=True)
                        started[0] = time.perf_counter()
                        latencies.clear()
                        counts.update(created=0, rejected=0)

        tasks = [asyncio.create_task(writer(i)) for i in range(connections)]
        await stop.wait()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    seconds = time.perf_counter() - started[0]
    p50 = statistics.median(latencies) if latencies else 0.0
    text = (f"created={counts['created']}\nrejected={counts['rejected']}\nseconds={seconds}\n"
            f"latency_p50={p50}\n")
    await asyncio.to_thread(Path(report).write_text, text)


def measure(url: str, ca: Path, *, gets: int, connections: int) -> dict[str, Any]:
    """The quiet tenant's GETs alone, then under the noisy tenant's flood."""
    alone = quiet_latencies(url, ca, gets)
    flood = Flood(url, ca, connections)
    try:
        flood.wait_started()
        flooded = quiet_latencies(url, ca, gets)
    finally:
        did = flood.stop()
    ms = 1000.0
    return {"gets": gets, "connections": connections,
            "alone_p50_ms": round(statistics.median(alone) * ms, 2), "alone_p99_ms": round(p(alone, 0.99) * ms, 2),
            "flooded_p50_ms": round(statistics.median(flooded) * ms, 2),
            "flooded_p99_ms": round(p(flooded, 0.99) * ms, 2),
            "ratio_p99": round(p(flooded, 0.99) / p(alone, 0.99), 2),
            "noisy_writes_per_s": round(did.get("created", 0) / did["seconds"], 1) if did.get("seconds") else None,
            "noisy_p50_ms": round(did.get("latency_p50", 0.0) * ms, 2),
            "noisy_rejected": int(did.get("rejected", 0))}


def run(quick: bool = False) -> dict[str, Any]:
    """The bench part: a hub with the two tenants; with flow control, and (the baseline of what APF
    buys) the same hub restarted with ``--no-enable-priority-and-fairness``."""
    from .hub import HubProcess

    tokens = write_token_file(Path(tempfile.mkdtemp(prefix="fleetplane-bench-fairness-")))
    gets = 300 if quick else 1000
    out: dict[str, Any] = {}
    for label, flags in (("apf", []), ("no_apf", ["--no-enable-priority-and-fairness"])):
        hub = HubProcess("--token-auth-file", str(tokens), "--no-cluster-controller", "--no-splitter", *flags)
        try:
            set_up_tenants(hub.url, hub.ca, hub.token, flow_control=not flags)
            out[label] = measure(hub.url, hub.ca, gets=gets, connections=64)
        finally:
            hub.stop()
    return out


def render(r: dict[str, Any]) -> list[str]:
    rows = []
    for label, name in (("apf", "with API Priority and Fairness (default)"), ("no_apf", "flow control off")):
        m = r.get(label)
        if not m:
            continue
        rows.append(f"| {name} | {m['alone_p50_ms']} / {m['alone_p99_ms']} | {m['flooded_p50_ms']} / {m['flooded_p99_ms']} |"
                    f" {m['ratio_p99']} | {m['noisy_writes_per_s']} ({m['noisy_rejected']} answered 429) |")
    m = r.get("apf") or {}
    return [
        "## Fairness between tenants", "",
        f"A quiet tenant GETs one ConfigMap {m.get('gets', '?')} times in a row (one connection) alone, then while a",
        f"noisy tenant (its own user and logical cluster) creates ConfigMaps from {m.get('connections', '?')} connections",
        "in another process; same hub, same run. Both tenants' users fall in `global-default` (ByUser), whose flows",
        "fleetplane keys by logical cluster and user.", "",
        "| hub | quiet alone p50 / p99 (ms) | quiet under the flood p50 / p99 (ms) | ratio of p99s | noisy writes per second |",
        "|---|---|---|---|---|", *rows,
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fairness")
    sub = parser.add_subparsers(dest="command", required=True)
    flood = sub.add_parser("flood", help="the noisy tenant's writes until SIGTERM")
    flood.add_argument("--url", required=True)
    flood.add_argument("--ca", required=True)
    flood.add_argument("--connections", type=int, default=64)
    flood.add_argument("--report", required=True)
    args = parser.parse_args(argv)
    asyncio.run(_flood(args.url, args.ca, args.connections, args.report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
