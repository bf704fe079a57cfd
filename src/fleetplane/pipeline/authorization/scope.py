"""Label-scoped ServiceAccounts: what RBAC cannot say ("only the Secrets labelled for me").

A ServiceAccount annotated ``authorization.fleetplane.io/label-scope: <key>=<value>`` (the
fleet gives each Syncer ``kcp.dev/cluster=<its cluster>``) may, on the scoped resources
(Secrets), list and watch only with a label selector that requires ``<key>=<value>``, and read
or write a Secret by name only if the Secret carries that label or the finalizer named by
``authorization.fleetplane.io/scope-finalizer`` (what the Syncer keeps on objects it synced).
Everything else is RBAC's to decide, as before. Like kube's Node authorizer, this narrows an
identity by the objects it touches; the list/watch half is kube's selector authorization
(KEP-4601), the by-name half runs where the object is known: on reads in the handler
(:meth:`LabelScope.object_allowed`), on writes in admission (:class:`LabelScopeAdmission`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...apimachinery.errors import FieldError, StatusError
from ...apimachinery.labels import LabelSelector
from ..admission.chain import DELETE, UPDATE, BasePlugin, Request
from ..user import UserInfo, split_service_account
from .attributes import Attributes, Decision, Result
from .authorizer import Authorizer, forbidden

if TYPE_CHECKING:
    from ..authentication.tokens import CacheLookup

SCOPE_ANNOTATION = "authorization.fleetplane.io/label-scope"
FINALIZER_ANNOTATION = "authorization.fleetplane.io/scope-finalizer"
#: (group, resource) the scope applies to
SCOPED = frozenset({("", "secrets")})
SCOPED_LIST_VERBS = frozenset({"list", "watch", "deletecollection"})
ROOT = "root"  # where the /clusters/* wildcard is authorized


def requires(selector: str, key: str, value: str) -> bool:
    """Whether a ``labelSelector`` can only match objects labelled ``key=value``."""
    try:
        parsed = LabelSelector.parse(selector)
    except StatusError:
        return False
    return any(r.key == key and r.op in ("=", "in") and r.values == (value,) for r in parsed.requirements)


class LabelScope:
    """Wraps the authorizer chain: scoped identities are refused what their scope excludes."""

    def __init__(self, inner: Authorizer, lookup: CacheLookup) -> None:
        self.inner = inner
        self.lookup = lookup

    def scope_of(self, user: UserInfo | None, cluster: str) -> tuple[str, str, str] | None:
        """(label key, value, finalizer) of a label-scoped ServiceAccount acting in ``cluster``,
        else None. The ServiceAccount is looked up where the request acts, not where a token came
        from: impersonating a scoped ServiceAccount (kube's ``edit`` may) brings its scope along."""
        if user is None:
            return None
        sa = split_service_account(user.name)
        if sa is None:
            return None
        obj = self.lookup.service_account(ROOT if cluster == "*" else cluster, sa[0], sa[1])
        ann = ((obj or {}).get("metadata") or {}).get("annotations") or {}
        scope = ann.get(SCOPE_ANNOTATION)
        if not isinstance(scope, str) or "=" not in scope:
            return None
        key, _, value = scope.partition("=")
        return key, value, str(ann.get(FINALIZER_ANNOTATION) or "")

    def authorize(self, attrs: Attributes) -> Result:
        if (attrs.resource_request and (attrs.group, attrs.resource) in SCOPED and attrs.verb in SCOPED_LIST_VERBS
                and (scope := self.scope_of(attrs.user, attrs.cluster)) is not None
                and not requires(attrs.label_selector, scope[0], scope[1])):
            return Result(Decision.DENY, f"this identity may {attrs.verb} {attrs.resource} only with the label "
                                         f"selector {scope[0]}={scope[1]}")
        return self.inner.authorize(attrs)

    def object_allowed(self, user: UserInfo | None, cluster: str, group: str, resource: str,
                       obj: dict[str, Any] | None) -> bool:
        if obj is None or (group, resource) not in SCOPED:
            return True
        scope = self.scope_of(user, cluster)
        if scope is None:
            return True
        meta = obj.get("metadata") or {}
        return (meta.get("labels") or {}).get(scope[0]) == scope[1] or bool(scope[2] and scope[2] in (meta.get("finalizers") or []))

    def check_object(self, attrs: Attributes, obj: dict[str, Any] | None) -> None:
        """403 (kube's wording) for a scoped identity reading an object outside its scope."""
        if not self.object_allowed(attrs.user, attrs.cluster, attrs.group, attrs.resource, obj):
            raise forbidden(attrs, "the object is outside this identity's label scope")


class LabelScopeAdmission(BasePlugin):
    """The write half: a scoped identity changes or deletes only objects in its scope."""

    name = "LabelScope"
    operations = frozenset({UPDATE, DELETE})

    def __init__(self, scope: LabelScope) -> None:
        self.scope = scope

    async def validate(self, req: Request) -> list[FieldError]:
        if not self.scope.object_allowed(req.user, req.cluster, req.group, req.resource, req.old):
            verb = "delete" if req.operation == DELETE else "update"
            attrs = Attributes(req.user, verb, req.cluster, group=req.group, resource=req.resource,  # type: ignore[arg-type]
                               namespace=req.namespace, name=req.name)
            raise forbidden(attrs, "the object is outside this identity's label scope")
        return []
