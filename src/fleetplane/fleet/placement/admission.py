"""The placement policy validated on write: the fleet plugin's admission checks.

A bad policy used to be stored and reported afterwards (the parent's ``InvalidPlacement``
condition); now the hub refuses the write with 422 Invalid, one cause per bad field, as kube's
validation does::

    Deployment.apps "web" is invalid: metadata.annotations[placement.fleetplane.io/policy].overrides[1]
    .jsonPatch[0]: Invalid value: path /spec/template/spec/containers/3 does not exist

Checked: the whole policy (``parse_policy`` / ``policy_from_dict``: every key, rollouts' too),
the kind's own rules (a DaemonSet's policy cannot split) and the overrides against the child as it
would be built from the object (:func:`.overrides.check_against`). For the splitter's parents
(apps Deployments, DaemonSets, StatefulSets, ClusterDaemonSets' ``spec.placement``) and for the
other readers of the annotation (hub Services, CronJobs). Ratcheting: an update that leaves the
policy as it was is not checked again, so objects stored before keep working (and an override
that a later template change breaks is reported by the splitter as ``InvalidOverride``). Objects
labelled ``kcp.dev/cluster`` (assigned by hand, or a child) are not placed, so not checked.

The checks run as the hub's ``<Kind>Admission`` plugins (``DeploymentAdmission``,
``ClusterDaemonSetAdmission``, ...), which ``--disable-admission-plugins`` can turn off.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ...apimachinery.errors import FieldError
from ..clusterdaemonset_crd import CDS_GROUP, CDS_KIND
from ..splitter.kinds import KINDS
from .overrides import check_against
from .policy import ANNOTATION_POLICY, PolicyError, parse_policy

__all__ = ["admission_checks", "field_errors"]

LABEL_CLUSTER = "kcp.dev/cluster"
#: the kube texts a message may start with (alone or before ": "), and the field.Error type each is
_TYPES = (("Invalid value", "FieldValueInvalid"), ("Required value", "FieldValueRequired"),
          ("required", "FieldValueRequired"), ("Forbidden", "FieldValueForbidden"),
          ("Unsupported value", "FieldValueNotSupported"), ("Duplicate value", "FieldValueDuplicate"))

Check = Callable[[dict, "dict | None", dict], list[FieldError]]


def field_errors(messages: list[str], base: str) -> list[FieldError]:
    """``"path: message"`` strings (a PolicyError's, paths under ``base``: the annotation's name or
    ``spec.placement``) as field errors with kube's paths (``metadata.annotations[...]...``)."""
    out = []
    for m in messages:
        path, sep, detail = m.partition(": ")
        if not sep:
            path, detail = base, m
        if path.startswith(ANNOTATION_POLICY):
            path = f"metadata.annotations[{ANNOTATION_POLICY}]" + path[len(ANNOTATION_POLICY):]
        type_ = "FieldValueInvalid"
        for text, t in _TYPES:
            if detail == text or detail.startswith(text + ": "):
                type_, detail = t, detail[len(text) + 2:]
                break
        out.append(FieldError(type_, path, detail))
    return out


def _meta(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    md = (obj or {}).get("metadata")
    return md if isinstance(md, Mapping) else {}


def _text(obj: Mapping[str, Any] | None) -> Any:
    ann = _meta(obj).get("annotations")
    return ann.get(ANNOTATION_POLICY) if isinstance(ann, Mapping) else None


def _placed(obj: Mapping[str, Any]) -> bool:
    labels = _meta(obj).get("labels")
    return not (isinstance(labels, Mapping) and LABEL_CLUSTER in labels)


def _workload_check(kind: str) -> Check:
    wk = KINDS[kind]
    cds = kind == CDS_KIND

    def check(obj: dict, old: dict | None, _ns_labels: dict) -> list[FieldError]:
        raw = obj.get("spec")
        spec: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        if cds:
            source: Any = spec.get("placement")
            before = ((old or {}).get("spec") or {}).get("placement") if old is not None else None
            base = "spec.placement"
        else:
            source, before, base = _text(obj), _text(old), f"metadata.annotations[{ANNOTATION_POLICY}]"
        if (old is not None and source == before) or source is None or not _placed(obj):
            return []  # unchanged (ratcheting), none, or not placed by the splitter
        if cds and not isinstance(source, Mapping):
            return field_errors(["must be a mapping of placement fields"], base)
        requested = wk.requested(spec)
        try:
            policy, _ = wk.policy(obj, requested)
        except PolicyError as err:
            return field_errors(err.errors, base)
        if not policy.overrides or not isinstance(spec.get("template"), Mapping):
            return []
        md = _meta(obj)
        labels = {str(k): str(v) for k, v in (md.get("labels") or {}).items()}
        annotations = {str(k): str(v) for k, v in (md.get("annotations") or {}).items() if k != ANNOTATION_POLICY}
        where = "spec.placement" if cds else ANNOTATION_POLICY
        problems = check_against(policy.overrides, wk.child_spec(spec, requested, 0), labels, annotations)
        return field_errors([f"{where}.{m}" for m in problems], base)

    return check


def _policy_check(strategy_default: str) -> Check:
    """Services and CronJobs: they read the annotation's policy (its cluster terms) only."""

    def check(obj: dict, old: dict | None, _ns_labels: dict) -> list[FieldError]:
        text = _text(obj)
        if text is None or (old is not None and text == _text(old)) or not _placed(obj):
            return []
        if not isinstance(text, str):
            return field_errors(["must be a string"], f"metadata.annotations[{ANNOTATION_POLICY}]")
        try:
            parse_policy(text, strategy_default=strategy_default)
        except PolicyError as err:
            return field_errors(err.errors, f"metadata.annotations[{ANNOTATION_POLICY}]")
        return []

    return check


def admission_checks() -> dict[tuple[str, str], Check]:
    """The checks by (group, kind), for ``Contributions.admission``."""
    out: dict[tuple[str, str], Check] = {("apps", k): _workload_check(k) for k in ("Deployment", "DaemonSet",
                                                                                  "StatefulSet")}
    out[(CDS_GROUP, CDS_KIND)] = _workload_check(CDS_KIND)
    out[("", "Service")] = _policy_check("Duplicate")
    out[("batch", "CronJob")] = _policy_check("Even")
    return out
