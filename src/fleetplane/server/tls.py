"""Client certificates reach the application: uvicorn's protocol, plus the peer certificate.

uvicorn verifies the client's chain against ``ssl_ca_certs`` (the hub's client CA) but puts
nothing of it in the ASGI scope, and has no public hook to do so. This subclass of its
httptools protocol (passed as ``http=``, which uvicorn documents for custom protocol classes)
reads the verified leaf once per connection and adds it to every request's scope under the
ASGI TLS extension key ``extensions["tls"]``.
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

CERT_KEY = "fleetplane.client_cert_der"


class PeerCertProtocol(HttpToolsProtocol):
    _peer_der: bytes | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        ssl_object = transport.get_extra_info("ssl_object")
        self._peer_der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.scope["extensions"] = {"tls": {CERT_KEY: self._peer_der}}  # type: ignore[typeddict-unknown-key]
