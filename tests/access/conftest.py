"""Fixtures for fleetplane.access tests: real plugin scripts, a throw-away PKI and a tiny HTTPS API server."""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import socket
import ssl
import stat
import sys
import textwrap
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from fleetplane.access import ProviderConfig, clear_authenticators

V1 = "client.authentication.k8s.io/v1"
V1BETA1 = "client.authentication.k8s.io/v1beta1"


# ----------------------------------------------------------------------------------------------
# waiting without bare sleeps


def wait_for(cond, timeout: float = 10.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.01)


async def async_wait_for(cond, timeout: float = 10.0, what: str = "condition") -> Any:
    import asyncio

    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.01)


@pytest.fixture(autouse=True)
def _fresh_authenticators():
    clear_authenticators()
    yield
    clear_authenticators()


# ----------------------------------------------------------------------------------------------
# plugin scripts

PRELUDE = """\
import json, os, sys, time
INFO = json.loads(os.environ.get("KUBERNETES_EXEC_INFO") or "{}")
API = INFO.get("apiVersion", "client.authentication.k8s.io/v1")
def emit(status, api=None, kind="ExecCredential"):
    sys.stdout.write(json.dumps({"apiVersion": api or API, "kind": kind, "status": status}))
    sys.stdout.flush()
def bump(path):
    with open(path, "a") as f:
        f.write(str(os.getpid()) + "\\n")
"""


@dataclass
class PluginDir:
    root: Path

    def script(self, body: str, name: str = "plugin", prelude: bool = True) -> str:
        path = self.root / name
        src = f"#!{sys.executable}\n" + (PRELUDE if prelude else "") + textwrap.dedent(body)
        path.write_text(src)
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        return str(path)

    def count(self, name: str = "count") -> int:
        p = self.root / name
        return len(p.read_text().splitlines()) if p.exists() else 0

    def path(self, name: str) -> str:
        return str(self.root / name)

    def touch(self, name: str) -> None:
        (self.root / name).touch()

    def read(self, name: str) -> str:
        return (self.root / name).read_text()


@pytest.fixture
def plugins(tmp_path) -> PluginDir:
    d = tmp_path / "plugins"
    d.mkdir()
    return PluginDir(d)


def provider_config(
    command: str,
    *,
    name: str = "test",
    api_version: str = V1,
    args: list[str] | None = None,
    env: list[dict] | None = None,
    provide_cluster_info: bool = True,
    interactive_mode: str | None = "Never",
    install_hint: str | None = None,
    cli_policy: str | None = None,
    env_policy: str | None = None,
    timeout: float | None = None,
    extra_providers: list[dict] | None = None,
) -> ProviderConfig:
    ec: dict[str, Any] = {
        "apiVersion": api_version,
        "command": command,
        "provideClusterInfo": provide_cluster_info,
    }
    if args is not None:
        ec["args"] = args
    if env is not None:
        ec["env"] = env
    if interactive_mode is not None:
        ec["interactiveMode"] = interactive_mode
    if install_hint:
        ec["installHint"] = install_hint
    p: dict[str, Any] = {"name": name, "execConfig": ec}
    if cli_policy:
        p["profileSourcedCLIArgsPolicy"] = cli_policy
    if env_policy:
        p["profileSourcedEnvVarsPolicy"] = env_policy
    if timeout is not None:
        p["execTimeoutSeconds"] = timeout
    return ProviderConfig.from_dict({"providers": [*(extra_providers or []), p]})


def cluster_profile(
    server: str = "https://127.0.0.1:6443",
    *,
    name: str = "spoke-1",
    namespace: str = "fleet",
    provider: str = "test",
    ca_pem: bytes | None = None,
    extensions: list[dict] | None = None,
    **cluster_fields: Any,
) -> dict[str, Any]:
    cluster: dict[str, Any] = {"server": server}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    cluster.update(cluster_fields)
    if extensions is not None:
        cluster["extensions"] = extensions
    return {
        "apiVersion": "multicluster.x-k8s.io/v1alpha1",
        "kind": "ClusterProfile",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterManager": {"name": "test-manager"}},
        "status": {"accessProviders": [{"name": provider, "cluster": cluster}]},
    }


# ----------------------------------------------------------------------------------------------
# PKI


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _pem_key(key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


@dataclass
class CA:
    key: Any
    cert: x509.Certificate

    @property
    def pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    @classmethod
    def create(cls, cn: str) -> CA:
        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(cn))
            .issuer_name(_name(cn))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        return cls(key, cert)

    def issue(
        self, cn: str, *, server: bool = False, sans: list[x509.GeneralName] | None = None
    ) -> tuple[bytes, bytes]:
        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        b = (
            x509.CertificateBuilder()
            .subject_name(_name(cn))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [x509.ExtendedKeyUsageOID.SERVER_AUTH if server else x509.ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        )
        if sans:
            b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = b.sign(self.key, hashes.SHA256())
        return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)


@dataclass
class PKI:
    server_ca: CA
    client_ca: CA
    other_ca: CA
    server_cert: bytes
    server_key: bytes

    def client_pair(self, cn: str) -> tuple[str, str]:
        cert, key = self.client_ca.issue(cn)
        return cert.decode(), key.decode()


@pytest.fixture(scope="session")
def pki() -> PKI:
    import ipaddress

    server_ca = CA.create("fleetplane-test-server-ca")
    client_ca = CA.create("fleetplane-test-client-ca")
    other_ca = CA.create("some-other-ca")
    cert, key = server_ca.issue(
        "hub",
        server=True,
        sans=[
            x509.DNSName("localhost"),
            x509.DNSName("hub.fleet.test"),
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        ],
    )
    return PKI(server_ca, client_ca, other_ca, cert, key)


# ----------------------------------------------------------------------------------------------
# HTTPS API server


@dataclass
class ApiState:
    tokens: set[str] = field(default_factory=set)
    cert_users: set[str] = field(default_factory=set)
    namespaces: dict[str, dict[str, str]] = field(default_factory=lambda: {"default": {}, "kube-system": {}})
    secrets: list[dict[str, Any]] = field(default_factory=list)
    log: list[tuple[str, int, str | None, str | None]] = field(
        default_factory=list
    )  # (path, status, token, cn)
    headers: list[dict[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def statuses(self, path_prefix: str = "/") -> list[int]:
        with self.lock:
            return [s for p, s, _, _ in self.log if p.startswith(path_prefix)]

    def add_secret(
        self, namespace: str, name: str, data: dict[str, bytes], labels: dict[str, str] | None = None
    ) -> None:
        self.secrets.append(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
                "type": "Opaque",
                "data": {k: base64.b64encode(v).decode() for k, v in data.items()},
            }
        )


def _match(labels: dict[str, str], selector: str) -> bool:
    for term in filter(None, selector.split(",")):
        k, _, v = term.partition("=")
        if labels.get(k) != v:
            return False
    return True


VERSION = {
    "major": "1",
    "minor": "33",
    "gitVersion": "v1.33.0-fleetplane-test",
    "gitCommit": "0000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.24",
    "compiler": "gc",
    "platform": "linux/amd64",
}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _TLSServer

    def setup(self) -> None:
        self.request.settimeout(10)
        self.request.do_handshake()
        super().setup()

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802
        st = self.server.state
        u = urlsplit(self.path)
        q = {k: v[0] for k, v in parse_qs(u.query).items()}
        auth = self.headers.get("Authorization") or ""
        token = auth[7:] if auth.startswith("Bearer ") else None
        cn = None
        peer = self.connection.getpeercert()
        if peer:
            for rdn in peer.get("subject", ()):
                for k, v in rdn:
                    if k == "commonName":
                        cn = v
        with st.lock:
            st.headers.append(dict(self.headers))
            ok = (token is not None and token in st.tokens) or (cn is not None and cn in st.cert_users)
        if not ok:
            with st.lock:
                st.log.append((u.path, 401, token, cn))
            return self._send(
                401,
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "status": "Failure",
                    "message": "Unauthorized",
                    "reason": "Unauthorized",
                    "code": 401,
                },
            )
        status, body = self._route(u.path, q)
        with st.lock:
            st.log.append((u.path, status, token, cn))
        self._send(status, body)

    def _route(self, path: str, q: dict[str, str]) -> tuple[int, Any]:
        st = self.server.state
        parts = [p for p in path.split("/") if p]
        if path.rstrip("/") == "/version":
            return 200, VERSION
        sel = q.get("labelSelector", "")
        if parts == ["api", "v1", "namespaces"]:
            items = [
                {
                    "metadata": {"name": n, "labels": labels, "resourceVersion": "1"},
                    "spec": {},
                    "status": {"phase": "Active"},
                }
                for n, labels in sorted(st.namespaces.items())
                if _match(labels, sel)
            ]
            return 200, {
                "kind": "NamespaceList",
                "apiVersion": "v1",
                "metadata": {"resourceVersion": "1"},
                "items": items,
            }
        if parts == ["api", "v1", "secrets"] or (
            len(parts) == 5 and parts[:3] == ["api", "v1", "namespaces"] and parts[4] == "secrets"
        ):
            ns = parts[3] if len(parts) == 5 else None
            items = [
                s
                for s in st.secrets
                if (ns is None or s["metadata"]["namespace"] == ns)
                and _match(s["metadata"].get("labels") or {}, sel)
            ]
            return 200, {
                "kind": "SecretList",
                "apiVersion": "v1",
                "metadata": {"resourceVersion": "1"},
                "items": items,
            }
        if len(parts) == 6 and parts[:3] == ["api", "v1", "namespaces"] and parts[4] == "secrets":
            for s in st.secrets:
                if s["metadata"]["namespace"] == parts[3] and s["metadata"]["name"] == parts[5]:
                    return 200, s
            return 404, {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "reason": "NotFound",
                "code": 404,
                "message": f'secrets "{parts[5]}" not found',
            }
        return 404, {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "reason": "NotFound",
            "code": 404,
        }


class _TLSServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, ctx: ssl.SSLContext, state: ApiState) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.ctx = ctx
        self.state = state

    def get_request(self):
        sock, addr = self.socket.accept()
        return self.ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    def handle_error(self, request, client_address) -> None:
        pass  # failed handshakes (wrong CA tests) are expected


@dataclass
class ApiServer:
    url: str
    state: ApiState
    pki: PKI

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])


@pytest.fixture
def api_server(pki, tmp_path):
    cert_path = tmp_path / "server.pem"
    cert_path.write_bytes(pki.server_cert + pki.server_key)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(cert_path))
    ctx.verify_mode = ssl.CERT_OPTIONAL
    ctx.load_verify_locations(cadata=pki.client_ca.pem.decode())
    state = ApiState()
    srv = _TLSServer(ctx, state)
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    try:
        yield ApiServer(f"https://127.0.0.1:{srv.server_address[1]}", state, pki)
    finally:
        srv.shutdown()
        srv.server_close()
        t.join(5)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pid_gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1].startswith(("Z", "X"))
    except FileNotFoundError:
        return True
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False
