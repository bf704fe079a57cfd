"""Service cluster IPs and node ports allocated as the registry stores a Service (a simulated
cluster's): unique under concurrent creates, an explicit taken value refused with kube's 422, a
full range kube's 500, a deleted Service's values free again at once."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from fleetplane.apimachinery.errors import StatusError
from fleetplane.apis import workload_types
from fleetplane.apis.core.service import ServiceStrategy
from fleetplane.registry.hub import Registry
from fleetplane.storage.sqlite import SQLiteStore

from .conftest import ctx


def _svc(name: str, **spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"ports": [{"port": 80}], **spec}}


@pytest.fixture
async def services(tmp_path: Path):
    types = workload_types()
    rt = next(t for t in types if t.kind == "Service" and not t.group)
    assert isinstance(rt.strategy, ServiceStrategy)
    rt.strategy.configure("10.7.0.0/28", (30000, 30003))  # 14 addresses, 4 ports
    registry = Registry(SQLiteStore(tmp_path / "hub.db", synchronous="OFF"), extra_types=types)
    await registry.start()
    try:
        yield registry, rt
    finally:
        await registry.close()


async def test_concurrent_creates_get_distinct_values_and_deletes_free_them(services) -> None:
    registry, rt = services
    created = await asyncio.gather(*(registry.store.create(rt, ctx(), _svc(f"s{i}", type="NodePort"))
                                     for i in range(4)))
    ips = [s["spec"]["clusterIP"] for s in created]
    ports = [s["spec"]["ports"][0]["nodePort"] for s in created]
    assert len(set(ips)) == 4 and len(set(ports)) == 4 and set(ports) == {30000, 30001, 30002, 30003}
    with pytest.raises(StatusError) as err:
        await registry.store.create(rt, ctx(), _svc("full", type="NodePort"))
    assert err.value.code == 500 and "failed to allocate a nodePort: range is full" in err.value.message
    with pytest.raises(StatusError) as err:
        await registry.store.create(rt, ctx(), _svc("dup", clusterIP=ips[0]))
    assert err.value.code == 422
    assert err.value.message == (f'Service "dup" is invalid: spec.clusterIPs: Invalid value: []string{{"{ips[0]}"}}: '
                                 f"failed to allocate IP {ips[0]}: provided IP is already allocated")
    await registry.store.delete(rt, ctx(), "s0", {})
    again = await registry.store.create(rt, ctx(), _svc("again", type="NodePort", clusterIP=ips[0],
                                                         ports=[{"port": 80, "nodePort": ports[0]}]))
    assert again["spec"]["clusterIP"] == ips[0] and again["spec"]["ports"][0]["nodePort"] == ports[0]


async def test_headless_external_name_and_another_logical_cluster(services) -> None:
    registry, rt = services
    headless = await registry.store.create(rt, ctx(), _svc("h", clusterIP="None"))
    assert headless["spec"]["clusterIPs"] == ["None"]
    ext = await registry.store.create(rt, ctx(), {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "e"},
                                                  "spec": {"type": "ExternalName", "externalName": "db.example.com"}})
    assert "clusterIP" not in ext["spec"]
    first = await registry.store.create(rt, ctx(), _svc("a", clusterIP="10.7.0.5"))
    assert first["spec"]["clusterIP"] == "10.7.0.5"
    with pytest.raises(StatusError) as err:
        await registry.store.create(rt, ctx(), _svc("far", clusterIP="10.7.0.15"))  # the broadcast address
    assert "is not in the valid range. The range of valid IPs is 10.7.0.0/28" in err.value.message
