"""What the DaemonSet and StatefulSet controllers share: routing a pod's changes to the owner
that holds its controller reference (client-go's ``resolveControllerRef``), and pod writes that
record kube's ``SuccessfulCreate`` / ``SuccessfulDelete`` / ``FailedCreate`` Events."""

from __future__ import annotations

from collections.abc import Callable

from ..kube.client import ApiError, Client, api_path
from ..kube.events import EventRecorder
from ..kube.informer import EventHandler, Informer, object_key
from .util import controller_ref, meta


class OwnedPods(EventHandler):
    """Enqueue the owner (of ``kind``, found in ``owners``) of every pod that changes; with
    ``created``/``deleted`` told of the pods seen, for expectations."""

    def __init__(self, kind: str, owners: Informer, enqueue: Callable[[str], None],
                 created: Callable[[str], None] = lambda key: None,
                 deleted: Callable[[str, str], None] = lambda key, pod: None) -> None:
        self.kind = kind
        self.owners = owners
        self.enqueue = enqueue
        self.created = created
        self.deleted = deleted

    def owner_key(self, pod: dict) -> str | None:
        ref = controller_ref(pod)
        if ref is None or ref.get("kind") != self.kind or not (ref.get("apiVersion") or "").startswith("apps/"):
            return None
        key = f"{meta(pod).get('namespace') or ''}/{ref.get('name')}"
        owner = self.owners.get(key)
        if owner is None or meta(owner).get("uid") != ref.get("uid"):
            return None
        return key

    def on_add(self, pod: dict) -> None:
        key = self.owner_key(pod)
        if key is not None:
            self.created(key)
            self.enqueue(key)

    def on_update(self, old: dict, new: dict) -> None:
        if meta(new).get("deletionTimestamp") and not meta(old).get("deletionTimestamp"):
            self.on_delete(new)  # a graceful deletion counts as seen once it starts, as kube's handlers do
            return
        for p in (old, new) if controller_ref(old) != controller_ref(new) else (new,):
            key = self.owner_key(p)
            if key is not None:
                self.enqueue(key)

    def on_delete(self, pod: dict) -> None:
        key = self.owner_key(pod)
        if key is not None:
            self.deleted(key, object_key(pod))
            self.enqueue(key)


class PodWriter:
    """Create and delete an owner's pods, with the Events kube's workload controllers record."""

    def __init__(self, kube: Client, recorder: EventRecorder, component: str, *,
                 created: str = "Created pod: {pod}", deleted: str = "Deleted pod: {pod}",
                 failed: str = "Error creating: {error}") -> None:
        self.kube = kube
        self.recorder = recorder
        self.component = component
        #: the Events' messages, formatted with ``pod`` and ``owner`` (the names) and ``error``
        self.created = created
        self.deleted = deleted
        self.failed = failed

    async def create(self, owner: dict, pod: dict) -> dict | None:
        """The created pod, or None when it could not be (a Warning Event says why)."""
        try:
            created = await self.kube.create(api_path("v1", "pods", meta(owner)["namespace"]), pod)
        except ApiError as err:
            if err.status == 409 or err.has_cause("NamespaceTerminating"):
                return None
            message = self.failed.format(pod=meta(pod).get("name") or meta(pod).get("generateName") or "",
                                         owner=meta(owner).get("name"), error=err.message)
            self.recorder.event(owner, "Warning", "FailedCreate", message, component=self.component)
            return None
        self.recorder.event(owner, "Normal", "SuccessfulCreate",
                            self.created.format(pod=meta(created).get("name"), owner=meta(owner).get("name")),
                            component=self.component)
        return created

    async def delete(self, owner: dict, pod: dict) -> bool:
        name = meta(pod)["name"]
        try:
            await self.kube.request("DELETE", api_path("v1", "pods", meta(pod)["namespace"], name))
        except ApiError as err:
            if err.status == 404:
                return False
            self.recorder.event(owner, "Warning", "FailedDelete", f"Error deleting: {err.message}", component=self.component)
            raise
        self.recorder.event(owner, "Normal", "SuccessfulDelete", self.deleted.format(pod=name, owner=meta(owner).get("name")),
                            component=self.component)
        return True
