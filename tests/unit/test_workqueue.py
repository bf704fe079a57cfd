"""The shared work queue under uvloop, the loop every fleetplane process runs."""

from __future__ import annotations

import asyncio

import uvloop

from fleetplane.kube.workqueue import WorkQueue


def test_delayed_adds_under_uvloop_keep_the_earliest_and_fire():
    """uvloop hands back a plain Handle (no ``when()``) for a delay under a millisecond; a later
    add_after of the same key must neither crash (it once stopped a simulated cluster's
    controllers) nor replace the earlier timer."""

    async def main() -> list[str]:
        q = WorkQueue(base=0.01, cap=0.05)
        q.add_after("a", 0.0001)  # below uvloop's millisecond resolution: a plain Handle
        q.add_after("a", 5.0)  # later than the pending one: ignored
        q.add_after("b", 5.0)
        q.add_after("b", 0.01)  # earlier: replaces it
        got = [await asyncio.wait_for(q.get(), 2) for _ in range(2)]
        q.drop(lambda k: True)
        q.close()
        return got

    assert sorted(uvloop.run(main())) == ["a", "b"]
