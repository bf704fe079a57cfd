"""A served request is freed by reference counting as it ends: it leaves nothing that only the
cyclic collector could free. Cycles per request (the request and its send wrappers) once made
young collections walk tens of thousands of objects, pausing the event loop for 20-60 ms at 500
writes/s (docs/scaling.md, "What a request costs")."""

from __future__ import annotations

import asyncio
import gc
import socket
from pathlib import Path

import httpx
import yaml

from fleetplane.hub import build_hub
from fleetplane.server.http import Request
from fleetplane.server.serve import HubConfig


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_requests_through_the_whole_pipeline_leave_no_cyclic_garbage(tmp_path: Path) -> None:
    hub = build_hub(HubConfig(data_dir=tmp_path, port=_free_port(), tls=False), [])
    serving = asyncio.create_task(hub.serve())
    try:
        for _ in range(400):
            if hub.app.ready:
                break
            await asyncio.sleep(0.05)
        kubeconfig = yaml.safe_load((tmp_path / "admin.kubeconfig").read_text())
        server = kubeconfig["clusters"][0]["cluster"]["server"]
        token = kubeconfig["users"][0]["user"]["token"]
        base = "/api/v1/namespaces/default/configmaps"
        async with httpx.AsyncClient(base_url=server, headers={"Authorization": f"Bearer {token}"}) as client:

            async def requests(tag: str) -> None:
                for i in range(10):
                    r = await client.post(base, json={"apiVersion": "v1", "kind": "ConfigMap",
                                                      "metadata": {"name": f"{tag}-{i}"}, "data": {"k": "v"}})
                    assert r.status_code == 201, r.text
                    assert (await client.get(f"{base}/{tag}-{i}")).status_code == 200
                assert (await client.get(base)).status_code == 200
                assert (await client.get(f"{base}/missing")).status_code == 404
                r = await client.post(base, json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name"}})
                assert r.status_code == 422
                assert (await client.get("/version")).status_code == 200

            await requests("warm")  # first-use caches, lazily built tables
            gc.collect()
            gc.set_debug(gc.DEBUG_SAVEALL)
            try:
                await requests("measured")
                gc.collect()
                left = [o for o in gc.garbage if isinstance(o, Request)]
            finally:
                gc.set_debug(0)
                gc.garbage.clear()
            assert left == [], f"{len(left)} requests were left for the cyclic collector"
    finally:
        hub.server.should_exit = True
        await asyncio.wait_for(serving, 20)
