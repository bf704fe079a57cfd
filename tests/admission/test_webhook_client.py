"""pipeline/webhook.py against a real HTTPS server with its own CA: verification, service
references, timeouts and bad answers, each with the text kube's rest client would give."""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from fleetplane.pipeline.webhook import ServiceResolver, WebhookCallError, WebhookClient, endpoint_for

from .webhook_server import SERVICE_NAME, WebhookServer, make_ca_and_cert


@pytest.fixture(scope="module")
def server() -> Iterator[WebhookServer]:
    with WebhookServer() as s:
        s.handle("/echo", lambda review: {"got": review})
        s.handle("/garbage", lambda review: b"<html>not json</html>")
        release = threading.Event()
        s.handle("/slow", lambda review: (release.wait(20), {"late": True})[1])
        yield s
        release.set()


async def test_posts_over_verified_https(server: WebhookServer) -> None:
    client = WebhookClient()
    try:
        answer = await client.post(endpoint_for(server.client_config("/echo")), {"hello": "world"}, 10)
        assert answer == {"got": {"hello": "world"}}
        assert server.reviews("/echo")[-1]["_query"] == "timeout=10s"
    finally:
        await client.close()


async def test_service_reference_dials_the_configured_host_and_verifies_the_svc_name(server: WebhookServer) -> None:
    client = WebhookClient()
    config = {"service": {"namespace": "default", "name": "webhook", "port": server.port, "path": "/echo"},
              "caBundle": server.ca_bundle}
    try:
        endpoint = endpoint_for(config, ServiceResolver({SERVICE_NAME: "127.0.0.1"}))
        assert endpoint.url == f"https://{SERVICE_NAME}:{server.port}/echo"
        assert await client.post(endpoint, {"a": 1}, 5) == {"got": {"a": 1}}
    finally:
        await client.close()


async def test_unknown_authority_is_refused(server: WebhookServer) -> None:
    other_ca = base64.b64encode(make_ca_and_cert(["x"])[0].encode()).decode()
    client = WebhookClient()
    try:
        with pytest.raises(WebhookCallError) as err:
            await client.post(endpoint_for({"url": server.url("/echo"), "caBundle": other_ca}), {}, 5)
        assert str(err.value) == (f'Post "{server.url("/echo")}?timeout=5s": tls: failed to verify certificate: '
                                  "x509: certificate signed by unknown authority")
    finally:
        await client.close()


async def test_timeout_is_kept(server: WebhookServer) -> None:
    client = WebhookClient()
    try:
        start = time.monotonic()
        with pytest.raises(WebhookCallError) as err:
            await client.post(endpoint_for(server.client_config("/slow")), {}, 1)
        assert time.monotonic() - start < 8
        assert str(err.value) == f'Post "{server.url("/slow")}?timeout=1s": context deadline exceeded'
    finally:
        await client.close()


@pytest.mark.parametrize("path, expected", [
    ("/garbage", "couldn't get version/kind; json parse error"),
    ("/missing", "the server responded with the status code 404"),
])
async def test_bad_answers(server: WebhookServer, path: str, expected: str) -> None:
    client = WebhookClient()
    try:
        with pytest.raises(WebhookCallError) as err:
            await client.post(endpoint_for(server.client_config(path)), {}, 5)
        assert expected in str(err.value)
    finally:
        await client.close()


async def test_plain_http_is_refused() -> None:
    client = WebhookClient()
    config: dict[str, Any] = {"url": "http://127.0.0.1:1/x"}
    with pytest.raises(WebhookCallError, match="https"):
        await client.post(endpoint_for(config), {}, 1)


async def test_nothing_listening() -> None:
    client = WebhookClient()
    try:
        with pytest.raises(WebhookCallError, match=r'^Post "https://127.0.0.1:1/x\?timeout=2s": dial tcp 127.0.0.1:1: connect: '):
            await client.post(endpoint_for({"url": "https://127.0.0.1:1/x"}), {}, 2)
    finally:
        await client.close()


@pytest.fixture(scope="module")
def plain_servers() -> Iterator[tuple[int, int]]:
    """(a plain-HTTP server, a server that hangs up at once): both refuse the TLS handshake."""
    import socket

    http, hangup = socket.socket(), socket.socket()
    for s in (http, hangup):
        s.bind(("127.0.0.1", 0))
        s.listen(16)

    def serve(sock: socket.socket, answer: bytes) -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            with conn:
                if answer:
                    conn.recv(64)
                    conn.sendall(answer)

    for s, answer in ((http, b"HTTP/1.1 400 Bad Request\r\n\r\n"), (hangup, b"")):
        threading.Thread(target=serve, args=(s, answer), daemon=True).start()
    yield http.getsockname()[1], hangup.getsockname()[1]
    http.close()
    hangup.close()


async def test_a_refused_handshake_is_named_as_go_names_it(plain_servers: tuple[int, int]) -> None:
    http_port, hangup_port = plain_servers
    client = WebhookClient()
    try:
        for port, reason in ((http_port, "http: server gave HTTP response to HTTPS client"), (hangup_port, "EOF")):
            with pytest.raises(WebhookCallError) as err:
                await client.post(endpoint_for({"url": f"https://127.0.0.1:{port}/x"}), {}, 5)
            assert str(err.value) == f'Post "https://127.0.0.1:{port}/x?timeout=5s": {reason}'
        with pytest.raises(WebhookCallError) as err:
            await client.post(endpoint_for({"url": "https://127.0.0.1:1/x"}), {}, 2)
        assert str(err.value) == 'Post "https://127.0.0.1:1/x?timeout=2s": dial tcp 127.0.0.1:1: connect: connection refused'
    finally:
        await client.close()
