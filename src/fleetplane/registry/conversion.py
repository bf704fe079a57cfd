"""Custom resources between versions: one seam, two kinds of converters.

Every read, list, watch and write of a custom resource in a version it is not stored in goes
through :meth:`Conversion.convert` (``GenericStore.converted``/``present_converted``/
``encode_converted``, the watch encoder). What converts is, first, the type's in-process
:data:`Converter` (``ResourceType.converter``): a kube built-in imported from a cluster is
converted by the built-in's own converters (``catalog.builtin_converter``, from the versions'
:class:`~fleetplane.registry.types.StoredAs`), a plugin's CRD by the converter the plugin
contributes by (group, kind) (``Contributions.converters``: the inventory's ClusterProfile
v1alpha1 <-> v1alpha2). Else the CRD's conversion webhook; else (strategy ``None``) only the
apiVersion changes (``GenericStore.present``).

CRD conversion webhooks: custom resources between versions through ``ConversionReview``.

A CRD with ``spec.conversion.strategy: Webhook`` stores its objects in the storage version and
serves every other version through its webhook, as apiextensions-apiserver does
(``pkg/apiserver/conversion``): objects read, listed or watched in another version are sent, in
one review per request, to be converted to it; an object written in another version is converted
to the storage version before it is stored. Objects already in the wanted version are never sent,
so the storage version is served (and written) even while the webhook is down.

The review (``apiextensions.k8s.io/v1`` or ``v1beta1``, the first of the CRD's
``conversionReviewVersions`` the hub speaks) goes over :mod:`fleetplane.pipeline.webhook`, the
hub's one webhook client, with kube's 30 s timeout. The answer is checked as kube checks it
(``webhook_converter.go``, ``converter.go``): its kind and uid, ``result.status`` Success, one
converted object per object sent, each in the wanted group version with the same kind, name,
namespace and uid; of its metadata only labels and annotations are taken, the rest is restored
from the original. Any failure is a 500 Status (kube's unknown-reason error) worded as kube's:
``conversion for example.com/v1, Kind=Widget failed: conversion webhook for ... failed: ...``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..apimachinery import errors as e
from ..apimachinery.errors import FieldError, StatusError
from ..apimachinery.validation import validate_annotations, validate_labels
from ..pipeline.webhook import ServiceResolver, WebhookCallError, WebhookClient, endpoint_for
from .types import ResourceType

#: kube's webhook client timeout for conversion (k8s.io/apiserver util/webhook: 30 s)
TIMEOUT_SECONDS = 30
REVIEW_VERSIONS = ("v1", "v1beta1")
REVIEW_GROUP = "apiextensions.k8s.io"
#: the failure types of kube's conversion webhook metrics (``apiserver_conversion_webhook_request_total``)
CALL_FAILURE = "conversion_webhook_call_failure"
MALFORMED_RESPONSE = "conversion_webhook_malformed_response_failure"
PARTIAL_RESPONSE = "conversion_webhook_partial_response_failure"
INVALID_CONVERTED_OBJECT = "conversion_webhook_invalid_converted_object_failure"

#: (crd name, from version, to version, seconds, failure type or None): the server's metrics
Observer = Callable[[str, str, str, float, "str | None"], None]


def _no_metrics(crd_name: str, from_version: str, to_version: str, seconds: float, failure: str | None) -> None:
    """Without a server (registry tests) nothing counts webhook calls."""


def webhook_config(rt: ResourceType) -> Mapping[str, Any] | None:
    """The CRD's ``spec.conversion.webhook`` when its strategy is Webhook, else None."""
    conv = rt.conversion
    if isinstance(conv, Mapping) and conv.get("strategy") == "Webhook" and isinstance(conv.get("webhook"), Mapping):
        webhook: Mapping[str, Any] = conv["webhook"]
        return webhook
    return None


#: an in-process converter: an object of its kind as ``api_version`` (``group/version``) has it, a
#: new dict (the input is never changed). It raises ValueError for what it cannot convert.
Converter = Callable[[dict[str, Any], str], dict[str, Any]]


def converts(rt: ResourceType) -> bool:
    """Whether ``rt``'s versions differ in more than apiVersion: an in-process converter or a webhook."""
    return rt.converter is not None or webhook_config(rt) is not None


def needs_webhook(rt: ResourceType, objs: Sequence[Mapping[str, Any]], api_version: str) -> bool:
    return webhook_config(rt) is not None and any(o.get("apiVersion") != api_version for o in objs)


def conversion_failed(message: str) -> StatusError:
    """What kube answers for a conversion error: 500 with an unknown reason (ErrorToAPIStatus)."""
    return StatusError(500, "", message)


def _gvk(api_version: str, kind: str) -> str:
    """schema.GroupVersionKind's String(): ``example.com/v1, Kind=Widget``."""
    return f"{api_version}, Kind={kind}"


class Conversion:
    """The hub's converter of custom resources with a conversion webhook (one per registry)."""

    def __init__(self, client: WebhookClient | None = None, resolver: ServiceResolver | None = None) -> None:
        self.client = client or WebhookClient()
        self.resolver = resolver or ServiceResolver()
        #: set by the server to its per-app metrics
        self.observe: Observer = _no_metrics

    async def close(self) -> None:
        await self.client.close()

    async def convert(self, rt: ResourceType, objs: list[dict[str, Any]], api_version: str,
                      described_as: str = "") -> list[dict[str, Any]]:
        """``objs`` in ``api_version``: those in another version through the CRD's webhook (the
        others are returned as they are). ``described_as`` is the GVK messages name (kube names
        a single object's own version and kind, a list the wanted version and the list kind)."""
        hook = webhook_config(rt)
        todo = [i for i, o in enumerate(objs) if o.get("apiVersion") != api_version]
        if not todo or (hook is None and rt.converter is None):
            return objs
        source = described_as or _gvk(str(objs[todo[0]].get("apiVersion")), rt.kind)
        if rt.converter is not None:
            return _in_process(rt.converter, objs, todo, api_version, source)
        assert hook is not None
        from_version = str(objs[todo[0]].get("apiVersion") or "").rpartition("/")[2]
        started = time.perf_counter()
        failure: str | None = None
        try:
            try:
                converted = await self._call(hook, [objs[i] for i in todo], api_version, source)
            except _Failed as failed:
                failure = failed.failure_type
                raise conversion_failed(f"conversion for {source} failed: conversion webhook for {source} failed: {failed}") from None
            if len(converted) != len(todo):
                failure = PARTIAL_RESPONSE
                raise conversion_failed(f"conversion for {source} returned {len(converted)} objects, expected {len(todo)}")
            out = list(objs)
            failure = INVALID_CONVERTED_OBJECT
            for index, (i, new) in enumerate(zip(todo, converted, strict=True), start=1):
                out[i] = _checked(objs[i], new, api_version, f"conversion for {source} returned", index)
            failure = None
            return out
        finally:
            self.observe(rt.crd_name, from_version, api_version.rpartition("/")[2], time.perf_counter() - started, failure)

    async def _call(self, hook: Mapping[str, Any], objs: list[dict[str, Any]], api_version: str,
                    source: str) -> list[Any]:
        review_version = next((v for v in hook.get("conversionReviewVersions") or () if v in REVIEW_VERSIONS), None)
        if review_version is None:
            raise _Failed("no supported conversion review versions", CALL_FAILURE)
        uid = str(uuid.uuid4())
        review = {"apiVersion": f"{REVIEW_GROUP}/{review_version}", "kind": "ConversionReview",
                  "request": {"uid": uid, "desiredAPIVersion": api_version, "objects": objs}}
        try:
            endpoint = endpoint_for(hook.get("clientConfig") or {}, self.resolver)
            answer = await self.client.post(endpoint, review, TIMEOUT_SECONDS)
        except WebhookCallError as err:
            raise _Failed(str(err), CALL_FAILURE) from None
        response = answer.get("response")
        if review_version == "v1":
            got = _gvk(str(answer.get("apiVersion") or ""), str(answer.get("kind") or ""))
            if got != _gvk(f"{REVIEW_GROUP}/v1", "ConversionReview"):
                raise _Failed(f"expected webhook response of {REVIEW_GROUP}/v1, Kind=ConversionReview, got {got}")
        if not isinstance(response, Mapping):
            raise _Failed("no response provided")
        if review_version == "v1" and response.get("uid") != uid:
            raise _Failed(f'expected response.uid="{uid}", got "{response.get("uid") or ""}"')
        raw_result = response.get("result")
        result: Mapping[str, Any] = raw_result if isinstance(raw_result, Mapping) else {}
        if result.get("status") != "Success":
            raise _Failed(str(result.get("message") or f"response.result.status was '{result.get('status') or ''}', not 'Success'"))
        converted = response.get("convertedObjects") or []
        if not isinstance(converted, list):
            raise _Failed("response.convertedObjects is not a list")
        return converted


def _in_process(converter: Converter, objs: list[dict[str, Any]], todo: list[int], api_version: str,
                source: str) -> list[dict[str, Any]]:
    """Objects converted by an in-process converter: as kube's scheme converts a built-in, with the
    identity kept (name, namespace, uid and the rest of metadata are the converter's to carry)."""
    out = list(objs)
    for i in todo:
        try:
            new = converter(objs[i], api_version)
        except (ValueError, KeyError, TypeError) as err:
            raise conversion_failed(f"conversion for {source} failed: {err}") from None
        new["apiVersion"] = api_version
        new["kind"] = objs[i].get("kind")
        out[i] = new
    return out


class _Failed(Exception):
    """The webhook call or its answer failed (the text after kube's ``conversion webhook for X failed:``)."""

    def __init__(self, message: str, failure_type: str = MALFORMED_RESPONSE) -> None:
        super().__init__(message)
        self.failure_type = failure_type


def _checked(original: dict[str, Any], converted: Any, api_version: str, prefix: str, index: int) -> dict[str, Any]:
    """A converted object as kube accepts it: same identity, metadata restored but for labels
    and annotations (``validateConvertedObject``, ``restoreObjectMeta``)."""
    if not isinstance(converted, dict):
        raise conversion_failed(f"{prefix} invalid converted object at index {index}: not a JSON object")
    got_gv = str(converted.get("apiVersion") or "")
    if got_gv != api_version:
        raise conversion_failed(f"{prefix} invalid converted object at index {index}: invalid groupVersion "
                                f"(expected {api_version}, received {got_gv})")
    if converted.get("kind") != original.get("kind"):
        raise conversion_failed(f"{prefix} invalid converted object at index {index}: invalid kind "
                                f"(expected {original.get('kind')}, received {converted.get('kind') or ''})")
    original_meta = original.get("metadata")
    old_meta: dict[str, Any] = original_meta if isinstance(original_meta, dict) else {}
    new_meta = converted.get("metadata")
    if new_meta is not None and not isinstance(new_meta, dict):
        raise conversion_failed(f"{prefix} invalid metadata in object at index {index}: "
                                "invalid metadata of type string in converted object")
    meta = new_meta or {}
    for field in ("name", "namespace", "uid"):
        if (old_meta.get(field) or "") != (meta.get(field) or ""):
            label = "UID" if field == "uid" else field
            raise conversion_failed(f"{prefix} invalid converted object at index {index}: must have the same "
                                    f"{label}: {old_meta.get(field) or ''} != {meta.get(field) or ''}")
    if new_meta is None and original.get("metadata") is not None:
        raise conversion_failed(f"{prefix} invalid metadata in object at index {index}: missing metadata in converted object")
    restored = dict(old_meta)
    for field in ("labels", "annotations"):
        value = meta.get(field)
        if value is None:
            restored.pop(field, None)
            continue
        errs = _check_string_map(field, value, old_meta.get(field))
        if errs:
            detail = errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"
            raise conversion_failed(f"{prefix} invalid metadata in object at index {index}: {detail}")
        restored[field] = value
    out = dict(converted)
    out["metadata"] = restored
    return out


def _check_string_map(field: str, value: Any, before: Any) -> list[str]:
    if not isinstance(value, dict):
        return [f"invalid metadata.{field} of type {type(value).__name__} in converted object"]
    for k, v in value.items():
        if not isinstance(v, str):
            return [f"metadata.{field}[{k}] must be a string, but is {type(v).__name__} in converted object"]
    if value == before:
        return []
    found: list[FieldError] = (validate_labels(value, "metadata.labels") if field == "labels"
                               else validate_annotations(value, "metadata.annotation"))
    return [str(err) for err in found]


# -- the CRD's spec.conversion ------------------------------------------------------------------


def validate_conversion(conv: Any) -> list[FieldError]:
    """``spec.conversion`` as apiextensions validates it (``validateCustomResourceConversion``).

    The paths are kube's internal ones, as its messages give them: a v1 CRD's
    ``webhook.clientConfig`` is ``spec.conversion.webhookClientConfig`` and its
    ``webhook.conversionReviewVersions`` is ``spec.conversion.conversionReviewVersions``."""
    p = "spec.conversion"
    if conv is None:
        return []
    if not isinstance(conv, dict):
        return [e.invalid(p, conv, "must be an object")]
    strategy = conv.get("strategy")
    webhook = conv.get("webhook")
    hook: dict[str, Any] = webhook if isinstance(webhook, dict) else {}
    client, versions = hook.get("clientConfig"), hook.get("conversionReviewVersions")
    if strategy not in ("None", "Webhook"):
        return [e.not_supported(f"{p}.strategy", strategy, ["None", "Webhook"])]
    errs: list[FieldError] = []
    if strategy == "None":
        if client is not None:
            errs.append(e.forbidden(f"{p}.webhookClientConfig", "should not be set when strategy is not set to Webhook"))
        if versions:
            errs.append(e.forbidden(f"{p}.conversionReviewVersions", "should not be set when strategy is not set to Webhook"))
        return errs
    if not isinstance(client, dict):
        errs.append(e.required(f"{p}.webhookClientConfig", "required when strategy is set to Webhook"))
    else:
        errs += validate_client_config(client, f"{p}.webhookClientConfig")
    vp = f"{p}.conversionReviewVersions"
    if not versions:
        errs.append(e.required(vp))
    elif not isinstance(versions, list) or not all(isinstance(v, str) for v in versions):
        errs.append(e.invalid(vp, versions, "must be a list of strings"))
    else:
        seen: set[str] = set()
        for i, v in enumerate(versions):
            if v in seen:
                errs.append(e.invalid(f"{vp}[{i}]", v, "duplicate version"))
            seen.add(v)
        if not seen & set(REVIEW_VERSIONS):
            literal = "[]string{" + ", ".join(f'"{v}"' for v in versions) + "}"
            errs.append(e.invalid_literal(vp, literal, "must include at least one of v1, v1beta1"))
    return errs


_URL_FORM = "; desired format: https://host[/path]"


def validate_client_config(client: dict[str, Any], p: str) -> list[FieldError]:
    """A webhook clientConfig: exactly one of url (``ValidateWebhookURL``) or service
    (``ValidateWebhookService``), and a caBundle that decodes."""
    import base64
    import binascii
    from urllib.parse import urlsplit

    errs: list[FieldError] = []
    url, service = client.get("url"), client.get("service")
    if (url is None) == (service is None):
        errs.append(e.required(p, "exactly one of url or service is required"))
    elif url is not None:
        try:
            parts = urlsplit(str(url))
            parts.port  # noqa: B018 - raises on a bad port
        except ValueError as exc:
            return [e.required(f"{p}.url", f"url must be a valid URL: {exc}{_URL_FORM}")]
        if parts.scheme != "https":
            errs.append(e.invalid(f"{p}.url", parts.scheme, "'https' is the only allowed URL scheme" + _URL_FORM))
        if not parts.netloc:
            errs.append(e.invalid(f"{p}.url", parts.netloc, "host must be specified" + _URL_FORM))
        if parts.username is not None:
            user = parts.username + (":" + "xxxxx" if parts.password is not None else "")
            errs.append(e.invalid(f"{p}.url", user, "user information is not permitted in the URL"))
        if parts.fragment:
            errs.append(e.invalid(f"{p}.url", parts.fragment, "fragments are not permitted in the URL"))
        if parts.query:
            errs.append(e.invalid(f"{p}.url", parts.query, "query parameters are not permitted in the URL"))
    elif not isinstance(service, dict):
        errs.append(e.invalid(f"{p}.service", service, "must be an object"))
    else:
        for f in ("name", "namespace"):
            if not service.get(f):
                errs.append(e.required(f"{p}.service.{f}"))
        path = service.get("path")
        if path is not None and (not isinstance(path, str) or not path.startswith("/")):
            errs.append(e.invalid(f"{p}.service.path", path, "must start with a '/'"))
        port = service.get("port", 443)
        if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
            errs.append(e.invalid(f"{p}.service.port", port, "port is not valid: must be between 1 and 65535, inclusive"))
    ca = client.get("caBundle")
    if ca is not None:
        try:
            base64.b64decode(str(ca), validate=True)
        except (binascii.Error, ValueError):
            errs.append(e.invalid(f"{p}.caBundle", "<bytes>", "illegal base64 data"))
    return errs
