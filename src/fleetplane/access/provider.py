"""The provider file given by ``--clusterprofile-provider-file`` (KEP-4322, upstream ``pkg/access``).

Format (a *list* of providers, exactly as the upstream Go library reads it)::

    {"providers": [
        {"name": "secretreader",
         "execConfig": {"apiVersion": "client.authentication.k8s.io/v1",
                        "command": "/plugins/secretreader", "args": ["--x"],
                        "env": [{"name": "A", "value": "1"}],
                        "provideClusterInfo": true, "interactiveMode": "Never",
                        "installHint": "install it from ..."},
         "profileSourcedCLIArgsPolicy": "Append",
         "profileSourcedEnvVarsPolicy": "AppendIfNotExists"}]}

Unlike upstream, the file is validated completely when it is loaded: unknown policy values, an
unsupported exec ``apiVersion``, a missing ``command``, a missing ``execConfig`` and duplicate
provider names are errors that name the provider. Everything loaded is immutable (frozen dataclasses
and tuples), so building a configuration for one ClusterProfile can never leak into another.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from .config import (  # noqa: F401 - defined once in config.py, also offered here
    DEFAULT_EXEC_TIMEOUT,
    EXEC_API_VERSION_V1,
    EXEC_API_VERSION_V1BETA1,
    EXEC_API_VERSIONS,
    CLIArgsPolicy,
    EnvVarsPolicy,
    ExecConfig,
    InteractiveMode,
    Provider,
)
from .errors import ProviderFileError
from .profile import AccessConfig, build_access_config

log = logging.getLogger(__name__)

#: Flag name and default value, as upstream ``SetupProviderFileFlag``.
PROVIDER_FILE_FLAG = "--clusterprofile-provider-file"
#: The name KEP-4322 gives the flag since enhancements PR #5811; accepted as an alias.
PROVIDER_FILE_FLAG_KEP = "--clusterprofile-access-provider"
DEFAULT_PROVIDER_FILE = "clusterprofile-provider-file.json"


@dataclass(frozen=True, slots=True)
class ProviderConfig:
    """The loaded provider file: providers in file order (the order decides which one is used)."""

    providers: tuple[Provider, ...] = ()
    path: str | None = field(default=None, compare=False)
    #: Non-fatal findings (unknown keys, case-insensitive key matches, duplicate env names).
    warnings: tuple[str, ...] = field(default=(), compare=False)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.providers)

    def get(self, name: str) -> Provider | None:
        for p in self.providers:
            if p.name == name:
                return p
        return None

    def build_access_config(self, profile: Mapping[str, Any]) -> AccessConfig:
        """Build the :class:`~fleetplane.access.profile.AccessConfig` for a ClusterProfile (a dict)."""
        return build_access_config(profile, self)

    @classmethod
    def from_dict(
        cls,
        data: Any,
        *,
        path: str | None = None,
        exec_timeout: float = DEFAULT_EXEC_TIMEOUT,
        strict: bool = False,
    ) -> ProviderConfig:
        return _parse(data, path=path, exec_timeout=exec_timeout, strict=strict)

    @classmethod
    def from_json(
        cls,
        text: str | bytes,
        *,
        path: str | None = None,
        exec_timeout: float = DEFAULT_EXEC_TIMEOUT,
        strict: bool = False,
    ) -> ProviderConfig:
        try:
            data = orjson.loads(text)
        except orjson.JSONDecodeError as e:
            where = f" {path!r}" if path else ""
            raise ProviderFileError(f"failed to unmarshal access providers{where}: {e}", path=path) from None
        return _parse(data, path=path, exec_timeout=exec_timeout, strict=strict)

    @classmethod
    def from_file(
        cls, path: str | os.PathLike[str], *, exec_timeout: float = DEFAULT_EXEC_TIMEOUT, strict: bool = False
    ) -> ProviderConfig:
        p = os.fspath(path)
        try:
            with open(p, "rb") as f:
                raw = f.read()
        except OSError as e:
            raise ProviderFileError(
                f"failed to read access config file {p!r}: {e.strerror or e}", path=p
            ) from None
        return cls.from_json(raw, path=p, exec_timeout=exec_timeout, strict=strict)


def load_provider_file(
    path: str | os.PathLike[str], *, exec_timeout: float = DEFAULT_EXEC_TIMEOUT, strict: bool = False
) -> ProviderConfig:
    """Read and validate a provider file. ``strict=True`` turns unknown keys into errors."""
    return ProviderConfig.from_file(path, exec_timeout=exec_timeout, strict=strict)


def add_provider_file_flag(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    *,
    default: str | None = DEFAULT_PROVIDER_FILE,
    required: bool = False,
) -> argparse.Action:
    """Register ``--clusterprofile-provider-file`` (the Go library's name) and its alias
    ``--clusterprofile-access-provider`` (the KEP's), dest ``clusterprofile_provider_file``.

    The default matches upstream (``clusterprofile-provider-file.json``). Load it with
    :func:`load_provider_file` (or ``Config.from_file``) after parsing.
    """
    return parser.add_argument(
        PROVIDER_FILE_FLAG,
        PROVIDER_FILE_FLAG_KEP,
        dest="clusterprofile_provider_file",
        metavar="PATH",
        default=None if required else default,
        required=required,
        help="Path to the JSON configuration file mapping ClusterProfile access providers to exec "
        f"credential plugins (default: {default})",
    )


# ----------------------------------------------------------------------------------------------
# Parsing and validation


_PROVIDER_KEYS = (
    "name",
    "execConfig",
    "profileSourcedCLIArgsPolicy",
    "profileSourcedEnvVarsPolicy",
    "execTimeoutSeconds",
    "insecureSkipPluginPermissionCheck",
)
_EXEC_KEYS = ("command", "args", "env", "apiVersion", "installHint", "provideClusterInfo", "interactiveMode")
_ENV_KEYS = ("name", "value")


class _Ctx:
    def __init__(self, path: str | None, strict: bool) -> None:
        self.path = path
        self.strict = strict
        self.warnings: list[str] = []

    def error(self, msg: str, provider: str | None = None) -> ProviderFileError:
        where = f"provider file {self.path!r}: " if self.path else "provider file: "
        if provider is not None:
            where += f"provider {provider!r}: "
        return ProviderFileError(where + msg, path=self.path, provider=provider)

    def warn(self, msg: str, provider: str | None = None) -> None:
        where = f"provider {provider!r}: " if provider is not None else ""
        text = where + msg
        self.warnings.append(text)
        log.warning("clusterprofile provider file %s: %s", self.path or "<memory>", text)


def _keys(obj: Mapping[str, Any], known: Iterable[str], what: str, ctx: _Ctx, provider: str | None) -> dict:
    """Map the object's keys onto the known ones: exact match, else case-insensitive (Go json)."""
    known = tuple(known)
    lower = {k.lower(): k for k in known}
    out: dict[str, Any] = {}
    for k, v in obj.items():
        if not isinstance(k, str):
            raise ctx.error(f"{what}: non-string key {k!r}", provider)
        if k in known:
            canon = k
        elif k.lower() in lower:
            canon = lower[k.lower()]
            if ctx.strict:
                raise ctx.error(f"{what}: key {k!r} should be spelled {canon!r}", provider)
            ctx.warn(f"{what}: key {k!r} matched {canon!r} case-insensitively", provider)
        else:
            if ctx.strict:
                raise ctx.error(f"{what}: unknown key {k!r}", provider)
            ctx.warn(f"{what}: unknown key {k!r} ignored", provider)
            continue
        if canon in out:
            raise ctx.error(f"{what}: key {canon!r} given more than once", provider)
        out[canon] = v
    return out


def _opt_str(v: Any, what: str, ctx: _Ctx, provider: str | None) -> str | None:
    if v is None:
        return None
    if not isinstance(v, str):
        raise ctx.error(f"{what} must be a string, got {type(v).__name__}", provider)
    return v


def _parse(data: Any, *, path: str | None, exec_timeout: float, strict: bool) -> ProviderConfig:
    ctx = _Ctx(path, strict)
    if not isinstance(data, Mapping):
        raise ctx.error(f"top level must be a JSON object, got {type(data).__name__}")
    top = _keys(data, ("providers",), "top level", ctx, None)
    raw_providers = top.get("providers")
    if raw_providers is None:
        raw_providers = []
    if not isinstance(raw_providers, list):
        raise ctx.error(f'"providers" must be a list, got {type(raw_providers).__name__}')
    providers: list[Provider] = []
    seen: set[str] = set()
    for i, raw in enumerate(raw_providers):
        p = _parse_provider(raw, i, ctx, exec_timeout)
        if p.name in seen:
            raise ctx.error("duplicate provider name (each name may appear only once)", p.name)
        seen.add(p.name)
        providers.append(p)
    return ProviderConfig(providers=tuple(providers), path=path, warnings=tuple(ctx.warnings))


def _parse_provider(raw: Any, index: int, ctx: _Ctx, exec_timeout: float) -> Provider:
    if not isinstance(raw, Mapping):
        raise ctx.error(f"providers[{index}] must be an object, got {type(raw).__name__}")
    label = f"providers[{index}]"
    obj = _keys(raw, _PROVIDER_KEYS, label, ctx, None)
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        raise ctx.error(f'{label}: "name" is required and must be a non-empty string')

    ec_raw = obj.get("execConfig")
    if ec_raw is None:
        raise ctx.error('"execConfig" is required (no exec config found for provider)', name)
    if not isinstance(ec_raw, Mapping):
        raise ctx.error(f'"execConfig" must be an object, got {type(ec_raw).__name__}', name)
    exec_config = _parse_exec(ec_raw, ctx, name)

    cli_raw = _opt_str(obj.get("profileSourcedCLIArgsPolicy"), '"profileSourcedCLIArgsPolicy"', ctx, name)
    try:
        cli = CLIArgsPolicy(cli_raw) if cli_raw else CLIArgsPolicy.IGNORE
    except ValueError:
        allowed = ", ".join(repr(p.value) for p in CLIArgsPolicy)
        raise ctx.error(
            f'unsupported ProfileSourcedCLIArgsPolicy: "{cli_raw}" (allowed: {allowed}; empty means Ignore)',
            name,
        ) from None
    env_raw = _opt_str(obj.get("profileSourcedEnvVarsPolicy"), '"profileSourcedEnvVarsPolicy"', ctx, name)
    try:
        envp = EnvVarsPolicy(env_raw) if env_raw else EnvVarsPolicy.IGNORE
    except ValueError:
        allowed = ", ".join(repr(p.value) for p in EnvVarsPolicy)
        raise ctx.error(
            f'unsupported ProfileSourcedEnvVarsPolicy: "{env_raw}" (allowed: {allowed}; empty means Ignore)',
            name,
        ) from None

    timeout = exec_timeout
    t_raw = obj.get("execTimeoutSeconds")
    if t_raw is not None:
        if (
            isinstance(t_raw, bool)
            or not isinstance(t_raw, int | float)
            or not math.isfinite(t_raw)
            or t_raw <= 0
        ):
            raise ctx.error(f'"execTimeoutSeconds" must be a positive number, got {t_raw!r}', name)
        timeout = float(t_raw)
    skip = obj.get("insecureSkipPluginPermissionCheck")
    if skip is not None and not isinstance(skip, bool):
        raise ctx.error('"insecureSkipPluginPermissionCheck" must be a boolean', name)
    if skip:
        exec_config = dataclasses.replace(exec_config, verify_permissions=False)
        ctx.warn(
            "insecureSkipPluginPermissionCheck is set: the plugin runs even if others could have replaced it",
            name,
        )
    return Provider(
        name=name, exec_config=exec_config, cli_args_policy=cli, env_vars_policy=envp, exec_timeout=timeout
    )


def _parse_exec(raw: Mapping[str, Any], ctx: _Ctx, name: str) -> ExecConfig:
    ec = _keys(raw, _EXEC_KEYS, "execConfig", ctx, name)

    api_version = ec.get("apiVersion")
    if not api_version:
        raise ctx.error(f"execConfig.apiVersion is required (one of {', '.join(EXEC_API_VERSIONS)})", name)
    if api_version not in EXEC_API_VERSIONS:
        raise ctx.error(
            f'exec plugin: invalid apiVersion "{api_version}" (supported: {", ".join(EXEC_API_VERSIONS)})',
            name,
        )

    command = ec.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ctx.error("execConfig.command is required and must be a non-empty string", name)
    if "\x00" in command:
        raise ctx.error("execConfig.command contains a NUL byte", name)
    if ("/" in command or (os.altsep and os.altsep in command)) and not os.path.isabs(command):
        raise ctx.error(
            f"execConfig.command {command!r} is relative to the working directory (Go's exec refuses such "
            "commands with ErrDot); use an absolute path or a bare name found in $PATH",
            name,
        )

    args_raw = ec.get("args")
    if args_raw is None:
        args: tuple[str, ...] = ()
    elif isinstance(args_raw, list) and all(isinstance(a, str) for a in args_raw):
        if any("\x00" in a for a in args_raw):
            raise ctx.error("execConfig.args contains a NUL byte", name)
        args = tuple(args_raw)
    else:
        raise ctx.error("execConfig.args must be a list of strings", name)

    env_raw = ec.get("env")
    env: list[tuple[str, str]] = []
    if env_raw is not None:
        if not isinstance(env_raw, list):
            raise ctx.error("execConfig.env must be a list of {name, value} objects", name)
        seen: set[str] = set()
        for j, item in enumerate(env_raw):
            if not isinstance(item, Mapping):
                raise ctx.error(f"execConfig.env[{j}] must be an object with name and value", name)
            e = _keys(item, _ENV_KEYS, f"execConfig.env[{j}]", ctx, name)
            en = e.get("name")
            if not isinstance(en, str) or not en or "=" in en or "\x00" in en:
                raise ctx.error(
                    f"execConfig.env[{j}].name must be a non-empty string without '=' or NUL", name
                )
            ev = e.get("value", "")
            if ev is None:
                ev = ""
            if not isinstance(ev, str) or "\x00" in ev:
                raise ctx.error(f"execConfig.env[{j}] ({en}): value must be a string without NUL", name)
            if en in seen:
                ctx.warn(f"execConfig.env: variable {en!r} given more than once; the last value wins", name)
            seen.add(en)
            env.append((en, ev))

    pci = ec.get("provideClusterInfo", False)
    if pci is None:
        pci = False
    if not isinstance(pci, bool):
        raise ctx.error("execConfig.provideClusterInfo must be a boolean", name)

    im_raw = ec.get("interactiveMode")
    if im_raw in (None, ""):
        # Upstream pkg/access forces "Never"; an empty value keeps that behaviour.
        im = InteractiveMode.NEVER
    else:
        try:
            im = InteractiveMode(im_raw)
        except ValueError:
            allowed = ", ".join(m.value for m in InteractiveMode)
            raise ctx.error(
                f"execConfig.interactiveMode: unknown interactiveMode: {im_raw!r} (allowed: {allowed})", name
            ) from None

    hint = _opt_str(ec.get("installHint"), "execConfig.installHint", ctx, name) or None
    return ExecConfig(
        api_version=api_version,
        command=command,
        args=args,
        env=tuple(env),
        provide_cluster_info=pci,
        interactive_mode=im,
        install_hint=hint,
    )
