"""State shared by the client integrations."""

from __future__ import annotations

from .._tls import env_proxy_for
from ..execplugin import Credential, ExecAuthenticator
from ..profile import AccessConfig


class ClientAuth:
    """One client's view of the shared authenticator (deep-copies as itself)."""

    def __init__(
        self,
        access: AccessConfig,
        authenticator: ExecAuthenticator | None = None,
        *,
        retry_unauthorized: bool = True,
    ) -> None:
        self.access = access
        self.cluster = access.cluster
        self.authenticator = authenticator if authenticator is not None else access.authenticator()
        self.retry_unauthorized = retry_unauthorized
        self.proxy = access.cluster.proxy_url or env_proxy_for(access.cluster.server)

    def __deepcopy__(self, memo):
        return self

    def bearer(self, cred: Credential) -> str | None:
        return f"Bearer {cred.token}" if cred.token else None
