"""admissionregistration.k8s.io/v1 Validating- and MutatingWebhookConfiguration.

Cluster-scoped and per logical cluster: a configuration stored in ``team-a`` admits ``team-a``'s
writes only (``pipeline/admission/webhooks.py`` reads them from the watch cache). Defaults are
v1's (``pkg/apis/admissionregistration/v1/defaults.go``) and validation is kube's
(``pkg/apis/admissionregistration/validation``), with its messages.
"""

from __future__ import annotations

import binascii
import re
from typing import Any
from urllib.parse import urlsplit

from ...apimachinery import errors as e
from ...apimachinery.cel import compile_expression
from ...apimachinery.errors import FieldError
from ...apimachinery.validation import (
    dns1035_label_errors,
    dns1123_subdomain_error,
    qualified_name_error,
    validate_label_selector,
)
from ...registry import printers as pr
from ...registry.printers import AGE, NAME, Clock, Column, Printer
from ...registry.types import ResourceType
from ..core.base import CoreStrategy
from .rules import GROUP, MAX_MATCH_CONDITIONS, VERSION, invalid_slice, validate_rule

#: the variables a webhook's matchConditions may use (``authorizer`` is not offered yet)
MATCH_CONDITION_VARIABLES = frozenset({"object", "oldObject", "request"})
FAILURE_POLICIES = ("Fail", "Ignore")
MATCH_POLICIES = ("Equivalent", "Exact")
SIDE_EFFECTS = ("None", "NoneOnDryRun")
REINVOCATION_POLICIES = ("IfNeeded", "Never")
REVIEW_VERSIONS = ("v1", "v1beta1")


def default_webhook(hook: dict[str, Any], mutating: bool) -> None:
    """v1's defaults for one webhook (kube applies them when it decodes the object)."""
    hook.setdefault("failurePolicy", "Fail")
    hook.setdefault("matchPolicy", "Equivalent")
    if hook.get("namespaceSelector") is None:
        hook["namespaceSelector"] = {}
    if hook.get("objectSelector") is None:
        hook["objectSelector"] = {}
    hook.setdefault("timeoutSeconds", 10)
    if mutating:
        hook.setdefault("reinvocationPolicy", "Never")
    for rule in hook.get("rules") or []:
        if isinstance(rule, dict):
            rule.setdefault("scope", "*")
    service = (hook.get("clientConfig") or {}).get("service")
    if isinstance(service, dict):
        service.setdefault("port", 443)


def _validate_service(svc: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not svc.get("name"):
        errs.append(e.required(f"{path}.name", "service name is required"))
    if not svc.get("namespace"):
        errs.append(e.required(f"{path}.namespace", "service namespace is required"))
    port = svc.get("port", 443)
    if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
        errs.append(e.invalid(f"{path}.port", port, "port is not valid: must be between 1 and 65535, inclusive"))
    url_path = svc.get("path")
    if url_path in (None, "", "/"):
        return errs
    url_path = str(url_path)
    if url_path == "//":
        return [*errs, e.invalid(f"{path}.path", url_path, "segment[0] may not be empty")]
    if not url_path.startswith("/"):
        errs.append(e.invalid(f"{path}.path", url_path, "must start with a '/'"))
    check = url_path[1:]
    if check.endswith("/"):
        check = check[:-1]
    for i, step in enumerate(check.split("/")):
        if not step:
            errs.append(e.invalid(f"{path}.path", url_path, f"segment[{i}] may not be empty"))
            continue
        failure = dns1123_subdomain_error(step)
        if failure:
            errs.append(e.invalid(f"{path}.path", url_path, f"segment[{i}]: {failure}"))
    return errs


def _validate_client_config(cc: Any, path: str) -> list[FieldError]:
    if not isinstance(cc, dict):
        return [e.required(path, "exactly one of url or service is required")]
    errs: list[FieldError] = []
    url, service = cc.get("url"), cc.get("service")
    if (url is None) == (service is None):
        errs.append(e.required(path, "exactly one of url or service is required"))
    if url is not None:
        form = "; desired format: https://host[/path]"
        try:
            u = urlsplit(str(url))
            host = u.netloc.rpartition("@")[2]
        except ValueError as exc:
            return [*errs, e.required(f"{path}.url", f"url must be a valid URL: {exc}{form}")]
        if not host:
            errs.append(e.invalid(f"{path}.url", host, "host must be specified"))
        elif u.scheme != "https":
            errs.append(e.invalid(f"{path}.url", u.scheme, "'https' is the only allowed URL scheme" + form))
        if "@" in u.netloc:
            errs.append(e.invalid(f"{path}.url", u.netloc.rpartition("@")[0], "user information is not permitted in the URL"))
        if u.fragment:
            errs.append(e.invalid(f"{path}.url", u.fragment, "fragments are not permitted in the URL"))
        if u.query:
            errs.append(e.invalid(f"{path}.url", u.query, "query parameters are not permitted in the URL"))
    if isinstance(service, dict):
        errs += _validate_service(service, f"{path}.service")
    return errs


def _validate_match_conditions(conds: Any, path: str) -> list[FieldError]:
    if conds is None:
        return []
    if not isinstance(conds, list):
        return [e.invalid(path, conds, "must be a list")]
    if len(conds) > MAX_MATCH_CONDITIONS:
        return [FieldError("FieldValueTooMany", path, f"must have at most {MAX_MATCH_CONDITIONS} items", len(conds), True)]
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, c in enumerate(conds):
        p = f"{path}[{i}]"
        c = c if isinstance(c, dict) else {}
        name, expr = c.get("name"), c.get("expression")
        if not name:
            errs.append(e.required(f"{p}.name"))
        elif (problem := qualified_name_error(str(name))) is not None:
            errs.append(e.invalid(f"{p}.name", name, problem))
        elif name in seen:
            errs.append(e.duplicate(f"{p}.name", name))
        else:
            seen.add(str(name))
        if not expr:
            errs.append(e.required(f"{p}.expression"))
        else:
            prog = compile_expression(str(expr), MATCH_CONDITION_VARIABLES)
            if prog.error:
                errs.append(e.invalid(f"{p}.expression", str(expr).strip(), f"compilation failed: {prog.error}"))
    return errs


def _fully_qualified_name_errors(name: Any, path: str) -> list[FieldError]:
    if not name:
        return [e.required(path)]
    name = str(name)
    problem = dns1123_subdomain_error(name)
    if problem:
        return [e.invalid(path, name, problem)]
    if len(name.split(".")) < 3:
        return [e.invalid(path, name, "should be a domain with at least three segments separated by dots")]
    return []


def validate_webhook(hook: Any, path: str, mutating: bool, names: set[str]) -> list[FieldError]:
    """One webhook of a configuration, as kube's validateValidatingWebhook/validateMutatingWebhook."""
    if not isinstance(hook, dict):
        return [e.invalid(path, hook, "must be an object")]
    errs = _fully_qualified_name_errors(hook.get("name"), f"{path}.name")
    name = hook.get("name")
    if not errs and name in names:
        errs.append(e.duplicate(f"{path}.name", name))
    names.add(str(name))
    for i, rule in enumerate(hook.get("rules") or []):
        errs += validate_rule(rule, f"{path}.rules[{i}]")
    for key, allowed in (("failurePolicy", FAILURE_POLICIES), ("matchPolicy", MATCH_POLICIES)):
        if hook.get(key) is not None and hook[key] not in allowed:
            errs.append(e.not_supported(f"{path}.{key}", hook[key], list(allowed)))
    side_effects = hook.get("sideEffects")
    if side_effects is None:
        errs.append(e.required(f"{path}.sideEffects", "must specify one of None, NoneOnDryRun"))
    elif side_effects not in SIDE_EFFECTS:
        errs.append(e.not_supported(f"{path}.sideEffects", side_effects, list(SIDE_EFFECTS)))
    versions = hook.get("admissionReviewVersions")
    if not versions:
        errs.append(e.required(f"{path}.admissionReviewVersions", "must specify one of v1, v1beta1"))
    else:
        seen: set[str] = set()
        for i, v in enumerate(versions):
            for problem in dns1035_label_errors(str(v)):
                errs.append(e.invalid(f"{path}.admissionReviewVersions[{i}]", v, problem))
            if v in seen:
                errs.append(e.invalid(f"{path}.admissionReviewVersions[{i}]", v, "duplicate version"))
            seen.add(str(v))
        if not any(v in REVIEW_VERSIONS for v in versions):
            errs.append(invalid_slice(f"{path}.admissionReviewVersions", versions,
                                  "must include at least one of v1, v1beta1"))
    timeout = hook.get("timeoutSeconds")
    if timeout is not None and (not isinstance(timeout, int) or isinstance(timeout, bool) or not 1 <= timeout <= 30):
        errs.append(e.invalid(f"{path}.timeoutSeconds", timeout, "the timeout value must be between 1 and 30 seconds"))
    for key in ("namespaceSelector", "objectSelector"):
        if hook.get(key) is not None:
            errs += validate_label_selector(hook[key], f"{path}.{key}")
    if mutating and hook.get("reinvocationPolicy") is not None and hook["reinvocationPolicy"] not in REINVOCATION_POLICIES:
        errs.append(e.not_supported(f"{path}.reinvocationPolicy", hook["reinvocationPolicy"], list(REINVOCATION_POLICIES)))
    errs += _validate_client_config(hook.get("clientConfig"), f"{path}.clientConfig")
    errs += _validate_match_conditions(hook.get("matchConditions"), f"{path}.matchConditions")
    return errs


_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


def _check_ca_bundle(hook: dict[str, Any], kind: str) -> None:
    """caBundle is []byte in Go: JSON decoding refuses what is not base64, as a 400."""
    value = (hook.get("clientConfig") or {}).get("caBundle") if isinstance(hook.get("clientConfig"), dict) else None
    if value is None:
        return
    text = value if isinstance(value, str) else ""
    m = _BASE64.match(text)
    bad_at = m.end() if m is not None and m.end() < len(text) else None
    if bad_at is None and len(text) % 4:
        bad_at = len(text) - len(text) % 4  # Go reports the start of the short final quantum
    if bad_at is None:
        try:
            binascii.a2b_base64(text.encode())
        except binascii.Error:
            bad_at = 0
    if not isinstance(value, str) or bad_at is not None:
        detail = f"illegal base64 data at input byte {bad_at or 0}" if isinstance(value, str) else \
            "json: cannot unmarshal non-string into Go value of type []uint8"
        raise e.bad_request(f'{kind} in version "v1" cannot be handled as a {kind}: {detail}')


class WebhookConfigurationStrategy(CoreStrategy):
    """Both configuration kinds: generation tracked (kube bumps it on a webhooks change), v1 defaults
    applied on every write, kube's validation."""

    tracks_generation = True

    def __init__(self, mutating: bool) -> None:
        super().__init__(namespaced=False)
        self.mutating = mutating

    def canonicalize(self, obj: dict[str, Any]) -> None:
        hooks = obj.get("webhooks")
        if isinstance(hooks, list):
            for hook in hooks:
                if isinstance(hook, dict):
                    _check_ca_bundle(hook, str(obj.get("kind") or ""))
                    default_webhook(hook, self.mutating)

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        errs = super().validate(obj)
        hooks = obj.get("webhooks")
        if hooks is None:
            return errs
        if not isinstance(hooks, list):
            return [*errs, e.invalid("webhooks", hooks, "must be a list")]
        names: set[str] = set()
        for i, hook in enumerate(hooks):
            errs += validate_webhook(hook, f"webhooks[{i}]", self.mutating, names)
        return errs


def _cells(o: dict[str, Any], clock: Clock) -> list[Any]:
    hooks = o.get("webhooks")
    return [pr.meta(o).get("name"), len(hooks) if isinstance(hooks, list) else 0,
            clock.since(pr.meta(o).get("creationTimestamp"))]


def _printer() -> Printer:
    return Printer((NAME, Column("Webhooks", type="integer", description="Webhooks indicates the number of webhooks."), AGE),
                   _cells)


def resource_types() -> list[ResourceType]:
    """Fresh ResourceTypes for the two webhook configuration kinds."""
    return [
        ResourceType(GROUP, VERSION, kind, plural, kind.lower(), False, WebhookConfigurationStrategy(mutating),
                     categories=("api-extensions",), printer=_printer(),
                     openapi_definition=f"io.k8s.api.admissionregistration.v1.{kind}")
        for kind, plural, mutating in (("ValidatingWebhookConfiguration", "validatingwebhookconfigurations", False),
                                       ("MutatingWebhookConfiguration", "mutatingwebhookconfigurations", True))
    ]
