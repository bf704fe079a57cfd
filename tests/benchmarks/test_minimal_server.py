"""The benchmark's baseline server and load generator (bench/minimal_server.py, bench/wrk/):
the minimal server does what the hub's ratio assumes (a durable write per create, gets and lists
from memory, the token checked), on each HTTP stack; wrk's creates have unique names and its
figures are parsed with the server's and the client's CPU per request."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator

import pytest
from bench.hub import MinimalProcess, parse_wrk, wrk

CONFIGMAPS = "/api/v1/namespaces/bench/configmaps"


@pytest.fixture(params=["uvicorn", "httptools"])
def minimal(request: pytest.FixtureRequest) -> Iterator[MinimalProcess]:
    p = MinimalProcess(request.param)
    yield p
    p.stop()


def _stored_keys(p: MinimalProcess) -> list[str]:
    with sqlite3.connect(f"file:{p.data_dir / 'minimal.db'}?mode=ro", uri=True) as conn:
        return [k for (k,) in conn.execute("SELECT key FROM kv ORDER BY key")]


def test_creates_durably_and_serves_gets_and_lists_from_memory(minimal: MinimalProcess) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "one"}, "data": {"k": "v"}}
    code, created = minimal.request("POST", CONFIGMAPS, cm)
    assert code == 201, created
    meta = created["metadata"]
    assert meta["namespace"] == "bench" and meta["uid"] and meta["creationTimestamp"].endswith("Z")
    assert int(meta["resourceVersion"]) > 0 and created["data"] == {"k": "v"}
    assert _stored_keys(minimal) == ["/core/configmaps/root/bench/one"]  # committed before the 201

    assert minimal.request("POST", CONFIGMAPS, cm)[0] == 409
    assert minimal.request("GET", f"{CONFIGMAPS}/one") == (200, created)
    code, listed = minimal.request("GET", CONFIGMAPS)
    assert code == 200 and listed["kind"] == "ConfigMapList" and listed["items"] == [created]
    code, missing = minimal.request("GET", f"{CONFIGMAPS}/two")
    assert code == 404 and missing["reason"] == "NotFound"
    assert minimal.request("GET", CONFIGMAPS, auth=False)[0] == 401


@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed (make wrk)")
def test_wrk_creates_unique_names_and_reports_cpu_per_request(minimal: MinimalProcess) -> None:
    run = wrk(minimal, "create.lua", CONFIGMAPS, ["configmap", "t"], seconds=2, connections=4, threads=2)
    assert run["requests"] > 0 and run["non2xx"] == 0 and run["errors"] == 0, run  # no name created twice
    assert run["server_cpu_us"] > 0 and run["client_cpu_us"] > 0 and run["p50"] <= run["p99"]
    names = [k.rsplit("/", 1)[1] for k in _stored_keys(minimal)]
    assert len(names) >= run["requests"] and {n.split("-")[1] for n in names} == {"0", "1"}  # both threads

    dep = wrk(minimal, "create.lua", "/apis/apps/v1/namespaces/bench/deployments", ["deployment", "t"],
              seconds=1, connections=2, threads=1)
    assert dep["requests"] > 0 and dep["non2xx"] == 0, dep
    code, listed = minimal.request("GET", "/apis/apps/v1/namespaces/bench/deployments")
    assert code == 200 and listed["items"][0]["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"

    get = wrk(minimal, "get.lua", CONFIGMAPS, ["t-0", "1"], seconds=1, connections=2, threads=1)
    assert get["requests"] > 0 and get["non2xx"] > 0  # t-0-0 does not exist: counted as errors, not hidden


def test_parse_wrk_reads_the_summary_and_the_latency_distribution() -> None:
    out = """Running 1s test @ https://127.0.0.1:1/x
  Latency Distribution
     50%  812.00us
     75%    1.50ms
     99%    2.10s
  100 requests in 1.00s, 1.00KB read
Requests/sec:    99.50
WRK {"requests":100,"duration_us":1000000,"bytes":1000,"errors":{"connect":0,"read":0,"write":0,"status":3,"timeout":0},"latency_us":{"p50":812,"p90":1400,"p99":2100000,"p999":2100000,"max":2100000,"mean":900.0}}
"""
    w = parse_wrk(out)
    assert w["rps"] == 99.5 and w["requests"] == 100 and w["errors"]["status"] == 3
    assert w["latency_ms"] == {"50%": 0.812, "75%": 1.5, "99%": 2100.0}
