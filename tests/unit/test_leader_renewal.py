"""Leader election against a hub that answers slowly: as client-go, a renewal may take what is
left of the renew deadline, so a leader whose hub needs longer than the retry period to answer
(a hub saturated by a thousand clusters attaching) keeps its Lease. Before, each attempt was cut
at the retry period and a leader lost its Lease on a hub that answered every request."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping
from typing import Any

from fleetplane.kube.client import Client
from fleetplane.kube.leaderelection import LeaderElectionConfig, LeaderElector


class SlowLeaseStore(Client):
    """One Lease, every request answered after ``delay`` seconds (the elector is what is tested)."""

    def __init__(self, delay: float) -> None:  # no connection: nothing is sent anywhere
        self.delay = delay
        self.lease: dict[str, Any] | None = None
        self.rv = 0
        self.renewals = 0
        #: set at the fifth renewal
        self.renewed_five_times = asyncio.Event()

    async def get(self, path: str, query: Mapping[str, Any] | None = None) -> Any:
        await asyncio.sleep(self.delay)
        return copy.deepcopy(self.lease)

    def _store(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        self.rv += 1
        self.lease = {**copy.deepcopy(dict(obj)), "metadata": {**obj["metadata"], "resourceVersion": str(self.rv)}}
        return copy.deepcopy(self.lease)

    async def create(self, path: str, obj: Mapping[str, Any], manager: str | None = None) -> dict[str, Any]:
        await asyncio.sleep(self.delay)
        return self._store(obj)

    async def replace(self, path: str, obj: Mapping[str, Any], manager: str | None = None) -> dict[str, Any]:
        await asyncio.sleep(self.delay)
        self.renewals += 1
        if self.renewals >= 5:
            self.renewed_five_times.set()
        return self._store(obj)


def test_a_leader_keeps_its_lease_when_the_hub_answers_slower_than_the_retry_period() -> None:
    async def go() -> tuple[bool, int]:
        # get + replace: 0.7 s a renewal, longer than the retry period and than the lease's slack
        # past the renew deadline (0.5 s)
        hub = SlowLeaseStore(delay=0.35)
        elector = LeaderElector(hub, LeaderElectionConfig("slow", lease_duration=2.5, renew_deadline=2.0,
                                                          retry_period=0.4, release_on_cancel=False))
        lost = asyncio.Event()

        async def work() -> None:
            await asyncio.Event().wait()  # leads until cancelled

        task = asyncio.create_task(elector.run(work, on_stopped_leading=lost.set))
        # five renewals (more than twice the renew deadline) or the loss, whichever comes first
        waits = [asyncio.create_task(hub.renewed_five_times.wait()), asyncio.create_task(lost.wait())]
        await asyncio.wait(waits, timeout=30, return_when=asyncio.FIRST_COMPLETED)
        for w in waits:
            w.cancel()
        leading = elector.is_leader and not lost.is_set()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return leading, hub.renewals

    leading, renewals = asyncio.run(go())
    assert leading, f"lost the Lease after {renewals} renewals"
