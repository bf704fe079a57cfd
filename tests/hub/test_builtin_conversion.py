"""An imported built-in kind served in two versions is converted by the built-in's own converters:
HorizontalPodAutoscalers stored in autoscaling/v2 read, listed, watched, patched and applied
through autoscaling/v1 (``targetCPUUtilizationPercentage`` <-> a cpu Utilization metric), as a
cluster's kube-apiserver serves them (every object sets minReplicas: the hub's HPA controller,
which also writes these HPAs' status, defaults it otherwise). The CRD is what the Syncer imports (conversion ``None``:
the hub knows the kind, so it does not convert by apiVersion alone)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..harness import Hub, Kubectl
from .test_watch import Stream

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
OPEN = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
REF = {"type": "object", "required": ["kind", "name"], "properties": {
    "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "name": {"type": "string"}}}
V2_SCHEMA = {"type": "object", "properties": {
    "spec": {"type": "object", "required": ["scaleTargetRef", "maxReplicas"], "properties": {
        "scaleTargetRef": REF, "minReplicas": {"type": "integer"}, "maxReplicas": {"type": "integer"},
        "metrics": {"type": "array", "items": OPEN}, "behavior": OPEN}},
    "status": OPEN}}
V1_SCHEMA = {"type": "object", "properties": {
    "spec": {"type": "object", "required": ["scaleTargetRef", "maxReplicas"], "properties": {
        "scaleTargetRef": REF, "minReplicas": {"type": "integer"}, "maxReplicas": {"type": "integer"},
        "targetCPUUtilizationPercentage": {"type": "integer"}}},
    "status": OPEN}}
HPA_CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "horizontalpodautoscalers.autoscaling",
                        "annotations": {"api-approved.kubernetes.io": "unapproved, imported"}},
           "spec": {"group": "autoscaling", "scope": "Namespaced", "conversion": {"strategy": "None"},
                    "names": {"plural": "horizontalpodautoscalers", "singular": "horizontalpodautoscaler",
                              "kind": "HorizontalPodAutoscaler", "shortNames": ["hpa"]},
                    "versions": [
                        {"name": "v2", "served": True, "storage": True, "subresources": {"status": {}},
                         "schema": {"openAPIV3Schema": V2_SCHEMA}},
                        {"name": "v1", "served": True, "storage": False, "subresources": {"status": {}},
                         "schema": {"openAPIV3Schema": V1_SCHEMA}}]}}


def cpu(percent: int) -> list[dict[str, Any]]:
    return [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": percent}}}]


class HPAs:
    def __init__(self, hub: Hub, cluster: str) -> None:
        self.hub, self.cluster = hub, cluster

    def path(self, version: str, name: str = "") -> str:
        base = f"/clusters/{self.cluster}/apis/autoscaling/{version}/namespaces/default/horizontalpodautoscalers"
        return f"{base}/{name}" if name else base

    def get(self, version: str, name: str = "") -> dict[str, Any]:
        code, body = self.hub.json("GET", self.path(version, name))
        assert code == 200, body
        return body  # type: ignore[no-any-return]

    def create_v1(self, name: str, percent: int, **spec: Any) -> dict[str, Any]:
        body = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": name},
                "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                         "minReplicas": 1, "maxReplicas": 5, "targetCPUUtilizationPercentage": percent, **spec}}
        code, out = self.hub.json("POST", self.path("v1"), body)
        assert code == 201, out
        return out  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def hpas(hub: Hub) -> Iterator[HPAs]:
    cluster = "bconv-" + uuid.uuid4().hex[:6]
    code, out = hub.json("POST", f"/clusters/{cluster}{CRDS}", HPA_CRD)
    assert code == 201, out
    yield HPAs(hub, cluster)


def test_a_v1_write_is_stored_as_v2_and_read_in_both(hpas: HPAs):
    created = hpas.create_v1("w1", 60, minReplicas=2)
    assert created["apiVersion"] == "autoscaling/v1"
    assert created["spec"]["targetCPUUtilizationPercentage"] == 60 and "metrics" not in created["spec"]
    v2 = hpas.get("v2", "w1")
    assert v2["apiVersion"] == "autoscaling/v2"
    assert v2["spec"]["metrics"] == cpu(60) and "targetCPUUtilizationPercentage" not in v2["spec"]
    assert v2["spec"]["minReplicas"] == 2 and v2["metadata"]["uid"] == created["metadata"]["uid"]
    assert hpas.get("v1", "w1")["spec"]["targetCPUUtilizationPercentage"] == 60
    # a v2 object with metrics v1 cannot hold: kept in v1's annotation, back in v2 unchanged
    memory = {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}}
    body = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "w2"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "minReplicas": 1, "maxReplicas": 4, "metrics": [*cpu(70), memory]}}
    code, out = hpas.hub.json("POST", hpas.path("v2"), body)
    assert code == 201, out
    v1 = hpas.get("v1", "w2")
    assert v1["spec"]["targetCPUUtilizationPercentage"] == 70
    assert json.loads(v1["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"]) == [memory]
    # written back through v1 as read: v2 still has both metrics, and no v1 annotation (the hub's
    # HPA controller may write the object's status meanwhile: retried on conflict, as clients do)
    for _ in range(10):
        code, out = hpas.hub.json("PUT", hpas.path("v1", "w2"), hpas.get("v1", "w2"))
        if code != 409:
            break
    assert code == 200, out
    again = hpas.get("v2", "w2")
    assert again["spec"]["metrics"] == [*cpu(70), memory]
    assert "autoscaling.alpha.kubernetes.io/metrics" not in (again["metadata"].get("annotations") or {})


def test_lists_and_watches_in_v1_are_converted(hpas: HPAs):
    hpas.create_v1("l1", 41)
    listed = hpas.get("v1")
    assert listed["apiVersion"] == "autoscaling/v1" and listed["kind"] == "HorizontalPodAutoscalerList"
    by_name = {i["metadata"]["name"]: i for i in listed["items"]}
    assert by_name["l1"]["spec"]["targetCPUUtilizationPercentage"] == 41
    assert all(i["apiVersion"] == "autoscaling/v1" and "metrics" not in i["spec"] for i in listed["items"])
    stream = Stream(hpas.hub, hpas.path("v1") + "?watch=true&fieldSelector=metadata.name%3Dl2")
    try:
        body = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "l2"},
                "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 1, "maxReplicas": 3,
                         "metrics": cpu(33)}}
        code, out = hpas.hub.json("POST", hpas.path("v2"), body)
        assert code == 201, out
        events = stream.wait(1, 20)
        assert events[0]["type"] == "ADDED" and events[0]["object"]["apiVersion"] == "autoscaling/v1"
        assert events[0]["object"]["spec"]["targetCPUUtilizationPercentage"] == 33
    finally:
        stream.close()


def test_patches_in_v1_convert(hpas: HPAs):
    hpas.create_v1("p1", 50)
    code, out = hpas.hub.json("PATCH", hpas.path("v1", "p1"), {"spec": {"targetCPUUtilizationPercentage": 75}},
                              content_type="application/merge-patch+json")
    assert code == 200, out
    assert out["apiVersion"] == "autoscaling/v1" and out["spec"]["targetCPUUtilizationPercentage"] == 75
    assert hpas.get("v2", "p1")["spec"]["metrics"] == cpu(75)
    # a strategic merge patch too: the imported built-in takes it, with v1's patch metadata
    code, out = hpas.hub.json("PATCH", hpas.path("v1", "p1"), {"spec": {"maxReplicas": 9}},
                              content_type="application/strategic-merge-patch+json")
    assert code == 200, out
    assert hpas.get("v2", "p1")["spec"]["maxReplicas"] == 9


def test_kubectl_applies_and_prints_v1(hpas: HPAs, tmp_path: Path):
    k = Kubectl(hpas.hub.kubeconfig_for(hpas.cluster, tmp_path), minor="1.28", namespace="default")
    manifest = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "a1"},
                "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                         "minReplicas": 1, "maxReplicas": 6, "targetCPUUtilizationPercentage": 55}}
    k("apply", "--server-side", "-f", "-", stdin=json.dumps(manifest))
    assert hpas.get("v2", "a1")["spec"]["metrics"] == cpu(55)
    manifest["spec"]["targetCPUUtilizationPercentage"] = 65  # type: ignore[index]
    k("apply", "--server-side", "-f", "-", stdin=json.dumps(manifest))
    assert hpas.get("v2", "a1")["spec"]["metrics"] == cpu(65)
    k("apply", "-f", "-", stdin=json.dumps({**manifest, "metadata": {"name": "a2"}}))  # client-side apply
    assert hpas.get("v2", "a2")["spec"]["metrics"] == cpu(65)
    # printed in v1 with the built-in's columns, the target read from the v1 field
    rows = k("get", "horizontalpodautoscalers.v1.autoscaling", "a1").out.splitlines()
    assert rows[0].split() == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
    assert rows[1].split()[:6] == ["a1", "Deployment/web", "cpu:", "<unknown>/65%", "1", "6"], rows


def test_a_version_the_hub_cannot_convert_is_a_500(hub: Hub):
    """A hand-written CRD serving a version fleetplane has no converter for (an old cluster's
    v2beta2): reads in it fail as kube's conversion failures do; the other versions still work."""
    cluster = "bconv-" + uuid.uuid4().hex[:6]
    crd = json.loads(json.dumps(HPA_CRD))
    crd["spec"]["versions"].append({"name": "v2beta2", "served": True, "storage": False,
                                    "schema": {"openAPIV3Schema": V2_SCHEMA}})
    code, out = hub.json("POST", f"/clusters/{cluster}{CRDS}", crd)
    assert code == 201, out
    hpas = HPAs(hub, cluster)
    hpas.create_v1("x1", 20)
    code, out = hub.json("GET", hpas.path("v2beta2", "x1"))
    assert code == 500, out
    assert out["message"] == ("conversion for autoscaling/v2, Kind=HorizontalPodAutoscaler failed: "
                              "no conversion known for autoscaling/v2beta2, Kind=HorizontalPodAutoscaler")
    code, out = hub.json("GET", hpas.path("v2beta2"))
    assert code == 500 and "Kind=HorizontalPodAutoscalerList failed" in out["message"], out
    assert hpas.get("v1", "x1")["spec"]["targetCPUUtilizationPercentage"] == 20
