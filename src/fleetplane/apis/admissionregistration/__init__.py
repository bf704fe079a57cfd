"""admissionregistration.k8s.io/v1: the objects that configure admission per logical cluster.

``webhooks`` declares Validating/MutatingWebhookConfiguration and ``policies`` the
ValidatingAdmissionPolicy kinds; the admission plugins that act on them live in
``pipeline/admission/``.
"""

from __future__ import annotations

from ...registry.types import ResourceType
from . import policies, webhooks


def resource_types() -> list[ResourceType]:
    """Fresh ResourceType objects for the group's kinds."""
    return [*webhooks.resource_types(), *policies.resource_types()]
