"""Delete-collection in-process: the bare ASGI app (no pipeline) over the registry fixture,
through httpx's ASGI transport. The verb is the server's loop over the listed items; each item
must meet admission as a single delete does (dry-run included): a refused item stops the
collection delete with the plugin's Status, and nothing is deleted by a dry run."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from fleetplane.server.app import HubApp, ServerConfig

from .conftest import Api, ctx

COLLECTION = "/api/v1/namespaces/default/configmaps"


@pytest.fixture
async def http(api: Api) -> AsyncIterator[httpx.AsyncClient]:
    app = HubApp(api.registry, ServerConfig())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://hub") as client:
        yield client


async def make(api: Api, *names: str) -> None:
    for name in names:
        await api.store.create(api.configmaps, ctx(), {"metadata": {"name": name, "labels": {"t": "dc"}}})


async def left(http: httpx.AsyncClient) -> list[str]:
    resp = await http.get(COLLECTION, params={"labelSelector": "t=dc"})
    assert resp.status_code == 200, resp.text
    return [o["metadata"]["name"] for o in resp.json()["items"]]


async def test_delete_collection_deletes_what_the_selector_matches(api: Api, http: httpx.AsyncClient) -> None:
    await make(api, "a", "b")
    await api.store.create(api.configmaps, ctx(), {"metadata": {"name": "other"}})
    resp = await http.delete(COLLECTION, params={"labelSelector": "t=dc"})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["kind"] == "ConfigMapList" and [o["metadata"]["name"] for o in body["items"]] == ["a", "b"]
    assert await left(http) == []
    assert (await http.get(f"{COLLECTION}/other")).status_code == 200


async def test_each_item_of_a_delete_collection_meets_admission(api: Api, http: httpx.AsyncClient) -> None:
    await make(api, "a", "b", "c")
    api.admission.refused.add("b")
    resp = await http.delete(COLLECTION, params={"labelSelector": "t=dc"})
    assert resp.status_code == 403, resp.text
    assert resp.json()["reason"] == "Forbidden" and resp.json()["message"] == 'configmaps "b" is protected'
    assert api.admission.seen == [("default", "a", False), ("default", "b", False)]
    assert await left(http) == ["b", "c"]  # items are deleted in order; the refusal stops the rest


async def test_a_dry_run_delete_collection_admits_every_item_and_deletes_none(api: Api, http: httpx.AsyncClient) -> None:
    await make(api, "a", "b")
    resp = await http.delete(COLLECTION, params={"labelSelector": "t=dc", "dryRun": "All"})
    assert resp.status_code == 200, resp.text
    assert [o["metadata"]["name"] for o in resp.json()["items"]] == ["a", "b"]
    assert api.admission.seen == [("default", "a", True), ("default", "b", True)]
    assert await left(http) == ["a", "b"]
