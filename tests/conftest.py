"""Shared fixtures: one real hub process per test worker, kubectl bound to it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from .harness import Hub, Kubectl

#: the files that take a minute or more (most of it waiting on processes), started first: `make
#: test` distributes whole files over the workers (--dist loadfile) in collection order, and a long
#: file collected last would run alone at the end while the other worker idles
SLOW_FIRST = (
    "tests/fleet/test_cluster_controller.py", "tests/cronjobs/test_fleet_cronjobs.py",
    "tests/splitter/test_statefulsets.py", "tests/splitter/test_e2e.py", "tests/splitter/test_partitions.py",
    "tests/multicluster/test_example_operator.py", "tests/hpas/test_e2e.py", "tests/splitter/test_daemonsets.py",
    "tests/scale/test_faults.py", "tests/scale/test_replicas.py", "tests/syncer/test_faults.py",
    "tests/services/test_e2e.py", "tests/test_demo.py", "tests/hub/test_connections.py", "tests/hub/test_stall.py",
    "tests/sim/test_batch.py", "tests/fleet/test_cluster_sync.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Slow files first (:data:`SLOW_FIRST`), everything else in its usual order."""
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


@pytest.fixture(scope="session")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    h = Hub(tmp_path_factory.mktemp("hub")).start()
    yield h
    h.stop()


@pytest.fixture
def namespace(hub: Hub) -> str:
    """A fresh namespace in root for one test."""
    name = "t-" + uuid.uuid4().hex[:8]
    code, body = hub.json("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    assert code == 201, body
    return name


@pytest.fixture
def kubectl(hub: Hub, namespace: str) -> Kubectl:
    return Kubectl(hub.kubeconfig, namespace=namespace)


@pytest.fixture
def logical_cluster(hub: Hub) -> str:
    return "lc-" + uuid.uuid4().hex[:8]


@pytest.fixture
def kubectl_in(hub: Hub, tmp_path: Path):
    """kubectl bound to a logical cluster: ``kubectl_in("team-a")``."""

    def make(cluster: str, minor: str = "1.32", namespace: str | None = None) -> Kubectl:
        return Kubectl(hub.kubeconfig_for(cluster, tmp_path), minor=minor, namespace=namespace)

    return make
