"""Which FlowSchema a request matches, and which flow it belongs to (kube's
``apiserver/pkg/util/flowcontrol/matching.go`` and the classifier of ``apf_controller.go``).

A request is described by the authorizer's :class:`Attributes` (the acting user after
impersonation, verb, group, resource/subresource, namespace, non-resource path, logical
cluster). Schemas are tried by ``matchingPrecedence``, then name; the first whose rules match
wins. The flow a request is queued as is the schema's name plus its distinguisher; fleetplane
always puts the request's logical cluster in front of the distinguisher, so two tenants never
share a flow, even when the schema distinguishes nothing (or by a namespace both have).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..authorization.attributes import Attributes
from ..user import split_service_account


@dataclass(frozen=True)
class Schema:
    """One FlowSchema as the classifier uses it."""

    name: str
    uid: str
    precedence: int
    level: str
    distinguisher: str  # "", "ByUser", "ByNamespace"
    rules: tuple[Mapping[str, Any], ...]

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> Schema:
        spec = obj.get("spec") or {}
        method = spec.get("distinguisherMethod")
        return cls(obj["metadata"]["name"], obj["metadata"].get("uid", ""), int(spec.get("matchingPrecedence") or 1000),
                   str((spec.get("priorityLevelConfiguration") or {}).get("name") or ""),
                   str(method.get("type") or "") if isinstance(method, Mapping) else "",
                   tuple(r for r in spec.get("rules") or () if isinstance(r, Mapping)))

    def matches(self, attrs: Attributes) -> bool:
        return any(_rule_matches(rule, attrs) for rule in self.rules)

    def flow(self, attrs: Attributes) -> str:
        """The flow distinguisher: the logical cluster, then the user or namespace."""
        if self.distinguisher == "ByUser":
            return f"{attrs.cluster}/{attrs.user.name}"
        if self.distinguisher == "ByNamespace":
            return f"{attrs.cluster}/{attrs.namespace if attrs.resource_request else ''}"
        return attrs.cluster


def ordered(schemas: Iterable[Schema]) -> list[Schema]:
    """kube's FlowSchemaSequence: lowest matchingPrecedence first, ties by name."""
    return sorted(schemas, key=lambda s: (s.precedence, s.name))


def classify(schemas: list[Schema], attrs: Attributes) -> Schema | None:
    for schema in schemas:
        if schema.matches(attrs):
            return schema
    return None


def _rule_matches(rule: Mapping[str, Any], attrs: Attributes) -> bool:
    if not any(_subject_matches(s, attrs) for s in rule.get("subjects") or ()):
        return False
    if attrs.resource_request:
        return any(_resource_rule_matches(r, attrs) for r in rule.get("resourceRules") or ())
    return any(_non_resource_rule_matches(r, attrs) for r in rule.get("nonResourceRules") or ())


def _subject_matches(subject: Any, attrs: Attributes) -> bool:
    if not isinstance(subject, Mapping):
        return False
    kind = subject.get("kind")
    user = attrs.user
    if kind == "User":
        name = (subject.get("user") or {}).get("name")
        return name == "*" or name == user.name
    if kind == "Group":
        name = (subject.get("group") or {}).get("name")
        return name == "*" or name in user.groups
    if kind == "ServiceAccount":
        sa = subject.get("serviceAccount") or {}
        parsed = split_service_account(user.name)
        if parsed is None:
            return False
        namespace, name = parsed
        return sa.get("namespace") == namespace and (sa.get("name") == "*" or sa.get("name") == name)
    return False


def _has(values: Any, value: str) -> bool:
    return isinstance(values, list) and ("*" in values or value in values)


def _resource_rule_matches(rule: Any, attrs: Attributes) -> bool:
    if not isinstance(rule, Mapping):
        return False
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    if not (_has(rule.get("verbs"), attrs.verb) and _has(rule.get("apiGroups"), attrs.group)
            and _has(rule.get("resources"), resource)):
        return False
    if not attrs.namespace:
        return bool(rule.get("clusterScope"))
    return _has(rule.get("namespaces"), attrs.namespace)


def _non_resource_rule_matches(rule: Any, attrs: Attributes) -> bool:
    if not isinstance(rule, Mapping) or not _has(rule.get("verbs"), attrs.verb):
        return False
    for pattern in rule.get("nonResourceURLs") or ():
        if pattern == "*" or pattern == attrs.path:
            return True
        if isinstance(pattern, str) and pattern.endswith("*") and attrs.path.startswith(pattern.rstrip("*")):
            return True
    return False
