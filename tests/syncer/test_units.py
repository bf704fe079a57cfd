"""The syncer's pure parts: schema conversion and comparison, drift helpers, names, targets, queue."""

from __future__ import annotations

import asyncio
import base64
import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from fleetplane.fleet.syncer import ApiTarget, RetainRule, constants
from fleetplane.fleet.syncer.objectsync import ObjectSync, differences, project
from fleetplane.fleet.syncer.schema import (
    PERMISSIVE_SCHEMA,
    crd_problems,
    crd_version_from_openapi,
    schema_fingerprint,
    schema_problems,
    structural_from_openapi,
)
from fleetplane.kube.workqueue import WorkQueue
from fleetplane.registry.schema import validate_structural

DATA = Path(__file__).parents[2] / "src/fleetplane/registry/openapi_data/k8s-definitions.json"


@pytest.fixture(scope="module")
def openapi() -> dict:
    """kube 1.32's OpenAPI v3 schemas, as a cluster publishes them (the hub's copy of them)."""
    return {"components": {"schemas": json.loads(DATA.read_text())["definitions"]}}


@pytest.mark.parametrize("group,version,kind", [("apps", "v1", "Deployment"), ("apps", "v1", "ReplicaSet"),
                                                ("", "v1", "Pod"), ("coordination.k8s.io", "v1", "Lease")])
def test_built_in_types_become_structural_schemas(openapi, group, version, kind):
    v = crd_version_from_openapi(openapi, group, version, kind, frozenset({"status", "scale"}))
    schema = v["schema"]["openAPIV3Schema"]
    errs = validate_structural(schema, status_subresource="status" in v.get("subresources", {}))
    assert errs == [], [str(e) for e in errs][:5]
    assert schema["properties"]["metadata"] == {"type": "object"}
    assert schema_problems(schema, schema) == []


def test_deployment_schema_details(openapi):
    v = crd_version_from_openapi(openapi, "apps", "v1", "Deployment", frozenset({"status", "scale"}))
    s = v["schema"]["openAPIV3Schema"]["properties"]
    assert v["subresources"] == {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}}
    ru = s["spec"]["properties"]["strategy"]["properties"]["rollingUpdate"]["properties"]
    assert ru["maxSurge"]["x-kubernetes-int-or-string"] is True and "type" not in ru["maxSurge"]
    tmpl = s["spec"]["properties"]["template"]["properties"]
    assert tmpl["metadata"]["x-kubernetes-preserve-unknown-fields"] is True  # embedded ObjectMeta
    containers = tmpl["spec"]["properties"]["containers"]
    assert containers["x-kubernetes-list-type"] == "map" and containers["x-kubernetes-list-map-keys"] == ["name"]
    cpu = containers["items"]["properties"]["resources"]["properties"]["requests"]["additionalProperties"]
    assert cpu == {"x-kubernetes-int-or-string": True}  # Quantity
    # a list-map key that is neither required nor defaulted (protocol, in this copy of the
    # definitions) would make the CRD invalid: the list keeps its items, loses the map semantics
    ports = containers["items"]["properties"]["ports"]
    assert "x-kubernetes-list-type" not in ports and ports["items"]["required"] == ["containerPort"]
    assert [c["jsonPath"] for c in v["additionalPrinterColumns"]][:2] == [".status.readyReplicas", ".spec.replicas"]


def test_list_map_keys_with_defaults_are_kept():
    doc = {"components": {"schemas": {
        "P": {"type": "object", "required": ["port"], "properties": {
            "port": {"type": "integer"}, "protocol": {"type": "string", "default": "TCP", "enum": ["TCP", "UDP"]}}},
        "K": {"type": "object", "x-kubernetes-group-version-kind": [{"group": "g.io", "version": "v1", "kind": "K"}],
              "properties": {"spec": {"type": "object", "properties": {"ports": {
                  "type": "array", "items": {"allOf": [{"$ref": "#/components/schemas/P"}], "default": {}},
                  "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port", "protocol"],
                  "x-kubernetes-patch-strategy": "merge"}}}}}}}}
    schema = structural_from_openapi(doc, "g.io", "v1", "K")
    ports = schema["properties"]["spec"]["properties"]["ports"]
    assert ports["x-kubernetes-list-map-keys"] == ["port", "protocol"] and "x-kubernetes-patch-strategy" not in ports
    assert validate_structural(schema) == []


def test_missing_kind_is_an_error(openapi):
    from fleetplane.fleet.syncer.schema import SchemaError

    with pytest.raises(SchemaError, match="no schema for kind Nope"):
        structural_from_openapi(openapi, "apps", "v1", "Nope")


def test_schema_problems():
    obj = lambda **p: {"type": "object", "properties": p}  # noqa: E731
    hub = obj(spec=obj(size={"type": "integer"}, name={"type": "string"}, mode={"type": "string", "enum": ["a", "b"]}))
    assert schema_problems(hub, hub) == []
    wider = obj(spec=obj(size={"x-kubernetes-int-or-string": True}, name={"type": "string"}, mode={"type": "string"},
                         extra={"type": "string"}))
    assert schema_problems(hub, wider) == []
    narrower = obj(spec={**obj(size={"type": "string"}, mode={"type": "string", "enum": ["a"]}), "required": ["mode"]})
    assert schema_problems(hub, narrower) == [
        "spec.size: integer on the hub, string in the cluster",
        "spec.name: not in the cluster's schema (the cluster would drop it)",
        "spec.mode: the cluster allows only ['a']",
        "spec: the cluster requires mode"]
    assert schema_problems(hub, PERMISSIVE_SCHEMA) == []


def test_crd_problems_and_fingerprint():
    spec = {"group": "g.io", "scope": "Namespaced", "names": {"kind": "W", "plural": "ws"},
            "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                          "schema": {"openAPIV3Schema": {"type": "object", "description": "one"}}}]}
    same = json.loads(json.dumps(spec))
    same["versions"][0]["schema"]["openAPIV3Schema"]["description"] = "docs differ"
    assert schema_fingerprint(spec) == schema_fingerprint(same)
    other = json.loads(json.dumps(spec))
    other["scope"] = "Cluster"
    other["versions"][0]["name"] = "v2"
    assert crd_problems(spec, other) == ["scope Namespaced on the hub, Cluster in the cluster",
                                         "no version in common: hub v1; cluster v2"]


def test_project_and_differences():
    desired = {"spec": {"replicas": 3, "ports": [{"port": 80}]}, "metadata": {"labels": {"a": "1"}}}
    actual = {"spec": {"replicas": 5, "ports": [{"port": 80, "protocol": "TCP"}], "paused": False},
              "metadata": {"labels": {"a": "1", "added": "x"}}}
    assert project(actual, desired) == {"spec": {"replicas": 5, "ports": [{"port": 80}]}, "metadata": {"labels": {"a": "1"}}}
    assert differences(desired, project(actual, desired)) == ["spec.replicas: 3 on the hub, 5 in the cluster"]
    assert differences({"data": {"x": "1"}}, project({"data": {}}, {"data": {"x": "1"}})) == [
        'data.x: "1" on the hub, <missing> in the cluster']


def test_names():
    assert constants.label_value("root:org:dev") == "root.org.dev"
    long = "root:" + ":".join(["segment-name-long"] * 5)
    v = constants.label_value(long)
    assert len(v) <= 63 and v != constants.label_value(long + "x")
    assert constants.finalizer("us-west1") == "fleetplane.io/syncer-us-west1"
    fin = constants.finalizer("c" * 80)
    assert len(fin.split("/", 1)[1]) <= 63 and fin != constants.finalizer("c" * 81)
    assert constants.imported_from_label("us-west1") == "fleetplane.io/imported-from-us-west1"


def test_api_target_from_kubeconfig(tmp_path):
    ca = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n"
    (tmp_path / "ca.crt").write_text(ca)
    (tmp_path / "token").write_text("s3cr3t\n")
    cfg = {"apiVersion": "v1", "kind": "Config", "current-context": "a",
           "clusters": [{"name": "a", "cluster": {"server": "https://h:6443/clusters/team-a", "certificate-authority": "ca.crt"}},
                        {"name": "b", "cluster": {"server": "https://b:443", "insecure-skip-tls-verify": True}}],
           "users": [{"name": "u", "user": {"tokenFile": "token"}},
                     {"name": "c", "user": {"client-certificate-data": base64.b64encode(b"CERT").decode(),
                                            "client-key-data": base64.b64encode(b"KEY").decode()}}],
           "contexts": [{"name": "a", "context": {"cluster": "a", "user": "u"}},
                        {"name": "b", "context": {"cluster": "b", "user": "c"}}]}
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(cfg))
    a = ApiTarget.from_kubeconfig(path)
    assert (a.server, a.ca_data, a.token, a.logical_cluster) == ("https://h:6443/clusters/team-a", ca, "s3cr3t", "team-a")
    assert "s3cr3t" not in repr(a)
    assert a.for_logical_cluster("x").server == "https://h:6443/clusters/x"
    b = ApiTarget.from_kubeconfig(str(path), context="b")
    assert (b.insecure, b.client_cert_data, b.client_key_data, b.logical_cluster) == (True, "CERT", "KEY", None)
    with pytest.raises(ValueError, match="context 'zzz' not found"):
        ApiTarget.from_kubeconfig(cfg, context="zzz")
    with pytest.raises(ValueError, match="http"):
        ApiTarget(server="h:6443")


def test_kubeconfig_lists_merge_as_kubectl_merges_them(tmp_path):
    """``KUBECONFIG=a:b``: the first file naming an entry or setting current-context wins, a
    missing file is skipped, and relative file references stay relative to their own file."""
    first, second = tmp_path / "one", tmp_path / "sub"
    second.mkdir()
    (second / "token").write_text("from-second\n")
    first_doc = {"current-context": "hub",
                 "clusters": [{"name": "hub", "cluster": {"server": "https://first:6443/clusters/team-a",
                                                          "insecure-skip-tls-verify": True}}],
                 "contexts": [{"name": "hub", "context": {"cluster": "hub", "user": "admin"}}]}
    second_doc = {"current-context": "other",
                  "clusters": [{"name": "hub", "cluster": {"server": "https://second:6443"}}],
                  "users": [{"name": "admin", "user": {"tokenFile": "token"}}],
                  "contexts": [{"name": "other", "context": {"cluster": "hub", "user": "admin"}}]}
    first.write_text(yaml.safe_dump(first_doc))
    (second / "config").write_text(yaml.safe_dump(second_doc))
    paths = os.pathsep.join([str(first), str(tmp_path / "missing"), str(second / "config")])
    t = ApiTarget.from_kubeconfig(paths)
    assert (t.server, t.token, t.logical_cluster) == ("https://first:6443/clusters/team-a", "from-second", "team-a")
    with pytest.raises(ValueError, match="none of the kubeconfig files exists"):
        ApiTarget.from_kubeconfig(os.pathsep.join([str(tmp_path / "x"), str(tmp_path / "y")]))


async def test_work_queue():
    q = WorkQueue(base=0.01, cap=0.05)
    q.add("a")
    q.add("a")
    q.add("b")
    assert await q.get() == "a"
    q.add("a")  # while processing: once more afterwards, not concurrently
    assert await q.get() == "b"
    q.done("a")
    assert await q.get() == "a"
    q.done("a")
    q.done("b")
    assert q.retry("c") == 0.01 and q.retry("c") == 0.02
    assert await asyncio.wait_for(q.get(), 1) == "c"
    q.add("d")
    q.drop(lambda k: k == "d")
    q.add("e")
    assert await asyncio.wait_for(q.get(), 1) == "e"


def test_observed_generation_follows_the_hub():
    hub = {"metadata": {"generation": 7}, "status": {"observedGeneration": 6}}
    down = {"metadata": {"generation": 3, "annotations": {constants.SPEC_HASH_ANNOTATION: "h"}},
            "status": {"observedGeneration": 3, "readyReplicas": 2}}
    assert ObjectSync._status_for_hub(hub, down, "h") == {"observedGeneration": 7, "readyReplicas": 2}
    assert ObjectSync._status_for_hub(hub, down, "other")["observedGeneration"] == 6  # not caught up yet


def test_retain_rules_and_hpa_targets():
    with pytest.raises(ValueError):
        RetainRule("deployments.apps", "spec.replicas", when="sometimes")
    assert RetainRule("*", "spec.replicas").matches("anything.example.com")
    hpa = {"spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}}
    fake = SimpleNamespace(hpa=SimpleNamespace(cache={("demo", "web-hpa"): hpa}))
    w = SimpleNamespace(st=SimpleNamespace(down=SimpleNamespace(kind="Deployment", group="apps")))
    assert ObjectSync._hpa_targets(fake, w, {"metadata": {"namespace": "demo", "name": "web"}})
    assert not ObjectSync._hpa_targets(fake, w, {"metadata": {"namespace": "other", "name": "web"}})


def test_a_newer_watch_event_is_not_hidden_by_our_older_write():
    """The cluster's controller writes status right after our apply; its watch event can arrive
    before our apply's response is recorded. A reconcile must then see the newer status (it
    used to see our older write for 5 s, and with no later event the status never went up)."""
    from fleetplane.fleet.syncer.objectsync import TypeWorker

    def obj(rv: int, ready: int | None = None) -> dict:
        o: dict = {"metadata": {"namespace": "ns", "name": "web", "resourceVersion": str(rv)}}
        if ready is not None:
            o["status"] = {"readyReplicas": ready}
        return o

    w = TypeWorker.__new__(TypeWorker)
    w.written_hub, w.written_down = {}, {}
    w.hub_inf = SimpleNamespace(cache={})
    w.down_inf = SimpleNamespace(cache={})
    k = ("ns", "web")
    # watch: the controller's status update (rv 11) lands in the cache first ...
    w.down_inf.cache[k] = obj(11, ready=3)
    TypeWorker._settle(w.written_down, k, w.down_inf.cache[k])
    # ... then our apply's response (rv 10) is recorded
    w.wrote(obj(10), hub=False)
    assert w.current(k, hub=False)["status"] == {"readyReplicas": 3}
    # the usual order: our write is newer than the cache until the watch catches up
    w.wrote(obj(12, ready=1), hub=False)
    assert w.current(k, hub=False)["metadata"]["resourceVersion"] == "12"
    w.down_inf.cache[k] = obj(12, ready=1)
    assert w.current(k, hub=False) is w.down_inf.cache[k]
    assert w.current(("ns", "other"), hub=True) is None
