"""The Cluster controller end to end: a hub process running it, physical-cluster processes, kubectl.

What needs no Syncer: bad input, unreachable clusters, wrong credentials, ClusterProfiles and
their credentials, a cluster going away and coming back, deletion, duplicate names, pull mode's
Lease handshake, the manifests. The Syncer's part is in test_cluster_sync.py.
"""

from __future__ import annotations

import base64
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ..harness import Hub, Kubectl, free_port, wait_for
from ..hub.test_watch import Stream
from .conftest import Fleet, PhysicalCluster, fleetplane

pytestmark = pytest.mark.timeout(120)

SEED_EXAMPLE = """\
apiVersion: cluster.example.dev/v1alpha1
kind: Cluster
metadata:
  name: my-cluster
spec:
  kubeconfig: |
    apiVersion: v1
    kind: Config
    clusters:
    - name: cluster
      cluster:
        certificate-authority-data: ...
        server: https://5.6.7.8:5678
    users:
    - name: user
      user:
        client-certifcate-data: ...
        client-data-key: ...
"""


def _kc(cluster: PhysicalCluster, **changes) -> str:
    """The cluster's kubeconfig, with the first cluster/user entries changed."""
    doc = yaml.safe_load(cluster.kubeconfig_text())
    for key, value in changes.items():
        section, _, field = key.partition("__")
        entry = doc[section][0][section[:-1]]
        field = field.replace("_", "-")
        if value is None:
            entry.pop(field, None)
        else:
            entry[field] = value
    return yaml.safe_dump(doc)


def _changed(before: dict, after: dict, at: str = "") -> list[str]:
    """The paths where two objects differ (resourceVersion and managedFields aside): what a
    failure says changed."""
    if not (isinstance(before, dict) and isinstance(after, dict)):
        return [] if before == after else [at or "."]
    return [p for k in sorted(set(before) | set(after)) if k not in ("resourceVersion", "managedFields")
            for p in _changed(before.get(k), after.get(k), f"{at}.{k}")]


def test_the_seeds_example_says_what_is_wrong_with_it(fleet: Fleet) -> None:
    fleet.kubectl("apply", "-f", "-", stdin=SEED_EXAMPLE)
    _, reason, msg = fleet.wait_condition("my-cluster", "Connected", "False", "InvalidKubeConfig")
    assert "certificate-authority-data is not valid base64" in msg
    assert fleet.conditions("my-cluster")["Ready"][:2] == ("False", "InvalidKubeConfig")
    assert fleet.conditions("my-cluster")["Synced"][0] == "False"
    obj = fleet.get("cluster", "my-cluster")
    assert obj["metadata"]["finalizers"] == ["cluster.example.dev/cleanup"]
    assert obj["spec"]["syncerMode"] == "Push" and obj["spec"]["deletionPolicy"] == "Orphan"
    # The cluster is in the inventory, and the inventory says it is not healthy and why.
    fleet.wait_condition("my-cluster", "ControlPlaneHealthy", "False", "InvalidKubeConfig", kind="clusterprofile")
    prof = fleet.get("clusterprofile", "my-cluster")
    assert prof["metadata"]["labels"]["x-k8s.io/cluster-manager"] == "fleetplane"
    assert prof["spec"]["clusterManager"]["name"] == "fleetplane"
    assert "accessProviders" not in prof["status"]
    assert fleet.conditions("my-cluster", kind="clusterprofile")["Joined"][0] == "False"


def test_bad_kubeconfigs_are_reported_exactly(fleet: Fleet, cluster_a: PhysicalCluster) -> None:
    good = yaml.safe_load(cluster_a.kubeconfig_text())
    ca = good["clusters"][0]["cluster"]["certificate-authority-data"]
    server = good["clusters"][0]["cluster"]["server"]
    user, ctx = good["users"][0]["name"], good["current-context"]
    cases = {
        "not-yaml": ("clusters: [", "InvalidKubeConfig", "not valid YAML (line 1"),
        "no-server": (yaml.safe_dump({"clusters": [{"name": "c", "cluster": {}}]}), "InvalidKubeConfig",
                      "clusters[c].cluster.server is missing"),
        "exec-user": (_kc(cluster_a, users__exec={"command": "evil"}, users__token=None), "InvalidKubeConfig",
                      f"users[{user}].user.exec: credential plugins are not supported"),
        "ca-file": (_kc(cluster_a, clusters__certificate_authority_data=None, clusters__certificate_authority="/etc/passwd"),
                    "InvalidKubeConfig", "certificate-authority refers to a file"),
        "bad-context": (_kc(cluster_a).replace(f"current-context: {ctx}", "current-context: nope"), "InvalidKubeConfig",
                        f"context 'nope' not found (contexts: {ctx})"),
        "typo": (yaml.safe_dump({"clusters": [{"name": "c", "cluster": {"server": server, "certificate-authority-data": ca}}],
                                 "users": [{"name": "u", "user": {"client-certifcate-data": "x"}}]}),
                 "InvalidKubeConfig", "unknown field 'client-certifcate-data' (did you mean 'client-certificate-data'?)"),
        "not-a-ca": (_kc(cluster_a, clusters__certificate_authority_data=base64.b64encode(b"hello").decode()),
                     "InvalidKubeConfig", "certificate-authority-data is not a PEM certificate"),
        "bad-ca": (_kc(cluster_a, clusters__certificate_authority_data=base64.b64encode(
            b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n").decode()),
            "ErrorCreatingClient", "the certificate authority cannot be loaded"),
    }
    for name, (kc, _, _) in cases.items():
        fleet.apply_cluster(name, kc)
    for name, (_, reason, text) in cases.items():
        _, _, msg = fleet.wait_condition(name, "Connected", "False", reason)
        assert text in msg, (name, msg)
        assert fleet.conditions(name)["Ready"][1] == reason
    # No credential ever shows up in a condition.
    token = good["users"][0]["user"]["token"]
    everything = json.dumps([fleet.conditions(n) for n in cases])
    assert token not in everything
    # A Cluster with neither kubeconfig nor pull mode is refused outright (the CRD's CEL rule).
    r = fleet.kubectl("apply", "-f", "-", check=False, stdin=yaml.safe_dump(
        {"apiVersion": "cluster.example.dev/v1alpha1", "kind": "Cluster", "metadata": {"name": "empty"}, "spec": {}}))
    assert r.code != 0 and "spec.kubeconfig is required unless spec.syncerMode is Pull" in r.err


def test_unreachable_and_wrong_credentials_leave_the_good_cluster_alone(fleet: Fleet, cluster_a: PhysicalCluster) -> None:
    gone_server = f"https://127.0.0.1:{free_port()}/clusters/root"
    fleet.apply_cluster("gone", _kc(cluster_a, clusters__server=gone_server))
    fleet.apply_cluster("wrong-creds", _kc(cluster_a, users__token="not-the-token"))
    fleet.apply_cluster("good", cluster_a.kubeconfig_text(), location="us-east-1",
                        labels={"env": "prod", "secret-ish": "no"}, publishLabels=["env", "absent"])
    _, _, msg = fleet.wait_condition("gone", "Connected", "False", "Unreachable")
    assert "connection refused" in msg and gone_server in msg
    _, _, msg = fleet.wait_condition("wrong-creds", "Connected", "False", "Unauthorized")
    assert "rejected the credentials (HTTP 401" in msg
    fleet.wait_condition("good", "Connected", "True", "Connected")
    fleet.wait_condition("good", "Healthy", "True", "Healthy")
    fleet.wait_condition("good", "ProfilePublished", "True", "Published")
    obj = fleet.get("cluster", "good")
    assert obj["status"]["version"].startswith("v1.")
    assert obj["status"]["observedGeneration"] == obj["metadata"]["generation"]
    table = fleet.kubectl("get", "clusters", "good").out.split("\n")
    assert table[0].split() == ["NAME", "LOCATION", "CONNECTED", "READY", "VERSION", "AGE"]
    assert table[1].split()[:3] == ["good", "us-east-1", "True"]

    # The ClusterProfile: in the same logical cluster and namespace, with what KEP-4322 asks for.
    fleet.wait_condition("good", "ControlPlaneHealthy", "True", kind="clusterprofile")
    fleet.wait_condition("good", "Joined", "True", kind="clusterprofile")
    prof = fleet.get("clusterprofile", "good")
    assert prof["metadata"]["labels"]["x-k8s.io/cluster-manager"] == "fleetplane"
    assert prof["spec"]["clusterManager"] == {"name": "fleetplane"}
    assert prof["metadata"]["ownerReferences"][0]["uid"] == obj["metadata"]["uid"]
    st = prof["status"]
    assert st["version"]["kubernetes"] == obj["status"]["version"]
    props = {p["name"]: p["value"] for p in st["properties"]}
    assert props["location"] == "us-east-1" and props["env"] == "prod"
    assert "secret-ish" not in props and "absent" not in props
    assert len(props["id.k8s.io"]) == 36  # the cluster's kube-system namespace uid
    if cluster_a.simulate:
        assert int(props["fleetplane.io/node-count"]) == cluster_a.nodes
        assert float(props["resources.fleetplane.io/allocatable-cpu"]) > 0
        assert int(props["resources.fleetplane.io/allocatable-memory"]) > 0
        assert int(props["resources.fleetplane.io/allocatable-pods"]) > 0
    (ap,) = st["accessProviders"]
    kc = yaml.safe_load(cluster_a.kubeconfig_text())
    assert ap == {"name": "secretreader", "cluster": {
        "server": kc["clusters"][0]["cluster"]["server"],
        "certificate-authority-data": kc["clusters"][0]["cluster"]["certificate-authority-data"],
        "extensions": [{"name": "client.authentication.k8s.io/exec", "extension": {"clusterName": "good"}}]}}
    token = kc["users"][0]["user"]["token"]
    assert token not in json.dumps(prof)
    secret = fleet.get("secret", "good")
    assert base64.b64decode(secret["data"]["token"]).decode() == token
    assert secret["metadata"]["labels"]["x-k8s.io/cluster-profile"] == "good"
    # The unreachable cluster is in the inventory too, not healthy, not joined.
    fleet.wait_condition("gone", "ControlPlaneHealthy", "False", "Unreachable", kind="clusterprofile")
    assert fleet.conditions("gone", kind="clusterprofile")["Joined"][0] == "False"
    reasons = {e["reason"] for e in fleet.events("good")}
    assert {"Connected", "Healthy", "ClusterProfileCreated"} <= reasons
    assert "Unreachable" in {e["reason"] for e in fleet.events("gone")}
    # Steady state (the good Cluster Ready: its types synced too): probes every 0.3 s, but nothing
    # changes, so nothing is written. A Cluster added now is probed and reported; once the watches
    # (in revision order) have delivered its report, they have delivered every earlier write: none
    # may be about the first three.
    fleet.wait_condition("good", "Ready", "True")
    paths = {plural: f"/clusters/{fleet.lc}/apis/{group}/namespaces/default/{plural}"
             for plural, group in (("clusters", "cluster.example.dev/v1alpha1"),
                                   ("clusterprofiles", "multicluster.x-k8s.io/v1alpha1"))}
    streams, listed_at_rest = {}, {}
    for plural, path in paths.items():
        code, listed = fleet.hub.json("GET", path)
        assert code == 200 and len(listed["items"]) == 3
        listed_at_rest[plural] = {o["metadata"]["name"]: o for o in listed["items"]}
        streams[plural] = Stream(fleet.hub, f"{path}?watch=1&resourceVersion={listed['metadata']['resourceVersion']}")
    try:
        fleet.apply_cluster("later", cluster_a.kubeconfig_text())
        fleet.wait_condition("later", "Ready", "True")
        fleet.wait_condition("later", "ControlPlaneHealthy", "True", kind="clusterprofile")
        for plural, path in paths.items():
            reported = int(fleet.hub.json("GET", f"{path}/later")[1]["metadata"]["resourceVersion"])
            wait_for(lambda s=streams[plural], rv=reported: any(
                int(e["object"]["metadata"]["resourceVersion"]) >= rv for e in s.events), 10,
                what=f"the {plural} watch to deliver the report of the later Cluster")
    finally:
        for s in streams.values():
            s.close()
    for plural, s in streams.items():
        about_others = [(e["type"], e["object"]["metadata"]["name"],
                         [(c["type"], c["status"], c.get("reason")) for c in (e["object"].get("status") or {}).get("conditions") or []],
                         _changed(listed_at_rest[plural].get(e["object"]["metadata"]["name"], {}), e["object"]))
                        for e in s.events if e["object"]["metadata"]["name"] != "later"]
        assert about_others == [], (plural, about_others[:3])


def test_a_client_certificate_kubeconfig_gets_no_secret_reader_provider(fleet: Fleet, cluster_a: PhysicalCluster) -> None:
    from datetime import UTC, datetime, timedelta

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "someone")])
    now = datetime.now(UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now).not_valid_after(now + timedelta(days=1))
            .sign(key, hashes.SHA256()))
    pem_cert = cert.public_bytes(serialization.Encoding.PEM)
    pem_key = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    fleet.apply_cluster("certified", _kc(cluster_a, users__token=None,
                                         users__client_certificate_data=base64.b64encode(pem_cert).decode(),
                                         users__client_key_data=base64.b64encode(pem_key).decode()))
    # The cluster only trusts certificates of its own client CA: this one is refused at the TLS
    # handshake (Python's ssl verifies a presented certificate or aborts; kube answers 401 instead).
    fleet.wait_condition("certified", "Connected", "False", "Unreachable")
    _, _, msg = fleet.wait_condition("certified", "ProfilePublished", "True")
    assert "has no bearer token: the secretreader access provider (tokens only) is not published" in msg
    assert fleet.get("secret", "certified") is None
    assert "accessProviders" not in fleet.get("clusterprofile", "certified").get("status", {})
    assert pem_key.decode().split("\n")[1] not in json.dumps(fleet.get("cluster", "certified")["status"])


def test_the_profile_credentials_work_through_the_access_library(fleet: Fleet, cluster_a: PhysicalCluster) -> None:
    from kubernetes.client import CoreV1Api, VersionApi

    from fleetplane.access import ProviderConfig, build_access_config, clear_authenticators
    from fleetplane.access.clients.kubernetes_client import new_kubernetes_api_client

    fleet.apply_cluster("east", cluster_a.kubeconfig_text())
    fleet.wait_condition("east", "ControlPlaneHealthy", "True", kind="clusterprofile")
    prof = wait_for(lambda: (p := fleet.get("clusterprofile", "east")) and p["status"].get("accessProviders") and p,
                    10, what="access providers")
    providers = ProviderConfig.from_dict({"providers": [{
        "name": "secretreader",
        "execConfig": {"apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
                       "args": ["-m", "fleetplane.access.plugins.secretreader", "--kubeconfig", str(fleet.kubeconfig),
                                "--namespace", "default"],
                       "provideClusterInfo": True, "interactiveMode": "Never"}}]})
    clear_authenticators()
    access = build_access_config(prof, providers)
    api = new_kubernetes_api_client(access)
    try:
        names = {ns.metadata.name for ns in CoreV1Api(api).list_namespace().items}
        assert "kube-system" in names
        assert VersionApi(api).get_code().git_version == fleet.get("cluster", "east")["status"]["version"]
    finally:
        api.close()


def test_a_cluster_that_goes_away_and_comes_back(fleet: Fleet, tmp_path: Path) -> None:
    c = PhysicalCluster(tmp_path / "flaky", "flaky", simulate=False).start()  # a stand-in starts faster
    try:
        fleet.apply_cluster("flaky", c.kubeconfig_text())
        fleet.wait_condition("flaky", "Connected", "True")
        fleet.wait_condition("flaky", "ControlPlaneHealthy", "True", kind="clusterprofile")
        c.stop(signal.SIGKILL)
        _, _, msg = fleet.wait_condition("flaky", "Connected", "False", "Unreachable")
        assert "connection refused" in msg
        fleet.wait_condition("flaky", "ControlPlaneHealthy", "False", "Unreachable", kind="clusterprofile")
        assert fleet.conditions("flaky", kind="clusterprofile")["Joined"][0] == "True"  # still under management
        assert fleet.get("cluster", "flaky")["status"]["version"]  # last known version kept
        c.start()
        fleet.wait_condition("flaky", "Connected", "True", timeout=20)
        fleet.wait_condition("flaky", "ControlPlaneHealthy", "True", kind="clusterprofile")
        reasons = [e["reason"] for e in sorted(fleet.events("flaky"), key=lambda e: e["metadata"]["creationTimestamp"])]
        assert "Disconnected" in reasons and reasons.count("Connected") >= 2
    finally:
        c.stop(signal.SIGTERM)


def test_a_failure_threshold_keeps_a_blip_out_of_the_inventory(tmp_path: Path) -> None:
    """With ``--cluster-failure-threshold``, a healthy cluster whose probes fail keeps its
    conditions (and its ClusterProfile stays healthy) until they have failed for that long: the
    first failure is a Warning Event, then the outage is reported as usual."""
    from .conftest import CONTROLLER_FLAGS, FleetHub

    hub = FleetHub(tmp_path / "hub", extra=["--cluster-failure-threshold", "8"])
    assert CONTROLLER_FLAGS["--cluster-failure-threshold"] == "0"  # the later flag wins
    hub.start()
    c = PhysicalCluster(tmp_path / "blip", "blip", simulate=False).start()
    try:
        fleet = Fleet(hub, tmp_path)
        fleet.apply_cluster("blip", c.kubeconfig_text())
        fleet.wait_condition("blip", "Connected", "True", timeout=30)
        fleet.wait_condition("blip", "ControlPlaneHealthy", "True", kind="clusterprofile")
        c.stop(signal.SIGKILL)
        wait_for(lambda: "ProbeFailed" in {e["reason"] for e in fleet.events("blip")}, 10, what="a ProbeFailed Event")
        assert fleet.conditions("blip")["Connected"][0] == "True"
        assert fleet.conditions("blip", kind="clusterprofile")["ControlPlaneHealthy"][0] == "True"
        fleet.wait_condition("blip", "Connected", "False", "Unreachable", timeout=20)
        fleet.wait_condition("blip", "ControlPlaneHealthy", "False", "Unreachable", kind="clusterprofile")
    finally:
        c.stop(signal.SIGTERM)
        hub.stop()


def test_deleting_a_cluster_cleans_up_behind_the_finalizer(fleet: Fleet, cluster_a: PhysicalCluster) -> None:
    fleet.apply_cluster("doomed", cluster_a.kubeconfig_text())
    fleet.wait_condition("doomed", "ProfilePublished", "True")
    wait_for(lambda: fleet.get("secret", "doomed"), 10, what="credentials Secret")
    # Someone else's ClusterProfile of the same name as a Cluster is left alone.
    fleet.kubectl("apply", "-f", "-", stdin=yaml.safe_dump({
        "apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile",
        "metadata": {"name": "taken"}, "spec": {"clusterManager": {"name": "someone-else"}}}))
    fleet.apply_cluster("taken", cluster_a.kubeconfig_text())
    _, _, msg = fleet.wait_condition("taken", "ProfilePublished", "False", "ProfileConflict")
    assert "managed by 'someone-else'" in msg
    fleet.wait_condition("taken", "Connected", "True")  # the rest works regardless

    fleet.kubectl("delete", "cluster", "doomed", "taken", "--timeout=20s")
    assert fleet.get("cluster", "doomed") is None
    assert fleet.get("clusterprofile", "doomed") is None
    assert fleet.get("secret", "doomed") is None
    assert fleet.get("clusterprofile", "taken")["spec"]["clusterManager"]["name"] == "someone-else"
    reasons = {e["reason"] for e in fleet.events("doomed")}
    assert {"CleanupStarted", "CleanedUp"} <= reasons


def test_cluster_names_are_unique_in_a_logical_cluster(fleet: Fleet, cluster_a: PhysicalCluster) -> None:
    fleet.kubectl("create", "namespace", "other")
    fleet.apply_cluster("twin", cluster_a.kubeconfig_text())
    fleet.wait_condition("twin", "Connected", "True")
    fleet.apply_cluster("twin", cluster_a.kubeconfig_text(), namespace="other")
    _, _, msg = fleet.wait_condition("twin", "Ready", "False", "DuplicateName", namespace="other")
    assert "Cluster default/twin" in msg
    assert fleet.get("clusterprofile", "twin", "other") is None
    fleet.kubectl("delete", "cluster", "twin", "-n", "default", "--timeout=20s")
    fleet.wait_condition("twin", "Connected", "True", namespace="other")
    fleet.wait_condition("twin", "ProfilePublished", "True", namespace="other")


def test_pull_mode_reports_through_the_syncers_lease(fleet: Fleet, cluster_b: PhysicalCluster, tmp_path: Path) -> None:
    fleet.apply_cluster("pulled", None, syncerMode="Pull", location="eu-west-1", resources=["configmaps"])
    _, _, msg = fleet.wait_condition("pulled", "Connected", "Unknown", "WaitingForSyncer")
    assert "fleetplane syncer manifests --cluster pulled" in msg
    # The Syncer runs on the credential `syncer manifests` installs: its own ServiceAccount's token.
    out = subprocess.run([*fleetplane("syncer"), "syncer", "manifests", "--cluster", "pulled",
                          "--hub-kubeconfig", str(fleet.kubeconfig), "--resources", "configmaps"],
                         capture_output=True, text=True, timeout=60, check=True)
    secret = next(d for d in yaml.safe_load_all(out.stdout) if d["kind"] == "Secret")
    own = tmp_path / "syncer-hub.kubeconfig"
    own.write_text(secret["stringData"]["kubeconfig"])
    cmd = [*fleetplane("syncer"), "syncer",
           "--hub-kubeconfig", str(own), "--cluster", "pulled",
           "--cluster-kubeconfig", str(cluster_b.kubeconfig), "--interval", "0.3", "--lease-duration", "2",
           "--poll-interval", "1"]
    log = open(tmp_path / "syncer.log", "ab")  # noqa: SIM115
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        _, _, msg = fleet.wait_condition("pulled", "Connected", "True", "Connected")
        assert "reported by" in msg
        fleet.wait_condition("pulled", "Healthy", "True")
        fleet.wait_condition("pulled", "Synced", "True", "Synced", timeout=20)  # the Syncer's health, via the Lease
        fleet.wait_condition("pulled", "Ready", "True")
        assert {"resource": "configmaps", "version": "v1", "state": "Synced"} in fleet.get("cluster", "pulled")["status"]["types"]
        fleet.wait_condition("pulled", "ControlPlaneHealthy", "True", kind="clusterprofile")
        props = {p["name"]: p["value"] for p in fleet.get("clusterprofile", "pulled")["status"]["properties"]}
        assert props["location"] == "eu-west-1" and props["id.k8s.io"]
        proc.send_signal(signal.SIGSTOP)  # a syncer that stops reporting (hung, partitioned)
        try:
            fleet.wait_condition("pulled", "Connected", "False", "SyncerHeartbeatLost", timeout=10)
            fleet.wait_condition("pulled", "ControlPlaneHealthy", "False", "SyncerHeartbeatLost", kind="clusterprofile")
        finally:
            proc.send_signal(signal.SIGCONT)
        fleet.wait_condition("pulled", "Connected", "True", timeout=10)
        # Deletion waits for the running syncer to acknowledge that it stopped.
        fleet.kubectl("delete", "cluster", "pulled", "--timeout=20s")
        assert fleet.get("lease", "syncer-pulled") is None
        assert fleet.get("clusterprofile", "pulled") is None
        assert "syncer stopped" in " ".join(e["message"] for e in fleet.events("pulled") if e["reason"] == "CleanedUp")
    finally:
        proc.kill()
        proc.wait()
        log.close()


def test_syncer_manifests(fleet: Fleet, capsys: pytest.CaptureFixture[str]) -> None:
    out = subprocess.run([*fleetplane("syncer"), "syncer", "manifests", "--cluster", "edge-1",
                          "--hub-kubeconfig", str(fleet.kubeconfig), "--namespace", "fleet",
                          "--resources", "deployments.apps,configmaps", "--hub-server", "https://hub.example:6443"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    docs = list(yaml.safe_load_all(out.stdout))
    assert [d["kind"] for d in docs] == ["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Secret",
                                         "Deployment"]
    kc = yaml.safe_load(docs[4]["stringData"]["kubeconfig"])
    assert kc["clusters"][0]["cluster"]["server"] == f"https://hub.example:6443/clusters/{fleet.lc}"
    # The member cluster gets the Syncer's own ServiceAccount token, not the admin's credential.
    token = kc["users"][0]["user"]["token"]
    admin = yaml.safe_load(fleet.kubeconfig.read_text())["users"][0]["user"]
    assert token != admin.get("token") and "client-key-data" not in kc["users"][0]["user"]

    def as_syncer(path: str) -> int:
        return fleet.hub.request("GET", path, auth=False, headers={"Authorization": f"Bearer {token}"})[0]

    review = fleet.hub.request("POST", f"/clusters/{fleet.lc}/apis/authentication.k8s.io/v1/selfsubjectreviews",
                               {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}, auth=False,
                               headers={"Authorization": f"Bearer {token}"})
    assert json.loads(review[2])["status"]["userInfo"]["username"] == "system:serviceaccount:fleetplane-system:fleetplane-syncer-edge-1"
    assert as_syncer(f"/clusters/{fleet.lc}/api/v1/namespaces/fleet/configmaps?labelSelector=kcp.dev%2Fcluster%3Dedge-1") == 200
    assert as_syncer(f"/clusters/{fleet.lc}/apis/rbac.authorization.k8s.io/v1/rolebindings") == 403
    assert as_syncer(f"/clusters/{fleet.lc}/apis/tenancy.fleetplane.io/v1alpha1/logicalclusters") in (403, 404)
    assert as_syncer(f"/clusters/{fleet.lc}/apis/cluster.example.dev/v1alpha1/namespaces/fleet/clusters") == 403
    assert as_syncer("/api/v1/namespaces/default/configmaps") == 401  # another logical cluster
    assert as_syncer(f"/clusters/{fleet.lc}/api/v1/namespaces/fleet/secrets?labelSelector=kcp.dev%2Fcluster%3Dedge-1") == 403
    # A Syncer that syncs Secrets reads only those labelled for its cluster (the hub's label
    # scope; RBAC cannot say it).
    out = subprocess.run([*fleetplane("syncer"), "syncer", "manifests", "--cluster", "edge-1", "--hub-kubeconfig",
                          str(fleet.kubeconfig), "--namespace", "fleet"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    secret_doc = next(d for d in yaml.safe_load_all(out.stdout) if d["kind"] == "Secret")
    token = yaml.safe_load(secret_doc["stringData"]["kubeconfig"])["users"][0]["user"]["token"]
    for name, labels in (("synced", {"kcp.dev/cluster": "edge-1"}), ("private", {}), ("elsewhere", {"kcp.dev/cluster": "edge-2"})):
        fleet.kubectl("apply", "-n", "fleet", "-f", "-", stdin=json.dumps(
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "labels": labels}, "stringData": {"k": "v"}}))
    secrets = f"/clusters/{fleet.lc}/api/v1/namespaces/fleet/secrets"
    assert as_syncer(f"{secrets}?labelSelector=kcp.dev%2Fcluster%3Dedge-1") == 200
    assert as_syncer(secrets) == 403 and as_syncer(f"{secrets}?labelSelector=kcp.dev%2Fcluster%3Dedge-2") == 403
    assert (as_syncer(f"{secrets}/synced"), as_syncer(f"{secrets}/private"), as_syncer(f"{secrets}/elsewhere")) == (200, 403, 403)
    patch = fleet.hub.request("PATCH", f"{secrets}/private", {"metadata": {"labels": {"x": "y"}}}, auth=False,
                              content_type="application/merge-patch+json", headers={"Authorization": f"Bearer {token}"})
    assert patch[0] == 403
    # impersonating the Syncer (kube's `edit` may impersonate the ServiceAccounts of its namespace)
    # brings its scope along
    sa = {"Impersonate-User": "system:serviceaccount:fleetplane-system:fleetplane-syncer-edge-1"}
    assert fleet.hub.request("GET", secrets, headers=sa)[0] == 403
    assert fleet.hub.request("GET", f"{secrets}/private", headers=sa)[0] == 403
    assert fleet.hub.request("GET", f"{secrets}/synced", headers=sa)[0] == 200
    assert as_syncer("/clusters/*/api/v1/secrets") == 401
    args = docs[5]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[:2] == ["syncer", "--hub-kubeconfig"] and "edge-1" in args and fleet.lc in args
    rules = docs[2]["rules"]
    assert {"apiGroups": ["apps"], "resources": ["deployments", "deployments/status"], "verbs": ["*"]} in rules
    assert {"apiGroups": [""], "resources": ["configmaps", "configmaps/status"], "verbs": ["*"]} in rules

    import argparse

    from fleetplane.cli.syncer import add_parser

    sub = argparse.ArgumentParser().add_subparsers()
    add_parser(sub)
    args = sub.choices["syncer"].parse_args(["manifests", "--cluster", "x", "--hub-kubeconfig", "/nonexistent"])
    assert args.func(args) == 2
    assert "cannot read kubeconfig /nonexistent" in capsys.readouterr().err


def test_the_controller_runs_on_its_own(tmp_path: Path, cluster_a: PhysicalCluster) -> None:
    """``python -m fleetplane.fleet.cluster`` against a hub that serves Clusters as a
    plain CRD (how any other hub would get the type)."""
    from fleetplane.fleet.cluster.crd import crd_yaml

    extra = ["--no-cluster-controller"]
    hub = Hub(tmp_path / "plain", extra=extra).start()
    ctrl = None
    try:
        k = Kubectl(hub.kubeconfig_for("solo", tmp_path), namespace="default")
        if "clusters" not in k("api-resources", "--api-group=cluster.example.dev", "-o", "name").out:
            k("apply", "-f", "-", stdin=crd_yaml())
            wait_for(lambda: k("get", "clusters", check=False).code == 0, 10, what="the Cluster CRD")
        ctrl = subprocess.Popen([sys.executable, "-m", "fleetplane.fleet.cluster", "--kubeconfig",
                                 str(hub.kubeconfig), "--probe-interval", "0.3", "--log-format", "console"],
                                stdout=open(tmp_path / "ctrl.log", "ab"), stderr=subprocess.STDOUT)  # noqa: SIM115
        k("apply", "-f", "-", stdin=yaml.safe_dump({
            "apiVersion": "cluster.example.dev/v1alpha1", "kind": "Cluster", "metadata": {"name": "solo"},
            "spec": {"kubeconfig": cluster_a.kubeconfig_text()}}))
        wait_for(lambda: '"Connected"' in k("get", "cluster", "solo", "-o", "json").out
                 and any(c["type"] == "Connected" and c["status"] == "True"
                         for c in k("get", "cluster", "solo", "-o", "json").json()["status"]["conditions"]),
                 15, what="the standalone controller to connect the cluster")
        ctrl.send_signal(signal.SIGTERM)
        assert ctrl.wait(10) == 0
    finally:
        if ctrl is not None and ctrl.poll() is None:
            ctrl.kill()
        hub.stop()


def test_a_type_the_hub_cannot_import_is_named_and_the_rest_syncs(fleet: Fleet, cluster_a: PhysicalCluster) -> None:
    # nodes are cluster-scoped in the cluster: only namespaced types are synced
    fleet.apply_cluster("podsy", cluster_a.kubeconfig_text(), resources=["nodes", "configmaps"])
    _, _, msg = fleet.wait_condition("podsy", "Synced", "False", "TypeImportFailed", timeout=20)
    assert msg.startswith("nodes: ") and "cluster-scoped" in msg
    assert fleet.conditions("podsy")["Ready"][:2] == ("False", "TypeImportFailed")
    types = {t["resource"]: t for t in fleet.get("cluster", "podsy")["status"]["types"]}
    assert types["nodes"]["state"] == "Failed" and types["nodes"]["message"] in msg
    assert types["configmaps"]["state"] == "Synced"
    # The other type is synced regardless: a ConfigMap labelled for the cluster appears in it.
    ns = "podsy-" + fleet.lc
    fleet.kubectl("create", "namespace", ns)
    fleet.kubectl("apply", "-n", ns, "-f", "-", stdin=yaml.safe_dump({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "labels": {"kcp.dev/cluster": "podsy"}},
        "data": {"color": "blue"}}))
    down = cluster_a.kubectl()
    cm = wait_for(lambda: (r := down("get", "configmap", "settings", "-n", ns, "-o", "json", check=False)).code == 0
                  and r.json(), 20, what="the ConfigMap in the cluster")
    assert cm["data"] == {"color": "blue"}
    synced_by = "fleetplane.io/syncer-podsy"
    wait_for(lambda: synced_by in (fleet.get("configmap", "settings", ns)["metadata"].get("finalizers") or []), 10,
             what="the Syncer's finalizer on the hub object")
    # Deleting the Cluster (Orphan) leaves it there, and releases the hub object from the Syncer.
    fleet.kubectl("delete", "cluster", "podsy", "--timeout=20s")
    hub_cm = fleet.get("configmap", "settings", ns)
    assert synced_by not in (hub_cm["metadata"].get("finalizers") or [])
    assert down("get", "configmap", "settings", "-n", ns, check=False).code == 0
    fleet.kubectl("delete", "configmap", "settings", "-n", ns, "--timeout=10s")
