"""Fixtures for the Syncer: the hub (tests/conftest.py), hub processes standing in for
physical clusters, and syncers run on their own event loop in a thread so that tests stay
plain blocking code (kubectl, urllib) with deadlines."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fleetplane.fleet.syncer import ApiTarget, Syncer, SyncerHealth

from ..harness import Hub


class SyncerThread:
    """A Syncer running on its own event loop in a daemon thread."""

    def __init__(self, syncer: Syncer) -> None:
        self.syncer = syncer
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, daemon=True, name=f"syncer-{syncer.cluster_name}")
        self.task: asyncio.Task | None = None
        self._ready = threading.Event()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.task = self.loop.create_task(self.syncer.run())
        self._ready.set()
        try:
            self.loop.run_until_complete(self.task)
        except asyncio.CancelledError:
            pass
        finally:
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

    def start(self) -> SyncerThread:
        self.thread.start()
        self._ready.wait(5)
        return self

    def stop(self) -> None:
        if self.thread.is_alive() and self.task is not None:
            self.loop.call_soon_threadsafe(self.task.cancel)
            self.thread.join(15)

    def health(self) -> SyncerHealth:
        async def get() -> SyncerHealth:
            return self.syncer.health()
        return asyncio.run_coroutine_threadsafe(get(), self.loop).result(5)


def target(h: Hub, logical_cluster: str) -> ApiTarget:
    return ApiTarget.from_kubeconfig(h.kubeconfig).for_logical_cluster(logical_cluster)


@pytest.fixture(scope="session")
def downstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    """A second hub process standing in for physical clusters: each test uses its own logical
    cluster on it as "the cluster"."""
    h = Hub(tmp_path_factory.mktemp("downstream")).start()
    yield h
    h.stop()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def names() -> Callable[[str], str]:
    return unique


@pytest.fixture
def start_syncer() -> Iterator[Callable[..., SyncerThread]]:
    """``start_syncer(cluster_name, hub_target, down_target, **kw)`` -> a running SyncerThread,
    stopped at teardown."""
    running: list[SyncerThread] = []

    def start(cluster_name: str, hub: ApiTarget, down: ApiTarget, **kw: Any) -> SyncerThread:
        kw.setdefault("poll_interval", 0.5)
        kw.setdefault("resources", ("configmaps",))
        t = SyncerThread(Syncer(cluster_name=cluster_name, hub=hub, downstream=down, **kw)).start()
        running.append(t)
        return t

    yield start
    for t in running:
        t.stop()


class Api:
    """Blocking JSON requests against one logical cluster of a hub process."""

    def __init__(self, h: Hub, cluster: str) -> None:
        self.h, self.cluster = h, cluster
        self.prefix = f"/clusters/{cluster}"

    def __call__(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> tuple[int, Any]:
        return self.h.json(method, self.prefix + path, body, content_type=content_type)

    def get(self, path: str) -> Any:
        code, body = self("GET", path)
        return body if code == 200 else None

    def create(self, path: str, body: dict) -> dict:
        code, out = self("POST", path, body)
        assert code == 201, out
        return out

    def merge(self, path: str, patch: dict) -> dict:
        code, out = self("PATCH", path, patch, "application/merge-patch+json")
        assert code == 200, out
        return out

    def delete(self, path: str) -> int:
        return self("DELETE", path)[0]

    def ns(self, name: str, labels: dict | None = None) -> None:
        code, out = self("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                        "metadata": {"name": name, "labels": labels or {}}})
        assert code in (201, 409), out

    def crd(self, body: dict) -> dict:
        return self.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body)


def cm(name: str, data: dict | None = None, cluster: str | None = None, **meta: Any) -> dict:
    labels = dict(meta.pop("labels", {}) or {})
    if cluster:
        labels["kcp.dev/cluster"] = cluster
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels, **meta},
            "data": data or {"k": "v"}}


def widget_crd(plural: str = "widgets", kind: str = "Widget", group: str = "example.com", *,
               size_type: str = "integer", maximum: int | None = None, columns: bool = True,
               extra_spec: dict | None = None) -> dict:
    size: dict = {"type": size_type}
    if maximum is not None:
        size["maximum"] = maximum
    version: dict = {
        "name": "v1", "served": True, "storage": True,
        "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"size": size, "replicas": {"type": "integer"},
                                                      "color": {"type": "string"}, **(extra_spec or {})}},
            "status": {"type": "object", "properties": {"ready": {"type": "boolean"}, "replicas": {"type": "integer"},
                                                        "phase": {"type": "string"}}}}}},
    }
    if columns:
        version["additionalPrinterColumns"] = [
            {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
            {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": kind + "List"},
                     "versions": [version]}}


def widget(name: str, cluster: str | None, size: Any = 1, plural_kind: str = "Widget", **meta: Any) -> dict:
    labels = dict(meta.pop("labels", {}) or {})
    if cluster:
        labels["kcp.dev/cluster"] = cluster
    return {"apiVersion": "example.com/v1", "kind": plural_kind, "metadata": {"name": name, "labels": labels, **meta},
            "spec": {"size": size}}


def state(obj: dict | None) -> dict:
    import json

    raw = ((obj or {}).get("metadata") or {}).get("annotations", {}).get("fleetplane.io/sync-state")
    return json.loads(raw) if raw else {}


def events(api: Api, ns: str, name: str) -> list[tuple[str, str, str]]:
    items = (api.get(f"/api/v1/namespaces/{ns}/events") or {}).get("items") or []
    return [(e["type"], e["reason"], e["message"]) for e in items if e["involvedObject"].get("name") == name]


__all__ = ["Api", "SyncerThread", "cm", "events", "state", "target", "widget", "widget_crd", "Path"]
