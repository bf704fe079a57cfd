"""A rate-limited, coalescing writer of ClusterProfile status, for cluster managers.

KEP-4322 ("Scalability implication"): the status of one profile should change at most once per
30 s on average, with bursts of up to 10 (initial join, a sudden storm). :class:`StatusWriter`
keeps that budget with a token bucket per profile (capacity ``burst`` = 10, refilled at
``rate`` = 1/30 token per second; every write *attempt* costs a token) and coalesces:

- ``submit(namespace, name, status)`` only records the desired status and returns at once;
- while a profile waits for a token, newer submissions replace older ones (the latest wins),
  so however often a manager submits, the hub sees at most ``burst + rate * t`` writes in ``t``
  seconds per profile;
- nothing is lost: the last desired status is always written eventually; a write that fails
  transiently is retried (with backoff, still within the budget) unless a newer status came;
  a status identical to the last one written is not written again;
- a write the hub refuses for good (400, 403, 404, 405, 415, 422) is dropped and reported
  through ``on_error`` and :attr:`StatusWriter.errors`; the next ``submit`` tries again.

Writes are server-side apply requests (``application/apply-patch+yaml``, ``force=true``) to the
``/status`` subresource through :class:`fleetplane.kube.client.Client` (a kubernetes_asyncio
``ApiClient`` is accepted and borrowed), with the writer's own field manager, as the
SIG's guide for cluster managers recommends: list entries (conditions by type, properties and
access providers by name) merge with those other writers own, and entries this writer stops
sending are removed. Pass ``write=`` to use any other client.

The clock is injectable (:class:`FakeClock` for tests: no real sleeping).
"""

from __future__ import annotations

import asyncio
import copy
import heapq
import itertools
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from .constants import API_VERSION, GROUP, KIND, PLURAL, STATUS_UPDATE_BURST, STATUS_UPDATE_RATE, VERSION
from .model import ClusterProfile, ClusterProfileStatus

__all__ = ["Clock", "FakeClock", "StatusWriter", "SystemClock", "TokenBucket", "WriteError"]

log = logging.getLogger(__name__)

WriteFn = Callable[[str, str, dict[str, Any]], Awaitable[Any]]
Key = tuple[str, str]

#: HTTP codes after which retrying the same status cannot succeed.
PERMANENT_CODES = frozenset({400, 403, 404, 405, 415, 422})


class Clock(Protocol):
    def monotonic(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class FakeClock:
    """A clock that only moves when told: ``await clock.advance(30)`` wakes the sleepers due by then."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.now + seconds, next(self._seq), fut))
        await fut

    @property
    def sleepers(self) -> int:
        return sum(1 for _, _, f in self._sleepers if not f.done())

    async def settle(self, rounds: int = 50) -> None:
        """Let every runnable task run until it blocks again."""
        for _ in range(rounds):
            await asyncio.sleep(0)

    async def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds``, waking sleepers in order and letting them run."""
        target = self.now + seconds
        await self.settle()
        while self._sleepers and self._sleepers[0][0] <= target:
            wake, _, fut = heapq.heappop(self._sleepers)
            self.now = max(self.now, wake)
            if not fut.done():
                fut.set_result(None)
            await self.settle()
        self.now = target
        await self.settle()


class TokenBucket:
    """``burst`` tokens, refilled continuously at ``rate`` per second; one token per write."""

    EPSILON = 1e-9

    def __init__(self, rate: float, burst: int, now: float) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("rate must be > 0 and burst >= 1")
        self.rate = rate
        self.burst = burst
        self.tokens = float(burst)
        self.stamp = now

    def _refill(self, now: float) -> None:
        if now > self.stamp:
            self.tokens = min(float(self.burst), self.tokens + (now - self.stamp) * self.rate)
            self.stamp = now

    def delay(self, now: float) -> float:
        """Seconds until a token is available (0 if one is)."""
        self._refill(now)
        return 0.0 if self.tokens >= 1 - self.EPSILON else (1 - self.tokens) / self.rate

    def take(self, now: float) -> bool:
        self._refill(now)
        if self.tokens < 1 - self.EPSILON:
            return False
        self.tokens -= 1
        return True

    def full(self, now: float) -> bool:
        self._refill(now)
        return self.tokens >= self.burst - self.EPSILON


class WriteError(Exception):
    """A status write the hub refused for good (kept in :attr:`StatusWriter.errors`)."""

    def __init__(self, key: Key, code: int | None, cause: BaseException) -> None:
        super().__init__(f"status of ClusterProfile {key[0]}/{key[1]}: {cause}")
        self.key = key
        self.code = code
        self.cause = cause


@dataclass
class _Entry:
    bucket: TokenBucket
    desired: dict[str, Any] | None = None
    force: bool = False
    written: dict[str, Any] | None = None
    task: asyncio.Task[None] | None = None
    failures: int = 0


def _status_code(exc: BaseException) -> int | None:
    for attr in ("status", "code", "status_code"):
        v = getattr(exc, attr, None)
        if isinstance(v, int):
            return v
    resp = getattr(exc, "response", None)
    v = getattr(resp, "status_code", None) or getattr(resp, "status", None)
    return v if isinstance(v, int) else None


class StatusWriter:
    """Write ClusterProfile status within KEP-4322's budget (see the module docstring).

    Call :meth:`submit` from the event loop's thread. Use as an async context manager, or call
    :meth:`close` (``drain=True`` waits for pending writes first).
    """

    def __init__(self, api_client: Any = None, *, write: WriteFn | None = None,
                 field_manager: str = "fleetplane-inventory", rate: float = STATUS_UPDATE_RATE,
                 burst: int = STATUS_UPDATE_BURST, clock: Clock | None = None, max_in_flight: int = 16,
                 retry_backoff: float = 1.0, max_retry_backoff: float = 30.0,
                 on_error: Callable[[WriteError], None] | None = None) -> None:
        if write is None and api_client is None:
            raise ValueError("StatusWriter needs a client (fleetplane.kube.Client or an ApiClient) or a write function")
        self.api_client = api_client
        self.field_manager = field_manager
        self.rate = rate
        self.burst = burst
        self.clock: Clock = clock or SystemClock()
        self.retry_backoff = retry_backoff
        self.max_retry_backoff = max_retry_backoff
        self.on_error = on_error
        self._write = write or self._apply_status
        self._sem = asyncio.Semaphore(max_in_flight)
        self._entries: dict[Key, _Entry] = {}
        self._closed = False
        #: successful writes per (namespace, name)
        self.writes: Counter[Key] = Counter()
        #: write attempts per (namespace, name), failed ones included (what the budget limits)
        self.attempts: Counter[Key] = Counter()
        #: submissions that replaced a not-yet-written status
        self.coalesced: Counter[Key] = Counter()
        #: the last permanent error per (namespace, name)
        self.errors: dict[Key, WriteError] = {}

    # -- the API ----------------------------------------------------------------------------

    def submit(self, namespace: str, name: str, status: ClusterProfileStatus | Mapping[str, Any], *,
               force: bool = False) -> None:
        """Record the desired status of ``namespace/name``; it is written as soon as the budget allows.

        ``force`` writes it even if it equals the last status written (e.g. after someone else
        changed the fields this writer owns).
        """
        if self._closed:
            raise RuntimeError("StatusWriter is closed")
        doc = status.to_dict() if isinstance(status, ClusterProfileStatus) else copy.deepcopy(dict(status))
        key = (namespace, name)
        entry = self._entries.get(key)
        if entry is None:
            self._gc()
            entry = self._entries[key] = _Entry(TokenBucket(self.rate, self.burst, self.clock.monotonic()))
        if entry.desired is not None:
            self.coalesced[key] += 1
        entry.desired = doc
        entry.force = entry.force or force
        if entry.task is None:
            entry.task = asyncio.get_running_loop().create_task(self._run(key, entry), name=f"status-{namespace}/{name}")

    def submit_profile(self, profile: ClusterProfile, *, force: bool = False) -> None:
        """Submit ``profile.status`` for ``profile.namespace/profile.name``."""
        if not profile.name:
            raise ValueError("the profile has no name")
        self.submit(profile.namespace or "default", profile.name, profile.status or ClusterProfileStatus(), force=force)

    def desired(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The status that will be (or was last) written for ``namespace/name``."""
        entry = self._entries.get((namespace, name))
        if entry is None:
            return None
        doc = entry.desired if entry.desired is not None else entry.written
        return copy.deepcopy(doc)

    def pending(self) -> list[Key]:
        """Profiles with a status still to write (or being written)."""
        return [k for k, e in self._entries.items() if e.desired is not None or e.task is not None]

    def forget(self, namespace: str, name: str) -> None:
        """Drop what is known about a profile (e.g. it was deleted); a pending write is cancelled."""
        entry = self._entries.pop((namespace, name), None)
        if entry is not None and entry.task is not None:
            entry.task.cancel()

    async def flush(self) -> None:
        """Wait until every submitted status is written (or dropped after a permanent error)."""
        while True:
            tasks = [e.task for e in self._entries.values() if e.task is not None]
            if not tasks:
                return
            await asyncio.gather(*tasks, return_exceptions=True)

    async def close(self, *, drain: bool = False) -> dict[Key, dict[str, Any]]:
        """Stop; with ``drain``, first wait for pending writes. Returns the statuses never written."""
        if drain:
            await self.flush()
        self._closed = True
        unwritten = {k: copy.deepcopy(e.desired) for k, e in self._entries.items() if e.desired is not None}
        tasks = [e.task for e in self._entries.values() if e.task is not None]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return unwritten

    async def __aenter__(self) -> StatusWriter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close(drain=exc[0] is None)

    # -- the worker -------------------------------------------------------------------------

    def _gc(self) -> None:
        """Forget idle profiles whose bucket is full again (a new one would be identical)."""
        if len(self._entries) < 4096:
            return
        now = self.clock.monotonic()
        for k in [k for k, e in self._entries.items() if e.task is None and e.desired is None and e.bucket.full(now)]:
            del self._entries[k]

    async def _run(self, key: Key, entry: _Entry) -> None:
        try:
            while entry.desired is not None:
                if entry.desired == entry.written and not entry.force:
                    entry.desired = None
                    break
                wait = entry.bucket.delay(self.clock.monotonic())
                if wait > 0:
                    await self.clock.sleep(wait)
                    continue  # a newer status may have come in meanwhile
                status, force = entry.desired, entry.force
                entry.desired, entry.force = None, False
                entry.bucket.take(self.clock.monotonic())
                self.attempts[key] += 1
                try:
                    async with self._sem:
                        await self._write(key[0], key[1], status)
                except asyncio.CancelledError:
                    if entry.desired is None:
                        entry.desired, entry.force = status, force
                    raise
                except Exception as exc:  # noqa: BLE001 - every failure is either retried or reported
                    code = _status_code(exc)
                    if code in PERMANENT_CODES:
                        err = WriteError(key, code, exc)
                        self.errors[key] = err
                        log.warning("%s (not retried)", err)
                        if self.on_error is not None:
                            self.on_error(err)
                        continue
                    entry.failures += 1
                    if entry.desired is None:  # retry this one unless a newer status came
                        entry.desired, entry.force = status, force
                    backoff = min(self.max_retry_backoff, self.retry_backoff * 2 ** (entry.failures - 1))
                    log.info("status write for %s/%s failed (%s); retrying in %.1fs", key[0], key[1], exc, backoff)
                    await self.clock.sleep(backoff)
                else:
                    entry.written = status
                    entry.failures = 0
                    self.writes[key] += 1
                    self.errors.pop(key, None)
        finally:
            entry.task = None

    async def _apply_status(self, namespace: str, name: str, status: dict[str, Any]) -> Any:
        """Server-side apply of ``status`` to ``.../clusterprofiles/<name>/status``."""
        from ..kube.client import Client

        if not isinstance(self.api_client, Client):
            self.api_client = Client.over(self.api_client)
        body = {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": name, "namespace": namespace},
                "status": status}
        path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}/{name}/status"
        return await self.api_client.apply(path, body, self.field_manager, force=True)
