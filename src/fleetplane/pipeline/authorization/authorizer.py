"""The authorizer chain: ``system:masters`` may do anything (kube's privileged-groups
authorizer, ahead of RBAC, so the admin never pays for rule evaluation), then RBAC.

A denial is rendered once, here, with kube's exact Forbidden wording.
"""

from __future__ import annotations

import html
from typing import Protocol

from ...apimachinery.errors import StatusError
from ..user import MASTERS
from .attributes import Attributes, Decision, Result

ALLOW_MASTERS = Result(Decision.ALLOW, "")
NO_OPINION = Result(Decision.NO_OPINION, "")


class Authorizer(Protocol):
    def authorize(self, attrs: Attributes) -> Result: ...


class Chain:
    """Authorizers in order; the first that does not answer NoOpinion decides."""

    def __init__(self, *authorizers: Authorizer) -> None:
        self.authorizers = authorizers

    def authorize(self, attrs: Attributes) -> Result:
        if MASTERS in attrs.user.groups:
            return ALLOW_MASTERS
        for a in self.authorizers:
            result = a.authorize(attrs)
            if result.decision is not Decision.NO_OPINION:
                return result
        return NO_OPINION


class AlwaysAllow:
    """``--no-auth``: everything is allowed (the reviews say so too)."""

    def authorize(self, attrs: Attributes) -> Result:
        return ALLOW_MASTERS


def forbidden_message(attrs: Attributes, reason: str = "") -> str:
    """kube's responsewriters.forbiddenMessage wrapped by NewForbidden."""
    user = attrs.user.name
    if not attrs.resource_request:
        inner = f'User "{user}" cannot {attrs.verb} path "{attrs.path}"'
        outer = "forbidden: "
    else:
        res = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
        where = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
        inner = f'User "{user}" cannot {attrs.verb} resource "{res}" in API group "{attrs.group}" {where}'
        gr = f"{attrs.resource}.{attrs.group}" if attrs.group else attrs.resource
        outer = f'{gr} "{attrs.name}" is forbidden: ' if attrs.name else f"{gr} is forbidden: "
    if reason:
        inner += f": {reason}"
    return outer + html.escape(inner, quote=False)


def forbidden(attrs: Attributes, reason: str = "") -> StatusError:
    details = {"name": attrs.name, "group": attrs.group, "kind": attrs.resource} if attrs.resource_request else {}
    return StatusError(403, "Forbidden", forbidden_message(attrs, reason), {k: v for k, v in details.items() if v} or None)
