"""CRD conversion webhooks against a real HTTPS ConversionReview server the test starts: a
two-version CRD read, listed, watched and written through both versions, and the webhook failing."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..admission.webhook_server import Hangup, WebhookServer
from ..harness import Hub, Kubectl
from .test_watch import Stream

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
V1_SCHEMA = {"type": "object", "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}
V2_SCHEMA = {"type": "object", "properties": {"spec": {"type": "object", "properties": {"size": {
    "type": "object", "properties": {"value": {"type": "integer"}, "unit": {"type": "string"}}}}}}}


def to_version(obj: dict[str, Any], api_version: str) -> dict[str, Any]:
    """The test's converter: v1 ``size: 3`` is v2 ``size: {value: 3, unit: cm}``."""
    out = dict(obj, apiVersion=api_version)
    spec = dict(obj.get("spec") or {})
    if api_version.endswith("/v2") and isinstance(spec.get("size"), int):
        spec["size"] = {"value": spec["size"], "unit": "cm"}
    elif api_version.endswith("/v1") and isinstance(spec.get("size"), dict):
        spec["size"] = spec["size"]["value"]
    spec["leftover"] = "neither version has this field"  # pruned by the hub, as kube's schema coercer does
    out["spec"] = spec
    meta = dict(obj["metadata"])
    meta["annotations"] = dict(meta.get("annotations") or {}, **{"example.com/converted-from": obj["apiVersion"]})
    meta["generation"] = 99  # not labels or annotations: the hub restores it
    out["metadata"] = meta
    return out


def convert(review: dict[str, Any]) -> dict[str, Any]:
    request = review["request"]
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": {
        "uid": request["uid"], "result": {"status": "Success"},
        "convertedObjects": [to_version(o, request["desiredAPIVersion"]) for o in request["objects"]]}}


@pytest.fixture(scope="module")
def webhook() -> Iterator[WebhookServer]:
    with WebhookServer() as server:
        server.handle("/convert", convert)
        yield server


def gear_crd(webhook: WebhookServer, path: str = "/convert") -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gears.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "gears", "kind": "Gear"},
                     "conversion": {"strategy": "Webhook", "webhook": {
                         "clientConfig": webhook.client_config(path), "conversionReviewVersions": ["v1"]}},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": V1_SCHEMA}},
                                  {"name": "v2", "served": True, "storage": False, "schema": {"openAPIV3Schema": V2_SCHEMA}}]}}


class Gears:
    """The Gear endpoints of one logical cluster, per version."""

    def __init__(self, hub: Hub, cluster: str) -> None:
        self.hub = hub
        self.cluster = cluster

    def path(self, version: str, name: str = "") -> str:
        base = f"/clusters/{self.cluster}/apis/example.com/{version}/namespaces/default/gears"
        return f"{base}/{name}" if name else base

    def create(self, version: str, name: str, size: Any) -> dict[str, Any]:
        code, body = self.hub.json("POST", self.path(version), {
            "apiVersion": f"example.com/{version}", "kind": "Gear", "metadata": {"name": name}, "spec": {"size": size}})
        assert code == 201, body
        return body

    def get(self, version: str, name: str = "") -> tuple[int, Any]:
        return self.hub.json("GET", self.path(version, name))


def new_cluster(hub: Hub, webhook: WebhookServer, path: str = "/convert") -> Gears:
    cluster = "cv-" + uuid.uuid4().hex[:8]
    code, body = hub.json("POST", f"/clusters/{cluster}{CRDS}", gear_crd(webhook, path))
    assert code == 201, body
    assert body["spec"]["conversion"]["webhook"]["conversionReviewVersions"] == ["v1"]
    return Gears(hub, cluster)


@pytest.fixture
def gears(hub: Hub, webhook: WebhookServer) -> Gears:
    return new_cluster(hub, webhook)


def reviews_for(webhook: WebhookServer, path: str, name: str) -> list[dict[str, Any]]:
    return [r for r in webhook.reviews(path) if any(o["metadata"]["name"] == name for o in r["request"]["objects"])]


def test_read_in_the_other_version_goes_through_the_webhook(gears: Gears, webhook: WebhookServer):
    created = gears.create("v1", "g1", 3)
    assert created["apiVersion"] == "example.com/v1" and created["spec"] == {"size": 3}
    assert reviews_for(webhook, "/convert", "g1") == []  # the storage version needs no conversion

    code, got = gears.get("v2", "g1")
    assert code == 200, got
    assert got["apiVersion"] == "example.com/v2" and got["spec"] == {"size": {"value": 3, "unit": "cm"}}
    assert got["metadata"]["annotations"]["example.com/converted-from"] == "example.com/v1"
    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    assert got["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert got["metadata"]["generation"] == created["metadata"]["generation"]  # restored, not the webhook's 99
    (review,) = reviews_for(webhook, "/convert", "g1")
    assert review["apiVersion"] == "apiextensions.k8s.io/v1" and review["kind"] == "ConversionReview"
    assert review["request"]["desiredAPIVersion"] == "example.com/v2" and review["request"]["uid"]
    assert [o["apiVersion"] for o in review["request"]["objects"]] == ["example.com/v1"]
    assert review["_query"] == "timeout=30s"
    assert gears.get("v1", "g1")[1]["spec"] == {"size": 3}
    metrics = gears.hub.request("GET", "/metrics")[2].decode()
    assert ('apiserver_crd_conversion_webhook_duration_seconds_count{crd_name="gears.example.com",from_version="v1",'
            'succeeded="true",to_version="v2"}') in metrics
    assert 'apiserver_conversion_webhook_request_total{failure_type="",result="success"}' in metrics


def test_write_in_the_other_version_is_stored_in_the_storage_version(gears: Gears, webhook: WebhookServer):
    created = gears.create("v2", "g2", {"value": 5, "unit": "cm"})
    assert created["apiVersion"] == "example.com/v2" and created["spec"]["size"] == {"value": 5, "unit": "cm"}
    to_storage = [r for r in reviews_for(webhook, "/convert", "g2") if r["request"]["desiredAPIVersion"] == "example.com/v1"]
    assert len(to_storage) == 1
    _, stored = gears.get("v1", "g2")
    assert stored["spec"] == {"size": 5} and stored["apiVersion"] == "example.com/v1"

    code, patched = gears.hub.json("PATCH", gears.path("v2", "g2"), {"spec": {"size": {"value": 7, "unit": "cm"}}},
                                   content_type="application/merge-patch+json")
    assert code == 200, patched
    assert patched["spec"]["size"] == {"value": 7, "unit": "cm"}
    assert gears.get("v1", "g2")[1]["spec"] == {"size": 7}
    patched["spec"]["size"]["value"] = 8
    code, replaced = gears.hub.json("PUT", gears.path("v2", "g2"), patched)
    assert code == 200, replaced
    assert gears.get("v1", "g2")[1]["spec"] == {"size": 8}
    assert gears.hub.json("DELETE", gears.path("v2", "g2"))[0] == 200
    assert gears.get("v1", "g2")[0] == 404


def test_list_converts_in_one_review_and_watch_converts_events(gears: Gears, webhook: WebhookServer):
    gears.create("v1", "l1", 1)
    gears.create("v1", "l2", 2)
    code, listed = gears.get("v2")
    assert code == 200, listed
    assert listed["apiVersion"] == "example.com/v2" and listed["kind"] == "GearList"
    assert [(i["metadata"]["name"], i["spec"]["size"]["value"]) for i in listed["items"]] == [("l1", 1), ("l2", 2)]
    both = [r for r in reviews_for(webhook, "/convert", "l1") if len(r["request"]["objects"]) == 2]
    assert len(both) == 1

    stream = Stream(gears.hub, gears.path("v2") + "?watch=true")
    try:
        events = stream.wait(2)
        assert [e["object"]["spec"]["size"] for e in events[:2]] == [{"value": 1, "unit": "cm"}, {"value": 2, "unit": "cm"}]
        gears.create("v1", "l3", 3)
        events = stream.wait(3)
        assert events[2]["type"] == "ADDED" and events[2]["object"]["apiVersion"] == "example.com/v2"
        assert events[2]["object"]["spec"]["size"] == {"value": 3, "unit": "cm"}
    finally:
        stream.close()


def test_kubectl_reads_both_versions(hub: Hub, gears: Gears, tmp_path: Path):
    gears.create("v1", "k1", 4)
    k = Kubectl(hub.kubeconfig_for(gears.cluster, tmp_path), namespace="default")
    assert k.get_json("gears.v2.example.com", "k1")["spec"]["size"] == {"value": 4, "unit": "cm"}
    assert k.get_json("gears.v1.example.com", "k1")["spec"]["size"] == 4
    assert "k1" in k("get", "gears.v2.example.com").out
    manifest = ("apiVersion: example.com/v2\nkind: Gear\nmetadata:\n  name: k2\nspec:\n"
                "  size:\n    value: 6\n    unit: cm\n")
    assert k("apply", "-f", "-", stdin=manifest).out.strip() == "gear.example.com/k2 created"
    assert k("apply", "--server-side", "-f", "-", stdin=manifest.replace("6", "9")).out.strip() == "gear.example.com/k2 serverside-applied"
    assert gears.get("v1", "k2")[1]["spec"] == {"size": 9}


@pytest.mark.parametrize("failure, message, failure_type", [
    (lambda review: {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": {
        "uid": review["request"]["uid"], "result": {"status": "Failure", "message": "cannot convert gears today"}}},
     "conversion webhook for example.com/v1, Kind=Gear failed: cannot convert gears today", "malformed_response"),
    (lambda review: {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": {
        "uid": "not-the-request", "result": {"status": "Success"}, "convertedObjects": []}},
     'expected response.uid="', "malformed_response"),
    (lambda review: {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": {
        "uid": review["request"]["uid"], "result": {"status": "Success"}, "convertedObjects": []}},
     "conversion for example.com/v1, Kind=Gear returned 0 objects, expected 1", "partial_response"),
    (lambda review: convert(review) | {"response": convert(review)["response"] | {"convertedObjects": [
        dict(o, metadata=dict(o["metadata"], name="other")) for o in convert(review)["response"]["convertedObjects"]]}},
     "returned invalid converted object at index 1: must have the same name: f1 != other", "invalid_converted_object"),
    (lambda review: b"<html>not json</html>", "conversion webhook for example.com/v1, Kind=Gear failed:", "call"),
    (lambda review: (_ for _ in ()).throw(Hangup()), 'conversion webhook for example.com/v1, Kind=Gear failed: Post "https://127.0.0.1:',
     "call"),
])
def test_a_failing_webhook_fails_only_the_other_version(hub: Hub, webhook: WebhookServer, failure, message: str,
                                                         failure_type: str):
    path = "/fail-" + uuid.uuid4().hex[:6]
    webhook.handle(path, convert)
    gears = new_cluster(hub, webhook, path)
    gears.create("v1", "f1", 1)
    assert gears.get("v2", "f1")[0] == 200
    webhook.handle(path, failure)

    code, status = gears.get("v2", "f1")
    assert code == 500 and status["kind"] == "Status" and status["code"] == 500, status
    assert message in status["message"] and status["message"].startswith("conversion for example.com/v1, Kind=Gear"), status
    code, status = gears.get("v2")
    assert code == 500 and "conversion for example.com/v2, Kind=GearList" in status["message"], status
    code, status = gears.hub.json("POST", gears.path("v2"), {"apiVersion": "example.com/v2", "kind": "Gear",
                                                             "metadata": {"name": "f2"}, "spec": {"size": {"value": 2}}})
    assert code == 500, status
    assert gears.get("v2", "f2")[0] == 404 and gears.get("v1", "f2")[0] == 404  # nothing half-written
    # the storage version is served and written without the webhook
    assert gears.get("v1", "f1")[1]["spec"] == {"size": 1}
    assert [i["metadata"]["name"] for i in gears.get("v1")[1]["items"]] == ["f1"]
    gears.create("v1", "f3", 3)
    metrics = hub.request("GET", "/metrics")[2].decode()
    assert f'apiserver_conversion_webhook_request_total{{failure_type="conversion_webhook_{failure_type}_failure",result="failure"}}' in metrics


def test_a_watch_in_the_other_version_ends_with_the_failure(hub: Hub, webhook: WebhookServer):
    path = "/watch-" + uuid.uuid4().hex[:6]
    webhook.handle(path, convert)
    gears = new_cluster(hub, webhook, path)
    stream = Stream(hub, gears.path("v2") + "?watch=true")
    try:
        gears.create("v1", "w1", 1)
        assert stream.wait(1)[0]["object"]["spec"]["size"] == {"value": 1, "unit": "cm"}
        webhook.handle(path, lambda review: b"garbage")
        gears.create("v1", "w2", 2)
        events = stream.wait(2)
        assert events[1]["type"] == "ERROR" and events[1]["object"]["code"] == 500
        assert "conversion webhook for example.com/v1, Kind=Gear failed" in events[1]["object"]["message"]
        assert stream.ended.wait(10)
    finally:
        stream.close()


@pytest.mark.parametrize("conversion, messages", [
    ({"strategy": "Webhook"}, ["spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
                               "spec.conversion.conversionReviewVersions: Required value"]),
    ({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "http://127.0.0.1/convert"}, "conversionReviewVersions": ["v1"]}},
     ["spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; "
      "desired format: https://host[/path]"]),
    ({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://127.0.0.1/convert"}, "conversionReviewVersions": ["v3"]}},
     ['spec.conversion.conversionReviewVersions: Invalid value: []string{"v3"}: must include at least one of v1, v1beta1']),
    ({"strategy": "Webhook", "webhook": {"clientConfig": {}, "conversionReviewVersions": ["v1"]}},
     ["spec.conversion.webhookClientConfig: Required value: exactly one of url or service is required"]),
    ({"strategy": "Webhook", "webhook": {"clientConfig": {"service": {"namespace": "default"}}, "conversionReviewVersions": ["v1"]}},
     ["spec.conversion.webhookClientConfig.service.name: Required value"]),
    ({"strategy": "Sometimes"}, ['spec.conversion.strategy: Unsupported value: "Sometimes"']),
])
def test_conversion_settings_are_validated(hub: Hub, webhook: WebhookServer, conversion: dict, messages: list[str]):
    crd = gear_crd(webhook)
    crd["spec"]["conversion"] = conversion
    code, status = hub.json("POST", f"/clusters/cv-bad-{uuid.uuid4().hex[:6]}{CRDS}", crd)
    assert code == 422 and all(m in status["message"] for m in messages), status
