"""The watches' shared timer heap (server/watch.py ``Timers``) on a real uvloop loop: what is due
runs in time order, a cancelled entry never runs, a callback may schedule the next (bookmarks
do), one that raises does not stop the others, and a heap mostly cancelled is rebuilt without
losing a live entry."""

from __future__ import annotations

import asyncio

import uvloop

from fleetplane.server.watch import Timers


def run(coro) -> None:
    uvloop.run(asyncio.wait_for(coro, 10))


def test_due_entries_run_in_time_order_and_cancelled_ones_never() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        timers, ran, done = Timers(loop), [], loop.create_future()
        now = loop.time()
        for i in (5, 1, 4, 2, 3):
            timers.call_at(now + i * 0.02, lambda i=i: ran.append(i))
        gone = timers.call_at(now + 0.05, lambda: ran.append("cancelled"))
        timers.cancel(gone)
        timers.cancel(gone)  # twice: nothing more
        timers.call_at(now + 0.12, lambda: done.set_result(None))
        await done
        assert ran == [1, 2, 3, 4, 5]
        assert timers.heap == [] and timers.cancelled == 0 and timers.handle is None

    run(main())


def test_a_callback_schedules_the_next_and_a_failing_one_stops_nothing() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        timers, ticks, done = Timers(loop), [], loop.create_future()

        def tick() -> None:
            ticks.append(loop.time())
            if len(ticks) < 3:
                timers.call_at(loop.time() + 0.02, tick)
            else:
                done.set_result(None)

        def fail() -> None:
            raise RuntimeError("a broken timer")

        timers.call_at(loop.time() + 0.01, fail)
        timers.call_at(loop.time() + 0.01, tick)
        await done
        assert len(ticks) == 3 and ticks == sorted(ticks)

    run(main())


def test_a_mostly_cancelled_heap_is_rebuilt_with_every_live_entry() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        timers, ran, done = Timers(loop), [], loop.create_future()
        now = loop.time()
        entries = [timers.call_at(now + 60 + i, lambda: ran.append("late")) for i in range(200)]
        keep = [timers.call_at(now + 0.01 * (i + 1), lambda i=i: ran.append(i)) for i in range(10)]
        for entry in entries:
            timers.cancel(entry)
        assert len(timers.heap) < 200  # rebuilt on the way
        assert all(e in timers.heap for e in keep)
        timers.call_at(now + 0.2, lambda: done.set_result(None))
        await done
        assert ran == list(range(10))
        # what is left waits, emptied, for its time: fewer than a rebuild's threshold
        assert len(timers.heap) <= 64 and all(e[2] is None for e in timers.heap)

    run(main())
