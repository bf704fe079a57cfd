"""PersistentVolumeClaims on a simulated cluster, driven with kubectl: bound by the toy provisioner
(``pvc-<uid>``, capacity = request), kube 1.32's columns, validation, resizing, deletion (held by the
pvc-protection finalizer while a pod uses the claim)."""

from __future__ import annotations

import textwrap

from ..harness import Kubectl, wait_for


def _claim(name: str, storage: str = "1Gi", modes: str = "[ReadWriteOnce]", extra: str = "") -> str:
    return textwrap.dedent(f"""\
        apiVersion: v1
        kind: PersistentVolumeClaim
        metadata: {{name: {name}}}
        spec:
          accessModes: {modes}
          resources: {{requests: {{storage: {storage}}}}}
        """) + extra


def _bound(k: Kubectl, name: str) -> dict:
    return wait_for(lambda: (c := k.get_json("pvc", name)) and c["status"].get("phase") == "Bound" and c, 30,
                    what=f"claim {name} bound")


def test_claim_is_bound_and_printed(kubectl: Kubectl, ns: str):
    assert kubectl("apply", "-f", "-", stdin=_claim("data", "1024Mi", extra="  storageClassName: fast\n")).out.strip() == \
        "persistentvolumeclaim/data created"
    claim = _bound(kubectl, "data")
    assert claim["spec"]["volumeName"] == f"pvc-{claim['metadata']['uid']}"
    assert claim["spec"]["volumeMode"] == "Filesystem"
    assert claim["spec"]["resources"]["requests"]["storage"] == "1Gi"  # stored canonically
    assert claim["status"] == {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}}
    assert claim["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
    rows = [line.split() for line in kubectl("get", "pvc").out.strip().splitlines()]
    assert rows[0] == ["NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS", "MODES", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "AGE"]
    assert rows[1][:7] == ["data", "Bound", claim["spec"]["volumeName"], "1Gi", "RWO", "fast", "<unset>"]
    assert kubectl("get", "pvc", "-o", "wide").out.splitlines()[1].split()[-1] == "Filesystem"
    events = kubectl.get_json("events", "--field-selector", "involvedObject.name=data")["items"]
    assert [(e["reason"], e["source"]["component"]) for e in events] == [("ProvisioningSucceeded", "persistentvolume-controller")]
    assert "pvc " in kubectl("api-resources").out

    # a bound claim may grow (the toy provisioner grows it at once), never shrink; the rest is immutable
    kubectl("patch", "pvc", "data", "-p", '{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}')
    wait_for(lambda: kubectl.get_json("pvc", "data")["status"]["capacity"]["storage"] == "2Gi", 30, what="the claim resized")
    err = kubectl.fail("patch", "pvc", "data", "-p", '{"spec":{"resources":{"requests":{"storage":"1Gi"}}}}').err
    assert "spec.resources.requests.storage: Forbidden: field can not be less than previous value" in err
    err = kubectl.fail("patch", "pvc", "data", "-p", '{"spec":{"accessModes":["ReadWriteMany"]}}').err
    assert "spec: Forbidden: spec is immutable after creation except resources.requests" in err

    kubectl("delete", "pvc", "data")
    assert kubectl("get", "pvc", "-o", "name").out.strip() == ""


def test_a_claim_in_use_waits_for_its_pod(kubectl: Kubectl):
    kubectl("apply", "-f", "-", stdin=_claim("used"))
    assert _bound(kubectl, "used")["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    kubectl("apply", "-f", "-", stdin=textwrap.dedent("""\
        apiVersion: v1
        kind: Pod
        metadata: {name: user}
        spec:
          containers: [{name: c, image: busybox, volumeMounts: [{name: v, mountPath: /v}]}]
          volumes: [{name: v, persistentVolumeClaim: {claimName: used}}]
        """))
    kubectl("wait", "--for=condition=Ready", "pod/user", "--timeout=30s")
    kubectl("delete", "pvc", "used", "--wait=false")
    assert kubectl("get", "pvc", "used").out.splitlines()[1].split()[:2] == ["used", "Terminating"]
    assert kubectl.get_json("pvc", "used")["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    assert "Used By:       user" in kubectl("describe", "pvc", "used").out
    kubectl("delete", "pod", "user")
    wait_for(lambda: kubectl("get", "pvc", "-o", "name").out.strip() == "", 30, what="the claim to go with its last user")


def test_validation(kubectl: Kubectl):
    err = kubectl.fail("apply", "-f", "-", stdin=_claim("bad", modes="[]")).err
    assert "spec.accessModes: Required value: at least 1 access mode is required" in err
    bad = _claim("bad").replace("  resources: {requests: {storage: 1Gi}}\n", "")
    assert "spec.resources[storage]: Required value" in kubectl.fail("apply", "-f", "-", stdin=bad).err
    err = kubectl.fail("apply", "-f", "-", stdin=_claim("bad", modes="[ReadWriteSometimes]")).err
    assert 'spec.accessModes: Unsupported value: "ReadWriteSometimes"' in err
    err = kubectl.fail("apply", "-f", "-", stdin=_claim("bad", storage="lots")).err
    assert "quantities must match the regular expression" in err
