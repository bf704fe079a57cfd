"""Client integrations: the official ``kubernetes`` client (sync), ``kubernetes_asyncio``,
``lightkube`` (sync and async) and ``kr8s`` (async). Each module imports its client library lazily,
so ``fleetplane.access`` works with none of them installed.

* :func:`fleetplane.access.clients.kubernetes_client.new_kubernetes_api_client`
* :func:`fleetplane.access.clients.kubernetes_client.kubernetes_configuration`
* :func:`fleetplane.access.clients.kubernetes_asyncio_client.new_kubernetes_asyncio_client`
* :func:`fleetplane.access.clients.lightkube_client.lightkube_client` /
  :func:`~fleetplane.access.clients.lightkube_client.lightkube_async_client`
* :func:`fleetplane.access.clients.kr8s_client.kr8s_api`

Common behaviour: the credential comes from the process-wide :class:`ExecAuthenticator` of the
:class:`AccessConfig` (so clients for equal configs share one credential and one plugin execution),
is refreshed when it expires, and after an HTTP 401 the credential used is invalidated and, unless
``retry_unauthorized=False``, the request is retried once with a fresh one (a 401 is decided by
authentication, before admission or any side effect, so the retry is safe). Client certificates are
kept in memory or in private 0600 files (see :mod:`fleetplane.access._tls`); when the certificate
rotates, pooled connections are dropped (client-go closes them too).
"""
