"""Heavy work on large objects runs off the event loop, so one big write does not stall
every other request.

A 2 MiB, 150,000-key ConfigMap takes seconds of pure Python to create (managedFields, the
data keys' validation, dropping nulls, decoding YAML): on the event loop that is seconds in
which no other request is answered. In a worker thread the same work still holds the GIL,
but Python hands the GIL to the loop's thread every switch interval (5 ms) when it asks, so
other requests go on being served, slower but not stalled. Small objects stay on the loop:
the hop to a thread and back costs more than their work.

Only C calls that keep the GIL (orjson on the whole body, a few tens of milliseconds for
2 MiB) still hold the loop, and nothing here can shorten those.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import gc
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

__all__ = ["OFF_LOOP_BYTES", "off_loop"]

P = ParamSpec("P")
T = TypeVar("T")

#: bodies and objects from this size (JSON bytes) on are worked on in a thread: about 1 µs of
#: Python per byte, so what stays on the loop holds it for some 30 ms at most
OFF_LOOP_BYTES = 32 * 1024

#: two threads: more would only share the GIL among themselves; large writes beyond two queue
_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="fleetplane-heavy")


_collector_lock = threading.Lock()
_heavy_running = 0


def _without_collector(fn: Callable[[], T]) -> T:
    """``fn()`` with the cyclic collector paused. A large object's managedFields and validation
    make hundreds of thousands of short-lived objects (freed by reference counting, no cycles);
    every few hundred allocations the collector runs, and its full passes walk them all while
    holding the GIL: pauses of 100-500 ms for every thread, the event loop's too. Paused while
    any heavy work runs, it collects once afterwards, when the temporaries are gone."""
    global _heavy_running
    with _collector_lock:
        _heavy_running += 1
        gc.disable()
    try:
        return fn()
    finally:
        with _collector_lock:
            _heavy_running -= 1
            if _heavy_running == 0:
                gc.enable()


async def off_loop(size: int, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``fn(*args, **kwargs)``: in a worker thread when ``size`` is at least
    :data:`OFF_LOOP_BYTES`, else right here. The caller must not touch what ``fn`` changes
    until it returns (a request's own object: nobody else has it)."""
    if size < OFF_LOOP_BYTES:
        return fn(*args, **kwargs)
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(_POOL, _without_collector, call)
