"""TLS helpers shared by the client integrations.

Client private keys returned by plugins stay in memory wherever the HTTP library accepts an
``ssl.SSLContext`` (aiohttp, httpx, kr8s): Python's ``ssl`` module only loads key pairs from a path, so
the pair is written to a 0600 file in a private 0700 directory (on tmpfs ``/dev/shm`` when
available), loaded, and unlinked immediately. urllib3 (the ``kubernetes`` sync client) re-reads its
``cert_file`` for every new connection, so there the pair lives in such a file for the client's
lifetime (:class:`CertFile`), is replaced atomically on rotation and removed when the client is
garbage-collected or the process exits.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import ssl
import tempfile
import threading
import urllib.request
import weakref
from urllib.parse import urlsplit

from .config import ClusterInfo
from .errors import ProfileError
from .execplugin import Credential

_dir_lock = threading.Lock()
_dir: str | None = None
_dir_pid: int | None = None


def private_dir() -> str:
    """A per-process 0700 directory for key material, removed at exit."""
    global _dir, _dir_pid
    with _dir_lock:
        if _dir is None or _dir_pid != os.getpid() or not os.path.isdir(_dir):
            base = None
            shm = "/dev/shm"
            if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK):
                base = shm
            d = tempfile.mkdtemp(prefix="fleetplane-access-", dir=base)
            os.chmod(d, 0o700)
            _dir, _dir_pid = d, os.getpid()
            atexit.register(shutil.rmtree, d, True)
        return _dir


def _write_private(data: bytes, target: str | None = None) -> str:
    d = private_dir()
    fd, tmp = tempfile.mkstemp(prefix=".key-", dir=d)  # mkstemp creates the file 0600
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if target is None:
        return tmp
    os.replace(tmp, target)  # atomic: a reader never sees half a cert or a cert with the old key
    return target


def _pair_pem(cred: Credential) -> bytes:
    assert cred.client_certificate_data and cred.client_key_data
    return (
        cred.client_certificate_data.rstrip("\n") + "\n" + cred.client_key_data.rstrip("\n") + "\n"
    ).encode()


def load_client_certificate(ctx: ssl.SSLContext, cred: Credential) -> None:
    """Load the plugin's certificate + key into ``ctx`` through a file that exists only briefly."""
    path = _write_private(_pair_pem(cred))
    try:
        ctx.load_cert_chain(path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


def ca_source(cluster: ClusterInfo) -> str | bytes | None:
    data = cluster.certificate_authority_data
    if not data:
        return None
    if b"-----BEGIN" in data:
        return data.decode("ascii", "replace")
    return data  # DER


def build_ssl_context(cluster: ClusterInfo, cred: Credential | None = None) -> ssl.SSLContext:
    """An SSL context for the cluster: its CA data (else the system roots), insecure-skip-tls-verify,
    and the plugin's client certificate if any. ``tls-server-name`` is applied per connection by the
    HTTP library (SNI + hostname check)."""
    try:
        ca = ca_source(cluster)
        ctx = ssl.create_default_context(cadata=ca) if ca is not None else ssl.create_default_context()
    except ssl.SSLError as e:
        raise ProfileError(
            f"cluster {cluster.server}: certificate-authority-data is not a usable certificate bundle ({e.reason or e})"
        ) from None
    if cluster.insecure_skip_tls_verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if cred is not None and cred.has_client_certificate:
        load_client_certificate(ctx, cred)
    return ctx


class CertFile:
    """A private file holding a certificate + key pair, for libraries that take a path."""

    def __init__(self) -> None:
        self.path = os.path.join(private_dir(), f"client-{os.getpid()}-{id(self):x}.pem")
        self._finalizer = weakref.finalize(self, _unlink, self.path)

    def write(self, cred: Credential) -> None:
        _write_private(_pair_pem(cred), self.path)

    def close(self) -> None:
        self._finalizer()

    def __deepcopy__(self, memo):  # shared by Configuration copies
        return self


def _unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def env_proxy_for(server: str) -> str | None:
    """The proxy the environment (HTTPS_PROXY, NO_PROXY...) selects for ``server``, as client-go's
    ``http.ProxyFromEnvironment`` does when ``proxy-url`` is empty."""
    parts = urlsplit(server)
    host = parts.hostname or ""
    proxies = urllib.request.getproxies()
    if not proxies:
        return None
    with contextlib.suppress(Exception):
        if urllib.request.proxy_bypass(host if parts.port is None else f"{host}:{parts.port}"):
            return None
    return proxies.get(parts.scheme or "https") or proxies.get("all")
