"""The authenticators unioned, as kube-apiserver's authenticator config builds them.

A client certificate (verified by TLS against the client CA) wins first; then a bearer token
is offered to each token authenticator in turn (the admin token, the token file, ServiceAccount
JWTs, OIDC issuers). A token that nobody accepts, or one an authenticator recognises as its
own but finds invalid, is a 401 even when anonymous requests are allowed (kube's
``NewFailOnError``): only a request with no credentials at all is ``system:anonymous``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ...apimachinery.errors import StatusError
from ..user import ANONYMOUS_USER, UserInfo
from .errors import AuthenticationError
from .x509 import user_from_certificate

log = logging.getLogger("fleetplane.authentication")


class TokenAuthenticator(Protocol):
    """One way of reading a bearer token. None: not mine (let the next one try)."""

    async def authenticate_token(self, token: str, cluster: str) -> UserInfo | None: ...


class StaticTokens:
    """Fixed tokens (the hub's admin token, a ``--token-auth-file``)."""

    def __init__(self, users: dict[str, UserInfo]) -> None:
        # with system:authenticated already: each request then reuses one UserInfo, not a new one
        self.users = {token: user.with_authenticated_group() for token, user in users.items()}

    async def authenticate_token(self, token: str, cluster: str) -> UserInfo | None:
        return self.users.get(token)


@dataclass
class AnonymousPolicy:
    """kube's ``--anonymous-auth`` (on by default), optionally limited to some paths
    (AuthenticationConfiguration ``anonymous.conditions``)."""

    enabled: bool = True
    paths: tuple[str, ...] = ()

    def allows(self, path: str) -> bool:
        return self.enabled and (not self.paths or path in self.paths)


def unauthorized() -> StatusError:
    return StatusError(401, "Unauthorized", "Unauthorized", None)


def bearer_token(authorization: str) -> str | None:
    """The token of ``Authorization: Bearer <token>`` as kube parses it; None if absent."""
    parts = authorization.strip().split(" ")
    if len(parts) < 2 or parts[0].lower() != "bearer":
        return None
    return parts[1] or None


@dataclass
class Authenticator:
    tokens: Sequence[TokenAuthenticator] = ()
    anonymous: AnonymousPolicy = field(default_factory=AnonymousPolicy)
    #: client certificates are read only when the server verifies them against a client CA
    client_certificates: bool = True

    async def authenticate(self, authorization: str, cert_der: bytes | None, cluster: str, path: str) -> UserInfo:
        """The requester, with ``system:authenticated`` added; raises a 401 StatusError."""
        if cert_der is not None and self.client_certificates:
            user = user_from_certificate(cert_der)
            if user is not None:
                return user.with_authenticated_group()
        if authorization:
            token = bearer_token(authorization)
            if token is None:
                raise unauthorized()
            for authn in self.tokens:
                try:
                    user = await authn.authenticate_token(token, cluster)
                except AuthenticationError as exc:
                    log.info("authentication failed: %s", exc)
                    raise unauthorized() from None
                if user is not None:
                    return user.with_authenticated_group()
            raise unauthorized()
        if self.anonymous.allows(path):
            return ANONYMOUS_USER
        raise unauthorized()
