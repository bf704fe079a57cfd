"""ServiceAccount tokens: issuing (TokenRequest, legacy Secrets), OIDC discovery, verifying.

Every logical cluster is its own issuer, ``<external-url>/clusters/<name>``, and that URL is also
the cluster's API audience, so a token minted in one logical cluster never authenticates in
another. One signing key serves them all; the claims follow kube's bound and legacy tokens
(k8s pkg/serviceaccount claims.go, legacy.go) plus kcp's cluster-name claim.

Verification is the hot path: the RSA signature check is cached for a few seconds keyed by a
hash of the token, but every request still checks times, the cluster, the audience and that the
ServiceAccount (and a bound or legacy Secret) still exists with the same uid -- dict lookups in
the hub's cache -- so deleting a ServiceAccount revokes its tokens at once.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import math
import os
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import jwt
import orjson
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.utils import base64url_encode

from ...apimachinery import errors as e
from ...apimachinery.metatime import parse_time
from ..user import CLUSTER_EXTRA, CREDENTIAL_ID, SA_PREFIX, UserInfo, service_account_user
from .errors import AuthenticationError, ReferenceMissing

LEGACY_ISSUER = "kubernetes/serviceaccount"
OPENID_CONFIG_PATH = "/.well-known/openid-configuration"
JWKS_PATH = "/openid/v1/jwks"
#: Cache-Control max-age kube sends with the discovery documents (staticPublicKeysGetter)
DISCOVERY_MAX_AGE = 3600

DEFAULT_EXPIRATION_SECONDS = 3600  # kube's TokenRequestSpec default
MIN_EXPIRATION_SECONDS = 600  # validation.MinTokenAgeSec
MAX_EXPIRATION_LIMIT = 1 << 32
#: --service-account-max-token-expiration: kube has no cap by default; a year keeps agents'
#: long-lived tokens working while bounding what a leaked one is worth
DEFAULT_MAX_EXPIRATION_SECONDS = 86400 * 365
#: go-jose's jwt.DefaultLeeway, which kube's validator uses for exp, nbf and iat
LEEWAY_SECONDS = 60

#: the Secret label kube's legacy-token cleaner sets to switch a token off
INVALID_SINCE_LABEL = "kubernetes.io/legacy-token-invalid-since"

_K8S = "kubernetes.io"
_LEGACY_NS = "kubernetes.io/serviceaccount/namespace"
_LEGACY_SECRET = "kubernetes.io/serviceaccount/secret.name"
_LEGACY_SA_NAME = "kubernetes.io/serviceaccount/service-account.name"
_LEGACY_SA_UID = "kubernetes.io/serviceaccount/service-account.uid"
_LEGACY_CLUSTER = "kubernetes.io/serviceaccount/clusterName"

_AUTHN_GROUP = "authentication.k8s.io"


# ---------------------------------------------------------------------------------------------
# Keys
# ---------------------------------------------------------------------------------------------


def key_id(public_key: rsa.RSAPublicKey | ec.EllipticCurvePublicKey) -> str:
    """kube's keyIDFromPublicKey: base64url(sha256(PKIX DER)), so the kid never reveals the key."""
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64url_encode(hashlib.sha256(der).digest()).decode("ascii")


#: the JWS algorithm kube signs with for each ECDSA curve
_EC_ALGS = {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}


@dataclass(frozen=True)
class VerifyKey:
    """A public key that signs our tokens, as served in the JWKS."""

    public_key: rsa.RSAPublicKey | ec.EllipticCurvePublicKey
    kid: str
    alg: str

    @classmethod
    def of(cls, public_key: rsa.RSAPublicKey | ec.EllipticCurvePublicKey) -> VerifyKey:
        return cls(public_key, key_id(public_key), _alg_of(public_key))

    def verify(self, signing_input: bytes, signature: bytes) -> bool:
        return jwt.get_algorithm_by_name(self.alg).verify(signing_input, self.public_key, signature)

    def jwk(self) -> dict[str, str]:
        """The JWK in go-jose's field order, as kube's /openid/v1/jwks serves it."""
        jwk = jwt.get_algorithm_by_name(self.alg).to_jwk(self.public_key, as_dict=True)
        if jwk["kty"] == "RSA":
            return {"use": "sig", "kty": "RSA", "kid": self.kid, "alg": self.alg, "n": jwk["n"], "e": jwk["e"]}
        return {"use": "sig", "kty": "EC", "kid": self.kid, "crv": jwk["crv"], "alg": self.alg,
                "x": jwk["x"], "y": jwk["y"]}


def _alg_of(public_key: Any) -> str:
    if isinstance(public_key, rsa.RSAPublicKey):
        return "RS256"  # kube signs RS256 whatever the RSA key size
    if isinstance(public_key, ec.EllipticCurvePublicKey) and public_key.curve.name in _EC_ALGS:
        return _EC_ALGS[public_key.curve.name]
    raise ValueError("unknown private key type, must be RSA or ECDSA P-256, P-384 or P-521")


@dataclass(frozen=True)
class SigningKey:
    """The private key tokens are signed with, its kube-style key id and JWS algorithm."""

    private_key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey
    kid: str
    alg: str

    @classmethod
    def of(cls, private_key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey) -> SigningKey:
        pub = private_key.public_key()
        return cls(private_key, key_id(pub), _alg_of(pub))

    @property
    def verify_key(self) -> VerifyKey:
        return VerifyKey(self.private_key.public_key(), self.kid, self.alg)

    def sign(self, signing_input: bytes) -> bytes:
        return jwt.get_algorithm_by_name(self.alg).sign(signing_input, self.private_key)


def load_or_create_signing_key(path: Path) -> SigningKey:
    """The PEM private key at ``path``; a new RSA 2048 key (mode 0600) when there is none.

    RSA because verification, done on every request, is far cheaper than ECDSA's. Creation is
    atomic (written aside, then hard-linked into place) so two starting hubs agree on one key.
    """
    path = Path(path)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(pem)
                f.flush()
                os.fsync(f.fileno())
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass  # another process won the race: use its key
        finally:
            tmp.unlink(missing_ok=True)
    private = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(private, (rsa.RSAPrivateKey, ec.EllipticCurvePrivateKey)):
        raise ValueError(f"{path}: unknown private key type, must be RSA or ECDSA")
    return SigningKey.of(private)


# ---------------------------------------------------------------------------------------------
# Issuing
# ---------------------------------------------------------------------------------------------


def _ref(name: str, uid: str) -> dict[str, str]:
    out = {}
    if name:
        out["name"] = name
    if uid:
        out["uid"] = uid
    return out


class TokenIssuer:
    """Signs ServiceAccount tokens and serves the per-cluster OIDC discovery documents."""

    def __init__(
        self,
        key: SigningKey | rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey,
        external_url: str,
        max_expiration_seconds: int = DEFAULT_MAX_EXPIRATION_SECONDS,
        *,
        verify_keys: Sequence[rsa.RSAPublicKey | ec.EllipticCurvePublicKey] = (),
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.key = key if isinstance(key, SigningKey) else SigningKey.of(key)
        self.external_url = external_url.rstrip("/")
        self.max_expiration_seconds = max_expiration_seconds
        self.issuer_prefix = self.external_url + "/clusters/"
        self.clock = clock
        #: every key a token of ours may be signed with (the signing key first; old keys during
        #: a rotation), by kid
        keys = [self.key.verify_key] + [VerifyKey.of(k) for k in verify_keys]
        self.verify_keys: dict[str, list[VerifyKey]] = {}
        for k in keys:
            if k not in self.verify_keys.get(k.kid, []):
                self.verify_keys.setdefault(k.kid, []).append(k)
        self._all_keys = [k for ks in self.verify_keys.values() for k in ks]

    def issuer_url(self, cluster: str) -> str:
        return self.issuer_prefix + cluster

    def api_audiences(self, cluster: str) -> list[str]:
        """kube's --api-audiences for a logical cluster: its issuer URL."""
        return [self.issuer_url(cluster)]

    def cluster_of_issuer(self, iss: Any) -> str | None:
        """The logical cluster whose issuer URL ``iss`` is, or None."""
        if not isinstance(iss, str) or not iss.startswith(self.issuer_prefix):
            return None
        name = iss[len(self.issuer_prefix):]
        return name if name and "/" not in name else None

    def _sign(self, claims: dict[str, Any]) -> str:
        """A compact JWS of ``claims`` with header {alg, kid}. The claims are serialized in the
        order given: callers build them with sorted keys, as go-jose marshals its claims map."""
        return jwt.encode(claims, self.key.private_key, algorithm=self.key.alg,
                          headers={"typ": None, "kid": self.key.kid})

    def issue(
        self,
        cluster: str,
        namespace: str,
        sa_name: str,
        sa_uid: str,
        audiences: list[str] | None,
        expiration_seconds: int,
        bound: dict | None = None,
    ) -> tuple[str, datetime]:
        """A bound token (kube's TokenRequest claims plus ``clusterName``) and when it expires.

        ``bound`` is the Secret the token dies with: ``{"kind": "Secret", "name", "uid"}`` as
        :func:`bound_secret` returns it. Empty ``audiences`` mean the cluster's API audience.
        """
        if self.max_expiration_seconds > 0:
            expiration_seconds = min(expiration_seconds, self.max_expiration_seconds)
        if expiration_seconds <= 0:
            raise ValueError("expiration_seconds must be positive")
        now = int(self.clock())
        k8s: dict[str, Any] = {"clusterName": cluster, "namespace": namespace}  # keys in sorted order
        if bound:
            if bound.get("kind", "Secret") != "Secret":
                raise ValueError(f"cannot bind token to object of kind {bound.get('kind')!r}")
            k8s["secret"] = _ref(bound.get("name", ""), bound.get("uid", ""))
        k8s["serviceaccount"] = _ref(sa_name, sa_uid)
        claims = {
            "aud": list(audiences) if audiences else self.api_audiences(cluster),
            "exp": now + expiration_seconds,
            "iat": now,
            "iss": self.issuer_url(cluster),
            "jti": str(uuid.uuid4()),
            _K8S: k8s,
            "nbf": now,
            "sub": f"{SA_PREFIX}{namespace}:{sa_name}",
        }
        return self._sign(claims), datetime.fromtimestamp(now + expiration_seconds, UTC)

    def issue_legacy(self, cluster: str, namespace: str, sa_name: str, sa_uid: str, secret_name: str) -> str:
        """A never-expiring Secret token (kube's LegacyClaims plus ``clusterName``)."""
        return self._sign({
            "iss": LEGACY_ISSUER,
            _LEGACY_CLUSTER: cluster,
            _LEGACY_NS: namespace,
            _LEGACY_SECRET: secret_name,
            _LEGACY_SA_NAME: sa_name,
            _LEGACY_SA_UID: sa_uid,
            "sub": f"{SA_PREFIX}{namespace}:{sa_name}",
        })

    def openid_configuration(self, cluster: str) -> dict[str, Any]:
        """``/clusters/<c>/.well-known/openid-configuration`` (kube's openIDMetadata)."""
        iss = self.issuer_url(cluster)
        return {
            "issuer": iss,
            "jwks_uri": iss + JWKS_PATH,
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": sorted({k.alg for k in self._all_keys}),
        }

    def jwks(self) -> dict[str, Any]:
        """``/openid/v1/jwks``: every verification key, the same for all clusters."""
        return {"keys": [k.jwk() for k in self._all_keys]}

    def keys_for(self, kid: str) -> list[VerifyKey]:
        return self.verify_keys.get(kid, []) if kid else self._all_keys


def peek_cluster(token: str, issuer: TokenIssuer) -> str | None:
    """The logical cluster an (unverified) token of ours names, for kcp's rewrite of requests
    without ``/clusters/``; authentication proper comes later."""
    parsed = _parse(token)
    if parsed is None:
        return None
    claims = parsed[1]
    if claims.get("iss") == LEGACY_ISSUER:
        name = claims.get(_LEGACY_CLUSTER)
        return name if isinstance(name, str) and name else None
    return issuer.cluster_of_issuer(claims.get("iss"))


# ---------------------------------------------------------------------------------------------
# TokenRequest
# ---------------------------------------------------------------------------------------------


def _decode_error(detail: str) -> e.StatusError:
    return e.bad_request(f'TokenRequest in version "v1" cannot be handled as a TokenRequest: {detail}')


def _parse_group_version(api_version: str) -> tuple[str, str]:
    """schema.ParseGroupVersion, with its errors as an empty GroupVersion (FromAPIVersionAndKind)."""
    if not api_version:
        return "", ""
    parts = api_version.split("/")
    if len(parts) == 1:
        return "", parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    return "", ""


def validate_token_request(
    body: dict,
    max_expiration: int,
    *,
    name: str | None = None,
    namespace: str | None = None,
    warnings: list[str] | None = None,
) -> tuple[list[str], int, dict | None]:
    """(audiences, expirationSeconds, boundObjectRef) of a TokenRequest body, as kube's
    TokenREST.Create defaults, validates and caps them.

    Raises 422 for a bad duration (or a body name/namespace other than the URL's, when given)
    and 400 for an object the hub cannot bind a token to (only Secrets: it serves no Pods or
    Nodes). Empty audiences stay empty: :meth:`TokenIssuer.issue` fills in the cluster's. The
    caller then resolves the Secret with :func:`bound_secret`. A capped duration appends kube's
    warning to ``warnings``.
    """
    if not isinstance(body, dict):
        raise _decode_error("expected an object")
    meta = body.get("metadata") or {}
    spec = body.get("spec") or {}
    if not isinstance(meta, dict) or not isinstance(spec, dict):
        raise _decode_error("metadata and spec must be objects")
    kind = "TokenRequest"
    if name is not None and meta.get("name") and meta["name"] != name:
        raise e.invalid_object(_AUTHN_GROUP, kind, name, [
            e.invalid("metadata.name", meta["name"], "must match the service account name if specified")])
    if namespace is not None and meta.get("namespace") and meta["namespace"] != namespace:
        raise e.invalid_object(_AUTHN_GROUP, kind, name or "", [
            e.invalid("metadata.namespace", meta["namespace"], "must match the service account namespace if specified")])

    audiences = spec.get("audiences") or []
    if not isinstance(audiences, list) or not all(isinstance(a, str) for a in audiences):
        raise _decode_error("spec.audiences must be a list of strings")
    exp = spec.get("expirationSeconds")
    if exp is None:
        exp = DEFAULT_EXPIRATION_SECONDS
    elif isinstance(exp, bool) or not isinstance(exp, int):
        if isinstance(exp, float) and exp.is_integer():
            exp = int(exp)
        else:
            raise _decode_error("spec.expirationSeconds must be an integer")

    errs: list[e.FieldError] = []
    if exp < MIN_EXPIRATION_SECONDS:
        errs.append(e.invalid("spec.expirationSeconds", exp, "may not specify a duration less than 10 minutes"))
    if exp > MAX_EXPIRATION_LIMIT:
        errs.append(e.invalid("spec.expirationSeconds", exp, "may not specify a duration larger than 2^32 seconds"))
    if spec.get("attestations"):
        errs = [e.invalid("spec.attestations", spec["attestations"],
                          "attestations may only be specified with a webhook bound object reference")]
    if errs:
        raise e.invalid_object(_AUTHN_GROUP, kind, "", errs)

    ref = spec.get("boundObjectRef")
    if ref is not None:
        if not isinstance(ref, dict):
            raise _decode_error("spec.boundObjectRef must be an object")
        group, version = _parse_group_version(str(ref.get("apiVersion") or ""))
        ref_kind = str(ref.get("kind") or "")
        if not (group == "" and ref_kind == "Secret"):
            raise e.bad_request(f"cannot bind token to object of type {group}/{version}, Kind={ref_kind}")

    if max_expiration > 0 and exp > max_expiration:
        if warnings is not None:
            warnings.append(f"requested expiration of {exp} seconds shortened to {max_expiration} seconds")
        exp = max_expiration
    return list(audiences), exp, ref


def bound_secret(ref: dict, secret: dict | None) -> dict[str, str]:
    """The ``bound`` argument of :meth:`TokenIssuer.issue` for a boundObjectRef, given the Secret
    it names (None if missing): 404 when missing, 409 Conflict when the ref's uid is stale."""
    name = str(ref.get("name") or "")
    if secret is None:
        raise e.not_found("", "secrets", name)
    uid = str((secret.get("metadata") or {}).get("uid") or "")
    want = str(ref.get("uid") or "")
    if want and want != uid:
        raise e.conflict("", "Secret", name, f"the UID in the bound object reference ({want}) does not match "
                         "the UID in record. The object might have been deleted and then recreated")
    return {"kind": "Secret", "name": name, "uid": uid}


# ---------------------------------------------------------------------------------------------
# Verifying
# ---------------------------------------------------------------------------------------------


class ObjectLookup(Protocol):
    """Reads of the hub's in-memory cache (sync: they are dict lookups)."""

    def service_account(self, cluster: str, namespace: str, name: str) -> dict | None: ...

    def secret(self, cluster: str, namespace: str, name: str) -> dict | None: ...


def _parse(token: str) -> tuple[dict, dict, bytes] | None:
    """(header, unverified claims, signature) of a compact JWS, or None if it is not one (go-jose's
    ParseSigned failing: kube then leaves the token to other authenticators)."""
    try:
        parsed = jwt.decode_complete(token, options={"verify_signature": False})
    except jwt.InvalidTokenError:
        return None
    return parsed["header"], parsed["payload"], parsed["signature"]


def _go_quote_list(items: Sequence[str]) -> str:
    """Go's ``%q`` of a []string: ``["a" "b"]``."""
    return "[" + " ".join(orjson.dumps(s).decode() for s in items) + "]"


def _deleted_before(obj: dict, when: float) -> bool:
    ts = (obj.get("metadata") or {}).get("deletionTimestamp")
    if not ts:
        return False
    t = parse_time(ts)
    return t is None or t < when


def _uid(obj: dict) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def _numeric(claims: dict, name: str) -> float | None:
    v = claims.get(name)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise AuthenticationError("service account token claims could not be validated due to unexpected validation error")
    return float(v)


class ServiceAccountAuthenticator:
    """Authenticates our ServiceAccount JWTs against the logical cluster a request addresses."""

    def __init__(
        self,
        issuer: TokenIssuer,
        lookup: ObjectLookup,
        *,
        cache_ttl: float = 10.0,
        cache_size: int = 8192,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.issuer = issuer
        self.lookup = lookup
        self.cache_ttl = cache_ttl
        self.cache_size = cache_size
        self.clock = clock or issuer.clock
        #: sha256(token) -> (verified until, claims): the signature check, not the decision
        self._verified: dict[bytes, tuple[float, dict]] = {}

    # -- the TokenAuthenticator protocol of chain.Authenticator --

    async def authenticate_token(self, token: str, cluster: str) -> UserInfo | None:
        return self.authenticate(token, cluster)

    def authenticate(self, token: str, cluster: str) -> UserInfo | None:
        """The ServiceAccount user, None if the token is not ours; AuthenticationError if it is
        ours but invalid here."""
        result = self._authenticate(token, cluster, None)
        return None if result is None else result[0]

    def review(self, token: str, cluster: str, audiences: list[str] | None = None) -> dict[str, Any]:
        """A TokenReview ``status`` (kube's omitempty fields) for ``spec.token``/``spec.audiences``.

        As kube's TokenReview the user is the authenticator chain's, so it includes
        ``system:authenticated``; ``audiences`` are the token's that were asked for.
        """
        try:
            result = self._authenticate(token, cluster, audiences or None)
        except AuthenticationError as exc:
            return {"user": {}, "error": str(exc)}
        if result is None:
            return {"user": {}}
        user, auds = result
        status: dict[str, Any] = {"authenticated": True, "user": user.with_authenticated_group().to_kube()}
        if auds:
            status["audiences"] = auds
        return status

    # -- internals --

    def _verify(self, token: str, now: float) -> dict | None:
        """The signature-verified claims of a token of ours, None if not ours."""
        digest = hashlib.sha256(token.encode()).digest()
        hit = self._verified.get(digest)
        if hit is not None and hit[0] > now:
            return hit[1]
        parsed = _parse(token)
        if parsed is None:
            return None
        header, claims, signature = parsed
        iss = claims.get("iss")
        if iss != LEGACY_ISSUER and self.issuer.cluster_of_issuer(iss) is None:
            return None
        keys = self.issuer.keys_for(header.get("kid", ""))  # PyJWT has checked a kid is a string
        if not keys:
            raise AuthenticationError("invalid signature, no keys found")
        # PyJWT has parsed the token once; the signing input is all before the signature
        signing_input = token.rpartition(".")[0].encode("ascii")
        if not any(header.get("alg") == k.alg and k.verify(signing_input, signature) for k in keys):
            raise AuthenticationError("go-jose/go-jose: error in cryptographic primitive")
        if len(self._verified) >= self.cache_size:
            self._prune(now)
        self._verified[digest] = (now + self.cache_ttl, claims)
        return claims

    def _prune(self, now: float) -> None:
        for k in [k for k, (until, _) in self._verified.items() if until <= now]:
            self._verified.pop(k, None)
        while len(self._verified) >= self.cache_size:  # oldest first: dicts keep insertion order
            self._verified.pop(next(iter(self._verified)), None)

    def _authenticate(self, token: str, cluster: str, audiences: list[str] | None) -> tuple[UserInfo, list[str]] | None:
        now = self.clock()
        claims = self._verify(token, now)
        if claims is None:
            return None
        implicit = self.issuer.api_audiences(cluster)
        wanted = audiences or implicit
        if claims.get("iss") == LEGACY_ISSUER:
            return self._legacy(token, claims, cluster, implicit, wanted, now)
        return self._bound(claims, cluster, implicit, wanted, now)

    def _check_cluster(self, token_cluster: Any, cluster: str) -> None:
        if token_cluster != cluster:
            raise AuthenticationError(
                f"service account token is for logical cluster {orjson.dumps(token_cluster).decode()}, "
                f"not {orjson.dumps(cluster).decode()}")

    @staticmethod
    def _audiences(token_auds: list[str], wanted: list[str]) -> list[str]:
        auds = [a for a in token_auds if a in wanted]
        if not auds:
            raise AuthenticationError(f"token audiences {_go_quote_list(token_auds)} is invalid for "
                                      f"the target audiences {_go_quote_list(wanted)}")
        return auds

    def _service_account(self, cluster: str, namespace: str, name: str, uid: str, now: float, legacy: bool) -> None:
        sa = self.lookup.service_account(cluster, namespace, name)
        if sa is None:
            raise ReferenceMissing(f'serviceaccounts "{name}" not found')
        if legacy:
            if (sa.get("metadata") or {}).get("deletionTimestamp"):
                raise AuthenticationError(f"ServiceAccount {namespace}/{name} has been deleted")
            if _uid(sa) != uid:
                raise AuthenticationError(f"ServiceAccount UID ({_uid(sa)}) does not match claim ({uid})")
            return
        if _uid(sa) != uid:
            raise AuthenticationError(f"service account UID ({_uid(sa)}) does not match claim ({uid})")
        if _deleted_before(sa, now - LEEWAY_SECONDS):
            raise AuthenticationError(f"service account {namespace}/{name} has been deleted")

    def _bound(self, claims: dict, cluster: str, implicit: list[str], wanted: list[str],
               now: float) -> tuple[UserInfo, list[str]]:
        k8s = claims.get(_K8S)
        if not isinstance(k8s, dict):
            raise AuthenticationError("service account token claims could not be validated due to unexpected private claim")
        token_cluster = k8s.get("clusterName")
        if not isinstance(token_cluster, str) or self.issuer.issuer_url(token_cluster) != claims.get("iss"):
            raise AuthenticationError(f"token issuer {orjson.dumps(claims.get('iss')).decode()} is invalid")
        self._check_cluster(token_cluster, cluster)
        aud = claims.get("aud")
        if isinstance(aud, str):
            token_auds = [aud] if aud else []
        elif isinstance(aud, list):
            token_auds = [a for a in aud if isinstance(a, str)]
        else:
            token_auds = []
        auds = self._audiences(token_auds or implicit, wanted)

        nbf, exp, iat = _numeric(claims, "nbf"), _numeric(claims, "exp"), _numeric(claims, "iat")
        if nbf is not None and now + LEEWAY_SECONDS < nbf:
            raise AuthenticationError("service account token is not valid yet")
        if exp is not None and now - LEEWAY_SECONDS > exp:
            raise AuthenticationError("service account token has expired")
        if iat is not None and now + LEEWAY_SECONDS < iat:
            raise AuthenticationError("service account token is issued in the future")

        namespace = k8s.get("namespace")
        saref = k8s.get("serviceaccount")
        if not isinstance(namespace, str) or not isinstance(saref, dict):
            raise AuthenticationError("service account token claims could not be validated due to unexpected private claim")
        sa_name, sa_uid = str(saref.get("name") or ""), str(saref.get("uid") or "")
        self._service_account(cluster, namespace, sa_name, sa_uid, now, legacy=False)

        secref = k8s.get("secret")
        if secref is not None:
            secref = secref if isinstance(secref, dict) else {}
            secret = self.lookup.secret(cluster, namespace, str(secref.get("name") or ""))
            if secret is None:
                raise ReferenceMissing("service account token has been invalidated")
            if str(secref.get("uid") or "") != _uid(secret):
                raise AuthenticationError(f"secret UID ({_uid(secret)}) does not match service account "
                                          f"secret ref claim ({secref.get('uid') or ''})")
            if _deleted_before(secret, now - LEEWAY_SECONDS):
                raise AuthenticationError("service account token has been invalidated")
        if k8s.get("pod") is not None or k8s.get("node") is not None:
            # the hub serves neither, so such a binding cannot be checked: it never came from us
            raise AuthenticationError("service account token has been invalidated")

        extra: dict[str, tuple[str, ...]] = {}
        jti = claims.get("jti")
        if isinstance(jti, str) and jti:
            extra[CREDENTIAL_ID] = (f"JTI={jti}",)
        extra[CLUSTER_EXTRA] = (cluster,)
        return service_account_user(namespace, sa_name, sa_uid, extra), auds

    def _legacy(self, token: str, claims: dict, cluster: str, implicit: list[str], wanted: list[str],
                now: float) -> tuple[UserInfo, list[str]]:
        def claim(key: str, what: str) -> str:
            v = claims.get(key)
            if not isinstance(v, str) or not v:
                raise AuthenticationError(f"{what} claim is missing")
            return v

        sub = claim("sub", "sub")
        namespace = claim(_LEGACY_NS, "namespace")
        secret_name = claim(_LEGACY_SECRET, "secretName")
        sa_name = claim(_LEGACY_SA_NAME, "serviceAccountName")
        sa_uid = claim(_LEGACY_SA_UID, "serviceAccountUID")
        if sub != f"{SA_PREFIX}{namespace}:{sa_name}" or ":" in sa_name:
            raise AuthenticationError("sub claim is invalid")
        token_cluster = claims.get(_LEGACY_CLUSTER)
        if not isinstance(token_cluster, str) or not token_cluster:
            raise AuthenticationError("clusterName claim is missing")
        self._check_cluster(token_cluster, cluster)
        auds = self._audiences(implicit, wanted)  # legacy tokens carry no aud: the API's

        secret = self.lookup.secret(cluster, namespace, secret_name)
        if secret is None:
            raise ReferenceMissing("Token has been invalidated")
        if (secret.get("metadata") or {}).get("deletionTimestamp"):
            raise AuthenticationError("Token has been invalidated")
        stored = (secret.get("data") or {}).get("token") or ""
        try:
            stored_token = base64.b64decode(stored, validate=True)
        except (ValueError, binascii.Error):
            stored_token = b""
        if not hmac.compare_digest(stored_token, token.encode()):
            raise AuthenticationError("Token does not match server's copy")
        self._service_account(cluster, namespace, sa_name, sa_uid, now, legacy=True)
        if ((secret.get("metadata") or {}).get("labels") or {}).get(INVALID_SINCE_LABEL):
            raise AuthenticationError(
                f"the token in secret {namespace}/{secret_name} for service account {namespace}/{sa_name} has "
                "been marked invalid. Use tokens from the TokenRequest API or manually created secret-based "
                f"tokens, or remove the '{INVALID_SINCE_LABEL}' label from the secret to temporarily allow "
                "use of this token")
        return service_account_user(namespace, sa_name, sa_uid, {CLUSTER_EXTRA: (cluster,)}), auds
