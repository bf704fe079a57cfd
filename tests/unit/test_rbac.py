"""RBAC: rule matching, the authorizer over logical clusters, bootstrap policy, aggregation,
escalation prevention, validation of the four kinds, their tables, and cache invalidation."""

from __future__ import annotations

import time

import pytest

from fleetplane.apimachinery.errors import StatusError
from fleetplane.apis.rbac import resource_types as rbac_resource_types
from fleetplane.pipeline.admission.chain import CREATE, UPDATE, Request
from fleetplane.pipeline.authorization import bootstrap
from fleetplane.pipeline.authorization.attributes import Attributes, Decision
from fleetplane.pipeline.authorization.escalation import (
    EscalationPlugin,
    compact_string,
    covers,
    escalation_message,
)
from fleetplane.pipeline.authorization.rbac import (
    MemoryPolicySource,
    RBACAuthorizer,
    aggregate_rules,
    go_quote,
    rule_allows,
)
from fleetplane.pipeline.user import ANONYMOUS_USER, UserInfo, service_account_user
from fleetplane.server.tables import to_table

G = "rbac.authorization.k8s.io"
ALICE = UserInfo("alice", groups=("g1", "system:authenticated"))
BOB = UserInfo("bob", groups=("system:authenticated",))
ADMIN = UserInfo("admin", groups=("system:masters", "system:authenticated"))
RBAC_TYPES = rbac_resource_types()
RT = {rt.plural: rt for rt in RBAC_TYPES}


def rule(verbs, groups=None, resources=None, names=None, urls=None) -> dict:
    out: dict = {"verbs": list(verbs)}
    if groups is not None:
        out["apiGroups"] = list(groups)
    if resources is not None:
        out["resources"] = list(resources)
    if names is not None:
        out["resourceNames"] = list(names)
    if urls is not None:
        out["nonResourceURLs"] = list(urls)
    return out


def cluster_role(name: str, *rules: dict, labels: dict | None = None, aggregate: list[dict] | None = None) -> dict:
    obj = {"apiVersion": f"{G}/v1", "kind": "ClusterRole", "metadata": {"name": name, "labels": labels or {}},
           "rules": list(rules)}
    if aggregate is not None:
        obj["aggregationRule"] = {"clusterRoleSelectors": aggregate}
    return obj


def role(name: str, ns: str, *rules: dict) -> dict:
    return {"apiVersion": f"{G}/v1", "kind": "Role", "metadata": {"name": name, "namespace": ns}, "rules": list(rules)}


def subject(kind: str, name: str, ns: str | None = None) -> dict:
    s = {"kind": kind, "name": name}
    if kind != "ServiceAccount":
        s["apiGroup"] = G
    if ns is not None:
        s["namespace"] = ns
    return s


def crb(name: str, role_name: str, *subjects: dict) -> dict:
    return {"apiVersion": f"{G}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
            "roleRef": {"apiGroup": G, "kind": "ClusterRole", "name": role_name}, "subjects": list(subjects)}


def rb(name: str, ns: str, kind: str, role_name: str, *subjects: dict) -> dict:
    return {"apiVersion": f"{G}/v1", "kind": "RoleBinding", "metadata": {"name": name, "namespace": ns},
            "roleRef": {"apiGroup": G, "kind": kind, "name": role_name}, "subjects": list(subjects)}


def res(user: UserInfo, verb: str, resource: str, *, group: str = "", ns: str = "", name: str = "",
        sub: str = "", cluster: str = "c1") -> Attributes:
    return Attributes(user, verb, cluster, True, group, "v1", resource, sub, ns, name)


def path(user: UserInfo, verb: str, p: str, cluster: str = "c1") -> Attributes:
    return Attributes(user, verb, cluster, False, path=p)


@pytest.fixture
def source() -> MemoryPolicySource:
    return MemoryPolicySource()


@pytest.fixture
def authz(source) -> RBACAuthorizer:
    return RBACAuthorizer(source)


# -- rule matching -----------------------------------------------------------------------------


@pytest.mark.parametrize(("r", "attrs", "allowed"), [
    (rule(["get"], [""], ["pods"]), res(BOB, "get", "pods"), True),
    (rule(["get"], [""], ["pods"]), res(BOB, "list", "pods"), False),
    (rule(["*"], [""], ["pods"]), res(BOB, "deletecollection", "pods"), True),
    (rule(["get"], ["apps"], ["pods"]), res(BOB, "get", "pods"), False),
    (rule(["get"], ["*"], ["deployments"]), res(BOB, "get", "deployments", group="apps"), True),
    (rule(["get"], [""], ["*"]), res(BOB, "get", "pods", sub="log"), True),
    (rule(["get"], [""], ["pods"]), res(BOB, "get", "pods", sub="log"), False),
    (rule(["get"], [""], ["pods/log"]), res(BOB, "get", "pods", sub="log"), True),
    (rule(["get"], [""], ["pods/log"]), res(BOB, "get", "pods"), False),
    (rule(["update"], ["apps"], ["*/scale"]), res(BOB, "update", "deployments", group="apps", sub="scale"), True),
    (rule(["update"], ["apps"], ["*/scale"]), res(BOB, "update", "deployments", group="apps"), False),
    (rule(["update"], ["apps"], ["*/scale"]), res(BOB, "update", "deployments", group="apps", sub="status"), False),
    (rule(["update"], ["apps"], ["*/s"]), res(BOB, "update", "deployments", group="apps", sub="scale"), False),
    (rule(["get"], [""], ["pods/*"]), res(BOB, "get", "pods", sub="log"), False),  # no pods/* in RBAC
    (rule(["get"], [""], ["pods"], ["p1"]), res(BOB, "get", "pods", name="p1"), True),
    (rule(["get"], [""], ["pods"], ["p1"]), res(BOB, "get", "pods", name="p2"), False),
    (rule(["list"], [""], ["pods"], ["p1"]), res(BOB, "list", "pods"), False),  # list carries no name
    (rule(["get"], [""], ["pods"], []), res(BOB, "get", "pods", name="p2"), True),  # empty: any name
    (rule(["get"], urls=["*"]), path(BOB, "get", "/anything"), True),
    (rule(["get"], urls=["/healthz"]), path(BOB, "get", "/healthz"), True),
    (rule(["get"], urls=["/healthz"]), path(BOB, "get", "/healthz/etcd"), False),
    (rule(["get"], urls=["/healthz*"]), path(BOB, "get", "/healthz/etcd"), True),
    (rule(["get"], urls=["/healthz**"]), path(BOB, "get", "/healthzz"), True),
    (rule(["get"], urls=["/apis/*"]), path(BOB, "get", "/apis"), False),
    (rule(["get"], urls=["/apis/*"]), path(BOB, "get", "/apis/apps"), True),
    (rule(["get"], urls=["/healthz"]), path(BOB, "post", "/healthz"), False),
    (rule(["get"], [""], ["*"]), path(BOB, "get", "/healthz"), False),  # resource rules never match paths
    (rule(["get"], urls=["*"]), res(BOB, "get", "pods"), False),  # and URL rules never match resources
])
def test_rule_allows(r, attrs, allowed):
    assert rule_allows(attrs, r) is allowed


def test_go_quote():
    assert go_quote('a"b\\c') == '"a\\"b\\\\c"'
    assert go_quote("tab\there\n") == '"tab\\there\\n"'
    assert go_quote("\x01") == '"\\x01"'
    assert go_quote("héllo") == '"héllo"'


# -- the authorizer ----------------------------------------------------------------------------


def test_cluster_role_binding_reason(source, authz):
    source.put("c1", cluster_role("pod-reader", rule(["get", "list"], [""], ["pods"])))
    source.put("c1", crb("readers", "pod-reader", subject("User", "nobody"), subject("Group", "g1")))
    got = authz.authorize(res(ALICE, "get", "pods", ns="ns1"))
    assert got.decision is Decision.ALLOW
    assert got.reason == 'RBAC: allowed by ClusterRoleBinding "readers" of ClusterRole "pod-reader" to Group "g1"'
    assert authz.authorize(res(ALICE, "delete", "pods", ns="ns1")).decision is Decision.NO_OPINION
    # logical clusters are isolated
    assert authz.authorize(res(ALICE, "get", "pods", ns="ns1", cluster="c2")).decision is Decision.NO_OPINION


def test_reason_names_the_first_matching_subject(source, authz):
    source.put("c1", cluster_role("r", rule(["get"], [""], ["pods"])))
    source.put("c1", crb("b", "r", subject("Group", "system:authenticated"), subject("User", "alice")))
    assert authz.authorize(res(ALICE, "get", "pods")).reason.endswith('to Group "system:authenticated"')


def test_role_binding_grants_only_in_its_namespace(source, authz):
    source.put("c1", cluster_role("cm-editor", rule(["*"], [""], ["configmaps"])))
    source.put("c1", rb("edit-cm", "ns1", "ClusterRole", "cm-editor", subject("User", "alice")))
    got = authz.authorize(res(ALICE, "create", "configmaps", ns="ns1"))
    assert got.allowed
    assert got.reason == 'RBAC: allowed by RoleBinding "edit-cm/ns1" of ClusterRole "cm-editor" to User "alice"'
    assert not authz.authorize(res(ALICE, "create", "configmaps", ns="ns2")).allowed
    assert not authz.authorize(res(ALICE, "list", "configmaps")).allowed  # cluster-wide


def test_role_binding_to_role(source, authz):
    source.put("c1", role("sec", "ns1", rule(["get"], [""], ["secrets"], ["s1"])))
    source.put("c1", rb("sec", "ns1", "Role", "sec", subject("Group", "g1")))
    assert authz.authorize(res(ALICE, "get", "secrets", ns="ns1", name="s1")).reason == (
        'RBAC: allowed by RoleBinding "sec/ns1" of Role "sec" to Group "g1"')
    assert not authz.authorize(res(ALICE, "get", "secrets", ns="ns1", name="s2")).allowed
    # a Role of the same name elsewhere does not leak: the binding's own namespace is used
    source.put("c1", rb("sec", "ns2", "Role", "sec", subject("Group", "g1")))
    got = authz.authorize(res(ALICE, "get", "secrets", ns="ns2", name="s1"))
    assert got.decision is Decision.NO_OPINION
    assert got.reason == 'RBAC: role.rbac.authorization.k8s.io "sec" not found'


def test_service_account_subjects(source, authz):
    sa = service_account_user("ns1", "robot")
    source.put("c1", cluster_role("r", rule(["get"], [""], ["pods"])))
    # a RoleBinding defaults a ServiceAccount subject's namespace to its own
    source.put("c1", rb("local", "ns1", "ClusterRole", "r", subject("ServiceAccount", "robot")))
    got = authz.authorize(res(sa, "get", "pods", ns="ns1"))
    assert got.reason == 'RBAC: allowed by RoleBinding "local/ns1" of ClusterRole "r" to ServiceAccount "robot/ns1"'
    assert not authz.authorize(res(service_account_user("ns2", "robot"), "get", "pods", ns="ns1")).allowed
    # a ClusterRoleBinding needs the namespace
    source.put("c1", crb("no-ns", "r", subject("ServiceAccount", "robot")))
    assert not authz.authorize(res(sa, "get", "pods", ns="other")).allowed
    source.put("c1", crb("with-ns", "r", subject("ServiceAccount", "robot", "ns1")))
    assert authz.authorize(res(sa, "get", "pods", ns="other")).reason == (
        'RBAC: allowed by ClusterRoleBinding "with-ns" of ClusterRole "r" to ServiceAccount "robot/ns1"')


def test_missing_roles_are_reported_not_denied(source, authz):
    source.put("c1", crb("a", "gone", subject("User", "alice")))
    got = authz.authorize(res(ALICE, "get", "pods"))
    assert got.decision is Decision.NO_OPINION
    assert got.reason == 'RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found'
    source.put("c1", crb("b", "gone-too", subject("User", "alice")))
    source.put("c1", crb("c", "gone", subject("User", "alice")))
    assert authz.authorize(res(ALICE, "get", "pods")).reason == (
        'RBAC: [clusterrole.rbac.authorization.k8s.io "gone" not found, '
        'clusterrole.rbac.authorization.k8s.io "gone-too" not found]')
    # an allow wins regardless
    source.put("c1", cluster_role("r", rule(["get"], [""], ["pods"])))
    source.put("c1", crb("d", "r", subject("User", "alice")))
    assert authz.authorize(res(ALICE, "get", "pods")).allowed


def test_unknown_subject_kind_and_role_ref_kind(source, authz):
    source.put("c1", cluster_role("r", rule(["get"], [""], ["pods"])))
    source.put("c1", crb("x", "r", {"kind": "Robot", "name": "alice"}))
    assert authz.authorize(res(ALICE, "get", "pods")).reason == ""
    bad = crb("y", "r", subject("User", "alice"))
    bad["roleRef"]["kind"] = "Thing"
    source.put("c1", bad)
    assert authz.authorize(res(ALICE, "get", "pods")).reason == 'RBAC: unsupported role reference kind: "Thing"'


# -- bootstrap policy ----------------------------------------------------------------------------


def test_bootstrap_objects_look_stored():
    admin = bootstrap.CLUSTER_ROLES["cluster-admin"]
    assert admin["apiVersion"] == f"{G}/v1" and admin["kind"] == "ClusterRole"
    meta = admin["metadata"]
    assert meta["labels"] == {"kubernetes.io/bootstrapping": "rbac-defaults"}
    assert meta["annotations"] == {"rbac.authorization.kubernetes.io/autoupdate": "true"}
    assert meta["resourceVersion"] == "" and meta["creationTimestamp"] == bootstrap.EPOCH
    binding = bootstrap.CLUSTER_ROLE_BINDINGS["cluster-admin"]
    assert binding["subjects"] == [{"kind": "Group", "apiGroup": G, "name": "system:masters"}]
    assert binding["metadata"]["uid"] != meta["uid"]
    uids = {o["metadata"]["uid"] for o in [*bootstrap.CLUSTER_ROLES.values(), *bootstrap.CLUSTER_ROLE_BINDINGS.values()]}
    assert len(uids) == len(bootstrap.CLUSTER_ROLES) + len(bootstrap.CLUSTER_ROLE_BINDINGS)
    assert bootstrap.CLUSTER_ROLES["edit"]["metadata"]["labels"][bootstrap.AGGREGATE_TO_ADMIN] == "true"
    assert list(bootstrap.CLUSTER_ROLES) == sorted(bootstrap.CLUSTER_ROLES)
    assert set(bootstrap.CLUSTER_ROLE_BINDINGS) == {
        "cluster-admin", "system:basic-user", "system:discovery", "system:public-info-viewer",
        "system:service-account-issuer-discovery"}


def test_bootstrap_bindings(authz):
    anon = ANONYMOUS_USER
    for p in ("/healthz", "/livez", "/readyz", "/version", "/version/"):
        got = authz.authorize(path(anon, "get", p))
        assert got.reason == ('RBAC: allowed by ClusterRoleBinding "system:public-info-viewer" of ClusterRole '
                              '"system:public-info-viewer" to Group "system:unauthenticated"'), p
    for p in ("/api", "/apis/apps", "/openapi/v3", "/openid/v1/jwks", "/metrics"):
        assert not authz.authorize(path(anon, "get", p)).allowed, p
    assert not authz.authorize(res(anon, "create", "selfsubjectaccessreviews", group="authorization.k8s.io")).allowed
    assert not authz.authorize(path(anon, "post", "/healthz")).allowed

    assert authz.authorize(path(BOB, "get", "/apis/apps/v1")).reason == (
        'RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" '
        'to Group "system:authenticated"')
    for resource, group in (("selfsubjectaccessreviews", "authorization.k8s.io"),
                            ("selfsubjectrulesreviews", "authorization.k8s.io"),
                            ("selfsubjectreviews", "authentication.k8s.io")):
        assert authz.authorize(res(BOB, "create", resource, group=group)).reason.startswith(
            'RBAC: allowed by ClusterRoleBinding "system:basic-user"'), resource
    assert not authz.authorize(res(BOB, "create", "subjectaccessreviews", group="authorization.k8s.io")).allowed
    assert not authz.authorize(path(BOB, "get", "/openid/v1/jwks")).allowed
    assert not authz.authorize(res(BOB, "get", "pods", ns="default")).allowed

    sa = service_account_user("ns1", "default").with_authenticated_group()
    for p in ("/.well-known/openid-configuration", "/.well-known/openid-configuration/", "/openid/v1/jwks",
              "/openid/v1/jwks/"):
        assert authz.authorize(path(sa, "get", p)).allowed, p

    got = authz.authorize(res(ADMIN, "delete", "anything", group="x.io", ns="n", sub="s"))
    assert got.reason == ('RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" '
                          'to Group "system:masters"')
    assert authz.authorize(path(ADMIN, "put", "/whatever")).allowed


def test_stored_objects_shadow_bootstrap(source, authz):
    assert authz.authorize(path(ANONYMOUS_USER, "get", "/version")).allowed
    # a stored binding of the same name replaces the bootstrap one (copy-on-write)
    source.put("c1", crb("system:public-info-viewer", "system:public-info-viewer", subject("Group", "system:authenticated")))
    assert not authz.authorize(path(ANONYMOUS_USER, "get", "/version")).allowed
    assert authz.authorize(path(BOB, "get", "/version")).allowed
    assert authz.authorize(path(ANONYMOUS_USER, "get", "/version", cluster="c2")).allowed  # others untouched
    # a stored role of the same name replaces the bootstrap rules
    carol = UserInfo("carol")  # in no group: only her own binding applies
    source.put("c1", crb("carol", "system:public-info-viewer", subject("User", "carol")))
    assert authz.authorize(path(carol, "get", "/version")).allowed
    source.put("c1", cluster_role("system:public-info-viewer", rule(["get"], urls=["/healthz"])))
    assert not authz.authorize(path(carol, "get", "/version")).allowed
    assert authz.authorize(path(carol, "get", "/healthz")).allowed
    assert authz.authorize(path(carol, "get", "/version", cluster="c2")).decision is Decision.NO_OPINION
    assert bootstrap.CLUSTER_ROLES["system:public-info-viewer"]["rules"][0]["nonResourceURLs"][-1] == "/version/"


@pytest.fixture
def restore_bootstrap():
    roles, bindings = dict(bootstrap.CLUSTER_ROLES), dict(bootstrap.CLUSTER_ROLE_BINDINGS)
    yield
    bootstrap.CLUSTER_ROLES.clear()
    bootstrap.CLUSTER_ROLES.update(roles)
    bootstrap.CLUSTER_ROLE_BINDINGS.clear()
    bootstrap.CLUSTER_ROLE_BINDINGS.update(bindings)
    bootstrap.add([], [])


def test_bootstrap_add(authz, restore_bootstrap):
    user = UserInfo("system:fleet:placer", groups=("system:authenticated",))
    attrs = res(user, "list", "placements", group="fleet.example.io")
    assert not authz.authorize(attrs).allowed  # caches built before the contribution...
    bootstrap.add([{"metadata": {"name": "system:fleet:placer", "labels": {"x": "y"}},
                    "rules": [rule(["list"], ["fleet.example.io"], ["placements"])]}],
                  [{"metadata": {"name": "system:fleet:placer"}, "subjects": [subject("User", "system:fleet:placer")],
                    "roleRef": {"apiGroup": G, "kind": "ClusterRole", "name": "system:fleet:placer"}}])
    assert authz.authorize(attrs).allowed  # ...notice it
    added = bootstrap.CLUSTER_ROLES["system:fleet:placer"]
    assert added["kind"] == "ClusterRole" and added["metadata"]["labels"] == {
        "x": "y", "kubernetes.io/bootstrapping": "rbac-defaults"}
    assert added["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"] == "true"


# -- aggregation ---------------------------------------------------------------------------------


def test_admin_edit_view(source, authz):
    for who in ("view", "edit", "admin"):
        source.put("c1", rb(who, "ns1", "ClusterRole", who, subject("User", who)))
    view, edit, admin = (UserInfo(n, groups=("system:authenticated",)) for n in ("view", "edit", "admin"))
    assert authz.authorize(res(view, "get", "pods", ns="ns1")).allowed
    assert authz.authorize(res(view, "get", "deployments", group="apps", ns="ns1", sub="scale")).allowed
    assert not authz.authorize(res(view, "get", "secrets", ns="ns1")).allowed
    assert not authz.authorize(res(view, "create", "pods", ns="ns1")).allowed
    # edit: view's rules (through view's aggregate-to-edit label) plus writes and secrets
    assert authz.authorize(res(edit, "list", "pods", ns="ns1")).allowed
    assert authz.authorize(res(edit, "get", "secrets", ns="ns1")).allowed
    assert authz.authorize(res(edit, "update", "deployments", group="apps", ns="ns1", sub="scale")).allowed
    assert not authz.authorize(res(edit, "create", "roles", group=G, ns="ns1")).allowed
    # admin: edit (and so view) plus roles and rolebindings
    assert authz.authorize(res(admin, "watch", "pods", ns="ns1")).allowed
    assert authz.authorize(res(admin, "delete", "secrets", ns="ns1")).allowed
    assert authz.authorize(res(admin, "create", "rolebindings", group=G, ns="ns1")).allowed
    assert not authz.authorize(res(admin, "create", "clusterroles", group=G, ns="ns1")).allowed
    served = authz.cluster_role("c1", "admin")
    assert served is not None and served["rules"] and not bootstrap.CLUSTER_ROLES["admin"]["rules"]


def test_stored_roles_extend_aggregated_bootstrap_roles(source, authz):
    source.put("c1", cluster_role("widgets-view", rule(["get", "list"], ["example.io"], ["widgets"]),
                                  labels={bootstrap.AGGREGATE_TO_VIEW: "true"}))
    source.put("c1", crb("admins", "admin", subject("User", "alice")))
    source.put("c2", crb("admins", "admin", subject("User", "alice")))
    assert authz.authorize(res(ALICE, "list", "widgets", group="example.io", cluster="c1")).allowed
    assert not authz.authorize(res(ALICE, "list", "widgets", group="example.io", cluster="c2")).allowed
    # a stored aggregated role of its own
    source.put("c1", cluster_role("mine", aggregate=[{"matchLabels": {"team": "a"}}]))
    source.put("c1", cluster_role("a1", rule(["get"], [""], ["pods"]), labels={"team": "a"}))
    source.put("c1", crb("mine", "mine", subject("User", "bob")))
    assert authz.authorize(res(BOB, "get", "pods", cluster="c1")).allowed
    assert not authz.authorize(res(BOB, "get", "secrets", cluster="c1")).allowed


def test_aggregate_rules_is_one_controller_pass():
    r1, r2, r3 = rule(["get"], [""], ["pods"]), rule(["list"], [""], ["pods"]), rule(["get"], [""], ["secrets"])
    target = cluster_role("target", rule(["*"], ["*"], ["*"]),
                          aggregate=[{"matchLabels": {"a": "true"}}, {"matchExpressions": [
                              {"key": "b", "operator": "Exists"}]}])
    roles = [
        cluster_role("zeta", r2, r1, labels={"a": "true"}),
        cluster_role("alpha", r1, labels={"a": "true", "b": "x"}),
        cluster_role("beta", r3, labels={"b": "y"}),
        cluster_role("other", rule(["delete"], [""], ["pods"])),
        target,  # itself: skipped, its hand-written rules are lost
    ]
    assert aggregate_rules(target, roles) == [r1, r2, r3]
    # an aggregated role's own (stale) rules are taken as given: one pass, no recursion
    mid = cluster_role("mid", r3, labels={"a": "true"}, aggregate=[{"matchLabels": {"c": "true"}}])
    assert aggregate_rules(target, [mid]) == [r3]


# -- the wildcard -----------------------------------------------------------------------------------


def test_wildcard_needs_both_grants_in_root(source, authz):
    source.put("root", cluster_role("cm-everywhere", rule(["list", "watch"], urls=["/clusters/*"]),
                                    rule(["list", "watch"], [""], ["configmaps"])))
    source.put("root", crb("cm-everywhere", "cm-everywhere", subject("User", "alice")))
    got = authz.authorize(res(ALICE, "list", "configmaps", cluster="*"))
    assert got.allowed
    assert got.reason.count('ClusterRoleBinding "cm-everywhere"') == 2
    assert authz.authorize(res(ALICE, "watch", "configmaps", cluster="*")).allowed
    assert not authz.authorize(res(ALICE, "list", "secrets", cluster="*")).allowed
    assert not authz.authorize(res(ALICE, "get", "configmaps", cluster="*")).allowed
    # the resource rule alone is not enough, nor the path alone
    source.put("root", cluster_role("secrets", rule(["list"], [""], ["secrets"])))
    source.put("root", crb("secrets", "secrets", subject("User", "bob")))
    assert authz.authorize(res(BOB, "list", "secrets", cluster="root")).allowed
    assert not authz.authorize(res(BOB, "list", "secrets", cluster="*")).allowed
    source.put("root", cluster_role("path", rule(["list"], urls=["/clusters/*"])))
    source.put("root", crb("path", "path", subject("User", "carol")))
    assert not authz.authorize(res(UserInfo("carol"), "list", "secrets", cluster="*")).allowed
    # both, from different bindings, do
    source.put("root", crb("path2", "path", subject("User", "bob")))
    assert authz.authorize(res(BOB, "list", "secrets", cluster="*")).allowed
    # grants in other clusters never count
    source.put("c1", cluster_role("all", rule(["*"], ["*"], ["*"]), rule(["*"], urls=["*"])))
    source.put("c1", crb("all", "all", subject("User", "dave")))
    assert authz.authorize(res(UserInfo("dave"), "list", "configmaps", cluster="c1")).allowed
    assert not authz.authorize(res(UserInfo("dave"), "list", "configmaps", cluster="*")).allowed
    assert authz.authorize(res(ADMIN, "list", "configmaps", cluster="*")).allowed


# -- rules_for ------------------------------------------------------------------------------------


def test_rules_for(source, authz):
    source.put("c1", cluster_role("r", rule(["get"], [""], ["pods"], ["p"]), rule(["get"], urls=["/x"])))
    source.put("c1", crb("r", "r", subject("User", "alice")))
    source.put("c1", role("ns-role", "ns1", rule(["list"], ["apps"], ["deployments"])))
    source.put("c1", rb("ns-role", "ns1", "Role", "ns-role", subject("User", "alice")))
    source.put("c1", rb("broken", "ns1", "Role", "nope", subject("User", "alice")))
    info = authz.rules_for(ALICE, "c1", "ns1")
    assert info.resource_rules[:2] == [
        {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["p"]},
        # bootstrap ClusterRoleBindings come in name order, before the namespace's RoleBindings
        {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
         "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
    ]
    assert info.resource_rules[-1] == {"verbs": ["list"], "apiGroups": ["apps"], "resources": ["deployments"]}
    assert info.non_resource_rules[0] == {"verbs": ["get"], "nonResourceURLs": ["/x"]}
    assert {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"]} in (
        info.non_resource_rules)
    assert info.incomplete is False
    assert info.evaluation_error == 'role.rbac.authorization.k8s.io "nope" not found'
    cluster_wide = authz.rules_for(ALICE, "c1", "")
    assert {"verbs": ["list"], "apiGroups": ["apps"], "resources": ["deployments"]} not in cluster_wide.resource_rules
    assert cluster_wide.evaluation_error == ""


def test_role_rules(source, authz):
    source.put("c1", role("r", "ns1", rule(["get"], [""], ["pods"])))
    assert authz.role_rules("c1", "ns1", {"kind": "Role", "name": "r"}) == [rule(["get"], [""], ["pods"])]
    assert authz.role_rules("c1", "ns2", {"kind": "Role", "name": "r"}) is None
    assert authz.role_rules("c1", "", {"kind": "ClusterRole", "name": "nope"}) is None
    edit = authz.role_rules("c1", "", {"kind": "ClusterRole", "name": "edit"})
    assert edit is not None and any("secrets" in (r.get("resources") or []) for r in edit)


# -- covers --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("owner", "wanted", "ok"), [
    ([rule(["*"], ["*"], ["*"])], [rule(["get", "delete"], ["apps", ""], ["pods", "x/y"], ["n"])], True),
    ([rule(["get", "list"], [""], ["pods"])], [rule(["get"], [""], ["pods"])], True),
    ([rule(["get"], [""], ["pods"])], [rule(["get", "list"], [""], ["pods"])], False),
    ([rule(["get"], [""], ["*/scale"])], [rule(["get"], [""], ["deployments/scale"])], True),
    ([rule(["get"], [""], ["*/scale"])], [rule(["get"], [""], ["deployments"])], False),
    ([rule(["get"], [""], ["pods"])], [rule(["get"], [""], ["pods/log"])], False),
    ([rule(["get"], [""], ["pods"], ["a", "b"])], [rule(["get"], [""], ["pods"], ["a"])], True),
    ([rule(["get"], [""], ["pods"], ["a"])], [rule(["get"], [""], ["pods"])], False),
    ([rule(["get"], [""], ["pods"])], [rule(["get"], [""], ["pods"], ["a"])], True),
    ([rule(["get"], urls=["/healthz*"])], [rule(["get"], urls=["/healthz/etcd", "/healthz"])], True),
    ([rule(["get"], urls=["/healthz"])], [rule(["get"], urls=["/healthz/etcd"])], False),
    ([rule(["*"], urls=["*"])], [rule(["get"], urls=["/anything"])], True),
    ([rule(["*"], ["*"], ["*"])], [rule(["get"], urls=["/anything"])], False),
    ([rule(["get"], urls=["*"])], [rule(["get"], [""], ["pods"])], False),
    ([], [], True),
])
def test_covers(owner, wanted, ok):
    assert covers(owner, wanted)[0] is ok


def test_covers_lists_atomic_missing_rules():
    ok, missing = covers([rule(["get"], [""], ["pods"])],
                         [rule(["get", "list"], ["", "apps"], ["pods"], ["a"]), rule(["get"], urls=["/x"])])
    assert not ok
    assert missing == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"], "resourceNames": ["a"]},
        {"apiGroups": ["apps"], "resources": ["pods"], "verbs": ["get"], "resourceNames": ["a"]},
        {"apiGroups": ["apps"], "resources": ["pods"], "verbs": ["list"], "resourceNames": ["a"]},
        {"nonResourceURLs": ["/x"], "verbs": ["get"]},
    ]


def test_compact_string_and_message():
    assert compact_string(rule(["get"], [""], ["secrets"])) == '{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}'
    assert compact_string({"verbs": ["get"], "nonResourceURLs": ["/x"], "resourceNames": ["n"]}) == (
        '{NonResourceURLs:["/x"], ResourceNames:["n"], Verbs:["get"]}')
    missing = covers([], [rule(["get", "list"], [""], ["secrets"]), rule(["get"], ["apps"], ["deployments"], ["d"])])[1]
    assert escalation_message(ALICE, missing) == (
        'user "alice" (groups=["g1" "system:authenticated"]) is attempting to grant RBAC permissions not currently '
        'held:\n{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}\n'
        '{APIGroups:["apps"], Resources:["deployments"], ResourceNames:["d"], Verbs:["get"]}')
    assert escalation_message(UserInfo("u"), missing[:1], ['clusterroles.rbac.authorization.k8s.io "x" not found']) == (
        'user "u" (groups=[]) is attempting to grant RBAC permissions not currently held:\n'
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}; resolution errors: '
        '[clusterroles.rbac.authorization.k8s.io "x" not found]')


# -- the escalation plugin ------------------------------------------------------------------------


def req(op: str, resource: str, obj: dict, user: UserInfo | None, *, ns: str = "", old: dict | None = None,
        cluster: str = "c1") -> Request:
    return Request(op, RT[resource], cluster, ns, obj["metadata"]["name"], obj, old, user=user)


async def refused(plugin: EscalationPlugin, r: Request) -> StatusError:
    with pytest.raises(StatusError) as info:
        await plugin.validate(r)
    return info.value


async def test_escalation_role_messages(source, authz):
    plugin = EscalationPlugin(authz)
    assert plugin.name == "RBACEscalation" and plugin.operations == {CREATE, UPDATE}
    secret_reader = cluster_role("x", rule(["get"], [""], ["secrets"]))
    err = await refused(plugin, req(CREATE, "clusterroles", secret_reader, ALICE))
    assert err.code == 403 and err.reason == "Forbidden"
    assert err.message == (
        'clusterroles.rbac.authorization.k8s.io "x" is forbidden: user "alice" (groups=["g1" "system:authenticated"]) '
        'is attempting to grant RBAC permissions not currently held:\n'
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}')
    assert err.details == {"name": "x", "group": G, "kind": "clusterroles"}
    # the hub's own controllers and system:masters are never checked
    assert await plugin.validate(req(CREATE, "clusterroles", secret_reader, None)) == []
    assert await plugin.validate(req(CREATE, "clusterroles", secret_reader, ADMIN)) == []
    # holding the rules cluster-wide is enough
    source.put("c1", cluster_role("secrets", rule(["get", "list"], [""], ["secrets"])))
    source.put("c1", crb("alice-secrets", "secrets", subject("User", "alice")))
    assert await plugin.validate(req(CREATE, "clusterroles", secret_reader, ALICE)) == []


async def test_escalation_role_in_namespace(source, authz):
    plugin = EscalationPlugin(authz)
    source.put("c1", rb("edit", "ns1", "ClusterRole", "edit", subject("User", "alice")))
    pods = role("p", "ns1", rule(["create", "get"], [""], ["pods"]))
    assert await plugin.validate(req(CREATE, "roles", pods, ALICE, ns="ns1")) == []
    err = await refused(plugin, req(CREATE, "roles", pods, ALICE, ns="ns2"))
    assert err.message.startswith('roles.rbac.authorization.k8s.io "p" is forbidden: user "alice"')
    assert err.message.endswith('\n{APIGroups:[""], Resources:["pods"], Verbs:["create" "get"]}')
    # a ClusterRole is checked against cluster-wide rules only
    err = await refused(plugin, req(CREATE, "clusterroles", cluster_role("p", rule(["get"], [""], ["pods"])), ALICE))
    assert err.code == 403


async def test_escalate_verb(source, authz):
    plugin = EscalationPlugin(authz)
    source.put("c1", cluster_role("escalator", rule(["escalate"], [G], ["clusterroles"])))
    source.put("c1", crb("escalator", "escalator", subject("User", "alice")))
    assert await plugin.validate(req(CREATE, "clusterroles", cluster_role("big", rule(["*"], ["*"], ["*"])), ALICE)) == []
    # escalate on one name: kube checks the request's name, which a create (POST) has not
    source.put("c1", cluster_role("escalator", rule(["escalate"], [G], ["clusterroles"], ["big"])))
    big = cluster_role("big", rule(["*"], ["*"], ["*"]))
    assert (await refused(plugin, req(CREATE, "clusterroles", big, ALICE))).code == 403
    assert await plugin.validate(req(UPDATE, "clusterroles", big, ALICE, old=cluster_role("big"))) == []
    assert (await refused(plugin, req(UPDATE, "clusterroles", cluster_role("other", rule(["*"], ["*"], ["*"])), ALICE,
                                      old=cluster_role("other")))).code == 403


async def test_aggregation_rule_needs_cluster_admin(source, authz):
    plugin = EscalationPlugin(authz)
    agg = cluster_role("agg", aggregate=[{"matchLabels": {"x": "y"}}])
    err = await refused(plugin, req(CREATE, "clusterroles", agg, ALICE))
    assert err.message == ('clusterroles.rbac.authorization.k8s.io "agg" is forbidden: must have cluster-admin '
                           'privileges to use the aggregationRule')
    # also when an update removes it
    err = await refused(plugin, req(UPDATE, "clusterroles", cluster_role("agg"), ALICE, old=agg))
    assert "aggregationRule" in err.message
    source.put("c1", cluster_role("god", rule(["*"], ["*"], ["*"]), rule(["*"], urls=["*"])))
    source.put("c1", crb("god", "god", subject("User", "alice")))
    assert await plugin.validate(req(CREATE, "clusterroles", agg, ALICE)) == []


async def test_escalation_update_of_gc_fields_only(authz):
    plugin = EscalationPlugin(authz)
    old = cluster_role("x", rule(["get"], [""], ["secrets"]))
    old["metadata"]["resourceVersion"] = "5"
    new = cluster_role("x", rule(["get"], [""], ["secrets"]))
    new["metadata"]["finalizers"] = ["example.io/f"]
    new["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u"}]
    assert await plugin.validate(req(UPDATE, "clusterroles", new, ALICE, old=old)) == []
    new["metadata"]["labels"] = {"a": "b"}
    assert (await refused(plugin, req(UPDATE, "clusterroles", new, ALICE, old=old))).code == 403


async def test_escalation_bindings(source, authz):
    plugin = EscalationPlugin(authz)
    binding = crb("bind-edit", "edit", subject("User", "bob"))
    err = await refused(plugin, req(CREATE, "clusterrolebindings", binding, ALICE))
    assert err.message.startswith('clusterrolebindings.rbac.authorization.k8s.io "bind-edit" is forbidden: user '
                                  '"alice" (groups=["g1" "system:authenticated"]) is attempting to grant RBAC '
                                  'permissions not currently held:\n{')
    # compacted: one line per group/resource, verbs in the order the role grants them
    assert '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list" "watch" "create" "delete" "deletecollection" ' \
           '"patch" "update"]}' in (
        err.message.split("\n"))
    # bind on that ClusterRole (cluster-wide) allows it
    source.put("c1", cluster_role("binder", rule(["bind"], [G], ["clusterroles"], ["edit"])))
    source.put("c1", crb("binder", "binder", subject("User", "alice")))
    assert await plugin.validate(req(CREATE, "clusterrolebindings", binding, ALICE)) == []
    other = crb("bind-admin", "admin", subject("User", "bob"))
    assert (await refused(plugin, req(CREATE, "clusterrolebindings", other, ALICE))).code == 403
    # a namespaced bind grant allows RoleBindings there only
    source.put("c1", rb("ns-binder", "ns1", "ClusterRole", "ns-binder", subject("User", "bob")))
    source.put("c1", cluster_role("ns-binder", rule(["bind"], [G], ["clusterroles"])))
    view_rb = rb("view", "ns1", "ClusterRole", "view", subject("User", "carol"))
    assert await plugin.validate(req(CREATE, "rolebindings", view_rb, BOB, ns="ns1")) == []
    view_rb2 = rb("view", "ns2", "ClusterRole", "view", subject("User", "carol"))
    assert (await refused(plugin, req(CREATE, "rolebindings", view_rb2, BOB, ns="ns2"))).message.startswith(
        'rolebindings.rbac.authorization.k8s.io "view" is forbidden: user "bob"')


async def test_escalation_binding_by_holding_the_rules(source, authz):
    plugin = EscalationPlugin(authz)
    source.put("c1", role("reader", "ns1", rule(["get"], [""], ["pods"])))
    source.put("c1", cluster_role("pods", rule(["get", "list"], [""], ["pods"])))
    source.put("c1", rb("mine", "ns1", "ClusterRole", "pods", subject("User", "alice")))
    give = rb("give", "ns1", "Role", "reader", subject("User", "bob"))
    assert await plugin.validate(req(CREATE, "rolebindings", give, ALICE, ns="ns1")) == []
    assert await plugin.validate(req(UPDATE, "rolebindings", give, ALICE, ns="ns1", old=give)) == []
    assert (await refused(plugin, req(CREATE, "rolebindings", give, BOB, ns="ns1"))).code == 403


async def test_escalation_binding_to_missing_role(source, authz):
    plugin = EscalationPlugin(authz)
    err = await refused(plugin, req(CREATE, "clusterrolebindings", crb("b", "nope", subject("User", "bob")), ALICE))
    assert (err.code, err.reason, err.message) == (404, "NotFound", 'clusterroles.rbac.authorization.k8s.io "nope" not found')
    err = await refused(plugin, req(CREATE, "rolebindings", rb("b", "ns1", "Role", "nope"), ALICE, ns="ns1"))
    assert err.message == 'roles.rbac.authorization.k8s.io "nope" not found'
    # with bind on it, a dangling binding may be created (as kube allows)
    source.put("c1", cluster_role("binder", rule(["bind"], [G], ["clusterroles"])))
    source.put("c1", crb("binder", "binder", subject("User", "alice")))
    assert await plugin.validate(req(CREATE, "clusterrolebindings", crb("b", "nope", subject("User", "bob")), ALICE)) == []
    assert await plugin.validate(req(CREATE, "clusterrolebindings", crb("b", "nope"), ADMIN)) == []


async def test_escalation_reports_resolution_errors(source, authz):
    plugin = EscalationPlugin(authz)
    source.put("c1", crb("dangling", "gone", subject("User", "alice")))
    err = await refused(plugin, req(CREATE, "clusterroles", cluster_role("x", rule(["get"], [""], ["secrets"])), ALICE))
    assert err.message.endswith('Verbs:["get"]}; resolution errors: [clusterroles.rbac.authorization.k8s.io "gone" not found]')


# -- validation of the four kinds ------------------------------------------------------------------


def errors(resource: str, obj: dict, old: dict | None = None) -> list[str]:
    strategy = RT[resource].strategy
    strategy.canonicalize(obj)
    return [str(x) for x in (strategy.validate(obj) if old is None else strategy.validate_update(obj, old))]


def test_rbac_types():
    assert [(rt.kind, rt.plural, rt.namespaced) for rt in RBAC_TYPES] == [
        ("Role", "roles", True), ("ClusterRole", "clusterroles", False),
        ("RoleBinding", "rolebindings", True), ("ClusterRoleBinding", "clusterrolebindings", False)]
    for rt in RBAC_TYPES:
        assert rt.group == G and rt.version == "v1"
        assert not rt.strategy.tracks_generation and rt.strategy.allow_unconditional_update


def test_validate_roles():
    assert errors("clusterroles", cluster_role("system:controller:x", rule(["get"], urls=["/x"]))) == []
    assert errors("roles", role("r", "ns", rule(["get"], [""], ["pods"]))) == []
    assert errors("roles", role("r", "ns", {"apiGroups": [""], "resources": ["pods"]})) == [
        "rules[0].verbs: Required value: verbs must contain at least one value"]
    assert errors("roles", role("r", "ns", rule(["get"], urls=["/x"]))) == [
        'rules[0].nonResourceURLs: Invalid value: ["/x"]: namespaced rules cannot apply to non-resource URLs']
    assert errors("clusterroles", cluster_role("r", rule(["get"], [""], urls=["/x"]))) == [
        'rules[0].nonResourceURLs: Invalid value: ["/x"]: rules cannot apply to both regular resources and non-resource URLs']
    assert errors("clusterroles", cluster_role("r", rule(["get"]))) == [
        "rules[0].apiGroups: Required value: resource rules must supply at least one api group",
        "rules[0].resources: Required value: resource rules must supply at least one resource"]
    assert errors("roles", role("a/b", "ns")) == ["metadata.name: Invalid value: \"a/b\": may not contain '/'"]
    assert errors("roles", {"kind": "Role", "metadata": {"name": "r"}}) == ["metadata.namespace: Required value"]


def test_validate_aggregation_rule():
    assert errors("clusterroles", cluster_role("a", aggregate=[{"matchLabels": {"x": "y"}}])) == []
    assert errors("clusterroles", cluster_role("a", aggregate=[])) == [
        "aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if "
        "aggregationRule is non-nil"]
    got = errors("clusterroles", cluster_role("a", aggregate=[{"matchExpressions": [{"key": "k", "operator": "Is"}]}]))
    assert got == ['aggregationRule.clusterRoleSelectors[0].matchExpressions[0].operator: Invalid value: "Is": '
                   'not a valid selector operator',
                   "aggregationRule.clusterRoleSelectors[0]: Invalid value: null: invalid label selector."]


def test_validate_bindings():
    ok = rb("b", "ns", "Role", "r", subject("User", "u"), subject("ServiceAccount", "default"))
    assert errors("rolebindings", ok) == []
    # v1 defaulting: roleRef.apiGroup and User/Group subjects' apiGroup
    bare = {"kind": "RoleBinding", "metadata": {"name": "b", "namespace": "ns"}, "roleRef": {"kind": "Role", "name": "r"},
            "subjects": [{"kind": "Group", "name": "g"}, {"kind": "ServiceAccount", "name": "sa"}]}
    assert errors("rolebindings", bare) == []
    assert bare["roleRef"]["apiGroup"] == G and bare["subjects"][0]["apiGroup"] == G
    assert "apiGroup" not in bare["subjects"][1]
    bad = crb("b", "x", subject("ServiceAccount", "Bad_Name"), {"kind": "User", "name": "u", "apiGroup": "x"},
              {"kind": "Bot", "name": ""})
    bad["roleRef"] = {"apiGroup": "other.io", "kind": "Role", "name": ""}
    assert errors("clusterrolebindings", bad) == [
        'roleRef.apiGroup: Unsupported value: "other.io": supported values: "rbac.authorization.k8s.io"',
        'roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"',
        "roleRef.name: Required value",
        'subjects[0].name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case '
        "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
        "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        "subjects[0].namespace: Required value",
        'subjects[1].apiGroup: Unsupported value: "x": supported values: "rbac.authorization.k8s.io"',
        "subjects[2].name: Required value",
        'subjects[2].kind: Unsupported value: "Bot": supported values: "ServiceAccount", "User", "Group"',
    ]
    sa_group = rb("b", "ns", "ClusterRole", "x", {"kind": "ServiceAccount", "name": "sa", "apiGroup": G})
    assert errors("rolebindings", sa_group) == [
        'subjects[0].apiGroup: Unsupported value: "rbac.authorization.k8s.io": supported values: ""']


def test_role_ref_is_immutable():
    old = crb("b", "view", subject("User", "u"))
    new = crb("b", "edit", subject("User", "u"), subject("User", "v"))
    assert errors("clusterrolebindings", new, old) == [
        'roleRef: Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"ClusterRole","Name":"edit"}: '
        "cannot change roleRef"]
    assert errors("clusterrolebindings", crb("b", "view", subject("User", "v")), old) == []


# -- tables -----------------------------------------------------------------------------------------


def test_binding_table():
    obj = rb("b", "ns", "ClusterRole", "view", subject("User", "u1"), subject("Group", "g"),
             subject("ServiceAccount", "sa", "ns2"), subject("User", "u2"))
    obj["metadata"]["creationTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1_700_000_000 - 90))
    table = to_table(RT["rolebindings"], [obj], now=1_700_000_000)
    assert [(c["name"], c["priority"]) for c in table["columnDefinitions"]] == [
        ("Name", 0), ("Role", 0), ("Age", 0), ("Users", 1), ("Groups", 1), ("ServiceAccounts", 1)]
    assert table["rows"][0]["cells"] == ["b", "ClusterRole/view", "90s", "u1, u2", "g", "ns2/sa"]
    crb_table = to_table(RT["clusterrolebindings"], [crb("c", "edit")], now=1_700_000_000)
    assert crb_table["columnDefinitions"][3]["description"] == "Users in the clusterRoleBinding"
    assert crb_table["rows"][0]["cells"] == ["c", "ClusterRole/edit", "<unknown>", "", "", ""]
    # roles have no printer in kube: the default table
    assert [c["name"] for c in to_table(RT["clusterroles"], [], now=0)["columnDefinitions"]] == ["Name", "Created At"]


# -- caching ------------------------------------------------------------------------------------------


class CountingSource(MemoryPolicySource):
    def __init__(self) -> None:
        super().__init__()
        self.listed = 0

    def cluster_role_bindings(self, cluster):
        self.listed += 1
        return super().cluster_role_bindings(cluster)


def test_generation_invalidates_caches():
    source = CountingSource()
    authz = RBACAuthorizer(source)
    attrs = res(ALICE, "get", "pods", ns="ns1")
    assert not authz.authorize(attrs).allowed
    for _ in range(100):
        authz.authorize(attrs)
        authz.authorize(res(BOB, "get", "pods", ns="ns1"))
    assert source.listed == 1  # one index for the cluster, whoever asks
    source.put("c1", cluster_role("r", rule(["get"], [""], ["pods"])))
    source.put("c1", crb("r", "r", subject("User", "alice")))
    assert authz.authorize(attrs).allowed
    assert source.listed == 2
    source.put("c1", cluster_role("r", rule(["list"], [""], ["pods"])))
    assert not authz.authorize(attrs).allowed  # a changed role is seen too
    source.delete("c1", "ClusterRole", "r")
    assert authz.authorize(attrs).reason == 'RBAC: clusterrole.rbac.authorization.k8s.io "r" not found'
    source.delete("c1", "ClusterRoleBinding", "r")
    assert authz.authorize(attrs).reason == ""


def test_bounded_caches(source):
    authz = RBACAuthorizer(source, max_clusters=2, max_users=3)
    for i in range(10):
        authz.authorize(res(UserInfo(f"u{i}"), "get", "pods", cluster=f"c{i}"))
    assert len(authz._clusters) == 2 and len(authz._flat) == 3
    # least recently used goes first
    authz.authorize(res(UserInfo("u7"), "get", "pods", cluster="c7"))
    authz.authorize(res(UserInfo("u10"), "get", "pods", cluster="c10"))
    assert [k[2] for k in authz._flat] == ["u9", "u7", "u10"]


def test_authorize_cost(source, authz, capsys):
    """A hot authorize() for a user with a few bindings: printed, not asserted (machines differ)."""
    source.put("c1", cluster_role("cm", rule(["get", "list", "create"], [""], ["configmaps"])))
    source.put("c1", crb("cm", "cm", subject("Group", "devs")))
    source.put("c1", rb("edit", "team", "ClusterRole", "edit", subject("User", "dev")))
    source.put("c1", rb("view", "team", "ClusterRole", "view", subject("Group", "devs")))
    dev = UserInfo("dev", groups=("devs", "system:authenticated"))
    cases = {
        "non-admin create secret (RoleBinding to edit)": res(dev, "create", "secrets", ns="team"),
        "non-admin get configmap (ClusterRoleBinding)": res(dev, "get", "configmaps", ns="team"),
        "admin (cluster-admin)": res(ADMIN, "create", "configmaps", ns="team"),
        "no opinion": res(dev, "delete", "nodes"),
    }
    n = 20_000
    with capsys.disabled():
        for label, attrs in cases.items():
            authz.authorize(attrs)
            t0 = time.perf_counter()
            for _ in range(n):
                authz.authorize(attrs)
            print(f"\nauthorize() {label}: {(time.perf_counter() - t0) / n * 1e6:.2f} µs")
    assert authz.authorize(cases["non-admin create secret (RoleBinding to edit)"]).allowed
