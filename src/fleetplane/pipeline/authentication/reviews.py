"""authentication.k8s.io/v1 reviews: SelfSubjectReview (``kubectl auth whoami``) and
TokenReview (is this token valid here, and whose is it), created and answered, never stored."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...apimachinery import errors as e
from ...apis import authentication
from ...apis.authentication import GROUP
from ...registry.types import ResourceType

if TYPE_CHECKING:
    from ...registry.store import Context

#: (token, cluster, audiences) -> TokenReview status
TokenReviewer = Callable[[str, str, list[str]], Any]


class AuthenticationReviews:
    """``token_reviewer`` is set when the pipeline is assembled (None: TokenReview is not served)."""

    token_reviewer: TokenReviewer | None = None

    def types(self) -> list[ResourceType]:
        return authentication.resource_types(self_subject_review=self.self_subject_review,
                                             token_review=self.token_review)

    async def self_subject_review(self, ctx: Context, obj: dict) -> dict:
        meta = dict(obj.get("metadata") or {})
        meta.setdefault("creationTimestamp", None)
        user = ctx.user.to_kube() if ctx.user is not None else {}
        return {"kind": "SelfSubjectReview", "apiVersion": f"{GROUP}/v1", "metadata": meta, "status": {"userInfo": user}}

    async def token_review(self, ctx: Context, obj: dict) -> dict:
        spec = obj.get("spec") or {}
        token = spec.get("token") if isinstance(spec, dict) else None
        if not isinstance(token, str) or not token:
            raise e.invalid_object(GROUP, "TokenReview", "", [e.required("spec.token")])
        audiences = [str(a) for a in spec.get("audiences") or []]
        if self.token_reviewer is None:
            status: dict = {"authenticated": False, "error": "token review is not served"}
        else:
            status = await self.token_reviewer(token, ctx.cluster, audiences)
        meta = dict(obj.get("metadata") or {})
        meta.setdefault("creationTimestamp", None)
        # The token is never echoed back (kube's response spec keeps it; ours does not, so no log of a response holds it).
        return {"kind": "TokenReview", "apiVersion": f"{GROUP}/v1", "metadata": meta,
                "spec": {k: v for k, v in spec.items() if k != "token"}, "status": status}
