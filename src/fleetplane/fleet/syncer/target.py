"""Where an API server is and how to authenticate to it: :class:`ApiTarget`."""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml


def _b64(value: str) -> str:
    return base64.b64decode(value).decode()


def _read(path: str, base: Path | None) -> str:
    p = Path(os.path.expanduser(path))
    if not p.is_absolute() and base is not None:
        p = base / p
    return p.read_text()


@dataclass(frozen=True)
class ApiTarget:
    """One API server endpoint: the URL (for the hub including ``/clusters/<logical-cluster>``),
    the CA bundle (PEM text), and a bearer token or a client certificate and key (PEM text).

    ``insecure`` skips TLS verification (kubeconfig ``insecure-skip-tls-verify``).
    """

    server: str
    ca_data: str | None = None
    token: str | None = None
    client_cert_data: str | None = None
    client_key_data: str | None = None
    insecure: bool = False
    tls_server_name: str | None = None

    def __post_init__(self) -> None:
        if not self.server or urlsplit(self.server).scheme not in ("http", "https"):
            raise ValueError(f"server must be an http(s) URL, got {self.server!r}")
        if bool(self.client_cert_data) != bool(self.client_key_data):
            raise ValueError("client_cert_data and client_key_data go together")
        object.__setattr__(self, "server", self.server.rstrip("/"))

    def __repr__(self) -> str:  # never print credentials
        auth = "token" if self.token else "client-cert" if self.client_cert_data else "none"
        return f"ApiTarget(server={self.server!r}, auth={auth}, insecure={self.insecure})"

    @property
    def logical_cluster(self) -> str | None:
        """The logical cluster the URL is scoped to (``.../clusters/<name>``), if any."""
        parts = urlsplit(self.server).path.rstrip("/").split("/")
        if len(parts) >= 2 and parts[-2] == "clusters":
            return parts[-1]
        return None

    def for_logical_cluster(self, name: str) -> ApiTarget:
        """The same server scoped to logical cluster ``name`` (replacing any ``/clusters/<x>``)."""
        u = urlsplit(self.server)
        path = u.path.rstrip("/")
        parts = path.split("/")
        if len(parts) >= 2 and parts[-2] == "clusters":
            path = "/".join(parts[:-2])
        return replace(self, server=f"{u.scheme}://{u.netloc}{path}/clusters/{name}")

    @classmethod
    def from_kubeconfig(cls, kubeconfig: dict | str | os.PathLike, context: str | None = None) -> ApiTarget:
        """Read a kubeconfig (a parsed dict, a path, or YAML text) and take ``context`` (default:
        its current context). Supports ``certificate-authority(-data)``, ``token``/``tokenFile``,
        ``client-certificate(-data)``/``client-key(-data)``, ``insecure-skip-tls-verify`` and
        ``tls-server-name``; exec and auth-provider plugins are not (use fleetplane.access)."""
        base: Path | None = None
        if isinstance(kubeconfig, dict):
            cfg: Any = kubeconfig
        else:
            text = str(kubeconfig)
            if isinstance(kubeconfig, os.PathLike) or ("\n" not in text and Path(text).exists()):
                path = Path(os.path.expanduser(text))
                base = path.parent
                text = path.read_text()
            cfg = yaml.safe_load(text)
        if not isinstance(cfg, dict):
            raise ValueError("kubeconfig is not a mapping")
        ctx_name = context or cfg.get("current-context")
        contexts = {c.get("name"): c.get("context") or {} for c in cfg.get("contexts") or []}
        if not ctx_name or ctx_name not in contexts:
            raise ValueError(f"kubeconfig has no context {ctx_name!r}")
        ctx = contexts[ctx_name]
        clusters = {c.get("name"): c.get("cluster") or {} for c in cfg.get("clusters") or []}
        users = {u.get("name"): u.get("user") or {} for u in cfg.get("users") or []}
        cluster = clusters.get(ctx.get("cluster"))
        if cluster is None:
            raise ValueError(f"kubeconfig context {ctx_name!r} names unknown cluster {ctx.get('cluster')!r}")
        user = users.get(ctx.get("user"), {})
        if user.get("exec") or user.get("auth-provider"):
            raise ValueError("exec and auth-provider credentials are not supported here; pass a token or client certificate")
        ca = None
        if cluster.get("certificate-authority-data"):
            ca = _b64(cluster["certificate-authority-data"])
        elif cluster.get("certificate-authority"):
            ca = _read(cluster["certificate-authority"], base)
        token = user.get("token")
        if not token and user.get("tokenFile"):
            token = _read(user["tokenFile"], base).strip()
        cert = key = None
        if user.get("client-certificate-data"):
            cert = _b64(user["client-certificate-data"])
        elif user.get("client-certificate"):
            cert = _read(user["client-certificate"], base)
        if user.get("client-key-data"):
            key = _b64(user["client-key-data"])
        elif user.get("client-key"):
            key = _read(user["client-key"], base)
        return cls(server=cluster["server"], ca_data=ca, token=token or None, client_cert_data=cert,
                   client_key_data=key, insecure=bool(cluster.get("insecure-skip-tls-verify")),
                   tls_server_name=cluster.get("tls-server-name"))
