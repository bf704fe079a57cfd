"""Connection hygiene: slowloris clients are cut off at the header timeout while others are
served; caps per client address; idle keep-alive timeout; requests per connection."""

from __future__ import annotations

import asyncio
import http.client
import json
import resource
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from ..harness import Hub, wait_for

#: long enough for 1,000 TLS handshakes on a loaded machine, short enough to wait for
HEADER_TIMEOUT = 15.0
IDLE_TIMEOUT = 3.0
PER_CLIENT = 250
#: the trickling clients' addresses (all loopback on Linux), PER_CLIENT from each: 1,000 in all
SLOW_ADDRESSES = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"]


@pytest.fixture(scope="module")
def limited_hub(tmp_path_factory) -> Iterator[Hub]:
    h = Hub(tmp_path_factory.mktemp("limits"), extra=[
        "--request-header-timeout", str(HEADER_TIMEOUT), "--idle-timeout", str(IDLE_TIMEOUT),
        "--max-connections-per-client", str(PER_CLIENT), "--max-requests-per-connection", "3"]).start()
    yield h
    h.stop()


def _raise_nofile(want: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        if hard != resource.RLIM_INFINITY and hard < want:
            pytest.skip(f"needs {want} file descriptors, the hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


class Slowloris:
    """One connection sending a request's headers a byte at a time, until the server closes it."""

    def __init__(self, hub: Hub, address: str) -> None:
        self.hub, self.address = hub, address
        self.opened = 0.0
        self.closed: float | None = None
        self.answer = b""

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(
            "127.0.0.1", self.hub.port, ssl=self.hub.ssl_context(), server_hostname="127.0.0.1",
            local_addr=(self.address, 0))
        self.opened = time.monotonic()
        self.writer.write(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n")

    async def trickle(self) -> None:
        """A header byte every half second; returns when the server has closed the connection."""
        closed = asyncio.ensure_future(self.reader.read(65536))
        header = b"X-Slow: " + b"a" * 1000
        i = 0
        while not closed.done():
            try:
                self.writer.write(header[i % len(header):i % len(header) + 1])
            except (ConnectionError, RuntimeError):
                pass
            i += 1
            await asyncio.wait([closed], timeout=0.5)
        try:
            self.answer = closed.result()
        except (ConnectionError, OSError):
            self.answer = b""
        self.closed = time.monotonic()
        self.writer.close()


def _normal_client(hub: Hub, stop: threading.Event, latencies: list[float], failures: list[str]) -> None:
    while not stop.is_set():
        t0 = time.monotonic()
        try:
            code, _, _ = hub.request("GET", "/api/v1/namespaces/default", timeout=20)
            if code != 200:
                failures.append(f"status {code}")
        except OSError as exc:
            failures.append(repr(exc))
        latencies.append(time.monotonic() - t0)
        stop.wait(0.1)


@pytest.mark.timeout(600)  # 1,000 TLS handshakes and the header timeout, on a loaded machine
def test_slowloris_connections_are_closed_at_the_header_timeout_while_others_are_served(limited_hub):
    _raise_nofile(4096)
    hub = limited_hub
    stop = threading.Event()
    latencies: list[float] = []
    failures: list[str] = []
    normal = threading.Thread(target=_normal_client, args=(hub, stop, latencies, failures))

    async def run() -> tuple[list[Slowloris], bytes]:
        slow = [Slowloris(hub, a) for a in SLOW_ADDRESSES for _ in range(PER_CLIENT)]
        gate = asyncio.Semaphore(50)

        async def open_one(s: Slowloris) -> None:
            async with gate:
                await s.open()

        first = [s for s in slow if s.address == SLOW_ADDRESSES[0]]
        await asyncio.gather(*(open_one(s) for s in first))
        # the first address is at its cap: one more connection from it is refused with a Status
        r, w = await asyncio.open_connection("127.0.0.1", hub.port, ssl=hub.ssl_context(), server_hostname="127.0.0.1",
                                             local_addr=(SLOW_ADDRESSES[0], 0))
        refused = await asyncio.wait_for(r.read(), 30)
        w.close()
        await asyncio.gather(*(open_one(s) for s in slow if s not in first))
        await asyncio.gather(*(s.trickle() for s in slow))
        return slow, refused

    normal.start()
    try:
        slow, refused = asyncio.run(asyncio.wait_for(run(), 300))
        # the normal client keeps being served while the 1,000 are open and until they are gone
        count_before = len(latencies)
        wait_for(lambda: len(latencies) >= count_before + 3, 60, what="more answers to the normal client")
    finally:
        stop.set()
        normal.join(30)
    assert not failures, failures[:5]
    assert latencies and max(latencies) < 5.0, f"slowest normal request took {max(latencies):.2f}s"
    # the server closed every trickling connection, without an answer, once the header timeout passed
    assert all(s.closed is not None for s in slow)
    lifetimes = sorted(s.closed - s.opened for s in slow if s.closed is not None)
    assert lifetimes[0] >= HEADER_TIMEOUT - 1.0, f"closed after {lifetimes[0]:.2f}s, before the header timeout"
    assert lifetimes[-1] < HEADER_TIMEOUT + 60, f"one stayed open {lifetimes[-1]:.2f}s"
    assert all(s.answer == b"" for s in slow)
    head, _, body = refused.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 429"), refused[:200]
    assert b"retry-after: 1" in head.lower() and b"connection: close" in head.lower()
    status = json.loads(body)
    assert status["kind"] == "Status" and status["reason"] == "TooManyRequests" and status["code"] == 429
    assert f"too many open connections from {SLOW_ADDRESSES[0]}" in status["message"]
    code, _, metrics = hub.request("GET", "/metrics")
    closed = {line.split("{")[1].split("}")[0]: float(line.rsplit(" ", 1)[1])
              for line in metrics.decode().splitlines() if line.startswith("fleetplane_connections_closed_total{")}
    assert closed['reason="header_timeout"'] >= len(slow) and closed['reason="per_client"'] >= 1


def test_an_idle_kept_alive_connection_is_closed_after_the_idle_timeout(limited_hub):
    hub = limited_hub
    conn = http.client.HTTPSConnection("127.0.0.1", hub.port, context=hub.ssl_context(), timeout=60)
    conn.request("GET", "/version")
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("connection") != "close"
    resp.read()
    idle_since = time.monotonic()
    sock = conn.sock
    assert sock is not None
    sock.settimeout(IDLE_TIMEOUT + 60)
    assert sock.recv(1) == b""  # blocks until the server closes the connection
    waited = time.monotonic() - idle_since
    assert IDLE_TIMEOUT - 0.5 <= waited < IDLE_TIMEOUT + 60, waited
    conn.close()


def test_the_last_request_allowed_on_a_connection_is_answered_with_connection_close(limited_hub):
    hub = limited_hub
    conn = http.client.HTTPSConnection("127.0.0.1", hub.port, context=hub.ssl_context(), timeout=30)
    seen = []
    for _ in range(3):
        conn.request("GET", "/version")
        resp = conn.getresponse()
        assert resp.status == 200
        resp.read()
        seen.append(resp.getheader("connection"))
    assert seen == [None, None, "close"]
    sock = conn.sock
    assert sock is None or sock.recv(1) == b""  # http.client closed it, or the server has
    conn.close()
    # a new connection is served as usual
    assert hub.request("GET", "/version")[0] == 200


def test_a_request_whose_headers_arrive_in_time_is_served_however_slowly_its_connection_began(limited_hub):
    hub = limited_hub
    raw = socket.create_connection(("127.0.0.1", hub.port), timeout=30)
    tls = hub.ssl_context().wrap_socket(raw, server_hostname="127.0.0.1")
    for part in (b"GET /version HTTP/1.1\r\n", b"Host: 127.0.0.1\r\n", b"Connection: close\r\n", b"\r\n"):
        tls.sendall(part)
        time.sleep(0.2)  # a slow but legitimate client, well inside the header timeout
    answer = b""
    while chunk := tls.recv(65536):
        answer += chunk
    assert answer.startswith(b"HTTP/1.1 200"), answer[:100]
    tls.close()


def test_a_connection_over_the_total_cap_is_answered_503_and_served_again_once_one_closes(tmp_path):
    # without the in-process controllers: their keep-alive connections count against the cap too
    hub = Hub(tmp_path / "capped", extra=["--max-connections", "20", "--no-cluster-controller", "--no-splitter",
                                          "--no-cronjob-controller", "--no-service-controller"]).start()
    held: list[socket.socket] = []
    try:
        def connect() -> socket.socket:
            raw = socket.create_connection(("127.0.0.1", hub.port), timeout=30)
            return hub.ssl_context().wrap_socket(raw, server_hostname="127.0.0.1")

        def answer(sock: socket.socket) -> bytes:
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
            return data

        # fill the cap (the start-up probes' connections may still be closing: wait for a refusal)
        def refused() -> bytes | None:
            sock = connect()
            sock.settimeout(0.5)
            try:
                first = sock.recv(65536)
            except TimeoutError:
                held.append(sock)  # accepted and waiting for a request: it holds a place
                return None
            sock.settimeout(30)
            return first + answer(sock)

        refusal = wait_for(refused, 60, interval=0, what="a connection over the cap to be refused")
        assert 10 <= len(held) <= 20, len(held)
        head, _, body = refusal.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 503"), refusal[:200]
        status = json.loads(body)
        assert status["reason"] == "ServiceUnavailable" and "too many open connections: the limit is 20" in status["message"]
        held.pop().close()
        # a place is free again: a request is served
        def served() -> bool:
            try:
                return hub.request("GET", "/version")[0] == 200
            except OSError:  # refused while the closed one was still counted: a reset
                return False

        wait_for(served, 30, what="a request to be served again")
    finally:
        for sock in held:
            sock.close()
        hub.stop()
