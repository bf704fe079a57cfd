"""The Python clients people use, unmodified, against the hub over TLS with the admin kubeconfig."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from ..harness import Hub, wait_for


@pytest.fixture
def cluster_kubeconfig(hub: Hub, tmp_path: Path) -> Path:
    return hub.kubeconfig_for("py-" + uuid.uuid4().hex[:6], tmp_path)


def test_official_client_crud_watch_and_patch(cluster_kubeconfig: Path):
    from kubernetes import client, config, watch

    api_client = config.new_client_from_config(str(cluster_kubeconfig))
    v1 = client.CoreV1Api(api_client)
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py", labels={"a": "b"}), data={"k": "v"})
    created = v1.create_namespaced_config_map("default", body)
    assert created.metadata.uid and created.data == {"k": "v"}
    listed = v1.list_namespaced_config_map("default", label_selector="a=b")
    assert [i.metadata.name for i in listed.items] == ["py"]
    patched = v1.patch_namespaced_config_map("py", "default", {"data": {"k2": "v2"}})  # strategic merge patch
    assert patched.data == {"k": "v", "k2": "v2"}
    w = watch.Watch()
    events = []
    for ev in w.stream(v1.list_namespaced_config_map, "default", resource_version=listed.metadata.resource_version,
                       timeout_seconds=5):
        events.append((ev["type"], ev["object"].metadata.name))
        w.stop()
    assert events == [("MODIFIED", "py")]
    with pytest.raises(client.ApiException) as exc:
        v1.read_namespaced_config_map("missing", "default")
    assert exc.value.status == 404
    v1.delete_namespaced_config_map("py", "default")
    nss = [n.metadata.name for n in v1.list_namespace().items]
    assert "default" in nss


def test_official_dynamic_client_with_a_crd(cluster_kubeconfig: Path):
    from kubernetes import config, dynamic

    api_client = config.new_client_from_config(str(cluster_kubeconfig))
    dyn = dynamic.DynamicClient(api_client)
    crds = dyn.resources.get(api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition")
    crds.create(body={"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                      "metadata": {"name": "things.example.org"},
                      "spec": {"group": "example.org", "scope": "Namespaced", "names": {"plural": "things", "kind": "Thing"},
                               "versions": [{"name": "v1", "served": True, "storage": True,
                                             "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}})
    dyn.resources.invalidate_cache() if hasattr(dyn.resources, "invalidate_cache") else None
    dyn = dynamic.DynamicClient(api_client)
    things = dyn.resources.get(api_version="example.org/v1", kind="Thing")
    things.create(namespace="default", body={"apiVersion": "example.org/v1", "kind": "Thing", "metadata": {"name": "t1"}, "spec": {"x": 1}})
    assert things.get(namespace="default", name="t1").spec.x == 1


async def test_kubernetes_asyncio(cluster_kubeconfig: Path):
    from kubernetes_asyncio import client, config, watch

    api_client = await config.new_client_from_config(str(cluster_kubeconfig))
    async with api_client:
        v1 = client.CoreV1Api(api_client)
        await v1.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="aio"), data={"a": "1"}))
        got = await v1.read_namespaced_config_map("aio", "default")
        assert got.data == {"a": "1"}
        listed = await v1.list_namespaced_config_map("default")
        w = watch.Watch()
        seen = []

        async def produce():
            await asyncio.sleep(0.2)
            await v1.patch_namespaced_config_map("aio", "default", {"data": {"a": "2"}})

        task = asyncio.create_task(produce())
        async with w.stream(v1.list_namespaced_config_map, "default", resource_version=listed.metadata.resource_version,
                            timeout_seconds=5) as stream:
            async for ev in stream:
                seen.append((ev["type"], ev["object"].data))
                break
        await task
        assert seen == [("MODIFIED", {"a": "2"})]


def test_lightkube_apply_and_watch(cluster_kubeconfig: Path):
    from lightkube import Client, KubeConfig
    from lightkube.models.meta_v1 import ObjectMeta
    from lightkube.resources.core_v1 import ConfigMap

    c = Client(KubeConfig.from_file(str(cluster_kubeconfig)), field_manager="lightkube-test")
    c.apply(ConfigMap(metadata=ObjectMeta(name="lk", namespace="default"), data={"a": "1"}))
    c.apply(ConfigMap(metadata=ObjectMeta(name="lk", namespace="default"), data={"b": "2"}))
    got = c.get(ConfigMap, "lk", namespace="default")
    assert got.data == {"b": "2"}  # the field this manager dropped is gone (server-side apply)
    assert [cm.metadata.name for cm in c.list(ConfigMap, namespace="default")] == ["lk"]
    from lightkube import ApiError

    with pytest.raises(ApiError) as exc:
        c.get(ConfigMap, "missing", namespace="default")
    assert exc.value.status.code == 404
    for op, obj in c.watch(ConfigMap, namespace="default", resource_version="0"):
        assert op == "ADDED" and obj.metadata.name == "lk"
        break


async def test_kr8s(cluster_kubeconfig: Path):
    import kr8s.asyncio
    from kr8s.asyncio.objects import ConfigMap

    api = await kr8s.asyncio.api(kubeconfig=str(cluster_kubeconfig))
    cm = await ConfigMap({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "k8", "namespace": "default"}, "data": {"x": "y"}}, api=api)
    await cm.create()
    fetched = await ConfigMap.get("k8", namespace="default", api=api)
    assert fetched.raw["data"] == {"x": "y"}
    await fetched.label({"team": "a"})
    found = [o.name async for o in api.get("configmaps", namespace="default", label_selector="team=a")]
    assert found == ["k8"]
    await fetched.delete()
    wait_for(lambda: True)
