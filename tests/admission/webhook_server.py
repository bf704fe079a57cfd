"""A real HTTPS webhook server for tests, with its own throwaway CA.

Each path is a handler ``(review) -> answer``: a dict is sent as JSON, ``bytes`` as they are, and a
handler may sleep (a slow webhook) or raise :class:`Hangup` (close without answering). Every
review received is kept (``reviews(path)``), so tests assert what the hub sent.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import json
import ssl
import tempfile
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

Handler = Callable[[dict[str, Any]], "dict[str, Any] | bytes"]
SERVICE_NAME = "webhook.default.svc"


class Hangup(Exception):
    """Raised by a handler: the connection is closed without an answer."""


def make_ca_and_cert(names: list[str], common_name: str = "test-webhook-ca") -> tuple[str, str, str]:
    """(CA PEM, serving cert PEM, serving key PEM) valid for 127.0.0.1 and ``names``."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number())
          .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    sans += [x509.DNSName(n) for n in names]
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "webhook")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    return ca.public_bytes(pem).decode(), cert.public_bytes(pem).decode(), key_pem


class WebhookServer:
    """HTTPS on 127.0.0.1 (and, by certificate, ``webhook.default.svc``), one handler per path."""

    def __init__(self, names: tuple[str, ...] = (SERVICE_NAME, "localhost")) -> None:
        self.ca_pem, cert_pem, key_pem = make_ca_and_cert(list(names))
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        with tempfile.TemporaryDirectory() as d:
            Path(d, "cert.pem").write_text(cert_pem)
            Path(d, "key.pem").write_text(key_pem)
            ctx.load_cert_chain(Path(d, "cert.pem"), Path(d, "key.pem"))
        self._ssl = ctx
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

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def get_request(self):  # type: ignore[no-untyped-def]
                sock, addr = super().get_request()
                return server._ssl.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

            def finish_request(self, request, client_address):  # type: ignore[no-untyped-def]
                request.settimeout(60)
                try:
                    request.do_handshake()
                except (OSError, ssl.SSLError):
                    return
                super().finish_request(request, client_address)

        self._server = Server(("127.0.0.1", 0), RequestHandler)
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                         name="webhook-server", daemon=True).start()
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
