"""``fleetplane kubeconfig create``: a kubeconfig for one identity, with a client certificate
signed by the hub's client CA (CN the user, O each group), and a context per logical cluster.

It reads the client CA from the hub's data directory, so it runs where the hub's admin does.
What the identity may do is RBAC's business: the certificate only says who it is.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
from pathlib import Path

from ..apimachinery.metatime import format_time

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|m|s)")


def parse_duration(text: str) -> dt.timedelta:
    """A Go duration of hours, minutes and seconds (``8760h``, ``1h30m``, ``90s``)."""
    pos, total = 0, 0.0
    for m in _DURATION.finditer(text):
        if m.start() != pos:
            break
        total += float(m.group(1)) * {"h": 3600, "m": 60, "s": 1}[m.group(2)]
        pos = m.end()
    if not text or pos != len(text) or total <= 0:
        raise argparse.ArgumentTypeError(f'invalid duration "{text}": use hours, minutes, seconds, e.g. 720h or 1h30m')
    return dt.timedelta(seconds=total)


def _create(args: argparse.Namespace) -> int:
    import yaml

    from ..hub import client_kubeconfig, write_kubeconfig

    data_dir = Path(args.data_dir)
    pki = data_dir / "pki"
    if not (pki / "client-ca.key").exists():
        print(f"fleetplane: no client CA in {pki}: start the hub with --data-dir {data_dir} once first", file=sys.stderr)
        return 1
    clusters = list(dict.fromkeys(args.logical_cluster or ["root"]))
    config = client_kubeconfig(data_dir, args.user, list(args.group or []), args.expiration, clusters, args.server)
    if args.output == "-":
        sys.stdout.write(yaml.safe_dump(config, sort_keys=False))
    else:
        write_kubeconfig(Path(args.output), config)
        expires = format_time(dt.datetime.now(dt.UTC) + args.expiration)
        print(f"wrote {args.output}: user {args.user!r}, groups {list(args.group or [])}, contexts {clusters}, "
              f"expires {expires}", file=sys.stderr)
    return 0


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("kubeconfig", help="kubeconfigs for people and tools")
    sub = p.add_subparsers(dest="kubeconfig_command", required=True)
    c = sub.add_parser("create", help="a kubeconfig with a client certificate for one identity",
                       description="Sign a client certificate for --user (and each --group) with the hub's client "
                                   "CA and write a kubeconfig with one context per --logical-cluster. Grant the "
                                   "identity what it may do with RBAC in each logical cluster.")
    c.add_argument("--user", required=True, help="the user name (the certificate's CN)")
    c.add_argument("--group", action="append", metavar="G", help="a group (the certificate's O); repeatable")
    c.add_argument("--logical-cluster", action="append", metavar="C", help="a context for this logical cluster; repeatable (default root)")
    c.add_argument("--expiration", type=parse_duration, default=parse_duration("8760h"), metavar="DURATION",
                   help="how long the certificate is valid, as a Go duration (default 8760h, a year)")
    c.add_argument("--data-dir", default=".fleetplane", help="the hub's data directory (holds the client CA)")
    c.add_argument("--server", help="the hub's URL (default: from the data directory's admin.kubeconfig)")
    c.add_argument("-o", "--output", default="-", metavar="FILE", help="where to write it (default stdout); files are 0600")
    c.set_defaults(func=_create)
