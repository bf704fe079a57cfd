"""fleetplane.access: turn a ClusterProfile into a working Kubernetes client configuration.

A standalone library (no fleetplane server code; stdlib + orjson/pyyaml/cryptography/prometheus-client,
client libraries imported lazily) implementing the KEP-4322 access-provider mechanism:

>>> from fleetplane.access import load_provider_file, build_access_config
>>> providers = load_provider_file("clusterprofile-provider-file.json")
>>> access = build_access_config(cluster_profile_dict, providers)   # hashable AccessConfig
>>> from fleetplane.access.clients.kubernetes_client import new_kubernetes_api_client
>>> api = new_kubernetes_api_client(access)

or, in the upstream Go library's shape (``access.NewFromFile`` + ``BuildConfigFromCP``):

>>> from fleetplane.access import Config
>>> conf = Config.from_file("clusterprofile-provider-file.json").build_config_from_cluster_profile(cp)

Names are imported lazily so that the shipped plugins (``fleetplane.access.plugins``) start fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    # errors
    "AccessError": "errors",
    "ProviderFileError": "errors",
    "ProfileError": "errors",
    "NoMatchingProviderError": "errors",
    "ExecPluginError": "errors",
    "ExecNotFoundError": "errors",
    "ExecNotExecutableError": "errors",
    "ExecUntrustedError": "errors",
    "ExecFailedError": "errors",
    "ExecTimeoutError": "errors",
    "ExecOutputError": "errors",
    "ExecInteractiveError": "errors",
    "SecretAccessError": "errors",
    # the configuration types
    "CLIArgsPolicy": "config",
    "EnvVarsPolicy": "config",
    "InteractiveMode": "config",
    "ExecConfig": "config",
    "Provider": "config",
    "ClusterInfo": "config",
    "DEFAULT_EXEC_TIMEOUT": "config",
    "EXEC_API_VERSIONS": "config",
    # provider file
    "ProviderConfig": "provider",
    "load_provider_file": "provider",
    "add_provider_file_flag": "provider",
    "DEFAULT_PROVIDER_FILE": "provider",
    # the upstream Go library's shape (access.New / NewFromFile / BuildConfigFromCP)
    "Config": "kep",
    # profiles
    "AccessConfig": "profile",
    "build_access_config": "profile",
    "select_access_provider": "profile",
    "EXEC_EXTENSION": "profile",
    "ADDITIONAL_ARGS_EXTENSION": "profile",
    "ADDITIONAL_ENVS_EXTENSION": "profile",
    # exec
    "Credential": "execplugin",
    "ExecAuthenticator": "execplugin",
    "get_authenticator": "execplugin",
    "clear_authenticators": "execplugin",
    "get_credential": "execplugin",
    "get_credential_sync": "execplugin",
    "run_exec_plugin": "execplugin",
    "run_exec_plugin_sync": "execplugin",
    "exec_credential_request": "execplugin",
    "parse_exec_output": "execplugin",
    # secret-based access
    "find_secret_kubeconfig": "secrets",
    "find_secret_kubeconfig_sync": "secrets",
    "SecretKubeconfig": "secrets",
    "HubReader": "secrets",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'fleetplane.access' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{mod}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:  # pragma: no cover
    from .config import (  # noqa: F401
        DEFAULT_EXEC_TIMEOUT,
        EXEC_API_VERSIONS,
        CLIArgsPolicy,
        ClusterInfo,
        EnvVarsPolicy,
        ExecConfig,
        InteractiveMode,
        Provider,
    )
    from .errors import (  # noqa: F401
        AccessError,
        ExecFailedError,
        ExecInteractiveError,
        ExecNotExecutableError,
        ExecNotFoundError,
        ExecOutputError,
        ExecPluginError,
        ExecTimeoutError,
        ExecUntrustedError,
        NoMatchingProviderError,
        ProfileError,
        ProviderFileError,
        SecretAccessError,
    )
    from .execplugin import (  # noqa: F401
        Credential,
        ExecAuthenticator,
        clear_authenticators,
        exec_credential_request,
        get_authenticator,
        get_credential,
        get_credential_sync,
        parse_exec_output,
        run_exec_plugin,
        run_exec_plugin_sync,
    )
    from .kep import Config  # noqa: F401
    from .profile import (  # noqa: F401
        ADDITIONAL_ARGS_EXTENSION,
        ADDITIONAL_ENVS_EXTENSION,
        EXEC_EXTENSION,
        AccessConfig,
        build_access_config,
        select_access_provider,
    )
    from .provider import (  # noqa: F401
        DEFAULT_PROVIDER_FILE,
        ProviderConfig,
        add_provider_file_flag,
        load_provider_file,
    )
    from .secrets import (  # noqa: F401
        HubReader,
        SecretKubeconfig,
        find_secret_kubeconfig,
        find_secret_kubeconfig_sync,
    )
