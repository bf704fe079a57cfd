"""The controller-manager: the plugins' controllers in a process of their own beside the hub's
server, as kube-controller-manager runs beside kube-apiserver.

Why a process: in the server's process every controller request is an HTTPS round trip through
the same event loop that serves it (39.5 % of the hub's loop during a split, issue 16); in a
process of its own the controllers use the machine's other core and the server's loop serves
only requests. They still see only the API, each as its own identity.

Two halves, both without the server side (``fleetplane.server`` and below are never imported):

* :class:`Supervisor`, in the hub's process (``fleetplane start --controllers=separate``):
  starts the child once the hub serves, restarts it with backoff when it dies (logged, counted in
  ``fleetplane_controller_manager_restarts_total`` on the hub's /metrics), and stops it with
  SIGTERM, the same grace as in-process controllers get, before the server stops. The child's
  exit never takes the server down.
* :func:`main`, the child (``python -m fleetplane.cli.main controller-manager``): rebuilds the same
  plugin set from the same flags (``cli/main.py`` has the one place that turns flags into
  plugins), runs each :class:`~fleetplane.plugin.Controller` with the kubeconfig the hub wrote
  for its identity, serves its process's metrics on a loopback port, and stops on SIGTERM/SIGINT
  or when the hub that started it is gone (its stdin, a pipe from the hub, reaches EOF).

**Shards** (``fleetplane start --controller-manager-shards N``): N children, each a shard
``i`` of N. A sharded controller (the Cluster controller: a Cluster's Syncer holds a dozen watch
connections on each side, so one process's open files cap how many clusters it can sync) runs in
every shard and reconciles the objects that hash to it; the other controllers run in shard 0 only.
N is fixed for a hub's life; each shard is supervised (restarted, counted) on its own.

The child is started fresh (``exec`` of the same interpreter), not forked from the hub: by the
time the hub serves it has threads (the store's writer, uvloop's resolver pool) and a running
loop, which a fork would copy half-way; a fresh interpreter imports only the client side and can
be restarted any number of times. The command line also lets an operator run the
controller-manager alone (``fleetplane start --controllers=none`` on the hub).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .plugin import Controller, ControllerContext

__all__ = ["MODES", "PROCESS_STOP_TIMEOUT", "STOP_GRACE", "Supervisor", "SupervisorMetrics", "main", "of_shard",
           "run_controllers"]

log = logging.getLogger("fleetplane.controllermanager")

#: where the controllers run: a controller-manager process, the server's own process, nowhere
MODES = ("separate", "in-process", "none")

#: how long SIGTERM waits for the controllers to stop (release their Leases, finish their writes)
STOP_GRACE = 5.0

#: how long the supervisor waits for the process after SIGTERM (the controllers' grace, then exit)
PROCESS_STOP_TIMEOUT = STOP_GRACE + 1.0

#: the restart backoff: doubled from the first delay to the cap, reset once a child ran this long
BACKOFF_FIRST, BACKOFF_CAP, BACKOFF_RESET = 1.0, 30.0, 60.0


# -- the child ----------------------------------------------------------------------------------


def of_shard(controllers: Sequence[Controller], shard: int) -> list[Controller]:
    """The controllers shard ``shard`` runs: all of them in shard 0, only the sharded ones elsewhere."""
    return [c for c in controllers if shard == 0 or c.sharded]


async def run_controllers(controllers: Sequence[Controller], kubeconfigs: Mapping[str, Path],
                          stopping: asyncio.Event, *, shard: int = 0, shards: int = 1) -> int:
    """Run ``controllers`` until ``stopping`` is set, then cancel them and wait up to
    :data:`STOP_GRACE`. A controller that fails ends the process (exit 1) so that its supervisor
    restarts all of them from a fresh start, as a crashed kube-controller-manager is restarted."""
    alive = lambda: not stopping.is_set()  # noqa: E731 - the context's callable
    tasks = {asyncio.create_task(c.run(ControllerContext(kubeconfigs[c.name], alive, shard, shards)), name=c.name): c
             for c in controllers}
    stop: asyncio.Task[Any] = asyncio.create_task(stopping.wait())
    code = 0
    pending: set[asyncio.Task[Any]] = set(tasks)
    try:
        while pending and not stopping.is_set():
            done, pending = await asyncio.wait({*pending, stop}, return_when=asyncio.FIRST_COMPLETED)
            pending.discard(stop)
            for t in done:
                if t is stop or t.cancelled():
                    continue
                if (exc := t.exception()) is not None:
                    log.error("controller %s failed: %s: %s", t.get_name(), type(exc).__name__, exc)
                    code = 1
                else:
                    log.info("controller %s ended", t.get_name())
            if code:
                break
    finally:
        stop.cancel()
        for t in pending:
            t.cancel()
        if pending:
            _, late = await asyncio.wait(pending, timeout=STOP_GRACE)
            if late:
                log.warning("controllers not stopped within %gs: %s", STOP_GRACE, sorted(t.get_name() for t in late))
    return code


async def _watch_lifeline(stopping: asyncio.Event) -> None:
    """The hub that started this process holds the other end of stdin: EOF means it is gone
    (even after kill -9), and the controllers must not outlive it."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while await reader.read(4096):
        pass
    if not stopping.is_set():
        log.warning("the hub that started the controller-manager is gone: stopping")
        stopping.set()


def _serve_metrics(address: str) -> str | None:
    """The process's metrics (prometheus_client's default registry: the access library's
    credential counters, process and GC figures) on ``host:port`` over HTTP; the address served."""
    if not address:
        return None
    from prometheus_client import start_http_server

    host, _, port = address.rpartition(":")
    server, _thread = start_http_server(int(port), addr=host or "127.0.0.1")
    bound_host, bound_port = server.server_address[:2]
    return f"{bound_host!s}:{bound_port}"


def main(controllers: Sequence[Controller], kubeconfigs: Mapping[str, Path], *, metrics_address: str = "",
         address_file: Path | None = None, lifeline: bool = False, shard: int = 0, shards: int = 1) -> int:
    """The controller-manager process (shard ``shard`` of ``shards``): run ``controllers`` (each
    with its kubeconfig; in a shard but the first, only the sharded ones) until SIGTERM/SIGINT (or,
    with ``lifeline``, until stdin closes). Returns the exit status."""
    import uvloop

    if not 0 <= shard < shards:
        print(f"controller-manager: error: --shard {shard} is not one of 0..{shards - 1} (--shards {shards})",
              file=sys.stderr)
        return 2
    controllers = of_shard(controllers, shard)
    missing = [c.name for c in controllers if c.name not in kubeconfigs]
    if missing:
        print(f"controller-manager: error: no kubeconfig for {', '.join(missing)}", file=sys.stderr)
        return 2
    served = _serve_metrics(metrics_address)
    if served is not None:
        log.info("controller-manager metrics on http://%s/metrics", served)
        if address_file is not None:
            _write_private_text(address_file, served + "\n")
    log.info("controller-manager%s running %s", f" shard {shard} of {shards}" if shards > 1 else "",
             ", ".join(c.name for c in controllers) or "no controllers")

    async def go() -> int:
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stopping.set)
        watcher = asyncio.create_task(_watch_lifeline(stopping)) if lifeline else None
        try:
            return await run_controllers(controllers, kubeconfigs, stopping, shard=shard, shards=shards)
        finally:
            if watcher is not None:
                watcher.cancel()

    code = uvloop.run(go())
    log.info("controller-manager stopped")
    return code


def _write_private_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


# -- the supervisor, in the hub's process -----------------------------------------------------------


@dataclass
class SupervisorMetrics:
    """How the supervisor reports: ``restarted()`` once per restart, ``up(bool)`` as the child
    comes and goes (the hub wires them to its registry)."""

    restarted: Callable[[], None] = lambda: None
    up: Callable[[bool], None] = lambda _: None


class Supervisor:
    """Runs ``command`` (the controller-manager) until cancelled: restarted with backoff whenever
    it exits; on cancellation SIGTERM, :data:`STOP_GRACE` (plus a second for the process to exit),
    then SIGKILL. The child is in a process group of its own (a terminal's Ctrl-C reaches the hub,
    which then stops it in order), but in the hub's session: Linux's autogroup scheduling shares
    a busy machine between sessions evenly, so each shard in a session of its own had as much CPU
    as the API server with all else in its session (at 900 clusters over four shards the server
    waited on the run queue 56 % of the time). It holds a pipe from this process on its stdin."""

    def __init__(self, command: Sequence[str], metrics: SupervisorMetrics | None = None,
                 env: Mapping[str, str] | None = None, name: str = "controller-manager") -> None:
        self.command = list(command)
        #: how the logs name the child ("controller-manager shard 1")
        self.name = name
        self.metrics = metrics or SupervisorMetrics()
        self.env = dict(env) if env is not None else None
        self.process: asyncio.subprocess.Process | None = None
        #: how many times the child was started
        self.starts = 0

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None and self.process.returncode is None else None

    async def run(self) -> None:
        delay = BACKOFF_FIRST
        try:
            while True:
                started = time.monotonic()
                try:
                    self.process = await asyncio.create_subprocess_exec(
                        *self.command, stdin=asyncio.subprocess.PIPE, env=self.env,
                        preexec_fn=os.setpgrp)  # uvloop has no process_group=; setpgrp takes no lock
                except OSError as exc:  # out of processes or memory: the server serves on, and tries again
                    log.error("%s not started: %s; trying again in %gs", self.name, exc, delay)
                else:
                    self.starts += 1
                    self.metrics.up(True)
                    log.info("%s started (pid %d)", self.name, self.process.pid)
                    code = await self.process.wait()
                    self.metrics.up(False)
                    if time.monotonic() - started >= BACKOFF_RESET:
                        delay = BACKOFF_FIRST
                    log.warning("%s (pid %d) exited with %s; restarting in %gs", self.name, self.process.pid,
                                _describe_exit(code), delay)
                await asyncio.sleep(delay)
                self.metrics.restarted()
                delay = min(delay * 2, BACKOFF_CAP)
        finally:
            await self._stop()

    async def _stop(self) -> None:
        proc = self.process
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), PROCESS_STOP_TIMEOUT)
        except (TimeoutError, asyncio.CancelledError):
            # not stopped in time, or a second signal: do not wait any longer
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            log.warning("%s (pid %d) killed: not stopped within %gs", self.name, proc.pid, PROCESS_STOP_TIMEOUT)
            with contextlib.suppress(Exception):
                await asyncio.shield(proc.wait())
        finally:
            self.metrics.up(False)
            if proc.stdin is not None:
                proc.stdin.close()
        log.info("%s (pid %d) stopped: %s", self.name, proc.pid, _describe_exit(proc.returncode))


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "no status"
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"status {code}"
