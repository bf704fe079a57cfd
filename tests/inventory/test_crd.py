"""The ClusterProfile CRD document: upstream's v1alpha1 schema (and v1alpha2 beside it, see
test_v1alpha2.py), rendered by us."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from fleetplane.inventory import CLUSTERPROFILE_CRD, clusterprofile_crd, crd_yaml


def version() -> dict:
    (v,) = [v for v in CLUSTERPROFILE_CRD["spec"]["versions"] if v["name"] == "v1alpha1"]
    return v


def schema() -> dict:
    return version()["schema"]["openAPIV3Schema"]


def test_file_and_dict_agree() -> None:
    path = Path(__file__).parents[2] / "src/fleetplane/inventory/clusterprofile-crd.yaml"
    assert yaml.safe_load(path.read_text()) == CLUSTERPROFILE_CRD
    assert yaml.safe_load(crd_yaml()) == CLUSTERPROFILE_CRD
    copy = clusterprofile_crd()
    copy["spec"]["names"]["kind"] = "Changed"
    assert CLUSTERPROFILE_CRD["spec"]["names"]["kind"] == "ClusterProfile"
    assert not re.search(r"(^|\s)&[\w-]", crd_yaml().split("apiVersion:", 1)[1])  # no YAML anchors: plain for every tool


def test_names_scope_versions() -> None:
    crd = CLUSTERPROFILE_CRD
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1" and crd["kind"] == "CustomResourceDefinition"
    assert crd["metadata"]["name"] == "clusterprofiles.multicluster.x-k8s.io"
    spec = crd["spec"]
    assert spec["group"] == "multicluster.x-k8s.io" and spec["scope"] == "Namespaced"
    assert {k: spec["names"][k] for k in ("kind", "listKind", "plural", "singular")} == {
        "kind": "ClusterProfile", "listKind": "ClusterProfileList", "plural": "clusterprofiles", "singular": "clusterprofile"}
    v = version()
    assert (v["name"], v["served"], v["storage"]) == ("v1alpha1", True, True)
    assert v["subresources"] == {"status": {}}


def test_printer_columns() -> None:
    cols = {c["name"]: c for c in version()["additionalPrinterColumns"]}
    assert list(cols) == ["Manager", "Version", "Healthy", "Age"]
    assert cols["Manager"]["jsonPath"] == ".spec.clusterManager.name"
    assert cols["Version"]["jsonPath"] == ".status.version.kubernetes"
    assert cols["Healthy"]["jsonPath"] == '.status.conditions[?(@.type=="ControlPlaneHealthy")].status'
    assert cols["Age"] == {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}


def test_spec_schema() -> None:
    s = schema()
    assert s["required"] == ["spec"]
    spec = s["properties"]["spec"]
    assert spec["required"] == ["clusterManager"]
    assert spec["properties"]["displayName"]["type"] == "string"
    cm = spec["properties"]["clusterManager"]
    assert cm["required"] == ["name"] and cm["properties"]["name"]["type"] == "string"
    (rule,) = cm["x-kubernetes-validations"]
    assert rule["rule"] == "self == oldSelf" and "immutable" in rule["message"]


def test_status_schema() -> None:
    st = schema()["properties"]["status"]["properties"]
    assert st["version"]["properties"]["kubernetes"]["type"] == "string"

    props = st["properties"]
    assert (props["x-kubernetes-list-type"], props["x-kubernetes-list-map-keys"]) == ("map", ["name"])
    item = props["items"]
    assert item["required"] == ["name", "value"]
    assert (item["properties"]["name"]["minLength"], item["properties"]["name"]["maxLength"]) == (1, 253)
    assert (item["properties"]["value"]["minLength"], item["properties"]["value"]["maxLength"]) == (1, 1024)
    assert item["properties"]["lastObservedTime"] == {**item["properties"]["lastObservedTime"], "type": "string", "format": "date-time"}

    conds = st["conditions"]
    assert (conds["x-kubernetes-list-type"], conds["x-kubernetes-list-map-keys"]) == ("map", ["type"])
    c = conds["items"]
    assert sorted(c["required"]) == ["lastTransitionTime", "message", "reason", "status", "type"]
    assert c["properties"]["status"]["enum"] == ["True", "False", "Unknown"]
    assert c["properties"]["observedGeneration"]["minimum"] == 0
    assert c["properties"]["reason"]["pattern"] == "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
    assert c["properties"]["message"]["maxLength"] == 32768 and c["properties"]["type"]["maxLength"] == 316

    for field in ("accessProviders", "credentialProviders"):
        ap = st[field]
        assert (ap["x-kubernetes-list-type"], ap["x-kubernetes-list-map-keys"]) == ("map", ["name"])
        item = ap["items"]
        assert item["required"] == ["name"]
        cluster = item["properties"]["cluster"]
        assert cluster["required"] == ["server"]
        fields = cluster["properties"]
        assert set(fields) == {"server", "tls-server-name", "insecure-skip-tls-verify", "certificate-authority",
                               "certificate-authority-data", "proxy-url", "disable-compression", "extensions"}
        assert fields["certificate-authority-data"] == {**fields["certificate-authority-data"], "type": "string", "format": "byte"}
        assert fields["insecure-skip-tls-verify"]["type"] == fields["disable-compression"]["type"] == "boolean"
        ext = fields["extensions"]["items"]
        assert sorted(ext["required"]) == ["extension", "name"]
        assert ext["properties"]["extension"]["x-kubernetes-preserve-unknown-fields"] is True
        assert "type" not in ext["properties"]["extension"]  # any JSON value (the KEP's additional-args is a list)
    assert st["accessProviders"]["items"] == st["credentialProviders"]["items"]
    assert "eprecated" in st["credentialProviders"]["description"]


def test_the_hub_accepts_it() -> None:
    from fleetplane.registry.crd import default_crd, validate_crd
    from fleetplane.registry.hub import system_types

    doc = clusterprofile_crd()
    default_crd(doc)
    assert validate_crd(doc) == []
    rt, v1alpha2 = system_types([CLUSTERPROFILE_CRD])
    # kube prefers the higher version in discovery: v1alpha2 (kubectl reads it), v1alpha1 stays stored
    assert (v1alpha2.version, v1alpha2.storage_version, v1alpha2.preferred, rt.preferred) == ("v1alpha2", "v1alpha1", True, False)
    assert (rt.group, rt.version, rt.kind, rt.plural, rt.namespaced) == (
        "multicluster.x-k8s.io", "v1alpha1", "ClusterProfile", "clusterprofiles", True)
    assert "status" in rt.subresources
    assert [c.name for c in rt.printer_columns] == ["Manager", "Version", "Healthy", "Age"]
