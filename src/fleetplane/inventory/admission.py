"""Admission for ClusterProfiles: the KEP-4322 rules a CRD schema cannot express.

``admit(obj, old, namespace_labels)`` runs after schema validation on every create and update
(``/status`` included) and returns field errors; the hub answers 422 with them. The rules:

1. **Cluster manager label.** The ``x-k8s.io/cluster-manager`` label MUST equal
   ``spec.clusterManager.name``. A profile that omits the label gets it (the one mutation
   admission makes, so the rule holds for every stored profile and the KEP's own examples,
   which omit it, still apply); a different value is rejected. ``spec.clusterManager.name``
   must therefore be a valid label value (1-63 characters; upstream's v1alpha2 rule).
2. **Immutable manager.** ``spec.clusterManager.name`` cannot change (the CRD says the same
   with a CEL transition rule; this keeps the rule on hubs that do not evaluate CEL).
3. **No credentials.** Nothing in the profile may be credential material (see
   :mod:`.credentials`: fields, flags and values, also base64-encoded, embedded in strings or
   in URLs); the error names the field path, never the secret.
4. **ClusterSet namespaces.** KEP-4322: if an inventory represents a ClusterSet, namespace is
   the grouping mechanism and the namespace carries a clusterset label whose value is the
   ClusterSet's name; a ClusterProfile can only be in one ClusterSet, and then only in that
   ClusterSet's namespace. So in a namespace labelled as ClusterSet *S* (key
   ``multicluster.x-k8s.io/clusterset``, as upstream code spells it, or
   ``clusterset.multicluster.x-k8s.io``, as the KEP text does) a profile may not claim another
   ClusterSet, whether by its own clusterset label or by the KEP-2149 ``clusterset.k8s.io``
   property. It need not claim one: the namespace says it. A namespace labelled with both keys
   and different values is ambiguous and admits no profile.

5. **Member id.** The ``multicluster.x-k8s.io/inventory-member-id`` label (upstream's v1alpha2
   ``LabelInventoryMemberIDKey``, which links the profiles that represent one member cluster) is
   non-empty when set, in either version.

Rules 1, 4 and 5 *ratchet* on update: an error the old object already had, for the same value,
does not block an update (namespace labels can change under existing profiles, and a profile
written before these rules held must still be able to lose its finalizers). Rules 2 and 3 never
ratchet.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..apimachinery import errors as e
from ..apimachinery.errors import FieldError
from ..apimachinery.validation import is_label_value
from .constants import (
    CLUSTERSET_LABELS,
    LABEL_CLUSTER_MANAGER,
    LABEL_INVENTORY_MEMBER_ID,
    PROPERTY_CLUSTERSET,
)
from .credentials import find_credentials

__all__ = ["admit", "clusterset_of_namespace", "validate"]

_KEP = "KEP-4322"


def _manager(obj: Mapping[str, Any]) -> Any:
    spec = obj.get("spec")
    cm = spec.get("clusterManager") if isinstance(spec, Mapping) else None
    return cm.get("name") if isinstance(cm, Mapping) else None


def _labels(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return labels if isinstance(labels, Mapping) else {}


def clusterset_of_namespace(namespace_labels: Mapping[str, str]) -> tuple[str | None, list[str]]:
    """(ClusterSet name, label keys that say so) of a namespace; the name is None if unlabelled.

    Raises ValueError if the two accepted keys disagree.
    """
    found = {k: namespace_labels[k] for k in CLUSTERSET_LABELS if namespace_labels.get(k)}
    values = set(found.values())
    if len(values) > 1:
        raise ValueError(" and ".join(f'{k}="{v}"' for k, v in found.items()))
    return (values.pop() if values else None), list(found)


def _manager_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    name = _manager(obj)
    if not isinstance(name, str):
        return []  # the schema reports a missing or mistyped name
    if not name:
        return [e.required("spec.clusterManager.name", f"the cluster manager's name is required ({_KEP})")]
    if not is_label_value(name):
        return [e.invalid("spec.clusterManager.name", name,
                          f"must be a valid label value (at most 63 characters, alphanumerics, '-', '_' or '.', "
                          f"starting and ending with an alphanumeric), because the {LABEL_CLUSTER_MANAGER} label "
                          f"must equal it ({_KEP})")]
    label = _labels(obj).get(LABEL_CLUSTER_MANAGER)
    if label is not None and label != name:
        return [e.invalid(f"metadata.labels[{LABEL_CLUSTER_MANAGER}]", label,
                          f'must equal spec.clusterManager.name "{name}" ({_KEP}: the label\'s value MUST be the '
                          f"name of the cluster manager)")]
    return []


def _member_id_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    labels = _labels(obj)
    if LABEL_INVENTORY_MEMBER_ID in labels and not labels[LABEL_INVENTORY_MEMBER_ID]:
        return [e.invalid(f"metadata.labels[{LABEL_INVENTORY_MEMBER_ID}]", "",
                          "must be non-empty when set (it names the member cluster the profile represents)")]
    return []


def _clusterset_errors(obj: Mapping[str, Any], namespace_labels: Mapping[str, str]) -> list[FieldError]:
    try:
        clusterset, keys = clusterset_of_namespace(namespace_labels)
    except ValueError as exc:
        ns = (obj.get("metadata") or {}).get("namespace") or ""
        return [e.forbidden("metadata.namespace",
                            f'namespace "{ns}" is labelled with two different ClusterSets ({exc}); a ClusterProfile '
                            f"can only be in one ClusterSet ({_KEP})")]
    if clusterset is None:
        return []
    why = (f'the namespace is ClusterSet "{clusterset}"\'s (label {keys[0]}), so its ClusterProfiles belong to that '
           f"ClusterSet ({_KEP}: namespace is the grouping mechanism and a profile can only be in one ClusterSet)")
    errs: list[FieldError] = []
    labels = _labels(obj)
    for key in CLUSTERSET_LABELS:
        value = labels.get(key)
        if value is not None and value != clusterset:
            errs.append(e.invalid(f"metadata.labels[{key}]", value, why))
    status = obj.get("status")
    props = status.get("properties") if isinstance(status, Mapping) else None
    for i, prop in enumerate(props if isinstance(props, list) else ()):
        if isinstance(prop, Mapping) and prop.get("name") == PROPERTY_CLUSTERSET:
            value = prop.get("value")
            if value != clusterset:
                errs.append(e.invalid(f"status.properties[{i}].value", value,
                                      f"property {PROPERTY_CLUSTERSET} must name the namespace's ClusterSet: " + why))
    return errs


def _credential_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    return [e.forbidden(f.path, f"credential material is not allowed in a ClusterProfile ({f.reason}); {_KEP}: "
                                "profiles carry reachability information only, consumers obtain credentials "
                                "through access provider plugins")
            for f in find_credentials(obj)]


def _key(err: FieldError) -> tuple[str, str, str]:
    return (err.type, err.field, repr(err.bad_value))


def _ratcheted(new: list[FieldError], old: list[FieldError]) -> list[FieldError]:
    seen = {_key(x) for x in old}
    return [x for x in new if _key(x) not in seen]


def validate(obj: Mapping[str, Any], old: Mapping[str, Any] | None = None,
             namespace_labels: Mapping[str, str] | None = None) -> list[FieldError]:
    """The rules without the label defaulting: what :func:`admit` would reject (obj is not changed)."""
    ns_labels = namespace_labels or {}
    errs = _manager_errors(obj) + _clusterset_errors(obj, ns_labels) + _member_id_errors(obj)
    if old is not None:
        errs = _ratcheted(errs, _manager_errors(old) + _clusterset_errors(old, ns_labels) + _member_id_errors(old))
        old_name, new_name = _manager(old), _manager(obj)
        if old_name is not None and new_name != old_name:
            errs.insert(0, e.invalid("spec.clusterManager.name", new_name,
                                     f'field is immutable (was "{old_name}"; {_KEP}: the cluster manager is set once, '
                                     "at creation)"))
    return errs + _credential_errors(obj)


def admit(obj: dict, old: dict | None, namespace_labels: dict[str, str]) -> list[FieldError]:
    """The hub's admission hook for ``(multicluster.x-k8s.io, ClusterProfile)``.

    Sets the ``x-k8s.io/cluster-manager`` label when it is missing (replacing the labels dict,
    never mutating one that may be shared with the stored object), then returns :func:`validate`'s
    errors.
    """
    name = _manager(obj)
    meta = obj.get("metadata")
    if isinstance(name, str) and name and isinstance(meta, dict):
        labels = meta.get("labels")
        if not isinstance(labels, Mapping) or LABEL_CLUSTER_MANAGER not in labels:
            if is_label_value(name):
                meta["labels"] = {**(labels if isinstance(labels, Mapping) else {}), LABEL_CLUSTER_MANAGER: name}
    return validate(obj, old, namespace_labels)
