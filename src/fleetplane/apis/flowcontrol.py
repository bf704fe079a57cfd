"""API Priority and Fairness's group (``flowcontrol.apiserver.k8s.io/v1``): FlowSchemas and
PriorityLevelConfigurations, with kube's v1 defaulting, validation (``pkg/apis/flowcontrol``),
printers (``kubectl get flowschemas`` / ``prioritylevelconfigurations``) and the bootstrap
configuration (``apiserver/pkg/apis/flowcontrol/bootstrap/default.go``).

In the hub the root logical cluster's objects configure flow control for every logical cluster
(the dispatcher lives in :mod:`fleetplane.pipeline.flowcontrol`); elsewhere the same objects are
served read-only, so a tenant can see what classifies its requests but cannot change it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..apimachinery import errors as e
from ..apimachinery.errors import FieldError
from ..apimachinery.jsonvalue import copy_json
from ..apimachinery.validation import path_segment_error
from ..pipeline.user import CONTROLLERS
from ..registry import printers as pr
from ..registry.printers import AGE, NAME, Clock, Column, Printer
from ..registry.types import ResourceType, Strategy
from ..registry.validation import validate_object_meta

FLOWCONTROL_GROUP = "flowcontrol.apiserver.k8s.io"
#: kube's AutoUpdateAnnotationKey: while "true", the server keeps a bootstrap object's spec current
AUTO_UPDATE = "apf.kubernetes.io/autoupdate-spec"
#: kube's FlowSchemaConditionDangling
DANGLING = "Dangling"

DISTINGUISHER_METHODS = ["ByUser", "ByNamespace"]
SUBJECT_KINDS = ["Group", "ServiceAccount", "User"]
PRIORITY_LEVEL_TYPES = ["Exempt", "Limited"]
LIMIT_RESPONSE_TYPES = ["Queue", "Reject"]
MAX_MATCHING_PRECEDENCE = 10000
MAX_HAND_SIZE = 15  # a hand is dealt from one 64-bit hash (shufflesharding.MaxHashBits)


def _name_error(name: str) -> str | None:
    """ValidateFlowSchemaName / ValidatePriorityLevelConfigurationName: path segments only."""
    return path_segment_error(name)


# -- defaulting (pkg/apis/flowcontrol/v1/defaults.go) ----------------------------------------

def default_flow_schema(obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict) and not spec.get("matchingPrecedence"):
        spec["matchingPrecedence"] = 1000


def default_priority_level(obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    limited = spec.get("limited")
    if isinstance(limited, dict):
        limited.setdefault("nominalConcurrencyShares", 30)
        limited.setdefault("lendablePercent", 0)
        response = limited.get("limitResponse")
        if isinstance(response, dict) and response.get("type") == "Queue":
            queuing = response.setdefault("queuing", {})
            if isinstance(queuing, dict):
                for key, value in (("queues", 64), ("handSize", 8), ("queueLengthLimit", 50)):
                    if not queuing.get(key):
                        queuing[key] = value
    exempt = spec.get("exempt")
    if isinstance(exempt, dict):
        exempt.setdefault("nominalConcurrencyShares", 0)
        exempt.setdefault("lendablePercent", 0)


# -- validation (pkg/apis/flowcontrol/validation/validation.go) ------------------------------

def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _validate_subject(s: Any, path: str) -> list[FieldError]:
    if not isinstance(s, Mapping):
        return [e.invalid(path, s, "must be an object")]
    kind = s.get("kind")
    member = {"User": "user", "Group": "group", "ServiceAccount": "serviceAccount"}.get(kind or "")
    if member is None:
        return [e.not_supported(f"{path}.kind", kind or "", SUBJECT_KINDS)]
    body = s.get(member)
    if not isinstance(body, Mapping):
        return [e.required(f"{path}.{member}", f"{member} is required when subject kind is '{kind}'")]
    errs: list[FieldError] = []
    if not body.get("name"):
        errs.append(e.required(f"{path}.{member}.name", ""))
    if kind == "ServiceAccount" and not body.get("namespace"):
        errs.append(e.required(f"{path}.{member}.namespace", ""))
    return errs


def _strings(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _validate_rule(rule: Any, path: str) -> list[FieldError]:
    if not isinstance(rule, Mapping):
        return [e.invalid(path, rule, "must be an object")]
    errs: list[FieldError] = []
    subjects = rule.get("subjects")
    if not isinstance(subjects, list) or not subjects:
        errs.append(e.required(f"{path}.subjects", "subjects must contain at least one value"))
    else:
        for i, s in enumerate(subjects):
            errs += _validate_subject(s, f"{path}.subjects[{i}]")
    resource_rules = rule.get("resourceRules") or []
    non_resource_rules = rule.get("nonResourceRules") or []
    if not resource_rules and not non_resource_rules:
        errs.append(e.required(path, "at least one of resourceRules and nonResourceRules has to be non-empty"))
    for i, r in enumerate(resource_rules if isinstance(resource_rules, list) else [resource_rules]):
        rp = f"{path}.resourceRules[{i}]"
        if not isinstance(r, Mapping):
            errs.append(e.invalid(rp, r, "must be an object"))
            continue
        for key in ("verbs", "apiGroups", "resources"):
            if not r.get(key) or not _strings(r.get(key)):
                errs.append(e.required(f"{rp}.{key}", f"{key} must contain at least one value"))
        if not r.get("namespaces") and not r.get("clusterScope"):
            errs.append(e.required(f"{rp}.namespaces", "resource rules that are not cluster scoped must supply at least one namespace"))
    for i, r in enumerate(non_resource_rules if isinstance(non_resource_rules, list) else [non_resource_rules]):
        rp = f"{path}.nonResourceRules[{i}]"
        if not isinstance(r, Mapping):
            errs.append(e.invalid(rp, r, "must be an object"))
            continue
        for key in ("verbs", "nonResourceURLs"):
            if not r.get(key) or not _strings(r.get(key)):
                errs.append(e.required(f"{rp}.{key}", f"{key} must contain at least one value"))
    return errs


def validate_flow_schema_spec(spec: Any) -> list[FieldError]:
    if not isinstance(spec, Mapping):
        return [e.required("spec", "")]
    errs: list[FieldError] = []
    precedence = _int(spec.get("matchingPrecedence"))
    if precedence is None or precedence <= 0:
        errs.append(e.invalid("spec.matchingPrecedence", spec.get("matchingPrecedence"), "must be a positive value"))
    elif precedence > MAX_MATCHING_PRECEDENCE:
        errs.append(e.invalid("spec.matchingPrecedence", precedence, f"must not be greater than {MAX_MATCHING_PRECEDENCE}"))
    method = spec.get("distinguisherMethod")
    if method is not None:
        mtype = method.get("type") if isinstance(method, Mapping) else None
        if mtype not in DISTINGUISHER_METHODS:
            errs.append(e.not_supported("spec.distinguisherMethod.type", mtype or "", DISTINGUISHER_METHODS))
    ref = spec.get("priorityLevelConfiguration")
    if not isinstance(ref, Mapping) or not ref.get("name"):
        errs.append(e.required("spec.priorityLevelConfiguration.name", "must reference a priority level"))
    rules = spec.get("rules") or []
    if not isinstance(rules, list):
        errs.append(e.invalid("spec.rules", rules, "must be a list"))
    else:
        for i, rule in enumerate(rules):
            errs += _validate_rule(rule, f"spec.rules[{i}]")
    return errs


def _validate_percent(v: Any, path: str) -> list[FieldError]:
    if v is None:
        return []
    n = _int(v)
    if n is None or n < 0 or n > 100:
        return [e.invalid(path, v, "must be between 0 and 100, inclusive")]
    return []


def _validate_limited(limited: Any, path: str) -> list[FieldError]:
    if not isinstance(limited, Mapping):
        return [e.required(path, "must not be empty when type is Limited")]
    errs: list[FieldError] = []
    shares = _int(limited.get("nominalConcurrencyShares"))
    if shares is None or shares < 0:
        errs.append(e.invalid(f"{path}.nominalConcurrencyShares", limited.get("nominalConcurrencyShares"),
                              "must be a non-negative integer"))
    errs += _validate_percent(limited.get("lendablePercent"), f"{path}.lendablePercent")
    borrowing = limited.get("borrowingLimitPercent")
    if borrowing is not None and ((n := _int(borrowing)) is None or n < 0):
        errs.append(e.invalid(f"{path}.borrowingLimitPercent", borrowing, "if specified, must be a non-negative integer"))
    response = limited.get("limitResponse")
    rtype = response.get("type") if isinstance(response, Mapping) else None
    rpath = f"{path}.limitResponse"
    if rtype not in LIMIT_RESPONSE_TYPES:
        errs.append(e.not_supported(f"{rpath}.type", rtype or "", LIMIT_RESPONSE_TYPES))
        return errs
    assert isinstance(response, Mapping)
    queuing = response.get("queuing")
    if rtype == "Reject":
        if queuing is not None:
            errs.append(e.forbidden(f"{rpath}.queuing", "must be nil if limited.limitResponse.type is not Limited"))
        return errs
    if not isinstance(queuing, Mapping):
        return [*errs, e.required(f"{rpath}.queuing", "must not be empty if limited.limitResponse.type is Queue")]
    qpath = f"{rpath}.queuing"
    queues = _int(queuing.get("queues"))
    if queues is None or queues <= 0:
        errs.append(e.invalid(f"{qpath}.queues", queuing.get("queues"), "must be positive"))
    limit = _int(queuing.get("queueLengthLimit"))
    if limit is None or limit <= 0:
        errs.append(e.invalid(f"{qpath}.queueLengthLimit", queuing.get("queueLengthLimit"), "must be positive"))
    hand = _int(queuing.get("handSize"))
    if hand is None or hand <= 0:
        errs.append(e.invalid(f"{qpath}.handSize", queuing.get("handSize"), "must be positive"))
    elif queues is not None and queues > 0:
        if hand > queues:
            errs.append(e.invalid(f"{qpath}.handSize", hand, f"should not be greater than queues ({queues})"))
        elif hand > MAX_HAND_SIZE:
            errs.append(e.invalid(f"{qpath}.handSize", hand, f"must not be greater than {MAX_HAND_SIZE}"))
    return errs


def validate_priority_level_spec(spec: Any, name: str) -> list[FieldError]:
    if not isinstance(spec, Mapping):
        return [e.required("spec", "")]
    ptype = spec.get("type")
    if ptype not in PRIORITY_LEVEL_TYPES:
        return [e.not_supported("spec.type", ptype or "", PRIORITY_LEVEL_TYPES)]
    errs: list[FieldError] = []
    if (name == "exempt") != (ptype == "Exempt"):
        errs.append(e.invalid("spec.type", ptype, "type must be 'Exempt' if and only if name is 'exempt'"))
    if ptype == "Exempt":
        if spec.get("limited") is not None:
            errs.append(e.forbidden("spec.limited", "must be nil if the type is not Limited"))
        exempt = spec.get("exempt")
        if isinstance(exempt, Mapping):
            shares = exempt.get("nominalConcurrencyShares")
            if shares is not None and ((_int(shares) is None) or shares < 0):
                errs.append(e.invalid("spec.exempt.nominalConcurrencyShares", shares, "must be a non-negative integer"))
            errs += _validate_percent(exempt.get("lendablePercent"), "spec.exempt.lendablePercent")
        return errs
    if spec.get("exempt") is not None:
        errs.append(e.forbidden("spec.exempt", "must be nil if the type is Limited"))
    return errs + _validate_limited(spec.get("limited"), "spec.limited")


class _FlowControlStrategy(Strategy):
    """Cluster-scoped, generation on spec changes, a status subresource (kube's strategies)."""

    status_subresource = True
    allow_unconditional_update = True

    def validate_meta(self, obj: dict[str, Any]) -> list[FieldError]:
        return validate_object_meta(obj, namespaced=False, name_error=_name_error)


class FlowSchemaStrategy(_FlowControlStrategy):
    def canonicalize(self, obj: dict[str, Any]) -> None:
        default_flow_schema(obj)

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        return self.validate_meta(obj) + validate_flow_schema_spec(obj.get("spec"))


class PriorityLevelStrategy(_FlowControlStrategy):
    def canonicalize(self, obj: dict[str, Any]) -> None:
        default_priority_level(obj)

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        name = str(pr.meta(obj).get("name") or "")
        return self.validate_meta(obj) + validate_priority_level_spec(obj.get("spec"), name)


# -- printers (pkg/printers/internalversion/printers.go) --------------------------------------

def _flow_schema_cells(o: dict[str, Any], clock: Clock) -> list[Any]:
    spec: dict[str, Any] = o["spec"] if isinstance(o.get("spec"), dict) else {}
    method = spec.get("distinguisherMethod")
    dangling = pr.condition(pr.get(o, "status", "conditions"), DANGLING)
    return [pr.meta(o).get("name"), pr.string(pr.get(o, "spec", "priorityLevelConfiguration", "name")),
            pr.integer(spec.get("matchingPrecedence")),
            pr.string(method.get("type")) if isinstance(method, dict) else "<none>",
            clock.since(pr.meta(o).get("creationTimestamp")),
            pr.string(dangling.get("status")) if dangling else "?"]


def _priority_level_cells(o: dict[str, Any], clock: Clock) -> list[Any]:
    shares: Any = "<none>"
    queues: Any = "<none>"
    hand: Any = "<none>"
    limit: Any = "<none>"
    limited = pr.get(o, "spec", "limited")
    if isinstance(limited, dict):
        shares = pr.integer(limited.get("nominalConcurrencyShares"))
        queuing = pr.get(limited, "limitResponse", "queuing")
        if isinstance(queuing, dict):
            queues, hand, limit = (pr.integer(queuing.get(k)) for k in ("queues", "handSize", "queueLengthLimit"))
    return [pr.meta(o).get("name"), pr.string(pr.get(o, "spec", "type")), shares, queues, hand, limit,
            clock.since(pr.meta(o).get("creationTimestamp"))]


FLOW_SCHEMA_PRINTER = Printer((
    NAME,
    Column("PriorityLevel", description="`name` is the name of the priority level configuration being referenced Required."),
    Column("MatchingPrecedence", description="`matchingPrecedence` is used to choose among the FlowSchemas that match a given "
           "request. The chosen FlowSchema is among those with the numerically lowest (which we take to be logically "
           "highest) MatchingPrecedence.  Each MatchingPrecedence value must be ranged in [1,10000]. Note that if the "
           "precedence is not specified, it will be set to 1000 as default."),
    Column("DistinguisherMethod", description="`distinguisherMethod` defines how to compute the flow distinguisher for "
           "requests that match this schema. `nil` specifies that the distinguisher is disabled and thus will always "
           "be the empty string."),
    AGE,
    Column("MissingPL", description="references a broken or non-existent PriorityLevelConfiguration"),
), _flow_schema_cells)

PRIORITY_LEVEL_PRINTER = Printer((
    NAME,
    Column("Type", description="`type` indicates whether this priority level is subject to limitation on request "
           "execution.  A value of `\"Exempt\"` means that requests of this priority level are not subject to a limit "
           "(and thus are never queued) and do not detract from the capacity made available to other priority "
           "levels.  A value of `\"Limited\"` means that (a) requests of this priority level _are_ subject to limits "
           "and (b) some of the server's limited capacity is made available exclusively to this priority level. "
           "Required."),
    Column("NominalConcurrencyShares", description="`nominalConcurrencyShares` (NCS) contributes to the computation of "
           "the NominalConcurrencyLimit (NominalCL) of this level."),
    Column("Queues", description="`queues` is the number of queues for this priority level. The queues exist "
           "independently at each apiserver. The value must be positive.  Setting it to 1 effectively precludes "
           "shufflesharding and thus makes the distinguisher method of associated flow schemas irrelevant.  This "
           "field has a default value of 64."),
    Column("HandSize", description="`handSize` is a small positive number that configures the shuffle sharding of "
           "requests into queues.  When enqueuing a request at this priority level the request's flow identifier (a "
           "string pair) is hashed and the hash value is used to shuffle the list of queues and deal a hand of the "
           "size specified here.  The request is put into one of the shortest queues in that hand. `handSize` must "
           "be no larger than `queues`, and should be significantly smaller (so that a few heavy flows do not "
           "saturate most of the queues).  See the user-facing documentation for more extensive guidance on "
           "setting this field.  This field has a default value of 8."),
    Column("QueueLengthLimit", description="`queueLengthLimit` is the maximum number of requests allowed to be "
           "waiting in a given queue of this priority level at a time; excess requests are rejected.  This value "
           "must be positive.  If not specified, it will be defaulted to 50."),
    AGE,
), _priority_level_cells)


# -- the bootstrap configuration (apiserver/pkg/apis/flowcontrol/bootstrap/default.go) --------

EVERYTHING_RESOURCES = {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": True, "namespaces": ["*"]}
EVERYTHING_NON_RESOURCES = {"verbs": ["*"], "nonResourceURLs": ["*"]}


def _group(name: str) -> dict[str, Any]:
    return {"kind": "Group", "group": {"name": name}}


def _user(name: str) -> dict[str, Any]:
    return {"kind": "User", "user": {"name": name}}


def _service_account(namespace: str, name: str) -> dict[str, Any]:
    return {"kind": "ServiceAccount", "serviceAccount": {"namespace": namespace, "name": name}}


def _everything(*subjects: dict[str, Any]) -> dict[str, Any]:
    return {"subjects": list(subjects), "resourceRules": [EVERYTHING_RESOURCES], "nonResourceRules": [EVERYTHING_NON_RESOURCES]}


def _flow_schema(name: str, level: str, precedence: int, method: str | None, *rules: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"priorityLevelConfiguration": {"name": level}, "matchingPrecedence": precedence}
    if method:
        spec["distinguisherMethod"] = {"type": method}
    spec["rules"] = list(rules)
    return {"name": name, "spec": spec}


def _limited(name: str, shares: int, lendable: int, queuing: tuple[int, int, int] | None) -> dict[str, Any]:
    response: dict[str, Any] = {"type": "Reject"}
    if queuing is not None:
        response = {"type": "Queue", "queuing": {"queues": queuing[0], "handSize": queuing[1], "queueLengthLimit": queuing[2]}}
    return {"name": name, "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": shares,
                                                                "lendablePercent": lendable, "limitResponse": response}}}


AUTHENTICATED_AND_NOT = (_group("system:authenticated"), _group("system:unauthenticated"))

#: the objects the server always keeps (recreated if deleted, their spec kept as shipped)
MANDATORY_PRIORITY_LEVELS = [
    {"name": "exempt", "spec": {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}}},
    _limited("catch-all", 5, 0, None),
]
MANDATORY_FLOW_SCHEMAS = [
    _flow_schema("exempt", "exempt", 1, None, _everything(_group("system:masters"))),
    _flow_schema("catch-all", "catch-all", 10000, "ByUser", _everything(*AUTHENTICATED_AND_NOT)),
]
#: the objects created if missing, kept up to date while their autoupdate annotation is "true"
SUGGESTED_PRIORITY_LEVELS = [
    _limited("system", 30, 33, (64, 6, 50)),
    _limited("node-high", 40, 25, (64, 6, 50)),
    _limited("leader-election", 10, 0, (16, 4, 50)),
    _limited("workload-high", 40, 50, (128, 6, 50)),
    _limited("workload-low", 100, 90, (128, 6, 50)),
    _limited("global-default", 20, 50, (128, 6, 50)),
]
SUGGESTED_FLOW_SCHEMAS = [
    _flow_schema("probes", "exempt", 2, None, {
        "subjects": list(AUTHENTICATED_AND_NOT),
        "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}]}),
    _flow_schema("system-leader-election", "leader-election", 100, "ByUser", {
        "subjects": [_user("system:kube-controller-manager"), _user("system:kube-scheduler"),
                     _service_account("kube-system", "*")],
        "resourceRules": [{"verbs": ["get", "create", "update"], "apiGroups": ["coordination.k8s.io"],
                           "resources": ["leases"], "namespaces": ["*"]}]}),
    # fleetplane's own controllers (``pipeline/user.CONTROLLERS``), as kube's for
    # kube-controller-manager: Lease renewals never wait behind their own bulk (a renewal late by
    # the renew deadline stops the controller, and its restart relists everything: more load)
    _flow_schema("fleetplane-leader-election", "leader-election", 150, "ByUser", {
        "subjects": [_group(CONTROLLERS)],
        "resourceRules": [{"verbs": ["get", "create", "update"], "apiGroups": ["coordination.k8s.io"],
                           "resources": ["leases"], "namespaces": ["*"]}]}),
    _flow_schema("system-node-high", "node-high", 400, "ByUser", {
        "subjects": [_group("system:nodes")],
        "resourceRules": [{"verbs": ["*"], "apiGroups": [""], "resources": ["nodes", "nodes/status"], "clusterScope": True},
                          {"verbs": ["*"], "apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "namespaces": ["*"]}]}),
    _flow_schema("system-nodes", "system", 500, "ByUser", _everything(_group("system:nodes"))),
    _flow_schema("kube-controller-manager", "workload-high", 800, "ByNamespace",
                 _everything(_user("system:kube-controller-manager"))),
    _flow_schema("kube-scheduler", "workload-high", 800, "ByNamespace", _everything(_user("system:kube-scheduler"))),
    _flow_schema("fleetplane-controllers", "workload-high", 800, "ByNamespace", _everything(_group(CONTROLLERS))),
    _flow_schema("kube-system-service-accounts", "workload-high", 900, "ByNamespace",
                 _everything(_service_account("kube-system", "*"))),
    _flow_schema("service-accounts", "workload-low", 9000, "ByUser", _everything(_group("system:serviceaccounts"))),
    _flow_schema("global-default", "global-default", 9900, "ByUser", _everything(*AUTHENTICATED_AND_NOT)),
]


def bootstrap_object(kind: str, item: Mapping[str, Any]) -> dict[str, Any]:
    """A bootstrap object as the server creates it (with kube's autoupdate annotation)."""
    return {"apiVersion": f"{FLOWCONTROL_GROUP}/v1", "kind": kind,
            "metadata": {"name": item["name"], "annotations": {AUTO_UPDATE: "true"}},
            "spec": copy_json(item["spec"])}


def resource_types() -> list[ResourceType]:
    return [
        ResourceType(FLOWCONTROL_GROUP, "v1", "FlowSchema", "flowschemas", "flowschema", False, FlowSchemaStrategy(),
                     subresources=("status",), printer=FLOW_SCHEMA_PRINTER),
        ResourceType(FLOWCONTROL_GROUP, "v1", "PriorityLevelConfiguration", "prioritylevelconfigurations",
                     "prioritylevelconfiguration", False, PriorityLevelStrategy(), subresources=("status",),
                     printer=PRIORITY_LEVEL_PRINTER),
    ]
