"""The upstream Go library's shape: ``access.New(providers)`` / ``access.NewFromFile(path)``, then
``(*Config).BuildConfigFromCP(cp)``, as :class:`Config`.

One implementation underneath: :func:`~.profile.build_access_config` chooses the provider and
resolves the exec configuration, and the client modules (``clients/``) turn the resulting
:class:`~.profile.AccessConfig` into a client. :class:`Config` is only a new front for both, so a
program ported from Go reads the same::

    cfg = access.Config.from_file(args.clusterprofile_provider_file)   # access.NewFromFile
    conf = cfg.build_config_from_cluster_profile(cp)                   # BuildConfigFromCP -> rest.Config
    api = kubernetes.client.ApiClient(conf)
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from .config import DEFAULT_EXEC_TIMEOUT, Provider
from .profile import AccessConfig, build_access_config
from .provider import ProviderConfig

__all__ = ["Config"]


class Config:
    """The consumer's access providers (upstream ``access.Config``), in file order.

    ``providers`` is a loaded :class:`ProviderConfig`, :class:`Provider` objects, or the provider
    file's JSON form (``{"providers": [...]}`` or its list), validated as a file is. ``None`` or
    an empty list is a Config that matches no profile (as ``access.New(nil)``)."""

    __slots__ = ("provider_config",)

    def __init__(self, providers: ProviderConfig | Iterable[Provider | Mapping[str, Any]] | Mapping[str, Any] | None = None,
                 *, exec_timeout: float = DEFAULT_EXEC_TIMEOUT, strict: bool = False) -> None:
        self.provider_config = _provider_config(providers, exec_timeout, strict)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], *, exec_timeout: float = DEFAULT_EXEC_TIMEOUT,
                  strict: bool = False) -> Config:
        """Read and validate a provider file (upstream ``NewFromFile``; errors start with
        ``failed to read access config file`` or ``failed to unmarshal access providers``)."""
        cfg = cls.__new__(cls)
        cfg.provider_config = ProviderConfig.from_file(path, exec_timeout=exec_timeout, strict=strict)
        return cfg

    @property
    def providers(self) -> tuple[Provider, ...]:
        return self.provider_config.providers

    @property
    def names(self) -> tuple[str, ...]:
        return self.provider_config.names

    def __repr__(self) -> str:
        return f"Config(providers={list(self.names)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and other.provider_config == self.provider_config

    def __hash__(self) -> int:
        return hash(self.provider_config)

    # -- BuildConfigFromCP and its counterparts for each client ----------------------------------

    def build_access_config(self, cp: Any) -> AccessConfig:
        """The hashable value every client below is built from (compare it to skip rebuilding)."""
        return build_access_config(cp, self.provider_config)

    def build_config_from_cluster_profile(self, cp: Any, **kwargs: Any) -> Any:
        """A ready ``kubernetes.client.Configuration`` (upstream ``BuildConfigFromCP``): runs the
        plugin now, refreshes the token through ``refresh_api_key_hook`` when it expires."""
        from .clients.kubernetes_client import kubernetes_configuration

        return kubernetes_configuration(self.build_access_config(cp), **kwargs)

    def build_api_client_from_cluster_profile(self, cp: Any, **kwargs: Any) -> Any:
        """A ``kubernetes.client.ApiClient`` that also refreshes on a 401 and rotates client certificates."""
        from .clients.kubernetes_client import new_kubernetes_api_client

        return new_kubernetes_api_client(self.build_access_config(cp), **kwargs)

    async def build_asyncio_client_from_cluster_profile(self, cp: Any, **kwargs: Any) -> Any:
        """A ``kubernetes_asyncio.client.ApiClient`` (its TLS context is the library's, in memory,
        so a client rather than a bare Configuration); close it with ``await client.close()``."""
        from .clients.kubernetes_asyncio_client import new_kubernetes_asyncio_client

        return await new_kubernetes_asyncio_client(self.build_access_config(cp), **kwargs)

    def build_lightkube_client_from_cluster_profile(self, cp: Any, **kwargs: Any) -> Any:
        """A ``lightkube.Client`` (keyword arguments as :func:`~.clients.lightkube_client.lightkube_client`)."""
        from .clients.lightkube_client import lightkube_client

        return lightkube_client(self.build_access_config(cp), **kwargs)

    def build_lightkube_async_client_from_cluster_profile(self, cp: Any, **kwargs: Any) -> Any:
        """A ``lightkube.AsyncClient``; close it with ``await client.close()``."""
        from .clients.lightkube_client import lightkube_async_client

        return lightkube_async_client(self.build_access_config(cp), **kwargs)

    async def build_kr8s_api_from_cluster_profile(self, cp: Any, **kwargs: Any) -> Any:
        """An authenticated ``kr8s.asyncio.Api``; close it with ``await api.aclose()``."""
        from .clients.kr8s_client import kr8s_api

        return await kr8s_api(self.build_access_config(cp), **kwargs)


def _provider_config(providers: Any, exec_timeout: float, strict: bool) -> ProviderConfig:
    if providers is None:
        return ProviderConfig()
    if isinstance(providers, ProviderConfig):
        return providers
    if isinstance(providers, Mapping):
        return ProviderConfig.from_dict(providers, exec_timeout=exec_timeout, strict=strict)
    # Provider objects go through the file's parser too: one validation (duplicate names, ...)
    dicts = [p.to_dict() if isinstance(p, Provider) else p for p in providers]
    return ProviderConfig.from_dict({"providers": dicts}, exec_timeout=exec_timeout, strict=strict)
