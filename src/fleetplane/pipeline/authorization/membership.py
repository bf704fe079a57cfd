"""kcp's workspace access rule, for logical clusters: a logical cluster gives an identity
nothing, not even discovery, unless something in that logical cluster binds it.

The bootstrap bindings to ``system:authenticated`` (discovery, basic-user) would otherwise
let anyone read any tenant's discovery and ask reviews there. So before RBAC runs, the
requester must be a *member* of the logical cluster: named (as a user, one of its groups, or
its ServiceAccount) by a stored RoleBinding or ClusterRoleBinding there, or by a bootstrap
binding other than the ones to everybody. ```system:masters`` skips this (the chain lets it
through first), and a ServiceAccount is a member of the logical cluster that issued its token; the public-info paths (``/healthz``, ``/livez``, ``/readyz``, ``/version``)
are open to all as kube's ``system:public-info-viewer`` makes them, and so are the reviews
about oneself (``kubectl auth whoami``, ``kubectl auth can-i``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from ..user import AUTHENTICATED, CLUSTER_EXTRA, SERVICE_ACCOUNTS, UNAUTHENTICATED, UserInfo
from . import bootstrap
from .attributes import Attributes, Decision, Result
from .rbac import PolicySource, RBACAuthorizer

#: groups that name everybody: a binding to them makes nobody a member
EVERYBODY = frozenset({AUTHENTICATED, UNAUTHENTICATED, SERVICE_ACCOUNTS})
PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version", "/version/"})
NOT_A_MEMBER = Result(Decision.NO_OPINION, "")
#: reviews about the requester alone, open to non-members so `kubectl auth whoami` and
#: `kubectl auth can-i` answer everywhere (RBAC's system:basic-user still decides)
SELF_REVIEWS = frozenset({("authentication.k8s.io", "selfsubjectreviews"),
                          ("authorization.k8s.io", "selfsubjectaccessreviews"),
                          ("authorization.k8s.io", "selfsubjectrulesreviews")})
ROOT = "root"


@dataclass
class _Members:
    generation: tuple[int, int]
    users: set[str] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)


def _add_subjects(members: _Members, binding: dict) -> None:
    for s in binding.get("subjects") or ():
        kind, name = s.get("kind"), s.get("name") or ""
        if kind == "User":
            members.users.add(name)
        elif kind == "Group" and name not in EVERYBODY:
            members.groups.add(name)
        elif kind == "ServiceAccount":
            members.users.add(f"system:serviceaccount:{s.get('namespace') or ''}:{name}")


class MemberSource(PolicySource, Protocol):
    def all_role_bindings(self, cluster: str) -> Iterable[dict]: ...


class MembershipAuthorizer:
    def __init__(self, rbac: RBACAuthorizer, source: MemberSource) -> None:
        self.rbac = rbac
        self.source = source
        self._members: dict[str, _Members] = {}

    def _members_of(self, cluster: str) -> _Members:
        gen = (self.source.generation(cluster), bootstrap.generation())
        m = self._members.get(cluster)
        if m is not None and m.generation == gen:
            return m
        m = _Members(gen)
        for b in bootstrap.CLUSTER_ROLE_BINDINGS.values():
            _add_subjects(m, b)
        for b in self.source.cluster_role_bindings(cluster):
            _add_subjects(m, b)
        for b in self.source.all_role_bindings(cluster):
            _add_subjects(m, b)
        self._members[cluster] = m
        return m

    def is_member(self, user: UserInfo, cluster: str) -> bool:
        if cluster in user.extra.get(CLUSTER_EXTRA, ()):  # a ServiceAccount of this logical cluster
            return True
        m = self._members_of(cluster)
        return user.name in m.users or any(g in m.groups for g in user.groups)

    def authorize(self, attrs: Attributes) -> Result:
        if not attrs.resource_request and attrs.path in PUBLIC_PATHS:
            return self.rbac.authorize(attrs)
        if attrs.resource_request and (attrs.group, attrs.resource) in SELF_REVIEWS:
            return self.rbac.authorize(attrs)  # "who am I", "may I": nothing of the cluster's is shown
        if not self.is_member(attrs.user, ROOT if attrs.cluster == "*" else attrs.cluster):
            return NOT_A_MEMBER
        return self.rbac.authorize(attrs)
