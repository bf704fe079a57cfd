"""Rollout overhead (issue 14): a template change over 10 simulated clusters with a 3-stage
rollout policy against the same change with no ``rollout`` key, same run, alternating.
``python -m bench.rollout [--clusters 10] [--rounds 3]`` or ``run()`` (part ``rollout`` of
``make bench``).

Real processes through :class:`fleetplane.lab.Lab`: the hub (``fleetplane start``: Cluster
controller, Syncers, splitter) and ``fleetplane cluster simulate --count 5`` processes (N
simulated clusters, five per process: nodes, Deployment and ReplicaSet controllers, scheduler, kubelets). Two
Deployments of one replica per cluster: ``staged`` (stages: the first cluster, then 50 % of the
rest, then the rest; no pauses; ``minSuccessTime`` as given, 0 by default) and ``unstaged``
(no policy: every child at once). Each round changes the image of one, then of the other; a
round's wall time runs from the ``kubectl set image`` to every child carrying the new spec
(its spec-hash annotation) with its status observed, updated and Available, and (staged) the
rollout's state Complete. Medians over the rounds; the ratio is staged over unstaged.

KubeFleet's anchor: a 3-stage staged update run completes in under 2 minutes (its docs).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import yaml

from fleetplane.lab import Lab

HUB_FLAGS = ["--cluster-probe-interval", "2", "--splitter-join-grace", "2"]
KUBELET_DELAY = "0.2"
SPEC_HASH = "placement.fleetplane.io/spec-hash"
KUBEFLEET_ANCHOR_S = 120.0
#: simulated clusters per ``cluster simulate --count`` process (a process of 10 left two clusters'
#: controllers timing out while the first eight started, on this loaded 2-core machine)
PER_PROCESS = 5


def _manifest(name: str, replicas: int, policy: dict | None) -> str:
    ann = {"placement.fleetplane.io/policy": yaml.safe_dump(policy)} if policy else {}
    return json.dumps({"apiVersion": "apps/v1", "kind": "Deployment",
                       "metadata": {"name": name, "namespace": "default", "annotations": ann},
                       "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                                "template": {"metadata": {"labels": {"app": name}},
                                             "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}})


def _children(lab: Lab, name: str) -> list[dict]:
    body = lab.hub.get(f"/apis/apps/v1/namespaces/default/deployments?labelSelector=kcp.dev/owned-by%3D{name}") or {}
    return [o for o in body.get("items") or [] if not o["metadata"].get("deletionTimestamp")]


def _state(lab: Lab, name: str) -> dict:
    d = lab.hub.get(f"/apis/apps/v1/namespaces/default/deployments/{name}") or {}
    raw = ((d.get("metadata") or {}).get("annotations") or {}).get("rollout.fleetplane.io/state")
    return json.loads(raw) if raw else {}


def _rolled_out(lab: Lab, name: str, clusters: int, old_hash: str | None, staged: bool) -> str | None:
    """The children's common spec hash once every child carries one other than ``old_hash`` and is
    observed, updated and Available (and, staged, the rollout is Complete); else None."""
    kids = _children(lab, name)
    hashes = {(o["metadata"].get("annotations") or {}).get(SPEC_HASH) for o in kids}
    if len(kids) != clusters or len(hashes) != 1 or old_hash in hashes:
        return None
    for o in kids:
        st, n = o.get("status") or {}, o["spec"].get("replicas", 1)
        if not (st.get("observedGeneration") == o["metadata"].get("generation") and st.get("updatedReplicas") == n
                and st.get("availableReplicas") == n):
            return None
    if staged and _state(lab, name).get("phase") != "Complete":
        return None
    return hashes.pop()


def run(clusters: int = 10, rounds: int = 3, min_success: str = "0s") -> dict[str, Any]:
    policy: dict[str, Any] = {"rollout": {"stages": [{}, {"percent": 50}, {}], "minSuccessTime": min_success,
                                          "progressDeadline": "5m"}}
    with Lab() as lab:
        lab.start_hub(*HUB_FLAGS)
        names: list[str] = []
        for j in range(0, clusters, PER_PROCESS):
            names += [m.name for m in lab.simulate_many(f"r{j // PER_PROCESS}", min(PER_PROCESS, clusters - j),
                                                        "--nodes", "1", "--kubelet-delay", KUBELET_DELAY, timeout=300)]
        policy["rollout"]["stages"][0] = {"clusters": [names[0]]}
        lab.attach(*names, resources=["deployments.apps"])
        lab.wait_attached(names, timeout=300)
        lab.wait_served("apps/v1", "deployments", timeout=120)
        kinds = {"staged": True, "unstaged": False}
        current: dict[str, str | None] = {}
        for name, staged in kinds.items():
            lab.kubectl("apply", "-f", "-", stdin=_manifest(name, clusters, policy if staged else None), check=True)
        for name, staged in kinds.items():
            current[name] = lab.wait_until(f"{name} first rollout", lambda n=name, s=staged: _rolled_out(  # type: ignore[misc]
                lab, n, clusters, None, s), 180)
        times: dict[str, list[float]] = {k: [] for k in kinds}
        stages: list[list[str]] = []
        for i in range(rounds):
            order = list(kinds) if i % 2 == 0 else list(reversed(kinds))
            for name in order:
                t0 = time.monotonic()
                lab.kubectl("set", "image", f"deployment/{name}", f"c=nginx:{i + 2}", check=True)
                current[name] = lab.wait_until(
                    f"{name} round {i + 1} rolled out",
                    lambda n=name: _rolled_out(lab, n, clusters, current[n], kinds[n]), 300, 0.1)  # type: ignore[misc]
                times[name].append(time.monotonic() - t0)
            stages = _state(lab, "staged").get("stages") or stages
        med = {k: statistics.median(v) for k, v in times.items()}
        return {"clusters": clusters, "rounds": rounds, "min_success": min_success,
                "stages": [len(s) for s in stages],
                "staged_s": round(med["staged"], 2), "unstaged_s": round(med["unstaged"], 2),
                "staged_all_s": [round(t, 2) for t in times["staged"]],
                "unstaged_all_s": [round(t, 2) for t in times["unstaged"]],
                "ratio": round(med["staged"] / med["unstaged"], 2) if med["unstaged"] else None,
                "kubefleet_anchor_s": KUBEFLEET_ANCHOR_S}


def render(r: dict) -> list[str]:
    return [
        "## Progressive rollout overhead", "",
        f"A template change over {r['clusters']} simulated clusters (`cluster simulate --count 5` processes, one replica"
        f" each), from `kubectl set image` to every child updated and Available: a 3-stage rollout (stages of"
        f" {', '.join(map(str, r['stages']))} clusters, no pauses, minSuccessTime {r['min_success']}) against no"
        f" rollout policy, same run, alternating, median of {r['rounds']} rounds.", "",
        "| | wall time (s) | rounds (s) |", "|---|---|---|",
        f"| 3-stage rollout | {r['staged_s']} | {', '.join(map(str, r['staged_all_s']))} |",
        f"| unstaged | {r['unstaged_s']} | {', '.join(map(str, r['unstaged_all_s']))} |",
        f"| ratio | {r['ratio']} | |",
        f"| KubeFleet's anchor (3-stage run) | under {r['kubefleet_anchor_s']:.0f} | |",
    ]


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--clusters", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-success", default="0s")
    a = ap.parse_args()
    res = run(a.clusters, a.rounds, a.min_success)
    print(json.dumps(res, indent=2))
    print("\n".join(render(res)))
