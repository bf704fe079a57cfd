"""Storage fixtures: every backend behind one ``backend`` fixture; etcd once per module."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from .etcd_server import EtcdCluster, require_etcd


@pytest.fixture(scope="module")
def etcd_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdCluster]:
    """One single-member etcd for the test module."""
    require_etcd()
    cluster = EtcdCluster(tmp_path_factory.mktemp("etcd")).start()
    yield cluster
    cluster.stop()


async def wipe(endpoints: str) -> None:
    """Delete every key (revisions and compaction carry on, as on a real cluster)."""
    from fleetplane.storage.etcd import EtcdStore

    s = EtcdStore(endpoints)
    await s.start()
    try:
        ep = s._eps[0]
        await ep.kv.delete(b"\x00", range_end=b"\x00", timeout=5)
    finally:
        await s.close()


@dataclass
class Backend:
    """Opens stores on one backend's data: ``await backend.open()`` gives a started store."""

    name: str
    path: Path | None = None
    endpoints: str = ""

    def new(self):
        if self.name == "sqlite":
            from fleetplane.storage.sqlite import SQLiteStore

            return SQLiteStore(self.path)
        from fleetplane.storage.etcd import EtcdStore

        return EtcdStore(self.endpoints)

    async def open(self):
        s = self.new()
        await s.start()
        return s


@pytest.fixture(params=["sqlite", "etcd"])
async def backend(request, tmp_path) -> AsyncIterator[Backend]:
    if request.param == "sqlite":
        yield Backend("sqlite", path=tmp_path / "store.db")
        return
    server: EtcdCluster = request.getfixturevalue("etcd_server")
    await wipe(server.endpoints)
    yield Backend("etcd", endpoints=server.endpoints)


@pytest.fixture
async def store(backend: Backend) -> AsyncIterator:
    s = await backend.open()
    yield s
    await s.close()
