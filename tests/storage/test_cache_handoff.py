"""Two replicas of the hub on one etcd: a large object one replica writes is cached there as
the object it built (not decoded again) and in the other, which only has the store's watch,
decoded from the value; both caches hold what is stored, and later writes by either replica
are seen by both."""

from __future__ import annotations

from contextlib import AsyncExitStack

import orjson

from fleetplane.registry.catalog import ROOT
from fleetplane.registry.hub import Registry
from fleetplane.registry.offload import OFF_LOOP_BYTES
from fleetplane.registry.store import Context
from fleetplane.storage.etcd import EtcdStore

from .conftest import wipe

BIG = {f"k{i:05d}": "v" * 8 for i in range(OFF_LOOP_BYTES // 16)}


async def test_a_large_write_is_handed_in_its_replica_and_decoded_in_the_other(etcd_server):
    await wipe(etcd_server.endpoints)
    async with AsyncExitStack() as stack:
        replicas = []
        for _ in range(2):
            r = Registry(EtcdStore(etcd_server.endpoints))
            await r.start()
            stack.push_async_callback(r.close)
            replicas.append(r)
        a, b = replicas
        cms = a.catalog.lookup(ROOT, "", "v1", "configmaps")
        assert cms is not None
        key = a.store.key(cms, ROOT, "default", "big")
        created = await a.store.create(cms, Context(ROOT, "default", "test"), {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": dict(BIG)})
        await a.cache.sync()
        await b.cache.sync()
        kv = await a.storage.get(key)
        assert kv is not None
        want = orjson.loads(kv.value)
        want["metadata"]["resourceVersion"] = str(kv.mod_revision)
        in_a, in_b = a.cache.resource(key).get(key), b.cache.resource(key).get(key)
        assert in_a is not None and in_b is not None
        assert in_a.obj == in_b.obj == want == created
        assert in_a.obj["data"] is created["data"]  # handed over in the writer's replica
        assert in_b.obj["data"] is not created["data"]
        assert a.cache._handed == {} and b.cache._handed == {}
        # the other replica updates it: the writer's replica decodes that one from its watch
        cms_b = b.catalog.lookup(ROOT, "", "v1", "configmaps")
        assert cms_b is not None
        updated, _ = await b.store.patch(cms_b, Context(ROOT, "default", "test"), "big", "merge", {"data": {"new": "yes"}})
        await a.cache.sync()
        in_a = a.cache.resource(key).get(key)
        assert in_a is not None and in_a.obj == updated and in_a.obj["data"]["new"] == "yes"
