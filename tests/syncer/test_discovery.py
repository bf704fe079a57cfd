"""The Syncer's discovery poll against a real hub: ETags kept, nothing re-read while unchanged."""

from __future__ import annotations

import uuid

from fleetplane.fleet.syncer.discovery import Discoverer, discover
from fleetplane.kube.client import Client

from ..harness import Hub
from .conftest import target

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


async def test_a_discoverer_reuses_its_discovery_until_a_type_is_added(hub: Hub) -> None:
    lc = "disc-" + uuid.uuid4().hex[:8]
    client = Client(target(hub, lc), "test")
    try:
        d = Discoverer(client)
        first = await d.discover()
        assert first.preferred("", "configmaps") is not None
        second = await d.discover()
        assert second is first  # both answers 304: nothing sent, nothing parsed
        crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": "sprockets.example.com"},
               "spec": {"group": "example.com", "scope": "Namespaced",
                        "names": {"plural": "sprockets", "kind": "Sprocket"},
                        "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                            "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}
        await client.create(CRDS, crd)
        fresh = await discover(client)  # read afresh, as the hub serves it now
        assert fresh.preferred("example.com", "sprockets") is not None
        again = await d.discover()
        assert again is not first and again.resources == fresh.resources
    finally:
        await client.close()
