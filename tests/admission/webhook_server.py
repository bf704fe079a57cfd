"""A real HTTPS webhook server for tests, with its own throwaway CA.

Each path is a handler ``(review) -> answer``: a dict is sent as JSON, ``bytes`` as they are, and a
handler may sleep (a slow webhook) or raise :class:`Hangup` (close without answering). Every
review received is kept (``reviews(path)``), so tests assert what the hub sent.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..tls import make_ca_and_cert, serve_https, server_context

Handler = Callable[[dict[str, Any]], "dict[str, Any] | bytes"]
SERVICE_NAME = "webhook.default.svc"


class Hangup(Exception):
    """Raised by a handler: the connection is closed without an answer."""


class WebhookServer:
    """HTTPS on 127.0.0.1 (and, by certificate, ``webhook.default.svc``), one handler per path."""

    def __init__(self, names: tuple[str, ...] = (SERVICE_NAME, "localhost")) -> None:
        self.ca_pem, cert_pem, key_pem = make_ca_and_cert(list(names), "test-webhook-ca")
        self._ssl = server_context(cert_pem, key_pem)
        self._handlers: dict[str, Handler] = {}
        self._reviews: dict[str, list[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def ca_bundle(self) -> str:
        """The CA as a webhook clientConfig.caBundle (base64 PEM)."""
        return base64.b64encode(self.ca_pem.encode()).decode()

    @property
    def port(self) -> int:
        assert self._server is not None, "not started"
        return self._server.server_address[1]

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def client_config(self, path: str) -> dict[str, Any]:
        return {"url": self.url(path), "caBundle": self.ca_bundle}

    def handle(self, path: str, handler: Handler) -> None:
        with self._lock:
            self._handlers[path] = handler

    def reviews(self, path: str) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._reviews.get(path, []))

    def start(self) -> WebhookServer:
        server = self

        class RequestHandler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                path = self.path.split("?", 1)[0]
                length = int(self.headers.get("Content-Length") or 0)
                review = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    handler = server._handlers.get(path)
                    server._reviews.setdefault(path, []).append(review | {"_query": self.path.partition("?")[2]})
                if handler is None:
                    self.send_error(404)
                    return
                try:
                    answer = handler(review)
                except Hangup:
                    self.close_connection = True
                    return
                data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the hub gave up (a timeout test)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet tests
                pass

        self._server, _ = serve_https(RequestHandler, self._ssl, name="webhook-server", socket_timeout=60)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> WebhookServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def allow(review: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """An AdmissionReview answer allowing ``review``, with ``extra`` response fields."""
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": review["request"]["uid"], "allowed": True, **extra}}


def deny(review: dict[str, Any], message: str, code: int = 403, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": review["request"]["uid"], "allowed": False,
                         "status": {"message": message, "code": code}, **extra}}


def patch(review: dict[str, Any], ops: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return allow(review, patchType="JSONPatch", patch=base64.b64encode(json.dumps(ops).encode()).decode(), **extra)
