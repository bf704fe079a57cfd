"""The hub's HTTP/1.1 protocol: uvicorn's httptools protocol, plus the peer certificate and the
connection hygiene Go's ``net/http`` server gives kube-apiserver.

uvicorn verifies the client's chain against ``ssl_ca_certs`` (the hub's client CA) but puts
nothing of it in the ASGI scope, and has no public hook to do so. This subclass of its
httptools protocol (passed as ``http=``, which uvicorn documents for custom protocol classes)
reads the verified leaf once per connection and adds it to every request's scope under the
ASGI TLS extension key ``extensions["tls"]``.

uvicorn has no timeout for reading a request's headers (a client trickling one header byte at
a time holds its connection forever: slowloris), no cap on open connections, and no limit on
requests per connection, so the subclass adds them (:class:`ConnectionLimits`, from HubConfig):

* **header timeout** (Go's ``ReadHeaderTimeout``, 32 s in kube-apiserver): the headers of a
  request must be complete within it, counted from the connection's start (after the TLS
  handshake) or from the first byte of a later request on a kept-alive connection. A
  connection that misses it is closed without an answer, as Go's server does.
* **idle timeout** (Go's ``IdleTimeout``, 90 s): a kept-alive connection with no request.
* **connection caps**, in total and per client address (Go has neither; nginx's
  ``limit_conn`` has the per-address one): a connection over a cap is answered at once with a
  Status, 429 TooManyRequests per address or 503 ServiceUnavailable in total, both with
  ``Retry-After: 1`` and ``Connection: close``, then closed: a well-behaved client retries,
  one address cannot take every file descriptor of the process.
* **requests per connection** (nginx's ``keepalive_requests``): the response to the last one
  says ``Connection: close``, so long-lived clients are spread again over replicas behind a
  load balancer and per-connection state is renewed.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

CERT_KEY = "fleetplane.client_cert_der"

log = logging.getLogger("fleetplane.server")


@dataclass
class ConnectionLimits:
    """The limits one server's connections share, and its per-address count of open ones.
    A zero limit is no limit."""

    header_timeout: float = 32.0
    max_connections: int = 0
    max_connections_per_client: int = 0
    max_requests_per_connection: int = 0
    #: called with "header_timeout", "per_client" or "total" when a connection is closed for a limit
    on_limit: Callable[[str], None] = lambda reason: None
    open_by_client: Counter[str] = field(default_factory=Counter)
    open_total: int = 0


def _status_response(code: int, reason: str, message: str) -> bytes:
    body = orjson.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                         "message": message, "reason": reason, "details": {"retryAfterSeconds": 1}, "code": code})
    phrase = {429: b"Too Many Requests", 503: b"Service Unavailable"}[code]
    return b"".join([b"HTTP/1.1 %d %s\r\n" % (code, phrase), b"content-type: application/json\r\n",
                     b"retry-after: 1\r\n", b"connection: close\r\n",
                     b"content-length: %d\r\n\r\n" % len(body), body])


class PeerCertProtocol(HttpToolsProtocol):
    """uvicorn's protocol with the peer certificate in the scope and :class:`ConnectionLimits`
    enforced (a server gets a subclass with its own limits from :func:`protocol_class`)."""

    limits: ConnectionLimits = ConnectionLimits()
    _peer_der: bytes | None = None
    _client_key: str | None = None
    _rejected = False
    _header_timer: asyncio.TimerHandle | None = None
    _requests = 0
    #: called once when the connection is lost: a streaming response (a watch) learns of it here,
    #: with no task of its own waiting on ``receive()`` for ``http.disconnect``
    on_lost: Callable[[], None] | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        limits = self.limits
        peer = transport.get_extra_info("peername")
        client = str(peer[0]) if isinstance(peer, tuple) and peer else ""
        over = self._over_limit(client)
        if over is not None:
            self._rejected = True
            self.transport = transport
            limits.on_limit(over)
            code, reason, message = (
                (429, "TooManyRequests", f"too many open connections from {client}: the limit is "
                                         f"{limits.max_connections_per_client}, please try again later")
                if over == "per_client" else
                (503, "ServiceUnavailable", f"too many open connections: the limit is {limits.max_connections}, "
                                           "please try again later"))
            transport.write(_status_response(code, reason, message))
            transport.close()
            return
        limits.open_total += 1
        limits.open_by_client[client] += 1
        self._client_key = client
        super().connection_made(transport)
        ssl_object = transport.get_extra_info("ssl_object")
        self._peer_der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        self._arm_header_timer()

    def _over_limit(self, client: str) -> str | None:
        limits = self.limits
        if limits.max_connections and limits.open_total >= limits.max_connections:
            return "total"
        if limits.max_connections_per_client and limits.open_by_client[client] >= limits.max_connections_per_client:
            return "per_client"
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        if self._rejected:
            return
        self._cancel_header_timer()
        if self._client_key is not None:
            limits = self.limits
            limits.open_total -= 1
            limits.open_by_client[self._client_key] -= 1
            if limits.open_by_client[self._client_key] <= 0:
                del limits.open_by_client[self._client_key]
            self._client_key = None
        super().connection_lost(exc)
        if self.on_lost is not None:
            on_lost, self.on_lost = self.on_lost, None
            on_lost()

    def data_received(self, data: bytes) -> None:
        if self._rejected:
            return  # answered and closing: whatever the client sent is not read
        super().data_received(data)

    # -- the header timeout -------------------------------------------------------------------

    def _arm_header_timer(self) -> None:
        if self._header_timer is None and self.limits.header_timeout > 0:
            self._header_timer = self.loop.call_later(self.limits.header_timeout, self._header_timeout)

    def _cancel_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_timeout(self) -> None:
        self._header_timer = None
        if not self.transport.is_closing():
            self.limits.on_limit("header_timeout")
            log.debug("closing a connection from %s: its request headers were not complete within %gs",
                      self._client_key, self.limits.header_timeout)
            self.transport.close()

    # -- parser callbacks ---------------------------------------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm_header_timer()  # a later request on a kept-alive connection: from its first byte
        extensions: dict[str, Any] = {"tls": {CERT_KEY: self._peer_der}}
        self.scope["extensions"] = extensions

    def on_headers_complete(self) -> None:
        self._cancel_header_timer()
        super().on_headers_complete()
        self._requests += 1
        limit = self.limits.max_requests_per_connection
        if limit and self._requests >= limit and self.cycle is not None:
            self.cycle.keep_alive = False  # this response says Connection: close


def protocol_class(limits: ConnectionLimits) -> type[PeerCertProtocol]:
    """A protocol class for one server, sharing ``limits`` among its connections."""
    return type("HubProtocol", (PeerCertProtocol,), {"limits": limits})
