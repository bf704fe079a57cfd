"""The hub's lifecycle controllers in-process: a Registry over a temporary SQLite store, no server.

Namespace termination, CRD instance cleanup, logical-cluster teardown and garbage collection by
ownerReferences (Background, Foreground, Orphan), each waited for with a deadline.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from fleetplane.apimachinery.errors import StatusError
from fleetplane.registry.hub import Registry
from fleetplane.registry.store import Context
from fleetplane.registry.types import ResourceType
from fleetplane.storage.sqlite import SQLiteStore

ROOT = "root"
DEADLINE = 15.0  # the controllers run on the test's own event loop: generous on a loaded machine


@pytest.fixture
async def registry(tmp_path: Path) -> AsyncIterator[Registry]:
    reg = Registry(SQLiteStore(tmp_path / "hub.db"))
    await reg.start()
    try:
        yield reg
    finally:
        await reg.close()


def rt(reg: Registry, group: str, version: str, plural: str, cluster: str = ROOT) -> ResourceType:
    found = reg.catalog.lookup(cluster, group, version, plural)
    assert found is not None, f"{plural}.{group} is not served in {cluster}"
    return found


async def eventually(condition: Callable[[], Any], what: str) -> Any:
    """Wait until ``condition()`` is truthy (it may be a coroutine function), or fail at the deadline."""
    deadline = time.monotonic() + DEADLINE
    while True:
        got = condition()
        if asyncio.iscoroutine(got):
            got = await got
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {DEADLINE}s waiting for {what}")
        await asyncio.sleep(0.02)


async def get(reg: Registry, kind: ResourceType, name: str, cluster: str = ROOT, namespace: str = "") -> dict | None:
    try:
        return await reg.store.get(kind, Context(cluster, namespace), name)
    except StatusError as exc:
        if exc.code == 404:
            return None
        raise


def gone(reg: Registry, kind: ResourceType, name: str, cluster: str = ROOT, namespace: str = "") -> Callable[[], Any]:
    async def check() -> bool:
        return await get(reg, kind, name, cluster, namespace) is None

    return check


async def configmap(reg: Registry, name: str, namespace: str = "default", cluster: str = ROOT, **meta: Any) -> dict:
    return await reg.store.create(rt(reg, "", "v1", "configmaps", cluster), Context(cluster, namespace),
                                  {"metadata": {"name": name, **meta}, "data": {"k": "v"}})


def owned_by(owner: dict, block: bool = False) -> list[dict]:
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"]}
    return [{**ref, "blockOwnerDeletion": True} if block else ref]


async def delete(reg: Registry, kind: ResourceType, name: str, namespace: str = "default", cluster: str = ROOT,
                 policy: str = "Background") -> dict:
    obj, _, _ = await reg.store.delete(kind, Context(cluster, namespace), name, {"propagationPolicy": policy})
    return obj


async def test_a_terminating_namespace_is_emptied_then_removed(registry: Registry) -> None:
    namespaces, cms = rt(registry, "", "v1", "namespaces"), rt(registry, "", "v1", "configmaps")
    await registry.store.create(namespaces, Context(ROOT), {"metadata": {"name": "work"}})
    await configmap(registry, "a", "work")
    await configmap(registry, "b", "work", finalizers=["example.com/hold"])
    await delete(registry, namespaces, "work", namespace="")
    await eventually(gone(registry, cms, "a", namespace="work"), "the namespace's contents deleted")

    async def b_deleting() -> bool:  # deleted in the same pass as a, but perhaps just after a was gone
        b = await get(registry, cms, "b", namespace="work")
        assert b is not None, "b has a finalizer: it stays until the finalizer goes"
        return bool(b["metadata"].get("deletionTimestamp"))

    await eventually(b_deleting, "b marked for deletion (it keeps its finalizer)")
    assert await get(registry, namespaces, "work") is not None  # held by b's finalizer
    await registry.store.guaranteed_update(cms, Context(ROOT, "work"), "b",
                                           lambda o: {**o, "metadata": {**o["metadata"], "finalizers": []}})
    await eventually(gone(registry, namespaces, "work"), "the namespace removed once empty")


async def test_the_resync_finishes_a_namespace_whose_trigger_was_lost(registry: Registry, monkeypatch: pytest.MonkeyPatch) -> None:
    """The resync reads only what is being deleted, and that is enough: a namespace whose every
    event-driven trigger is dropped still goes, within a resync period."""
    namespaces = rt(registry, "", "v1", "namespaces")
    lifecycle, key = registry.lifecycle, "/core/namespaces/root/lost"
    enqueue = lifecycle._enqueue
    monkeypatch.setattr(lifecycle, "_enqueue", lambda kind, arg: None if arg == "root|lost" else enqueue(kind, arg))
    await registry.store.create(namespaces, Context(ROOT), {"metadata": {"name": "lost"}})
    assert lifecycle.deleting == set()
    await delete(registry, namespaces, "lost", namespace="")
    await eventually(lambda: key in lifecycle.deleting, "the terminating namespace tracked for the resync")
    monkeypatch.setattr(lifecycle, "_enqueue", enqueue)  # its triggers are gone: only the resync is left
    await eventually(gone(registry, namespaces, "lost"), "the namespace removed by the resync")
    await eventually(lambda: not lifecycle.deleting, "nothing left for the resync")


async def test_a_deleted_crds_instances_go_before_it(registry: Registry) -> None:
    crds = rt(registry, "apiextensions.k8s.io", "v1", "customresourcedefinitions")
    schema = {"type": "object", "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
    await registry.store.create(crds, Context(ROOT), {
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": schema}}]}})
    widgets = await eventually(lambda: registry.catalog.lookup(ROOT, "example.com", "v1", "widgets"), "widgets served")
    await registry.store.create(widgets, Context(ROOT, "default"),
                                {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}})
    await delete(registry, crds, "widgets.example.com", namespace="")
    await eventually(gone(registry, crds, "widgets.example.com"), "the CRD removed after its instances")
    assert not list(registry.cache.resource("/example.com/widgets/").objects(ROOT, None))


async def test_a_deleted_logical_cluster_takes_everything_in_it(registry: Registry) -> None:
    await registry.ensure_cluster("team-b")
    await configmap(registry, "settings", cluster="team-b")
    clusters = registry.catalog.logical_cluster
    await delete(registry, clusters, "team-b", namespace="")
    await eventually(gone(registry, clusters, "team-b"), "the LogicalCluster removed after its contents")
    left = [o.key for rc in registry.cache.resources.values() for o in rc.objects("team-b", None)]
    assert left == []
    # used again, it comes into being again (ensure_cluster does not remember it as ready)
    await registry.ensure_cluster("team-b")
    assert await get(registry, clusters, "team-b") is not None
    assert await get(registry, rt(registry, "", "v1", "namespaces"), "default", cluster="team-b") is not None


async def test_background_deletion_collects_dependents(registry: Registry) -> None:
    cms = rt(registry, "", "v1", "configmaps")
    owner = await configmap(registry, "owner")
    await configmap(registry, "dep", ownerReferences=owned_by(owner))
    await delete(registry, cms, "owner", policy="Background")
    await eventually(gone(registry, cms, "dep", namespace="default"), "the dependent collected")


async def test_a_dependent_of_a_missing_owner_is_collected(registry: Registry) -> None:
    cms = rt(registry, "", "v1", "configmaps")
    ghost = {"metadata": {"name": "ghost", "uid": "00000000-0000-0000-0000-000000000000"}}
    await configmap(registry, "orphaned", ownerReferences=owned_by(ghost))
    await eventually(gone(registry, cms, "orphaned", namespace="default"), "the dangling dependent collected")


async def test_orphan_deletion_keeps_dependents_without_the_reference(registry: Registry) -> None:
    cms = rt(registry, "", "v1", "configmaps")
    owner = await configmap(registry, "owner")
    await configmap(registry, "dep", ownerReferences=owned_by(owner))
    deleting = await delete(registry, cms, "owner", policy="Orphan")
    assert "orphan" in deleting["metadata"]["finalizers"]
    await eventually(gone(registry, cms, "owner", namespace="default"), "the owner gone after orphaning")
    dep = await get(registry, cms, "dep", namespace="default")
    assert dep is not None and "ownerReferences" not in dep["metadata"]


async def test_foreground_deletion_waits_for_blocking_dependents(registry: Registry) -> None:
    cms = rt(registry, "", "v1", "configmaps")
    owner = await configmap(registry, "owner")
    await configmap(registry, "dep", ownerReferences=owned_by(owner, block=True), finalizers=["example.com/slow"])
    deleting = await delete(registry, cms, "owner", policy="Foreground")
    assert "foregroundDeletion" in deleting["metadata"]["finalizers"]

    async def dependent_marked() -> bool:
        dep = await get(registry, cms, "dep", namespace="default")
        return bool(dep and dep["metadata"].get("deletionTimestamp"))

    await eventually(dependent_marked, "the dependent marked for deletion")
    assert await get(registry, cms, "owner", namespace="default") is not None  # waits on the blocking dependent
    await registry.store.guaranteed_update(cms, Context(ROOT, "default"), "dep",
                                           lambda o: {**o, "metadata": {**o["metadata"], "finalizers": []}})
    await eventually(gone(registry, cms, "owner", namespace="default"), "the owner gone after its dependent")
