"""The DaemonSet, StatefulSet and PersistentVolumeClaim strategies: kube's defaults and
validation messages (``pkg/apis/apps/v1/defaults.go``, ``pkg/apis/apps/validation``,
``pkg/apis/core/validation``)."""

from __future__ import annotations

import copy

from fleetplane.apis.apps import TEMPLATE_GENERATION, DaemonSetStrategy, StatefulSetStrategy
from fleetplane.apis.core.pvc import PersistentVolumeClaimStrategy


def _template() -> dict:
    return {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def _obj(**spec: object) -> dict:
    return {"metadata": {"name": "a", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": _template(), **spec}}


def _errors(strategy: object, obj: dict, old: dict | None = None) -> list[str]:
    s = strategy
    s.default(obj)  # type: ignore[attr-defined]
    errs = s.validate(obj) if old is None else s.validate_update(obj, old)  # type: ignore[attr-defined]
    return [str(e) for e in errs]


def test_daemonset_defaults_and_template_generation():
    s = DaemonSetStrategy()
    obj = _obj()
    s.default(obj)
    assert obj["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    assert obj["spec"]["revisionHistoryLimit"] == 10
    assert obj["spec"]["template"]["spec"]["restartPolicy"] == "Always"
    s.prepare_for_create(obj)
    assert obj["status"] == {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0}
    assert obj["metadata"]["annotations"][TEMPLATE_GENERATION] == "1"
    same = copy.deepcopy(obj)
    s.prepare_for_update(same, obj)
    assert same["metadata"]["annotations"][TEMPLATE_GENERATION] == "1"
    changed = copy.deepcopy(obj)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:2"
    s.prepare_for_update(changed, obj)
    assert changed["metadata"]["annotations"][TEMPLATE_GENERATION] == "2"


def test_daemonset_validation():
    s = DaemonSetStrategy()
    assert _errors(s, _obj()) == []
    assert _errors(s, _obj(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}})) == [
        "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 1: may not be set when maxUnavailable is non-zero"]
    assert _errors(s, _obj(updateStrategy={"type": "Sometimes"})) == [
        'spec.updateStrategy: Unsupported value: "Sometimes": supported values: "RollingUpdate", "OnDelete"']
    assert _errors(s, _obj(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "120%"}})) == [
        'spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "120%": must not be greater than 100%']
    obj = _obj()
    del obj["spec"]["selector"]  # no selector selects nothing
    assert _errors(s, obj) == ['spec.template.metadata.labels: Invalid value: map[string]string{"app":"a"}: '
                               '`selector` does not match template `labels`']
    obj = _obj()
    obj["spec"]["template"]["spec"]["activeDeadlineSeconds"] = 5
    assert _errors(s, obj) == ["spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in DaemonSet is not Supported"]
    obj = _obj()
    obj["spec"]["template"]["spec"]["containers"] = []
    assert _errors(s, obj) == ["spec.template.spec.containers: Required value"]
    old = _obj()
    s.default(old)
    new = _obj(selector={"matchLabels": {"app": "a", "x": "y"}})
    new["spec"]["template"]["metadata"]["labels"]["x"] = "y"
    assert any(e.startswith("spec.selector: Invalid value:") and e.endswith("field is immutable") for e in _errors(s, new, old))


def test_statefulset_defaults():
    s = StatefulSetStrategy()
    obj = _obj(volumeClaimTemplates=[{"metadata": {"name": "data"},
                                      "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}])
    s.default(obj)
    spec = obj["spec"]
    assert (spec["replicas"], spec["podManagementPolicy"], spec["revisionHistoryLimit"]) == (1, "OrderedReady", 10)
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    claim = spec["volumeClaimTemplates"][0]
    assert (claim["apiVersion"], claim["kind"], claim["spec"]["volumeMode"]) == ("v1", "PersistentVolumeClaim", "Filesystem")
    assert claim["status"] == {"phase": "Pending"}  # as kube shows claim templates
    ondelete = _obj(updateStrategy={"type": "OnDelete"})
    s.default(ondelete)
    assert ondelete["spec"]["updateStrategy"] == {"type": "OnDelete"}
    s.prepare_for_create(obj)
    assert obj["status"] == {"replicas": 0, "availableReplicas": 0}


def test_statefulset_validation():
    s = StatefulSetStrategy()
    assert _errors(s, _obj(serviceName="web")) == []
    assert _errors(s, _obj(ordinals={"start": -2})) == ["spec.ordinals.start: Invalid value: -2: must be greater than or equal to 0"]
    assert _errors(s, _obj(podManagementPolicy="Random")) == [
        "spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'"]
    assert _errors(s, _obj(updateStrategy={"type": "OnDelete", "rollingUpdate": {"partition": 1}})) == [
        "spec.updateStrategy.rollingUpdate: Invalid value: {\"partition\":1}: only allowed for updateStrategy 'RollingUpdate'"]
    assert _errors(s, _obj(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": -1}})) == [
        "spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: must be greater than or equal to 0"]
    assert _errors(s, _obj(persistentVolumeClaimRetentionPolicy={"whenScaled": "Keep"})) == [
        'spec.persistentVolumeClaimRetentionPolicy.whenScaled: Unsupported value: "Keep": supported values: "Retain", "Delete"']
    obj = _obj()
    obj["metadata"]["name"] = "web.a"
    assert _errors(s, obj)[0].startswith('metadata.name: Invalid value: "web.a": a lowercase RFC 1123 label')
    obj = _obj()
    obj["spec"]["template"]["spec"]["activeDeadlineSeconds"] = 5
    assert _errors(s, obj) == ["spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in StatefulSet is not Supported"]
    obj = _obj()
    obj["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    assert _errors(s, obj) == ['spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"']
    # as kube, neither the pod spec nor the claim templates nor the service name are checked here:
    # the controller's pod and claim creations report them (FailedCreate Events)
    obj = _obj(serviceName="Web_1", volumeClaimTemplates=[{"metadata": {"name": "d"}, "spec": {}}])
    obj["spec"]["template"]["spec"]["containers"] = []
    assert _errors(s, obj) == []
    old = _obj()
    s.default(old)
    scaled = copy.deepcopy(old)
    scaled["spec"]["replicas"] = 5
    scaled["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:2"
    assert _errors(s, scaled, old) == []
    renamed = copy.deepcopy(old)
    renamed["spec"]["serviceName"] = "other"
    assert _errors(s, renamed, old) == [
        "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
        "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"]


def _claim(**spec: object) -> dict:
    return {"metadata": {"name": "c", "namespace": "default"}, "spec": {"accessModes": ["ReadWriteOnce"],
                                                                        "resources": {"requests": {"storage": "1Gi"}}, **spec}}


def test_pvc_defaults_validation_and_updates():
    s = PersistentVolumeClaimStrategy()
    claim = _claim()
    s.default(claim)
    assert claim["spec"]["volumeMode"] == "Filesystem"
    s.prepare_for_create(claim)
    assert claim["status"] == {"phase": "Pending"}
    assert _errors(s, _claim(accessModes=[])) == ["spec.accessModes: Required value: at least 1 access mode is required"]
    assert _errors(s, _claim(accessModes=["ReadWriteSometimes"])) == [
        'spec.accessModes: Unsupported value: "ReadWriteSometimes": supported values: '
        '"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"']
    assert _errors(s, _claim(resources={})) == ["spec.resources[storage]: Required value"]
    assert _errors(s, _claim(volumeMode="Disk")) == ['spec.volumeMode: Unsupported value: "Disk": supported values: "Block", "Filesystem"']
    old = _claim()
    s.default(old)
    binding = copy.deepcopy(old)
    binding["spec"]["volumeName"] = "pvc-1"
    assert _errors(s, binding, old) == []  # volumeName is set once, by the binder
    changed = copy.deepcopy(binding)
    changed["spec"]["accessModes"] = ["ReadWriteMany"]
    assert _errors(s, changed, binding) == [
        "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"]
    bound = copy.deepcopy(binding)
    bound["status"] = {"phase": "Bound"}
    grown = copy.deepcopy(bound)
    grown["spec"]["resources"]["requests"]["storage"] = "2Gi"
    assert _errors(s, grown, bound) == []
    shrunk = copy.deepcopy(bound)
    shrunk["spec"]["resources"]["requests"]["storage"] = "500Mi"
    assert _errors(s, shrunk, bound) == ["spec.resources.requests.storage: Forbidden: field can not be less than previous value"]
