"""The RBAC authorizer: kube's ``plugin/pkg/auth/authorizer/rbac`` over many logical clusters.

Each logical cluster has its own Roles, ClusterRoles and bindings (from a :class:`PolicySource`);
kube's bootstrap policy (:mod:`.bootstrap`) applies in every cluster as well, shared and never
copied; a stored ClusterRole or ClusterRoleBinding named like a bootstrap one shadows it.

Evaluation follows kube: the ClusterRoleBindings of the cluster, then the RoleBindings of the
request's namespace, each binding's role rules in order; the first rule that allows wins, with
kube's reason text. No match is ``NO_OPINION`` (RBAC never denies); bindings whose role cannot
be resolved contribute kube's "not found" errors to the reason.

Aggregated ClusterRoles (``aggregationRule``) are evaluated with the rules kube's
clusterrole-aggregation controller would write into them, computed here to a fixed point so
``admin`` ⊇ ``edit`` ⊇ ``view`` holds without a controller having run (see :func:`aggregate_rules`).

Speed: per cluster, an index of bindings by subject is rebuilt lazily when the source's
``generation(cluster)`` changes; the flattened rules of a (cluster, namespace, user, groups) are
kept in a bounded LRU checked against that generation, so a hot ``authorize`` is a dict lookup
and a scan of a few pre-compiled rules.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from ...apimachinery.labels import LabelSelector
from ..user import UserInfo
from . import bootstrap
from .attributes import Attributes, Decision, Result

RBAC_GROUP = bootstrap.RBAC_GROUP
ROOT_CLUSTER = "root"
WILDCARD_CLUSTER = "*"
#: the non-resource path a user must be allowed (in ``root``) to use the ``/clusters/*`` wildcard
WILDCARD_PATH = "/clusters/*"
NO_OPINION = Result(Decision.NO_OPINION)


# -- Go formatting (messages are matched byte for byte) -----------------------------------------

_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
               '"': '\\"', "\\": "\\\\"}


def go_quote(s: str) -> str:
    """Go's ``%q`` of a string (strconv.Quote): printable characters kept, the rest escaped."""
    if s.isprintable() and '"' not in s and "\\" not in s:
        return f'"{s}"'
    out = []
    for ch in s:
        if ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def go_quote_list(items: Iterable[str]) -> str:
    """Go's ``%q`` of a ``[]string``: ``["a" "b"]``."""
    return "[" + " ".join(go_quote(s) for s in items) + "]"


def aggregate_errors(messages: list[str]) -> str:
    """utilerrors.NewAggregate(...).Error(): one message as is, several deduplicated in brackets."""
    if not messages:
        return ""
    if len(messages) == 1:
        return messages[0]
    seen: list[str] = []
    for m in messages:
        if m not in seen:
            seen.append(m)
    return seen[0] if len(seen) == 1 else "[" + ", ".join(seen) + "]"


# -- the source of stored objects ------------------------------------------------------------------


class PolicySource(Protocol):
    """The stored RBAC objects of each logical cluster, as served JSON dicts (read-only)."""

    def generation(self, cluster: str) -> int:
        """Changes whenever any RBAC object in ``cluster`` changes."""
        ...

    def cluster_roles(self, cluster: str) -> Iterable[dict]: ...

    def cluster_role_bindings(self, cluster: str) -> Iterable[dict]: ...

    def roles(self, cluster: str, namespace: str) -> Iterable[dict]: ...

    def role_bindings(self, cluster: str, namespace: str) -> Iterable[dict]: ...

    def get_cluster_role(self, cluster: str, name: str) -> dict | None: ...

    def get_role(self, cluster: str, namespace: str, name: str) -> dict | None: ...


class _ClusterObjects:
    __slots__ = ("cluster_roles", "cluster_role_bindings", "roles", "role_bindings")

    def __init__(self) -> None:
        self.cluster_roles: dict[str, dict] = {}
        self.cluster_role_bindings: dict[str, dict] = {}
        self.roles: dict[tuple[str, str], dict] = {}
        self.role_bindings: dict[tuple[str, str], dict] = {}


class MemoryPolicySource:
    """A :class:`PolicySource` kept in dicts, for tests and in-process use."""

    _KINDS = {"ClusterRole": "cluster_roles", "ClusterRoleBinding": "cluster_role_bindings",
              "Role": "roles", "RoleBinding": "role_bindings"}

    def __init__(self) -> None:
        self._clusters: dict[str, _ClusterObjects] = {}
        self._generations: dict[str, int] = {}
        self._counter = 0

    def _bump(self, cluster: str) -> None:
        # one counter for all clusters: a generation never repeats, even across deletions
        self._counter += 1
        self._generations[cluster] = self._counter

    def put(self, cluster: str, obj: dict) -> None:
        """Store (create or replace) one RBAC object, by its kind, namespace and name."""
        table = getattr(self._clusters.setdefault(cluster, _ClusterObjects()), self._KINDS[obj["kind"]])
        meta = obj["metadata"]
        key = (meta.get("namespace") or "", meta["name"]) if obj["kind"] in ("Role", "RoleBinding") else meta["name"]
        table[key] = obj
        self._bump(cluster)

    def delete(self, cluster: str, kind: str, name: str, namespace: str = "") -> None:
        objs = self._clusters.get(cluster)
        if objs is None:
            return
        table = getattr(objs, self._KINDS[kind])
        table.pop((namespace, name) if kind in ("Role", "RoleBinding") else name, None)
        self._bump(cluster)

    def generation(self, cluster: str) -> int:
        return self._generations.get(cluster, 0)

    def cluster_roles(self, cluster: str) -> Iterable[dict]:
        objs = self._clusters.get(cluster)
        return list(objs.cluster_roles.values()) if objs else []

    def cluster_role_bindings(self, cluster: str) -> Iterable[dict]:
        objs = self._clusters.get(cluster)
        return list(objs.cluster_role_bindings.values()) if objs else []

    def roles(self, cluster: str, namespace: str) -> Iterable[dict]:
        objs = self._clusters.get(cluster)
        return [o for (ns, _), o in objs.roles.items() if ns == namespace] if objs else []

    def role_bindings(self, cluster: str, namespace: str) -> Iterable[dict]:
        objs = self._clusters.get(cluster)
        return [o for (ns, _), o in objs.role_bindings.items() if ns == namespace] if objs else []

    def get_cluster_role(self, cluster: str, name: str) -> dict | None:
        objs = self._clusters.get(cluster)
        return objs.cluster_roles.get(name) if objs else None

    def get_role(self, cluster: str, namespace: str, name: str) -> dict | None:
        objs = self._clusters.get(cluster)
        return objs.roles.get((namespace, name)) if objs else None


# -- rule matching ---------------------------------------------------------------------------------


def _strings(v: object) -> tuple[str, ...]:
    return tuple(x for x in v if isinstance(x, str)) if isinstance(v, list | tuple) else ()


class CompiledRule:
    """One PolicyRule prepared for matching: sets instead of lists, wildcards as flags."""

    __slots__ = ("raw", "all_verbs", "verbs", "all_groups", "groups", "all_resources", "resources",
                 "any_subresource_of", "names", "all_urls", "urls", "url_prefixes")

    def __init__(self, raw: Mapping) -> None:
        self.raw = raw
        verbs = _strings(raw.get("verbs"))
        groups = _strings(raw.get("apiGroups"))
        resources = _strings(raw.get("resources"))
        urls = _strings(raw.get("nonResourceURLs"))
        self.all_verbs = "*" in verbs
        self.verbs = frozenset(verbs)
        self.all_groups = "*" in groups
        self.groups = frozenset(groups)
        self.all_resources = "*" in resources
        self.resources = frozenset(resources)
        #: ``*/<sub>`` entries: the subresources allowed on any resource
        self.any_subresource_of = frozenset(r[2:] for r in resources if r.startswith("*/"))
        self.names = frozenset(_strings(raw.get("resourceNames")))
        self.all_urls = "*" in urls
        self.urls = frozenset(urls)
        # TrimRight(url, "*"): a trailing run of stars is one prefix match
        self.url_prefixes = tuple(u.rstrip("*") for u in urls if u.endswith("*"))

    def allows_resource(self, verb: str, group: str, combined: str, subresource: str, name: str) -> bool:
        """kube's RuleAllows for a resource request (``combined`` = resource[/subresource])."""
        if not (self.all_verbs or verb in self.verbs):
            return False
        if not (self.all_groups or group in self.groups):
            return False
        if not (self.all_resources or combined in self.resources
                or (subresource and subresource in self.any_subresource_of)):
            return False
        return not self.names or name in self.names

    def allows_path(self, verb: str, path: str) -> bool:
        """kube's RuleAllows for a non-resource request."""
        if not (self.all_verbs or verb in self.verbs):
            return False
        if self.all_urls or path in self.urls:
            return True
        return any(path.startswith(p) for p in self.url_prefixes)

    def allows(self, attrs: Attributes) -> bool:
        if attrs.resource_request:
            sub = attrs.subresource
            combined = f"{attrs.resource}/{sub}" if sub else attrs.resource
            return self.allows_resource(attrs.verb, attrs.group, combined, sub, attrs.name)
        return self.allows_path(attrs.verb, attrs.path)


def rule_allows(attrs: Attributes, rule: Mapping) -> bool:
    """Whether one PolicyRule allows the request (kube's ``RuleAllows``)."""
    return CompiledRule(rule).allows(attrs)


# -- aggregation -----------------------------------------------------------------------------------


def _name(obj: Mapping) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _is_aggregated(role: Mapping) -> bool:
    """The aggregation controller rewrites any ClusterRole whose aggregationRule is set."""
    return role.get("aggregationRule") is not None


def _norm_rule(r: Mapping) -> tuple:
    """A rule's identity for Semantic.DeepEqual (nil and empty lists are equal)."""
    return tuple(tuple(r.get(k) or ()) for k in ("verbs", "apiGroups", "resources", "resourceNames",
                                                   "nonResourceURLs"))


def _selectors(role: Mapping) -> list[LabelSelector]:
    out = []
    for sel in ((role.get("aggregationRule") or {}).get("clusterRoleSelectors") or []):
        try:
            out.append(LabelSelector.from_match(sel))
        except (KeyError, TypeError, AttributeError):
            continue  # invalid (validation refuses it): kube's controller would fail the sync; skipped here
    return out


def _labels(role: Mapping) -> Mapping | None:
    return (role.get("metadata") or {}).get("labels")


def _matches(name: str, selectors: list[LabelSelector], roles: Mapping[str, Mapping]) -> list[list[str]]:
    """Per selector, the other roles it matches, by name (the controller sorts its lists so)."""
    names = sorted(roles)
    return [[o for o in names if o != name and sel.matches(_labels(roles[o]))] for sel in selectors]


def _union(matched: list[list[str]], rules_of: Mapping[str, list[dict]]) -> list[dict]:
    """The controller's union: rules in selector, then role, order; duplicates dropped."""
    out: list[dict] = []
    seen: set[tuple] = set()
    for group in matched:
        for other in group:
            for r in rules_of[other]:
                key = _norm_rule(r)
                if key not in seen:
                    seen.add(key)
                    out.append(r)
    return out


def _own_rules(role: Mapping) -> list[dict]:
    return [r for r in role.get("rules") or () if isinstance(r, dict)]


def aggregate_rules(role: dict, all_roles: Iterable[dict]) -> list[dict]:
    """The rules kube's clusterrole-aggregation controller writes into ``role``.

    The union, selector by selector, of the rules of every other ClusterRole in ``all_roles``
    that the selector matches (taken in name order), without duplicates. The rules of the
    matched roles are used as given, like the controller does; see :func:`effective_rules` for
    the fixed point over roles that are themselves aggregated.
    """
    roles = {_name(o): o for o in all_roles}
    matched = _matches(_name(role), _selectors(role), roles)
    return _union(matched, {n: _own_rules(o) for n, o in roles.items()})


def effective_rules(roles: Mapping[str, Mapping]) -> dict[str, list[dict]]:
    """The rules of every aggregated ClusterRole once aggregation has settled.

    Aggregated roles start empty (the controller overwrites hand-written rules) and are
    re-aggregated in name order until nothing changes, as repeated controller syncs would: so
    ``admin`` gets ``view``'s rules through ``edit``. Bounded, in case selectors form a cycle.
    """
    aggregated = sorted(n for n, r in roles.items() if _is_aggregated(r))
    if not aggregated:
        return {}
    matched = {n: _matches(n, _selectors(roles[n]), roles) for n in aggregated}
    rules_of: dict[str, list[dict]] = {n: _own_rules(r) for n, r in roles.items()}
    for n in aggregated:
        rules_of[n] = []
    for _ in range(len(aggregated) + 2):
        changed = False
        for n in aggregated:
            new = _union(matched[n], rules_of)
            if [_norm_rule(r) for r in new] != [_norm_rule(r) for r in rules_of[n]]:
                rules_of[n] = new
                changed = True
        if not changed:
            break
    return {n: rules_of[n] for n in aggregated}


# -- the per-cluster index -------------------------------------------------------------------------


class _RoleTable:
    """The ClusterRoles visible in a cluster (stored over bootstrap) and their compiled rules."""

    __slots__ = ("roles", "_compiled", "_aggregated")

    def __init__(self, roles: dict[str, dict]) -> None:
        self.roles = roles
        self._compiled: dict[str, tuple[CompiledRule, ...]] = {}
        self._aggregated: dict[str, list[dict]] | None = None

    def rules(self, name: str) -> list[dict] | None:
        role = self.roles.get(name)
        if role is None:
            return None
        if _is_aggregated(role):
            if self._aggregated is None:
                self._aggregated = effective_rules(self.roles)
            return list(self._aggregated[name])
        return _own_rules(role)

    def compiled(self, name: str) -> tuple[CompiledRule, ...] | None:
        got = self._compiled.get(name)
        if got is None:
            rules = self.rules(name)
            if rules is None:
                return None
            got = self._compiled[name] = tuple(CompiledRule(r) for r in rules if isinstance(r, Mapping))
        return got


_bootstrap_table: tuple[int, _RoleTable] | None = None


def _shared_bootstrap_table() -> _RoleTable:
    """The role table of a cluster without stored ClusterRoles: one for all of them."""
    global _bootstrap_table
    gen = bootstrap.generation()
    if _bootstrap_table is None or _bootstrap_table[0] != gen:
        _bootstrap_table = (gen, _RoleTable(bootstrap.CLUSTER_ROLES))
    return _bootstrap_table[1]


class _Bindings:
    """Bindings in name order, indexed by the user names and groups their subjects match."""

    __slots__ = ("items", "by_user", "by_group")

    def __init__(self, bindings: Iterable[dict], namespace: str) -> None:
        self.items: list[dict] = sorted(bindings, key=_name)
        self.by_user: dict[str, list[tuple[int, int]]] = {}
        self.by_group: dict[str, list[tuple[int, int]]] = {}
        for pos, b in enumerate(self.items):
            for si, s in enumerate(b.get("subjects") or ()):
                if not isinstance(s, Mapping):
                    continue
                kind, name = s.get("kind"), s.get("name")
                if not isinstance(name, str):
                    continue
                if kind == "User":
                    self.by_user.setdefault(name, []).append((pos, si))
                elif kind == "Group":
                    self.by_group.setdefault(name, []).append((pos, si))
                elif kind == "ServiceAccount":
                    # RoleBindings default the namespace to their own (kube's appliesToUser)
                    ns = s.get("namespace") or namespace
                    if ns:
                        self.by_user.setdefault(f"system:serviceaccount:{ns}:{name}", []).append((pos, si))

    def matching(self, user: UserInfo) -> list[tuple[int, int]]:
        """(binding position, first matching subject) of the bindings that apply, in order."""
        first: dict[int, int] = {}
        hits = list(self.by_user.get(user.name, ()))
        for g in user.groups:
            hits.extend(self.by_group.get(g, ()))
        for pos, si in hits:
            if pos not in first or si < first[pos]:
                first[pos] = si
        return sorted(first.items())


class _ClusterPolicy:
    __slots__ = ("generation", "table", "crbs", "namespaces")

    def __init__(self, generation: tuple[int, int], table: _RoleTable, crbs: _Bindings) -> None:
        self.generation = generation
        self.table = table
        self.crbs = crbs
        self.namespaces: dict[str, tuple[_Bindings, dict[str, tuple[CompiledRule, ...] | None]]] = {}


def _describe_subject(s: Mapping, binding_namespace: str) -> str:
    kind, name = str(s.get("kind") or ""), str(s.get("name") or "")
    if kind == "ServiceAccount":
        return f"{kind} {go_quote(name + '/' + (s.get('namespace') or binding_namespace))}"
    return f"{kind} {go_quote(name)}"


def _describe(binding: Mapping, subject: Mapping, namespace: str) -> str:
    """kube's clusterRoleBindingDescriber (``namespace`` empty) / roleBindingDescriber."""
    ref = binding.get("roleRef") or {}
    role = f"{ref.get('kind') or ''} {go_quote(str(ref.get('name') or ''))}"
    if namespace:
        return (f"RoleBinding {go_quote(_name(binding) + '/' + namespace)} of {role} to "
                f"{_describe_subject(subject, namespace)}")
    return f"ClusterRoleBinding {go_quote(_name(binding))} of {role} to {_describe_subject(subject, '')}"


@dataclass(frozen=True)
class _Missing:
    """A role reference that did not resolve; printed as a lister (authorizer) or the registry would."""

    kind: str
    name: str

    def lister_message(self) -> str:
        if self.kind in ("Role", "ClusterRole"):
            return f'{self.kind.lower()}.{RBAC_GROUP} {go_quote(self.name)} not found'
        return f"unsupported role reference kind: {go_quote(self.kind)}"

    def registry_message(self) -> str:
        if self.kind in ("Role", "ClusterRole"):
            return f'{self.kind.lower()}s.{RBAC_GROUP} {go_quote(self.name)} not found'
        return f"unsupported role reference kind: {go_quote(self.kind)}"


@dataclass
class _Flat:
    """Everything one user may do in one namespace of one cluster, in evaluation order."""

    generation: tuple[int, int]
    entries: list[tuple[Result, tuple[CompiledRule, ...]]] = field(default_factory=list)
    missing: list[_Missing] = field(default_factory=list)
    no_opinion: Result = NO_OPINION


@dataclass(frozen=True)
class RulesInfo:
    """What SelfSubjectRulesReview reports (kube's RBACAuthorizer.RulesFor)."""

    resource_rules: list[dict]
    non_resource_rules: list[dict]
    incomplete: bool = False
    evaluation_error: str = ""


class RBACAuthorizer:
    """kube's RBAC authorizer over the logical clusters of a :class:`PolicySource`."""

    def __init__(self, source: PolicySource, *, max_clusters: int = 4096, max_users: int = 16384) -> None:
        self.source = source
        self.max_clusters = max_clusters
        self.max_users = max_users
        self._clusters: OrderedDict[str, _ClusterPolicy] = OrderedDict()
        self._flat: OrderedDict[tuple[str, str, str, tuple[str, ...]], _Flat] = OrderedDict()

    # -- indexes ----------------------------------------------------------------------------------

    def _generation(self, cluster: str) -> tuple[int, int]:
        return (self.source.generation(cluster), bootstrap.generation())

    def _cluster(self, cluster: str, gen: tuple[int, int]) -> _ClusterPolicy:
        pol = self._clusters.get(cluster)
        if pol is not None and pol.generation == gen:
            self._clusters.move_to_end(cluster)
            return pol
        stored = list(self.source.cluster_roles(cluster))
        if stored:
            roles = dict(bootstrap.CLUSTER_ROLES)
            roles.update((_name(r), r) for r in stored)
            table = _RoleTable(roles)
        else:
            table = _shared_bootstrap_table()
        crbs = dict(bootstrap.CLUSTER_ROLE_BINDINGS)
        crbs.update((_name(b), b) for b in self.source.cluster_role_bindings(cluster))
        pol = _ClusterPolicy(gen, table, _Bindings(crbs.values(), ""))
        self._clusters[cluster] = pol
        self._clusters.move_to_end(cluster)
        while len(self._clusters) > self.max_clusters:
            self._clusters.popitem(last=False)
        return pol

    def _namespace(self, cluster: str, pol: _ClusterPolicy, namespace: str
                   ) -> tuple[_Bindings, dict[str, tuple[CompiledRule, ...] | None]]:
        got = pol.namespaces.get(namespace)
        if got is None:
            got = pol.namespaces[namespace] = (_Bindings(self.source.role_bindings(cluster, namespace), namespace), {})
        return got

    def _role_ref(self, cluster: str, pol: _ClusterPolicy, namespace: str, ref: Mapping
                  ) -> tuple[CompiledRule, ...] | _Missing:
        kind, name = str(ref.get("kind") or ""), str(ref.get("name") or "")
        if kind == "ClusterRole":
            got = pol.table.compiled(name)
        elif kind == "Role" and namespace:
            roles = self._namespace(cluster, pol, namespace)[1]
            if name in roles:
                got = roles[name]
            else:
                role = self.source.get_role(cluster, namespace, name)
                got = roles[name] = (None if role is None else
                                     tuple(CompiledRule(r) for r in role.get("rules") or () if isinstance(r, Mapping)))
        else:
            return _Missing(kind, name)
        return _Missing(kind, name) if got is None else got

    def _flatten(self, cluster: str, namespace: str, user: UserInfo, gen: tuple[int, int]) -> _Flat:
        pol = self._cluster(cluster, gen)
        flat = _Flat(gen)
        sources: list[tuple[_Bindings, str]] = [(pol.crbs, "")]
        if namespace:
            sources.append((self._namespace(cluster, pol, namespace)[0], namespace))
        for bindings, ns in sources:
            for pos, si in bindings.matching(user):
                binding = bindings.items[pos]
                got = self._role_ref(cluster, pol, ns, binding.get("roleRef") or {})
                if isinstance(got, _Missing):
                    flat.missing.append(got)
                    continue
                subject = binding["subjects"][si]
                flat.entries.append((Result(Decision.ALLOW, "RBAC: allowed by " + _describe(binding, subject, ns)), got))
        if flat.missing:
            flat.no_opinion = Result(Decision.NO_OPINION,
                                     "RBAC: " + aggregate_errors([m.lister_message() for m in flat.missing]))
        return flat

    def _rules(self, cluster: str, namespace: str, user: UserInfo) -> _Flat:
        gen = self._generation(cluster)
        key = (cluster, namespace, user.name, user.groups)
        flat = self._flat.get(key)
        if flat is not None and flat.generation == gen:
            self._flat.move_to_end(key)
            return flat
        flat = self._flatten(cluster, namespace, user, gen)
        self._flat[key] = flat
        if len(self._flat) > self.max_users:
            self._flat.popitem(last=False)
        return flat

    # -- the authorizer ---------------------------------------------------------------------------

    def authorize(self, attrs: Attributes) -> Result:
        """ALLOW with kube's reason, or NO_OPINION (with resolution errors as the reason).

        The ``/clusters/*`` wildcard (``attrs.cluster == "*"``, list/watch across every logical
        cluster) is evaluated in ``root`` and needs two grants there: the resource rule for the
        verb, group and resource, and a non-resource rule allowing the same verb on path
        ``/clusters/*``. E.g. a ClusterRole bound in root with
        ``{nonResourceURLs: ["/clusters/*"], verbs: ["list", "watch"]}`` and
        ``{apiGroups: [""], resources: ["configmaps"], verbs: ["list", "watch"]}`` opens the
        wildcard for configmaps only.
        """
        if attrs.cluster == WILDCARD_CLUSTER:
            return self._authorize_wildcard(attrs)
        flat = self._rules(attrs.cluster, attrs.namespace, attrs.user)
        verb = attrs.verb
        if attrs.resource_request:
            sub = attrs.subresource
            combined = f"{attrs.resource}/{sub}" if sub else attrs.resource
            group, name = attrs.group, attrs.name
            for allowed, rules in flat.entries:
                for r in rules:
                    if r.allows_resource(verb, group, combined, sub, name):
                        return allowed
        else:
            path = attrs.path
            for allowed, rules in flat.entries:
                for r in rules:
                    if r.allows_path(verb, path):
                        return allowed
        return flat.no_opinion

    def _authorize_wildcard(self, attrs: Attributes) -> Result:
        in_root = Attributes(attrs.user, attrs.verb, ROOT_CLUSTER, attrs.resource_request, attrs.group,
                             attrs.version, attrs.resource, attrs.subresource, attrs.namespace, attrs.name, attrs.path)
        first = self.authorize(in_root)
        if not first.allowed or not attrs.resource_request:
            return first
        path = Attributes(attrs.user, attrs.verb, ROOT_CLUSTER, False, path=WILDCARD_PATH)
        second = self.authorize(path)
        if not second.allowed:
            return second
        return Result(Decision.ALLOW, f"{first.reason}; {second.reason}")

    # -- rules for reviews and escalation checks --------------------------------------------------

    def policy_rules(self, user: UserInfo, cluster: str, namespace: str) -> tuple[list[dict], list[str]]:
        """kube's RuleResolver.RulesFor: the user's PolicyRules, and resolution errors (registry wording)."""
        if cluster == WILDCARD_CLUSTER:
            cluster = ROOT_CLUSTER
        flat = self._rules(cluster, namespace, user)
        rules = [dict(r.raw) for _, compiled in flat.entries for r in compiled]
        return rules, [m.registry_message() for m in flat.missing]

    def rules_for(self, user: UserInfo, cluster: str, namespace: str) -> RulesInfo:
        """SelfSubjectRulesReview's answer: ClusterRoleBindings, then the namespace's RoleBindings."""
        if cluster == WILDCARD_CLUSTER:
            cluster = ROOT_CLUSTER
        flat = self._rules(cluster, namespace, user)
        resource: list[dict] = []
        non_resource: list[dict] = []
        for _, compiled in flat.entries:
            for c in compiled:
                r = c.raw
                if r.get("resources"):
                    out: dict = {"verbs": list(r.get("verbs") or [])}
                    for k in ("apiGroups", "resources", "resourceNames"):
                        if r.get(k):
                            out[k] = list(r[k])
                    resource.append(out)
                if r.get("nonResourceURLs"):
                    non_resource.append({"verbs": list(r.get("verbs") or []),
                                         "nonResourceURLs": list(r["nonResourceURLs"])})
        error = aggregate_errors([m.lister_message() for m in flat.missing])
        return RulesInfo(resource, non_resource, False, error)

    def role_rules(self, cluster: str, namespace: str, role_ref: Mapping) -> list[dict] | None:
        """The rules a roleRef grants (aggregation applied), or None if the role does not exist."""
        kind, name = role_ref.get("kind"), str(role_ref.get("name") or "")
        if kind == "ClusterRole":
            return self._cluster(cluster, self._generation(cluster)).table.rules(name)
        if kind == "Role" and namespace:
            role = self.source.get_role(cluster, namespace, name)
            return None if role is None else list(role.get("rules") or [])
        return None

    def cluster_role(self, cluster: str, name: str) -> dict | None:
        """The ClusterRole ``name`` as it should be served: stored or bootstrap, aggregated rules filled in."""
        table = self._cluster(cluster, self._generation(cluster)).table
        role = table.roles.get(name)
        if role is None or not _is_aggregated(role):
            return role
        return {**role, "rules": table.rules(name)}
