"""The hub's ASGI application: the request pipeline, routing, discovery, OpenAPI, health, metrics.

Every request first passes :class:`.filters.Pipeline` (authentication, impersonation,
authorization); resource requests then go to :class:`.handlers.ResourceHandler`; everything
else is answered here. Errors of any layer arrive as ``StatusError`` and leave as Status objects; anything
unexpected is logged with its traceback and answered with a 500 Status, never a traceback.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson
from prometheus_client import CONTENT_TYPE_LATEST

from .. import __version__
from ..apimachinery import errors as e
from ..apimachinery.errors import StatusError
from ..pipeline.audit import AuditLog
from ..pipeline.authentication.serviceaccount import (
    DISCOVERY_MAX_AGE,
    JWKS_PATH,
    OPENID_CONFIG_PATH,
    TokenIssuer,
)
from ..pipeline.flowcontrol import TooManyRequests
from ..registry.hub import CLUSTERS_PREFIX, Registry
from ..storage.interface import StorageError, UnavailableError
from . import discovery, openapi, openapi_v2
from .filters import Pipeline, request_verb
from .handlers import ResourceHandler
from .http import Request, etag, not_modified, respond, respond_error, respond_json, respond_not_modified
from .metrics import Metrics
from .request import RequestInfo, parse

log = logging.getLogger("fleetplane.server")

KUBE_MINOR = "32"
GIT_VERSION = f"v1.{KUBE_MINOR}.0+fleetplane-{__version__}"


@dataclass
class ServerConfig:
    server_address: str = "127.0.0.1:6443"
    git_version: str = GIT_VERSION
    bookmark_interval: float = 60.0


def version_info(git_version: str) -> dict:
    return {"major": "1", "minor": KUBE_MINOR, "gitVersion": git_version, "gitCommit": "0" * 40,
            "gitTreeState": "clean", "buildDate": "2026-11-29T00:00:00Z", "goVersion": "go1.23.4",
            "compiler": "gc", "platform": "linux/amd64"}


#: the cyclic collector's thresholds once the hub serves (Python's are 700, 10, 10)
GC_THRESHOLDS = (50_000, 20, 10)
#: aggregated discovery documents kept built (``HubApp._aggregated``): a few MiB at most
DISCOVERY_KEPT = 256


def tune_gc() -> None:
    """A request allocates hundreds of objects that reference counting frees (no cycles); at
    Python's 700 allocations a young collection runs every request or two, and every tenth of
    those an older one: measured, raising the first threshold cuts that cost while memory stays
    bounded (the young generation holds at most 50,000 objects, a few MiB)."""
    gc.set_threshold(*GC_THRESHOLDS)


def storage_status(exc: BaseException) -> StatusError:
    """A store that cannot answer is 503 (504 when it timed out); clients retry after a second."""
    code = getattr(exc, "http_status", None)
    if code == 413:
        return e.too_large(str(exc))
    if isinstance(exc, TimeoutError) or code == 504:
        err = e.timeout(f"Timeout: request did not complete within the allotted timeout: {exc or 'storage did not answer'}")
    elif isinstance(exc, UnavailableError):
        err = e.unavailable(f"storage is unavailable: {exc}")
    else:
        log.error("storage error: %s", exc)
        return e.internal(f"storage error: {exc}")
    err.details = {"retryAfterSeconds": 1}
    err.headers["Retry-After"] = "1"
    return err


class HubApp:
    def __init__(self, registry: Registry, config: ServerConfig, pipeline: Pipeline | None = None,
                 audit: AuditLog | None = None, issuer: TokenIssuer | None = None) -> None:
        self.registry = registry
        self.config = config
        self.audit = audit
        #: signs ServiceAccount tokens; serves each logical cluster's OIDC discovery documents
        self.issuer = issuer
        #: more start-up work once the registry runs (OIDC discovery, in-process controllers), and its undoing
        self.on_startup: list[Callable[[], Awaitable[None]]] = []
        self.on_shutdown: list[Callable[[], Awaitable[None]]] = []
        #: None: every request is served unauthenticated (``--no-auth``, tests of the bare app)
        self.pipeline = pipeline
        #: this app's own metrics (``/metrics``), whatever other apps the process runs
        self.metrics = Metrics(
            logical_clusters=lambda: registry.cache.resource(CLUSTERS_PREFIX).count("root"),
            storage_revision=lambda: registry.cache.revision, watch_cache_history=registry.cache.history_sizes)
        registry.store.conversion.observe = self.metrics.observe_conversion
        self.resources = ResourceHandler(registry, config.bookmark_interval, watchers=self.metrics.watchers)
        if pipeline is not None:
            self.resources.object_check = pipeline.object_check
        self.ready = False
        self._version = orjson.dumps(version_info(config.git_version))
        self._openapi: dict[tuple[str, int], tuple[dict, dict[str, dict]]] = {}
        #: aggregated discovery documents and their ETags by (logical cluster, its catalog
        #: generation, core or not, version), least recently used first
        self._discovery: dict[tuple[str, int, bool, str], tuple[bytes, str]] = {}
        self._swagger = openapi_v2.SwaggerService()

    # -- ASGI -----------------------------------------------------------------------------

    async def __call__(self, scope: dict, receive, send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] == "websocket":
            await self._upgrade(scope, receive, send)
            return
        if scope["type"] != "http":
            return
        status = [500]
        audit: list[Any] = [None]  # the request's AuditContext, once the pipeline knows who asks
        response: list[bytes] = []

        async def send_and_record(message: dict) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                if audit[0] is not None and req.streaming:
                    audit[0].response_started(status[0])
            elif audit[0] is not None and audit[0].wants_response and not req.streaming:
                response.append(message.get("body", b""))
            await send(message)

        req = Request.from_scope(scope, receive, send_and_record)
        req.server_send = send
        started = time.perf_counter()
        info: RequestInfo | None = None
        try:
            info = parse(req.path)
            if self.pipeline is not None:
                try:
                    await self.pipeline.admit_request(req, info)
                finally:
                    if self.audit is not None:
                        audit[0] = self._audit_begin(req, info)
                        req.keep_body = audit[0] is not None and audit[0].wants_request
            if info.is_resource:
                await self.resources.handle(req, info)
            else:
                await self._non_resource(req, info)
        except TooManyRequests as exc:  # kube's plain-text 429, not a Status
            await respond(req, 429, exc.body, content_type="text/plain; charset=utf-8", extra=exc.headers)
        except StatusError as err:
            await self._safe_error(req, err)
        except (StorageError, TimeoutError) as exc:
            await self._safe_error(req, storage_status(exc))
        except Exception as exc:  # the last line of defence: a 500 Status, logged
            log.exception("internal error serving %s %s", req.method, req.path)
            await self._safe_error(req, e.internal(f"an error on the server ({type(exc).__name__}) has prevented the request from succeeding"))
        finally:
            if req.seat is not None:  # the flow-control seat, held until the handler is done
                req.seat.release()
            self.metrics.observe(req, info, status[0], time.perf_counter() - started)
            if audit[0] is not None:
                self._audit_finish(audit[0], req, status[0], b"".join(response))
            # req -> its send wrappers -> send_and_record -> req is a cycle, which only the cyclic
            # collector would free, with everything the request holds: young collections walking
            # tens of thousands of objects paused the loop for 20-60 ms. Dropping the wrappers
            # breaks it: reference counting frees the request as it ends.
            req.send = send

    async def _upgrade(self, scope: dict, receive, send) -> None:
        """A WebSocket upgrade goes through the same pipeline as the plain request. As Go's
        server ignores an Upgrade header it does not serve, the answer is the plain response (a
        Status for what fails: 401, 403, 404, ...), sent as the handshake's HTTP response (the ASGI
        websocket.http.response extension), never a bare 500."""
        if (await receive())["type"] != "websocket.connect":
            return
        can_answer = "websocket.http.response" in scope.get("extensions", {})

        async def as_http_response(message: dict) -> None:
            if not can_answer:  # the server cannot send an HTTP answer: refuse the handshake
                if message["type"] == "http.response.start":
                    await send({"type": "websocket.close", "code": 1008})
                return
            await send({**message, "type": "websocket." + message["type"]})

        async def no_body() -> dict:
            return {"type": "http.request", "body": b"", "more_body": False}

        headers = list(scope.get("headers") or [])
        if scope.get("subprotocols"):  # the ASGI server hands the offered protocols apart from the headers
            headers.append((b"sec-websocket-protocol", ", ".join(scope["subprotocols"]).encode()))
        await self({**scope, "type": "http", "method": "GET", "headers": headers, "fleetplane.websocket": (receive, send)},
                   no_body, as_http_response)

    def _audit_begin(self, req: Request, info: RequestInfo) -> Any:
        """RequestReceived, as soon as the pipeline has authenticated (or refused) the request."""
        assert self.audit is not None and self.pipeline is not None
        client = req.client[0] if req.client else ""
        acting = req.user if req.user is not req.authenticated_user else None
        return self.audit.begin(req.authenticated_user, verb=request_verb(req, info), request_uri=req.uri,
                                impersonated_user=acting, source_ips=[client] if client else [],
                                user_agent=req.headers.get("user-agent", ""), resource_request=info.is_resource,
                                group=info.group, version=info.version, resource=info.resource,
                                subresource=info.subresource, namespace=info.namespace, name=info.name,
                                path=info.path, cluster=info.cluster)

    @staticmethod
    def _audit_finish(ctx: Any, req: Request, code: int, body: bytes) -> None:
        for key, value in req.audit_annotations.items():
            ctx.annotate(key, value)
        if req.decoded_body is not None:
            ctx.request_object(req.decoded_body)
        elif req.body_bytes:
            ctx.request_object(req.body_bytes)
        if body:
            try:
                ctx.response_object(orjson.loads(body))
            except orjson.JSONDecodeError:
                pass  # not JSON (protobuf, a table as text): no body recorded
        ctx.finish(code)

    async def _safe_error(self, req: Request, err: StatusError) -> None:
        try:
            await respond_error(req, err)
        except Exception:  # the response had started (e.g. a watch): nothing more to say
            pass

    async def _lifespan(self, receive, send) -> None:
        while True:
            msg = await receive()
            if msg["type"] == "lifespan.startup":
                try:
                    await self.registry.start()
                    for fn in self.on_startup:
                        await fn()
                    self.ready = True
                    tune_gc()
                    await send({"type": "lifespan.startup.complete"})
                except Exception as exc:
                    log.exception("start-up failed")
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
            elif msg["type"] == "lifespan.shutdown":
                self.ready = False
                for fn in self.on_shutdown:
                    await fn()
                await self.registry.close()
                if self.audit is not None:
                    await asyncio.to_thread(self.audit.close)
                await send({"type": "lifespan.shutdown.complete"})
                return

    # -- non-resource endpoints -----------------------------------------------------------

    async def _non_resource(self, req: Request, info: RequestInfo) -> None:
        parts = info.parts
        if req.method not in ("GET", "HEAD"):
            raise StatusError(404, "NotFound", "the server could not find the requested resource", {})
        head = parts[0] if parts else ""
        if head == "version" and len(parts) == 1:
            await respond(req, 200, self._version)
        elif head in ("healthz", "livez", "readyz"):
            await self._health(req, head, parts)
        elif head == "metrics" and len(parts) == 1:
            await respond(req, 200, self.metrics.exposition(), content_type=CONTENT_TYPE_LATEST)
        elif head == "api":
            await self._discovery_core(req, info)
        elif head == "apis":
            await self._discovery_groups(req, info)
        elif self.issuer is not None and info.path in (OPENID_CONFIG_PATH, JWKS_PATH):
            doc = self.issuer.openid_configuration(info.cluster) if info.path == OPENID_CONFIG_PATH else self.issuer.jwks()
            await respond_json(req, 200, doc, content_type="application/json" if info.path == OPENID_CONFIG_PATH else "application/jwk-set+json",
                               extra=[("cache-control", f"public, max-age={DISCOVERY_MAX_AGE}")])
        elif head == "openapi" and len(parts) >= 2 and parts[1] == "v3":
            await self._openapi_v3(req, info)
        elif head == "openapi" and parts[1:] == ("v2",):
            await self._swagger.serve(req, info.cluster, self.registry.catalog.generation.get(info.cluster, 0),
                                      self.registry.catalog.types(info.cluster))
        elif not parts:
            paths = sorted({"/api", "/api/v1", "/apis", "/healthz", "/livez", "/metrics", "/openapi/v2", "/openapi/v3", "/readyz", "/version"}
                           | {f"/apis/{rt.group_version}" for rt in self.registry.catalog.types(info.cluster) if rt.group})
            await respond_json(req, 200, {"paths": paths})
        else:
            raise StatusError(404, "NotFound", "the server could not find the requested resource", {})

    async def _health(self, req: Request, which: str, parts: tuple[str, ...]) -> None:
        store_ok = self.ready and (which == "livez" or await self.registry.healthy())
        ok = store_ok or which == "livez"
        checks = {"ping": True, "etcd": store_ok, "informer-sync": self.ready}
        if len(parts) > 1:
            name = parts[1]
            if name not in checks:
                raise StatusError(404, "NotFound", "the server could not find the requested resource", {})
            ok = checks[name] and (which == "livez" or self.ready)
        if req.flag("verbose"):
            lines = [f"[{'+' if v else '-'}]{k} {'ok' if v else 'failed'}" for k, v in checks.items()]
            lines.append(f"{which} check {'passed' if ok else 'failed'}")
            body = ("\n".join(lines) + "\n").encode()
        else:
            body = b"ok" if ok else f"[-]{which} failed: reason withheld\n{which} check failed".encode()
        await respond(req, 200 if ok else 500, body, content_type="text/plain; charset=utf-8")

    async def _discovery_core(self, req: Request, info: RequestInfo) -> None:
        types = self.registry.catalog.types(info.cluster)
        parts = info.parts
        if len(parts) == 1:
            agg = discovery.aggregated_version(req.accept)
            if agg:
                await self._aggregated(req, info.cluster, core=True, version=agg)
            else:
                await respond_json(req, 200, discovery.api_versions(self.config.server_address))
            return
        if len(parts) == 2:
            body = discovery.api_resource_list("", parts[1], types)
            if body is not None:
                await respond_json(req, 200, body)
                return
        raise StatusError(404, "NotFound", "the server could not find the requested resource", {})

    async def _discovery_groups(self, req: Request, info: RequestInfo) -> None:
        types = self.registry.catalog.types(info.cluster)
        parts = info.parts
        body = None
        if len(parts) == 1:
            agg = discovery.aggregated_version(req.accept)
            if agg:
                await self._aggregated(req, info.cluster, core=False, version=agg)
                return
            body = discovery.api_group_list(types)
        elif len(parts) == 2:
            body = discovery.api_group(parts[1], types)
        elif len(parts) == 3:
            body = discovery.api_resource_list(parts[1], parts[2], types)
        if body is None:
            raise StatusError(404, "NotFound", "the server could not find the requested resource", {})
        await respond_json(req, 200, body)

    async def _aggregated(self, req: Request, cluster: str, *, core: bool, version: str) -> None:
        """Aggregated discovery (``/api`` or ``/apis``) as kube serves it (its discovery/aggregated
        etag.go): ``ETag`` the document's hash, ``If-None-Match`` with it answered 304 without a
        body, so a client polling for new types (every Syncer, every 30 s) is sent nothing while
        nothing changed. Each document is built and hashed once per catalog generation of its
        logical cluster (the last few hundred kept)."""
        key = (cluster, self.registry.catalog.generation.get(cluster, 0), core, version)
        cached = self._discovery.pop(key, None)
        if cached is None:
            body = orjson.dumps(discovery.aggregated(self.registry.catalog.types(cluster), core=core, version=version))
            cached = (body, etag(body))
            if len(self._discovery) >= DISCOVERY_KEPT:
                self._discovery.pop(next(iter(self._discovery)))
        self._discovery[key] = cached  # the newest last: the oldest goes first
        body, tag = cached
        headers = [("etag", tag), ("vary", "Accept"), ("cache-control", "public")]
        if not_modified(req.headers.get("if-none-match", ""), tag):
            await respond_not_modified(req, headers)
            return
        await respond(req, 200, body, content_type=discovery.aggregated_content_type(version), extra=headers)

    def _openapi_docs(self, cluster: str) -> tuple[dict, dict[str, dict]]:
        gen = (cluster, self.registry.catalog.generation.get(cluster, 0))
        cached = self._openapi.get(gen)
        if cached is not None:
            return cached
        by_gv: dict[str, list] = defaultdict(list)
        for rt in self.registry.catalog.types(cluster):
            if rt.served:
                key = f"api/{rt.version}" if not rt.group else f"apis/{rt.group}/{rt.version}"
                by_gv[key].append(rt)
        docs = {key: openapi.group_version_document(types[0].group_version, types) for key, types in by_gv.items()}
        hashes = {key: openapi.document_hash(doc) for key, doc in docs.items()}
        result = (openapi.root_document(docs.keys(), hashes), docs)
        self._openapi = {k: v for k, v in self._openapi.items() if k[0] != cluster}
        self._openapi[gen] = result
        return result

    async def _openapi_v3(self, req: Request, info: RequestInfo) -> None:
        root, docs = self._openapi_docs(info.cluster)
        rest = "/".join(info.parts[2:])
        if not rest:
            await respond_json(req, 200, root)
            return
        doc = docs.get(rest)
        if doc is None:
            raise StatusError(404, "NotFound", "the server could not find the requested resource", {})
        extra = [("cache-control", "public, immutable")] if req.param("hash") else None
        await respond_json(req, 200, doc, extra=extra)
