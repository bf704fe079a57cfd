"""Resource endpoints: one handler per verb, each turning HTTP into a registry call.

The registry does the semantics; this module does what is HTTP: query parameters, body
decoding, status codes, Tables, and the Scale view of a resource.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
from prometheus_client import Gauge

from ..apimachinery import errors as e
from ..apimachinery.errors import StatusError
from ..apimachinery.fields import FieldSelector
from ..apimachinery.labels import LabelSelector, format_label_selector
from ..registry.crd import accepts_strategic_merge_patch
from ..registry.decode import check_delete_options
from ..registry.hub import Registry
from ..registry.offload import OFF_LOOP_BYTES, off_loop
from ..registry.store import Context, ListOptions, copy_obj
from ..registry.types import ResourceType
from . import codec, streaming, tables
from .filters import request_verb
from .http import Request, respond, respond_json
from .request import RequestInfo
from .watch import DEFAULT_BOOKMARK_INTERVAL, serve_watch

FIELD_VALIDATION = ("", "Ignore", "Warn", "Strict")


def field_selector_error(rt: ResourceType) -> str:
    if rt.custom:
        allowed = ", ".join(f'"{f}"' for f in rt.field_selectors)
        return '"{field}" is not a known field selector: only ' + allowed
    return "field label not supported: {field}"


def list_options(req: Request, rt: ResourceType, watch: bool = False, name: str = "") -> ListOptions:
    """The list or watch options of ``req``; a ``name`` (a watch of one object, kube's
    ``.../watch/.../<name>`` route) becomes a ``metadata.name`` field requirement."""
    opts = ListOptions()
    opts.label_selector = LabelSelector.parse(req.param("labelSelector"))
    fields = ",".join(f for f in (req.param("fieldSelector"), name and f"metadata.name={name}") if f)
    opts.field_selector = FieldSelector.parse(fields, rt.field_selectors, field_selector_error(rt))
    limit = req.param("limit")
    if limit:
        try:
            opts.limit = max(int(limit), 0)
        except ValueError:
            raise e.bad_request(f'invalid value for limit: "{limit}"') from None
    opts.continue_token = req.param("continue")
    opts.resource_version = req.param("resourceVersion")
    opts.resource_version_match = req.param("resourceVersionMatch")
    match, rv = opts.resource_version_match, opts.resource_version
    errs: list[e.FieldError] = []
    if watch:
        # apimachinery/pkg/apis/meta/internalversion/validation: validateWatchOptions
        initial = req.param("sendInitialEvents")
        if initial and match != "NotOlderThan":
            errs.append(e.forbidden("resourceVersionMatch", "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
        if match:
            if not initial:
                errs.append(e.forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"))
            if match != "NotOlderThan":
                errs.append(e.not_supported("resourceVersionMatch", match, ["NotOlderThan"]))
            if not req.flag("allowWatchBookmarks"):
                errs.append(e.forbidden("allowWatchBookmarks", "allowWatchBookmarks must be set to true when sendInitialEvents is provided"))
    elif match:
        if match not in ("NotOlderThan", "Exact"):
            errs.append(e.not_supported("resourceVersionMatch", match, ["Exact", "NotOlderThan", ""]))
        if not rv:
            errs.append(e.forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden unless resourceVersion is provided"))
        if opts.continue_token:
            errs.append(e.forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"))
        if match == "Exact" and rv == "0":
            errs.append(e.forbidden("resourceVersionMatch", 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))
    if errs:
        raise _invalid_list_options(errs)
    return opts


def _invalid_list_options(errs: list[e.FieldError]) -> StatusError:
    return e.invalid_object("meta.k8s.io", "ListOptions", "", errs)


def make_context(req: Request, info: RequestInfo, rt: ResourceType) -> Context:
    ns = info.namespace if rt.namespaced else ""
    manager = req.param("fieldManager")
    if len(manager) > 128:
        raise e.invalid_object("meta.k8s.io", "PatchOptions", "", [e.too_long("fieldManager", 128)])
    if not manager:
        ua = req.headers.get("user-agent", "")
        manager = ua.split("/", 1)[0][:128] if ua else "unknown"
    dry = req.query.get("dryRun", [])
    for d in dry:
        if d != "All":
            raise e.invalid_object("meta.k8s.io", "CreateOptions", "", [e.not_supported("dryRun", d, ["All"])])
    fv = req.param("fieldValidation")
    if fv not in FIELD_VALIDATION:
        raise e.invalid_object("meta.k8s.io", "CreateOptions", "", [e.not_supported("fieldValidation", fv, ["Ignore", "Strict", "Warn"])])
    ctx = Context(info.cluster, ns, manager, bool(dry), fv, req.warnings, req.user, req.audit_annotations)
    return ctx


def wants_table(req: Request) -> bool:
    accept = req.accept
    return "as=Table" in accept and "g=meta.k8s.io" in accept


def include_object(req: Request) -> str:
    value = req.param("includeObject") or "Metadata"
    if value not in ("Metadata", "Object", "None"):
        raise e.bad_request(f'includeObject must be one of "Metadata", "Object" or "None", not "{value}"')
    return value


class ResourceHandler:
    def __init__(self, registry: Registry, bookmark_interval: float = DEFAULT_BOOKMARK_INTERVAL, *,
                 watchers: Gauge) -> None:
        self.registry = registry
        self.store = registry.store
        self.bookmark_interval = bookmark_interval
        #: open watch streams per resource, in the app's metrics
        self.watchers = watchers        #: the pipeline's check of an object read by name, once it is known (label scopes)
        self.object_check: Callable[[Any, dict], None] | None = None

    async def handle(self, req: Request, info: RequestInfo) -> None:
        rt = self.registry.catalog.lookup(info.cluster, info.group, info.version, info.resource)
        if rt is None and info.group:
            # A CRD written through another replica a moment ago: catch up, then look again.
            await self.registry.cache.sync()
            rt = self.registry.catalog.lookup(info.cluster, info.group, info.version, info.resource)
        if rt is None or (info.namespace and not rt.namespaced) or (info.subresource and info.subresource not in rt.subresources):
            raise StatusError(404, "NotFound", "the server could not find the requested resource", {})
        if rt.warning:
            req.warnings.append(rt.warning)
        method = req.method
        if info.cluster == "*":
            if method != "GET" or info.name:
                raise e.method_not_allowed(f"{method} is not allowed across logical clusters: only list and watch are served on /clusters/*")
        else:
            await self.registry.ensure_cluster(info.cluster)
        if not info.subresource and request_verb(req, info) not in rt.verbs:
            raise e.method_not_allowed()
        if rt.rest is not None or (info.subresource and info.subresource in rt.subresource_rest):
            await self.virtual(req, info, rt)
            return
        if method == "GET":
            if (info.watch or req.flag("watch")) and not info.subresource:
                await self.watch(req, info, rt)
            elif info.name:
                await self.get(req, info, rt)
            else:
                await self.list(req, info, rt)
        elif method == "POST" and not info.name:
            await self.create(req, info, rt)
        elif method == "PUT" and info.name:
            await self.update(req, info, rt)
        elif method == "PATCH" and info.name:
            await self.patch(req, info, rt)
        elif method == "DELETE" and info.name and not info.subresource:
            await self.delete(req, info, rt)
        elif method == "DELETE" and not info.name:
            await self.delete_collection(req, info, rt)
        else:
            raise e.method_not_allowed()

    # -- reads ----------------------------------------------------------------------------

    async def _write_object(self, req: Request, status: int, rt: ResourceType, obj: dict) -> None:
        if wants_table(req):
            await respond_json(req, status, tables.to_table(rt, [obj], include_object=include_object(req),
                                                            list_metadata={"resourceVersion": obj["metadata"].get("resourceVersion", "")}))
        else:
            await respond_json(req, status, obj)

    async def get(self, req: Request, info: RequestInfo, rt: ResourceType) -> None:
        ctx = make_context(req, info, rt)
        obj = await self.store.get(rt, ctx, info.name)
        if self.object_check is not None and req.attributes is not None:
            self.object_check(req.attributes, obj)
        if info.subresource == "scale":
            await respond_json(req, 200, self._scale_of(rt, obj))
            return
        await self._write_object(req, 200, rt, obj)

    async def list(self, req: Request, info: RequestInfo, rt: ResourceType) -> None:
        if req.param("sendInitialEvents"):
            raise _invalid_list_options([e.forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list")])
        opts = list_options(req, rt)
        ctx = make_context(req, info, rt)
        if wants_table(req):
            result = await self.store.list(rt, ctx, opts)
            body = tables.to_table(rt, result["items"], include_object=include_object(req), list_metadata=result["metadata"])
            await respond_json(req, 200, body)
            return
        await respond(req, 200, await self.store.list_json(rt, ctx, opts))

    async def watch(self, req: Request, info: RequestInfo, rt: ResourceType) -> None:
        opts = list_options(req, rt, watch=True, name=info.name)
        await serve_watch(req, self.store, rt, make_context(req, info, rt), opts,
                          table=wants_table(req), include_object=include_object(req) if wants_table(req) else "",
                          bookmark_interval=self.bookmark_interval, watchers=self.watchers)

    # -- writes ---------------------------------------------------------------------------

    async def _body_object(self, req: Request, rt: ResourceType, ctx: Context) -> dict:
        body = await req.body()
        ctx.body_size = len(body)
        obj = await off_loop(_decode_cost(req.content_type, body), codec.decode_object, req.content_type, body, rt.kind)
        if req.keep_body:
            req.decoded_body = copy_obj(obj)  # as sent: the store changes ``obj``
        # As kube's decoder does, a body without apiVersion/kind takes the endpoint's.
        if not obj.get("apiVersion") and not obj.get("kind"):
            obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
        elif not obj.get("kind") or not obj.get("apiVersion"):
            missing = "Kind" if not obj.get("kind") else "apiVersion"
            raise e.bad_request(f"Object '{missing}' is missing in '{_short(obj)}'")
        return obj

    def _check_gvk(self, rt: ResourceType, obj: dict) -> None:
        if obj.get("kind") != rt.kind or obj.get("apiVersion") != rt.api_version:
            raise e.bad_request(
                f'the API version in the data ({obj.get("apiVersion")}) does not match the expected API version ({rt.api_version})'
                if obj.get("apiVersion") != rt.api_version
                else f'the kind in the data ({obj.get("kind")}) does not match the expected kind ({rt.kind})')

    async def create(self, req: Request, info: RequestInfo, rt: ResourceType) -> None:
        ctx = make_context(req, info, rt)
        obj = await self._body_object(req, rt, ctx)
        self._check_gvk(rt, obj)
        body_ns = (obj.get("metadata") or {}).get("namespace") if isinstance(obj.get("metadata"), dict) else None
        if rt.namespaced and body_ns and body_ns != info.namespace:
            raise e.bad_request("the namespace of the provided object does not match the namespace sent on the request")
        if rt.namespaced and not info.namespace:
            raise StatusError(404, "NotFound", "the server could not find the requested resource", {})
        if rt is self.registry.catalog.logical_cluster:
            created = await self.registry.create_cluster((obj.get("metadata") or {}).get("name", ""), obj, ctx)
        else:
            created = await self.store.create(rt, ctx, obj)
        await self._write_object(req, 201, rt, created)

    async def update(self, req: Request, info: RequestInfo, rt: ResourceType) -> None:
        ctx = make_context(req, info, rt)
        obj = await self._body_object(req, rt, ctx)
        if info.subresource == "scale":
            updated = await self._update_scale(rt, ctx, info.name, lambda scale: obj)
            await respond_json(req, 200, updated)
            return
        self._check_gvk(rt, obj)
        result = await self.store.update(rt, ctx, info.name, obj, subresource=info.subresource)
        await self._write_object(req, 200, rt, result)

    async def patch(self, req: Request, info: RequestInfo, rt: ResourceType) -> None:
        ctx = make_context(req, info, rt)
        raw = await req.body()
        ctx.body_size = len(raw)
        smp = accepts_strategic_merge_patch(rt)
        kind, body = await off_loop(_decode_cost(req.content_type, raw), codec.decode_patch, req.content_type, raw,
                                    custom=not smp)
        if req.keep_body:
            req.decoded_body = copy_obj(body)
        if kind == "strategic" and not smp:
            raise e.unsupported_media_type(
                "the body of the request was in an unknown format - accepted media types include: "
                "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml")
        force = req.flag("force")
        if req.param("force") and kind != "apply":
            raise e.invalid_object("meta.k8s.io", "PatchOptions", "", [e.forbidden("force", "may not be specified for non-apply patch")])
        if info.subresource == "scale":
            from ..registry import patch as patching

            def apply_to_scale(scale: dict) -> dict:
                if kind == "json":
                    return patching.apply_json_patch(scale, body)
                if kind == "apply":
                    return patching.apply_merge_patch(scale, body)
                return patching.apply_merge_patch(scale, body)

            updated = await self._update_scale(rt, ctx, info.name, apply_to_scale)
            await respond_json(req, 200, updated)
            return
        obj, created = await self.store.patch(rt, ctx, info.name, kind, body, subresource=info.subresource, force=force)
        await self._write_object(req, 201 if created else 200, rt, obj)

    async def delete(self, req: Request, info: RequestInfo, rt: ResourceType) -> None:
        ctx = make_context(req, info, rt)
        options = await self._delete_options(req, ctx)
        obj, code, is_object = await self.store.delete(rt, ctx, info.name, options)
        if is_object:
            await self._write_object(req, code, rt, obj)
            return
        await respond_json(req, 200, {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": {"name": info.name, "group": rt.group, "kind": rt.plural, "uid": obj["metadata"].get("uid")}})

    async def delete_collection(self, req: Request, info: RequestInfo, rt: ResourceType) -> None:
        ctx = make_context(req, info, rt)
        options = await self._delete_options(req, ctx)
        opts = list_options(req, rt)
        listed = await self.store.list(rt, ctx, ListOptions(opts.label_selector, opts.field_selector))
        items = []
        for item in listed["items"]:
            item_ctx = Context(ctx.cluster, item["metadata"].get("namespace", ""), ctx.manager, ctx.dry_run, warnings=ctx.warnings,
                               user=ctx.user, audit_annotations=ctx.audit_annotations)
            try:
                obj, _, _ = await self.store.delete(rt, item_ctx, item["metadata"]["name"], options)
                items.append(obj)
            except StatusError as err:
                if err.code != 404:
                    raise
        await respond_json(req, 200, {"kind": rt.list_kind, "apiVersion": rt.api_version,
                                      "metadata": {"resourceVersion": listed["metadata"]["resourceVersion"]}, "items": items})

    async def _delete_options(self, req: Request, ctx: Context) -> dict[str, Any]:
        """DeleteOptions from the body and the query alike (kubectl 1.32 sends ``dryRun`` in
        the body); a dry run asked for either way makes the whole request a dry run."""
        body = await req.body()
        options: dict[str, Any] = {}
        if body.strip():
            decoded = codec.decode_object(req.content_type, body) if req.content_type != codec.PROTOBUF else {}
            options = check_delete_options(decoded)
        if req.param("propagationPolicy"):
            options["propagationPolicy"] = req.param("propagationPolicy")
        if req.param("orphanDependents"):
            options["orphanDependents"] = req.flag("orphanDependents")
        if req.query.get("dryRun"):
            options["dryRun"] = req.query["dryRun"]
        dry = options.get("dryRun")
        if dry is not None:
            if not isinstance(dry, list) or any(d != "All" for d in dry):
                bad = dry if not isinstance(dry, list) else next(d for d in dry if d != "All")
                raise e.invalid_object("meta.k8s.io", "DeleteOptions", "", [e.not_supported("dryRun", bad, ["All"])])
            ctx.dry_run = ctx.dry_run or bool(dry)
        return options

    # -- virtual resources ------------------------------------------------------------------

    async def virtual(self, req: Request, info: RequestInfo, rt: ResourceType) -> None:
        """A resource (or subresource) whose storage is not the generic store: the access
        reviews, TokenReview, SelfSubjectReview (create-only, never stored) and TokenRequest;
        the streams of a Pod (see :mod:`.streaming`)."""
        storage = rt.subresource_rest.get(info.subresource) if info.subresource else None
        if isinstance(storage, streaming.StreamGetter | streaming.Connecter):
            if req.method not in (("GET",) if isinstance(storage, streaming.StreamGetter) else ("GET", "POST")):
                raise e.method_not_allowed()
            ctx = make_context(req, info, rt)
            obj = await self.store.get(rt, ctx, info.name)
            if isinstance(storage, streaming.StreamGetter):
                await streaming.serve_stream(req, storage, ctx, obj)
            else:
                await streaming.serve_connect(req, storage, ctx, obj, info.subresource)
            return
        if req.method != "POST":
            raise e.method_not_allowed()
        ctx = make_context(req, info, rt)
        raw = await req.body()
        obj = await off_loop(_decode_cost(req.content_type, raw), codec.decode_object, req.content_type, raw)
        if not isinstance(obj, dict):
            raise e.bad_request("the body must be an object")
        if info.subresource:
            storage = rt.subresource_rest[info.subresource]
            await respond_json(req, 201, await storage.create(ctx, info.name, obj))
            return
        if not obj.get("apiVersion") and not obj.get("kind"):
            obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
        self._check_gvk(rt, obj)
        await respond_json(req, 201, await rt.rest.create(ctx, obj))

    # -- scale ----------------------------------------------------------------------------

    def _scale_of(self, rt: ResourceType, obj: dict) -> dict:
        assert rt.scale is not None
        meta = obj["metadata"]
        status: dict[str, Any] = {"replicas": _get_path(obj, rt.scale.status_replicas_path) or 0}
        if rt.scale.label_selector_path:
            sel = _get_path(obj, rt.scale.label_selector_path)
            if sel is not None:
                status["selector"] = sel if isinstance(sel, str) else format_label_selector(sel, empty="")
        spec_replicas = _get_path(obj, rt.scale.spec_replicas_path)
        return {"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in meta},
                "spec": {"replicas": spec_replicas} if spec_replicas is not None else {}, "status": status}

    async def _update_scale(self, rt: ResourceType, ctx: Context, name: str, change) -> dict:
        assert rt.scale is not None

        def mutate(obj: dict) -> dict:
            scale = change(copy_obj(self._scale_of(rt, obj)))
            replicas = (scale.get("spec") or {}).get("replicas")
            if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
                raise e.invalid_object("autoscaling", "Scale", name, [e.invalid("spec.replicas", replicas, "must be greater than or equal to 0")])
            want_rv = (scale.get("metadata") or {}).get("resourceVersion")
            if want_rv and want_rv != obj["metadata"]["resourceVersion"]:
                raise e.conflict(rt.group, rt.plural, name, e.OPTIMISTIC_LOCK)
            _set_path(obj, rt.scale.spec_replicas_path, replicas)  # type: ignore[union-attr]
            return obj

        obj = await self.store.guaranteed_update(rt, ctx, name, mutate)
        return self._scale_of(rt, obj)


def _decode_cost(content_type: str, body: bytes) -> int:
    """What decoding ``body`` weighs for :func:`off_loop`: its size, but YAML is parsed in pure
    Python, slow at any size and slower the deeper it nests (a 2 KB document of nested lists
    takes seconds): it is always decoded off the event loop."""
    return max(len(body), OFF_LOOP_BYTES) if "yaml" in content_type else len(body)


def _short(obj: dict) -> str:
    return orjson.dumps(obj).decode()[:200]


def _get_path(obj: dict, path: str) -> Any:
    cur: Any = obj
    for p in path.lstrip(".").split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(p)
    return cur


def _set_path(obj: dict, path: str, value: Any) -> None:
    parts = path.lstrip(".").split(".")
    cur = obj
    for p in parts[:-1]:
        cur = cur.setdefault(p, {})
    cur[parts[-1]] = value
