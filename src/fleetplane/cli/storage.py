"""``fleetplane storage``: move a hub's data between SQLite and etcd."""

from __future__ import annotations

import argparse
import sys

STORE_HELP = ("sqlite:PATH, or etcd:URL[,URL...] with TLS options as a query string "
              "(etcd:https://h:2379?cacert=CA&cert=CRT&key=KEY)")


def _copy(args: argparse.Namespace) -> int:
    import asyncio

    from ..hub import copy_store, describe_store

    def progress(done: int, total: int) -> None:
        if not args.quiet and sys.stderr.isatty():
            print(f"\r{done}/{total} keys", end="", file=sys.stderr, flush=True)

    result = asyncio.run(copy_store(args.source, args.target, progress=progress))
    if not args.quiet:
        if sys.stderr.isatty():
            print(file=sys.stderr)
        print(f"copied {result.keys} keys ({result.bytes} bytes) from {describe_store(args.source)} "
              f"(revision {result.source_revision}) to {describe_store(args.target)} (now at revision "
              f"{result.target_revision}) in {result.seconds:.1f}s; every object keeps its uid and "
              "metadata, resourceVersions are new: clients relist")
    return 0


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("storage", help="move the hub's data between stores")
    sub = p.add_subparsers(dest="storage_command", required=True)
    c = sub.add_parser("copy", help="copy every object from one store into another, empty one (stop the hub first)",
                       description="Copy every key byte for byte, so objects keep their identity (uid, "
                                   "creationTimestamp, ...); resourceVersions are the target's own.")
    c.add_argument("--from", dest="source", required=True, metavar="STORE", help=STORE_HELP)
    c.add_argument("--to", dest="target", required=True, metavar="STORE", help=STORE_HELP)
    c.add_argument("--quiet", action="store_true", help="print nothing on success")
    c.set_defaults(func=_copy)
