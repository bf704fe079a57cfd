"""Integration with ``lightkube`` (sync :class:`lightkube.Client` and :class:`lightkube.AsyncClient`).

lightkube's own exec support neither sends ``KUBERNETES_EXEC_INFO`` nor honours expiry, and it takes
the CA only from kubeconfig data. We use its public ``transport=`` parameter instead: the transport
wraps an ``httpx2`` transport built with an in-memory SSL context (CA data, insecure-skip-tls-verify,
client certificate), sets ``Authorization`` from the shared authenticator on every request, sets SNI
(``tls-server-name``), ``Accept-Encoding: identity`` (``disable-compression``) and the proxy
(``proxy-url``, else the environment), rebuilds the inner transport when the client certificate
rotates, and on HTTP 401 invalidates the credential and retries once.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from .._tls import build_ssl_context
from ..errors import AccessError
from ..execplugin import Credential, ExecAuthenticator
from ..profile import AccessConfig
from ._common import ClientAuth

log = logging.getLogger(__name__)

try:
    import httpx2 as _hx
except ImportError:  # pragma: no cover
    _hx = None  # type: ignore[assignment]


def _prepare(state: ClientAuth, request: Any, cred: Credential) -> None:
    if cred.token:
        request.headers["Authorization"] = f"Bearer {cred.token}"
    else:
        request.headers.pop("Authorization", None)
    if state.cluster.tls_server_name:
        request.extensions = {**request.extensions, "sni_hostname": state.cluster.tls_server_name}
    if state.cluster.disable_compression:
        request.headers["Accept-Encoding"] = "identity"


class _SyncTransport(_hx.BaseTransport if _hx else object):  # type: ignore[misc]
    def __init__(self, state: ClientAuth, **transport_kwargs: Any) -> None:
        self._state = state
        self._kw = transport_kwargs
        self._lock = threading.Lock()
        self._inner: Any = None
        self._cred: Credential | None = None

    def _inner_for(self, cred: Credential) -> Any:
        with self._lock:
            if self._inner is not None and cred.same_certificate(self._cred):
                self._cred = cred
                return self._inner
            old = self._inner
            self._inner = _hx.HTTPTransport(
                verify=build_ssl_context(self._state.cluster, cred), proxy=self._state.proxy, **self._kw
            )
            self._cred = cred
        if old is not None:
            old.close()
        return self._inner

    def handle_request(self, request: Any) -> Any:
        st = self._state
        cred = st.authenticator.get_credential_sync()
        if st.retry_unauthorized:
            request.read()  # make the body replayable (lightkube bodies are small JSON documents)
        _prepare(st, request, cred)
        resp = self._inner_for(cred).handle_request(request)
        if resp.status_code != 401:
            return resp
        st.authenticator.invalidate(cred)
        if not st.retry_unauthorized:
            return resp
        try:
            fresh = st.authenticator.get_credential_sync()
        except AccessError as e:
            log.warning("refreshing credentials after HTTP 401 failed: %s", e)
            return resp
        if fresh.same_material(cred):
            return resp
        resp.close()
        _prepare(st, request, fresh)
        return self._inner_for(fresh).handle_request(request)

    def close(self) -> None:
        with self._lock:
            inner, self._inner = self._inner, None
        if inner is not None:
            inner.close()


class _AsyncTransport(_hx.AsyncBaseTransport if _hx else object):  # type: ignore[misc]
    def __init__(self, state: ClientAuth, **transport_kwargs: Any) -> None:
        self._state = state
        self._kw = transport_kwargs
        self._inner: Any = None
        self._cred: Credential | None = None

    async def _inner_for(self, cred: Credential) -> Any:
        if self._inner is not None and cred.same_certificate(self._cred):
            self._cred = cred
            return self._inner
        old = self._inner
        self._inner = _hx.AsyncHTTPTransport(
            verify=build_ssl_context(self._state.cluster, cred), proxy=self._state.proxy, **self._kw
        )
        self._cred = cred
        if old is not None:
            await old.aclose()
        return self._inner

    async def handle_async_request(self, request: Any) -> Any:
        st = self._state
        cred = await st.authenticator.get_credential()
        if st.retry_unauthorized:
            await request.aread()
        _prepare(st, request, cred)
        resp = await (await self._inner_for(cred)).handle_async_request(request)
        if resp.status_code != 401:
            return resp
        st.authenticator.invalidate(cred)
        if not st.retry_unauthorized:
            return resp
        try:
            fresh = await st.authenticator.get_credential()
        except AccessError as e:
            log.warning("refreshing credentials after HTTP 401 failed: %s", e)
            return resp
        if fresh.same_material(cred):
            return resp
        await resp.aclose()
        _prepare(st, request, fresh)
        return await (await self._inner_for(fresh)).handle_async_request(request)

    async def aclose(self) -> None:
        inner, self._inner = self._inner, None
        if inner is not None:
            await inner.aclose()


def _single_config(access: AccessConfig, namespace: str | None):
    from lightkube.config.kubeconfig import SingleConfig
    from lightkube.config.models import Cluster, Context, User

    return SingleConfig(
        context_name="fleetplane-access",
        context=Context(cluster="fleetplane-access", user="fleetplane-access", namespace=namespace),
        cluster=Cluster(server=access.cluster.server),
        user=User(),  # no lightkube-side auth: the transport authenticates
    )


def lightkube_transport(
    access: AccessConfig,
    *,
    authenticator: ExecAuthenticator | None = None,
    retry_unauthorized: bool = True,
    asynchronous: bool = False,
    **transport_kwargs: Any,
):
    """The authenticating httpx2 transport alone (for any httpx2-based client)."""
    if _hx is None:  # pragma: no cover
        raise ImportError("the 'lightkube' package (httpx2) is required (pip install fleetplane[clients])")
    state = ClientAuth(access, authenticator, retry_unauthorized=retry_unauthorized)
    cls = _AsyncTransport if asynchronous else _SyncTransport
    return cls(state, **transport_kwargs)


def lightkube_client(
    access: AccessConfig,
    *,
    namespace: str | None = None,
    authenticator: ExecAuthenticator | None = None,
    retry_unauthorized: bool = True,
    http2: bool = False,
    **client_kwargs: Any,
):
    """A :class:`lightkube.Client` for the cluster. Extra keyword arguments go to ``lightkube.Client``."""
    import lightkube

    transport = lightkube_transport(
        access, authenticator=authenticator, retry_unauthorized=retry_unauthorized, http2=http2
    )
    return lightkube.Client(
        config=_single_config(access, namespace), namespace=namespace, transport=transport, **client_kwargs
    )


def lightkube_async_client(
    access: AccessConfig,
    *,
    namespace: str | None = None,
    authenticator: ExecAuthenticator | None = None,
    retry_unauthorized: bool = True,
    http2: bool = False,
    **client_kwargs: Any,
):
    """A :class:`lightkube.AsyncClient` for the cluster (close with ``await client.close()``)."""
    import lightkube

    transport = lightkube_transport(
        access,
        authenticator=authenticator,
        retry_unauthorized=retry_unauthorized,
        asynchronous=True,
        http2=http2,
    )
    return lightkube.AsyncClient(
        config=_single_config(access, namespace), namespace=namespace, transport=transport, **client_kwargs
    )
