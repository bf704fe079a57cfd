"""A hub with an audit log and a webhook service host, a real HTTPS webhook server, and helpers."""

from __future__ import annotations

import json
import ssl
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ..harness import Hub
from .webhook_server import SERVICE_NAME, WebhookServer

GROUP_VERSION = "/apis/admissionregistration.k8s.io/v1"


@pytest.fixture(scope="module")
def webhook_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    d = tmp_path_factory.mktemp("webhookhub")
    h = Hub(d / "data", extra=["--no-cluster-controller", "--no-splitter", "--audit-log-path", str(d / "audit.log"),
                               "--webhook-service-host", f"{SERVICE_NAME}=127.0.0.1"]).start()
    h.audit_log = d / "audit.log"  # type: ignore[attr-defined]
    yield h
    h.stop()


@pytest.fixture(scope="module")
def server() -> Iterator[WebhookServer]:
    with WebhookServer() as s:
        yield s


@pytest.fixture
def cluster() -> str:
    """A fresh logical cluster: its webhook configurations admit only its own writes."""
    return "wh-" + uuid.uuid4().hex[:8]


class Api:
    """httpx against one logical cluster as admin (Warning headers kept apart)."""

    def __init__(self, hub: Hub, cluster: str) -> None:
        self.hub = hub
        self.base = f"{hub.url}/clusters/{cluster}"
        self.client = httpx.Client(verify=ssl.create_default_context(cafile=str(hub.ca)), timeout=60,
                                   headers={"Authorization": f"Bearer {hub.token}"})

    def __call__(self, method: str, path: str, body: Any = None, **params: Any) -> httpx.Response:
        headers = {"Content-Type": "application/json-patch+json"} if method == "PATCH" else {}
        return self.client.request(method, self.base + path, content=None if body is None else json.dumps(body),
                                   params=params, headers=headers)

    def configure(self, kind: str, name: str, webhooks: list[dict[str, Any]]) -> None:
        plural = kind.lower() + "s"
        r = self("POST", f"{GROUP_VERSION}/{plural}",
                 {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name}, "webhooks": webhooks})
        assert r.status_code == 201, r.text

    def configmap(self, name: str, namespace: str = "default", labels: dict[str, str] | None = None,
                  **params: Any) -> httpx.Response:
        return self("POST", f"/api/v1/namespaces/{namespace}/configmaps",
                    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels or {}},
                     "data": {"k": "v"}}, **params)


@pytest.fixture
def api(webhook_hub: Hub, cluster: str) -> Iterator[Api]:
    a = Api(webhook_hub, cluster)
    yield a
    a.client.close()


def hook(server: WebhookServer, name: str, path: str, **spec: Any) -> dict[str, Any]:
    """A webhook on ``server``'s ``path`` for ConfigMap creates unless ``spec`` says otherwise."""
    return {"name": name, "clientConfig": server.client_config(path), "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
            **spec}


def audit_events(hub: Hub) -> list[dict[str, Any]]:
    path: Path = hub.audit_log  # type: ignore[attr-defined]
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
