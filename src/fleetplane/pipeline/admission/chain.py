"""The admission chain: kube's admission.Interface, as an ordered list of plugins.

The generic store builds one :class:`Request` per write it is about to make (create, update,
patch, apply, status and other subresources, delete, and each item of a delete-collection;
dry-run included) and calls :meth:`Chain.admit` (mutating halves, in order) and then
:meth:`Chain.validate` (validating halves, in order). A plugin refuses by raising a
``StatusError``; a validating plugin may also return field errors, reported as one 422.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ...apimachinery import errors as e
from ...apimachinery.errors import FieldError
from ..user import UserInfo

if TYPE_CHECKING:
    from ...registry.types import ResourceType

CREATE, UPDATE, DELETE, CONNECT = "CREATE", "UPDATE", "DELETE", "CONNECT"


@dataclass
class Request:
    """kube's admission.Attributes: what is being written, where, and by whom."""

    operation: str
    rt: ResourceType
    cluster: str
    namespace: str
    name: str
    obj: dict | None  # the object to be stored (None for DELETE)
    old: dict | None = None  # the stored object (None for CREATE)
    subresource: str = ""
    user: UserInfo | None = None  # None: the hub's own in-process controllers
    dry_run: bool = False
    options: dict[str, Any] = field(default_factory=dict)  # DeleteOptions for DELETE
    #: namespace labels, filled lazily by the chain for plugins that ask (selectors)
    namespace_labels: dict[str, str] | None = None
    #: the response's Warning headers and the request's audit annotations (shared with the
    #: request's context, so a plugin's additions reach the client and the audit log)
    warnings: list[str] = field(default_factory=list)
    audit_annotations: dict[str, str] = field(default_factory=dict)

    @property
    def group(self) -> str:
        return self.rt.group

    @property
    def kind(self) -> str:
        return self.rt.kind

    @property
    def resource(self) -> str:
        return self.rt.plural


class Plugin(Protocol):
    """One admission plugin. Either half may be a no-op; ``operations`` says which it sees."""

    name: str
    operations: frozenset[str]

    async def admit(self, req: Request) -> None:
        """Mutating half: may change ``req.obj``."""

    async def validate(self, req: Request) -> list[FieldError]:
        """Validating half: raise a StatusError, or return field errors (422)."""


class BasePlugin:
    """A plugin that does nothing; subclasses override the halves they need."""

    name = "Base"
    operations: frozenset[str] = frozenset({CREATE, UPDATE, DELETE})

    async def admit(self, req: Request) -> None:
        return None

    async def validate(self, req: Request) -> list[FieldError]:
        return []


class Chain:
    """The plugins in kube's fixed order (see ``default_chain``); the order is the list's."""

    def __init__(self, plugins: Iterable[Plugin] = ()) -> None:
        self.plugins: list[Plugin] = list(plugins)

    def add(self, plugin: Plugin, before: str | None = None) -> None:
        """Append ``plugin``, or insert it before the plugin named ``before``."""
        if before is not None:
            for i, p in enumerate(self.plugins):
                if p.name == before:
                    self.plugins.insert(i, plugin)
                    return
        self.plugins.append(plugin)

    def names(self) -> Sequence[str]:
        return [p.name for p in self.plugins]

    def disable(self, names: Iterable[str]) -> None:
        """kube's --disable-admission-plugins: drop the named plugins; a name no plugin has is an error."""
        names = set(names)
        if unknown := names - set(self.names()):
            raise ValueError(f"--disable-admission-plugins: unknown admission plugins {sorted(unknown)} "
                             f"(this server runs {', '.join(self.names())})")
        self.plugins = [p for p in self.plugins if p.name not in names]

    async def admit(self, req: Request) -> None:
        for p in self.plugins:
            if req.operation in p.operations:
                await p.admit(req)

    async def validate(self, req: Request) -> None:
        for p in self.plugins:
            if req.operation in p.operations:
                errs = await p.validate(req)
                if errs:
                    name = req.name or ((req.obj or {}).get("metadata") or {}).get("name") or ""
                    raise e.invalid_object(req.group, req.kind, name, errs)
