"""RBAC escalation prevention: kube's policy-based RBAC storage, as an admission plugin.

kube-apiserver refuses to let anyone grant permissions they do not hold: writing a Role or
ClusterRole needs its rules covered by the writer's own (or the ``escalate`` verb on it), and
writing a binding needs the referenced role's rules covered (or the ``bind`` verb on it). The
checks and the 403 text follow ``pkg/registry/rbac`` (``escalation_check.go``, the
``policybased`` storages, ``validation/rule.go`` ConfirmNoEscalation and the comparator of
``component-helpers/auth/rbac/validation``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ...apimachinery import errors as e
from ...apimachinery.errors import FieldError, StatusError
from ..admission.chain import CREATE, UPDATE, BasePlugin, Request
from ..user import UserInfo
from .attributes import Attributes
from .rbac import RBAC_GROUP, RBACAuthorizer, aggregate_errors, go_quote, go_quote_list

#: ``* * *`` plus ``*`` on every URL: what setting an aggregationRule requires
FULL_AUTHORITY: list[dict] = [
    {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
    {"verbs": ["*"], "nonResourceURLs": ["*"]},
]
_ROLE_RESOURCES = ("roles", "clusterroles")
_BINDING_RESOURCES = ("rolebindings", "clusterrolebindings")


def _list(rule: Mapping, key: str) -> list[str]:
    v = rule.get(key)
    return [x for x in v if isinstance(x, str)] if isinstance(v, list | tuple) else []


def breakdown(rule: Mapping) -> list[dict]:
    """One rule as atomic rules: one group, resource, verb and (if any) resource name each."""
    out: list[dict] = []
    names = _list(rule, "resourceNames")
    verbs = _list(rule, "verbs")
    for group in _list(rule, "apiGroups"):
        for resource in _list(rule, "resources"):
            for verb in verbs:
                if names:
                    out.extend({"apiGroups": [group], "resources": [resource], "verbs": [verb],
                                "resourceNames": [n]} for n in names)
                else:
                    out.append({"apiGroups": [group], "resources": [resource], "verbs": [verb]})
    for url in _list(rule, "nonResourceURLs"):
        out.extend({"nonResourceURLs": [url], "verbs": [verb]} for verb in verbs)
    return out


def _resources_cover(owner: list[str], wanted: list[str]) -> bool:
    if "*" in owner or all(w in owner for w in wanted):
        return True
    for w in wanted:
        if w in owner:
            continue
        if "/" not in w:
            return False
        if "*/" + w.split("/", 1)[1] not in owner:
            return False
    return True


def _url_covers(owner: str, sub: str) -> bool:
    return owner == sub or (owner.endswith("*") and sub.startswith(owner.rstrip("*")))


def _rule_covers(owner: Mapping, sub: Mapping) -> bool:
    """Whether one owner rule covers one atomic rule (kube's ruleCovers)."""
    o_verbs, o_groups = _list(owner, "verbs"), _list(owner, "apiGroups")
    if not ("*" in o_verbs or all(v in o_verbs for v in _list(sub, "verbs"))):
        return False
    if not ("*" in o_groups or all(g in o_groups for g in _list(sub, "apiGroups"))):
        return False
    if not _resources_cover(_list(owner, "resources"), _list(sub, "resources")):
        return False
    o_urls = _list(owner, "nonResourceURLs")
    if not all(any(_url_covers(o, u) for o in o_urls) for u in _list(sub, "nonResourceURLs")):
        return False
    o_names, s_names = _list(owner, "resourceNames"), _list(sub, "resourceNames")
    if not s_names:
        return not o_names
    return not o_names or all(n in o_names for n in s_names)


def covers(owner_rules: Iterable[Mapping], requested_rules: Iterable[Mapping]) -> tuple[bool, list[dict]]:
    """Whether ``owner_rules`` allow everything ``requested_rules`` do, and the atomic rules they don't."""
    owners = list(owner_rules)
    missing = [sub for r in requested_rules for sub in breakdown(r)
               if not any(_rule_covers(o, sub) for o in owners)]
    return not missing, missing


def compact_rules(rules: list[dict]) -> list[dict]:
    """kube's CompactRules: simple one-group one-resource rules merged, verbs appended."""
    out: list[dict] = []
    simple: dict[tuple[str, str], dict] = {}
    for r in rules:
        groups, resources = _list(r, "apiGroups"), _list(r, "resources")
        is_simple = (not r.get("resourceNames") and not r.get("nonResourceURLs") and len(groups) == 1
                     and len(resources) == 1 and set(r) <= {"apiGroups", "resources", "verbs"})
        if not is_simple:
            out.append(r)
            continue
        key = (groups[0], resources[0])
        if key in simple:
            simple[key]["verbs"].extend(_list(r, "verbs"))
        else:
            simple[key] = {"apiGroups": groups, "resources": resources, "verbs": list(_list(r, "verbs"))}
    return out + list(simple.values())


def compact_string(rule: Mapping) -> str:
    """kube's CompactString: ``{APIGroups:[""], Resources:["pods"], Verbs:["get"]}``."""
    parts = []
    for key, label in (("apiGroups", "APIGroups"), ("resources", "Resources"),
                       ("nonResourceURLs", "NonResourceURLs"), ("resourceNames", "ResourceNames"),
                       ("verbs", "Verbs")):
        values = _list(rule, key)
        if values:
            parts.append(f"{label}:{go_quote_list(values)}")
    return "{" + ", ".join(parts) + "}"


def escalation_message(user: UserInfo, missing: list[dict], resolution_errors: Sequence[str] = ()) -> str:
    """ConfirmNoEscalation's error text (without the ``... is forbidden:`` prefix)."""
    lines = sorted({compact_string(r) for r in compact_rules(missing)})
    msg = (f"user {go_quote(user.name)} (groups={go_quote_list(user.groups)}) is attempting to grant RBAC "
           "permissions not currently held:\n" + "\n".join(lines))
    if resolution_errors:
        # RulesFor's aggregate error, printed inside a []error
        msg += f"; resolution errors: [{aggregate_errors(list(resolution_errors))}]"
    return msg


def _forbidden(resource: str, name: str, why: str) -> StatusError:
    """apierrors.NewForbidden(rbac.Resource(resource), name, err)."""
    if name:
        return e.forbidden_error(RBAC_GROUP, resource, name, why)
    return StatusError(403, "Forbidden", f"{resource}.{RBAC_GROUP} is forbidden: {why}",
                       {"group": RBAC_GROUP, "kind": resource})


def _has_aggregation_rule(obj: Mapping | None) -> bool:
    agg = (obj or {}).get("aggregationRule")
    return isinstance(agg, Mapping) and bool(agg.get("clusterRoleSelectors"))


_GC_FIELDS = ("ownerReferences", "finalizers", "selfLink", "resourceVersion", "managedFields")


def only_gc_fields_changed(obj: Mapping, old: Mapping) -> bool:
    """kube's IsOnlyMutatingGCFields: the update touches only what the garbage collector writes."""
    def strip(o: Mapping) -> dict:
        meta = {k: v for k, v in (o.get("metadata") or {}).items() if k not in _GC_FIELDS}
        return {**{k: v for k, v in o.items() if k != "metadata"}, "metadata": meta}
    return strip(obj) == strip(old)


class EscalationPlugin(BasePlugin):
    """Refuses RBAC writes that would grant more than the writer holds (kube's policybased storage).

    Skipped for the hub's own controllers (``req.user is None``) and ``system:masters``. Roles and
    ClusterRoles pass with ``escalate`` on them or when the writer's rules (in the namespace, or
    cluster-wide for ClusterRoles) cover the new rules; an aggregationRule additionally needs full
    authority. Bindings pass with ``bind`` on the referenced role or when the writer holds all its
    rules; a non-privileged writer binding a missing role gets kube's 404.
    """

    name = "RBACEscalation"
    operations = frozenset({CREATE, UPDATE})

    def __init__(self, authorizer: RBACAuthorizer) -> None:
        self.authorizer = authorizer

    async def validate(self, req: Request) -> list[FieldError]:
        user = req.user
        if user is None or user.is_master or req.group != RBAC_GROUP or req.subresource or req.obj is None:
            return []
        if req.operation == UPDATE and req.old is not None and only_gc_fields_changed(req.obj, req.old):
            return []
        if req.resource in _ROLE_RESOURCES:
            self._check_role(req, user, req.obj)
        elif req.resource in _BINDING_RESOURCES:
            self._check_binding(req, user, req.obj)
        return []

    def _name(self, obj: Mapping, req: Request) -> str:
        return str((obj.get("metadata") or {}).get("name") or req.name or "")

    def _check_role(self, req: Request, user: UserInfo, obj: Mapping) -> None:
        namespace = req.namespace if req.resource == "roles" else ""
        # RoleEscalationAuthorized uses the request's name: none on a create (POST)
        attrs = Attributes(user, "escalate", req.cluster, True, RBAC_GROUP, "*", req.resource, "", namespace,
                           req.name if req.operation == UPDATE else "")
        if self.authorizer.authorize(attrs).allowed:
            return
        owner, errors = self.authorizer.policy_rules(user, req.cluster, namespace)
        rules = [r for r in obj.get("rules") or [] if isinstance(r, Mapping)]
        ok, missing = covers(owner, rules)
        name = self._name(obj, req)
        if not ok:
            raise _forbidden(req.resource, name, escalation_message(user, missing, errors))
        if req.resource == "clusterroles" and (
                _has_aggregation_rule(obj) or (req.operation == UPDATE and _has_aggregation_rule(req.old))):
            if not covers(owner, FULL_AUTHORITY)[0]:
                raise _forbidden(req.resource, name, "must have cluster-admin privileges to use the aggregationRule")

    def _check_binding(self, req: Request, user: UserInfo, obj: Mapping) -> None:
        namespace = req.namespace if req.resource == "rolebindings" else ""
        if req.resource == "rolebindings" and not namespace:
            raise e.bad_request("namespace is required")
        got = obj.get("roleRef")
        ref: Mapping = got if isinstance(got, Mapping) else {}
        kind, role_name = str(ref.get("kind") or ""), str(ref.get("name") or "")
        if kind in ("Role", "ClusterRole"):
            attrs = Attributes(user, "bind", req.cluster, True, str(ref.get("apiGroup") or RBAC_GROUP), "",
                               "roles" if kind == "Role" else "clusterroles", "", namespace, role_name)
            if self.authorizer.authorize(attrs).allowed:
                return
        else:
            raise e.internal(f"Internal error occurred: unsupported role reference kind: {go_quote(kind)}")
        rules = self.authorizer.role_rules(req.cluster, namespace, ref)
        if rules is None:
            raise e.not_found(RBAC_GROUP, "roles" if kind == "Role" else "clusterroles", role_name)
        owner, errors = self.authorizer.policy_rules(user, req.cluster, namespace)
        ok, missing = covers(owner, [r for r in rules if isinstance(r, Mapping)])
        if not ok:
            raise _forbidden(req.resource, self._name(obj, req), escalation_message(user, missing, errors))
