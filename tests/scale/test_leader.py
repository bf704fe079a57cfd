"""Leader election with Leases across hub replicas: real hubs on etcd, real controller
processes (tests/scale/elector_proc.py) that are killed and stopped."""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..harness import Hub, wait_for
from .replicas import EtcdCluster, configmap, require_etcd, start_replicas, stop_all

LEASE_DURATION = 2.0
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def hubs(tmp_path_factory) -> Iterator[list[Hub]]:
    require_etcd()
    etcd = EtcdCluster(tmp_path_factory.mktemp("etcd")).start()
    hs = start_replicas(tmp_path_factory.mktemp("replicas"), etcd.endpoints, 2)
    yield hs
    stop_all(hs)
    etcd.stop()


class Log:
    def __init__(self, path: Path) -> None:
        self.path = path

    def lines(self) -> list[tuple[float, str, str, list[str]]]:
        out = []
        if not self.path.exists():
            return out
        for line in self.path.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 3:
                out.append((float(parts[0]), parts[1], parts[2], parts[3:]))
        return out

    def started(self) -> list[tuple[float, str]]:
        return [(t, who) for t, who, what, _ in self.lines() if what == "started"]

    def ticks(self) -> list[tuple[float, str]]:
        return [(t, who) for t, who, what, _ in self.lines() if what == "tick"]


def spawn(hub: Hub, identity: str, namespace: str, log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tests.scale.elector_proc", str(hub.kubeconfig), identity, namespace, str(log)],
                            cwd=REPO, stdout=subprocess.DEVNULL, stderr=open(log.with_suffix(f".{identity}.err"), "wb"))  # noqa: SIM115


def no_overlap(ticks: list[tuple[float, str]]) -> int:
    """The identities' ticks form blocks in time (one leader at a time); returns the number of blocks."""
    order = [who for _, who in sorted(ticks)]
    blocks = [who for i, who in enumerate(order) if i == 0 or order[i - 1] != who]
    assert len(blocks) == len(set(blocks)), f"leaders interleaved: {blocks}"
    return len(blocks)


def test_one_leader_takeover_within_the_lease_duration_nothing_missed_nothing_twice(hubs, tmp_path):
    a, b = hubs
    ns = "le-" + uuid.uuid4().hex[:6]
    assert a.json("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})[0] == 201
    log = Log(tmp_path / "controllers.log")
    procs = {f"c{i}": spawn(hubs[i % 2], f"c{i}", ns, log.path) for i in range(3)}
    try:
        first = wait_for(lambda: log.started(), 20, what="a leader")[0][1]
        for i in range(10):
            body = configmap(f"item-{i}")
            body["metadata"]["labels"] = {"todo": "yes"}
            assert b.json("POST", f"/api/v1/namespaces/{ns}/configmaps", body)[0] == 201
        # the leader renews while the other two candidates try to take the Lease: still one leader
        lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/test-controller"
        renewals: set[str] = set()

        def renewed_while_contested() -> bool:
            if len({who for _, who, what, _ in log.lines() if what == "candidate"}) < 3:
                return False
            code, lease = a.json("GET", lease_path)
            if code == 200:
                renewals.add(lease["spec"]["renewTime"])
            return len(renewals) >= 5  # four renewals, each a retry period of the others' attempts

        wait_for(renewed_while_contested, 10, what="the leader renewing while three candidates run")
        assert [who for _, who in log.started()] == [first]

        procs[first].send_signal(signal.SIGKILL)
        killed_at = time.time()
        procs[first].wait()
        for i in range(10, 20):  # work that arrives while nobody leads is not missed
            body = configmap(f"item-{i}")
            body["metadata"]["labels"] = {"todo": "yes"}
            assert a.json("POST", f"/api/v1/namespaces/{ns}/configmaps", body)[0] == 201
        t2, second = wait_for(lambda: log.started()[1:], 10, what="a new leader")[0]
        assert second != first
        assert t2 - killed_at <= LEASE_DURATION + 0.5, f"takeover took {t2 - killed_at:.2f}s"

        def all_done() -> bool:
            items = b.json("GET", f"/api/v1/namespaces/{ns}/configmaps?labelSelector=todo%3Dyes")[1]["items"]
            return len(items) == 20 and all((i["metadata"].get("annotations") or {}).get("done-by") for i in items)

        wait_for(all_done, 10, what="every item done")
        did: dict[str, list[str]] = {}
        for _, who, what, rest in log.lines():
            if what == "did":
                did.setdefault(rest[0], []).append(who)
        assert all(len(v) == 1 for v in did.values()), did  # no item done twice
        items = b.json("GET", f"/api/v1/namespaces/{ns}/configmaps?labelSelector=todo%3Dyes")[1]["items"]
        for i in items:
            name, by = i["metadata"]["name"], i["metadata"]["annotations"]["done-by"]
            assert did.get(name, [by]) == [by]
        assert no_overlap(log.ticks()) == 2

        lease = a.json("GET", f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/test-controller")[1]
        spec = lease["spec"]
        assert spec["holderIdentity"] == second and spec["leaseDurationSeconds"] == 2
        assert spec["leaseTransitions"] >= 1
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", spec["renewTime"])

        # a leader that stops cleanly releases the Lease: the last candidate takes over at once
        procs[second].send_signal(signal.SIGTERM)
        stopped_at = time.time()
        assert procs[second].wait(10) == 0
        t3, third = wait_for(lambda: log.started()[2:], 10, what="the third leader")[0]
        assert third not in (first, second)
        assert t3 - stopped_at < 1.5, f"takeover after a release took {t3 - stopped_at:.2f}s"
        assert no_overlap(log.ticks()) == 3
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()


async def test_leading_body_is_cancelled_when_the_lease_is_taken(hubs):
    """``async with elector.leading()``: a leader that finds the Lease in other hands (here a
    write through the other replica) stops at once with LeadershipLost."""
    from kubernetes_asyncio import client, config

    from fleetplane.apimachinery.metatime import micro_time
    from fleetplane.kube.leaderelection import LeaderElectionConfig, LeaderElector, LeadershipLost

    a, b = hubs
    cfg = client.Configuration()
    await config.load_kube_config(config_file=str(a.kubeconfig), client_configuration=cfg)
    async with client.ApiClient(cfg) as api:
        elector = LeaderElector(api, LeaderElectionConfig("ctx-" + uuid.uuid4().hex[:6], identity="me",
                                                          lease_duration=2.0, renew_deadline=1.5, retry_period=0.2))
        body_started = asyncio.Event()
        loop = asyncio.get_running_loop()
        stolen_at: list[float] = []

        async def steal() -> None:
            await body_started.wait()
            path = f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{elector.config.name}"
            code, lease = await asyncio.to_thread(b.json, "GET", path)
            lease["spec"].update(holderIdentity="thief", renewTime=micro_time())
            assert (await asyncio.to_thread(b.json, "PUT", path, lease))[0] == 200
            stolen_at.append(loop.time())

        thief = asyncio.create_task(steal())
        with pytest.raises(LeadershipLost):
            async with elector.leading():
                assert elector.is_leader
                body_started.set()
                await asyncio.sleep(30)
        stopped_at = loop.time()
        await thief
        assert not elector.is_leader and elector.leader == "thief"
        assert stopped_at - stolen_at[0] < 1  # at the next renewal, not at the end of a deadline
        # and it cannot take the Lease back while the thief's duration runs
        assert not await elector.try_acquire_or_renew()


async def test_a_leader_stalled_past_its_renew_deadline_keeps_a_lease_nobody_took(hubs):
    """Controllers inside the hub share its event loop; when the process stalls past the renew
    deadline (but within the Lease) and nobody took the Lease, the next renewal keeps it instead
    of restarting the controller; a Lease taken meanwhile is still lost."""
    from kubernetes_asyncio import client, config

    from fleetplane.kube.leaderelection import LeaderElectionConfig, LeaderElector

    a, _ = hubs
    cfg = client.Configuration()
    await config.load_kube_config(config_file=str(a.kubeconfig), client_configuration=cfg)
    async with client.ApiClient(cfg) as api:
        elector = LeaderElector(api, LeaderElectionConfig("stall-" + uuid.uuid4().hex[:6], identity="me",
                                                          lease_duration=4.0, renew_deadline=1.0, retry_period=0.2))
        async with elector.leading():
            await asyncio.sleep(0.5)  # renewing
            time.sleep(1.8)  # noqa: ASYNC251 - the whole event loop is stuck: past the renew deadline, inside the Lease
            await asyncio.sleep(1.0)  # the renewer runs again
            assert elector.is_leader
            path = f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{elector.config.name}"
            code, lease = await asyncio.to_thread(a.json, "GET", path)
            assert code == 200 and lease["spec"]["holderIdentity"] == "me"
