"""Audit logging: kube's ``audit.k8s.io/v1`` Policy and Event, written as JSON lines.

The policy file is kube's (``--audit-policy-file``) and is matched as kube matches it: the first
rule whose every field matches wins, no match is level None. Each audited request yields the
Events kube's log backend writes (``--audit-log-format=json``), one per stage: RequestReceived
when it arrives, ResponseStarted for long-running requests (watches) once headers are sent,
ResponseComplete at the end, or Panic. Bodies follow the level: Metadata none, Request the
request's, RequestResponse the response's too; non-resource requests never carry bodies.

What is never written, whatever the policy says: the bodies of Secrets (``secrets`` in the
core group, any verb and subresource), of TokenRequests (``serviceaccounts/token``) and of
TokenReviews (``authentication.k8s.io``): their level is capped at Metadata, so only who did
what to which object is recorded. An Event has no field for headers, so an Authorization header,
bearer token or client certificate cannot appear either.

Writing never blocks a request: events go through a bounded queue to one writer thread, and an
event that finds the queue full is dropped and counted in ``apiserver_audit_error_total
{plugin="buffered"}`` (kube's buffered backend counts its overflow there); a failed write counts
under ``plugin="log"``. ``apiserver_audit_event_total`` counts events generated and
``apiserver_audit_level_total{level}`` requests by level, as kube does. The file is created with
mode 0600 and appended to (``-`` is standard output).
"""

from __future__ import annotations

import json
import logging
import os
import queue
import sys
import threading
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum
from pathlib import Path
from typing import IO, Any, NamedTuple

import orjson
import yaml
from prometheus_client import REGISTRY, Counter

from ..apimachinery.metatime import micro_time
from ..apimachinery.validation import DNS1123_SUBDOMAIN, DNS1123_SUBDOMAIN_MSG
from .user import UserInfo

log = logging.getLogger(__name__)

API_VERSION = "audit.k8s.io/v1"
#: the annotation naming the logical cluster a request was for
CLUSTER_ANNOTATION = "fleetplane.io/logical-cluster"
MAX_USER_AGENT = 1024
USER_AGENT_TRUNCATED = "...TRUNCATED"
#: events the writer thread takes off the queue per write
_WRITE_BATCH = 1000


def _counter(name: str, doc: str, labels: Sequence[str] = ()) -> Counter:
    """Register once, however often this module is imported (tests reload modules)."""
    names = getattr(REGISTRY, "_names_to_collectors", {})
    existing = names.get(name) or names.get(name.removesuffix("_total"))
    if isinstance(existing, Counter):
        return existing
    return Counter(name, doc, labels)


EVENTS = _counter("apiserver_audit_event_total", "Counter of audit events generated and sent to the audit backend.")
ERRORS = _counter("apiserver_audit_error_total", "Counter of audit events that failed to be audited properly. "
                  "Plugin identifies the plugin affected by the error.", ["plugin"])
LEVELS = _counter("apiserver_audit_level_total", "Counter of policy levels for audit events (1 per request).", ["level"])


class Level(StrEnum):
    """Audit levels, in increasing order of what is recorded."""

    NONE = "None"
    METADATA = "Metadata"
    REQUEST = "Request"
    REQUEST_RESPONSE = "RequestResponse"

    def at_least(self, other: Level) -> bool:
        return _LEVEL_ORDER[self] >= _LEVEL_ORDER[other]


_LEVEL_ORDER = {lvl: i for i, lvl in enumerate(Level)}


class Stage(StrEnum):
    REQUEST_RECEIVED = "RequestReceived"
    RESPONSE_STARTED = "ResponseStarted"
    RESPONSE_COMPLETE = "ResponseComplete"
    PANIC = "Panic"


class PolicyError(ValueError):
    """The audit policy file is unreadable or invalid (the hub refuses to start)."""


# -- the policy ----------------------------------------------------------------------------------


class GroupResources(NamedTuple):
    group: str = ""
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()


class PolicyRule(NamedTuple):
    level: Level
    users: tuple[str, ...] = ()
    user_groups: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    resources: tuple[GroupResources, ...] = ()
    namespaces: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()
    omit_stages: frozenset[Stage] = frozenset()
    #: None: the policy's default
    omit_managed_fields: bool | None = None


class Decision(NamedTuple):
    """What the policy says of one request (unpacks as ``level, omit_stages, omit_managed_fields``)."""

    level: Level
    omit_stages: frozenset[Stage]
    omit_managed_fields: bool


def _path_matches(path: str, spec: str) -> bool:
    return spec == "*" or spec == path or (spec.endswith("*") and path.startswith(spec.rstrip("*")))


def _resource_matches(gr: GroupResources, resource: str, subresource: str, name: str) -> bool:
    if not gr.resources:
        return True
    if gr.resource_names and name not in gr.resource_names:
        return False
    combined = f"{resource}/{subresource}" if subresource else resource
    for res in gr.resources:
        if res == combined or res == "*":
            return True
        if subresource and res.startswith("*/") and res[2:] == subresource:
            return True
        # as kube: "pods/*" matches every subresource of pods, and pods itself
        if res.endswith("/*") and res[:-2] == resource:
            return True
    return False


def _rule_matches(r: PolicyRule, user: UserInfo | None, verb: str, resource_request: bool, group: str,
                  resource: str, subresource: str, namespace: str, name: str, path: str) -> bool:
    if r.users and (user is None or user.name not in r.users):
        return False
    if r.user_groups and (user is None or not any(g in r.user_groups for g in user.groups)):
        return False
    if r.verbs and verb not in r.verbs:
        return False
    if r.namespaces or r.resources:
        if not resource_request:
            return False
        if r.namespaces and namespace not in r.namespaces:  # "" is cluster-scoped
            return False
        if not r.resources:
            return True
        return any((gr.group == group or gr.group == "*") and _resource_matches(gr, resource, subresource, name)
                   for gr in r.resources)
    if r.non_resource_urls:
        return not resource_request and any(_path_matches(path, spec) for spec in r.non_resource_urls)
    return True


class Policy:
    """An ``audit.k8s.io/v1`` Policy: ordered rules, policy-wide omitStages and omitManagedFields."""

    def __init__(self, rules: Sequence[PolicyRule], omit_stages: Iterable[Stage] = (),
                 omit_managed_fields: bool = False) -> None:
        self.omit_stages = frozenset(omit_stages)
        self.omit_managed_fields = omit_managed_fields
        # a rule's omitStages are unioned with the policy's once, as kube's evaluator does
        self.rules = tuple(r._replace(omit_stages=r.omit_stages | self.omit_stages) for r in rules)

    def __repr__(self) -> str:
        return f"Policy({len(self.rules)} rules, omit_stages={sorted(self.omit_stages)})"

    def decide(self, user: UserInfo | None, verb: str, resource_request: bool = True, group: str = "",
               resource: str = "", subresource: str = "", namespace: str = "", name: str = "",
               path: str = "") -> Decision:
        """The first matching rule's level, omitted stages and omitManagedFields; level None if none matches."""
        for r in self.rules:
            if _rule_matches(r, user, verb, resource_request, group, resource, subresource, namespace, name, path):
                omit = self.omit_managed_fields if r.omit_managed_fields is None else r.omit_managed_fields
                return Decision(r.level, r.omit_stages, omit)
        return Decision(Level.NONE, self.omit_stages, self.omit_managed_fields)


# -- loading, with kube's validation messages (apis/audit/validation) ----------------------------

_STAGES = ",".join(s.value for s in Stage)
_RULE_FIELDS = {"level", "users", "userGroups", "verbs", "resources", "namespaces", "nonResourceURLs",
                "omitStages", "omitManagedFields"}
_POLICY_FIELDS = {"apiVersion", "kind", "metadata", "rules", "omitStages", "omitManagedFields"}
_GR_FIELDS = {"group", "resources", "resourceNames"}


def _quote(value: Any) -> str:
    """A bad value as field.Error prints it (Go's %q for strings, JSON for the rest)."""
    return json.dumps(value, separators=(",", ":"))


def _strings(value: Any, path: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PolicyError(f"failed decoding: {path}: expected a list of strings")
    return tuple(value)


def _unknown(obj: Mapping[str, Any], known: set[str], path: str, unknown: list[str]) -> None:
    unknown.extend(f'unknown field "{path}{k}"' for k in obj if k not in known)


def _stages(value: Any, path: str, errs: list[str]) -> frozenset[Stage]:
    out = set()
    for i, s in enumerate(_strings(value, path)):
        try:
            out.add(Stage(s))
        except ValueError:
            errs.append(f"{path}[{i}]: Invalid value: {_quote(s)}: allowed stages are {_STAGES}")
    return frozenset(out)


def _rule(doc: Any, path: str, errs: list[str], unknown: list[str]) -> PolicyRule | None:
    if not isinstance(doc, Mapping):
        raise PolicyError(f"failed decoding: {path}: expected a mapping")
    _unknown(doc, _RULE_FIELDS, f"{path}.", unknown)
    level: Level | None = None
    raw_level = doc.get("level") or ""
    if raw_level == "":
        errs.append(f"{path}.level: Required value")
    else:
        try:
            level = Level(raw_level)
        except ValueError:
            supported = ", ".join(_quote(lv.value) for lv in Level)
            errs.append(f"{path}.level: Unsupported value: {_quote(raw_level)}: supported values: {supported}")
    urls = _strings(doc.get("nonResourceURLs"), f"{path}.nonResourceURLs")
    for i, url in enumerate(urls):
        if url == "*":
            continue
        if not url.startswith("/"):
            errs.append(f"{path}.nonResourceURLs[{i}]: Invalid value: {_quote(url)}: non-resource URL rules must begin with a '/' character")
        if url and "*" in url[:-1]:
            errs.append(f"{path}.nonResourceURLs[{i}]: Invalid value: {_quote(url)}: non-resource URL wildcards '*' must be the final character of the rule")
    raw_resources = doc.get("resources") or []
    if not isinstance(raw_resources, list):
        raise PolicyError(f"failed decoding: {path}.resources: expected a list")
    resources = []
    for i, gr in enumerate(raw_resources):
        if not isinstance(gr, Mapping):
            raise PolicyError(f"failed decoding: {path}.resources[{i}]: expected a mapping")
        _unknown(gr, _GR_FIELDS, f"{path}.resources[{i}].", unknown)
        group = gr.get("group") or ""
        if not isinstance(group, str):
            raise PolicyError(f"failed decoding: {path}.resources[{i}].group: expected a string")
        names = _strings(gr.get("resourceNames"), f"{path}.resources[{i}].resourceNames")
        res = _strings(gr.get("resources"), f"{path}.resources[{i}].resources")
        if group and group != "*":
            msgs = (["must be no more than 253 characters"] if len(group) > 253 else []) + \
                   ([DNS1123_SUBDOMAIN_MSG] if not DNS1123_SUBDOMAIN.match(group) else [])
            if msgs:  # kube's path has no index here
                errs.append(f"{path}.resources.group: Invalid value: {_quote(group)}: {','.join(msgs)}")
        if names and not res:
            errs.append(f"{path}.resources.resourceNames: Invalid value: {_quote(list(names))}: using resourceNames requires at least one resource")
        resources.append(GroupResources(group, res, names))
    namespaces = _strings(doc.get("namespaces"), f"{path}.namespaces")
    omit_stages = _stages(doc.get("omitStages"), f"{path}.omitStages", errs)
    if urls and (resources or namespaces):
        errs.append(f"{path}.nonResourceURLs: Invalid value: {_quote(list(urls))}: rules cannot apply to both regular resources and non-resource URLs")
    omf = doc.get("omitManagedFields")
    if omf is not None and not isinstance(omf, bool):
        raise PolicyError(f"failed decoding: {path}.omitManagedFields: expected a boolean")
    if level is None:
        return None
    return PolicyRule(level, _strings(doc.get("users"), f"{path}.users"),
                      _strings(doc.get("userGroups"), f"{path}.userGroups"),
                      _strings(doc.get("verbs"), f"{path}.verbs"), tuple(resources), namespaces, urls,
                      omit_stages, omf)


def parse_policy(doc: Any) -> Policy:
    """Validate a decoded Policy as kube's LoadPolicyFromBytes does; raises PolicyError."""
    if not isinstance(doc, Mapping):
        raise PolicyError("failed decoding: not a mapping")
    api_version, kind = doc.get("apiVersion") or "", doc.get("kind") or ""
    if api_version != API_VERSION or kind != "Policy":
        group, _, version = api_version.rpartition("/")
        raise PolicyError(f"unknown group version field {group}/{version}, Kind={kind} in policy")
    unknown: list[str] = []
    _unknown(doc, _POLICY_FIELDS, "", unknown)
    errs: list[str] = []
    omit_stages = _stages(doc.get("omitStages"), "omitStages", errs)
    raw_rules = doc.get("rules") or []
    if not isinstance(raw_rules, list):
        raise PolicyError("failed decoding: rules: expected a list")
    rules = [_rule(r, f"rules[{i}]", errs, unknown) for i, r in enumerate(raw_rules)]
    if unknown:  # kube decodes strictly, then falls back to lenient decoding with a warning
        log.warning("Audit policy contains errors, falling back to lenient decoding: %s", ", ".join(unknown))
    if errs:
        unique = list(dict.fromkeys(errs))
        raise PolicyError(unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]")
    if not rules:
        raise PolicyError("loaded illegal policy with 0 rules")
    omf = doc.get("omitManagedFields") or False
    if not isinstance(omf, bool):
        raise PolicyError("failed decoding: omitManagedFields: expected a boolean")
    return Policy([r for r in rules if r is not None], omit_stages, omf)


def load_policy(path: str | Path) -> Policy:
    """Read ``--audit-policy-file`` (YAML or JSON); raises PolicyError with kube's messages."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise PolicyError(f"failed to read file path {str(path)!r}: {exc}") from None
    try:
        doc = yaml.safe_load(data)
        return parse_policy(doc)
    except yaml.YAMLError as exc:
        raise PolicyError(f"failed decoding: {exc}: from file {path}") from None
    except PolicyError as exc:
        raise PolicyError(f"{exc}: from file {path}") from None


# -- events --------------------------------------------------------------------------------------


def is_sensitive(group: str, resource: str, subresource: str) -> bool:
    """Resources whose bodies hold credentials: Secrets, TokenRequests, TokenReviews."""
    if group == "":
        return resource == "secrets" or (resource == "serviceaccounts" and subresource == "token")
    return group == "authentication.k8s.io" and resource == "tokenreviews"


def _without_managed_fields(obj: Any) -> Any:
    """A copy without metadata.managedFields (of the object, a list's items, a Table's rows)."""
    if not isinstance(obj, Mapping):
        return obj
    out = dict(obj)
    meta = out.get("metadata")
    if isinstance(meta, Mapping) and "managedFields" in meta:
        out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    items = out.get("items")
    if isinstance(items, list):
        out["items"] = [_without_managed_fields(i) for i in items]
    rows = out.get("rows")
    if out.get("kind") == "Table" and isinstance(rows, list):
        out["rows"] = [{**r, "object": _without_managed_fields(r["object"])} if isinstance(r, Mapping) and "object" in r
                       else r for r in rows]
    return out


class AuditContext:
    """One audited request: accumulates its Event and emits it at each stage not omitted.

    Use it from the request's task; everything it hands to the writer thread is a snapshot
    (bodies are encoded when they are recorded), so later changes to them are not seen.
    """

    def __init__(self, log_: AuditLog, decision: Decision, resource_request: bool, event: dict[str, Any],
                 received: float) -> None:
        self._log = log_
        self.level = decision.level
        self._omit = decision.omit_stages
        self._omit_managed_fields = decision.omit_managed_fields
        self._resource_request = resource_request
        self._event = event
        self._received = received
        self._annotations: dict[str, str] = {}
        self._status: dict[str, Any] | None = None
        self._request: orjson.Fragment | None = None
        self._response: orjson.Fragment | None = None
        self._done = False

    @property
    def wants_request(self) -> bool:
        """Whether the request body is recorded (level Request and above, resource requests)."""
        return self._resource_request and self.level.at_least(Level.REQUEST)

    @property
    def wants_response(self) -> bool:
        """Whether the response body is recorded (level RequestResponse, resource requests)."""
        return self._resource_request and self.level.at_least(Level.REQUEST_RESPONSE)

    @property
    def audit_id(self) -> str:
        """For the ``Audit-ID`` response header."""
        return str(self._event["auditID"])

    def _encode(self, obj: Any) -> orjson.Fragment | None:
        if self._omit_managed_fields:
            obj = _without_managed_fields(obj)
        try:
            return orjson.Fragment(orjson.dumps(obj))
        except TypeError as exc:
            log.error("audit %s: encoding a body failed: %s", self.audit_id, exc)
            return None

    def request_object(self, obj: Any) -> None:
        """The request body (a decoded object, or a patch's raw JSON bytes); kept at level
        Request and above. An object's metadata also completes objectRef (name on create)."""
        if not self._resource_request or self._done:
            return
        ref = self._event.get("objectRef")
        if isinstance(obj, Mapping) and ref is not None:
            meta = obj.get("metadata")
            if isinstance(meta, Mapping):
                for field, src in (("namespace", "namespace"), ("name", "name"), ("uid", "uid"),
                                   ("resourceVersion", "resourceVersion")):
                    if not ref.get(field) and isinstance(meta.get(src), str) and meta.get(src):
                        ref[field] = meta[src]
        if not self.level.at_least(Level.REQUEST):
            return
        if isinstance(obj, bytes | bytearray | memoryview):
            try:
                obj = orjson.loads(obj)
            except orjson.JSONDecodeError:
                return  # not JSON (a YAML apply body): nothing recorded rather than a broken line
        self._request = self._encode(obj)

    def response_object(self, obj: Any) -> None:
        """The response body; kept at level RequestResponse. A Status body also sets responseStatus."""
        if not self._resource_request or self._done:
            return
        if isinstance(obj, Mapping) and obj.get("kind") == "Status":
            code = obj.get("code")
            self._status = _status(obj, code if isinstance(code, int) else 0)
        if self.level.at_least(Level.REQUEST_RESPONSE):
            self._response = self._encode(obj)

    def annotate(self, key: str, value: str) -> None:
        """An audit annotation (kept at every level); as in kube, the first value of a key stays."""
        if key in self._annotations:
            if self._annotations[key] != value:
                log.warning("audit %s: annotation %s already set", self.audit_id, key)
            return
        self._annotations[key] = value

    def response_started(self, code: int = 200) -> None:
        """Headers are out on a long-running request (a watch): the ResponseStarted stage."""
        if self._done:
            return
        self._set_code(code)
        self._emit(Stage.RESPONSE_STARTED)

    def finish(self, code: int, status: Mapping[str, Any] | None = None) -> None:
        """The response is complete: ``code`` as sent, ``status`` the metav1.Status of a failure."""
        if self._done:
            return
        if status is not None:
            self._status = _status(status, code)
        self._set_code(code)
        self._emit(Stage.RESPONSE_COMPLETE)
        self._done = True

    def panic(self, message: str = "") -> None:
        """The handler crashed: the Panic stage, with kube's 500 status."""
        if self._done:
            return
        self._status = {"metadata": {}, "status": "Failure", "message": f"APIServer panic'd: {message}",
                        "reason": "InternalError", "code": 500}
        self._emit(Stage.PANIC)
        self._done = True

    def _set_code(self, code: int) -> None:
        if self._status is None:
            self._status = {"metadata": {}, "code": code}
        else:
            self._status["code"] = code

    def _emit(self, stage: Stage) -> None:
        if stage in self._omit:
            return
        ev = dict(self._event)
        ev["stage"] = stage.value
        if "objectRef" in ev:
            ev["objectRef"] = {k: v for k, v in ev["objectRef"].items() if v}
        if self._status is not None:
            ev["responseStatus"] = dict(self._status)
        if self._request is not None:
            ev["requestObject"] = self._request
        if self._response is not None:
            ev["responseObject"] = self._response
        ev["requestReceivedTimestamp"] = micro_time(self._received)
        ev["stageTimestamp"] = micro_time(self._received if stage is Stage.REQUEST_RECEIVED else time.time())
        if self._annotations:
            ev["annotations"] = dict(self._annotations)
        self._log.submit(ev)


def _status(status: Mapping[str, Any], code: int) -> dict[str, Any]:
    """The bounded fields of a metav1.Status, in its field order (kube copies these)."""
    out: dict[str, Any] = {"metadata": {}}
    for k in ("status", "message", "reason", "details"):
        if status.get(k):
            out[k] = status[k]
    out["code"] = code or status.get("code") or 0
    return out


_STOP = object()


class AuditLog:
    """Audit events as JSON lines in ``path``, written by one background thread.

    ``max_queue`` bounds the events waiting to be written; past it events are dropped (and
    counted), so a slow disk never slows requests. :meth:`close` writes what is queued.
    """

    def __init__(self, path: str | Path, policy: Policy, max_queue: int = 10000) -> None:
        self.path = str(path)
        self.policy = policy
        self.dropped = 0
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=max_queue)
        self._lock = threading.Lock()
        self._closed = False
        if self.path == "-":
            self._out: IO[bytes] = sys.stdout.buffer
        else:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            self._out = os.fdopen(fd, "ab")
        self._thread = threading.Thread(target=self._run, name="audit-log", daemon=True)
        self._thread.start()

    def begin(self, user: UserInfo | None, *, verb: str, request_uri: str, impersonated_user: UserInfo | None = None,
              source_ips: Sequence[str] = (), user_agent: str = "", resource_request: bool = True,
              group: str = "", version: str = "", resource: str = "", subresource: str = "",
              namespace: str = "", name: str = "", path: str = "", cluster: str = "",
              received: float | None = None) -> AuditContext | None:
        """Decide the request's level and emit RequestReceived; None when it is not audited.

        ``user`` is the authenticated user (the policy matches it, as kube's does; None for a
        request that failed authentication, recorded with an empty user as kube does), and
        ``impersonated_user`` whom it acts as; ``path`` is the path non-resource rules match
        (without ``/clusters/<name>``; default: ``request_uri`` without its query);
        ``received`` the time.time() the request arrived.
        """
        if not path and not resource_request:
            path = request_uri.partition("?")[0]
        decision = self.policy.decide(user, verb, resource_request, group, resource, subresource, namespace,
                                      name, path)
        level = decision.level
        if level is not Level.NONE and resource_request and is_sensitive(group, resource, subresource):
            level = Level.METADATA
            decision = decision._replace(level=level)
        LEVELS.labels(level.value).inc()
        if level is Level.NONE:
            return None
        ts = time.time() if received is None else received
        ua = user_agent if len(user_agent) <= MAX_USER_AGENT else user_agent[:MAX_USER_AGENT] + USER_AGENT_TRUNCATED
        event: dict[str, Any] = {
            "kind": "Event", "apiVersion": API_VERSION, "level": level.value, "auditID": str(uuid.uuid4()),
            "stage": "", "requestURI": request_uri, "verb": verb,
            "user": user.to_kube() if user is not None else {},
        }
        if impersonated_user is not None:
            event["impersonatedUser"] = impersonated_user.to_kube()
        if source_ips:
            event["sourceIPs"] = list(source_ips)
        if ua:
            event["userAgent"] = ua
        if resource_request:
            event["objectRef"] = {"resource": resource, "namespace": namespace, "name": name, "uid": "",
                                  "apiGroup": group, "apiVersion": version, "resourceVersion": "",
                                  "subresource": subresource}
        ctx = AuditContext(self, decision, resource_request, event, ts)
        if cluster:
            ctx.annotate(CLUSTER_ANNOTATION, cluster)
        ctx._emit(Stage.REQUEST_RECEIVED)
        return ctx

    def submit(self, event: dict[str, Any]) -> None:
        """Queue one event for writing; never blocks (a full queue drops it, counted)."""
        EVENTS.inc()
        if not self._closed:
            try:
                self._queue.put_nowait(event)
                return
            except queue.Full:
                pass
        ERRORS.labels("buffered").inc()
        with self._lock:
            self.dropped += 1

    def _run(self) -> None:
        while True:
            batch = [self._queue.get()]
            while len(batch) < _WRITE_BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = False
            lines = []
            for ev in batch:
                if ev is _STOP:
                    stop = True
                    continue
                try:
                    lines.append(orjson.dumps(ev, option=orjson.OPT_APPEND_NEWLINE))
                except TypeError as exc:
                    ERRORS.labels("log").inc()
                    log.error("audit event %s could not be encoded: %s", ev.get("auditID"), exc)
            if lines:
                try:
                    self._out.write(b"".join(lines))
                    self._out.flush()
                except OSError as exc:
                    ERRORS.labels("log").inc(len(lines))
                    log.error("writing %d audit events to %s failed: %s", len(lines), self.path, exc)
            if stop:
                return

    def close(self) -> None:
        """Write every queued event, then stop the writer and close the file (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self._thread.is_alive():
            self._queue.put(_STOP)  # blocks only until the writer makes room
            self._thread.join()
        if self._out is not sys.stdout.buffer:
            self._out.close()
