"""Who a request is from: kube's user.Info, and the well-known names."""

from __future__ import annotations

from dataclasses import dataclass, field

MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS = "system:anonymous"
SERVICE_ACCOUNTS = "system:serviceaccounts"
SA_PREFIX = "system:serviceaccount:"
#: the group of the hub's own controllers' identities (their client certificates carry it), as
#: kube's system components have names of their own: API Priority and Fairness gives their Lease
#: renewals the leader-election level and their other requests workload-high (apis/flowcontrol.py)
CONTROLLERS = "system:fleetplane:controllers"
CREDENTIAL_ID = "authentication.kubernetes.io/credential-id"
#: extra key naming the logical cluster a credential was issued in (as kcp's cluster-name extra)
CLUSTER_EXTRA = "authentication.fleetplane.io/cluster-name"


@dataclass(frozen=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict[str, tuple[str, ...]] = field(default_factory=dict, hash=False, compare=False)

    def with_authenticated_group(self) -> UserInfo:
        """kube's AuthenticatedGroupAdder: everyone but anonymous is in system:authenticated."""
        if self.name == ANONYMOUS or AUTHENTICATED in self.groups or UNAUTHENTICATED in self.groups:
            return self
        return UserInfo(self.name, self.uid, (*self.groups, AUTHENTICATED), self.extra)

    @property
    def is_master(self) -> bool:
        return MASTERS in self.groups

    def to_kube(self) -> dict:
        """As authentication.k8s.io/v1 UserInfo (SelfSubjectReview, TokenReview, audit)."""
        out: dict = {"username": self.name}
        if self.uid:
            out["uid"] = self.uid
        if self.groups:
            out["groups"] = list(self.groups)
        if self.extra:
            out["extra"] = {k: list(v) for k, v in self.extra.items()}
        return out


ANONYMOUS_USER = UserInfo(ANONYMOUS, groups=(UNAUTHENTICATED,))


def service_account_user(namespace: str, name: str, uid: str = "", extra: dict[str, tuple[str, ...]] | None = None) -> UserInfo:
    return UserInfo(f"{SA_PREFIX}{namespace}:{name}", uid,
                    (SERVICE_ACCOUNTS, f"{SERVICE_ACCOUNTS}:{namespace}"), extra or {})


def split_service_account(username: str) -> tuple[str, str] | None:
    """(namespace, name) of ``system:serviceaccount:<ns>:<name>``, else None."""
    if not username.startswith(SA_PREFIX):
        return None
    ns, sep, name = username[len(SA_PREFIX):].partition(":")
    if not sep or not ns or not name or ":" in name:
        return None
    return ns, name
