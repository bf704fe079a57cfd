"""Turn a ClusterProfile (a plain dict, as read from any Kubernetes API) into an :class:`AccessConfig`.

The algorithm follows upstream ``BuildConfigFromCP`` (cluster-inventory-api ``pkg/access``):

1. collect ``status.credentialProviders`` (deprecated; v1alpha1 only) and then ``status.accessProviders``
   by name, the latter winning on a name clash (a v1alpha2 profile, which has no credentialProviders
   and whose clusters have no ``certificate-authority`` path, reads the same way);
2. walk the *provider file* order and take the first provider the profile offers;
3. apply the ``clusterprofiles.multicluster.x-k8s.io/exec/additional-args`` and
   ``.../additional-envs`` extensions under the provider's policies (default: ignored);
4. keep the ``client.authentication.k8s.io/exec`` extension for ``ExecCredential.spec.cluster.config``;
5. return the endpoint (server, CA data, tls-server-name, insecure-skip-tls-verify, proxy-url,
   disable-compression) together with the resolved exec configuration.

Where upstream has defects we do not repeat them: the shared provider configuration is never mutated
(everything is frozen), the environment order is deterministic, a ``null`` extension is harmless,
all transport fields are propagated, and the result is a hashable value object so consumers can cache
clients per :class:`AccessConfig`.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import logging
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from .config import DEFAULT_EXEC_TIMEOUT, CLIArgsPolicy, ClusterInfo, EnvVarsPolicy, ExecConfig, Provider
from .errors import NoMatchingProviderError, ProfileError
from .execplugin import Credential, ExecAuthenticator, get_authenticator

log = logging.getLogger(__name__)

#: Reserved by the client authentication API: passed verbatim to ``ExecCredential.spec.cluster.config``.
EXEC_EXTENSION = "client.authentication.k8s.io/exec"
#: Reserved by KEP-4322.
ADDITIONAL_ARGS_EXTENSION = "clusterprofiles.multicluster.x-k8s.io/exec/additional-args"
ADDITIONAL_ENVS_EXTENSION = "clusterprofiles.multicluster.x-k8s.io/exec/additional-envs"

#: Environment variables a ClusterProfile may never set, whatever the policy. The plugin runs with
#: the controller's identity, so a variable that makes the plugin's interpreter, loader, shell or
#: tools run other code, read another configuration or trust another CA hands the profile's author
#: the controller's identity. Names are compared upper-cased. Each entry says why.
DENIED_PROFILE_ENV_NAMES: Mapping[str, str] = {
    "KUBERNETES_EXEC_INFO": "the exec protocol's own input",
    "PATH": "chooses which programs the plugin runs",
    "HOME": "chooses which configuration files the plugin and its tools read",
    "ENV": "a file sh sources at start-up",
    "BASH_ENV": "a file bash sources at start-up",
    "SHELLOPTS": "shell start-up options",
    "BASHOPTS": "shell start-up options",
    "PS4": "evaluated by a tracing shell",
    "PROMPT_COMMAND": "run by an interactive shell",
    "IFS": "changes how shell scripts split words",
    "CDPATH": "changes where shell scripts cd to",
    "SHELL": "the shell tools spawn",
    "BROWSER": "a program Python's webbrowser module runs (PYTHONWARNINGS=...:antigravity.x:... triggers it)",
    "EDITOR": "a program tools run",
    "VISUAL": "a program tools run",
    "PAGER": "a program tools run",
    "NODE_OPTIONS": "command-line options (--require) for every Node.js process",
    "PERLLIB": "Perl's module path",
    "CLASSPATH": "the Java class path",
    "GCONV_PATH": "glibc loads character-set modules from it",
    "GLIBC_TUNABLES": "glibc tunables (CVE-2023-4911)",
    "HOSTALIASES": "redirects host name lookups",
    "RESOLV_HOST_CONF": "redirects host name lookups",
    "LOCPATH": "glibc locale data",
    "NLSPATH": "message catalogues",
    "TMPDIR": "where the plugin writes temporary files (client keys)",
    "KUBECONFIG": "chooses the identity a plugin uses to reach the hub",
    "SSLKEYLOGFILE": "writes the TLS session keys of the plugin's connections to a file",
    "REQUESTS_CA_BUNDLE": "which certificate authorities the plugin trusts",
    "CURL_CA_BUNDLE": "which certificate authorities the plugin trusts",
    "AWS_CONFIG_FILE": "an AWS config file can run a credential_process",
    "AWS_SHARED_CREDENTIALS_FILE": "chooses the AWS identity",
    "GOOGLE_APPLICATION_CREDENTIALS": "chooses the Google identity",
    "CLOUDSDK_CONFIG": "chooses the gcloud configuration (and identity)",
    "AZURE_CONFIG_DIR": "chooses the Azure CLI configuration (and identity)",
    "GODEBUG": "Go run-time settings (execerrdot=0 re-enables running programs found in '.')",
    "GOFLAGS": "Go tool flags",
    "GOENV": "a Go configuration file",
}
#: Name prefixes a ClusterProfile may never set (upper-cased), with why.
DENIED_PROFILE_ENV_PREFIXES: tuple[tuple[str, str], ...] = (
    ("LD_", "dynamic-loader hooks (LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT)"),
    ("DYLD_", "macOS dynamic-loader hooks"),
    ("PYTHON", "Python start-up hooks (PYTHONPATH, PYTHONSTARTUP, PYTHONWARNINGS imports modules)"),
    ("PERL5", "Perl start-up hooks (PERL5OPT, PERL5LIB)"),
    ("PERL_", "Perl settings"),
    ("RUBY", "Ruby start-up hooks (RUBYOPT, RUBYLIB)"),
    ("GEM_", "Ruby gem paths"),
    ("BUNDLE_", "Ruby bundler configuration"),
    ("NODE_", "Node.js hooks (NODE_OPTIONS, NODE_PATH)"),
    ("NPM_CONFIG_", "npm configuration"),
    ("GIT_", "git hooks and configuration (GIT_SSH_COMMAND, GIT_CONFIG_*, GIT_EXEC_PATH)"),
    ("BASH_FUNC_", "exported bash functions"),
    ("JAVA_", "Java options (JAVA_TOOL_OPTIONS -javaagent)"),
    ("_JAVA_", "Java options"),
    ("JDK_", "Java options (JDK_JAVA_OPTIONS)"),
    ("DOTNET_", ".NET start-up hooks (DOTNET_STARTUP_HOOKS)"),
    ("COMPLUS_", ".NET runtime settings"),
    ("CORECLR_", ".NET profiler hooks"),
    ("MALLOC_", "allocator settings"),
    ("LUA_", "Lua start-up hooks (LUA_INIT)"),
    ("KUBERNETES_", "in-cluster service discovery and the exec protocol"),
    ("FLEETPLANE_", "configuration of fleetplane's own plugins (the hub kubeconfig, the Secret namespace)"),
    ("SSL_", "which certificate authorities the plugin trusts (SSL_CERT_FILE, SSL_CERT_DIR)"),
    ("OPENSSL_", "OpenSSL configuration (OPENSSL_CONF loads engines)"),
    ("XDG_", "where tools read their configuration from"),
)
#: Name suffixes a ClusterProfile may never set: HTTP_PROXY, HTTPS_PROXY, ALL_PROXY (and lower case).
DENIED_PROFILE_ENV_SUFFIXES: tuple[tuple[str, str], ...] = (
    ("_PROXY", "routes the plugin's requests (and tokens) through a proxy of the profile's choosing"),
)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def denied_profile_env(name: str) -> str | None:
    """Why a ClusterProfile may not set the environment variable ``name`` (``None``: it may)."""
    upper = name.upper()
    if upper in DENIED_PROFILE_ENV_NAMES:
        return DENIED_PROFILE_ENV_NAMES[upper]
    for prefix, why in DENIED_PROFILE_ENV_PREFIXES:
        if upper.startswith(prefix):
            return why
    for suffix, why in DENIED_PROFILE_ENV_SUFFIXES:
        if upper.endswith(suffix):
            return why
    return None


class Providers(Protocol):
    """What choosing a provider needs of a provider file (:class:`~.provider.ProviderConfig`)."""

    @property
    def providers(self) -> tuple[Provider, ...]: ...

    @property
    def names(self) -> tuple[str, ...]: ...


@dataclass(frozen=True, slots=True)
class AccessConfig:
    """Everything needed to reach one cluster: endpoint + exec credential plugin configuration.

    Frozen and hashable: two configs built from the same profile content and provider compare and hash
    equal, so consumers can key client caches on it and avoid reconnecting on every reconcile. The
    ``profile`` label (``namespace/name``) is informational and excluded from equality.
    """

    provider: str
    cluster: ClusterInfo
    exec_config: ExecConfig
    exec_timeout: float = DEFAULT_EXEC_TIMEOUT
    profile: str | None = field(default=None, compare=False)

    @property
    def server(self) -> str:
        return self.cluster.server

    def authenticator(self) -> ExecAuthenticator:
        """The process-wide shared authenticator (credential cache) for this configuration."""
        return get_authenticator(self)

    async def get_credential(self) -> Credential:
        return await self.authenticator().get_credential()

    def get_credential_sync(self) -> Credential:
        return self.authenticator().get_credential_sync()


# ----------------------------------------------------------------------------------------------


def profile_label(profile: Mapping[str, Any]) -> str:
    md = profile.get("metadata") or {}
    name = md.get("name") or "<unnamed>"
    ns = md.get("namespace")
    return f"{ns}/{name}" if ns else str(name)


_warned_lock = threading.Lock()
_warned: set[tuple[str, str]] = set()


def _warn_once(kind: str, key: str, msg: str, *args: Any) -> None:
    with _warned_lock:
        if (kind, key) in _warned:
            return
        if len(_warned) > 10_000:
            _warned.clear()
        _warned.add((kind, key))
    log.warning(msg, *args)


#: the ClusterProfile version without ``credentialProviders`` (and without clusters'
#: ``certificate-authority``): upstream's v0.2.0 ``pkg/access`` reads only ``accessProviders`` there
V1ALPHA2 = "multicluster.x-k8s.io/v1alpha2"


def collect_access_providers(profile: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Map provider name -> access provider entry (``accessProviders`` overrides ``credentialProviders``).

    Both shapes are read: a v1alpha1 profile's deprecated ``credentialProviders`` count, a
    v1alpha2 profile has none (what a v1alpha2 object may still carry there is ignored, as
    upstream's v1alpha2 access library ignores it)."""
    label = profile_label(profile)
    status = profile.get("status") or {}
    if not isinstance(status, Mapping):
        raise ProfileError(f'cluster profile "{label}": status must be an object', profile=label)
    out: dict[str, Mapping[str, Any]] = {}
    fields = ("accessProviders",) if profile.get("apiVersion") == V1ALPHA2 else ("credentialProviders", "accessProviders")
    for field_name in fields:
        entries = status.get(field_name) or []
        if not isinstance(entries, list):
            raise ProfileError(
                f'cluster profile "{label}": status.{field_name} must be a list', profile=label
            )
        if field_name == "credentialProviders" and entries:
            _warn_once(
                "deprecated",
                label,
                "ClusterProfile %r uses deprecated field status.credentialProviders; please migrate to accessProviders",
                label,
            )
        for i, entry in enumerate(entries):
            if (
                not isinstance(entry, Mapping)
                or not isinstance(entry.get("name"), str)
                or not entry.get("name")
            ):
                raise ProfileError(
                    f'cluster profile "{label}": status.{field_name}[{i}] must be an object with a non-empty name',
                    profile=label,
                )
            out[entry["name"]] = entry
    return out


def select_access_provider(
    profile: Mapping[str, Any], providers: Providers
) -> tuple[Provider, Mapping[str, Any]]:
    """Return ``(provider, access provider entry)``: the first provider *in file order* the profile offers."""
    profile = as_mapping(profile)
    offered = collect_access_providers(profile)
    for p in providers.providers:
        entry = offered.get(p.name)
        if entry is not None:
            return p, entry
    label = profile_label(profile)
    raise NoMatchingProviderError(
        f'no matching cluster accessor found for cluster profile "{label}" '
        f"(profile offers {sorted(offered)}; provider file configures {list(providers.names)})",
        profile=label,
    )


def as_mapping(profile: Any) -> Mapping[str, Any]:
    """Accept a dict, or an object with ``to_dict()`` (kubernetes dynamic client, lightkube generic resources)."""
    if isinstance(profile, Mapping):
        return profile
    to_dict = getattr(profile, "to_dict", None)
    if callable(to_dict):
        d = to_dict()
        if isinstance(d, Mapping):
            return d
    raise ProfileError(f"cluster profile must be a mapping, got {type(profile).__name__}")


def build_access_config(profile: Mapping[str, Any], providers: Providers) -> AccessConfig:
    """Build the :class:`AccessConfig` for a ClusterProfile dict (upstream ``BuildConfigFromCP``)."""
    profile = as_mapping(profile)
    provider, entry = select_access_provider(profile, providers)
    label = profile_label(profile)

    def err(msg: str) -> ProfileError:
        return ProfileError(
            f'cluster profile "{label}", provider "{provider.name}": {msg}',
            profile=label,
            provider=provider.name,
        )

    cluster = entry.get("cluster")
    if not isinstance(cluster, Mapping):
        raise err("access provider has no cluster")
    server = cluster.get("server")
    if not isinstance(server, str) or not server:
        raise err("cluster.server is required")

    ca: bytes | None = None
    ca_raw = cluster.get("certificate-authority-data")
    if ca_raw not in (None, ""):
        if not isinstance(ca_raw, str):
            raise err("cluster.certificate-authority-data must be a base64 string")
        try:
            ca = base64.b64decode("".join(ca_raw.split()), validate=True)
        except (binascii.Error, ValueError):
            raise err("cluster.certificate-authority-data is not valid base64") from None
    if cluster.get("certificate-authority"):
        _warn_once(
            "ca-path",
            label,
            "ClusterProfile %r: cluster.certificate-authority (a file path) is ignored; use certificate-authority-data",
            label,
        )

    def opt_str(key: str) -> str | None:
        v = cluster.get(key)
        if v in (None, ""):
            return None
        if not isinstance(v, str):
            raise err(f"cluster.{key} must be a string")
        return v

    def opt_bool(key: str) -> bool:
        v = cluster.get(key)
        if v is None:
            return False
        if not isinstance(v, bool):
            raise err(f"cluster.{key} must be a boolean")
        return v

    extensions = cluster.get("extensions") or []
    if not isinstance(extensions, list):
        raise err("cluster.extensions must be a list")
    by_name: dict[str, Any] = {}
    for i, ext in enumerate(extensions):
        if not isinstance(ext, Mapping) or not isinstance(ext.get("name"), str) or not ext.get("name"):
            raise err(f"cluster.extensions[{i}] must be an object with a non-empty name")
        if ext["name"] in by_name:
            raise err(f"cluster.extensions: duplicate name {ext['name']!r}")
        by_name[ext["name"]] = ext.get("extension")

    exec_ext_json: bytes | None = None
    if EXEC_EXTENSION in by_name:
        exec_ext_json = orjson.dumps(by_name[EXEC_EXTENSION], option=orjson.OPT_SORT_KEYS)
        if not provider.exec_config.provide_cluster_info:
            _warn_once(
                "no-cluster-info",
                f"{label}|{provider.name}",
                "ClusterProfile %r sets the %s extension but provider %r has provideClusterInfo=false; "
                "the plugin will not receive it",
                label,
                EXEC_EXTENSION,
                provider.name,
            )

    exec_config = provider.exec_config
    if ADDITIONAL_ARGS_EXTENSION in by_name and provider.cli_args_policy is CLIArgsPolicy.APPEND:
        extra_args = _parse_additional_args(by_name[ADDITIONAL_ARGS_EXTENSION], err)
        if extra_args:
            _check_profile_args(exec_config.args, extra_args, err)
            exec_config = dataclasses.replace(
                exec_config, args=exec_config.args + tuple(extra_args), profile_args_start=len(exec_config.args)
            )
    if ADDITIONAL_ENVS_EXTENSION in by_name and provider.env_vars_policy is not EnvVarsPolicy.IGNORE:
        denied: list[str] = []
        extra_env = _parse_additional_envs(by_name[ADDITIONAL_ENVS_EXTENSION], err, denied)
        if denied:
            _warn_once(
                "denied-env",
                f"{label}|{provider.name}|{','.join(sorted(denied))}",
                "ClusterProfile %r, provider %r: additional-envs may not set %s (they would let the profile "
                "run code or choose an identity in the plugin); these variables are not passed",
                label,
                provider.name,
                ", ".join(f"{n} ({denied_profile_env(n)})" for n in sorted(denied)),
            )
        if extra_env:
            exec_config = dataclasses.replace(
                exec_config, env=merge_env(exec_config.env, extra_env, provider.env_vars_policy)
            )

    info = ClusterInfo(
        server=server,
        certificate_authority_data=ca,
        tls_server_name=opt_str("tls-server-name"),
        insecure_skip_tls_verify=opt_bool("insecure-skip-tls-verify"),
        proxy_url=opt_str("proxy-url"),
        disable_compression=opt_bool("disable-compression"),
        exec_extension_json=exec_ext_json,
    )
    return AccessConfig(
        provider=provider.name,
        cluster=info,
        exec_config=exec_config,
        exec_timeout=provider.exec_timeout,
        profile=label,
    )


def merge_env(
    base: tuple[tuple[str, str], ...], extra: Mapping[str, str], policy: EnvVarsPolicy
) -> tuple[tuple[str, str], ...]:
    """Merge profile-sourced variables into the provider's env, deterministically.

    Order: the provider file's variables in file order (a repeated name keeps its first position and
    last value), then the profile's new variables sorted by name. ``AppendIfNotExists``: the file's
    value wins on a clash. ``Replace``: the profile's value wins.
    """
    merged: dict[str, str] = {}
    for n, v in base:
        merged[n] = v
    if policy is EnvVarsPolicy.REPLACE:
        for n in merged:
            if n in extra:
                merged[n] = extra[n]
    elif policy is not EnvVarsPolicy.APPEND_IF_NOT_EXISTS:
        return base
    for n in sorted(extra):
        if n not in merged:
            merged[n] = extra[n]
    return tuple(merged.items())


def _scalar_to_str(v: Any) -> str | None:
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return orjson.dumps(v).decode()
    return None


def _maybe_yaml(value: Any, err, what: str) -> Any:
    # The KEP describes the payload as YAML; a string holding YAML/JSON is accepted too.
    if isinstance(value, str):
        import yaml

        try:
            return yaml.safe_load(value)
        except yaml.YAMLError:
            raise err(f"failed to unmarshal {what} extension: the string is not valid YAML/JSON") from None
    return value


def _parse_additional_args(value: Any, err) -> list[str]:
    what = "additional CLI args"
    value = _maybe_yaml(value, err, what)
    if value is None:
        return []
    if not isinstance(value, list):
        raise err(
            f"failed to unmarshal {what} extension: expected a list of strings, got {type(value).__name__}"
        )
    out: list[str] = []
    for i, item in enumerate(value):
        s = _scalar_to_str(item)
        if s is None:
            raise err(
                f"failed to unmarshal {what} extension: item {i} must be a string, got {type(item).__name__}"
            )
        if "\x00" in s:
            raise err(f"failed to unmarshal {what} extension: item {i} contains a NUL byte")
        out.append(s)
    return out


def _flag_name(arg: str) -> str | None:
    """``namespace`` for ``--namespace``, ``-namespace`` (Go's flag package) or ``--namespace=x``."""
    if len(arg) < 2 or not arg.startswith("-") or arg == "--":
        return None
    return arg.lstrip("-").split("=", 1)[0] or None


def _check_profile_args(operator_args: tuple[str, ...], extra: list[str], err) -> None:
    """Refuse profile-sourced arguments that would set a flag the provider file already sets.

    Most parsers let the last occurrence of a flag win, and the profile's arguments come last, so a
    profile could otherwise replace the operator's ``--namespace team-a`` with ``team-b``. Refused:
    the same flag with one or two dashes or with ``=value``, an abbreviation of it (Python's argparse
    accepts unambiguous prefixes) and a short flag with its value attached (``-nteam-b``).
    """
    operator: list[tuple[str, bool]] = []  # (flag name, written with a single dash)
    for a in operator_args:
        if a == "--":
            break
        n = _flag_name(a)
        if n is not None:
            operator.append((n, not a.startswith("--")))
    for i, a in enumerate(extra):
        n = _flag_name(a)
        if n is None:
            continue
        for op, single in operator:
            short_attached = single and len(op) == 1 and not a.startswith("--") and a[1:2] == op
            if n == op or (len(n) >= 2 and op.startswith(n)) or short_attached:
                raise err(
                    f"additional CLI args extension: item {i} ({a.split('=', 1)[0]!r}) would override the "
                    f"provider file's {'-' if single else '--'}{op}; a ClusterProfile may only add arguments "
                    "the provider file does not set"
                )


def _parse_additional_envs(value: Any, err, denied: list[str]) -> dict[str, str]:
    """The profile's variables; names :func:`denied_profile_env` refuses go to ``denied`` instead."""
    what = "additional env vars"
    value = _maybe_yaml(value, err, what)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise err(
            f"failed to unmarshal {what} extension: expected a map of strings, got {type(value).__name__}"
        )
    out: dict[str, str] = {}
    for k, v in value.items():
        if not isinstance(k, str) or not _ENV_NAME.match(k):
            raise err(
                f"failed to unmarshal {what} extension: invalid variable name {k!r} "
                "(letters, digits and '_', not starting with a digit)"
            )
        if denied_profile_env(k) is not None:
            denied.append(k)
            continue
        s = "" if v is None else _scalar_to_str(v)
        if s is None:
            raise err(
                f"failed to unmarshal {what} extension: value of {k!r} must be a string, got {type(v).__name__}"
            )
        if "\x00" in s:
            raise err(f"failed to unmarshal {what} extension: value of {k!r} contains a NUL byte")
        out[k] = s
    return out
