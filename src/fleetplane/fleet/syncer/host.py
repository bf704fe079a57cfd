"""What the type and object sync loops need of the :class:`~fleetplane.fleet.syncer.Syncer` that
runs them (a Protocol, so the loops and the Syncer do not import each other), and the rules for
fields the cluster owns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ...kube.client import ApiError, Client
from ...kube.events import EventRecorder
from ...kube.informer import Informer
from .hubcrds import HubCRDs


@dataclass(frozen=True)
class RetainRule:
    """Keep a field as the cluster has it instead of the hub's value, and copy it up to the hub
    (the cluster's controller owns it), like Karmada's retain interpreter.

    ``resource`` is ``"deployments.apps"`` (or ``"*"``); ``path`` a dotted field path
    (``"spec.replicas"``); ``when`` is ``"always"``, ``"hpa"`` (a HorizontalPodAutoscaler in
    the cluster targets the object) or ``"annotation"`` (the hub object's
    ``fleetplane.io/retain`` annotation lists the path; listed paths are retained even without
    a rule)."""

    resource: str
    path: str
    when: str = "hpa"

    def __post_init__(self) -> None:
        if self.when not in ("always", "hpa", "annotation"):
            raise ValueError(f"RetainRule.when must be always, hpa or annotation, not {self.when!r}")

    def matches(self, group_resource: str) -> bool:
        return self.resource in ("*", group_resource)


DEFAULT_RETAIN = (
    RetainRule("deployments.apps", "spec.replicas", "hpa"),
    RetainRule("replicasets.apps", "spec.replicas", "hpa"),
    RetainRule("statefulsets.apps", "spec.replicas", "hpa"),
)


class SyncerHost(Protocol):
    """The Syncer as its loops see it: both sides' clients, its names and rules, Events, and where
    to report health."""

    cluster_name: str
    logical_cluster: str
    label_value: str
    manager: str
    retain: tuple[RetainRule, ...]
    resources: tuple[str, ...]
    hub: Client
    down: Client
    events: EventRecorder
    hub_crds: HubCRDs

    def mark_ok(self, *sources: str) -> None: ...

    def note_error(self, err: ApiError) -> None: ...

    def informer_status(self, inf: Informer, error: str | None, *, hub: bool) -> None: ...
