"""One async JSON client for every controller, over kubernetes_asyncio's ApiClient.

The library does the configuration, auth, TLS and connection pooling; requests go through
``ApiClient.call_api`` with ``_preload_content=False`` and bodies are decoded with orjson into
plain dicts: controllers handle many types (CRDs among them) on kube's JSON, and the generated
per-type models would only cost time and memory. Paths are raw, so the hub's ``/clusters/*`` and
``/clusters/<lc>`` prefixes work.

Every failure is an :class:`ApiError`; one that never reached an answer is :class:`Unreachable`,
with a reason (``Unreachable``, ``TLSError``, ``Timeout``) and a message precise enough for a
Cluster's conditions. TLS material that cannot be loaded is :class:`ClientBuildError`, raised
when the client is made (``ErrorCreatingClient``).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import errno
import os
import ssl
import tempfile
from collections.abc import AsyncIterator, Mapping
from http import HTTPStatus
from typing import Any

import aiohttp
import orjson
from kubernetes_asyncio.client import ApiClient, Configuration

from .kubeconfig import ApiTarget

__all__ = ["APPLY_PATCH", "JSON", "JSON_PATCH", "MERGE_PATCH", "SHARED_POOL", "STRATEGIC_PATCH", "ApiError", "Client",
           "ClientBuildError", "Unreachable", "api_path"]

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

_NETWORK_ERRORS = (TimeoutError, aiohttp.ClientError, OSError)


class ApiError(Exception):
    """A failed request: ``status`` is the HTTP code (0: no answer), ``reason`` kube's Status
    reason (``NotFound``, ``Invalid``, ``Conflict``, ...), ``body`` the Status when there was one."""

    def __init__(self, status: int, reason: str, message: str, body: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body
        #: which server answered: the Client's ``name`` ("hub", "cluster"), for health reports
        self.side = ""

    @property
    def retriable(self) -> bool:
        """Worth retrying as it is (the request itself was fine)."""
        return self.status in (0, 408, 425, 429) or self.status >= 500

    def has_cause(self, reason: str) -> bool:
        details = self.body.get("details") if isinstance(self.body, dict) else None
        causes = (details or {}).get("causes") or []
        return any(isinstance(c, dict) and c.get("reason") == reason for c in causes)

    def __str__(self) -> str:
        return f"{self.status} {self.reason}: {self.message}" if self.status else self.message


class Unreachable(ApiError):
    """No answer; ``reason`` is ``Unreachable``, ``TLSError`` or ``Timeout``."""

    def __init__(self, message: str, reason: str = "Unreachable") -> None:
        super().__init__(0, reason, message)


class ClientBuildError(Exception):
    """A client cannot be built from a well-formed target (reason ``ErrorCreatingClient``)."""


def error_from(status: int, raw: bytes) -> ApiError:
    """The ApiError of an answer: from its Status when it has one."""
    try:
        body = orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        body = None
    default = {404: "NotFound", 409: "Conflict", 410: "Expired", 422: "Invalid"}.get(status, "Unknown")
    if isinstance(body, dict):
        return ApiError(status, body.get("reason") or default, str(body.get("message") or _phrase(status)), body)
    text = raw.decode(errors="replace").strip()[:500] if raw else ""
    return ApiError(status, default, text or _phrase(status))


def _phrase(status: int) -> str:
    try:
        return f"HTTP {status} {HTTPStatus(status).phrase}"
    except ValueError:
        return f"HTTP {status}"


def api_path(api_version: str, resource: str, namespace: str = "", name: str = "", subresource: str = "") -> str:
    """``("apps/v1", "deployments", "ns", "web", "status")`` -> ``/apis/apps/v1/namespaces/ns/deployments/web/status``."""
    path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
    if namespace:
        path += f"/namespaces/{namespace}"
    path += f"/{resource}"
    if name:
        path += f"/{name}"
        if subresource:
            path += f"/{subresource}"
    return path


# -- building the ApiClient ---------------------------------------------------------------------------


def _private_file(data: str) -> str:
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK | os.X_OK) else None
    fd, path = tempfile.mkstemp(prefix="fleetplane-client-", dir=base)  # mode 0600
    with os.fdopen(fd, "w") as f:
        f.write(data)
    return path


def _ssl_context(target: ApiTarget) -> ssl.SSLContext | None:
    """The TLS settings of ``target``, as kubernetes_asyncio's REST client makes them (its CA or
    the system's, the client certificate, verification unless ``insecure``); None for http. A
    bad CA or key fails here with a clear message."""
    if not target.server.startswith("https://"):
        return None
    try:
        ctx = ssl.create_default_context(cadata=target.ca_data) if target.ca_data else ssl.create_default_context()
    except (ssl.SSLError, ValueError) as exc:
        raise ClientBuildError(f"the certificate authority cannot be loaded: {exc}") from None
    if target.insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if target.client_cert_data and target.client_key_data:
        path = _private_file(target.client_cert_data.rstrip("\n") + "\n" + target.client_key_data.rstrip("\n") + "\n")
        try:
            ctx.load_cert_chain(path)
        except ssl.SSLError as exc:
            raise ClientBuildError(f"the client certificate and key cannot be loaded: {exc.reason or exc}") from None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(path)
    return ctx


#: how long an idle connection stays in its pool: aiohttp's default (15 s) closes the connections
#: of a controller that pauses between bursts, and each burst pays TLS handshakes again; kept below
#: the server's idle timeout (kube-apiserver's and the hub's: 90 s) so the client closes first
#: rather than reusing a connection the server is closing
KEEPALIVE_TIMEOUT = 60.0

#: the pool Clients of one identity share, sized for the largest of them up to this; a Client that
#: asks for more (a Syncer's, 256) has a pool of its own
SHARED_POOL = 64


class _Pool:
    """One identity's connections to one server in one event loop (aiohttp's connector), shared
    by its Clients (a controller's, its leader election's, its Event recorder's) and closed with
    the last of them."""

    def __init__(self, connector: aiohttp.TCPConnector, limit: int) -> None:
        self.connector, self.limit, self.users = connector, limit, 0


#: (event loop, identity) -> its pool
_POOLS: dict[tuple[int, tuple[Any, ...]], _Pool] = {}


def _identity(target: ApiTarget) -> tuple[Any, ...]:
    """What a connection is bound to: the server's address and TLS settings, and who it
    authenticates as (a client certificate is the connection's; a token is sent with each request,
    but its requests are kept apart all the same: one pool per identity)."""
    scheme, _, rest = target.server.partition("://")
    return (scheme, rest.split("/", 1)[0], target.ca_data, target.client_cert_data, target.client_key_data,
            target.token, target.insecure, target.tls_server_name)


def _acquire_pool(target: ApiTarget, pool: int) -> _Pool:
    key = (id(asyncio.get_running_loop()), _identity(target))
    shared = _POOLS.get(key)
    if shared is None or shared.connector.closed or pool > shared.limit:
        limit = max(pool, SHARED_POOL)
        tls = _ssl_context(target)
        connector = aiohttp.TCPConnector(limit=limit, ssl=tls if tls is not None else True,
                                         keepalive_timeout=KEEPALIVE_TIMEOUT)
        shared = _Pool(connector, limit)
        if pool <= SHARED_POOL:
            _POOLS[key] = shared
    shared.users += 1
    return shared


async def _release_pool(shared: _Pool) -> None:
    shared.users -= 1
    if shared.users > 0:
        return
    for key, p in list(_POOLS.items()):
        if p is shared:
            del _POOLS[key]
    await shared.connector.close()


def _api_client(target: ApiTarget, user_agent: str, pool: int) -> ApiClient:
    """PEM data reaches the library's REST layer through files that exist only while it loads
    them (it takes paths, not data). Needs a running event loop (aiohttp's session)."""
    cfg = Configuration(host=target.server)
    cfg.verify_ssl = not target.insecure
    cfg.connection_pool_maxsize = pool
    cfg.tls_server_name = target.tls_server_name
    cfg.proxy = target.proxy_url
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


def _pooled_session(api: ApiClient, target: ApiTarget, pool: int) -> tuple[_Pool | None, aiohttp.ClientSession | None]:
    """kubernetes_asyncio makes its aiohttp session with ``trust_env=True``, so every request
    looks up ~/.netrc and the proxy variables in a worker thread (two thread round trips per
    request, 15 % of a busy hub's samples); with none of them set there is nothing to find. So
    the client's session (``rest_client.pool_manager``) is replaced by one with
    ``trust_env=False`` over its identity's shared pool (:class:`_Pool`: the same TLS settings,
    connections kept alive for :data:`KEEPALIVE_TIMEOUT`). Returns the pool and the library's own
    session, for the caller to close (it has opened nothing yet); (None, None) when a proxy or
    those variables are set (the library's session is kept). Synchronous, so that no other task
    can make a second ApiClient for the same Client meanwhile (whose session would be lost unclosed)."""
    if target.proxy_url or _ENV_LOOKUPS.intersection(os.environ):
        return None, None
    shared = _acquire_pool(target, pool)
    library = api.rest_client.pool_manager
    api.rest_client.pool_manager = aiohttp.ClientSession(connector=shared.connector, connector_owner=False,
                                                         trust_env=False, read_bufsize=_READ_BUFSIZE)
    return shared, library


#: kubernetes_asyncio's read buffer (watch events of large objects exceed aiohttp's default)
_READ_BUFSIZE = 2**21


#: the environment aiohttp's trust_env reads: when any is set, the lookups stay on
_ENV_LOOKUPS = frozenset({"HTTP_PROXY", "HTTPS_PROXY", "WS_PROXY", "WSS_PROXY", "ALL_PROXY", "NO_PROXY", "NETRC",
                          "http_proxy", "https_proxy", "ws_proxy", "wss_proxy", "all_proxy", "no_proxy"})


class _Connection:
    """The ApiClient (its connection pool), made on first use: a Client may be made before the
    event loop runs; views from :meth:`Client.as_manager` share it."""

    def __init__(self, target: ApiTarget, user_agent: str, pool: int) -> None:
        self.target, self.user_agent, self.pool = target, user_agent, pool
        self.api: ApiClient | None = None
        self._pool: _Pool | None = None

    async def get(self) -> ApiClient:
        api = self.api
        if api is None:
            # made and stored before the first await: concurrent first requests share one
            api = self.api = _api_client(self.target, self.user_agent, self.pool)
            self._pool, library = _pooled_session(api, self.target, self.pool)
            if library is not None:
                await library.close()
        return api

    async def close(self) -> None:
        api, self.api = self.api, None
        shared, self._pool = self._pool, None
        if api is not None:
            with contextlib.suppress(Exception):
                await api.close()  # the session (the connector stays with its pool)
        if shared is not None:
            await _release_pool(shared)


class _Borrowed(_Connection):
    """An ApiClient someone else made and closes (see :meth:`Client.over`)."""

    def __init__(self, api: ApiClient) -> None:
        super().__init__(ApiTarget(server=str(api.configuration.host)), "", 0)
        self.api = api

    async def get(self) -> ApiClient:
        assert self.api is not None, "the borrowed ApiClient was closed"
        return self.api

    async def close(self) -> None:
        pass


# -- the client -------------------------------------------------------------------------------------


class Client:
    """JSON requests against one API server (for the hub: a logical cluster, or all of them when
    paths carry ``/clusters/<lc>``). ``name`` marks its errors' ``side``. Made anywhere (the
    connection pool is made on first use); used inside one event loop."""

    def __init__(self, target: ApiTarget, user_agent: str = "fleetplane", *, timeout: float = 30.0, name: str = "",
                 pool: int = 64) -> None:
        _ssl_context(target)
        self.target = target
        self.timeout = timeout
        self.name = name
        #: the fieldManager of writes that name none (see :meth:`as_manager`)
        self.field_manager = ""
        self._conn = _Connection(target, user_agent, pool)

    @classmethod
    def over(cls, api: ApiClient, *, timeout: float = 30.0, name: str = "") -> Client:
        """A Client on an ApiClient the caller made (with kubernetes_asyncio's own kubeconfig
        loader, say) and closes: its configuration and pool, this client's JSON and errors."""
        client = cls.__new__(cls)
        client._conn = _Borrowed(api)
        client.target = client._conn.target
        client.timeout, client.name, client.field_manager = timeout, name, ""
        return client

    @property
    def server(self) -> str:
        return self.target.server

    def as_manager(self, field_manager: str) -> Client:
        """The same connection pool, writing as another field manager."""
        view = copy.copy(self)
        view.field_manager = field_manager
        return view

    async def close(self) -> None:
        await self._conn.close()

    def _mark(self, err: ApiError) -> ApiError:
        err.side = self.name
        return err

    def _unreachable(self, exc: BaseException, timeout: float) -> Unreachable:
        where = self.server
        if isinstance(exc, aiohttp.ClientConnectorCertificateError):
            err = Unreachable(f"TLS handshake with {where} failed: {exc.certificate_error}", "TLSError")
        elif isinstance(exc, (aiohttp.ClientSSLError, ssl.SSLError)):
            err = Unreachable(f"TLS handshake with {where} failed: {exc}", "TLSError")
        elif isinstance(exc, (TimeoutError, aiohttp.ServerTimeoutError)):
            err = Unreachable(f"{where} did not answer within {timeout:g}s", "Timeout")
        elif isinstance(exc, aiohttp.ClientConnectorError):
            os_err = exc.os_error
            if isinstance(os_err, ConnectionRefusedError) or getattr(os_err, "errno", None) == errno.ECONNREFUSED \
                    or "Connect call failed" in str(os_err):
                what = "connection refused"
            else:
                what = os_err.strerror or str(os_err)
            err = Unreachable(f"cannot connect to {where}: {what}")
        else:
            err = Unreachable(f"{where}: {type(exc).__name__}: {exc}".rstrip(": "))
        self._mark(err)
        return err

    async def _send(self, method: str, path: str, query: Mapping[str, Any] | None, body: Any, content_type: str,
                    accept: str, timeout: Any, headers: Mapping[str, str] | None = None) -> aiohttp.ClientResponse:
        params = [(k, "true" if v is True else "false" if v is False else str(v))
                  for k, v in (query or {}).items() if v is not None]
        try:
            api = await self._conn.get()
            resp: aiohttp.ClientResponse = await api.call_api(  # with _preload_content=False
                path, method, query_params=params,
                header_params={"Accept": accept, "Content-Type": content_type, **(headers or {})},
                body=body, auth_settings=["BearerToken"], _preload_content=False, _request_timeout=timeout)
            return resp
        except _NETWORK_ERRORS as exc:
            raise self._unreachable(exc, timeout if isinstance(timeout, (int, float)) else self.timeout) from exc

    async def _read(self, method: str, path: str, query: Mapping[str, Any] | None, body: Any, content_type: str,
                    accept: str, timeout: float | None, headers: Mapping[str, str] | None = None
                    ) -> tuple[int, bytes, Mapping[str, str]]:
        """The status, body and headers of any answer."""
        timeout = timeout or self.timeout
        resp = await self._send(method, path, query, body, content_type, accept, timeout, headers)
        try:
            data = await resp.read()
        except _NETWORK_ERRORS as exc:
            raise self._unreachable(exc, timeout) from exc
        finally:
            resp.release()
        return resp.status, data, resp.headers

    async def raw(self, method: str, path: str, *, query: Mapping[str, Any] | None = None, body: Any = None,
                  content_type: str = JSON, accept: str = JSON, timeout: float | None = None) -> tuple[int, bytes]:
        """The status and body of any answer (health endpoints answer text)."""
        status, data, _ = await self._read(method, path, query, body, content_type, accept, timeout)
        return status, data

    async def conditional_get(self, path: str, etag: str | None, *, accept: str = JSON,
                              timeout: float | None = None) -> tuple[Any, str | None]:
        """GET with ``If-None-Match: <etag>`` when there is one: the decoded answer and its
        ETag, or (None, ``etag``) when the server says it is unchanged (304, no body); ApiError
        for any other status but 2xx."""
        status, data, headers = await self._read("GET", path, None, None, JSON, accept, timeout,
                                                 {"If-None-Match": etag} if etag else None)
        if status == 304:
            return None, etag
        doc = self._decoded("GET", path, status, data)
        return ({} if doc is None else doc), headers.get("ETag")

    async def request(self, method: str, path: str, *, query: Mapping[str, Any] | None = None, body: Any = None,
                      content_type: str = JSON, accept: str = JSON, timeout: float | None = None) -> Any:
        """The decoded answer; ApiError for any status but 2xx."""
        status, data = await self.raw(method, path, query=query, body=body, content_type=content_type, accept=accept,
                                      timeout=timeout)
        return self._decoded(method, path, status, data)

    def _decoded(self, method: str, path: str, status: int, data: bytes) -> Any:
        if not 200 <= status < 300:
            raise self._mark(error_from(status, data))
        if not data:
            return None
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise self._mark(ApiError(status, "BadResponse", f"{method} {path}: response is not JSON")) from exc

    async def get(self, path: str, query: Mapping[str, Any] | None = None) -> Any:
        """GET, or None on 404."""
        try:
            return await self.request("GET", path, query=query)
        except ApiError as err:
            if err.status == 404:
                return None
            raise

    async def list_all(self, path: str, query: Mapping[str, Any] | None = None, limit: int = 500) -> tuple[list[dict[str, Any]], str]:
        """Every item of a list (following ``continue``) and the list's resourceVersion."""
        items: list[dict[str, Any]] = []
        cont = None
        while True:
            page = await self.request("GET", path, query={**(query or {}), "limit": limit, "continue": cont})
            items.extend(page.get("items") or [])
            meta = page.get("metadata") or {}
            cont = meta.get("continue")
            if not cont:
                return items, str(meta.get("resourceVersion") or "")

    def _manager(self, manager: str | None) -> str | None:
        return manager or self.field_manager or None

    async def create(self, path: str, obj: Mapping[str, Any], manager: str | None = None) -> dict[str, Any]:
        created: dict[str, Any] = await self.request("POST", path, query={"fieldManager": self._manager(manager)},
                                                     body=obj)
        return created

    async def replace(self, path: str, obj: Mapping[str, Any], manager: str | None = None) -> dict[str, Any]:
        replaced: dict[str, Any] = await self.request("PUT", path, query={"fieldManager": self._manager(manager)},
                                                      body=obj)
        return replaced

    async def apply(self, path: str, obj: Mapping[str, Any], manager: str | None = None, force: bool = True) -> dict[str, Any]:
        """Server-side apply."""
        applied: dict[str, Any] = await self.request(
            "PATCH", path, query={"fieldManager": self._manager(manager), "force": force or None}, body=obj,
            content_type=APPLY_PATCH)
        return applied

    async def patch(self, path: str, patch: Any, content_type: str = MERGE_PATCH, manager: str | None = None) -> dict[str, Any]:
        patched: dict[str, Any] = await self.request("PATCH", path, query={"fieldManager": self._manager(manager)},
                                                     body=patch, content_type=content_type)
        return patched

    async def delete(self, path: str, *, uid: str | None = None, propagation: str = "Background") -> bool:
        """Delete (guarded by ``uid`` when given); False when it was already gone."""
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

    async def watch(self, path: str, query: Mapping[str, Any] | None = None,
                    timeout_seconds: int = 300) -> AsyncIterator[dict[str, Any]]:
        """A watch (with bookmarks): decoded events until the server ends it; a broken stream is
        :class:`Unreachable`."""
        q = {**(query or {}), "watch": "true", "allowWatchBookmarks": "true", "timeoutSeconds": timeout_seconds}
        timeout = aiohttp.ClientTimeout(total=None, connect=self.timeout, sock_connect=self.timeout,
                                        sock_read=timeout_seconds + 30)
        resp = await self._send("GET", path, q, None, JSON, JSON, timeout)
        try:
            if resp.status != 200:
                raise self._mark(error_from(resp.status, await resp.read()))
            try:
                async for line in resp.content:
                    line = line.strip()
                    if line:
                        yield orjson.loads(line)
            except (*_NETWORK_ERRORS, ValueError) as exc:
                raise self._mark(Unreachable(f"{self.server}: watch {path}: {type(exc).__name__}: {exc}")) from exc
        finally:
            resp.close()
