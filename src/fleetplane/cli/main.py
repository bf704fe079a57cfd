"""The ``fleetplane`` command line."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from ..fleet.cluster.options import START_FLAGS as CLUSTER_START_FLAGS
from ..fleet.cluster.options import ClusterControllerOptions
from ..fleet.cronjobs.options import START_FLAGS as CRONJOB_START_FLAGS
from ..fleet.cronjobs.options import CronJobOptions
from ..fleet.decisions.options import START_FLAGS as DECISIONS_START_FLAGS
from ..fleet.decisions.options import DecisionPublisherOptions
from ..fleet.hpas.options import START_FLAGS as HPA_START_FLAGS
from ..fleet.hpas.options import HPAControllerOptions
from ..fleet.services.options import START_FLAGS as SERVICE_CONTROLLER_START_FLAGS
from ..fleet.services.options import ServiceControllerOptions
from ..fleet.splitter.options import START_FLAGS as SPLITTER_START_FLAGS
from ..fleet.splitter.options import SplitterOptions
from ..kube.options import add_arguments, from_args
from ..logs import configure_logging
from .cluster import add_parser as add_cluster_parser
from .cluster import comma_separated
from .inventory import add_parser as add_inventory_parser
from .kubeconfig import add_parser as add_kubeconfig_parser
from .placement import add_parser as add_placement_parser
from .rollout import add_parser as add_rollout_parser
from .storage import add_parser as add_storage_parser
from .syncer import add_parser as add_syncer_parser


def _storage_url(args: argparse.Namespace) -> str:
    """--storage sqlite|etcd (with --etcd-endpoints), or a store URL (sqlite:PATH, etcd:URL,...)."""
    if args.storage == "sqlite":
        return ""
    if args.storage == "etcd":
        if not args.etcd_endpoints:
            raise ValueError("--storage etcd needs --etcd-endpoints URL[,URL...]")
        return f"etcd:{args.etcd_endpoints}"
    if args.storage.startswith(("sqlite:", "etcd:")):
        return args.storage
    raise ValueError(f"--storage: want sqlite, etcd or a store URL, not {args.storage!r}")



def _service_hosts(pairs: list[str]) -> dict[str, str]:
    """``--webhook-service-host name.namespace.svc=host`` flags as a map."""
    hosts: dict[str, str] = {}
    for pair in pairs:
        name, sep, host = pair.partition("=")
        if not sep or not name.endswith(".svc") or name.count(".") != 2 or not host:
            raise SystemExit(f"--webhook-service-host: want NAME.NAMESPACE.svc=HOST, got {pair!r}")
        hosts[name] = host
    return hosts

def _start(args: argparse.Namespace) -> int:
    from ..fleet.plugin import FleetPlugin
    from ..hub import HubConfig, Plugin, run_hub
    from ..inventory.plugin import InventoryPlugin

    storage = _storage_url(args)
    fleet = FleetPlugin(
        cluster_controller=None if args.no_cluster_controller else from_args(
            ClusterControllerOptions, args, prefix="cluster-", only=CLUSTER_START_FLAGS,
            cluster_profiles=not args.no_cluster_profiles),
        splitter=None if args.no_splitter else from_args(
            SplitterOptions, args, prefix="splitter-", only=SPLITTER_START_FLAGS),
        service_controller=None if args.no_service_controller else from_args(
            ServiceControllerOptions, args, prefix="service-controller-", only=SERVICE_CONTROLLER_START_FLAGS),
        hpa_controller=None if args.no_hpa_controller or args.no_splitter else from_args(
            HPAControllerOptions, args, prefix="hpa-", only=HPA_START_FLAGS),
        cronjobs=None if args.no_cronjob_controller else from_args(
            CronJobOptions, args, prefix="cronjob-", only=CRONJOB_START_FLAGS),
        placement_decisions=None if args.no_placement_decisions or args.no_splitter else from_args(
            DecisionPublisherOptions, args, prefix="placement-decisions-", only=DECISIONS_START_FLAGS))
    plugins: list[Plugin] = [fleet] if args.no_cluster_profiles else [fleet, InventoryPlugin()]
    run_hub(HubConfig(data_dir=Path(args.data_dir), bind=args.bind, port=args.port, tls=not args.insecure_http,
                      auth=not args.no_auth,
                      kubeconfig_clusters=list(dict.fromkeys(["root", *(args.kubeconfig_cluster or [])])),
                      bookmark_interval=args.watch_bookmark_interval, history_retention=args.history_retention,
                      storage=storage, etcd_cacert=args.etcd_cacert, etcd_cert=args.etcd_cert, etcd_key=args.etcd_key,
                      etcd_request_timeout=args.etcd_request_timeout, token_auth_file=args.token_auth_file,
                      authentication_config=args.authentication_config, anonymous_auth=args.anonymous_auth,
                      service_account_max_token_expiration=args.service_account_max_token_expiration,
                      service_account_issuer=args.service_account_issuer,
                      encryption_provider_config=args.encryption_provider_config,
                      audit_log_path=args.audit_log_path, audit_policy_file=args.audit_policy_file,
                      disable_admission_plugins=args.disable_admission_plugins,
                      webhook_service_hosts=_service_hosts(args.webhook_service_host or []),
                      request_header_timeout=args.request_header_timeout, idle_timeout=args.idle_timeout,
                      max_connections=args.max_connections, max_connections_per_client=args.max_connections_per_client,
                      max_requests_per_connection=args.max_requests_per_connection,
                      enable_priority_and_fairness=args.enable_priority_and_fairness,
                      max_requests_inflight=args.max_requests_inflight,
                      max_mutating_requests_inflight=args.max_mutating_requests_inflight),
            plugins)
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fleetplane", description="A multi-cluster Kubernetes control plane.")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.add_argument("--log-format", default="json", choices=["json", "console"])
    sub = p.add_subparsers(dest="command", required=True)
    start = sub.add_parser("start", help="run the hub API server")
    start.add_argument("--data-dir", default=".fleetplane", help="where the database, PKI and kubeconfig live")
    start.add_argument("--bind", default="127.0.0.1")
    start.add_argument("--port", type=int, default=6443)
    start.add_argument("--insecure-http", action="store_true", help="serve plain HTTP instead of HTTPS (tests, local tools)")
    start.add_argument("--no-auth", action="store_true", help="serve every request unauthenticated and unauthorized (local experiments only)")
    start.add_argument("--token-auth-file", metavar="FILE", help='static bearer tokens, kube\'s CSV format: token,user,uid[,"group1,group2"]')
    start.add_argument("--authentication-config", metavar="FILE",
                       help="JWT (OIDC) authenticators and anonymous access, kube's AuthenticationConfiguration format")
    start.add_argument("--anonymous-auth", default=True, action=argparse.BooleanOptionalAction,
                       help="requests without credentials are system:anonymous, which RBAC grants only the "
                            "public-info paths (/healthz, /livez, /readyz, /version); --no-anonymous-auth refuses them with 401")
    start.add_argument("--service-account-issuer", metavar="URL",
                       help="base of each logical cluster's token issuer, <URL>/clusters/<name> (default: this hub's "
                            "URL); replicas behind one address must share it")
    start.add_argument("--service-account-max-token-expiration", type=float, default=86400.0, metavar="SECONDS",
                       help="the longest a TokenRequest token may live")
    start.add_argument("--encryption-provider-config", metavar="FILE",
                       help="encrypt resources (Secrets) at rest: kube's EncryptionConfiguration format (aesgcm, aescbc, secretbox, identity)")
    start.add_argument("--audit-log-path", metavar="FILE", help="write audit.k8s.io/v1 Events as JSON lines here")
    start.add_argument("--audit-policy-file", metavar="FILE", help="which requests to audit at which level (audit.k8s.io/v1 Policy)")
    start.add_argument("--disable-admission-plugins", type=comma_separated, default=(), metavar="NAME,...",
                       help="admission plugins to turn off, as kube-apiserver's flag")
    start.add_argument("--webhook-service-host", action="append", metavar="NAME.NAMESPACE.svc=HOST",
                       help="where a webhook clientConfig.service reference is dialled (repeatable; else DNS for the .svc name)")
    start.add_argument("--enable-priority-and-fairness", default=True, action=argparse.BooleanOptionalAction,
                       help="API Priority and Fairness: classify requests by the root logical cluster's FlowSchemas, "
                            "queue them fairly per tenant and user, 429 when a priority level's queues are full")
    start.add_argument("--max-requests-inflight", type=int, default=40, metavar="N",
                       help="with --max-mutating-requests-inflight, the seats flow control shares among priority levels")
    start.add_argument("--max-mutating-requests-inflight", type=int, default=20, metavar="N",
                       help="added to --max-requests-inflight for flow control's total seats (kube's meaning)")
    start.add_argument("--kubeconfig-cluster", action="append", metavar="NAME",
                       help="add a context for this logical cluster to admin.kubeconfig (repeatable; root is always there)")
    start.add_argument("--watch-bookmark-interval", type=float, default=60.0, metavar="SECONDS",
                       help="how often watches that allow bookmarks get one (kube: about every minute)")
    start.add_argument("--history-retention", type=float, default=300.0, metavar="SECONDS",
                       help="how long the store keeps history for watches to resume from before compacting it")
    start.add_argument("--no-cluster-profiles", action="store_true",
                       help="do not serve the ClusterProfile API (KEP-4322) in every logical cluster")
    start.add_argument("--storage", default="sqlite", metavar="sqlite|etcd|URL",
                       help="sqlite (a file in the data dir; the default), etcd (with --etcd-endpoints), or a store URL")
    start.add_argument("--etcd-endpoints", metavar="URL[,URL...]", help="etcd members, e.g. https://10.0.0.1:2379,https://10.0.0.2:2379")
    start.add_argument("--etcd-cacert", metavar="FILE", help="CA bundle that signed the etcd members' certificates")
    start.add_argument("--etcd-cert", metavar="FILE", help="client certificate for etcd (mutual TLS)")
    start.add_argument("--etcd-key", metavar="FILE", help="key of the etcd client certificate")
    start.add_argument("--etcd-request-timeout", type=float, default=5.0, metavar="SECONDS",
                       help="how long one etcd request may take before the API answers 504")
    start.add_argument("--request-header-timeout", type=float, default=32.0, metavar="SECONDS",
                       help="close a connection whose request headers are not complete within this (kube: 32 s)")
    start.add_argument("--idle-timeout", type=float, default=90.0, metavar="SECONDS",
                       help="close a kept-alive connection that sends no request within this (kube: 90 s)")
    start.add_argument("--max-connections", type=int, default=10000, metavar="N",
                       help="open connections in all; more are answered 503 and closed (0: as many as file descriptors allow)")
    start.add_argument("--max-connections-per-client", type=int, default=2000, metavar="N",
                       help="open connections from one client address; more are answered 429 and closed (0: no cap)")
    start.add_argument("--max-requests-per-connection", type=int, default=1000, metavar="N",
                       help="requests on one kept-alive connection before the server closes it (0: no limit)")
    start.add_argument("--no-cluster-controller", action="store_true",
                       help="do not run the Cluster controller (the Cluster API is still served)")
    add_arguments(start, ClusterControllerOptions, prefix="cluster-", only=CLUSTER_START_FLAGS)
    start.add_argument("--no-splitter", action="store_true",
                       help="do not run the Deployment splitter and ClusterDaemonSet controller")
    add_arguments(start, SplitterOptions, prefix="splitter-", only=SPLITTER_START_FLAGS)
    start.add_argument("--no-service-controller", action="store_true",
                       help="do not run the Service controller (Services on the hub go to their workloads' clusters)")
    add_arguments(start, ServiceControllerOptions, prefix="service-controller-", only=SERVICE_CONTROLLER_START_FLAGS)
    start.add_argument("--no-hpa-controller", action="store_true",
                       help="do not run the HorizontalPodAutoscaler controller (HPAs on split Deployments; "
                            "it does not run with --no-splitter either)")
    add_arguments(start, HPAControllerOptions, prefix="hpa-", only=HPA_START_FLAGS)
    start.add_argument("--no-cronjob-controller", action="store_true",
                       help="do not run the fleet-wide CronJob controller (CronJobs on the hub then do not fire)")
    add_arguments(start, CronJobOptions, prefix="cronjob-", only=CRONJOB_START_FLAGS)
    start.add_argument("--no-placement-decisions", action="store_true",
                       help="do not publish PlacementDecisions (multicluster.x-k8s.io) for split workloads")
    add_arguments(start, DecisionPublisherOptions, prefix="placement-decisions-", only=DECISIONS_START_FLAGS)
    start.set_defaults(func=_start)
    add_inventory_parser(sub)
    add_storage_parser(sub)
    add_kubeconfig_parser(sub)
    add_cluster_parser(sub)
    add_syncer_parser(sub)
    add_placement_parser(sub)
    add_rollout_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    configure_logging(args.log_level, args.log_format)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a clear one-line error rather than a traceback
        logging.getLogger("fleetplane").debug("command failed", exc_info=True)
        print(f"fleetplane: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
