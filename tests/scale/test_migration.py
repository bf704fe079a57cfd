"""``fleetplane storage copy``: SQLite to etcd and back, every object keeping its identity."""

from __future__ import annotations

import subprocess
import sys
import uuid

import yaml

from ..harness import Hub, Kubectl
from .replicas import EtcdCluster, configmap, require_etcd

CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
       "metadata": {"name": "widgets.move.example.com"},
       "spec": {"group": "move.example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "versions": [{"name": "v1", "served": True, "storage": True,
                              "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}


def storage_copy(src: str, dst: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fleetplane.cli.main", "storage", "copy", "--from", src, "--to", dst],
                          capture_output=True, text=True, timeout=60)


def snapshot(hub: Hub, cluster: str) -> dict[str, tuple]:
    """(uid, creationTimestamp, labels, data/spec, finalizers, ownerReferences) of what we made."""
    out = {}
    for path in ["/api/v1/namespaces", "/api/v1/namespaces/app/configmaps",
                 f"/clusters/{cluster}/apis/move.example.com/v1/namespaces/default/widgets",
                 f"/clusters/{cluster}/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                 "/apis/tenancy.fleetplane.io/v1alpha1/logicalclusters"]:
        code, body = hub.json("GET", path)
        assert code == 200, (path, body)
        for i in body["items"]:
            m = i["metadata"]
            out[f"{path}/{m['name']}"] = (m["uid"], m["creationTimestamp"], m.get("labels"), i.get("data") or i.get("spec"),
                                          m.get("finalizers"), m.get("ownerReferences"), m.get("generation"))
    return out


def test_sqlite_to_etcd_and_back(tmp_path):
    require_etcd()
    cluster = "lc-" + uuid.uuid4().hex[:6]
    src = Hub(tmp_path / "sqlite-hub").start()
    try:
        assert src.json("POST", "/api/v1/namespaces", {"metadata": {"name": "app"}})[0] == 201
        code, owner = src.json("POST", "/api/v1/namespaces/app/configmaps", configmap("owner", a="1"))
        for i in range(30):
            body = configmap(f"cm-{i}", i=str(i))
            body["metadata"]["labels"] = {"n": str(i % 3)}
            if i % 10 == 0:
                body["metadata"]["finalizers"] = ["example.com/keep"]
                body["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                                                        "uid": owner["metadata"]["uid"]}]
            assert src.json("POST", "/api/v1/namespaces/app/configmaps", body)[0] == 201
        k = Kubectl(src.kubeconfig_for(cluster, tmp_path))
        k("apply", "-f", "-", stdin=yaml.safe_dump(CRD))
        k("apply", "-f", "-", stdin=yaml.safe_dump({"apiVersion": "move.example.com/v1", "kind": "Widget",
                                                     "metadata": {"name": "w1", "namespace": "default"}, "spec": {"size": 2}}))
        before = snapshot(src, cluster)
    finally:
        src.stop()

    etcd = EtcdCluster(tmp_path / "etcd").start()
    try:
        db = tmp_path / "sqlite-hub" / "hub.db"
        done = storage_copy(f"sqlite:{db}", f"etcd:{etcd.endpoints}")
        assert done.returncode == 0, done.stderr
        assert "copied" in done.stdout and "resourceVersions are new" in done.stdout
        # a second copy into the now non-empty target is refused
        again = storage_copy(f"sqlite:{db}", f"etcd:{etcd.endpoints}")
        assert again.returncode == 1 and "already holds" in again.stderr

        on_etcd = Hub(tmp_path / "etcd-hub", extra=["--storage", "etcd", "--etcd-endpoints", etcd.endpoints]).start()
        try:
            assert snapshot(on_etcd, cluster) == before
            got = Kubectl(on_etcd.kubeconfig_for(cluster, tmp_path))("get", "widgets", "-n", "default", "-o", "json").json()
            assert [i["spec"]["size"] for i in got["items"]] == [2]
            # the hub on etcd carries on: writes, and the copied objects behave as before
            assert on_etcd.json("POST", "/api/v1/namespaces/app/configmaps", configmap("new-on-etcd"))[0] == 201
            before = snapshot(on_etcd, cluster)
        finally:
            on_etcd.stop()

        back = tmp_path / "back" / "hub.db"
        done = storage_copy(f"etcd:{etcd.endpoints}", f"sqlite:{back}")
        assert done.returncode == 0, done.stderr
    finally:
        etcd.stop()
    on_sqlite = Hub(tmp_path / "back").start()
    try:
        assert snapshot(on_sqlite, cluster) == before
    finally:
        on_sqlite.stop()
