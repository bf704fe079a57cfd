"""The baseline the hub's CPU per request is measured against: the least a Python server on the
hub's own stack must do for the same requests.

    python -m bench.minimal_server --port P --data D [--stack uvicorn|granian|httptools]

HTTPS with a certificate like the hub's (``fleetplane.server.certs.ensure_credentials`` in ``D``:
the CA is ``D/pki/ca.crt``, the bearer token ``D/admin.token``; client certificates optional
against the client CA, as the hub asks), the bearer token checked on every request. A POST to a
collection (``/api/v1/namespaces/NS/configmaps``, ``/apis/G/V/namespaces/NS/R``, cluster-scoped
``/api/v1/R``) decodes the JSON, adds uid, creationTimestamp (and the namespace), writes it
durably through fleetplane's own :class:`~fleetplane.storage.sqlite.SQLiteStore` (group
commit, fsync), sets the store's revision as resourceVersion and returns 201 with the object;
a second create of the name is a 409. A GET of an object is served from memory (the response
bytes kept at create), a GET of a collection encodes the List of its objects from memory.
No validation, defaulting, managedFields, admission, audit or metrics: that is the hub's work
the ratio shows. ``GET /readyz`` answers without a token.

``--stack`` picks the HTTP server for the same handler: uvicorn + uvloop + httptools (the hub's,
the default), granian (Rust HTTP, the ASGI interface), or an ``asyncio.Protocol`` on
``httptools.HttpRequestParser`` directly on uvloop (no ASGI); docs/dependencies.md, "The HTTP
stack", has what each costs.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import hmac
import os
import ssl
import uuid
from pathlib import Path
from typing import Any

import orjson

from fleetplane.server.certs import Credentials, ensure_credentials
from fleetplane.storage.interface import KeyExistsError
from fleetplane.storage.sqlite import SQLiteStore

JSON = b"application/json"
Response = tuple[int, bytes]


def _status(code: int, reason: str, message: str) -> Response:
    return code, orjson.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                               "message": message, "reason": reason, "code": code})


def _parse(path: str) -> tuple[str, str, str, str] | None:
    """``(group, resource, namespace, name)`` of an API path (namespace and name may be empty)."""
    parts = path.strip("/").split("/")
    if parts[:2] == ["api", "v1"]:
        rest, group = parts[2:], "core"
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        rest, group = parts[3:], parts[1]
    else:
        return None
    ns = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        ns, rest = rest[1], rest[2:]
    if len(rest) == 1:
        return group, rest[0], ns, ""
    if len(rest) == 2:
        return group, rest[0], ns, rest[1]
    return None


class MinimalApp:
    """The handler, shared by the three stacks: :meth:`handle` is the whole request's work."""

    def __init__(self, data: Path) -> None:
        self.creds: Credentials = ensure_credentials(data, [])
        self.bearer = f"Bearer {self.creds.token}".encode()
        self.store = SQLiteStore(data / "minimal.db")
        #: key -> the create's response bytes (what a GET returns)
        self.objects: dict[str, bytes] = {}
        #: collection key (group/resource/namespace) -> name -> object, for lists
        self.collections: dict[str, dict[str, dict[str, Any]]] = {}
        self.rev = 0

    async def start(self) -> None:
        await self.store.start()
        self.rev = await self.store.current_revision()

    async def stop(self) -> None:
        await self.store.close()

    def ssl_context(self) -> ssl.SSLContext:
        """What uvicorn builds from the hub's settings: the serving pair, client certificates
        optional against the client CA."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(self.creds.serving_cert), str(self.creds.serving_key))
        ctx.verify_mode = ssl.CERT_OPTIONAL
        ctx.load_verify_locations(str(self.creds.client_ca_cert))
        return ctx

    async def handle(self, method: str, path: str, authorization: bytes | None, body: bytes) -> Response:
        if path == "/readyz":
            return 200, b"ok"
        if authorization is None or not hmac.compare_digest(authorization, self.bearer):
            return _status(401, "Unauthorized", "Unauthorized")
        target = _parse(path.split("?", 1)[0])
        if target is None:
            return _status(404, "NotFound", "the server could not find the requested resource")
        group, resource, ns, name = target
        coll = f"/{group}/{resource}/root/{ns}"
        if method == "POST" and not name:
            return await self._create(coll, ns, body)
        if method == "GET" and name:
            got = self.objects.get(f"{coll}/{name}")
            return (200, got) if got is not None else _status(404, "NotFound", f'{resource} "{name}" not found')
        if method == "GET":
            items = list(self.collections.get(coll, {}).values())
            kind = items[0].get("kind", "") if items else ""
            api_version = items[0].get("apiVersion", "v1") if items else "v1"
            return 200, orjson.dumps({"kind": f"{kind}List", "apiVersion": api_version,
                                      "metadata": {"resourceVersion": str(self.rev)}, "items": items})
        return _status(405, "MethodNotAllowed", f"{method} is not supported by the minimal server")

    async def _create(self, coll: str, ns: str, body: bytes) -> Response:
        try:
            obj = orjson.loads(body)
            meta = obj.setdefault("metadata", {})
            name = meta["name"]
        except (orjson.JSONDecodeError, AttributeError, KeyError, TypeError):
            return _status(400, "BadRequest", "the body is not an object with metadata.name")
        if ns:
            meta["namespace"] = ns
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        key = f"{coll}/{name}"
        try:
            rev = await self.store.create(key, orjson.dumps(obj))
        except KeyExistsError:
            return _status(409, "AlreadyExists", f'"{name}" already exists')
        self.rev = max(self.rev, rev)
        meta["resourceVersion"] = str(rev)
        out = orjson.dumps(obj)
        self.objects[key] = out
        self.collections.setdefault(coll, {})[name] = obj
        return 201, out

    # -- ASGI (uvicorn, granian) -------------------------------------------------------------

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                if msg["type"] == "lifespan.startup":
                    await self.start()
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    await self.stop()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        auth = None
        for k, v in scope["headers"]:
            if k == b"authorization":
                auth = v
        chunks = []
        more = True
        while more:
            msg = await receive()
            chunks.append(msg.get("body", b""))
            more = msg.get("more_body", False)
        code, out = await self.handle(scope["method"], scope["path"], auth, b"".join(chunks))
        await send({"type": "http.response.start", "status": code,
                    "headers": [(b"content-type", JSON), (b"content-length", str(len(out)).encode())]})
        await send({"type": "http.response.body", "body": out})


# -- a protocol on httptools directly --------------------------------------------------------

_REASONS = {200: b"OK", 201: b"Created", 400: b"Bad Request", 401: b"Unauthorized", 404: b"Not Found",
            405: b"Method Not Allowed", 409: b"Conflict"}


class HttpToolsProtocol(asyncio.Protocol):
    """HTTP/1.1 keep-alive on ``httptools.HttpRequestParser``, one request at a time per
    connection (the load generator does not pipeline), no ASGI in between."""

    def __init__(self, app: MinimalApp) -> None:
        import httptools

        self.app = app
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None
        self.url = b""
        self.auth: bytes | None = None
        self.body: list[bytes] = []
        self.keep_alive = True

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        import httptools

        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self._write(*_status(400, "BadRequest", "malformed HTTP request"))
            assert self.transport is not None
            self.transport.close()

    # parser callbacks
    def on_message_begin(self) -> None:
        self.url, self.auth, self.body = b"", None, []

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        if name.lower() == b"authorization":
            self.auth = value

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        method = self.parser.get_method().decode()
        self.keep_alive = self.parser.should_keep_alive()
        asyncio.get_running_loop().create_task(self._respond(method, self.url.decode(), self.auth, b"".join(self.body)))

    async def _respond(self, method: str, url: str, auth: bytes | None, body: bytes) -> None:
        code, out = await self.app.handle(method, url, auth, body)
        self._write(code, out)
        if not self.keep_alive and self.transport is not None:
            self.transport.close()

    def _write(self, code: int, out: bytes) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        self.transport.write(b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                             % (code, _REASONS.get(code, b"Other"), len(out), out))


async def _serve_httptools(app: MinimalApp, host: str, port: int) -> None:
    await app.start()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: HttpToolsProtocol(app), host, port, ssl=app.ssl_context(), backlog=2048)
    try:
        await server.serve_forever()
    finally:
        await app.stop()


# -- granian: a worker process imports the app from here ---------------------------------------

def granian_app() -> MinimalApp:
    """The app granian's worker builds (``--factory``): the data directory from the environment."""
    return MinimalApp(Path(os.environ["FLEETPLANE_MINIMAL_DATA"]))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.minimal_server", description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--data", type=Path, required=True, help="data directory: certificates, token, the store")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--stack", choices=("uvicorn", "granian", "httptools"), default="uvicorn")
    a = p.parse_args(argv)
    a.data.mkdir(parents=True, exist_ok=True)
    app = MinimalApp(a.data)
    if a.stack == "uvicorn":
        import uvicorn

        creds = app.creds
        uvicorn.run(app, host=a.host, port=a.port, loop="uvloop", http="httptools", lifespan="on",
                    log_level="warning", access_log=False, server_header=False, date_header=False,
                    ssl_certfile=str(creds.serving_cert), ssl_keyfile=str(creds.serving_key),
                    ssl_cert_reqs=ssl.CERT_OPTIONAL, ssl_ca_certs=str(creds.client_ca_cert))
    elif a.stack == "httptools":
        import uvloop

        uvloop.run(_serve_httptools(app, a.host, a.port))
    else:
        _serve_granian(app, a)


def _serve_granian(app: MinimalApp, a: argparse.Namespace) -> None:
    from granian import Granian  # type: ignore[import-not-found]  # measured, not a dependency
    from granian.constants import HTTPModes, Interfaces, Loops  # type: ignore[import-not-found]

    os.environ["FLEETPLANE_MINIMAL_DATA"] = str(a.data)
    creds = app.creds
    # No client CA: granian's client verification is on or off (no CERT_OPTIONAL), and off is what
    # a hub serving tokens and certificates on one port would need; docs/dependencies.md.
    Granian("bench.minimal_server:granian_app", address=a.host, port=a.port, interface=Interfaces.ASGI,
            factory=True, workers=1, runtime_threads=1, loop=Loops.uvloop, http=HTTPModes.http1,
            log_enabled=False, ssl_cert=creds.serving_cert, ssl_key=creds.serving_key).serve()


if __name__ == "__main__":
    main()
