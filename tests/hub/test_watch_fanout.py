"""Watch fan-out as delivered straight to the connections (server/watch.py): many watches get
every event in order, a watch with a deadline still ends on time while events flow, a client
that hangs up is forgotten at once, and a client that stops reading is dropped with a bound on
what the hub holds for it."""

from __future__ import annotations

import json
import socket
import ssl
import time

from ..harness import Hub, wait_for
from .test_rest import cm
from .test_watch import Stream


def now(hub: Hub, namespace: str) -> str:
    """The list's resourceVersion: where a watch starts with nothing missed. (Not "1": the session
    hub has compacted its early history by the time this file runs, and that watch would get 410.)"""
    status, _, body = hub.request("GET", f"/api/v1/namespaces/{namespace}/configmaps")
    assert status == 200, body
    return json.loads(body)["metadata"]["resourceVersion"]


def open_watches(hub: Hub, namespace: str, n: int) -> list[Stream]:
    rv = now(hub, namespace)
    return [Stream(hub, f"/api/v1/namespaces/{namespace}/configmaps?watch=true&resourceVersion={rv}") for _ in range(n)]


def watchers_gauge(hub: Hub) -> float:
    for line in hub.request("GET", "/metrics")[2].decode().splitlines():
        if line.startswith('apiserver_registered_watchers{resource="configmaps"}'):
            return float(line.split()[-1])
    return 0.0


def test_many_watchers_get_every_event_in_order(hub: Hub, namespace: str):
    base = watchers_gauge(hub)  # the session hub's other configmap watches
    streams = open_watches(hub, namespace, 40)
    wait_for(lambda: watchers_gauge(hub) >= base + 40, 60, what="40 open watches")
    want = []
    for i in range(25):
        status, _, _ = hub.request("POST", f"/api/v1/namespaces/{namespace}/configmaps", cm(f"fan-{i}"))
        assert status == 201
        want.append(("ADDED", f"fan-{i}"))
    status, _, _ = hub.request("DELETE", f"/api/v1/namespaces/{namespace}/configmaps/fan-0")
    want.append(("DELETED", "fan-0"))
    for s in streams:
        got = [(e["type"], e["object"]["metadata"]["name"]) for e in s.wait(len(want), 60)]
        assert got == want
        versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in s.events]
        assert versions == sorted(versions)
        s.close()


def test_a_client_that_hangs_up_an_idle_watch_frees_it(hub: Hub, namespace: str):
    """No event flows, so no write finds the connection gone: the hub learns of each hang-up
    from the connection itself and stops the watch (it would otherwise stay registered until
    its timeout, up to an hour)."""
    base = watchers_gauge(hub)
    streams = open_watches(hub, namespace, 5)
    wait_for(lambda: watchers_gauge(hub) >= base + 5, 30, what="5 open watches")
    for s in streams:
        s.close()
    wait_for(lambda: watchers_gauge(hub) <= base, 30, what=f"the 5 watches gone (down to {base})")


def test_a_watch_timeout_ends_on_time_while_events_flow(hub: Hub, namespace: str):
    started = time.monotonic()
    s = Stream(hub, f"/api/v1/namespaces/{namespace}/configmaps?watch=true&timeoutSeconds=2")
    i = 0
    while not s.ended.is_set() and time.monotonic() - started < 20:
        hub.request("POST", f"/api/v1/namespaces/{namespace}/configmaps", cm(f"tick-{i}"))
        i += 1
        s.ended.wait(0.1)
    assert s.ended.is_set()
    assert 1.9 < time.monotonic() - started < 12
    assert s.events and all(e["type"] == "ADDED" for e in s.events)


def test_a_client_that_stops_reading_is_dropped(hub: Hub, namespace: str):
    """A watch whose client reads nothing is dropped once 16 MiB of events wait for it: the hub
    holds no more, its other watches go on, and the stream ends with a 410 ERROR event."""
    base = watchers_gauge(hub)
    ctx = hub.ssl_context()
    host, port = hub.url.removeprefix("https://").rsplit(":", 1)
    raw = socket.create_connection((host, int(port)))
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    sock = ctx.wrap_socket(raw, server_hostname=host)
    rv = now(hub, namespace)
    sock.sendall(f"GET /api/v1/namespaces/{namespace}/configmaps?watch=true&resourceVersion={rv} HTTP/1.1\r\n"
                 f"Host: {host}\r\nAuthorization: Bearer {hub.token}\r\n\r\n".encode())
    reader = Stream(hub, f"/api/v1/namespaces/{namespace}/configmaps?watch=true&resourceVersion={rv}")
    wait_for(lambda: watchers_gauge(hub) >= base + 2, 30, what="both watches open")
    big = "x" * (900 * 1024)
    for i in range(40):  # ~35 MiB of events for a client that reads none of them
        status, _, body = hub.request("POST", f"/api/v1/namespaces/{namespace}/configmaps", cm(f"big-{i}", {"v": big}))
        assert status == 201, body
    assert len(reader.wait(40, 90)) == 40  # the reading watch got everything
    # Reading now: what was written before the drop, then the 410 ERROR, then the end.
    sock.settimeout(30)
    data = b""
    while True:
        try:
            chunk = sock.recv(1 << 20)
        except (OSError, ssl.SSLError):
            break
        if not chunk:
            break
        data += chunk
    sock.close()
    assert b'"type":"ERROR"' in data and b'"code":410' in data
    events = data.count(b'{"type":"ADDED"')
    assert events < 40  # dropped before it got everything: the hub did not hold all of it
    wait_for(lambda: watchers_gauge(hub) <= base + 1, 30, what="the stuck watch gone")
    reader.close()
