"""The status writer's budget (1 update / 30 s per profile, burst 10), coalescing and retries, on a fake clock."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from fleetplane.inventory import ClusterProfile, FakeClock, StatusWriter, TokenBucket, WriteError


class ApiError(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status


class FakeHub:
    """Records writes with their (fake) time; can be told to fail the next writes."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.writes: list[tuple[float, str, str, dict]] = []
        self.failures: list[BaseException] = []
        self.stored: dict[tuple[str, str], dict] = {}

    async def write(self, namespace: str, name: str, status: dict) -> None:
        await asyncio.sleep(0)
        if self.failures:
            raise self.failures.pop(0)
        self.writes.append((self.clock.now, namespace, name, status))
        self.stored[(namespace, name)] = status

    def times(self, name: str = "c1") -> list[float]:
        return [t for t, _, n, _ in self.writes if n == name]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def hub(clock: FakeClock) -> FakeHub:
    return FakeHub(clock)


@pytest.fixture
async def writer(clock: FakeClock, hub: FakeHub):
    w = StatusWriter(write=hub.write, clock=clock)
    yield w
    await w.close()


def st(i: int) -> dict:
    return {"version": {"kubernetes": f"1.30.{i}"}}


def test_token_bucket() -> None:
    b = TokenBucket(rate=1 / 30, burst=10, now=0)
    for _ in range(10):
        assert b.delay(0) == 0 and b.take(0)
    assert not b.take(0)
    assert b.delay(0) == pytest.approx(30)
    assert b.delay(15) == pytest.approx(15)
    assert b.take(30) and b.delay(30) == pytest.approx(30)
    assert not b.full(30) and b.full(30 + 300)
    assert b.delay(10_000) == 0 and b.tokens == 10  # never more than the burst
    with pytest.raises(ValueError):
        TokenBucket(0, 10, 0)


async def test_burst_of_ten_then_one_per_30s(clock: FakeClock, hub: FakeHub, writer: StatusWriter) -> None:
    for i in range(12):
        writer.submit("ns", "c1", st(i))
        await clock.settle()
    assert hub.times() == [0.0] * 10  # the burst goes out at once
    assert writer.pending() == [("ns", "c1")]
    await clock.advance(29)
    assert len(hub.writes) == 10
    await clock.advance(1)
    # the 11th submission was superseded by the 12th while it waited: only the latest is written
    assert hub.times() == [0.0] * 10 + [30.0]
    assert hub.writes[-1][3] == st(11)
    assert writer.coalesced[("ns", "c1")] == 1
    assert writer.pending() == []


async def test_latest_wins_and_nothing_is_lost(clock: FakeClock, hub: FakeHub, writer: StatusWriter) -> None:
    for i in range(10):  # use up the burst
        writer.submit("ns", "c1", st(i))
        await clock.settle()
    for i in range(100, 200):  # a storm while throttled
        writer.submit("ns", "c1", st(i))
    await clock.advance(30)
    assert len(hub.writes) == 11 and hub.writes[-1][3] == st(199)
    await clock.advance(600)
    assert len(hub.writes) == 11  # nothing left to write
    assert hub.stored[("ns", "c1")] == st(199)


async def test_long_run_stays_within_budget(clock: FakeClock, hub: FakeHub, writer: StatusWriter) -> None:
    # a chatty manager: a new status every second for an hour
    for i in range(3600):
        writer.submit("ns", "c1", st(i))
        await clock.advance(1)
    await clock.advance(60)
    times = hub.times()
    assert len(times) <= 10 + 3600 / 30 + 1
    assert len(times) >= 3600 / 30  # and the budget is actually used
    for start in range(0, 3600, 30):  # any window of t seconds holds at most 10 + t/30 writes
        for length in (30, 300, 1800):
            n = sum(1 for t in times if start <= t < start + length)
            assert n <= 10 + length / 30
    # after the burst, writes are at least 30 s apart
    later = times[10:]
    assert all(b - a >= 30 - 1e-6 for a, b in zip(later, later[1:], strict=False))
    assert hub.stored[("ns", "c1")] == st(3599)  # the last status was written


async def test_profiles_have_their_own_budget(clock: FakeClock, hub: FakeHub, writer: StatusWriter) -> None:
    for i in range(10):
        for name in ("a", "b", "c"):
            writer.submit("ns", name, st(i))
        await clock.settle()
    assert len(hub.writes) == 30
    writer.submit("ns", "a", st(99))
    writer.submit("ns", "d", st(99))
    await clock.settle()
    assert hub.times("d") == [0.0] and len(hub.times("a")) == 10
    await clock.advance(30)
    assert len(hub.times("a")) == 11


async def test_identical_status_is_not_rewritten_unless_forced(clock: FakeClock, hub: FakeHub, writer: StatusWriter) -> None:
    writer.submit("ns", "c1", st(1))
    await clock.settle()
    writer.submit("ns", "c1", st(1))
    await clock.settle()
    assert len(hub.writes) == 1
    writer.submit("ns", "c1", st(1), force=True)
    await clock.settle()
    assert len(hub.writes) == 2
    assert writer.desired("ns", "c1") == st(1)
    assert writer.desired("ns", "other") is None


async def test_transient_errors_are_retried_with_backoff(clock: FakeClock, hub: FakeHub) -> None:
    errors: list[WriteError] = []
    w = StatusWriter(write=hub.write, clock=clock, retry_backoff=1, max_retry_backoff=8, on_error=errors.append)
    hub.failures = [ApiError(500), ApiError(429), ConnectionError("reset"), ApiError(409)]
    w.submit("ns", "c1", st(1))
    await clock.advance(0.5)
    assert hub.writes == [] and w.attempts[("ns", "c1")] == 1
    await clock.advance(1 + 2 + 4)  # backoff 1, 2, 4, 8
    assert hub.writes == []
    await clock.advance(8)
    assert [s for _, _, _, s in hub.writes] == [st(1)]
    assert w.attempts[("ns", "c1")] == 5 and w.writes[("ns", "c1")] == 1
    assert errors == []
    await w.close()


async def test_retry_gives_way_to_a_newer_status(clock: FakeClock, hub: FakeHub, writer: StatusWriter) -> None:
    hub.failures = [ApiError(503)]
    writer.submit("ns", "c1", st(1))
    await clock.settle()
    writer.submit("ns", "c1", st(2))
    await clock.advance(1)
    assert [s for _, _, _, s in hub.writes] == [st(2)]


async def test_retries_spend_the_budget(clock: FakeClock, hub: FakeHub) -> None:
    w = StatusWriter(write=hub.write, clock=clock, retry_backoff=0.001, max_retry_backoff=0.001)
    hub.failures = [ApiError(500)] * 20
    w.submit("ns", "c1", st(1))
    await clock.advance(1)
    assert w.attempts[("ns", "c1")] == 10  # the burst, then the bucket says wait
    await clock.advance(30)
    assert w.attempts[("ns", "c1")] == 11
    await w.close()


async def test_permanent_errors_are_reported_not_retried(clock: FakeClock, hub: FakeHub) -> None:
    errors: list[WriteError] = []
    w = StatusWriter(write=hub.write, clock=clock, on_error=errors.append)
    hub.failures = [ApiError(422)]
    w.submit("ns", "c1", st(1))
    await clock.advance(60)
    assert hub.writes == [] and w.attempts[("ns", "c1")] == 1
    assert len(errors) == 1 and errors[0].code == 422 and errors[0].key == ("ns", "c1")
    assert w.errors[("ns", "c1")] is errors[0]
    assert w.pending() == []
    w.submit("ns", "c1", st(2))  # the next submission tries again
    await clock.settle()
    assert [s for _, _, _, s in hub.writes] == [st(2)]
    assert ("ns", "c1") not in w.errors
    await w.close()


async def test_close_reports_unwritten_and_drain_writes(clock: FakeClock, hub: FakeHub) -> None:
    w = StatusWriter(write=hub.write, clock=clock, burst=1)
    w.submit("ns", "c1", st(1))
    await clock.settle()
    w.submit("ns", "c1", st(2))
    await clock.settle()
    assert await w.close() == {("ns", "c1"): st(2)}
    with pytest.raises(RuntimeError):
        w.submit("ns", "c1", st(3))

    w2 = StatusWriter(write=hub.write, clock=clock, burst=1)
    w2.submit("ns", "c2", st(1))
    await clock.settle()
    w2.submit("ns", "c2", st(2))
    drained = asyncio.ensure_future(w2.close(drain=True))
    await clock.advance(30)
    assert await drained == {}
    assert hub.stored[("ns", "c2")] == st(2)


async def test_submit_profile_and_forget(clock: FakeClock, hub: FakeHub, writer: StatusWriter) -> None:
    cp = ClusterProfile.new("c1", "mgr", namespace="ns")
    cp.kubernetes_version = "1.31.0"
    cp.set_condition("ControlPlaneHealthy", True, "Healthy", now=datetime(2024, 1, 1, tzinfo=UTC))
    writer.submit_profile(cp)
    await clock.settle()
    assert hub.stored[("ns", "c1")] == cp.status.to_dict()
    writer.forget("ns", "c1")
    assert writer.desired("ns", "c1") is None


async def test_needs_a_client_or_a_write_function() -> None:
    with pytest.raises(ValueError):
        StatusWriter()
