"""The controller runtime (fleetplane.kube.controller): keys in, reconcile(key) out, with what each
Result means, errors retried with backoff, and a clean shutdown."""

from __future__ import annotations

import argparse
import asyncio
from dataclasses import dataclass

import pytest

from fleetplane.kube.controller import Controller, Result, every
from fleetplane.kube.options import add_arguments, from_args, option, split_list

DEADLINE = 5.0


async def test_errors_are_retried_with_backoff_and_requeue_after_comes_back() -> None:
    calls: list[tuple[str, float]] = []
    done = asyncio.Event()
    loop = asyncio.get_running_loop()

    async def reconcile(key: str) -> Result | None:
        calls.append((key, loop.time()))
        n = sum(1 for k, _ in calls if k == key)
        if key == "flaky" and n < 3:
            raise RuntimeError("not yet")
        if key == "periodic" and n < 2:
            return Result(requeue_after=0.05)
        if len({k for k, _ in calls}) == 2 and sum(1 for k, _ in calls if k == "flaky") >= 3 \
                and sum(1 for k, _ in calls if k == "periodic") >= 2:
            done.set()
        return None

    ctrl: Controller[str] = Controller("test", reconcile, workers=2, base=0.01, cap=0.02)
    ctrl.enqueue("flaky")
    ctrl.enqueue("periodic")
    task = asyncio.create_task(ctrl.run())
    await asyncio.wait_for(done.wait(), DEADLINE)
    assert [k for k, _ in calls].count("flaky") == 3 and ctrl.queue.failures("flaky") == 0  # forgotten once it worked
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_one_key_is_never_reconciled_twice_at_once_and_adds_meanwhile_coalesce() -> None:
    running, release, seen = asyncio.Event(), asyncio.Event(), []

    async def reconcile(key: str) -> None:
        seen.append(key)
        running.set()
        await release.wait()

    ctrl: Controller[str] = Controller("test", reconcile, workers=4)
    task = asyncio.create_task(ctrl.run())
    ctrl.enqueue("a")
    await asyncio.wait_for(running.wait(), DEADLINE)
    for _ in range(5):
        ctrl.enqueue("a")  # while it runs: one more pass afterwards, not five, and not in parallel
    assert seen == ["a"]
    release.set()
    running.clear()
    await asyncio.wait_for(running.wait(), DEADLINE)  # the second pass
    assert seen == ["a", "a"] and len(ctrl.queue) == 0
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_source_runs_beside_the_workers_and_stops_with_them() -> None:
    ticks: list[int] = []
    reconciled = asyncio.Event()

    async def reconcile(key: str) -> None:
        reconciled.set()

    ctrl: Controller[str] = Controller("test", reconcile)
    task = asyncio.create_task(ctrl.run(every(0.01, lambda: (ticks.append(1), ctrl.enqueue("resync")))))
    await asyncio.wait_for(reconciled.wait(), DEADLINE)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert ticks and task.done()


@dataclass(frozen=True)
class _Opts:
    interval: float = option(10.0, "how often", metavar="SECONDS")
    names: tuple[str, ...] | None = option(None, "which", type=split_list)
    shared: float | None = option(None, "not prefixed", type=float, prefixed=False)
    enabled: bool = option(True, "on or off")
    internal: int = 3


def test_flags_come_from_the_options_dataclass() -> None:
    p = argparse.ArgumentParser()
    add_arguments(p, _Opts, prefix="x-")
    args = p.parse_args(["--x-interval", "0.5", "--x-names", "a, b", "--shared", "2", "--no-x-enabled"])
    assert from_args(_Opts, args, prefix="x-", internal=4) == _Opts(0.5, ("a", "b"), 2.0, False, 4)
    assert from_args(_Opts, p.parse_args([]), prefix="x-") == _Opts()
    only = argparse.ArgumentParser()
    add_arguments(only, _Opts, only=["interval"])
    with pytest.raises(SystemExit):
        only.parse_args(["--names", "a"])
    with pytest.raises(ValueError):
        add_arguments(argparse.ArgumentParser(), _Opts, only=["internal"])  # not a flag
