"""Three hub replicas on one etcd: any replica serves any request, consistently."""

from __future__ import annotations

import concurrent.futures
import time
import uuid
from collections.abc import Iterator

import pytest
import yaml

from ..harness import Hub, Kubectl, wait_for
from .replicas import EtcdCluster, Watch, configmap, require_etcd, start_replicas, stop_all


@pytest.fixture(scope="module")
def etcd(tmp_path_factory) -> Iterator[EtcdCluster]:
    require_etcd()
    c = EtcdCluster(tmp_path_factory.mktemp("etcd")).start()
    yield c
    c.stop()


@pytest.fixture(scope="module")
def hubs(etcd, tmp_path_factory) -> Iterator[list[Hub]]:
    # one issuer for all, as behind a load balancer: a token from any replica is valid on every one
    hs = start_replicas(tmp_path_factory.mktemp("replicas"), etcd.endpoints, 3,
                        extra=["--service-account-issuer", "https://hub.example:6443"])
    yield hs
    stop_all(hs)


def ns(hub: Hub) -> str:
    name = "t-" + uuid.uuid4().hex[:8]
    code, body = hub.json("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    assert code == 201, body
    return name


def test_a_write_on_one_replica_is_read_and_watched_on_every_other(hubs):
    a, b, c = hubs
    n = ns(a)
    # the namespace made through A is usable at once through B and C (read-your-writes)
    code, listed = b.json("GET", f"/api/v1/namespaces/{n}/configmaps")
    assert code == 200, listed
    watches = [Watch(h, f"/api/v1/namespaces/{n}/configmaps?watch=1&resourceVersion={listed['metadata']['resourceVersion']}")
               for h in (a, b, c)]
    try:
        code, created = c.json("POST", f"/api/v1/namespaces/{n}/configmaps", configmap("cm", k="v"))
        assert code == 201, created
        rv = created["metadata"]["resourceVersion"]
        for h in hubs:  # a get right after the write, on any replica, sees it at the same resourceVersion
            code, got = h.json("GET", f"/api/v1/namespaces/{n}/configmaps/cm")
            assert code == 200 and got["metadata"]["resourceVersion"] == rv and got["metadata"]["uid"] == created["metadata"]["uid"]
        code, _ = b.json("DELETE", f"/api/v1/namespaces/{n}/configmaps/cm")
        assert code == 200
        for w in watches:
            wait_for(lambda w=w: len(w.events) >= 2, 5, what="ADDED and DELETED on every replica")
            assert [(e["type"], e["object"]["metadata"]["name"]) for e in w.events] == [("ADDED", "cm"), ("DELETED", "cm")]
            assert w.events[0]["object"]["metadata"]["resourceVersion"] == rv
    finally:
        for w in watches:
            w.close()


def test_optimistic_concurrency_holds_across_replicas(hubs):
    a, b, _ = hubs
    n = ns(a)
    code, obj = a.json("POST", f"/api/v1/namespaces/{n}/configmaps", configmap("race", v="0"))
    assert code == 201
    pool = concurrent.futures.ThreadPoolExecutor(2)
    for i in range(8):
        code, obj = a.json("GET", f"/api/v1/namespaces/{n}/configmaps/race")
        bodies = []
        for who in ("a", "b"):
            body = dict(obj, data={"v": f"{i}-{who}"})
            bodies.append(body)
        futs = [pool.submit(h.json, "PUT", f"/api/v1/namespaces/{n}/configmaps/race", body) for h, body in zip((a, b), bodies, strict=True)]
        codes = sorted(f.result()[0] for f in futs)
        assert codes == [200, 409], codes
        loser = next(f.result()[1] for f in futs if f.result()[0] == 409)
        assert loser["reason"] == "Conflict"
    pool.shutdown()


def test_logical_clusters_crds_discovery_and_openapi_reach_every_replica_within_a_second(hubs, tmp_path):
    a, b, c = hubs
    cluster = "lc-" + uuid.uuid4().hex[:8]
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "gadgets.scale.example.com"},
           "spec": {"group": "scale.example.com", "scope": "Namespaced",
                    "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                      "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]}}
    kubectl_a = Kubectl(a.kubeconfig_for(cluster, tmp_path))
    kubectl_a("apply", "-f", "-", stdin=yaml.safe_dump(crd))
    created = time.monotonic()
    for h in (b, c):
        def in_discovery(h=h) -> bool:
            code, body = h.json("GET", f"/clusters/{cluster}/apis/scale.example.com/v1")
            return code == 200 and [r["name"] for r in body["resources"]] == ["gadgets"]

        def in_openapi(h=h) -> bool:
            code, body = h.json("GET", f"/clusters/{cluster}/openapi/v3")
            return code == 200 and "apis/scale.example.com/v1" in body["paths"]

        def cluster_listed(h=h) -> bool:
            code, body = h.json("GET", "/apis/tenancy.fleetplane.io/v1alpha1/logicalclusters")
            return code == 200 and cluster in [i["metadata"]["name"] for i in body["items"]]

        wait_for(lambda h=h: in_discovery(h) and in_openapi(h) and cluster_listed(h),
                 max(0.05, 1.0 - (time.monotonic() - created)), interval=0.02, what="CRD on every replica")
    # the real kubectl on C serves the new kind (fresh discovery), and B lists what C made
    kubectl_c = Kubectl(c.kubeconfig_for(cluster, tmp_path))
    kubectl_c("apply", "-f", "-", stdin=yaml.safe_dump({"apiVersion": "scale.example.com/v1", "kind": "Gadget",
                                                         "metadata": {"name": "g1", "namespace": "default"}, "spec": {"size": 3}}))
    got = Kubectl(b.kubeconfig_for(cluster, tmp_path))("get", "gadgets", "-n", "default", "-o", "json").json()
    assert [(i["metadata"]["name"], i["spec"]["size"]) for i in got["items"]] == [("g1", 3)]
    # another cluster of the same replicas does not see it
    other = "lc-" + uuid.uuid4().hex[:8]
    code, _ = b.json("GET", f"/clusters/{other}/apis/scale.example.com/v1")
    assert code == 404


def test_first_use_of_a_logical_cluster_on_every_replica_at_once(hubs):
    cluster = "lc-" + uuid.uuid4().hex[:8]
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        futs = [pool.submit(h.json, "POST", f"/clusters/{cluster}/api/v1/namespaces/default/configmaps",
                            configmap(f"first-{i}-{j}")) for j in range(2) for i, h in enumerate(hubs)]
        codes = [f.result()[0] for f in futs]
    assert codes == [201] * 6, [f.result() for f in futs]
    for h in hubs:
        code, body = h.json("GET", f"/clusters/{cluster}/api/v1/namespaces")
        assert sorted(i["metadata"]["name"] for i in body["items"]) == ["default", "kube-node-lease", "kube-public", "kube-system"]
        code, body = h.json("GET", f"/clusters/{cluster}/api/v1/namespaces/default/configmaps")
        assert len(body["items"]) == 6


def test_lifecycle_controllers_run_everywhere_without_harm(hubs):
    """Namespace termination and garbage collection run in every replica: idempotent work,
    guarded writes; each finishes once, whichever replica gets there first."""
    a, b, c = hubs
    n = ns(a)
    code, owner = b.json("POST", f"/api/v1/namespaces/{n}/configmaps", configmap("owner"))
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    for i in range(10):
        body = configmap(f"dep-{i}")
        body["metadata"]["ownerReferences"] = [ref]
        assert hubs[i % 3].json("POST", f"/api/v1/namespaces/{n}/configmaps", body)[0] == 201
    assert c.json("DELETE", f"/api/v1/namespaces/{n}/configmaps/owner")[0] == 200
    wait_for(lambda: len(a.json("GET", f"/api/v1/namespaces/{n}/configmaps")[1]["items"]) == 0, 10, what="GC")
    for i in range(10):
        assert a.json("POST", f"/api/v1/namespaces/{n}/configmaps", configmap(f"x-{i}"))[0] == 201
    assert b.json("DELETE", f"/api/v1/namespaces/{n}")[0] == 200
    for h in hubs:
        wait_for(lambda h=h: h.json("GET", f"/api/v1/namespaces/{n}")[0] == 404, 10, what="namespace gone")
    for h in hubs:
        log = h.log.read_text()
        assert "Traceback" not in log, log[-3000:]


def test_python_clients_list_and_watch_across_replicas(hubs):
    kubernetes = pytest.importorskip("kubernetes")
    a, b, _ = hubs
    n = ns(a)
    api_b = kubernetes.client.CoreV1Api(kubernetes.config.new_client_from_config(str(b.kubeconfig)))
    api_a = kubernetes.client.CoreV1Api(kubernetes.config.new_client_from_config(str(a.kubeconfig)))
    rv = api_b.list_namespaced_config_map(n).metadata.resource_version
    api_a.create_namespaced_config_map(n, configmap("py", k="1"))
    w = kubernetes.watch.Watch()
    seen = []
    for ev in w.stream(api_b.list_namespaced_config_map, n, resource_version=rv, timeout_seconds=5):
        seen.append((ev["type"], ev["object"].metadata.name))
        break
    assert seen == [("ADDED", "py")]
    assert api_b.read_namespaced_config_map("py", n).data == {"k": "1"}


def test_identities_work_on_every_replica(hubs, tmp_path):
    """A ServiceAccount token minted by one replica and a client certificate from the shared client
    CA authenticate on all of them (replicas share the signing key and the client CA)."""
    import json
    import subprocess
    import sys

    first, *others = hubs
    lc = "ids-" + uuid.uuid4().hex[:6]
    admin = Kubectl(first.kubeconfig_for(lc, tmp_path), namespace="default")
    admin("create", "serviceaccount", "everywhere")
    token = admin("create", "token", "everywhere").out.strip()
    cfg = tmp_path / "carol.kubeconfig"
    subprocess.run([sys.executable, "-m", "fleetplane.cli.main", "kubeconfig", "create", "--data-dir", str(first.data_dir),
                    "--user", "carol", "--logical-cluster", lc, "-o", str(cfg)], check=True, capture_output=True)
    for h in hubs:
        code, _, raw = h.request("POST", f"/clusters/{lc}/apis/authentication.k8s.io/v1/selfsubjectreviews",
                                 {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}, auth=False,
                                 headers={"Authorization": f"Bearer {token}"})
        assert code == 201 and json.loads(raw)["status"]["userInfo"]["username"] == "system:serviceaccount:default:everywhere"
        carol = yaml.safe_load(cfg.read_text())
        for c in carol["clusters"]:
            c["cluster"]["server"] = f"{h.url}/clusters/{lc}"
        mine = tmp_path / f"carol-{h.port}.kubeconfig"
        mine.write_text(yaml.safe_dump(carol))
        assert Kubectl(mine)("auth", "whoami", "-o", "json").json()["status"]["userInfo"]["username"] == "carol"
