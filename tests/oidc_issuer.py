"""A real OIDC issuer for tests: HTTPS on 127.0.0.1 with a throwaway CA, discovery and JWKS.

Tests mint tokens with it and point a JWT authenticator at ``url`` with ``ca_pem`` as the
``certificateAuthority``, so discovery, TLS verification and key rotation run for real.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import ssl
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_OMIT = object()


def make_ca_and_serving_cert(common_name: str = "test-oidc-ca") -> tuple[str, str, str]:
    """(CA PEM, serving cert PEM, serving key PEM) valid for 127.0.0.1 and localhost."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False, data_encipherment=False,
                                     key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                    x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return (
        ca.public_bytes(pem).decode(),
        cert.public_bytes(pem).decode(),
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode(),
    )


class _Key:
    def __init__(self, alg: str) -> None:
        self.alg = alg
        if alg.startswith(("RS", "PS")):
            self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        else:
            curve = {"ES256": ec.SECP256R1(), "ES384": ec.SECP384R1(), "ES512": ec.SECP521R1()}[alg]
            self.private = ec.generate_private_key(curve)
        self.kid = uuid.uuid4().hex[:16]

    def jwk(self) -> dict[str, Any]:
        algo = jwt.algorithms.RSAAlgorithm if self.alg.startswith(("RS", "PS")) else jwt.algorithms.ECAlgorithm
        d = algo.to_jwk(self.private.public_key(), as_dict=True)
        d.update({"kid": self.kid, "use": "sig", "alg": self.alg})
        return d


class OIDCIssuer:
    """A threaded HTTPS OIDC provider. Use as a context manager; it binds a free port."""

    def __init__(self, path: str = "", alg: str = "RS256") -> None:
        self.path = path.rstrip("/")
        self.ca_pem, cert_pem, key_pem = make_ca_and_serving_cert()
        self._keys: list[_Key] = [_Key(alg)]
        #: served in discovery as ``issuer`` instead of ``url`` when set (to test the mismatch)
        self.discovery_issuer: str | None = None
        self.discovery_requests = 0
        self.jwks_requests = 0
        self._lock = threading.Lock()
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        with tempfile.TemporaryDirectory() as d:
            Path(d, "cert.pem").write_text(cert_pem)
            Path(d, "key.pem").write_text(key_pem)
            ctx.load_cert_chain(Path(d, "cert.pem"), Path(d, "key.pem"))
        self._ssl = ctx
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --

    def start(self) -> OIDCIssuer:
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                if self.path == issuer.path + "/.well-known/openid-configuration":
                    with issuer._lock:
                        issuer.discovery_requests += 1
                    body = issuer.discovery()
                elif self.path == issuer.path + "/keys":
                    with issuer._lock:
                        issuer.jwks_requests += 1
                    body = issuer.jwks()
                else:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet tests
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def get_request(self):  # type: ignore[no-untyped-def]
                sock, addr = super().get_request()
                return issuer._ssl.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

            def finish_request(self, request, client_address):  # type: ignore[no-untyped-def]
                request.settimeout(10)
                try:
                    request.do_handshake()  # in the handler thread: a stalled client blocks nobody
                except (OSError, ssl.SSLError):
                    return
                super().finish_request(request, client_address)

        self._server = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="oidc-issuer", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> OIDCIssuer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what it serves --

    @property
    def port(self) -> int:
        assert self._server is not None, "not started"
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}{self.path}"

    def discovery(self) -> dict[str, Any]:
        return {
            "issuer": self.discovery_issuer or self.url,
            "jwks_uri": self.url + "/keys",
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": sorted({k.alg for k in self._keys}),
        }

    def jwks(self) -> dict[str, Any]:
        with self._lock:
            return {"keys": [k.jwk() for k in self._keys]}

    @property
    def kid(self) -> str:
        """The current signing key's id."""
        return self._keys[-1].kid

    def rotate(self, alg: str | None = None, keep_old: bool = True) -> str:
        """Sign with a new key from now on (published in the JWKS); returns its kid."""
        key = _Key(alg or self._keys[-1].alg)
        with self._lock:
            self._keys = [*self._keys, key] if keep_old else [key]
        return key.kid

    def mint(self, claims: dict[str, Any] | None = None, *, expires_in: float = 3600, kid: Any = _OMIT,
             alg: str | None = None, unpublished: bool = False, **more: Any) -> str:
        """A signed token: ``iss`` = url, ``iat``/``nbf`` now and ``exp`` unless given.

        ``kid=None`` leaves the header without a kid; ``unpublished`` signs with a fresh key the
        JWKS does not list (a forgery).
        """
        now = int(time.time())
        body: dict[str, Any] = {"iss": self.url, "iat": now, "exp": int(now + expires_in)}
        body.update(claims or {})
        body.update(more)
        body = {k: v for k, v in body.items() if v is not _OMIT}
        key = _Key(alg or self._keys[-1].alg) if unpublished else self._keys[-1]
        if alg is not None and not unpublished and alg != key.alg:
            raise ValueError(f"the current key signs {key.alg}")
        headers = {} if kid is None else {"kid": key.kid if kid is _OMIT else kid}
        return jwt.encode(body, key.private, algorithm=key.alg, headers=headers)


OMIT = _OMIT
