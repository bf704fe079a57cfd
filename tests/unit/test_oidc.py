"""JWT authenticators (kube's AuthenticationConfiguration) against a real HTTPS OIDC issuer."""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest
import yaml

from fleetplane.pipeline.authentication.errors import AuthenticationError
from fleetplane.pipeline.authentication.oidc import (
    AnonymousConfig,
    Authenticators,
    JWTAuthenticator,
    load_authentication_config,
    parse_authentication_config,
    untrusted_issuer,
)
from fleetplane.pipeline.user import CREDENTIAL_ID, UserInfo

from ..oidc_issuer import OMIT, OIDCIssuer


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def idp() -> Iterator[OIDCIssuer]:
    with OIDCIssuer(path="/realms/people") as issuer:
        yield issuer


@pytest.fixture
def fresh_idp() -> Iterator[OIDCIssuer]:
    """An issuer of its own, for tests that count requests or rotate keys."""
    with OIDCIssuer() as issuer:
        yield issuer


def doc(*authenticators: dict, version: str = "v1", **top: Any) -> dict:
    return {"apiVersion": f"apiserver.config.k8s.io/{version}", "kind": "AuthenticationConfiguration",
            "jwt": list(authenticators), **top}


def jwt_config(idp: OIDCIssuer, mappings: dict | None = None, audiences: tuple[str, ...] = ("hub",),
               **more: Any) -> dict:
    issuer: dict[str, Any] = {"url": idp.url, "audiences": list(audiences), "certificateAuthority": idp.ca_pem}
    if len(audiences) > 1:
        issuer["audienceMatchPolicy"] = "MatchAny"
    issuer.update(more.pop("issuer", {}))
    return {"issuer": issuer,
            "claimMappings": mappings or {"username": {"claim": "sub", "prefix": ""}}, **more}


def make(idp: OIDCIssuer, mappings: dict | None = None, **kw: Any) -> JWTAuthenticator:
    options = {k: kw.pop(k) for k in ("clock", "jwks_min_refresh", "retry_interval", "cache_ttl") if k in kw}
    config = parse_authentication_config(doc(jwt_config(idp, mappings, **kw)))
    return JWTAuthenticator(config.jwt[0], **options)


async def refused(a: JWTAuthenticator, token: str) -> str:
    with pytest.raises(AuthenticationError) as exc:
        await a.authenticate(token)
    assert token not in str(exc.value)
    return str(exc.value)


# ---------------------------------------------------------------------------------------------
# claim mappings
# ---------------------------------------------------------------------------------------------


async def test_claims_with_prefixes(idp: OIDCIssuer) -> None:
    a = make(idp, {"username": {"claim": "sub", "prefix": "oidc:"}, "groups": {"claim": "groups", "prefix": "oidc:"},
                   "uid": {"claim": "oid"}})
    user = await a.authenticate(idp.mint(sub="alice", aud="hub", groups=["dev", "ops"], oid="u-1", jti="t-1"))
    assert user == UserInfo("oidc:alice", "u-1", ("oidc:dev", "oidc:ops"))
    assert user is not None and user.extra == {CREDENTIAL_ID: ("JTI=t-1",)}


async def test_groups_claim_may_be_one_string_or_absent(idp: OIDCIssuer) -> None:
    a = make(idp, {"username": {"claim": "sub", "prefix": ""}, "groups": {"claim": "role", "prefix": ""}})
    assert (await a.authenticate(idp.mint(sub="alice", aud="hub", role="admin"))).groups == ("admin",)
    assert (await a.authenticate(idp.mint(sub="bob", aud="hub"))).groups == ()
    assert await refused(a, idp.mint(sub="carol", aud="hub", role={"x": 1})) == (
        'oidc: parse groups claim "role": json: cannot unmarshal object into Go value of type string')


async def test_username_and_uid_claims_must_be_strings(idp: OIDCIssuer) -> None:
    a = make(idp, {"username": {"claim": "sub", "prefix": ""}, "uid": {"claim": "oid"}})
    assert await refused(a, idp.mint(sub=42, aud="hub", oid="x")) == (
        'oidc: parse username claims "sub": json: cannot unmarshal number into Go value of type string')
    assert await refused(a, idp.mint(sub="alice", aud="hub")) == 'oidc: parse uid claim "oid": claim not present'
    b = make(idp, {"username": {"claim": "name", "prefix": ""}})
    assert await refused(b, idp.mint(sub="alice", aud="hub")) == 'oidc: parse username claims "name": claim not present'


async def test_cel_mappings(idp: OIDCIssuer) -> None:
    a = make(idp, {
        "username": {"expression": "claims.preferred_username + '@' + claims.tenant"},
        "groups": {"expression": "claims.roles.map(r, 'role:' + r)"},
        "uid": {"expression": "claims.sub"},
        "extra": [
            {"key": "example.com/tenant", "valueExpression": "claims.tenant"},
            {"key": "example.com/empty", "valueExpression": "''"},
            {"key": "example.com/list", "valueExpression": "['a', '', 'b']"},
            {"key": "example.com/dotted", "valueExpression": "claims.org__dot__name"},
            {"key": "example.com/split", "valueExpression": "claims.scope.split(' ')"},
        ],
    })
    user = await a.authenticate(idp.mint(sub="s-1", aud="hub", preferred_username="alice", tenant="acme",
                                         roles=["admin", "dev"], scope="read write", **{"org.name": "Acme"}))
    assert user == UserInfo("alice@acme", "s-1", ("role:admin", "role:dev"))
    assert user is not None and user.extra == {
        "example.com/tenant": ("acme",), "example.com/list": ("a", "b"), "example.com/dotted": ("Acme",),
        "example.com/split": ("read", "write")}


async def test_cel_mapping_errors(idp: OIDCIssuer) -> None:
    a = make(idp, {"username": {"expression": "claims.n"}})
    assert await refused(a, idp.mint(sub="x", aud="hub", n=1)) == (
        "oidc: error evaluating username claim expression: username claim expression must return a string")
    assert await refused(a, idp.mint(sub="x", aud="hub", n="")) == "oidc: empty username via CEL expression is not allowed"
    assert await refused(a, idp.mint(sub="x", aud="hub")) == (
        "oidc: error evaluating username claim expression: expression 'claims.n' resulted in error: no such key: n")
    g = make(idp, {"username": {"claim": "sub", "prefix": ""}, "groups": {"expression": "claims.n"}})
    assert await refused(g, idp.mint(sub="x", aud="hub", n=[1])) == (
        "oidc: error evaluating group claim expression: expression must return a string or a list of strings")
    assert (await g.authenticate(idp.mint(sub="x", aud="hub", n=None))).groups == ()


async def test_email_username_requires_email_verified_when_present(idp: OIDCIssuer) -> None:
    a = make(idp, {"username": {"claim": "email", "prefix": ""}})
    assert (await a.authenticate(idp.mint(sub="x", aud="hub", email="a@example.com"))).name == "a@example.com"
    assert (await a.authenticate(idp.mint(sub="y", aud="hub", email="b@example.com", email_verified=True))).name == "b@example.com"
    assert await refused(a, idp.mint(sub="z", aud="hub", email="c@example.com", email_verified=False)) == "oidc: email not verified"
    assert await refused(a, idp.mint(sub="w", aud="hub", email="d@example.com", email_verified="yes")) == (
        "oidc: parse 'email_verified' claim: json: cannot unmarshal string into Go value of type bool")


async def test_email_expression_with_kubes_recommended_rule(idp: OIDCIssuer) -> None:
    a = make(idp, {"username": {"expression": "claims.email"}},
             claimValidationRules=[{"expression": "claims.?email_verified.orValue(true) == true",
                                    "message": "email must be verified"}])
    assert (await a.authenticate(idp.mint(sub="x", aud="hub", email="a@example.com"))).name == "a@example.com"
    assert await refused(a, idp.mint(sub="x", aud="hub", email="a@example.com", email_verified=False)) == (
        "oidc: error evaluating claim validation expression: validation expression "
        "'claims.?email_verified.orValue(true) == true' failed: email must be verified")


# ---------------------------------------------------------------------------------------------
# validation rules
# ---------------------------------------------------------------------------------------------


async def test_claim_validation_rules(idp: OIDCIssuer) -> None:
    a = make(idp, claimValidationRules=[
        {"claim": "hd", "requiredValue": "example.com"},
        {"expression": "claims.exp - claims.iat <= 86400", "message": "token lives too long"},
    ])
    assert await a.authenticate(idp.mint(sub="x", aud="hub", hd="example.com")) is not None
    assert await refused(a, idp.mint(sub="x", aud="hub")) == "oidc: required claim hd not present in ID token"
    assert await refused(a, idp.mint(sub="x", aud="hub", hd="evil.com")) == (
        "oidc: required claim hd value does not match. Got = evil.com, want = example.com")
    assert await refused(a, idp.mint(sub="x", aud="hub", hd="example.com", expires_in=90000)) == (
        "oidc: error evaluating claim validation expression: validation expression "
        "'claims.exp - claims.iat <= 86400' failed: token lives too long")


async def test_claim_validation_rule_must_be_boolean(idp: OIDCIssuer) -> None:
    a = make(idp, claimValidationRules=[{"expression": "claims.sub"}])
    assert await refused(a, idp.mint(sub="x", aud="hub")) == (
        "oidc: error evaluating claim validation expression: validation expression must return a boolean")


async def test_user_validation_rules(idp: OIDCIssuer) -> None:
    a = make(idp, {"username": {"claim": "sub", "prefix": ""}, "groups": {"claim": "groups", "prefix": ""}},
             userValidationRules=[
                 {"expression": "!user.username.startsWith('system:')", "message": "username cannot use reserved system: prefix"},
                 {"expression": "user.groups.all(g, !g.startsWith('system:'))", "message": "groups cannot use reserved system: prefix"},
             ])
    assert await a.authenticate(idp.mint(sub="alice", aud="hub", groups=["dev"])) is not None
    assert await refused(a, idp.mint(sub="system:admin", aud="hub")) == (
        "oidc: error evaluating user info validation rule: validation expression "
        "'!user.username.startsWith('system:')' failed: username cannot use reserved system: prefix")
    assert (await refused(a, idp.mint(sub="alice", aud="hub", groups=["system:masters"]))).endswith(
        "failed: groups cannot use reserved system: prefix")


# ---------------------------------------------------------------------------------------------
# token verification
# ---------------------------------------------------------------------------------------------


async def test_tokens_of_other_issuers_are_not_ours(idp: OIDCIssuer) -> None:
    a = make(idp)
    assert await a.authenticate("not-a-jwt") is None
    assert await a.authenticate(idp.mint(sub="x", aud="hub", iss="https://other.example")) is None
    assert untrusted_issuer(idp.mint(sub="x", iss="accounts.google.com")) == "https://accounts.google.com"


async def test_audiences(idp: OIDCIssuer) -> None:
    one = make(idp)
    assert await one.authenticate(idp.mint(sub="x", aud=["other", "hub"])) is not None
    assert await refused(one, idp.mint(sub="x", aud="other")) == 'oidc: verify token: oidc: expected audience "hub" got ["other"]'
    assert await refused(one, idp.mint(sub="x")) == 'oidc: verify token: oidc: expected audience "hub" got []'
    many = make(idp, audiences=("hub", "cli"))
    assert await many.authenticate(idp.mint(sub="x", aud="cli")) is not None
    assert await refused(many, idp.mint(sub="x", aud=["a", "b"])) == (
        'oidc: verify token: oidc: expected audience in ["cli" "hub"] got ["a" "b"]')


async def test_times(idp: OIDCIssuer) -> None:
    a = make(idp)
    msg = await refused(a, idp.mint(sub="x", aud="hub", expires_in=-1))
    assert msg.startswith("oidc: verify token: oidc: token is expired (Token Expiry: ") and msg.endswith(" +0000 UTC)")
    assert (await refused(a, idp.mint(sub="x", aud="hub", exp=OMIT))).startswith("oidc: verify token: oidc: token is expired")
    now = int(time.time())
    assert await a.authenticate(idp.mint(sub="x", aud="hub", nbf=now + 200)) is not None  # within 5 min of skew
    assert "before the nbf (not before) time" in await refused(a, idp.mint(sub="x", aud="hub", nbf=now + 600))
    assert "before the iat (issued at) time" in await refused(a, idp.mint(sub="x", aud="hub", iat=now + 600))


async def test_bad_signatures(idp: OIDCIssuer) -> None:
    a = make(idp)
    assert await refused(a, idp.mint(sub="x", aud="hub", unpublished=True)) == (
        "oidc: verify token: failed to verify signature: failed to verify id token signature")
    good = idp.mint(sub="x", aud="hub")
    h, p, s = good.split(".")
    evil = idp.mint(sub="admin", aud="hub").split(".")[1]
    assert (await refused(a, f"{h}.{evil}.{s}")).endswith("failed to verify id token signature")
    hs = jwt.encode({"iss": idp.url, "aud": "hub", "sub": "x", "exp": time.time() + 60}, "s" * 32, algorithm="HS256")
    assert (await refused(a, hs)).startswith("oidc: verify token: oidc: id token signed with unsupported algorithm")
    # no kid: every published key is tried
    assert await a.authenticate(idp.mint(sub="x", aud="hub", kid=None)) is not None


async def test_es256_issuer() -> None:
    with OIDCIssuer(alg="ES256") as idp:
        a = make(idp)
        assert (await a.authenticate(idp.mint(sub="alice", aud="hub"))).name == "alice"


async def test_jwks_rotation_fetches_new_keys_rate_limited(fresh_idp: OIDCIssuer) -> None:
    clock = Clock()
    a = make(fresh_idp, clock=clock)
    assert await a.authenticate(fresh_idp.mint(sub="a", aud="hub")) is not None
    assert (fresh_idp.discovery_requests, fresh_idp.jwks_requests) == (1, 1)

    clock.now += 11
    fresh_idp.rotate()
    assert (await a.authenticate(fresh_idp.mint(sub="b", aud="hub"))).name == "b"  # unknown kid: refetched
    assert (fresh_idp.discovery_requests, fresh_idp.jwks_requests) == (1, 2)

    # another new key within 10 s of the last fetch: refused without asking the issuer again
    fresh_idp.rotate()
    token = fresh_idp.mint(sub="c", aud="hub")
    assert (await refused(a, token)).endswith("failed to verify id token signature")
    assert (await refused(a, fresh_idp.mint(sub="c", aud="hub", kid="made-up"))).endswith("failed to verify id token signature")
    assert fresh_idp.jwks_requests == 2
    clock.now += 11
    assert (await a.authenticate(token)).name == "c"
    assert fresh_idp.jwks_requests == 3


async def test_withdrawn_key_stops_working_once_keys_are_refreshed(fresh_idp: OIDCIssuer) -> None:
    clock = Clock()
    a = make(fresh_idp, clock=clock)
    old = fresh_idp.mint(sub="a", aud="hub", kid=None)
    assert await a.authenticate(old) is not None
    fresh_idp.rotate(keep_old=False)
    assert await a.authenticate(old) is not None  # cached result
    clock.now += 11
    assert await a.authenticate(old) is not None  # the cached key still verifies it, as in go-oidc
    assert fresh_idp.jwks_requests == 1
    clock.now += 300  # but keys are refetched once they are five minutes old
    assert (await refused(a, old)).endswith("failed to verify id token signature")
    assert fresh_idp.jwks_requests == 2


async def test_discovered_issuer_must_match(fresh_idp: OIDCIssuer) -> None:
    clock = Clock()
    fresh_idp.discovery_issuer = "https://impostor.example"
    a = make(fresh_idp, clock=clock)
    token = fresh_idp.mint(sub="a", aud="hub")
    assert await refused(a, token) == "oidc: authenticator not initialized"
    assert "oidc: issuer did not match the issuer returned by provider, expected" in (a.health_check() or "")
    fresh_idp.discovery_issuer = None
    assert await refused(a, token) == "oidc: authenticator not initialized"  # retried at most every 10 s
    assert fresh_idp.discovery_requests == 1
    clock.now += 11
    assert await a.authenticate(token) is not None
    assert a.health_check() is None


async def test_issuer_tls_is_verified(idp: OIDCIssuer) -> None:
    a = make(idp, issuer={"certificateAuthority": ""})  # the system store does not know the test CA
    await a.start()
    assert await refused(a, idp.mint(sub="a", aud="hub")) == "oidc: authenticator not initialized"
    assert "CERTIFICATE_VERIFY_FAILED" in (a.health_check() or "")


async def test_discovery_url_override(fresh_idp: OIDCIssuer) -> None:
    """The issuer's public URL differs from where its discovery document is fetched."""
    public = "https://login.example.com/tenant"
    fresh_idp.discovery_issuer = public
    config = parse_authentication_config(doc({
        "issuer": {"url": public, "discoveryURL": fresh_idp.url + "/.well-known/openid-configuration",
                   "audiences": ["hub"], "certificateAuthority": fresh_idp.ca_pem},
        "claimMappings": {"username": {"claim": "sub", "prefix": ""}}}))
    a = JWTAuthenticator(config.jwt[0])
    assert (await a.authenticate(fresh_idp.mint(sub="alice", aud="hub", iss=public))).name == "alice"


async def test_authenticators_route_by_issuer(idp: OIDCIssuer, fresh_idp: OIDCIssuer) -> None:
    config = parse_authentication_config(doc(
        jwt_config(idp, {"username": {"claim": "sub", "prefix": "people:"}}),
        jwt_config(fresh_idp, {"username": {"claim": "sub", "prefix": "ci:"}}, audiences=("ci",)),
    ))
    authn = Authenticators.from_config(config)
    assert authn.issuers == [idp.url, fresh_idp.url]
    await authn.start()
    assert authn.health_check() == {}
    assert (await authn.authenticate(idp.mint(sub="alice", aud="hub"))).name == "people:alice"
    assert (await authn.authenticate_token(fresh_idp.mint(sub="job", aud="ci"), "root")).name == "ci:job"
    assert await authn.authenticate(idp.mint(sub="x", aud="hub", iss="https://nobody.example")) is None
    assert await authn.authenticate("static-token") is None
    with pytest.raises(AuthenticationError):
        await authn.authenticate(fresh_idp.mint(sub="job", aud="hub"))


async def test_result_cache_never_outlives_the_token(idp: OIDCIssuer) -> None:
    clock = Clock()
    a = make(idp, clock=clock, cache_ttl=3600)
    token = idp.mint(sub="a", aud="hub", expires_in=5)
    assert await a.authenticate(token) is not None
    clock.now += 6
    assert (await refused(a, token)).startswith("oidc: verify token: oidc: token is expired")


async def test_per_request_cost(idp: OIDCIssuer) -> None:
    mappings = {"username": {"expression": "'oidc:' + claims.sub"}, "groups": {"claim": "groups", "prefix": "oidc:"}}
    cold = make(idp, mappings, cache_ttl=0, userValidationRules=[{"expression": "!user.username.startsWith('system:')"}])
    warm = make(idp, mappings, userValidationRules=[{"expression": "!user.username.startsWith('system:')"}])
    token = idp.mint(sub="alice", aud="hub", groups=["dev"])
    n = 500

    async def per_call(a: JWTAuthenticator) -> float:
        await a.authenticate(token)
        t0 = time.perf_counter()
        for _ in range(n):
            await a.authenticate(token)
        return (time.perf_counter() - t0) / n * 1e6

    uncached, cached = await per_call(cold), await per_call(warm)
    print(f"\nOIDC token authentication (RS256, 2 CEL programs): uncached {uncached:.1f} us/request, "
          f"cached {cached:.1f} us/request")
    assert cached < uncached


# ---------------------------------------------------------------------------------------------
# configuration files
# ---------------------------------------------------------------------------------------------

_GOOD = {"issuer": {"url": "https://idp.example", "audiences": ["hub"]},
         "claimMappings": {"username": {"claim": "sub", "prefix": ""}}}


def _with(path: str, value: Any, base: dict | None = None) -> dict:
    out = copy.deepcopy(base or _GOOD)
    cur = out
    keys = path.split(".")
    for k in keys[:-1]:
        cur = cur.setdefault(k, {})
    if value is OMIT:
        cur.pop(keys[-1], None)
    else:
        cur[keys[-1]] = value
    return out


@pytest.mark.parametrize("authenticator, message", [
    (_with("issuer.url", OMIT), "jwt[0].issuer.url: Required value"),
    (_with("issuer.url", "http://idp.example"), 'jwt[0].issuer.url: Invalid value: "http://idp.example": URL scheme must be https'),
    (_with("issuer.url", "https://u:p@idp.example"),
     'jwt[0].issuer.url: Invalid value: "https://u:p@idp.example": URL must not contain a username or password'),
    (_with("issuer.url", "https://idp.example?x=1"),
     'jwt[0].issuer.url: Invalid value: "https://idp.example?x=1": URL must not contain a query'),
    (_with("issuer.discoveryURL", "https://idp.example/"),
     'jwt[0].issuer.discoveryURL: Invalid value: "https://idp.example/": discoveryURL must be different from URL'),
    (_with("issuer.audiences", []), "jwt[0].issuer.audiences: Required value: at least one jwt[0].issuer.audiences is required"),
    (_with("issuer.audiences", ["a", "b"]),
     'jwt[0].issuer.audienceMatchPolicy: Invalid value: "": audienceMatchPolicy must be MatchAny for multiple audiences'),
    (_with("issuer.audiences", ["a", "a"], _with("issuer.audienceMatchPolicy", "MatchAny")),
     'jwt[0].issuer.audiences[1]: Duplicate value: "a"'),
    (_with("issuer.audienceMatchPolicy", "MatchAll"),
     'jwt[0].issuer.audienceMatchPolicy: Invalid value: "MatchAll": audienceMatchPolicy must be empty or MatchAny for single audience'),
    (_with("issuer.certificateAuthority", "not a pem"),
     'jwt[0].issuer.certificateAuthority: Invalid value: "<omitted>": data does not contain any valid RSA or ECDSA certificates'),
    (_with("claimMappings.username", {}), "jwt[0].claimMappings.username: Required value: claim or expression is required"),
    (_with("claimMappings.username", {"claim": "sub", "expression": "claims.sub"}),
     "jwt[0].claimMappings.username: Invalid value: \"\": claim and expression can't both be set"),
    (_with("claimMappings.username", {"claim": "sub"}),
     "jwt[0].claimMappings.username.prefix: Required value: prefix is required when claim is set. "
     "It can be set to an empty string to disable prefixing"),
    (_with("claimMappings.username", {"expression": "claims.sub", "prefix": "x:"}),
     'jwt[0].claimMappings.username.prefix: Invalid value: "x:": may not be specified when expression is set'),
    (_with("claimMappings.groups", {"claim": "groups"}),
     "jwt[0].claimMappings.groups.prefix: Required value: prefix is required when claim is set. "
     "It can be set to an empty string to disable prefixing"),
    (_with("claimMappings.uid", {"claim": "oid", "expression": "claims.oid"}),
     "jwt[0].claimMappings.uid: Invalid value: \"\": claim and expression can't both be set"),
    (_with("claimMappings.username", {"expression": "user.username"}),
     "jwt[0].claimMappings.username.expression: Invalid value: \"user.username\": compilation failed: "
     "ERROR: <input>:1:1: undeclared reference to 'user' (in container '')"),
    (_with("claimMappings.username", {"expression": "claims.email"}),
     'jwt[0].claimMappings.username.expression: Invalid value: "claims.email": claims.email_verified must be used '
     "in claimMappings.username.expression or claimMappings.extra[*].valueExpression or "
     "claimValidationRules[*].expression when claims.email is used in claimMappings.username.expression"),
    (_with("claimMappings.extra", [{"key": "tenant", "valueExpression": "claims.t"}]),
     'jwt[0].claimMappings.extra[0].key: Invalid value: "tenant": must be a domain-prefixed path (such as "acme.io/foo")'),
    (_with("claimMappings.extra", [{"key": "kubernetes.io/tenant", "valueExpression": "claims.t"}]),
     'jwt[0].claimMappings.extra[0].key: Invalid value: "kubernetes.io/tenant": k8s.io, kubernetes.io and their '
     "subdomains are reserved for Kubernetes use"),
    (_with("claimMappings.extra", [{"key": "example.com/t", "valueExpression": "claims.t"},
                                   {"key": "example.com/t", "valueExpression": "claims.u"}]),
     'jwt[0].claimMappings.extra[1].key: Duplicate value: "example.com/t"'),
    (_with("claimMappings.extra", [{"key": "example.com/t"}]), "jwt[0].claimMappings.extra[0].valueExpression: Required value"),
    (_with("claimValidationRules", [{"claim": "hd", "expression": "true"}]),
     "jwt[0].claimValidationRules[0]: Invalid value: \"hd\": claim and expression can't both be set"),
    (_with("claimValidationRules", [{}]), "jwt[0].claimValidationRules[0]: Required value: claim or expression is required"),
    (_with("claimValidationRules", [{"claim": "hd", "message": "m"}]),
     'jwt[0].claimValidationRules[0].message: Invalid value: "m": may not be specified when claim is set'),
    (_with("claimValidationRules", [{"expression": "true", "requiredValue": "v"}]),
     'jwt[0].claimValidationRules[0].requiredValue: Invalid value: "v": may not be specified when expression is set'),
    (_with("userValidationRules", [{"message": "m"}]), "jwt[0].userValidationRules[0].expression: Required value"),
    (_with("userValidationRules", [{"expression": "claims.sub == ''"}]),
     "jwt[0].userValidationRules[0].expression: Invalid value: \"claims.sub == ''\": compilation failed: "
     "ERROR: <input>:1:1: undeclared reference to 'claims' (in container '')"),
    (_with("issuer.egressSelectorType", "internet"),
     'jwt[0].issuer.egressSelectorType: Invalid value: "internet": egress selector must be either controlplane or cluster'),
])
def test_bad_config(tmp_path: Path, authenticator: dict, message: str) -> None:
    path = tmp_path / "authn.yaml"
    path.write_text(yaml.safe_dump(doc(authenticator)))
    with pytest.raises(ValueError) as exc:
        load_authentication_config(path)
    assert str(exc.value) == message


def test_bad_cel_syntax_names_the_field(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as exc:
        parse_authentication_config(doc(_with("claimMappings.username", {"expression": "claims.sub +"})))
    assert str(exc.value).startswith('jwt[0].claimMappings.username.expression: Invalid value: "claims.sub +": '
                                     "compilation failed: ERROR: <input>:1:")


def test_duplicate_issuers_and_aggregated_errors() -> None:
    with pytest.raises(ValueError) as exc:
        parse_authentication_config(doc(_GOOD, _GOOD))
    assert str(exc.value) == 'jwt[1].issuer.url: Duplicate value: "https://idp.example"'
    with pytest.raises(ValueError) as exc:
        parse_authentication_config(doc(_with("issuer.url", OMIT, _with("claimMappings.username", {}))))
    assert str(exc.value) == ("[jwt[0].issuer.url: Required value, "
                              "jwt[0].claimMappings.username: Required value: claim or expression is required]")


def test_disallowed_issuers() -> None:
    with pytest.raises(ValueError) as exc:
        parse_authentication_config(doc(_GOOD), disallowed_issuers=["https://idp.example"])
    assert str(exc.value) == ('jwt[0].issuer.url: Invalid value: "https://idp.example": URL must not overlap '
                              "with disallowed issuers: [https://idp.example]")
    hub = _with("issuer.url", "https://hub.example/clusters/root")
    with pytest.raises(ValueError) as exc:
        parse_authentication_config(doc(hub), disallowed_issuers=["https://hub.example/clusters/*"])
    assert "URL must not overlap with disallowed issuers" in str(exc.value)
    assert parse_authentication_config(doc(_GOOD), disallowed_issuers=["https://hub.example/clusters/*"]).jwt


def test_strict_decoding_and_type_meta() -> None:
    with pytest.raises(ValueError) as exc:
        parse_authentication_config(doc(_with("issuer.urls", "x")))
    assert str(exc.value) == 'strict decoding error: unknown field "jwt[0].issuer.urls"'
    with pytest.raises(ValueError) as exc:
        parse_authentication_config({**doc(_GOOD), "kind": "AuthenticationConfig"})
    assert str(exc.value) == 'no kind "AuthenticationConfig" is registered for version "apiserver.config.k8s.io/v1"'
    with pytest.raises(ValueError) as exc:
        parse_authentication_config({**doc(_GOOD), "apiVersion": "apiserver.k8s.io/v1"})
    assert str(exc.value).startswith('no kind "AuthenticationConfiguration" is registered')
    with pytest.raises(ValueError) as exc:
        parse_authentication_config(doc(_with("issuer.audiences", "hub")))
    assert "jwt[0].issuer.audiences" in str(exc.value)


def test_anonymous_section(tmp_path: Path) -> None:
    path = tmp_path / "authn.yaml"
    path.write_text(yaml.safe_dump(doc(_GOOD, version="v1beta1", anonymous={
        "enabled": True, "conditions": [{"path": "/livez"}, {"path": "/readyz"}]})))
    config = load_authentication_config(path)
    assert config.anonymous == AnonymousConfig(True, ["/livez", "/readyz"])
    assert [j.issuer.url for j in config.jwt] == ["https://idp.example"]
    assert parse_authentication_config(doc()).jwt == [] and parse_authentication_config(doc()).anonymous is None
    with pytest.raises(ValueError) as exc:
        parse_authentication_config(doc(anonymous={"enabled": False, "conditions": [{"path": "/livez"}]}))
    assert str(exc.value) == ('anonymous.conditions: Invalid value: [{"path":"/livez"}]: '
                              "enabled should be set to true when conditions are defined")


def test_yaml_errors_are_value_errors(tmp_path: Path) -> None:
    path = tmp_path / "authn.yaml"
    path.write_text("jwt: [unclosed")
    with pytest.raises(ValueError):
        load_authentication_config(path)
