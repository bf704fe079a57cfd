"""What authorization decides on: kube's authorizer.Attributes, plus the logical cluster."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ..user import UserInfo


@dataclass(frozen=True, slots=True)
class Attributes:
    user: UserInfo
    verb: str  # get list watch create update patch delete deletecollection (resources); get post ... (paths)
    cluster: str  # the logical cluster; "*" for the /clusters/* wildcard
    resource_request: bool = True
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""  # non-resource requests: the path without the /clusters/<name> prefix
    #: list/watch: the request's labelSelector (kube hands authorizers the selectors, KEP-4601)
    label_selector: str = ""


class Decision(Enum):
    ALLOW = "allow"
    DENY = "deny"
    NO_OPINION = "no-opinion"


@dataclass(frozen=True)
class Result:
    decision: Decision
    reason: str = ""

    @property
    def allowed(self) -> bool:
        return self.decision is Decision.ALLOW
