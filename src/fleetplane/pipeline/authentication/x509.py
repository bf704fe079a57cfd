"""Client certificates signed by the hub's client CA: CN is the user, each O a group.

The TLS layer has already verified the chain against the client CA (``server.tls``), so a
certificate reaching here is one the CA signed and is within its validity; this module only
reads the identity out of it, as kube's ``CommonNameUserConversion``.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache

from cryptography import x509
from cryptography.x509.oid import NameOID

from ..user import CREDENTIAL_ID, UserInfo


@lru_cache(maxsize=4096)
def user_from_certificate(der: bytes) -> UserInfo | None:
    """The identity a verified leaf certificate names, or None if it names none (empty CN)."""
    cert = x509.load_der_x509_certificate(der)
    cns = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    name = str(cns[0].value) if cns else ""
    if not name:
        return None
    groups = tuple(str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME))
    extra: dict[str, tuple[str, ...]] = {CREDENTIAL_ID: (f"X509SHA256={hashlib.sha256(der).hexdigest()}",)}
    return UserInfo(name, "", groups, extra)
