"""Faults: an etcd member dies, a hub replica dies mid-write, etcd goes away for a while."""

from __future__ import annotations

import asyncio
import http.client
import json
import signal
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

from fleetplane.storage.etcd import EtcdStore

from ..harness import Hub, wait_for
from .replicas import EtcdCluster, Watch, configmap, require_etcd, start_replicas, stop_all


@pytest.fixture(scope="module")
def cluster3(tmp_path_factory) -> Iterator[EtcdCluster]:
    require_etcd()
    c = EtcdCluster(tmp_path_factory.mktemp("etcd3"), members=3).start()
    yield c
    c.stop()


@pytest.fixture(scope="module")
def hubs(cluster3, tmp_path_factory) -> Iterator[list[Hub]]:
    hs = start_replicas(tmp_path_factory.mktemp("replicas"), cluster3.endpoints, 2)
    yield hs
    stop_all(hs)


def call(hub: Hub, method: str, path: str, body=None, timeout: float = 10.0) -> tuple[int, dict | None]:
    """One request; connection failures (a dead replica) are status 0."""
    try:
        return hub.json(method, path, body, timeout=timeout)
    except (OSError, http.client.HTTPException):
        return 0, None


def create_with_retry(hubs: list[Hub], path: str, body: dict, deadline: float) -> str:
    """What a careful client does: retry the same name on 5xx or a dead connection, on the
    next replica; AlreadyExists after a failed attempt means that attempt landed."""
    failed = False
    i = 0
    while time.monotonic() < deadline:
        code, resp = call(hubs[i % len(hubs)], "POST", path, body)
        if code == 201:
            return "created"
        if code == 409 and failed and resp and resp.get("reason") == "AlreadyExists":
            return "landed-earlier"
        if code not in (0, 500, 503, 504):
            raise AssertionError(f"unexpected {code}: {resp}")
        failed = True
        i += 1
        time.sleep(0.05)
    raise AssertionError(f"could not create {body['metadata']['name']}")


def etcd_keys(endpoints: str, prefix: str) -> dict[str, bytes]:
    async def read() -> dict[str, bytes]:
        s = EtcdStore(endpoints)
        await s.start()
        try:
            kvs, _ = await s.range(prefix)
            return {kv.key: kv.value for kv in kvs}
        finally:
            await s.close()

    return asyncio.run(read())


@pytest.mark.timeout(600)
def test_an_etcd_leader_change_is_invisible_to_clients(cluster3, hubs):
    """The etcd leader is killed during a stream of 1,000 creates through two replicas: every
    create is answered 201 at the first try (no 5xx to retry), and every one is stored."""
    n = "t-" + uuid.uuid4().hex[:8]
    assert hubs[0].json("POST", "/api/v1/namespaces", {"metadata": {"name": n}})[0] == 201
    total, writers = 1000, 8
    answers: dict[str, tuple[int, str]] = {}
    lock = threading.Lock()
    started = threading.Event()

    def writer(t: int) -> None:
        for i in range(total // writers):
            name = f"w{t}-{i}"
            t0 = time.monotonic()
            code, resp = call(hubs[t % 2], "POST", f"/api/v1/namespaces/{n}/configmaps", configmap(name, i=str(i)),
                              timeout=60)
            with lock:
                answers[name] = (code, f"{(resp or {}).get('reason')} after {time.monotonic() - t0:.1f}s")
                if len(answers) > 200:
                    started.set()

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(writers)]
    for th in threads:
        th.start()
    assert started.wait(60)
    victim = cluster3.leader()
    victim.stop(signal.SIGKILL)  # the leader, mid-stream: the hardest member to lose
    for th in threads:
        th.join(180)
    assert not any(th.is_alive() for th in threads)
    failed = {name: a for name, a in answers.items() if a[0] != 201}
    assert not failed, f"{len(failed)} of {total} creates were not 201: {sorted(failed.items())[:10]}"
    # every acknowledged write is in etcd (on the surviving members) and served by both replicas
    live = ",".join(m.client_url for m in cluster3.members if m.alive())
    stored = etcd_keys(live, f"/core/configmaps/root/{n}/")
    assert sorted(stored) == sorted(f"/core/configmaps/root/{n}/{name}" for name in answers)
    for h in hubs:
        wait_for(lambda h=h: len(h.json("GET", f"/api/v1/namespaces/{n}/configmaps")[1]["items"]) == total, 30,
                 what="both replicas to list every object")
        assert h.request("GET", "/readyz", auth=False)[0] == 200
    cluster3.restart(victim)


def test_a_replica_killed_mid_write_loses_and_duplicates_nothing(cluster3, hubs, tmp_path):
    from .replicas import replica

    a, b = hubs
    # a third replica to kill, sharing the others' credentials
    doomed = replica(tmp_path, 9, cluster3.endpoints, a).start()
    n = "t-" + uuid.uuid4().hex[:8]
    assert doomed.json("POST", "/api/v1/namespaces", {"metadata": {"name": n}})[0] == 201
    assert doomed.json("POST", f"/api/v1/namespaces/{n}/configmaps", configmap("counter", n="0"))[0] == 201
    killer = threading.Timer(0.8, lambda: doomed.proc.send_signal(signal.SIGKILL))
    killer.start()
    deadline = time.monotonic() + 60
    order = [doomed, b]
    increments = 0
    try:
        for i in range(150):
            create_with_retry(order, f"/api/v1/namespaces/{n}/configmaps", configmap(f"item-{i}"), deadline)
            # a guarded read-modify-write; after a lost answer the client re-reads and checks
            # whether its own step landed (the step number is in the object)
            while True:
                code, cur = call(order[0], "GET", f"/api/v1/namespaces/{n}/configmaps/counter")
                if code == 0 or code >= 500:
                    order = [b, a]
                    continue
                if cur["data"]["n"] == str(i + 1):
                    break  # the earlier attempt landed
                assert cur["data"]["n"] == str(i)
                cur["data"]["n"] = str(i + 1)
                code, _ = call(order[0], "PUT", f"/api/v1/namespaces/{n}/configmaps/counter", cur)
                if code == 200:
                    break
                if code == 0 or code >= 500:
                    order = [b, a]
                    continue
                raise AssertionError(f"update answered {code}")
            increments += 1
        assert doomed.proc.poll() is not None, "the replica was meant to die mid-run"
    finally:
        killer.cancel()
        doomed.stop()
    code, body = a.json("GET", f"/api/v1/namespaces/{n}/configmaps")
    names = sorted(i["metadata"]["name"] for i in body["items"])
    assert names == sorted(["counter", *(f"item-{i}" for i in range(150))])
    assert next(i for i in body["items"] if i["metadata"]["name"] == "counter")["data"]["n"] == "150"


def test_etcd_briefly_unreachable(tmp_path):
    require_etcd()
    etcd = EtcdCluster(tmp_path / "etcd").start()
    hub = start_replicas(tmp_path, etcd.endpoints, 1, timeout=2)[0]
    try:
        code, listed = hub.json("GET", "/api/v1/namespaces/default/configmaps")
        w = Watch(hub, f"/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={listed['metadata']['resourceVersion']}")
        code, made = hub.json("POST", "/api/v1/namespaces/default/configmaps", configmap("before"))
        assert code == 201
        wait_for(lambda: w.names() == ["before"], 5, what="the watch to see the first write")
        member = etcd.members[0]
        member.stop()
        # requests fail with a Status, not a hang or a 500; the client is told to come back
        t0 = time.monotonic()
        code, headers, raw = hub.request("GET", "/api/v1/namespaces/default/configmaps/before")
        status = json.loads(raw)
        assert code == 503 and status["kind"] == "Status" and status["reason"] == "ServiceUnavailable", status
        assert {k.lower(): v for k, v in headers.items()}.get("retry-after") == "1" and time.monotonic() - t0 < 5
        code, status = hub.json("POST", "/api/v1/namespaces/default/configmaps", configmap("during"))
        assert code in (503, 504) and status["kind"] == "Status"
        wait_for(lambda: hub.request("GET", "/readyz", auth=False)[0] == 500, 10, what="/readyz to turn false")
        assert w.ended.wait(10) and w.error is None  # the watch ended cleanly
        # etcd comes back: ready again, and the client resumes its watch where it was
        etcd.restart(member)
        wait_for(lambda: hub.request("GET", "/readyz", auth=False)[0] == 200, 15, what="/readyz to turn true")
        w2 = Watch(hub, f"/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={made['metadata']['resourceVersion']}")
        assert hub.json("POST", "/api/v1/namespaces/default/configmaps", configmap("after"))[0] == 201
        wait_for(lambda: w2.names() == ["after"], 5, what="the resumed watch to see the next write")
        w2.close()
        # a frozen etcd (it accepts connections but never answers): 504 within the timeout
        member.pause()
        try:
            code, status = hub.json("GET", "/api/v1/namespaces/default/configmaps/after", timeout=15)
            assert code in (503, 504) and status["kind"] == "Status", status
        finally:
            member.resume()
        wait_for(lambda: hub.json("GET", "/api/v1/namespaces/default/configmaps/after")[0] == 200, 15, what="recovery")
        assert "Traceback" not in hub.log.read_text()
    finally:
        hub.stop()
        etcd.stop()
