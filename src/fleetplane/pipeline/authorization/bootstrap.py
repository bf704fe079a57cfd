"""kube's bootstrap RBAC policy: the default ClusterRoles and ClusterRoleBindings.

Every logical cluster sees these in addition to its stored RBAC objects (a stored object with
the same name shadows the bootstrap one). They are built once, here, as plain JSON dicts shaped
like stored objects (so they can be served), and shared by every cluster: treat them as
read-only. The rule lists follow kube-apiserver's ``bootstrappolicy`` as its golden file
``testdata/cluster-roles.yaml`` prints them (``RuleOrDie`` sorts every list), plus the
trailing-slash OIDC discovery paths newer releases add.

Other packages (the fleet controllers) contribute their own defaults with :func:`add` at import
time; :func:`generation` changes whenever they do, so authorizer caches notice.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence

RBAC_GROUP = "rbac.authorization.k8s.io"
API_VERSION = f"{RBAC_GROUP}/v1"
BOOTSTRAP_LABEL = "kubernetes.io/bootstrapping"
BOOTSTRAP_LABEL_VALUE = "rbac-defaults"
AUTOUPDATE_ANNOTATION = "rbac.authorization.kubernetes.io/autoupdate"
AGGREGATE_TO_ADMIN = "rbac.authorization.k8s.io/aggregate-to-admin"
AGGREGATE_TO_EDIT = "rbac.authorization.k8s.io/aggregate-to-edit"
AGGREGATE_TO_VIEW = "rbac.authorization.k8s.io/aggregate-to-view"
#: creationTimestamp of every bootstrap object: fixed, so that they look the same everywhere
EPOCH = "2024-01-01T00:00:00Z"
_UID_NAMESPACE = uuid.UUID("6f6c2b0e-3c55-4c1e-9a52-2f1d1c7b5e10")

READ = ("get", "list", "watch")
WRITE = ("create", "delete", "deletecollection", "patch", "update")
READ_WRITE = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


def rule(verbs: Sequence[str], groups: Sequence[str] = (), resources: Sequence[str] = (),
         names: Sequence[str] = (), urls: Sequence[str] = ()) -> dict:
    """A PolicyRule as kube serves it: sorted lists (``RuleOrDie``), empty fields omitted."""
    out: dict = {"verbs": sorted(verbs)}
    if groups:
        out["apiGroups"] = sorted(groups)
    if resources:
        out["resources"] = sorted(resources)
    if names:
        out["resourceNames"] = sorted(names)
    if urls:
        out["nonResourceURLs"] = sorted(urls)
    return out


def _meta(kind: str, name: str, labels: dict[str, str] | None, annotations: dict[str, str] | None) -> dict:
    return {
        "name": name,
        "uid": str(uuid.uuid5(_UID_NAMESPACE, f"{kind}/{name}")),
        "resourceVersion": "",
        "creationTimestamp": EPOCH,
        "labels": {**(labels or {}), BOOTSTRAP_LABEL: BOOTSTRAP_LABEL_VALUE},
        "annotations": {AUTOUPDATE_ANNOTATION: "true", **(annotations or {})},
    }


def cluster_role(name: str, rules: Iterable[dict] = (), *, labels: dict[str, str] | None = None,
                 aggregate_from: Sequence[str] = ()) -> dict:
    """A bootstrap ClusterRole; ``aggregate_from`` lists aggregation labels (matchLabels "true")."""
    obj: dict = {"kind": "ClusterRole", "apiVersion": API_VERSION,
                 "metadata": _meta("ClusterRole", name, labels, None), "rules": list(rules)}
    if aggregate_from:
        obj["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {k: "true"}} for k in aggregate_from]}
    return obj


def cluster_role_binding(name: str, role: str | None = None, *, groups: Sequence[str] = (),
                         users: Sequence[str] = (), service_accounts: Sequence[tuple[str, str]] = ()) -> dict:
    """A bootstrap ClusterRoleBinding of ClusterRole ``role`` (default: ``name``)."""
    subjects: list[dict] = [{"kind": "Group", "apiGroup": RBAC_GROUP, "name": g} for g in groups]
    subjects += [{"kind": "User", "apiGroup": RBAC_GROUP, "name": u} for u in users]
    subjects += [{"kind": "ServiceAccount", "name": n, "namespace": ns} for ns, n in service_accounts]
    return {"kind": "ClusterRoleBinding", "apiVersion": API_VERSION,
            "metadata": _meta("ClusterRoleBinding", name, None, None),
            "subjects": subjects,
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role or name}}


def _kube_cluster_roles() -> list[dict]:
    core, apps, batch, ext = "", "apps", "batch", "extensions"
    return [
        cluster_role("cluster-admin", [rule(["*"], ["*"], ["*"]), rule(["*"], urls=["*"])]),
        cluster_role("admin", aggregate_from=[AGGREGATE_TO_ADMIN]),
        cluster_role("edit", labels={AGGREGATE_TO_ADMIN: "true"}, aggregate_from=[AGGREGATE_TO_EDIT]),
        cluster_role("view", labels={AGGREGATE_TO_EDIT: "true"}, aggregate_from=[AGGREGATE_TO_VIEW]),
        cluster_role("system:aggregate-to-admin", [
            rule(["create"], ["authorization.k8s.io"], ["localsubjectaccessreviews"]),
            rule(READ_WRITE, [RBAC_GROUP], ["roles", "rolebindings"]),
        ], labels={AGGREGATE_TO_ADMIN: "true"}),
        cluster_role("system:aggregate-to-edit", [
            # read on escalating resources
            rule(READ, [core], ["pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets",
                                "services/proxy"]),
            rule(["impersonate"], [core], ["serviceaccounts"]),
            rule(WRITE, [core], ["pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"]),
            rule(["create"], [core], ["pods/eviction"]),
            rule(WRITE, [core], ["replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
                                 "services", "services/proxy", "persistentvolumeclaims", "configmaps", "secrets",
                                 "events"]),
            rule(["create"], [core], ["serviceaccounts/token"]),
            rule(WRITE, [apps], ["statefulsets", "statefulsets/scale", "daemonsets", "deployments",
                                 "deployments/scale", "deployments/rollback", "replicasets", "replicasets/scale"]),
            rule(WRITE, ["autoscaling"], ["horizontalpodautoscalers"]),
            rule(WRITE, [batch], ["jobs", "cronjobs"]),
            rule(WRITE, [ext], ["daemonsets", "deployments", "deployments/scale", "deployments/rollback", "ingresses",
                                "replicasets", "replicasets/scale", "replicationcontrollers/scale",
                                "networkpolicies"]),
            rule(WRITE, ["policy"], ["poddisruptionbudgets"]),
            rule(WRITE, ["networking.k8s.io"], ["networkpolicies", "ingresses"]),
            rule(READ_WRITE, ["coordination.k8s.io"], ["leases"]),
        ], labels={AGGREGATE_TO_EDIT: "true"}),
        cluster_role("system:aggregate-to-view", [
            rule(READ, [core], ["pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
                                "services", "services/status", "endpoints", "persistentvolumeclaims",
                                "persistentvolumeclaims/status", "configmaps"]),
            rule(READ, [core], ["limitranges", "resourcequotas", "bindings", "events", "pods/status",
                                "resourcequotas/status", "namespaces/status", "replicationcontrollers/status",
                                "pods/log"]),
            # read on namespaces at namespace scope: whether you can see *this* namespace
            rule(READ, [core], ["namespaces"]),
            rule(READ, ["discovery.k8s.io"], ["endpointslices"]),
            rule(READ, [apps], ["controllerrevisions", "statefulsets", "statefulsets/status", "statefulsets/scale",
                                "daemonsets", "daemonsets/status", "deployments", "deployments/status",
                                "deployments/scale", "replicasets", "replicasets/status", "replicasets/scale"]),
            rule(READ, ["autoscaling"], ["horizontalpodautoscalers", "horizontalpodautoscalers/status"]),
            rule(READ, [batch], ["jobs", "jobs/status", "cronjobs", "cronjobs/status"]),
            rule(READ, [ext], ["daemonsets", "daemonsets/status", "deployments", "deployments/scale",
                               "deployments/status", "ingresses", "ingresses/status", "replicasets",
                               "replicasets/scale", "replicasets/status", "replicationcontrollers/scale",
                               "networkpolicies"]),
            rule(READ, ["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"]),
            rule(READ, ["networking.k8s.io"], ["ingresses", "ingresses/status", "networkpolicies"]),
        ], labels={AGGREGATE_TO_VIEW: "true"}),
        cluster_role("system:auth-delegator", [
            rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
            rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
        ]),
        cluster_role("system:basic-user", [
            rule(["create"], ["authorization.k8s.io"], ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]),
            rule(["create"], ["authentication.k8s.io"], ["selfsubjectreviews"]),
        ]),
        cluster_role("system:discovery", [
            rule(["get"], urls=["/livez", "/readyz", "/healthz", "/version", "/version/", "/openapi", "/openapi/*",
                                "/api", "/api/*", "/apis", "/apis/*"]),
        ]),
        cluster_role("system:public-info-viewer", [
            rule(["get"], urls=["/livez", "/readyz", "/healthz", "/version", "/version/"]),
        ]),
        cluster_role("system:service-account-issuer-discovery", [
            rule(["get"], urls=["/.well-known/openid-configuration", "/.well-known/openid-configuration/",
                                "/openid/v1/jwks", "/openid/v1/jwks/"]),
        ]),
    ]


def _kube_bindings() -> list[dict]:
    return [
        cluster_role_binding("cluster-admin", groups=["system:masters"]),
        cluster_role_binding("system:basic-user", groups=["system:authenticated"]),
        cluster_role_binding("system:discovery", groups=["system:authenticated"]),
        cluster_role_binding("system:public-info-viewer", groups=["system:authenticated", "system:unauthenticated"]),
        cluster_role_binding("system:service-account-issuer-discovery", groups=["system:serviceaccounts"]),
    ]


#: name -> object; sorted by name, as a list would return them
CLUSTER_ROLES: dict[str, dict] = {}
CLUSTER_ROLE_BINDINGS: dict[str, dict] = {}
_generation = 0


def generation() -> int:
    """Changes whenever :func:`add` changes the policy (caches built from it compare it)."""
    return _generation


def _complete(obj: dict, kind: str) -> dict:
    """Give a contributed object the shape and bootstrap metadata of kube's own."""
    meta = dict(obj.get("metadata") or {})
    name = meta.get("name")
    if not name:
        raise ValueError(f"bootstrap {kind} without metadata.name")
    base = _meta(kind, name, meta.get("labels"), meta.get("annotations"))
    out = {"kind": kind, "apiVersion": API_VERSION, "metadata": base}
    for k, v in obj.items():
        if k not in ("kind", "apiVersion", "metadata"):
            out[k] = v
    if kind == "ClusterRole":
        out.setdefault("rules", [])
    return out


def add(cluster_roles: list[dict], bindings: list[dict]) -> None:
    """Contribute bootstrap ClusterRoles and ClusterRoleBindings (replacing any of the same name)."""
    global _generation
    for obj in cluster_roles:
        done = _complete(obj, "ClusterRole")
        CLUSTER_ROLES[done["metadata"]["name"]] = done
    for obj in bindings:
        done = _complete(obj, "ClusterRoleBinding")
        CLUSTER_ROLE_BINDINGS[done["metadata"]["name"]] = done
    for table in (CLUSTER_ROLES, CLUSTER_ROLE_BINDINGS):
        ordered = sorted(table.items())
        table.clear()
        table.update(ordered)
    _generation += 1


add(_kube_cluster_roles(), _kube_bindings())
