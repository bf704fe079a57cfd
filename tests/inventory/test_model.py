"""The typed ClusterProfile: exact round trips (every KEP example), conditions, properties, access."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta

import pytest
import yaml

from fleetplane.inventory import (
    AccessProvider,
    Cluster,
    ClusterProfile,
    ClusterProfileStatus,
    Condition,
    NamedExtension,
    ProfileFormatError,
    find_condition,
    set_condition,
)
from fleetplane.inventory.constants import EXTENSION_EXEC

from . import kep_examples as kep


def roundtrip(doc: dict) -> dict:
    return ClusterProfile.from_dict(doc).to_dict()


@pytest.mark.parametrize("name", sorted(kep.ALL_PROFILES))
def test_every_kep_example_round_trips_exactly(name: str) -> None:
    doc = yaml.safe_load(kep.ALL_PROFILES[name])
    out = roundtrip(doc)
    assert out == doc
    # byte for byte: same keys, same order, same values
    assert json.dumps(out) == json.dumps(doc)
    # and again through JSON, as it comes off the wire
    wire = json.loads(json.dumps(doc))
    assert json.dumps(roundtrip(wire)) == json.dumps(wire)


def test_kep_extensions_fragment_round_trips() -> None:
    fragment = yaml.safe_load(kep.EXTENSIONS_FRAGMENT)
    cluster = Cluster.from_dict({"server": "https://spoke", **fragment})
    assert cluster.extension(EXTENSION_EXEC) == {"clusterName": "spoke-1"}
    assert cluster.to_dict() == {"server": "https://spoke", **fragment}


def test_elided_kep_examples_are_not_yaml() -> None:
    # documents why the tests use the *_COMPLETED variants
    for given, _ in kep.ELIDED_EXAMPLES.values():
        with pytest.raises(yaml.YAMLError):
            yaml.safe_load(given)


def test_typed_access_to_kep_api_example() -> None:
    cp = ClusterProfile.from_dict(yaml.safe_load(kep.API_EXAMPLE))
    assert cp.name == "generated-cluster-name"
    assert cp.manager == "some-cluster-manager"
    assert cp.display_name == "cluster-us-east"
    assert cp.kubernetes_version == "1.28.0"
    assert cp.properties == {"clusterset.k8s.io": "some-clusterset", "location": "apac"}
    assert cp.location == "apac"
    assert cp.clusterset() == "some-clusterset"
    # the KEP writes `status: True` unquoted: YAML makes it a boolean; it is kept as given ...
    assert cp.condition("ControlPlaneHealthy").status is True
    assert cp.to_dict()["status"]["conditions"][0]["status"] is True
    # ... and read leniently
    assert cp.is_ready() and cp.is_joined()


def test_dashed_keys_and_extensions() -> None:
    cp = ClusterProfile.from_dict(yaml.safe_load(kep.EXEC_EXTENSION_EXAMPLE))
    (ap,) = cp.access_providers()
    assert ap.name == "secretreader"
    assert ap.cluster.server == "https://<spoke-server>"
    assert ap.cluster.certificate_authority_data == "<BASE64_CA>"
    assert ap.cluster.extension(EXTENSION_EXEC) == {"clusterName": "spoke-1"}
    c = Cluster(server="https://x", tls_server_name="api.internal", insecure_skip_tls_verify=False,
                proxy_url="socks5://p:1080", disable_compression=True)
    c.set_ca_pem(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    c.set_extension(EXTENSION_EXEC, {"clusterName": "a"})
    c.set_extension(EXTENSION_EXEC, {"clusterName": "b"})
    d = c.to_dict()
    assert list(d) == ["server", "tls-server-name", "insecure-skip-tls-verify", "certificate-authority-data",
                       "proxy-url", "disable-compression", "extensions"]
    assert d["insecure-skip-tls-verify"] is False  # set explicitly: kept (only None is absent)
    assert d["extensions"] == [{"name": EXTENSION_EXEC, "extension": {"clusterName": "b"}}]
    assert c.ca_pem().startswith(b"-----BEGIN CERTIFICATE-----")
    assert base64.b64decode(d["certificate-authority-data"]) == c.ca_pem()
    with pytest.raises(ValueError, match="base64"):
        Cluster(server="x", certificate_authority_data="<BASE64_CA>").ca_pem()


def test_absent_not_null() -> None:
    cp = ClusterProfile.new("c1", "mgr", namespace="ns")
    d = cp.to_dict()
    assert d == {"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile",
                 "metadata": {"name": "c1", "namespace": "ns", "labels": {"x-k8s.io/cluster-manager": "mgr"}},
                 "spec": {"clusterManager": {"name": "mgr"}}}
    assert "null" not in json.dumps(d)
    # Go writes nil conditions and zero times as null; they read as absent and are not written back
    go = {"spec": {"clusterManager": {"name": "m"}},
          "status": {"conditions": None, "version": {}, "properties": [{"name": "a", "value": "b", "lastObservedTime": None}]}}
    out = roundtrip(go)
    assert out == {"spec": {"clusterManager": {"name": "m"}},
                   "status": {"version": {}, "properties": [{"name": "a", "value": "b"}]}}


def test_unknown_fields_preserved_everywhere() -> None:
    doc = {
        "apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile", "zzz": [1, None],
        "metadata": {"name": "x", "anything": {"goes": True}},
        "spec": {"clusterManager": {"name": "m", "future": 1}, "newSpecField": "v"},
        "status": {
            "version": {"kubernetes": "1.30.1", "kubelet": "1.29"},
            "conditions": [{"type": "Joined", "status": "True", "reason": "R", "message": "", "lastTransitionTime": "2024-01-01T00:00:00Z", "x": {}}],
            "properties": [{"name": "a", "value": "b", "unit": "none"}],
            "accessProviders": [{"name": "p", "cluster": {"server": "https://s", "certificate-authority": "/ca", "new-field": 3,
                                                          "extensions": [{"name": "e", "extension": [1, {"k": None}], "more": 1}]},
                                 "extra": "y"}],
            "credentialProviders": [{"name": "old", "cluster": {"server": "https://t"}}],
            "newStatusField": {"a": None},
        },
    }
    out = roundtrip(doc)
    assert json.dumps(out) == json.dumps(doc)
    cp = ClusterProfile.from_dict(doc)
    assert cp.extra == {"zzz": [1, None]}
    assert cp.status.extra == {"newStatusField": {"a": None}}
    # mutating the model never aliases the input
    cp.status.access_providers[0].cluster.extensions[0].extension.append(2)
    assert doc["status"]["accessProviders"][0]["cluster"]["extensions"][0]["extension"] == [1, {"k": None}]


def test_new_fields_go_after_known_order() -> None:
    cp = ClusterProfile.from_dict({"status": {"zeta": 1}, "spec": {"clusterManager": {"name": "m"}}, "kind": "ClusterProfile"})
    cp.kubernetes_version = "1.31.0"
    cp.api_version = "multicluster.x-k8s.io/v1alpha1"
    d = cp.to_dict()
    assert list(d) == ["status", "spec", "kind", "apiVersion"]
    assert list(d["status"]) == ["zeta", "version"]


def test_shape_errors() -> None:
    with pytest.raises(ProfileFormatError, match="status: expected an object"):
        ClusterProfile.from_dict({"status": []})
    with pytest.raises(ProfileFormatError, match=r"status.conditions: expected a list"):
        ClusterProfile.from_dict({"status": {"conditions": {}}})
    with pytest.raises(ProfileFormatError, match=r"status.accessProviders\[0\].cluster: expected an object"):
        ClusterProfile.from_dict({"status": {"accessProviders": [{"name": "a", "cluster": "x"}]}})


def test_copy_is_deep() -> None:
    cp = ClusterProfile.from_dict(yaml.safe_load(kep.GKE_EXAMPLE))
    other = cp.copy()
    assert other == cp and other is not cp
    other.set_property("location", "elsewhere")
    assert cp.location == "us-central1"


# -- conditions -----------------------------------------------------------------------------------

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> datetime:
        return self.t


def test_set_condition_transition_time_moves_only_on_status_change() -> None:
    clock = Clock()
    cp = ClusterProfile.new("c", "m", namespace="n")
    cp.metadata["generation"] = 3
    assert cp.set_condition("ControlPlaneHealthy", True, "Healthy", "all good", now=clock)
    c = cp.condition("ControlPlaneHealthy")
    assert c.to_dict() == {"type": "ControlPlaneHealthy", "status": "True", "observedGeneration": 3,
                           "lastTransitionTime": "2024-05-01T12:00:00Z", "reason": "Healthy", "message": "all good"}
    assert cp.is_ready()

    clock.t += timedelta(minutes=5)
    assert not cp.set_condition("ControlPlaneHealthy", "True", "Healthy", "all good", now=clock)  # no change at all
    assert cp.set_condition("ControlPlaneHealthy", "True", "StillHealthy", "fine", now=clock)  # reason/message only
    assert c.last_transition_time == "2024-05-01T12:00:00Z"
    assert (c.reason, c.message) == ("StillHealthy", "fine")

    clock.t += timedelta(minutes=5)
    assert cp.set_condition("ControlPlaneHealthy", False, "APIServerDown", "healthz failed", now=clock)
    assert c.last_transition_time == "2024-05-01T12:10:00Z"
    assert not cp.is_ready()

    cp.metadata["generation"] = 4
    clock.t += timedelta(minutes=5)
    assert cp.set_condition("ControlPlaneHealthy", False, "APIServerDown", "healthz failed", now=clock)  # generation only
    assert c.observed_generation == 4 and c.last_transition_time == "2024-05-01T12:10:00Z"

    assert cp.set_condition("Joined", "Unknown", "Pending", observed_generation=None, now=clock)
    assert "observedGeneration" not in cp.condition("Joined").to_dict()
    assert [x.type for x in cp.conditions] == ["ControlPlaneHealthy", "Joined"]
    assert cp.remove_condition("Joined") and not cp.remove_condition("Joined")
    with pytest.raises(ValueError):
        cp.set_condition("Joined", "yes", "R")


def test_set_condition_list_helper_and_explicit_time() -> None:
    conds: list[Condition] = []
    assert set_condition(conds, Condition(type="Joined", status="True", reason="Joined",
                                          last_transition_time="2023-01-01T00:00:00Z"), now=T0)
    assert conds[0].last_transition_time == "2023-01-01T00:00:00Z"
    assert conds[0].message == ""  # message is required by metav1.Condition: always written
    assert set_condition(conds, Condition(type="Joined", status="False", reason="Left"), now=T0 + timedelta(seconds=1))
    assert conds[0].last_transition_time == "2024-05-01T12:00:01Z"
    assert find_condition(conds, "Joined") is conds[0] and find_condition(conds, "Nope") is None
    with pytest.raises(ValueError):
        set_condition(conds, Condition(status="True"))


def test_is_ready_requires_control_plane_healthy_true() -> None:
    cp = ClusterProfile.new("c", "m")
    assert not cp.is_ready()
    cp.set_condition("Joined", True, "Joined", now=T0)
    assert not cp.is_ready()
    cp.set_condition("ControlPlaneHealthy", "Unknown", "NoHeartbeat", now=T0)
    assert not cp.is_ready()
    cp.set_condition("ControlPlaneHealthy", "True", "Healthy", now=T0)
    assert cp.is_ready()


# -- properties and access ---------------------------------------------------------------------


def test_properties() -> None:
    cp = ClusterProfile.new("c", "m")
    assert cp.set_property("location", "us-east-1", observed=T0)
    assert not cp.set_property("location", "us-east-1", observed=T0)
    assert cp.set_property("location", "us-east-1", observed=T0 + timedelta(seconds=30))
    assert cp.status.properties[0].to_dict() == {"name": "location", "value": "us-east-1", "lastObservedTime": "2024-05-01T12:00:30Z"}
    cp.set_property("id.k8s.io", "uid-1")
    cp.set_property("crd.fleetplane.io/widgets.example.com", "v1, v1beta1")
    assert cp.cluster_id == "uid-1"
    assert cp.installed_crds() == {"widgets.example.com": ["v1", "v1beta1"]}
    assert cp.has_crd("widgets.example.com") and cp.has_crd("widgets.example.com", "v1beta1")
    assert not cp.has_crd("widgets.example.com", "v2") and not cp.has_crd("gadgets.example.com")
    assert cp.remove_property("id.k8s.io") and cp.cluster_id is None
    cp.set_property("cluster.clusterset.k8s.io", "legacy-id")
    assert cp.cluster_id == "legacy-id"


def test_clusterset_sources() -> None:
    cp = ClusterProfile.new("c", "m")
    assert cp.clusterset() is None
    cp.set_property("clusterset.k8s.io", "from-property")
    assert cp.clusterset() == "from-property"
    cp.labels["multicluster.x-k8s.io/clusterset"] = "from-label"
    assert cp.clusterset() == "from-label"
    assert cp.clusterset({"clusterset.multicluster.x-k8s.io": "from-namespace"}) == "from-namespace"


def test_access_providers_merge_deprecated_credential_providers() -> None:
    cp = ClusterProfile.from_dict({"status": {
        "credentialProviders": [{"name": "a", "cluster": {"server": "https://old-a"}},
                                {"name": "b", "cluster": {"server": "https://old-b"}}],
        "accessProviders": [{"name": "a", "cluster": {"server": "https://new-a"}}]}})
    assert {ap.name: ap.cluster.server for ap in cp.access_providers()} == {"a": "https://new-a", "b": "https://old-b"}
    assert cp.access_provider("b").cluster.server == "https://old-b"
    assert cp.access_provider("c") is None
    cp.set_access_provider(AccessProvider(name="a", cluster=Cluster(server="https://newer-a")))
    cp.set_access_provider(AccessProvider(name="c", cluster=Cluster(
        server="https://c", extensions=[NamedExtension(name=EXTENSION_EXEC, extension={"clusterName": "c"})])))
    assert [ap.name for ap in cp.status.access_providers] == ["a", "c"]
    assert cp.to_dict()["status"]["accessProviders"][1] == {
        "name": "c", "cluster": {"server": "https://c", "extensions": [{"name": EXTENSION_EXEC, "extension": {"clusterName": "c"}}]}}


def test_status_model_to_dict_for_the_writer() -> None:
    st = ClusterProfileStatus()
    assert st.to_dict() == {}
    cp = ClusterProfile.new("c", "m")
    cp.kubernetes_version = "1.32.1"
    cp.set_condition("ControlPlaneHealthy", True, "Healthy", now=T0)
    assert cp.status.to_dict() == {
        "version": {"kubernetes": "1.32.1"},
        "conditions": [{"type": "ControlPlaneHealthy", "status": "True", "lastTransitionTime": "2024-05-01T12:00:00Z",
                        "reason": "Healthy", "message": ""}]}
