"""Authorization on the hot path: create and get throughput as a non-admin user whose rights come
from RBAC (a RoleBinding to ``edit``) beside the admin (``system:masters``, which skips RBAC), in
the same hub, alternating rounds; and the resident memory a logical cluster costs with RBAC in use
(a RoleBinding in it and a non-admin request, so the authorizer's per-cluster index is built)
beside logical clusters used by the admin alone."""

from __future__ import annotations

import asyncio
import statistics
import tempfile
from pathlib import Path

import aiohttp
import orjson

from .hub import HubProcess, _run_concurrent, payload

USER_TOKEN = "bench-user-token-0123456789abcdef"


def _hub() -> HubProcess:
    tokens = Path(tempfile.mkdtemp(prefix="fleetplane-bench-tokens-")) / "tokens.csv"
    tokens.write_text(f'{USER_TOKEN},bench-user,1000,"bench-devs"\n')
    return HubProcess("--token-auth-file", str(tokens), "--no-cluster-controller", "--no-splitter")


def _session(hub: HubProcess, token: str, limit: int) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=hub.ssl, limit=limit),
                                 headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})


def _binding(namespace: str) -> dict:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "bench-devs-edit", "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "bench-devs"}]}


async def _round(hub: HubProcess, token: str, namespace: str, n: int, concurrency: int, offset: int) -> tuple[float, float]:
    base = f"{hub.url}/api/v1/namespaces/{namespace}/configmaps"
    bodies = [orjson.dumps(payload(offset + i)) for i in range(n)]
    async with _session(hub, token, concurrency) as s:

        async def create(i: int) -> None:
            async with s.post(base, data=bodies[i]) as r:
                assert r.status == 201, await r.text()
                await r.read()

        async def get(i: int) -> None:
            async with s.get(f"{base}/cm-{offset + i}") as r:
                assert r.status == 200, await r.text()
                await r.read()

        c, _ = await _run_concurrent(n, concurrency, create)
        g, _ = await _run_concurrent(n, concurrency, get)
    return c, g


async def throughput(hub: HubProcess, n: int, rounds: int, concurrency: int = 32) -> dict:
    async with hub.session() as s:
        for ns in ("bench-admin", "bench-user"):
            async with s.post(f"{hub.url}/api/v1/namespaces", data=orjson.dumps({"metadata": {"name": ns}})) as r:
                assert r.status == 201, await r.text()
        async with s.post(f"{hub.url}/apis/rbac.authorization.k8s.io/v1/namespaces/bench-user/rolebindings",
                          data=orjson.dumps(_binding("bench-user"))) as r:
            assert r.status == 201, await r.text()
    await _round(hub, USER_TOKEN, "bench-user", 200, concurrency, 10_000_000)  # warm-up: caches, TLS, JIT-less paths
    admin_c, admin_g, user_c, user_g = [], [], [], []
    for k in range(rounds):  # A B, then B A: drift and warm caches hit both alike
        order = [("admin", hub.token, "bench-admin"), ("user", USER_TOKEN, "bench-user")]
        for who, token, ns in (order if k % 2 == 0 else order[::-1]):
            c, g = await _round(hub, token, ns, n, concurrency, k * n)
            (admin_c if who == "admin" else user_c).append(c)
            (admin_g if who == "admin" else user_g).append(g)
    med = statistics.median
    return {"n_per_round": n, "rounds": rounds,
            "admin_create": med(admin_c), "user_create": med(user_c), "create_ratio": med(user_c) / med(admin_c),
            "admin_get": med(admin_g), "user_get": med(user_g), "get_ratio": med(user_g) / med(admin_g)}


async def memory(hub: HubProcess, count: int, concurrency: int = 32) -> dict:
    """RSS per logical cluster: ``count`` used by the admin alone, then ``count`` more each with a
    RoleBinding and a request by the bound user (the authorizer's per-cluster state built)."""
    async with hub.session(concurrency) as admin, _session(hub, USER_TOKEN, concurrency) as user:

        async def plain(i: int) -> None:
            async with admin.get(f"{hub.url}/clusters/mem-plain-{i}/api/v1/namespaces/default") as r:
                assert r.status == 200, await r.text()

        async def with_rbac(i: int) -> None:
            lc = f"{hub.url}/clusters/mem-rbac-{i}"
            async with admin.post(f"{lc}/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
                                  data=orjson.dumps(_binding("default"))) as r:
                assert r.status == 201, await r.text()
            async with user.get(f"{lc}/api/v1/namespaces/default/configmaps") as r:
                assert r.status == 200, await r.text()

        rss0 = hub.rss_kib()
        await _run_concurrent(count, concurrency, plain)
        await asyncio.sleep(1)
        rss1 = hub.rss_kib()
        await _run_concurrent(count, concurrency, with_rbac)
        await asyncio.sleep(1)
        rss2 = hub.rss_kib()
    plain_kib, rbac_kib = (rss1 - rss0) / count, (rss2 - rss1) / count
    return {"count": count, "plain_kib": plain_kib, "rbac_kib": rbac_kib, "rbac_extra_kib": rbac_kib - plain_kib}


async def run(quick: bool = False) -> dict:
    hub = _hub()
    try:
        result = await throughput(hub, 500 if quick else 1000, 4 if quick else 10)
    finally:
        hub.stop()
    fresh = _hub()
    try:
        result["memory"] = await memory(fresh, 200 if quick else 1000)
    finally:
        fresh.stop()
    return result


def render(r: dict) -> list[str]:
    m = r["memory"]
    return [
        "## Authorization on the hot path (RBAC)", "",
        f"ConfigMaps of ~300 bytes, 32 concurrent clients over HTTPS, {r['n_per_round']} creates then {r['n_per_round']} gets"
        f" per round, {r['rounds']} rounds alternating admin and user (ABBA order; medians). The admin is in system:masters,"
        " which skips RBAC; the user's rights come from a RoleBinding to `edit` (the authorizer walks"
        " the bootstrap bindings, then the namespace's).", "",
        "| operation | user through RBAC (/s) | admin, no RBAC (/s) | ratio (aim ≥ 0.9) |", "|---|---|---|---|",
        f"| create | {r['user_create']:.0f} | {r['admin_create']:.0f} | {r['create_ratio']:.2f} |",
        f"| get | {r['user_get']:.0f} | {r['admin_get']:.0f} | {r['get_ratio']:.2f} |",
        "",
        f"Memory per logical cluster ({m['count']} of each kind, resident set of the hub): {m['rbac_kib']:.1f} KiB with a"
        f" RoleBinding and the user's request (the authorizer's per-cluster index built), beside {m['plain_kib']:.1f} KiB for"
        f" one the admin only touched: RBAC adds {m['rbac_extra_kib']:.1f} KiB (aim: under 50 KiB). The bootstrap"
        " roles and bindings are one shared copy, not stored per logical cluster.",
    ]


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(asyncio.run(run(quick="--quick" in sys.argv)), indent=2))
