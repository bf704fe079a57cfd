"""A small JSON client for the hub over ``kubernetes_asyncio`` (its kubeconfig loading, TLS, auth
and aiohttp REST layer): raw paths, so it can use ``/clusters/*`` and ``/clusters/<lc>``.

Objects stay plain dicts (the splitter handles Deployments the hub serves as CRDs, and other
kinds): requests go through ``ApiClient.call_api`` with ``_preload_content=False``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp
from kubernetes_asyncio import config as kconfig
from kubernetes_asyncio.client import ApiClient

__all__ = ["ApiError", "HubClient", "logical_cluster_of", "server_base"]

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


class ApiError(Exception):
    """A failed request: ``status`` 0 when the hub could not be reached."""

    def __init__(self, status: int, reason: str, message: str, body: Any = None) -> None:
        super().__init__(f"{status} {reason}: {message}" if status else message)
        self.status, self.reason, self.message, self.body = status, reason, message, body

    @property
    def retriable(self) -> bool:
        return self.status in (0, 408, 429) or self.status >= 500


def server_base(server: str) -> tuple[str, str | None]:
    """``https://h:6443/clusters/team-a`` -> (``https://h:6443``, ``team-a``)."""
    u = urlsplit(server.rstrip("/"))
    parts = u.path.split("/")
    lc = None
    if len(parts) >= 2 and parts[-2] == "clusters":
        lc = parts[-1]
        parts = parts[:-2]
    return urlunsplit((u.scheme, u.netloc, "/".join(parts), "", "")), lc


def logical_cluster_of(obj: Mapping[str, Any], default: str = "root") -> str:
    md = obj.get("metadata") or {}
    return (md.get("annotations") or {}).get("kcp.io/cluster") or default


def _error(status: int, raw: bytes) -> ApiError:
    try:
        body = json.loads(raw) if raw else None
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("kind") == "Status":
        return ApiError(status, body.get("reason") or "Unknown", body.get("message") or f"HTTP {status}", body)
    reason = {404: "NotFound", 409: "Conflict", 410: "Expired", 422: "Invalid"}.get(status, "Unknown")
    return ApiError(status, reason, (raw or b"").decode(errors="replace")[:300] or f"HTTP {status}", body)


class HubClient:
    """JSON requests against the hub (any logical cluster: paths carry ``/clusters/<lc>``)."""

    def __init__(self, api: ApiClient, base: str, logical_cluster: str | None, timeout: float = 30.0) -> None:
        self.api = api
        self.base = base
        #: the logical cluster the kubeconfig's context points at (None: none in its URL)
        self.logical_cluster = logical_cluster
        self.timeout = timeout

    @classmethod
    async def from_kubeconfig(cls, kubeconfig: str | Path | Mapping[str, Any], context: str | None = None,
                              user_agent: str = "fleetplane-splitter", timeout: float = 30.0,
                              pool: int = 64) -> HubClient:
        if isinstance(kubeconfig, Mapping):
            api = await kconfig.new_client_from_config_dict(dict(kubeconfig), context=context)
        else:
            api = await kconfig.new_client_from_config(config_file=str(kubeconfig), context=context,
                                                       persist_config=False)
        base, lc = server_base(api.configuration.host)
        api.configuration.host = base
        api.configuration.connection_pool_maxsize = pool
        api.user_agent = user_agent
        return cls(api, base, lc, timeout)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.api.close()

    async def _send(self, method: str, path: str, query: Mapping[str, Any] | None, body: Any,
                    content_type: str, timeout: Any) -> aiohttp.ClientResponse:
        params = [(k, str(v)) for k, v in (query or {}).items() if v is not None]
        try:
            return await self.api.call_api(path, method, query_params=params,
                                           header_params={"Accept": JSON, "Content-Type": content_type},
                                           body=body, auth_settings=["BearerToken"], _preload_content=False,
                                           _request_timeout=timeout)
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise ApiError(0, "Unreachable", f"{self.base}: {type(exc).__name__}: {exc}") from exc

    async def request(self, method: str, path: str, *, query: Mapping[str, Any] | None = None, body: Any = None,
                      content_type: str = JSON, timeout: float | None = None) -> Any:
        resp = await self._send(method, path, query, body, content_type, timeout or self.timeout)
        try:
            raw = await resp.read()
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise ApiError(0, "Unreachable", f"{self.base}: {type(exc).__name__}: {exc}") from exc
        finally:
            resp.release()
        if not 200 <= resp.status < 300:
            raise _error(resp.status, raw)
        return json.loads(raw) if raw else None

    async def get(self, path: str, query: Mapping[str, Any] | None = None) -> Any:
        """GET; None on 404."""
        try:
            return await self.request("GET", path, query=query)
        except ApiError as err:
            if err.status == 404:
                return None
            raise

    async def list_all(self, path: str, query: Mapping[str, Any] | None = None,
                       limit: int = 1000) -> tuple[list[dict], str]:
        items: list[dict] = []
        cont = None
        while True:
            q = {**(query or {}), "limit": limit, "continue": cont}
            page = await self.request("GET", path, query=q)
            items.extend(page.get("items") or [])
            meta = page.get("metadata") or {}
            cont = meta.get("continue")
            if not cont:
                return items, str(meta.get("resourceVersion") or "")

    async def watch(self, path: str, resource_version: str, timeout_seconds: int = 300,
                    query: Mapping[str, Any] | None = None) -> AsyncIterator[dict]:
        q = {**(query or {}), "watch": "true", "resourceVersion": resource_version,
             "allowWatchBookmarks": "true", "timeoutSeconds": timeout_seconds}
        timeout = aiohttp.ClientTimeout(total=None, connect=self.timeout, sock_connect=self.timeout,
                                        sock_read=timeout_seconds + 30)
        resp = await self._send("GET", path, q, None, JSON, timeout)
        try:
            if resp.status != 200:
                raise _error(resp.status, await resp.read())
            try:
                async for line in resp.content:
                    line = line.strip()
                    if line:
                        yield json.loads(line)
            except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as exc:
                raise ApiError(0, "Unreachable", f"watch {path}: {type(exc).__name__}: {exc}") from exc
        finally:
            resp.close()

    async def create(self, path: str, obj: Mapping[str, Any], manager: str) -> dict:
        return await self.request("POST", path, query={"fieldManager": manager}, body=obj)

    async def replace(self, path: str, obj: Mapping[str, Any], manager: str) -> dict:
        return await self.request("PUT", path, query={"fieldManager": manager}, body=obj)

    async def patch(self, path: str, patch: Any, content_type: str = MERGE_PATCH, manager: str | None = None) -> dict:
        return await self.request("PATCH", path, query={"fieldManager": manager}, body=patch,
                                  content_type=content_type)

    async def delete(self, path: str, *, uid: str | None = None, propagation: str = "Background") -> bool:
        body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation}
        if uid:
            body["preconditions"] = {"uid": uid}
        try:
            await self.request("DELETE", path, body=body)
        except ApiError as err:
            if err.status == 404:
                return False
            raise
        return True
