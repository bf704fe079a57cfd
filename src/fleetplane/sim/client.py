"""The simulated cluster's controllers talk to its API server only through HTTP, with
kubernetes_asyncio, as kube-controller-manager does with client-go.

The typed API methods are called with ``_preload_content=False`` and the bodies read as JSON
(orjson) into plain dicts: the controllers work on kube's JSON, not on generated model classes,
which keeps them fast and their memory flat. Errors come back as :class:`ApiError` carrying the
Status the server sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import orjson
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config

log = logging.getLogger(__name__)

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
#: seconds a request (not a watch) may take before the controller gives up and retries
REQUEST_TIMEOUT = 30


class ApiError(Exception):
    def __init__(self, status: int, body: Any) -> None:
        self.status = status
        self.body = body if isinstance(body, dict) else {"message": str(body)}
        super().__init__(f"{status} {self.reason}: {self.message}")

    @property
    def reason(self) -> str:
        return str(self.body.get("reason") or "")

    @property
    def message(self) -> str:
        return str(self.body.get("message") or "")

    def has_cause(self, reason: str) -> bool:
        causes = (self.body.get("details") or {}).get("causes") or []
        return any(c.get("reason") == reason for c in causes if isinstance(c, dict))


class Kube:
    """One kubernetes_asyncio ApiClient and the typed APIs the controllers use."""

    def __init__(self, api_client: k8s.ApiClient, user_agent: str = "fleetplane-sim", field_manager: str = "") -> None:
        self.api_client = api_client
        api_client.user_agent = user_agent
        self.core = k8s.CoreV1Api(api_client)
        self.apps = k8s.AppsV1Api(api_client)
        self.coordination = k8s.CoordinationV1Api(api_client)
        #: the fieldManager of this component's writes (kube-controller-manager, kube-scheduler, kubelet)
        self.field_manager = field_manager

    def as_manager(self, field_manager: str) -> Kube:
        """The same connection pool, writing as another field manager."""
        view = object.__new__(Kube)
        view.__dict__.update(self.__dict__)
        view.field_manager = field_manager
        return view

    @classmethod
    async def from_kubeconfig(cls, path: str, *, user_agent: str = "fleetplane-sim", pool: int = 64) -> Kube:
        cfg = k8s.Configuration()
        await k8s_config.load_kube_config(config_file=str(path), client_configuration=cfg)
        cfg.connection_pool_maxsize = pool
        return cls(k8s.ApiClient(configuration=cfg), user_agent)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.api_client.close()

    async def call(self, method, *args: Any, **kwargs: Any) -> dict:
        """Call a typed API method; the body as a dict, or ApiError with the server's Status."""
        kwargs.setdefault("_request_timeout", REQUEST_TIMEOUT)
        if self.field_manager and method.__name__.startswith(("create_", "replace_", "patch_")):
            kwargs.setdefault("field_manager", self.field_manager)
        resp = await method(*args, _preload_content=False, **kwargs)
        try:
            raw = await resp.read()
            status = resp.status
        finally:
            resp.release()
        try:
            body = orjson.loads(raw) if raw else {}
        except orjson.JSONDecodeError:
            body = {"message": raw.decode(errors="replace")[:500]}
        if status >= 300:
            raise ApiError(status, body)
        return body

    async def stream(self, method, *args: Any, **kwargs: Any) -> AsyncIterator[dict]:
        """A watch: the events of a ``watch=True`` list call, one dict per line."""
        resp = await method(*args, watch=True, _preload_content=False, **kwargs)
        try:
            if resp.status >= 300:
                raw = await resp.read()
                try:
                    body = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    body = {"message": raw.decode(errors="replace")[:500]}
                raise ApiError(resp.status, body)
            while True:
                line = await resp.content.readline()
                if not line:
                    return
                if line.strip():
                    yield orjson.loads(line)
        finally:
            resp.close()


async def retry_conflicts(fn, attempts: int = 5) -> Any:
    """Call ``fn`` again (it re-reads) while the server answers 409 Conflict."""
    for i in range(attempts):
        try:
            return await fn()
        except ApiError as err:
            if err.status != 409 or i == attempts - 1:
                raise
            await asyncio.sleep(0.01 * (i + 1))
    return None
