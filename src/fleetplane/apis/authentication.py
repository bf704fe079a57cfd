"""The authentication group (``authentication.k8s.io/v1``): SelfSubjectReview (``kubectl auth
whoami``) and TokenReview, created and answered, never stored. Their answers come from the
request pipeline (:mod:`fleetplane.pipeline.authentication.reviews`), which passes them in."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..registry.types import CreateOnly, ResourceType, Strategy

GROUP = "authentication.k8s.io"


def resource_types(*, self_subject_review: Callable[..., Any], token_review: Callable[..., Any]) -> list[ResourceType]:
    """The two reviews, each answered by ``async create(ctx, obj) -> dict``."""
    return [
        ResourceType(GROUP, "v1", "SelfSubjectReview", "selfsubjectreviews", "selfsubjectreview", False, Strategy(),
                     rest=CreateOnly(self_subject_review), protobuf="k8s.io.api.authentication.v1.SelfSubjectReview"),
        ResourceType(GROUP, "v1", "TokenReview", "tokenreviews", "tokenreview", False, Strategy(),
                     rest=CreateOnly(token_review), protobuf="k8s.io.api.authentication.v1.TokenReview"),
    ]
