"""The watch cache takes the object a large local write built instead of decoding the stored
value again (a 4 MiB value is a ~100 ms C call that holds the GIL). In-process over SQLite:

* what the cache holds is, on every write path, exactly what decoding the stored value gives;
* the cached object is not the writer's: its top level and metadata are its own, so what the
  request path (and its caller) sets on the object it returns does not reach the cache, while
  the rest is shared and read-only for both, as every object the store returns;
* small objects are still decoded, so in-process callers share nothing with the cache."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from fleetplane.apimachinery.errors import StatusError
from fleetplane.registry.offload import OFF_LOOP_BYTES
from fleetplane.registry.store import GenericStore, ListOptions
from fleetplane.registry.types import ResourceType
from fleetplane.storage.watchcache import CachedObject

from .conftest import Api, ctx

#: data that makes an object a large one (its stored value over OFF_LOOP_BYTES)
BIG = {f"k{i:05d}": "v" * 8 for i in range(OFF_LOOP_BYTES // 16)}


def cached(api: Api, rt: ResourceType, name: str, namespace: str = "default") -> CachedObject:
    store = api.store
    co = api.registry.cache.resource(store.prefix(rt)).get(store.key(rt, "root", namespace, name))
    assert co is not None, f"{name} is not cached"
    return co


async def assert_cache_is_the_store(api: Api) -> int:
    """Every stored object is cached as decoding its value gives it (resourceVersion added)."""
    await api.registry.cache.sync()
    kvs, _ = await api.registry.storage.range("/")
    for kv in kvs:
        want = orjson.loads(kv.value)
        want["metadata"]["resourceVersion"] = str(kv.mod_revision)
        co = api.registry.cache.resource(kv.key).get(kv.key)
        assert co is not None and co.revision == kv.mod_revision, kv.key
        assert co.obj == want, kv.key
        # the same JSON too (key order included: what a GET or a watch sends)
        assert orjson.dumps(co.obj) == orjson.dumps(want), kv.key
    return len(kvs)


def big_cm(name: str, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}, "data": dict(BIG)}


async def test_a_large_create_is_cached_as_built_and_apart_from_the_response(api: Api):
    created = await api.store.create(api.configmaps, ctx(manager="test"), big_cm("big"))
    co = cached(api, api.configmaps, "big")
    assert co.obj == created and co.obj["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert co.obj["data"] is created["data"], "the cache decoded the value instead of taking the object"
    # the boundary: the top level and metadata are the cache's own
    assert co.obj is not created and co.obj["metadata"] is not created["metadata"]
    created["metadata"]["resourceVersion"] = "1"
    created["metadata"]["labels"] = {"changed": "by the caller"}
    created["kind"] = "Changed"
    assert co.obj["metadata"]["resourceVersion"] == str(co.revision)
    assert "labels" not in co.obj["metadata"] and co.obj["kind"] == "ConfigMap"
    got = await api.store.get(api.configmaps, ctx(), "big")
    assert got is co.obj and got["metadata"]["resourceVersion"] == str(co.revision)
    await assert_cache_is_the_store(api)


async def test_small_objects_are_decoded(api: Api):
    created = await api.store.create(api.configmaps, ctx(manager="test"),
                                     {"metadata": {"name": "small"}, "data": {"a": "b"}})
    co = cached(api, api.configmaps, "small")
    assert co.obj == created and co.obj["data"] is not created["data"]


async def test_every_write_path_caches_what_is_stored(api: Api):
    cms, c = api.configmaps, ctx(manager="test")
    await api.store.create(cms, c, big_cm("cm", finalizers=["test.fleetplane.io/hold"]))
    current = await api.store.get(cms, ctx(), "cm")
    replaced = orjson.loads(orjson.dumps(current))
    replaced["data"]["put"] = "yes"
    await api.store.update(cms, c, "cm", replaced)
    await api.store.patch(cms, c, "cm", "merge", {"data": {"merge": "yes"}})
    await api.store.patch(cms, c, "cm", "json", [{"op": "add", "path": "/data/json", "value": "yes"}])
    await api.store.patch(cms, c, "cm", "strategic", {"metadata": {"labels": {"strategic": "yes"}}})
    await api.store.patch(cms, ctx(manager="applier"), "cm", "apply",
                          {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"applied": "yes"}})
    await api.store.patch(cms, ctx(manager="applier"), "applied", "apply",
                          {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": dict(BIG)})
    # a custom resource, its status subresource, and a graceful delete (an update that stays)
    widget = {"apiVersion": "test.fleetplane.io/v1", "kind": "Widget",
              "metadata": {"name": "w", "annotations": {"big": "x" * OFF_LOOP_BYTES}}, "spec": {"size": 1}}
    await api.store.create(api.widgets, c, widget)
    await api.store.patch(api.widgets, c, "w", "merge", {"status": {"ready": True}}, subresource="status")
    body, code, _ = await api.store.delete(cms, c, "cm", {})
    assert code == 200 and body["metadata"]["deletionTimestamp"]
    # a kind stored as another (events.k8s.io/v1 Event as core/v1 Event)
    events = api.type("events.k8s.io", "v1", "events")
    await api.store.create(events, c, {"apiVersion": "events.k8s.io/v1", "kind": "Event",
                                       "metadata": {"name": "ev", "annotations": {"big": "x" * OFF_LOOP_BYTES}},
                                       "eventTime": "2026-01-01T00:00:00.000000Z", "reason": "Test", "action": "Tested",
                                       "reportingController": "test", "reportingInstance": "test", "type": "Normal"})
    assert cached(api, cms, "cm").obj["data"]["applied"] == "yes"
    assert cached(api, api.widgets, "w").obj["status"] == {"ready": True}
    assert await assert_cache_is_the_store(api) > 5
    # the last finalizer goes: the object goes from the cache too
    await api.store.patch(cms, c, "cm", "merge", {"metadata": {"finalizers": None}})
    await api.registry.cache.sync()
    assert api.registry.cache.resource(GenericStore.prefix(cms)).get(GenericStore.key(cms, "root", "default", "cm")) is None
    await assert_cache_is_the_store(api)


async def test_a_write_that_fails_leaves_nothing_handed(api: Api):
    cms, c = api.configmaps, ctx(manager="test")
    await api.store.create(cms, c, big_cm("twice"))
    with pytest.raises(StatusError) as refused:
        await api.store.create(cms, c, big_cm("twice"))
    assert refused.value.reason == "AlreadyExists"
    assert api.registry.cache._handed == {}
    await assert_cache_is_the_store(api)


async def test_a_delete_event_carries_the_last_object_at_the_deletes_revision(api: Api):
    cms, c = api.configmaps, ctx(manager="test")
    for name in ("big", "small"):
        body = big_cm(name) if name == "big" else {"metadata": {"name": name}, "data": {"a": "b"}}
        await api.store.create(cms, c, body)
    watcher, _ = api.store.watch(cms, ctx(), ListOptions(), None)
    try:
        for name in ("big", "small"):
            before = cached(api, cms, name)
            kv = await api.registry.storage.get(GenericStore.key(cms, "root", "default", name))
            assert kv is not None
            await api.store.delete(cms, c, name, {})
            ev = await asyncio.wait_for(watcher.queue.get(), 10)
            assert ev is not None and ev.type == "DELETED"
            want = orjson.loads(kv.value)
            want["metadata"]["resourceVersion"] = str(ev.revision)
            assert ev.cur.obj == want and orjson.dumps(ev.cur.obj) == orjson.dumps(want)
            assert before.obj["metadata"]["resourceVersion"] == str(before.revision)  # unchanged
            assert ev.revision > before.revision
    finally:
        watcher.stop()
