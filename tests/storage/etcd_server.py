"""Real etcd processes for tests: one member or a cluster, on loopback, in a temporary
directory (``etcd`` from the Debian package ``etcd-server``, 3.4 or later)."""

from __future__ import annotations

import datetime as dt
import ipaddress
import itertools
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

ETCD = shutil.which("etcd") or "/usr/bin/etcd"


def have_etcd() -> bool:
    return os.path.exists(ETCD)


def require_etcd() -> None:
    if not have_etcd():
        if os.environ.get("CI"):
            pytest.fail("etcd is not installed (apt-get install etcd-server; `make test` does it)")
        pytest.skip("etcd is not installed (apt-get install etcd-server)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
_next_stable = itertools.count(20000 + 1000 * (_WORKER % 12))


def _stable_port() -> int:
    """A free port below the kernel's ephemeral range, from this xdist worker's own block.
    A member keeps its ports across restarts; a port from bind(0) could be handed to another
    worker's server while the member is down, and a restart would then talk to that server."""
    for port in _next_stable:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError("no free port")


def _state(pid: int) -> str:
    """A process's state letter from /proc (``T``: stopped by a signal)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


@dataclass
class TLSFiles:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def make_tls(directory: Path) -> TLSFiles:
    """A CA, a serving certificate for 127.0.0.1/localhost and a client certificate."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    directory.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC)

    def pem_key(k) -> bytes:
        return k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "etcd-test-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
          .not_valid_after(now + dt.timedelta(days=2)).add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))

    def leaf(cn: str, usage, sans: list) -> tuple[bytes, bytes]:
        key = ec.generate_private_key(ec.SECP256R1())
        b = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)]))
             .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=2))
             .add_extension(x509.ExtendedKeyUsage(usage), critical=False))
        if sans:
            b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = b.sign(ca_key, hashes.SHA256())
        return cert.public_bytes(serialization.Encoding.PEM), pem_key(key)

    files = TLSFiles(directory / "ca.crt", directory / "server.crt", directory / "server.key",
                     directory / "client.crt", directory / "client.key")
    files.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    crt, key = leaf("etcd", [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH],
                    [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")])
    files.server_cert.write_bytes(crt)
    files.server_key.write_bytes(key)
    crt, key = leaf("fleetplane", [ExtendedKeyUsageOID.CLIENT_AUTH], [])
    files.client_cert.write_bytes(crt)
    files.client_key.write_bytes(key)
    return files


class Member:
    def __init__(self, name: str, directory: Path, tls: TLSFiles | None) -> None:
        self.name = name
        self.dir = directory
        self.client_port = _stable_port()
        self.peer_port = _stable_port()
        self.tls = tls
        self.proc: subprocess.Popen | None = None

    @property
    def client_url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.client_port}"

    @property
    def peer_url(self) -> str:
        return f"http://127.0.0.1:{self.peer_port}"

    def start(self, initial_cluster: str, state: str = "new") -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        cmd = [ETCD, "--name", self.name, "--data-dir", str(self.dir / "data"),
               "--listen-client-urls", self.client_url, "--advertise-client-urls", self.client_url,
               "--listen-peer-urls", self.peer_url, "--initial-advertise-peer-urls", self.peer_url,
               "--initial-cluster", initial_cluster, "--initial-cluster-state", state,
               "--initial-cluster-token", f"fleetplane-test-{os.getpid()}",
               "--heartbeat-interval", "50", "--election-timeout", "500", "--log-level", "warn",
               "--max-request-bytes", str(4 * 1024 * 1024)]
        if self.tls:
            cmd += ["--cert-file", str(self.tls.server_cert), "--key-file", str(self.tls.server_key),
                    "--trusted-ca-file", str(self.tls.ca), "--client-cert-auth"]
        log = open(self.dir / "etcd.log", "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def healthy(self) -> bool:
        if not self.alive():
            return False
        ctx = None
        if self.tls:
            ctx = ssl.create_default_context(cafile=str(self.tls.ca))
            ctx.load_cert_chain(str(self.tls.client_cert), str(self.tls.client_key))
        try:
            with urllib.request.urlopen(self.client_url + "/health", timeout=1, context=ctx) as r:
                if json.loads(r.read()).get("health") != "true":
                    return False
            return self._answers_as_itself(ctx)
        except (OSError, ValueError):
            return False

    def _answers_as_itself(self, ctx: ssl.SSLContext | None) -> bool:
        """Whether the etcd on our client port is this member (its peer URL is ours). Another
        xdist worker may pick our client port while this member is stopped; without this check a
        restart could take that foreign etcd's health for ours."""
        req = urllib.request.Request(self.client_url + "/v3/cluster/member/list", data=b"{}", method="POST")
        with urllib.request.urlopen(req, timeout=1, context=ctx) as r:
            body = json.loads(r.read())
        me = body.get("header", {}).get("member_id")
        return any(m.get("ID") == me and self.peer_url in m.get("peerURLs", []) for m in body.get("members", []))

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(sig)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def pause(self, timeout: float = 5.0) -> None:
        """SIGSTOP, and wait until the kernel has stopped the process: the signal is delivered
        asynchronously, and a request sent just after it could still be answered."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)
        deadline = time.monotonic() + timeout
        while _state(self.proc.pid) != "T":
            assert time.monotonic() < deadline, "etcd did not stop"
            time.sleep(0.01)

    def resume(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)


class EtcdCluster:
    """``members`` etcd processes forming one cluster on 127.0.0.1."""

    def __init__(self, directory: Path, members: int = 1, tls: bool = False) -> None:
        self.dir = directory
        self.tls = make_tls(directory / "tls") if tls else None
        self.members = [Member(f"m{i}", directory / f"m{i}", self.tls) for i in range(members)]

    @property
    def initial_cluster(self) -> str:
        return ",".join(f"{m.name}={m.peer_url}" for m in self.members)

    @property
    def endpoints(self) -> str:
        return ",".join(m.client_url for m in self.members)

    def start(self, timeout: float = 20.0) -> EtcdCluster:
        for m in self.members:
            m.start(self.initial_cluster)
        self.wait_healthy(timeout)
        return self

    def wait_healthy(self, timeout: float = 20.0, members: list[Member] | None = None) -> None:
        deadline = time.monotonic() + timeout
        for m in members or self.members:
            while not m.healthy():
                if not m.alive():
                    raise AssertionError(f"etcd {m.name} exited: {(m.dir / 'etcd.log').read_text()[-2000:]}")
                if time.monotonic() > deadline:
                    raise AssertionError(f"etcd {m.name} not healthy: {(m.dir / 'etcd.log').read_text()[-2000:]}")
                time.sleep(0.05)

    def restart(self, member: Member, timeout: float = 20.0) -> None:
        member.stop()
        member.start(self.initial_cluster, state="existing")
        self.wait_healthy(timeout, [member])

    def leader(self) -> Member:
        """The member that currently leads (from each member's /v3 maintenance status)."""
        for m in self.members:
            if not m.alive():
                continue
            try:
                req = urllib.request.Request(m.client_url + "/v3/maintenance/status", data=b"{}", method="POST")
                with urllib.request.urlopen(req, timeout=1) as r:
                    st = json.loads(r.read())
                if st.get("leader") == st.get("header", {}).get("member_id"):
                    return m
            except OSError:
                continue
        raise AssertionError("no etcd leader")

    def stop(self) -> None:
        for m in self.members:
            if m.proc is not None and m.proc.poll() is None:
                m.resume()
            m.stop()
