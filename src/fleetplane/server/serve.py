"""Run the hub: storage, registry, credentials, kubeconfig and uvicorn, in one process."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import uvicorn
import uvloop

from ..registry.hub import Registry
from ..storage.open import open_store
from .app import GIT_VERSION, HubApp, ServerConfig
from .certs import ensure_credentials, kubeconfig, write_kubeconfig

log = logging.getLogger("fleetplane.server")


@dataclass
class Options:
    data_dir: Path = Path(".fleetplane")
    bind: str = "127.0.0.1"
    port: int = 6443
    tls: bool = True
    auth: bool = True
    git_version: str = GIT_VERSION
    kubeconfig_clusters: list[str] = field(default_factory=lambda: ["root"])
    bookmark_interval: float = 60.0
    history_retention: float = 300.0
    #: more built-in types (a simulated physical cluster serves Deployments, Pods, ...)
    extra_types: list = field(default_factory=list)
    #: CRD documents served in every logical cluster, and admission checks by (group, kind)
    system_crds: list = field(default_factory=list)
    admission: dict = field(default_factory=dict)
    #: serve the ClusterProfile API (KEP-4322) in every logical cluster
    cluster_profiles: bool = True
    #: the store: "" (SQLite in <data-dir>/hub.db), "sqlite:PATH" or "etcd:URL[,URL...]"
    storage: str = ""
    #: TLS to etcd: CA bundle, client certificate and key (PEM files)
    etcd_cacert: str | None = None
    etcd_cert: str | None = None
    etcd_key: str | None = None
    #: how long one etcd request may take before it fails with 504
    etcd_request_timeout: float = 5.0


class _Server(uvicorn.Server):
    """uvicorn, plus: on SIGTERM/SIGINT cancel the background controllers and end open watches
    at once, so shutdown is quick, and exit 0 after a graceful SIGTERM shutdown (uvicorn
    re-raises the signal by default)."""

    app_ref: HubApp | None = None
    background_tasks: list[asyncio.Task]
    _draining: asyncio.Task | None = None

    def handle_exit(self, sig, frame) -> None:  # type: ignore[override]
        loop = asyncio.get_event_loop()
        if self.app_ref is not None:
            self.app_ref.ready = False
        tasks = [t for t in getattr(self, "background_tasks", []) if not t.done()]
        if tasks and self._draining is None:
            # The controllers stop first, while the server still answers them: they release
            # their Leases (a successor takes over at once, not a lease duration later) and
            # finish their writes. A second signal does not wait for them.
            loop.call_soon_threadsafe(self._drain, tasks, sig)
            return
        self._exit(loop, sig, frame)

    def _drain(self, tasks: list[asyncio.Task], sig: int) -> None:
        for task in tasks:
            task.cancel()

        async def then_exit() -> None:
            await asyncio.wait(tasks, timeout=BACKGROUND_STOP_TIMEOUT)
            self._exit(asyncio.get_running_loop(), sig, None)

        self._draining = asyncio.get_running_loop().create_task(then_exit())

    def _exit(self, loop: asyncio.AbstractEventLoop, sig: int, frame: object) -> None:
        for task in getattr(self, "background_tasks", []):
            loop.call_soon_threadsafe(task.cancel)
        if self.app_ref is not None:
            loop.call_soon_threadsafe(self.app_ref.registry.cache.stop_watchers)
        super().handle_exit(sig, frame)
        if sig == signal.SIGTERM and sig in self._captured_signals:
            self._captured_signals.remove(sig)


#: how long SIGTERM waits for the controllers running in the hub to stop before the server stops
BACKGROUND_STOP_TIMEOUT = 5.0


def build(opts: Options) -> tuple[HubApp, uvicorn.Config]:
    opts.data_dir.mkdir(parents=True, exist_ok=True)
    host_for_url = "127.0.0.1" if opts.bind in ("0.0.0.0", "::") else opts.bind
    creds = ensure_credentials(opts.data_dir, [host_for_url])
    system_crds, admission = list(opts.system_crds), dict(opts.admission)
    if opts.cluster_profiles:
        from ..inventory import CLUSTERPROFILE_CRD, admit

        system_crds.append(CLUSTERPROFILE_CRD)
        admission[("multicluster.x-k8s.io", "ClusterProfile")] = admit
    store = open_store(opts.storage or f"sqlite:{opts.data_dir / 'hub.db'}", cacert=opts.etcd_cacert,
                       cert=opts.etcd_cert, key=opts.etcd_key, timeout=opts.etcd_request_timeout)
    registry = Registry(store, system_crds=system_crds, admission=admission,
                        extra_types=opts.extra_types, history_retention=opts.history_retention)
    app = HubApp(registry, ServerConfig(token=creds.token if opts.auth else None,
                                        server_address=f"{host_for_url}:{opts.port}", git_version=opts.git_version,
                                        bookmark_interval=opts.bookmark_interval))
    scheme = "https" if opts.tls else "http"
    config = uvicorn.Config(
        app, host=opts.bind, port=opts.port, loop="uvloop", http="httptools", lifespan="on",
        log_level="warning", access_log=False, timeout_graceful_shutdown=3,
        ssl_certfile=str(creds.serving_cert) if opts.tls else None,
        ssl_keyfile=str(creds.serving_key) if opts.tls else None,
        timeout_keep_alive=30, proxy_headers=False, server_header=False, date_header=False,
    )
    server_url = f"{scheme}://{host_for_url}:{opts.port}"
    write_kubeconfig(opts.data_dir / "admin.kubeconfig",
                     kubeconfig(server_url, creds.ca_cert.read_bytes() if opts.tls else None, creds.token,
                                opts.kubeconfig_clusters))
    return app, config


Background = Callable[[HubApp, Path], Awaitable[None]]


async def serve(opts: Options, background: list[Background] | None = None) -> None:
    """Serve until SIGTERM/SIGINT; ``background`` coroutines (controllers that talk to this
    server through its API with ``<data-dir>/admin.kubeconfig``) start once it is ready and
    are cancelled before it shuts down."""
    app, config = build(opts)
    server = _Server(config)
    server.app_ref = app
    tasks: list[asyncio.Task] = []
    server.background_tasks = tasks

    async def start_background() -> None:
        while not server.started:
            if server.should_exit:
                return
            await asyncio.sleep(0.02)
        for fn in background or []:
            tasks.append(asyncio.create_task(fn(app, opts.data_dir / "admin.kubeconfig")))

    starter = asyncio.create_task(start_background())
    try:
        await server.serve()
    finally:
        starter.cancel()
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t


def run(opts: Options, background: list[Background] | None = None) -> None:
    uvloop.run(serve(opts, background))
