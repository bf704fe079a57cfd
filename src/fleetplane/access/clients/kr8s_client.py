"""Integration with ``kr8s`` (async API, ``kr8s.asyncio.Api``; tested with kr8s 0.20).

kr8s's exec support sends no ``KUBERNETES_EXEC_INFO``, ignores expiry and leaves key files in /tmp.
:func:`kr8s_api` returns an ``Api`` whose ``auth`` is a :class:`KubeAuth` subclass reading endpoint
and TLS settings from the :class:`AccessConfig` (in-memory SSL context), and whose httpx session
authenticates each request through an ``httpx.Auth`` flow fed by the shared authenticator (fresh
token per request, invalidate + one retry on 401). kr8s itself also re-authenticates on 401/403;
that path only re-reads the cached credential, so an authorization failure (403) does not re-run
the plugin. When the client certificate rotates the session is recreated before the next call.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, cast

from .._tls import build_ssl_context
from ..errors import AccessError
from ..execplugin import Credential, ExecAuthenticator
from ..profile import AccessConfig
from ._common import ClientAuth

log = logging.getLogger(__name__)

try:
    import httpx
    from kr8s._auth import KubeAuth as _KubeAuth
    from kr8s.asyncio import Api as _AsyncApi
except ImportError:  # pragma: no cover
    httpx = None  # type: ignore[assignment]
    _KubeAuth = object  # type: ignore[assignment,misc]
    _AsyncApi = object  # type: ignore[assignment,misc]


class _HttpxAuth(httpx.Auth if httpx else object):  # type: ignore[misc]
    requires_request_body = True  # the body must be replayable for the retry

    def __init__(self, state: ClientAuth) -> None:
        self._state = state

    async def async_auth_flow(self, request: Any):
        st = self._state
        cred = await st.authenticator.get_credential()
        _set(request, cred)
        response = yield request
        if response.status_code != 401:
            return
        st.authenticator.invalidate(cred)
        if not st.retry_unauthorized:
            return
        try:
            fresh = await st.authenticator.get_credential()
        except AccessError as e:
            log.warning("refreshing credentials after HTTP 401 failed: %s", e)
            return
        if fresh.same_material(cred) or not fresh.same_certificate(cred):
            # a new client certificate needs a new session: let kr8s re-authenticate and retry
            return
        _set(request, fresh)
        yield request


def _set(request: Any, cred: Credential) -> None:
    if cred.token:
        request.headers["Authorization"] = f"Bearer {cred.token}"
    else:
        request.headers.pop("Authorization", None)


class ExecKubeAuth(_KubeAuth):  # type: ignore[misc,valid-type]
    """kr8s ``KubeAuth`` backed by an :class:`AccessConfig` instead of a kubeconfig."""

    def __init__(self, state: ClientAuth, namespace: str | None = None) -> None:
        super().__init__(url=state.cluster.server, namespace=namespace, kubeconfig=None)
        self._fp = state
        self._fp_cred: Credential | None = None
        self.server = state.cluster.server
        self.tls_server_name = state.cluster.tls_server_name
        self._insecure_skip_tls_verify = state.cluster.insecure_skip_tls_verify
        self.token = None  # the httpx Auth flow sets Authorization per request

    async def reauthenticate(self) -> None:
        # Called on start and on 401/403: take the current credential (cached unless invalidated).
        self._fp_cred = await self._fp.authenticator.get_credential()
        self.server = self._fp.cluster.server
        self.token = None

    async def ssl_context(self):
        return build_ssl_context(self._fp.cluster, self._fp_cred)

    @property
    def proxy(self) -> str | None:
        return self._fp.cluster.proxy_url or None  # None: httpx reads the environment


class ExecKr8sApi(_AsyncApi):  # type: ignore[misc,valid-type]
    """``kr8s.asyncio.Api`` whose session authenticates through the exec plugin."""

    _fp_state: ClientAuth

    async def _create_session(self) -> None:
        await super()._create_session()
        session = self._session
        assert session is not None  # _create_session has just made it
        session.auth = _HttpxAuth(self._fp_state)
        if self._fp_state.cluster.disable_compression:
            session.headers["Accept-Encoding"] = "identity"

    @contextlib.asynccontextmanager
    async def call_api(self, *args: Any, **kwargs: Any):
        auth = cast(ExecKubeAuth, self.auth)  # kr8s_api installs an ExecKubeAuth
        cred = await self._fp_state.authenticator.get_credential()
        if not cred.same_certificate(auth._fp_cred):
            auth._fp_cred = cred
            if self._session is not None:
                with contextlib.suppress(RuntimeError):
                    await self._session.aclose()
        async with super().call_api(*args, **kwargs) as response:
            yield response

    async def aclose(self) -> None:
        """Close the HTTP session (kr8s itself has no close method)."""
        if self._session is not None:
            with contextlib.suppress(RuntimeError):
                await self._session.aclose()
            self._session = None


async def kr8s_api(
    access: AccessConfig,
    *,
    namespace: str | None = None,
    authenticator: ExecAuthenticator | None = None,
    retry_unauthorized: bool = True,
) -> ExecKr8sApi:
    """An authenticated ``kr8s.asyncio.Api`` for the cluster (checks ``/version`` like ``kr8s.asyncio.api``).

    Close it with ``await api.aclose()``.
    """
    if httpx is None:  # pragma: no cover
        raise ImportError("the 'kr8s' package is required (pip install fleetplane[clients])")
    state = ClientAuth(access, authenticator, retry_unauthorized=retry_unauthorized)
    # bypass_factory: kr8s would otherwise cache/return Api objects by kwargs; the context kwarg only
    # keeps our instance out of the way of kr8s.api(url=...) callers.
    api = ExecKr8sApi(
        bypass_factory=True,
        url=access.cluster.server,
        namespace=namespace,
        context=f"fleetplane-access:{hash(access):x}",
    )
    api._fp_state = state
    api.auth = ExecKubeAuth(state, namespace=namespace)
    try:
        await api
    except BaseException:
        await api.aclose()
        raise
    return api
