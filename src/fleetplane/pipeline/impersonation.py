"""Impersonation (``kubectl --as``/``--as-group``), as kube's impersonation filter.

Each requested item is authorized on its own with verb ``impersonate`` in the request's
logical cluster: a user name (``users``, or ``serviceaccounts`` for a ServiceAccount name),
each group (``groups``), each extra value (``userextras/<key>``) and the uid (``uids``).
The result is the requested identity alone; nothing of the requester carries over.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from urllib.parse import unquote

from ..apimachinery import errors as e
from .authorization.attributes import Attributes, Result
from .authorization.authorizer import forbidden
from .user import ANONYMOUS, AUTHENTICATED, SERVICE_ACCOUNTS, UNAUTHENTICATED, UserInfo, split_service_account

USER, GROUP, UID, EXTRA_PREFIX = "impersonate-user", "impersonate-group", "impersonate-uid", "impersonate-extra-"


def requested(headers: Iterable[tuple[str, str]]) -> tuple[str, list[str], str, dict[str, list[str]]] | None:
    """(user, groups, uid, extra) asked for by Impersonate-* headers, or None if there are none."""
    user, uid, any_header = "", "", False
    groups: list[str] = []
    extra: dict[str, list[str]] = {}
    for k, v in headers:
        if not k.startswith("impersonate-"):
            continue
        any_header = True
        if k == USER:
            user = v
        elif k == GROUP:
            groups.append(v)
        elif k == UID:
            uid = v
        elif k.startswith(EXTRA_PREFIX):
            extra.setdefault(unquote(k[len(EXTRA_PREFIX):]).lower(), []).append(v)
    if not any_header:
        return None
    return user, groups, uid, extra


def impersonate(requester: UserInfo, headers: Iterable[tuple[str, str]], cluster: str,
                authorize: Callable[[Attributes], Result]) -> UserInfo | None:
    """The identity to act as, or None when the request asks for no impersonation."""
    asked = requested(headers)
    if asked is None:
        return None
    name, groups, uid, extra = asked
    if not name:
        refs = [f"groups={g}" for g in groups] + [f"extra={k}" for k in extra] + ([f"uid={uid}"] if uid else [])
        raise e.bad_request(f"requested [{' '.join(refs)}] without impersonating a user")

    def check(*, group: str, resource: str, name: str, namespace: str = "", subresource: str = "") -> None:
        attrs = Attributes(requester, "impersonate", cluster, group=group, resource=resource, name=name,
                           namespace=namespace, subresource=subresource)
        if not authorize(attrs).allowed:
            raise forbidden(attrs)

    sa = split_service_account(name)
    if sa is not None:
        check(group="", resource="serviceaccounts", namespace=sa[0], name=sa[1])
    else:
        check(group="", resource="users", name=name)
    for g in groups:
        check(group="", resource="groups", name=g)
    for key, values in extra.items():
        for v in values:
            check(group="authentication.k8s.io", resource="userextras", subresource=key, name=v)
    if uid:
        check(group="authentication.k8s.io", resource="uids", name=uid)
    if sa is not None and not groups:
        groups = [SERVICE_ACCOUNTS, f"{SERVICE_ACCOUNTS}:{sa[0]}"]
    if name == ANONYMOUS:
        if UNAUTHENTICATED not in groups:
            groups.append(UNAUTHENTICATED)
    elif AUTHENTICATED not in groups and UNAUTHENTICATED not in groups:
        groups.append(AUTHENTICATED)
    return UserInfo(name, uid, tuple(groups), {k: tuple(v) for k, v in extra.items()})
