"""One priority level's seats and queues: shuffle sharding and fair queuing (kube's
``apiserver/pkg/util/flowcontrol/fairqueuing/queueset`` and ``util/shufflesharding``), cut to
what one event loop needs.

- A flow's hash deals it a *hand* of ``handSize`` distinct queues out of ``queues``; its request
  joins the shortest queue of the hand (waiting plus executing), so a heavy flow fills a few
  queues while most flows keep a queue of their own.
- A request runs at once if the level has a free seat (nobody can be waiting then); otherwise it
  waits in its queue, or is rejected (``queue-full``) if that queue holds ``queueLengthLimit``.
- When a seat frees, the next request comes from the queue whose head started earliest in
  *virtual time* (start-time fair queuing): every dispatch from a queue advances that queue's
  virtual start by one request, and a queue that becomes busy starts at the level's virtual
  clock, so an idle flow does not bank credit and a flooding flow gets one turn per turn of
  each other busy flow; a queue that goes idle is not charged ahead of the clock either, so a
  client sending one request at a time is served at the next free seat. (kube charges estimated seat-seconds; fleetplane charges one unit per
  request, since every request holds one seat.)
- A level whose limit response is ``Reject`` has no queues: no free seat means 429 at once.
- Exempt levels have no limit; they only count.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import deque
from dataclasses import dataclass, field


def flow_hash(schema: str, distinguisher: str) -> int:
    """A 64-bit hash of a flow's identity (kube hashes the same pair)."""
    digest = hashlib.blake2b(f"{schema}\x00{distinguisher}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def deal(hash_value: int, deck: int, hand: int) -> list[int]:
    """``hand`` distinct cards out of ``deck``, chosen by ``hash_value`` (shuffle sharding): the
    hash is read as mixed-radix digits (deck, deck-1, ...), each picking one of the cards left."""
    picked: list[int] = []
    for i in range(min(hand, deck)):
        hash_value, digit = divmod(hash_value, deck - i)
        card = digit
        for taken in sorted(picked):  # skip over the cards already dealt
            if card >= taken:
                card += 1
        picked.append(card)
    return picked


@dataclass(frozen=True)
class Queuing:
    queues: int
    hand_size: int
    queue_length_limit: int


class Rejected(Exception):
    """The level cannot take the request: ``reason`` as kube's metric label
    (``queue-full``, ``concurrency-limit``, ``time-out``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(eq=False)
class _Queue:
    index: int
    waiting: deque[_Waiter] = field(default_factory=deque)
    executing: int = 0
    #: the virtual time the next request dispatched from here starts at
    next_start: float = 0.0


@dataclass(eq=False)
class _Waiter:
    future: asyncio.Future[None]
    flow: int
    queue: _Queue | None = None


@dataclass(eq=False)
class Seat:
    """One executing request; give it back with :meth:`QueueSet.release` exactly once."""

    queue: _Queue | None
    released: bool = False


class QueueSet:
    def __init__(self, limit: int, queuing: Queuing | None, exempt: bool = False) -> None:
        self.limit = limit
        self.exempt = exempt
        self.queuing = queuing
        self.executing = 0
        self.virtual_time = 0.0
        self.queues = [_Queue(i) for i in range(queuing.queues)] if queuing else []

    @property
    def waiting(self) -> int:
        return sum(len(q.waiting) for q in self.queues)

    def reconfigure(self, limit: int, queuing: Queuing | None, exempt: bool = False) -> None:
        """A changed PriorityLevelConfiguration: new limit and queues; waiting requests are dealt
        into the new queues in their order (or dispatched, or rejected if there are none now)."""
        self.limit, self.exempt = limit, exempt
        if queuing != self.queuing:
            old = [w for q in self.queues for w in q.waiting]
            self.queuing = queuing
            self.queues = [_Queue(i) for i in range(queuing.queues)] if queuing else []
            for w in old:
                if w.future.done():
                    continue
                if queuing is None:
                    w.future.set_exception(Rejected("concurrency-limit"))
                    continue
                w.queue = self._choose(w.flow)
                self._enqueue(w.queue, w)
        self._dispatch()

    def _choose(self, flow: int) -> _Queue:
        assert self.queuing is not None
        hand = deal(flow, len(self.queues), self.queuing.hand_size)
        return min((self.queues[i] for i in hand), key=lambda q: (len(q.waiting) + q.executing, q.index))

    def _enqueue(self, queue: _Queue, waiter: _Waiter) -> None:
        if not queue.waiting and not queue.executing:
            queue.next_start = max(queue.next_start, self.virtual_time)
        queue.waiting.append(waiter)

    async def acquire(self, flow: int, timeout: float) -> Seat:
        """A seat for a request of ``flow``, waiting at most ``timeout`` seconds in a queue."""
        if self.exempt:
            self.executing += 1
            return Seat(None)
        queue = self._choose(flow) if self.queuing else None
        if self.executing < self.limit:
            self._start(queue)
            return Seat(queue)
        if queue is None:
            raise Rejected("concurrency-limit")
        assert self.queuing is not None
        if len(queue.waiting) >= self.queuing.queue_length_limit:
            raise Rejected("queue-full")
        waiter = _Waiter(asyncio.get_running_loop().create_future(), flow, queue)
        self._enqueue(queue, waiter)
        try:
            await asyncio.wait_for(asyncio.shield(waiter.future), timeout)
        except TimeoutError:
            if waiter.future.done() and not waiter.future.cancelled() and waiter.future.exception() is None:
                return Seat(waiter.queue)  # dispatched in the same instant the wait ran out
            self._forget(waiter)
            raise Rejected("time-out") from None
        except asyncio.CancelledError:  # the client went away while waiting
            if waiter.future.done() and not waiter.future.cancelled() and waiter.future.exception() is None:
                self.release(Seat(waiter.queue))
            else:
                self._forget(waiter)
            raise
        return Seat(waiter.queue)

    def _forget(self, waiter: _Waiter) -> None:
        if not waiter.future.done():
            waiter.future.cancel()
        if waiter.queue is not None:
            try:
                waiter.queue.waiting.remove(waiter)
            except ValueError:
                pass

    def _start(self, queue: _Queue | None) -> None:
        self.executing += 1
        if queue is not None:
            queue.executing += 1
            start = max(queue.next_start, self.virtual_time)
            self.virtual_time = start
            queue.next_start = start + 1.0

    def release(self, seat: Seat) -> None:
        if seat.released:
            return
        seat.released = True
        self.executing -= 1
        queue = seat.queue
        if queue is not None:
            queue.executing -= 1
            if not queue.executing and not queue.waiting:
                # idle again: its next request starts at the level's clock, not one unit ahead
                # of it (kube charges a request its actual service time, which for a quick
                # request is about nothing; this is the same for a flow that went idle)
                queue.next_start = min(queue.next_start, self.virtual_time)
        self._dispatch()

    def _dispatch(self) -> None:
        while self.exempt or self.executing < self.limit:
            best: _Queue | None = None
            for q in self.queues:
                while q.waiting and q.waiting[0].future.done():
                    q.waiting.popleft()  # timed out or cancelled
                if q.waiting and (best is None or (q.next_start, len(q.waiting) + q.executing)
                                  < (best.next_start, len(best.waiting) + best.executing)):
                    best = q  # ties go to the least loaded queue: a light flow before a heavy one's other queues
            if best is None:
                return
            waiter = best.waiting.popleft()
            self._start(best)
            waiter.future.set_result(None)
