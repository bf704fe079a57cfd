"""The hub's one webhook HTTP client: a webhook clientConfig -> a verified HTTPS POST of a review.

Admission webhooks (``pipeline/admission/webhooks.py``) and CRD conversion webhooks share it, as
kube's webhooks share ``k8s.io/apiserver/pkg/util/webhook``. It knows nothing of what the review
means: it resolves a ``clientConfig`` (``url``, or ``service`` through a :class:`ServiceResolver`),
verifies the server against ``caBundle`` (the system roots without one), POSTs JSON with
``?timeout=<n>s`` as kube's rest client does, and decodes the JSON answer. Every failure is a
:class:`WebhookCallError` whose text is what kube's rest client would say after
``failed to call webhook: `` (``Post "<url>?timeout=10s": context deadline exceeded``), so callers
can wrap it in their own wording.

A service reference resolves as kube resolves it, to ``https://<name>.<namespace>.svc:<port><path>``
with TLS server name ``<name>.<namespace>.svc``; the hub does not serve Services yet, so the
address to dial comes from the hub setting ``webhook_service_hosts`` (``fleetplane start
--webhook-service-host <name>.<namespace>.svc=<host>``), else from DNS for that name.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson

#: kube's webhook defaults and limits (admissionregistration v1: timeoutSeconds 1..30, default 10)
DEFAULT_TIMEOUT_SECONDS = 10
MAX_TIMEOUT_SECONDS = 30
#: the largest answer read (kube-apiserver's request body limit, 3 MiB)
MAX_RESPONSE_BYTES = 3 * 1024 * 1024


class WebhookCallError(Exception):
    """The webhook could not be called or answered something that is not a review."""


@dataclass(frozen=True)
class WebhookEndpoint:
    """Where one webhook is: the URL kube would name, the address dialled, how TLS is verified."""

    url: str  # the URL as kube names it in messages (a service reference's .svc name)
    ca_bundle: bytes | None = None  # PEM roots; None: the system's
    dial_host: str | None = None  # connect here instead of the URL's host (a resolved service)
    server_name: str | None = None  # the TLS server name to verify, if not the URL's host


@dataclass(frozen=True)
class ServiceResolver:
    """How a clientConfig.service reference becomes an address: ``hosts`` maps
    ``<name>.<namespace>.svc`` (the hub's ``webhook_service_hosts`` setting) to a host to dial;
    a name not listed is dialled as is (DNS)."""

    hosts: Mapping[str, str] = field(default_factory=dict)

    def resolve(self, service: Mapping[str, Any], ca_bundle: bytes | None) -> WebhookEndpoint:
        name = f"{service.get('name')}.{service.get('namespace')}.svc"
        port = int(service.get("port") or 443)
        path = str(service.get("path") or "")
        url = f"https://{name}:{port}{path}"
        return WebhookEndpoint(url, ca_bundle, dial_host=self.hosts.get(name), server_name=name)


def endpoint_for(client_config: Mapping[str, Any], resolver: ServiceResolver | None = None) -> WebhookEndpoint:
    """The endpoint of a validated ``clientConfig`` (``url`` or ``service``, ``caBundle`` base64)."""
    ca_b64 = client_config.get("caBundle")
    ca_bundle = base64.b64decode(ca_b64) if ca_b64 else None
    if client_config.get("url"):
        return WebhookEndpoint(str(client_config["url"]), ca_bundle)
    service = client_config.get("service")
    if not isinstance(service, Mapping):
        raise WebhookCallError("clientConfig has neither url nor service")
    return (resolver or ServiceResolver()).resolve(service, ca_bundle)


def _go_duration(seconds: float) -> str:
    return f"{int(seconds)}s" if float(seconds).is_integer() else f"{seconds}s"


class WebhookClient:
    """POSTs reviews to webhooks over one pooled session (made on first use, in the running loop),
    with one SSL context per CA bundle."""

    def __init__(self) -> None:
        self._session: aiohttp.ClientSession | None = None
        self._contexts: dict[bytes, ssl.SSLContext] = {}

    def _ssl(self, ca_bundle: bytes | None) -> ssl.SSLContext:
        key = hashlib.sha256(ca_bundle or b"").digest()
        ctx = self._contexts.get(key)
        if ctx is None:
            try:
                ctx = ssl.create_default_context(cadata=ca_bundle.decode()) if ca_bundle else ssl.create_default_context()
            except (ssl.SSLError, ValueError, UnicodeDecodeError) as exc:
                raise WebhookCallError(f"unable to load root certificates: {exc}") from None
            self._contexts[key] = ctx
        return ctx

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, enable_cleanup_closed=True),
                json_serialize=lambda o: orjson.dumps(o).decode(), trust_env=False)
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def post(self, endpoint: WebhookEndpoint, review: Mapping[str, Any], timeout_seconds: float) -> dict[str, Any]:
        """POST ``review`` to ``endpoint`` within ``timeout_seconds`` (the whole exchange) and
        return the decoded JSON object; any failure is a :class:`WebhookCallError`."""
        named = f"{endpoint.url}{'&' if '?' in endpoint.url else '?'}timeout={_go_duration(timeout_seconds)}"
        target = named
        if endpoint.dial_host:
            parts = urlsplit(named)
            port = f":{parts.port}" if parts.port else ""
            target = parts._replace(netloc=f"{endpoint.dial_host}{port}").geturl()
        if urlsplit(named).scheme != "https":
            raise WebhookCallError(f'Post "{named}": webhook URL must use the https scheme')
        context = self._ssl(endpoint.ca_bundle)
        body = orjson.dumps(review)
        try:
            async with asyncio.timeout(timeout_seconds):
                async with self._client().post(
                        target, data=body, ssl=context, server_hostname=endpoint.server_name,
                        headers={"Content-Type": "application/json", "Accept": "application/json"},
                        allow_redirects=False) as resp:
                    raw = await resp.content.read(MAX_RESPONSE_BYTES + 1)
                    status = resp.status
        except TimeoutError:
            raise WebhookCallError(f'Post "{named}": context deadline exceeded') from None
        except aiohttp.ClientConnectorCertificateError as exc:
            raise WebhookCallError(f'Post "{named}": tls: failed to verify certificate: {_cert_reason(exc)}') from None
        except aiohttp.ClientSSLError as exc:
            raise WebhookCallError(f'Post "{named}": {_tls_reason(exc.os_error)}') from None
        except aiohttp.ClientConnectorError as exc:
            raise WebhookCallError(f'Post "{named}": {_dial_reason(exc)}') from None
        except (aiohttp.ClientError, OSError) as exc:
            raise WebhookCallError(f'Post "{named}": {exc or type(exc).__name__}') from None
        if len(raw) > MAX_RESPONSE_BYTES:
            raise WebhookCallError(f"the webhook response is larger than {MAX_RESPONSE_BYTES} bytes")
        if status >= 300:
            raise WebhookCallError(f"the server responded with the status code {status} but did not return more information")
        try:
            answer = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise WebhookCallError(f"couldn't get version/kind; json parse error: {exc}") from None
        if not isinstance(answer, dict):
            raise WebhookCallError("couldn't get version/kind; json parse error: the answer is not a JSON object")
        return answer


def _cert_reason(exc: aiohttp.ClientConnectorCertificateError) -> str:
    """Go's x509 wording for the usual verification failures."""
    verify = getattr(exc.certificate_error, "verify_message", "") or str(exc.certificate_error)
    if "unable to get local issuer" in verify or "self-signed" in verify or "self signed" in verify:
        return "x509: certificate signed by unknown authority"
    if "hostname mismatch" in verify or "IP address mismatch" in verify:
        return "x509: certificate is not valid for the requested name"
    if "expired" in verify:
        return "x509: certificate has expired or is not yet valid"
    return f"x509: {verify}"


def _tls_reason(err: OSError) -> str:
    """Go's wording for a handshake that did not happen."""
    text = str(err)
    if "WRONG_VERSION_NUMBER" in text or "HTTP_REQUEST" in text:
        return "http: server gave HTTP response to HTTPS client"
    if isinstance(err, ssl.SSLEOFError) or "EOF" in text or "UNEXPECTED_EOF" in text:
        return "EOF"
    return f"remote error: tls: {getattr(err, 'reason', None) or text}"


def _dial_reason(exc: aiohttp.ClientConnectorError) -> str:
    err = exc.os_error
    if isinstance(err, ssl.SSLError):
        return _tls_reason(err)
    if isinstance(err, ConnectionRefusedError):
        return f"dial tcp {exc.host}:{exc.port}: connect: connection refused"
    if isinstance(err, (ConnectionResetError, ConnectionAbortedError, BrokenPipeError)):
        return "EOF"
    return f"dial tcp {exc.host}:{exc.port}: connect: {err.strerror or err}"
