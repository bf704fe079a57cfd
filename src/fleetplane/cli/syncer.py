"""``fleetplane syncer``: the pull-mode syncer of one Cluster, and the manifests that run it.

``fleetplane syncer --hub-kubeconfig HUB --cluster NAME [--namespace NS] [--logical-cluster LC]
[--cluster-kubeconfig KC]`` runs next to (or inside) the physical cluster of the Cluster ``NS/NAME``
(``spec.syncerMode: Pull``) in logical cluster ``LC`` (default: the one in HUB's server URL, else
``root``); without ``--cluster-kubeconfig`` it uses the pod's service account. What it does:
:mod:`fleetplane.fleet.cluster.pull`.

``fleetplane syncer manifests --cluster NAME [--hub-kubeconfig HUB] [--hub-server URL] [--image IMG]``
prints what a real cluster needs to run it: a Namespace, ServiceAccount, ClusterRole and binding,
a Secret with a hub kubeconfig, and a Deployment. The kubeconfig never carries HUB's own
credentials: the command first gives the Syncer its own identity on the hub (a ServiceAccount in
``fleetplane-system`` of the logical cluster, with least-privilege bindings, see
:func:`fleetplane.fleet.identities.syncer_role_binding`) and puts that ServiceAccount's token in
the kubeconfig; it works in that logical cluster only, and deleting the Secret
``fleetplane-system/fleetplane-syncer-<name>-token`` on the hub revokes it.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

# The work is in fleetplane.fleet.cluster.pull, imported when a command runs (keeps `fleetplane` fast).


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``syncer`` (and ``syncer manifests``) on the ``fleetplane`` subparsers."""
    p = subparsers.add_parser(
        "syncer", help="run the pull-mode Syncer for one Cluster, or render its manifests",
        description="Run the Syncer for a Cluster in pull mode (spec.syncerMode: Pull), next to the physical "
                    "cluster. `fleetplane syncer manifests` renders what a cluster needs to run it.")
    _common(p, run=True)
    p.add_argument("--cluster-kubeconfig", help="kubeconfig of the physical cluster (default: in-cluster service account)")
    p.add_argument("--cluster-context", help="context in --cluster-kubeconfig")
    p.add_argument("--interval", type=float, default=10.0, metavar="SECONDS",
                   help="how often the cluster is probed and the Lease renewed (default 10)")
    p.add_argument("--lease-duration", type=float, default=40.0, metavar="SECONDS",
                   help="how long the Lease stays valid without renewal (default 40)")
    p.add_argument("--details-interval", type=float, default=60.0, metavar="SECONDS",
                   help="how often Nodes and ClusterProperties are read (default 60)")
    p.add_argument("--poll-interval", type=float, default=None, metavar="SECONDS",
                   help="the Syncer's type polling interval (default: the Syncer's)")
    p.add_argument("--identity", default=None, help="holder identity on the Lease (default: the host name)")
    p.set_defaults(func=run_syncer)
    sub = p.add_subparsers(dest="syncer_command")
    m = sub.add_parser("manifests", help="print the manifests that run `fleetplane syncer` in a cluster",
                       description="Print YAML for `kubectl apply -f -` against the physical cluster: Namespace, "
                                   "ServiceAccount, ClusterRole and ClusterRoleBinding, a Secret with the hub "
                                   "kubeconfig, and a Deployment running `fleetplane syncer`.")
    _common(m, run=False)
    m.add_argument("--hub-server", help="the hub URL as seen from inside the cluster (default: the kubeconfig's)")
    m.add_argument("--image", help="container image with fleetplane (default: the release image of this version)")
    m.add_argument("--syncer-namespace", help="namespace of the syncer in the cluster (default fleetplane-syncer)")
    m.set_defaults(func=run_manifests)
    return p


def _common(p: argparse.ArgumentParser, run: bool) -> None:
    # Not required=True: argparse would then demand them before `manifests` as well.
    default = os.environ.get("FLEETPLANE_HUB_KUBECONFIG")
    if not run and not default and os.environ.get("KUBECONFIG"):
        default = os.environ["KUBECONFIG"].split(os.pathsep)[0]
    p.add_argument("--hub-kubeconfig", default=default,
                   help="kubeconfig of the hub (default: $FLEETPLANE_HUB_KUBECONFIG" + (")" if run else ", then $KUBECONFIG)"))
    p.add_argument("--hub-context", help="context in --hub-kubeconfig")
    p.add_argument("--cluster", metavar="NAME", help="the Cluster's name on the hub (required)")
    p.add_argument("--namespace", "-n", default="default", help="the Cluster's namespace on the hub (default: default)")
    p.add_argument("--logical-cluster", metavar="LC",
                   help="the Cluster's logical cluster (default: the one in the hub kubeconfig's server URL, else root)")
    p.add_argument("--resources", help="resources to sync when the Cluster has no spec.resources (comma-separated)")


def run_manifests(args: argparse.Namespace) -> int:
    import asyncio

    import yaml

    from ..fleet.cluster.pull import (
        DEFAULT_IMAGE,
        DEFAULT_SYNCER_NAMESPACE,
        hub_kubeconfig_for,
        provision_syncer,
        render_manifests,
    )
    from ..fleet.syncer import DEFAULT_RESOURCES
    from ..kube.client import ApiError, Unreachable
    from ..kube.kubeconfig import KubeconfigError

    if not args.hub_kubeconfig or not args.cluster:
        print("fleetplane syncer manifests: error: --cluster and --hub-kubeconfig (or $FLEETPLANE_HUB_KUBECONFIG, "
              "$KUBECONFIG) are required", file=sys.stderr)
        return 2
    resources = _resources(args) or list(DEFAULT_RESOURCES)
    try:
        lc, _ = hub_kubeconfig_for(args.hub_kubeconfig, args.logical_cluster, args.hub_context, args.hub_server)
        # The member cluster gets the Syncer's own ServiceAccount token, never the caller's credentials.
        token = asyncio.run(provision_syncer(args.hub_kubeconfig, lc, args.cluster, args.namespace, resources, args.hub_context))
        lc, kubeconfig = hub_kubeconfig_for(args.hub_kubeconfig, lc, args.hub_context, args.hub_server, token=token)
    except KubeconfigError as exc:
        print(f"fleetplane syncer manifests: error: hub kubeconfig: {exc}", file=sys.stderr)
        return 2
    except (ApiError, Unreachable) as exc:
        print(f"fleetplane syncer manifests: error: provisioning the Syncer's identity on the hub: {exc}", file=sys.stderr)
        return 1
    docs = render_manifests(cluster=args.cluster, namespace=args.namespace, logical_cluster=lc, hub_kubeconfig=kubeconfig,
                            resources=resources, image=args.image or DEFAULT_IMAGE,
                            syncer_namespace=args.syncer_namespace or DEFAULT_SYNCER_NAMESPACE)
    sys.stdout.write(yaml.safe_dump_all(docs, sort_keys=False))
    return 0


def _resources(args: argparse.Namespace) -> list[str] | None:
    return [r.strip() for r in (args.resources or "").split(",") if r.strip()] or None


def run_syncer(args: argparse.Namespace) -> int:
    from ..fleet.cluster.pull import PullSyncer
    from ..kube.client import ClientBuildError
    from ..kube.entrypoint import run_until_signalled
    from ..kube.kubeconfig import KubeconfigError

    if not args.hub_kubeconfig or not args.cluster:
        print("fleetplane syncer: error: --cluster and --hub-kubeconfig (or $FLEETPLANE_HUB_KUBECONFIG) are required",
              file=sys.stderr)
        return 2
    try:
        syncer = PullSyncer(hub_kubeconfig=args.hub_kubeconfig, hub_context=args.hub_context, cluster=args.cluster,
                            namespace=args.namespace, logical_cluster=args.logical_cluster,
                            cluster_kubeconfig=args.cluster_kubeconfig, cluster_context=args.cluster_context,
                            resources=_resources(args), interval=args.interval, lease_duration=args.lease_duration,
                            details_interval=args.details_interval, poll_interval=args.poll_interval,
                            identity=args.identity)
    except (KubeconfigError, ClientBuildError) as exc:
        print(f"fleetplane syncer: error: {exc}", file=sys.stderr)
        return 2

    run_until_signalled(syncer.run)
    return 0
