"""Integration with the official ``kubernetes`` client (sync, urllib3).

``kubernetes.client.Configuration`` (v37) calls ``refresh_api_key_hook(configuration)`` from
``get_api_key_with_prefix`` on *every* request, but only when ``api_key`` already holds the
``BearerToken`` (or ``authorization``) entry, and it deep-copies the hook with the configuration. So:

* :func:`kubernetes_configuration` runs the plugin once (a cache hit if the credential is already
  known), seeds ``api_key["BearerToken"]`` and installs a hook object (that deep-copies as itself)
  which puts the current, possibly refreshed, token there before each request. A stock
  ``ApiClient(configuration)`` therefore refreshes tokens on expiry.
* :func:`new_kubernetes_api_client` returns :class:`ExecApiClient`, which additionally handles HTTP 401
  (invalidate the rejected credential, retry once) and client-certificate rotation (urllib3 re-reads
  ``cert_file`` per connection: the file is atomically replaced and the pool is cleared). Use it
  whenever the plugin may return client certificates.

CA data is passed in memory (``ca_cert_data``); ``tls-server-name`` maps to ``tls_server_name``,
``insecure-skip-tls-verify`` to ``verify_ssl=False``, ``proxy-url`` to ``proxy`` (empty: the
environment, as client-go). urllib3 does not ask for compression, so ``disable-compression`` holds
by construction.
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Any

from .._tls import CertFile, ca_source
from ..errors import AccessError
from ..execplugin import Credential, ExecAuthenticator
from ..profile import AccessConfig
from ._common import ClientAuth

log = logging.getLogger(__name__)

try:  # the class must subclass kubernetes' ApiClient; keep the package importable without it
    from kubernetes.client import ApiClient as _ApiClient
    from kubernetes.client import Configuration as _Configuration
except ImportError:  # pragma: no cover - exercised only without the optional dependency
    _ApiClient = object  # type: ignore[assignment,misc]
    _Configuration = None  # type: ignore[assignment,misc]


class _SyncState(ClientAuth):
    """Tracks the credential installed in one Configuration (shared by its deep copies)."""

    def __init__(self, access: AccessConfig, authenticator: ExecAuthenticator | None, retry: bool) -> None:
        super().__init__(access, authenticator, retry_unauthorized=retry)
        self.lock = threading.Lock()
        self.cred: Credential | None = None
        self.cert_file: CertFile | None = None
        self.clients: weakref.WeakSet[ExecApiClient] = weakref.WeakSet()

    def current(self) -> Credential:
        cred = self.authenticator.get_credential_sync()
        if cred is not self.cred:
            with self.lock:
                if cred is not self.cred:
                    self._install(cred)
        return cred

    def _install(self, cred: Credential) -> None:
        old = self.cred
        if cred.has_client_certificate:
            if self.cert_file is None:
                raise AccessError(
                    f'exec plugin for provider "{self.access.provider}" (cluster {self.cluster.server}) started '
                    "returning a client certificate after returning only a token; build a new client"
                )
            if not cred.same_certificate(old):
                self.cert_file.write(cred)
                if old is not None:
                    for c in list(self.clients):  # client-go closes all connections on rotation
                        c.rest_client.pool_manager.clear()
        self.cred = cred


class _RefreshHook:
    """``refresh_api_key_hook``: install the current token (runs the plugin only when needed)."""

    def __init__(self, state: _SyncState) -> None:
        self.state = state

    def __call__(self, configuration: Any) -> None:
        cred = self.state.current()
        if cred.token:
            configuration.api_key["BearerToken"] = cred.token
            configuration.api_key_prefix["BearerToken"] = "Bearer"

    def __deepcopy__(self, memo):
        return self


def kubernetes_configuration(
    access: AccessConfig, *, authenticator: ExecAuthenticator | None = None, retry_unauthorized: bool = True
):
    """A ``kubernetes.client.Configuration`` for the cluster, with a token refresh hook.

    Runs the plugin (or uses the cached credential) to learn whether it returns a token or a client
    certificate.
    """
    if _Configuration is None:  # pragma: no cover
        raise ImportError("the 'kubernetes' package is required (pip install fleetplane[clients])")
    state = _SyncState(access, authenticator, retry_unauthorized)
    cred = state.authenticator.get_credential_sync()
    cluster = access.cluster
    conf = _Configuration(
        host=cluster.server,
        ca_cert_data=ca_source(cluster),
        verify_ssl=not cluster.insecure_skip_tls_verify,
        tls_server_name=cluster.tls_server_name,
        proxy=cluster.proxy_url or None,
    )
    if cred.has_client_certificate:
        state.cert_file = CertFile()
        conf.cert_file = state.cert_file.path
        conf.key_file = None
    with state.lock:
        state._install(cred)
    if cred.token:
        conf.api_key = {"BearerToken": cred.token}
        conf.api_key_prefix = {"BearerToken": "Bearer"}
        # kubernetes infers the attribute's type from its None default; it takes a callable
        conf.refresh_api_key_hook = _RefreshHook(state)  # type: ignore[assignment]
    conf.fleetplane_access = state  # read by ExecApiClient
    return conf


class ExecApiClient(_ApiClient):  # type: ignore[misc,valid-type]
    """``kubernetes.client.ApiClient`` that refreshes after a 401 and follows certificate rotation."""

    def __init__(self, configuration: Any, *args: Any, **kwargs: Any) -> None:
        state = getattr(configuration, "fleetplane_access", None)
        if not isinstance(state, _SyncState):
            raise TypeError("ExecApiClient needs a Configuration built by kubernetes_configuration()")
        super().__init__(configuration, *args, **kwargs)
        self._fp_state = state
        state.clients.add(self)

    def call_api(self, method, url, header_params=None, body=None, post_params=None, _request_timeout=None):
        state = self._fp_state
        cred = state.current()
        headers = dict(header_params or {})

        def set_auth(c: Credential) -> None:
            headers.pop("Authorization", None)
            if c.token:
                headers["authorization"] = f"Bearer {c.token}"
            else:
                headers.pop("authorization", None)

        set_auth(cred)
        resp = super().call_api(method, url, headers, body, post_params, _request_timeout)
        if resp.status != 401:
            return resp
        state.authenticator.invalidate(cred)
        if not state.retry_unauthorized:
            return resp
        try:
            fresh = state.current()
        except AccessError as e:
            log.warning("refreshing credentials after HTTP 401 failed: %s", e)
            return resp
        if fresh.same_material(cred):
            return resp
        _discard(resp)
        set_auth(fresh)
        return super().call_api(method, url, headers, body, post_params, _request_timeout)


def _discard(resp: Any) -> None:
    raw = getattr(resp, "response", None)
    try:
        if raw is not None:
            raw.drain_conn()
            raw.release_conn()
    except Exception:  # best effort: the connection is simply not reused
        pass


def new_kubernetes_api_client(
    access: AccessConfig, *, authenticator: ExecAuthenticator | None = None, retry_unauthorized: bool = True
) -> ExecApiClient:
    """A ready ``kubernetes.client.ApiClient`` for the cluster (use with ``CoreV1Api(client)`` etc.)."""
    conf = kubernetes_configuration(
        access, authenticator=authenticator, retry_unauthorized=retry_unauthorized
    )
    return ExecApiClient(conf)
