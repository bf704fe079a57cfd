"""Plugin side of the exec credential protocol: read ``KUBERNETES_EXEC_INFO``, write an ExecCredential."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

EXEC_INFO_ENV = "KUBERNETES_EXEC_INFO"
#: Set by fleetplane.access: how many of the last arguments came from the ClusterProfile's
#: additional-args extension (the ones before are the provider file's).
PROFILE_ARGC_ENV = "FLEETPLANE_EXEC_PROFILE_ARGC"
API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
DEFAULT_API_VERSION = API_VERSIONS[0]


class PluginError(Exception):
    """A failure reported on stderr as ``[plugin] message`` with exit status 1."""


@dataclass(frozen=True)
class ExecInfo:
    api_version: str
    interactive: bool
    cluster: dict[str, Any] | None  # spec.cluster, present when provideClusterInfo is true

    @property
    def cluster_config(self) -> Any:
        """``spec.cluster.config`` (the ClusterProfile's client.authentication.k8s.io/exec extension)."""
        return (self.cluster or {}).get("config")

    def config_value(self, key: str) -> Any:
        cfg = self.cluster_config
        return cfg.get(key) if isinstance(cfg, Mapping) else None


def read_exec_info(environ: Mapping[str, str] | None = None) -> ExecInfo:
    """Parse ``KUBERNETES_EXEC_INFO``. Absent (plugin run by hand): v1, non-interactive, no cluster."""
    env = os.environ if environ is None else environ
    raw = env.get(EXEC_INFO_ENV)
    if not raw:
        return ExecInfo(DEFAULT_API_VERSION, False, None)
    try:
        obj = json.loads(raw)
    except ValueError:
        raise PluginError(f"{EXEC_INFO_ENV} is not valid JSON") from None
    if not isinstance(obj, dict) or obj.get("kind") != "ExecCredential":
        raise PluginError(f"{EXEC_INFO_ENV} is not an ExecCredential")
    version = obj.get("apiVersion")
    if version not in API_VERSIONS:
        raise PluginError(
            f"unsupported ExecCredential apiVersion {version!r} (supported: {', '.join(API_VERSIONS)})"
        )
    spec = obj.get("spec") or {}
    cluster = spec.get("cluster") if isinstance(spec, dict) else None
    return ExecInfo(
        version,
        bool(spec.get("interactive")) if isinstance(spec, dict) else False,
        cluster if isinstance(cluster, dict) else None,
    )


def parse_args(
    parser: argparse.ArgumentParser,
    argv: Sequence[str] | None,
    operator_only: Collection[str],
    environ: Mapping[str, str] | None = None,
) -> argparse.Namespace:
    """Parse argv so that a ClusterProfile's appended arguments cannot replace the operator's.

    * An option given twice is an error (argparse would let the last one, the profile's, win);
      abbreviations are off (``--names`` is not ``--namespace``).
    * When the library says how many trailing arguments came from the profile
      (``$FLEETPLANE_EXEC_PROFILE_ARGC``), the options in ``operator_only`` (destinations such as
      ``namespace``) may not be among them: settings the operator made through the environment or
      the defaults cannot be overridden by a profile either. (A count, not the list: an
      interpreter in front, ``python -m plugin``, consumes the first arguments.)
    """
    env = os.environ if environ is None else environ
    args = list(sys.argv[1:] if argv is None else argv)
    parser.allow_abbrev = False
    by_flag = {flag: action for action in parser._actions for flag in action.option_strings}

    def options(tokens: Sequence[str]) -> list[tuple[int, str, argparse.Action]]:
        found = []
        for i, tok in enumerate(tokens):
            if tok == "--":
                break
            action = by_flag.get(tok.split("=", 1)[0]) if tok.startswith("-") else None
            if action is not None:
                found.append((i, tok.split("=", 1)[0], action))
        return found

    seen: dict[str, str] = {}
    for _, flag, action in options(args):
        if action.dest in seen and action.dest != "help":
            raise PluginError(
                f"{flag} given more than once (also as {seen[action.dest]}); an option may be set only once, "
                "so arguments a ClusterProfile appends cannot replace the operator's"
            )
        seen[action.dest] = flag
    raw = env.get(PROFILE_ARGC_ENV)
    if raw is not None:
        try:
            count = int(raw)
        except ValueError:
            count = -1
        if not 0 <= count <= len(args):
            raise PluginError(f"{PROFILE_ARGC_ENV}={raw!r} is not a count of this plugin's arguments")
        start = len(args) - count
        for i, flag, action in options(args[start:]):
            if action.dest in operator_only:
                raise PluginError(
                    f"{flag} may only be set by the provider file, not by a ClusterProfile's additional-args "
                    f"(argument {start + i + 1})"
                )
    return parser.parse_args(args)


def format_timestamp(t: dt.datetime) -> str:
    """RFC 3339 in UTC with second precision, as metav1.Time marshals."""
    return t.astimezone(dt.UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def credential_json(
    api_version: str,
    *,
    token: str | None = None,
    client_certificate_data: str | None = None,
    client_key_data: str | None = None,
    expiration: dt.datetime | None = None,
) -> str:
    status: dict[str, Any] = {}
    if expiration is not None:
        status["expirationTimestamp"] = format_timestamp(expiration)
    if token:
        status["token"] = token
    if client_certificate_data:
        status["clientCertificateData"] = client_certificate_data
    if client_key_data:
        status["clientKeyData"] = client_key_data
    return json.dumps({"apiVersion": api_version, "kind": "ExecCredential", "status": status})


def run_plugin(name: str, fn: Callable[[], str]) -> int:
    """Run ``fn`` (returns the ExecCredential JSON); errors go to stderr as ``[name] ...``, status 1."""
    try:
        out = fn()
    except PluginError as e:
        print(f"[{name}] {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    sys.stdout.write(out + "\n")
    sys.stdout.flush()
    return 0
