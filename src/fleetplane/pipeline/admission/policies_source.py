"""The ValidatingAdmissionPolicy plugin's view of the hub: the watch cache (policies, bindings,
params, namespaces, as kube's plugin reads informers) and the catalog (which kinds are served),
and :func:`install`, which joins the plugin to a hub's admission chain."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...apis.admissionregistration.policies import PolicyStrategy
from ...registry.definitions import definitions
from ...storage import keys
from ..authorization.attributes import Attributes, Result
from .policies import GROUP, ServedType, ValidatingAdmissionPolicyPlugin
from .policies_typecheck import TypeChecker

if TYPE_CHECKING:
    from ...registry.hub import Registry
    from ...registry.types import ResourceType
    from ..authorization.authorizer import Authorizer

POLICIES = keys.resource_prefix(GROUP, "validatingadmissionpolicies")
BINDINGS = keys.resource_prefix(GROUP, "validatingadmissionpolicybindings")
NAMESPACES = keys.resource_prefix("", "namespaces")


def _served(rt: ResourceType) -> ServedType:
    return ServedType(rt.group, rt.version, rt.kind, rt.plural, rt.namespaced)


def schema_of(rt: ResourceType) -> dict[str, Any] | None:
    """A served type's OpenAPI schema: a CRD version's, or a built-in's definition."""
    if rt.openapi_schema is not None:
        return rt.openapi_schema
    return definitions().get(rt.openapi_definition) if rt.openapi_definition else None


class RegistrySource:
    """``policies.PolicySource`` over a hub's registry: dict lookups, no I/O."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.cache = registry.cache

    def _objects(self, prefix: str, cluster: str) -> list[tuple[int, dict[str, Any]]]:
        return [(o.revision, o.obj) for o in self.cache.resource(prefix).objects(cluster, None)]

    def policies(self, cluster: str) -> list[tuple[int, dict[str, Any]]]:
        return self._objects(POLICIES, cluster)

    def bindings(self, cluster: str) -> list[tuple[int, dict[str, Any]]]:
        return self._objects(BINDINGS, cluster)

    def namespace(self, cluster: str, name: str) -> dict[str, Any] | None:
        o = self.cache.resource(NAMESPACES).get(keys.object_key("", "namespaces", cluster, "", name))
        return o.obj if o is not None else None

    def _kind(self, cluster: str, api_version: str, kind: str) -> ResourceType | None:
        group, _, version = api_version.rpartition("/")
        catalog = self.registry.catalog
        for rt in catalog.builtins.values():
            if rt.group == group and rt.version == version and rt.kind == kind:
                return rt
        for rt in catalog.types(cluster)[len(catalog.builtins):]:
            if rt.group == group and rt.version == version and rt.kind == kind and rt.served:
                return rt
        return None

    def served_kind(self, cluster: str, api_version: str, kind: str) -> ServedType | None:
        rt = self._kind(cluster, api_version, kind)
        return _served(rt) if rt is not None else None

    def versions_of(self, cluster: str, group: str, plural: str) -> list[ServedType]:
        return [_served(rt) for rt in self.registry.catalog.types(cluster)
                if rt.group == group and rt.plural == plural and rt.served]

    def get(self, cluster: str, served: ServedType, namespace: str, name: str) -> dict[str, Any] | None:
        prefix = keys.resource_prefix(served.group, served.plural)
        o = self.cache.resource(prefix).get(keys.object_key(served.group, served.plural, cluster, namespace, name))
        return o.obj if o is not None else None

    def list(self, cluster: str, served: ServedType, namespace: str) -> list[dict[str, Any]]:
        prefix = keys.resource_prefix(served.group, served.plural)
        return [o.obj for o in self.cache.resource(prefix).objects(cluster, namespace or None)]

    # -- type checking ------------------------------------------------------------------------

    def resource_schema(self, cluster: str, group: str, version: str, resource: str) -> tuple[str, dict[str, Any]] | None:
        rt = self.registry.catalog.lookup(cluster, group, version, resource)
        if rt is None:
            return None
        schema = schema_of(rt)
        return (rt.kind, schema) if schema is not None else None

    def kind_schema(self, cluster: str, api_version: str, kind: str) -> dict[str, Any] | None:
        rt = self._kind(cluster, api_version, kind)
        return schema_of(rt) if rt is not None else None


class MemorySource:
    """``policies.PolicySource`` over plain objects (one logical cluster): for tests and the
    benchmark, which exercise the plugin without a hub. ``objects`` are any served objects
    (params, namespaces), ``types`` the served kinds."""

    def __init__(self, policies: list[dict[str, Any]], bindings: list[dict[str, Any]],
                 objects: Sequence[dict[str, Any]] = (), types: Sequence[ServedType] = ()) -> None:
        self._policies = [(1, p) for p in policies]
        self._bindings = [(1, b) for b in bindings]
        self.objects = list(objects)
        self.types = list(types)

    def policies(self, cluster: str) -> list[tuple[int, dict[str, Any]]]:
        return self._policies

    def bindings(self, cluster: str) -> list[tuple[int, dict[str, Any]]]:
        return self._bindings

    def _of(self, served: ServedType) -> list[dict[str, Any]]:
        api_version = f"{served.group}/{served.version}" if served.group else served.version
        return [o for o in self.objects if o.get("kind") == served.kind and o.get("apiVersion") == api_version]

    def namespace(self, cluster: str, name: str) -> dict[str, Any] | None:
        return next((o for o in self.objects if o.get("kind") == "Namespace" and o["metadata"]["name"] == name), None)

    def served_kind(self, cluster: str, api_version: str, kind: str) -> ServedType | None:
        group, _, version = api_version.rpartition("/")
        return next((t for t in self.types if (t.group, t.version, t.kind) == (group, version, kind)), None)

    def versions_of(self, cluster: str, group: str, plural: str) -> list[ServedType]:
        return [t for t in self.types if t.group == group and t.plural == plural]

    def get(self, cluster: str, served: ServedType, namespace: str, name: str) -> dict[str, Any] | None:
        return next((o for o in self._of(served) if o["metadata"]["name"] == name
                     and o["metadata"].get("namespace", "") == namespace), None)

    def list(self, cluster: str, served: ServedType, namespace: str) -> list[dict[str, Any]]:
        return [o for o in self._of(served) if not namespace or o["metadata"].get("namespace", "") == namespace]


def install(registry: Registry, authorizer: Authorizer) -> ValidatingAdmissionPolicyPlugin:
    """Join the plugin to ``registry``'s admission chain (after the hub's own plugins, as kube
    runs ValidatingAdmissionPolicy last but for the webhooks and quota) and give the policy
    strategy its type checker."""
    source = RegistrySource(registry)

    def authorize(attrs: Attributes) -> Result:
        return authorizer.authorize(attrs)

    plugin = ValidatingAdmissionPolicyPlugin(source, authorize)
    registry.store.admission.add(plugin)
    rt = registry.catalog.lookup("*", GROUP, "v1", "validatingadmissionpolicies")
    if rt is not None and isinstance(rt.strategy, PolicyStrategy):
        rt.strategy.type_checker = TypeChecker(source.resource_schema, source.kind_schema).check
    return plugin
