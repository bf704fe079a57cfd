"""A private event loop, in a daemon thread, on which every exec plugin runs.

Credentials are shared by every caller in the process: async callers on any event loop, sync callers
in any thread (the ``kubernetes`` client's refresh hook runs in the caller's thread). Running the
plugin subprocesses on one dedicated loop makes single-flight trivial (one
``concurrent.futures.Future`` per in-flight execution that anyone can wait on), keeps a cancelled
caller from killing an execution other callers are waiting for, and never blocks a caller's loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_pid: int | None = None


def _run(loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
    asyncio.set_event_loop(loop)
    loop.call_soon(ready.set)
    loop.run_forever()


def get_loop() -> asyncio.AbstractEventLoop:
    global _loop, _thread, _pid
    with _lock:
        if _loop is None or _pid != os.getpid() or _thread is None or not _thread.is_alive():
            loop = asyncio.new_event_loop()
            ready = threading.Event()
            t = threading.Thread(target=_run, args=(loop, ready), name="fleetplane-access-exec", daemon=True)
            t.start()
            ready.wait()
            _loop, _thread, _pid = loop, t, os.getpid()
        return _loop


def submit(coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Run ``coro`` on the exec loop; the returned future is safe to wait on from any thread."""
    return asyncio.run_coroutine_threadsafe(coro, get_loop())


def in_exec_thread() -> bool:
    return _thread is not None and threading.current_thread() is _thread


def _after_fork_in_child() -> None:
    global _loop, _thread, _pid
    _loop, _thread, _pid = None, None, None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
