"""The access-review APIs (authorization.k8s.io/v1), answered by the authorizer, never stored.

SelfSubjectAccessReview (``kubectl auth can-i``), SubjectAccessReview (someone else; needs
create on subjectaccessreviews, as kube's system:auth-delegator grants), LocalSubjectAccessReview
(namespaced), SelfSubjectRulesReview (``kubectl auth can-i --list``). Each is evaluated in the
logical cluster the request addresses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...apimachinery import errors as e
from ...apis import authorization
from ...apis.authorization import GROUP
from ...registry.types import ResourceType
from ..user import UserInfo
from .attributes import Attributes, Decision

if TYPE_CHECKING:
    from ...registry.store import Context
    from .authorizer import Authorizer
    from .rbac import RBACAuthorizer

def _attributes(user: UserInfo, cluster: str, spec: dict, kind: str) -> Attributes:
    res, nonres = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if (res is None) == (nonres is None):
        raise e.invalid_object(GROUP, kind, "", [e.invalid("spec.resourceAttributes", None,
                                                          "exactly one of nonResourceAttributes or resourceAttributes must be specified")])
    if nonres is not None:
        if not isinstance(nonres, dict):
            raise e.bad_request("spec.nonResourceAttributes must be an object")
        return Attributes(user, str(nonres.get("verb") or ""), cluster, resource_request=False, path=str(nonres.get("path") or ""))
    if not isinstance(res, dict):
        raise e.bad_request("spec.resourceAttributes must be an object")
    return Attributes(user, str(res.get("verb") or ""), cluster, True, str(res.get("group") or ""), str(res.get("version") or ""),
                      str(res.get("resource") or ""), str(res.get("subresource") or ""), str(res.get("namespace") or ""),
                      str(res.get("name") or ""))


def _answer(obj: dict, kind: str, authorizer: Authorizer, attrs: Attributes) -> dict:
    result = authorizer.authorize(attrs)
    status: dict[str, Any] = {"allowed": result.allowed}
    if result.decision is Decision.DENY:
        status["denied"] = True
    if result.reason:
        status["reason"] = result.reason
    meta = dict(obj.get("metadata") or {})
    meta.setdefault("creationTimestamp", None)
    return {"kind": kind, "apiVersion": f"{GROUP}/v1", "metadata": meta, "spec": obj.get("spec") or {}, "status": status}


def _spec(obj: dict) -> dict:
    spec = obj.get("spec")
    if spec is None:
        return {}
    if not isinstance(spec, dict):
        raise e.bad_request("spec must be an object")
    return spec


class Reviews:
    """The storage of the four reviews; ``authorizer`` and ``rbac`` are set when the
    pipeline is assembled (the types are registered before the authorizer exists)."""

    authorizer: Authorizer
    rbac: RBACAuthorizer | None = None

    def types(self) -> list[ResourceType]:
        return authorization.resource_types(
            self_subject_access_review=self.self_subject_access_review, subject_access_review=self.subject_access_review,
            local_subject_access_review=self.local_subject_access_review,
            self_subject_rules_review=self.self_subject_rules_review)

    async def self_subject_access_review(self, ctx: Context, obj: dict) -> dict:
        kind = "SelfSubjectAccessReview"
        return _answer(obj, kind, self.authorizer, _attributes(_requester(ctx), ctx.cluster, _spec(obj), kind))

    async def subject_access_review(self, ctx: Context, obj: dict, kind: str = "SubjectAccessReview") -> dict:
        spec = _spec(obj)
        user, groups = str(spec.get("user") or ""), [str(g) for g in spec.get("groups") or []]
        if not user and not groups:
            raise e.invalid_object(GROUP, kind, "", [e.invalid("spec.user", user, "at least one of user or group must be specified")])
        extra = {str(k): tuple(str(x) for x in v) for k, v in (spec.get("extra") or {}).items()}
        subject = UserInfo(user, str(spec.get("uid") or ""), tuple(groups), extra)
        return _answer(obj, kind, self.authorizer, _attributes(subject, ctx.cluster, spec, kind))

    async def local_subject_access_review(self, ctx: Context, obj: dict) -> dict:
        kind = "LocalSubjectAccessReview"
        spec = _spec(obj)
        res = spec.get("resourceAttributes")
        if isinstance(res, dict) and res.get("namespace", ctx.namespace) != ctx.namespace:
            raise e.invalid_object(GROUP, kind, "", [e.invalid("spec.resourceAttributes.namespace", res.get("namespace"),
                                                               "must match metadata.namespace")])
        if spec.get("nonResourceAttributes") is not None:
            raise e.invalid_object(GROUP, kind, "", [e.invalid("spec.nonResourceAttributes", spec["nonResourceAttributes"],
                                                               "disallowed on this kind of request")])
        if isinstance(res, dict):
            res.setdefault("namespace", ctx.namespace)
        out = await self.subject_access_review(ctx, obj, kind)
        out["metadata"]["namespace"] = ctx.namespace
        return out

    async def self_subject_rules_review(self, ctx: Context, obj: dict) -> dict:
        spec = _spec(obj)
        namespace = str(spec.get("namespace") or "")
        status: dict[str, Any] = {"resourceRules": [], "nonResourceRules": [], "incomplete": False}
        if self.rbac is not None:
            info = self.rbac.rules_for(_requester(ctx), ctx.cluster, namespace)
            status = {"resourceRules": info.resource_rules, "nonResourceRules": info.non_resource_rules,
                      "incomplete": info.incomplete}
            if info.evaluation_error:
                status["evaluationError"] = info.evaluation_error
        meta = dict(obj.get("metadata") or {})
        meta.setdefault("creationTimestamp", None)
        return {"kind": "SelfSubjectRulesReview", "apiVersion": f"{GROUP}/v1", "metadata": meta, "spec": spec, "status": status}


def _requester(ctx: Context) -> UserInfo:
    if ctx.user is None:
        raise e.forbidden_error(GROUP, "selfsubjectaccessreviews", "", "no user on the request")
    return ctx.user  # type: ignore[no-any-return]
