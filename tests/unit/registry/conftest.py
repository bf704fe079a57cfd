"""The real registry (GenericStore, watch cache, admission chain, catalog) over a temporary
SQLite file, in this process: no server, no HTTP."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fleetplane.apimachinery.errors import FieldError, StatusError
from fleetplane.pipeline.admission.chain import DELETE, BasePlugin, Request
from fleetplane.registry.catalog import ROOT
from fleetplane.registry.hub import Registry
from fleetplane.registry.store import Context, GenericStore
from fleetplane.registry.types import ResourceType
from fleetplane.storage.sqlite import SQLiteStore

#: a custom resource with a status subresource: no unconditional updates, generation tracked
WIDGETS_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.test.fleetplane.io"},
    "spec": {
        "group": "test.fleetplane.io",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
        "versions": [{
            "name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
            }}},
        }],
    },
}


@dataclass
class RefuseDeletes(BasePlugin):
    """An admission plugin that sees every DELETE and refuses those of the names it is given."""

    refused: set[str] = field(default_factory=set)
    seen: list[tuple[str, str, bool]] = field(default_factory=list)  # (namespace, name, dry run)
    name: str = "RefuseDeletes"
    operations: frozenset[str] = frozenset({DELETE})

    async def validate(self, req: Request) -> list[FieldError]:
        self.seen.append((req.namespace, req.name, req.dry_run))
        if req.name in self.refused:
            raise StatusError(403, "Forbidden", f'{req.resource} "{req.name}" is protected')
        return []


@dataclass
class Api:
    """What a test drives: the registry, its admission recorder, and the types it uses."""

    registry: Registry
    admission: RefuseDeletes

    @property
    def store(self) -> GenericStore:
        return self.registry.store

    def type(self, group: str, version: str, plural: str) -> ResourceType:
        rt = self.registry.catalog.lookup(ROOT, group, version, plural)
        assert rt is not None, f"{plural}.{group}/{version} is not served"
        return rt

    @property
    def configmaps(self) -> ResourceType:
        return self.type("", "v1", "configmaps")

    @property
    def widgets(self) -> ResourceType:
        return self.type("test.fleetplane.io", "v1", "widgets")


@contextlib.asynccontextmanager
async def running(path: Path) -> AsyncIterator[Api]:
    """The registry over the SQLite file at ``path``, started, and closed on exit (a second one
    over the same file is a restart)."""
    admission = RefuseDeletes()
    registry = Registry(SQLiteStore(path, synchronous="OFF"), system_crds=[WIDGETS_CRD], plugins=[admission])
    await registry.start()
    try:
        yield Api(registry, admission)
    finally:
        await registry.close()


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[Api]:
    async with running(tmp_path / "hub.db") as started:
        yield started


def ctx(namespace: str = "default", **kw: object) -> Context:
    """A request's context in the root logical cluster."""
    return Context(ROOT, namespace, **kw)  # type: ignore[arg-type]
