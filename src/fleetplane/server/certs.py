"""The hub's PKI and credentials: a CA, a serving certificate, an admin token, and the
admin kubeconfig, all generated into the data directory on first start."""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass
class Credentials:
    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    token: str


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def _new_ca(common_name: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False, key_agreement=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    return cert, key


def _serving(ca: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey, hosts: list[str]) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = []
    for h in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            sans.append(x509.DNSName(h))
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fleetplane")]))
            .issuer_name(ca.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=365))
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return cert, key


def ensure_credentials(data_dir: Path, hosts: list[str]) -> Credentials:
    """Create what is missing; keep what exists, so restarts keep kubeconfigs valid."""
    pki = data_dir / "pki"
    pki.mkdir(parents=True, exist_ok=True)
    creds = Credentials(pki / "ca.crt", pki / "ca.key", pki / "serving.crt", pki / "serving.key", "")
    if not creds.ca_cert.exists():
        ca, ca_key = _new_ca("fleetplane-ca")
        _write_private(creds.ca_key, _key_pem(ca_key))
        creds.ca_cert.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
        for p in (creds.serving_cert, creds.serving_key):
            p.unlink(missing_ok=True)
    ca = x509.load_pem_x509_certificate(creds.ca_cert.read_bytes())
    ca_key = serialization.load_pem_private_key(creds.ca_key.read_bytes(), None)
    wanted = sorted(set(hosts) | {"localhost", "127.0.0.1"})
    if creds.serving_cert.exists():
        cert = x509.load_pem_x509_certificate(creds.serving_cert.read_bytes())
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        have = {str(v) for v in san.get_values_for_type(x509.IPAddress)} | set(san.get_values_for_type(x509.DNSName))
        if not set(wanted) <= have:
            creds.serving_cert.unlink()
    if not creds.serving_cert.exists():
        cert, key = _serving(ca, ca_key, wanted)  # type: ignore[arg-type]
        _write_private(creds.serving_key, _key_pem(key))
        creds.serving_cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    token_file = data_dir / "admin.token"
    if not token_file.exists():
        _write_private(token_file, secrets.token_urlsafe(32).encode())
    creds.token = token_file.read_text().strip()
    return creds


def kubeconfig(server: str, ca_pem: bytes | None, token: str, clusters: list[str], current: str = "root",
               user: str = "admin") -> dict:
    """A kubeconfig with one context per logical cluster (``/clusters/<name>`` server URLs)."""
    import base64

    entries, contexts = [], []
    for c in clusters:
        url = f"{server}/clusters/{c}"
        cluster: dict = {"server": url}
        if ca_pem:
            cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
        entries.append({"name": c, "cluster": cluster})
        contexts.append({"name": c, "context": {"cluster": c, "user": user}})
    return {"apiVersion": "v1", "kind": "Config", "clusters": entries, "contexts": contexts,
            "current-context": current, "users": [{"name": user, "user": {"token": token}}], "preferences": {}}


def write_kubeconfig(path: Path, config: dict) -> None:
    _write_private(path, yaml.safe_dump(config, sort_keys=False).encode())
