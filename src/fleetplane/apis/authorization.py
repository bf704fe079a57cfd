"""The authorization group (``authorization.k8s.io/v1``): the access reviews, created and
answered by the authorizer, never stored. Their answers come from the request pipeline
(:mod:`fleetplane.pipeline.authorization.reviews`), which passes them in."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..registry.types import CreateOnly, ResourceType, Strategy

GROUP = "authorization.k8s.io"


def resource_types(*, self_subject_access_review: Callable[..., Any], subject_access_review: Callable[..., Any],
                   local_subject_access_review: Callable[..., Any],
                   self_subject_rules_review: Callable[..., Any]) -> list[ResourceType]:
    """The four reviews, each answered by ``async create(ctx, obj) -> dict``."""

    def review(kind: str, plural: str, namespaced: bool, create: Callable[..., Any]) -> ResourceType:
        return ResourceType(GROUP, "v1", kind, plural, kind.lower(), namespaced, Strategy(), rest=CreateOnly(create),
                            protobuf=f"k8s.io.api.authorization.v1.{kind}")

    return [review("SelfSubjectAccessReview", "selfsubjectaccessreviews", False, self_subject_access_review),
            review("SubjectAccessReview", "subjectaccessreviews", False, subject_access_review),
            review("LocalSubjectAccessReview", "localsubjectaccessreviews", True, local_subject_access_review),
            review("SelfSubjectRulesReview", "selfsubjectrulesreviews", False, self_subject_rules_review)]
