"""ClusterProfile v1alpha2 (cluster-inventory-api v0.2.0) served beside v1alpha1, the storage
version: upstream's v1alpha2 schema and CEL rules, the inventory's in-process converter (lossless
round trips: v1alpha1-only fields kept in an annotation), every verb in v1alpha2 on a real hub,
``fleetplane inventory check`` over both versions and the access library reading both shapes."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from fleetplane.access.profile import collect_access_providers
from fleetplane.inventory import (
    API_VERSION,
    API_VERSION_V1ALPHA2,
    CLUSTERPROFILE_CRD,
    V1ALPHA1_FIELDS_ANNOTATION,
    convert_profile,
)
from fleetplane.inventory.conformance import FAIL, PASS, WARN, check_v1alpha2, check_versions

from ..hub.test_watch import Stream
from .conftest import Inventory, ca_data

pytestmark = pytest.mark.timeout(180)

V1 = "clusterprofiles.v1alpha1.multicluster.x-k8s.io"
V2 = "clusterprofiles.v1alpha2.multicluster.x-k8s.io"


def v1alpha1_profile(name: str = "c1", **status: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": "ClusterProfile",
            "metadata": {"name": name, "namespace": "fleet", "labels": {"x-k8s.io/cluster-manager": "fleet"}},
            "spec": {"clusterManager": {"name": "fleet"}, "displayName": "Cluster One"},
            "status": {"accessProviders": [{"name": "secretreader", "cluster": {
                "server": "https://one.example.dev:6443", "certificate-authority": "/etc/ca.pem"}}], **status}}


LEGACY = [{"name": "google", "cluster": {"server": "https://legacy.example.dev"}}]


def v2_schema() -> dict[str, Any]:
    (v,) = [v for v in CLUSTERPROFILE_CRD["spec"]["versions"] if v["name"] == "v1alpha2"]
    schema: dict[str, Any] = v["schema"]["openAPIV3Schema"]
    return schema


# -- the converter, the schema, the kit and the access library, in-process ---------------------------


def test_v1alpha1_to_v1alpha2_and_back_is_lossless() -> None:
    original = v1alpha1_profile(credentialProviders=LEGACY)
    v2 = convert_profile(original, API_VERSION_V1ALPHA2)
    assert v2["apiVersion"] == API_VERSION_V1ALPHA2
    assert "credentialProviders" not in v2["status"]
    assert v2["status"]["accessProviders"] == [{"name": "secretreader", "cluster": {"server": "https://one.example.dev:6443"}}]
    kept = json.loads(v2["metadata"]["annotations"][V1ALPHA1_FIELDS_ANNOTATION])
    assert kept == {"credentialProviders": LEGACY, "certificate-authority": {"secretreader": "/etc/ca.pem"}}
    assert original["status"]["credentialProviders"] == LEGACY  # the input is never changed
    assert convert_profile(v2, API_VERSION) == original
    # nothing v1alpha1-only: no annotation at all
    plain = v1alpha1_profile()
    del plain["status"]["accessProviders"][0]["cluster"]["certificate-authority"]
    assert "annotations" not in convert_profile(plain, API_VERSION_V1ALPHA2)["metadata"]


def test_a_bad_annotation_restores_nothing_unvalidated() -> None:
    v2 = convert_profile(v1alpha1_profile(), API_VERSION_V1ALPHA2)
    v2["metadata"]["annotations"][V1ALPHA1_FIELDS_ANNOTATION] = "{not json"
    back = convert_profile(v2, API_VERSION)
    assert "credentialProviders" not in back["status"] and "annotations" not in back["metadata"]
    v2["metadata"]["annotations"][V1ALPHA1_FIELDS_ANNOTATION] = json.dumps(
        {"credentialProviders": [{"cluster": {}}, {"name": "ok"}]})
    assert convert_profile(v2, API_VERSION)["status"]["credentialProviders"] == [{"name": "ok"}]
    with pytest.raises(ValueError, match="cannot convert"):
        convert_profile({**v2, "apiVersion": "multicluster.x-k8s.io/v9"}, API_VERSION)


def test_the_v1alpha2_schema_is_upstreams() -> None:
    s = v2_schema()
    status = s["properties"]["status"]["properties"]
    assert "credentialProviders" not in status
    aps = status["accessProviders"]
    assert aps["maxItems"] == 64 and aps["items"]["required"] == ["name", "cluster"]
    cluster = aps["items"]["properties"]["cluster"]
    assert cluster["required"] == ["server"] and "certificate-authority" not in cluster["properties"]
    assert set(cluster["properties"]) == {"server", "tls-server-name", "insecure-skip-tls-verify",
                                          "certificate-authority-data", "proxy-url", "disable-compression", "extensions"}
    assert cluster["properties"]["extensions"]["x-kubernetes-list-type"] == "map"
    name = s["properties"]["spec"]["properties"]["clusterManager"]["properties"]["name"]
    assert (name["minLength"], name["maxLength"]) == (1, 63)
    assert name["x-kubernetes-validations"] == [{"rule": "!format.labelValue().validate(self).hasValue()",
                                                 "message": "must be a valid Kubernetes label value"}]


def test_the_kit_checks_both_versions() -> None:
    assert check_versions(["v1alpha1"])[0].outcome == WARN
    assert check_versions(["v1alpha1", "v1alpha2"])[0].outcome == PASS
    v1 = v1alpha1_profile(credentialProviders=LEGACY)
    v2 = convert_profile(v1, API_VERSION_V1ALPHA2)
    assert [(r.rule, r.outcome) for r in check_v1alpha2([v1], [v2])] == [("v1alpha2-shape", PASS), ("versions-agree", PASS)]
    bad = json.loads(json.dumps(v2))
    bad["status"]["accessProviders"] = [{"name": f"p{i}", "cluster": {"server": "no-host"}} for i in range(65)]
    shape, agree = check_v1alpha2([v1], [bad])
    assert shape.outcome == FAIL and "Too many: 65: must have at most 64 items" in shape.message
    assert "server must be a valid absolute URL with a host" in shape.message
    assert agree.outcome == FAIL and "status" in agree.message
    assert check_v1alpha2([], [v2])[1].outcome == FAIL


def test_the_access_library_reads_both_shapes() -> None:
    v1 = v1alpha1_profile(credentialProviders=LEGACY)
    assert set(collect_access_providers(v1)) == {"google", "secretreader"}
    v2 = convert_profile(v1, API_VERSION_V1ALPHA2)
    assert set(collect_access_providers(v2)) == {"secretreader"}
    # a v1alpha2 object has no credentialProviders: whatever is there is not read (upstream v0.2.0)
    assert set(collect_access_providers({**v2, "status": {**v2["status"], "credentialProviders": LEGACY}})) == {"secretreader"}


# -- on the hub ----------------------------------------------------------------------------------------


def stored_profile(inventory: Inventory, ns: str, name: str = "one") -> None:
    """A v1alpha1 profile with credentialProviders and a CA file path, as an older manager writes it."""
    k = inventory.kubectl_in(ns)
    k("apply", "-f", "-", stdin=yaml.safe_dump({"apiVersion": API_VERSION, "kind": "ClusterProfile",
                                                "metadata": {"name": name},
                                                "spec": {"clusterManager": {"name": "fleet"}, "displayName": "One"}}))
    status = {"status": {"version": {"kubernetes": "1.33.1"},
                         "conditions": [{"type": "ControlPlaneHealthy", "status": "True", "reason": "Healthy",
                                         "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                         "credentialProviders": LEGACY,
                         "accessProviders": [{"name": "secretreader", "cluster": {
                             "server": "https://one.example.dev:6443", "certificate-authority-data": ca_data(),
                             "certificate-authority": "/etc/ca.pem"}}]}}
    k("patch", V1, name, "--subresource=status", "--type=merge", "-p", json.dumps(status))


def test_read_in_v1alpha2_written_in_v1alpha2_stored_as_v1alpha1(inventory: Inventory) -> None:
    ns = inventory.namespace()
    k = inventory.kubectl_in(ns)
    stored_profile(inventory, ns)
    v2 = k.get_json(V2, "one")
    assert v2["apiVersion"] == API_VERSION_V1ALPHA2
    assert "credentialProviders" not in v2["status"]
    assert "certificate-authority" not in v2["status"]["accessProviders"][0]["cluster"]
    assert json.loads(v2["metadata"]["annotations"][V1ALPHA1_FIELDS_ANNOTATION])["credentialProviders"] == LEGACY
    # kubectl's plain name is the preferred version, v1alpha2, with upstream's v1alpha2 columns
    rows = k("get", "clusterprofiles").out.splitlines()
    assert rows[0].split() == ["NAME", "DISPLAY", "NAME", "MANAGER", "VERSION", "HEALTHY", "AGE"]
    assert rows[1].split()[:5] == ["one", "One", "fleet", "1.33.1", "True"]
    # a v1alpha2 status patch (merge) adds a provider; the stored credentialProviders stay
    add = {"status": {"accessProviders": [*v2["status"]["accessProviders"],
                                          {"name": "token", "cluster": {"server": "https://two.example.dev"}}]}}
    k("patch", V2, "one", "--subresource=status", "--type=merge", "-p", json.dumps(add))
    v1 = k.get_json(V1, "one")
    assert v1["status"]["credentialProviders"] == LEGACY
    assert [ap["name"] for ap in v1["status"]["accessProviders"]] == ["secretreader", "token"]
    assert v1["status"]["accessProviders"][0]["cluster"]["certificate-authority"] == "/etc/ca.pem"
    assert V1ALPHA1_FIELDS_ANNOTATION not in (v1["metadata"].get("annotations") or {})
    # a v1alpha2 write without the annotation drops them, as the annotation said it would
    got = k.get_json(V2, "one")
    del got["metadata"]["annotations"][V1ALPHA1_FIELDS_ANNOTATION]
    k("replace", "-f", "-", stdin=json.dumps(got))
    v1 = k.get_json(V1, "one")
    assert "credentialProviders" not in v1["status"]
    assert "certificate-authority" not in v1["status"]["accessProviders"][0]["cluster"]


def test_server_side_apply_and_watch_in_v1alpha2(inventory: Inventory) -> None:
    ns = inventory.namespace()
    k = inventory.kubectl_in(ns)
    path = f"/clusters/{inventory.cluster}/apis/multicluster.x-k8s.io/v1alpha2/namespaces/{ns}/clusterprofiles"
    stream = Stream(inventory.hub, path + "?watch=true")
    try:
        manifest = {"apiVersion": API_VERSION_V1ALPHA2, "kind": "ClusterProfile", "metadata": {"name": "applied"},
                    "spec": {"clusterManager": {"name": "fleet"}, "displayName": "Applied"}}
        k("apply", "--server-side", "-f", "-", stdin=json.dumps(manifest))
        events = stream.wait(1, 20)
        assert events[0]["type"] == "ADDED" and events[0]["object"]["apiVersion"] == API_VERSION_V1ALPHA2
        assert events[0]["object"]["metadata"]["labels"]["x-k8s.io/cluster-manager"] == "fleet"
        stored_profile(inventory, ns, "legacy")
        legacy = [e for e in stream.wait(3, 20) if e["object"]["metadata"]["name"] == "legacy"]
        assert all(e["object"]["apiVersion"] == API_VERSION_V1ALPHA2 for e in legacy)
        assert "credentialProviders" not in legacy[-1]["object"]["status"]
    finally:
        stream.close()
    assert k.get_json(V1, "applied")["spec"]["displayName"] == "Applied"
    listed = k.get_json(V2)
    assert listed["apiVersion"] == API_VERSION_V1ALPHA2 or listed["kind"] == "List"
    assert {i["apiVersion"] for i in listed["items"]} == {API_VERSION_V1ALPHA2}


@pytest.mark.parametrize(("change", "message"), [
    ({"spec": {"clusterManager": {"name": "has space"}}},
     'spec.clusterManager.name: Invalid value: "string": must be a valid Kubernetes label value'),
    ({"status": {"accessProviders": [{"name": "p", "cluster": {"server": "no-host"}}]}},
     'status.accessProviders[0].cluster.server: Invalid value: "string": server must be a valid absolute URL with a host'),
    ({"status": {"accessProviders": [{"name": "p", "cluster": {"server": "https://h", "proxy-url": "ftp://proxy"}}]}},
     "status.accessProviders[0].cluster.proxy-url: Invalid value: \"string\": proxy-url must be a valid URL with scheme "
     "http, https, or socks5 and a host"),
    ({"status": {"accessProviders": [{"name": "p"}]}}, "status.accessProviders[0].cluster: Required value"),
    ({"status": {"accessProviders": [{"name": f"p{i}", "cluster": {"server": "https://h"}} for i in range(65)]}},
     "status.accessProviders: Too many: 65: must have at most 64 items"),
    ({"status": {"accessProviders": [{"name": "p", "cluster": {"server": "https://h", "extensions": [
        {"name": "e", "extension": {}}, {"name": "e", "extension": {}}]}}]}},
     'status.accessProviders[0].cluster.extensions[1]: Duplicate value: {"name":"e"}'),
    ({"metadata": {"labels": {"multicluster.x-k8s.io/inventory-member-id": ""}}},
     'metadata.labels[multicluster.x-k8s.io/inventory-member-id]: Invalid value: "": must be non-empty when set'),
])
def test_v1alpha2_validation_messages(inventory: Inventory, change: dict, message: str) -> None:
    ns = inventory.namespace()
    code, out = inventory.hub.json(
        "POST", f"/clusters/{inventory.cluster}/apis/multicluster.x-k8s.io/v1alpha2/namespaces/{ns}/clusterprofiles",
        {"apiVersion": API_VERSION_V1ALPHA2, "kind": "ClusterProfile",
         "metadata": {"name": "bad", **change.get("metadata", {})},
         "spec": change.get("spec", {"clusterManager": {"name": "fleet"}}), **({"status": change["status"]} if "status" in change else {})})
    if "status" in change:  # status is the subresource's: the create keeps none of it, the status write checks it
        assert code == 201, out
        body = {**out, "status": change["status"]}
        code, out = inventory.hub.json("PUT", f"/clusters/{inventory.cluster}/apis/multicluster.x-k8s.io/v1alpha2/"
                                       f"namespaces/{ns}/clusterprofiles/bad/status", body)
    assert code == 422, out
    assert out["reason"] == "Invalid" and message in out["message"], out["message"]


def test_inventory_check_passes_on_both_versions(inventory: Inventory) -> None:
    ns = inventory.namespace()
    stored_profile(inventory, ns)
    r = inventory.check("--namespace", ns, "-o", "json")
    results = json.loads(r.out)["results"]
    outcome = {(x["subject"], x["rule"]): x["outcome"] for x in results}
    assert outcome[("clusterprofiles.multicluster.x-k8s.io", "v1alpha2-served")] == PASS
    assert outcome[(f"{ns}/one", "v1alpha2-shape")] == PASS
    assert outcome[(f"{ns}/one", "versions-agree")] == PASS


def test_the_manager_is_immutable_in_v1alpha2(inventory: Inventory) -> None:
    ns = inventory.namespace()
    base = f"/clusters/{inventory.cluster}/apis/multicluster.x-k8s.io/v1alpha2/namespaces/{ns}/clusterprofiles"
    code, out = inventory.hub.json("POST", base, {"apiVersion": API_VERSION_V1ALPHA2, "kind": "ClusterProfile",
                                                  "metadata": {"name": "m"}, "spec": {"clusterManager": {"name": "fleet"}}})
    assert code == 201, out
    code, out = inventory.hub.json("PATCH", f"{base}/m", {"spec": {"clusterManager": {"name": "other"}}},
                                   content_type="application/merge-patch+json")
    assert code == 422, out
    assert 'spec.clusterManager: Invalid value: "object": ClusterManager is immutable' in out["message"], out["message"]
