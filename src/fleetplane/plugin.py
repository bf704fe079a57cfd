"""What a part of fleetplane adds to a hub, and the protocol through which it adds it.

A :class:`Plugin` (``inventory/``, ``fleet/``, ``sim/``) puts its resource types, CRDs served in
every logical cluster, admission checks, bootstrap RBAC and background controllers into one
:class:`Contributions`; :func:`fleetplane.hub.build_hub` hands those to the server. Plugins name
what they contribute; they never reach into the server, the registry or the store, so this
module imports none of them at run time (``ResourceType`` is named for the type checker only).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .pipeline.admission.plugins import KindCheck

if TYPE_CHECKING:
    from .registry.types import ResourceType

__all__ = ["Contributions", "Controller", "ControllerContext", "KindCheck", "Plugin", "contributions_of"]


@dataclass(frozen=True)
class ControllerContext:
    """What a background controller gets: its kubeconfig for this hub (a client certificate of
    its own identity, or the admin's), whether the hub still serves (False once it stops) and,
    for a sharded controller, which part of the work is this process's: ``shard`` of ``shards``
    (:mod:`fleetplane.controllermanager`)."""

    kubeconfig: Path
    alive: Callable[[], bool]
    shard: int = 0
    shards: int = 1


@dataclass(frozen=True)
class Controller:
    """A background controller, started once the hub serves and cancelled before it stops, in the
    controller-manager process (:mod:`fleetplane.controllermanager`) or the server's own. It talks
    to the hub only through its HTTP API, as ``identity`` (None: the admin); ``name`` is unique
    among a hub's controllers (the controller-manager finds each one's kubeconfig by it). A
    ``sharded`` controller splits its objects over the controller-manager's shards (each
    process reconciles the part its context names); the others run in shard 0 only."""

    name: str
    run: Callable[[ControllerContext], Coroutine[Any, Any, None]]
    identity: str | None = None
    sharded: bool = False


@dataclass
class Contributions:
    """Everything the plugins of one hub add, in the order they add it."""

    #: more built-in resource types, served in every logical cluster
    types: list[ResourceType] = field(default_factory=list)
    #: CRD documents served in every logical cluster without being stored
    crds: list[dict] = field(default_factory=list)
    #: admission checks by (group, kind), after the hub's own plugins
    admission: dict[tuple[str, str], KindCheck] = field(default_factory=dict)
    #: bootstrap ClusterRoles and ClusterRoleBindings, shared by every logical cluster
    cluster_roles: list[dict] = field(default_factory=list)
    cluster_role_bindings: list[dict] = field(default_factory=list)
    controllers: list[Controller] = field(default_factory=list)
    #: in-process converters between the versions of a contributed CRD, by (group, kind):
    #: ``(obj, api_version) -> obj`` (see registry/conversion.py)
    converters: dict[tuple[str, str], Callable[[dict, str], dict]] = field(default_factory=dict)


class Plugin(Protocol):
    """A part of fleetplane that adds to the hub (kube-apiserver's admission plugin registry,
    kcp's ``plugins.go``: registration is data, collected once)."""

    @property
    def name(self) -> str: ...

    def contribute(self, hub: Contributions) -> None:
        """Add this plugin's types, CRDs, checks, policy and controllers to ``hub``."""
        ...


def contributions_of(plugins: Iterable[Plugin]) -> Contributions:
    """What ``plugins`` add, in their order: the hub builds its server from it, the
    controller-manager takes its controllers from it (the same plugins, the same options)."""
    out = Contributions()
    for plugin in plugins:
        plugin.contribute(out)
    return out
