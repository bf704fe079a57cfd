"""Streaming subresources: a byte stream answered to a GET (``pods/log``), and connections over
WebSocket with kube's channel protocols (``pods/exec``, ``pods/attach``, ``pods/portforward``).

What a subresource streams comes from its storage in ``ResourceType.subresource_rest``:

- a ``StreamGetter`` (``async stream(ctx, obj, options) -> AsyncIterator[bytes]``) is served as a
  ``text/plain`` body, chunked as it is produced (``kubectl logs -f``);
- a ``Connecter`` (``async connect(ctx, obj, options) -> session``) checks the request (a refusal
  is an HTTP Status, before the upgrade, as kube answers ``kubectl exec -c wrong``) and returns a
  session, ``async session(channels) -> int | None``, that gets numbered channels over the
  WebSocket the client upgraded to, as the kubelet's streaming server frames
  them (apimachinery's wsstream): a binary frame is one channel byte and the data; the
  ``base64.channel.k8s.io`` protocols send text frames of a channel digit and base64. For exec and
  attach the result is an exit code sent as a metav1.Status on channel 3 (protocols v4 and v5, as
  kubectl and the clients read it); portforward returns None.

SPDY, which kubectl used before 1.30 and still falls back to, is not served: such a request is
answered ``400 Upgrade request required`` as kube answers a connect request it cannot upgrade.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Protocol, runtime_checkable

import orjson

from ..apimachinery import errors as e
from .http import Request, end_stream, start_stream, stream_chunk

#: exec/attach: the protocols kube's streaming server speaks, best first
CHANNEL_PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io",
                     "channel.k8s.io", "v4.base64.channel.k8s.io", "base64.channel.k8s.io")
#: portforward over WebSocket (the kubelet's v4 framing: two channels per port, each opened with the port)
PORTFORWARD_PROTOCOLS = ("v4.channel.k8s.io", "v4.base64.channel.k8s.io", "channel.k8s.io", "base64.channel.k8s.io")
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255


@runtime_checkable
class StreamGetter(Protocol):
    def stream(self, ctx: Any, obj: dict[str, Any], options: Mapping[str, list[str]]) -> AsyncIterator[bytes]: ...


Session = Callable[["Channels"], Awaitable["int | None"]]


@runtime_checkable
class Connecter(Protocol):
    async def connect(self, ctx: Any, obj: dict[str, Any], options: Mapping[str, list[str]]) -> Session: ...


class Channels:
    """A client's WebSocket as kube's numbered channels."""

    def __init__(self, receive: Any, send: Any, protocol: str) -> None:
        self._receive, self._send, self.protocol = receive, send, protocol
        self.base64 = "base64" in protocol
        self.closed = False

    async def write(self, channel: int, data: bytes) -> None:
        if self.closed:
            return
        if self.base64:
            await self._send({"type": "websocket.send", "text": str(channel) + base64.b64encode(data).decode()})
        else:
            await self._send({"type": "websocket.send", "bytes": bytes([channel]) + data})

    async def read(self) -> tuple[int, bytes] | None:
        """The next frame as (channel, data); None once the client has gone. Under v5 a
        client's CLOSE frame for a channel arrives as (channel, b"") with ``ended`` set for it."""
        while not self.closed:
            msg = await self._receive()
            if msg["type"] == "websocket.disconnect":
                self.closed = True
                return None
            raw: bytes = msg.get("bytes") or b""
            if msg.get("text") is not None:
                text = msg["text"]
                if not text:
                    continue
                # base64 protocols: a channel digit and base64; the others: the channel as a character
                raw = bytes([int(text[0])]) + base64.b64decode(text[1:]) if self.base64 else \
                    bytes([ord(text[0]) & 0xFF]) + text[1:].encode()
            if not raw:
                continue
            if raw[0] == CLOSE and self.protocol.startswith("v5.") and len(raw) > 1:
                return raw[1], b""  # the client closed that channel (stdin's EOF)
            return raw[0], raw[1:]
        return None

    async def close(self) -> None:
        if not self.closed:
            self.closed = True
            await self._send({"type": "websocket.close", "code": 1000})


def _offered(req: Request) -> list[str]:
    return [p.strip() for p in req.headers.get("sec-websocket-protocol", "").split(",") if p.strip()]


async def serve_stream(req: Request, storage: StreamGetter, ctx: Any, obj: dict[str, Any]) -> None:
    """``GET pods/<name>/log``: the storage's bytes as a chunked text/plain body."""
    chunks = storage.stream(ctx, obj, req.query)
    first = await anext(chunks, None)  # a refusal (a bad container name) is still a Status
    await start_stream(req, "text/plain")
    if first is not None:
        await stream_chunk(req, first)
        async for chunk in chunks:
            await stream_chunk(req, chunk)
    await end_stream(req)


async def serve_connect(req: Request, storage: Connecter, ctx: Any, obj: dict[str, Any], subresource: str) -> None:
    """exec, attach, portforward: accept the WebSocket with a protocol both sides speak, hand the
    channels to the storage, then send exec's and attach's exit status."""
    session = await storage.connect(ctx, obj, req.query)  # refusals first, whatever the transport
    if req.websocket is None:
        raise e.bad_request("Upgrade request required")
    supported = PORTFORWARD_PROTOCOLS if subresource == "portforward" else CHANNEL_PROTOCOLS
    offered = _offered(req)
    protocol = next((p for p in offered if p in supported), None)
    if protocol is None and offered:
        raise e.bad_request(f"unable to upgrade: none of the offered WebSocket protocols {offered} is supported "
                            f"(the server speaks {', '.join(supported)})")
    receive, send = req.websocket
    await send({"type": "websocket.accept", "subprotocol": protocol, "headers": []})
    channels = Channels(receive, send, protocol or "channel.k8s.io")
    req.streaming = True
    try:
        code = await session(channels)
        if code is not None and channels.protocol.startswith(("v4.", "v5.")):
            await channels.write(ERROR, orjson.dumps(exit_status(code)))
    finally:
        await channels.close()


def exit_status(code: int) -> dict[str, Any]:
    """The metav1.Status kube's remotecommand sends on the error channel for an exit code."""
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {"metadata": {}, "status": "Failure", "message": f"command terminated with non-zero exit code: {code}",
            "reason": "NonZeroExitCode", "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}
