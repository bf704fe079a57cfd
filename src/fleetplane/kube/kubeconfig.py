"""Kubeconfigs -> :class:`ApiTarget`, the one description of an API server every client is built from.

:func:`parse_kubeconfig` raises :class:`KubeconfigError` with a message naming the field that is
wrong: it is what a Cluster's ``InvalidKubeConfig`` condition shows. A Cluster's kubeconfig must
carry its credentials inline, so file references (``certificate-authority``,
``client-certificate``, ``client-key``, ``tokenFile``) are refused unless ``allow_files`` (for
kubeconfigs the operator gave the process itself), and exec/auth-provider users are refused
(a controller does not run programs a Cluster names; :mod:`fleetplane.access` does that).
"""

from __future__ import annotations

import base64
import binascii
import copy
import difflib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

__all__ = ["ApiTarget", "KubeconfigError", "hub_base", "in_cluster_kubeconfig", "merge_kubeconfig_files", "parse_kubeconfig"]

_USER_FIELDS = ("token", "tokenFile", "client-certificate-data", "client-key-data", "client-certificate",
                "client-key", "username", "password", "exec", "auth-provider", "as", "as-uid", "as-groups",
                "as-user-extra", "impersonate", "impersonate-uid", "impersonate-groups", "impersonate-user-extra",
                "extensions")
_CLUSTER_FIELDS = ("server", "certificate-authority-data", "certificate-authority", "insecure-skip-tls-verify",
                   "tls-server-name", "proxy-url", "disable-compression", "extensions")
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


class KubeconfigError(ValueError):
    """The kubeconfig cannot be used (the Cluster condition reason ``InvalidKubeConfig``)."""


def hub_base(server: str) -> str:
    """The URL without a ``/clusters/<name>`` suffix (``https://h:6443/clusters/root`` -> ``https://h:6443``)."""
    server = server.rstrip("/")
    head, sep, tail = server.rpartition("/clusters/")
    return head if sep and "/" not in tail else server


@dataclass(frozen=True)
class ApiTarget:
    """One API server and how to authenticate to it (one kubeconfig context). For the hub, ``server``
    may end in ``/clusters/<logical-cluster>``. PEM data is text; ``repr()`` never shows credentials."""

    server: str
    ca_data: str | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)
    client_cert_data: str | None = field(default=None, repr=False)
    client_key_data: str | None = field(default=None, repr=False)
    insecure: bool = False
    tls_server_name: str | None = None
    proxy_url: str | None = None
    namespace: str | None = None
    #: fields of the kubeconfig that were not understood (reported, not fatal when credentials exist)
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.server or urlsplit(self.server).scheme not in ("http", "https"):
            raise ValueError(f"server must be an http(s) URL, got {self.server!r}")
        if bool(self.client_cert_data) != bool(self.client_key_data):
            raise ValueError("client_cert_data and client_key_data go together")
        object.__setattr__(self, "server", self.server.rstrip("/"))

    def __repr__(self) -> str:
        auth = "token" if self.token else "client-cert" if self.client_cert_data else "none"
        return f"ApiTarget(server={self.server!r}, auth={auth}, insecure={self.insecure})"

    @property
    def ca_pem(self) -> bytes | None:
        return self.ca_data.encode() if self.ca_data else None

    @property
    def logical_cluster(self) -> str | None:
        """The logical cluster the URL is scoped to (``.../clusters/<name>``), if any."""
        head, sep, tail = self.server.rpartition("/clusters/")
        return tail if sep and tail and "/" not in tail else None

    @property
    def base(self) -> str:
        """The server without a ``/clusters/<name>`` suffix."""
        return hub_base(self.server)

    def with_server(self, server: str) -> ApiTarget:
        return replace(self, server=server)

    def for_logical_cluster(self, name: str) -> ApiTarget:
        """The same server scoped to logical cluster ``name`` (replacing any ``/clusters/<x>``)."""
        return self.with_server(f"{self.base}/clusters/{name}")

    @classmethod
    def from_kubeconfig(cls, kubeconfig: Mapping[str, Any] | str | os.PathLike[str], context: str | None = None) -> ApiTarget:
        """A kubeconfig the operator gave this process (a dict, a path, or YAML text): files allowed."""
        if isinstance(kubeconfig, str) and "\n" not in kubeconfig and os.pathsep in kubeconfig:
            kubeconfig = merge_kubeconfig_files(kubeconfig.split(os.pathsep))
        if isinstance(kubeconfig, (str, os.PathLike)) and not isinstance(kubeconfig, Path):
            text = os.fspath(kubeconfig)
            if isinstance(kubeconfig, os.PathLike) or ("\n" not in text and Path(text).expanduser().exists()):
                kubeconfig = Path(text).expanduser()
        return parse_kubeconfig(kubeconfig, context, allow_files=True)

    def to_kubeconfig(self, name: str = "cluster") -> dict[str, Any]:
        """A self-contained kubeconfig (inline credentials) for this target."""
        cluster: dict[str, Any] = {"server": self.server}
        if self.ca_data:
            cluster["certificate-authority-data"] = _b64enc(self.ca_data)
        if self.insecure:
            cluster["insecure-skip-tls-verify"] = True
        if self.tls_server_name:
            cluster["tls-server-name"] = self.tls_server_name
        if self.proxy_url:
            cluster["proxy-url"] = self.proxy_url
        user: dict[str, Any] = {}
        if self.token:
            user["token"] = self.token
        if self.client_cert_data and self.client_key_data:
            user["client-certificate-data"] = _b64enc(self.client_cert_data)
            user["client-key-data"] = _b64enc(self.client_key_data)
        ctx: dict[str, Any] = {"cluster": name, "user": name}
        if self.namespace:
            ctx["namespace"] = self.namespace
        return {"apiVersion": "v1", "kind": "Config", "clusters": [{"name": name, "cluster": cluster}],
                "users": [{"name": name, "user": user}], "contexts": [{"name": name, "context": ctx}],
                "current-context": name}


def _b64enc(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _b64(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise KubeconfigError(f"{where} must be a non-empty base64 string")
    try:
        return base64.b64decode("".join(value.split()), validate=True).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        raise KubeconfigError(f"{where} is not valid base64") from None


def _did_you_mean(key: str, known: tuple[str, ...]) -> str:
    words = sorted(key.lower().split("-"))
    close = [k for k in known if sorted(k.split("-")) == words]  # the same words in another order
    close = close or difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    return f"{key!r} (did you mean {close[0]!r}?)" if close else repr(key)


def _named(kc: Mapping[str, Any], section: str) -> dict[str, dict[str, Any]]:
    entries = kc.get(section)
    if entries is None:
        return {}
    if not isinstance(entries, list):
        raise KubeconfigError(f"{section} must be a list")
    out: dict[str, dict[str, Any]] = {}
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


_FILE_FIELDS = {"clusters": ("cluster", ("certificate-authority",)),
                "users": ("user", ("client-certificate", "client-key", "tokenFile"))}


def merge_kubeconfig_files(paths: list[str]) -> dict[str, Any]:
    """``KUBECONFIG=a:b`` as kubectl reads it: missing files are skipped; the first file to name a
    cluster, user or context, or to set current-context, wins; relative file references are
    resolved against the file that holds them."""
    merged: dict[str, Any] = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [], "contexts": []}
    seen: dict[str, set[str]] = {k: set() for k in ("clusters", "users", "contexts")}
    found = False
    for raw in paths:
        if not raw:
            continue
        path = Path(raw).expanduser()
        if not path.exists():
            continue
        doc, base = _load(path)
        found = True
        for section in seen:
            for entry in doc.get(section) or []:
                name = entry.get("name") if isinstance(entry, Mapping) else None
                if not isinstance(name, str) or name in seen[section]:
                    continue
                seen[section].add(name)
                entry = copy.deepcopy(dict(entry))
                inner, keys = _FILE_FIELDS.get(section, ("", ()))
                body = entry.get(inner) if inner else None
                if isinstance(body, dict) and base is not None:
                    for key in keys:
                        value = body.get(key)
                        if isinstance(value, str) and value and not os.path.isabs(os.path.expanduser(value)):
                            body[key] = str(base / value)
                merged[section].append(entry)
        if "current-context" not in merged and doc.get("current-context"):
            merged["current-context"] = doc["current-context"]
    if not found:
        raise KubeconfigError(f"none of the kubeconfig files exists: {os.pathsep.join(paths)}")
    return merged


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
                     allow_files: bool = False, base_dir: Path | None = None) -> ApiTarget:
    """The target of ``context`` (default: current-context; with no contexts at all, the only
    cluster and user). A ``str`` is YAML text; see the module docstring for what is refused."""
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

    def read_file(key: str, where: str, value: Any) -> str:
        if not allow_files:
            raise KubeconfigError(f"{where}.{key} refers to a file; a Cluster's kubeconfig must carry its "
                                  f"credentials inline (use {key}-data)" if key != "tokenFile" else
                                  f"{where}.tokenFile refers to a file; use token instead")
        path = Path(os.path.expanduser(str(value)))
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        try:
            return path.read_bytes().decode("utf-8", "replace")
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
    ca = None
    if cluster.get("certificate-authority-data"):
        ca = _b64(cluster["certificate-authority-data"], f"{cwhere}.certificate-authority-data")
    elif cluster.get("certificate-authority"):
        ca = read_file("certificate-authority", cwhere, cluster["certificate-authority"])
    if ca is not None and "-----BEGIN CERTIFICATE-----" not in ca:
        raise KubeconfigError(f"{cwhere}.certificate-authority-data is not a PEM certificate")
    insecure = cluster.get("insecure-skip-tls-verify") in (True, "true")

    for plugin in ("exec", "auth-provider"):
        if user.get(plugin):
            raise KubeconfigError(f"{uwhere}.{plugin}: credential plugins are not supported here; "
                                  "use a token or a client certificate")
    if user.get("username") or user.get("password"):
        raise KubeconfigError(f"{uwhere}: basic authentication (username/password) is not supported; "
                              "use a token or a client certificate")
    token = user.get("token") or None
    if token is not None and not isinstance(token, str):
        raise KubeconfigError(f"{uwhere}.token must be a string")
    if token is None and user.get("tokenFile"):
        token = read_file("tokenFile", uwhere, user["tokenFile"]).strip() or None
    cert: str | None = None
    key: str | None = None
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
    return ApiTarget(server=server, ca_data=ca, insecure=insecure, tls_server_name=cluster.get("tls-server-name") or None,
                     proxy_url=cluster.get("proxy-url") or None, token=token, client_cert_data=cert,
                     client_key_data=key, namespace=namespace, notes=notes)


def in_cluster_kubeconfig() -> dict[str, Any]:
    """A kubeconfig for the API server of the pod this process runs in (its service account)."""
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    if not host:
        raise KubeconfigError("not running in a cluster ($KUBERNETES_SERVICE_HOST is not set)")
    if ":" in host:
        host = f"[{host}]"
    try:
        token = Path(SA_DIR, "token").read_text().strip()
        ca = Path(SA_DIR, "ca.crt").read_text()
    except OSError as exc:
        raise KubeconfigError(f"the in-cluster service account is unusable: {exc}") from None
    return ApiTarget(server=f"https://{host}:{port}", ca_data=ca, token=token).to_kubeconfig("in-cluster")
