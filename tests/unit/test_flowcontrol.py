"""API Priority and Fairness in-process: classification, shuffle sharding, fair dispatch, the
bootstrap objects' validity (the HTTP behaviour is tested against a real hub in tests/hub)."""

from __future__ import annotations

import asyncio

import pytest

from fleetplane.apis import flowcontrol as api
from fleetplane.pipeline.authorization.attributes import Attributes
from fleetplane.pipeline.flowcontrol import Dispatcher, TooManyRequests
from fleetplane.pipeline.flowcontrol.queueset import QueueSet, Queuing, Rejected, deal, flow_hash
from fleetplane.pipeline.user import UserInfo, service_account_user


def objects(kind: str, items: list[dict]) -> list[dict]:
    out = []
    for i, item in enumerate(items):
        obj = api.bootstrap_object(kind, item)
        obj["metadata"]["uid"] = f"{kind}-{i}"
        out.append(obj)
    return out


def default_dispatcher(total: int = 600) -> Dispatcher:
    d = Dispatcher(total)
    d.configure(objects("FlowSchema", [*api.MANDATORY_FLOW_SCHEMAS, *api.SUGGESTED_FLOW_SCHEMAS]),
                objects("PriorityLevelConfiguration", [*api.MANDATORY_PRIORITY_LEVELS, *api.SUGGESTED_PRIORITY_LEVELS]))
    return d


ALICE = UserInfo("alice", groups=("team-a", "system:authenticated"))


def attrs(user: UserInfo = ALICE, verb: str = "get", *, cluster: str = "team-a", resource: str = "configmaps",
          group: str = "", namespace: str = "default", subresource: str = "", path: str = "") -> Attributes:
    if path:
        return Attributes(user, verb, cluster, resource_request=False, path=path)
    return Attributes(user, verb, cluster, True, group, "v1", resource, subresource, namespace, "x")


def test_bootstrap_objects_are_valid():
    for item in [*api.MANDATORY_FLOW_SCHEMAS, *api.SUGGESTED_FLOW_SCHEMAS]:
        assert api.validate_flow_schema_spec(item["spec"]) == [], item["name"]
    for item in [*api.MANDATORY_PRIORITY_LEVELS, *api.SUGGESTED_PRIORITY_LEVELS]:
        assert api.validate_priority_level_spec(item["spec"], item["name"]) == [], item["name"]


def test_validation_messages():
    errs = api.validate_flow_schema_spec({"matchingPrecedence": 10001, "priorityLevelConfiguration": {},
                                          "distinguisherMethod": {"type": "ByColour"}})
    assert [(x.field, x.detail) for x in errs] == [
        ("spec.matchingPrecedence", "must not be greater than 10000"),
        ("spec.distinguisherMethod.type", 'supported values: "ByUser", "ByNamespace"'),
        ("spec.priorityLevelConfiguration.name", "must reference a priority level")]
    errs = api.validate_priority_level_spec({"type": "Limited", "limited": {
        "nominalConcurrencyShares": 1, "limitResponse": {"type": "Queue", "queuing": {
            "queues": 4, "handSize": 5, "queueLengthLimit": 0}}}}, "tiny")
    assert [(x.field, x.detail) for x in errs] == [
        ("spec.limited.limitResponse.queuing.queueLengthLimit", "must be positive"),
        ("spec.limited.limitResponse.queuing.handSize", "should not be greater than queues (4)")]


def test_classification_follows_kubes_defaults():
    d = default_dispatcher()
    masters = UserInfo("admin", groups=("system:masters", "system:authenticated"))
    assert d.match(attrs(masters))[0].name == "exempt"
    assert d.match(attrs(ALICE))[0].name == "global-default"
    anonymous = UserInfo("system:anonymous", groups=("system:unauthenticated",))
    assert d.match(attrs(anonymous, path="/readyz"))[0].name == "probes"
    sa = service_account_user("kube-system", "ctrl")
    assert d.match(attrs(sa, "update", resource="leases", group="coordination.k8s.io"))[0].name == "system-leader-election"
    assert d.match(attrs(sa, "list", resource="pods"))[0].name == "kube-system-service-accounts"
    other_sa = service_account_user("apps", "web")
    assert d.match(attrs(other_sa))[0].name == "service-accounts"
    # fleetplane's own controllers: their Lease renewals in leader-election, the rest workload-high
    ctrl = UserInfo("system:fleetplane:splitter", groups=("system:fleetplane:controllers", "system:authenticated"))
    assert d.match(attrs(ctrl, "update", resource="leases", group="coordination.k8s.io"))[0].name == \
        "fleetplane-leader-election"
    assert d.match(attrs(ctrl, "update", resource="leases", group="coordination.k8s.io"))[1].name == "leader-election"
    assert d.match(attrs(ctrl, "list", resource="deployments", group="apps"))[0].name == "fleetplane-controllers"
    assert d.match(attrs(ctrl, "list", resource="deployments", group="apps"))[1].name == "workload-high"
    node = UserInfo("system:node:n1", groups=("system:nodes", "system:authenticated"))
    assert d.match(attrs(node, "patch", resource="nodes", subresource="status", namespace=""))[0].name == "system-node-high"
    assert d.match(attrs(node, "list", resource="pods"))[0].name == "system-nodes"


def test_what_nothing_matches_falls_to_catch_all():
    d = default_dispatcher()
    narrow = [o for o in objects("FlowSchema", api.MANDATORY_FLOW_SCHEMAS)]
    narrow[1]["spec"]["rules"][0]["subjects"] = [{"kind": "User", "user": {"name": "nobody"}}]
    d.configure(narrow, objects("PriorityLevelConfiguration", api.MANDATORY_PRIORITY_LEVELS))
    assert d.match(attrs())[0].name == "catch-all"


def test_flows_are_per_logical_cluster_and_user():
    d = default_dispatcher()
    schema = d.match(attrs())[0]
    assert schema.flow(attrs()) == "team-a/alice"
    assert schema.flow(attrs(cluster="team-b")) == "team-b/alice"


def test_shares_divide_the_total_seats():
    d = default_dispatcher(600)
    # kube: ceil(600 * shares / 245)
    assert {n: d.limit_of(n) for n in ("catch-all", "global-default", "workload-low", "exempt")} == \
        {"catch-all": 13, "global-default": 49, "workload-low": 245, "exempt": 0}


@pytest.mark.parametrize("deck,hand", [(128, 6), (64, 8), (16, 4), (4, 4), (1, 1)])
def test_deal_gives_distinct_cards_in_the_deck(deck: int, hand: int):
    for seed in range(300):
        cards = deal(flow_hash("fs", f"flow-{seed}"), deck, hand)
        assert len(cards) == hand and len(set(cards)) == hand
        assert all(0 <= c < deck for c in cards)


def test_deal_spreads_flows():
    firsts = {deal(flow_hash("fs", f"flow-{i}"), 64, 8)[0] for i in range(500)}
    assert len(firsts) > 55


def run(coro):
    return asyncio.run(coro)


def test_a_quiet_flow_is_served_before_a_flood():
    async def scenario() -> list[str]:
        qs = QueueSet(1, Queuing(queues=64, hand_size=8, queue_length_limit=100))
        noisy, quiet = flow_hash("fs", "noisy"), flow_hash("fs", "quiet")
        held = await qs.acquire(noisy, 5)
        order: list[str] = []

        async def one(flow: int, name: str) -> None:
            seat = await qs.acquire(flow, 5)
            order.append(name)
            await asyncio.sleep(0)
            qs.release(seat)

        tasks = [asyncio.create_task(one(noisy, f"noisy-{i}")) for i in range(20)]
        await asyncio.sleep(0)
        tasks.append(asyncio.create_task(one(quiet, "quiet")))
        await asyncio.sleep(0)
        qs.release(held)
        await asyncio.gather(*tasks)
        return order

    order = run(scenario())
    assert order.index("quiet") <= 1, order


def test_full_queue_and_reject_and_time_out():
    async def scenario() -> None:
        qs = QueueSet(1, Queuing(queues=1, hand_size=1, queue_length_limit=1))
        held = await qs.acquire(1, 1)
        waiting = asyncio.create_task(qs.acquire(1, 5))
        await asyncio.sleep(0)
        with pytest.raises(Rejected) as full:
            await qs.acquire(1, 5)
        assert full.value.reason == "queue-full"
        qs.release(held)
        qs.release(await waiting)
        reject = QueueSet(1, None)
        seat = await reject.acquire(1, 1)
        with pytest.raises(Rejected) as limit:
            await reject.acquire(1, 1)
        assert limit.value.reason == "concurrency-limit"
        reject.release(seat)
        qs2 = QueueSet(1, Queuing(queues=2, hand_size=1, queue_length_limit=5))
        held = await qs2.acquire(1, 1)
        with pytest.raises(Rejected) as late:
            await qs2.acquire(2, 0.05)
        assert late.value.reason == "time-out"
        qs2.release(held)
        assert qs2.executing == 0 and qs2.waiting == 0

    run(scenario())


def test_a_cancelled_waiter_gives_its_place_back():
    async def scenario() -> None:
        qs = QueueSet(1, Queuing(queues=1, hand_size=1, queue_length_limit=5))
        held = await qs.acquire(1, 1)
        waiter = asyncio.create_task(qs.acquire(1, 5))
        await asyncio.sleep(0)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        qs.release(held)
        assert qs.executing == 0 and qs.waiting == 0

    run(scenario())


def test_dispatcher_rejects_with_the_pf_uids():
    async def scenario() -> None:
        d = Dispatcher(10)
        d.configure(objects("FlowSchema", api.MANDATORY_FLOW_SCHEMAS),
                    objects("PriorityLevelConfiguration", api.MANDATORY_PRIORITY_LEVELS))
        tickets = []
        limit = d.limit_of("catch-all")
        for _ in range(limit):
            ticket = await d.admit(attrs())
            assert ticket is not None
            tickets.append(ticket)
        with pytest.raises(TooManyRequests) as exc:
            await d.admit(attrs())
        assert exc.value.reason == "concurrency-limit"
        assert ("Retry-After", "1") in exc.value.headers
        assert ("X-Kubernetes-PF-FlowSchema-UID", "FlowSchema-1") in exc.value.headers
        for t in tickets:
            t.release()
            t.release()  # twice is once
        assert (await d.admit(attrs())) is not None
        assert (await d.admit(attrs(subresource="exec"))) is None  # long-running: no seat

    run(scenario())
