"""What every controller's ``__main__`` does around the controller itself: parse its flags (from
its options dataclass, :mod:`.options`), set up logging, check the kubeconfig, optionally hold a
Lease while running (leader election, so several copies run one at a time), and stop cleanly on
SIGINT or SIGTERM (the controller's ``run()`` is cancelled, so it can stop what it started)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from .kubeconfig import KubeconfigError
from .options import add_arguments, from_args

__all__ = ["Runnable", "controller_main", "run_hub_wide", "run_in_hub", "run_until_signalled"]


class Runnable(Protocol):
    """A controller: ``run()`` works until cancelled."""

    def run(self) -> Awaitable[Any]: ...


def run_until_signalled(main: Callable[[], Awaitable[Any]], *, use_uvloop: bool = False) -> None:
    """``asyncio.run(main())`` (on uvloop with ``use_uvloop``), cancelled (cleanly, so what it
    started stops) on SIGTERM or SIGINT."""

    async def go() -> None:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, task.cancel)  # type: ignore[union-attr]
        with contextlib.suppress(asyncio.CancelledError):
            await main()

    if use_uvloop:
        import uvloop

        uvloop.run(go())
    else:
        asyncio.run(go())


def controller_main(argv: Sequence[str] | None, *, prog: str, name: str, description: str, options: type,
                    build: Callable[[str, str | None, Any], Runnable], lease: str | None = None,
                    lease_of: Callable[[Any], str] | None = None,
                    only: Sequence[str] | None = None, log_format: str = "json", use_uvloop: bool = False) -> int:
    """Parse ``--kubeconfig``, ``--context``, the logging flags, ``--leader-elect`` (with a
    ``lease``; ``lease_of(options)`` names it when the options decide, as a shard's own Lease)
    and the flags of the ``options`` dataclass (those in ``only``; options it refuses are a usage
    error, exit 2); build the controller
    with ``build(kubeconfig, context, options)`` (a KubeconfigError is a usage error, exit 2) and
    run it until signalled. ``prog`` is the command (``python -m ...``); ``name`` prefixes errors."""
    from ..logs import configure_logging

    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"), help="the hub's admin kubeconfig")
    p.add_argument("--context", help="kubeconfig context (default: current-context)")
    add_arguments(p, options, only=only)
    if lease is not None:
        p.add_argument("--leader-elect", action="store_true",
                       help=f"run only while holding the Lease kube-system/{lease} in the kubeconfig's logical cluster")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.add_argument("--log-format", default=log_format, choices=["json", "console"])
    args = p.parse_args(argv)
    configure_logging(args.log_level, args.log_format)
    if not args.kubeconfig:
        print(f"{name}: error: --kubeconfig (or $KUBECONFIG) is required", file=sys.stderr)
        return 2
    try:
        opts: Any = from_args(options, args, only=only)
    except ValueError as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
        return 2
    if lease is not None and lease_of is not None:
        lease = lease_of(opts)
    try:
        first: Runnable | None = build(args.kubeconfig, args.context, opts)
    except KubeconfigError as exc:
        print(f"{name}: error: hub kubeconfig: {exc}", file=sys.stderr)
        return 2

    def term() -> Awaitable[Any]:
        """The controller of one term: the one built above first, then a fresh one per term."""
        nonlocal first
        controller, first = first, None
        return (controller or build(args.kubeconfig, args.context, opts)).run()

    if lease is not None and getattr(args, "leader_elect", False):
        from .leaderelection import run_as_leader

        run_until_signalled(lambda: run_as_leader(lease, args.kubeconfig, term), use_uvloop=use_uvloop)
    else:
        run_until_signalled(term, use_uvloop=use_uvloop)
    return 0


async def run_hub_wide(build: Callable[[Any], Runnable], agent: str, kubeconfig: str | Path | dict[str, Any], *,
                       context: str | None = None, lease: str | None = None) -> None:
    """Run a controller that serves every logical cluster of a hub until cancelled: ``build(hub)``
    gets a client on the hub's base URL (its paths carry ``/clusters/<lc>``) with user agent
    ``agent``. With a ``lease`` (a kubeconfig path needed), only while this process holds the Lease
    ``kube-system/<lease>`` in the kubeconfig's logical cluster: with several hub replicas exactly
    one runs; losing the Lease cancels the work, which is safe (all state is in the hub, the next
    leader starts from a fresh list)."""
    from .client import Client
    from .kubeconfig import ApiTarget

    async def work() -> None:
        target = ApiTarget.from_kubeconfig(kubeconfig, context)
        hub = Client(target.with_server(target.base), agent)
        try:
            await build(hub).run()
        finally:
            await hub.close()

    if lease is None:
        await work()
        return
    if isinstance(kubeconfig, dict) or context is not None:
        raise ValueError("leader election needs a kubeconfig file whose current context is the Lease's cluster")
    from .leaderelection import run_as_leader

    await run_as_leader(lease, kubeconfig, work)


async def run_in_hub(build: Callable[[Any], Runnable], agent: str, lease: str, kubeconfig_path: Path) -> None:
    """A ``fleetplane start`` background task (:mod:`fleetplane.fleet.plugin`): the controller in
    the hub's process under leader election; a failure is logged before it ends the task."""
    try:
        await run_hub_wide(build, agent, kubeconfig_path, lease=lease)
    except asyncio.CancelledError:
        raise
    except Exception:
        logging.getLogger(f"fleetplane.{agent}").exception("%s stopped", agent)
        raise
