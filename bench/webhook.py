"""Admission webhooks on the create path: ConfigMap creates in a logical cluster with one validating
webhook (a real HTTPS server with its own CA, in a process of its own, allowing everything) beside
creates in a logical cluster with none, on the same hub, alternating rounds (ABBA; medians)."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import ipaddress
import multiprocessing
import ssl
import statistics
import tempfile
from pathlib import Path

import orjson
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from .hub import HubProcess, _run_concurrent, payload, percentiles


def _certificates(directory: Path) -> tuple[bytes, Path, Path]:
    """(CA PEM, serving cert file, key file) for 127.0.0.1."""
    now = dt.datetime.now(dt.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "bench-webhook-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
          .not_valid_after(now + dt.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True).sign(ca_key, hashes.SHA256()))
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "webhook")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    (directory / "cert.pem").write_bytes(cert.public_bytes(pem))
    (directory / "key.pem").write_bytes(key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    (directory / "key.pem").chmod(0o600)
    return ca.public_bytes(pem), directory / "cert.pem", directory / "key.pem"


async def _serve_webhook(cert: Path, key: Path) -> tuple[web.AppRunner, int]:
    async def review(request: web.Request) -> web.Response:
        body = orjson.loads(await request.read())
        return web.Response(body=orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                               "response": {"uid": body["request"]["uid"], "allowed": True}}),
                            content_type="application/json")

    app = web.Application()
    app.router.add_post("/validate", review)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ctx)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, port


def _webhook_process(cert: Path, key: Path, ports: multiprocessing.Queue) -> None:
    """The webhook server's own process (so the load generator does not slow it, nor it the load)."""
    async def main() -> None:
        _, port = await _serve_webhook(cert, key)
        ports.put(port)
        await asyncio.Event().wait()

    asyncio.run(main())


async def _round(hub: HubProcess, cluster: str, n: int, concurrency: int, offset: int) -> tuple[float, list[float]]:
    base = f"{hub.url}/clusters/{cluster}/api/v1/namespaces/default/configmaps"
    bodies = [orjson.dumps(payload(offset + i)) for i in range(n)]
    async with hub.session(concurrency) as s:

        async def create(i: int) -> None:
            async with s.post(base, data=bodies[i]) as r:
                assert r.status == 201, await r.text()
                await r.read()

        return await _run_concurrent(n, concurrency, create)


async def measure(hub: HubProcess, n: int, rounds: int) -> dict:
    directory = Path(tempfile.mkdtemp(prefix="fleetplane-bench-webhook-"))
    ca, cert, key = _certificates(directory)
    spawn = multiprocessing.get_context("spawn")
    ports: multiprocessing.Queue = spawn.Queue()
    server = spawn.Process(target=_webhook_process, args=(cert, key, ports), daemon=True)
    server.start()
    port = await asyncio.to_thread(ports.get, True, 60)
    try:
        config = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                  "metadata": {"name": "bench"},
                  "webhooks": [{"name": "bench.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                                "clientConfig": {"url": f"https://127.0.0.1:{port}/validate", "caBundle": base64.b64encode(ca).decode()},
                                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]}]}
        async with hub.session() as s:
            async with s.post(f"{hub.url}/clusters/wh-one/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
                              data=orjson.dumps(config)) as r:
                assert r.status == 201, await r.text()
        for cluster in ("wh-none", "wh-one"):  # warm-up: logical clusters made, TLS sessions, caches
            await _round(hub, cluster, 100, 8, 50_000_000)
        lat: dict[str, list[float]] = {"none": [], "one": []}
        rate: dict[str, list[float]] = {"none": [], "one": []}
        for k in range(rounds):
            order = [("none", "wh-none"), ("one", "wh-one")]
            for who, cluster in (order if k % 2 == 0 else order[::-1]):
                _, sequential = await _round(hub, cluster, n // 4, 1, 2 * k * n)  # latency: one client
                per_second, _ = await _round(hub, cluster, n, 32, (2 * k + 1) * n)  # throughput: 32 clients
                lat[who] += sequential
                rate[who].append(per_second)
    finally:
        server.terminate()
        server.join(10)
    none, one = percentiles(lat["none"]), percentiles(lat["one"])
    med = statistics.median
    return {"n_per_round": n, "rounds": rounds, "latency_none_ms": none, "latency_one_ms": one,
            "latency_p50_ratio": one["p50"] / none["p50"], "latency_p99_ratio": one["p99"] / none["p99"],
            "rate_none": med(rate["none"]), "rate_one": med(rate["one"]), "rate_ratio": med(rate["one"]) / med(rate["none"])}


async def run(quick: bool = False) -> dict:
    hub = HubProcess("--no-cluster-controller", "--no-splitter")
    try:
        return await measure(hub, 200 if quick else 800, 2 if quick else 6)
    finally:
        hub.stop()


def render(r: dict) -> list[str]:
    none, one = r["latency_none_ms"], r["latency_one_ms"]
    return [
        "## Admission webhooks on the create path", "",
        f"ConfigMaps of ~300 bytes over HTTPS; per round {r['n_per_round'] // 4} creates from one client (latency) and"
        f" {r['n_per_round']} from 32 (throughput), {r['rounds']} rounds alternating a logical cluster with one validating"
        " webhook (a real HTTPS server with its own CA, allowing everything, in a process of its own) and one"
        " with none, on the same hub (ABBA order; medians).", "",
        "| measure | one validating webhook | no webhook | ratio |", "|---|---|---|---|",
        f"| create latency p50 (ms), one client | {one['p50']:.2f} | {none['p50']:.2f} | {r['latency_p50_ratio']:.2f} |",
        f"| create latency p99 (ms), one client | {one['p99']:.2f} | {none['p99']:.2f} | {r['latency_p99_ratio']:.2f} |",
        f"| creates per second, 32 clients | {r['rate_one']:.0f} | {r['rate_none']:.0f} | {r['rate_ratio']:.2f} |",
    ]


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(asyncio.run(run(quick="--quick" in sys.argv)), indent=2))
