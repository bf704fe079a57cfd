"""``build_hub(config, plugins)``: what plugins contribute is served, and their controllers run
while the hub serves, with a kubeconfig for it, and are cancelled when it stops."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import httpx
import yaml

from fleetplane.hub import Contributions, Controller, ControllerContext, HubConfig, build_hub

WIDGETS_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]},
}


class WidgetPlugin:
    """A plugin as inventory/ and fleet/ are: a CRD, a check of its kind, a controller."""

    name = "widgets"

    def __init__(self) -> None:
        self.seen: asyncio.Queue[tuple[Path, bool]] = asyncio.Queue()
        self.cancelled = asyncio.Event()

    async def controller(self, ctx: ControllerContext) -> None:
        await self.seen.put((ctx.kubeconfig, ctx.alive()))
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise

    def contribute(self, hub: Contributions) -> None:
        hub.crds.append(WIDGETS_CRD)
        hub.admission[("example.com", "Widget")] = lambda obj, old, labels: []
        hub.controllers.append(Controller("widgets", self.controller))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_plugins_types_are_served_and_their_controllers_run_while_the_hub_serves(tmp_path: Path) -> None:
    port = _free_port()
    plugin = WidgetPlugin()
    hub = build_hub(HubConfig(data_dir=tmp_path, port=port, tls=False, auth=False), [plugin])
    serving = asyncio.create_task(hub.serve())
    try:
        kubeconfig, alive = await asyncio.wait_for(plugin.seen.get(), 20)
        assert alive
        server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        assert server == f"http://127.0.0.1:{port}/clusters/root"
        async with httpx.AsyncClient(base_url=server) as client:
            r = await client.post("/apis/example.com/v1/namespaces/default/widgets",
                                  json={"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}})
            assert r.status_code == 201, r.text
            assert (await client.get("/apis/example.com/v1")).json()["resources"][0]["name"] == "widgets"
    finally:
        hub.server.should_exit = True
        await asyncio.wait_for(serving, 20)
    assert plugin.cancelled.is_set()
    assert not hub.app.ready
