"""Benchmark of a simulated cluster: how fast it brings a Deployment's pods to Ready, what it
costs at rest.

:func:`run` starts ``fleetplane cluster simulate`` as a process (10 nodes, ``--kubelet-delay 0``),
measures its start-up, its resident memory and CPU while idle, then creates one Deployment of
300 replicas through the API and times it until ``status.readyReplicas`` is 300 (watching the
Deployment, not polling), and reads the memory again. Everything (the client too) shares the
machine's cores.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from fleetplane.lab import CLI

CLK_TCK = os.sysconf("SC_CLK_TCK")


#: ``fleetplane cluster simulate`` through the main CLI (flags follow)
SIMULATE = [*CLI, "--log-format", "console", "cluster", "simulate"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


class _Client:
    def __init__(self, url: str, data_dir: Path) -> None:
        self.url = url
        self.token = (data_dir / "admin.token").read_text().strip()
        self.ctx = ssl.create_default_context(cafile=str(data_dir / "pki" / "ca.crt"))

    def request(self, method: str, path: str, body: Any = None, timeout: float = 10.0):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        return urllib.request.urlopen(req, context=self.ctx, timeout=timeout)

    def json(self, method: str, path: str, body: Any = None) -> Any:
        with self.request(method, path, body) as resp:
            return json.loads(resp.read())


def _wait(cond, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            got = cond()
        except OSError:
            got = None
        if got:
            return got
        time.sleep(0.05)
    raise TimeoutError(f"timed out waiting for {what}")


def run(nodes: int = 10, replicas: int = 300, idle_seconds: float = 10.0) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="fleetplane-sim-bench-"))
    port = _free_port()
    log = open(tmp / "sim.log", "wb")  # noqa: SIM115
    started = time.monotonic()
    proc = subprocess.Popen([*SIMULATE, "--name", "bench", "--data-dir", str(tmp / "data"), "--port", str(port),
                             "--nodes", str(nodes), "--kubelet-delay", "0"], stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"https://127.0.0.1:{port}"
        data_dir = tmp / "data"
        _wait(lambda: (data_dir / "pki" / "ca.crt").exists() and (data_dir / "admin.token").exists(), 30, "credentials")
        client = _Client(url, data_dir)

        def leases_ready() -> bool:
            items = client.json("GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases")["items"]
            return len(items) >= nodes

        _wait(leases_ready, 60, "nodes and their leases")
        startup = time.monotonic() - started
        time.sleep(1.0)
        rss_idle = _rss_mib(proc.pid)
        cpu0, t0 = _cpu_seconds(proc.pid), time.monotonic()
        time.sleep(idle_seconds)
        idle_cpu = (_cpu_seconds(proc.pid) - cpu0) / (time.monotonic() - t0) * 100

        deployment = {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "bench"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "bench"}},
                     "template": {"metadata": {"labels": {"app": "bench"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx:1.27",
                                                           "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}},
        }
        cpu1 = _cpu_seconds(proc.pid)
        t1 = time.monotonic()
        created = client.json("POST", "/apis/apps/v1/namespaces/default/deployments", deployment)
        rv = created["metadata"]["resourceVersion"]
        path = (f"/apis/apps/v1/namespaces/default/deployments?watch=1&fieldSelector=metadata.name%3Dbench"
                f"&resourceVersion={rv}&timeoutSeconds=300")
        ready_at = None
        with client.request("GET", path, timeout=300) as stream:
            for line in stream:
                ev = json.loads(line)
                if ((ev.get("object") or {}).get("status") or {}).get("readyReplicas", 0) >= replicas:
                    ready_at = time.monotonic()
                    break
        elapsed = (ready_at or time.monotonic()) - t1
        busy_cpu = _cpu_seconds(proc.pid) - cpu1
        time.sleep(2.0)
        rss_after = _rss_mib(proc.pid)
        return {
            "nodes": nodes,
            "replicas": replicas,
            "startup_seconds": round(startup, 2),
            "seconds_to_ready": round(elapsed, 2),
            "pods_ready_per_second": round(replicas / elapsed, 1),
            "server_cpu_seconds_per_pod_ms": round(busy_cpu / replicas * 1000, 2),
            "rss_mib_idle": round(rss_idle, 1),
            "rss_mib_with_pods": round(rss_after, 1),
            "idle_cpu_percent": round(idle_cpu, 2),
        }
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
