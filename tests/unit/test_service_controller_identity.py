"""The Service controller's hub requests, as data (tests/unit/test_identities.py's method): each is
in the code, and its bootstrap role allows it and no more than it needs."""

from __future__ import annotations

import pytest

from fleetplane.fleet import identities as ids

from .test_identities import (
    CRDS,
    DEPLOY,
    LEASES,
    PROFILES,
    SRC,
    Call,
    _leader_calls,
    allowed,
    any_allows,
    bootstrap_subject_rules,
    role_rules,
)

SVC = "service-controller"
SERVICES = ("", "services")


def _calls() -> list[Call]:
    f = "fleet/services/controller.py"
    out = []
    for group, res, snippet in ((*SERVICES, '"/clusters/*/api/v1/services"'),
                                (*DEPLOY, 'f"/clusters/*/apis/{g}/{v}/{plural}"'),
                                ("apps", "statefulsets", 'f"/clusters/*/apis/{g}/{v}/{plural}"'),
                                ("apps", "daemonsets", 'f"/clusters/*/apis/{g}/{v}/{plural}"'),
                                (*PROFILES, 'f"/clusters/*/apis/{ic.GROUP}/{ic.VERSION}/{ic.PLURAL}"'),
                                ("", "namespaces", '"/clusters/*/api/v1/namespaces"'),
                                (*CRDS, '"/clusters/*/apis/apiextensions.k8s.io/v1/customresourcedefinitions"')):
        out += [Call(SVC, f, snippet, "list", group, res, where="wildcard"),
                Call(SVC, f, snippet, "watch", group, res, where="wildcard")]
    out += [
        Call(SVC, f, "created = await hub.create(self.path, want, FIELD_MANAGER)", "create", *SERVICES, namespace="default"),
        Call(SVC, f, 'updated = await hub.replace(f"{self.path}/{cmd[\'name\']}", new, FIELD_MANAGER)', "update",
             *SERVICES, namespace="default", name="web--east"),
        Call(SVC, f, 'await self.sc.hub.delete(f"{self.path}/{cmd[\'name\']}", uid=cmd.get("uid"))', "delete",
             *SERVICES, namespace="default", name="web--east"),
        Call(SVC, f, 'await self.sc.hub.patch(f"{self.path}/{self.name}/status",', "patch", *SERVICES, "status",
             namespace="default", name="web"),
        Call(SVC, f, 'await self.sc.hub.patch(f"{self.path}/{self.name}", {"metadata"', "patch", *SERVICES,
             namespace="default", name="web"),
        Call(SVC, "kube/events.py", "await self.client.create(path, body)", "create", "", "events", namespace="default"),
        Call(SVC, "kube/events.py", 'await self.client.patch(f"{seen[0]}/{seen[1]}"', "patch", "", "events",
             namespace="default", name="web.17f"),
    ]
    return out + _leader_calls(SVC, ids.SERVICE_CONTROLLER_LEASE)


CALLS = _calls()


@pytest.mark.parametrize("call", CALLS, ids=lambda c: f"{c.verb}-{c.resource}{'/' + c.sub if c.sub else ''}-{c.name}")
def test_service_controller_calls_are_in_the_code_and_covered(call: Call) -> None:
    assert call.snippet in (SRC / call.file).read_text(), f"{call.file} no longer contains {call.snippet!r}"
    assert allowed(bootstrap_subject_rules(ids.SERVICE_CONTROLLER), call), call


def test_service_controller_role_is_least_privilege() -> None:
    rules = role_rules(ids.SERVICE_CONTROLLER)
    assert ids.SERVICE_CONTROLLER == "system:fleetplane:service-controller"
    for verb in ("create", "update", "delete", "patch"):
        assert not any_allows(rules, verb, *DEPLOY)
    assert not any_allows(rules, "get", "", "secrets")
    assert not any_allows(rules, "update", *LEASES, name=ids.SPLITTER_LEASE)
    assert not any_allows(rules, "update", "", "services", "status")
    from fleetplane.fleet.services.run import LEASE_NAME

    assert ids.SERVICE_CONTROLLER_LEASE == LEASE_NAME
