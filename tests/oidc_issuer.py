"""A real OIDC issuer for tests: HTTPS on 127.0.0.1 with a throwaway CA, discovery and JWKS.

Tests mint tokens with it and point a JWT authenticator at ``url`` with ``ca_pem`` as the
``certificateAuthority``, so discovery, TLS verification and key rotation run for real.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from .tls import make_ca_and_cert, serve_https, server_context

_OMIT = object()


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
        self.ca_pem, cert_pem, key_pem = make_ca_and_cert(["localhost"], "test-oidc-ca")
        self._keys: list[_Key] = [_Key(alg)]
        #: served in discovery as ``issuer`` instead of ``url`` when set (to test the mismatch)
        self.discovery_issuer: str | None = None
        self.discovery_requests = 0
        self.jwks_requests = 0
        self._lock = threading.Lock()
        self._ssl = server_context(cert_pem, key_pem)
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

        self._server, self._thread = serve_https(Handler, self._ssl, name="oidc-issuer")
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
