"""Partitions with real processes: a hub running the Cluster controller (its Syncers) and the
splitter, three simulated clusters, and one of them frozen with SIGSTOP (it accepts connections and
answers nothing, as behind a partition) and resumed with SIGCONT.

The hub's settings (test-sized): probes every 0.3 s with a 3 s timeout, reported after 3 s of
failures (``--cluster-failure-threshold``); replicas evicted after 4 s unhealthy
(``--unhealthy-grace``); back after 15 s healthy (``--rejoin-grace``).
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from ..harness import wait_for
from ..scale.replicas import Watch
from .fixtures import deployment
from .world import World, joined

UNHEALTHY_GRACE = 4.0
REJOIN_GRACE = 15.0
FAILURE_THRESHOLD = 3.0
REPLICAS = 12
EVEN = {"east": 4, "west": 4, "north": 4}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with joined(tmp_path_factory.mktemp("partitions"), ("east", "west", "north"), [
            "--failure-threshold", str(FAILURE_THRESHOLD), "--request-timeout", "3", "--unhealthy-grace",
            str(UNHEALTHY_GRACE), "--rejoin-grace", str(REJOIN_GRACE), "--join-grace", "0"]) as w:
        yield w


@dataclass
class Sample:
    at: float
    split: dict[str, int]
    available: dict[str, int]
    parent: dict[str, Any]
    north_healthy: bool


@dataclass
class Sampler:
    """Polls the children, the parent's status and north's ClusterProfile until stopped."""

    world: World
    parent: str
    samples: list[Sample] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        f = self.world.fleet
        while not self.stop.is_set():
            kids = f.children(self.parent)
            self.samples.append(Sample(
                time.monotonic(), {c: k["spec"]["replicas"] for c, k in kids.items()},
                {c: (k.get("status") or {}).get("availableReplicas") or 0 for c, k in kids.items()},
                self.world.status(self.parent), "north" in self.world.healthy()))
            time.sleep(0.1)

    def finish(self) -> list[Sample]:
        self.stop.set()
        self.thread.join(10)
        return self.samples


def north_pods(world: World) -> set[tuple[str, str]]:
    out = world.clusters["north"].kubectl()("get", "pods", "-n", "default", "-l", "app=web", "-o", "json").json()
    return {(p["metadata"]["name"], p["metadata"]["uid"]) for p in out["items"]}


def condition(world: World, name: str, type_: str) -> dict | None:
    return next((c for c in world.status(name).get("conditions") or [] if c["type"] == type_), None)


def wait_partitioned(world: World, name: str, reason: str, timeout: float = 40) -> dict:
    return wait_for(lambda: (c := condition(world, name, "Partitioned")) is not None and c["reason"] == reason and c,
                    timeout, interval=0.1,
                    what=f"{name} Partitioned={reason} (now {condition(world, name, 'Partitioned')})")


def freeze(world: World) -> None:
    proc = world.clusters["north"].proc
    assert proc is not None
    proc.send_signal(signal.SIGSTOP)


def thaw(world: World) -> None:
    proc = world.clusters["north"].proc
    assert proc is not None
    proc.send_signal(signal.SIGCONT)


def test_a_frozen_cluster_is_replaced_then_returns_make_before_break(world: World) -> None:
    f = world.fleet
    f.apply(deployment("web", REPLICAS))
    f.wait_split("web", EVEN, timeout=40)
    world.wait_ready("web", REPLICAS)
    pods_before = north_pods(world)
    assert len(pods_before) == 4
    sampler = Sampler(world, "web")
    try:
        freeze(world)
        # past the failure threshold: north's replicas stop counting (the grace period runs)...
        held = wait_partitioned(world, "web", "ClusterUnreachable")
        assert "north unreachable since" in held["message"] and "not counted" in held["message"]
        # ...then they are replaced elsewhere; north's child is kept as it is
        evicted = wait_partitioned(world, "web", "ReplicasEvicted")
        assert "its 4 replicas" in evicted["message"]
        f.wait_split("web", {"east": 6, "west": 6, "north": 4}, timeout=30)
        world.wait_ready("web", REPLICAS)
        rows = {r.split()[0]: r.split()[1] for r in f.kubectl("get", "deployments").out.splitlines()[1:]}
        assert rows["web"] == "12/12" and rows["web--east"] == "6/6" and rows["web--west"] == "6/6", rows
        assert condition(world, "web", "Available")["status"] == "True"
        thaw(world)
        # back: its replicas count again only after the rejoin grace, then the replacements go
        wait_partitioned(world, "web", "ClusterReturning")
        f.wait_split("web", EVEN, timeout=REJOIN_GRACE + 30)
        world.wait_ready("web", REPLICAS)
        wait_for(lambda: condition(world, "web", "Partitioned") is None, 20, what="Partitioned removed")
    finally:
        thaw(world)
        samples = sampler.finish()
    # the wanted total over the clusters that count never exceeded the parent's replicas; north's
    # child never changed (the frozen share, uncounted, is the only surge)
    counted = [sum(n for c, n in s.split.items() if c != "north") for s in samples]
    assert max(counted) <= REPLICAS, max(counted)
    assert {s.split.get("north") for s in samples} == {4}
    assert max(sum(s.split.values()) for s in samples) <= REPLICAS + 4
    # damping: the split came back no sooner than the rejoin grace after north was seen healthy
    healthy_at = next(s.at for s in samples if s.north_healthy and s.split.get("east") == 6)
    # while north was away the parent never counted its (stale) replicas; on the way back it may
    # count more than it asks for, for a moment (north's and the replacements, as a Deployment's surge)
    assert max(s.parent.get("availableReplicas", 0) for s in samples if s.at < healthy_at) <= REPLICAS
    assert max(s.parent.get("replicas", 0) for s in samples if s.at < healthy_at) <= REPLICAS
    restored_at = next(s.at for s in samples if s.at > healthy_at and s.split == EVEN)
    assert restored_at - healthy_at >= REJOIN_GRACE - 1.0, restored_at - healthy_at
    # make-before-break: the replacements went only while north's 4 were available, and the parent
    # never dropped below what it asks for on the way back
    for s in samples:
        if s.at >= healthy_at and s.split.get("east", 0) + s.split.get("west", 0) < 12:
            assert s.available.get("north") == 4, s
    assert min(s.parent.get("availableReplicas", 0) for s in samples if s.at >= healthy_at) >= REPLICAS
    # no teardown and recreate: the same pods run in north
    assert north_pods(world) == pods_before
    t0 = samples[0].at
    uncounted_at = next(s.at for s in samples if s.parent.get("availableReplicas") == 8)
    evicted_at = next(s.at for s in samples if s.split.get("east") == 6)
    replaced_at = next(s.at for s in samples if s.at > evicted_at and s.parent.get("availableReplicas") == REPLICAS)
    print(f"timeline (s from SIGSTOP): uncounted {uncounted_at - t0:.1f}, evicted {evicted_at - t0:.1f}, "
          f"replaced {replaced_at - t0:.1f}, seen healthy {healthy_at - t0:.1f}, restored {restored_at - t0:.1f}; "
          f"max counted wanted {max(counted)}, max children total {max(sum(s.split.values()) for s in samples)}")
    reasons = [e["reason"] for e in f.events("web")]
    for r in ("ClusterUnreachable", "ReplicasEvicted", "ClusterReturning", "ReplicasRestored"):
        assert r in reasons, reasons


def test_a_flapping_cluster_moves_replicas_at_most_once_each_way(world: World) -> None:
    """North is frozen long enough to be evicted, then flaps (resumed until the hub sees it healthy,
    frozen until it sees it unreachable) three times, each time healthy for less than the rejoin
    grace, then stays. The bound: one move out, one move back: east and west are each scaled
    twice (4 -> 6 -> 4), north's child never."""
    f = world.fleet
    f.apply(deployment("flap", REPLICAS))
    f.wait_split("flap", EVEN, timeout=40)
    world.wait_ready("flap", REPLICAS)
    pods_before = north_pods(world)
    listed = f.api("GET", "/apis/apps/v1/namespaces/default/deployments?labelSelector=kcp.dev%2Fowned-by%3Dflap")[1]
    rv = listed["metadata"]["resourceVersion"]
    last = {o["metadata"]["labels"]["kcp.dev/cluster"]: o["spec"]["replicas"] for o in listed["items"]}
    assert last == EVEN
    watch = Watch(world.hub, f"/clusters/{f.lc}/apis/apps/v1/namespaces/default/deployments?watch=1"
                             f"&labelSelector=kcp.dev%2Fowned-by%3Dflap&resourceVersion={rv}&timeoutSeconds=900")
    assert watch.status == 200
    flaps = 0
    try:
        freeze(world)
        wait_partitioned(world, "flap", "ReplicasEvicted")
        for _ in range(3):
            thaw(world)
            wait_for(lambda: "north" in world.healthy(), 30, interval=0.1, what="north healthy")
            freeze(world)
            wait_for(lambda: "north" not in world.healthy(), 30, interval=0.1, what="north unreachable")
            flaps += 1
            assert f.split("flap") == {"east": 6, "west": 6, "north": 4}
        thaw(world)
        f.wait_split("flap", EVEN, timeout=REJOIN_GRACE + 30)
        world.wait_ready("flap", REPLICAS)
    finally:
        thaw(world)
        watch.close()
    writes: dict[str, list[int]] = {}
    for e in watch.events:
        obj = e["object"]
        c = obj["metadata"]["labels"]["kcp.dev/cluster"]
        n = obj["spec"]["replicas"]
        if last.get(c) != n:
            writes.setdefault(c, []).append(n)
            last[c] = n
    # every change of a child's replicas since the split was even: out once, back once; north never
    assert writes == {"east": [6, 4], "west": [6, 4]}, writes
    assert flaps == 3
    assert north_pods(world) == pods_before
    reasons = [e["reason"] for e in f.events("flap")]
    assert reasons.count("ReplicasEvicted") == 1 and reasons.count("ReplicasRestored") == 1, reasons
