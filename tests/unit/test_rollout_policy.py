"""The rollout policy (fleet/placement/rollout.py): parsing with field paths, stage assignment, and
the stage machine (fleet/splitter/stages.py) driven step by step with explicit times."""

from __future__ import annotations

import pytest
import yaml

from fleetplane.fleet.placement import ClusterInfo, PolicyError, parse_policy
from fleetplane.fleet.placement.rollout import go_duration
from fleetplane.fleet.splitter import stages
from fleetplane.fleet.splitter.stages import ClusterView

P = "placement.fleetplane.io/policy"

POLICY = {"rollout": {"stages": [{"clusters": ["canary"], "pause": "30s"}, {"percent": 50, "maxConcurrency": 1}, {}],
                      "minSuccessTime": "10s", "progressDeadline": "5m",
                      "healthCheck": "self.status.availableReplicas >= self.spec.replicas"}}


def policy(doc: dict) -> object:
    return parse_policy(yaml.safe_dump(doc))


def errors(doc: dict) -> list[str]:
    with pytest.raises(PolicyError) as exc:
        policy(doc)
    return exc.value.errors


def test_the_documented_shape_parses() -> None:
    ro = parse_policy(yaml.safe_dump(POLICY)).rollout
    assert ro is not None
    assert len(ro.stages) == 3
    assert ro.stages[0].pause == 30 and not ro.stages[0].approval
    assert ro.stages[1].percent == 50 and ro.stages[1].max_concurrency == 1
    assert (ro.min_success, ro.progress_deadline) == (10, 300)
    assert parse_policy("strategy: Even").rollout is None


@pytest.mark.parametrize(("text", "seconds"), [("30s", 30), ("5m", 300), ("1h30m", 5400), ("250ms", 0.25),
                                               ("0", 0), ("1.5s", 1.5)])
def test_go_durations(text: str, seconds: float) -> None:
    assert go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(("doc", "want"), [
    ({"stages": [{}, {"percent": 0}]}, f"{P}.rollout.stages[1].percent: must be 1..100, not 0"),
    ({"stages": [{"percent": 150}]}, f"{P}.rollout.stages[0].percent: must be 1..100, not 150"),
    ({"stages": []}, f"{P}.rollout.stages: must have at least 1 item"),
    ({}, f"{P}.rollout.stages: required"),
    ({"stages": [{"pause": "soon"}]}, f'{P}.rollout.stages[0].pause: must be a duration such as 30s, 5m or 1h30m: '
                                      'time: invalid duration "soon"'),
    ({"stages": [{"maxConcurrency": 0}]}, f"{P}.rollout.stages[0].maxConcurrency: must be at least 1, not 0"),
    ({"stages": [{"maxConcurrency": "120%"}]}, f"{P}.rollout.stages[0].maxConcurrency: a percentage must be 1%..100%"),
    ({"stages": [{"clusters": ["a"], "percent": 10}]}, f"{P}.rollout.stages[0].percent: may not be combined with clusters"),
    ({"stages": [{"labels": "env in (a"}]}, f"{P}.rollout.stages[0].labels:"),
    ({"stages": [{"wave": 1}]}, f"{P}.rollout.stages[0].wave: unknown field"),
    ({"stages": [{}], "progressDeadline": "0s"}, f"{P}.rollout.progressDeadline: must be greater than 0"),
    ({"stages": [{}], "healthCheck": "self.status.x =="}, f"{P}.rollout.healthCheck: compilation failed: ERROR:"),
    ({"stages": [{}], "healthCheck": "other.x"}, f"{P}.rollout.healthCheck: compilation failed: ERROR: <input>:1:1: "
                                                 "undeclared reference to 'other'"),
    ({"stages": [{}], "speed": 1}, f"{P}.rollout.speed: unknown field (known: stages, minSuccessTime"),
    ("fast", f"{P}.rollout: must be a mapping with stages, not the string 'fast'"),
])
def test_invalid_rollouts_name_the_field(doc: object, want: str) -> None:
    errs = errors({"rollout": doc})
    assert any(e.startswith(want) for e in errs), errs


def test_every_error_at_once() -> None:
    errs = errors({"rollout": {"stages": [{"percent": 0}, {"pause": -1}], "minSuccessTime": "x"}})
    assert len(errs) == 3, errs


def _infos(*names: str, labels: dict[str, dict[str, str]] | None = None) -> list[ClusterInfo]:
    return [ClusterInfo(name=n, labels=(labels or {}).get(n, {})) for n in names]


def test_assignment_first_match_percent_of_the_rest_rounded_up_and_the_implicit_last_stage() -> None:
    ro = policy({"rollout": {"stages": [{"clusters": ["e"]}, {"percent": 50}, {"labels": "tier=gold"}]}}).rollout
    infos = _infos("a", "b", "c", "d", "e", "f", labels={"f": {"tier": "gold"}, "a": {"tier": "gold"}})
    # e first; 50% of the five left = 3 (rounded up, name order): a, b, c; gold of the rest: f; d left over
    assert ro.assign(infos) == [["e"], ["a", "b", "c"], ["f"], ["d"]]
    assert ro.assign(infos, reverse=True) == [["d"], ["f"], ["a", "b", "c"], ["e"]]
    assert ro.assign(_infos("a")) == [[], ["a"], []]


def _views(at: set[str], healthy: set[str], names: list[str]) -> dict[str, ClusterView]:
    return {c: ClusterView(True, c in at, c in healthy) for c in names}


def test_the_machine_stage_by_stage_with_concurrency_min_success_and_pause() -> None:
    ro = policy({"rollout": {"stages": [{"clusters": ["c1"], "pause": "30s"}, {"percent": 50, "maxConcurrency": 1}, {}],
                             "minSuccessTime": "10s", "progressDeadline": "5m"}}).rollout
    names = ["c1", "c2", "c3", "c4", "c5"]
    first, _ = stages.step(None, ro, revision="r1", spec_hash="h1", clusters=names, views=_views(set(names), set(names), names), now=0)
    assert first.phase == stages.COMPLETE  # a new parent: nothing to stage
    st, out = stages.step(first, ro, revision="r2", spec_hash="h2", clusters=names, views=_views(set(), set(names), names),
                          now=100)
    assert st.stages == [["c1"], ["c2", "c3"], ["c4", "c5"]] and st.number == 2
    assert out.new == {"c1"} and out.message == "stage 1/3: c1 updating"
    assert 400 in out.requeue  # the deadline
    st, out = stages.step(st, ro, revision="r2", spec_hash="h2", clusters=names, views=_views({"c1"}, set(names), names),
                          now=101)
    assert 111 in out.requeue and out.new == {"c1"}  # healthy: done after minSuccessTime
    st, out = stages.step(st, ro, revision="r2", spec_hash="h2", clusters=names, views=_views({"c1"}, set(names), names),
                          now=111)
    assert st.phase == stages.PAUSING and 141 in out.requeue and out.new == {"c1"}
    st, out = stages.step(st, ro, revision="r2", spec_hash="h2", clusters=names, views=_views({"c1"}, set(names), names),
                          now=141)
    assert out.new == {"c1", "c2"}  # maxConcurrency 1
    assert out.message == "stage 2/3: c2 updating; c3 waiting"
    # c2 unreachable: never done
    v = _views({"c1", "c2"}, set(names), names)
    v["c2"] = ClusterView(True, True, True, counted=False)
    st, out = stages.step(st, ro, revision="r2", spec_hash="h2", clusters=names, views=v, now=200)
    assert out.new == {"c1", "c2"}
    st, out = stages.step(st, ro, revision="r2", spec_hash="h2", clusters=names, views=v, now=441)
    assert st.phase == stages.FAILED
    assert out.events[-1][:2] == ("Warning", "RolloutFailed")
    assert "stage 2/3 (c2, c3) not done within 5m0s: c2: unreachable" in out.events[-1][2]
    # nothing more is released; undo (back to r1) runs the stages in reverse
    st, out = stages.step(st, ro, revision="r1", spec_hash="h1", clusters=names, views=_views({"c3", "c4", "c5"}, set(names), names),
                          now=500)
    assert st.reverse and st.number == 3 and st.stages == [["c4", "c5"], ["c2", "c3"], ["c1"]]
    assert out.new == {"c4", "c5"}


def test_approval_is_keyed_by_revision_and_stage_and_abort_sends_released_clusters_back() -> None:
    ro = policy({"rollout": {"stages": [{"clusters": ["a"], "pause": "approval"}, {}]}}).rollout
    names = ["a", "b"]
    st, _ = stages.step(None, ro, revision="r1", spec_hash="h1", clusters=names, views=_views(set(names), set(names), names), now=0)
    st, out = stages.step(st, ro, revision="r2", spec_hash="h2", clusters=names, views=_views({"a"}, set(names), names), now=1,
                          previous_spec={"template": {}})
    assert st.phase == stages.APPROVAL and out.new == {"a"}  # a was there already: done at once
    st, out = stages.step(st, ro, revision="r2", spec_hash="h2", clusters=names, views=_views({"a"}, set(names), names), now=2,
                          approval="r1/1")  # stale
    assert st.phase == stages.APPROVAL
    st, out = stages.step(st, ro, revision="r2", spec_hash="h2", clusters=names, views=_views({"a"}, set(names), names), now=3,
                          approval="r2/1")
    assert out.new == {"a", "b"}
    st, out = stages.step(st, ro, revision="r2", spec_hash="h2", clusters=names, views=_views({"a", "b"}, set(names), names),
                          now=4, abort="r2")
    assert st.phase == stages.ABORTED and out.new == set() and out.old == {"a", "b"}
    assert stages.load(st.to_json()) == st


def test_held_releases_nothing_and_restarts_the_deadline() -> None:
    ro = policy({"rollout": {"stages": [{"clusters": ["a"]}, {}], "progressDeadline": "10s"}}).rollout
    names = ["a", "b"]
    st, _ = stages.step(None, ro, revision="r1", spec_hash="h1", clusters=names, views=_views(set(names), set(names), names), now=0)
    st, out = stages.step(st, ro, revision="r2", spec_hash="h2", clusters=names, views=_views(set(), set(), names), now=1,
                          held=True)
    assert out.new == set() and "paused" in out.message
    st, out = stages.step(st, ro, revision="r2", spec_hash="h2", clusters=names, views=_views(set(), set(), names), now=50,
                          held=True)
    assert st.phase == stages.PROGRESSING
    st, out = stages.step(st, ro, revision="r2", spec_hash="h2", clusters=names, views=_views(set(), set(), names), now=60)
    assert out.new == {"a"} and st.phase == stages.PROGRESSING and 70 in out.requeue
