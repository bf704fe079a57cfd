"""GenericStore verb by verb, in-process over a temporary SQLite file: what a client of the API
would see (objects, resourceVersions, Status codes, reasons and messages), without a server.

Delete-collection is the server's handler looping over ``GenericStore.delete`` per listed item;
what it relies on here is that every single delete, dry-run included, meets admission."""

from __future__ import annotations

import asyncio
import copy
import gc
import tracemalloc
from collections.abc import Awaitable
from typing import Any

import pytest

from fleetplane.apimachinery.errors import StatusError
from fleetplane.apimachinery.fields import FieldSelector
from fleetplane.apimachinery.labels import LabelSelector
from fleetplane.registry.store import ListOptions
from fleetplane.storage.watchcache import Watcher

from .conftest import Api, ctx, running

CONFLICT = "the object has been modified; please apply your changes to the latest version and try again"


async def fails(call: Awaitable[Any]) -> StatusError:
    with pytest.raises(StatusError) as info:
        await call
    return info.value


def cm(name: str | None, data: dict[str, str] | None = None, **meta: Any) -> dict:
    metadata = {"name": name, **meta} if name else dict(meta)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data or {}}


def widget(name: str, size: int = 1, **meta: Any) -> dict:
    return {"apiVersion": "test.fleetplane.io/v1", "kind": "Widget", "metadata": {"name": name, **meta},
            "spec": {"size": size}}


def edited(obj: dict, **changes: Any) -> dict:
    """A client's changed copy of an object it read."""
    return copy.deepcopy(obj) | changes


def names(body: dict) -> list[str]:
    return [o["metadata"]["name"] for o in body["items"]]


def rv(obj: dict) -> int:
    return int(obj["metadata"]["resourceVersion"])


async def revision(api: Api) -> int:
    return await api.registry.storage.current_revision()


# -- create ---------------------------------------------------------------------------------


async def test_create_sets_the_server_fields_and_get_returns_the_same_object(api: Api) -> None:
    sent = cm("a", {"k": "v"}, uid="mine", resourceVersion="7", creationTimestamp="2000-01-01T00:00:00Z")
    created = await api.store.create(api.configmaps, ctx(), sent)
    meta = created["metadata"]
    assert meta["namespace"] == "default" and meta["uid"] != "mine"
    assert meta["creationTimestamp"] != "2000-01-01T00:00:00Z"
    assert rv(created) == await revision(api)  # the resourceVersion is the store's revision
    assert await api.store.get(api.configmaps, ctx(), "a") == created  # read back at once


async def test_generate_name_appends_five_characters(api: Api) -> None:
    created = await api.store.create(api.configmaps, ctx(), cm(None, generateName="web-"))
    name = created["metadata"]["name"]
    assert name.startswith("web-") and len(name) == len("web-") + 5
    assert (await api.store.get(api.configmaps, ctx(), name))["metadata"]["uid"] == created["metadata"]["uid"]


async def test_a_dry_run_create_answers_the_object_and_stores_nothing(api: Api) -> None:
    before = await revision(api)
    answered = await api.store.create(api.configmaps, ctx(dry_run=True), cm("dry", {"k": "v"}))
    assert answered["metadata"]["name"] == "dry" and answered["data"] == {"k": "v"}
    assert "resourceVersion" not in answered["metadata"]
    err = await fails(api.store.get(api.configmaps, ctx(), "dry"))
    assert (err.code, err.reason, err.message) == (404, "NotFound", 'configmaps "dry" not found')
    assert await revision(api) == before


async def test_creating_an_existing_name_is_already_exists(api: Api) -> None:
    await api.store.create(api.configmaps, ctx(), cm("a"))
    err = await fails(api.store.create(api.configmaps, ctx(), cm("a")))
    assert (err.code, err.reason, err.message) == (409, "AlreadyExists", 'configmaps "a" already exists')
    assert err.details == {"name": "a", "group": "", "kind": "configmaps"}


async def test_a_custom_resource_is_pruned_and_validated_on_create(api: Api) -> None:
    obj = widget("w")
    obj["spec"]["unknown"] = True
    created = await api.store.create(api.widgets, ctx(), obj)
    assert created["spec"] == {"size": 1} and created["metadata"]["generation"] == 1
    err = await fails(api.store.create(api.widgets, ctx(), widget("Not_A_Name")))
    assert (err.code, err.reason) == (422, "Invalid")
    assert err.message.startswith('Widget.test.fleetplane.io "Not_A_Name" is invalid: metadata.name')


# -- get and list ---------------------------------------------------------------------------


async def test_get_of_a_missing_object_is_not_found(api: Api) -> None:
    err = await fails(api.store.get(api.widgets, ctx(), "nope"))
    assert (err.code, err.reason) == (404, "NotFound")
    assert err.message == 'widgets.test.fleetplane.io "nope" not found'


async def test_list_selects_by_namespace_labels_and_fields(api: Api) -> None:
    for name, app, ns in (("a", "web", "default"), ("b", "db", "default"), ("c", "web", "default"),
                          ("d", "web", "kube-system")):
        await api.store.create(api.configmaps, ctx(ns), cm(name, labels={"app": app, "t": "list"}))

    def opts(labels: str = "t=list", fields: str = "") -> ListOptions:
        return ListOptions(label_selector=LabelSelector.parse(labels),
                           field_selector=FieldSelector.parse(fields, api.configmaps.field_selectors, "{field}"))

    assert names(await api.store.list(api.configmaps, ctx(), opts())) == ["a", "b", "c"]
    assert names(await api.store.list(api.configmaps, ctx(), opts("t=list,app=web"))) == ["a", "c"]
    assert names(await api.store.list(api.configmaps, ctx(), opts("t=list,app!=web"))) == ["b"]
    assert names(await api.store.list(api.configmaps, ctx(), opts(fields="metadata.name=c"))) == ["c"]
    assert names(await api.store.list(api.configmaps, ctx(""), opts("app=web"))) == ["a", "c", "d"]
    assert names(await api.store.list(api.configmaps, ctx("kube-system"), opts())) == ["d"]
    body = await api.store.list(api.configmaps, ctx(), opts())
    assert (body["kind"], body["apiVersion"]) == ("ConfigMapList", "v1")


async def test_a_list_is_a_consistent_read_at_the_current_revision(api: Api) -> None:
    created = await api.store.create(api.configmaps, ctx(), cm("fresh"))
    body = await api.store.list(api.configmaps, ctx(), ListOptions())
    assert "fresh" in names(body)  # no wait: the list waited for the cache to catch up
    assert int(body["metadata"]["resourceVersion"]) == await revision(api) >= rv(created)


async def test_list_pages_with_continue_tokens(api: Api) -> None:
    for i in range(5):
        await api.store.create(api.configmaps, ctx(), cm(f"p{i}", labels={"t": "page"}))
    selector = LabelSelector.parse("t=page")
    seen: list[str] = []
    token, remaining = "", []
    while True:
        body = await api.store.list(api.configmaps, ctx(), ListOptions(selector, limit=2, continue_token=token))
        seen += names(body)
        token = body["metadata"].get("continue", "")
        if not token:
            assert "remainingItemCount" not in body["metadata"]
            break
        assert "remainingItemCount" not in body["metadata"]  # as kube: not counted under a selector
    assert seen == [f"p{i}" for i in range(5)]
    for i in range(3):
        await api.store.create(api.configmaps, ctx(), cm(f"q{i}"))
    token = ""
    while True:  # no selector: the count of what follows the page
        body = await api.store.list(api.configmaps, ctx(), ListOptions(limit=3, continue_token=token))
        token = body["metadata"].get("continue", "")
        if not token:
            break
        remaining.append(body["metadata"]["remainingItemCount"])
    assert remaining == [5, 2]

    err = await fails(api.store.list(api.configmaps, ctx(), ListOptions(continue_token="not-a-token")))
    assert (err.code, err.reason) == (400, "BadRequest")
    assert err.message.startswith("continue key is not valid")


async def test_a_list_keeps_each_objects_json_at_its_own_size(api: Api) -> None:
    """Each object's JSON is kept on it for the next list: at its own size, not in orjson's
    4 KiB buffer (10,000 objects of 300 bytes would keep 40 MiB, not 3)."""
    n = 100
    for i in range(n):
        await api.store.create(api.configmaps, ctx(), cm(f"k{i}", {"key": "x" * 200}))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        body = await api.store.list_json(api.configmaps, ctx(), ListOptions())
        size = len(body)
        del body
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < size + 200 * n, (kept, size)  # the JSON, and a small record per object


async def test_a_continue_token_from_before_compaction_and_restart_is_expired(tmp_path) -> None:
    async with running(tmp_path / "hub.db") as api:
        for i in range(3):
            await api.store.create(api.configmaps, ctx(), cm(f"p{i}", labels={"t": "page"}))
        page = await api.store.list(api.configmaps, ctx(), ListOptions(LabelSelector.parse("t=page"), limit=1))
        await api.store.create(api.configmaps, ctx(), cm("later"))
        await api.registry.storage.compact(await revision(api))
    async with running(tmp_path / "hub.db") as api:  # restarted
        opts = ListOptions(LabelSelector.parse("t=page"), limit=1, continue_token=page["metadata"]["continue"])
        err = await fails(api.store.list(api.configmaps, ctx(), opts))
        assert (err.code, err.reason) == (410, "Expired")
        assert err.message.startswith("The provided continue parameter is too old to display a consistent list result.")


# -- update ---------------------------------------------------------------------------------


async def test_an_update_from_a_stale_resource_version_is_a_conflict(api: Api) -> None:
    first = await api.store.create(api.configmaps, ctx(), cm("a", {"v": "1"}))
    second = await api.store.update(api.configmaps, ctx(), "a", edited(first, data={"v": "2"}))
    assert rv(second) > rv(first) and second["data"] == {"v": "2"}
    err = await fails(api.store.update(api.configmaps, ctx(), "a", edited(first, data={"v": "3"})))
    assert (err.code, err.reason) == (409, "Conflict")
    assert err.message == f'Operation cannot be fulfilled on configmaps "a": {CONFLICT}'
    assert (await api.store.get(api.configmaps, ctx(), "a"))["data"] == {"v": "2"}


async def test_unconditional_updates_only_where_the_strategy_allows_them(api: Api) -> None:
    await api.store.create(api.configmaps, ctx(), cm("a", {"v": "1"}))
    updated = await api.store.update(api.configmaps, ctx(), "a", cm("a", {"v": "2"}))  # no resourceVersion
    assert updated["data"] == {"v": "2"}
    await api.store.create(api.widgets, ctx(), widget("w"))
    err = await fails(api.store.update(api.widgets, ctx(), "w", widget("w", 2)))
    assert (err.code, err.reason) == (422, "Invalid")
    assert "metadata.resourceVersion" in err.message and "must be specified for an update" in err.message


async def test_an_update_that_changes_nothing_writes_nothing(api: Api) -> None:
    created = await api.store.create(api.configmaps, ctx(), cm("a", {"v": "1"}))
    before = await revision(api)
    same = await api.store.update(api.configmaps, ctx(), "a", edited(created))
    assert rv(same) == rv(created) and await revision(api) == before


async def test_update_errors_name_the_object(api: Api) -> None:
    err = await fails(api.store.update(api.configmaps, ctx(), "missing", cm("missing")))
    assert (err.code, err.reason, err.message) == (404, "NotFound", 'configmaps "missing" not found')
    await api.store.create(api.configmaps, ctx(), cm("a"))
    err = await fails(api.store.update(api.configmaps, ctx(), "a", cm("b")))
    assert (err.code, err.reason) == (400, "BadRequest")
    assert err.message == "the name of the object (b) does not match the name on the URL (a)"


async def test_the_status_subresource_and_the_main_resource_each_change_their_own_half(api: Api) -> None:
    created = await api.store.create(api.widgets, ctx(), widget("w", 1))
    main = await api.store.update(api.widgets, ctx(), "w", edited(created, spec={"size": 2}, status={"ready": True}))
    assert main["spec"] == {"size": 2} and "status" not in main and main["metadata"]["generation"] == 2
    status = await api.store.update(api.widgets, ctx(), "w", edited(main, spec={"size": 3}, status={"ready": True}),
                                    subresource="status")
    assert status["spec"] == {"size": 2} and status["status"] == {"ready": True}
    assert status["metadata"]["generation"] == 2 and rv(status) > rv(main)  # status does not bump generation


# -- patch ----------------------------------------------------------------------------------


async def test_merge_json_and_strategic_patches(api: Api) -> None:
    await api.store.create(api.configmaps, ctx(), cm("a", {"k": "v"}))
    merged, created = await api.store.patch(api.configmaps, ctx(), "a", "merge", {"data": {"k2": "v2"}})
    assert merged["data"] == {"k": "v", "k2": "v2"} and not created
    jsoned, _ = await api.store.patch(api.configmaps, ctx(), "a", "json", [{"op": "remove", "path": "/data/k"}])
    assert jsoned["data"] == {"k2": "v2"}
    strategic, _ = await api.store.patch(api.configmaps, ctx(), "a", "strategic", {"metadata": {"labels": {"x": "y"}}})
    assert strategic["metadata"]["labels"] == {"x": "y"} and strategic["data"] == {"k2": "v2"}
    assert rv(merged) < rv(jsoned) < rv(strategic)


async def test_a_patch_carrying_a_stale_resource_version_is_a_conflict(api: Api) -> None:
    first = await api.store.create(api.configmaps, ctx(), cm("a"))
    await api.store.patch(api.configmaps, ctx(), "a", "merge", {"data": {"k": "1"}})
    err = await fails(api.store.patch(api.configmaps, ctx(), "a", "merge",
                                      {"metadata": {"resourceVersion": first["metadata"]["resourceVersion"]}}))
    assert (err.code, err.reason) == (409, "Conflict") and CONFLICT in err.message
    err = await fails(api.store.patch(api.configmaps, ctx(), "missing", "merge", {"data": {}}))
    assert (err.code, err.reason) == (404, "NotFound")


async def test_apply_creates_then_updates_and_needs_a_field_manager(api: Api) -> None:
    config = cm("ap", {"a": "1"})
    err = await fails(api.store.patch(api.configmaps, ctx(), "ap", "apply", config))
    assert (err.code, err.reason) == (422, "Invalid") and "fieldManager: Required value" in err.message
    obj, created = await api.store.patch(api.configmaps, ctx(manager="tester"), "ap", "apply", config)
    assert created and obj["data"] == {"a": "1"}
    assert [f["manager"] for f in obj["metadata"]["managedFields"]] == ["tester"]
    obj, created = await api.store.patch(api.configmaps, ctx(manager="tester"), "ap", "apply", cm("ap", {"a": "2"}))
    assert not created and obj["data"] == {"a": "2"}


# -- delete ---------------------------------------------------------------------------------


async def test_delete_without_finalizers_removes_the_object(api: Api) -> None:
    await api.store.create(api.configmaps, ctx(), cm("a"))
    body, code, is_object = await api.store.delete(api.configmaps, ctx(), "a", {})
    assert code == 200 and not is_object and body["metadata"]["name"] == "a"
    assert (await fails(api.store.get(api.configmaps, ctx(), "a"))).code == 404
    err = await fails(api.store.delete(api.configmaps, ctx(), "a", {}))
    assert (err.code, err.reason, err.message) == (404, "NotFound", 'configmaps "a" not found')


async def test_delete_preconditions_must_match(api: Api) -> None:
    created = await api.store.create(api.configmaps, ctx(), cm("a"))
    uid = created["metadata"]["uid"]
    err = await fails(api.store.delete(api.configmaps, ctx(), "a", {"preconditions": {"uid": "other"}}))
    assert (err.code, err.reason) == (409, "Conflict")
    assert err.message.endswith(f"Precondition failed: UID in precondition: other, UID in object meta: {uid}")
    err = await fails(api.store.delete(api.configmaps, ctx(), "a", {"preconditions": {"resourceVersion": "1"}}))
    assert err.message.endswith("Precondition failed: ResourceVersion in precondition: 1, ResourceVersion in object "
                                f"meta: {created['metadata']['resourceVersion']}")
    await api.store.get(api.configmaps, ctx(), "a")  # still there
    _, code, _ = await api.store.delete(api.configmaps, ctx(), "a", {"preconditions": {"uid": uid}})
    assert code == 200


async def test_an_object_with_finalizers_is_marked_deleted_until_the_last_one_goes(api: Api) -> None:
    await api.store.create(api.configmaps, ctx(), cm("a", finalizers=["test/hold"]))
    body, code, is_object = await api.store.delete(api.configmaps, ctx(), "a", {"gracePeriodSeconds": 30})
    assert code == 200 and is_object
    assert body["metadata"]["deletionTimestamp"] and body["metadata"]["deletionGracePeriodSeconds"] == 0
    marked = await api.store.get(api.configmaps, ctx(), "a")
    assert marked["metadata"]["deletionTimestamp"] == body["metadata"]["deletionTimestamp"]

    before = await revision(api)  # deleting again changes nothing
    again, _, _ = await api.store.delete(api.configmaps, ctx(), "a", {})
    assert again["metadata"]["deletionTimestamp"] == body["metadata"]["deletionTimestamp"]
    assert await revision(api) == before

    err = await fails(api.store.patch(api.configmaps, ctx(), "a", "merge",
                                      {"metadata": {"finalizers": ["test/hold", "test/more"]}}))
    assert (err.code, err.reason) == (422, "Invalid")
    assert "no new finalizers can be added if the object is being deleted" in err.message

    await api.store.patch(api.configmaps, ctx(), "a", "merge", {"metadata": {"finalizers": None}})
    assert (await fails(api.store.get(api.configmaps, ctx(), "a"))).code == 404


async def test_propagation_policies_hold_the_object_with_their_finalizer(api: Api) -> None:
    for name, policy, finalizer in (("o", "Orphan", "orphan"), ("f", "Foreground", "foregroundDeletion")):
        await api.store.create(api.configmaps, ctx(), cm(name))
        body, code, is_object = await api.store.delete(api.configmaps, ctx(), name, {"propagationPolicy": policy})
        assert code == 200 and is_object and body["metadata"]["finalizers"] == [finalizer]
        assert (await api.store.get(api.configmaps, ctx(), name))["metadata"]["deletionTimestamp"]
    err = await fails(api.store.delete(api.configmaps, ctx(), "o", {"propagationPolicy": "Sometimes"}))
    assert (err.code, err.reason) == (422, "Invalid") and "propagationPolicy" in err.message
    err = await fails(api.store.delete(api.configmaps, ctx(), "o", {"gracePeriodSeconds": "soon"}))
    assert (err.code, err.reason) == (400, "BadRequest")


async def test_every_delete_meets_admission_dry_runs_too(api: Api) -> None:
    for name in ("keep", "go", "protected"):
        await api.store.create(api.configmaps, ctx(), cm(name))
    api.admission.refused.add("protected")

    _, code, _ = await api.store.delete(api.configmaps, ctx(dry_run=True), "keep", {})
    assert code == 200
    await api.store.get(api.configmaps, ctx(), "keep")  # a dry run deletes nothing
    await api.store.delete(api.configmaps, ctx(), "go", {})
    err = await fails(api.store.delete(api.configmaps, ctx(), "protected", {}))
    assert (err.code, err.reason, err.message) == (403, "Forbidden", 'configmaps "protected" is protected')
    await api.store.get(api.configmaps, ctx(), "protected")  # refused: still there
    assert api.admission.seen == [("default", "keep", True), ("default", "go", False), ("default", "protected", False)]


# -- watch ----------------------------------------------------------------------------------


async def next_event(w: Watcher) -> tuple[str, str, int]:
    ev = await asyncio.wait_for(w.queue.get(), 10)
    assert ev is not None, "the watch ended"
    return ev.type, ev.cur.name, ev.revision


async def test_a_watch_from_a_resource_version_replays_what_came_after_then_follows(api: Api) -> None:
    a = await api.store.create(api.configmaps, ctx(), cm("a"))
    b = await api.store.create(api.configmaps, ctx(), cm("b"))
    a2 = await api.store.update(api.configmaps, ctx(), "a", cm("a", {"v": "2"}))
    w, replay = api.store.watch(api.configmaps, ctx(), ListOptions(), rv(a))
    try:
        assert [(ev.type, ev.cur.name, ev.revision) for ev in replay] == [("ADDED", "b", rv(b)), ("MODIFIED", "a", rv(a2))]
        c = await api.store.create(api.configmaps, ctx(), cm("c"))
        await api.store.delete(api.configmaps, ctx(), "b", {})
        assert await next_event(w) == ("ADDED", "c", rv(c))
        kind, name, revision = await next_event(w)
        assert (kind, name) == ("DELETED", "b") and revision > rv(c)
    finally:
        w.stop()


async def test_a_watch_with_a_selector_sees_objects_enter_and_leave_it(api: Api) -> None:
    await api.store.create(api.configmaps, ctx(), cm("x", labels={"app": "db"}))
    w, replay = api.store.watch(api.configmaps, ctx(), ListOptions(LabelSelector.parse("app=web")), None)
    try:
        assert replay == []
        await api.store.patch(api.configmaps, ctx(), "x", "merge", {"metadata": {"labels": {"app": "web"}}})
        assert (await next_event(w))[:2] == ("ADDED", "x")
        await api.store.patch(api.configmaps, ctx(), "x", "merge", {"data": {"k": "v"}})
        assert (await next_event(w))[:2] == ("MODIFIED", "x")
        await api.store.patch(api.configmaps, ctx(), "x", "merge", {"metadata": {"labels": {"app": "db"}}})
        assert (await next_event(w))[:2] == ("DELETED", "x")
    finally:
        w.stop()


async def test_a_watch_from_before_a_restart_is_expired(tmp_path) -> None:
    async with running(tmp_path / "hub.db") as api:
        old = await api.store.create(api.configmaps, ctx(), cm("a"))
    async with running(tmp_path / "hub.db") as api:  # restarted: no history from before
        with pytest.raises(StatusError) as info:
            api.store.watch(api.configmaps, ctx(), ListOptions(), rv(old) - 1)
        err = info.value
        assert (err.code, err.reason) == (410, "Expired")
        assert err.message.startswith(f"too old resource version: {rv(old) - 1} (")
