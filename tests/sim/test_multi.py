"""``fleetplane cluster simulate --count N``: N simulated clusters in one process, each its own
endpoint (``/clusters/<name>``), objects, controllers and kubeconfig; attached to a hub, each gets
Ready, and at rest the hub and its Syncers ask the clusters only what their periods say."""

from __future__ import annotations

import re
import ssl
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from fleetplane.lab import Lab, Member, Process

from ..harness import Kubectl, wait_for

NAMES = ["m-0", "m-1", "m-2"]
#: the hub's periods in this module: probes (4 requests each: /version, /api, /livez, /readyz)
#: and the Syncers' type and object passes
PROBE_INTERVAL = 5.0
POLL_INTERVAL = 10.0


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with Lab(tmp_path_factory.mktemp("multi"), log_level="info") as lab:
        lab.start_hub("--cluster-probe-interval", str(PROBE_INTERVAL), "--syncer-poll-interval", str(POLL_INTERVAL))
        lab.simulate_many("m", len(NAMES), "--nodes", "1", "--kubelet-delay", "0.2", timeout=120)
        yield lab


def _kubectl(member: Member) -> Kubectl:
    return Kubectl(member.kubeconfig, namespace="default")


def test_each_cluster_has_its_own_endpoint_kubeconfig_and_objects(lab: Lab) -> None:
    members = [lab.members[n] for n in NAMES]
    for m in members:
        cfg = yaml.safe_load(m.kubeconfig.read_text())
        assert cfg["current-context"] == m.name
        assert cfg["clusters"][0]["cluster"]["server"] == f"https://127.0.0.1:{lab['m'].port}/clusters/{m.name}"
        # its own nodes, named after it, Ready (its own kubelets)
        wait_for(lambda m=m: _kubectl(m)("get", "nodes", "-o", "name").out.split() == [f"node/{m.name}-node-0"],
                 60, 0.2, what=f"{m.name}'s node")
    a, b, c = (_kubectl(m) for m in members)
    a("create", "configmap", "only-in-m0", "--from-literal=k=v")
    assert a("get", "configmap", "only-in-m0", "-o", "jsonpath={.data.k}").out == "v"
    for other in (b, c):
        res = other.fail("get", "configmap", "only-in-m0")
        assert 'configmaps "only-in-m0" not found' in res.err
    # each cluster's controllers act on it alone: a Deployment in m-1 runs there and nowhere else
    b("create", "deployment", "web", "--image=nginx", "--replicas=2")
    b("rollout", "status", "deployment/web", "--timeout=90s", timeout=120)
    assert b("get", "deployment", "web", "-o", "jsonpath={.status.readyReplicas}").out == "2"
    pods = b("get", "pods", "-o", "jsonpath={.items[*].spec.nodeName}").out.split()
    assert pods == ["m-1-node-0", "m-1-node-0"]
    for other in (a, c):
        assert other("get", "deployments,pods", "-o", "name").out.strip() == ""


def test_more_clusters_than_one_connection_pool_holds_watches_for_all_run(tmp_path: Path) -> None:
    """Eight clusters, twelve watches each: more than the 64 connections one identity's shared
    pool had (they share the admin token and address). Every cluster's controllers run: a
    Deployment in the last one rolls out (before, the sixth cluster on waited for a connection)."""
    from fleetplane.kube.client import SHARED_POOL
    from fleetplane.sim.run import STARTING_AT_ONCE

    count = 8
    assert count * 12 > SHARED_POOL and count <= STARTING_AT_ONCE
    with Lab(tmp_path / "lab") as lab:
        members = lab.simulate_many("p", count, "--nodes", "1", "--kubelet-delay", "0.1", timeout=120)
        last = _kubectl(members[-1])
        last("create", "deployment", "web", "--image=nginx", "--replicas=1")
        last("rollout", "status", "deployment/web", "--timeout=60s", timeout=90)
        for m in members:
            wait_for(lambda m=m: _kubectl(m)("get", "nodes", "-o", "jsonpath={.items[*].status.conditions[?(@.type=='Ready')].status}").out == "True",
                     30, 0.2, what=f"{m.name}'s node Ready")


_SAMPLE = re.compile(r'^apiserver_request_total\{([^}]*)\} ([0-9.e+]+)$', re.M)
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def _requests(proc: Process) -> dict[tuple[str, str, str], float]:
    """(verb, resource, subresource) -> requests the server answered so far."""
    req = urllib.request.Request(proc.url + "/metrics", headers={"Authorization": f"Bearer {proc.token}"})
    with urllib.request.urlopen(req, context=ssl.create_default_context(cafile=str(proc.ca)), timeout=30) as resp:
        text = resp.read().decode()
    out: dict[tuple[str, str, str], float] = {}
    for labels_text, value in _SAMPLE.findall(text):
        labels = dict(_LABEL.findall(labels_text))
        key = (labels["verb"], labels["resource"], labels["subresource"])
        out[key] = out.get(key, 0.0) + float(value)
    return out


def _polled(counts: dict[tuple[str, str, str], float]) -> float:
    """Requests that are someone's polling: all but Leases (the kubelets' heartbeats, the hub's
    leader election: their own fixed periods, per node and per controller) and the kubelets'
    node status."""
    return sum(v for (verb, resource, sub), v in counts.items()
               if resource != "leases" and (resource, sub) != ("nodes", "status"))


def test_attached_clusters_get_ready_and_cost_a_bounded_request_rate_at_rest(lab: Lab, tmp_path: Path) -> None:
    lab.attach(*NAMES)
    lab.wait_attached(NAMES, timeout=240)
    hub, sim = lab.hub, lab["m"]
    # the hub reaches each through its own kubeconfig: kubectl on the hub sees three Clusters Ready
    out = lab.kubectl("get", "clusters.cluster.example.dev", "-o",
                      "jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=='Ready')].status} {end}",
                      check=True).stdout.split()
    assert sorted(out) == [f"{n}=True" for n in NAMES]
    # at rest: wait for the first type pass of every Syncer to have happened (the types are served),
    # then count what both servers answer between two observed points: until each Syncer has made
    # two more type passes (each lists the cluster's CRDs once), however long that takes here
    lab.wait_served("apps/v1", "deployments", timeout=120)
    crd_lists = ("list", "customresourcedefinitions", "")
    t0, hub0, sim0 = time.monotonic(), _requests(hub), _requests(sim)
    wait_for(lambda: _requests(sim).get(crd_lists, 0.0) - sim0.get(crd_lists, 0.0) >= 2 * len(NAMES),
             10 * POLL_INTERVAL, 1.0, what="two type passes of every Syncer")
    t1, hub1, sim1 = time.monotonic(), _requests(hub), _requests(sim)
    seconds = t1 - t0
    per_cluster = ((_polled(hub1) - _polled(hub0)) + (_polled(sim1) - _polled(sim0))) / seconds / len(NAMES)
    # what the periods allow each cluster: a probe's 4 requests; a type pass (discovery of both
    # sides, both sides' CRDs, the OpenAPI index) and an object pass (discovery of both sides);
    # Nodes, namespaces and properties each details period (60 s); and half as much again for
    # the passes a change triggers sooner and the requests that fall at the window's edges
    budget = 1.5 * (4 / PROBE_INTERVAL + 7 / POLL_INTERVAL + 4 / POLL_INTERVAL + 3 / 60)
    assert per_cluster <= budget, (
        f"{per_cluster:.2f} requests/s per cluster at rest over {seconds:.0f}s (budget {budget:.2f}); hub: "
        f"{sorted(((k, round(hub1.get(k, 0) - hub0.get(k, 0))) for k in hub1), key=lambda kv: -kv[1])[:8]}, clusters: "
        f"{sorted(((k, round(sim1.get(k, 0) - sim0.get(k, 0))) for k in sim1), key=lambda kv: -kv[1])[:8]}")
