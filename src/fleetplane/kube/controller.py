"""The one controller runtime: sources -> a rate-limited work queue of keys -> ``reconcile(key)``.

client-go's controller pattern (``tools/cache`` feeding ``util/workqueue``, workers calling a sync
function) and Kopf's queueing, cut to what fleetplane's controllers need:

- **sources** feed the queue with keys: an :class:`~.informer.Informer`'s change callbacks (the
  HTTP controllers), the hub's watch cache listeners (the in-process lifecycle controllers), or
  :func:`every` for a periodic resync. A source is any awaitable that runs until cancelled;
- the :class:`~.workqueue.WorkQueue` holds each key at most once and hands it to one worker at a
  time, so events for one object coalesce and one object is never reconciled twice at once;
- ``workers`` workers call ``reconcile(key)``, which returns a :class:`Result`: done (None or
  ``Result()``, the key's backoff is reset), again after ``requeue_after`` seconds (a probe
  interval; it replaces a timer the key had, as a reconcile that ran sooner restarts the
  wait), or again with the key's backoff (``requeue=True``: a conflict, nothing to log).
  An exception requeues the key with backoff and is logged; ``False`` means the reconciler has
  scheduled its own retry (the key is left as it is);
- :meth:`Controller.run` runs the sources and the workers until cancelled, and on the way out
  cancels them all and drops the queue's timers (a clean shutdown; a leader elector's cancel).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Awaitable, Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .workqueue import WorkQueue

__all__ = ["Controller", "ErrorLogger", "Reconcile", "Result", "every", "log_sync_error", "run_workers", "stop_tasks"]

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Result:
    """What a reconcile asks for next: nothing (the default), a look after ``requeue_after``
    seconds, or (``requeue``) another try with the key's backoff without an error to report."""

    requeue_after: float | None = None
    requeue: bool = False


#: ``reconcile(key)``: a Result (None: done), or False when it has scheduled its own retry
Reconcile = Callable[[K], Awaitable["Result | bool | None"]]
#: how a failed reconcile is reported: (controller name, key, the exception, the retry delay)
ErrorLogger = Callable[[str, Any, Exception, float], None]


def log_sync_error(name: str, key: Any, err: Exception, delay: float) -> None:
    """The default report of a failed reconcile: quiet for what a retry fixes by itself (a 404 or
    409, a namespace terminating), INFO for an unreachable server, else a WARNING (a traceback
    for anything but an API error)."""
    # an ApiError exists only once the client is loaded; the hub's in-process controllers never load
    # it (importing it here would stall their event loop for the HTTP libraries' import)
    client = sys.modules.get(f"{__package__}.client")
    if client is not None and isinstance(err, client.ApiError):
        quiet = err.status in (404, 409) or err.has_cause("NamespaceTerminating")
        level = logging.DEBUG if quiet else logging.INFO if err.status == 0 else logging.WARNING
        log.log(level, "%s: syncing %s failed: %s; retrying in %.2fs", name, key, err, delay)
    else:
        log.error("%s: syncing %s failed; retrying in %.2fs", name, key, delay, exc_info=err)


class Controller(Generic[K]):
    """A named work queue and the workers that drain it into ``reconcile`` (see the module
    docstring). ``queue`` may be given (a controller that shares its queue with helpers), else
    one is made with backoff ``base`` doubling to ``cap``."""

    def __init__(self, name: str, reconcile: Reconcile[K], *, workers: int = 1, queue: WorkQueue | None = None,
                 base: float = 0.05, cap: float = 30.0, jitter: bool = False,
                 on_error: ErrorLogger = log_sync_error) -> None:
        if workers < 1:
            raise ValueError("a controller needs at least one worker")
        self.name = name
        self.reconcile = reconcile
        self.workers = workers
        self.queue = queue if queue is not None else WorkQueue(name, base=base, cap=cap, jitter=jitter)
        self.on_error = on_error

    def enqueue(self, key: K) -> None:
        self.queue.add(key)

    def enqueue_after(self, key: K, delay: float) -> None:
        self.queue.add_after(key, delay)

    async def process(self, key: K) -> None:
        """Reconcile one key taken from the queue and act on the outcome."""
        queue = self.queue
        try:
            outcome = await self.reconcile(key)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - reported, retried with backoff
            self.on_error(self.name, key, exc, queue.retry(key))
            return
        if outcome is False:
            return  # the reconciler scheduled its own retry
        if isinstance(outcome, Result) and outcome.requeue:
            queue.retry(key)
            return
        queue.forget(key)
        if isinstance(outcome, Result) and outcome.requeue_after is not None:
            # the next look is this reconcile's to decide: it replaces one planned before it ran
            queue.add_after(key, outcome.requeue_after, replace=True)

    async def _worker(self) -> None:
        while True:
            key: Any = await self.queue.get()
            try:
                await self.process(key)
            finally:
                self.queue.done(key)

    async def run(self, *sources: Awaitable[Any]) -> None:
        """Run ``sources`` and the workers until cancelled (or a source fails: its error is
        raised); everything is cancelled on the way out."""
        tasks = [asyncio.ensure_future(s) for s in sources]
        tasks += [asyncio.create_task(self._worker(), name=f"{self.name}-worker-{i}") for i in range(self.workers)]
        try:
            await asyncio.gather(*tasks)
        finally:
            await stop_tasks(tasks)
            self.queue.close()


async def stop_tasks(tasks: Iterable[asyncio.Future[Any]]) -> None:
    """Cancel ``tasks`` and wait until each has finished (whatever it raised on the way out)."""
    pending = list(tasks)
    for t in pending:
        t.cancel()
    for t in pending:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await t


async def every(seconds: float, tick: Callable[[], None]) -> None:
    """A source calling ``tick()`` (which enqueues) every ``seconds``, until cancelled: a resync.
    A tick that fails is logged; the next one comes all the same."""
    while True:
        await asyncio.sleep(seconds)
        try:
            tick()
        except Exception:
            log.exception("resync failed")


async def run_workers(queue: WorkQueue, sync: Callable[[Any], Awaitable[Any]], workers: int) -> None:
    """Drain ``queue`` into ``sync`` with ``workers`` concurrent workers until cancelled: a
    :class:`Controller` on this queue. A key whose sync returns is forgotten (its
    backoff reset), unless it returned False (it has handled its own retry); one whose sync
    raises is retried with backoff."""
    await Controller(queue.name, sync, workers=workers, queue=queue).run()
