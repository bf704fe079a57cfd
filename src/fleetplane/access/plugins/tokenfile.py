"""``fleetplane-token-file``: an exec credential plugin that returns a token read from a file.

Usage (provider file ``execConfig``)::

    {"apiVersion": "client.authentication.k8s.io/v1", "command": "fleetplane-token-file",
     "args": ["--token-file", "/var/run/fleet-tokens/{clusterName}", "--ttl", "300"],
     "provideClusterInfo": true, "interactiveMode": "Never"}

Options:

``--token-file PATH``
    The file to read (default: ``$FLEETPLANE_TOKEN_FILE``). ``{clusterName}`` is replaced by
    ``spec.cluster.config.clusterName`` from ``KUBERNETES_EXEC_INFO`` (the ClusterProfile's
    ``client.authentication.k8s.io/exec`` extension; needs ``provideClusterInfo: true``).
    Surrounding whitespace is stripped; an empty file is an error.
``--ttl SECONDS`` | ``--expires-at RFC3339`` | ``--jwt-expiry``
    Optional expiry (mutually exclusive): now + TTL, a fixed time, or the ``exp`` claim of the token
    when it is a JWT. Without one the client caches the token for its lifetime (and re-runs the plugin
    only after an HTTP 401), which suits files that never change; with rotating files (projected
    service account tokens, for instance) give a TTL shorter than the rotation period.

The response uses the apiVersion of the request (v1 or v1beta1).
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import json
import os
import sys

from ._protocol import PluginError, credential_json, parse_args, read_exec_info, run_plugin

NAME = "fleetplane-token-file"
ENV_TOKEN_FILE = "FLEETPLANE_TOKEN_FILE"


#: Options only the provider file may set (a ClusterProfile's additional-args may not).
OPERATOR_ONLY = frozenset(("token_file",))


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=NAME, description="Exec credential plugin returning a token read from a file."
    )
    p.add_argument(
        "--token-file",
        default=os.environ.get(ENV_TOKEN_FILE),
        help=f"token file; {{clusterName}} is substituted (default: ${ENV_TOKEN_FILE})",
    )
    g = p.add_mutually_exclusive_group()
    g.add_argument("--ttl", type=float, metavar="SECONDS", help="the token expires SECONDS from now")
    g.add_argument("--expires-at", metavar="RFC3339", help="the token expires at this time")
    g.add_argument("--jwt-expiry", action="store_true", help="take the expiry from the JWT 'exp' claim")
    return p


def _jwt_exp(token: str) -> dt.datetime:
    parts = token.split(".")
    if len(parts) != 3:
        raise PluginError("--jwt-expiry: the token is not a JWT")
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
        return dt.datetime.fromtimestamp(float(payload["exp"]), dt.UTC)
    except (ValueError, KeyError, TypeError):
        raise PluginError("--jwt-expiry: the JWT has no usable 'exp' claim") from None


def _parse_time(value: str) -> dt.datetime:
    s = value.strip()
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    try:
        t = dt.datetime.fromisoformat(s)
    except ValueError:
        raise PluginError(f"--expires-at: {value!r} is not an RFC 3339 timestamp") from None
    if t.tzinfo is None:
        raise PluginError(f"--expires-at: {value!r} has no time zone")
    return t


def produce(argv: list[str] | None = None) -> str:
    args = parse_args(_parser(), argv, OPERATOR_ONLY)
    info = read_exec_info()
    if not args.token_file:
        raise PluginError(f"no token file: pass --token-file or set ${ENV_TOKEN_FILE}")
    path = args.token_file
    if "{clusterName}" in path:
        cluster_name = info.config_value("clusterName")
        if not isinstance(cluster_name, str) or not cluster_name:
            raise PluginError(
                "--token-file uses {clusterName} but spec.cluster.config.clusterName is missing "
                "(set the client.authentication.k8s.io/exec extension and provideClusterInfo: true)"
            )
        if "/" in cluster_name or cluster_name in (".", ".."):
            raise PluginError(f"invalid clusterName {cluster_name!r}")
        path = path.replace("{clusterName}", cluster_name)
    try:
        with open(path, encoding="utf-8") as f:
            token = f.read().strip()
    except OSError as e:
        raise PluginError(f"cannot read token file {path}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise PluginError(f"token file {path} is not UTF-8 text") from None
    if not token:
        raise PluginError(f"token file {path} is empty")
    if any(c.isspace() for c in token):
        raise PluginError(f"token file {path} holds more than one word")
    expiration = None
    if args.ttl is not None:
        if args.ttl <= 0:
            raise PluginError("--ttl must be positive")
        expiration = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=args.ttl)
    elif args.expires_at:
        expiration = _parse_time(args.expires_at)
    elif args.jwt_expiry:
        expiration = _jwt_exp(token)
    return credential_json(info.api_version, token=token, expiration=expiration)


def main(argv: list[str] | None = None) -> int:
    return run_plugin(NAME, lambda: produce(argv))


if __name__ == "__main__":
    sys.exit(main())
