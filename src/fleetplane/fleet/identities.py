"""Who fleetplane's own components are on the hub, and the least-privilege RBAC each one gets.

Identities:

- :data:`CLUSTER_CONTROLLER` (``system:fleetplane:cluster-controller``), :data:`SPLITTER`
  (``system:fleetplane:splitter``) and :data:`CRONJOB_CONTROLLER`
  (``system:fleetplane:cronjob-controller``): the users the in-hub controllers authenticate as, with client
  certificates the hub issues at start (``fleetplane start``: ``<data-dir>/identities/*.kubeconfig``).
- A **pull-mode Syncer** of Cluster ``<name>`` acts as the ServiceAccount
  :func:`syncer_service_account` (``fleetplane-syncer-<name>``) in namespace
  :data:`SYNCER_NAMESPACE` of the Cluster's logical cluster; its token authenticates only there.
  A **push-mode Syncer** runs inside the Cluster controller's process with the controller's own
  credentials (``fleet/cluster/syncer.py``: ``hub = dataclasses.replace(self.hub_endpoint...)``), so the
  controller's role includes everything the Syncer's does.

:func:`cluster_roles` and :func:`cluster_role_bindings` are bootstrap policy: shared by every
logical cluster, never stored (the fleet plugin, :mod:`.plugin`, contributes them as they are).
The controller and splitter roles are bound to their users by bootstrap in every logical cluster;
``/clusters/*`` list/watch is authorized in ``root`` and needs both the resource rule and the
non-resource rule ``{nonResourceURLs: ["/clusters/*"], verbs: [list, watch]}``, so the roles of components that watch across logical clusters carry that rule. The Syncer roles are
*not* bound by bootstrap: :func:`syncer_role_binding` gives the bindings (and the per-Syncer Role
naming its own Cluster and Lease) to create in the Syncer's logical cluster.

Every rule below names the code that needs it. What RBAC cannot say (labels, name prefixes, types
only known at run time) is said in each docstring and in docs/security.md.

This module imports nothing heavy: ``fleetplane start`` imports it before the hub runs.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable, Sequence
from typing import Any

from ..apimachinery.validation import is_dns1123_label, is_label_value
from ..inventory import constants as ic
from ..kube.client import ApiError, Client
from .cluster.crd import GROUP as CLUSTER_GROUP
from .cluster.crd import LABEL_CLUSTER
from .cluster.crd import PLURAL as CLUSTER_PLURAL
from .cluster.options import LEASE_NAME as CLUSTER_LEASE_NAME
from .cluster.options import shard_lease_names
from .clusterdaemonset_crd import CDS_GROUP, CDS_PLURAL
from .syncer import constants as sync_constants

__all__ = [
    "CLUSTER_CONTROLLER", "CLUSTER_CONTROLLER_LEASE", "CRONJOB_CONTROLLER", "CRONJOB_CONTROLLER_LEASE", "HPA_CONTROLLER",
    "HPA_CONTROLLER_LEASE", "LEADER_ELECTION_NAMESPACE", "PLACEMENT_DECISIONS", "PLACEMENT_DECISIONS_LEASE",
    "SERVICE_CONTROLLER", "SERVICE_CONTROLLER_LEASE", "SPLITTER", "SPLITTER_LEASE",
    "SYNCER_DEFAULT_RESOURCES", "SYNCER_NAMESPACE", "SYNCER_ROLE", "SYNCER_SECRETS_ROLE", "WILDCARD_PATH",
    "cluster_role_bindings", "cluster_roles", "syncer_lease_name", "syncer_role_binding", "syncer_service_account",
    "synced_type_rules",
]

#: the user the in-hub Cluster controller authenticates as (a client certificate); also its
#: ClusterRole and ClusterRoleBinding
CLUSTER_CONTROLLER = "system:fleetplane:cluster-controller"
#: the user the in-hub Deployment splitter authenticates as; also its ClusterRole and binding
SPLITTER = "system:fleetplane:splitter"
#: the user the in-hub Service controller authenticates as; also its ClusterRole and binding
SERVICE_CONTROLLER = "system:fleetplane:service-controller"
#: the user the in-hub HorizontalPodAutoscaler controller authenticates as; also its ClusterRole and binding
HPA_CONTROLLER = "system:fleetplane:hpa-controller"
CRONJOB_CONTROLLER = "system:fleetplane:cronjob-controller"
#: the user the in-hub PlacementDecision publisher authenticates as; also its ClusterRole and binding
PLACEMENT_DECISIONS = "system:fleetplane:placement-decisions"
#: what every Syncer may do in its logical cluster (bound per Syncer, never by bootstrap)
SYNCER_ROLE = "system:fleetplane:syncer"
#: Secrets, for the Syncers of Clusters that sync ``secrets`` (bound per Syncer, only then)
SYNCER_SECRETS_ROLE = "system:fleetplane:syncer:secrets"

#: where a Syncer's ServiceAccount lives in the Cluster's logical cluster. Not the Cluster's own
#: namespace, although the Syncer's Lease is there: the Syncer's rights span its whole logical
#: cluster, and kube's ``edit`` role (which tenants get per namespace) may mint tokens for, and
#: impersonate, every ServiceAccount of its namespace. A namespace of its own keeps those rights
#: with whoever administers fleetplane in that logical cluster, as kube keeps its controllers'
#: ServiceAccounts in kube-system.
SYNCER_NAMESPACE = "fleetplane-system"
#: the hub's label scope for a ServiceAccount (its API, as kube's annotations are; the hub side is
#: pipeline/authorization/scope.py): a Syncer reads and writes only the Secrets labelled for its cluster
LABEL_SCOPE_ANNOTATION = "authorization.fleetplane.io/label-scope"
SCOPE_FINALIZER_ANNOTATION = "authorization.fleetplane.io/scope-finalizer"
SYNC_LABEL = sync_constants.CLUSTER_LABEL

#: leader election (``kube/leaderelection.py``): Lease ``kube-system/<name>`` in the logical cluster of
#: the controller's kubeconfig (``root`` for ``fleetplane start``)
LEADER_ELECTION_NAMESPACE = "kube-system"
#: ``fleet/cluster/run.run_in_hub``: ``run_as_leader("fleetplane-cluster-controller", ...)``; each
#: shard of the controller-manager has its own (``fleet/cluster/options.shard_lease_names``)
CLUSTER_CONTROLLER_LEASE = CLUSTER_LEASE_NAME
#: ``splitter.LEASE_NAME``
SPLITTER_LEASE = "fleetplane-splitter"
#: ``services.run.LEASE_NAME``
SERVICE_CONTROLLER_LEASE = "fleetplane-service-controller"
#: ``hpas.run.LEASE_NAME``
HPA_CONTROLLER_LEASE = "fleetplane-hpa-controller"
CRONJOB_CONTROLLER_LEASE = "fleetplane-cronjob-controller"
#: ``decisions.run.LEASE_NAME``
PLACEMENT_DECISIONS_LEASE = "fleetplane-placement-decisions"
#: the non-resource path the ``/clusters/*`` wildcard is authorized against (in ``root``)
WILDCARD_PATH = "/clusters/*"
#: ``fleetplane.fleet.syncer.DEFAULT_RESOURCES`` (kept equal by tests/unit/test_identities.py):
#: what a Cluster without ``spec.resources`` syncs, and so what the static roles cover
SYNCER_DEFAULT_RESOURCES: tuple[str, ...] = (
    "deployments.apps", "configmaps", "secrets", "serviceaccounts", "services", "persistentvolumeclaims",
    "daemonsets.apps", "statefulsets.apps", "jobs.batch", "cronjobs.batch", "horizontalpodautoscalers.autoscaling")

RBAC_GROUP = "rbac.authorization.k8s.io"
API_VERSION = f"{RBAC_GROUP}/v1"
BOOTSTRAP_LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
BOOTSTRAP_ANNOTATIONS = {"rbac.authorization.kubernetes.io/autoupdate": "true"}
#: on the per-Syncer objects: who keeps them, and for which Cluster
MANAGED_BY = "fleetplane-cluster-controller"
#: the annotation every hub object carries naming its logical cluster (the hub sets it on create)
LOGICAL_CLUSTER_ANNOTATION = "kcp.io/cluster"

CORE, APPS, APIEXTENSIONS, COORDINATION = "", "apps", "apiextensions.k8s.io", "coordination.k8s.io"
#: the hub's built-in types without a status subresource (nothing to write through /status)
_NO_STATUS = frozenset({("", "configmaps"), ("", "secrets"), ("", "serviceaccounts"), ("", "namespaces")})
_WATCH_VERBS = ("list", "watch")
#: what object sync does to a synced type on the hub: informer (list, watch), reads by name, and
#: metadata/status/retained-field patches -- never create, update or delete
_SYNC_VERBS = ("get", "list", "watch", "patch")



# -- building blocks ---------------------------------------------------------------------------


def _rule(verbs: Iterable[str], groups: Iterable[str] = (), resources: Iterable[str] = (),
          names: Iterable[str] = (), urls: Iterable[str] = ()) -> dict[str, Any]:
    """A PolicyRule as kube serves bootstrap rules: sorted lists, empty fields left out."""
    out: dict[str, Any] = {"verbs": sorted(set(verbs))}
    if urls:
        out["nonResourceURLs"] = sorted(set(urls))
        return out
    out["apiGroups"] = sorted(set(groups))
    out["resources"] = sorted(set(resources))
    if names:
        out["resourceNames"] = sorted(set(names))
    return out


def _key(rule: dict[str, Any]) -> tuple:
    return tuple(tuple(rule.get(k) or ()) for k in ("apiGroups", "resources", "resourceNames", "nonResourceURLs"))


def _merge(*rule_lists: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rules over the same groups, resources, names and URLs merged (verbs unioned), in first-seen order."""
    merged: dict[tuple, dict[str, Any]] = {}
    for rules in rule_lists:
        for r in rules:
            k = _key(r)
            if k in merged:
                merged[k] = {**merged[k], "verbs": sorted(set(merged[k]["verbs"]) | set(r["verbs"]))}
            else:
                merged[k] = dict(r)
    return list(merged.values())


def _bootstrap_meta(name: str) -> dict[str, Any]:
    return {"name": name, "labels": dict(BOOTSTRAP_LABELS), "annotations": dict(BOOTSTRAP_ANNOTATIONS)}


def _cluster_role(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": "ClusterRole", "metadata": _bootstrap_meta(name), "rules": rules}


def _user_binding(name: str, user: str) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": "ClusterRoleBinding", "metadata": _bootstrap_meta(name),
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name},
            "subjects": [{"apiGroup": RBAC_GROUP, "kind": "User", "name": user}]}


def _group_resource(spec: str) -> tuple[str, str]:
    """``deployments.apps`` -> (``apps``, ``deployments``); ``configmaps`` -> (``""``, ``configmaps``).
    A name without a group is taken as the core group (the Syncer tries the core group first)."""
    plural, _, group = spec.strip().lower().partition(".")
    return ("" if group == "core" else group), plural


def synced_type_rules(resources: Iterable[str]) -> list[dict[str, Any]]:
    """The rules object sync needs on the hub for each of ``resources`` (``deployments.apps``,
    ``configmaps``, ``widgets.example.com``), per ``syncer/objectsync.py``:

    - ``list``, ``watch``: the hub informer, label-selected ``kcp.dev/cluster=<cluster>``
      (objectsync.py:219 through informer.py:189/217), and the unselected sweep for objects that
      lost the label while no Syncer ran (objectsync.py:297);
    - ``get``: a reconcile re-reads a hub object by name (objectsync.py:725, 742);
    - ``patch``: the sync state annotation and the Syncer's finalizer (objectsync.py:637), the
      retained fields copied up (objectsync.py:699), the finalizer removed (objectsync.py:718);
    - ``patch`` on ``<resource>/status``: the cluster's status copied up (objectsync.py:679), for
      types with a status subresource on the hub (not configmaps, secrets, serviceaccounts).

    No create, update or delete: the Syncer never makes or removes hub objects of synced types.
    RBAC cannot narrow these to objects labelled for one cluster (see docs/security.md). ``"*"``
    cannot be expressed (the types are whatever the clusters offer) and is skipped.
    """
    rules: list[dict[str, Any]] = []
    for spec in resources:
        if spec.strip() == "*":
            continue
        group, plural = _group_resource(spec)
        rules.append(_rule(_SYNC_VERBS, [group], [plural]))
        if (group, plural) not in _NO_STATUS:
            rules.append(_rule(["patch"], [group], [f"{plural}/status"]))
    return _merge(rules)


# -- the Syncer ----------------------------------------------------------------------------------


def _syncer_rules() -> list[dict[str, Any]]:
    """``system:fleetplane:syncer``: what every Syncer (``fleet/syncer/``) does on the hub, in its
    own logical cluster, whatever it syncs (Secrets aside: :func:`_syncer_secrets_rules`).

    - ``get`` on ``/api``, ``/api/*``, ``/apis``, ``/apis/*``: the hub's discovery, every pass of
      the type loop (typesync.py:120) and the object loop (syncer/__init__.py:164), through
      discovery.py:108-109 (aggregated) and discovery.py:126 (legacy). kube's ``system:discovery``
      (bound to every authenticated user; a ServiceAccount is a member of the logical cluster that
      issued its token) gives the same today; the rule keeps the Syncer independent of that binding,
      which a logical cluster may shadow.
    - customresourcedefinitions ``list`` (hubcrds.py ``listed``, every pass of a Syncer on its own:
      pull mode; push-mode Syncers read the Cluster controller's informer instead), ``create`` (import,
      typesync.py:256, and the permissive fallback typesync.py:268), ``update`` (the hub schema
      follows its only source cluster, typesync.py:230), ``patch`` (the ``imported-from`` label and
      the ``schema-conflicts`` annotation, typesync.py:296; the label removed when the cluster stops
      serving the type, typesync.py:318). No get, watch or delete: the Syncer never deletes a CRD.
      RBAC cannot limit update/patch to the CRDs this cluster imported (their names are the
      clusters' types, their mark is a label).
    - namespaces ``get``, ``list``, ``watch``, ``patch``: namespaces are always a synced type
      (syncer/__init__.py:215), with the calls of :func:`synced_type_rules`.
    - the other default synced types (:data:`SYNCER_DEFAULT_RESOURCES` without secrets):
      configmaps and serviceaccounts (core, built-in on the hub); services and persistentvolumeclaims
      (core, imported CRDs ``<plural>.core`` served under ``/api/v1``); deployments, daemonsets,
      statefulsets (apps), jobs, cronjobs (batch), horizontalpodautoscalers (autoscaling), all imported
      CRDs, with their ``/status`` -- see :func:`synced_type_rules`. Other types a Cluster names need
      their own grant (:func:`syncer_role_binding` ``resources=``); ``"*"`` cannot be expressed.
    - events ``create`` and ``patch``: the Syncer's EventRecorder (syncer/__init__.py:107) creates
      Events (kube/events.py:123) and bumps the count of repeats within 10 minutes
      (kube/events.py:107), in the object's namespace (``default`` for CRDs and Namespaces).

    Nothing on Secrets, RBAC, LogicalClusters, Clusters or Leases here; the Syncer's own Cluster
    and Lease are in the per-Syncer Role (:func:`syncer_role_binding`).
    """
    types = [r for r in SYNCER_DEFAULT_RESOURCES if _group_resource(r) != ("", "secrets")]
    return _merge(
        [_rule(["get"], urls=["/api", "/api/*", "/apis", "/apis/*"]),
         _rule(["create", "list", "patch", "update"], [APIEXTENSIONS], ["customresourcedefinitions"]),
         _rule(_SYNC_VERBS, [CORE], ["namespaces"])],
        synced_type_rules(types),
        [_rule(["create", "patch"], [CORE], ["events"])],
    )


def _syncer_secrets_rules() -> list[dict[str, Any]]:
    """``system:fleetplane:syncer:secrets``: Secrets, for a Syncer whose Cluster syncs ``secrets``
    (in :data:`SYNCER_DEFAULT_RESOURCES`, so any Cluster without ``spec.resources``).

    ``get``, ``list``, ``watch``, ``patch`` as for any synced type (:func:`synced_type_rules`); no
    create, update or delete. What syncing needs is narrower than RBAC can say: the informer lists
    only Secrets labelled ``kcp.dev/cluster=<cluster>``, but the sweep (objectsync.py:297) lists
    every Secret of the logical cluster, and a by-name ``get`` or ``patch`` cannot be tied to a
    label. So the holder can read every Secret of its logical cluster; docs/security.md proposes
    the label-aware check that would close it.
    """
    return synced_type_rules(["secrets"])


def syncer_service_account(cluster_name: str) -> str:
    """The ServiceAccount the Syncer of Cluster ``cluster_name`` acts as (in
    :data:`SYNCER_NAMESPACE` of the Cluster's logical cluster): ``fleetplane-syncer-<name>`` when
    that is a valid DNS label, else a lower-cased, shortened form with a hash of the name, so two
    Clusters never share one (``a.b`` and ``a-b`` differ)."""
    if not cluster_name:
        raise ValueError("cluster_name is required")
    name = f"fleetplane-syncer-{cluster_name}"
    if is_dns1123_label(name):
        return name
    digest = hashlib.sha256(cluster_name.encode()).hexdigest()[:10]
    stem = re.sub(r"[^a-z0-9-]+", "-", cluster_name.lower())
    head = f"fleetplane-syncer-{stem}"[:63 - 1 - len(digest)].rstrip("-")
    return f"{head}-{digest}"


def syncer_lease_name(cluster_name: str) -> str:
    """The Lease a pull-mode Syncer renews (``fleet/cluster/paths.lease_name``), in the Cluster's namespace."""
    return f"syncer-{cluster_name}"


def _label_value(value: str) -> str:
    if is_label_value(value):
        return value
    return f"{value[:40].strip('.-_')}-{hashlib.sha256(value.encode()).hexdigest()[:10]}"


def _syncer_meta(name: str, logical_cluster: str, cluster_name: str, namespace: str = "") -> dict[str, Any]:
    md: dict[str, Any] = {"name": name}
    if namespace:
        md["namespace"] = namespace
    md["labels"] = {"app.kubernetes.io/managed-by": MANAGED_BY, LABEL_CLUSTER: _label_value(cluster_name)}
    md["annotations"] = {LOGICAL_CLUSTER_ANNOTATION: logical_cluster}
    return md


def default_types_only(resources: Sequence[str] | None) -> list[str]:
    """``resources`` without the types beyond :data:`SYNCER_DEFAULT_RESOURCES`: what the Cluster
    controller can grant a push-mode Syncer (it may not grant rights it does not hold; a type
    beyond the defaults needs an admin's grant, :func:`syncer_role_binding` ``resources=``)."""
    wanted = list(SYNCER_DEFAULT_RESOURCES if resources is None else resources)
    defaults = {_group_resource(r) for r in SYNCER_DEFAULT_RESOURCES}
    return [r for r in wanted if r.strip() == "*" or _group_resource(r) in defaults]


def syncer_role_binding(logical_cluster: str, cluster_name: str, sa_namespace: str = SYNCER_NAMESPACE, *,
                        cluster_namespace: str = "default",
                        resources: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The RBAC objects that let the Syncer of Cluster ``cluster_namespace/cluster_name`` in
    ``logical_cluster`` do its work, for its ServiceAccount :func:`syncer_service_account` in
    ``sa_namespace``. To be created in that logical cluster (``/clusters/<logical_cluster>/...``;
    each carries the ``kcp.io/cluster`` annotation naming it). The token of that ServiceAccount
    authenticates only in its own logical cluster, so nothing here reaches another one.

    1. ClusterRoleBinding ``fleetplane:syncer:<name>`` to :data:`SYNCER_ROLE` (cluster-wide in the
       logical cluster: objects sync from every namespace; namespaces and CRDs are cluster-scoped).
    2. ClusterRoleBinding ``fleetplane:syncer-secrets:<name>`` to :data:`SYNCER_SECRETS_ROLE`,
       only when ``resources`` (default :data:`SYNCER_DEFAULT_RESOURCES`) include ``secrets``
       or ``"*"``.
    3. Role and RoleBinding ``fleetplane:syncer:<name>`` in ``cluster_namespace``, the pull-mode
       syncer's own calls (``fleet/cluster/pull.py``):

       - clusters ``get`` with ``resourceNames: [<name>]``: its own Cluster, every pass
         (pull.py). Not list or watch, and no other Cluster: another Cluster's
         ``spec.kubeconfig`` is another physical cluster's credential.
       - leases ``get``, ``patch`` with ``resourceNames: [syncer-<name>]``: its heartbeat and report
         (pull.py), not another Syncer's.
       - leases ``create``: the first renewal creates the Lease (pull.py). RBAC cannot
         name the object of a create, so this allows any Lease in ``cluster_namespace``; letting the
         Cluster controller create the Lease (empty holder) when it provisions the Syncer would
         remove this rule.
    4. For each type in ``resources`` beyond :data:`SYNCER_DEFAULT_RESOURCES`: ClusterRole and
       ClusterRoleBinding ``fleetplane:syncer:<name>:types`` with :func:`synced_type_rules`. Its
       author must hold those rights (kube's escalation check), which the Cluster controller does
       only for the default types: an administrator of the logical cluster creates it, or the
       planned per-logical-cluster role for CRD-defined types replaces it (docs/security.md).
       ``"*"`` cannot be expressed beyond the default types.
    """
    if not logical_cluster or logical_cluster == "*":
        raise ValueError("logical_cluster must name one logical cluster")
    if not sa_namespace or not cluster_namespace:
        raise ValueError("sa_namespace and cluster_namespace are required")
    sa = syncer_service_account(cluster_name)
    wanted = list(SYNCER_DEFAULT_RESOURCES if resources is None else resources)
    name = f"fleetplane:syncer:{cluster_name}"

    def subjects() -> list[dict[str, str]]:  # a fresh list per object: nothing shared between them
        return [{"kind": "ServiceAccount", "name": sa, "namespace": sa_namespace}]

    def crb(binding: str, role: str) -> dict[str, Any]:
        return {"apiVersion": API_VERSION, "kind": "ClusterRoleBinding",
                "metadata": _syncer_meta(binding, logical_cluster, cluster_name),
                "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role}, "subjects": subjects()}

    out = [crb(name, SYNCER_ROLE)]
    if "*" in wanted or any(_group_resource(r) == ("", "secrets") for r in wanted):
        out.append(crb(f"fleetplane:syncer-secrets:{cluster_name}", SYNCER_SECRETS_ROLE))
    lease = syncer_lease_name(cluster_name)
    out.append({"apiVersion": API_VERSION, "kind": "Role",
                "metadata": _syncer_meta(name, logical_cluster, cluster_name, cluster_namespace),
                "rules": [_rule(["get"], [CLUSTER_GROUP], [CLUSTER_PLURAL], [cluster_name]),
                          _rule(["get", "patch"], [COORDINATION], ["leases"], [lease]),
                          _rule(["create"], [COORDINATION], ["leases"])]})
    out.append({"apiVersion": API_VERSION, "kind": "RoleBinding",
                "metadata": _syncer_meta(name, logical_cluster, cluster_name, cluster_namespace),
                "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": name}, "subjects": subjects()})
    defaults = {_group_resource(r) for r in SYNCER_DEFAULT_RESOURCES}
    extra = [r for r in wanted if r.strip() != "*" and _group_resource(r) not in defaults]
    if extra:
        types = f"{name}:types"
        out.append({"apiVersion": API_VERSION, "kind": "ClusterRole",
                    "metadata": _syncer_meta(types, logical_cluster, cluster_name), "rules": synced_type_rules(extra)})
        out.append(crb(types, types))
    return out


# -- provisioning a Syncer's identity on the hub ----------------------------------------------


_RBAC_PLURALS = {"Role": "roles", "RoleBinding": "rolebindings", "ClusterRole": "clusterroles",
                 "ClusterRoleBinding": "clusterrolebindings"}


def _syncer_objects(logical_cluster: str, cluster: str, namespace: str, resources: list[str] | None) -> list[tuple[str, dict]]:
    """(path below ``/clusters/<lc>``, object) of everything that makes up a Syncer's identity."""
    ns, sa = SYNCER_NAMESPACE, syncer_service_account(cluster)
    out: list[tuple[str, dict]] = [
        (f"/api/v1/namespaces/{ns}/serviceaccounts/{sa}",
         {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa, "namespace": ns, "annotations": {
             # the hub's label scope: Secrets only with this label (or our finalizer), see
             # pipeline/authorization/scope.py
             LABEL_SCOPE_ANNOTATION: f"{SYNC_LABEL}={cluster}",
             SCOPE_FINALIZER_ANNOTATION: sync_constants.finalizer(cluster)}}})]
    for obj in syncer_role_binding(logical_cluster, cluster, ns, cluster_namespace=namespace, resources=resources):
        meta = obj["metadata"]
        where = f"/namespaces/{meta['namespace']}" if meta.get("namespace") else ""
        out.append((f"/apis/rbac.authorization.k8s.io/v1{where}/{_RBAC_PLURALS[obj['kind']]}/{meta['name']}", obj))
    out.append((f"/api/v1/namespaces/{ns}/secrets/{sa}-token", {
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
        "metadata": {"name": f"{sa}-token", "namespace": ns, "annotations": {"kubernetes.io/service-account.name": sa}}}))
    return out


async def provision_syncer_identity(hub: Client, logical_cluster: str, cluster: str, namespace: str,
                                    resources: list[str] | None, manager: str) -> str:
    """Give the Syncer of Cluster ``namespace/cluster`` its own identity on the hub: the
    ServiceAccount :func:`syncer_service_account` in ``fleetplane-system`` of
    ``logical_cluster``, its least-privilege bindings (:func:`syncer_role_binding`) and a token
    Secret. Returns the
    token, which works only in ``logical_cluster`` and dies with its Secret or ServiceAccount.
    ``hub`` addresses the hub (paths carry ``/clusters/<lc>``); idempotent."""
    prefix = f"/clusters/{logical_cluster}"
    for name in dict.fromkeys((SYNCER_NAMESPACE, namespace)):
        try:
            await hub.create(f"{prefix}/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, manager)
        except ApiError as exc:
            if exc.status != 409:
                raise
    token_secret = ""
    for path, obj in _syncer_objects(logical_cluster, cluster, namespace, resources):
        if obj["apiVersion"].startswith("rbac."):
            await hub.apply(prefix + path, obj, manager)
            continue
        token_secret = path if obj["kind"] == "Secret" else token_secret
        try:
            await hub.create(prefix + path.rsplit("/", 1)[0], obj, manager)
        except ApiError as exc:
            if exc.status != 409:
                raise
    got = await hub.get(prefix + token_secret)
    token = ((got or {}).get("data") or {}).get("token")
    if not token:
        raise RuntimeError(f"the hub did not fill the token of Secret {token_secret}")
    return base64.b64decode(token).decode()


async def revoke_syncer_identity(hub: Client, logical_cluster: str, cluster: str, namespace: str) -> None:
    """Delete what :func:`provision_syncer_identity` made; the token stops working at once."""
    prefix = f"/clusters/{logical_cluster}"
    for path, _ in reversed(_syncer_objects(logical_cluster, cluster, namespace, None)):
        await hub.delete(prefix + path)
    for plural in ("clusterrolebindings", "clusterroles"):  # only Clusters with extra types have these
        await hub.delete(f"{prefix}/apis/rbac.authorization.k8s.io/v1/{plural}/fleetplane:syncer:{cluster}:types")



# -- the Cluster controller ----------------------------------------------------------------------


def _cluster_controller_rules() -> list[dict[str, Any]]:
    """``system:fleetplane:cluster-controller`` (``fleet/cluster/``), bound to
    :data:`CLUSTER_CONTROLLER` in every logical cluster. Its own calls (each listed, with the code
    that makes it, in tests/unit/test_identities.py):

    - ``/clusters/*`` ``list``, ``watch`` and clusters ``list``, ``watch``: the one informer over
      every logical cluster's Clusters (controller.py; kube/informer.py).
    - clusters ``patch``: its finalizer added and removed, guarded by resourceVersion
      (finalizer.py).
    - clusters/status ``patch``: conditions and the rest (status.py, through controller.py), and
      ``CleanupPending`` while a deletion waits (deletion.py).
    - clusterprofiles ``get``, ``create`` (inventory.py), ``delete`` (its own, on cleanup:
      deletion.py); clusterprofiles/status ``patch``: server-side apply through the StatusWriter
      (controller.py; inventory/status.py does the same when given a client).
    - secrets ``get``, ``create``, ``patch``, ``delete``: the credentials Secret named after each
      Cluster, in the Cluster's namespace (inventory.py; deletion.py on cleanup). The names are the
      Clusters' names, so no ``resourceNames``: this is every Secret of every logical cluster.
    - leases ``get``: a pull-mode syncer's Lease ``syncer-<name>`` in the Cluster's namespace, every
      reconcile (controller.py), ``delete`` on cleanup (deletion.py).
    - leases ``create`` and ``update`` on ``kube-system/fleetplane-cluster-controller`` in root
      and on each shard's ``fleetplane-cluster-controller-shard-<i>`` (i below
      ``options.MAX_SHARDS``): leader election (run.py; kube/leaderelection.py: read, create,
      replace). Update is limited by name; create cannot be, and bootstrap policy has no
      namespaced Roles, so create is granted in every namespace.
    - events ``create``: one Event per state change, never aggregated (window 0: controller.py;
      kube/events.py).
    - cleanup (cleanup.py ``release_hub_objects``): for each type in the Cluster's
      ``status.types``: ``list`` labelled ``kcp.dev/cluster=<name>``, ``patch`` the Syncer's
      finalizer and sync state off, ``get`` after a conflict; customresourcedefinitions ``list``
      and ``patch`` the ``imported-from`` label off.
      Covered for the default synced types (the Syncer rules); others as for the Syncer.
    - customresourcedefinitions ``list``, ``watch`` through ``/clusters/*``: the one informer whose
      cache every push-mode Syncer's type pass reads instead of listing them (hubcrds.py).

    Push-mode Syncers run in this process but act as their own ServiceAccounts, which this
    identity provisions (``provision_syncer_identity``, called by fleet/cluster/syncer.py
    ``SyncerStep.ensure``) and revokes on cleanup (``revoke_syncer_identity``): Namespaces
    ``create`` (``fleetplane-system``), serviceaccounts ``create``/``get``/``delete``, the
    bindings and per-Syncer Role (roles, rolebindings, clusterrolebindings ``get``, ``create``,
    ``patch`` for server-side apply, ``delete``), ``bind`` on exactly the two Syncer ClusterRoles
    (no ``escalate``), clusterroles ``delete`` (a types role an admin made), and clusters ``get``
    plus leases ``patch``, which the escalation check wants it to hold to write the per-Syncer
    Role. Its token comes from a token Secret (secrets ``create``, held already). Cleanup also
    needs the default synced types' ``get``/``list``/``patch`` (:func:`synced_type_rules`).
    """
    own = [
        _rule(_WATCH_VERBS, urls=[WILDCARD_PATH]),
        _rule(["list", "patch", "watch"], [CLUSTER_GROUP], [CLUSTER_PLURAL]),
        _rule(["patch"], [CLUSTER_GROUP], [f"{CLUSTER_PLURAL}/status"]),
        _rule(["create", "delete", "get"], [ic.GROUP], [ic.PLURAL]),
        _rule(["patch"], [ic.GROUP], [f"{ic.PLURAL}/status"]),
        _rule(["create", "delete", "get", "patch"], [CORE], ["secrets"]),
        _rule(["create", "delete", "get"], [COORDINATION], ["leases"]),
        _rule(["update"], [COORDINATION], ["leases"], [CLUSTER_CONTROLLER_LEASE, *shard_lease_names()]),
        _rule(["create"], [CORE], ["events"]),
        _rule(["list", "patch", "watch"], [APIEXTENSIONS], ["customresourcedefinitions"]),
    ]
    provisioning = [
        _rule(["get"], [CLUSTER_GROUP], [CLUSTER_PLURAL]),
        _rule(["patch"], [COORDINATION], ["leases"]),
        _rule(["create"], [CORE], ["namespaces"]),
        _rule(["create", "delete", "get"], [CORE], ["serviceaccounts"]),
        _rule(["create", "delete", "get", "patch"], [RBAC_GROUP], ["clusterrolebindings", "rolebindings", "roles"]),
        _rule(["delete"], [RBAC_GROUP], ["clusterroles"]),
        _rule(["bind"], [RBAC_GROUP], ["clusterroles"], [SYNCER_ROLE, SYNCER_SECRETS_ROLE]),
    ]
    return _merge(own, provisioning, synced_type_rules(SYNCER_DEFAULT_RESOURCES))


# -- the splitter --------------------------------------------------------------------------------


def _splitter_rules() -> list[dict[str, Any]]:
    """``system:fleetplane:splitter`` (``fleet/splitter/controller.py``), bound to :data:`SPLITTER`
    in every logical cluster.

    - ``/clusters/*`` ``list``, ``watch`` with the resource rules of its seven informers
      (controller.py:186-194): deployments, daemonsets, statefulsets (apps), clusterprofiles,
      namespaces (their ClusterSet labels), customresourcedefinitions (to notice
      ``deployments.apps`` and the others appear) and clusterdaemonsets. It reads no Clusters, and no ClusterProfile or CRD by name.
    - deployments ``create`` (a child, controller.py:677), ``update`` (a child's template and
      replicas, controller.py:719), ``delete`` (a child, uid-guarded, controller.py:660), ``patch``
      (a parent's decision annotation, controller.py:905); deployments/status ``patch`` (the
      parent's aggregated status, controller.py:803). It cannot tell parents from children by
      RBAC (a label), so these apply to every Deployment.
    - clusterdaemonsets ``patch`` (decision annotation, controller.py:905) and
      clusterdaemonsets/status ``patch`` (controller.py:803); its children are Deployments.
    - daemonsets and statefulsets (apps): as deployments (``list``, ``watch``, ``create``,
      ``update``, ``delete``, ``patch``; ``/status`` ``patch``): they are parents and children too
      (splitter/kinds.py).
    - events ``create``, ``patch``: Events on parents, repeats counted (controller.py:177;
      kube/events.py:123, 107).
    - replicasets and controllerrevisions (apps) ``list`` (by the parent's selector), ``create``,
      ``patch`` (a renumbered revision), ``delete`` (past revisionHistoryLimit): the revision history
      of parents with a rollout policy, for kubectl's rollout history and undo (splitter/history.py).
    - leases ``get``, ``update`` on ``kube-system/fleetplane-splitter``, ``create`` (any name: RBAC
      cannot name a create): leader election in root (splitter/__init__.py; kube/leaderelection.py).

    No Secrets, no RBAC, no ServiceAccounts.
    """
    workloads = ["deployments", "daemonsets", "statefulsets"]
    wide = [*((APPS, w) for w in workloads), (ic.GROUP, ic.PLURAL), (CORE, "namespaces"),
            (APIEXTENSIONS, "customresourcedefinitions"), (CDS_GROUP, CDS_PLURAL)]
    return _merge(
        [_rule(_WATCH_VERBS, urls=[WILDCARD_PATH])],
        [_rule(_WATCH_VERBS, [g], [r]) for g, r in wide],
        [_rule(["create", "delete", "patch", "update"], [APPS], workloads),
         _rule(["patch"], [APPS], [f"{w}/status" for w in workloads]),
         _rule(["patch"], [CDS_GROUP], [CDS_PLURAL]),
         _rule(["patch"], [CDS_GROUP], [f"{CDS_PLURAL}/status"]),
         _rule(["create", "patch"], [CORE], ["events"]),
         _rule(["list", "create", "patch", "delete"], [APPS], ["replicasets", "controllerrevisions"]),
         _rule(["get", "update"], [COORDINATION], ["leases"], [SPLITTER_LEASE]),
         _rule(["create"], [COORDINATION], ["leases"])],
    )


# -- the Service controller ----------------------------------------------------------------------


def _service_controller_rules() -> list[dict[str, Any]]:
    """``system:fleetplane:service-controller`` (``fleet/services/controller.py``), bound to
    :data:`SERVICE_CONTROLLER` in every logical cluster.

    - ``/clusters/*`` ``list``, ``watch`` with the resource rules of its informers: services,
      deployments, statefulsets, daemonsets (apps: where the workloads run), clusterprofiles,
      namespaces (ClusterSet labels) and customresourcedefinitions (to notice ``services.core``
      and the workload types appear). It reads nothing by name.
    - services ``create`` (a child), ``update`` (a child's spec and labels), ``delete`` (a child,
      uid-guarded), ``patch`` (the parent's decision annotation); services/status ``patch`` (the
      parent's ingresses and condition). RBAC cannot tell parents from children (a label), so
      these apply to every Service.
    - events ``create``, ``patch``: Events on parents (kube/events.py).
    - leases ``get``, ``update`` on ``kube-system/fleetplane-service-controller``, ``create``:
      leader election in root (services/run.py; kube/leaderelection.py).

    It never writes workloads, and reads no Secrets, RBAC or Clusters.
    """
    wide = [(CORE, "services"), (APPS, "daemonsets"), (APPS, "deployments"), (APPS, "statefulsets"),
            (ic.GROUP, ic.PLURAL), (CORE, "namespaces"), (APIEXTENSIONS, "customresourcedefinitions")]
    return _merge(
        [_rule(_WATCH_VERBS, urls=[WILDCARD_PATH])],
        [_rule(_WATCH_VERBS, [g], [r]) for g, r in wide],
        [_rule(["create", "delete", "patch", "update"], [CORE], ["services"]),
         _rule(["patch"], [CORE], ["services/status"]),
         _rule(["create", "patch"], [CORE], ["events"]),
         _rule(["get", "update"], [COORDINATION], ["leases"], [SERVICE_CONTROLLER_LEASE]),
         _rule(["create"], [COORDINATION], ["leases"])],
    )


# -- the HPA controller ----------------------------------------------------------------------------


def _hpa_controller_rules() -> list[dict[str, Any]]:
    """``system:fleetplane:hpa-controller`` (``fleet/hpas/controller.py``), bound to
    :data:`HPA_CONTROLLER` in every logical cluster.

    - ``/clusters/*`` ``list``, ``watch`` of horizontalpodautoscalers (autoscaling) and deployments
      (apps): its two informers.
    - horizontalpodautoscalers ``create``, ``update``, ``delete`` (the child HPAs, uid-guarded
      deletes) and horizontalpodautoscalers/status ``update`` (the parent's aggregated status). RBAC
      cannot tell parents from children (a label): these apply to every HPA.
    - deployments ``patch``: the parent's ``autoscaling.fleetplane.io/hpa`` annotation and its
      ``spec.replicas`` (the sum of its children's). It never creates, updates or deletes a Deployment.
    - events ``create``, ``patch`` (kube/events.py); leases for leader election in root.

    No Secrets, no RBAC, no Clusters or ClusterProfiles.
    """
    return _merge(
        [_rule(_WATCH_VERBS, urls=[WILDCARD_PATH])],
        [_rule(_WATCH_VERBS, ["autoscaling"], ["horizontalpodautoscalers"]), _rule(_WATCH_VERBS, [APPS], ["deployments"])],
        [_rule(["create", "delete", "update"], ["autoscaling"], ["horizontalpodautoscalers"]),
         _rule(["update"], ["autoscaling"], ["horizontalpodautoscalers/status"]),
         _rule(["patch"], [APPS], ["deployments"]),
         _rule(["create", "patch"], [CORE], ["events"]),
         _rule(["get", "update"], [COORDINATION], ["leases"], [HPA_CONTROLLER_LEASE]),
         _rule(["create"], [COORDINATION], ["leases"])],
    )


# -- the fleet-wide CronJob controller ----------------------------------------------------------


def _cronjob_controller_rules() -> list[dict[str, Any]]:
    """``system:fleetplane:cronjob-controller`` (``fleet/cronjobs/controller.py``), bound to
    :data:`CRONJOB_CONTROLLER` in every logical cluster.

    - ``/clusters/*`` ``list``, ``watch`` with the resource rules of its four informers: cronjobs and
      jobs (batch), clusterprofiles, customresourcedefinitions (to notice the batch types appear).
    - jobs ``create`` (a run, placed on a cluster), ``delete`` (history limits, Replace, a lost Job;
      uid-guarded), ``patch`` (the lost-Job annotation).
    - cronjobs ``patch`` (the decision annotation) and cronjobs/status ``patch`` (active,
      lastScheduleTime, lastSuccessfulTime). It never changes a CronJob's spec by intent, but RBAC
      cannot tell metadata from spec: ``patch`` covers both.
    - events ``create``, ``patch`` (kube/events.py); leases ``get``, ``update`` on
      ``kube-system/fleetplane-cronjob-controller`` and ``create``: leader election in root.

    No Deployments, Secrets, RBAC, ServiceAccounts or Clusters.
    """
    wide = [("batch", "cronjobs"), ("batch", "jobs"), (ic.GROUP, ic.PLURAL), (APIEXTENSIONS, "customresourcedefinitions")]
    return _merge(
        [_rule(_WATCH_VERBS, urls=[WILDCARD_PATH])],
        [_rule(_WATCH_VERBS, [g], [r]) for g, r in wide],
        [_rule(["create", "delete", "patch"], ["batch"], ["jobs"]),
         _rule(["patch"], ["batch"], ["cronjobs"]),
         _rule(["patch"], ["batch"], ["cronjobs/status"]),
         _rule(["create", "patch"], [CORE], ["events"]),
         _rule(["get", "update"], [COORDINATION], ["leases"], [CRONJOB_CONTROLLER_LEASE]),
         _rule(["create"], [COORDINATION], ["leases"])],
    )


# -- the PlacementDecision publisher ------------------------------------------------------------


def _placement_decisions_rules() -> list[dict[str, Any]]:
    """``system:fleetplane:placement-decisions`` (``fleet/decisions/controller.py``), bound to
    :data:`PLACEMENT_DECISIONS` in every logical cluster.

    - ``/clusters/*`` ``list``, ``watch`` of its informers: the split parents and their children
      (deployments, clusterdaemonsets: ``decisions.publish.KINDS``), clusterprofiles (which
      profile a cluster is) and placementdecisions (the ones it manages). It only reads them: no
      write to a workload or a ClusterProfile.
    - placementdecisions ``create``, ``update``, ``delete`` (uid-guarded): the slices. RBAC cannot
      tell its slices from others' (a label), so these apply to every PlacementDecision; it
      touches only those it labels and controls.
    - leases for leader election in root. No Events, Secrets, RBAC or namespaces.
    """
    return _merge(
        [_rule(_WATCH_VERBS, urls=[WILDCARD_PATH])],
        [_rule(_WATCH_VERBS, [g], [r]) for g, r in
         [(APPS, "deployments"), (CDS_GROUP, CDS_PLURAL), (ic.GROUP, ic.PLURAL), (ic.GROUP, "placementdecisions")]],
        [_rule(["create", "delete", "update"], [ic.GROUP], ["placementdecisions"]),
         _rule(["get", "update"], [COORDINATION], ["leases"], [PLACEMENT_DECISIONS_LEASE]),
         _rule(["create"], [COORDINATION], ["leases"])],
    )


# -- bootstrap policy ----------------------------------------------------------------------------


def cluster_roles() -> list[dict[str, Any]]:
    """The bootstrap ClusterRoles of fleetplane's components, served in every logical cluster."""
    return [
        _cluster_role(CLUSTER_CONTROLLER, _cluster_controller_rules()),
        _cluster_role(SPLITTER, _splitter_rules()),
        _cluster_role(SERVICE_CONTROLLER, _service_controller_rules()),
        _cluster_role(HPA_CONTROLLER, _hpa_controller_rules()),
        _cluster_role(CRONJOB_CONTROLLER, _cronjob_controller_rules()),
        _cluster_role(PLACEMENT_DECISIONS, _placement_decisions_rules()),
        _cluster_role(SYNCER_ROLE, _syncer_rules()),
        _cluster_role(SYNCER_SECRETS_ROLE, _syncer_secrets_rules()),
    ]


def cluster_role_bindings() -> list[dict[str, Any]]:
    """The bootstrap ClusterRoleBindings: the in-hub controllers, to their users, in every
    logical cluster. The Syncer roles are bound per Syncer (:func:`syncer_role_binding`)."""
    return [_user_binding(CLUSTER_CONTROLLER, CLUSTER_CONTROLLER), _user_binding(SPLITTER, SPLITTER),
            _user_binding(HPA_CONTROLLER, HPA_CONTROLLER), _user_binding(CRONJOB_CONTROLLER, CRONJOB_CONTROLLER),
            _user_binding(SERVICE_CONTROLLER, SERVICE_CONTROLLER), _user_binding(PLACEMENT_DECISIONS, PLACEMENT_DECISIONS)]
