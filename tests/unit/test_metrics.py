"""Each hub app has its own metrics: two apps in one process count their own requests and
report their own store, and ``/metrics`` still shows the process-wide figures."""

from __future__ import annotations

from pathlib import Path

import httpx

from fleetplane.registry.hub import Registry
from fleetplane.server.app import HubApp, ServerConfig
from fleetplane.storage.sqlite import SQLiteStore


def _sample(text: str, prefix: str) -> str | None:
    return next((line.rsplit(" ", 1)[1] for line in text.splitlines() if line.startswith(prefix)), None)


async def test_two_apps_in_one_process_keep_their_own_metrics(tmp_path: Path) -> None:
    apps = [HubApp(Registry(SQLiteStore(str(tmp_path / f"{n}.db"))), ServerConfig()) for n in ("a", "b")]
    for app in apps:
        await app.registry.start()
    try:
        a, b = (httpx.AsyncClient(transport=httpx.ASGITransport(app=app),  # type: ignore[arg-type] # scope: dict
                                  base_url="http://hub") for app in apps)
        async with a, b:
            for name in ("one", "two", "three"):
                r = await a.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace",
                                                              "metadata": {"name": name}})
                assert r.status_code == 201
            created = 'apiserver_request_total{code="201",group="",resource="namespaces",subresource="",verb="create"}'
            text_a, text_b = (await a.get("/metrics")).text, (await b.get("/metrics")).text
            assert _sample(text_a, created) == "3.0"
            assert _sample(text_b, created) is None
            revisions = [float(_sample(t, "fleetplane_storage_revision ") or -1) for t in (text_a, text_b)]
            assert revisions == [apps[0].registry.cache.revision, apps[1].registry.cache.revision]
            assert revisions[0] > revisions[1]
            assert "process_cpu_seconds_total" in text_a or "python_gc_objects_collected_total" in text_a
    finally:
        for app in apps:
            await app.registry.close()
