"""The fleet components' RBAC (fleetplane.fleet.identities): well-formed, least privilege, and
covering every hub request the components make.

The requests are listed below as data, each with the file and a snippet of the code that makes
it (so a refactor that moves or drops a call shows up here), and checked against the roles with a
small matcher of kube's RuleAllows written for this test (not the hub's authorizer)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from fleetplane.fleet import identities as ids

SRC = Path(__file__).resolve().parents[2] / "src" / "fleetplane"
RBAC = "rbac.authorization.k8s.io"
LC, CLUSTER, CLUSTER_NS = "team-a", "edge-1", "fleet"
OTHER = "edge-2"


# -- a small RuleAllows -----------------------------------------------------------------------------


def rule_allows(rule: dict, verb: str, group: str = "", resource: str = "", sub: str = "", name: str = "",
                path: str | None = None) -> bool:
    """kube's RuleAllows: a resource request (``path`` None) or a non-resource one."""
    verbs = rule.get("verbs") or []
    if "*" not in verbs and verb not in verbs:
        return False
    if path is not None:
        for u in rule.get("nonResourceURLs") or []:
            if u == "*" or u == path or (u.endswith("*") and path.startswith(u.rstrip("*"))):
                return True
        return False
    if rule.get("nonResourceURLs"):
        return False
    groups = rule.get("apiGroups") or []
    if "*" not in groups and group not in groups:
        return False
    resources = rule.get("resources") or []
    combined = f"{resource}/{sub}" if sub else resource
    if "*" not in resources and combined not in resources and not (sub and f"*/{sub}" in resources):
        return False
    names = rule.get("resourceNames") or []
    return not names or name in names


def any_allows(rules: list[dict], *args, **kwargs) -> bool:
    return any(rule_allows(r, *args, **kwargs) for r in rules)


def roles() -> dict[str, dict]:
    return {r["metadata"]["name"]: r for r in ids.cluster_roles()}


def role_rules(name: str) -> list[dict]:
    return roles()[name]["rules"]


# -- the hub requests, as data ---------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One request a component makes to the hub.

    ``where``: ``wildcard`` (``/clusters/*``, authorized in root), ``root`` or ``lc`` (the Cluster's
    logical cluster, or any logical cluster for the controllers). ``name`` is the object's name
    where the request names one (never for create/list/watch). ``planned``: no code makes it yet.
    """

    component: str
    file: str
    snippet: str
    verb: str
    group: str = ""
    resource: str = ""
    sub: str = ""
    where: str = "lc"
    namespace: str = ""
    name: str = ""
    path: str | None = None
    planned: bool = False


CC, SPL, SYN, PULL, CRON = "cluster-controller", "splitter", "syncer", "pull-syncer", "cronjob-controller"
CRDS = ("apiextensions.k8s.io", "customresourcedefinitions")
CLUSTERS = ("cluster.example.dev", "clusters")
PROFILES = ("multicluster.x-k8s.io", "clusterprofiles")
LEASES = ("coordination.k8s.io", "leases")
CDS = ("fleet.fleetplane.io", "clusterdaemonsets")
DEPLOY = ("apps", "deployments")
DAEMONSETS = ("apps", "daemonsets")
STATEFULSETS = ("apps", "statefulsets")


def _syncer_calls() -> list[Call]:
    """The Syncer (fleet/syncer/), in its logical cluster, with the default synced types."""
    out = [
        Call(SYN, "fleet/syncer/discovery.py", 'client.request("GET", "/api", accept=AGGREGATED_ACCEPT)', "get", path="/api"),
        Call(SYN, "fleet/syncer/discovery.py", 'client.request("GET", "/apis", accept=AGGREGATED_ACCEPT)', "get", path="/apis"),
        Call(SYN, "fleet/syncer/discovery.py", 'doc = await client.request("GET", path)', "get", path="/api/v1"),
        Call(SYN, "fleet/syncer/discovery.py", 'doc = await client.request("GET", path)', "get", path="/apis/apps/v1"),
        Call(SYN, "fleet/syncer/hubcrds.py", "items, _ = await hub.list_all(CRDS)", "list", *CRDS),
        Call(SYN, "fleet/syncer/typesync.py", 'created = await self.hub.request("POST", CRDS, body=body', "create", *CRDS),
        Call(SYN, "fleet/syncer/typesync.py", 'created = await self.hub.request("POST", CRDS, body=fallback', "create", *CRDS),
        Call(SYN, "fleet/syncer/typesync.py", 'await self.hub.request("PUT", f"{CRDS}/{name}"', "update", *CRDS,
             name="widgets.example.com"),
        Call(SYN, "fleet/syncer/typesync.py", 'await self.hub.patch(f"{CRDS}/{meta[\'name\']}"', "patch", *CRDS,
             name="widgets.example.com"),
        Call(SYN, "fleet/syncer/typesync.py", 'await self.hub.patch(f"{CRDS}/{name}", {"metadata": {"labels": {label: None}}}',
             "patch", *CRDS, name="widgets.example.com"),
        Call(SYN, "kube/events.py", "await self.client.create(path, body)", "create", "", "events", namespace="default"),
        Call(SYN, "kube/events.py", 'await self.client.patch(f"{seen[0]}/{seen[1]}"', "patch", "", "events",
             namespace="default", name="w1.17f"),
    ]
    for group, res, ns, status in (("", "namespaces", "", False), ("", "configmaps", "default", False),
                                   ("", "serviceaccounts", "default", False), ("", "secrets", "default", False),
                                   ("apps", "deployments", "default", True)):
        out += [
            Call(SYN, "kube/informer.py", "items, rv = await self.client.list_all(self.path, self._query())", "list", group, res),
            Call(SYN, "kube/informer.py", "async for ev in self.client.watch(self.path, q, timeout)", "watch", group, res),
            Call(SYN, "fleet/syncer/objectsync.py", "items, _ = await self.sync.syncer.hub.list_all(self.st.hub.path())",
                 "list", group, res),
            Call(SYN, "fleet/syncer/objectsync.py", "live = await self.hub.get(st.hub.path(ns, name))", "get", group, res,
                 namespace=ns, name="obj"),
            Call(SYN, "fleet/syncer/objectsync.py", "live = await self.hub.get(path)", "get", group, res, namespace=ns, name="obj"),
            Call(SYN, "fleet/syncer/objectsync.py", 'out = await self.hub.patch(w.st.hub.path(meta.get("namespace") or "", meta["name"]), {"metadata": md}',
                 "patch", group, res, namespace=ns, name="obj"),
            Call(SYN, "fleet/syncer/objectsync.py", "await self.hub.patch(path, ops, JSON_PATCH, self.syncer.manager)",
                 "patch", group, res, namespace=ns, name="obj"),
            Call(SYN, "fleet/syncer/objectsync.py", 'w.wrote(await self.hub.patch(w.st.hub.path(meta.get("namespace") or "", meta["name"]), ops, JSON_PATCH',
                 "patch", group, res, namespace=ns, name="obj"),
        ]
        if status:
            out.append(Call(SYN, "fleet/syncer/objectsync.py", 'w.wrote(await self.hub.patch(st.hub.path(meta.get("namespace") or "", meta["name"], "status")',
                            "patch", group, res, "status", namespace=ns, name="obj"))
    return out


def _pull_calls() -> list[Call]:
    """The pull-mode syncer (fleet/cluster/pull.py) on top of the Syncer's."""
    lease = ids.syncer_lease_name(CLUSTER)
    return [
        Call(PULL, "fleet/cluster/pull.py", "lease = await self.hub.get(self.lease_path)", "get", *LEASES,
             namespace=CLUSTER_NS, name=lease),
        Call(PULL, "fleet/cluster/pull.py", "cluster = await self.hub.get(self.cluster_path)", "get", *CLUSTERS,
             namespace=CLUSTER_NS, name=CLUSTER),
        Call(PULL, "fleet/cluster/pull.py", "await self.hub.create(paths.lease_path(self.lc, self.ns), body)",
             "create", *LEASES, namespace=CLUSTER_NS),
        Call(PULL, "fleet/cluster/pull.py", 'await self.hub.patch(self.lease_path, {"metadata": {"annotations": annotations}',
             "patch", *LEASES, namespace=CLUSTER_NS, name=lease),
    ]


def _leader_calls(component: str, lease: str) -> list[Call]:
    f, ns = "kube/leaderelection.py", ids.LEADER_ELECTION_NAMESPACE
    return [
        Call(component, f, "lease = await self.client.get(self._path(cfg.name))", "get",
             *LEASES, where="root", namespace=ns, name=lease),
        Call(component, f, "created = await self.client.create(self._path(),", "create", *LEASES,
             where="root", namespace=ns),
        Call(component, f, "updated = await self.client.replace(\n                self._path(cfg.name),", "update", *LEASES,
             where="root", namespace=ns, name=lease),
        Call(component, f, "await self.client.replace(self._path(cfg.name), body)",
             "update", *LEASES, where="root", namespace=ns, name=lease),
    ]


def _controller_calls() -> list[Call]:
    f, ns = "fleet/cluster/controller.py", CLUSTER_NS
    inv, dele = "fleet/cluster/inventory.py", "fleet/cluster/deletion.py"
    out = [
        Call(CC, f, 'Informer(self.hub, f"/clusters/*/apis/{GROUP}/{VERSION}/{PLURAL}"', "list", *CLUSTERS, where="wildcard"),
        Call(CC, f, 'Informer(self.hub, f"/clusters/*/apis/{GROUP}/{VERSION}/{PLURAL}"', "watch", *CLUSTERS, where="wildcard"),
        Call(CC, "fleet/cluster/hubcrds.py", 'Informer(hub, crds_path("*")', "list", *CRDS, where="wildcard"),
        Call(CC, "fleet/cluster/hubcrds.py", 'Informer(hub, crds_path("*")', "watch", *CRDS, where="wildcard"),
        Call(CC, "fleet/cluster/finalizer.py", "updated = await self.hub.patch(cluster_path(state.lc, state.ns, state.name), body)",
             "patch", *CLUSTERS, namespace=ns, name=CLUSTER),
        Call(CC, f, 'return await self.hub.patch(cluster_path(state.lc, state.ns, state.name, "/status"), body)',
             "patch", *CLUSTERS, "status", namespace=ns, name=CLUSTER),
        Call(CC, inv, "existing = await hub.get(path)", "get", *PROFILES, namespace=ns, name=CLUSTER),
        Call(CC, inv, "existing = await hub.create(profile_path(state.lc, state.ns)", "create", *PROFILES, namespace=ns),
        Call(CC, dele, "prof = await hub.get(profile_path(lc, ns, name))", "get", *PROFILES,
             namespace=ns, name=CLUSTER),
        Call(CC, dele, "await hub.delete(profile_path(lc, ns, name))", "delete", *PROFILES,
             namespace=ns, name=CLUSTER),
        Call(CC, f, 'await self.hub.apply(profile_path(lc, ns, name, "/status"), body, FIELD_MANAGER)', "patch",
             *PROFILES, "status", namespace=ns, name=CLUSTER),
        Call(CC, "inventory/status.py", "await self.api_client.apply(path, body, self.field_manager, force=True)", "patch",
             *PROFILES, "status", namespace=ns, name=CLUSTER),
        Call(CC, inv, "current = await hub.get(path)", "get", "", "secrets", namespace=ns, name=CLUSTER),
        Call(CC, inv, 'await hub.create(core_path(state.lc, state.ns, "secrets"), desired)', "create", "", "secrets",
             namespace=ns),
        Call(CC, inv, 'await hub.patch(path, {"data": desired["data"]})', "patch", "", "secrets", namespace=ns, name=CLUSTER),
        Call(CC, inv, "await hub.delete(path)", "delete", "", "secrets", namespace=ns, name=CLUSTER),
        Call(CC, dele, 'secret = await hub.get(core_path(lc, ns, "secrets", name))', "get", "",
             "secrets", namespace=ns, name=CLUSTER),
        Call(CC, dele, 'await hub.delete(core_path(lc, ns, "secrets", name))', "delete", "",
             "secrets", namespace=ns, name=CLUSTER),
        Call(CC, f, "return await self.hub.get(lease_path(state.lc, state.ns, lease_name(state.name)))",
             "get", *LEASES, namespace=ns, name=ids.syncer_lease_name(CLUSTER)),
        Call(CC, dele, "await hub.delete(lease_path(lc, ns, lease_name(name)))", "delete",
             *LEASES, namespace=ns, name=ids.syncer_lease_name(CLUSTER)),
        Call(CC, "kube/events.py", "await self.client.create(path, body)", "create", "", "events", namespace=ns),
        # release_hub_objects, for each default synced type
        Call(CC, "fleet/cluster/cleanup.py", 'lst = await hub.get(crds, {"labelSelector": label})', "list", *CRDS),
        Call(CC, "fleet/cluster/cleanup.py", "await hub.patch(f\"{crds}/{crd['metadata']['name']}\"", "patch", *CRDS,
             name="widgets.example.com"),
    ]
    for group, res in (("", "configmaps"), ("", "secrets"), ("", "serviceaccounts"), ("apps", "deployments")):
        out += [
            Call(CC, "fleet/cluster/cleanup.py", 'lst = await hub.get(f"{prefix}{base}/{plural}", {"labelSelector"', "list",
                 group, res, namespace=""),
            Call(CC, "fleet/cluster/cleanup.py", 'await hub.patch(path, {"metadata": patch})', "patch", group, res,
                 namespace="default", name="obj"),
            Call(CC, "fleet/cluster/cleanup.py", "obj = await hub.get(path)", "get", group, res, namespace="default", name="obj"),
        ]
    out += _leader_calls(CC, ids.CLUSTER_CONTROLLER_LEASE)
    return out


def _splitter_calls() -> list[Call]:
    f = "fleet/splitter/controller.py"
    out = []
    apps = 'f"/clusters/*/apis/apps/v1/{KINDS[k].plural}"'
    for group, res, snippet in ((*DEPLOY, apps), (*DAEMONSETS, apps), (*STATEFULSETS, apps),
                                (*PROFILES, 'f"/clusters/*/apis/{ic.GROUP}/{ic.VERSION}/{ic.PLURAL}"'),
                                ("", "namespaces", '"/clusters/*/api/v1/namespaces"'),
                                (*CRDS, '"/clusters/*/apis/apiextensions.k8s.io/v1/customresourcedefinitions"'),
                                (*CDS, 'f"/clusters/*/apis/{CDS_GROUP}/{CDS_VERSION}/{CDS_PLURAL}"')):
        out += [Call(SPL, f, snippet, "list", group, res, where="wildcard"),
                Call(SPL, f, snippet, "watch", group, res, where="wildcard")]
    out += [
        Call(SPL, f, 'await self.sp.hub.delete(f"{path}/{cmd[\'name\']}", uid=cmd.get("uid"))', "delete", *DEPLOY,
             namespace="default", name="web--east"),
        Call(SPL, f, "created = await hub.create(path, body, FIELD_MANAGER)", "create", *DEPLOY, namespace="default"),
        Call(SPL, f, 'updated = await hub.replace(f"{path}/{cmd[\'name\']}", new, FIELD_MANAGER)', "update", *DEPLOY,
             namespace="default", name="web--east"),
        Call(SPL, f, 'updated = await self.sp.hub.patch(path, [{"op": "add", "path": "/status", "value": new}]', "patch",
             *DEPLOY, "status", namespace="default", name="web"),
        Call(SPL, f, 'updated = await self.sp.hub.patch(path, [{"op": "add", "path": "/status", "value": new}]', "patch",
             *CDS, "status", namespace="default", name="agent"),
        Call(SPL, f, "await self.sp.hub.patch(path, patch, MERGE_PATCH, FIELD_MANAGER)", "patch", *DEPLOY,
             namespace="default", name="web"),
        Call(SPL, f, "await self.sp.hub.patch(path, patch, MERGE_PATCH, FIELD_MANAGER)", "patch", *CDS,
             namespace="default", name="agent"),
        *(c for kind in (DAEMONSETS, STATEFULSETS) for c in (
            Call(SPL, f, 'await self.sp.hub.delete(f"{path}/{cmd[\'name\']}", uid=cmd.get("uid"))', "delete", *kind,
                 namespace="default", name="web--east"),
            Call(SPL, f, "created = await hub.create(path, body, FIELD_MANAGER)", "create", *kind, namespace="default"),
            Call(SPL, f, 'updated = await hub.replace(f"{path}/{cmd[\'name\']}", new, FIELD_MANAGER)', "update",
                 *kind, namespace="default", name="web--east"),
            Call(SPL, f, 'updated = await self.sp.hub.patch(path, [{"op": "add", "path": "/status", "value": new}]',
                 "patch", *kind, "status", namespace="default", name="web"),
            Call(SPL, f, "await self.sp.hub.patch(path, patch, MERGE_PATCH, FIELD_MANAGER)", "patch", *kind,
                 namespace="default", name="web"))),
        Call(SPL, "kube/events.py", "await self.client.create(path, body)", "create", "", "events", namespace="default"),
        Call(SPL, "kube/events.py", 'await self.client.patch(f"{seen[0]}/{seen[1]}"', "patch", "", "events",
             namespace="default", name="web.17f"),
    ]
    return out + _leader_calls(SPL, ids.SPLITTER_LEASE)


def _hpa_controller_calls() -> list[Call]:
    f, c = "fleet/hpas/controller.py", ids.HPA_CONTROLLER
    hpa = ("autoscaling", "horizontalpodautoscalers")
    out = []
    for group, res, snippet in ((*hpa, 'f"/clusters/*/apis/{HPA[0]}/{HPA[1]}/{HPA[2]}"'),
                                (*DEPLOY, '"/clusters/*/apis/apps/v1/deployments"')):
        out += [Call(c, f, snippet, "list", group, res, where="wildcard"),
                Call(c, f, snippet, "watch", group, res, where="wildcard")]
    out += [
        Call(c, f, "await self.hub.create(path, body, FIELD_MANAGER)", "create", *hpa, namespace="default"),
        Call(c, f, "ops.append(self.hub.replace(f\"{path}/{meta(have)['name']}\", new, FIELD_MANAGER))", "update", *hpa,
             namespace="default", name="web--east"),
        Call(c, f, "await self.hub.delete(f\"{path}/{meta(child)['name']}\", uid=meta(child).get(\"uid\"))", "delete", *hpa,
             namespace="default", name="web--east"),
        Call(c, f, 'await self.hub.replace(hub_path(lc, API_VERSION, HPA[2], ns, name, "status"), body, FIELD_MANAGER)',
             "update", *hpa, "status", namespace="default", name="web"),
        Call(c, f, 'await self.hub.patch(hub_path(lc, "apps/v1", "deployments", ns, tmd["name"]),', "patch", *DEPLOY,
             namespace="default", name="web"),
        Call(c, f, 'await self.hub.patch(hub_path(lc, "apps/v1", "deployments", ns, dn),', "patch", *DEPLOY,
             namespace="default", name="web"),
        Call(c, "kube/events.py", "await self.client.create(path, body)", "create", "", "events", namespace="default"),
        Call(c, "kube/events.py", 'await self.client.patch(f"{seen[0]}/{seen[1]}"', "patch", "", "events",
             namespace="default", name="web.17f"),
    ]
    return out + _leader_calls(c, ids.HPA_CONTROLLER_LEASE)
def _cronjob_calls() -> list[Call]:
    f = "fleet/cronjobs/controller.py"
    jobs, cronjobs = ("batch", "jobs"), ("batch", "cronjobs")
    out = []
    for group, res, snippet in ((*cronjobs, '"/clusters/*/apis/batch/v1/cronjobs"'),
                                (*jobs, '"/clusters/*/apis/batch/v1/jobs"'),
                                (*PROFILES, 'f"/clusters/*/apis/{ic.GROUP}/{ic.VERSION}/{ic.PLURAL}"'),
                                (*CRDS, '"/clusters/*/apis/apiextensions.k8s.io/v1/customresourcedefinitions"')):
        out += [Call(CRON, f, snippet, "list", group, res, where="wildcard"),
                Call(CRON, f, snippet, "watch", group, res, where="wildcard")]
    out += [
        Call(CRON, f, 'created = await self.hub.create(_path(lc, "jobs", ns), body, manager=FIELD_MANAGER)', "create",
             *jobs, namespace="default"),
        Call(CRON, f, 'await self.hub.delete(_path(lc, "jobs", jm["namespace"], jm["name"]), uid=jm.get("uid"))', "delete",
             *jobs, namespace="default", name="nightly-29000000"),
        Call(CRON, f, 'await self.hub.patch(_path(lc, "jobs", jm["namespace"], jm["name"]), patch, MERGE_PATCH', "patch",
             *jobs, namespace="default", name="nightly-29000000"),
        Call(CRON, f, 'out = await self.hub.patch(_path(lc, "cronjobs", m["namespace"], m["name"], "status"),', "patch",
             *cronjobs, "status", namespace="default", name="nightly"),
        Call(CRON, f, 'await self.hub.patch(_path(lc, "cronjobs", m["namespace"], m["name"]),', "patch",
             *cronjobs, namespace="default", name="nightly"),
        Call(CRON, "kube/events.py", "await self.client.create(path, body)", "create", "", "events", namespace="default"),
        Call(CRON, "kube/events.py", 'await self.client.patch(f"{seen[0]}/{seen[1]}"', "patch", "", "events",
             namespace="default", name="nightly.17f"),
    ]
    return out + _leader_calls(CRON, ids.CRONJOB_CONTROLLER_LEASE)


def _placement_decisions_calls() -> list[Call]:
    f, c = "fleet/decisions/controller.py", ids.PLACEMENT_DECISIONS
    pds = ("multicluster.x-k8s.io", "placementdecisions")
    out = []
    for group, res, snippet in ((*DEPLOY, 'informer(f"/clusters/*{api_path(*gvr)}"'),
                                (*CDS, 'informer(f"/clusters/*{api_path(*gvr)}"'),
                                (*PROFILES, 'f"/clusters/*/apis/{ic.GROUP}/{ic.VERSION}/{ic.PLURAL}"'),
                                (*pds, 'f"/clusters/*/apis/{GROUP}/{VERSION}/{PLURAL}"')):
        out += [Call(c, f, snippet, "list", group, res, where="wildcard"),
                Call(c, f, snippet, "watch", group, res, where="wildcard")]
    out += [
        Call(c, f, "created = await self.hub.create(path, body, FIELD_MANAGER)", "create", *pds, namespace="default"),
        Call(c, f, 'updated = await self.hub.replace(f"{path}/{cmd[\'name\']}", new, FIELD_MANAGER)', "update", *pds,
             namespace="default", name="web-deployment-0"),
        Call(c, f, 'await self.hub.delete(hub_path(lc, f"{GROUP}/{VERSION}", PLURAL, ns, md.get("name") or ""), uid=',
             "delete", *pds, namespace="default", name="web-deployment-0"),
    ]
    return out + _leader_calls(c, ids.PLACEMENT_DECISIONS_LEASE)


SYNCER_CALLS = _syncer_calls()
PULL_CALLS = _pull_calls()
CONTROLLER_CALLS = _controller_calls()
SPLITTER_CALLS = _splitter_calls()
HPA_CONTROLLER_CALLS = _hpa_controller_calls()
PLACEMENT_DECISIONS_CALLS = _placement_decisions_calls()
CRONJOB_CALLS = _cronjob_calls()
ALL_CALLS = (SYNCER_CALLS + PULL_CALLS + CONTROLLER_CALLS + SPLITTER_CALLS + HPA_CONTROLLER_CALLS + CRONJOB_CALLS
             + PLACEMENT_DECISIONS_CALLS)

#: hub requests RBAC cannot grant ahead of time: objects of a type only known at run time (a
#: CRD a cluster offers, or anything through "*"). They need synced_type_rules() for that type,
#: or the planned per-logical-cluster role for CRD-defined types (docs/security.md).
DYNAMIC_TYPE_CALLS = [("list", "example.com", "widgets", ""), ("watch", "example.com", "widgets", ""),
                      ("patch", "example.com", "widgets", ""), ("patch", "example.com", "widgets", "status")]


# -- whose rules apply where -------------------------------------------------------------------------


def bootstrap_subject_rules(user: str) -> list[dict]:
    """The rules bootstrap bindings give ``user`` (in every logical cluster)."""
    out: list[dict] = []
    for b in ids.cluster_role_bindings():
        if any(s.get("kind") == "User" and s.get("name") == user for s in b["subjects"]):
            out += roles()[b["roleRef"]["name"]]["rules"]
    return out


def syncer_rules_in(namespace: str, objects: list[dict] | None = None, cluster: str = CLUSTER) -> list[dict]:
    """The rules the per-Syncer objects give the Syncer's ServiceAccount for a request in ``namespace``."""
    objects = ids.syncer_role_binding(LC, cluster, cluster_namespace=CLUSTER_NS) if objects is None else objects
    sa = ids.syncer_service_account(cluster)
    local = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objects
             if o["kind"] in ("Role", "ClusterRole")}
    out: list[dict] = []
    for b in objects:
        if b["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        assert b["subjects"] == [{"kind": "ServiceAccount", "name": sa, "namespace": ids.SYNCER_NAMESPACE}]
        bns = b["metadata"].get("namespace", "")
        if b["kind"] == "RoleBinding" and bns != namespace:
            continue
        ref = b["roleRef"]
        if ref["kind"] == "Role":
            out += local[("Role", bns, ref["name"])]["rules"]
        else:
            out += (local.get(("ClusterRole", "", ref["name"])) or roles()[ref["name"]])["rules"]
    return out


def allowed(rules: list[dict], call: Call) -> bool:
    if call.path is not None:
        return any_allows(rules, call.verb, path=call.path)
    ok = any_allows(rules, call.verb, call.group, call.resource, call.sub, call.name)
    if call.where == "wildcard":  # both grants, in root
        ok = ok and any_allows(rules, call.verb, path=ids.WILDCARD_PATH)
    return ok


# -- well-formed RBAC --------------------------------------------------------------------------------


def _strings(v: object) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, str) and x for x in v)


@pytest.mark.parametrize("role", ids.cluster_roles(), ids=lambda r: r["metadata"]["name"])
def test_roles_are_well_formed_rbac(role: dict) -> None:
    assert role["apiVersion"] == "rbac.authorization.k8s.io/v1" and role["kind"] == "ClusterRole"
    md = role["metadata"]
    assert md["labels"] == {"kubernetes.io/bootstrapping": "rbac-defaults"}
    assert md["annotations"] == {"rbac.authorization.kubernetes.io/autoupdate": "true"}
    assert role["rules"], "a role without rules"
    for r in role["rules"]:
        check_rule(r)
    keys = [(tuple(r.get("apiGroups", ())), tuple(r.get("resources", ())), tuple(r.get("resourceNames", ())),
             tuple(r.get("nonResourceURLs", ()))) for r in role["rules"]]
    assert len(keys) == len(set(keys)), "rules over the same things should be merged"


def check_rule(r: dict) -> None:
    assert set(r) <= {"verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs"}, r
    assert _strings(r.get("verbs")), r
    assert "*" not in r["verbs"], f"no wildcard verbs: {r}"
    if "nonResourceURLs" in r:
        assert set(r) == {"verbs", "nonResourceURLs"}, f"non-resource rules have only URLs and verbs: {r}"
        assert _strings(r["nonResourceURLs"])
        for u in r["nonResourceURLs"]:
            assert u.startswith("/") and "*" not in u[:-1], u
        assert set(r["verbs"]) <= {"get", "list", "watch"}, r
    else:
        assert isinstance(r.get("apiGroups"), list) and r["apiGroups"] and all(isinstance(g, str) for g in r["apiGroups"]), r
        assert _strings(r.get("resources")), r
        assert "*" not in r["apiGroups"] and not any(x == "*" or x.startswith("*/") for x in r["resources"]), r
        if "resourceNames" in r:
            assert _strings(r["resourceNames"]) and "create" not in r["verbs"], f"create cannot be limited by name: {r}"
    for k in ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs"):
        if k in r:
            assert r[k] == sorted(set(r[k])), f"{k} sorted and unique: {r}"


def test_bootstrap_bindings_bind_the_controllers_to_their_users_only() -> None:
    bindings = {b["metadata"]["name"]: b for b in ids.cluster_role_bindings()}
    assert set(bindings) == {ids.CLUSTER_CONTROLLER, ids.SPLITTER, ids.HPA_CONTROLLER, ids.CRONJOB_CONTROLLER, ids.SERVICE_CONTROLLER,
                             ids.PLACEMENT_DECISIONS}
    assert ids.PLACEMENT_DECISIONS == "system:fleetplane:placement-decisions"
    assert ids.HPA_CONTROLLER == "system:fleetplane:hpa-controller"
    assert ids.CLUSTER_CONTROLLER == "system:fleetplane:cluster-controller"
    assert ids.SPLITTER == "system:fleetplane:splitter"
    assert ids.CRONJOB_CONTROLLER == "system:fleetplane:cronjob-controller"
    for name, b in bindings.items():
        assert b["apiVersion"] == "rbac.authorization.k8s.io/v1" and b["kind"] == "ClusterRoleBinding"
        assert b["metadata"]["labels"] == {"kubernetes.io/bootstrapping": "rbac-defaults"}
        assert b["metadata"]["annotations"] == {"rbac.authorization.kubernetes.io/autoupdate": "true"}
        assert b["roleRef"] == {"apiGroup": RBAC, "kind": "ClusterRole", "name": name}
        assert b["subjects"] == [{"apiGroup": RBAC, "kind": "User", "name": name}]
    bound = {b["roleRef"]["name"] for b in bindings.values()}
    assert ids.SYNCER_ROLE not in bound and ids.SYNCER_SECRETS_ROLE not in bound
    assert set(roles()) == {ids.CLUSTER_CONTROLLER, ids.SPLITTER, ids.HPA_CONTROLLER, ids.CRONJOB_CONTROLLER,
                            ids.SERVICE_CONTROLLER, ids.SYNCER_ROLE, ids.SYNCER_SECRETS_ROLE, ids.PLACEMENT_DECISIONS}


def test_bootstrap_policy_accepts_them() -> None:
    """The hub's bootstrap table completes them (uid, creationTimestamp) as it does kube's own."""
    bootstrap = pytest.importorskip("fleetplane.pipeline.authorization.bootstrap")
    for obj in ids.cluster_roles():
        done = bootstrap._complete(obj, "ClusterRole")
        assert done["rules"] == obj["rules"] and done["metadata"]["labels"] == obj["metadata"]["labels"]
    for obj in ids.cluster_role_bindings():
        done = bootstrap._complete(obj, "ClusterRoleBinding")
        assert done["subjects"] == obj["subjects"] and done["roleRef"] == obj["roleRef"]


# -- coverage: every hub request is allowed -------------------------------------------------------------


@pytest.mark.parametrize("call", ALL_CALLS, ids=lambda c: f"{c.component}-{c.verb}-{c.path or c.resource}{'/' + c.sub if c.sub else ''}")
def test_the_call_is_in_the_code(call: Call) -> None:
    text = (SRC / call.file).read_text()
    assert call.snippet in text, f"{call.file} no longer contains {call.snippet!r}: review the roles"


@pytest.mark.parametrize("call", CONTROLLER_CALLS, ids=lambda c: f"{c.verb}-{c.resource}{'/' + c.sub if c.sub else ''}-{c.name}")
def test_cluster_controller_calls_are_covered(call: Call) -> None:
    assert allowed(bootstrap_subject_rules(ids.CLUSTER_CONTROLLER), call), call


@pytest.mark.parametrize("call", SPLITTER_CALLS, ids=lambda c: f"{c.verb}-{c.resource}{'/' + c.sub if c.sub else ''}-{c.name}")
def test_splitter_calls_are_covered(call: Call) -> None:
    assert allowed(bootstrap_subject_rules(ids.SPLITTER), call), call


@pytest.mark.parametrize("call", HPA_CONTROLLER_CALLS, ids=lambda c: f"{c.verb}-{c.resource}{'/' + c.sub if c.sub else ''}-{c.name}")
def test_hpa_controller_calls_are_covered(call: Call) -> None:
    assert allowed(bootstrap_subject_rules(ids.HPA_CONTROLLER), call), call


def test_the_hpa_controller_gets_nothing_it_does_not_use() -> None:
    hpa = role_rules(ids.HPA_CONTROLLER)
    for verb in ("get", "list", "watch"):
        assert not any_allows(hpa, verb, "", "secrets", name="s")
        assert not any_allows(hpa, verb, *CLUSTERS, name="c")
        assert not any_allows(hpa, verb, *PROFILES, name="p")
    for verb in ("create", "update", "delete"):
        assert not any_allows(hpa, verb, *DEPLOY, name="web")
    # the hub defaults an HPA itself: the controller never patches one
    assert not any_allows(hpa, "patch", "autoscaling", "horizontalpodautoscalers", name="web")
    assert not any(RBAC in (r.get("apiGroups") or []) for r in hpa)
    assert not any_allows(hpa, "get", path=ids.WILDCARD_PATH)
    assert not any_allows(hpa, "update", *LEASES, name=ids.SPLITTER_LEASE)
@pytest.mark.parametrize("call", CRONJOB_CALLS, ids=lambda c: f"{c.verb}-{c.resource}{'/' + c.sub if c.sub else ''}-{c.name}")
def test_cronjob_controller_calls_are_covered(call: Call) -> None:
    assert allowed(bootstrap_subject_rules(ids.CRONJOB_CONTROLLER), call), call


@pytest.mark.parametrize("call", PLACEMENT_DECISIONS_CALLS,
                         ids=lambda c: f"{c.verb}-{c.resource}{'/' + c.sub if c.sub else ''}-{c.name}")
def test_placement_decisions_calls_are_covered(call: Call) -> None:
    assert allowed(bootstrap_subject_rules(ids.PLACEMENT_DECISIONS), call), call


def test_the_decision_publisher_gets_nothing_it_does_not_use() -> None:
    pd = role_rules(ids.PLACEMENT_DECISIONS)
    for verb in ("get", "list", "watch"):
        assert not any_allows(pd, verb, "", "secrets", name="s")
        assert not any_allows(pd, verb, *CLUSTERS, name="c")
    for verb in ("create", "update", "patch", "delete"):  # it only reads workloads and profiles
        for res in (DEPLOY, CDS, PROFILES):
            assert not any_allows(pd, verb, *res, name="web")
        assert not any_allows(pd, verb, "", "events", name="e")
    assert not any_allows(pd, "patch", "multicluster.x-k8s.io", "placementdecisions", name="web-deployment-0")
    assert not any(RBAC in (r.get("apiGroups") or []) for r in pd)
    assert not any_allows(pd, "get", path=ids.WILDCARD_PATH)
    assert not any_allows(pd, "update", *LEASES, name=ids.SPLITTER_LEASE)


@pytest.mark.parametrize("call", SYNCER_CALLS + PULL_CALLS,
                         ids=lambda c: f"{c.verb}-{c.path or c.resource}{'/' + c.sub if c.sub else ''}-{c.namespace}")
def test_pull_syncer_calls_are_covered_by_its_bindings(call: Call) -> None:
    assert allowed(syncer_rules_in(call.namespace), call), call


def test_push_syncers_act_as_their_own_service_account() -> None:
    """The Cluster controller's syncer step provisions the Syncer's identity and hands it that token, not ours."""
    text = (SRC / "fleet/cluster/syncer.py").read_text()
    assert "identities.provision_syncer_identity(" in text and "token=token, client_cert_data=None" in text


@pytest.mark.parametrize("verb,group,resource,sub", DYNAMIC_TYPE_CALLS)
def test_types_known_only_at_run_time_need_their_own_grant(verb: str, group: str, resource: str, sub: str) -> None:
    """No wildcard stands in for them; syncer_role_binding(resources=...) adds the grant."""
    call = Call(SYN, "", "", verb, group, resource, sub, namespace="default", name="" if verb in ("list", "watch") else "w1")
    assert not allowed(syncer_rules_in("default"), call)
    assert not allowed(bootstrap_subject_rules(ids.CLUSTER_CONTROLLER), call)
    objects = ids.syncer_role_binding(LC, CLUSTER, cluster_namespace=CLUSTER_NS,
                                      resources=[*ids.SYNCER_DEFAULT_RESOURCES, "widgets.example.com"])
    assert allowed(syncer_rules_in("default", objects), call)


# -- what the Syncer must not get ---------------------------------------------------------------------


def _all_syncer_rules() -> list[dict]:
    every = ids.syncer_role_binding(LC, CLUSTER, cluster_namespace=CLUSTER_NS, resources=["*", "widgets.example.com"])
    return (role_rules(ids.SYNCER_ROLE) + role_rules(ids.SYNCER_SECRETS_ROLE)
            + [r for o in every if o["kind"] in ("Role", "ClusterRole") for r in o["rules"]])


def test_the_syncer_role_grants_nothing_on_secrets() -> None:
    for verb in ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"):
        assert not any_allows(role_rules(ids.SYNCER_ROLE), verb, "", "secrets", name="s")


def test_the_syncer_secrets_role_is_exactly_what_object_sync_does() -> None:
    assert role_rules(ids.SYNCER_SECRETS_ROLE) == [
        {"verbs": ["get", "list", "patch", "watch"], "apiGroups": [""], "resources": ["secrets"]}]
    for verb in ("create", "update", "delete", "deletecollection"):
        assert not any_allows(_all_syncer_rules(), verb, "", "secrets", name="s")


def test_secrets_are_bound_only_for_clusters_that_sync_them() -> None:
    def bound(resources: list[str] | None) -> set[str]:
        objs = ids.syncer_role_binding(LC, CLUSTER, cluster_namespace=CLUSTER_NS, resources=resources)
        return {o["roleRef"]["name"] for o in objs if o["kind"] == "ClusterRoleBinding"}

    assert ids.SYNCER_SECRETS_ROLE in bound(None)  # the default resources include secrets
    assert ids.SYNCER_SECRETS_ROLE in bound(["*"])
    assert ids.SYNCER_SECRETS_ROLE in bound(["secrets"])
    assert ids.SYNCER_SECRETS_ROLE not in bound(["deployments.apps", "configmaps"])
    assert not any_allows(syncer_rules_in("default", ids.syncer_role_binding(
        LC, CLUSTER, cluster_namespace=CLUSTER_NS, resources=["configmaps"])), "list", "", "secrets")


def test_the_syncer_gets_nothing_on_rbac_logical_clusters_or_the_wildcard() -> None:
    rules = _all_syncer_rules()
    for r in rules:
        assert RBAC not in (r.get("apiGroups") or []), r
        assert "tenancy.fleetplane.io" not in (r.get("apiGroups") or []), r
        assert "logicalclusters" not in (r.get("resources") or []), r
        assert "*" not in (r.get("apiGroups") or []) and "*" not in (r.get("resources") or []), r
    for verb in ("list", "watch", "get"):
        assert not any_allows(rules, verb, path=ids.WILDCARD_PATH)
    for verb in ("get", "list", "create", "update", "patch", "delete", "bind", "escalate"):
        for res in ("roles", "rolebindings", "clusterroles", "clusterrolebindings"):
            assert not any_allows(rules, verb, RBAC, res, name="x")
    assert not any_allows(rules, "create", "", "serviceaccounts", "token", name="x")
    assert not any_allows(rules, "impersonate", "", "serviceaccounts", name="x")


def test_the_syncer_reads_only_its_own_cluster_and_lease() -> None:
    in_ns = syncer_rules_in(CLUSTER_NS)
    assert any_allows(in_ns, "get", *CLUSTERS, name=CLUSTER)
    for verb in ("list", "watch", "update", "patch", "delete"):
        assert not any_allows(in_ns, verb, *CLUSTERS, name=CLUSTER)
    assert not any_allows(in_ns, "get", *CLUSTERS, name=OTHER)
    assert not any_allows(in_ns, "patch", *CLUSTERS, "status", name=CLUSTER)
    assert not any_allows(syncer_rules_in("default"), "get", *CLUSTERS, name=CLUSTER)  # only in its namespace
    assert any_allows(in_ns, "patch", *LEASES, name=ids.syncer_lease_name(CLUSTER))
    for verb in ("get", "patch", "update", "delete"):
        assert not any_allows(in_ns, verb, *LEASES, name=ids.syncer_lease_name(OTHER))
    assert not any_allows(syncer_rules_in("kube-system"), "create", *LEASES)
    for res in (PROFILES, CDS):
        for verb in ("get", "list", "patch"):
            assert not any_allows(in_ns, verb, *res, name=CLUSTER)


def test_the_syncer_service_account() -> None:
    assert ids.SYNCER_NAMESPACE == "fleetplane-system"
    assert ids.syncer_service_account("edge-1") == "fleetplane-syncer-edge-1"
    label = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    names = ["a.b", "a-b", "Edge", "edge", "x" * 80, "x" * 80 + "y", "team.prod.eu-west-1", "a" * 45]
    made = [ids.syncer_service_account(n) for n in names]
    for n, sa in zip(names, made, strict=True):
        assert len(sa) <= 63 and label.match(sa), (n, sa)
        assert ids.syncer_service_account(n) == sa  # stable
    assert len(set(made)) == len(made)
    with pytest.raises(ValueError):
        ids.syncer_service_account("")


def test_the_per_syncer_objects() -> None:
    objs = ids.syncer_role_binding(LC, CLUSTER, cluster_namespace=CLUSTER_NS)
    kinds = [(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in objs]
    assert kinds == [("ClusterRoleBinding", "", f"fleetplane:syncer:{CLUSTER}"),
                     ("ClusterRoleBinding", "", f"fleetplane:syncer-secrets:{CLUSTER}"),
                     ("Role", CLUSTER_NS, f"fleetplane:syncer:{CLUSTER}"),
                     ("RoleBinding", CLUSTER_NS, f"fleetplane:syncer:{CLUSTER}")]
    for o in objs:
        assert o["apiVersion"] == "rbac.authorization.k8s.io/v1"
        assert o["metadata"]["annotations"] == {"kcp.io/cluster": LC}
        assert o["metadata"]["labels"]["cluster.example.dev/cluster"] == CLUSTER
        assert "kubernetes.io/bootstrapping" not in o["metadata"]["labels"]
        for r in o.get("rules", ()):
            check_rule(r)
    yaml = pytest.importorskip("yaml")
    for docs in (objs, ids.cluster_roles() + ids.cluster_role_bindings()):
        assert "&id" not in yaml.safe_dump_all(docs), "objects share lists or dicts (YAML aliases)"
    other_ns = ids.syncer_role_binding(LC, CLUSTER, "elsewhere", cluster_namespace=CLUSTER_NS)
    assert {s["namespace"] for o in other_ns for s in o.get("subjects", ())} == {"elsewhere"}
    for bad in ("", "*"):
        with pytest.raises(ValueError):
            ids.syncer_role_binding(bad, CLUSTER)


def test_the_cluster_controller_can_provision_syncers_and_no_more() -> None:
    """kube's escalation check: binding a role needs ``bind`` on it or all of its rules, and
    writing the per-Syncer Role needs all of its rules (no ``escalate`` is granted)."""
    rules = bootstrap_subject_rules(ids.CLUSTER_CONTROLLER)
    for role in (ids.SYNCER_ROLE, ids.SYNCER_SECRETS_ROLE):
        assert any_allows(rules, "bind", RBAC, "clusterroles", name=role)
    role = next(o for o in ids.syncer_role_binding(LC, CLUSTER, cluster_namespace=CLUSTER_NS) if o["kind"] == "Role")
    for r in role["rules"]:
        for verb in r["verbs"]:
            for name in r.get("resourceNames") or [""]:
                assert any_allows(rules, verb, r["apiGroups"][0], r["resources"][0], name=name), r
    for verb in ("escalate", "bind"):
        assert not any_allows(rules, verb, RBAC, "clusterroles", name="cluster-admin")
    assert not any_allows(rules, "escalate", RBAC, "roles", name="x")
    assert not any_allows(rules, "create", "", "serviceaccounts", "token", name="x")
    assert not any_allows(rules, "create", RBAC, "clusterroles")
    # what the Syncers do is theirs now, not the controller's: no CRD import, no watch of synced types
    assert not any_allows(rules, "create", "apiextensions.k8s.io", "customresourcedefinitions")
    assert not any_allows(rules, "update", "apiextensions.k8s.io", "customresourcedefinitions", name="x")


def test_the_controllers_get_nothing_they_do_not_use() -> None:
    spl = role_rules(ids.SPLITTER)
    cc = role_rules(ids.CLUSTER_CONTROLLER)
    for verb in ("get", "list", "watch"):
        assert not any_allows(spl, verb, "", "secrets", name="s")
        assert not any_allows(spl, verb, *CLUSTERS, name="c")
    for rules in (spl, cc):
        for r in rules:
            assert "tenancy.fleetplane.io" not in (r.get("apiGroups") or []), r
        assert not any_allows(rules, "get", RBAC, "clusterroles", name="x")
        assert not any_allows(rules, "list", RBAC, "rolebindings")
    assert not any(RBAC in (r.get("apiGroups") or []) for r in spl)
    # the wildcard only for what the informers list and watch
    for rules, wide in ((cc, {CLUSTERS, CRDS}), (spl, {DEPLOY, DAEMONSETS, STATEFULSETS, PROFILES, ("", "namespaces"), CRDS, CDS})):
        assert any_allows(rules, "list", path=ids.WILDCARD_PATH)
        assert not any_allows(rules, "get", path=ids.WILDCARD_PATH)
        assert not any_allows(rules, "create", path=ids.WILDCARD_PATH)
        assert all(any_allows(rules, "watch", g, res) for g, res in wide)
    # leader election Leases: updated only by name
    assert any_allows(spl, "update", *LEASES, name=ids.SPLITTER_LEASE)
    assert not any_allows(spl, "update", *LEASES, name=ids.CLUSTER_CONTROLLER_LEASE)
    assert not any_allows(spl, "get", *LEASES, name="syncer-x")
    assert not any_allows(cc, "update", *LEASES, name=ids.SPLITTER_LEASE)
    from fleetplane.fleet.cluster.options import shard_lease_names

    assert all(any_allows(cc, "update", *LEASES, name=n) for n in [ids.CLUSTER_CONTROLLER_LEASE, *shard_lease_names()])


def test_the_constants_match_the_code() -> None:
    """identities.py avoids importing the client libraries; these are the values they define."""
    syncer = pytest.importorskip("fleetplane.fleet.syncer")
    assert ids.SYNCER_DEFAULT_RESOURCES == tuple(syncer.DEFAULT_RESOURCES)
    from fleetplane.fleet.cluster.paths import lease_name
    from fleetplane.fleet.splitter.run import LEASE_NAME
    from fleetplane.kube import leaderelection as leader

    assert ids.SPLITTER_LEASE == LEASE_NAME
    from fleetplane.fleet.hpas.run import LEASE_NAME as HPA_LEASE

    assert ids.HPA_CONTROLLER_LEASE == HPA_LEASE
    from fleetplane.fleet.decisions.run import LEASE_NAME as DECISIONS_LEASE

    assert ids.PLACEMENT_DECISIONS_LEASE == DECISIONS_LEASE
    assert ids.syncer_lease_name("x") == lease_name("x")
    from fleetplane.fleet.cluster.options import ClusterControllerOptions, shard_lease_names
    from fleetplane.fleet.cluster.run import lease_name as cluster_lease

    assert cluster_lease(None) == ids.CLUSTER_CONTROLLER_LEASE
    assert [cluster_lease(ClusterControllerOptions(shard=i, shards=4)) for i in range(4)] == shard_lease_names()[:4]
    assert leader.LeaderElectionConfig("x").namespace == ids.LEADER_ELECTION_NAMESPACE
    rbac = pytest.importorskip("fleetplane.pipeline.authorization.rbac")
    assert rbac.WILDCARD_PATH == ids.WILDCARD_PATH
