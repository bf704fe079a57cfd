"""Build and run the hub: storage, registry, the request pipeline, credentials, kubeconfig and
uvicorn, in one process. :func:`fleetplane.hub.build_hub` is the way in: it gathers what the
plugins contribute and calls :func:`build`."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import gc
import logging
import os
import resource
import signal
import ssl
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import FrameType

import uvicorn
from prometheus_client import Counter, Gauge

from ..controllermanager import MODES as CONTROLLER_MODES
from ..controllermanager import PROCESS_STOP_TIMEOUT, STOP_GRACE, Supervisor, SupervisorMetrics
from ..pipeline.admission.policies import PolicyMetrics
from ..pipeline.admission.policies_source import install as install_validating_admission_policy
from ..pipeline.admission.webhooks import MutatingWebhooks, ValidatingWebhooks, WebhookMetrics, WebhookPlugin
from ..pipeline.audit import AuditLog, load_policy, parse_policy
from ..pipeline.authentication.chain import AnonymousPolicy, Authenticator, StaticTokens, TokenAuthenticator
from ..pipeline.authentication.errors import AuthenticationError
from ..pipeline.authentication.oidc import Authenticators as OIDCAuthenticators
from ..pipeline.authentication.oidc import load_authentication_config
from ..pipeline.authentication.reviews import AuthenticationReviews
from ..pipeline.authentication.serviceaccount import (
    ServiceAccountAuthenticator,
    TokenIssuer,
    load_or_create_signing_key,
)
from ..pipeline.authentication.tokenfile import load_token_file
from ..pipeline.authentication.tokens import CacheLookup, CatchingUp, TokenRequestStorage, TokenSecrets
from ..pipeline.authorization import bootstrap
from ..pipeline.authorization.aggregation import ClusterRoleAggregation
from ..pipeline.authorization.authorizer import AlwaysAllow
from ..pipeline.authorization.authorizer import Chain as AuthorizerChain
from ..pipeline.authorization.escalation import EscalationPlugin
from ..pipeline.authorization.membership import MembershipAuthorizer
from ..pipeline.authorization.rbac import RBACAuthorizer
from ..pipeline.authorization.reviews import Reviews as AuthorizationReviews
from ..pipeline.authorization.scope import LabelScope, LabelScopeAdmission
from ..pipeline.flowcontrol.config import FlowControlConfig
from ..pipeline.user import CONTROLLERS, MASTERS, UserInfo
from ..pipeline.webhook import ServiceResolver, WebhookClient
from ..plugin import Contributions, Controller, ControllerContext
from ..registry.catalog import ROOT
from ..registry.hub import Registry
from ..registry.policy import CachePolicySource
from ..storage.encryption import EncryptedStore, load_encryption_config
from ..storage.interface import Store
from ..storage.open import open_store
from ..storage.sqlite import SQLiteStore
from .app import GIT_VERSION, HubApp, ServerConfig
from .certs import (
    Credentials,
    client_kubeconfig,
    ensure_credentials,
    kubeconfig,
    private_dir,
    write_kubeconfig,
)
from .filters import Pipeline
from .metrics import StoreMetrics
from .tls import ConnectionLimits, protocol_class

log = logging.getLogger("fleetplane.server")


@dataclass
class HubConfig:
    """How one hub serves (kube-apiserver's flags); what it serves comes from its plugins."""

    data_dir: Path = Path(".fleetplane")
    bind: str = "127.0.0.1"
    port: int = 6443
    tls: bool = True
    auth: bool = True
    git_version: str = GIT_VERSION
    kubeconfig_clusters: list[str] = field(default_factory=lambda: ["root"])
    bookmark_interval: float = 60.0
    history_retention: float = 300.0
    #: the store: "" (SQLite in <data-dir>/hub.db), "sqlite:PATH" or "etcd:URL[,URL...]"
    storage: str = ""
    #: TLS to etcd: CA bundle, client certificate and key (PEM files)
    etcd_cacert: str | None = None
    etcd_cert: str | None = None
    etcd_key: str | None = None
    #: how long one etcd request may take before it fails with 504
    etcd_request_timeout: float = 5.0
    #: kube's --token-auth-file (CSV: token,user,uid[,"group1,group2"])
    token_auth_file: str | None = None
    #: kube's --anonymous-auth: requests without credentials are system:anonymous
    anonymous_auth: bool = True
    #: kube's --authentication-config (AuthenticationConfiguration: JWT authenticators, anonymous)
    authentication_config: str | None = None
    service_account_max_token_expiration: float = 86400.0
    #: the base of every logical cluster's issuer URL (``<base>/clusters/<name>``); default the
    #: hub's own URL. Replicas behind one address share it (kube's --service-account-issuer).
    service_account_issuer: str | None = None
    #: kube's --encryption-provider-config (EncryptionConfiguration)
    encryption_provider_config: str | None = None
    audit_log_path: str | None = None
    audit_policy_file: str | None = None
    #: kube's --disable-admission-plugins: plugin names (e.g. ServiceAccount, DefaultTolerationSeconds)
    disable_admission_plugins: tuple[str, ...] = ()
    #: where webhook clientConfig.service references are dialled: ``<name>.<namespace>.svc`` -> host
    #: (the hub serves no Services yet); a name not listed is looked up in DNS
    webhook_service_hosts: dict[str, str] = field(default_factory=dict)
    #: Go's ReadHeaderTimeout (kube-apiserver: 32 s): a request's headers must be complete within it
    request_header_timeout: float = 32.0
    #: Go's IdleTimeout (kube-apiserver: 90 s): how long a kept-alive connection may wait for a request
    idle_timeout: float = 90.0
    #: open connections in all (0: no cap); never more than the process's file descriptors allow
    max_connections: int = 10000
    #: open connections from one client address (0: no cap)
    max_connections_per_client: int = 2000
    #: requests on one connection before its response says Connection: close (0: no limit)
    max_requests_per_connection: int = 1000
    #: API Priority and Fairness: its seats are the sum of kube's two in-flight limits (a tenth of
    #: kube's 400 + 200: one event loop, see docs/scaling.md)
    enable_priority_and_fairness: bool = True
    max_requests_inflight: int = 40
    max_mutating_requests_inflight: int = 20
    #: where the plugins' controllers run (controllermanager.MODES): "in-process" (this process's
    #: event loop), "separate" (a controller-manager process, started with
    #: ``controller_manager_command`` plus a ``--controller-kubeconfig NAME=PATH`` per controller),
    #: "none" (not at all: an operator runs ``fleetplane controller-manager`` elsewhere)
    controllers: str = "in-process"
    controller_manager_command: tuple[str, ...] = ()
    #: "separate": how many controller-manager processes (each gets ``--shard=<i> --shards=<n>``)
    controller_manager_shards: int = 1


class _Server(uvicorn.Server):
    """uvicorn, plus: on SIGTERM/SIGINT cancel the background controllers and end open watches
    at once, so shutdown is quick, and exit 0 after a graceful SIGTERM shutdown (uvicorn
    re-raises every signal it caught once it has shut down).

    The signals are this class's own: it replaces ``capture_signals``, the public method
    ``uvicorn.Server.serve`` wraps the server's life in, and sets the public ``should_exit`` and
    ``force_exit`` flags itself (uvicorn is pinned in pyproject.toml: the method is part of its
    ``Server`` class, not of a documented API)."""

    def __init__(self, config: uvicorn.Config, app: HubApp) -> None:
        super().__init__(config)
        self.app = app
        self.background_tasks: list[asyncio.Task] = []
        #: the signals received, in order; re-raised after shutdown (SIGTERM excepted)
        self.received: list[int] = []
        self._draining: asyncio.Task | None = None
        #: the controller-manager processes' supervisors (one per shard), when the controllers run in them
        self.supervisors: list[Supervisor] = []

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield  # signals reach the main thread only (uvicorn does the same)
            return
        # signal.signal, not loop.add_signal_handler: the previous handlers come back afterwards
        original = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)
        for received in reversed(self.received):  # as uvicorn: the process ends as the signal says (LIFO)
            if received != signal.SIGTERM:
                signal.raise_signal(received)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        loop = asyncio.get_event_loop()
        self.app.ready = False
        tasks = [t for t in self.background_tasks if not t.done()]
        if tasks and self._draining is None:
            # The controllers stop first, while the server still answers them: they release
            # their Leases (a successor takes over at once, not a lease duration later) and
            # finish their writes. A second signal does not wait for them.
            loop.call_soon_threadsafe(self._drain, tasks, sig)
            return
        self._exit(loop, sig)

    def _drain(self, tasks: list[asyncio.Task], sig: int) -> None:
        for task in tasks:
            task.cancel()

        async def then_exit() -> None:
            # a controller-manager process gets its controllers' grace and a second to exit
            await asyncio.wait(tasks, timeout=PROCESS_STOP_TIMEOUT + 0.5 if self.supervisors else BACKGROUND_STOP_TIMEOUT)
            self._exit(asyncio.get_running_loop(), sig)

        self._draining = asyncio.get_running_loop().create_task(then_exit())

    def _exit(self, loop: asyncio.AbstractEventLoop, sig: int) -> None:
        for task in self.background_tasks:
            loop.call_soon_threadsafe(task.cancel)
        loop.call_soon_threadsafe(self.app.registry.cache.shut_down)
        self.received.append(sig)
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True  # a second Ctrl-C: do not wait for open connections
        else:
            self.should_exit = True


#: the interpreter's thread switch interval once the hub serves (see Hub._start_background)
SWITCH_INTERVAL = 0.0005
#: how long SIGTERM waits for the controllers running in the hub to stop before the server stops
BACKGROUND_STOP_TIMEOUT = STOP_GRACE


#: the identity of the hub's admin token (admin.kubeconfig): a member of system:masters
ADMIN = UserInfo("admin", "", (MASTERS,))


@dataclass
class Reviews:
    """The review APIs' storage, registered with the types before the authorizer exists."""

    authorization: AuthorizationReviews = field(default_factory=AuthorizationReviews)
    authentication: AuthenticationReviews = field(default_factory=AuthenticationReviews)

    def types(self) -> list:
        return [*self.authorization.types(), *self.authentication.types()]


def service_accounts(opts: HubConfig, creds: Credentials, registry: Registry, server_url: str) -> TokenIssuer:
    """ServiceAccount tokens: each logical cluster its own issuer (``<server>/clusters/<name>``)
    signing with one key; TokenRequest on ``serviceaccounts/token``; legacy token Secrets filled
    by admission."""
    issuer = TokenIssuer(load_or_create_signing_key(creds.ca_key.parent / "service-account.key"),
                         opts.service_account_issuer or server_url,
                         int(opts.service_account_max_token_expiration))
    lookup = CacheLookup(registry.cache)
    sa_rt = registry.catalog.lookup(ROOT, "", "v1", "serviceaccounts")
    assert sa_rt is not None
    sa_rt.subresources = (*sa_rt.subresources, "token")
    sa_rt.subresource_rest["token"] = TokenRequestStorage(issuer, lookup, registry.cache.sync)
    registry.store.admission.add(TokenSecrets(issuer, lookup, creds.ca_cert.read_bytes()))
    return issuer


def build_pipeline(opts: HubConfig, creds: Credentials, registry: Registry, reviews: Reviews,
                   issuer: TokenIssuer) -> tuple[Pipeline, OIDCAuthenticators | None]:
    """Authentication and authorization for ``opts``: client certificates, the admin token,
    the token file, ServiceAccount tokens, OIDC issuers; then system:masters, membership of the
    logical cluster, RBAC. RBAC's escalation check joins the admission chain; the bootstrap
    policy is served (shared) in every logical cluster."""
    sa_tokens = ServiceAccountAuthenticator(issuer, CacheLookup(registry.cache))
    tokens: list[TokenAuthenticator] = [StaticTokens({creds.token: ADMIN})]
    if opts.token_auth_file:
        tokens.append(load_token_file(opts.token_auth_file))
    sa_authenticator = CatchingUp(sa_tokens, registry.cache.sync)
    tokens.append(sa_authenticator)
    anonymous = AnonymousPolicy(opts.anonymous_auth)
    oidc = None
    if opts.authentication_config:
        config = load_authentication_config(opts.authentication_config, disallowed_issuers=[issuer.issuer_prefix + "*"])
        if config.jwt:
            oidc = OIDCAuthenticators.from_config(config)
            tokens.append(oidc)
        if config.anonymous is not None:
            anonymous = AnonymousPolicy(config.anonymous.enabled, tuple(config.anonymous.conditions))
    authn = Authenticator(tokens, anonymous, client_certificates=opts.tls)

    async def review_token(token: str, cluster: str, audiences: list[str]) -> dict:
        """TokenReview: our ServiceAccount tokens with their audiences, else the other authenticators."""
        status = sa_tokens.review(token, cluster, audiences)
        if status.get("authenticated") or status.get("error"):
            return status
        for t in tokens:
            if t is sa_authenticator:
                continue
            try:
                user = await t.authenticate_token(token, cluster)
            except AuthenticationError as exc:
                return {"user": {}, "error": str(exc)}
            if user is not None:
                return {"authenticated": True, "user": user.with_authenticated_group().to_kube()}
        return {"user": {}}

    reviews.authentication.token_reviewer = review_token
    source = CachePolicySource(registry.cache)
    rbac = RBACAuthorizer(source)
    authorizer = LabelScope(AuthorizerChain(MembershipAuthorizer(rbac, source)), CacheLookup(registry.cache))
    registry.store.admission.add(EscalationPlugin(rbac))
    registry.store.admission.add(LabelScopeAdmission(authorizer))
    reviews.authorization.authorizer, reviews.authorization.rbac = authorizer, rbac
    serve_bootstrap_policy(registry, rbac)
    return Pipeline(authn, authorizer, object_check=authorizer.check_object), oidc


def serve_bootstrap_policy(registry: Registry, rbac: RBACAuthorizer) -> None:
    """``kubectl get clusterroles`` shows the shared bootstrap roles (aggregated rules filled in)."""
    for rt in registry.catalog.types(ROOT):
        if rt.group != bootstrap.RBAC_GROUP:
            continue
        if rt.plural == "clusterroles":
            rt.defaults = lambda cluster: {n: r for n in bootstrap.CLUSTER_ROLES
                                           if (r := rbac.cluster_role(cluster, n)) is not None}
        elif rt.plural == "clusterrolebindings":
            rt.defaults = lambda cluster: bootstrap.CLUSTER_ROLE_BINDINGS


def add_webhooks(registry: Registry, client: WebhookClient, resolver: ServiceResolver) -> list[WebhookPlugin]:
    """The admission webhooks, last in the chain as in kube (after every built-in plugin)."""
    def served(cluster: str, group: str, resource: str) -> list[str]:
        return [rt.version for rt in registry.catalog.types(cluster) if rt.group == group and rt.plural == resource]

    plugins: list[WebhookPlugin] = [MutatingWebhooks(registry.cache, served, client, resolver),
                                    ValidatingWebhooks(registry.cache, served, client, resolver)]
    for plugin in plugins:
        registry.store.admission.add(plugin)
    return plugins


def build(opts: HubConfig, contributions: Contributions) -> Hub:
    """The hub ``opts`` describes, serving what ``contributions`` add (see :func:`fleetplane.hub.build_hub`)."""
    # Everything the hub writes (database, WAL, keys, kubeconfigs) is its owner's alone,
    # whatever umask it was started with; the data directory is 0700.
    os.umask(0o077)
    host_for_url = "127.0.0.1" if opts.bind in ("0.0.0.0", "::") else opts.bind
    creds = ensure_credentials(opts.data_dir, [host_for_url])
    store: Store = open_store(opts.storage or f"sqlite:{opts.data_dir / 'hub.db'}", cacert=opts.etcd_cacert,
                              cert=opts.etcd_cert, key=opts.etcd_key, timeout=opts.etcd_request_timeout)
    if opts.encryption_provider_config:
        store = EncryptedStore(store, load_encryption_config(opts.encryption_provider_config))
    reviews = Reviews()
    registry = Registry(store, system_crds=contributions.crds, admission=contributions.admission,
                        extra_types=[*contributions.types, *reviews.types()], history_retention=opts.history_retention,
                        converters=contributions.converters)
    _make_private(opts.storage or f"sqlite:{opts.data_dir / 'hub.db'}")
    server_url = f"{'https' if opts.tls else 'http'}://{host_for_url}:{opts.port}"
    issuer = service_accounts(opts, creds, registry, server_url)
    pipeline, oidc = build_pipeline(opts, creds, registry, reviews, issuer) if opts.auth else (None, None)
    if pipeline is None:
        reviews.authorization.authorizer = AlwaysAllow()
    policies = install_validating_admission_policy(registry, reviews.authorization.authorizer)
    webhook_client = WebhookClient()
    resolver = ServiceResolver(opts.webhook_service_hosts)
    webhooks = add_webhooks(registry, webhook_client, resolver)
    # CRD conversion webhooks: the same client (one connection pool) and the same Service addresses
    registry.store.conversion.client, registry.store.conversion.resolver = webhook_client, resolver
    registry.store.admission.disable(opts.disable_admission_plugins)
    audit = None
    if opts.audit_log_path:
        # without a policy file, every request at Metadata (kube audits nothing without one)
        policy = load_policy(opts.audit_policy_file) if opts.audit_policy_file else \
            parse_policy({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [{"level": "Metadata"}]})
        audit = AuditLog(opts.audit_log_path, policy)
    app = HubApp(registry, ServerConfig(server_address=f"{host_for_url}:{opts.port}", git_version=opts.git_version,
                                        bookmark_interval=opts.bookmark_interval), pipeline, audit, issuer)
    app.on_shutdown.append(webhook_client.close)
    webhook_metrics = WebhookMetrics(app.metrics.registry)
    for plugin in webhooks:
        plugin.metrics = webhook_metrics
    policies.metrics = PolicyMetrics(app.metrics.registry)
    embedded = getattr(registry.storage, "inner", registry.storage)  # under an EncryptedStore
    if isinstance(embedded, SQLiteStore):
        embedded.on_commit = StoreMetrics(app.metrics.registry).observe
    if oidc is not None:
        app.on_startup.append(oidc.start)
    if pipeline is not None and opts.enable_priority_and_fairness:
        flow = FlowControlConfig.install(registry, opts.max_requests_inflight + opts.max_mutating_requests_inflight,
                                         app.metrics.registry)
        pipeline.flow_control = flow.dispatcher
        app.on_startup.append(flow.start)
        app.on_shutdown.append(flow.stop)
    if pipeline is not None:
        aggregation = ClusterRoleAggregation(registry)
        app.on_startup.append(aggregation.start)
        app.on_shutdown.append(aggregation.stop)
    config = uvicorn.Config(
        app, host=opts.bind, port=opts.port, loop="uvloop", lifespan="on",
        log_level="warning", access_log=False, timeout_graceful_shutdown=3,
        ssl_certfile=str(creds.serving_cert) if opts.tls else None,
        ssl_keyfile=str(creds.serving_key) if opts.tls else None,
        # Client certificates are optional (tokens need none); one that is sent must chain to
        # the client CA, and then names the user (server.tls hands it to the pipeline).
        ssl_cert_reqs=ssl.CERT_OPTIONAL if opts.tls else ssl.CERT_NONE,
        ssl_ca_certs=str(creds.client_ca_cert) if opts.tls else None,
        http=protocol_class(connection_limits(opts, app)), ws="wsproto",
        timeout_keep_alive=opts.idle_timeout,  # type: ignore[arg-type]  # a float works: call_later's delay
        proxy_headers=False, server_header=False, date_header=False,
    )
    if opts.controllers not in CONTROLLER_MODES:
        raise ValueError(f"controllers: want one of {', '.join(CONTROLLER_MODES)}, not {opts.controllers!r}")
    if opts.controllers == "separate" and contributions.controllers and not opts.controller_manager_command:
        raise ValueError("controllers: separate needs the controller-manager's command")
    if opts.controller_manager_shards < 1 or (opts.controller_manager_shards > 1 and opts.controllers != "separate"):
        raise ValueError(f"controller-manager shards: {opts.controller_manager_shards} needs at least 1, and more"
                         " than 1 needs controllers: separate")
    write_kubeconfig(opts.data_dir / "admin.kubeconfig",
                     kubeconfig(server_url, creds.ca_cert.read_bytes() if opts.tls else None, creds.token,
                                opts.kubeconfig_clusters))
    return Hub(opts, app, _Server(config, app), list(contributions.controllers))


#: file descriptors kept for everything but client connections (store, logs, outgoing clients)
RESERVED_FDS = 256


def connection_limits(opts: HubConfig, app: HubApp) -> ConnectionLimits:
    """The connection caps and timeouts of ``opts``; the total cap fits the descriptors this
    process may open, whose soft limit is raised to the hard one first (as Go's runtime does)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
    total = opts.max_connections
    room = max(soft - RESERVED_FDS, 1) if soft != resource.RLIM_INFINITY else 0
    if room and (total == 0 or total > room):
        if total:
            log.warning("at most %d connections: the file descriptor limit is %d", room, soft)
        total = room
    closed = app.metrics.connections_closed
    return ConnectionLimits(header_timeout=opts.request_header_timeout, max_connections=total,
                            max_connections_per_client=opts.max_connections_per_client,
                            max_requests_per_connection=opts.max_requests_per_connection,
                            on_limit=lambda reason: closed.labels(reason).inc())


def identity_kubeconfig(opts: HubConfig, identity: str | None) -> Path:
    """The kubeconfig a controller running in the hub uses: a client certificate for its own
    identity in group ``system:fleetplane:controllers`` (``<data-dir>/identities/<name>.kubeconfig``,
    renewed at every start), or the
    admin's when it names none or the hub serves no TLS (no client certificates then)."""
    admin = opts.data_dir / "admin.kubeconfig"
    if identity is None or not opts.tls or not opts.auth:
        return admin
    path = private_dir(opts.data_dir / "identities") / (identity.rsplit(":", 1)[-1] + ".kubeconfig")
    write_kubeconfig(path, client_kubeconfig(opts.data_dir, identity, [CONTROLLERS], dt.timedelta(days=365),
                                             opts.kubeconfig_clusters))
    return path


async def _reencrypt(store: EncryptedStore) -> None:
    try:
        count = await store.rewrite_stale()
    except Exception:
        log.exception("re-encrypting stale values failed")
        return
    if count:
        log.info("re-encrypted %d values written with an older key or provider", count)


def _make_private(storage_url: str) -> None:
    """SQLite files made before the umask rule (an older hub) become 0600 too."""
    if not storage_url.startswith("sqlite:"):
        return
    db = Path(storage_url[len("sqlite:"):])
    for p in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        if p.exists():
            os.chmod(p, 0o600)


class Hub:
    """One hub, built and ready to run: the ASGI ``app`` and the uvicorn ``server`` that serves
    it; the ``controllers`` start once it serves and are cancelled before it stops."""

    def __init__(self, config: HubConfig, app: HubApp, server: _Server, controllers: list[Controller]) -> None:
        self.config, self.app, self.server, self.controllers = config, app, server, controllers

    async def _start_background(self) -> None:
        server, tasks = self.server, self.server.background_tasks
        while not server.started:
            if server.should_exit:
                return
            await asyncio.sleep(0.02)
        # Everything loaded to start (modules, OpenAPI data, the initial cache) lives as long as
        # the process: out of the collector's way, a full collection while a large object is
        # written walks only what came after, a shorter pause for every other request.
        gc.freeze()
        # The store's reader threads take the interpreter lock back after every query; with the
        # default 5 ms switch interval a busy event loop keeps it that long. At 0.5 ms the wait
        # all but goes, for a few more forced switches under contention. (Writes no longer wait:
        # the writer is a process of its own, docs/scaling.md "Group commits".)
        sys.setswitchinterval(SWITCH_INTERVAL)
        if isinstance(self.app.registry.storage, EncryptedStore):
            # Key rotation completes here: values written with an older key are re-encrypted.
            tasks.append(asyncio.create_task(_reencrypt(self.app.registry.storage)))
        if not self.controllers or self.config.controllers == "none":
            return
        if self.config.controllers == "in-process":
            for c in self.controllers:
                context = ControllerContext(identity_kubeconfig(self.config, c.identity), lambda: self.app.ready)
                tasks.append(asyncio.create_task(c.run(context), name=c.name))
            return
        # a controller-manager process: the kubeconfigs are written here (the CA key stays with
        # the server); the child gets their paths only
        command = [*self.config.controller_manager_command,
                   *(f"--controller-kubeconfig={c.name}={identity_kubeconfig(self.config, c.identity)}"
                     for c in self.controllers)]
        shards = self.config.controller_manager_shards
        metrics = self._supervisor_metrics()
        for i in range(shards):
            name = f"controller-manager shard {i}" if shards > 1 else "controller-manager"
            sup = Supervisor([*command, f"--shard={i}", f"--shards={shards}"] if shards > 1 else command,
                             metrics(i), name=name)
            server.supervisors.append(sup)
            tasks.append(asyncio.create_task(sup.run(), name=name))

    def _supervisor_metrics(self) -> Callable[[int], SupervisorMetrics]:
        """Shard ``i``'s metrics: restarts counted together, ``up`` the number of processes running."""
        registry = self.app.metrics.registry
        restarts = Counter("fleetplane_controller_manager_restarts", "Times a controller-manager process was "
                           "restarted after it exited.", registry=registry)
        up = Gauge("fleetplane_controller_manager_up", "How many controller-manager processes run (1 per shard).",
                   registry=registry)
        running: set[int] = set()

        def set_up(shard: int, is_up: bool) -> None:
            (running.add if is_up else running.discard)(shard)
            up.set(len(running))

        return lambda shard: SupervisorMetrics(restarted=restarts.inc, up=partial(set_up, shard))

    async def serve(self) -> None:
        """Serve until SIGTERM/SIGINT."""
        starter = asyncio.create_task(self._start_background())
        try:
            await self.server.serve()
        finally:
            starter.cancel()
            tasks = self.server.background_tasks
            for t in tasks:
                t.cancel()
            for t in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await t
