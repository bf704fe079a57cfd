"""A small request/response layer over raw ASGI: just what the API needs, nothing more.

The hub's routing is Kubernetes' own path grammar (see :mod:`.request`), so a web
framework's router would add a layer without removing any code; uvicorn does the HTTP.
"""

from __future__ import annotations

import asyncio
import hashlib
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import orjson

from ..apimachinery import errors as e
from ..apimachinery.errors import StatusError
from ..apimachinery.limits import MAX_BODY_BYTES, too_large_message

MAX_BODY = MAX_BODY_BYTES
JSON = "application/json"

Receive = Callable[[], Awaitable[dict]]
Send = Callable[[dict], Awaitable[None]]


@dataclass(slots=True)
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    receive: Receive
    send: Send
    warnings: list[str] = field(default_factory=list)
    #: audit annotations added while serving (admission's), recorded with the audit event
    audit_annotations: dict[str, str] = field(default_factory=dict)
    #: the ASGI scope's header list (repeated headers such as Impersonate-Group kept apart)
    raw_headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    #: the verified TLS client certificate (DER), when the client sent one
    client_cert: bytes | None = None
    #: who the request acts as, once the pipeline has authenticated (and impersonated) it
    user: Any = None
    #: who sent it (before impersonation); None until authenticated
    authenticated_user: Any = None
    #: what authorization decided on (pipeline.authorization.attributes.Attributes)
    attributes: Any = None
    #: the body, once read (the audit log records it at level Request)
    body_bytes: bytes = b""
    #: the audit log wants the request body: handlers keep a copy of what they decoded
    keep_body: bool = False
    decoded_body: Any = None
    #: a long-running response (a watch): the audit log records ResponseStarted, not the body
    streaming: bool = False
    client: tuple[str, int] | None = None
    query_string: str = ""
    #: a WebSocket upgrade: the connection's own (receive, send), for a subresource that accepts it
    websocket: tuple[Receive, Send] | None = None
    #: the ASGI server's own send, beneath every wrapper: a watch writes its events past it,
    #: straight to the connection (server/watch.py)
    server_send: Send | None = None
    #: the flow-control seat (pipeline.flowcontrol Ticket) the request holds while it is served
    seat: Any = None

    @classmethod
    def from_scope(cls, scope: dict, receive: Receive, send: Send) -> Request:
        query: dict[str, list[str]] = {}
        for k, v in parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True):
            query.setdefault(k, []).append(v)
        raw = scope["headers"]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in raw}
        tls = (scope.get("extensions") or {}).get("tls")
        cert = tls.get("fleetplane.client_cert_der") if tls else None
        return cls(scope["method"], scope["path"], query, headers, receive, send, raw_headers=raw, client_cert=cert,
                   client=scope.get("client"), query_string=scope.get("query_string", b"").decode("latin-1"),
                   websocket=scope.get("fleetplane.websocket"))

    @property
    def uri(self) -> str:
        return f"{self.path}?{self.query_string}" if self.query_string else self.path

    def header_items(self) -> list[tuple[str, str]]:
        """Every header, lower-cased names, repeats kept."""
        return [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in self.raw_headers]

    def param(self, name: str, default: str = "") -> str:
        vals = self.query.get(name)
        return vals[-1] if vals else default

    def flag(self, name: str) -> bool:
        """Query booleans as kube parses them (true/True/1)."""
        return self.param(name).lower() in ("true", "1", "t")

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip().lower()

    @property
    def accept(self) -> str:
        return self.headers.get("accept", "")

    async def body(self) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            msg = await self.receive()
            if msg["type"] == "http.disconnect":
                raise e.bad_request("client disconnected")
            chunk = msg.get("body", b"")
            size += len(chunk)
            if size > MAX_BODY:
                raise e.too_large(too_large_message(MAX_BODY))
            chunks.append(chunk)
            if not msg.get("more_body"):
                self.body_bytes = b"".join(chunks)
                return self.body_bytes


def _headers(content_type: str, extra: list[tuple[str, str]] | None, warnings: list[str]) -> list[tuple[bytes, bytes]]:
    hs = [(b"content-type", content_type.encode()), (b"cache-control", b"no-cache, private")]
    for w in warnings:
        text = w.replace("\\", "\\\\").replace('"', '\\"')
        hs.append((b"warning", f'299 - "{text}"'.encode()))
    for k, v in extra or ():
        hs.append((k.encode(), v.encode()))
    return hs


#: kube-apiserver gzips a response this large, when the client accepts it (the APIResponseCompression
#: feature: responsewriters' defaultGzipThresholdBytes, at gzip's BestSpeed level)
GZIP_THRESHOLD = 128 * 1024


def accepts_gzip(req: Request) -> bool:
    for token in req.headers.get("accept-encoding", "").split(","):
        coding, _, params = token.strip().partition(";")
        if coding.strip().lower() == "gzip" and params.replace(" ", "") not in ("q=0", "q=0.0", "q=0.00", "q=0.000"):
            return True
    return False


def gzip(body: bytes) -> bytes:
    compressor = zlib.compressobj(1, zlib.DEFLATED, 31)  # wbits 31: the gzip container
    return compressor.compress(body) + compressor.flush()


async def respond(req: Request, status: int, body: bytes, content_type: str = JSON,
                  extra: list[tuple[str, str]] | None = None) -> None:
    headers = _headers(content_type, extra, req.warnings)
    if len(body) > GZIP_THRESHOLD and accepts_gzip(req):
        # in a thread: zlib lets go of the GIL, so the loop goes on serving (4 MiB: some 25 ms)
        body = await asyncio.get_running_loop().run_in_executor(None, gzip, body)
        headers += [(b"content-encoding", b"gzip"), (b"vary", b"Accept-Encoding")]
    headers.append((b"content-length", str(len(body)).encode()))
    await req.send({"type": "http.response.start", "status": status, "headers": headers})
    await req.send({"type": "http.response.body", "body": body})


def etag(json_bytes: bytes) -> str:
    """kube's ETag of a document it serves (OpenAPI, aggregated discovery): the SHA-512 of its
    JSON in upper-case hex, quoted."""
    return '"' + hashlib.sha512(json_bytes).hexdigest().upper() + '"'


def not_modified(if_none_match: str, current: str) -> bool:
    """``If-None-Match`` as Go's http.ServeContent reads it: ``*`` or any listed tag, weakly."""
    if not if_none_match:
        return False
    for tag in if_none_match.split(","):
        tag = tag.strip()
        if tag == "*" or tag.removeprefix("W/") == current.removeprefix("W/"):
            return True
    return False


async def respond_not_modified(req: Request, headers: list[tuple[str, str]]) -> None:
    """304, as Go's writeNotModified: no Content-Type or Content-Length, the validators kept."""
    raw = [(k.encode(), v.encode()) for k, v in headers]
    await req.send({"type": "http.response.start", "status": 304, "headers": raw})
    await req.send({"type": "http.response.body", "body": b""})


async def respond_json(req: Request, status: int, obj: Any, **kw: Any) -> None:
    await respond(req, status, orjson.dumps(obj), **kw)


async def respond_error(req: Request, err: StatusError) -> None:
    extra = list(err.headers.items())
    await respond(req, err.code, orjson.dumps(err.status()), extra=extra)


async def start_stream(req: Request, content_type: str = JSON) -> None:
    req.streaming = True
    headers = _headers(content_type, None, req.warnings)  # no length: uvicorn sends it chunked
    await req.send({"type": "http.response.start", "status": 200, "headers": headers})
    # Flush headers at once: clients block until they see them.
    await req.send({"type": "http.response.body", "body": b"", "more_body": True})


async def stream_chunk(req: Request, data: bytes) -> None:
    await req.send({"type": "http.response.body", "body": data, "more_body": True})


async def end_stream(req: Request) -> None:
    await req.send({"type": "http.response.body", "body": b"", "more_body": False})
