"""The hub's side of ServiceAccount tokens: the TokenRequest subresource
(``POST .../serviceaccounts/<name>/token``, ``kubectl create token``), the token admission that
fills legacy ``kubernetes.io/service-account-token`` Secrets, and the cache lookups the
authenticator checks a token's ServiceAccount and Secret against.

kube fills legacy token Secrets from a controller, a moment after they are created; here the
token admission plugin fills them as they are created, so a client that reads one back has its
token at once. The ServiceAccount must exist (kube's controller deletes a Secret whose
ServiceAccount is missing; here its creation is refused).
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from ...apimachinery import errors as e
from ...apimachinery.errors import FieldError
from ...apimachinery.metatime import format_time, now_rfc3339
from ...storage import keys
from ..admission.chain import CREATE, UPDATE, BasePlugin, Request
from ..user import UserInfo
from .errors import ReferenceMissing
from .serviceaccount import ServiceAccountAuthenticator, TokenIssuer, bound_secret, validate_token_request

if TYPE_CHECKING:
    from ...registry.store import Context
    from ...storage.watchcache import WatchCache

TOKEN_SECRET_TYPE = "kubernetes.io/service-account-token"
SA_NAME_ANNOTATION = "kubernetes.io/service-account.name"
SA_UID_ANNOTATION = "kubernetes.io/service-account.uid"


class CacheLookup:
    """``serviceaccount.ObjectLookup`` over the watch cache: dict lookups, no I/O."""

    def __init__(self, cache: WatchCache) -> None:
        self.cache = cache

    def _get(self, resource: str, cluster: str, namespace: str, name: str) -> dict | None:
        o = self.cache.resource(keys.resource_prefix("", resource)).get(keys.object_key("", resource, cluster, namespace, name))
        return o.obj if o is not None else None

    def service_account(self, cluster: str, namespace: str, name: str) -> dict | None:
        return self._get("serviceaccounts", cluster, namespace, name)

    def secret(self, cluster: str, namespace: str, name: str) -> dict | None:
        return self._get("secrets", cluster, namespace, name)


class CatchingUp:
    """A ServiceAccount authenticator that, before refusing a token whose ServiceAccount or
    Secret it cannot find, catches the cache up once: on another replica, or a moment after
    ``kubectl create serviceaccount``, the cache may not hold it yet. Costs nothing on success."""

    def __init__(self, inner: ServiceAccountAuthenticator, catch_up: Any) -> None:
        self.inner = inner
        self.catch_up = catch_up

    async def authenticate_token(self, token: str, cluster: str) -> UserInfo | None:
        try:
            return self.inner.authenticate(token, cluster)
        except ReferenceMissing:
            pass
        await self.catch_up()
        return self.inner.authenticate(token, cluster)


class TokenRequestStorage:
    """``serviceaccounts/token``: a token for the ServiceAccount, signed by its logical cluster."""

    def __init__(self, issuer: TokenIssuer, lookup: CacheLookup, catch_up: Any) -> None:
        self.issuer = issuer
        self.lookup = lookup
        self.catch_up = catch_up

    async def create(self, ctx: Context, name: str, obj: dict) -> dict:
        await self.catch_up()
        sa = self.lookup.service_account(ctx.cluster, ctx.namespace, name)
        if sa is None:  # kube looks the ServiceAccount up before it validates the request
            raise e.not_found("", "serviceaccounts", name)
        if obj.get("kind") not in (None, "TokenRequest") or obj.get("apiVersion") not in (None, "authentication.k8s.io/v1"):
            raise e.bad_request(f"the kind in the data ({obj.get('kind')}) does not match the expected kind (TokenRequest)")
        audiences, seconds, ref = validate_token_request(obj, self.issuer.max_expiration_seconds, name=name,
                                                         namespace=ctx.namespace, warnings=ctx.warnings)
        bound = bound_secret(ref, self.lookup.secret(ctx.cluster, ctx.namespace, str(ref.get("name") or ""))) if ref else None
        sa_uid = str(sa["metadata"].get("uid") or "")
        token, expires = self.issuer.issue(ctx.cluster, ctx.namespace, name, sa_uid, audiences, seconds, bound)
        spec: dict[str, Any] = {"audiences": audiences or self.issuer.api_audiences(ctx.cluster), "expirationSeconds": seconds}
        if ref:
            spec["boundObjectRef"] = ref
        meta = {"name": name, "namespace": ctx.namespace, "creationTimestamp": now_rfc3339()}
        return {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1", "metadata": meta, "spec": spec,
                "status": {"token": token, "expirationTimestamp": format_time(expires)}}


class TokenSecrets(BasePlugin):
    """Fills ``kubernetes.io/service-account-token`` Secrets (token, ca.crt, namespace, uid)."""

    name = "ServiceAccountTokens"
    operations = frozenset({CREATE, UPDATE})

    def __init__(self, issuer: TokenIssuer, lookup: CacheLookup, ca_pem: bytes) -> None:
        self.issuer = issuer
        self.lookup = lookup
        self.ca_pem = base64.b64encode(ca_pem).decode()

    async def admit(self, req: Request) -> None:
        obj = req.obj
        if obj is None or req.group or req.resource != "secrets" or obj.get("type") != TOKEN_SECRET_TYPE or req.subresource:
            return
        meta = obj.get("metadata") or {}
        annotations = meta.get("annotations") or {}
        sa_name = annotations.get(SA_NAME_ANNOTATION) if isinstance(annotations, dict) else None
        if not sa_name:
            return  # validation refuses it (kube requires the annotation)
        data: dict = obj["data"] if isinstance(obj.get("data"), dict) else {}
        if req.operation == UPDATE and req.old is not None and (req.old.get("data") or {}).get("token"):
            old_data = req.old.get("data") or {}
            obj["data"] = {**data, **{k: old_data[k] for k in ("token", "ca.crt", "namespace") if k in old_data}}
            return  # filled once; an update keeps the token
        sa = self.lookup.service_account(req.cluster, req.namespace, str(sa_name))
        if sa is None:
            return  # validate() refuses it
        sa_uid = str(sa["metadata"].get("uid") or "")
        annotations[SA_UID_ANNOTATION] = sa_uid
        token = self.issuer.issue_legacy(req.cluster, req.namespace, str(sa_name), sa_uid, req.name)
        obj["data"] = {**data, "token": base64.b64encode(token.encode()).decode(), "ca.crt": self.ca_pem,
                       "namespace": base64.b64encode(req.namespace.encode()).decode()}

    async def validate(self, req: Request) -> list[FieldError]:
        obj = req.obj
        if obj is None or req.group or req.resource != "secrets" or obj.get("type") != TOKEN_SECRET_TYPE or req.operation != CREATE:
            return []
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        sa_name = annotations.get(SA_NAME_ANNOTATION)
        if not sa_name:
            return [e.required(f"metadata.annotations[{SA_NAME_ANNOTATION}]")]
        if self.lookup.service_account(req.cluster, req.namespace, str(sa_name)) is None:
            return [e.invalid(f"metadata.annotations[{SA_NAME_ANNOTATION}]", sa_name,
                              f'serviceaccount "{sa_name}" not found in namespace "{req.namespace}"')]
        return []
