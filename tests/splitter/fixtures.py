"""Helpers for the splitter tests: a Deployment CRD for hubs without a Syncer, ClusterProfiles written
by hand (spec, then status through /status), and children's status written as a cluster would."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import yaml

from ..harness import Hub, Kubectl, wait_for

#: apps/v1 Deployment as a CRD, as the Syncer imports it (for tests without clusters): structural,
#: preserve-unknown-fields under spec and status, status and scale subresources, printer columns.
DEPLOYMENT_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "deployments.apps"},
    "spec": {
        "group": "apps", "scope": "Namespaced",
        "names": {"plural": "deployments", "singular": "deployment", "kind": "Deployment",
                  "listKind": "DeploymentList", "shortNames": ["deploy"], "categories": ["all"]},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                     "statusReplicasPath": ".status.replicas"}},
            "additionalPrinterColumns": [
                {"name": "Ready", "type": "integer", "jsonPath": ".status.readyReplicas"},
                {"name": "Desired", "type": "integer", "jsonPath": ".spec.replicas"},
                {"name": "Up-to-date", "type": "integer", "jsonPath": ".status.updatedReplicas"},
                {"name": "Available", "type": "integer", "jsonPath": ".status.availableReplicas"},
                {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                         "properties": {"replicas": {"type": "integer"}}},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                           "properties": {"replicas": {"type": "integer"}}}}}},
        }],
    },
}



def _apps_crd(kind: str, plural: str, short: str, columns: list[tuple[str, str]], scale: bool) -> dict[str, Any]:
    """An apps/v1 kind as the CRD a Syncer imports (structural, status subresource, columns)."""
    crd = copy.deepcopy(DEPLOYMENT_CRD)
    crd["metadata"]["name"] = f"{plural}.apps"
    crd["spec"]["names"] = {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": f"{kind}List",
                            "shortNames": [short], "categories": ["all"]}
    version = crd["spec"]["versions"][0]
    version["subresources"] = {"status": {}, **({"scale": version["subresources"]["scale"]} if scale else {})}
    version["additionalPrinterColumns"] = [{"name": n, "type": "integer", "jsonPath": p} for n, p in columns] + [
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    return crd


DAEMONSET_CRD = _apps_crd("DaemonSet", "daemonsets", "ds", [
    ("Desired", ".status.desiredNumberScheduled"), ("Current", ".status.currentNumberScheduled"),
    ("Ready", ".status.numberReady"), ("Up-to-date", ".status.updatedNumberScheduled"),
    ("Available", ".status.numberAvailable")], scale=False)
STATEFULSET_CRD = _apps_crd("StatefulSet", "statefulsets", "sts", [
    ("Ready", ".status.readyReplicas"), ("Replicas", ".spec.replicas")], scale=True)

TEMPLATE = {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                                     "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}


def deployment(name: str, replicas: int | None = 15, policy: Any = None, template: dict | None = None,
               **meta: Any) -> dict:
    annotations = dict(meta.pop("annotations", {}) or {})
    if policy is not None:
        annotations["placement.fleetplane.io/policy"] = policy if isinstance(policy, str) else yaml.safe_dump(policy)
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": "web"}}, "template": copy.deepcopy(template or TEMPLATE)}
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default", "annotations": annotations, **meta}, "spec": spec}


class Fleet:
    """One logical cluster of the test hub: Deployments, ClusterProfiles and the children."""

    def __init__(self, hub: Hub, tmp_path: Path, crd: bool = True) -> None:
        self.hub = hub
        self.lc = "sp-" + uuid.uuid4().hex[:8]
        self.kubeconfig = hub.kubeconfig_for(self.lc, tmp_path)
        self.kubectl = Kubectl(self.kubeconfig, namespace="default")
        if crd:
            code, body = self.api("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", DEPLOYMENT_CRD)
            assert code == 201, body
            wait_for(lambda: self.api("GET", "/apis/apps/v1/namespaces/default/deployments")[0] == 200, 10,
                     what="the Deployment CRD to be served")

    def serve(self, crd: dict) -> None:
        """Serve one more imported type (a CRD) in this logical cluster."""
        code, body = self.api("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        assert code == 201, body
        plural = crd["spec"]["names"]["plural"]
        wait_for(lambda: self.api("GET", f"/apis/apps/v1/namespaces/default/{plural}")[0] == 200, 10,
                 what=f"the {plural} CRD to be served")

    def obj(self, plural: str, name: str) -> dict | None:
        code, body = self.api("GET", f"/apis/apps/v1/namespaces/default/{plural}/{name}")
        return body if code == 200 else None

    def kids(self, plural: str, parent: str) -> dict[str, dict]:
        """The children (cluster -> object) of a parent of any apps kind."""
        code, body = self.api("GET", f"/apis/apps/v1/namespaces/default/{plural}?labelSelector=kcp.dev/owned-by%3D{parent}")
        assert code == 200, body
        return {o["metadata"]["labels"]["kcp.dev/cluster"]: o for o in body["items"]
                if not o["metadata"].get("deletionTimestamp")}

    def put_status(self, plural: str, child: dict, status: dict) -> dict:
        code, out = self.api("PATCH", f"/apis/apps/v1/namespaces/default/{plural}/{child['metadata']['name']}/status",
                             [{"op": "add", "path": "/status", "value": status}], "application/json-patch+json")
        assert code == 200, out
        return out

    def decision_of(self, plural: str, name: str) -> dict:
        raw = ((self.obj(plural, name) or {}).get("metadata", {}).get("annotations") or {}).get(
            "placement.fleetplane.io/decision")
        return json.loads(raw) if raw else {}

    def api(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> tuple[int, Any]:
        return self.hub.json(method, f"/clusters/{self.lc}{path}", body, content_type=content_type)

    # -- ClusterProfiles ----------------------------------------------------------------------------

    def profile(self, name: str, *, healthy: bool | None = True, labels: dict | None = None,
                properties: dict | None = None, annotations: dict | None = None, namespace: str = "default",
                reason: str = "") -> dict:
        path = f"/apis/multicluster.x-k8s.io/v1alpha1/namespaces/{namespace}/clusterprofiles"
        code, cur = self.api("GET", f"{path}/{name}")
        md = {"name": name, "namespace": namespace, "labels": labels or {}, "annotations": annotations or {}}
        if code == 404:
            code, cur = self.api("POST", path, {"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile",
                                                "metadata": md, "spec": {"clusterManager": {"name": "test"}}})
            assert code == 201, cur
        else:
            code, cur = self.api("PATCH", f"{path}/{name}", {"metadata": {"labels": labels or {},
                                                                           "annotations": annotations or {}}},
                                 "application/merge-patch+json")
            assert code == 200, cur
        status = "True" if healthy else "False" if healthy is False else "Unknown"
        prev = {c["type"]: c for c in (cur.get("status") or {}).get("conditions") or []}
        cond = {"type": "ControlPlaneHealthy", "status": status, "reason": reason or ("Healthy" if healthy else "Unreachable"),
                "message": "probe", "lastTransitionTime": prev.get("ControlPlaneHealthy", {}).get("lastTransitionTime")
                if prev.get("ControlPlaneHealthy", {}).get("status") == status else _now()}
        st = {"conditions": [cond], "properties": [{"name": k, "value": str(v)} for k, v in (properties or {}).items()]}
        code, out = self.api("PUT", f"{path}/{name}/status", {**cur, "status": st})
        assert code == 200, out
        return out

    def delete_profile(self, name: str, namespace: str = "default") -> None:
        code, out = self.api("DELETE", f"/apis/multicluster.x-k8s.io/v1alpha1/namespaces/{namespace}/clusterprofiles/{name}")
        assert code in (200, 202, 404), out

    # -- Deployments --------------------------------------------------------------------------------

    def apply(self, obj: dict) -> None:
        self.kubectl("apply", "-f", "-", stdin=json.dumps(obj))

    def get(self, name: str) -> dict | None:
        code, body = self.api("GET", f"/apis/apps/v1/namespaces/default/deployments/{name}")
        return body if code == 200 else None

    def patch(self, name: str, patch: dict) -> dict:
        code, body = self.api("PATCH", f"/apis/apps/v1/namespaces/default/deployments/{name}", patch,
                              "application/merge-patch+json")
        assert code == 200, body
        return body

    def children(self, parent: str) -> dict[str, dict]:
        code, body = self.api("GET", "/apis/apps/v1/namespaces/default/deployments?labelSelector=kcp.dev/owned-by%3D" + parent)
        assert code == 200, body
        return {o["metadata"]["labels"]["kcp.dev/cluster"]: o for o in body["items"]
                if not o["metadata"].get("deletionTimestamp")}

    def split(self, parent: str) -> dict[str, int]:
        return {c: o["spec"]["replicas"] for c, o in self.children(parent).items()}

    def wait_split(self, parent: str, want: dict[str, int], timeout: float = 15.0) -> dict[str, int]:
        return wait_for(lambda: self.split(parent) == want and self.split(parent), timeout, interval=0.1,
                        what=f"split of {parent} to be {want} (now {self.split(parent)})")

    def set_child_status(self, child: dict, ready: int | None = None, *, available: int | None = None,
                         conditions: list[dict] | None = None, observed: bool = True) -> dict:
        """Write a child's status as the cluster's Deployment controller would."""
        spec = child["spec"].get("replicas", 1)
        ready = spec if ready is None else ready
        available = ready if available is None else available
        st: dict[str, Any] = {"replicas": spec, "updatedReplicas": spec, "readyReplicas": ready,
                              "availableReplicas": available, "unavailableReplicas": max(0, spec - available)}
        if observed:
            st["observedGeneration"] = child["metadata"].get("generation", 1)
        conds = conditions or [
            {"type": "Available", "status": "True" if available >= spec else "False",
             "reason": "MinimumReplicasAvailable" if available >= spec else "MinimumReplicasUnavailable",
             "message": "Deployment has minimum availability." if available >= spec
             else "Deployment does not have minimum availability."},
            {"type": "Progressing", "status": "True",
             "reason": "NewReplicaSetAvailable" if available >= spec else "ReplicaSetUpdated", "message": "ok"}]
        st["conditions"] = conds
        code, out = self.api("PATCH", f"/apis/apps/v1/namespaces/default/deployments/{child['metadata']['name']}/status",
                             [{"op": "add", "path": "/status", "value": st}], "application/json-patch+json")
        assert code == 200, out
        return out

    def ready_all(self, parent: str) -> None:
        for child in self.children(parent).values():
            self.set_child_status(child)

    def conditions(self, name: str) -> dict[str, dict]:
        obj = self.get(name) or {}
        return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}

    def events(self, name: str) -> list[dict]:
        code, body = self.api("GET", f"/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3D{name}")
        assert code == 200, body
        return body["items"]

    def wait_reconciled(self, parent: str, timeout: float = 15.0) -> None:
        """Wait until the splitter has reconciled ``parent`` after a change made now: an unhealthy
        ClusterProfile (never eligible, so no split changes) appears in the decision annotation,
        which is written last, after the children. What a test then finds is what the splitter did,
        not what it had not done yet."""
        marker = "marker-" + uuid.uuid4().hex[:6]
        self.profile(marker, healthy=False)
        wait_for(lambda: marker in self.decision(parent).get("filtered", {}), timeout, interval=0.1,
                 what=f"the splitter to reconcile {parent} after ClusterProfile {marker} appeared")

    def decision(self, name: str) -> dict:
        raw = ((self.get(name) or {}).get("metadata", {}).get("annotations") or {}).get("placement.fleetplane.io/decision")
        return json.loads(raw) if raw else {}


def _now() -> str:
    import datetime as dt

    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class SplitterProcess:
    """``python -m fleetplane.fleet.splitter`` against a hub, with short grace periods."""

    def __init__(self, hub: Hub, log: Path, *args: str) -> None:
        self.log = log
        self._logf = open(log, "ab")  # noqa: SIM115
        cmd = [sys.executable, "-m", "fleetplane.fleet.splitter", "--kubeconfig", str(hub.kubeconfig),
               "--log-level", "debug", *args]
        self.proc = subprocess.Popen(cmd, stdout=self._logf, stderr=subprocess.STDOUT)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._logf.close()

    def alive(self) -> bool:
        return self.proc.poll() is None
