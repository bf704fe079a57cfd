"""client-go's rate-limited work queue for asyncio (:class:`WorkQueue`), the workers that drain
it (:func:`run_workers`, a :class:`~.controller.Controller`), and exponential :class:`Backoff`."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["Backoff", "WorkQueue"]


class Backoff:
    """Exponential backoff with jitter: ``base`` doubling up to ``cap`` seconds."""

    def __init__(self, base: float = 0.2, cap: float = 10.0) -> None:
        self.base, self.cap, self.n = base, cap, 0

    def next(self) -> float:
        delay: float = min(self.cap, self.base * (2 ** self.n))  # int ** int is Any in typeshed
        self.n = min(self.n + 1, 30)
        return delay * (0.8 + 0.4 * random.random())

    def reset(self) -> None:
        self.n = 0


class WorkQueue:
    """Keys to reconcile, on one event loop. A key waits at most once however often it is added;
    it is processed by one worker at a time, and again afterwards if it was added meanwhile;
    ``add_after`` is a timer (an earlier one for the key wins); ``retry`` backs off per key
    (``base`` doubling up to ``cap``, with ``jitter`` ±20%) until ``forget``."""

    def __init__(self, name: str = "", *, base: float = 0.05, cap: float = 30.0, jitter: bool = False) -> None:
        self.name = name
        self.base, self.cap, self.jitter = base, cap, jitter
        self._queue: asyncio.Queue[Hashable] = asyncio.Queue()
        self._dirty: set[Hashable] = set()
        self._processing: set[Hashable] = set()
        self._failures: dict[Hashable, int] = {}
        #: key -> (loop time it fires at, handle); the time is kept here because uvloop returns a
        #: plain Handle, without ``when()``, for a delay under a millisecond
        self._timers: dict[Hashable, tuple[float, asyncio.Handle]] = {}

    def __len__(self) -> int:
        return len(self._dirty)

    def add(self, key: Hashable) -> None:
        if key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._queue.put_nowait(key)

    def add_after(self, key: Hashable, delay: float, *, replace: bool = False) -> None:
        """Add ``key`` after ``delay`` seconds; an earlier pending timer wins, unless ``replace``."""
        if replace:
            self.cancel_timer(key)
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        when = loop.time() + delay
        timer = self._timers.get(key)
        if timer is not None:
            if timer[0] <= when + 0.001:
                return  # an earlier one is pending
            timer[1].cancel()
        self._timers[key] = (when, loop.call_at(when, self._fire, key))

    def cancel_timer(self, key: Hashable) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer[1].cancel()

    def _fire(self, key: Hashable) -> None:
        self._timers.pop(key, None)
        self.add(key)

    def retry(self, key: Hashable, cap: float | None = None) -> float:
        """Add ``key`` again after its next backoff delay (at most ``cap``); returns the delay."""
        n = self._failures.get(key, 0)
        self._failures[key] = n + 1
        delay: float = min(self.cap if cap is None else cap, self.base * (2 ** min(n, 30)))  # int ** int is Any
        if self.jitter:
            delay *= 0.8 + 0.4 * random.random()
        self.add_after(key, delay)
        return delay

    def forget(self, key: Hashable) -> None:
        self._failures.pop(key, None)

    def failures(self, key: Hashable) -> int:
        return self._failures.get(key, 0)

    async def get(self) -> Hashable:
        while True:
            key = await self._queue.get()
            if key in self._dirty and key not in self._processing:  # else dropped, or queued twice
                self._dirty.discard(key)
                self._processing.add(key)
                return key

    def done(self, key: Hashable) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._queue.put_nowait(key)

    def drop(self, predicate: Callable[[Any], bool]) -> None:
        """Forget the queued keys matching ``predicate``, their timers and failure counts."""
        self._dirty = {k for k in self._dirty if not predicate(k)}
        for k in [k for k in self._timers if predicate(k)]:
            self._timers.pop(k)[1].cancel()
        for k in [k for k in self._failures if predicate(k)]:
            self._failures.pop(k)

    def close(self) -> None:
        for _, handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
