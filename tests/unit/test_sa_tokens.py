"""ServiceAccount tokens: issuing, discovery documents, TokenRequest validation, verification."""

from __future__ import annotations

import base64
import hashlib
import json
import stat
import time
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from fleetplane.apimachinery.errors import StatusError
from fleetplane.pipeline.authentication.errors import AuthenticationError
from fleetplane.pipeline.authentication.serviceaccount import (
    INVALID_SINCE_LABEL,
    LEGACY_ISSUER,
    ServiceAccountAuthenticator,
    SigningKey,
    TokenIssuer,
    bound_secret,
    key_id,
    load_or_create_signing_key,
    peek_cluster,
    validate_token_request,
)
from fleetplane.pipeline.user import CLUSTER_EXTRA, CREDENTIAL_ID

from ..oidc_issuer import OIDCIssuer

HUB = "https://hub.example:6443"


class Clock:
    def __init__(self) -> None:
        self.now = float(int(time.time()))

    def __call__(self) -> float:
        return self.now


class Cache:
    """The hub's informer cache as the authenticator sees it: (cluster, ns, name) -> object."""

    def __init__(self) -> None:
        self.sas: dict[tuple[str, str, str], dict] = {}
        self.secrets: dict[tuple[str, str, str], dict] = {}

    def service_account(self, cluster: str, namespace: str, name: str) -> dict | None:
        return self.sas.get((cluster, namespace, name))

    def secret(self, cluster: str, namespace: str, name: str) -> dict | None:
        return self.secrets.get((cluster, namespace, name))

    def add_sa(self, cluster: str, ns: str, name: str, uid: str) -> None:
        self.sas[(cluster, ns, name)] = {"metadata": {"name": name, "namespace": ns, "uid": uid}}

    def add_secret(self, cluster: str, ns: str, name: str, uid: str, token: str | None = None,
                   labels: dict | None = None) -> None:
        obj: dict = {"metadata": {"name": name, "namespace": ns, "uid": uid, "labels": labels or {}}}
        if token is not None:
            obj["data"] = {"token": base64.b64encode(token.encode()).decode()}
        self.secrets[(cluster, ns, name)] = obj


@pytest.fixture(scope="module")
def key() -> SigningKey:
    return SigningKey.of(rsa.generate_private_key(public_exponent=65537, key_size=2048))


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def issuer(key: SigningKey, clock: Clock) -> TokenIssuer:
    return TokenIssuer(key, HUB + "/", clock=clock)


@pytest.fixture
def cache() -> Cache:
    c = Cache()
    for cluster in ("root", "team-a", "team-b"):
        c.add_sa(cluster, "default", "bot", f"uid-{cluster}")
    return c


@pytest.fixture
def authn(issuer: TokenIssuer, cache: Cache) -> ServiceAccountAuthenticator:
    return ServiceAccountAuthenticator(issuer, cache)


def payload(token: str) -> dict:
    part = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def header(token: str) -> dict:
    part = token.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def refused(authn: ServiceAccountAuthenticator, token: str, cluster: str) -> str:
    with pytest.raises(AuthenticationError) as exc:
        authn.authenticate(token, cluster)
    assert token not in str(exc.value)
    return str(exc.value)


# ---------------------------------------------------------------------------------------------
# keys and discovery
# ---------------------------------------------------------------------------------------------


def test_signing_key_created_once_0600_with_kube_key_id(tmp_path: Path) -> None:
    path = tmp_path / "data" / "pki" / "service-account.key"
    k1 = load_or_create_signing_key(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert isinstance(k1.private_key, rsa.RSAPrivateKey) and k1.private_key.key_size == 2048
    assert k1.alg == "RS256"
    der = k1.private_key.public_key().public_bytes(serialization.Encoding.DER,
                                                   serialization.PublicFormat.SubjectPublicKeyInfo)
    assert k1.kid == base64.urlsafe_b64encode(hashlib.sha256(der).digest()).rstrip(b"=").decode()
    k2 = load_or_create_signing_key(path)
    assert k2.kid == k1.kid
    assert list(path.parent.iterdir()) == [path]  # no temporary files left


def test_existing_ec_key_is_loaded(tmp_path: Path) -> None:
    path = tmp_path / "ec.key"
    pk = ec.generate_private_key(ec.SECP256R1())
    path.write_bytes(pk.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
    k = load_or_create_signing_key(path)
    assert (k.alg, k.kid) == ("ES256", key_id(pk.public_key()))


def test_discovery_documents(issuer: TokenIssuer, key: SigningKey) -> None:
    assert issuer.issuer_url("team-a") == HUB + "/clusters/team-a"
    assert issuer.openid_configuration("team-a") == {
        "issuer": HUB + "/clusters/team-a",
        "jwks_uri": HUB + "/clusters/team-a/openid/v1/jwks",
        "response_types_supported": ["id_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
    }
    jwks = issuer.jwks()
    assert [list(k) for k in jwks["keys"]] == [["use", "kty", "kid", "alg", "n", "e"]]
    assert jwks["keys"][0]["kid"] == key.kid and jwks["keys"][0]["e"] == "AQAB"


def test_tokens_verify_with_the_published_jwks(issuer: TokenIssuer) -> None:
    """A relying party (PyJWT here) can verify our tokens from discovery alone."""
    token, _ = issuer.issue("team-a", "default", "bot", "uid-team-a", ["vault"], 3600)
    jwk = jwt.PyJWKSet.from_dict(issuer.jwks())[header(token)["kid"]]
    claims = jwt.decode(token, jwk.key, algorithms=["RS256"], audience="vault",
                        issuer=issuer.openid_configuration("team-a")["issuer"])
    assert claims["sub"] == "system:serviceaccount:default:bot"


def test_verify_keys_for_rotation(key: SigningKey, clock: Clock, cache: Cache) -> None:
    old = TokenIssuer(SigningKey.of(rsa.generate_private_key(public_exponent=65537, key_size=2048)), HUB, clock=clock)
    new = TokenIssuer(key, HUB, verify_keys=[old.key.private_key.public_key()], clock=clock)
    assert [k["kid"] for k in new.jwks()["keys"]] == [key.kid, old.key.kid]
    token, _ = old.issue("root", "default", "bot", "uid-root", None, 3600)
    assert ServiceAccountAuthenticator(new, cache).authenticate(token, "root") is not None


# ---------------------------------------------------------------------------------------------
# issuing
# ---------------------------------------------------------------------------------------------


def test_bound_token_claims(issuer: TokenIssuer, key: SigningKey, clock: Clock) -> None:
    token, expires = issuer.issue("team-a", "default", "bot", "uid-team-a", None, 3600,
                                  {"kind": "Secret", "name": "s1", "uid": "suid"})
    assert header(token) == {"alg": "RS256", "kid": key.kid}
    c = payload(token)
    now = int(clock.now)
    assert list(c) == sorted(c)  # go-jose marshals the merged claims as a map
    assert c["iss"] == HUB + "/clusters/team-a"
    assert c["aud"] == [HUB + "/clusters/team-a"]
    assert c["sub"] == "system:serviceaccount:default:bot"
    assert (c["iat"], c["nbf"], c["exp"]) == (now, now, now + 3600)
    assert len(c["jti"]) == 36
    assert c["kubernetes.io"] == {"clusterName": "team-a", "namespace": "default",
                                  "secret": {"name": "s1", "uid": "suid"},
                                  "serviceaccount": {"name": "bot", "uid": "uid-team-a"}}
    assert expires.timestamp() == now + 3600 and expires.tzinfo is not None


def test_issue_caps_at_max_expiration(key: SigningKey, clock: Clock) -> None:
    issuer = TokenIssuer(key, HUB, max_expiration_seconds=7200, clock=clock)
    token, expires = issuer.issue("root", "default", "bot", "u", ["x"], 86400)
    assert payload(token)["exp"] - payload(token)["iat"] == 7200
    assert payload(token)["aud"] == ["x"]


def test_legacy_token_claims(issuer: TokenIssuer) -> None:
    c = payload(issuer.issue_legacy("team-a", "default", "bot", "uid-team-a", "bot-token"))
    assert c == {
        "iss": "kubernetes/serviceaccount",
        "kubernetes.io/serviceaccount/clusterName": "team-a",
        "kubernetes.io/serviceaccount/namespace": "default",
        "kubernetes.io/serviceaccount/secret.name": "bot-token",
        "kubernetes.io/serviceaccount/service-account.name": "bot",
        "kubernetes.io/serviceaccount/service-account.uid": "uid-team-a",
        "sub": "system:serviceaccount:default:bot",
    }


def test_peek_cluster(issuer: TokenIssuer) -> None:
    assert peek_cluster(issuer.issue("team-a", "default", "bot", "u", None, 3600)[0], issuer) == "team-a"
    assert peek_cluster(issuer.issue_legacy("team-b", "default", "bot", "u", "s"), issuer) == "team-b"
    assert peek_cluster("not-a-token", issuer) is None


# ---------------------------------------------------------------------------------------------
# TokenRequest validation
# ---------------------------------------------------------------------------------------------


def test_token_request_defaults() -> None:
    assert validate_token_request({"spec": {}}, 86400) == ([], 3600, None)
    assert validate_token_request({}, 86400) == ([], 3600, None)
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"audiences": ["vault"], "expirationSeconds": 600}}
    assert validate_token_request(body, 86400) == (["vault"], 600, None)


@pytest.mark.parametrize("seconds, detail", [
    (599, "may not specify a duration less than 10 minutes"),
    (0, "may not specify a duration less than 10 minutes"),
    ((1 << 32) + 1, "may not specify a duration larger than 2^32 seconds"),
])
def test_token_request_duration_is_invalid(seconds: int, detail: str) -> None:
    with pytest.raises(StatusError) as exc:
        validate_token_request({"spec": {"expirationSeconds": seconds}}, 0)
    err = exc.value
    assert (err.code, err.reason) == (422, "Invalid")
    assert err.message == (f'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: '
                           f"Invalid value: {seconds}: {detail}")
    assert err.details == {"name": "", "group": "authentication.k8s.io", "kind": "TokenRequest", "causes": [
        {"reason": "FieldValueInvalid", "message": f"Invalid value: {seconds}: {detail}",
         "field": "spec.expirationSeconds"}]}


def test_token_request_is_capped_with_kube_warning() -> None:
    warnings: list[str] = []
    assert validate_token_request({"spec": {"expirationSeconds": 1 << 32}}, 86400, warnings=warnings)[1] == 86400
    assert warnings == [f"requested expiration of {1 << 32} seconds shortened to 86400 seconds"]


def test_token_request_body_name_must_match() -> None:
    with pytest.raises(StatusError) as exc:
        validate_token_request({"metadata": {"name": "other"}}, 0, name="bot", namespace="default")
    assert exc.value.message == ('TokenRequest.authentication.k8s.io "bot" is invalid: metadata.name: '
                                 'Invalid value: "other": must match the service account name if specified')


def test_token_request_bad_types_are_400() -> None:
    with pytest.raises(StatusError) as exc:
        validate_token_request({"spec": {"expirationSeconds": "3600"}}, 0)
    assert exc.value.code == 400


def test_token_request_bound_object_kinds() -> None:
    ref = {"kind": "Secret", "apiVersion": "v1", "name": "s1", "uid": "suid"}
    assert validate_token_request({"spec": {"boundObjectRef": ref}}, 0) == ([], 3600, ref)
    for kind, api_version, text in [("Pod", "v1", "/v1, Kind=Pod"), ("Node", "v1", "/v1, Kind=Node"),
                                    ("ConfigMap", "v1", "/v1, Kind=ConfigMap"),
                                    ("Secret", "apps/v1", "apps/v1, Kind=Secret")]:
        with pytest.raises(StatusError) as exc:
            validate_token_request({"spec": {"boundObjectRef": {"kind": kind, "apiVersion": api_version, "name": "x"}}}, 0)
        assert (exc.value.code, exc.value.reason) == (400, "BadRequest")
        assert exc.value.message == f"cannot bind token to object of type {text}"


def test_token_request_validation_comes_before_binding() -> None:
    with pytest.raises(StatusError) as exc:
        validate_token_request({"spec": {"expirationSeconds": 1, "boundObjectRef": {"kind": "Pod"}}}, 0)
    assert exc.value.code == 422


def test_bound_secret_lookup() -> None:
    ref = {"kind": "Secret", "apiVersion": "v1", "name": "s1", "uid": "old"}
    with pytest.raises(StatusError) as exc:
        bound_secret(ref, None)
    assert (exc.value.code, exc.value.message) == (404, 'secrets "s1" not found')
    with pytest.raises(StatusError) as exc:
        bound_secret(ref, {"metadata": {"name": "s1", "uid": "new"}})
    assert (exc.value.code, exc.value.reason) == (409, "Conflict")
    assert exc.value.message == ('Operation cannot be fulfilled on Secret "s1": the UID in the bound object '
                                 "reference (old) does not match the UID in record. The object might have "
                                 "been deleted and then recreated")
    assert bound_secret({**ref, "uid": ""}, {"metadata": {"uid": "new"}}) == {"kind": "Secret", "name": "s1", "uid": "new"}


# ---------------------------------------------------------------------------------------------
# verification
# ---------------------------------------------------------------------------------------------


def test_bound_token_authenticates(issuer: TokenIssuer, authn: ServiceAccountAuthenticator) -> None:
    token, _ = issuer.issue("team-a", "default", "bot", "uid-team-a", None, 3600)
    user = authn.authenticate(token, "team-a")
    assert user is not None
    assert user.name == "system:serviceaccount:default:bot"
    assert user.uid == "uid-team-a"
    assert user.groups == ("system:serviceaccounts", "system:serviceaccounts:default")
    assert user.extra == {CREDENTIAL_ID: (f"JTI={payload(token)['jti']}",), CLUSTER_EXTRA: ("team-a",)}


def test_tokens_not_ours_are_left_to_others(issuer: TokenIssuer, authn: ServiceAccountAuthenticator) -> None:
    assert authn.authenticate("opaque-static-token", "root") is None
    assert authn.authenticate("a.b.c", "root") is None
    assert authn.authenticate('{"payload": 1}', "root") is None
    other = TokenIssuer(SigningKey.of(ec.generate_private_key(ec.SECP256R1())), "https://elsewhere.example")
    assert authn.authenticate(other.issue("root", "default", "bot", "uid-root", None, 3600)[0], "root") is None
    with OIDCIssuer() as idp:
        assert authn.authenticate(idp.mint(sub="alice", aud="x"), "root") is None


def test_forged_and_tampered_tokens(issuer: TokenIssuer, authn: ServiceAccountAuthenticator, clock: Clock) -> None:
    forger = TokenIssuer(SigningKey.of(rsa.generate_private_key(public_exponent=65537, key_size=2048)), HUB, clock=clock)
    forged, _ = forger.issue("root", "default", "bot", "uid-root", None, 3600)
    assert refused(authn, forged, "root") == "invalid signature, no keys found"  # unknown kid
    # same kid, wrong key
    h, p, s = forged.split(".")
    same_kid = base64.urlsafe_b64encode(json.dumps(header(issuer.issue("root", "d", "b", "u", None, 3600)[0])).encode()).rstrip(b"=").decode()
    assert refused(authn, f"{same_kid}.{p}.{s}", "root") == "go-jose/go-jose: error in cryptographic primitive"
    # a real token with an edited payload
    token, _ = issuer.issue("root", "default", "bot", "uid-root", None, 3600)
    h, p, s = token.split(".")
    claims = payload(token)
    claims["kubernetes.io"]["serviceaccount"]["name"] = "admin"
    p2 = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    assert refused(authn, f"{h}.{p2}.{s}", "root") == "go-jose/go-jose: error in cryptographic primitive"


def test_expired_and_not_yet_valid(issuer: TokenIssuer, authn: ServiceAccountAuthenticator, clock: Clock) -> None:
    token, _ = issuer.issue("root", "default", "bot", "uid-root", None, 600)
    clock.now += 600 + 60  # within go-jose's minute of leeway
    assert authn.authenticate(token, "root") is not None
    clock.now += 1.5
    assert refused(authn, token, "root") == "service account token has expired"
    clock.now -= 2000  # the token was issued "in the future"
    assert refused(authn, token, "root") == "service account token is not valid yet"


def test_audience_must_be_the_clusters_issuer(issuer: TokenIssuer, authn: ServiceAccountAuthenticator) -> None:
    token, _ = issuer.issue("team-a", "default", "bot", "uid-team-a", ["vault"], 3600)
    assert refused(authn, token, "team-a") == (
        f'token audiences ["vault"] is invalid for the target audiences ["{HUB}/clusters/team-a"]')
    both, _ = issuer.issue("team-a", "default", "bot", "uid-team-a", ["vault", HUB + "/clusters/team-a"], 3600)
    assert authn.authenticate(both, "team-a") is not None


@pytest.mark.parametrize("target", ["team-b", "root"])
def test_token_of_one_logical_cluster_is_refused_in_another(issuer: TokenIssuer, authn: ServiceAccountAuthenticator,
                                                            target: str) -> None:
    token, _ = issuer.issue("team-a", "default", "bot", "uid-team-a", None, 3600)
    assert authn.authenticate(token, "team-a") is not None  # verified and cached
    assert refused(authn, token, target) == f'service account token is for logical cluster "team-a", not "{target}"'
    # even with the target's audience in the token, and in a TokenReview asking for it
    token, _ = issuer.issue("team-a", "default", "bot", "uid-team-a", [issuer.issuer_url(target)], 3600)
    assert refused(authn, token, target).startswith("service account token is for logical cluster")
    assert authn.review(token, target, [issuer.issuer_url(target)])["error"].startswith("service account token is for")


def test_deleted_service_account_stops_its_tokens_at_once(issuer: TokenIssuer, authn: ServiceAccountAuthenticator,
                                                          cache: Cache) -> None:
    token, _ = issuer.issue("team-a", "default", "bot", "uid-team-a", None, 3600)
    assert authn.authenticate(token, "team-a") is not None  # now in the verification cache
    del cache.sas[("team-a", "default", "bot")]
    assert refused(authn, token, "team-a") == 'serviceaccounts "bot" not found'
    cache.add_sa("team-a", "default", "bot", "recreated")
    assert refused(authn, token, "team-a") == "service account UID (recreated) does not match claim (uid-team-a)"


def test_terminating_service_account(issuer: TokenIssuer, authn: ServiceAccountAuthenticator, cache: Cache,
                                     clock: Clock) -> None:
    token, _ = issuer.issue("root", "default", "bot", "uid-root", None, 3600)
    meta = cache.sas[("root", "default", "bot")]["metadata"]
    meta["deletionTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(clock.now - 30))
    assert authn.authenticate(token, "root") is not None  # deleted less than a leeway ago
    meta["deletionTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(clock.now - 120))
    assert refused(authn, token, "root") == "service account default/bot has been deleted"


def test_secret_bound_token(issuer: TokenIssuer, authn: ServiceAccountAuthenticator, cache: Cache) -> None:
    cache.add_secret("team-a", "default", "s1", "suid")
    token, _ = issuer.issue("team-a", "default", "bot", "uid-team-a", None, 3600,
                            bound_secret({"name": "s1"}, cache.secret("team-a", "default", "s1")))
    assert authn.authenticate(token, "team-a") is not None
    cache.add_secret("team-a", "default", "s1", "other")
    assert refused(authn, token, "team-a") == "secret UID (other) does not match service account secret ref claim (suid)"
    del cache.secrets[("team-a", "default", "s1")]
    assert refused(authn, token, "team-a") == "service account token has been invalidated"


def test_legacy_secret_token(issuer: TokenIssuer, authn: ServiceAccountAuthenticator, cache: Cache) -> None:
    token = issuer.issue_legacy("team-a", "default", "bot", "uid-team-a", "bot-token")
    assert payload(token)["iss"] == LEGACY_ISSUER
    cache.add_secret("team-a", "default", "bot-token", "suid", token)
    user = authn.authenticate(token, "team-a")
    assert user is not None and user.name == "system:serviceaccount:default:bot"
    assert user.extra == {CLUSTER_EXTRA: ("team-a",)}
    assert refused(authn, token, "team-b") == 'service account token is for logical cluster "team-a", not "team-b"'

    other = issuer.issue_legacy("team-a", "default", "bot", "uid-team-a", "bot-token") + ""
    cache.add_secret("team-a", "default", "bot-token", "suid", "a-rotated-token")
    assert refused(authn, token, "team-a") == "Token does not match server's copy"
    assert refused(authn, other, "team-a") == "Token does not match server's copy"
    del cache.secrets[("team-a", "default", "bot-token")]
    assert refused(authn, token, "team-a") == "Token has been invalidated"

    cache.add_secret("team-a", "default", "bot-token", "suid", token, labels={INVALID_SINCE_LABEL: "2024-01-01"})
    assert refused(authn, token, "team-a").startswith(
        "the token in secret default/bot-token for service account default/bot has been marked invalid.")
    cache.add_secret("team-a", "default", "bot-token", "suid", token)
    cache.add_sa("team-a", "default", "bot", "recreated")
    assert refused(authn, token, "team-a") == "ServiceAccount UID (recreated) does not match claim (uid-team-a)"


def test_token_review(issuer: TokenIssuer, authn: ServiceAccountAuthenticator) -> None:
    token, _ = issuer.issue("team-a", "default", "bot", "uid-team-a", ["vault", "other"], 3600)
    status = authn.review(token, "team-a", ["vault"])
    assert status == {"authenticated": True, "audiences": ["vault"], "user": {
        "username": "system:serviceaccount:default:bot", "uid": "uid-team-a",
        "groups": ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"],
        "extra": {CREDENTIAL_ID: [f"JTI={payload(token)['jti']}"], CLUSTER_EXTRA: ["team-a"]}}}
    assert authn.review(token, "team-a", None) == {"user": {}, "error": (
        f'token audiences ["vault" "other"] is invalid for the target audiences ["{HUB}/clusters/team-a"]')}
    assert authn.review("garbage", "team-a", None) == {"user": {}}
    default_aud, _ = issuer.issue("team-a", "default", "bot", "uid-team-a", None, 3600)
    assert authn.review(default_aud, "team-a", [])["audiences"] == [HUB + "/clusters/team-a"]


def test_verification_cache_is_bounded_and_expires(issuer: TokenIssuer, cache: Cache, clock: Clock) -> None:
    authn = ServiceAccountAuthenticator(issuer, cache, cache_size=8)
    tokens = [issuer.issue("root", "default", "bot", "uid-root", None, 3600)[0] for _ in range(20)]
    for t in tokens:
        assert authn.authenticate(t, "root") is not None
    assert len(authn._verified) <= 8
    clock.now += 11
    assert authn.authenticate(tokens[-1], "root") is not None
    assert len(authn._verified) <= 8


def test_per_request_cost(issuer: TokenIssuer, cache: Cache) -> None:
    """The hot path, printed: a cached verification versus a full RSA check."""
    token, _ = issuer.issue("team-a", "default", "bot", "uid-team-a", None, 3600)
    cold = ServiceAccountAuthenticator(issuer, cache, cache_ttl=0)
    warm = ServiceAccountAuthenticator(issuer, cache)
    n = 2000

    def per_call(a: ServiceAccountAuthenticator) -> float:
        a.authenticate(token, "team-a")
        t0 = time.perf_counter()
        for _ in range(n):
            a.authenticate(token, "team-a")
        return (time.perf_counter() - t0) / n * 1e6

    uncached, cached = per_call(cold), per_call(warm)
    print(f"\nServiceAccount token authentication: uncached {uncached:.1f} us/request, "
          f"cached {cached:.1f} us/request")
    assert cached < uncached
