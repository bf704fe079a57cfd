"""An example operator on fleetplane.multicluster: keep a ConfigMap in every healthy cluster of a
ClusterSet.

The ClusterSet is the ClusterProfiles of one hub namespace (KEP-4322's inventory), optionally
narrowed by the ``multicluster.x-k8s.io/clusterset`` label. Each healthy profile's cluster is
engaged with credentials from the provider file; the operator applies the ConfigMap there as soon
as the cluster's informer is synced, puts it back when someone deletes or edits it, and stops
touching a cluster whose profile turns unhealthy or goes away (what it wrote stays).

    python examples/configmap_everywhere.py --kubeconfig hub.kubeconfig --namespace fleet \\
        --clusterprofile-provider-file providers.json --data owner=team-a --metrics-port 9090

Hub RBAC it needs: list/watch ``clusterprofiles`` in ``--namespace``; with ``--leader-elect``
get/create/update ``leases`` there; whatever the access provider's plugin needs (the shipped
secret reader: get ``secrets``). In each member cluster: list/watch/patch ``configmaps`` in
``--target-namespace``.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path

from prometheus_client import start_http_server

from fleetplane.access import Config, add_provider_file_flag
from fleetplane.inventory import LABEL_CLUSTERSET
from fleetplane.kube.client import Client
from fleetplane.kube.entrypoint import run_until_signalled
from fleetplane.kube.kubeconfig import ApiTarget
from fleetplane.kube.leaderelection import LeaderElectionConfig
from fleetplane.multicluster import Cluster, Manager

NAME = "configmap-everywhere"
MANAGED_BY = "app.kubernetes.io/managed-by"

log = logging.getLogger(NAME)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=NAME, description="Keep a ConfigMap in every healthy cluster of a ClusterSet.")
    p.add_argument("--kubeconfig", required=True, type=Path, help="the hub (its logical cluster with the profiles)")
    p.add_argument("--namespace", required=True, help="the hub namespace whose ClusterProfiles form the ClusterSet")
    p.add_argument("--clusterset", help=f"only profiles labelled {LABEL_CLUSTERSET}=NAME")
    add_provider_file_flag(p)
    p.add_argument("--target-namespace", default="default", help="where the ConfigMap goes in each cluster")
    p.add_argument("--name", default="fleet-info", help="the ConfigMap's name")
    p.add_argument("--data", action="append", default=[], metavar="KEY=VALUE", help="a data entry (repeatable)")
    p.add_argument("--leader-elect", action="store_true", help="run only while holding the Lease in --namespace")
    p.add_argument("--metrics-port", type=int, default=0, help="serve Prometheus metrics on this port (0: off)")
    args = p.parse_args(argv)
    bad = [d for d in args.data if "=" not in d]
    if bad:
        p.error(f"--data wants KEY=VALUE, got {bad[0]!r}")
    return args


def build(args: argparse.Namespace, hub: Client) -> Manager:
    access = Config.from_file(args.clusterprofile_provider_file)
    selector = f"{LABEL_CLUSTERSET}={args.clusterset}" if args.clusterset else None
    election = LeaderElectionConfig(NAME, namespace=args.namespace) if args.leader_elect else None
    mgr = Manager(hub, access, name=NAME.replace("-", "_"), namespace=args.namespace, label_selector=selector,
                  leader_election=election)
    ns, name = args.target_namespace, args.name
    path = f"/api/v1/namespaces/{ns}/configmaps"
    data = dict(d.split("=", 1) for d in args.data)
    mgr.watch(path, label_selector=f"{MANAGED_BY}={NAME}")

    @mgr.on_engage
    def engaged(cluster: Cluster) -> None:
        mgr.enqueue(cluster.name, (ns, name))  # the ConfigMap may not exist there yet

    @mgr.reconcile
    async def reconcile(cluster: Cluster, key: tuple[str, str]) -> None:
        if key != (ns, name):
            return  # another ConfigMap of ours (an older --name): left alone
        want = {**data, "clusterProfile": cluster.name}
        have = cluster.get(path, key)
        if have is not None and have.get("data") == want:
            return
        await cluster.client.apply(f"{path}/{name}", {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns, "labels": {MANAGED_BY: NAME}}, "data": want}, manager=NAME)
        log.info("applied ConfigMap %s/%s in cluster %s", ns, name, cluster.name)

    return mgr


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.metrics_port:
        start_http_server(args.metrics_port, addr="127.0.0.1")

    async def run() -> None:
        hub = Client(ApiTarget.from_kubeconfig(args.kubeconfig), NAME, name="hub")
        try:
            await build(args, hub).run()
        finally:
            await hub.close()

    run_until_signalled(run)


if __name__ == "__main__":
    main()
