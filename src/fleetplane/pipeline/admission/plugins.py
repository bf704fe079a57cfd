"""The hub's own admission plugins, in the order ``default_chain`` lists them.

- NamespaceLifecycle: no new content in a missing or terminating namespace; ``default``,
  ``kube-system`` and ``kube-public`` cannot be deleted (kube's plugin of that name).
- LogicalClusterProtection: the root logical cluster cannot be deleted.
- ServiceAccount, Priority, DefaultTolerationSeconds: Pod defaulting (``pods.py``).
- KindAdmission: a check that a package contributes for one kind (the ClusterProfile rules
  from ``inventory``): ``(obj, old, namespace labels) -> field errors``, run on create and
  update of that kind, subresources included.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ...apimachinery.errors import FieldError, StatusError
from .chain import CREATE, DELETE, UPDATE, BasePlugin, Chain, Request
from .pods import add_pod_plugins

IMMORTAL_NAMESPACES = ("default", "kube-system", "kube-public")
ROOT = "root"

NamespaceState = Callable[[str, str], "str | None"]  # (cluster, namespace) -> Active | Terminating | None
CatchUp = Callable[[], Awaitable[object]]
KindCheck = Callable[[dict, "dict | None", dict], list[FieldError]]


class NamespaceLifecycle(BasePlugin):
    name = "NamespaceLifecycle"
    operations = frozenset({CREATE, DELETE})

    def __init__(self, state: NamespaceState, catch_up: CatchUp) -> None:
        self.state = state
        self.catch_up = catch_up  # wait until the cache has every acknowledged write

    async def admit(self, req: Request) -> None:
        """kube runs this plugin in the mutating phase, so it answers before validation does."""
        if req.operation == DELETE:
            if req.kind == "Namespace" and not req.group and req.name in IMMORTAL_NAMESPACES:
                raise StatusError(403, "Forbidden", f'namespaces "{req.name}" is forbidden: this namespace may not be deleted',
                                  {"name": req.name, "kind": "namespaces"})
            return
        if not req.rt.namespaced or req.subresource:
            return
        state = self.state(req.cluster, req.namespace)
        if state is None:
            await self.catch_up()  # created a moment ago, maybe through another replica
            state = self.state(req.cluster, req.namespace)
        if state is None:
            raise StatusError(404, "NotFound", f'namespaces "{req.namespace}" not found', {"name": req.namespace, "kind": "namespaces"})
        if state == "Terminating":
            raise StatusError(
                403, "Forbidden",
                f"{req.resource} is forbidden: unable to create new content in namespace {req.namespace} because it is being terminated",
                {"group": req.group, "kind": req.resource,
                 "causes": [{"reason": "NamespaceTerminating", "message": f"namespace {req.namespace} is being terminated",
                             "field": "metadata.namespace"}]})


class LogicalClusterProtection(BasePlugin):
    name = "LogicalClusterProtection"
    operations = frozenset({DELETE})

    async def admit(self, req: Request) -> None:
        if req.kind == "LogicalCluster" and req.cluster == ROOT and req.name == ROOT:
            raise StatusError(403, "Forbidden",
                              f'{req.resource}.{req.group} "root" is forbidden: the root logical cluster may not be deleted',
                              {"name": ROOT, "group": req.group, "kind": req.resource})


class KindAdmission(BasePlugin):
    operations = frozenset({CREATE, UPDATE})

    def __init__(self, name: str, group: str, kind: str, check: KindCheck,
                 labels: Callable[[str, str], dict[str, str]]) -> None:
        self.name = name
        self.group, self.kind = group, kind
        self.check = check
        self.labels = labels

    async def validate(self, req: Request) -> list[FieldError]:
        if req.group != self.group or req.kind != self.kind or req.obj is None:
            return []
        ns_labels = self.labels(req.cluster, req.namespace) if req.rt.namespaced else {}
        return self.check(req.obj, req.old, ns_labels)


def default_chain(state: NamespaceState, catch_up: CatchUp) -> Chain:
    """The plugins every hub runs, in kube's order (contributed plugins are added after)."""
    chain = Chain([NamespaceLifecycle(state, catch_up), LogicalClusterProtection()])
    add_pod_plugins(chain)
    return chain
