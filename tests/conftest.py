"""Shared fixtures: one real hub process per test worker, kubectl bound to it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from .harness import Hub, Kubectl


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
