"""The Cluster controller's pure parts: kubeconfig parsing, health folding, profile content, manifests."""

from __future__ import annotations

import base64

import pytest
import yaml

from fleetplane.fleet.cluster import profile as inv
from fleetplane.fleet.cluster.probe import ClusterReport
from fleetplane.fleet.cluster.pull import logical_cluster_of, render_manifests
from fleetplane.fleet.cluster.syncer import synced_condition, type_entries
from fleetplane.inventory import admit
from fleetplane.inventory.model import Condition
from fleetplane.kube.kubeconfig import ApiTarget, KubeconfigError, hub_base, parse_kubeconfig

CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
CA_DATA = base64.b64encode(CA.encode()).decode()


def kc(**user) -> dict:
    return {"apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "c", "cluster": {"server": "https://10.0.0.1:6443", "certificate-authority-data": CA_DATA}}],
            "users": [{"name": "u", "user": user or {"token": "t0k"}}],
            "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u", "namespace": "apps"}}],
            "current-context": "ctx"}


def test_parse_kubeconfig_reads_a_context() -> None:
    ep = parse_kubeconfig(yaml.safe_dump(kc()))
    assert (ep.server, ep.token, ep.namespace, ep.ca_pem) == ("https://10.0.0.1:6443", "t0k", "apps", CA.encode())
    again = parse_kubeconfig(ep.to_kubeconfig("x"))
    assert again == ep


def test_the_seeds_shape_without_contexts_uses_its_only_cluster_and_user() -> None:
    doc = kc()
    del doc["contexts"], doc["current-context"]
    ep = parse_kubeconfig(doc)
    assert ep.server == "https://10.0.0.1:6443" and ep.token == "t0k" and ep.namespace is None


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.update({"current-context": "nope"}), "context 'nope' not found (contexts: ctx)"),
    (lambda d: d["clusters"][0]["cluster"].update({"server": "ftp://x"}), "is not an http(s) URL with a host"),
    (lambda d: d["clusters"][0]["cluster"].update({"server": "https://x:99999"}), "has an invalid port"),
    (lambda d: d["clusters"][0]["cluster"].update({"certificate-authority-data": "!!"}), "is not valid base64"),
    (lambda d: d["users"][0]["user"].update({"tokenFile": "/t", "token": None}), "tokenFile refers to a file"),
    (lambda d: d["users"][0].update({"user": {"client-certificate-data": CA_DATA}}),
     "needs both client-certificate-data and client-key-data (client-key-data is missing)"),
    (lambda d: d["users"][0].update({"user": {"username": "a", "password": "b"}}), "basic authentication"),
    (lambda d: d["users"][0].update({"user": {"auth-provider": {"name": "gcp"}}}), "auth-provider: credential plugins"),
    (lambda d: d.update({"clusters": []}), "the kubeconfig has no clusters"),
    (lambda d: d.update({"kind": "Pod"}), 'kind must be "Config"'),
])
def test_bad_kubeconfigs(mutate, message) -> None:
    doc = kc()
    mutate(doc)
    with pytest.raises(KubeconfigError) as err:
        parse_kubeconfig(doc)
    assert message in str(err.value)
    assert "t0k" not in str(err.value)


def test_kubeconfig_text_problems() -> None:
    with pytest.raises(KubeconfigError, match="empty"):
        parse_kubeconfig("  ")
    with pytest.raises(KubeconfigError, match="must be a YAML object"):
        parse_kubeconfig("- a\n- b\n")


def test_unknown_user_fields_are_notes_when_credentials_exist() -> None:
    ep = parse_kubeconfig(kc(token="t", **{"client-data-key": "x"}))
    assert ep.notes == ("users[u].user: unknown field 'client-data-key' (did you mean 'client-key-data'?)",)


def test_hub_urls() -> None:
    assert hub_base("https://h:6443/clusters/root") == "https://h:6443"
    assert hub_base("https://h:6443/prefix/clusters/team-a/") == "https://h:6443/prefix"
    assert hub_base("https://h:6443") == "https://h:6443"
    assert logical_cluster_of("https://h/clusters/root:org") == "root:org"
    assert logical_cluster_of("https://h") == "root"
    assert logical_cluster_of("https://h/clusters/x", "y") == "y"


def test_syncer_health_folding() -> None:
    base = {"connected": True, "types_synced": True, "reason": "Synced",
            "message": "4 type(s) and 17 object(s) in sync", "types": ["deployments.v1.apps", "configmaps.v1"]}
    assert synced_condition(base) == (True, "Synced", "2 types in sync")  # no counters: no status churn
    assert synced_condition({**base, "connected": False, "reason": "ClusterUnreachable", "message": "m"}) == (
        False, "ClusterUnreachable", "m")
    failed = {**base, "types_synced": False, "reason": "TypeImportFailed", "message": "widgets.example.com: bad",
              "type_errors": {"widgets.example.com": "bad schema"}}
    assert synced_condition(failed) == (False, "TypeImportFailed", "widgets.example.com: bad")
    assert synced_condition({**base, "reason": "ObjectsFailed", "message": "1 object(s) failed"})[0] is True
    assert type_entries(failed) == [
        {"resource": "configmaps", "version": "v1", "state": "Synced"},
        {"resource": "deployments", "version": "v1", "group": "apps", "state": "Synced"},
        {"resource": "widgets", "group": "example.com", "state": "Failed", "message": "bad schema"},
    ]


def cluster_obj(**spec) -> dict:
    return {"apiVersion": "cluster.example.dev/v1alpha1", "kind": "Cluster",
            "metadata": {"name": "east", "namespace": "fleet", "uid": "u-1", "labels": {"env": "prod", "team": "a"}},
            "spec": spec}


def test_profile_properties_and_access_provider_carry_no_secret() -> None:
    ep = parse_kubeconfig(kc())
    report = ClusterReport(connected=True, version="v1.31.2", allocatable={"cpu": "7.5", "memory": "1024", "pods": "110"},
                           nodes=3, cluster_id="ks-uid", properties={"location": "from-the-cluster", "id.k8s.io": "cp-id"})
    conds: list[Condition] = []
    st = inv.profile_status(conds, cluster=cluster_obj(location="us-east-1", publishLabels=["env", "nope"]), report=report,
                            healthy=(True, "Healthy", "ok"), joined=(True, "Joined", "j"),
                            providers=[inv.access_provider(ep, "east")])
    doc = st.to_dict()
    props = {p["name"]: p["value"] for p in doc["properties"]}
    assert props == {"location": "from-the-cluster", "env": "prod", "id.k8s.io": "cp-id",  # ClusterProperties win
                     "resources.fleetplane.io/allocatable-cpu": "7.5", "resources.fleetplane.io/allocatable-memory": "1024",
                     "resources.fleetplane.io/allocatable-pods": "110", "fleetplane.io/node-count": "3"}
    assert doc["version"] == {"kubernetes": "v1.31.2"}
    assert doc["accessProviders"] == [{"name": "secretreader", "cluster": {
        "server": "https://10.0.0.1:6443", "certificate-authority-data": CA_DATA,
        "extensions": [{"name": "client.authentication.k8s.io/exec", "extension": {"clusterName": "east"}}]}}]
    profile = {**inv.new_profile(cluster_obj(), "fleetplane"), "status": doc}
    assert admit(profile, None, {}) == []  # the hub's admission (no credentials, manager label) accepts it
    # Transition times move only when a status changes.
    first = {c.type: c.last_transition_time for c in conds}
    for c in conds:
        c.last_transition_time = "2020-01-01T00:00:00Z"
    inv.profile_status(conds, cluster=cluster_obj(), report=report, healthy=(True, "Healthy", "still ok"),
                       joined=(True, "Joined", "j"), providers=[])
    assert {c.type: c.last_transition_time for c in conds} == {t: "2020-01-01T00:00:00Z" for t in first}
    inv.profile_status(conds, cluster=cluster_obj(), report=report, healthy=(False, "Unreachable", "gone"),
                       joined=(True, "Joined", "j"), providers=[])
    cph = next(c for c in conds if c.type == "ControlPlaneHealthy")
    assert (cph.status, cph.reason) == ("False", "Unreachable") and cph.last_transition_time != "2020-01-01T00:00:00Z"


def test_credentials_secret_is_where_the_secret_reader_looks() -> None:
    s = inv.credentials_secret(cluster_obj(), "t0k")
    assert (s["metadata"]["namespace"], s["metadata"]["name"]) == ("fleet", "east")
    assert base64.b64decode(s["data"]["token"]) == b"t0k"
    assert inv.is_ours(s) and not inv.is_ours({"metadata": {"labels": {}}})


def test_manifests() -> None:
    hub = ApiTarget(server="https://hub:6443/clusters/team-a", token="t").to_kubeconfig("hub")
    docs = render_manifests(cluster="edge-1", namespace="fleet", logical_cluster="team-a", hub_kubeconfig=hub,
                            resources=["deployments.apps", "pods"])
    dep = docs[-1]
    assert dep["spec"]["strategy"] == {"type": "Recreate"} and dep["spec"]["replicas"] == 1
    assert dep["spec"]["template"]["spec"]["serviceAccountName"] == docs[1]["metadata"]["name"]
    assert yaml.safe_load(docs[4]["stringData"]["kubeconfig"]) == hub
    assert {"apiGroups": [""], "resources": ["pods", "pods/status"], "verbs": ["*"]} in docs[2]["rules"]


def test_profile_status_is_written_within_the_keps_budget() -> None:
    from fleetplane.fleet.cluster.controller import ClusterController

    ctrl = ClusterController(ApiTarget(server="http://127.0.0.1:1/clusters/root", token="t").to_kubeconfig())
    w = ctrl.writer("team-a")
    assert (w.rate, w.burst) == (1 / 30, 10) and w.field_manager == "fleetplane-cluster-controller"
    assert ctrl.writer("team-a") is w and ctrl.writer("team-b") is not w  # one per logical cluster
