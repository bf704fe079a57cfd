"""Packaging properties: import isolation, metrics registration, public API, benchmark."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

from prometheus_client import REGISTRY

import fleetplane.access as access_pkg

ROOT = Path(__file__).resolve().parents[2]  # where the top-level ``bench`` package is


def _modules_after(code: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_library_imports_no_server_code_and_no_client_library():
    mods = _modules_after(
        "import fleetplane.access as a\n"
        "a.build_access_config, a.ExecAuthenticator, a.load_provider_file, a.find_secret_kubeconfig\n"
        "import bench.access, fleetplane.access.metrics, fleetplane.access._tls"
    )
    fleet = [m for m in mods if m.startswith("fleetplane.") and not m.startswith("fleetplane.access")]
    clients = [
        m
        for m in mods
        if m.split(".")[0]
        in {"kubernetes", "kubernetes_asyncio", "lightkube", "kr8s", "aiohttp", "httpx", "httpx2"}
    ]
    assert fleet == [] and clients == []


def test_plugins_start_light():
    mods = _modules_after(
        "import fleetplane.access.plugins.tokenfile, fleetplane.access.plugins.secretreader"
    )
    heavy = [
        m
        for m in mods
        if m.split(".")[0] in {"orjson", "prometheus_client", "cryptography", "kubernetes", "yaml"}
    ]
    assert heavy == []


def test_metrics_registered_once():
    from fleetplane.access import metrics

    before = metrics.CREDENTIAL_FETCH_TOTAL
    reloaded = importlib.reload(metrics)
    assert reloaded.CREDENTIAL_FETCH_TOTAL is before
    names = {m.name for m in REGISTRY.collect()}
    assert {
        "clusterprofile_credential_fetch",
        "clusterprofile_credential_fetch_duration_seconds",
        "clusterprofile_credential_cache",
    } <= names


def test_public_names_resolve():
    for name in access_pkg.__all__:
        assert getattr(access_pkg, name) is not None
    assert "AccessConfig" in dir(access_pkg)


def test_bench_run_small():
    from bench import access as bench

    res = bench.run(n_profiles=50, cold_iterations=2, warm_iterations=50)
    assert res["n_profiles"] == 50 and res["distinct_configs"] == 50
    assert res["config_builds_per_second"] > 0 and res["exec_count"] == 2
    assert res["cold_exec_ms"]["p50"] > res["warm_cache_us"]["p50"] / 1000
