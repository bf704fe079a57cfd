"""The partition bookkeeping alone (fleetplane.fleet.splitter.eviction): pure, time is an input."""

from __future__ import annotations

import math

from fleetplane.fleet.placement import ClusterInfo
from fleetplane.fleet.splitter.eviction import Eviction, PartitionState, step

GRACE, REJOIN = 30.0, 60.0
T0 = 1_000_000.0


class World:
    def __init__(self) -> None:
        self.infos: dict[str, ClusterInfo] = {"east": ClusterInfo("east", since=T0 - 1000),
                                              "west": ClusterInfo("west", since=T0 - 1000)}
        self.state = PartitionState()
        self.children = {"east": 4, "west": 4}
        self.evictions = 0
        self.restorations = 0

    def health(self, name: str, healthy: bool, at: float) -> None:
        self.infos[name] = ClusterInfo(name, healthy=healthy, since=at, health_reason="" if healthy else "Timeout",
                                       health_message="" if healthy else "context deadline exceeded")

    def step(self, now: float):
        out = step(self.state, self.infos.get, self.children, now, GRACE, REJOIN)
        self.evictions += sum(1 for _, r, _ in out.events if r == "ReplicasEvicted")
        self.restorations += len(out.restored)
        return out


def test_unreachable_replicas_stop_counting_then_are_evicted_then_return() -> None:
    w = World()
    assert w.step(T0).condition is None
    w.health("west", False, T0)
    held = w.step(T0 + 1)
    assert held.uncounted.keys() == {"west"} and not held.frozen
    assert held.condition is not None and held.condition[1] == "ClusterUnreachable"
    assert "west unreachable since" in held.condition[2] and "Timeout" in held.condition[2]
    assert held.rechecks == [T0 + GRACE]
    assert [e[1] for e in held.events] == ["ClusterUnreachable"]
    assert w.step(T0 + 2).events == []  # announced once
    ev = w.step(T0 + GRACE)
    assert ev.frozen == {"west"} and ev.condition is not None and ev.condition[1] == "ReplicasEvicted"
    assert [e[1] for e in ev.events] == ["ReplicasEvicted"]
    assert w.state.evictions["west"].replicas == 4
    assert ev.filtered["west"].startswith("unhealthy since")
    assert w.step(T0 + GRACE + 5).events == []
    # back: frozen until it has been healthy for the rejoin grace, from when it was first seen so
    w.health("west", True, T0 + 100)
    back = w.step(T0 + 100.5)
    assert back.frozen == {"west"} and back.condition is not None and back.condition[1] == "ClusterReturning"
    assert back.rechecks == [T0 + 100.5 + REJOIN] and [e[1] for e in back.events] == ["ClusterReturning"]
    assert w.step(T0 + 100.5 + REJOIN - 0.1).frozen == {"west"}
    done = w.step(T0 + 100.5 + REJOIN)
    assert done.restored == {"west"} and not done.frozen and done.condition is None
    assert [e[1] for e in done.events] == ["ReplicasRestored"]
    assert w.state.evictions == {}


def test_a_record_ends_with_its_child_or_its_cluster() -> None:
    w = World()
    w.health("west", False, T0)
    w.step(T0 + GRACE)
    assert "west" in w.state.evictions
    w.children = {"east": 4}  # the parent was deleted, or someone deleted the child
    assert w.step(T0 + GRACE + 1).frozen == set() and w.state.evictions == {}
    w.children = {"east": 4, "west": 4}
    w.step(T0 + GRACE + 2)
    del w.infos["west"]  # the ClusterProfile is gone: not partitioned, gone (the usual path)
    assert w.step(T0 + GRACE + 3).uncounted == {} and w.state.evictions == {}


def test_records_survive_a_restart() -> None:
    rec = Eviction(4, T0, "ControlPlaneHealthy=False, Timeout", T0 + 50)
    assert Eviction.from_dict(rec.to_dict()) == rec


def test_a_cluster_unreachable_again_while_returning_stays_evicted() -> None:
    w = World()
    w.health("west", False, T0)
    w.step(T0 + GRACE)
    w.health("west", True, T0 + 40)
    w.step(T0 + 40)
    w.health("west", False, T0 + 50)
    again = w.step(T0 + 50)
    assert again.frozen == {"west"} and [e[1] for e in again.events] == ["ClusterUnreachable"]
    assert "again" in again.events[0][2]
    w.health("west", True, T0 + 55)
    assert w.step(T0 + 55).frozen == {"west"}  # the window starts over
    assert w.step(T0 + 55 + REJOIN - 1).frozen == {"west"}
    assert w.step(T0 + 55 + REJOIN).restored == {"west"}


def flap(w: World, down: float, up: float, until: float, tick: float = 0.5) -> None:
    """West down for ``down`` seconds, up for ``up``, again and again, reconciled every ``tick``."""
    t, healthy, next_flip = T0, True, T0
    while t < until:
        if t >= next_flip:
            healthy = not healthy
            w.health("west", healthy, t)
            next_flip = t + (up if healthy else down)
        w.step(t)
        t += tick


def test_flapping_faster_than_the_rejoin_grace_moves_once() -> None:
    w = World()
    flap(w, down=GRACE + 5, up=REJOIN - 10, until=T0 + 3600)
    assert (w.evictions, w.restorations) == (1, 0)


def test_flapping_faster_than_the_grace_period_moves_nothing() -> None:
    w = World()
    flap(w, down=GRACE - 5, up=3, until=T0 + 3600)
    assert (w.evictions, w.restorations) == (0, 0)


def test_the_bound_on_moves_whatever_the_schedule() -> None:
    """At most one eviction and one restoration per unhealthy grace + rejoin grace."""
    span = 3600.0
    bound = math.ceil(span / (GRACE + REJOIN))
    for down, up in ((GRACE + 1, REJOIN + 1), (GRACE + 0.5, REJOIN + 0.5), (2 * GRACE, 2 * REJOIN), (GRACE + 0.5, REJOIN + 30)):
        w = World()
        flap(w, down=down, up=up, until=T0 + span)
        assert 0 < w.evictions <= bound and w.restorations <= w.evictions, (down, up, w.evictions, w.restorations)
