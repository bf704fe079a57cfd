"""The KEP-541 exec credential protocol, as client-go implements it, with asyncio subprocesses.

:func:`run_exec_plugin` runs a plugin once. :class:`ExecAuthenticator` adds what client-go's
``Authenticator`` does around it (credential caching until ``status.expirationTimestamp``, forever
when there is none; a refresh after a 401 that re-runs the plugin only if the rejected credential is
still the cached one) plus single-flight for concurrent callers, a timeout, metrics and errors that
carry the plugin's exit code and redacted, truncated stderr. :func:`get_authenticator` keeps one
authenticator per distinct (provider, cluster, exec configuration) for the whole process, like
client-go's global authenticator cache.

Secrets (tokens, private keys, the plugin's standard output) never appear in ``repr()``, logs or
exception messages.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import datetime as dt
import errno
import logging
import os
import signal
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import orjson

from . import _loop, _trust, metrics
from ._redact import redact, truncate
from .config import DEFAULT_EXEC_TIMEOUT, EXEC_API_VERSIONS, ClusterInfo, ExecConfig, InteractiveMode
from .errors import (
    ExecFailedError,
    ExecInteractiveError,
    ExecNotExecutableError,
    ExecNotFoundError,
    ExecOutputError,
    ExecPluginError,
    ExecTimeoutError,
    ExecUntrustedError,
)

log = logging.getLogger(__name__)

EXEC_INFO_ENV = "KUBERNETES_EXEC_INFO"
#: How many trailing arguments came from the ClusterProfile, so a plugin can tell them from the
#: provider file's. Set after the configured env; a profile can never set FLEETPLANE_* variables.
PROFILE_ARGC_ENV = "FLEETPLANE_EXEC_PROFILE_ARGC"
EXEC_CREDENTIAL_KIND = "ExecCredential"
EXEC_GROUP = "client.authentication.k8s.io"

#: A credential response is a few KiB; anything beyond this is not an ExecCredential.
MAX_STDOUT_BYTES = 1 << 20
#: How much of the plugin's stderr is kept, and how much of it is quoted in an error.
MAX_STDERR_BYTES = 64 << 10
STDERR_IN_ERROR_CHARS = 2000

_INSTALL_HELP = (
    "\n\nIt looks like you are trying to use a client-go credential plugin that is not installed.\n\n"
    "To learn more about this feature, consult the documentation available at:\n"
    "      https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins"
)


class Credential:
    """A credential returned by a plugin. Its ``repr()``/``str()`` never show the secret parts."""

    __slots__ = ("token", "client_certificate_data", "client_key_data", "expiration", "fetched_at")

    def __init__(
        self,
        *,
        token: str | None = None,
        client_certificate_data: str | None = None,
        client_key_data: str | None = None,
        expiration: float | None = None,
        fetched_at: float | None = None,
    ) -> None:
        self.token = token or None
        self.client_certificate_data = client_certificate_data or None
        self.client_key_data = client_key_data or None
        #: Seconds since the epoch; ``None``: valid for the process lifetime (client-go semantics).
        self.expiration = expiration
        self.fetched_at = time.time() if fetched_at is None else fetched_at

    @property
    def has_client_certificate(self) -> bool:
        return self.client_certificate_data is not None

    @property
    def kind(self) -> str:
        if self.token and self.client_certificate_data:
            return "token+client-certificate"
        return "token" if self.token else "client-certificate"

    @property
    def expiration_datetime(self) -> dt.datetime | None:
        return None if self.expiration is None else dt.datetime.fromtimestamp(self.expiration, dt.UTC)

    def expired(self, now: float | None = None) -> bool:
        """client-go: expired once ``now`` is strictly after ``expirationTimestamp``."""
        if self.expiration is None:
            return False
        return (time.time() if now is None else now) > self.expiration

    def same_certificate(self, other: Credential | None) -> bool:
        if other is None:
            return False
        return (self.client_certificate_data, self.client_key_data) == (
            other.client_certificate_data,
            other.client_key_data,
        )

    def same_material(self, other: Credential | None) -> bool:
        """Same token and same certificate/key (a retry with it would be pointless)."""
        return other is not None and self.token == other.token and self.same_certificate(other)

    def secrets(self) -> tuple[str, ...]:
        return tuple(s for s in (self.token, self.client_key_data) if s)

    def __repr__(self) -> str:
        exp = self.expiration_datetime
        return f"<Credential kind={self.kind} expires={exp.isoformat() if exp else 'never'}>"

    __str__ = __repr__

    def __reduce__(self):  # never pickle credential material by accident
        raise TypeError("Credential objects cannot be pickled")


# ----------------------------------------------------------------------------------------------
# Protocol pieces


def exec_credential_request(
    exec_config: ExecConfig, cluster: ClusterInfo | None, *, interactive: bool = False
) -> bytes:
    """The ``KUBERNETES_EXEC_INFO`` value (client-go LegacyCodec JSON field order)."""
    spec: dict[str, Any] = {}
    if exec_config.provide_cluster_info and cluster is not None:
        spec["cluster"] = cluster.to_exec_cluster()
    spec["interactive"] = interactive
    return orjson.dumps({"kind": EXEC_CREDENTIAL_KIND, "apiVersion": exec_config.api_version, "spec": spec})


def parse_rfc3339(value: str) -> float:
    """metav1.Time accepts RFC 3339 (``Z`` or an offset, optional fractional seconds)."""
    s = value.strip()
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    t = dt.datetime.fromisoformat(s)
    if t.tzinfo is None:
        raise ValueError("timestamp has no time zone")
    return t.timestamp()


def parse_exec_output(stdout: bytes, api_version: str) -> Credential:
    """Validate a plugin's standard output as client-go does and return the credential.

    Raises :class:`ExecOutputError` with a message that never quotes the output itself.
    """
    if not stdout.strip():
        raise ExecOutputError("decoding stdout: the plugin wrote nothing to standard output")
    try:
        obj = orjson.loads(stdout)
    except orjson.JSONDecodeError:
        import yaml  # client-go accepts YAML too

        try:
            obj = yaml.safe_load(stdout)
        except (yaml.YAMLError, ValueError, UnicodeDecodeError):
            raise ExecOutputError(
                f"decoding stdout: output is neither JSON nor YAML ({len(stdout)} bytes, not shown)"
            ) from None
    if not isinstance(obj, dict):
        raise ExecOutputError(
            f"decoding stdout: expected an ExecCredential object, got {type(obj).__name__} ({len(stdout)} bytes, not shown)"
        )
    got_version = obj.get("apiVersion")
    kind = obj.get("kind")
    if not got_version or not isinstance(got_version, str):
        raise ExecOutputError("decoding stdout: Object 'apiVersion' is missing")
    if not kind or not isinstance(kind, str):
        raise ExecOutputError("decoding stdout: Object 'Kind' is missing")
    if got_version != api_version:
        raise ExecOutputError(
            f"exec plugin is configured to use API version {api_version}, plugin returned version {got_version}"
        )
    if kind != EXEC_CREDENTIAL_KIND:
        raise ExecOutputError(f'decoding stdout: no kind "{kind}" is registered for version "{got_version}"')
    status = obj.get("status")
    if status is None:
        raise ExecOutputError("exec plugin didn't return a status field")
    if not isinstance(status, dict):
        raise ExecOutputError(f"decoding stdout: status must be an object, got {type(status).__name__}")

    def opt_str(key: str) -> str | None:
        v = status.get(key)
        if v is None or v == "":
            return None
        if not isinstance(v, str):
            raise ExecOutputError(f"decoding stdout: status.{key} must be a string, got {type(v).__name__}")
        return v

    token = opt_str("token")
    cert = opt_str("clientCertificateData")
    key = opt_str("clientKeyData")
    if not token and not cert and not key:
        raise ExecOutputError("exec plugin didn't return a token or cert/key pair")
    if (cert is None) != (key is None):
        raise ExecOutputError("exec plugin returned only certificate or key, not both")
    if cert is not None and key is not None:
        _check_key_pair(cert, key)

    expiration: float | None = None
    exp_raw = status.get("expirationTimestamp")
    if exp_raw not in (None, ""):
        if not isinstance(exp_raw, str):
            raise ExecOutputError("decoding stdout: status.expirationTimestamp must be an RFC 3339 string")
        try:
            expiration = parse_rfc3339(exp_raw)
        except ValueError:
            raise ExecOutputError(
                f"decoding stdout: status.expirationTimestamp {exp_raw[:64]!r} is not an RFC 3339 timestamp"
            ) from None
    return Credential(token=token, client_certificate_data=cert, client_key_data=key, expiration=expiration)


def _check_key_pair(cert_pem: str, key_pem: str) -> None:
    """Like Go's tls.X509KeyPair: parse both and check the key belongs to the (leaf) certificate."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    try:
        leaf = x509.load_pem_x509_certificate(cert_pem.encode())
    except (ValueError, TypeError):
        raise ExecOutputError(
            "failed parsing client key/certificate: clientCertificateData is not a PEM certificate"
        ) from None
    try:
        key = serialization.load_pem_private_key(key_pem.encode(), password=None)
    except (ValueError, TypeError):
        raise ExecOutputError(
            "failed parsing client key/certificate: clientKeyData is not an unencrypted PEM private key"
        ) from None
    pub = serialization.PublicFormat.SubjectPublicKeyInfo
    enc = serialization.Encoding.DER
    if key.public_key().public_bytes(enc, pub) != leaf.public_key().public_bytes(enc, pub):
        raise ExecOutputError("failed parsing client key/certificate: private key does not match public key")


def _secrets_in(stdout: bytes) -> list[str]:
    """Best effort: credential strings in (possibly invalid) plugin output, to scrub them from stderr."""
    try:
        obj = orjson.loads(stdout)
    except orjson.JSONDecodeError:
        return []
    if not isinstance(obj, dict) or not isinstance(obj.get("status"), dict):
        return []
    st = obj["status"]
    return [v for k in ("token", "clientKeyData") if isinstance(v := st.get(k), str)]


# ----------------------------------------------------------------------------------------------
# Running a plugin


async def _read_limited(
    stream: asyncio.StreamReader, limit: int, keep_tail: bool, on_overflow: Callable[[], None] | None = None
) -> tuple[bytes, bool]:
    """Read to EOF keeping at most ``limit`` bytes (the head, or the tail with ``keep_tail``).

    Always drains to EOF: a pipe left with unread data is never closed, and asyncio's
    ``Process.wait()`` waits for the pipes.
    """
    buf = bytearray()
    over = False
    while True:
        chunk = await stream.read(65536)
        if not chunk:
            return bytes(buf), over
        if over and not keep_tail:
            continue  # discard: the output is not an ExecCredential anyway
        buf += chunk
        if len(buf) > limit:
            if not over and on_overflow is not None:
                on_overflow()
            over = True
            if keep_tail:
                del buf[: len(buf) - limit]
            else:
                del buf[limit:]


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:  # already reaped: its pid (= group id) may have been reused
        return
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


async def run_exec_plugin(
    exec_config: ExecConfig,
    cluster: ClusterInfo | None = None,
    *,
    provider: str = "",
    exec_timeout: float | None = DEFAULT_EXEC_TIMEOUT,
    extra_env: Mapping[str, str] | None = None,
) -> Credential:
    """Run the plugin once and return its credential (no caching). Must run in an event loop.

    Error messages follow client-go (``exec: executable X not found``, ``exec: executable X failed
    with exit code N``, ``decoding stdout: ...``) prefixed with the provider and the cluster server.
    """
    server = cluster.server if cluster is not None else None
    prefix = f'exec plugin for provider "{provider}"' + (f" (cluster {server})" if server else "") + ": "
    cmd = exec_config.command
    ctx = {"provider": provider, "command": cmd, "server": server}

    if exec_config.api_version not in EXEC_API_VERSIONS:
        raise ExecOutputError(prefix + f'exec plugin: invalid apiVersion "{exec_config.api_version}"', **ctx)
    mode = exec_config.interactive_mode
    if mode is InteractiveMode.ALWAYS:
        raise ExecInteractiveError(
            prefix + "exec plugin cannot support interactive mode: standard input is not a terminal "
            "(interactiveMode is Always; fleetplane runs plugins without a terminal, use Never or IfAvailable)",
            **ctx,
        )
    interactive = False  # Never; IfAvailable without a terminal

    try:
        path = _trust.resolve_command(cmd)
        if exec_config.verify_permissions:
            _trust.check_permissions(path)
    except _trust.UntrustedPlugin as e:
        raise ExecUntrustedError(
            prefix + f"exec: executable {cmd} cannot be run: {e.args[0]}", **ctx
        ) from None
    except FileNotFoundError as e:
        msg = f"exec: executable {cmd} not found ({e.args[0]})" + _INSTALL_HELP
        if exec_config.install_hint:
            msg += f"\n\n{exec_config.install_hint}"
        raise ExecNotFoundError(prefix + msg, **ctx) from None
    except PermissionError as e:
        raise ExecNotExecutableError(
            prefix + f"exec: executable {cmd} cannot be run: {e.args[0]}", **ctx
        ) from None

    env = dict(os.environ)
    if extra_env:
        env.update(extra_env)
    env.update(exec_config.env)
    env[PROFILE_ARGC_ENV] = str(len(exec_config.args) - len(exec_config.operator_args))
    env[EXEC_INFO_ENV] = exec_credential_request(exec_config, cluster, interactive=interactive).decode()

    try:
        proc = await asyncio.create_subprocess_exec(
            cmd,
            *exec_config.args,
            executable=path,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            start_new_session=True,  # own process group: a timeout kills the plugin's children too
            close_fds=True,
        )
    except OSError as e:
        reason = e.strerror or str(e)
        if e.errno == errno.ENOENT:
            reason += " (is the interpreter in its #! line installed?)"
        elif e.errno == errno.ENOEXEC:
            reason += " (not a binary and no #! line)"
        raise ExecNotExecutableError(
            prefix + f"exec: executable {cmd} cannot be run: {reason}", **ctx
        ) from None

    out_stream, err_stream = proc.stdout, proc.stderr
    assert out_stream is not None and err_stream is not None

    async def communicate() -> tuple[tuple[bytes, bool], tuple[bytes, bool]]:
        out, err = await asyncio.gather(
            _read_limited(out_stream, MAX_STDOUT_BYTES, keep_tail=False, on_overflow=lambda: _kill_group(proc)),
            _read_limited(err_stream, MAX_STDERR_BYTES, keep_tail=True),
        )
        await proc.wait()
        return out, err

    comm = asyncio.ensure_future(communicate())
    try:
        (stdout, stdout_over), (stderr_b, _) = await asyncio.wait_for(asyncio.shield(comm), exec_timeout)
    except TimeoutError:
        _kill_group(proc)
        # the group is dead: the pipes reach EOF and the process is reaped (bounded, in case a
        # grandchild escaped the process group and keeps a pipe open)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(comm, 5)
        raise ExecTimeoutError(
            prefix + f"exec: executable {cmd} did not finish within {exec_timeout:g}s and was killed", **ctx
        ) from None
    except asyncio.CancelledError:
        _kill_group(proc)
        comm.cancel()
        raise

    stderr = stderr_b.decode("utf-8", "replace")
    rc = proc.returncode
    if stdout_over:
        raise ExecOutputError(
            prefix + f"decoding stdout: output exceeds {MAX_STDOUT_BYTES} bytes, not an ExecCredential", **ctx
        )
    if rc != 0:
        scrubbed = truncate(redact(stderr, _secrets_in(stdout)).strip(), STDERR_IN_ERROR_CHARS)
        if rc is not None and rc < 0:
            try:
                sig = signal.Signals(-rc).name
            except ValueError:
                sig = str(-rc)
            msg = f"exec: executable {cmd} was killed by signal {sig}"
        else:
            msg = f"exec: executable {cmd} failed with exit code {rc}"
        if scrubbed:
            msg += f"; stderr: {scrubbed}"
        raise ExecFailedError(prefix + msg, exit_code=rc if rc is not None else -1, stderr=scrubbed, **ctx)
    try:
        cred = parse_exec_output(stdout, exec_config.api_version)
    except ExecOutputError as e:
        scrubbed = truncate(redact(stderr, _secrets_in(stdout)).strip(), STDERR_IN_ERROR_CHARS)
        msg = prefix + str(e) + (f"; stderr: {scrubbed}" if scrubbed else "")
        raise ExecOutputError(msg, **ctx) from None
    if stderr.strip() and log.isEnabledFor(logging.DEBUG):
        log.debug(
            "%sstderr: %s", prefix, truncate(redact(stderr, cred.secrets()).strip(), STDERR_IN_ERROR_CHARS)
        )
    return cred


def run_exec_plugin_sync(
    exec_config: ExecConfig, cluster: ClusterInfo | None = None, **kwargs: Any
) -> Credential:
    """Blocking wrapper of :func:`run_exec_plugin` (runs on the library's exec loop)."""
    if _loop.in_exec_thread():
        raise RuntimeError("run_exec_plugin_sync() called from the exec loop thread")
    return _loop.submit(run_exec_plugin(exec_config, cluster, **kwargs)).result()


def _result_label(exc: BaseException | None) -> str:
    if exc is None:
        return "success"
    if isinstance(exc, ExecUntrustedError):
        return "untrusted"
    if isinstance(exc, ExecNotFoundError | ExecNotExecutableError):
        return "not_found"
    if isinstance(exc, ExecFailedError):
        return "exit_error"
    if isinstance(exc, ExecTimeoutError):
        return "timeout"
    if isinstance(exc, ExecOutputError):
        return "invalid_output"
    if isinstance(exc, ExecInteractiveError):
        return "interactive_unsupported"
    return "error"


# ----------------------------------------------------------------------------------------------
# Authenticator: cache + single flight + refresh


class ExecAuthenticator:
    """Caches the credential of one (cluster, exec configuration); safe from any thread or event loop.

    * :meth:`get_credential` / :meth:`get_credential_sync` return the cached credential while it is
      valid (until ``expirationTimestamp``, or forever without one), otherwise run the plugin. All
      concurrent callers share one execution (single flight); a caller being cancelled does not
      cancel the execution the others wait for.
    * :meth:`invalidate` drops the cached credential. Pass the credential a request was *rejected
      with* (HTTP 401): if the cache already holds a newer one, nothing happens, so a burst of 401s
      triggers a single re-execution (client-go ``maybeRefreshCreds``).
    * ``clock`` (seconds since the epoch) can be replaced, e.g. by tests.
    """

    def __init__(
        self,
        exec_config: ExecConfig,
        cluster: ClusterInfo | None,
        *,
        provider: str = "",
        timeout: float = DEFAULT_EXEC_TIMEOUT,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.exec_config = exec_config
        self.cluster = cluster
        self.provider = provider
        self.timeout = timeout
        self.clock = clock
        self._lock = threading.Lock()
        self._cred: Credential | None = None
        self._inflight: concurrent.futures.Future[Credential] | None = None
        self._listeners: list[Callable[[Credential | None, Credential], None]] = []
        #: Number of plugin executions started by this authenticator (successful or not).
        self.exec_count = 0
        _ALL.add(self)

    @property
    def server(self) -> str | None:
        return self.cluster.server if self.cluster else None

    def peek(self) -> Credential | None:
        """The cached credential if still valid, without ever running the plugin."""
        with self._lock:
            c = self._cred
        return c if c is not None and not c.expired(self.clock()) else None

    def _acquire(self) -> Credential | concurrent.futures.Future[Credential]:
        with self._lock:
            c = self._cred
            if c is not None and not c.expired(self.clock()):
                metrics.observe_cache(self.provider, "hit")
                return c
            if self._inflight is not None:
                metrics.observe_cache(self.provider, "shared")
                return self._inflight
            metrics.observe_cache(self.provider, "miss")
            self.exec_count += 1
            # _fetch takes self._lock when done, so it cannot finish before _inflight is set.
            self._inflight = _loop.submit(self._fetch())
            return self._inflight

    async def get_credential(self) -> Credential:
        r = self._acquire()
        if isinstance(r, Credential):
            return r
        return await asyncio.shield(asyncio.wrap_future(r))

    def get_credential_sync(self) -> Credential:
        if _loop.in_exec_thread():
            raise RuntimeError("get_credential_sync() called from the exec loop thread")
        r = self._acquire()
        if isinstance(r, Credential):
            return r
        return r.result(timeout=self.timeout + 30)

    def invalidate(self, used: Credential | None = None) -> bool:
        """Drop the cached credential (only if it is ``used``, when given). Returns whether it did."""
        with self._lock:
            if self._cred is None:
                return False
            if used is not None and self._cred is not used:
                return False
            self._cred = None
            return True

    async def refresh(self, used: Credential | None = None) -> Credential:
        """After a 401 with ``used``: re-run the plugin unless that already happened; return the new one."""
        self.invalidate(used)
        return await self.get_credential()

    def refresh_sync(self, used: Credential | None = None) -> Credential:
        self.invalidate(used)
        return self.get_credential_sync()

    def add_listener(self, fn: Callable[[Credential | None, Credential], None]) -> None:
        """``fn(old, new)`` is called (in the exec thread) after every successful execution."""
        with self._lock:
            self._listeners.append(fn)

    async def _fetch(self) -> Credential:
        start = time.monotonic()
        cred: Credential | None = None
        exc: BaseException | None = None
        try:
            cred = await run_exec_plugin(
                self.exec_config, self.cluster, provider=self.provider, exec_timeout=self.timeout
            )
            return cred
        except BaseException as e:
            exc = e
            raise
        finally:
            elapsed = time.monotonic() - start
            with self._lock:
                self._inflight = None
                old = self._cred
                if cred is not None:
                    self._cred = cred
                listeners = list(self._listeners)
            metrics.observe_fetch(self.provider, _result_label(exc), elapsed)
            if cred is not None:
                exp = cred.expiration_datetime
                log.debug(
                    "obtained %s credential for provider %r (cluster %s) in %.3fs, expires %s",
                    cred.kind,
                    self.provider,
                    self.server,
                    elapsed,
                    exp.isoformat() if exp else "never",
                )
                for fn in listeners:
                    try:
                        fn(old, cred)
                    except Exception:  # a listener must not break credential delivery
                        log.exception("credential listener failed")
            elif isinstance(exc, ExecPluginError):
                log.debug("credential fetch for provider %r failed: %s", self.provider, exc)


_ALL: weakref.WeakSet[ExecAuthenticator] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    # An execution in flight in the parent will never finish in the child: forget it.
    for a in list(_ALL):
        a._lock = threading.Lock()
        a._inflight = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

_MAX_AUTHENTICATORS = 4096
_registry_lock = threading.Lock()
_registry: collections.OrderedDict[tuple, ExecAuthenticator] = collections.OrderedDict()


class ExecAccess(Protocol):
    """What running a plugin needs of an :class:`~.profile.AccessConfig` (which builds on this module)."""

    @property
    def provider(self) -> str: ...

    @property
    def cluster(self) -> ClusterInfo: ...

    @property
    def exec_config(self) -> ExecConfig: ...

    @property
    def exec_timeout(self) -> float: ...


def get_authenticator(access: ExecAccess) -> ExecAuthenticator:
    """The process-wide authenticator for ``access`` (equal configs share one; LRU-bounded)."""
    key = (access.provider, access.cluster, access.exec_config, access.exec_timeout)
    with _registry_lock:
        a = _registry.get(key)
        if a is not None:
            _registry.move_to_end(key)
            return a
        a = ExecAuthenticator(
            access.exec_config, access.cluster, provider=access.provider, timeout=access.exec_timeout
        )
        _registry[key] = a
        while len(_registry) > _MAX_AUTHENTICATORS:
            _registry.popitem(last=False)
        return a


def clear_authenticators() -> None:
    """Forget every cached authenticator and credential (tests, benchmarks, credential rotation drills)."""
    with _registry_lock:
        _registry.clear()


async def get_credential(access: ExecAccess) -> Credential:
    return await get_authenticator(access).get_credential()


def get_credential_sync(access: ExecAccess) -> Credential:
    return get_authenticator(access).get_credential_sync()
