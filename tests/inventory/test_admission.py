"""Admission: the manager label, immutability, no credentials, ClusterSet namespaces."""

from __future__ import annotations

import base64
import copy
import json

import pytest
import yaml

from fleetplane.inventory import admit, find_credentials, validate
from fleetplane.inventory.credentials import is_secret_env_name

from . import kep_examples as kep

CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n").decode()
KEY_PEM = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIB\n-----END EC PRIVATE KEY-----\n"
JWT = "eyJhbGciOiJSUzI1NiIsImtpZCI6IiJ9.eyJpc3MiOiJrdWJlcm5ldGVzL3NlcnZpY2VhY2NvdW50In0.c2lnbmF0dXJlc2lnbmF0dXJl"


def profile(manager: str = "mgr", labels: dict | None = None, status: dict | None = None, **meta) -> dict:
    md = {"name": "c1", "namespace": "ns", **meta}
    if labels is not None:
        md["labels"] = labels
    obj = {"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile", "metadata": md,
           "spec": {"clusterManager": {"name": manager}}}
    if status is not None:
        obj["status"] = status
    return obj


def with_cluster(cluster: dict, name: str = "p") -> dict:
    return profile(labels={"x-k8s.io/cluster-manager": "mgr"},
                   status={"accessProviders": [{"name": name, "cluster": {"server": "https://spoke", **cluster}}]})


def messages(errs) -> list[str]:
    return [str(e) for e in errs]


# -- every KEP example is admitted ----------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(kep.ALL_PROFILES))
def test_kep_examples_are_admitted(name: str) -> None:
    obj = yaml.safe_load(kep.ALL_PROFILES[name])
    obj["metadata"]["namespace"] = "default"
    assert admit(obj, None, {}) == []
    assert obj["metadata"]["labels"]["x-k8s.io/cluster-manager"] == obj["spec"]["clusterManager"]["name"]


# -- the cluster manager label -------------------------------------------------------------------


def test_missing_label_is_set_and_not_shared() -> None:
    shared = {"team": "a"}
    obj = profile(labels=shared)
    assert admit(obj, None, {}) == []
    assert obj["metadata"]["labels"] == {"team": "a", "x-k8s.io/cluster-manager": "mgr"}
    assert shared == {"team": "a"}  # a new dict: never mutate one the stored object may share
    obj = profile()
    assert admit(obj, None, {}) == []
    assert obj["metadata"]["labels"] == {"x-k8s.io/cluster-manager": "mgr"}


def test_mismatched_label_is_rejected() -> None:
    errs = admit(profile(labels={"x-k8s.io/cluster-manager": "someone-else"}), None, {})
    assert messages(errs) == [
        'metadata.labels[x-k8s.io/cluster-manager]: Invalid value: "someone-else": must equal spec.clusterManager.name '
        '"mgr" (KEP-4322: the label\'s value MUST be the name of the cluster manager)']
    # the empty value is a mismatch too
    assert admit(profile(labels={"x-k8s.io/cluster-manager": ""}), None, {})


def test_manager_name_must_be_a_label_value() -> None:
    errs = admit(profile(manager="not a label value!"), None, {})
    assert len(errs) == 1 and errs[0].field == "spec.clusterManager.name" and "valid label value" in errs[0].detail
    errs = admit(profile(manager="x" * 64), None, {})
    assert errs and errs[0].field == "spec.clusterManager.name"
    errs = admit(profile(manager=""), None, {})
    assert errs[0].type == "FieldValueRequired"


def test_label_rule_ratchets_on_update() -> None:
    old = profile(labels={"x-k8s.io/cluster-manager": "legacy"})  # written before the rule held
    new = copy.deepcopy(old)
    new["metadata"]["finalizers"] = []
    assert admit(new, old, {}) == []
    new["metadata"]["labels"]["x-k8s.io/cluster-manager"] = "other"
    assert admit(new, old, {})
    fixed = copy.deepcopy(old)
    fixed["metadata"]["labels"]["x-k8s.io/cluster-manager"] = "mgr"
    assert admit(fixed, old, {}) == []
    # a correct profile cannot be made wrong
    assert admit(old, fixed, {})


def test_removing_the_label_puts_it_back() -> None:
    old = profile(labels={"x-k8s.io/cluster-manager": "mgr"})
    new = profile(labels={})
    assert admit(new, old, {}) == []
    assert new["metadata"]["labels"] == {"x-k8s.io/cluster-manager": "mgr"}


# -- immutability -------------------------------------------------------------------------------


def test_manager_is_immutable() -> None:
    old = profile(labels={"x-k8s.io/cluster-manager": "mgr"})
    new = profile(manager="other", labels={"x-k8s.io/cluster-manager": "other"})
    errs = admit(new, old, {})
    assert messages(errs) == ['spec.clusterManager.name: Invalid value: "other": field is immutable (was "mgr"; '
                              'KEP-4322: the cluster manager is set once, at creation)']
    assert admit(copy.deepcopy(old), old, {}) == []


# -- credentials ------------------------------------------------------------------------------------


@pytest.mark.parametrize("cluster, path", [
    ({"token": "abc"}, "status.accessProviders[0].cluster.token"),
    ({"extensions": [{"name": "client.authentication.k8s.io/exec", "extension": {"clusterName": "a", "token": "abc"}}]},
     "status.accessProviders[0].cluster.extensions[0].extension.token"),
    ({"extensions": [{"name": "x", "extension": {"client-key-data": "LS0t"}}]},
     "status.accessProviders[0].cluster.extensions[0].extension.client-key-data"),
    ({"extensions": [{"name": "x", "extension": {"client-key": "/home/me/.kube/key.pem"}}]},
     "status.accessProviders[0].cluster.extensions[0].extension.client-key"),
    ({"extensions": [{"name": "x", "extension": {"client-certificate-data": "LS0t"}}]},
     "status.accessProviders[0].cluster.extensions[0].extension.client-certificate-data"),
    ({"extensions": [{"name": "x", "extension": {"status": {"clientKeyData": KEY_PEM}}}]},
     "status.accessProviders[0].cluster.extensions[0].extension.status.clientKeyData"),
    ({"extensions": [{"name": "x", "extension": {"user": {"username": "admin"}}}]},
     "status.accessProviders[0].cluster.extensions[0].extension.user"),
    ({"extensions": [{"name": "x", "extension": {"users": [{"name": "admin", "user": {}}]}}]},
     "status.accessProviders[0].cluster.extensions[0].extension.users"),
    ({"extensions": [{"name": "x", "extension": {"password": "hunter2"}}]},
     "status.accessProviders[0].cluster.extensions[0].extension.password"),
    ({"extensions": [{"name": "x", "extension": {"auth-provider": {"name": "oidc", "config": {}}}}]},
     "status.accessProviders[0].cluster.extensions[0].extension.auth-provider"),
    ({"extensions": [{"name": "x", "extension": {"clientSecret": "s3cr3t"}}]},
     "status.accessProviders[0].cluster.extensions[0].extension.clientSecret"),
    ({"extensions": [{"name": "x", "extension": {"exec": {"command": "p", "env": [{"name": "GITHUB_TOKEN", "value": "ghp_x"}]}}}]},
     "status.accessProviders[0].cluster.extensions[0].extension.exec.env[0].value"),
    ({"extensions": [{"name": "x", "extension": {"exec": {"command": "p", "args": ["--token=abc"]}}}]},
     "status.accessProviders[0].cluster.extensions[0].extension.exec.args[0]"),
    ({"extensions": [{"name": "clusterprofiles.multicluster.x-k8s.io/exec/additional-args",
                      "extension": ["--audience", "x", "--client-secret", "s3cr3t"]}]},
     "status.accessProviders[0].cluster.extensions[0].extension[3]"),
    ({"extensions": [{"name": "clusterprofiles.multicluster.x-k8s.io/exec/additional-envs",
                      "extension": {"CLIENT_ID": "id", "AZURE_CLIENT_SECRET": "s3cr3t"}}]},
     "status.accessProviders[0].cluster.extensions[0].extension.AZURE_CLIENT_SECRET"),
    ({"extensions": [{"name": "x", "extension": {"note": KEY_PEM}}]},
     "status.accessProviders[0].cluster.extensions[0].extension.note"),
    ({"certificate-authority-data": base64.b64encode(KEY_PEM.encode()).decode()},
     "status.accessProviders[0].cluster.certificate-authority-data"),
    ({"extensions": [{"name": "x", "extension": {"header": "Bearer abcdefghijklmnopqrstuvwxyz012345"}}]},
     "status.accessProviders[0].cluster.extensions[0].extension.header"),
    ({"extensions": [{"name": "x", "extension": {"sa": JWT}}]},
     "status.accessProviders[0].cluster.extensions[0].extension.sa"),
    ({"extensions": [{"name": "x", "extension": {"kubeconfig": yaml.safe_dump(
        {"apiVersion": "v1", "kind": "Config", "users": [{"name": "u", "user": {"token": "abc"}}]})}}]},
     "status.accessProviders[0].cluster.extensions[0].extension.kubeconfig(embedded).users"),
])
def test_credentials_are_rejected_with_their_path(cluster: dict, path: str) -> None:
    obj = with_cluster(cluster)
    errs = admit(obj, None, {})
    assert [e.field for e in errs] == [path]
    assert errs[0].type == "FieldValueForbidden"
    text = str(errs[0])
    assert "credential material is not allowed" in text
    for secret in ("abc", "hunter2", "s3cr3t", "ghp_x", "MHcCAQEEIB", JWT, "abcdefghijklmnopqrstuvwxyz012345"):
        assert secret not in text.replace(path, "")  # never echo the secret


def test_credentials_in_the_deprecated_list_and_annotations() -> None:
    obj = profile(status={"credentialProviders": [{"name": "p", "cluster": {"server": "https://s", "token": "abc"}}]})
    assert [e.field for e in admit(obj, None, {})] == ["status.credentialProviders[0].cluster.token"]
    # kubectl's last-applied annotation keeps what the schema pruned from the object
    applied = profile(status={"accessProviders": [{"name": "p", "cluster": {"server": "https://s", "token": "abc"}}]})
    obj = profile(annotations={"kubectl.kubernetes.io/last-applied-configuration": json.dumps(applied)})
    assert [e.field for e in admit(obj, None, {})] == [
        "metadata.annotations[kubectl.kubernetes.io/last-applied-configuration](embedded).status.accessProviders[0].cluster.token"]
    obj = profile(annotations={"example.com/token": "abc"})
    assert [e.field for e in admit(obj, None, {})] == ["metadata.annotations[example.com/token]"]
    # properties are scanned by value, and by name
    obj = profile(status={"properties": [{"name": "sa", "value": JWT}]})
    assert [e.field for e in admit(obj, None, {})] == ["status.properties[0].value"]
    obj = profile(status={"properties": [{"name": "location", "value": "eu"}, {"name": "example.com/auth-token", "value": "x"},
                                         {"name": "db.password", "value": "x"}, {"name": "token-audience", "value": "sts"}]})
    assert [e.field for e in admit(obj, None, {})] == ["status.properties[1].value", "status.properties[2].value"]


def test_credentials_never_ratchet() -> None:
    old = with_cluster({"token": "abc"})
    assert admit(copy.deepcopy(old), old, {})


def test_legitimate_fields_are_not_credentials() -> None:
    obj = with_cluster({
        "tls-server-name": "api.internal", "insecure-skip-tls-verify": False, "certificate-authority-data": CA,
        "proxy-url": "socks5://proxy:1080", "disable-compression": True,
        "extensions": [
            {"name": "client.authentication.k8s.io/exec", "extension": {
                "clusterName": "spoke-1", "secretName": "spoke-1-token", "secret": {"name": "s", "namespace": "n"},
                "tokenFile": "/var/run/secrets/token", "audience": "https://spoke", "user": "alice", "key": "token",
                "token": ""}},
            {"name": "clusterprofiles.multicluster.x-k8s.io/exec/additional-args",
             "extension": ["-audience", "https://my-on-prem-k8s.example.dev", "--token-file", "/var/run/t", "--password-file=/p"]},
            {"name": "clusterprofiles.multicluster.x-k8s.io/exec/additional-envs",
             "extension": {"CLIENT_ID": "my-client-id", "TENANT_ID": "my-tenant-id", "AZURE_FEDERATED_TOKEN_FILE": "/var/run/t",
                           "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "TOKEN_AUDIENCE": "sts"}},
        ],
    })
    obj["status"]["conditions"] = [{"type": "ControlPlaneHealthy", "status": "False", "reason": "Unauthorized",
                                    "message": "bearer token rejected; token: expired", "lastTransitionTime": "2024-01-01T00:00:00Z"}]
    obj["status"]["properties"] = [{"name": "token-audience", "value": "sts.amazonaws.com"}]
    assert find_credentials(obj) == []
    assert admit(obj, None, {}) == []


# -- the further encodings (issue 11): each one a case, none echoed back ------------------------------

GHP = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
AWS_ID, AWS_SECRET = "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
KUBECONFIG = yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "clusters": [{"name": "c", "cluster": {"server": "https://s"}}],
                             "users": [{"name": "u", "user": {"token": "abc"}}]})


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def nested(depth: int) -> object:
    node: object = {"note": "deep"}
    for i in range(depth):
        node = [node] if i % 2 else {"level": node}
    return node


def ext(value: object) -> dict:
    return {"extensions": [{"name": "x", "extension": value}]}


E = "status.accessProviders[0].cluster.extensions[0].extension"
FURTHER_ENCODINGS = {
    # 1. a whole kubeconfig, base64-encoded (as `base64 ~/.kube/config` prints it)
    "base64-kubeconfig": (ext({"kubeconfig": b64(KUBECONFIG)}), f"{E}.kubeconfig(embedded).users", "kubeconfig users list"),
    # 2. the password in the server URL
    "server-userinfo": ({"server": "https://admin:hunter2@spoke.example:6443"}, "status.accessProviders[0].cluster.server",
                        "URL with a password"),
    # 3. the password in the proxy URL
    "proxy-userinfo": ({"proxy-url": "http://fleet:hunter2@proxy.example:3128"}, "status.accessProviders[0].cluster.proxy-url",
                       "URL with a password"),
    # 4. --token=... inside one string (a command line)
    "flag-equals-in-string": (ext({"command": "kubectl --token=abc get pods"}), f"{E}.command", 'argument "--token"'),
    # 5. --token x inside one string
    "flag-space-in-string": (ext({"command": "plugin --password hunter2 --verbose"}), f"{E}.command", 'argument "--password"'),
    # 6. credential / credentials keys, any case
    "credentials-key": (ext({"Credentials": "abc"}), f"{E}.Credentials", "names a credential"),
    # 7. compound secret keys: camelCase, snake_case, kebab-case, UPPER
    "compound-keys": (ext({"githubToken": "abc"}), f"{E}.githubToken", "names a credential"),
    # 8. a token nested below the scanner's depth limit is refused, not skipped
    "too-deep": (ext(nested(70)), None, "too deep to check"),
    # 9. base64 of a token (a JWT; a "Bearer ..." header)
    "base64-token": (ext({"sa": b64(JWT)}), f"{E}.sa", "base64-encoded, contains a JSON Web Token"),
    # 10. base64 of a private key not at the start, and base64 twice
    "base64-private-key": (ext({"bundle": b64(b64("# client key\n" + KEY_PEM))}), f"{E}.bundle",
                           "base64-encoded, base64-encoded, contains a PEM private key"),
    # 11. JWT-shaped strings the eyJ.eyJ pattern misses: a spaced header, alg none (no signature)
    "jwt-shapes": (ext({"id": "eyAiYWxnIjogIlJTMjU2IiB9.eyAic3ViIjogImFkbWluIiB9.c2lnbmF0dXJl"}), f"{E}.id", "JSON Web Token"),
    # 12. PEM private keys anywhere: a PGP block, a field *name*
    "pem-anywhere": (ext({"gpg": "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----"}),
                     f"{E}.gpg", "PEM private key"),
    # 13. AWS keys: an access key id with its secret, as an AWS credentials file
    "aws-keys": (ext({"awsProfile": f"[default]\naws_access_key_id = {AWS_ID}\naws_secret_access_key = {AWS_SECRET}\n"}),
                 f"{E}.awsProfile", "AWS access key pair"),
    # 14. tokens whose format gives them away (GitHub, HTTP basic credentials), even in a label
    "known-token-formats": (ext({"note": f"use {GHP} to clone"}), f"{E}.note", "GitHub token"),
}
FURTHER_SECRETS = ("abc", "hunter2", JWT, "MHcCAQEEIB", "lQOYBF", AWS_SECRET, GHP, "admin:hunter2")


@pytest.mark.parametrize("case", sorted(FURTHER_ENCODINGS))
def test_further_credential_encodings_are_rejected(case: str) -> None:
    cluster, path, reason = FURTHER_ENCODINGS[case]
    errs = admit(with_cluster(cluster), None, {})
    assert len(errs) == 1 and errs[0].type == "FieldValueForbidden", messages(errs)
    if path is not None:
        assert errs[0].field == path
    assert reason in errs[0].detail
    text = str(errs[0])
    for secret in FURTHER_SECRETS:
        assert secret not in text.replace(errs[0].field, "")


@pytest.mark.parametrize("case, value, reason", [
    ("compound-keys", {"github_token": "x1"}, "names a credential"),
    ("compound-keys", {"api-key": "x1"}, "credential"),
    ("compound-keys", {"API_KEY": "x1"}, "credential"),
    ("compound-keys", {"bearer": "x1"}, "credential"),
    ("compound-keys", {"privateKey": "x1"}, "credential"),
    ("compound-keys", {"slackWebhookSecret": "x1"}, "credential"),
    ("credentials-key", {"credential": "x1"}, "credential"),
    ("base64-token", {"header": b64("Bearer abcdefghijklmnopqrstuvwxyz012345")}, "base64-encoded, contains a bearer token"),
    ("jwt-shapes", {"id": "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiJ9."}, "JSON Web Token"),
    ("jwt-shapes", {"jwe": "eyJlbmMiOiJBMjU2R0NNIiwiYWxnIjoiZGlyIn0..aGVsbG8gd29ybGQ.Y2lwaGVydGV4dA.dGFn"}, "JSON Web Token"),
    ("pem-anywhere", {"ssh": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n-----END OPENSSH PRIVATE KEY-----"}, "PEM private key"),
    ("pem-anywhere", {KEY_PEM: "as a field name"}, "a field name that contains a PEM private key"),
    ("pem-anywhere", {"putty": "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none"}, "PEM private key"),
    ("aws-keys", {"pair": f"{AWS_ID}:{AWS_SECRET}"}, "AWS access key pair"),
    ("known-token-formats", {"auth": "Basic " + b64("admin:hunter2")}, "HTTP basic credentials"),
    ("known-token-formats", {"gitlab": "glpat-" + "x1Y2z3" * 4}, "GitLab token"),
    ("known-token-formats", {"script": "export GITHUB_TOKEN=x1y2z3"}, '"GITHUB_TOKEN"'),
    ("flag-space-in-string", {"args": "--client-secret=s3cr3t"}, '"--client-secret"'),
])
def test_further_encodings_variants(case: str, value: dict, reason: str) -> None:
    errs = admit(with_cluster(ext(value)), None, {})
    assert len(errs) == 1 and reason in errs[0].detail, (case, messages(errs))
    assert KEY_PEM not in str(errs[0])


def test_a_token_in_a_label_is_found() -> None:
    obj = profile(labels={"x-k8s.io/cluster-manager": "mgr", "ci": GHP})
    assert [e.field for e in admit(obj, None, {})] == ["metadata.labels[ci]"]


def test_deep_but_legitimate_nesting_and_the_new_rules_leave_real_profiles_alone() -> None:
    obj = with_cluster({
        "server": "https://fleet@spoke.example:6443/clusters/a",  # a user name alone is no password
        "proxy-url": "http://proxy.example:3128",
        "certificate-authority-data": CA,
        "extensions": [
            {"name": "client.authentication.k8s.io/exec", "extension": {
                "clusterName": "spoke-1", "publicKey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI", "tokenFile": "/var/run/t",
                "secretName": "spoke-1-token", "githubTokenSecretRef": {"name": "gh", "key": "token"},
                "passwordFile": "/etc/p", "credentialsSecret": {"name": "creds"}, "keyId": "k1",
                "awsAccessKeyId": "AKIAIOSFODNN7EXAMPLE", "region": "eu-west-1",
                "command": "plugin --token-file /var/run/t --audience sts.amazonaws.com",
                "level": nested(20), "description": "ControlPlaneHealthy", "id": "abcdefghijklmnopqrstuvwxyz0123456789",
                "secretNamespace": "fleet", "passwordPolicy": "strict", "tokenTTL": "300",
            }},
            {"name": "clusterprofiles.multicluster.x-k8s.io/exec/additional-args",
             "extension": ["--audience", "https://spoke.example", "--tenant", "my-tenant-id"]},
        ],
    })
    obj["status"]["conditions"] = [{"type": "ControlPlaneHealthy", "status": "False", "reason": "Unauthorized",
                                    "message": "bearer token rejected\ntoken: expired", "lastTransitionTime": "2024-01-01T00:00:00Z"}]
    assert find_credentials(obj) == []
    assert admit(obj, None, {}) == []


def test_real_ca_bundles_are_not_mistaken_for_secrets() -> None:
    """certificate-authority-data is base64 of PEM base64: both layers are scanned, neither may trip."""
    import datetime as dt

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = dt.datetime.now(dt.UTC)
    for i in range(40):
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"spoke-{i}-ca")])
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                .serial_number(x509.random_serial_number()).not_valid_before(now)
                .not_valid_after(now + dt.timedelta(days=365))
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                .sign(key, hashes.SHA256()))
        pem = cert.public_bytes(serialization.Encoding.PEM)
        obj = with_cluster({"certificate-authority-data": base64.b64encode(pem).decode()})
        assert find_credentials(obj) == [], i


@pytest.mark.parametrize("name, secret", [
    ("GITHUB_TOKEN", True), ("AWS_SECRET_ACCESS_KEY", True), ("AWS_SESSION_TOKEN", True), ("CLIENT_SECRET", True),
    ("DB_PASSWORD", True), ("OPENAI_API_KEY", True), ("SIGNING_PRIVATE_KEY", True), ("VAULT_TOKEN", True),
    ("CLIENT_ID", False), ("TENANT_ID", False), ("AZURE_FEDERATED_TOKEN_FILE", False), ("AWS_ACCESS_KEY_ID", False),
    ("TOKEN_AUDIENCE", False), ("KUBECONFIG", False), ("SECRET_NAME", False), ("HTTPS_PROXY", False),
])
def test_secret_env_names(name: str, secret: bool) -> None:
    assert is_secret_env_name(name) is secret


# -- ClusterSet namespaces --------------------------------------------------------------------------

UPSTREAM = {"multicluster.x-k8s.io/clusterset": "prod"}
KEP_KEY = {"clusterset.multicluster.x-k8s.io": "prod"}


@pytest.mark.parametrize("ns_labels", [UPSTREAM, KEP_KEY, {**UPSTREAM, **KEP_KEY}], ids=["upstream-key", "kep-key", "both"])
def test_clusterset_namespace(ns_labels: dict) -> None:
    assert admit(profile(), None, ns_labels) == []  # no claim: the namespace says which ClusterSet
    ok = profile(labels={"multicluster.x-k8s.io/clusterset": "prod", "clusterset.multicluster.x-k8s.io": "prod"},
                 status={"properties": [{"name": "clusterset.k8s.io", "value": "prod"}]})
    assert admit(ok, None, ns_labels) == []
    bad = profile(labels={"clusterset.multicluster.x-k8s.io": "dev"},
                  status={"properties": [{"name": "clusterset.k8s.io", "value": "dev"}]})
    errs = admit(bad, None, ns_labels)
    assert [e.field for e in errs] == ["metadata.labels[clusterset.multicluster.x-k8s.io]", "status.properties[0].value"]
    assert 'ClusterSet "prod"' in errs[0].detail and "KEP-4322" in errs[0].detail


def test_clusterset_rules_only_apply_to_clusterset_namespaces() -> None:
    # the KEP's own example claims a ClusterSet by property in an unlabelled namespace
    obj = profile(status={"properties": [{"name": "clusterset.k8s.io", "value": "some-clusterset"}]})
    assert admit(obj, None, {"team": "x"}) == []


def test_ambiguous_clusterset_namespace() -> None:
    errs = admit(profile(), None, {"multicluster.x-k8s.io/clusterset": "a", "clusterset.multicluster.x-k8s.io": "b"})
    assert [e.field for e in errs] == ["metadata.namespace"]
    assert "two different ClusterSets" in errs[0].detail


def test_clusterset_rule_ratchets_when_the_namespace_is_relabelled() -> None:
    old = profile(labels={"x-k8s.io/cluster-manager": "mgr"}, status={"properties": [{"name": "clusterset.k8s.io", "value": "dev"}]})
    new = copy.deepcopy(old)
    new["metadata"]["finalizers"] = []
    assert admit(new, old, UPSTREAM) == []  # existing, unchanged claim: may still be updated
    new["status"]["properties"][0]["value"] = "staging"
    assert admit(new, old, UPSTREAM)  # a new wrong claim is not


def test_validate_does_not_mutate() -> None:
    obj = profile()
    assert validate(obj) == []
    assert "labels" not in obj["metadata"]
