"""The hub as a process: start-up time, TLS and kubeconfig, restart durability, SIGTERM."""

from __future__ import annotations

import http.client
import signal
import ssl
import threading
import time
import urllib.error
import urllib.request

import pytest
import yaml

from ..harness import Hub, Kubectl, free_port
from .test_rest import cm
from .test_watch import Stream


def test_fresh_start_tls_and_kubeconfig(tmp_path):
    """A fresh data dir: ready, HTTPS with our CA, an admin kubeconfig. (The time to ready is
    measured by `make bench`, not asserted: a loaded CI machine would make it flaky.)"""
    port = free_port()
    hub = Hub(tmp_path / "fresh", port)
    hub.start(timeout=20)
    try:
        cfg = yaml.safe_load(hub.kubeconfig.read_text())
        assert cfg["current-context"] == "root"
        assert cfg["clusters"][0]["cluster"]["server"] == f"https://127.0.0.1:{port}/clusters/root"
        assert cfg["clusters"][0]["cluster"]["certificate-authority-data"]
        # HTTPS with our CA works; without it the certificate is refused
        with pytest.raises(urllib.error.URLError):
            urllib.request.urlopen(f"https://127.0.0.1:{port}/version", context=ssl.create_default_context(), timeout=5)
        assert hub.request("GET", "/version", auth=False)[0] == 200
    finally:
        assert hub.stop() == 0


def test_restart_keeps_objects_and_old_watches_expire(tmp_path):
    hub = Hub(tmp_path / "durable").start()
    ns_path = "/api/v1/namespaces/default/configmaps"
    try:
        _, first = hub.json("POST", ns_path, cm("kept", {"v": "1"}))
        hub.json("POST", "/clusters/other/api/v1/namespaces/default/configmaps", cm("kept-too"))
        hub.json("POST", ns_path, cm("later"))
    finally:
        assert hub.stop(signal.SIGTERM) == 0
    hub2 = Hub(tmp_path / "durable", hub.port).start()
    try:
        code, got = hub2.json("GET", f"{ns_path}/kept")
        assert code == 200 and got["data"] == {"v": "1"} and got["metadata"]["uid"] == first["metadata"]["uid"]
        assert hub2.json("GET", "/clusters/other/api/v1/namespaces/default/configmaps/kept-too")[0] == 200
        # a watch from before the restart is too old for the new watch cache: 410 as an ERROR event
        s = Stream(hub2, f"{ns_path}?watch=true&resourceVersion={first['metadata']['resourceVersion']}")
        events = s.wait(1)
        assert events[0]["type"] == "ERROR" and events[0]["object"]["code"] == 410
        assert events[0]["object"]["reason"] == "Expired"
        assert s.ended.wait(5)
        # new writes continue the revision sequence
        _, newer = hub2.json("POST", ns_path, cm("after-restart"))
        assert int(newer["metadata"]["resourceVersion"]) > int(got["metadata"]["resourceVersion"])
    finally:
        assert hub2.stop() == 0


def test_sigterm_ends_open_watches_and_exits_cleanly(tmp_path):
    hub = Hub(tmp_path / "term").start()
    s = Stream(hub, "/api/v1/namespaces/default/configmaps?watch=true")
    started = time.monotonic()
    assert hub.stop(signal.SIGTERM) == 0
    assert time.monotonic() - started < 5
    assert s.ended.wait(5)


def test_sigterm_is_not_held_up_by_a_client_that_reopens_its_watch(tmp_path):
    """A client that opens its watch again as soon as it ends, on the same keep-alive connection
    (as client-go's reflector does), must not hold the shutdown open: a watch opened once the
    hub is stopping ends as soon as it starts. (It used to wait for uvicorn's 3 s graceful
    timeout: every simulated cluster a Syncer watched took over 3 s to stop.)"""
    hub = Hub(tmp_path / "rewatch").start()
    opened = threading.Event()
    done = threading.Event()

    def rewatch() -> None:
        conn = http.client.HTTPSConnection("127.0.0.1", hub.port, context=hub.ssl_context(), timeout=30)
        try:
            while True:
                conn.request("GET", "/api/v1/namespaces/default/configmaps?watch=true",
                             headers={"Authorization": f"Bearer {hub.token}"})
                resp = conn.getresponse()
                opened.set()
                resp.read()  # until the hub ends the watch
        except (OSError, http.client.HTTPException):
            pass  # the hub is gone
        finally:
            conn.close()
            done.set()

    threading.Thread(target=rewatch, daemon=True).start()
    assert opened.wait(10)
    started = time.monotonic()
    assert hub.stop(signal.SIGTERM) == 0
    assert time.monotonic() - started < 2.5  # uvicorn's graceful timeout is 3 s
    assert done.wait(5)


def test_kubectl_through_the_dispatcher_picks_the_matching_minor(tmp_path):
    hub = Hub(tmp_path / "disp").start()
    try:
        k = Kubectl(hub.kubeconfig)
        k.binary = "kubectl"  # the dispatcher on PATH, which asks /version first
        assert "Server Version: v1.32" in k("version").out
    finally:
        hub.stop()


def _sample(metrics: str, name: str) -> float:
    return sum(float(line.split()[-1]) for line in metrics.splitlines() if line.startswith(name + " "))


def test_group_commits_are_reported_on_metrics(tmp_path):
    """Every write is in some group commit: /metrics counts the commits and their writes (the
    hub writes on its own too: only growth is asserted)."""
    hub = Hub(tmp_path / "commits").start()
    try:
        text = hub.request("GET", "/metrics")[2].decode()
        commits, writes = (_sample(text, "fleetplane_storage_commit_duration_seconds_count"),
                           _sample(text, "fleetplane_storage_commit_writes_sum"))
        for i in range(5):
            assert hub.json("POST", "/api/v1/namespaces/default/configmaps", cm(f"c{i}"))[0] == 201
        text = hub.request("GET", "/metrics")[2].decode()
        assert _sample(text, "fleetplane_storage_commit_writes_sum") - writes >= 5
        assert _sample(text, "fleetplane_storage_commit_duration_seconds_count") > commits
        assert "fleetplane_storage_commit_duration_seconds_bucket{le=" in text
    finally:
        assert hub.stop() == 0
