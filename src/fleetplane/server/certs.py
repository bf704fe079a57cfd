"""The hub's PKI and credentials: a serving CA and certificate, a client CA (whose
certificates are identities: CN the user, O the groups), an admin token, and the admin
kubeconfig, all generated into the data directory on first start, private to the owner."""

from __future__ import annotations

import base64
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
    client_ca_cert: Path | None = None
    client_ca_key: Path | None = None


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


def private_dir(path: Path) -> Path:
    """A directory only its owner can enter (0700 whatever the umask), created if missing."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


def _ensure_ca(cert_path: Path, key_path: Path, common_name: str) -> bool:
    """Create a CA at the paths if there is none; True if it was created."""
    if cert_path.exists():
        return False
    ca, ca_key = _new_ca(common_name)
    _write_private(key_path, _key_pem(ca_key))
    cert_path.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    return True


def issue_client_certificate(ca_cert: Path, ca_key: Path, user: str, groups: list[str],
                             validity: dt.timedelta) -> tuple[bytes, bytes]:
    """(certificate PEM, key PEM) naming ``user`` (CN) in ``groups`` (O), as kube reads them."""
    ca = x509.load_pem_x509_certificate(ca_cert.read_bytes())
    signer = serialization.load_pem_private_key(ca_key.read_bytes(), None)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([*(x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups),
                      x509.NameAttribute(NameOID.COMMON_NAME, user)])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(ca.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + validity)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=False, crl_sign=False, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False, key_agreement=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .sign(signer, hashes.SHA256()))  # type: ignore[arg-type]
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def ensure_credentials(data_dir: Path, hosts: list[str]) -> Credentials:
    """Create what is missing; keep what exists, so restarts keep kubeconfigs valid."""
    private_dir(data_dir)
    pki = private_dir(data_dir / "pki")
    creds = Credentials(pki / "ca.crt", pki / "ca.key", pki / "serving.crt", pki / "serving.key", "",
                        pki / "client-ca.crt", pki / "client-ca.key")
    _ensure_ca(creds.client_ca_cert, creds.client_ca_key, "fleetplane-client-ca")  # type: ignore[arg-type]
    if _ensure_ca(creds.ca_cert, creds.ca_key, "fleetplane-ca"):
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


def kubeconfig(server: str, ca_pem: bytes | None, token: str | None, clusters: list[str], current: str = "root",
               user: str = "admin", client_cert: tuple[bytes, bytes] | None = None) -> dict:
    """A kubeconfig with one context per logical cluster (``/clusters/<name>`` server URLs),
    authenticating with ``token`` or with ``client_cert`` (certificate PEM, key PEM)."""
    entries, contexts = [], []
    for c in clusters:
        url = f"{server}/clusters/{c}"
        cluster: dict = {"server": url}
        if ca_pem:
            cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
        entries.append({"name": c, "cluster": cluster})
        contexts.append({"name": c, "context": {"cluster": c, "user": user}})
    credentials: dict = {"token": token} if token else {}
    if client_cert is not None:
        credentials = {"client-certificate-data": base64.b64encode(client_cert[0]).decode(),
                       "client-key-data": base64.b64encode(client_cert[1]).decode()}
    return {"apiVersion": "v1", "kind": "Config", "clusters": entries, "contexts": contexts,
            "current-context": current, "users": [{"name": user, "user": credentials}], "preferences": {}}


def write_kubeconfig(path: Path, config: dict) -> None:
    _write_private(path, yaml.safe_dump(config, sort_keys=False).encode())


def hub_url(data_dir: Path) -> str:
    """The hub's URL, without a logical cluster, as its admin.kubeconfig names it."""
    admin = yaml.safe_load((data_dir / "admin.kubeconfig").read_text())
    return admin["clusters"][0]["cluster"]["server"].split("/clusters/", 1)[0]


def client_kubeconfig(data_dir: Path, user: str, groups: list[str], validity: dt.timedelta, clusters: list[str],
                      server: str | None = None) -> dict:
    """A kubeconfig naming ``user`` in ``groups`` by a client certificate the hub's client CA
    signs, valid for ``validity``, with one context per logical cluster (the first is current);
    ``server`` defaults to the hub's own URL (:func:`hub_url`)."""
    pki = data_dir / "pki"
    cert = issue_client_certificate(pki / "client-ca.crt", pki / "client-ca.key", user, groups, validity)
    server = server or hub_url(data_dir)
    serving_ca = (pki / "ca.crt").read_bytes() if server.startswith("https:") else None
    return kubeconfig(server, serving_ca, None, clusters, current=clusters[0], user=user, client_cert=cert)
