"""The apps/v1 ControllerRevision type the hub serves for the splitter's revision history
(:mod:`fleetplane.fleet.splitter.history`): a system CRD, importable without the splitter and its
client libraries (for ``fleetplane start``)."""

from __future__ import annotations

from typing import Any

__all__ = ["CONTROLLERREVISION_CRD"]

#: apps/v1 ControllerRevision, served on the hub as a system CRD (fleet/plugin.py)
CONTROLLERREVISION_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "controllerrevisions.apps"},
    "spec": {
        "group": "apps", "scope": "Namespaced",
        "names": {"plural": "controllerrevisions", "singular": "controllerrevision", "kind": "ControllerRevision",
                  "listKind": "ControllerRevisionList"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "additionalPrinterColumns": [
                {"name": "Controller", "type": "string", "jsonPath": ".metadata.ownerReferences[0].name"},
                {"name": "Revision", "type": "integer", "jsonPath": ".revision"},
                {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
            "schema": {"openAPIV3Schema": {
                "type": "object", "required": ["revision"],
                "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                               "metadata": {"type": "object"},
                               "data": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                               "revision": {"type": "integer", "format": "int64"}}}},
        }],
    },
}
