"""Placement decision latency: ``python -m bench.placement`` or ``run()``.

A fleet of 1,000 ClusterProfiles (dicts as listed from the hub, turned into ClusterInfo once, as
the splitter does on every profile change) across 4 regions and 12 zones, with labels, capacity
properties, a few unhealthy and tainted clusters. Each decision places a Deployment with
required affinity (labels and properties), a preferred term, a zone spread (maxSkew 1), a
toleration and a per-cluster cap, from a current split (as a re-decision on an update does).
Karmada's published ``cluster_schedule`` p99 is 32 ms at 100 clusters.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
from typing import Any

from fleetplane.fleet.placement.engine import Prepared, decide
from fleetplane.fleet.placement.fleet import ClusterInfo
from fleetplane.fleet.placement.policy import parse_policy

POLICY = """
strategy: Even
required:
  labels: env in (prod,staging)
  properties: fleetplane.io/node-count>2
preferred:
  - weight: 40
    properties: topology.kubernetes.io/region=region-1
spread:
  - topologyKey: topology.kubernetes.io/zone
    maxSkew: 1
tolerations:
  - key: maintenance
    operator: Exists
    effect: NoSchedule
maxReplicasPerCluster: 20
"""


def fleet_profiles(n: int, seed: int = 7) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        region = f"region-{i % 4}"
        zone = f"{region}-{'abc'[(i // 4) % 3]}"
        healthy = "False" if i % 97 == 5 else "True"
        props = [{"name": "location", "value": region}, {"name": "topology.kubernetes.io/region", "value": region},
                 {"name": "topology.kubernetes.io/zone", "value": zone},
                 {"name": "fleetplane.io/node-count", "value": str(rnd.randint(1, 50))},
                 {"name": "resources.fleetplane.io/allocatable-cpu", "value": str(rnd.randint(8, 400))},
                 {"name": "resources.fleetplane.io/allocatable-memory", "value": str(rnd.randint(16, 1600) * 2**30)},
                 {"name": "resources.fleetplane.io/allocatable-pods", "value": str(rnd.randint(110, 5000))}]
        if i % 50 == 3:
            props.append({"name": "fleetplane.io/taints", "value": "maintenance:NoSchedule"})
        out.append({"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile",
                    "metadata": {"name": f"cluster-{i:04d}", "namespace": "fleet",
                                 "labels": {"env": "prod" if i % 3 else "staging", "x-k8s.io/cluster-manager": "fleetplane"}},
                    "spec": {"clusterManager": {"name": "fleetplane"}},
                    "status": {"conditions": [{"type": "ControlPlaneHealthy", "status": healthy, "reason": "Healthy",
                                               "lastTransitionTime": "2024-01-01T00:00:00Z"}],
                               "properties": props}})
    return out


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def _measure(fn, n: int) -> dict[str, float]:
    """p50/p99 of ``fn()`` in wall-clock and in this thread's CPU time (the latter is what the
    decision costs; the former adds whatever else the machine was doing)."""
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(n):
        w, c = time.perf_counter(), time.thread_time()
        fn()
        cpu.append((time.thread_time() - c) * 1000)
        wall.append((time.perf_counter() - w) * 1000)
    return {"p50_ms": round(statistics.median(wall), 3), "p99_ms": round(_pct(wall, 99), 3),
            "cpu_p50_ms": round(statistics.median(cpu), 3), "cpu_p99_ms": round(_pct(cpu, 99), 3)}


def run(clusters: int = 1000, decisions: int = 300, replicas: int = 300) -> dict[str, Any]:
    """Three cases, as the splitter meets them:

    - ``steady``: the fleet and the policy are unchanged (a re-decision on a scale or a child's
      status change): :class:`Prepared` is reused;
    - ``profile_changed``: one ClusterProfile changed: that cluster is re-evaluated, then decided;
    - ``cold``: a new or changed policy: every cluster is evaluated, then decided.
    """
    profiles = fleet_profiles(clusters)
    t0 = time.perf_counter()
    fleet = [ClusterInfo.from_profile(p) for p in profiles]
    build_ms = (time.perf_counter() - t0) * 1000
    policy = parse_policy(POLICY)
    now = time.time()
    requests = {"cpu": 0.25, "memory": 256 * 2**20, "pods": 1.0}
    rnd = random.Random(1)
    prepared = Prepared(policy, fleet, requests)
    state: dict[str, Any] = {"current": decide(replicas, None, current={}, now=now, prepared=prepared).assignment()}

    def steady() -> None:
        d = decide(replicas + rnd.randint(-50, 50), None, current=state["current"], now=now, prepared=prepared,
                   seed="default/web")
        state["current"], state["d"] = d.assignment(), d

    def profile_changed() -> None:
        i = rnd.randrange(len(fleet))
        p = profiles[i]
        p["status"]["properties"][3]["value"] = str(rnd.randint(1, 50))
        fleet[i] = ClusterInfo.from_profile(p)
        prepared.refresh(fleet)
        d = decide(replicas, None, current=state["current"], now=now, prepared=prepared, seed="default/web")
        state["current"] = d.assignment()

    def cold() -> None:
        d = decide(replicas, parse_policy(POLICY), fleet, state["current"], requests=requests, now=now,
                   seed="default/web")
        state["current"] = d.assignment()

    for fn in (steady, profile_changed, cold):  # warm up
        for _ in range(10):
            fn()
    out: dict[str, Any] = {"clusters": clusters, "replicas": replicas, "decisions": decisions,
                           "eligible": len(state["d"].eligible), "fleet_build_ms": round(build_ms, 1),
                           "goal_p99_ms": 5.0, "karmada_p99_ms_at_100_clusters": 32.0}
    out["steady"] = _measure(steady, decisions)
    out["profile_changed"] = _measure(profile_changed, decisions)
    out["cold"] = _measure(cold, max(50, decisions // 3))
    even = Prepared(parse_policy(""), [ClusterInfo(name=f"c{i}", since=0) for i in range(clusters)])
    out["even"] = _measure(lambda: decide(replicas, None, current={}, now=now, prepared=even), 100)
    return out


if __name__ == "__main__":
    json.dump(run(), sys.stdout, indent=2)
    print()
