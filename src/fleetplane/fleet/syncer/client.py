"""A thin JSON client over ``kubernetes_asyncio``'s ApiClient (its Configuration, auth settings
and aiohttp REST layer), for untyped objects: get/list/create/apply/patch/delete and watch streams.

The syncer handles every type generically, so it goes through ``ApiClient.call_api`` with
``_preload_content=False`` and decodes JSON itself (the generated models are per type).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
from kubernetes_asyncio.client import ApiClient, Configuration

from .target import ApiTarget

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

#: HTTP statuses worth retrying as they are (the request itself was fine)
RETRIABLE = frozenset({0, 408, 425, 429, 500, 502, 503, 504})


class ApiError(Exception):
    """A failed request: ``status`` is the HTTP code (0 when the server could not be reached),
    ``reason`` kube's Status reason (``NotFound``, ``Invalid``, ``Conflict``, ...)."""

    def __init__(self, status: int, reason: str, message: str, body: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body
        #: which server answered: the Client's ``name`` ("hub" or "cluster")
        self.side = ""

    @property
    def retriable(self) -> bool:
        return self.status in RETRIABLE

    def __str__(self) -> str:
        return f"{self.status} {self.reason}: {self.message}" if self.status else self.message


class Unreachable(ApiError):
    def __init__(self, message: str) -> None:
        super().__init__(0, "Unreachable", message)


def _error_from(status: int, raw: bytes) -> ApiError:
    try:
        body = orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        body = None
    if isinstance(body, dict) and body.get("kind") == "Status":
        return ApiError(status, body.get("reason") or "Unknown", body.get("message") or f"HTTP {status}", body)
    text = raw.decode(errors="replace")[:500] if raw else ""
    return ApiError(status, {404: "NotFound", 409: "Conflict", 410: "Expired"}.get(status, "Unknown"), text or f"HTTP {status}", body)


def _private_file(data: str) -> str:
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK | os.X_OK) else None
    fd, path = tempfile.mkstemp(prefix="fleetplane-syncer-", dir=base)
    with os.fdopen(fd, "w") as f:
        f.write(data)
    return path


def new_api_client(target: ApiTarget, user_agent: str, pool: int = 256) -> ApiClient:
    """A ``kubernetes_asyncio`` ApiClient for ``target``. PEM data reaches the library's REST
    layer through files that exist only while it loads them (it takes paths, not data)."""
    cfg = Configuration(host=target.server)
    cfg.verify_ssl = not target.insecure
    cfg.connection_pool_maxsize = pool
    if target.tls_server_name:
        cfg.tls_server_name = target.tls_server_name
    if target.token:
        cfg.api_key = {"BearerToken": target.token}
        cfg.api_key_prefix = {"BearerToken": "Bearer"}
    files: list[str] = []
    try:
        if target.ca_data:
            cfg.ssl_ca_cert = _private_file(target.ca_data)
            files.append(cfg.ssl_ca_cert)
        if target.client_cert_data and target.client_key_data:
            cfg.cert_file = _private_file(target.client_cert_data)
            cfg.key_file = _private_file(target.client_key_data)
            files += [cfg.cert_file, cfg.key_file]
        api = ApiClient(cfg)
    finally:
        for f in files:
            with contextlib.suppress(OSError):
                os.unlink(f)
    api.user_agent = user_agent
    return api


class Client:
    """JSON requests against one API server (for the hub: one logical cluster)."""

    def __init__(self, target: ApiTarget, user_agent: str = "fleetplane-syncer", timeout: float = 30.0,
                 name: str = "") -> None:
        self.target = target
        self.name = name
        self.timeout = timeout
        self.api = new_api_client(target, user_agent)
        self._auth = ["BearerToken"] if target.token else []

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.api.close()

    async def _send(self, method: str, path: str, query: dict | None, body: Any, content_type: str,
                    timeout: Any, accept: str = JSON) -> aiohttp.ClientResponse:
        headers = {"Accept": accept, "Content-Type": content_type}
        params = [(k, v) for k, v in (query or {}).items() if v is not None]
        try:
            return await self.api.call_api(
                path, method, query_params=params, header_params=headers, body=body,
                auth_settings=self._auth, _preload_content=False, _request_timeout=timeout)
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise self._mark(Unreachable(f"{self.target.server}: {type(exc).__name__}: {exc}".rstrip(": "))) from exc

    def _mark(self, err: ApiError) -> ApiError:
        err.side = self.name
        return err

    async def request(self, method: str, path: str, *, query: dict | None = None, body: Any = None,
                      content_type: str = JSON, timeout: float | None = None, accept: str = JSON) -> Any:
        resp = await self._send(method, path, query, body, content_type, timeout or self.timeout, accept)
        try:
            raw = await resp.read()
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise self._mark(Unreachable(f"{self.target.server}: {type(exc).__name__}: {exc}")) from exc
        finally:
            resp.release()
        if not 200 <= resp.status < 300:
            raise self._mark(_error_from(resp.status, raw))
        if not raw:
            return None
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise self._mark(ApiError(resp.status, "BadResponse", f"{method} {path}: response is not JSON")) from exc

    async def get(self, path: str, query: dict | None = None) -> Any:
        """GET, or None on 404."""
        try:
            return await self.request("GET", path, query=query)
        except ApiError as err:
            if err.status == 404:
                return None
            raise

    async def list_all(self, path: str, query: dict | None = None, limit: int = 500) -> tuple[list[dict], str]:
        """Every item of a list (following ``continue``) and the list's resourceVersion."""
        items: list[dict] = []
        cont = None
        while True:
            q = {**(query or {}), "limit": str(limit)}
            if cont:
                q["continue"] = cont
            page = await self.request("GET", path, query=q)
            items.extend(page.get("items") or [])
            meta = page.get("metadata") or {}
            cont = meta.get("continue")
            if not cont:
                return items, meta.get("resourceVersion") or ""

    async def apply(self, path: str, obj: dict, manager: str, force: bool = True) -> dict:
        return await self.request("PATCH", path, query={"fieldManager": manager, "force": "true" if force else None},
                                  body=obj, content_type=APPLY_PATCH)

    async def patch(self, path: str, patch: Any, content_type: str = MERGE_PATCH, manager: str | None = None) -> dict:
        return await self.request("PATCH", path, query={"fieldManager": manager}, body=patch, content_type=content_type)

    async def delete(self, path: str, *, uid: str | None = None, propagation: str = "Background") -> bool:
        """Delete; False when it was already gone."""
        body: dict = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation}
        if uid:
            body["preconditions"] = {"uid": uid}
        try:
            await self.request("DELETE", path, body=body)
        except ApiError as err:
            if err.status == 404:
                return False
            raise
        return True

    async def watch(self, path: str, query: dict, timeout_seconds: int) -> AsyncIterator[dict]:
        """A watch stream: yields decoded events until the server ends it."""
        q = {**query, "watch": "true", "timeoutSeconds": str(timeout_seconds)}
        timeout = aiohttp.ClientTimeout(total=None, connect=self.timeout, sock_connect=self.timeout,
                                        sock_read=timeout_seconds + 30)
        resp = await self._send("GET", path, q, None, JSON, timeout)
        try:
            if resp.status != 200:
                raise self._mark(_error_from(resp.status, await resp.read()))
            try:
                async for line in resp.content:
                    line = line.strip()
                    if line:
                        yield orjson.loads(line)
            except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as exc:
                raise self._mark(Unreachable(f"{self.target.server}: watch {path}: {type(exc).__name__}: {exc}")) from exc
        finally:
            resp.close()
