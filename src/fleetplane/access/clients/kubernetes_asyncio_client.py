"""Integration with ``kubernetes_asyncio`` (aiohttp).

``kubernetes_asyncio.client.Configuration.get_api_key_with_prefix`` calls ``refresh_api_key_hook`` and
awaits it when it returns a coroutine; our hook installs the current (possibly refreshed) token.
Its REST client only takes a CA *file*, so :class:`ExecAsyncApiClient` swaps in a REST client whose
aiohttp connector uses an in-memory ``ssl.SSLContext`` (CA data, insecure-skip-tls-verify, and the
plugin's client certificate, never left on disk). On certificate rotation the connector is replaced;
on HTTP 401 the rejected credential is invalidated and the request retried once.
"""

from __future__ import annotations

import logging
from typing import Any

from .._tls import build_ssl_context
from ..errors import AccessError
from ..execplugin import Credential, ExecAuthenticator
from ..profile import AccessConfig
from ._common import ClientAuth

log = logging.getLogger(__name__)

try:
    import aiohttp
    from kubernetes_asyncio.client import ApiClient as _ApiClient
    from kubernetes_asyncio.client import Configuration as _Configuration
    from kubernetes_asyncio.client import rest as _rest
    from kubernetes_asyncio.client.exceptions import ApiException as _ApiException
except ImportError:  # pragma: no cover
    _ApiClient = object  # type: ignore[assignment,misc]
    _Configuration = None  # type: ignore[assignment,misc]
    _rest = None  # type: ignore[assignment]
    _ApiException = None  # type: ignore[assignment,misc]


class _AsyncState(ClientAuth):
    def __init__(self, access: AccessConfig, authenticator: ExecAuthenticator | None, retry: bool) -> None:
        super().__init__(access, authenticator, retry_unauthorized=retry)
        self.cred: Credential | None = None


class _AsyncRefreshHook:
    def __init__(self, state: _AsyncState) -> None:
        self.state = state

    async def __call__(self, configuration: Any) -> None:
        cred = await self.state.authenticator.get_credential()
        if cred.token:
            configuration.api_key["BearerToken"] = cred.token
            configuration.api_key_prefix["BearerToken"] = "Bearer"

    def __deepcopy__(self, memo):
        return self


if _rest is not None:

    class _RESTClient(_rest.RESTClientObject):
        """kubernetes_asyncio's REST client with an in-memory SSL context."""

        def __init__(self, configuration: Any, ssl_context: Any, disable_compression: bool) -> None:  # noqa: D401
            # Deliberately not calling super().__init__: it can only load a CA from a file.
            self.server_hostname = configuration.tls_server_name
            self.proxy = configuration.proxy
            self.proxy_headers = configuration.proxy_headers
            connector = aiohttp.TCPConnector(limit=configuration.connection_pool_maxsize, ssl=ssl_context)
            headers = {"Accept-Encoding": "identity"} if disable_compression else None
            self.pool_manager = aiohttp.ClientSession(
                connector=connector, trust_env=True, read_bufsize=2**21, headers=headers
            )


class ExecAsyncApiClient(_ApiClient):  # type: ignore[misc,valid-type]
    """``kubernetes_asyncio.client.ApiClient`` fed by an exec credential plugin. Build it with
    :func:`new_kubernetes_asyncio_client`."""

    _fp_state: _AsyncState

    async def _fp_install(self, cred: Credential) -> None:
        st = self._fp_state
        if st.cred is not None and cred.same_certificate(st.cred):
            st.cred = cred  # token rotation: connections stay
            return
        # first use, or the client certificate changed: new connector (drops pooled connections)
        old = self.rest_client
        self.rest_client = _RESTClient(
            self.configuration, build_ssl_context(st.cluster, cred), st.cluster.disable_compression
        )
        st.cred = cred
        if old is not None:
            await old.close()

    async def request(
        self,
        method,
        url,
        query_params=None,
        headers=None,
        post_params=None,
        body=None,
        _preload_content=True,
        _request_timeout=None,
    ):
        st = self._fp_state
        cred = await st.authenticator.get_credential()
        if cred is not st.cred:
            await self._fp_install(cred)
        hdrs = dict(headers or {})

        def set_auth(c: Credential) -> None:
            hdrs.pop("Authorization", None)
            hdrs.pop("authorization", None)
            if c.token:
                hdrs["authorization"] = f"Bearer {c.token}"

        async def send():
            return await super(ExecAsyncApiClient, self).request(
                method,
                url,
                query_params=query_params,
                headers=dict(hdrs),
                post_params=post_params,
                body=body,
                _preload_content=_preload_content,
                _request_timeout=_request_timeout,
            )

        set_auth(cred)
        try:
            resp = await send()
        except _ApiException as e:
            if e.status != 401:
                raise
            fresh = await self._fp_after_401(cred)
            if fresh is None:
                raise
            set_auth(fresh)
            return await send()
        if not _preload_content and getattr(resp, "status", None) == 401:
            fresh = await self._fp_after_401(cred)
            if fresh is not None:
                resp.release()
                set_auth(fresh)
                return await send()
        return resp

    async def _fp_after_401(self, cred: Credential) -> Credential | None:
        st = self._fp_state
        st.authenticator.invalidate(cred)
        if not st.retry_unauthorized:
            return None
        try:
            fresh = await st.authenticator.get_credential()
        except AccessError as e:
            log.warning("refreshing credentials after HTTP 401 failed: %s", e)
            return None
        if fresh.same_material(cred):
            return None
        await self._fp_install(fresh)
        return fresh


async def new_kubernetes_asyncio_client(
    access: AccessConfig, *, authenticator: ExecAuthenticator | None = None, retry_unauthorized: bool = True
) -> ExecAsyncApiClient:
    """A ready ``kubernetes_asyncio`` ApiClient for the cluster; close it with ``await client.close()``."""
    if _Configuration is None:  # pragma: no cover
        raise ImportError("the 'kubernetes_asyncio' package is required (pip install fleetplane[clients])")
    state = _AsyncState(access, authenticator, retry_unauthorized)
    cred = await state.authenticator.get_credential()
    cluster = access.cluster
    conf = _Configuration(host=cluster.server)
    conf.verify_ssl = not cluster.insecure_skip_tls_verify
    conf.tls_server_name = cluster.tls_server_name
    conf.proxy = cluster.proxy_url or None  # None: aiohttp reads the environment (trust_env)
    if cred.token:
        conf.api_key = {"BearerToken": cred.token}
        conf.api_key_prefix = {"BearerToken": "Bearer"}
    conf.refresh_api_key_hook = _AsyncRefreshHook(state)
    client = ExecAsyncApiClient(conf)
    client._fp_state = state
    stock = client.rest_client
    # kubernetes_asyncio types rest_client as never None; None here makes _fp_install build its own
    client.rest_client = None  # type: ignore[assignment]
    await client._fp_install(cred)
    await stock.close()
    return client
