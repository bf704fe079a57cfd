"""JWT authenticators for people: kube's structured AuthenticationConfiguration.

A file in kube's format (``apiserver.config.k8s.io/v1``, ``v1beta1`` or ``v1alpha1``, kind
``AuthenticationConfiguration``) lists OIDC issuers. Each is validated as kube validates it
(k8s.io/apiserver pkg/apis/apiserver/validation), its CEL expressions are compiled once at load,
and at run time a token is checked as kube's oidc plugin does: the issuer's discovery document
and JWKS are fetched over verified HTTPS, the signature, ``iss``, ``aud``, ``exp`` and ``nbf``
are checked, then the claim mappings, claim validation rules and user validation rules are
applied in kube's order with kube's error messages. Results are cached briefly by token hash.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import re
import ssl
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import jwt
import orjson
import yaml
from cryptography import x509
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from ...apimachinery import errors as e
from ...apimachinery.cel import escape_cel_property
from ...apimachinery.cel.library import code_segments
from ...apimachinery.errors import FieldError
from ...apimachinery.validation import dns1123_subdomain_error
from ..user import CREDENTIAL_ID, UserInfo
from .errors import AuthenticationError

try:  # the CEL engine (common-expression-language), as apimachinery.cel.engine imports it
    import cel as _cel
    from cel import stdlib as _cel_stdlib

    logging.getLogger("cel").addHandler(logging.NullHandler())
except ImportError:  # pragma: no cover - pinned in pyproject.toml
    _cel = None  # type: ignore[assignment]
    _cel_stdlib = None  # type: ignore[assignment]

log = logging.getLogger("fleetplane.authentication.oidc")

API_GROUP = "apiserver.config.k8s.io"
API_VERSIONS = ("v1", "v1beta1", "v1alpha1")
KIND = "AuthenticationConfiguration"
WELL_KNOWN = "/.well-known/openid-configuration"
MATCH_ANY = "MatchAny"
MAX_JWT_AUTHENTICATORS = 64
#: kube allows every algorithm of its allowlist when the config file is used
ALLOWED_SIGNING_ALGS = ("ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "RS256", "RS384", "RS512")
#: go-oidc's clock-skew allowance for nbf (kube passes no other); iat gets the same
NBF_LEEWAY_SECONDS = 300.0
_MAX_DOCUMENT_BYTES = 1 << 20


# ---------------------------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Issuer:
    url: str = ""
    discovery_url: str = ""
    certificate_authority: str = ""
    audiences: tuple[str, ...] = ()
    audience_match_policy: str = ""
    egress_selector_type: str = ""


@dataclass(frozen=True)
class ClaimValidationRule:
    claim: str = ""
    required_value: str = ""
    expression: str = ""
    message: str = ""


@dataclass(frozen=True)
class PrefixedClaimOrExpression:
    claim: str = ""
    #: None is "unset" (an error with claim), "" is "no prefix"
    prefix: str | None = None
    expression: str = ""


@dataclass(frozen=True)
class ClaimOrExpression:
    claim: str = ""
    expression: str = ""


@dataclass(frozen=True)
class ExtraMapping:
    key: str = ""
    value_expression: str = ""


@dataclass(frozen=True)
class ClaimMappings:
    username: PrefixedClaimOrExpression = PrefixedClaimOrExpression()
    groups: PrefixedClaimOrExpression = PrefixedClaimOrExpression()
    uid: ClaimOrExpression = ClaimOrExpression()
    extra: tuple[ExtraMapping, ...] = ()


@dataclass(frozen=True)
class UserValidationRule:
    expression: str = ""
    message: str = ""


@dataclass
class JWTAuthenticatorConfig:
    issuer: Issuer
    claim_mappings: ClaimMappings
    claim_validation_rules: tuple[ClaimValidationRule, ...] = ()
    user_validation_rules: tuple[UserValidationRule, ...] = ()
    #: the compiled CEL programs, filled by validation
    compiled: _Compiled | None = field(default=None, repr=False, compare=False)


@dataclass
class AnonymousConfig:
    enabled: bool = False
    #: paths anonymous requests are allowed on; empty means everywhere
    conditions: list[str] = field(default_factory=list)


@dataclass
class AuthenticationConfig:
    jwt: list[JWTAuthenticatorConfig] = field(default_factory=list)
    anonymous: AnonymousConfig | None = None


def load_authentication_config(path: str | Path, *, disallowed_issuers: Iterable[str] = ()) -> AuthenticationConfig:
    """Read, decode strictly, validate and compile an AuthenticationConfiguration file.

    Raises ValueError whose message is kube's: decoding errors, or the aggregate of field errors
    (``jwt[0].issuer.url: Required value``, ``[err1, err2]`` for several). ``disallowed_issuers``
    are issuer URLs a JWT authenticator may not claim (kube passes its ServiceAccount issuers);
    one ending in ``*`` is a prefix, e.g. ``TokenIssuer.issuer_prefix + "*"`` for every cluster's.
    """
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except yaml.YAMLError as exc:
        raise ValueError(f"error converting YAML to JSON: {exc}") from None
    return parse_authentication_config(doc, disallowed_issuers=disallowed_issuers)


def parse_authentication_config(doc: Any, *, disallowed_issuers: Iterable[str] = ()) -> AuthenticationConfig:
    """:func:`load_authentication_config` for an already-parsed document."""
    if not isinstance(doc, dict):
        raise ValueError("couldn't get version/kind; json parse error: expected an object")
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    if not api_version:
        raise ValueError("Object 'apiVersion' is missing")
    if not kind:
        raise ValueError("Object 'Kind' is missing")
    group, _, version = str(api_version).rpartition("/")
    if group != API_GROUP or version not in API_VERSIONS or kind != KIND:
        raise ValueError(f'no kind "{kind}" is registered for version "{api_version}"')
    dec = _Decoder()
    config = dec.config(doc)
    if dec.unknown:
        raise ValueError("strict decoding error: " + ", ".join(f'unknown field "{u}"' for u in dec.unknown))
    errs = validate_authentication_config(config, disallowed_issuers=disallowed_issuers)
    if errs:
        raise ValueError(_aggregate(errs))
    return config


def _aggregate(errs: Sequence[FieldError]) -> str:
    """utilerrors.NewAggregate(...).Error(): one message, or ``[a, b]``."""
    msgs: list[str] = []
    for err in errs:
        if str(err) not in msgs:
            msgs.append(str(err))
    return msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]"


_GO_TYPES = {bool: "bool", int: "number", float: "number", str: "string", list: "array", dict: "object"}


def _json_type(v: Any) -> str:
    return "null" if v is None else _GO_TYPES.get(type(v), type(v).__name__)


class _Decoder:
    """Strict decoding of the config into the dataclasses, collecting unknown fields."""

    def __init__(self) -> None:
        self.unknown: list[str] = []

    def obj(self, v: Any, path: str, known: Iterable[str]) -> dict:
        if v is None:
            return {}
        if not isinstance(v, dict):
            raise ValueError(f'json: cannot unmarshal {_json_type(v)} into field "{path}" of type object')
        known = set(known)
        for k in v:
            if k not in known:
                self.unknown.append(f"{path}.{k}" if path else str(k))
        return v

    @staticmethod
    def string(v: Any, path: str) -> str:
        if v is None:
            return ""
        if not isinstance(v, str):
            raise ValueError(f'json: cannot unmarshal {_json_type(v)} into field "{path}" of type string')
        return v

    @staticmethod
    def array(v: Any, path: str) -> list:
        if v is None:
            return []
        if not isinstance(v, list):
            raise ValueError(f'json: cannot unmarshal {_json_type(v)} into field "{path}" of type array')
        return v

    def config(self, doc: dict) -> AuthenticationConfig:
        self.obj(doc, "", ("apiVersion", "kind", "jwt", "anonymous"))
        jwts = [self.jwt(a, f"jwt[{i}]") for i, a in enumerate(self.array(doc.get("jwt"), "jwt"))]
        anonymous = None
        if doc.get("anonymous") is not None:
            a = self.obj(doc["anonymous"], "anonymous", ("enabled", "conditions"))
            enabled = a.get("enabled", False)
            if not isinstance(enabled, bool):
                raise ValueError(f'json: cannot unmarshal {_json_type(enabled)} into field "anonymous.enabled" of type bool')
            conds = []
            for i, c in enumerate(self.array(a.get("conditions"), "anonymous.conditions")):
                c = self.obj(c, f"anonymous.conditions[{i}]", ("path",))
                conds.append(self.string(c.get("path"), f"anonymous.conditions[{i}].path"))
            anonymous = AnonymousConfig(enabled, conds)
        return AuthenticationConfig(jwts, anonymous)

    def jwt(self, v: Any, p: str) -> JWTAuthenticatorConfig:
        a = self.obj(v, p, ("issuer", "claimValidationRules", "claimMappings", "userValidationRules"))
        i = self.obj(a.get("issuer"), f"{p}.issuer", ("url", "discoveryURL", "certificateAuthority", "audiences",
                                                     "audienceMatchPolicy", "egressSelectorType"))
        ip = f"{p}.issuer"
        issuer = Issuer(
            url=self.string(i.get("url"), f"{ip}.url"),
            discovery_url=self.string(i.get("discoveryURL"), f"{ip}.discoveryURL"),
            certificate_authority=self.string(i.get("certificateAuthority"), f"{ip}.certificateAuthority"),
            audiences=tuple(self.string(x, f"{ip}.audiences[{n}]")
                            for n, x in enumerate(self.array(i.get("audiences"), f"{ip}.audiences"))),
            audience_match_policy=self.string(i.get("audienceMatchPolicy"), f"{ip}.audienceMatchPolicy"),
            egress_selector_type=self.string(i.get("egressSelectorType"), f"{ip}.egressSelectorType"),
        )
        rules = []
        for n, r in enumerate(self.array(a.get("claimValidationRules"), f"{p}.claimValidationRules")):
            rp = f"{p}.claimValidationRules[{n}]"
            r = self.obj(r, rp, ("claim", "requiredValue", "expression", "message"))
            rules.append(ClaimValidationRule(self.string(r.get("claim"), f"{rp}.claim"),
                                             self.string(r.get("requiredValue"), f"{rp}.requiredValue"),
                                             self.string(r.get("expression"), f"{rp}.expression"),
                                             self.string(r.get("message"), f"{rp}.message")))
        mp = f"{p}.claimMappings"
        m = self.obj(a.get("claimMappings"), mp, ("username", "groups", "uid", "extra"))
        uid = self.obj(m.get("uid"), f"{mp}.uid", ("claim", "expression"))
        extra = []
        for n, x in enumerate(self.array(m.get("extra"), f"{mp}.extra")):
            xp = f"{mp}.extra[{n}]"
            x = self.obj(x, xp, ("key", "valueExpression"))
            extra.append(ExtraMapping(self.string(x.get("key"), f"{xp}.key"),
                                      self.string(x.get("valueExpression"), f"{xp}.valueExpression")))
        mappings = ClaimMappings(
            username=self.prefixed(m.get("username"), f"{mp}.username"),
            groups=self.prefixed(m.get("groups"), f"{mp}.groups"),
            uid=ClaimOrExpression(self.string(uid.get("claim"), f"{mp}.uid.claim"),
                                  self.string(uid.get("expression"), f"{mp}.uid.expression")),
            extra=tuple(extra),
        )
        urules = []
        for n, r in enumerate(self.array(a.get("userValidationRules"), f"{p}.userValidationRules")):
            rp = f"{p}.userValidationRules[{n}]"
            r = self.obj(r, rp, ("expression", "message"))
            urules.append(UserValidationRule(self.string(r.get("expression"), f"{rp}.expression"),
                                             self.string(r.get("message"), f"{rp}.message")))
        return JWTAuthenticatorConfig(issuer, mappings, tuple(rules), tuple(urules))

    def prefixed(self, v: Any, p: str) -> PrefixedClaimOrExpression:
        m = self.obj(v, p, ("claim", "prefix", "expression"))
        prefix = m.get("prefix")
        return PrefixedClaimOrExpression(self.string(m.get("claim"), f"{p}.claim"),
                                         None if prefix is None else self.string(prefix, f"{p}.prefix"),
                                         self.string(m.get("expression"), f"{p}.expression"))


# ---------------------------------------------------------------------------------------------
# Validation (k8s.io/apiserver pkg/apis/apiserver/validation, AuthenticationConfiguration part)
# ---------------------------------------------------------------------------------------------


def _p(base: str, *children: str) -> str:
    out = base
    for c in children:
        out = f"{out}.{c}" if out and not c.startswith("[") else out + c
    return out


def validate_authentication_config(config: AuthenticationConfig, *,
                                   disallowed_issuers: Iterable[str] = ()) -> list[FieldError]:
    """kube's ValidateAuthenticationConfiguration; compiles each authenticator's CEL as it goes."""
    errs: list[FieldError] = []
    if len(config.jwt) > MAX_JWT_AUTHENTICATORS:
        return [FieldError("FieldValueTooMany", "jwt", f"must have at most {MAX_JWT_AUTHENTICATORS} items",
                           len(config.jwt), True)]
    disallowed = set(disallowed_issuers)
    seen_issuers: set[str] = set()
    seen_discovery: set[str] = set()
    for i, a in enumerate(config.jwt):
        path = f"jwt[{i}]"
        errs += validate_jwt_authenticator(a, path, disallowed)
        if a.issuer.url in seen_issuers:
            errs.append(e.duplicate(_p(path, "issuer", "url"), a.issuer.url))
        seen_issuers.add(a.issuer.url)
        if a.issuer.discovery_url:
            if a.issuer.discovery_url in seen_discovery:
                errs.append(e.duplicate(_p(path, "issuer", "discoveryURL"), a.issuer.discovery_url))
            seen_discovery.add(a.issuer.discovery_url)
    if config.anonymous is not None and not config.anonymous.enabled and config.anonymous.conditions:
        errs.append(e.invalid("anonymous.conditions", [{"path": c} for c in config.anonymous.conditions],
                              "enabled should be set to true when conditions are defined"))
    return errs


def validate_jwt_authenticator(a: JWTAuthenticatorConfig, path: str = "",
                               disallowed_issuers: Iterable[str] = ()) -> list[FieldError]:
    """Field errors of one JWT authenticator; on success ``a.compiled`` holds its CEL programs."""
    st = _State()
    errs = _validate_issuer(a.issuer, _p(path, "issuer"), set(disallowed_issuers))
    errs += _validate_claim_rules(st, a.claim_validation_rules, _p(path, "claimValidationRules"))
    errs += _validate_mappings(st, a.claim_mappings, _p(path, "claimMappings"))
    errs += _validate_user_rules(st, a.user_validation_rules, _p(path, "userValidationRules"))
    a.compiled = None if errs else st.compiled
    return errs


def _validate_url(url: str, path: str, disallowed: set[str]) -> list[FieldError]:
    errs: list[FieldError] = []
    if any(url.startswith(d[:-1]) if d.endswith("*") else url == d for d in disallowed):
        errs.append(e.invalid(path, url, "URL must not overlap with disallowed issuers: [" + " ".join(sorted(disallowed)) + "]"))
    try:
        u = urlsplit(url)
        u.port  # noqa: B018 - raises for a bad port, as url.Parse does
    except ValueError as exc:
        return [*errs, e.invalid(path, url, str(exc))]
    if u.scheme != "https":
        errs.append(e.invalid(path, url, "URL scheme must be https"))
    if u.username is not None or u.password is not None:
        errs.append(e.invalid(path, url, "URL must not contain a username or password"))
    if u.query:
        errs.append(e.invalid(path, url, "URL must not contain a query"))
    if u.fragment:
        errs.append(e.invalid(path, url, "URL must not contain a fragment"))
    return errs


def _validate_issuer(issuer: Issuer, path: str, disallowed: set[str]) -> list[FieldError]:
    errs: list[FieldError] = []
    url_path = _p(path, "url")
    if not issuer.url:
        errs.append(e.required(url_path))
    else:
        errs += _validate_url(issuer.url, url_path, disallowed)
    if issuer.discovery_url:
        dpath = _p(path, "discoveryURL")
        if issuer.url and issuer.url.rstrip("/") == issuer.discovery_url.rstrip("/"):
            errs.append(e.invalid(dpath, issuer.discovery_url, "discoveryURL must be different from URL"))
        errs += _validate_url(issuer.discovery_url, dpath, set())
    apath, ppath = _p(path, "audiences"), _p(path, "audienceMatchPolicy")
    if not issuer.audiences:
        errs.append(e.required(apath, f"at least one {apath} is required"))
    else:
        seen: set[str] = set()
        for n, aud in enumerate(issuer.audiences):
            if not aud:
                errs.append(e.required(f"{apath}[{n}]"))
            if aud in seen:
                errs.append(e.duplicate(f"{apath}[{n}]", aud))
            seen.add(aud)
        policy = issuer.audience_match_policy
        if len(issuer.audiences) > 1 and policy != MATCH_ANY:
            errs.append(e.invalid(ppath, policy, "audienceMatchPolicy must be MatchAny for multiple audiences"))
        if len(issuer.audiences) == 1 and policy and policy != MATCH_ANY:
            errs.append(e.invalid(ppath, policy, "audienceMatchPolicy must be empty or MatchAny for single audience"))
    if issuer.certificate_authority and not _parse_ca(issuer.certificate_authority):
        errs.append(e.invalid(_p(path, "certificateAuthority"), "<omitted>",
                              "data does not contain any valid RSA or ECDSA certificates"))
    if issuer.egress_selector_type:
        epath = _p(path, "egressSelectorType")
        if issuer.egress_selector_type not in ("controlplane", "cluster"):
            errs.append(e.invalid(epath, issuer.egress_selector_type, "egress selector must be either controlplane or cluster"))
        else:
            errs.append(e.invalid(epath, issuer.egress_selector_type, "egress selection is not supported by fleetplane"))
    return errs


def _parse_ca(pem: str) -> list[x509.Certificate]:
    try:
        return x509.load_pem_x509_certificates(pem.encode())
    except ValueError:
        return []


@dataclass
class _Compiled:
    username: _Expr | None = None
    groups: _Expr | None = None
    uid: _Expr | None = None
    extra: list[tuple[str, _Expr]] = field(default_factory=list)
    required_claims: list[tuple[str, str]] = field(default_factory=list)
    claim_rules: list[tuple[_Expr, str]] = field(default_factory=list)
    user_rules: list[tuple[_Expr, str]] = field(default_factory=list)


@dataclass
class _State:
    compiled: _Compiled = field(default_factory=_Compiled)
    uses_email: bool = False
    uses_email_verified: bool = False


def _compile(source: str, var: str, path: str) -> tuple[_Expr | None, FieldError | None]:
    try:
        return _Expr(source, var), None
    except _CompileError as exc:
        return None, e.invalid(path, source, str(exc))


def _validate_claim_rules(st: _State, rules: Sequence[ClaimValidationRule], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen_claims: set[str] = set()
    seen_exprs: set[str] = set()
    for n, r in enumerate(rules):
        rp = f"{path}[{n}]"
        if r.claim and r.expression:
            errs.append(e.invalid(rp, r.claim, "claim and expression can't both be set"))
        elif not r.claim and not r.expression:
            errs.append(e.required(rp, "claim or expression is required"))
        elif r.claim:
            if r.message:
                errs.append(e.invalid(_p(rp, "message"), r.message, "may not be specified when claim is set"))
            if r.claim in seen_claims:
                errs.append(e.duplicate(_p(rp, "claim"), r.claim))
            seen_claims.add(r.claim)
            st.compiled.required_claims.append((r.claim, r.required_value))
        else:
            if r.required_value:
                errs.append(e.invalid(_p(rp, "requiredValue"), r.required_value, "may not be specified when expression is set"))
            if r.expression in seen_exprs:
                errs.append(e.duplicate(_p(rp, "expression"), r.expression))
                continue
            seen_exprs.add(r.expression)
            expr, err = _compile(r.expression, "claims", _p(rp, "expression"))
            if err:
                errs.append(err)
                continue
            assert expr is not None
            st.compiled.claim_rules.append((expr, r.message))
            st.uses_email_verified |= expr.selects("claims", "email_verified")
    return errs


def _validate_prefixed(m: PrefixedClaimOrExpression, path: str, required: bool) -> tuple[_Expr | None, list[FieldError]]:
    if m.expression and m.claim:
        return None, [e.invalid(path, "", "claim and expression can't both be set")]
    if not m.expression and not m.claim:
        return None, [e.required(path, "claim or expression is required")] if required else []
    if m.expression:
        errs = []
        if m.prefix is not None:
            errs.append(e.invalid(_p(path, "prefix"), m.prefix, "may not be specified when expression is set"))
        expr, err = _compile(m.expression, "claims", _p(path, "expression"))
        return expr, errs + ([err] if err else [])
    if m.prefix is None:
        return None, [e.required(_p(path, "prefix"), "prefix is required when claim is set. It can be set to an empty string to disable prefixing")]
    return None, []


def _validate_mappings(st: _State, m: ClaimMappings, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    expr, es = _validate_prefixed(m.username, _p(path, "username"), True)
    errs += es
    if not es and expr is not None:
        st.compiled.username = expr
        st.uses_email |= expr.selects("claims", "email")
        st.uses_email_verified |= expr.selects("claims", "email_verified")
    expr, es = _validate_prefixed(m.groups, _p(path, "groups"), False)
    errs += es
    if not es and expr is not None:
        st.compiled.groups = expr
    if m.uid.claim and m.uid.expression:
        errs.append(e.invalid(_p(path, "uid"), "", "claim and expression can't both be set"))
    elif m.uid.expression:
        expr, err = _compile(m.uid.expression, "claims", _p(path, "uid", "expression"))
        if err:
            errs.append(err)
        else:
            st.compiled.uid = expr
    seen: set[str] = set()
    for n, x in enumerate(m.extra):
        xp = f"{_p(path, 'extra')}[{n}]"
        kp = _p(xp, "key")
        errs += _domain_prefixed_path(kp, x.key)
        if x.key != x.key.lower():
            errs.append(e.invalid(kp, x.key, "must be lowercase"))
        if _is_kubernetes_domain(x.key):
            errs.append(e.invalid(kp, x.key, "k8s.io, kubernetes.io and their subdomains are reserved for Kubernetes use"))
        if x.key in seen:
            errs.append(e.duplicate(kp, x.key))
            continue
        seen.add(x.key)
        if not x.value_expression:
            errs.append(e.required(_p(xp, "valueExpression")))
            continue
        expr, err = _compile(x.value_expression, "claims", _p(xp, "valueExpression"))
        if err:
            errs.append(err)
            continue
        assert expr is not None
        st.compiled.extra.append((x.key, expr))
        st.uses_email_verified |= expr.selects("claims", "email_verified")
    if st.uses_email and not st.uses_email_verified:
        errs.append(e.invalid(_p(path, "username", "expression"), m.username.expression,
                              "claims.email_verified must be used in claimMappings.username.expression or "
                              "claimMappings.extra[*].valueExpression or claimValidationRules[*].expression "
                              "when claims.email is used in claimMappings.username.expression"))
    return errs


def _validate_user_rules(st: _State, rules: Sequence[UserValidationRule], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for n, r in enumerate(rules):
        ep = _p(f"{path}[{n}]", "expression")
        if not r.expression:
            errs.append(e.required(ep))
            continue
        if r.expression in seen:
            errs.append(e.duplicate(ep, r.expression))
            continue
        seen.add(r.expression)
        expr, err = _compile(r.expression, "user", ep)
        if err:
            errs.append(err)
            continue
        assert expr is not None
        st.compiled.user_rules.append((expr, r.message))
    return errs


_HTTP_PATH = re.compile(r"^[A-Za-z0-9/\-._~%!$&'()*+,;=:]+\Z")
_HTTP_PATH_FMT = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"


def _domain_prefixed_path(path: str, key: str) -> list[FieldError]:
    """apimachinery's IsDomainPrefixedPath."""
    if not key:
        return [e.required(path)]
    host, sep, rest = key.partition("/")
    if not sep or not host or not rest:
        return [e.invalid(path, key, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    errs = []
    why = dns1123_subdomain_error(host)
    if why:
        errs.append(e.invalid(path, host, why))
    if not _HTTP_PATH.match(rest):
        errs.append(e.invalid(path, rest, f"Invalid path (regex used for validation is '{_HTTP_PATH_FMT}')"))
    return errs


def _is_kubernetes_domain(key: str) -> bool:
    host, sep, _ = key.partition("/")
    if not sep:
        return False
    return host in ("kubernetes.io", "k8s.io") or host.endswith((".kubernetes.io", ".k8s.io"))


# ---------------------------------------------------------------------------------------------
# CEL
# ---------------------------------------------------------------------------------------------


class _CompileError(Exception):
    pass


_CEL_FUNCTIONS: dict[str, Callable[..., Any]] = {}
if _cel_stdlib is not None:
    for _lib in _cel_stdlib.EXTENSIONS.values():
        _CEL_FUNCTIONS.update(_lib)
_CEL_NAMESPACES = frozenset(k.split(".", 1)[0] for k in _CEL_FUNCTIONS if "." in k) | {"optional"}
_CEL_TYPES = frozenset(("int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type", "dyn"))
_CEL_BUILTINS = frozenset((
    "size", "contains", "startsWith", "endsWith", "matches", "int", "uint", "double", "string", "bytes",
    "bool", "duration", "timestamp", "dyn", "type", "has", "all", "exists", "exists_one", "map", "filter",
    "getFullYear", "getMonth", "getDayOfYear", "getDayOfMonth", "getDate", "getDayOfWeek", "getHours",
    "getMinutes", "getSeconds", "getMilliseconds", "hasValue", "value", "orValue", "or", "of", "none",
    "ofNonZeroValue", "max", "min",
))
_RX_COMPREHENSION = re.compile(r"\.\s*(?:all|exists|exists_one|map|filter)\s*\(\s*([A-Za-z_]\w*)\s*,")
#: an identifier path with at least one ``.?`` step, none of its steps a method call
_RX_OPT_PATH = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\s*\.\s*\??\s*[A-Za-z_]\w*\b(?!\s*\())+")
_RX_STEP = re.compile(r"(\.\s*\?|\.)?\s*([A-Za-z_]\w*)")


def _rewrite_optional_steps(source: str) -> str:
    """``a.?b.c`` (cel-go optional field selection, which the engine lacks) as has()/optional."""
    if ".?" not in source.replace(" ", ""):
        return source

    def repl(m: re.Match[str]) -> str:
        text = m.group(0)
        if "?" not in text:
            return text
        steps = _RX_STEP.findall(text)
        cur, guards = steps[0][1], []
        for dot, name in steps[1:]:
            cur = f"{cur}.{name}"
            if "?" in dot:
                guards.append(f"has({cur})")
        return f"(({' && '.join(guards)}) ? optional.of({cur}) : optional.none())"

    return "".join(_RX_OPT_PATH.sub(repl, text) if code else text for code, text in code_segments(source))


def _undeclared(name: str) -> _CompileError:
    return _CompileError(f"compilation failed: ERROR: <input>:1:1: undeclared reference to '{name}' (in container '')")


class _Expr:
    """One compiled CEL expression over a single variable (``claims`` or ``user``)."""

    __slots__ = ("source", "var", "prog", "funcs", "_code")

    def __init__(self, source: str, var: str) -> None:
        if _cel is None:  # pragma: no cover
            raise _CompileError("CEL is not available: install common-expression-language")
        self.source, self.var = source, var
        try:
            self.prog = _cel.compile(_rewrite_optional_steps(source))
        except Exception as exc:  # noqa: BLE001 - the engine reports parse errors as ValueError
            msg = str(exc)
            m = re.match(r"Failed to parse expression '.*?': (ERROR: .*)", msg, re.S)
            raise _CompileError("compilation failed: " + (m.group(1) if m else msg)) from None
        variables = set(self.prog.variables())
        local = set(_RX_COMPREHENSION.findall(source))
        for v in sorted(variables):
            if v != var and v not in local and v not in _CEL_NAMESPACES and v not in _CEL_TYPES:
                raise _undeclared(v)
        funcs: dict[str, Callable[..., Any]] = {}
        for ns in variables & _CEL_NAMESPACES:
            funcs.update({k: f for k, f in _CEL_FUNCTIONS.items() if k.startswith(ns + ".")})
        short_names = {k.rsplit(".", 1)[-1] for k in funcs}
        for f in self.prog.functions():
            if f[:1] in "_@!-" or f in _CEL_BUILTINS or f in short_names:
                continue
            if f in _CEL_FUNCTIONS:
                funcs[f] = _CEL_FUNCTIONS[f]
            else:
                raise _undeclared(f)
        self.funcs = funcs or None
        self._code = " ".join(text for code, text in code_segments(source) if code)

    def selects(self, operand: str, name: str) -> bool:
        """Whether the expression reads ``operand.name`` or ``operand.?name`` (kube's hasSelectExp)."""
        return re.search(rf"(?<![\w.]){operand}\s*\.\s*\??\s*{name}\b", self._code) is not None

    def eval(self, value: Any) -> Any:
        """The result; raises ``_EvalError`` with cel-go-like wording."""
        try:
            if self.funcs is None:
                return self.prog.execute({self.var: value})
            return self.prog.execute(_cel.Context({self.var: value}, self.funcs))
        except Exception as exc:  # noqa: BLE001 - every engine failure is an evaluation error
            raise _EvalError(f"expression '{self.source}' resulted in error: {_eval_error_text(exc)}") from None


class _EvalError(Exception):
    pass


def _eval_error_text(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"no such key: {exc.args[0] if exc.args else ''}"
    if isinstance(exc, TypeError):
        return "no such overload"
    if isinstance(exc, ZeroDivisionError):
        return "division by zero"
    msg = " ".join(str(exc).split())
    m = re.match(r"Undefined variable or function: '([^']*)'", msg)
    if m:
        return f"no such attribute: {m.group(1)}"
    return msg or type(exc).__name__


def _cel_value(v: Any) -> Any:
    """JSON as CEL sees it in kube: map keys also answer to their escaped names (``a__dot__b``)."""
    if isinstance(v, dict):
        out = {k: _cel_value(x) for k, x in v.items()}
        for k in v:
            if isinstance(k, str) and not k.isidentifier():
                esc = escape_cel_property(k)
                if esc and esc != k and esc not in out:
                    out[esc] = out[k]
        return out
    if isinstance(v, list):
        return [_cel_value(x) for x in v]
    return v


def _string_list(v: Any) -> list[str] | None:
    """kube's convertCELValueToStringList; None when the value is neither a string nor strings."""
    if v is None:
        return []
    if isinstance(v, str):
        return [v] if v else []
    if isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v):
        return [x for x in v if x]
    return None


# ---------------------------------------------------------------------------------------------
# Authenticating
# ---------------------------------------------------------------------------------------------


def _go_time(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S +0000 UTC")


def _goq(v: str | Sequence[str]) -> str:
    """Go's ``%q`` of a string or a []string."""
    if isinstance(v, str):
        return orjson.dumps(v).decode()
    return "[" + " ".join(orjson.dumps(s).decode() for s in v) + "]"


def _peek(token: str) -> tuple[dict, dict, bytes, bytes | None] | None:
    """(header, unverified claims, signing input, signature) of a compact JWS, None otherwise.

    The signature is None when only its segment is malformed: as in kube's oidc plugin, a token
    whose claims name our issuer is still ours then, and fails verification as malformed.
    """
    signing_input = token.rpartition(".")[0]
    try:
        parsed = jwt.decode_complete(token, options={"verify_signature": False})
    except jwt.InvalidTokenError:
        try:  # the header and claims without the signature
            parsed = jwt.decode_complete(signing_input + ".", options={"verify_signature": False})
        except jwt.InvalidTokenError:
            return None
        parsed["signature"] = None
    return parsed["header"], parsed["payload"], signing_input.encode("ascii"), parsed["signature"]


def _issuer_of(claims: dict) -> str | None:
    iss = claims.get("iss")
    if not isinstance(iss, str):
        return None
    return "https://accounts.google.com" if iss == "accounts.google.com" else iss


def untrusted_issuer(token: str) -> str | None:
    """The unverified ``iss`` of a JWT (kube coalesces Google's legacy issuer), None if not a JWT."""
    parsed = _peek(token)
    return None if parsed is None else _issuer_of(parsed[1])


@dataclass(frozen=True)
class _JWK:
    kid: str
    kty: str
    crv: str
    alg: str
    key: Any

    def fits(self, alg: str) -> bool:
        if self.alg and self.alg != alg:
            return False
        if self.kty == "RSA":
            return alg[:2] in ("RS", "PS")
        want = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}.get(alg)
        return self.kty == "EC" and want is not None and want == self.crv


def _parse_jwks(doc: Any) -> list[_JWK]:
    if not isinstance(doc, dict) or not isinstance(doc.get("keys"), list):
        raise ValueError("oidc: failed to decode keys: no keys member")
    keys = []
    for k in doc["keys"]:
        if not isinstance(k, dict) or k.get("use", "sig") != "sig":
            continue
        try:
            pub: Any
            if k.get("kty") == "RSA":
                pub = RSAAlgorithm.from_jwk(k)
            elif k.get("kty") == "EC":
                pub = ECAlgorithm.from_jwk(k)
            else:
                continue
        except Exception:  # noqa: BLE001 - an unusable key is skipped, as go-jose skips it
            continue
        keys.append(_JWK(str(k.get("kid") or ""), k["kty"], str(k.get("crv") or ""), str(k.get("alg") or ""), pub))
    return keys


class JWTAuthenticator:
    """One issuer of an AuthenticationConfiguration, as kube's oidc token authenticator."""

    def __init__(
        self,
        config: JWTAuthenticatorConfig,
        *,
        clock: Callable[[], float] = time.time,
        cache_ttl: float = 10.0,
        cache_size: int = 4096,
        jwks_min_refresh: float = 10.0,
        jwks_max_age: float = 300.0,
        retry_interval: float = 10.0,
        http_timeout: float = 30.0,
    ) -> None:
        if config.compiled is None:
            errs = validate_jwt_authenticator(config)
            if errs:
                raise ValueError(_aggregate(errs))
        assert config.compiled is not None
        self.config = config
        self.compiled = config.compiled
        self.url = config.issuer.url
        self.discovery_url = config.issuer.discovery_url or self.url.rstrip("/") + WELL_KNOWN
        self.audiences = config.issuer.audiences
        self.clock = clock
        self.cache_ttl, self.cache_size = cache_ttl, cache_size
        self.jwks_min_refresh, self.retry_interval, self.http_timeout = jwks_min_refresh, retry_interval, http_timeout
        #: keys older than this are refetched before use, so a key the issuer withdrew stops
        #: verifying (go-oidc keeps a working key for as long as it verifies)
        self.jwks_max_age = jwks_max_age
        ca = config.issuer.certificate_authority
        self._ssl = ssl.create_default_context(cadata=ca) if ca else ssl.create_default_context()
        self._jwks_uri: str | None = None
        self._keys: list[_JWK] = []
        self._keys_at = 0.0
        self._failed_at: float | None = None
        self._health: str | None = f'oidc: authenticator for issuer "{self.url}" is not initialized'
        self._lock: asyncio.Lock | None = None
        self._lock_loop: asyncio.AbstractEventLoop | None = None
        self._cache: dict[bytes, tuple[float, UserInfo]] = {}

    # -- lifecycle --

    async def start(self) -> None:
        """Fetch discovery and keys now rather than at the first token (errors are kept, not raised)."""
        try:
            await self._ensure_provider()
        except AuthenticationError:
            pass

    def health_check(self) -> str | None:
        """None when ready, else why not (kube's HealthCheck)."""
        return self._health

    def _get_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock_loop is not loop:
            self._lock, self._lock_loop = asyncio.Lock(), loop
        return self._lock

    async def _get_json(self, url: str) -> Any:
        if urlsplit(url).scheme != "https":
            raise ValueError(f"oidc: {url} is not an https URL")
        timeout = aiohttp.ClientTimeout(total=self.http_timeout)
        # trust_env: the proxy environment variables apply, as Go's ProxyFromEnvironment in kube
        async with aiohttp.ClientSession(timeout=timeout, trust_env=True) as session, \
                session.get(url, ssl=self._ssl) as resp:
            body = await resp.content.read(_MAX_DOCUMENT_BYTES + 1)
            if resp.status != 200:
                raise ValueError(f"{resp.status} {resp.reason}: {body[:256].decode(errors='replace')}")
            if len(body) > _MAX_DOCUMENT_BYTES:
                raise ValueError(f"oidc: response from {url} is too large")
            return orjson.loads(body)

    async def _ensure_provider(self) -> None:
        if self._jwks_uri is not None:
            return

        def backing_off() -> bool:
            return self._failed_at is not None and self.clock() - self._failed_at < self.retry_interval

        if backing_off():
            raise AuthenticationError("oidc: authenticator not initialized")
        async with self._get_lock():
            if self._jwks_uri is not None:
                return
            if backing_off():
                raise AuthenticationError("oidc: authenticator not initialized")
            try:
                doc = await self._get_json(self.discovery_url)
                if not isinstance(doc, dict):
                    raise ValueError("oidc: failed to decode provider discovery object")
                if doc.get("issuer") != self.url:
                    raise ValueError(f"oidc: issuer did not match the issuer returned by provider, expected "
                                     f"{_goq(self.url)} got {_goq(str(doc.get('issuer')))}")
                jwks_uri = doc.get("jwks_uri")
                if not isinstance(jwks_uri, str) or not jwks_uri:
                    raise ValueError("provider did not return JWKS URL")
                keys = _parse_jwks(await self._get_json(jwks_uri))
            except Exception as exc:  # noqa: BLE001 - any failure leaves us uninitialized, to retry
                self._failed_at = self.clock()
                self._health = f'oidc: authenticator for issuer "{self.url}" is not healthy: {exc}'
                log.warning("oidc authenticator: initializing %s: %s", self.url, exc)
                raise AuthenticationError("oidc: authenticator not initialized") from None
            self._keys, self._keys_at, self._jwks_uri = keys, self.clock(), jwks_uri
            self._failed_at, self._health = None, None

    async def _refresh_keys(self) -> bool:
        """Refetch the JWKS unless it was fetched in the last ``jwks_min_refresh`` seconds."""
        if self._jwks_uri is None or self.clock() - self._keys_at < self.jwks_min_refresh:
            return False
        async with self._get_lock():
            if self.clock() - self._keys_at < self.jwks_min_refresh:
                return True  # someone refreshed while we waited: look again
            self._keys_at = self.clock()  # before fetching, so failures are rate-limited too
            try:
                self._keys = _parse_jwks(await self._get_json(self._jwks_uri))
            except Exception as exc:  # noqa: BLE001 - keep the old keys
                log.warning("oidc authenticator: refreshing keys of %s: %s", self.url, exc)
                return False
            return True

    def _verify_signature(self, header: dict, signing_input: bytes, signature: bytes) -> bool:
        alg = header["alg"]
        kid = header.get("kid", "")  # PyJWT has checked a kid is a string
        algorithm = jwt.get_algorithm_by_name(alg)
        for k in self._keys:
            if (not kid or k.kid == kid) and k.fits(alg) and algorithm.verify(signing_input, k.key, signature):
                return True
        return False

    # -- authentication --

    async def authenticate_token(self, token: str, cluster: str) -> UserInfo | None:
        return await self.authenticate(token)

    async def authenticate(self, token: str) -> UserInfo | None:
        """The user the token maps to; None if it is not from this issuer; AuthenticationError
        (kube's message) if it is but is invalid."""
        digest = hashlib.sha256(token.encode()).digest()
        user = self._cached(digest)
        return user if user is not None else await self._authenticate(token, _peek(token), digest)

    def _cached(self, digest: bytes) -> UserInfo | None:
        """The user of a token (by sha256) this authenticator verified in the last seconds; looked
        up before the token is parsed, which costs more than the lookup."""
        hit = self._cache.get(digest)
        return hit[1] if hit is not None and hit[0] > self.clock() else None

    async def _authenticate(self, token: str, parsed: tuple[dict, dict, bytes, bytes | None] | None,
                            digest: bytes) -> UserInfo | None:
        if parsed is None:
            return None
        header, claims, signing_input, sig = parsed
        if _issuer_of(claims) != self.url:
            return None
        now = self.clock()

        await self._ensure_provider()
        if now - self._keys_at > self.jwks_max_age:
            await self._refresh_keys()
        alg = header.get("alg")
        if alg not in ALLOWED_SIGNING_ALGS:
            raise AuthenticationError(f"oidc: verify token: oidc: id token signed with unsupported algorithm, "
                                      f"expected {_goq(list(ALLOWED_SIGNING_ALGS))} got {_goq(str(alg))}")
        if sig is None:
            raise AuthenticationError("oidc: verify token: oidc: malformed jwt: illegal base64 data")
        if not self._verify_signature(header, signing_input, sig):
            if not (await self._refresh_keys() and self._verify_signature(header, signing_input, sig)):
                raise AuthenticationError("oidc: verify token: failed to verify signature: "
                                          "failed to verify id token signature")
        self._check_registered_claims(claims, now)
        user = self._user(claims)

        exp = claims["exp"]
        if len(self._cache) >= self.cache_size:
            for k in [k for k, (until, _) in self._cache.items() if until <= now]:
                self._cache.pop(k, None)
            while len(self._cache) >= self.cache_size:
                self._cache.pop(next(iter(self._cache)), None)
        self._cache[digest] = (min(now + self.cache_ttl, float(exp)), user)
        return user

    def _check_registered_claims(self, claims: dict, now: float) -> None:
        """go-oidc's IDTokenVerifier checks (iss, aud, exp, nbf) plus an iat sanity check."""
        def fail(msg: str) -> AuthenticationError:
            return AuthenticationError("oidc: verify token: " + msg)

        if claims.get("iss") != self.url and not (claims.get("iss") == "accounts.google.com"
                                                    and self.url == "https://accounts.google.com"):
            raise fail(f"oidc: id token issued by a different provider, expected {_goq(self.url)} "
                       f"got {_goq(str(claims.get('iss')))}")
        aud = claims.get("aud")
        if isinstance(aud, str):
            token_auds = [aud]
        elif isinstance(aud, list):
            token_auds = [a for a in aud if isinstance(a, str)]
        else:
            token_auds = []
        if not any(a in self.audiences for a in token_auds):
            if len(self.audiences) == 1:
                raise fail(f"oidc: expected audience {_goq(self.audiences[0])} got {_goq(token_auds)}")
            raise fail(f"oidc: expected audience in {_goq(sorted(self.audiences))} got {_goq(token_auds)}")
        exp = claims.get("exp")
        if isinstance(exp, bool) or not isinstance(exp, (int, float)) or not math.isfinite(exp):
            # NaN or infinity would compare as never expiring (Python's json reads both)
            raise fail("oidc: token is expired (Token Expiry: 0001-01-01 00:00:00 +0000 UTC)")
        for name in ("nbf", "iat"):
            v = claims.get(name)
            if isinstance(v, float) and not math.isfinite(v):
                raise fail(f"oidc: malformed jwt claims: {name} is not a number")
        if exp < now:
            raise fail(f"oidc: token is expired (Token Expiry: {_go_time(exp)})")
        nbf = claims.get("nbf")
        if isinstance(nbf, (int, float)) and not isinstance(nbf, bool) and now + NBF_LEEWAY_SECONDS < nbf:
            raise fail(f"oidc: current time {_go_time(now)} before the nbf (not before) time: {_go_time(nbf)}")
        iat = claims.get("iat")
        if isinstance(iat, (int, float)) and not isinstance(iat, bool) and now + NBF_LEEWAY_SECONDS < iat:
            raise fail(f"oidc: current time {_go_time(now)} before the iat (issued at) time: {_go_time(iat)}")

    def _user(self, claims: dict) -> UserInfo:
        c = self.compiled
        m = self.config.claim_mappings
        cel_claims = _cel_value(claims) if (c.username or c.groups or c.uid or c.extra or c.claim_rules) else None

        # username
        if c.username is not None:
            name = self._eval(c.username, cel_claims, "oidc: error evaluating username claim expression: ")
            if not isinstance(name, str):
                raise AuthenticationError("oidc: error evaluating username claim expression: "
                                          "username claim expression must return a string")
            if not name:
                raise AuthenticationError("oidc: empty username via CEL expression is not allowed")
        else:
            claim = m.username.claim
            name = _string_claim(claims, claim, f"oidc: parse username claims {_goq(claim)}: ")
            if claim == "email" and "email_verified" in claims:
                verified = claims["email_verified"]
                if verified is not None and not isinstance(verified, bool):
                    raise AuthenticationError(f"oidc: parse 'email_verified' claim: json: cannot unmarshal "
                                              f"{_json_type(verified)} into Go value of type bool")
                if not verified:
                    raise AuthenticationError("oidc: email not verified")
            if m.username.prefix:
                name = m.username.prefix + name

        # groups
        groups: list[str] = []
        if m.groups.claim and m.groups.claim in claims:
            v = claims[m.groups.claim]
            if v is None:
                groups = []
            elif isinstance(v, str):
                groups = [v]
            elif isinstance(v, list) and all(isinstance(g, str) for g in v):
                groups = list(v)
            else:
                raise AuthenticationError(f"oidc: parse groups claim {_goq(m.groups.claim)}: json: cannot unmarshal "
                                          f"{_json_type(v)} into Go value of type string")
            if m.groups.prefix:
                groups = [m.groups.prefix + g for g in groups]
        elif c.groups is not None:
            v = self._eval(c.groups, cel_claims, "oidc: error evaluating group claim expression: ")
            got = _string_list(v)
            if got is None:
                raise AuthenticationError("oidc: error evaluating group claim expression: "
                                          "expression must return a string or a list of strings")
            groups = got

        # uid
        uid = ""
        if m.uid.claim:
            uid = _string_claim(claims, m.uid.claim, f"oidc: parse uid claim {_goq(m.uid.claim)}: ")
        elif c.uid is not None:
            v = self._eval(c.uid, cel_claims, "oidc: error evaluating uid claim expression: ")
            if not isinstance(v, str):
                raise AuthenticationError("oidc: error evaluating uid claim expression: "
                                          "uid claim expression must return a string")
            uid = v

        # extra
        extra: dict[str, tuple[str, ...]] = {}
        jti = claims.get("jti")
        if isinstance(jti, str) and jti:
            extra[CREDENTIAL_ID] = (f"JTI={jti}",)
        results = [(key, expr, self._eval(expr, cel_claims, "")) for key, expr in c.extra]
        for key, expr, v in results:
            values = _string_list(v)
            if values is None:
                raise AuthenticationError(f"oidc: error evaluating extra claim expression: {expr.source}: "
                                          "expression must return a string or a list of strings")
            if values:
                extra[key] = tuple(values)

        # required claims, then claim validation rules
        for claim, want in c.required_claims:
            if claim not in claims:
                raise AuthenticationError(f"oidc: required claim {claim} not present in ID token")
            got_v = claims[claim]
            if got_v is not None and not isinstance(got_v, str):
                raise AuthenticationError(f"oidc: parse claim {claim}: json: cannot unmarshal "
                                          f"{_json_type(got_v)} into Go value of type string")
            if (got_v or "") != want:
                raise AuthenticationError(f"oidc: required claim {claim} value does not match. "
                                          f"Got = {got_v or ''}, want = {want}")
        self._check_rules(c.claim_rules, cel_claims, "oidc: error evaluating claim validation expression: ")

        user = UserInfo(name, uid, tuple(groups), extra)
        if c.user_rules:
            user_value = _cel_value({"username": name, "uid": uid, "groups": list(groups),
                                     "extra": {k: list(v) for k, v in extra.items()}})
            self._check_rules(c.user_rules, user_value, "oidc: error evaluating user info validation rule: ")
        return user

    @staticmethod
    def _eval(expr: _Expr, value: Any, prefix: str) -> Any:
        try:
            return expr.eval(value)
        except _EvalError as exc:
            raise AuthenticationError(prefix + str(exc)) from None

    def _check_rules(self, rules: list[tuple[_Expr, str]], value: Any, prefix: str) -> None:
        results = [(expr, message, self._eval(expr, value, prefix)) for expr, message in rules]
        for expr, message, ok in results:
            if not isinstance(ok, bool):
                raise AuthenticationError(prefix + "validation expression must return a boolean")
            if not ok:
                raise AuthenticationError(f"{prefix}validation expression '{expr.source}' failed: {message}")


def _string_claim(claims: dict, name: str, prefix: str) -> str:
    """A claim unmarshalled into a Go string: missing is an error, null is ""."""
    if name not in claims:
        raise AuthenticationError(prefix + "claim not present")
    v = claims[name]
    if v is None:
        return ""
    if not isinstance(v, str):
        raise AuthenticationError(f"{prefix}json: cannot unmarshal {_json_type(v)} into Go value of type string")
    return v


class Authenticators:
    """Every JWT authenticator of a configuration; a token goes to the one its ``iss`` names."""

    def __init__(self, authenticators: Sequence[JWTAuthenticator] = ()) -> None:
        self.by_issuer: dict[str, JWTAuthenticator] = {}
        for a in authenticators:
            if a.url in self.by_issuer:
                raise ValueError(f"duplicate JWT issuer {a.url!r}")
            self.by_issuer[a.url] = a

    @classmethod
    def from_config(cls, config: AuthenticationConfig, **options: Any) -> Authenticators:
        return cls([JWTAuthenticator(j, **options) for j in config.jwt])

    @property
    def issuers(self) -> list[str]:
        return list(self.by_issuer)

    async def start(self) -> None:
        await asyncio.gather(*(a.start() for a in self.by_issuer.values()))

    def health_check(self) -> dict[str, str]:
        """Issuer -> why it is not ready, for the ones that are not."""
        return {u: h for u, a in self.by_issuer.items() if (h := a.health_check())}

    async def authenticate(self, token: str) -> UserInfo | None:
        if not self.by_issuer:
            return None
        digest = hashlib.sha256(token.encode()).digest()
        for a in self.by_issuer.values():
            if (user := a._cached(digest)) is not None:
                return user
        parsed = _peek(token)
        iss = None if parsed is None else _issuer_of(parsed[1])
        found = self.by_issuer.get(iss) if iss is not None else None
        return None if found is None else await found._authenticate(token, parsed, digest)

    async def authenticate_token(self, token: str, cluster: str) -> UserInfo | None:
        return await self.authenticate(token)
