"""The apps group (``apps/v1``) as a simulated physical cluster serves it: Deployments,
ReplicaSets, DaemonSets and StatefulSets with kube's defaulting (``pkg/apis/apps/v1/defaults.go``:
replicas 1, RollingUpdate 25%/25%, revisionHistoryLimit 10, progressDeadlineSeconds 600; DaemonSet
RollingUpdate maxUnavailable 1 / maxSurge 0; StatefulSet OrderedReady, partition 0, PVC retention
Retain/Retain) and validation (selector required, non-empty, matching the template's labels and
immutable; replicas >= 0; the StatefulSet spec immutable but for kube's list of fields), generation
on spec change (Deployments also on annotation changes, as kube), status and scale subresources
(DaemonSets have no scale).
"""

from __future__ import annotations

from typing import Any

from ..apimachinery import errors as e
from ..apimachinery.errors import FieldError
from ..apimachinery.gofmt import go_label_selector, go_string_map
from ..apimachinery.intstr import PERCENT
from ..apimachinery.labels import format_label_selector, selector_matches
from ..apimachinery.validation import (
    dns1123_label_error,
    dns1123_subdomain_error,
    validate_label_selector,
    validate_labels,
)
from ..registry import printers as pr
from ..registry.printers import AGE, NAME, Clock, Column, Printer
from ..registry.types import META_FIELDS, ResourceType, ScaleSpec, Strategy
from ..registry.validation import validate_object_meta
from .core.podspec import canonicalize_resources, default_template, validate_template
from .core.pvc import default_claim

POD_TEMPLATE_HASH = "pod-template-hash"
#: DaemonSet and StatefulSet pods: the name of the revision (``<owner>-<hash>``) they were made from
CONTROLLER_REVISION_HASH = "controller-revision-hash"
#: apps/v1 keeps the internal DaemonSet's templateGeneration in this annotation
TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"
REVISION_ANNOTATION = "deployment.kubernetes.io/revision"
#: where a Scale's ``status.selector`` comes from. ``None`` until the scale handler renders a
#: metav1.LabelSelector object in its string form (``str(LabelSelector)``); then ".spec.selector".
SCALE_SELECTOR_PATH: str | None = ".spec.selector"

def _validate_int_or_percent(value: Any, path: str) -> list[FieldError]:
    if isinstance(value, int) and not isinstance(value, bool):
        return [e.invalid(path, value, "must be greater than or equal to 0")] if value < 0 else []
    if isinstance(value, str):
        m = PERCENT.match(value)
        if m:
            if int(m.group(1)) > 100:
                return [e.invalid(path, value, "must not be greater than 100%")]
            return []
        return [e.invalid(path, value, "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")]
    return [e.invalid(path, value, "must be an integer or percentage (e.g '5%')")]


def _is_zero(value: Any) -> bool:
    return value in (0, "0%", "0")


def _non_negative(obj: dict, path: str, value: Any) -> list[FieldError]:
    if value is None:
        return []
    if not isinstance(value, int) or isinstance(value, bool):
        return [e.invalid(path, value, "must be an integer")]
    if value < 0:
        return [e.invalid(path, value, "must be greater than or equal to 0")]
    return []


class _WorkloadStrategy(Strategy):
    """Deployments and ReplicaSets: generation, status subresource, unconditional PUT (as apps/v1)."""

    kind = ""
    tracks_generation = True
    allow_unconditional_update = True
    status_subresource = True

    def canonicalize(self, obj: dict) -> None:
        template = (obj.get("spec") or {}).get("template") if isinstance(obj.get("spec"), dict) else None
        if isinstance(template, dict):
            canonicalize_resources(template.get("spec"), self.kind, "v1")

    def prepare_for_status_update(self, obj: dict, old: dict) -> dict:
        """kube's status strategies keep spec (and labels) and take the rest, annotations included
        (the deployment controller records the revision annotation through /status)."""
        new = dict(obj)
        new["metadata"] = dict(obj.get("metadata") or {})
        if "spec" in old:
            new["spec"] = old["spec"]
        else:
            new.pop("spec", None)
        if "labels" in old["metadata"]:
            new["metadata"]["labels"] = old["metadata"]["labels"]
        else:
            new["metadata"].pop("labels", None)
        return new

    def spec_changed(self, obj: dict, old: dict) -> bool:
        return obj.get("spec") != old.get("spec")

    def _validate_common(self, obj: dict, *, selector_required: bool = True) -> list[FieldError]:
        """Meta, counts, the selector and the template. Without ``selector_required`` (DaemonSets) a
        missing selector selects nothing, so kube reports that it does not match the template."""
        errs = validate_object_meta(obj, namespaced=True, name_error=self.name_error)
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return errs + [e.required("spec")]
        errs += _non_negative(obj, "spec.replicas", spec.get("replicas"))
        errs += _non_negative(obj, "spec.minReadySeconds", spec.get("minReadySeconds"))
        sel = spec.get("selector")
        if sel is None and not selector_required:
            labels = pr.get(spec, "template", "metadata", "labels")
            errs.append(e.invalid_literal("spec.template.metadata.labels", go_string_map(labels),
                                          "`selector` does not match template `labels`"))
        elif sel is None:
            errs.append(e.required("spec.selector"))
        else:
            errs += validate_label_selector(sel, "spec.selector")
            if isinstance(sel, dict) and not sel.get("matchLabels") and not sel.get("matchExpressions"):
                errs.append(e.invalid_literal("spec.selector", go_label_selector(sel), f"empty selector is invalid for {self.kind.lower()}"))
        errs += self.validate_template(spec.get("template"), "spec.template", sel)
        return errs

    def validate_template(self, template: Any, path: str, selector: Any) -> list[FieldError]:
        return validate_template(template, path, selector)

    @staticmethod
    def name_error(name: str) -> str | None:
        return dns1123_subdomain_error(name)

    def validate_update(self, obj: dict, old: dict) -> list[FieldError]:
        errs = self.validate(obj)
        new_sel = (obj.get("spec") or {}).get("selector")
        old_sel = (old.get("spec") or {}).get("selector")
        if new_sel != old_sel and new_sel is not None:
            errs.append(e.invalid_literal("spec.selector", go_label_selector(new_sel), "field is immutable"))
        return errs


class DeploymentStrategy(_WorkloadStrategy):
    kind = "Deployment"

    def default(self, obj: dict) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        spec.setdefault("replicas", 1)
        strategy = spec.get("strategy")
        if not isinstance(strategy, dict):
            strategy = spec["strategy"] = {}
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            ru = strategy.get("rollingUpdate")
            if not isinstance(ru, dict):
                ru = strategy["rollingUpdate"] = {}
            ru.setdefault("maxUnavailable", "25%")
            ru.setdefault("maxSurge", "25%")
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
        default_template(spec.get("template"))

    def prepare_for_create(self, obj: dict) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {}  # a Go struct: always there, empty until the controller writes it

    def prepare_for_update(self, obj: dict, old: dict) -> None:
        super().prepare_for_update(obj, old)

    def spec_changed(self, obj: dict, old: dict) -> bool:
        """kube: spec changes and annotation changes bump generation (annotations are copied to the
        ReplicaSets); the controller's own ``deployment.kubernetes.io/`` annotations do not."""
        if obj.get("spec") != old.get("spec"):
            return True

        def user_annotations(o: dict) -> dict:
            return {k: v for k, v in ((o.get("metadata") or {}).get("annotations") or {}).items()
                    if not k.startswith("deployment.kubernetes.io/") and k != "kcp.io/cluster"}

        return user_annotations(obj) != user_annotations(old)

    def validate(self, obj: dict) -> list[FieldError]:
        errs = self._validate_common(obj)
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return errs
        strategy = spec.get("strategy") or {}
        stype = strategy.get("type")
        if stype not in ("Recreate", "RollingUpdate"):
            errs.append(e.required("spec.strategy.type") if not stype
                        else e.not_supported("spec.strategy.type", stype, ["Recreate", "RollingUpdate"]))
        ru = strategy.get("rollingUpdate")
        if stype == "Recreate" and ru is not None:
            errs.append(e.forbidden("spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'"))
        if stype == "RollingUpdate" and isinstance(ru, dict):
            mu, ms = ru.get("maxUnavailable"), ru.get("maxSurge")
            errs += _validate_int_or_percent(mu, "spec.strategy.rollingUpdate.maxUnavailable")
            errs += _validate_int_or_percent(ms, "spec.strategy.rollingUpdate.maxSurge")
            if _is_zero(mu) and _is_zero(ms):
                errs.append(e.invalid("spec.strategy.rollingUpdate.maxUnavailable", mu, "may not be 0 when `maxSurge` is 0"))
        errs += _non_negative(obj, "spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))
        pds = spec.get("progressDeadlineSeconds")
        errs += _non_negative(obj, "spec.progressDeadlineSeconds", pds)
        mrs = spec.get("minReadySeconds") or 0
        if isinstance(pds, int) and isinstance(mrs, int) and pds <= mrs:
            errs.append(e.invalid("spec.progressDeadlineSeconds", pds, "must be greater than minReadySeconds"))
        return errs


class ReplicaSetStrategy(_WorkloadStrategy):
    kind = "ReplicaSet"

    def default(self, obj: dict) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            spec.setdefault("replicas", 1)
            default_template(spec.get("template"))

    def prepare_for_create(self, obj: dict) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {"replicas": 0}  # replicas has no omitempty

    def prepare_for_update(self, obj: dict, old: dict) -> None:
        super().prepare_for_update(obj, old)

    def validate(self, obj: dict) -> list[FieldError]:
        return self._validate_common(obj)


def _template_spec(spec: dict) -> dict:
    t = spec.get("template")
    ts = t.get("spec") if isinstance(t, dict) else None
    return ts if isinstance(ts, dict) else {}


class DaemonSetStrategy(_WorkloadStrategy):
    """apps/v1 DaemonSet: ``SetDefaults_DaemonSet``, ``ValidateDaemonSetSpec``; the template
    generation (kept in the ``deprecated.daemonset.template.generation`` annotation, as apps/v1's
    conversion does) counts template changes."""

    kind = "DaemonSet"

    def default(self, obj: dict) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        strategy = spec.get("updateStrategy")
        if not isinstance(strategy, dict):
            strategy = spec["updateStrategy"] = {}
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            ru = strategy.get("rollingUpdate")
            if not isinstance(ru, dict):
                ru = strategy["rollingUpdate"] = {}
            ru.setdefault("maxUnavailable", 1)
            ru.setdefault("maxSurge", 0)
        spec.setdefault("revisionHistoryLimit", 10)
        default_template(spec.get("template"))

    def prepare_for_create(self, obj: dict) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0}
        obj.setdefault("metadata", {}).setdefault("annotations", {})[TEMPLATE_GENERATION] = "1"

    def prepare_for_update(self, obj: dict, old: dict) -> None:
        super().prepare_for_update(obj, old)
        old_gen = ((old.get("metadata") or {}).get("annotations") or {}).get(TEMPLATE_GENERATION, "1")
        try:
            gen = int(old_gen)
        except ValueError:
            gen = 1
        if (obj.get("spec") or {}).get("template") != (old.get("spec") or {}).get("template"):
            gen += 1
        annotations = obj.setdefault("metadata", {}).get("annotations")
        if not isinstance(annotations, dict):
            annotations = obj["metadata"]["annotations"] = {}
        annotations[TEMPLATE_GENERATION] = str(gen)

    def validate(self, obj: dict) -> list[FieldError]:
        errs = self._validate_common(obj, selector_required=False)
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return errs
        if _template_spec(spec).get("activeDeadlineSeconds") is not None:
            errs.append(e.forbidden("spec.template.spec.activeDeadlineSeconds", "activeDeadlineSeconds in DaemonSet is not Supported"))
        strategy = spec.get("updateStrategy") or {}
        stype = strategy.get("type")
        if stype == "RollingUpdate":
            ru = strategy.get("rollingUpdate")
            if not isinstance(ru, dict):
                errs.append(e.required("spec.updateStrategy.rollingUpdate"))
            else:
                p = "spec.updateStrategy.rollingUpdate"
                mu, ms = ru.get("maxUnavailable", 0), ru.get("maxSurge", 0)
                errs += _validate_int_or_percent(mu, f"{p}.maxUnavailable")
                errs += _validate_int_or_percent(ms, f"{p}.maxSurge")
                if not _is_zero(mu) and not _is_zero(ms):
                    errs.append(e.invalid(f"{p}.maxSurge", ms, "may not be set when maxUnavailable is non-zero"))
                elif _is_zero(mu) and _is_zero(ms):
                    errs.append(e.required(f"{p}.maxUnavailable", "cannot be 0 when maxSurge is 0"))
        elif stype != "OnDelete":
            errs.append(e.not_supported("spec.updateStrategy", stype, ["RollingUpdate", "OnDelete"]))
        errs += _non_negative(obj, "spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))
        return errs


#: ``ValidateStatefulSetUpdate``: what an update may change (kube 1.32's list)
STATEFULSET_MUTABLE = ("replicas", "ordinals", "template", "updateStrategy", "persistentVolumeClaimRetentionPolicy", "minReadySeconds")
_RETENTION = ["Retain", "Delete"]


class StatefulSetStrategy(_WorkloadStrategy):
    """apps/v1 StatefulSet: ``SetDefaults_StatefulSet`` (claim templates defaulted as claims),
    ``ValidateStatefulSetSpec`` and its update rule (only kube's mutable fields change). As kube,
    the name is a DNS-1123 label and neither the pod template's spec (but its restartPolicy), the
    ``serviceName`` nor the claim templates are validated here: what is wrong with them shows when
    the controller creates a pod or a claim (a FailedCreate Event)."""

    kind = "StatefulSet"

    @staticmethod
    def name_error(name: str) -> str | None:
        return dns1123_label_error(name)

    def validate_template(self, template: Any, path: str, selector: Any) -> list[FieldError]:
        """ValidatePodTemplateSpecForStatefulSet: labels and the selector only; restartPolicy Always."""
        if not isinstance(template, dict):
            return [e.required(path)]
        labels = pr.get(template, "metadata", "labels")
        errs = validate_labels(labels, f"{path}.labels")
        if isinstance(selector, dict) and (selector.get("matchLabels") or selector.get("matchExpressions")) \
                and not selector_matches(selector, labels if isinstance(labels, dict) else {}):
            errs.append(e.invalid_literal(f"{path}.metadata.labels", go_string_map(labels), "`selector` does not match template `labels`"))
        rp = pr.get(template, "spec", "restartPolicy")
        if rp != "Always":
            errs.append(e.not_supported(f"{path}.spec.restartPolicy", rp if rp is not None else "", ["Always"]))
        return errs

    def default(self, obj: dict) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        spec.setdefault("podManagementPolicy", "OrderedReady")
        strategy = spec.get("updateStrategy")
        if not isinstance(strategy, dict):
            strategy = spec["updateStrategy"] = {}
        if not strategy.get("type"):
            strategy["type"] = "RollingUpdate"
            if not isinstance(strategy.get("rollingUpdate"), dict):
                strategy["rollingUpdate"] = {}
        if strategy["type"] == "RollingUpdate" and isinstance(strategy.get("rollingUpdate"), dict):
            strategy["rollingUpdate"].setdefault("partition", 0)
        policy = spec.get("persistentVolumeClaimRetentionPolicy")
        if not isinstance(policy, dict):
            policy = spec["persistentVolumeClaimRetentionPolicy"] = {}
        policy.setdefault("whenDeleted", "Retain")
        policy.setdefault("whenScaled", "Retain")
        spec.setdefault("replicas", 1)
        spec.setdefault("revisionHistoryLimit", 10)
        default_template(spec.get("template"))
        for claim in spec.get("volumeClaimTemplates") or []:
            if isinstance(claim, dict):
                claim.setdefault("apiVersion", "v1")
                claim.setdefault("kind", "PersistentVolumeClaim")
                default_claim(claim)

    def prepare_for_create(self, obj: dict) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {"replicas": 0, "availableReplicas": 0}  # neither has omitempty

    def validate(self, obj: dict) -> list[FieldError]:
        errs = self._validate_common(obj)
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return errs
        pmp = spec.get("podManagementPolicy")
        if not pmp:
            errs.append(e.required("spec.podManagementPolicy"))
        elif pmp not in ("OrderedReady", "Parallel"):
            errs.append(e.invalid("spec.podManagementPolicy", pmp, "must be 'OrderedReady' or 'Parallel'"))
        strategy = spec.get("updateStrategy") or {}
        stype = strategy.get("type")
        if not stype:
            errs.append(e.required("spec.updateStrategy"))
        elif stype == "OnDelete":
            if strategy.get("rollingUpdate") is not None:
                errs.append(e.invalid("spec.updateStrategy.rollingUpdate", strategy.get("rollingUpdate"),
                                      "only allowed for updateStrategy 'RollingUpdate'"))
        elif stype == "RollingUpdate":
            ru = strategy.get("rollingUpdate")
            if isinstance(ru, dict):
                errs += _non_negative(obj, "spec.updateStrategy.rollingUpdate.partition", ru.get("partition"))
        else:
            errs.append(e.invalid("spec.updateStrategy", strategy, "must be 'RollingUpdate' or 'OnDelete'"))
        policy = spec.get("persistentVolumeClaimRetentionPolicy") or {}
        for f in ("whenDeleted", "whenScaled"):
            if policy.get(f) not in _RETENTION:
                errs.append(e.not_supported(f"spec.persistentVolumeClaimRetentionPolicy.{f}", policy.get(f), _RETENTION))
        ordinals = spec.get("ordinals")
        if isinstance(ordinals, dict):
            errs += _non_negative(obj, "spec.ordinals.start", ordinals.get("start"))
        if _template_spec(spec).get("activeDeadlineSeconds") is not None:
            errs.append(e.forbidden("spec.template.spec.activeDeadlineSeconds", "activeDeadlineSeconds in StatefulSet is not Supported"))
        return errs

    def validate_update(self, obj: dict, old: dict) -> list[FieldError]:
        errs = self.validate(obj)
        new_spec, old_spec = obj.get("spec") or {}, old.get("spec") or {}
        if {k: v for k, v in new_spec.items() if k not in STATEFULSET_MUTABLE} != \
                {k: v for k, v in old_spec.items() if k not in STATEFULSET_MUTABLE}:
            errs.append(e.forbidden("spec", "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
                                            "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"))
        return errs


REPLICASET_FIELDS = dict(META_FIELDS) | {"status.replicas": lambda o: str(((o.get("status") or {}).get("replicas")) or 0)}


APPS = "io.k8s.api.apps.v1."
CONTAINERS = Column("Containers", priority=1, description="Names of each container in the template.")
IMAGES = Column("Images", priority=1, description="Images referenced by each container in the template.")


def _selector(selector: Any, empty: str = "<none>") -> str:
    return format_label_selector(selector, empty)


def _containers_cells(containers: Any) -> tuple[str, str]:
    cs = [c for c in containers if isinstance(c, dict)] if isinstance(containers, list) else []
    return ",".join(pr.string(c.get("name")) for c in cs), ",".join(pr.string(c.get("image")) for c in cs)


def _deployment_cells(o: dict, clock: Clock) -> list:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    desired = pr.integer(spec.get("replicas"), 1)
    names, images = _containers_cells(pr.get(spec, "template", "spec", "containers"))
    return [pr.meta(o).get("name"), f"{pr.integer(status.get('readyReplicas'))}/{desired}", pr.integer(status.get("updatedReplicas")),
            pr.integer(status.get("availableReplicas")), clock.since(pr.meta(o).get("creationTimestamp")), names, images,
            _selector(spec.get("selector"), empty="")]


def _replicaset_cells(o: dict, clock: Clock) -> list:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    names, images = _containers_cells(pr.get(spec, "template", "spec", "containers"))
    return [pr.meta(o).get("name"), pr.integer(spec.get("replicas"), 1), pr.integer(status.get("replicas")),
            pr.integer(status.get("readyReplicas")), clock.since(pr.meta(o).get("creationTimestamp")), names, images,
            _selector(spec.get("selector"))]


def format_labels(labels: Any) -> str:
    """labels.FormatLabels: ``k=v`` sorted by key, ``<none>`` for none."""
    if not isinstance(labels, dict) or not labels:
        return "<none>"
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _daemonset_cells(o: dict, clock: Clock) -> list:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    names, images = _containers_cells(pr.get(spec, "template", "spec", "containers"))
    return [pr.meta(o).get("name"), pr.integer(status.get("desiredNumberScheduled")), pr.integer(status.get("currentNumberScheduled")),
            pr.integer(status.get("numberReady")), pr.integer(status.get("updatedNumberScheduled")),
            pr.integer(status.get("numberAvailable")), format_labels(pr.get(spec, "template", "spec", "nodeSelector")),
            clock.since(pr.meta(o).get("creationTimestamp")), names, images, _selector(spec.get("selector"))]


def _statefulset_cells(o: dict, clock: Clock) -> list:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    names, images = _containers_cells(pr.get(spec, "template", "spec", "containers"))
    return [pr.meta(o).get("name"), f"{pr.integer(status.get('readyReplicas'))}/{pr.integer(spec.get('replicas'), 1)}",
            clock.since(pr.meta(o).get("creationTimestamp")), names, images]


def resource_types() -> list[ResourceType]:
    return [
        ResourceType("apps", "v1", "Deployment", "deployments", "deployment", True, DeploymentStrategy(),
                     short_names=("deploy",), categories=("all",), subresources=("status", "scale"),
                     scale=ScaleSpec(".spec.replicas", ".status.replicas", SCALE_SELECTOR_PATH),
                     printer=Printer((
                         NAME,
                         Column("Ready", description="Number of the pod with ready state"),
                         Column("Up-to-date", description=(APPS + "DeploymentStatus", "updatedReplicas")),
                         Column("Available", description=(APPS + "DeploymentStatus", "availableReplicas")),
                         AGE, CONTAINERS, IMAGES,
                         Column("Selector", priority=1, description=(APPS + "DeploymentSpec", "selector")),
                     ), _deployment_cells),
                     openapi_definition=APPS + "Deployment", protobuf="k8s.io.api.apps.v1.Deployment"),
        ResourceType("apps", "v1", "ReplicaSet", "replicasets", "replicaset", True, ReplicaSetStrategy(),
                     short_names=("rs",), categories=("all",), subresources=("status", "scale"),
                     scale=ScaleSpec(".spec.replicas", ".status.replicas", SCALE_SELECTOR_PATH),
                     field_selectors=REPLICASET_FIELDS,
                     printer=Printer((
                         NAME,
                         Column("Desired", "integer", description=(APPS + "ReplicaSetSpec", "replicas")),
                         Column("Current", "integer", description=(APPS + "ReplicaSetStatus", "replicas")),
                         Column("Ready", "integer", description=(APPS + "ReplicaSetStatus", "readyReplicas")),
                         AGE, CONTAINERS, IMAGES,
                         Column("Selector", priority=1, description=(APPS + "ReplicaSetSpec", "selector")),
                     ), _replicaset_cells),
                     openapi_definition=APPS + "ReplicaSet", protobuf="k8s.io.api.apps.v1.ReplicaSet"),
        ResourceType("apps", "v1", "DaemonSet", "daemonsets", "daemonset", True, DaemonSetStrategy(),
                     short_names=("ds",), categories=("all",), subresources=("status",),
                     printer=Printer((
                         NAME,
                         Column("Desired", "integer", description=(APPS + "DaemonSetStatus", "desiredNumberScheduled")),
                         Column("Current", "integer", description=(APPS + "DaemonSetStatus", "currentNumberScheduled")),
                         Column("Ready", "integer", description=(APPS + "DaemonSetStatus", "numberReady")),
                         Column("Up-to-date", "integer", description=(APPS + "DaemonSetStatus", "updatedNumberScheduled")),
                         Column("Available", "integer", description=(APPS + "DaemonSetStatus", "numberAvailable")),
                         Column("Node Selector", description=("io.k8s.api.core.v1.PodSpec", "nodeSelector")),
                         AGE, CONTAINERS, IMAGES,
                         Column("Selector", priority=1, description=(APPS + "DaemonSetSpec", "selector")),
                     ), _daemonset_cells),
                     openapi_definition=APPS + "DaemonSet", protobuf="k8s.io.api.apps.v1.DaemonSet"),
        ResourceType("apps", "v1", "StatefulSet", "statefulsets", "statefulset", True, StatefulSetStrategy(),
                     short_names=("sts",), categories=("all",), subresources=("status", "scale"),
                     scale=ScaleSpec(".spec.replicas", ".status.replicas", SCALE_SELECTOR_PATH),
                     printer=Printer((
                         NAME,
                         Column("Ready", description="Number of the pod with ready state"),
                         AGE, CONTAINERS, IMAGES,
                     ), _statefulset_cells),
                     openapi_definition=APPS + "StatefulSet", protobuf="k8s.io.api.apps.v1.StatefulSet"),
    ]
