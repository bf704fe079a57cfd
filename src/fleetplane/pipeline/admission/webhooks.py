"""MutatingAdmissionWebhook and ValidatingAdmissionWebhook: kube's dynamic admission.

Each logical cluster's Validating/MutatingWebhookConfigurations (``apis/admissionregistration``)
are read from the watch cache, parsed once per revision, and consulted on every write the
generic store admits. A webhook is called when, in kube's order of checks (AS
``admission/plugin/webhook/generic``, ``predicates/``):

1. a rule matches: operation, apiGroup, apiVersion, resource (``pods``, ``pods/status``, ``*``
   without subresources, ``*/*``, ``pods/*``, ``*/status``) and scope; under ``matchPolicy:
   Equivalent`` a rule naming another served version of the same group and resource matches
   too, and the webhook is sent that version (``kind``/``resource``; ``requestKind`` keeps the
   request's);
2. the namespaceSelector matches the namespace's labels (a Namespace's own labels; cluster-scoped
   objects always match), and the objectSelector the new or the old object's labels;
3. every matchCondition (CEL over ``object``, ``oldObject``, ``request``) is true; an error in one
   follows the failurePolicy.

On dry-run a webhook whose sideEffects is not None/NoneOnDryRun is not called and the request is
refused. Mutating webhooks run one at a time in configuration-name order and their JSONPatch is
applied at once (the store's validation runs on the result); a ``reinvocationPolicy: IfNeeded``
webhook is called once more if a later webhook changed the object. Validating webhooks run in
parallel. Calls go through :mod:`fleetplane.pipeline.webhook`; a failure (timeout, TLS, garbage)
follows the failurePolicy: Fail is kube's 500 ``failed calling webhook``, Ignore goes on and
records ``failed-open...`` in the audit event. Answers' warnings go to the client's Warning
headers and auditAnnotations (``<webhook>/<key>``) into the audit event.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jsonpatch
import orjson
from prometheus_client import CollectorRegistry, Counter, Histogram

from ...apimachinery import errors as e
from ...apimachinery.cel import _cel_error_text, compile_expression
from ...apimachinery.errors import FieldError, StatusError
from ...apimachinery.labels import LabelSelector
from ...apimachinery.validation import qualified_name_error
from ...registry.validation import validate_object_meta
from ...storage import keys
from ...storage.watchcache import WatchCache
from ..webhook import ServiceResolver, WebhookCallError, WebhookClient, WebhookEndpoint, endpoint_for
from .chain import CONNECT, CREATE, DELETE, UPDATE, BasePlugin, Request

log = logging.getLogger(__name__)

GROUP = "admissionregistration.k8s.io"
REVIEW_API_VERSION = "admission.k8s.io/v1"
MATCH_VARIABLES = frozenset({"object", "oldObject", "request"})
#: who a request from the hub's own in-process controllers is (kube's loopback identity)
LOOPBACK_USER = {"username": "system:apiserver", "groups": ["system:masters", "system:authenticated"]}
OPTIONS_KIND = {CREATE: "CreateOptions", UPDATE: "UpdateOptions", DELETE: "DeleteOptions"}
#: never sent to webhooks, as in kube (IsExemptAdmissionConfigurationResource): a broken webhook
#: must not lock its own configuration in
EXEMPT_RESOURCES = frozenset({"validatingwebhookconfigurations", "mutatingwebhookconfigurations",
                              "validatingadmissionpolicies", "validatingadmissionpolicybindings",
                              "mutatingadmissionpolicies", "mutatingadmissionpolicybindings"})

#: (cluster, group, resource) -> the versions of that resource served in the cluster
ServedVersions = Callable[[str, str, str], Sequence[str]]


class WebhookMetrics:
    """kube's webhook metrics, in the hub's own registry (``/metrics``)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.duration = Histogram(
            "apiserver_admission_webhook_admission_duration_seconds",
            "Admission webhook latency in seconds, by name, type (validate or admit), operation and rejected.",
            ["name", "type", "operation", "rejected"], buckets=(0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10, 25), registry=registry)
        self.rejections = Counter(
            "apiserver_admission_webhook_rejection_count",
            "Admission webhook rejections, by name, type, operation, error_type and rejection_code.",
            ["name", "type", "operation", "error_type", "rejection_code"], registry=registry)
        self.fail_open = Counter(
            "apiserver_admission_webhook_fail_open_count",
            "Admission webhook calls that failed and were ignored (failurePolicy Ignore), by name and type.",
            ["name", "type"], registry=registry)


@dataclass(frozen=True)
class Hook:
    """One webhook of one configuration, parsed once per revision of its configuration."""

    configuration: str
    index: int  # within the configuration
    spec: dict[str, Any]
    name: str
    namespace_selector: LabelSelector | None  # None: everything
    object_selector: LabelSelector | None
    endpoint: WebhookEndpoint | None
    endpoint_error: str = ""

    @property
    def failure_policy(self) -> str:
        return str(self.spec.get("failurePolicy") or "Fail")

    @property
    def timeout(self) -> float:
        return float(self.spec.get("timeoutSeconds") or 10)


def _selector(spec: Any) -> LabelSelector | None:
    if not spec:
        return None
    return LabelSelector.from_match(spec)


def _parse(cfg: dict[str, Any], resolver: ServiceResolver) -> list[Hook]:
    name = str((cfg.get("metadata") or {}).get("name") or "")
    hooks: list[Hook] = []
    for i, spec in enumerate(cfg.get("webhooks") or []):
        try:
            endpoint, problem = endpoint_for(spec.get("clientConfig") or {}, resolver), ""
        except (WebhookCallError, ValueError) as exc:
            endpoint, problem = None, str(exc)
        hooks.append(Hook(name, i, spec, str(spec.get("name") or ""), _selector(spec.get("namespaceSelector")),
                          _selector(spec.get("objectSelector")), endpoint, problem))
    return hooks


class Configurations:
    """A logical cluster's webhooks of one kind, from the watch cache, sorted as kube sorts them
    (by configuration name), re-parsed only when a configuration's revision moves."""

    def __init__(self, cache: WatchCache, resource: str, resolver: ServiceResolver) -> None:
        self.cache = cache
        self.prefix = keys.resource_prefix(GROUP, resource)
        self.resolver = resolver
        #: cluster -> configuration name -> (revision, its hooks); rebuilt from the live objects
        self._parsed: dict[str, dict[str, tuple[int, list[Hook]]]] = {}

    def hooks(self, cluster: str) -> list[Hook]:
        # in key order, which for these cluster-scoped objects is by name
        objects = list(self.cache.resource(self.prefix).objects(cluster, None))
        if not objects:
            self._parsed.pop(cluster, None)
            return []
        before = self._parsed.get(cluster, {})
        now: dict[str, tuple[int, list[Hook]]] = {}
        out: list[Hook] = []
        for o in objects:
            seen = before.get(o.name)
            if seen is None or seen[0] != o.revision:
                seen = (o.revision, _parse(o.obj, self.resolver))
            now[o.name] = seen
            out.extend(seen[1])
        self._parsed[cluster] = now  # deleted configurations are forgotten here
        return out


# -- matching -------------------------------------------------------------------------------------


def _rule_matches(rule: dict[str, Any], op: str, group: str, version: str, resource: str, subresource: str,
                  namespaced: bool) -> bool:
    ops = rule.get("operations") or []
    if "*" not in ops and op not in ops:
        return False
    groups = rule.get("apiGroups") or []
    if "*" not in groups and group not in groups:
        return False
    versions = rule.get("apiVersions") or []
    if "*" not in versions and version not in versions:
        return False
    scope = rule.get("scope") or "*"
    if (scope == "Cluster" and namespaced) or (scope == "Namespaced" and not namespaced):
        return False
    for res_sub in rule.get("resources") or []:
        res, _, sub = str(res_sub).partition("/")
        if (res == "*" or res == resource) and (sub == "*" or sub == subresource):
            return True
    return False


def _matching_version(hook: Hook, req: Request, served: ServedVersions) -> str | None:
    """The version the webhook is sent the object in, or None if no rule matches."""
    rules = hook.spec.get("rules") or []
    namespaced = req.rt.namespaced and not (req.group == "" and req.resource == "namespaces")
    args = (req.operation, req.group)
    if any(_rule_matches(r, *args, req.rt.version, req.resource, req.subresource, namespaced) for r in rules):
        return req.rt.version
    if hook.spec.get("matchPolicy", "Equivalent") != "Equivalent":
        return None
    for version in served(req.cluster, req.group, req.resource):
        if version != req.rt.version and any(
                _rule_matches(r, *args, version, req.resource, req.subresource, namespaced) for r in rules):
            return version
    return None


def _labels(obj: dict[str, Any] | None) -> dict[str, str]:
    labels = ((obj or {}).get("metadata") or {}).get("labels")
    return labels if isinstance(labels, dict) else {}


# -- the review -----------------------------------------------------------------------------------


def _user(req: Request) -> dict[str, Any]:
    return req.user.to_kube() if req.user is not None else dict(LOOPBACK_USER)


def _in_version(obj: dict[str, Any] | None, api_version: str) -> dict[str, Any] | None:
    if obj is None or obj.get("apiVersion") == api_version:
        return obj
    return {**obj, "apiVersion": api_version}


def _review_request(req: Request, version: str, uid: str) -> dict[str, Any]:
    rt = req.rt
    api_version = f"{rt.group}/{version}" if rt.group else version
    options: dict[str, Any] | None = None
    if req.operation in OPTIONS_KIND:
        options = {"kind": OPTIONS_KIND[req.operation], "apiVersion": "meta.k8s.io/v1"}
        if req.operation == DELETE:
            options.update({k: v for k, v in req.options.items() if k not in ("kind", "apiVersion")})
        if req.dry_run:
            options["dryRun"] = ["All"]
    request: dict[str, Any] = {
        "uid": uid,
        "kind": {"group": rt.group, "version": version, "kind": rt.kind},
        "resource": {"group": rt.group, "version": version, "resource": rt.plural},
        "requestKind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
        "requestResource": {"group": rt.group, "version": rt.version, "resource": rt.plural},
        "name": req.name or ((req.obj or {}).get("metadata") or {}).get("name") or "",
        "operation": req.operation,
        "userInfo": _user(req),
        "object": _in_version(req.obj, api_version),
        "oldObject": _in_version(req.old, api_version),
        "dryRun": req.dry_run,
        "options": options,
    }
    if req.namespace:
        request["namespace"] = req.namespace
    if req.subresource:
        request["subResource"] = request["requestSubResource"] = req.subresource
    return request


@dataclass
class Outcome:
    """What one call produced, applied to the request in webhook order."""

    hook: Hook
    response: dict[str, Any] | None = None
    error: StatusError | None = None
    failed_open: bool = False
    annotations: dict[str, str] = field(default_factory=dict)


def _call_failed(hook: Hook, reason: str) -> StatusError:
    """kube's ErrCallingWebhook as a Fail-policy 500."""
    text = f'failed calling webhook "{hook.name}": {reason}'
    return StatusError(500, "InternalError", f"Internal error occurred: {text}", {"causes": [{"message": text}]})


def _denied(hook: Hook, status: Any) -> StatusError:
    """kube's ToStatusErr: the webhook's Status, its code at least 400, the message prefixed."""
    status = status if isinstance(status, dict) else {}
    code = status.get("code") if isinstance(status.get("code"), int) else 0
    code = max(code, 400)
    denied_by = f'admission webhook "{hook.name}" denied the request'
    if status.get("message"):
        message = f"{denied_by}: {status['message']}"
    elif status.get("reason"):
        message = f"{denied_by}: {status['reason']}"
    else:
        message = f"{denied_by} without explanation"
    details = status.get("details") if isinstance(status.get("details"), dict) else None
    return StatusError(code, str(status.get("reason") or ""), message, details)


class WebhookPlugin(BasePlugin):
    operations = frozenset({CREATE, UPDATE, DELETE, CONNECT})
    kind_label = ""  # "validating" / "mutation", as kube's audit annotation keys say
    metric_type = ""  # "validate" / "admit", as kube's metrics label them
    configuration_resource = ""  # the kind of configuration this plugin reads
    #: set once the app (and its metrics registry) exists
    metrics: WebhookMetrics | None = None

    def __init__(self, cache: WatchCache, served: ServedVersions, client: WebhookClient,
                 resolver: ServiceResolver) -> None:
        self.cache = cache
        self.configurations = Configurations(cache, self.configuration_resource, resolver)
        self.served = served
        self.client = client

    # -- which hooks -----------------------------------------------------------------------

    def _namespace_labels(self, req: Request) -> dict[str, str]:
        if req.group == "" and req.resource == "namespaces":
            return _labels(req.obj if req.obj is not None else req.old)
        if req.namespace_labels is None:
            o = self.cache.resource(keys.resource_prefix("", "namespaces")).get(
                keys.object_key("", "namespaces", req.cluster, "", req.namespace))
            req.namespace_labels = _labels(o.obj if o is not None else None)
        return req.namespace_labels

    def _selected(self, hook: Hook, req: Request) -> bool:
        if hook.namespace_selector is not None and (req.namespace or (req.group == "" and req.resource == "namespaces")):
            if not hook.namespace_selector.matches(self._namespace_labels(req)):
                return False
        if hook.object_selector is not None:
            if not any(o is not None and hook.object_selector.matches(_labels(o)) for o in (req.obj, req.old)):
                return False
        return True

    def _conditions_hold(self, hook: Hook, review: dict[str, Any]) -> bool:
        """All matchConditions true; an evaluation error raises a WebhookCallError."""
        conditions = hook.spec.get("matchConditions") or []
        if not conditions:
            return True
        variables = {"object": review.get("object"), "oldObject": review.get("oldObject"), "request": review}
        for cond in conditions:
            prog = compile_expression(str(cond.get("expression") or ""), MATCH_VARIABLES)
            if prog.error:
                raise WebhookCallError(f"compilation failed: {prog.error}")
            try:
                result = prog.run(variables)
            except Exception as exc:  # noqa: BLE001 - the engine raises many kinds
                text, _ = _cel_error_text(exc)
                raise WebhookCallError(f"failed to evaluate match condition {cond.get('name')!r}: {text}") from None
            if not isinstance(result, bool):
                raise WebhookCallError(f"match condition {cond.get('name')!r} must evaluate to bool")
            if not result:
                return False
        return True

    def _candidates(self, req: Request) -> list[tuple[Hook, str]]:
        if req.group == GROUP and req.resource in EXEMPT_RESOURCES:
            return []
        out = []
        for hook in self.configurations.hooks(req.cluster):
            version = _matching_version(hook, req, self.served)
            if version is not None and self._selected(hook, req):
                out.append((hook, version))
        return out

    # -- one call --------------------------------------------------------------------------

    async def _call(self, hook: Hook, version: str, req: Request, round_: int) -> Outcome:
        started = time.perf_counter()
        outcome = await self._call_once(hook, version, req, round_)
        if self.metrics is not None and (outcome.response is not None or outcome.error is not None or outcome.failed_open):
            denied = outcome.response is not None and not outcome.response["allowed"]
            rejected = outcome.error is not None or denied
            self.metrics.duration.labels(hook.name, self.metric_type, req.operation, str(rejected).lower()).observe(
                time.perf_counter() - started)
            if rejected:
                error_type = "no_error" if denied else "calling_webhook_error"
                code = (outcome.response or {}).get("status", {}).get("code") if denied else None
                self.metrics.rejections.labels(hook.name, self.metric_type, req.operation, error_type,
                                               str(max(int(code or 0), 400) if denied else 0)).inc()
            if outcome.failed_open:
                self.metrics.fail_open.labels(hook.name, self.metric_type).inc()
        return outcome

    async def _call_once(self, hook: Hook, version: str, req: Request, round_: int) -> Outcome:
        uid = str(uuid.uuid4())
        request = _review_request(req, version, uid)
        failed_open_key = f"failed-open.{self.kind_label}.webhook.admission.k8s.io/round_{round_}_index_{hook.index}"
        try:
            if not self._conditions_hold(hook, request):
                return Outcome(hook)
            if req.dry_run and hook.spec.get("sideEffects") not in ("None", "NoneOnDryRun"):
                return Outcome(hook, error=e.bad_request(f'admission webhook "{hook.name}" does not support dry run'))
            if hook.endpoint is None:
                raise WebhookCallError(hook.endpoint_error or "no client config")
            versions = hook.spec.get("admissionReviewVersions") or ["v1"]
            review_version = REVIEW_API_VERSION if "v1" in versions else "admission.k8s.io/v1beta1"
            answer = await self.client.post(hook.endpoint, {"apiVersion": review_version, "kind": "AdmissionReview",
                                                            "request": request}, hook.timeout)
            response = self._check_answer(answer, uid, review_version)
        except WebhookCallError as exc:
            reason = str(exc)
            if not reason.startswith(("compilation failed", "failed to evaluate", "match condition")):
                reason = f"failed to call webhook: {reason}"
            if hook.failure_policy == "Ignore":
                log.warning("failed calling webhook %r (ignored): %s", hook.name, reason)
                return Outcome(hook, failed_open=True, annotations={failed_open_key: hook.name})
            return Outcome(hook, error=_call_failed(hook, reason))
        annotations = {}
        for key, value in (response.get("auditAnnotations") or {}).items():
            full = f"{hook.name}/{key}"
            if qualified_name_error(full) is None and isinstance(value, str):
                annotations[full] = value
        return Outcome(hook, response=response, annotations=annotations)

    @staticmethod
    def _check_answer(answer: dict[str, Any], uid: str, review_version: str) -> dict[str, Any]:
        """kube's VerifyAdmissionResponse: the version asked for, a response, the request's uid."""
        if answer.get("apiVersion") != review_version or answer.get("kind") != "AdmissionReview":
            raise WebhookCallError(f"expected webhook response of {review_version}, Kind=AdmissionReview, "
                                   f"got {answer.get('apiVersion') or ''}, Kind={answer.get('kind') or ''}")
        response = answer.get("response")
        if not isinstance(response, dict):
            raise WebhookCallError("webhook response was absent")
        if response.get("uid") != uid:
            raise WebhookCallError(f'expected response.uid="{uid}", got "{response.get("uid") or ""}"')
        if not isinstance(response.get("allowed"), bool):
            raise WebhookCallError("webhook response did not say whether the request is allowed")
        return response

    @staticmethod
    def _report(outcome: Outcome, req: Request) -> None:
        """Warnings to the client, annotations to the audit event (kube keeps a key's first value)."""
        for key, value in outcome.annotations.items():
            req.audit_annotations.setdefault(key, value)
        for w in (outcome.response or {}).get("warnings") or []:
            if isinstance(w, str) and w.strip():
                req.warnings.append(" ".join(w.split()))


class MutatingWebhooks(WebhookPlugin):
    """MutatingAdmissionWebhook: after the hub's own mutating plugins, one webhook at a time."""

    name = "MutatingAdmissionWebhook"
    kind_label = "mutation"
    metric_type = "admit"
    configuration_resource = "mutatingwebhookconfigurations"

    async def admit(self, req: Request) -> None:
        candidates = self._candidates(req)
        if not candidates:
            return
        changed_after: dict[str, bool] = {}  # reinvocable hook -> a later hook changed the object
        mutated_any = False
        for hook, version in candidates:
            mutated = await self._mutate(hook, version, req, 0)
            mutated_any = mutated_any or mutated
            if mutated:
                for name in changed_after:
                    changed_after[name] = True
            if hook.spec.get("reinvocationPolicy") == "IfNeeded":
                changed_after[f"{hook.configuration}/{hook.name}"] = False
        for hook, version in candidates:
            if changed_after.get(f"{hook.configuration}/{hook.name}"):
                mutated_any = await self._mutate(hook, version, req, 1) or mutated_any
        if mutated_any and req.operation == UPDATE and req.obj is not None and req.old is not None:
            self._revalidate(req)

    @staticmethod
    def _revalidate(req: Request) -> None:
        """An update was validated before admission (the store's order): validate what the
        webhooks made of it again, so a patch cannot store what the strategy refuses."""
        assert req.obj is not None and req.old is not None
        errs = req.rt.strategy.validate_update(req.obj, req.old)
        if req.rt.custom:
            errs = validate_object_meta(req.obj, namespaced=req.rt.namespaced) + errs
        if errs:
            raise e.invalid_object(req.group, req.kind, req.name, errs)

    async def _mutate(self, hook: Hook, version: str, req: Request, round_: int) -> bool:
        outcome = await self._call(hook, version, req, round_)
        self._report(outcome, req)
        if outcome.error is not None:
            raise outcome.error
        response = outcome.response
        if response is None:
            return False
        if not response["allowed"]:
            raise _denied(hook, response.get("status"))
        mutated = False
        if response.get("patch") and req.obj is not None:
            req.obj = self._apply_patch(hook, req, response)
            mutated = True
        req.audit_annotations.setdefault(
            f"mutation.webhook.admission.k8s.io/round_{round_}_index_{hook.index}",
            orjson.dumps({"configuration": hook.configuration, "webhook": hook.name, "mutated": mutated}).decode())
        return mutated

    @staticmethod
    def _apply_patch(hook: Hook, req: Request, response: dict[str, Any]) -> dict[str, Any]:
        """The JSONPatch applied to the object; a bad patch is kube's 500 (whatever the policy)."""
        assert req.obj is not None
        patch_type = response.get("patchType")
        if patch_type != "JSONPatch":
            raise e.internal(f'Internal error occurred: unsupported patch type "{patch_type or ""}"')
        try:
            ops = orjson.loads(base64.b64decode(str(response["patch"]), validate=True))
            patched = jsonpatch.JsonPatch(ops).apply(req.obj, in_place=False)
        except Exception as exc:  # noqa: BLE001 - base64, JSON and patch failures alike
            raise e.internal(f"Internal error occurred: {exc}") from None
        if not isinstance(patched, dict):
            raise e.internal("Internal error occurred: the patched object is not a JSON object")
        for f in ("apiVersion", "kind"):
            if patched.get(f) != req.obj.get(f):
                raise e.internal(f'Internal error occurred: admission webhook "{hook.name}" may not change {f}')
        meta, old_meta = patched.get("metadata") or {}, req.obj.get("metadata") or {}
        for f in ("name", "namespace"):
            if meta.get(f) != old_meta.get(f):
                raise e.internal(f'Internal error occurred: admission webhook "{hook.name}" may not change metadata.{f}')
        if req.rt.schema is not None:
            req.rt.schema.prune(patched)  # a custom resource keeps only its schema's fields
        # the store holds on to the object (and its metadata) it passed in: change them in place
        if isinstance(patched.get("metadata"), dict) and isinstance(req.obj.get("metadata"), dict):
            old_meta.clear()
            old_meta.update(patched["metadata"])
            patched["metadata"] = old_meta
        req.obj.clear()
        req.obj.update(patched)
        return req.obj


class ValidatingWebhooks(WebhookPlugin):
    """ValidatingAdmissionWebhook: after the hub's own validating plugins, all webhooks at once."""

    name = "ValidatingAdmissionWebhook"
    kind_label = "validating"
    metric_type = "validate"
    configuration_resource = "validatingwebhookconfigurations"

    async def validate(self, req: Request) -> list[FieldError]:
        candidates = self._candidates(req)
        if not candidates:
            return []
        outcomes = await asyncio.gather(*(self._call(hook, version, req, 0) for hook, version in candidates))
        first: StatusError | None = None
        for outcome in outcomes:
            self._report(outcome, req)
            if first is not None:
                continue
            if outcome.error is not None:
                first = outcome.error
            elif outcome.response is not None and not outcome.response["allowed"]:
                first = _denied(outcome.hook, outcome.response.get("status"))
        if first is not None:
            raise first
        return []
