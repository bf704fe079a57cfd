"""ServiceAccount tokens (TokenRequest, legacy token Secrets, TokenReview, OIDC discovery) and
OIDC users, with the real kubectl against a real hub and a real HTTPS issuer."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import yaml

from ..harness import Hub, Kubectl
from ..oidc_issuer import OIDCIssuer


def bearer(hub: Hub, token: str, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    code, _, raw = hub.request(method, path, body, auth=False, headers={"Authorization": f"Bearer {token}"})
    return code, json.loads(raw) if raw else {}


def token_kubeconfig(hub: Hub, directory: Path, token: str, cluster: str) -> Path:
    cfg = yaml.safe_load(hub.kubeconfig_for(cluster, directory).read_text())
    cfg["users"] = [{"name": "sa", "user": {"token": token}}]
    for c in cfg["contexts"]:
        c["context"]["user"] = "sa"
    path = directory / f"kubeconfig-token-{cluster}"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_kubectl_create_token_and_what_the_token_may_do(auth_hub: Hub, admin_in, tmp_path: Path) -> None:
    admin = admin_in("sa-team", "default")
    admin("create", "serviceaccount", "robot")
    admin("create", "configmap", "robot-config", "--from-literal=a=b")
    admin("create", "rolebinding", "robot-view", "--clusterrole=view", "--serviceaccount=default:robot")
    token = admin("create", "token", "robot", "--duration=20m").out.strip()
    claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    assert claims["iss"] == f"{auth_hub.url}/clusters/sa-team" and claims["aud"] == [claims["iss"]]
    assert claims["sub"] == "system:serviceaccount:default:robot" and 1190 <= claims["exp"] - claims["iat"] <= 1200
    robot = Kubectl(token_kubeconfig(auth_hub, tmp_path, token, "sa-team"), namespace="default")
    who = robot("auth", "whoami", "-o", "json").json()["status"]["userInfo"]
    assert who["username"] == "system:serviceaccount:default:robot"
    assert who["groups"] == ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"]
    assert robot("get", "configmap", "robot-config", "-o", "name").out.strip() == "configmap/robot-config"
    assert "Forbidden" in robot("get", "secrets", check=False).err
    # issued in sa-team, refused anywhere else
    assert bearer(auth_hub, token, "GET", "/clusters/other-team/api/v1/namespaces/default/configmaps")[0] == 401
    assert bearer(auth_hub, token, "GET", "/api/v1/namespaces/default/configmaps")[0] == 401
    # a token for another audience is not a credential for the hub
    vault = admin("create", "token", "robot", "--audience=vault").out.strip()
    assert bearer(auth_hub, vault, "GET", "/clusters/sa-team/api/v1/namespaces/default/configmaps")[0] == 401
    # deleting the ServiceAccount revokes its tokens at once
    admin("delete", "serviceaccount", "robot")
    assert bearer(auth_hub, token, "GET", "/clusters/sa-team/api/v1/namespaces/default/configmaps")[0] == 401


def test_token_request_validation(auth_hub: Hub) -> None:
    assert auth_hub.json("POST", "/clusters/sa-v/api/v1/namespaces/default/serviceaccounts",
                         {"metadata": {"name": "short"}})[0] == 201
    path = "/clusters/sa-v/api/v1/namespaces/default/serviceaccounts/short/token"
    code, body = auth_hub.json("POST", path, {"spec": {"expirationSeconds": 60}})
    assert code == 422 and "may not specify a duration less than 10 minutes" in body["message"]
    code, body = auth_hub.json("POST", "/clusters/sa-v/api/v1/namespaces/default/serviceaccounts/nobody/token", {"spec": {}})
    assert (code, body["message"]) == (404, 'serviceaccounts "nobody" not found')
    code, body = auth_hub.json("POST", path, {"spec": {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p"}}})
    assert code == 400 and "cannot bind token to object of type" in body["message"]
    code, body = auth_hub.json("POST", path, {"spec": {}})
    assert code == 201 and body["kind"] == "TokenRequest" and body["status"]["token"]
    code, body = auth_hub.json("GET", "/clusters/sa-v/api/v1")
    token_sub = next(r for r in body["resources"] if r["name"] == "serviceaccounts/token")
    assert token_sub["verbs"] == ["create"]


def test_legacy_token_secrets_are_filled_and_die_with_their_secret(auth_hub: Hub, admin_in) -> None:
    admin = admin_in("sa-legacy", "default")
    admin("create", "serviceaccount", "old-school")
    admin("apply", "-f", "-", stdin="""
apiVersion: v1
kind: Secret
metadata: {name: old-school-token, annotations: {kubernetes.io/service-account.name: old-school}}
type: kubernetes.io/service-account-token
""")
    secret = admin.get_json("secret", "old-school-token")
    assert secret["metadata"]["annotations"]["kubernetes.io/service-account.uid"]
    assert base64.b64decode(secret["data"]["namespace"]) == b"default"
    assert base64.b64decode(secret["data"]["ca.crt"]).startswith(b"-----BEGIN CERTIFICATE-----")
    token = base64.b64decode(secret["data"]["token"]).decode()
    code, body = bearer(auth_hub, token, "POST", "/clusters/sa-legacy/apis/authentication.k8s.io/v1/selfsubjectreviews",
                        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    assert code == 201 and body["status"]["userInfo"]["username"] == "system:serviceaccount:default:old-school"
    admin("delete", "secret", "old-school-token")
    assert bearer(auth_hub, token, "POST", "/clusters/sa-legacy/apis/authentication.k8s.io/v1/selfsubjectreviews",
                  {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})[0] == 401
    err = admin("apply", "-f", "-", check=False, stdin="""
apiVersion: v1
kind: Secret
metadata: {name: orphan-token, annotations: {kubernetes.io/service-account.name: ghost}}
type: kubernetes.io/service-account-token
""").err
    assert 'serviceaccount "ghost" not found' in err


def test_token_review_and_discovery_documents(auth_hub: Hub, admin_in) -> None:
    admin = admin_in("sa-review", "default")
    admin("create", "serviceaccount", "reviewer")
    admin("create", "clusterrolebinding", "reviewer-delegator", "--clusterrole=system:auth-delegator",
          "--serviceaccount=default:reviewer")
    reviewer = admin("create", "token", "reviewer").out.strip()
    subject = admin("create", "token", "reviewer", "--duration=15m").out.strip()
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": subject}}
    code, body = bearer(auth_hub, reviewer, "POST", "/clusters/sa-review/apis/authentication.k8s.io/v1/tokenreviews", review)
    assert code == 201 and body["status"]["authenticated"] is True
    assert body["status"]["user"]["username"] == "system:serviceaccount:default:reviewer"
    assert "token" not in body["spec"]
    code, body = bearer(auth_hub, reviewer, "POST", "/clusters/sa-review/apis/authentication.k8s.io/v1/tokenreviews",
                        {**review, "spec": {"token": "garbage"}})
    assert code == 201 and not body["status"].get("authenticated")
    code, doc = bearer(auth_hub, reviewer, "GET", "/clusters/sa-review/.well-known/openid-configuration")
    assert code == 200 and doc["issuer"] == f"{auth_hub.url}/clusters/sa-review"
    assert doc["jwks_uri"] == f"{auth_hub.url}/clusters/sa-review/openid/v1/jwks"
    code, jwks = bearer(auth_hub, reviewer, "GET", "/clusters/sa-review/openid/v1/jwks")
    assert code == 200 and jwks["keys"][0]["use"] == "sig" and jwks["keys"][0]["alg"] == "RS256"
    # anonymous gets no discovery of the issuer (kube binds it to ServiceAccounts only)
    assert auth_hub.request("GET", "/clusters/sa-review/.well-known/openid-configuration", auth=False)[0] == 403


@pytest.fixture(scope="module")
def oidc_hub(tmp_path_factory: pytest.TempPathFactory):
    d = tmp_path_factory.mktemp("oidchub")
    with OIDCIssuer() as issuer:
        config = {"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AuthenticationConfiguration",
                  "jwt": [{"issuer": {"url": issuer.url, "audiences": ["fleetplane"], "certificateAuthority": issuer.ca_pem},
                           "claimMappings": {"username": {"claim": "email", "prefix": "oidc:"},
                                             "groups": {"claim": "groups", "prefix": "oidc:"}},
                           "claimValidationRules": [{"expression": "claims.hd == 'example.com'", "message": "wrong domain"}]}],
                  "anonymous": {"enabled": True, "conditions": [{"path": "/livez"}, {"path": "/readyz"}, {"path": "/healthz"}]}}
        (d / "authn.yaml").write_text(yaml.safe_dump(config))
        hub = Hub(d / "data", extra=["--authentication-config", str(d / "authn.yaml"), "--no-cluster-controller",
                                     "--no-splitter"]).start()
        try:
            yield hub, issuer
        finally:
            hub.stop()


def test_oidc_users(oidc_hub, tmp_path: Path) -> None:
    hub, issuer = oidc_hub
    admin = Kubectl(hub.kubeconfig_for("oidc-team", tmp_path), namespace="default")
    admin("create", "rolebinding", "eng-view", "--clusterrole=view", "--group=oidc:eng")
    good = issuer.mint(sub="1", email="ann@example.com", email_verified=True, hd="example.com", groups=["eng"], aud="fleetplane")
    ann = Kubectl(token_kubeconfig(hub, tmp_path, good, "oidc-team"), namespace="default")
    who = ann("auth", "whoami", "-o", "json").json()["status"]["userInfo"]
    assert who["username"] == "oidc:ann@example.com" and who["groups"] == ["oidc:eng", "system:authenticated"]
    assert ann("get", "configmaps", check=False).code == 0
    assert "Forbidden" in ann("get", "secrets", check=False).err
    for bad in (issuer.mint(sub="2", email="eve@evil.com", email_verified=True, hd="evil.com", groups=["eng"], aud="fleetplane"),
                issuer.mint(sub="1", email="ann@example.com", email_verified=True, hd="example.com", aud="someone-else"),
                issuer.mint(sub="1", email="ann@example.com", email_verified=True, hd="example.com", aud="fleetplane", expires_in=-600),
                issuer.mint(sub="1", email="ann@example.com", email_verified=True, hd="example.com", aud="fleetplane", unpublished=True)):
        assert bearer(hub, bad, "GET", "/clusters/oidc-team/api/v1/namespaces/default/configmaps")[0] == 401
    # anonymous limited by the configuration to the health paths
    assert hub.request("GET", "/healthz", auth=False)[0] == 200
    assert hub.request("GET", "/version", auth=False)[0] == 401


def test_no_credential_or_secret_value_reaches_the_log(auth_hub: Hub, admin_in) -> None:
    admin = admin_in("logs-team", "default")
    admin("create", "serviceaccount", "quiet")
    admin("create", "secret", "generic", "quiet-secret", "--from-literal=password=do-not-log-me-7731")
    token = admin("create", "token", "quiet").out.strip()
    forged = token[:-8] + ("A" * 8 if not token.endswith("A" * 8) else "B" * 8)
    for t in (token, forged, "static-but-wrong-token-5512"):
        bearer(auth_hub, t, "GET", "/clusters/logs-team/api/v1/namespaces/default/secrets/quiet-secret")
    bearer(auth_hub, token, "GET", "/clusters/other-team/api/v1/namespaces/default/secrets")  # wrong cluster: logged refusal
    admin("delete", "serviceaccount", "quiet")
    bearer(auth_hub, token, "GET", "/clusters/logs-team/api/v1/namespaces/default/secrets")  # revoked: logged refusal
    log = auth_hub.log.read_text()
    assert "authentication failed" in log  # the refusals are logged ...
    for s in (token, forged, token.split(".")[2], "static-but-wrong-token-5512", "do-not-log-me-7731",
              base64.b64encode(b"do-not-log-me-7731").decode(), auth_hub.token, "alice-token-0123456789"):
        assert s not in log  # ... without what was presented
