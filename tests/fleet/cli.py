"""``fleetplane`` with the fleet subcommands (``cluster``, ``syncer``) registered even before
``fleetplane.cli.main`` wires them: ``python tests/fleet/cli.py cluster simulate ...``. The
fixtures use ``fleetplane`` itself once it knows the command."""

from __future__ import annotations

import argparse
import importlib
import sys

from fleetplane.logs import configure_logging


def main() -> int:
    p = argparse.ArgumentParser(prog="fleetplane")
    p.add_argument("--log-level", default="info")
    p.add_argument("--log-format", default="json")
    sub = p.add_subparsers(dest="command", required=True)
    for name in ("cluster", "syncer"):
        importlib.import_module(f"fleetplane.cli.{name}").add_parser(sub)
    args = p.parse_args()
    configure_logging(args.log_level, args.log_format)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
