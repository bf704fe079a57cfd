"""What only the etcd backend has: TLS, several endpoints, outages, consistent reads with
writes outside the hub's keys, and store URLs."""

from __future__ import annotations

import asyncio
import time

import pytest

from fleetplane.storage.etcd import EtcdStore, StoreTimeoutError, parse_endpoints
from fleetplane.storage.interface import UnavailableError
from fleetplane.storage.open import open_store, split_url
from fleetplane.storage.sqlite import SQLiteStore

from .etcd_server import EtcdCluster, _free_port, require_etcd


def test_store_urls():
    assert split_url("sqlite:/var/lib/hub.db") == ("sqlite", "/var/lib/hub.db", {})
    assert split_url("/plain/path.db") == ("sqlite", "/plain/path.db", {})
    assert split_url("etcd:https://a:2379,https://b:2379?cacert=/ca&timeout=2") == (
        "etcd", "https://a:2379,https://b:2379", {"cacert": "/ca", "timeout": "2"})
    assert parse_endpoints("http://127.0.0.1:2379, https://etcd-1.example:2380,10.0.0.3") == [
        ("127.0.0.1:2379", False), ("etcd-1.example:2380", True), ("10.0.0.3:2379", False)]
    assert isinstance(open_store("sqlite:/tmp/x/hub.db"), SQLiteStore)
    s = open_store("etcd:http://127.0.0.1:1?timeout=2")
    assert isinstance(s, EtcdStore) and s.timeout == 2
    with pytest.raises(ValueError):
        open_store("etcd:http://127.0.0.1:1?colour=red")
    with pytest.raises(ValueError):
        parse_endpoints("ftp://x:1")


async def test_mutual_tls(tmp_path):
    require_etcd()
    cluster = EtcdCluster(tmp_path / "etcd", tls=True).start()
    try:
        tls = cluster.tls
        s = open_store(f"etcd:{cluster.endpoints}", cacert=str(tls.ca), cert=str(tls.client_cert), key=str(tls.client_key))
        await s.start()
        try:
            r = await s.create("/tls/r/c/a", b"secret")
            assert (await s.get("/tls/r/c/a")).mod_revision == r
        finally:
            await s.close()
        # without a client certificate the server refuses us
        bare = EtcdStore(cluster.endpoints, cacert=str(tls.ca), dial_timeout=1, retry_window=0.5)
        with pytest.raises(UnavailableError):
            await bare.start()
    finally:
        cluster.stop()


async def test_dead_endpoint_is_skipped(etcd_server):
    dead = f"http://127.0.0.1:{_free_port()}"
    s = EtcdStore(f"{dead},{etcd_server.endpoints}")
    await s.start()
    try:
        for i in range(10):
            r = await s.create(f"/fo/r/c/k{i}", b"x")
            assert (await s.get(f"/fo/r/c/k{i}")).mod_revision == r
    finally:
        await s.close()


async def test_unreachable_etcd_fails_fast_with_unavailable():
    s = EtcdStore(f"http://127.0.0.1:{_free_port()}", dial_timeout=0.5, retry_window=0.5)
    t0 = time.monotonic()
    with pytest.raises(UnavailableError):
        await s.start()
    assert time.monotonic() - t0 < 5


async def test_outage_then_recovery(tmp_path):
    require_etcd()
    cluster = EtcdCluster(tmp_path / "etcd").start()
    s = EtcdStore(cluster.endpoints, timeout=2, retry_window=0.5)
    await s.start()
    try:
        r1 = await s.create("/out/r/c/a", b"1")
        seen = []
        broke: list[BaseException] = []
        first = asyncio.Event()

        async def consume(start: int) -> None:
            try:
                async for ev in s.watch("/", start):
                    seen.append(ev.revision)
                    first.set()
            except UnavailableError as exc:
                broke.append(exc)

        task = asyncio.create_task(consume(r1))
        await asyncio.wait_for(first.wait(), 5)
        member = cluster.members[0]
        member.stop()
        with pytest.raises(UnavailableError):
            await s.create("/out/r/c/b", b"2")
        with pytest.raises(UnavailableError):
            await s.current_revision()
        await asyncio.wait_for(task, 10)
        assert broke and seen == [r1]  # the watch ended cleanly with UnavailableError
        # paused (accepting connections, never answering): requests fail within the timeout,
        # as a timeout, or as unavailable when the connection itself could not be set up
        cluster.restart(member)
        member.pause()
        t0 = time.monotonic()
        with pytest.raises(UnavailableError) as exc:
            await s.get("/out/r/c/a")
        assert time.monotonic() - t0 < s.timeout + 1
        assert isinstance(exc.value, StoreTimeoutError) or "connect" in str(exc.value)
        member.resume()
        deadline = time.monotonic() + 10
        while True:
            try:
                r2 = await s.create("/out/r/c/b", b"2")
                break
            except UnavailableError:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.1)
        agen = s.watch("/out/", r1 + 1)  # resume after the outage: nothing missed
        assert (await asyncio.wait_for(agen.__anext__(), 5)).revision == r2
        await agen.aclose()
    finally:
        await s.close()
        cluster.stop()


async def test_consistent_reads_ignore_writes_outside_the_hub_keys(etcd_server):
    """A write outside "/" moves etcd's revision but no watch event reaches the cache:
    current_revision must name a revision the root watch delivers, not hang on etcd's."""
    s = EtcdStore(etcd_server.endpoints, timeout=2)
    await s.start()
    applied: list[int] = []

    async def cache() -> None:
        async for ev in s.watch("/", await s.current_revision() + 1):
            applied.append(ev.revision)

    task = asyncio.create_task(cache())
    try:
        await asyncio.sleep(0.05)
        r1 = await s.create("/fw/r/c/a", b"1")
        await s._eps[0].kv.put(b"foreign-key", b"x", timeout=2)
        t0 = time.monotonic()
        assert await s.current_revision() == r1
        assert time.monotonic() - t0 < 1
        r2 = await s.create("/fw/r/c/b", b"2")
        assert await s.current_revision() == r2
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await s.close()
