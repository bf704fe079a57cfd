"""``fleetplane-secret-reader``: the KEP-4322 example plugin.

It returns the token stored in a Secret on the *hub*, in the consumer's namespace, named after the
cluster: the name comes from ``spec.cluster.config.clusterName``, i.e. the ClusterProfile's
``client.authentication.k8s.io/exec`` extension (the provider needs ``provideClusterInfo: true``)::

    status:
      accessProviders:
      - name: secretreader
        cluster:
          server: https://spoke-1.example:6443
          certificate-authority-data: ...
          extensions:
          - name: client.authentication.k8s.io/exec
            extension: {clusterName: spoke-1}

How it finds the hub (first match wins):

1. ``--kubeconfig PATH``;
2. ``$FLEETPLANE_HUB_KUBECONFIG``;
3. ``$KUBECONFIG`` (the first existing file of the list);
4. in-cluster service account (``$KUBERNETES_SERVICE_HOST`` and
   ``/var/run/secrets/kubernetes.io/serviceaccount``);
5. ``~/.kube/config``.

``--context`` picks a kubeconfig context (default: current-context). Supported hub credentials: token,
tokenFile, client certificate (data or file); exec users are not supported (a credential plugin
needing a credential plugin).

The Secret's namespace: ``--namespace``, else ``$FLEETPLANE_SECRETREADER_NAMESPACE``, else the
kubeconfig context's namespace, else the in-cluster namespace, else ``default`` (as upstream).
Its name: ``--name-format`` (default ``{clusterName}``); ``--cluster-name`` is used when the
ExecCredential carries no clusterName. Its data key: ``--key`` (default ``token``). RBAC: ``get`` on
``secrets`` in that namespace. ``--ttl SECONDS`` sets an expiry so the client re-reads the Secret
periodically (default: none, re-read only after an HTTP 401).
"""

from __future__ import annotations

import argparse
import base64
import binascii
import contextlib
import datetime as dt
import http.client
import json
import os
import socket
import ssl
import sys
import tempfile
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from ._protocol import PluginError, credential_json, parse_args, read_exec_info, run_plugin

NAME = "fleetplane-secret-reader"
ENV_HUB_KUBECONFIG = "FLEETPLANE_HUB_KUBECONFIG"
ENV_NAMESPACE = "FLEETPLANE_SECRETREADER_NAMESPACE"
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


@dataclass
class Hub:
    server: str
    ssl_context: ssl.SSLContext | None
    token: str | None
    namespace: str | None
    tls_server_name: str | None
    source: str


#: Options only the provider file may set (a ClusterProfile's additional-args may not).
OPERATOR_ONLY = frozenset(("kubeconfig", "context", "namespace", "key", "name_format", "timeout"))


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=NAME, description="Exec credential plugin reading a cluster token from a hub Secret."
    )
    p.add_argument(
        "--kubeconfig",
        help=f"hub kubeconfig (default: ${ENV_HUB_KUBECONFIG}, $KUBECONFIG, in-cluster, ~/.kube/config)",
    )
    p.add_argument("--context", help="kubeconfig context (default: current-context)")
    p.add_argument("--namespace", default=os.environ.get(ENV_NAMESPACE), help="namespace of the Secrets")
    p.add_argument("--key", default="token", help="data key holding the token (default: token)")
    p.add_argument(
        "--name-format", default="{clusterName}", help="Secret name format (default: {clusterName})"
    )
    p.add_argument("--cluster-name", help="cluster name when spec.cluster.config.clusterName is absent")
    p.add_argument("--ttl", type=float, metavar="SECONDS", help="report the token as expiring after SECONDS")
    p.add_argument("--timeout", type=float, default=10.0, help="hub request timeout in seconds (default: 10)")
    return p


def _b64(value: str, what: str) -> bytes:
    try:
        return base64.b64decode("".join(value.split()), validate=True)
    except (binascii.Error, ValueError):
        raise PluginError(f"hub kubeconfig: {what} is not valid base64") from None


def _load_pair(ctx: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    fd, path = tempfile.mkstemp(prefix=".fleetplane-secretreader-")  # 0600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(cert.rstrip(b"\n") + b"\n" + key.rstrip(b"\n") + b"\n")
        ctx.load_cert_chain(path)
    except ssl.SSLError:
        raise PluginError("hub kubeconfig: the client certificate/key cannot be loaded") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _read_file(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise PluginError(f"hub kubeconfig: cannot read {what} {path}: {e.strerror or e}") from None


def _hub_from_kubeconfig(path: str, context: str | None) -> Hub:
    import yaml

    raw = _read_file(path, "kubeconfig")
    try:
        kc = yaml.safe_load(raw)
    except yaml.YAMLError:
        raise PluginError(f"hub kubeconfig {path} is not valid YAML") from None
    if not isinstance(kc, dict):
        raise PluginError(f"hub kubeconfig {path} is not a kubeconfig")
    base = os.path.dirname(os.path.abspath(path))

    def named(section: str, name: str) -> dict:
        for item in kc.get(section) or []:
            if isinstance(item, dict) and item.get("name") == name:
                return item.get(section[:-1]) or {}
        raise PluginError(f"hub kubeconfig {path}: {section[:-1]} {name!r} not found")

    ctx_name = context or kc.get("current-context")
    if not ctx_name:
        raise PluginError(f"hub kubeconfig {path}: no current-context (pass --context)")
    ctx = named("contexts", ctx_name)
    cluster = named("clusters", ctx.get("cluster", ""))
    user = named("users", ctx["user"]) if ctx.get("user") else {}
    server = cluster.get("server")
    if not server:
        raise PluginError(f"hub kubeconfig {path}: cluster {ctx.get('cluster')!r} has no server")

    def rel(p: str) -> str:
        return p if os.path.isabs(p) else os.path.join(base, p)

    sslctx: ssl.SSLContext | None = None
    if server.startswith("https://"):
        try:
            if cluster.get("certificate-authority-data"):
                sslctx = ssl.create_default_context(
                    cadata=_b64(cluster["certificate-authority-data"], "certificate-authority-data").decode()
                )
            elif cluster.get("certificate-authority"):
                sslctx = ssl.create_default_context(cafile=rel(cluster["certificate-authority"]))
            else:
                sslctx = ssl.create_default_context()
        except (ssl.SSLError, OSError, UnicodeDecodeError):
            raise PluginError(f"hub kubeconfig {path}: the certificate authority cannot be loaded") from None
        if cluster.get("insecure-skip-tls-verify"):
            sslctx.check_hostname = False
            sslctx.verify_mode = ssl.CERT_NONE
        if user.get("client-certificate-data") or user.get("client-certificate"):
            cert = (
                _b64(user["client-certificate-data"], "client-certificate-data")
                if user.get("client-certificate-data")
                else _read_file(rel(user["client-certificate"]), "client-certificate")
            )
            if user.get("client-key-data"):
                key = _b64(user["client-key-data"], "client-key-data")
            elif user.get("client-key"):
                key = _read_file(rel(user["client-key"]), "client-key")
            else:
                raise PluginError(f"hub kubeconfig {path}: client certificate without a key")
            _load_pair(sslctx, cert, key)
    if user.get("exec") or user.get("auth-provider"):
        raise PluginError(
            f"hub kubeconfig {path}: exec/auth-provider users are not supported; use a token or a client certificate"
        )
    token = user.get("token")
    if not token and user.get("tokenFile"):
        token = _read_file(rel(user["tokenFile"]), "tokenFile").decode().strip()
    return Hub(
        server.rstrip("/"),
        sslctx,
        token or None,
        ctx.get("namespace"),
        cluster.get("tls-server-name"),
        f"kubeconfig {path}",
    )


def _hub_in_cluster() -> Hub:
    host, port = os.environ["KUBERNETES_SERVICE_HOST"], os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    if ":" in host:
        host = f"[{host}]"
    try:
        sslctx = ssl.create_default_context(cafile=os.path.join(SA_DIR, "ca.crt"))
        with open(os.path.join(SA_DIR, "token")) as f:
            token = f.read().strip()
    except (OSError, ssl.SSLError) as e:
        raise PluginError(f"in-cluster service account unusable: {e}") from None
    ns = None
    with contextlib.suppress(OSError), open(os.path.join(SA_DIR, "namespace")) as f:
        ns = f.read().strip() or None
    return Hub(f"https://{host}:{port}", sslctx, token, ns, None, "in-cluster service account")


def find_hub(kubeconfig: str | None, context: str | None) -> Hub:
    if kubeconfig:
        return _hub_from_kubeconfig(kubeconfig, context)
    if os.environ.get(ENV_HUB_KUBECONFIG):
        return _hub_from_kubeconfig(os.environ[ENV_HUB_KUBECONFIG], context)
    for p in (os.environ.get("KUBECONFIG") or "").split(os.pathsep):
        if p and os.path.exists(p):
            return _hub_from_kubeconfig(p, context)
    if os.environ.get("KUBERNETES_SERVICE_HOST") and os.path.exists(os.path.join(SA_DIR, "token")):
        return _hub_in_cluster()
    home = os.path.expanduser("~/.kube/config")
    if os.path.exists(home):
        return _hub_from_kubeconfig(home, context)
    raise PluginError(
        f"cannot find the hub: pass --kubeconfig, set ${ENV_HUB_KUBECONFIG} or $KUBECONFIG, or run in-cluster"
    )


class _HTTPSConnection(http.client.HTTPSConnection):
    """HTTPSConnection that can present a different SNI/verification name (tls-server-name)."""

    def __init__(self, host: str, port: int | None, *, server_name: str | None, **kw) -> None:
        super().__init__(host, port, **kw)
        self._server_name = server_name

    def connect(self) -> None:
        if not self._server_name:
            return super().connect()
        # typeshed does not declare these attributes, which http.client sets in __init__
        sock = socket.create_connection((self.host, self.port), self.timeout,
                                        self.source_address)  # type: ignore[attr-defined]
        self.sock = self._context.wrap_socket(sock, server_hostname=self._server_name)  # type: ignore[attr-defined]


def get_secret(hub: Hub, namespace: str, name: str, timeout: float) -> dict:
    u = urlsplit(hub.server)
    path = (
        u.path.rstrip("/") or ""
    ) + f"/api/v1/namespaces/{quote(namespace, safe='')}/secrets/{quote(name, safe='')}"
    if u.scheme not in ("https", "http"):
        raise PluginError(f"hub server {hub.server!r} is not an http(s) URL")
    if not u.hostname:
        raise PluginError(f"hub server {hub.server!r} has no host")
    if u.scheme == "https":
        conn: http.client.HTTPConnection = _HTTPSConnection(
            u.hostname, u.port, server_name=hub.tls_server_name, context=hub.ssl_context, timeout=timeout
        )
    else:
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    headers = {"Accept": "application/json", "User-Agent": NAME}
    if hub.token:
        headers["Authorization"] = f"Bearer {hub.token}"
    try:
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        body = resp.read()
    except (OSError, http.client.HTTPException) as e:
        raise PluginError(f"cannot reach the hub at {hub.server} ({hub.source}): {e}") from None
    finally:
        conn.close()
    if resp.status == 404:
        raise PluginError(f'secret "{namespace}/{name}" not found on the hub ({hub.server})')
    if resp.status != 200:
        msg = ""
        with contextlib.suppress(ValueError, AttributeError):
            msg = str(json.loads(body).get("message") or "")[:500]
        raise PluginError(
            f'reading secret "{namespace}/{name}" from the hub ({hub.server}, {hub.source}) failed: '
            f"HTTP {resp.status} {resp.reason}" + (f": {msg}" if msg else "")
        )
    try:
        return json.loads(body)
    except ValueError:
        raise PluginError(f"the hub returned invalid JSON for secret {namespace}/{name}") from None


def produce(argv: list[str] | None = None) -> str:
    args = parse_args(_parser(), argv, OPERATOR_ONLY)
    info = read_exec_info()
    cluster_name = info.config_value("clusterName") or args.cluster_name
    if not isinstance(cluster_name, str) or not cluster_name:
        if info.cluster is None:
            raise PluginError(
                "missing ExecCredential.Spec.Cluster (set provideClusterInfo: true) and no --cluster-name"
            )
        raise PluginError(
            "missing clusterName in ExecCredential.Spec.Cluster.Config (the client.authentication.k8s.io/exec extension)"
        )
    try:
        secret_name = args.name_format.format(clusterName=cluster_name)
    except (KeyError, IndexError, ValueError):
        raise PluginError(
            f"invalid --name-format {args.name_format!r} (only {{clusterName}} is available)"
        ) from None
    hub = find_hub(args.kubeconfig, args.context)
    namespace = args.namespace or hub.namespace or "default"
    secret = get_secret(hub, namespace, secret_name, args.timeout)
    data = secret.get("data") or {}
    if not data.get(args.key):
        raise PluginError(f'secret "{namespace}/{secret_name}" has no data key {args.key!r}')
    try:
        token = base64.b64decode(data[args.key], validate=True).decode("utf-8").strip()
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise PluginError(
            f'secret "{namespace}/{secret_name}" key {args.key!r} is not a UTF-8 token'
        ) from None
    if not token:
        raise PluginError(f'secret "{namespace}/{secret_name}" key {args.key!r} is empty')
    expiration = None
    if args.ttl is not None:
        if args.ttl <= 0:
            raise PluginError("--ttl must be positive")
        expiration = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=args.ttl)
    return credential_json(info.api_version, token=token, expiration=expiration)


def main(argv: list[str] | None = None) -> int:
    return run_plugin(NAME, lambda: produce(argv))


if __name__ == "__main__":
    sys.exit(main())
