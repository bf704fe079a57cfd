"""What the hub accepts from a conversion webhook, and the CRD's conversion settings, without a server."""

from __future__ import annotations

import pytest

from fleetplane.apimachinery.errors import StatusError
from fleetplane.registry import conversion

ORIGINAL = {"apiVersion": "example.com/v1", "kind": "Gear", "spec": {"size": 1},
            "metadata": {"name": "g", "namespace": "default", "uid": "u-1", "resourceVersion": "7", "generation": 2,
                         "labels": {"a": "1"}, "annotations": {"keep": "x"}}}


def converted(**meta) -> dict:
    return {"apiVersion": "example.com/v2", "kind": "Gear", "spec": {"size": {"value": 1}},
            "metadata": {**ORIGINAL["metadata"], **meta}}


def check(obj: dict) -> dict:
    return conversion._checked(ORIGINAL, obj, "example.com/v2", "conversion for example.com/v1, Kind=Gear returned", 1)


def test_labels_and_annotations_come_from_the_webhook_the_rest_from_the_original():
    got = check(converted(labels={"b": "2"}, annotations=None, generation=99, resourceVersion="1"))
    assert got["metadata"] == {"name": "g", "namespace": "default", "uid": "u-1", "resourceVersion": "7",
                               "generation": 2, "labels": {"b": "2"}}
    assert got["spec"] == {"size": {"value": 1}} and got["apiVersion"] == "example.com/v2"


@pytest.mark.parametrize("obj, message", [
    (converted(uid="u-2"), "invalid converted object at index 1: must have the same UID: u-1 != u-2"),
    (converted(namespace="other"), "must have the same namespace: default != other"),
    (dict(converted(), apiVersion="example.com/v1"),
     "invalid groupVersion (expected example.com/v2, received example.com/v1)"),
    (dict(converted(), kind="Cog"), "invalid kind (expected Gear, received Cog)"),
    (converted(labels={"bad key": "x"}), "invalid metadata in object at index 1: metadata.labels: Invalid value: \"bad key\""),
    (converted(labels={"a": 1}), "metadata.labels[a] must be a string"),
])
def test_what_kube_refuses_in_a_converted_object(obj: dict, message: str):
    with pytest.raises(StatusError) as err:
        check(obj)
    assert err.value.code == 500 and err.value.reason == ""
    assert err.value.message.startswith("conversion for example.com/v1, Kind=Gear returned ")
    assert message in err.value.message


def test_settings_defaults_and_messages():
    assert conversion.validate_conversion({"strategy": "None"}) == []
    ok = {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
                                             "clientConfig": {"service": {"name": "s", "namespace": "n", "port": 443}}}}
    assert conversion.validate_conversion(ok) == []
    msgs = [str(x) for x in conversion.validate_conversion({"strategy": "None", "webhook": {"clientConfig": {}}})]
    assert msgs == ["spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook"]
    bad = {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1", "v1"], "clientConfig": {
        "url": "https://u:p@h/convert?x=1#f", "caBundle": "%%%"}}}
    msgs = [str(x) for x in conversion.validate_conversion(bad)]
    assert msgs == [
        'spec.conversion.webhookClientConfig.url: Invalid value: "u:xxxxx": user information is not permitted in the URL',
        'spec.conversion.webhookClientConfig.url: Invalid value: "f": fragments are not permitted in the URL',
        'spec.conversion.webhookClientConfig.url: Invalid value: "x=1": query parameters are not permitted in the URL',
        'spec.conversion.webhookClientConfig.caBundle: Invalid value: "<bytes>": illegal base64 data',
        'spec.conversion.conversionReviewVersions[1]: Invalid value: "v1": duplicate version',
    ]
