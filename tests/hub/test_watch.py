"""Watch over HTTP: initial events, resume, 410, bookmarks, sendInitialEvents, timeouts."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.request

from ..harness import Hub, wait_for
from .test_rest import cm


class Stream:
    """A watch response read line by line on a thread."""

    def __init__(self, hub: Hub, path: str) -> None:
        req = urllib.request.Request(hub.url + path, headers={"Authorization": f"Bearer {hub.token}"})
        self.resp = urllib.request.urlopen(req, context=hub.ssl_context(), timeout=30)
        self.events: list[dict] = []
        self.ended = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            for line in self.resp:
                self.events.append(json.loads(line))
        except (OSError, ValueError):
            pass
        self.ended.set()

    def wait(self, n: int, timeout: float = 10.0) -> list[dict]:
        wait_for(lambda: len(self.events) >= n, timeout, what=f"{n} watch events (have {self.events})")
        return self.events

    def close(self) -> None:
        """Hang up (shutting the socket down wakes the reader thread at once)."""
        try:
            self.resp.fp.raw._sock.shutdown(socket.SHUT_RDWR)
        except (AttributeError, OSError):
            pass
        self.ended.wait(5)
        self.resp.close()


def names(events: list[dict]) -> list[tuple[str, str]]:
    return [(e["type"], e["object"]["metadata"].get("name", "")) for e in events]


def test_watch_without_rv_sends_synthetic_added_then_live(hub: Hub, namespace: str):
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    hub.json("POST", base, cm("before"))
    s = Stream(hub, f"{base}?watch=true")
    s.wait(1)
    hub.json("POST", base, cm("after"))
    hub.json("PATCH", f"{base}/after", {"data": {"x": "y"}}, content_type="application/merge-patch+json")
    hub.json("DELETE", f"{base}/after")
    s.wait(4)
    assert names(s.events) == [("ADDED", "before"), ("ADDED", "after"), ("MODIFIED", "after"), ("DELETED", "after")]
    revs = [int(e["object"]["metadata"]["resourceVersion"]) for e in s.events[1:]]
    assert revs == sorted(revs)
    s.close()


def test_watch_resumes_from_resource_version(hub: Hub, namespace: str):
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    _, a = hub.json("POST", base, cm("a"))
    hub.json("POST", base, cm("b"))
    hub.json("POST", base, cm("c"))
    s = Stream(hub, f"{base}?watch=1&resourceVersion={a['metadata']['resourceVersion']}")
    s.wait(2)
    assert names(s.events) == [("ADDED", "b"), ("ADDED", "c")]
    s.close()


def test_timeout_seconds_ends_the_stream_cleanly(hub: Hub, namespace: str):
    started = time.monotonic()
    s = Stream(hub, f"/api/v1/namespaces/{namespace}/configmaps?watch=true&timeoutSeconds=1")
    assert s.ended.wait(10)
    assert 0.9 < time.monotonic() - started < 8
    assert all(e["type"] != "ERROR" for e in s.events)


def test_send_initial_events_ends_with_the_bookmark(hub: Hub, namespace: str):
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    hub.json("POST", base, cm("x"))
    hub.json("POST", base, cm("y"))
    code, body = hub.json("GET", f"{base}?watch=true&sendInitialEvents=true")
    assert code == 422
    s = Stream(hub, f"{base}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=")
    events = s.wait(3)
    assert names(events[:2]) == [("ADDED", "x"), ("ADDED", "y")]
    assert events[2]["type"] == "BOOKMARK"
    assert events[2]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    s.close()


def test_selector_changes_become_added_and_deleted(hub: Hub, namespace: str):
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    s = Stream(hub, f"{base}?watch=true&labelSelector=pick%3Dyes")
    hub.json("POST", base, cm("flip"))
    hub.json("PATCH", f"{base}/flip", {"metadata": {"labels": {"pick": "yes"}}}, content_type="application/merge-patch+json")
    hub.json("PATCH", f"{base}/flip", {"metadata": {"labels": {"pick": "no"}}}, content_type="application/merge-patch+json")
    s.wait(2)
    assert names(s.events) == [("ADDED", "flip"), ("DELETED", "flip")]
    s.close()


def test_bookmarks_arrive_on_their_interval(tmp_path):
    hub = Hub(tmp_path / "bm", extra=["--watch-bookmark-interval", "0.5"]).start()
    try:
        s = Stream(hub, "/api/v1/namespaces/default/configmaps?watch=true&allowWatchBookmarks=true&resourceVersion=0")
        events = s.wait(2, timeout=5)
        assert [e["type"] for e in events[:2]] == ["BOOKMARK", "BOOKMARK"]
        assert events[0]["object"]["kind"] == "ConfigMap" and events[0]["object"]["metadata"]["resourceVersion"].isdigit()
        s.close()
        # no bookmarks unless asked for: none while a watch opened after it gets two
        quiet = Stream(hub, "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=0")
        asking = Stream(hub, "/api/v1/namespaces/default/configmaps?watch=true&allowWatchBookmarks=true&resourceVersion=0")
        assert [e["type"] for e in asking.wait(2, timeout=5)[:2]] == ["BOOKMARK", "BOOKMARK"]
        asking.close()
        quiet.close()
        assert quiet.events == []
    finally:
        hub.stop()


def test_metrics_count_requests_and_open_watches(hub: Hub, namespace: str):
    s = Stream(hub, f"/api/v1/namespaces/{namespace}/configmaps?watch=true")
    created = 'apiserver_request_total{code="201",group="",resource="namespaces",subresource="",verb="create"}'

    def scrape() -> str | None:
        text = hub.request("GET", "/metrics")[2].decode()
        return text if created in text else None

    text = wait_for(scrape, what="the create to be counted")
    watchers = [line for line in text.splitlines() if line.startswith('apiserver_registered_watchers{resource="configmaps"}')]
    assert watchers and float(watchers[0].split()[-1]) >= 1
    assert "fleetplane_logical_clusters" in text and "fleetplane_storage_revision" in text
    s.close()


def test_legacy_watch_paths(hub: Hub, namespace: str):
    """kube's deprecated /watch/ routes still serve watches (old clients and scripts use them); the
    route with a name watches that one object."""
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    for name in ("one", "two"):
        assert hub.json("POST", base, cm(name))[0] == 201
    everything = Stream(hub, f"/api/v1/watch/namespaces/{namespace}/configmaps")
    just_one = Stream(hub, f"/api/v1/watch/namespaces/{namespace}/configmaps/one")
    item_flag = Stream(hub, f"{base}/two?watch=true")
    try:
        assert sorted(names(everything.wait(2))) == [("ADDED", "one"), ("ADDED", "two")]
        assert names(just_one.wait(1)) == [("ADDED", "one")]
        assert names(item_flag.wait(1)) == [("ADDED", "two")]
        for name in ("two", "one"):
            assert hub.json("PATCH", f"{base}/{name}", {"data": {"k": "new"}}, content_type="application/merge-patch+json")[0] == 200
        assert names(just_one.wait(2))[1] == ("MODIFIED", "one")  # "two"'s change, sent first, is not in it
        assert names(item_flag.wait(2))[1] == ("MODIFIED", "two")
        assert len(just_one.events) == 2 and len(everything.wait(4)) == 4
    finally:
        for s in (everything, just_one, item_flag):
            s.close()
    assert hub.json("GET", f"/api/v1/watch/namespaces/{namespace}/configmaps?fieldSelector=bogus=x")[0] == 400


def test_a_watch_on_events_k8s_io_sees_core_events(hub: Hub, namespace: str):
    """One store for both Event APIs: a core/v1 Event reaches an events.k8s.io/v1 watch, converted."""
    s = Stream(hub, f"/apis/events.k8s.io/v1/namespaces/{namespace}/events?watch=true")
    try:
        code, _ = hub.json("POST", f"/api/v1/namespaces/{namespace}/events",
                           {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "seen"}, "message": "hello",
                            "involvedObject": {"kind": "ConfigMap", "name": "c", "namespace": namespace}})
        assert code == 201
        event = s.wait(1)[0]
        assert event["type"] == "ADDED" and event["object"]["apiVersion"] == "events.k8s.io/v1"
        assert (event["object"]["note"], event["object"]["regarding"]["name"]) == ("hello", "c")
    finally:
        s.close()
