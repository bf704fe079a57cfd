"""Identities and RBAC with the real kubectl and the official Python client: who may do what,
in which logical cluster."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..harness import Hub, Kubectl, wait_for
from .conftest import cert_kubeconfig

EDIT_FOR_TEAM_A = """
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: devs-edit, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: team-a-devs}
"""

VIEW_FOR_VERA = """
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: vera-view, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: vera}
"""


@pytest.fixture(scope="module")
def tenants(auth_hub: Hub, tmp_path_factory: pytest.TempPathFactory) -> str:
    """team-a: alice's group may edit in `default`, vera may view; team-b: bob's group may edit."""
    d = tmp_path_factory.mktemp("tenants")
    a = Kubectl(auth_hub.kubeconfig_for("team-a", d), namespace="default")
    a("apply", "-f", "-", stdin=EDIT_FOR_TEAM_A + "---" + VIEW_FOR_VERA)
    a("create", "configmap", "team-a-config", "--from-literal=k=v")
    a("create", "secret", "generic", "team-a-secret", "--from-literal=password=hunter2")
    b = Kubectl(auth_hub.kubeconfig_for("team-b", d), namespace="default")
    b("apply", "-f", "-", stdin=EDIT_FOR_TEAM_A.replace("team-a-devs", "team-b-devs"))
    b("create", "secret", "generic", "team-b-secret", "--from-literal=password=swordfish")
    return "ok"


def test_forbidden_is_worded_as_kube_words_it(tenants, as_user) -> None:
    alice = as_user("alice", "team-a", "default")
    err = alice.fail("get", "rolebindings").err
    assert ('rolebindings.rbac.authorization.k8s.io is forbidden: User "alice" cannot list resource "rolebindings" '
            'in API group "rbac.authorization.k8s.io" in the namespace "default"') in err
    err = alice.fail("get", "namespace", "kube-system").err
    assert ('namespaces "kube-system" is forbidden: User "alice" cannot get resource "namespaces" in API group "" '
            'at the cluster scope') in err


def test_a_logical_cluster_that_binds_nobody_gives_nothing(tenants, auth_hub: Hub) -> None:
    """Not even discovery: team-b's types are team-b's business (kcp's workspace access rule)."""
    alice = {"Authorization": "Bearer alice-token-0123456789"}
    for path in ("/clusters/team-b/api", "/clusters/team-b/apis", "/clusters/team-b/api/v1/namespaces/default/configmaps"):
        assert auth_hub.request("GET", path, auth=False, headers=alice)[0] == 403, path
    assert auth_hub.request("GET", "/clusters/team-a/api", auth=False, headers=alice)[0] == 200
    assert auth_hub.request("GET", "/clusters/team-b/version", auth=False, headers=alice)[0] == 200


# who, cluster, verb args, allowed?
MATRIX = [
    ("alice", "team-a", ("get", "configmaps"), True),
    ("alice", "team-a", ("get", "secrets"), True),
    ("alice", "team-a", ("create", "configmap", "made-by-alice", "--from-literal=x=y"), True),
    ("alice", "team-a", ("get", "rolebindings"), False),  # edit does not read RBAC
    ("alice", "team-a", ("get", "namespaces"), False),
    ("alice", "team-b", ("get", "configmaps"), False),
    ("alice", "team-b", ("get", "secrets"), False),
    ("alice", "root", ("get", "logicalclusters"), False),
    ("alice", "root", ("get", "configmaps"), False),
    ("bob", "team-b", ("get", "secrets"), True),
    ("bob", "team-a", ("get", "secrets"), False),
    ("bob", "team-a", ("delete", "configmap", "team-a-config"), False),
    ("vera", "team-a", ("get", "configmaps"), True),
    ("vera", "team-a", ("get", "secrets"), False),  # view has no secrets
    ("vera", "team-a", ("delete", "configmap", "team-a-config"), False),
    ("vera", "team-b", ("get", "configmaps"), False),
]


@pytest.mark.parametrize("who,cluster,args,allowed", MATRIX, ids=[f"{w}-{c}-{'-'.join(a[:2])}" for w, c, a, _ in MATRIX])
def test_tenant_matrix(tenants, as_user, who: str, cluster: str, args: tuple[str, ...], allowed: bool) -> None:
    k = as_user(who, cluster, "default")
    result = k(*args, check=False)
    if allowed:
        assert result.code == 0, result.err
    else:
        assert result.code != 0 and "Forbidden" in result.err, (result.out, result.err)


def test_the_wildcard_needs_a_grant_in_root(tenants, auth_hub: Hub, as_user, admin_in) -> None:
    code, _, raw = auth_hub.request("GET", "/clusters/*/api/v1/secrets", auth=False,
                                    headers={"Authorization": "Bearer alice-token-0123456789"})
    assert code == 403
    code, body = auth_hub.json("GET", "/clusters/*/api/v1/configmaps")
    assert code == 200 and any(i["metadata"]["name"] == "team-a-config" for i in body["items"])
    admin_in("root")("apply", "-f", "-", stdin="""
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: fleet-configmap-reader}
rules:
- {nonResourceURLs: ["/clusters/*"], verbs: [list, watch]}
- {apiGroups: [""], resources: [configmaps], verbs: [list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: vera-fleet-configmaps}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: fleet-configmap-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: vera}]
""")
    vera = {"Authorization": "Bearer vera-token-0123456789"}
    code, _, raw = auth_hub.request("GET", "/clusters/*/api/v1/configmaps", auth=False, headers=vera)
    assert code == 200 and any(i["metadata"]["name"] == "team-a-config" for i in json.loads(raw)["items"])
    assert auth_hub.request("GET", "/clusters/*/api/v1/secrets", auth=False, headers=vera)[0] == 403
    # the wildcard is the only way in: team-b itself binds vera to nothing
    assert auth_hub.request("GET", "/clusters/team-b/api/v1/namespaces/default/configmaps", auth=False, headers=vera)[0] == 403
    admin_in("root")("delete", "clusterrolebinding", "vera-fleet-configmaps")  # the other tests expect no such grant
    wait_for(lambda: auth_hub.request("GET", "/clusters/*/api/v1/configmaps", auth=False, headers=vera)[0] == 403, 10,
             what="the wildcard closed again")


def test_whoami_and_can_i(tenants, as_user) -> None:
    alice = as_user("alice", "team-a", "default")
    who = alice("auth", "whoami", "-o", "json").json()["status"]["userInfo"]
    assert who["username"] == "alice" and who["uid"] == "1001"
    assert who["groups"] == ["team-a-devs", "system:authenticated"]
    assert alice("auth", "can-i", "create", "configmaps").out.strip() == "yes"
    no = alice("auth", "can-i", "create", "rolebindings", check=False)
    assert (no.code, no.out.strip()) == (1, "no")
    in_b = as_user("alice", "team-b", "default")("auth", "can-i", "get", "secrets", check=False)
    assert (in_b.code, in_b.out.strip()) == (1, "no")  # the self reviews answer in any logical cluster
    listed = alice("auth", "can-i", "--list").out
    assert "configmaps" in listed and "selfsubjectaccessreviews.authorization.k8s.io" in listed


def test_impersonation_is_gated_by_the_impersonate_verb(tenants, auth_hub: Hub, as_user, admin_in) -> None:
    admin = admin_in("team-a", "default")
    err = admin("--as", "vera", "delete", "configmap", "team-a-config", check=False).err
    assert 'User "vera" cannot delete resource "configmaps"' in err
    assert admin("--as", "vera", "get", "configmap", "team-a-config", "-o", "name").out.strip() == "configmap/team-a-config"
    who = admin("--as", "someone", "--as-group", "team-a-devs", "auth", "whoami", "-o", "json").json()["status"]["userInfo"]
    assert who["username"] == "someone" and who["groups"] == ["team-a-devs", "system:authenticated"]
    assert "Forbidden" in as_user("alice", "team-a", "default")("--as", "bob", "get", "configmaps", check=False).err
    code, _, raw = auth_hub.request("GET", "/clusters/team-a/api/v1/namespaces/default/configmaps", auth=False,
                                    headers={"Authorization": "Bearer alice-token-0123456789", "Impersonate-User": "bob"})
    assert (code, json.loads(raw)["message"]) == (403, 'users "bob" is forbidden: User "alice" cannot impersonate '
                                                       'resource "users" in API group "" at the cluster scope')


def test_a_binding_cannot_grant_more_than_its_author_holds(tenants, admin_in, as_user) -> None:
    admin = admin_in("team-a", "default")
    admin("apply", "-f", "-", stdin="""
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: rbac-manager, namespace: default}
rules:
- {apiGroups: [rbac.authorization.k8s.io], resources: [roles, rolebindings], verbs: [create, get, list]}
- {apiGroups: [""], resources: [configmaps], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bob-rbac-manager, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: rbac-manager}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}]
""")
    bob = as_user("bob", "team-a", "default")
    err = bob("create", "role", "secret-reader", "--verb=get", "--resource=secrets", check=False).err
    assert "is attempting to grant RBAC permissions not currently held" in err
    assert '{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}' in err
    bob("create", "role", "cm-reader", "--verb=get", "--resource=configmaps")  # what bob holds, bob may grant
    err = bob("create", "rolebinding", "bob-admin", "--clusterrole=cluster-admin", "--user=bob", check=False).err
    assert "is forbidden" in err and "not currently held" in err
    bob("create", "rolebinding", "vera-cm", "--role=cm-reader", "--user=vera")


def test_client_certificate_identities(tenants, auth_hub: Hub, tmp_path: Path) -> None:
    cfg = cert_kubeconfig(auth_hub, tmp_path, "carol", ["team-a-devs", "qa"], ["team-a", "team-b"])
    assert cfg.stat().st_mode & 0o077 == 0
    carol = Kubectl(cfg, namespace="default")
    who = carol("--context", "team-a", "auth", "whoami", "-o", "json").json()["status"]["userInfo"]
    assert who["username"] == "carol" and who["groups"] == ["team-a-devs", "qa", "system:authenticated"]
    assert who["extra"]["authentication.kubernetes.io/credential-id"][0].startswith("X509SHA256=")
    assert carol("--context", "team-a", "get", "configmap", "team-a-config", "-o", "name").out.strip() == "configmap/team-a-config"
    assert "Forbidden" in carol("--context", "team-b", "get", "configmaps", check=False).err


def test_the_python_client_with_a_certificate(tenants, auth_hub: Hub, tmp_path: Path) -> None:
    from kubernetes import client, config
    from kubernetes.client.rest import ApiException

    cfg = cert_kubeconfig(auth_hub, tmp_path, "dave", ["team-a-devs"], ["team-a"])
    api = client.CoreV1Api(config.new_client_from_config(str(cfg)))
    names = [c.metadata.name for c in api.list_namespaced_config_map("default").items]
    assert "team-a-config" in names
    with pytest.raises(ApiException) as err:
        api.list_namespace()
    assert err.value.status == 403
    assert json.loads(err.value.body)["message"] == ('namespaces is forbidden: User "dave" cannot list resource '
                                                      '"namespaces" in API group "" at the cluster scope')


@pytest.mark.parametrize("how", ["certificate", "token"])
async def test_the_async_python_clients_with_identities(tenants, auth_hub: Hub, tmp_path: Path, how: str) -> None:
    """kubernetes_asyncio, lightkube and kr8s, unmodified, as alice (a client certificate made by
    `fleetplane kubeconfig create`, or her static token): allowed where RBAC allows, 403 elsewhere."""
    import kr8s.asyncio
    from kubernetes_asyncio import client, config
    from kubernetes_asyncio.client.rest import ApiException
    from lightkube import ApiError, AsyncClient, KubeConfig
    from lightkube.resources.core_v1 import ConfigMap, Namespace

    from .conftest import token_kubeconfig

    cfg = (cert_kubeconfig(auth_hub, tmp_path, "alice", ["team-a-devs"], ["team-a"]) if how == "certificate"
           else token_kubeconfig(auth_hub, tmp_path, "alice", "team-a"))
    api_client = await config.new_client_from_config(str(cfg))
    async with api_client:
        v1 = client.CoreV1Api(api_client)
        assert "team-a-config" in [c.metadata.name for c in (await v1.list_namespaced_config_map("default")).items]
        with pytest.raises(ApiException) as err:
            await v1.list_namespace()
        assert err.value.status == 403
    lk = AsyncClient(KubeConfig.from_file(str(cfg)))
    assert "team-a-config" in [c.metadata.name async for c in lk.list(ConfigMap, namespace="default")]
    with pytest.raises(ApiError) as lk_err:
        await lk.get(Namespace, "default")
    assert lk_err.value.status.code == 403
    await lk.close()
    api = await kr8s.asyncio.api(kubeconfig=str(cfg))
    assert "team-a-config" in [o.name async for o in api.get("configmaps", namespace="default")]
    with pytest.raises(kr8s.ServerError) as kr_err:
        [o async for o in api.get("secrets", namespace="kube-system")]
    assert kr_err.value.response.status_code == 403


def test_aggregated_cluster_roles_show_their_rules(tenants, admin_in) -> None:
    admin = admin_in("team-a")
    names = admin("get", "clusterroles", "-o", "name").out.split()
    assert {"clusterrole.rbac.authorization.k8s.io/" + n for n in ("cluster-admin", "admin", "edit", "view")} <= set(names)
    view = admin.get_json("clusterrole", "view")
    assert any("configmaps" in r.get("resources", []) for r in view["rules"])
    assert not any("secrets" in r.get("resources", []) for r in view["rules"])
    admin("apply", "-f", "-", stdin="""
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: monitoring}
aggregationRule:
  clusterRoleSelectors: [{matchLabels: {example.com/aggregate-to-monitoring: "true"}}]
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: monitoring-leases, labels: {example.com/aggregate-to-monitoring: "true"}}
rules: [{apiGroups: [coordination.k8s.io], resources: [leases], verbs: [get, list]}]
""")
    wait_for(lambda: admin.get_json("clusterrole", "monitoring").get("rules"), 10, what="the aggregated rules written")
    assert admin.get_json("clusterrole", "monitoring")["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "list"]}]


def test_kubectl_auth_reconcile(tenants, admin_in, as_user) -> None:
    admin = admin_in("team-a", "default")
    manifest = """
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: lease-reader, namespace: default}
rules: [{apiGroups: [coordination.k8s.io], resources: [leases], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: vera-leases, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: lease-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: vera}]
"""
    out = admin("auth", "reconcile", "-f", "-", stdin=manifest).out
    assert "reconciled" in out or "created" in out
    assert as_user("vera", "team-a", "default")("auth", "can-i", "list", "leases").out.strip() == "yes"
    wider = manifest.replace("verbs: [get, list]}]\n---", "verbs: [get, list, watch]}]\n---")
    admin("auth", "reconcile", "-f", "-", stdin=wider)  # missing rules are added, the old ones kept
    assert any("watch" in r["verbs"] for r in admin.get_json("role", "lease-reader")["rules"])
    assert as_user("vera", "team-a", "default")("auth", "can-i", "watch", "leases").out.strip() == "yes"
    admin("auth", "reconcile", "-f", "-", "--remove-extra-permissions", stdin=manifest)
    assert [r["verbs"] for r in admin.get_json("role", "lease-reader")["rules"]] == [["get", "list"]]
    assert as_user("vera", "team-a", "default")("auth", "can-i", "watch", "leases", check=False).out.strip() == "no"


def test_a_consumer_reads_its_cluster_credential_and_nothing_else(tenants, admin_in, auth_hub: Hub) -> None:
    """KEP-4322 consumers read `<consumer namespace>/<clusterName>` (what the secret-reader plugin
    GETs by name): a Role with resourceNames gives a consumer exactly that Secret."""
    admin = admin_in("team-a", "default")
    admin("create", "namespace", "consumers")
    for name in ("edge-1", "edge-2"):
        admin("create", "secret", "generic", name, "-n", "consumers", f"--from-literal=token=member-token-{name}")
    admin("create", "serviceaccount", "argocd", "-n", "consumers")
    admin("create", "role", "edge-1-credential", "-n", "consumers", "--verb=get", "--resource=secrets",
          "--resource-name=edge-1")
    admin("create", "rolebinding", "argocd-edge-1", "-n", "consumers", "--role=edge-1-credential",
          "--serviceaccount=consumers:argocd")
    token = admin("create", "token", "argocd", "-n", "consumers").out.strip()

    def get(path: str) -> int:
        return auth_hub.request("GET", f"/clusters/team-a/api/v1/namespaces/consumers/secrets{path}", auth=False,
                                headers={"Authorization": f"Bearer {token}"})[0]

    assert (get("/edge-1"), get("/edge-2"), get("")) == (200, 403, 403)


WHO = {"alice": "alice-token-0123456789", "bob": "bob-token-0123456789", "vera": "vera-token-0123456789", "anonymous": None}
PATHS = {  # resource -> (collection path in namespace default, or cluster-scoped)
    "secrets": "/api/v1/namespaces/default/secrets",
    "configmaps": "/api/v1/namespaces/default/configmaps",
    "rolebindings": "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
    "clusters": "/apis/cluster.example.dev/v1alpha1/namespaces/default/clusters",
    "logicalclusters": "/apis/tenancy.fleetplane.io/v1alpha1/logicalclusters",
}
#: what the fixtures grant: alice's group and bob's group edit in default of team-a / team-b; vera
#: views team-a's default. Nothing else is granted to anyone but the admin.
GRANTS = {("alice", "mx-a"): "edit", ("bob", "mx-b"): "edit", ("vera", "mx-a"): "view"}
EDIT = {"secrets", "configmaps"}
VIEW = {"configmaps"}


def expected(who: str, cluster: str, resource: str, verb: str) -> bool:
    grant = GRANTS.get((who, cluster))
    if grant == "edit":
        return resource in EDIT
    if grant == "view":
        return resource in VIEW and verb in ("get", "list", "watch")
    return False


@pytest.fixture(scope="module")
def matrix_tenants(auth_hub: Hub, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Logical clusters of their own (the other tests add grants to team-a and team-b)."""
    d = tmp_path_factory.mktemp("matrix")
    Kubectl(auth_hub.kubeconfig_for("mx-a", d), namespace="default")(
        "apply", "-f", "-", stdin=EDIT_FOR_TEAM_A + "---" + VIEW_FOR_VERA)
    Kubectl(auth_hub.kubeconfig_for("mx-b", d), namespace="default")(
        "apply", "-f", "-", stdin=EDIT_FOR_TEAM_A.replace("team-a-devs", "team-b-devs"))


@pytest.mark.parametrize("who", list(WHO))
@pytest.mark.parametrize("cluster", ["mx-a", "mx-b", "root", "*"])
def test_tenant_matrix_over_http(matrix_tenants, auth_hub: Hub, who: str, cluster: str) -> None:
    """Every identity x logical cluster x resource x verb, as a client sees it: 2xx/404 where
    RBAC grants it, 403 (401 for nobody) where it does not, never anything else."""
    headers = {"Authorization": f"Bearer {WHO[who]}"} if WHO[who] else {}
    for resource, path in PATHS.items():
        if resource == "logicalclusters" and cluster not in ("root", "*"):
            continue  # served in root only
        base = f"/clusters/{cluster}{path}"
        for verb, method, url, body in (
                ("list", "GET", base, None), ("watch", "GET", base + "?watch=1&timeoutSeconds=1", None),
                ("get", "GET", base + "/matrix-probe", None), ("create", "POST", base, {"metadata": {"name": f"m-{who}"}}),
                ("delete", "DELETE", base + "/matrix-probe", None)):
            if cluster == "*" and verb not in ("list", "watch"):
                continue  # the wildcard serves list and watch only (405, before any authorization question)
            code = auth_hub.request(method, url, body, auth=False, headers=headers)[0]
            allowed = cluster != "*" and expected(who, cluster, resource, verb)
            what = f"{who} {verb} {resource} in {cluster}: {code}"
            if allowed:
                assert code in (200, 201, 404, 422), what  # 404: no such probe object; 422: a body the type refuses
            else:
                assert code == 403, what


def test_bootstrap_roles_are_shared_and_copied_on_write(tenants, admin_in, matrix_tenants) -> None:
    a, b = admin_in("team-a"), admin_in("mx-b")
    a("label", "clusterrole", "view", "example.com/touched=yes", "--dry-run=server")
    assert "example.com/touched" not in (a.get_json("clusterrole", "view")["metadata"].get("labels") or {})
    assert a.get_json("clusterrole", "view")["metadata"].get("resourceVersion", "") == ""  # still the shared copy
    a("label", "clusterrole", "view", "example.com/touched=yes")
    view_a = a.get_json("clusterrole", "view")
    assert view_a["metadata"]["labels"]["example.com/touched"] == "yes" and view_a["metadata"]["resourceVersion"]
    assert "example.com/touched" not in (b.get_json("clusterrole", "view")["metadata"].get("labels") or {})
    err = b("delete", "clusterrole", "edit", check=False).err
    assert "part of the bootstrap policy every logical cluster shares" in err
