"""OpenAPI v3 documents, one per group version, as kube-apiserver publishes them.

What the clients read from them (k8s-api.md §2):

* kubectl's server-side field validation check: a PATCH operation whose
  ``x-kubernetes-group-version-kind`` (an *object* on operations) names the kind and whose
  parameters include the ``fieldValidation`` query parameter. kubectl stops at the first PATCH
  operation of the kind it finds, in random order, so every one (``/status`` too) has it.
* kubectl's client-side apply: strategic merge patch when the PATCH operation's request body
  lists ``application/strategic-merge-patch+json`` (built-in kinds only; custom resources get
  merge patch), with the patch metadata taken from the schemas.
* ``kubectl explain``: ``components.schemas``, found by ``x-kubernetes-group-version-kind``
  (an *array* on schemas), with descriptions, ``allOf: [{$ref}]`` for nested types.

Built-in schemas come from ``openapi_data/k8s-definitions.json`` (Kubernetes 1.32, generated
by ``tools/gen_openapi_data.py``), loaded once on first use. Custom resource schemas are built
from the CRD version's ``openAPIV3Schema`` as apiextensions-apiserver's builder does
(``pkg/controller/openapi/builder``): named ``<reversed group>.<version>.<Kind>``, with
``apiVersion``/``kind``/``metadata`` added. The documents share (never copy) the static parts,
so callers must treat them as read-only; they are built once per catalog generation.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import orjson

from ..registry.types import ResourceType

DATA_FILE = Path(__file__).with_name("openapi_data") / "k8s-definitions.json"
REF = "#/components/schemas/"
META = "io.k8s.apimachinery.pkg.apis.meta.v1."
OBJECT_META = META + "ObjectMeta"
LIST_META = META + "ListMeta"
STATUS = META + "Status"
DELETE_OPTIONS = META + "DeleteOptions"
PATCH = META + "Patch"
WATCH_EVENT = META + "WatchEvent"
API_RESOURCE_LIST = META + "APIResourceList"
SCALE = "io.k8s.api.autoscaling.v1.Scale"
SCALE_GVK = {"group": "autoscaling", "kind": "Scale", "version": "v1"}
#: kinds every group version registers (the data keeps only core/v1's GVK; each document adds its own)
_PER_GV_KINDS = (DELETE_OPTIONS, WATCH_EVENT)

INFO = {"title": "Kubernetes", "version": "v1.32.0"}

# -- the schema data ------------------------------------------------------------------------

_lock = threading.Lock()


@cache
def _data() -> dict:
    return orjson.loads(DATA_FILE.read_bytes())


def definitions() -> dict[str, dict]:
    """The built-in definitions (components.schemas form), by name. Read-only."""
    return _data()["definitions"]


@cache
def _gvk_index() -> dict[tuple[str, str, str], str]:
    index: dict[tuple[str, str, str], str] = {}
    for name, schema in definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or ():
            index.setdefault((gvk["group"], gvk["version"], gvk["kind"]), name)
    return index


_closures: dict[str, frozenset[str]] = {}


def _refs(node: Any, out: set[str]) -> None:
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                if v.startswith(REF):
                    out.add(v[len(REF):])
            else:
                _refs(v, out)
    elif isinstance(node, list):
        for v in node:
            _refs(v, out)


def closure(name: str) -> frozenset[str]:
    """``name`` and every definition it refers to, transitively (memoized)."""
    got = _closures.get(name)
    if got is not None:
        return got
    defs = definitions()
    seen: set[str] = set()
    stack = [name]
    while stack:
        n = stack.pop()
        if n in seen or n not in defs:
            continue
        seen.add(n)
        direct: set[str] = set()
        _refs(defs[n], direct)
        stack.extend(direct - seen)
    result = frozenset(seen)
    with _lock:
        _closures[name] = result
    return result


def field_description(definition: str, *path: str) -> str:
    """The description of a field of a built-in definition (``"...ObjectMeta", "name"``), or ""."""
    defs = definitions()
    schema: Any = defs.get(definition)
    for i, part in enumerate(path):
        if not isinstance(schema, dict):
            return ""
        prop = (schema.get("properties") or {}).get(part)
        if prop is None:
            return ""
        if i == len(path) - 1:
            return prop.get("description", "")
        ref = prop.get("$ref") or ((prop.get("allOf") or [{}])[0].get("$ref"))
        schema = defs.get(ref[len(REF):]) if isinstance(ref, str) else prop
    return schema.get("description", "") if isinstance(schema, dict) else ""


# -- naming -----------------------------------------------------------------------------------


def reversed_group(group: str) -> str:
    """``example.com`` -> ``com.example``, as kube-openapi's ToRESTFriendlyName does."""
    return ".".join(reversed(group.split("."))) if group else "io.k8s.api.core"


def schema_name(rt: ResourceType, kind: str | None = None) -> str:
    """The components.schemas name of the type's kind (or of ``kind``, e.g. its list kind)."""
    kind = kind or rt.kind
    if not rt.custom:
        name = _gvk_index().get((rt.group, rt.version, kind))
        if name is not None:
            return name
    return f"{reversed_group(rt.group)}.{rt.version}.{kind}"


def _operation_prefix(group: str, version: str) -> tuple[str, str]:
    """The group-version part of kube's operationIds and the tag (``CoreV1``, ``core_v1``)."""
    trimmed = group.removesuffix(".k8s.io") if group else "core"
    camel = _valid_operation_id(trimmed, True) + _valid_operation_id(version, True)
    tag = _valid_operation_id(trimmed, False) + "_" + _valid_operation_id(version, False)
    return camel, tag


def _valid_operation_id(s: str, capitalize_first: bool) -> str:
    out = []
    capitalize = capitalize_first
    for i, ch in enumerate(s):
        if ch.isalpha() or ch == "_" or (i != 0 and ch.isdigit()):
            out.append(ch.upper() if capitalize else ch)
            capitalize = False
        else:
            capitalize = True
    return "".join(out)


def _article(kind: str) -> str:
    return " an " if kind[:1].lower() in "aeiou" else " a "


# -- shared pieces of operations ---------------------------------------------------------------


def _query(name: str, typ: str, description: str = "") -> dict:
    p: dict = {"in": "query", "name": name, "schema": {"type": typ, "uniqueItems": True}}
    if description:
        p["description"] = description
    return p


P_PRETTY = _query("pretty", "string", "If 'true', then the output is pretty printed. Defaults to 'false' unless the "
                  "user-agent indicates a browser or command-line HTTP tool (curl and wget).")
P_DRY_RUN = _query("dryRun", "string", "When present, indicates that modifications should not be persisted. An invalid "
                   "or unrecognized dryRun directive will result in an error response and no further processing of the "
                   "request. Valid values are: - All: all dry run stages will be processed")
P_FIELD_MANAGER = _query("fieldManager", "string", "fieldManager is a name associated with the actor or entity that is "
                         "making these changes. The value must be less than or 128 characters long, and only contain "
                         "printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.")
P_FIELD_MANAGER_PATCH = _query("fieldManager", "string", "fieldManager is a name associated with the actor or entity "
                               "that is making these changes. The value must be less than or 128 characters long, and "
                               "only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint. "
                               "This field is required for apply requests (application/apply-patch) but optional for "
                               "non-apply patch types (JsonPatch, MergePatch, StrategicMergePatch).")
P_FIELD_VALIDATION = _query(
    "fieldValidation", "string",
    "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown "
    "or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped "
    "from the object, and will ignore all but the last duplicate field that the decoder encounters. This is the "
    "default behavior prior to v1.23. - Warn: This will send a warning via the standard warning response header for "
    "each unknown field that is dropped from the object, and for each duplicate field that is encountered. The "
    "request will still succeed if there are no other errors, and will only persist the last of any duplicate "
    "fields. This is the default in v1.23+ - Strict: This will fail the request with a BadRequest error if any "
    "unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned "
    "from the server will contain all unknown and duplicate fields encountered.")
P_FORCE = _query("force", "boolean", "Force is going to \"force\" Apply requests. It means user will re-acquire "
                 "conflicting fields owned by other people. Force flag must be unset for non-apply patch requests.")
P_GRACE = _query("gracePeriodSeconds", "integer", "The duration in seconds before the object should be deleted. Value "
                 "must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the "
                 "default grace period for the specified type will be used. Defaults to a per object value if not "
                 "specified. zero means delete immediately.")
P_IGNORE_READ_ERR = _query("ignoreStoreReadErrorWithClusterBreakingPotential", "boolean", "if set to true, it will "
                           "trigger an unsafe deletion of the resource in case the normal deletion flow fails with a "
                           "corrupt object error. A resource is considered corrupt if it can not be retrieved from the "
                           "underlying storage successfully because of a) its data can not be transformed e.g. "
                           "decryption failure, or b) it fails to decode into an object. NOTE: unsafe deletion ignores "
                           "finalizer constraints, skips precondition checks, and removes the object from the storage. "
                           "WARNING: This may potentially break the cluster if the workload associated with the "
                           "resource being unsafe-deleted relies on normal deletion flow. Use only if you REALLY know "
                           "what you are doing. The default value is false, and the user must opt in to enable it")
P_ORPHAN = _query("orphanDependents", "boolean", "Deprecated: please use the PropagationPolicy, this field will be "
                  "deprecated in 1.7. Should the dependent objects be orphaned. If true/false, the \"orphan\" finalizer "
                  "will be added to/removed from the object's finalizers list. Either this field or PropagationPolicy "
                  "may be set, but not both.")
P_PROPAGATION = _query("propagationPolicy", "string", "Whether and how garbage collection will be performed. Either "
                       "this field or OrphanDependents may be set, but not both. The default policy is decided by the "
                       "existing finalizer set in the metadata.finalizers and the resource-specific default policy. "
                       "Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage "
                       "collector to delete the dependents in the background; 'Foreground' - a cascading policy that "
                       "deletes all dependents in the foreground.")
P_ALLOW_BOOKMARKS = _query("allowWatchBookmarks", "boolean", "allowWatchBookmarks requests watch events with type "
                           "\"BOOKMARK\". Servers that do not implement bookmarks may ignore this flag and bookmarks are "
                           "sent at the server's discretion. Clients should not assume bookmarks are returned at any "
                           "specific interval, nor may they assume the server will send any BOOKMARK event during a "
                           "session. If this is not a watch, this field is ignored.")
P_CONTINUE = _query("continue", "string", "The continue option should be set when retrieving more results from the "
                    "server. Since this value is server defined, clients may only use the continue value from a "
                    "previous query result with identical query parameters (except for the value of continue) and "
                    "the server may reject a continue value it does not recognize. If the specified continue value is "
                    "no longer valid whether due to expiration (generally five to fifteen minutes) or a configuration "
                    "change on the server, the server will respond with a 410 ResourceExpired error together with a "
                    "continue token.\n\nThis field is not supported when watch is true. Clients may start a watch from "
                    "the last resourceVersion value returned by the server and not miss any modifications.")
P_FIELD_SELECTOR = _query("fieldSelector", "string", "A selector to restrict the list of returned objects by their "
                          "fields. Defaults to everything.")
P_LABEL_SELECTOR = _query("labelSelector", "string", "A selector to restrict the list of returned objects by their "
                          "labels. Defaults to everything.")
P_LIMIT = _query("limit", "integer", "limit is a maximum number of responses to return for a list call. If more items "
                 "exist, the server will set the `continue` field on the list metadata to a value that can be used "
                 "with the same initial query to retrieve the next set of results. Setting a limit may return fewer "
                 "than the requested amount of items (up to zero items) in the event all requested objects are "
                 "filtered out and clients should only use the presence of the continue field to determine whether "
                 "more results are available. This field is not supported if watch is true.")
P_RV = _query("resourceVersion", "string", "resourceVersion sets a constraint on what resource versions a request may "
              "be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for "
              "details.\n\nDefaults to unset")
P_RV_MATCH = _query("resourceVersionMatch", "string", "resourceVersionMatch determines how resourceVersion is applied "
                    "to list calls. It is highly recommended that resourceVersionMatch be set for list calls where "
                    "resourceVersion is set See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions "
                    "for details.\n\nDefaults to unset")
P_SEND_INITIAL = _query("sendInitialEvents", "boolean", "`sendInitialEvents=true` may be set together with "
                        "`watch=true`. In that case, the watch stream will begin with synthetic events to produce the "
                        "current state of objects in the collection. Once all such events have been sent, a synthetic "
                        "\"Bookmark\" event  will be sent. The bookmark will report the ResourceVersion (RV) "
                        "corresponding to the set of objects, and be marked with "
                        "`\"k8s.io/initial-events-end\": \"true\"` annotation. Afterwards, the watch stream will proceed "
                        "as usual, sending watch events corresponding to changes (subsequent to the RV) to objects "
                        "watched.")
P_TIMEOUT = _query("timeoutSeconds", "integer", "Timeout for the list/watch call. This limits the duration of the "
                   "call, regardless of any activity or inactivity.")
P_WATCH = _query("watch", "boolean", "Watch for changes to the described resources and return them as a stream of add, "
                 "update, and remove notifications. Specify resourceVersion.")
P_NAMESPACE = {"description": "object name and auth scope, such as for teams and projects", "in": "path",
               "name": "namespace", "required": True, "schema": {"type": "string", "uniqueItems": True}}

LIST_PARAMS = [P_ALLOW_BOOKMARKS, P_CONTINUE, P_FIELD_SELECTOR, P_LABEL_SELECTOR, P_LIMIT, P_RV, P_RV_MATCH,
               P_SEND_INITIAL, P_TIMEOUT, P_WATCH]
WRITE_PARAMS = [P_DRY_RUN, P_FIELD_MANAGER, P_FIELD_VALIDATION]
PATCH_PARAMS = [P_DRY_RUN, P_FIELD_MANAGER_PATCH, P_FIELD_VALIDATION, P_FORCE]
DELETE_PARAMS = [P_DRY_RUN, P_GRACE, P_IGNORE_READ_ERR, P_ORPHAN, P_PROPAGATION]
DELETECOLLECTION_PARAMS = [*DELETE_PARAMS, P_CONTINUE, P_FIELD_SELECTOR, P_LABEL_SELECTOR, P_LIMIT, P_RV, P_RV_MATCH,
                           P_SEND_INITIAL, P_TIMEOUT]

MEDIA_BUILTIN = ("application/json", "application/yaml", "application/vnd.kubernetes.protobuf")
MEDIA_CUSTOM = ("application/json", "application/yaml")
MEDIA_WATCH = ("application/json", "application/json;stream=watch", "application/vnd.kubernetes.protobuf",
               "application/vnd.kubernetes.protobuf;stream=watch", "application/yaml")
PATCH_TYPES_CUSTOM = ("application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json")
PATCH_TYPES_BUILTIN = ("application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json",
                       "application/strategic-merge-patch+json")
UNAUTHORIZED = {"description": "Unauthorized"}


def patch_media_types(rt: ResourceType) -> tuple[str, ...]:
    """The patch Content-Types the PATCH operations list: no strategic merge patch for CRs."""
    return PATCH_TYPES_CUSTOM if rt.custom else PATCH_TYPES_BUILTIN


@cache
def _ref(name: str) -> dict:
    return {"$ref": REF + name}


@cache
def _content(name: str, media: tuple[str, ...]) -> dict:
    schema = _ref(name)
    return {m: {"schema": schema} for m in media}


@cache
def _response(name: str, media: tuple[str, ...], description: str) -> dict:
    return {"content": _content(name, media), "description": description}


class _Ops:
    """Builds the operations of one resource (and its subresources)."""

    def __init__(self, rt: ResourceType, kind_name: str, list_name: str) -> None:
        self.rt = rt
        self.kind_name = kind_name
        self.list_name = list_name
        self.gvk = {"group": rt.group, "kind": rt.kind, "version": rt.version}
        self.prefix, tag = _operation_prefix(rt.group, rt.version)
        self.tags = [tag]
        self.media = MEDIA_CUSTOM if rt.custom else MEDIA_BUILTIN
        self.body_media = MEDIA_CUSTOM if rt.custom else ("*/*",)

    def op(self, verb: str, action: str, op_name: str, description: str, params: list, responses: dict,
           body: dict | None = None, gvk: dict | None = None) -> dict:
        o: dict = {"description": description, "operationId": verb + self.prefix + op_name}
        if params:
            o["parameters"] = params
        if body is not None:
            o["requestBody"] = body
        o["responses"] = responses
        o["tags"] = self.tags
        o["x-kubernetes-action"] = action
        o["x-kubernetes-group-version-kind"] = gvk or self.gvk
        return o

    def ok(self, name: str, *extra: tuple[str, str]) -> dict:
        r = {"200": _response(name, self.media, "OK")}
        for code, desc in extra:
            r[code] = _response(name, self.media, desc)
        r["401"] = UNAUTHORIZED
        return r

    def body(self, name: str, media: tuple[str, ...] | None = None) -> dict:
        return {"content": _content(name, media or self.body_media), "required": True}


def _resource_paths(rt: ResourceType, paths: dict) -> None:
    kind_name = schema_name(rt)
    list_name = schema_name(rt, rt.list_kind)
    ops = _Ops(rt, kind_name, list_name)
    kind = rt.kind
    verbs = set(rt.verbs)
    base = f"/api/{rt.version}" if not rt.group else f"/apis/{rt.group}/{rt.version}"
    ns = "Namespaced" if rt.namespaced else ""
    scope = f"{base}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced else f"{base}/{rt.plural}"
    scope_params = [P_NAMESPACE, P_PRETTY] if rt.namespaced else [P_PRETTY]
    p_name = {"description": f"name of the {kind}", "in": "path", "name": "name", "required": True,
              "schema": {"type": "string", "uniqueItems": True}}
    item_params = [p_name, P_NAMESPACE, P_PRETTY] if rt.namespaced else [p_name, P_PRETTY]

    collection: dict = {}
    if "list" in verbs:
        collection["get"] = ops.op("list", "list", ns + kind, f"list or watch objects of kind {kind}", LIST_PARAMS,
                                   _list_responses(ops, list_name))
    if "create" in verbs:
        collection["post"] = ops.op("create", "post", ns + kind, "create" + _article(kind) + kind, WRITE_PARAMS,
                                    ops.ok(kind_name, ("201", "Created"), ("202", "Accepted")), ops.body(kind_name))
    if "deletecollection" in verbs:
        collection["delete"] = ops.op("delete", "deletecollection", "Collection" + ns + kind,
                                      f"delete collection of {kind}", DELETECOLLECTION_PARAMS, ops.ok(STATUS),
                                      {"content": _content(DELETE_OPTIONS, ops.body_media)})
    if collection:
        collection["parameters"] = scope_params
        paths[scope] = collection

    item: dict = {}
    if "get" in verbs:
        item["get"] = ops.op("read", "get", ns + kind, f"read the specified {kind}", [], ops.ok(kind_name))
    if "update" in verbs:
        item["put"] = ops.op("replace", "put", ns + kind, f"replace the specified {kind}", WRITE_PARAMS,
                             ops.ok(kind_name, ("201", "Created")), ops.body(kind_name))
    if "patch" in verbs:
        item["patch"] = ops.op("patch", "patch", ns + kind, f"partially update the specified {kind}", PATCH_PARAMS,
                               ops.ok(kind_name, ("201", "Created")), ops.body(PATCH, patch_media_types(rt)))
    if "delete" in verbs:
        item["delete"] = ops.op("delete", "delete", ns + kind, "delete" + _article(kind) + kind, DELETE_PARAMS,
                                ops.ok(STATUS, ("202", "Accepted")),
                                {"content": _content(DELETE_OPTIONS, ops.body_media)})
    if item:
        item["parameters"] = item_params
        paths[scope + "/{name}"] = item

    if rt.namespaced and "list" in verbs:
        paths[f"{base}/{rt.plural}"] = {
            "get": ops.op("list", "list", kind + "ForAllNamespaces", f"list or watch objects of kind {kind}", [],
                          _list_responses(ops, list_name)),
            "parameters": [*LIST_PARAMS, P_PRETTY],
        }

    if "watch" in verbs and not rt.custom:
        # The deprecated watch paths kube still publishes for built-in kinds (CRDs have none).
        wbase = f"{base}/watch/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced else f"{base}/watch/{rt.plural}"
        watch_ok = {"200": _response(WATCH_EVENT, MEDIA_WATCH, "OK"), "401": UNAUTHORIZED}
        paths[wbase] = {
            "get": ops.op("watch", "watchlist", ns + kind + "List",
                          f"watch individual changes to a list of {kind}. deprecated: use the 'watch' parameter "
                          "with a list operation instead.", [], watch_ok),
            "parameters": [*LIST_PARAMS, *scope_params],
        }
        paths[wbase + "/{name}"] = {
            "get": ops.op("watch", "watch", ns + kind,
                          f"watch changes to an object of kind {kind}. deprecated: use the 'watch' parameter with "
                          "a list operation instead, filtered to a single item with the 'fieldSelector' parameter.",
                          [], watch_ok),
            "parameters": [*LIST_PARAMS, *item_params],
        }
        if rt.namespaced:
            paths[f"{base}/watch/{rt.plural}"] = {
                "get": ops.op("watch", "watchlist", kind + "ListForAllNamespaces",
                              f"watch individual changes to a list of {kind}. deprecated: use the 'watch' parameter "
                              "with a list operation instead.", [], watch_ok),
                "parameters": [*LIST_PARAMS, P_PRETTY],
            }

    subresources = set(rt.subresources)
    if "status" in subresources:
        paths[scope + "/{name}/status"] = {
            "get": ops.op("read", "get", ns + kind + "Status", f"read status of the specified {kind}", [],
                          ops.ok(kind_name)),
            "parameters": item_params,
            "patch": ops.op("patch", "patch", ns + kind + "Status", f"partially update status of the specified {kind}",
                            PATCH_PARAMS, ops.ok(kind_name, ("201", "Created")), ops.body(PATCH, patch_media_types(rt))),
            "put": ops.op("replace", "put", ns + kind + "Status", f"replace status of the specified {kind}",
                          WRITE_PARAMS, ops.ok(kind_name, ("201", "Created")), ops.body(kind_name)),
        }
    if "scale" in subresources:
        scale_gvk = None if rt.custom else SCALE_GVK
        paths[scope + "/{name}/scale"] = {
            "get": ops.op("read", "get", ns + kind + "Scale", f"read scale of the specified {kind}", [],
                          ops.ok(SCALE), gvk=scale_gvk),
            "parameters": item_params,
            "patch": ops.op("patch", "patch", ns + kind + "Scale", f"partially update scale of the specified {kind}",
                            PATCH_PARAMS, ops.ok(SCALE, ("201", "Created")), ops.body(PATCH, patch_media_types(rt)),
                            gvk=scale_gvk),
            "put": ops.op("replace", "put", ns + kind + "Scale", f"replace scale of the specified {kind}",
                          WRITE_PARAMS, ops.ok(SCALE, ("201", "Created")), ops.body(SCALE), gvk=scale_gvk),
        }
    if "finalize" in subresources:
        paths[scope + "/{name}/finalize"] = {
            "parameters": [*item_params[:-1], P_DRY_RUN, P_FIELD_MANAGER, P_FIELD_VALIDATION, P_PRETTY],
            "put": ops.op("replace", "put", ns + kind + "Finalize", f"replace finalize of the specified {kind}", [],
                          ops.ok(kind_name, ("201", "Created")), ops.body(kind_name)),
        }


def _list_responses(ops: _Ops, list_name: str) -> dict:
    media = MEDIA_CUSTOM if ops.rt.custom else MEDIA_WATCH
    return {"200": _response(list_name, media, "OK"), "401": UNAUTHORIZED}


# -- custom resource schemas -------------------------------------------------------------------

_TYPEMETA_API_VERSION = {
    "description": "APIVersion defines the versioned schema of this representation of an object. Servers should "
                   "convert recognized schemas to the latest internal value, and may reject unrecognized values. "
                   "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
    "type": "string",
}
_TYPEMETA_KIND = {
    "description": "Kind is a string value representing the REST resource this object represents. Servers may infer "
                   "this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: "
                   "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
    "type": "string",
}
_METADATA_DOC = ("Standard object's metadata. More info: "
                 "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata")
_METADATA = {"allOf": [_ref(OBJECT_META)], "description": _METADATA_DOC}
_EMBEDDED_API_VERSION = {
    "description": "apiVersion defines the versioned schema of this representation of an object. More info: "
                   "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
    "type": "string",
}
_EMBEDDED_KIND = {
    "description": "kind is a string value representing the type of this object. In CamelCase. More info: "
                   "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
    "type": "string",
}
_OPEN_OBJECT = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
_INT_OR_STRING_ANY_OF = [{"type": "integer"}, {"type": "string"}]

_cr_cache: dict[tuple[int, str, str, str], tuple[dict, dict]] = {}


def _unfold(node: Any) -> Any:
    """Structural-schema unfolding for publication: int-or-string gets its ``anyOf``, embedded
    resources get apiVersion/kind/metadata. Returns ``node`` itself when nothing changes."""
    if not isinstance(node, dict):
        return node
    changed: dict | None = None
    props = node.get("properties")
    if isinstance(props, dict):
        new_props = None
        for k, v in props.items():
            nv = _unfold(v)
            if nv is not v:
                if new_props is None:
                    new_props = dict(props)
                new_props[k] = nv
        if new_props is not None:
            changed = dict(node)
            changed["properties"] = new_props
    for key in ("items", "additionalProperties"):
        sub = node.get(key)
        if isinstance(sub, dict):
            ns = _unfold(sub)
            if ns is not sub:
                changed = changed if changed is not None else dict(node)
                changed[key] = ns
    if node.get("x-kubernetes-int-or-string") is True and "anyOf" not in node and "allOf" not in node:
        changed = changed if changed is not None else dict(node)
        changed["anyOf"] = _INT_OR_STRING_ANY_OF
    if node.get("x-kubernetes-embedded-resource") is True:
        changed = changed if changed is not None else dict(node)
        props = dict(changed.get("properties") or {})
        props["apiVersion"] = _EMBEDDED_API_VERSION
        props["kind"] = _EMBEDDED_KIND
        props["metadata"] = _METADATA
        changed["properties"] = props
        required = list(changed.get("required") or [])
        for f in ("kind", "apiVersion"):
            if f not in required:
                required.append(f)
        changed["required"] = required
    return changed if changed is not None else node


def _custom_schemas(rt: ResourceType) -> tuple[dict, dict]:
    """The kind and list schemas of a custom resource (cached per source schema object)."""
    source = rt.openapi_schema
    key = (id(source), rt.group, rt.version, rt.kind + "/" + rt.list_kind)
    hit = _cr_cache.get(key)
    if hit is not None and hit[0] is source:
        return hit[1]["kind"], hit[1]["list"]
    gvk = [{"group": rt.group, "kind": rt.kind, "version": rt.version}]
    if isinstance(source, dict):
        kind_schema = dict(_unfold(source))
        props = dict(kind_schema.get("properties") or {})
        props["metadata"] = _METADATA
        props["apiVersion"] = _TYPEMETA_API_VERSION
        props["kind"] = _TYPEMETA_KIND
        kind_schema["properties"] = props
        kind_schema.setdefault("type", "object")
    else:
        kind_schema = {"type": "object"}
    kind_schema["x-kubernetes-group-version-kind"] = gvk
    list_schema = {
        "description": f"{rt.list_kind} is a list of {rt.kind}",
        "properties": {
            "apiVersion": _TYPEMETA_API_VERSION,
            "items": {
                "description": f"List of {rt.plural}. More info: "
                               "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md",
                "items": _ref(schema_name(rt)),
                "type": "array",
            },
            "kind": _TYPEMETA_KIND,
            "metadata": {"allOf": [_ref(LIST_META)],
                         "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"},
        },
        "required": ["items"],
        "type": "object",
        "x-kubernetes-group-version-kind": [{"group": rt.group, "kind": rt.list_kind, "version": rt.version}],
    }
    if len(_cr_cache) > 4096:
        _cr_cache.clear()
    _cr_cache[key] = (source, {"kind": kind_schema, "list": list_schema})  # type: ignore[assignment]
    return kind_schema, list_schema


# -- documents ---------------------------------------------------------------------------------


def _gv_path(group_version: str) -> str:
    if group_version.startswith(("api/", "apis/")):
        return group_version
    return f"apis/{group_version}" if "/" in group_version else f"api/{group_version}"


def root_document(group_versions: Iterable[str], hashes: Mapping[str, str]) -> dict:
    """``GET /openapi/v3``: one entry per group version.

    ``group_versions`` are group versions (``v1``, ``apps/v1``) or document paths (``api/v1``,
    ``apis/apps/v1``); ``hashes`` is keyed the same way (see :func:`document_hash`).
    """
    paths = {}
    for gv in group_versions:
        path = _gv_path(gv)
        h = hashes.get(gv) or hashes.get(path) or ""
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={h}"}
    return {"paths": paths}


def group_version_document(group_version: str, types: list[ResourceType]) -> dict:
    """The OpenAPI 3.0 document of one group version (``v1``, ``apps/v1``) serving ``types``."""
    group, _, version = group_version.rpartition("/")
    defs = definitions()
    paths: dict = {}
    schemas: dict = {}
    wanted: set[str] = set()
    base = f"/api/{version}/" if not group else f"/apis/{group}/{version}/"
    prefix, tag = _operation_prefix(group, version)
    paths[base] = {"get": {
        "description": "get available resources", "operationId": "get" + prefix + "APIResources",
        "responses": {"200": _response(API_RESOURCE_LIST, MEDIA_BUILTIN, "OK"), "401": UNAUTHORIZED},
        "tags": [tag],
    }}
    for name in (API_RESOURCE_LIST, STATUS, DELETE_OPTIONS, PATCH, WATCH_EVENT, OBJECT_META, LIST_META):
        wanted |= closure(name)
    for rt in sorted(types, key=lambda t: (t.kind, t.plural)):
        if rt.custom or schema_name(rt) not in defs or schema_name(rt, rt.list_kind) not in defs:
            kind_schema, list_schema = _builtin_fallback(rt) if not rt.custom else _custom_schemas(rt)
            schemas[schema_name(rt)] = kind_schema
            schemas[schema_name(rt, rt.list_kind)] = list_schema
        else:
            wanted |= closure(schema_name(rt))
            wanted |= closure(schema_name(rt, rt.list_kind))
        if "scale" in rt.subresources:
            wanted |= closure(SCALE)
        _resource_paths(rt, paths)
    gv_entry = {"group": group, "kind": "", "version": version}
    for name in sorted(wanted):
        schema = defs[name]
        if name in _PER_GV_KINDS and group_version != "v1":
            gvks = schema["x-kubernetes-group-version-kind"]
            schema = dict(schema)
            schema["x-kubernetes-group-version-kind"] = [*gvks, dict(gv_entry, kind=gvks[0]["kind"])]
        schemas.setdefault(name, schema)
    return {
        "components": {
            "schemas": schemas,
            "securitySchemes": {"BearerToken": {"description": "Bearer Token authentication", "in": "header",
                                                "name": "authorization", "type": "apiKey"}},
        },
        "info": INFO,
        "openapi": "3.0.0",
        "paths": paths,
        "security": [{"BearerToken": []}],
    }


def _builtin_fallback(rt: ResourceType) -> tuple[dict, dict]:
    """A served non-CRD kind without schema data: its ``openapi_schema`` if set, else an open object."""
    rt_open = ResourceType(rt.group, rt.version, rt.kind, rt.plural, rt.singular, rt.namespaced,
                           list_kind=rt.list_kind, custom=True, openapi_schema=rt.openapi_schema or _OPEN_OBJECT)
    return _custom_schemas(rt_open)


def document_hash(doc: dict) -> str:
    """A stable hex digest of the document (kube uses SHA-512 of the JSON, in upper case)."""
    return hashlib.sha512(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)).hexdigest().upper()
