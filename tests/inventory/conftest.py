"""Fixtures for the end-to-end inventory tests: a fresh logical cluster of the shared hub per test."""

from __future__ import annotations

import base64
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml

from ..harness import Hub, Kubectl, Result

#: A real (self-signed) certificate for certificate-authority-data, generated once per session.
_CA_PEM: bytes | None = None


def ca_data() -> str:
    """base64 of a PEM CA certificate (what certificate-authority-data holds)."""
    global _CA_PEM
    if _CA_PEM is None:
        from datetime import UTC, datetime, timedelta

        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "spoke-ca")])
        now = datetime.now(UTC)
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                .serial_number(x509.random_serial_number()).not_valid_before(now).not_valid_after(now + timedelta(days=1))
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(key, hashes.SHA256()))
        _CA_PEM = cert.public_bytes(serialization.Encoding.PEM)
    return base64.b64encode(_CA_PEM).decode()


class Inventory:
    """One logical cluster of the hub, with kubectl and the conformance kit pointed at it."""

    def __init__(self, hub: Hub, cluster: str, tmp_path: Path) -> None:
        self.hub = hub
        self.cluster = cluster
        self.tmp_path = tmp_path
        self.kubeconfig = hub.kubeconfig_for(cluster, tmp_path)
        self.kubectl = Kubectl(self.kubeconfig)

    def namespace(self, labels: dict[str, str] | None = None, name: str | None = None) -> str:
        name = name or "inv-" + uuid.uuid4().hex[:6]
        doc = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels or {}}}
        self.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(doc))
        return name

    def kubectl_in(self, namespace: str) -> Kubectl:
        k = Kubectl(self.kubeconfig, namespace=namespace)
        k.cache_dir = self.kubectl.cache_dir
        return k

    def check(self, *args: str, kubeconfig: Path | None = None) -> Result:
        """``fleetplane inventory check --kubeconfig <this cluster> ...`` as a subprocess."""
        cmd = [sys.executable, "-m", "fleetplane.cli.main", "inventory", "check",
               "--kubeconfig", str(kubeconfig or self.kubeconfig), *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        return Result(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def inventory(hub: Hub, tmp_path: Path) -> Inventory:
    return Inventory(hub, "inv-" + uuid.uuid4().hex[:8], tmp_path)
