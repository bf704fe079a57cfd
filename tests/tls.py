"""Real HTTPS servers for tests: a throwaway CA with a serving certificate, and a threaded HTTP
server whose TLS handshakes run in the handler threads (a client that stalls blocks nobody).
The admission webhook server and the OIDC issuer are built on it."""

from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def make_ca_and_cert(names: list[str], common_name: str = "test-ca") -> tuple[str, str, str]:
    """(CA PEM, serving cert PEM, serving key PEM), the certificate valid for 127.0.0.1 and ``names``."""
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
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    return ca.public_bytes(pem).decode(), cert.public_bytes(pem).decode(), key_pem


def server_context(cert_pem: str, key_pem: str) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory() as d:
        Path(d, "cert.pem").write_text(cert_pem)
        Path(d, "key.pem").write_text(key_pem)
        ctx.load_cert_chain(Path(d, "cert.pem"), Path(d, "key.pem"))
    return ctx


def serve_https(handler: type[BaseHTTPRequestHandler], ctx: ssl.SSLContext, *, name: str,
                socket_timeout: float = 10.0) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """Serve ``handler`` over TLS on a free port of 127.0.0.1 in a daemon thread; ``shutdown()``
    the server to stop it."""

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def get_request(self):  # type: ignore[no-untyped-def]
            sock, addr = super().get_request()
            return ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

        def finish_request(self, request, client_address):  # type: ignore[no-untyped-def]
            request.settimeout(socket_timeout)
            try:
                request.do_handshake()  # in the handler thread: a stalled client blocks nobody
            except (OSError, ssl.SSLError):
                return
            super().finish_request(request, client_address)

    server = Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=name, daemon=True)
    thread.start()
    return server, thread
