"""Kubeconfigs and a small async REST client, for the Cluster controller and the pull-mode syncer.

:func:`parse_kubeconfig` turns a kubeconfig (a Cluster's ``spec.kubeconfig`` string, a dict, or a
file) into an :class:`Endpoint`, or raises :class:`KubeconfigError` with a message that names the
field that is wrong (what a Cluster's ``InvalidKubeConfig`` condition shows). A Cluster's
kubeconfig must carry its credentials inline: file references (``certificate-authority``,
``client-certificate``, ``client-key``, ``tokenFile``) are refused unless ``allow_files`` (only
for kubeconfigs the operator gave the process itself), and exec/auth-provider users are refused
(the controller does not run programs a Cluster names).

:class:`RestClient` (aiohttp) speaks JSON to one API server: ``request``/``json`` for single
calls, ``watch`` for a watch stream. Failures to reach the server are :class:`Unreachable` (with
a reason: ``Unreachable``, ``TLSError`` or ``Timeout``), HTTP errors are :class:`ApiError`, and a
TLS configuration that cannot be built is :class:`ClientBuildError` (``ErrorCreatingClient``).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import difflib
import errno
import json
import os
import ssl
import tempfile
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

__all__ = ["ApiError", "ClientBuildError", "Endpoint", "KubeconfigError", "RestClient", "Unreachable",
           "in_cluster_kubeconfig", "parse_kubeconfig"]

_USER_FIELDS = ("token", "tokenFile", "client-certificate-data", "client-key-data", "client-certificate",
                "client-key", "username", "password", "exec", "auth-provider", "as", "as-uid", "as-groups",
                "as-user-extra", "impersonate", "impersonate-uid", "impersonate-groups", "impersonate-user-extra",
                "extensions")
_CLUSTER_FIELDS = ("server", "certificate-authority-data", "certificate-authority", "insecure-skip-tls-verify",
                   "tls-server-name", "proxy-url", "disable-compression", "extensions")
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


class KubeconfigError(ValueError):
    """The kubeconfig cannot be used (the Cluster condition reason ``InvalidKubeConfig``)."""


class ClientBuildError(Exception):
    """A client cannot be built from a well-formed kubeconfig (reason ``ErrorCreatingClient``)."""


class Unreachable(Exception):
    """The server could not be reached; ``reason`` is ``Unreachable``, ``TLSError`` or ``Timeout``."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class ApiError(Exception):
    """An HTTP error answer; ``message`` is the Status message when the body is a Status."""

    def __init__(self, status: int, message: str, body: Any = None, method: str = "", url: str = "") -> None:
        super().__init__(f"{method} {url}: HTTP {status}: {message}".strip())
        self.status = status
        self.message = message
        self.body = body
        self.reason = body.get("reason") if isinstance(body, dict) else None


@dataclass(frozen=True)
class Endpoint:
    """Where a cluster is and how to authenticate with it (one kubeconfig context)."""

    server: str
    ca_pem: bytes | None = field(default=None, repr=False)
    insecure: bool = False
    tls_server_name: str | None = None
    proxy_url: str | None = None
    token: str | None = field(default=None, repr=False)
    client_cert_pem: bytes | None = field(default=None, repr=False)
    client_key_pem: bytes | None = field(default=None, repr=False)
    namespace: str | None = None
    #: fields of the user block that were not understood (reported, not fatal when credentials exist)
    notes: tuple[str, ...] = ()

    def with_server(self, server: str) -> Endpoint:
        return replace(self, server=server.rstrip("/"))

    @property
    def ca_data(self) -> str | None:
        return base64.b64encode(self.ca_pem).decode() if self.ca_pem else None

    def to_kubeconfig(self, name: str = "cluster") -> dict[str, Any]:
        """A self-contained kubeconfig (inline credentials) for this endpoint."""
        cluster: dict[str, Any] = {"server": self.server}
        if self.ca_pem:
            cluster["certificate-authority-data"] = self.ca_data
        if self.insecure:
            cluster["insecure-skip-tls-verify"] = True
        if self.tls_server_name:
            cluster["tls-server-name"] = self.tls_server_name
        if self.proxy_url:
            cluster["proxy-url"] = self.proxy_url
        user: dict[str, Any] = {}
        if self.token:
            user["token"] = self.token
        if self.client_cert_pem and self.client_key_pem:
            user["client-certificate-data"] = base64.b64encode(self.client_cert_pem).decode()
            user["client-key-data"] = base64.b64encode(self.client_key_pem).decode()
        ctx: dict[str, Any] = {"cluster": name, "user": name}
        if self.namespace:
            ctx["namespace"] = self.namespace
        return {"apiVersion": "v1", "kind": "Config", "clusters": [{"name": name, "cluster": cluster}],
                "users": [{"name": name, "user": user}], "contexts": [{"name": name, "context": ctx}],
                "current-context": name}


# -- kubeconfig parsing ---------------------------------------------------------------------------


def _b64(value: Any, where: str) -> bytes:
    if not isinstance(value, str) or not value.strip():
        raise KubeconfigError(f"{where} must be a non-empty base64 string")
    try:
        return base64.b64decode("".join(value.split()), validate=True)
    except (binascii.Error, ValueError):
        raise KubeconfigError(f"{where} is not valid base64") from None


def _did_you_mean(key: str, known: tuple[str, ...]) -> str:
    words = sorted(key.lower().split("-"))
    close = [k for k in known if sorted(k.split("-")) == words]  # the same words in another order
    close = close or difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    return f"{key!r} (did you mean {close[0]!r}?)" if close else repr(key)


def _named(kc: Mapping[str, Any], section: str) -> dict[str, dict]:
    entries = kc.get(section)
    if entries is None:
        return {}
    if not isinstance(entries, list):
        raise KubeconfigError(f"{section} must be a list")
    out: dict[str, dict] = {}
    for i, item in enumerate(entries):
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise KubeconfigError(f"{section}[{i}] must be an object with a name")
        body = item.get(section[:-1])
        if body is None:
            body = {}
        if not isinstance(body, Mapping):
            raise KubeconfigError(f"{section}[{item['name']}].{section[:-1]} must be an object")
        out[item["name"]] = dict(body)
    return out


def _load(source: str | bytes | Mapping[str, Any] | Path) -> tuple[Mapping[str, Any], Path | None]:
    if isinstance(source, Path):
        try:
            text = source.read_text()
        except OSError as exc:
            raise KubeconfigError(f"cannot read kubeconfig {source}: {exc.strerror or exc}") from None
        return _load(text)[0], source.parent
    if isinstance(source, Mapping):
        return source, None
    if isinstance(source, bytes):
        source = source.decode("utf-8", "replace")
    if not isinstance(source, str) or not source.strip():
        raise KubeconfigError("the kubeconfig is empty")
    try:
        doc = yaml.safe_load(source)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise KubeconfigError(f"the kubeconfig is not valid YAML{where}: {problem}") from None
    if not isinstance(doc, Mapping):
        raise KubeconfigError(f"the kubeconfig must be a YAML object, not {type(doc).__name__}")
    return doc, None


def parse_kubeconfig(source: str | bytes | Mapping[str, Any] | Path, context: str | None = None, *,
                     allow_files: bool = False, base_dir: Path | None = None) -> Endpoint:
    """The endpoint of ``context`` (default: current-context; with no contexts at all, the only
    cluster and user, as in the seed's example). See the module docstring for what is refused."""
    kc, file_dir = _load(source)
    base_dir = base_dir or file_dir
    kind = kc.get("kind")
    if kind not in (None, "Config"):
        raise KubeconfigError(f'kind must be "Config", not {kind!r}')
    clusters, users, contexts = _named(kc, "clusters"), _named(kc, "users"), _named(kc, "contexts")
    if not clusters:
        raise KubeconfigError("the kubeconfig has no clusters")
    ctx_name = context or kc.get("current-context") or None
    if ctx_name:
        if ctx_name not in contexts:
            known = ", ".join(sorted(contexts)) or "none"
            raise KubeconfigError(f"context {ctx_name!r} not found (contexts: {known})")
        ctx = contexts[ctx_name]
        cluster_name, user_name = ctx.get("cluster"), ctx.get("user")
        if cluster_name not in clusters:
            raise KubeconfigError(f"context {ctx_name!r} names cluster {cluster_name!r}, which is not in clusters")
        if user_name and user_name not in users:
            raise KubeconfigError(f"context {ctx_name!r} names user {user_name!r}, which is not in users")
        namespace = ctx.get("namespace") or None
    elif len(contexts) == 1:
        return parse_kubeconfig(kc, next(iter(contexts)), allow_files=allow_files, base_dir=base_dir)
    elif contexts:
        raise KubeconfigError(f"no current-context, and several contexts ({', '.join(sorted(contexts))}): set one")
    else:
        if len(clusters) != 1:
            raise KubeconfigError("no contexts, and several clusters: add a context and a current-context")
        if len(users) > 1:
            raise KubeconfigError("no contexts, and several users: add a context and a current-context")
        cluster_name = next(iter(clusters))
        user_name = next(iter(users)) if users else None
        namespace = None
    cluster = clusters[cluster_name]
    user = users.get(user_name, {}) if user_name else {}
    cwhere, uwhere = f"clusters[{cluster_name}].cluster", f"users[{user_name}].user"

    def read_file(key: str, where: str, value: Any) -> bytes:
        if not allow_files:
            raise KubeconfigError(f"{where}.{key} refers to a file; a Cluster's kubeconfig must carry its "
                                  f"credentials inline (use {key}-data)" if key != "tokenFile" else
                                  f"{where}.tokenFile refers to a file; use token instead")
        path = Path(str(value))
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        try:
            return path.read_bytes()
        except OSError as exc:
            raise KubeconfigError(f"{where}.{key}: cannot read {path}: {exc.strerror or exc}") from None

    server = cluster.get("server")
    if not isinstance(server, str) or not server:
        raise KubeconfigError(f"{cwhere}.server is missing")
    u = urlsplit(server)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise KubeconfigError(f"{cwhere}.server {server!r} is not an http(s) URL with a host")
    try:
        u.port  # noqa: B018 - validates the port
    except ValueError:
        raise KubeconfigError(f"{cwhere}.server {server!r} has an invalid port") from None
    ca_pem = None
    if cluster.get("certificate-authority-data"):
        ca_pem = _b64(cluster["certificate-authority-data"], f"{cwhere}.certificate-authority-data")
    elif cluster.get("certificate-authority"):
        ca_pem = read_file("certificate-authority", cwhere, cluster["certificate-authority"])
    if ca_pem is not None and b"-----BEGIN CERTIFICATE-----" not in ca_pem:
        raise KubeconfigError(f"{cwhere}.certificate-authority-data is not a PEM certificate")
    insecure = cluster.get("insecure-skip-tls-verify") in (True, "true")

    for key in ("exec", "auth-provider"):
        if user.get(key):
            raise KubeconfigError(f"{uwhere}.{key}: credential plugins are not supported here; "
                                  "use a token or a client certificate")
    if user.get("username") or user.get("password"):
        raise KubeconfigError(f"{uwhere}: basic authentication (username/password) is not supported; "
                              "use a token or a client certificate")
    token = user.get("token") or None
    if token is not None and not isinstance(token, str):
        raise KubeconfigError(f"{uwhere}.token must be a string")
    if token is None and user.get("tokenFile"):
        token = read_file("tokenFile", uwhere, user["tokenFile"]).decode("utf-8", "replace").strip() or None
    cert = key = None
    if user.get("client-certificate-data"):
        cert = _b64(user["client-certificate-data"], f"{uwhere}.client-certificate-data")
    elif user.get("client-certificate"):
        cert = read_file("client-certificate", uwhere, user["client-certificate"])
    if user.get("client-key-data"):
        key = _b64(user["client-key-data"], f"{uwhere}.client-key-data")
    elif user.get("client-key"):
        key = read_file("client-key", uwhere, user["client-key"])
    if (cert is None) != (key is None):
        missing = "client-key-data" if key is None else "client-certificate-data"
        raise KubeconfigError(f"{uwhere}: a client certificate needs both client-certificate-data and "
                              f"client-key-data ({missing} is missing)")
    unknown = [k for k in user if k not in _USER_FIELDS]
    notes = tuple(f"{uwhere}: unknown field {_did_you_mean(k, _USER_FIELDS)}" for k in unknown)
    unknown_c = [k for k in cluster if k not in _CLUSTER_FIELDS]
    notes += tuple(f"{cwhere}: unknown field {_did_you_mean(k, _CLUSTER_FIELDS)}" for k in unknown_c)
    if token is None and cert is None and unknown:
        raise KubeconfigError(f"{uwhere} has no usable credentials: " + "; ".join(
            f"unknown field {_did_you_mean(k, _USER_FIELDS)}" for k in unknown))
    return Endpoint(server=server.rstrip("/"), ca_pem=ca_pem, insecure=insecure,
                    tls_server_name=cluster.get("tls-server-name") or None,
                    proxy_url=cluster.get("proxy-url") or None, token=token, client_cert_pem=cert,
                    client_key_pem=key, namespace=namespace, notes=notes)


def in_cluster_kubeconfig() -> dict[str, Any]:
    """A kubeconfig for the API server of the pod this process runs in (its service account)."""
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    if not host:
        raise KubeconfigError("not running in a cluster ($KUBERNETES_SERVICE_HOST is not set)")
    if ":" in host:
        host = f"[{host}]"
    try:
        token = Path(SA_DIR, "token").read_text().strip()
        ca = Path(SA_DIR, "ca.crt").read_bytes()
    except OSError as exc:
        raise KubeconfigError(f"the in-cluster service account is unusable: {exc}") from None
    return Endpoint(server=f"https://{host}:{port}", ca_pem=ca, token=token).to_kubeconfig("in-cluster")


# -- the client -----------------------------------------------------------------------------------


def _ssl_context(ep: Endpoint) -> ssl.SSLContext | None:
    if not ep.server.startswith("https://"):
        return None
    try:
        ctx = ssl.create_default_context(cadata=ep.ca_pem.decode("ascii")) if ep.ca_pem else ssl.create_default_context()
    except (ssl.SSLError, ValueError, UnicodeDecodeError) as exc:
        raise ClientBuildError(f"the certificate authority cannot be loaded: {exc}") from None
    if ep.insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if ep.client_cert_pem and ep.client_key_pem:
        fd, path = tempfile.mkstemp(prefix=".fleetplane-client-")  # mode 0600, removed at once
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(ep.client_cert_pem.rstrip(b"\n") + b"\n" + ep.client_key_pem.rstrip(b"\n") + b"\n")
            ctx.load_cert_chain(path)
        except ssl.SSLError as exc:
            raise ClientBuildError(f"the client certificate and key cannot be loaded: {exc.reason or exc}") from None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(path)
    return ctx


@dataclass
class Response:
    status: int
    headers: Mapping[str, str]
    data: bytes

    def json(self) -> Any:
        return json.loads(self.data) if self.data else None


class RestClient:
    """JSON over HTTP(S) to one API server. Create it anywhere; use it inside one event loop."""

    def __init__(self, endpoint: Endpoint, *, timeout: float = 10.0, user_agent: str = "fleetplane") -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self.user_agent = user_agent
        self._ssl = _ssl_context(endpoint)
        self._session: Any = None

    @property
    def server(self) -> str:
        return self.endpoint.server

    def _headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        h = {"Accept": "application/json", "User-Agent": self.user_agent}
        if self.endpoint.token:
            h["Authorization"] = f"Bearer {self.endpoint.token}"
        h.update(extra or {})
        return h

    def _get_session(self) -> Any:
        import aiohttp

        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(ssl=self._ssl if self._ssl is not None else False, limit=32,
                                             enable_cleanup_closed=True)
            self._session = aiohttp.ClientSession(connector=connector, trust_env=self.endpoint.proxy_url is None)
        return self._session

    def _kw(self) -> dict[str, Any]:
        kw: dict[str, Any] = {}
        if self.endpoint.tls_server_name:
            kw["server_hostname"] = self.endpoint.tls_server_name
        if self.endpoint.proxy_url:
            kw["proxy"] = self.endpoint.proxy_url
        return kw

    def _unreachable(self, exc: BaseException) -> Unreachable:
        import aiohttp

        where = self.endpoint.server
        if isinstance(exc, aiohttp.ClientConnectorCertificateError):
            return Unreachable("TLSError", f"TLS handshake with {where} failed: {exc.certificate_error}")
        if isinstance(exc, aiohttp.ClientSSLError):
            return Unreachable("TLSError", f"TLS handshake with {where} failed: {exc}")
        if isinstance(exc, (asyncio.TimeoutError, aiohttp.ServerTimeoutError)):
            return Unreachable("Timeout", f"{where} did not answer within {self.timeout:g}s")
        if isinstance(exc, aiohttp.ClientConnectorError):
            err = exc.os_error
            if isinstance(err, ConnectionRefusedError) or getattr(err, "errno", None) == errno.ECONNREFUSED \
                    or "Connect call failed" in str(err):
                what = "connection refused"
            else:
                what = err.strerror or str(err)
            return Unreachable("Unreachable", f"cannot connect to {where}: {what}")
        return Unreachable("Unreachable", f"{where}: {type(exc).__name__}: {exc}")

    async def request(self, method: str, path: str, *, params: Mapping[str, Any] | None = None, body: Any = None,
                      content_type: str = "application/json", timeout: float | None = None,
                      headers: Mapping[str, str] | None = None) -> Response:
        import aiohttp

        data = None
        extra = dict(headers or {})
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            extra["Content-Type"] = content_type
        t = aiohttp.ClientTimeout(total=timeout or self.timeout)
        try:
            async with self._get_session().request(method, self.server + path, params=_params(params), data=data,
                                                   headers=self._headers(extra), timeout=t, **self._kw()) as resp:
                return Response(resp.status, dict(resp.headers), await resp.read())
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise self._unreachable(exc) from None

    async def json(self, method: str, path: str, **kw: Any) -> Any:
        """The decoded answer; an HTTP error raises :class:`ApiError`."""
        resp = await self.request(method, path, **kw)
        try:
            doc = resp.json()
        except ValueError:
            doc = resp.data.decode("utf-8", "replace")[:500]
        if resp.status >= 400:
            msg = doc.get("message") if isinstance(doc, dict) else doc
            raise ApiError(resp.status, str(msg or "").strip() or _phrase(resp.status), doc, method, path)
        return doc

    async def get(self, path: str, **kw: Any) -> Any:
        return await self.json("GET", path, **kw)

    async def watch(self, path: str, params: Mapping[str, Any] | None = None,
                    timeout_seconds: int = 300) -> AsyncIterator[dict[str, Any]]:
        """The events of a watch (``{"type", "object"}``) until the server ends it."""
        import aiohttp

        q = {**(params or {}), "watch": "true", "allowWatchBookmarks": "true", "timeoutSeconds": str(timeout_seconds)}
        t = aiohttp.ClientTimeout(total=None, sock_connect=self.timeout, sock_read=timeout_seconds + 30)
        try:
            async with self._get_session().get(self.server + path, params=q, headers=self._headers(), timeout=t,
                                               **self._kw()) as resp:
                if resp.status >= 400:
                    raw = await resp.read()
                    try:
                        doc = json.loads(raw)
                    except ValueError:
                        doc = None
                    msg = doc.get("message") if isinstance(doc, dict) else raw.decode("utf-8", "replace")[:300]
                    raise ApiError(resp.status, str(msg), doc, "WATCH", path)
                buf = b""
                async for chunk in resp.content.iter_any():
                    buf += chunk
                    while b"\n" in buf:
                        line, buf = buf.split(b"\n", 1)
                        if line.strip():
                            yield json.loads(line)
                if buf.strip():
                    yield json.loads(buf)
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise self._unreachable(exc) from None

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None


def _params(params: Mapping[str, Any] | None) -> dict[str, str] | None:
    if not params:
        return None
    return {k: ("true" if v is True else "false" if v is False else str(v)) for k, v in params.items() if v is not None}


def _phrase(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "error"
