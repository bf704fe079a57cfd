"""The immutable configuration the library passes around: a provider's exec credential plugin
(``ExecConfig``, ``Provider``) and the cluster it reaches (``ClusterInfo``).

Below every other module of the package, so the provider file (``provider.py``), the profile
(``profile.py``) and the plugin runner (``execplugin.py``) share these types without importing
one another.
"""

from __future__ import annotations

import base64
import enum
from dataclasses import dataclass, field
from typing import Any

import orjson

#: Exec credential API versions accepted by client-go (v1alpha1 is no longer supported).
EXEC_API_VERSION_V1 = "client.authentication.k8s.io/v1"
EXEC_API_VERSION_V1BETA1 = "client.authentication.k8s.io/v1beta1"
EXEC_API_VERSIONS = (EXEC_API_VERSION_V1, EXEC_API_VERSION_V1BETA1)

#: Default plugin timeout in seconds. client-go has none; the kubelet's image credential provider
#: plugins get one minute, which is long enough for cold cloud SDK token exchanges (network round
#: trips, retries) and short enough that a hung plugin surfaces within a reconcile.
DEFAULT_EXEC_TIMEOUT = 60.0


class CLIArgsPolicy(enum.StrEnum):
    """``profileSourcedCLIArgsPolicy``: what to do with the ``.../exec/additional-args`` extension."""

    APPEND = "Append"  # append the profile's arguments to execConfig.args, no de-duplication
    IGNORE = "Ignore"  # the default: the extension is not even parsed


class EnvVarsPolicy(enum.StrEnum):
    """``profileSourcedEnvVarsPolicy``: what to do with the ``.../exec/additional-envs`` extension."""

    APPEND_IF_NOT_EXISTS = "AppendIfNotExists"  # add the profile's variables; the file's values win
    REPLACE = "Replace"  # add the profile's variables; the profile's values win
    IGNORE = "Ignore"  # the default: the extension is not even parsed


class InteractiveMode(enum.StrEnum):
    """``execConfig.interactiveMode`` (client-go semantics; fleetplane never has a terminal)."""

    NEVER = "Never"
    IF_AVAILABLE = "IfAvailable"
    ALWAYS = "Always"


@dataclass(frozen=True, slots=True)
class ExecConfig:
    """An exec credential plugin configuration (the KEP-541 part of a kubeconfig ``user.exec``)."""

    api_version: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    provide_cluster_info: bool = False
    interactive_mode: InteractiveMode = InteractiveMode.NEVER
    install_hint: str | None = None
    #: Refuse a plugin file (or a directory above it) that others than its owner or root may write.
    #: Set from the provider's ``insecureSkipPluginPermissionCheck`` (a fleetplane extension).
    verify_permissions: bool = True
    #: Where the ClusterProfile's appended arguments start in ``args`` (``None``: none appended);
    #: the plugin is told how many came from the profile (``FLEETPLANE_EXEC_PROFILE_ARGC``).
    profile_args_start: int | None = None

    @property
    def operator_args(self) -> tuple[str, ...]:
        """The provider file's arguments (without any the ClusterProfile appended)."""
        return self.args if self.profile_args_start is None else self.args[: self.profile_args_start]

    def to_dict(self) -> dict[str, Any]:
        """The JSON (camelCase) form, as it appears in a provider file or a kubeconfig."""
        out: dict[str, Any] = {"apiVersion": self.api_version, "command": self.command}
        out["args"] = list(self.args)
        out["env"] = [{"name": n, "value": v} for n, v in self.env]
        out["provideClusterInfo"] = self.provide_cluster_info
        out["interactiveMode"] = self.interactive_mode.value
        if self.install_hint:
            out["installHint"] = self.install_hint
        return out


@dataclass(frozen=True, slots=True)
class Provider:
    """One entry of the provider file."""

    name: str
    exec_config: ExecConfig
    cli_args_policy: CLIArgsPolicy = CLIArgsPolicy.IGNORE
    env_vars_policy: EnvVarsPolicy = EnvVarsPolicy.IGNORE
    #: fleetplane extension (``execTimeoutSeconds``; upstream Go ignores unknown keys).
    exec_timeout: float = DEFAULT_EXEC_TIMEOUT

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "execConfig": self.exec_config.to_dict(),
            "profileSourcedCLIArgsPolicy": self.cli_args_policy.value,
            "profileSourcedEnvVarsPolicy": self.env_vars_policy.value,
        }
        if self.exec_timeout != DEFAULT_EXEC_TIMEOUT:
            out["execTimeoutSeconds"] = self.exec_timeout
        if not self.exec_config.verify_permissions:
            out["insecureSkipPluginPermissionCheck"] = True
        return out


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    """Where and how to reach the cluster (the accessProvider's ``cluster``, minus extensions)."""

    server: str
    certificate_authority_data: bytes | None = field(default=None, repr=False)  # PEM bytes
    tls_server_name: str | None = None
    insecure_skip_tls_verify: bool = False
    proxy_url: str | None = None
    disable_compression: bool = False
    #: The ``client.authentication.k8s.io/exec`` extension, as canonical (key-sorted) JSON.
    exec_extension_json: bytes | None = field(default=None, repr=False)

    @property
    def exec_extension(self) -> Any:
        """The ``client.authentication.k8s.io/exec`` extension object, or ``None``."""
        return None if self.exec_extension_json is None else orjson.loads(self.exec_extension_json)

    @property
    def certificate_authority_pem(self) -> str | None:
        return (
            None
            if self.certificate_authority_data is None
            else self.certificate_authority_data.decode("ascii", "replace")
        )

    def to_exec_cluster(self) -> dict[str, Any]:
        """``ExecCredential.spec.cluster`` in client-go's field order and omitempty behaviour."""
        out: dict[str, Any] = {"server": self.server}
        if self.tls_server_name:
            out["tls-server-name"] = self.tls_server_name
        if self.insecure_skip_tls_verify:
            out["insecure-skip-tls-verify"] = True
        if self.certificate_authority_data:
            out["certificate-authority-data"] = base64.b64encode(self.certificate_authority_data).decode(
                "ascii"
            )
        if self.proxy_url:
            out["proxy-url"] = self.proxy_url
        if self.disable_compression:
            out["disable-compression"] = True
        # runtime.RawExtension marshals as null when empty; client-go always emits the key.
        out["config"] = self.exec_extension
        return out
