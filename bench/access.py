"""Micro-benchmark of the access library: ``run() -> dict`` (wired into ``make bench``).

Measures:

* ``cold_exec_ms``: obtaining a credential when the cache is empty (plugin process spawn + exec
  protocol + parsing), through the sync API;
* ``warm_cache_us`` / ``warm_cache_async_us``: obtaining the cached credential (sync / async);
* ``config_builds_per_second``: ``build_access_config`` over ``n_profiles`` distinct ClusterProfiles
  (with an exec extension and additional-args/envs under Append/Replace policies), and
  ``hash_per_second`` for the resulting AccessConfigs (what a consumer's client cache does).

The plugin is a ``/bin/sh`` script when available (measuring the library, not a Python interpreter
start-up), else a Python script.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any

from fleetplane.access.execplugin import get_authenticator
from fleetplane.access.profile import (
    ADDITIONAL_ARGS_EXTENSION,
    ADDITIONAL_ENVS_EXTENSION,
    EXEC_EXTENSION,
    build_access_config,
)
from fleetplane.access.provider import ProviderConfig

_RESPONSE = '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"bench-token"}}'


def _stats(samples: list[float], scale: float) -> dict[str, float]:
    s = sorted(x * scale for x in samples)
    return {
        "min": round(s[0], 3),
        "p50": round(statistics.median(s), 3),
        "p95": round(s[min(len(s) - 1, int(len(s) * 0.95))], 3),
        "mean": round(statistics.fmean(s), 3),
        "max": round(s[-1], 3),
    }


def _write_plugin(d: str) -> tuple[str, str]:
    path = os.path.join(d, "bench-plugin")
    if os.path.exists("/bin/sh"):
        body, kind = f"#!/bin/sh\nprintf '%s' '{_RESPONSE}'\n", "sh"
    else:  # pragma: no cover
        body, kind = f"#!{sys.executable}\nimport sys\nsys.stdout.write({_RESPONSE!r})\n", "python"
    with open(path, "w") as f:
        f.write(body)
    os.chmod(path, 0o755)
    return path, kind


def _profile(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "multicluster.x-k8s.io/v1alpha1",
        "kind": "ClusterProfile",
        "metadata": {"name": f"cluster-{i}", "namespace": "fleet"},
        "spec": {"clusterManager": {"name": "bench"}},
        "status": {
            "accessProviders": [
                {
                    "name": "bench",
                    "cluster": {
                        "server": f"https://10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}:6443",
                        "certificate-authority-data": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=",
                        "tls-server-name": f"cluster-{i}.fleet",
                        "extensions": [
                            {"name": EXEC_EXTENSION, "extension": {"clusterName": f"cluster-{i}"}},
                            {"name": ADDITIONAL_ARGS_EXTENSION, "extension": ["--audience", f"cluster-{i}"]},
                            {
                                "name": ADDITIONAL_ENVS_EXTENSION,
                                "extension": {"REGION": "eu", "CLUSTER": f"c{i}"},
                            },
                        ],
                    },
                }
            ]
        },
    }


def run(n_profiles: int = 1000, cold_iterations: int = 20, warm_iterations: int = 20000) -> dict[str, Any]:
    """Run the benchmark and return the numbers (milliseconds, microseconds, operations per second)."""
    d = tempfile.mkdtemp(prefix="fleetplane-access-bench-")
    try:
        plugin, kind = _write_plugin(d)
        providers = ProviderConfig.from_dict(
            {
                "providers": [
                    {
                        "name": "bench",
                        "execConfig": {
                            "apiVersion": "client.authentication.k8s.io/v1",
                            "command": plugin,
                            "env": [{"name": "REGION", "value": "us"}],
                            "provideClusterInfo": True,
                            "interactiveMode": "Never",
                        },
                        "profileSourcedCLIArgsPolicy": "Append",
                        "profileSourcedEnvVarsPolicy": "Replace",
                    }
                ]
            }
        )
        profiles = [_profile(i) for i in range(n_profiles)]

        # config builds
        build_access_config(profiles[0], providers)  # warm imports
        t0 = time.perf_counter()
        configs = [build_access_config(p, providers) for p in profiles]
        build_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        for _ in range(3):
            for c in configs:
                hash(c)
        hash_s = (time.perf_counter() - t0) / 3
        distinct = len(set(configs))

        # credentials
        auth = get_authenticator(configs[0])
        auth.invalidate()
        cold: list[float] = []
        for _ in range(cold_iterations):
            auth.invalidate()
            t0 = time.perf_counter()
            auth.get_credential_sync()
            cold.append(time.perf_counter() - t0)
        warm: list[float] = []
        for _ in range(warm_iterations):
            t0 = time.perf_counter()
            auth.get_credential_sync()
            warm.append(time.perf_counter() - t0)

        async def warm_async() -> list[float]:
            out = []
            for _ in range(warm_iterations):
                t = time.perf_counter()
                await auth.get_credential()
                out.append(time.perf_counter() - t)
            return out

        warm_a = asyncio.run(warm_async())
        cold_stats = _stats(cold, 1e3)
        warm_stats = _stats(warm, 1e6)
        return {
            "plugin": kind,
            "n_profiles": n_profiles,
            "distinct_configs": distinct,
            "config_build_seconds": round(build_s, 4),
            "config_builds_per_second": round(n_profiles / build_s, 1),
            "hash_per_second": round(n_profiles / hash_s, 1) if hash_s > 0 else float("inf"),
            "cold_exec_ms": cold_stats,
            "warm_cache_us": warm_stats,
            "warm_cache_async_us": _stats(warm_a, 1e6),
            "cold_over_warm_p50": round(cold_stats["p50"] * 1e3 / max(warm_stats["p50"], 1e-9), 1),
            "exec_count": auth.exec_count,
        }
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":  # pragma: no cover
    import json

    print(json.dumps(run(), indent=2))
