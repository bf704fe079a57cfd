"""The ``fleetplane`` command line."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..controllermanager import MODES as CONTROLLER_MODES
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
from ..memory import tune_malloc
from .cluster import add_parser as add_cluster_parser
from .cluster import comma_separated
from .inventory import add_parser as add_inventory_parser
from .kubeconfig import add_parser as add_kubeconfig_parser
from .placement import add_parser as add_placement_parser
from .rollout import add_parser as add_rollout_parser
from .storage import add_parser as add_storage_parser
from .syncer import add_parser as add_syncer_parser

if TYPE_CHECKING:
    from ..plugin import Plugin


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

def plugins_from_args(args: argparse.Namespace) -> list[Plugin]:
    """The one place that turns ``fleetplane start``'s flags into plugins: the server builds its
    API from them, the controller-manager (given the same flags) its controllers."""
    from ..fleet.plugin import FleetPlugin
    from ..inventory.plugin import InventoryPlugin

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
    return [fleet] if args.no_cluster_profiles else [fleet, InventoryPlugin()]


def _controller_manager_command(args: argparse.Namespace) -> tuple[str, ...]:
    """The controller-manager's command line: this interpreter, the same logging flags and the
    same ``start`` flags (so :func:`plugins_from_args` builds the same plugins there); the hub
    adds each controller's ``--controller-kubeconfig``."""
    argv: list[str] = args.argv
    flags = argv[argv.index("start") + 1:]  # the global flags before it take choices, never "start"
    return (sys.executable, "-m", "fleetplane.cli.main", "--log-level", args.log_level, "--log-format",
            args.log_format, "controller-manager", "--lifeline", *flags)


def _start(args: argparse.Namespace) -> int:
    from ..hub import HubConfig, run_hub

    if args.controller_manager_shards > 1 and args.controllers != "separate":
        raise SystemExit("--controller-manager-shards: the shards are controller-manager processes; "
                         f"it needs --controllers=separate, not {args.controllers}")

    storage = _storage_url(args)
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
                      max_mutating_requests_inflight=args.max_mutating_requests_inflight,
                      controllers=args.controllers,
                      controller_manager_command=(_controller_manager_command(args)
                                                  if args.controllers == "separate" else ()),
                      controller_manager_shards=args.controller_manager_shards),
            plugins_from_args(args))
    return 0


def _controller_kubeconfigs(pairs: list[str]) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or not name or not path:
            raise SystemExit(f"--controller-kubeconfig: want NAME=PATH, got {pair!r}")
        out[name] = Path(path)
    return out


#: where the controller-manager writes the address its metrics are served on (in the data dir)
METRICS_ADDRESS_FILE = "controller-manager-metrics-address"


def metrics_address_file(shard: int = 0) -> str:
    """Where shard ``shard`` writes its metrics address (the first: :data:`METRICS_ADDRESS_FILE`)."""
    return METRICS_ADDRESS_FILE if shard == 0 else f"controller-manager-{shard}-metrics-address"


def _shard_count(text: str) -> int:
    """A number of controller-manager shards: 1 to MAX_SHARDS (the Cluster controller's RBAC names
    each shard's Lease), for ``start --controller-manager-shards`` and ``controller-manager --shards`` alike."""
    from ..fleet.cluster.options import MAX_SHARDS

    n = int(text)
    if not 1 <= n <= MAX_SHARDS:
        raise argparse.ArgumentTypeError(f"want 1 to {MAX_SHARDS}, not {text}")
    return n


def _controller_manager(args: argparse.Namespace) -> int:
    from ..controllermanager import main as run_controller_manager
    from ..plugin import contributions_of

    controllers = contributions_of(plugins_from_args(args)).controllers
    kubeconfigs = _controller_kubeconfigs(args.controller_kubeconfig or [])
    if args.kubeconfig:
        kubeconfigs = {c.name: kubeconfigs.get(c.name, Path(args.kubeconfig)) for c in controllers}
    data_dir = Path(args.data_dir)
    return run_controller_manager(controllers, kubeconfigs, metrics_address=args.metrics_bind_address,
                                  address_file=data_dir / metrics_address_file(args.shard) if data_dir.is_dir() else None,
                                  lifeline=args.lifeline, shard=args.shard, shards=args.shards)


def _add_server_arguments(p: argparse.ArgumentParser) -> list[argparse.Action]:
    """``start``'s flags for the server (the controller-manager accepts them too, hidden, so the
    hub passes its own command line on as it is)."""
    actions: list[argparse.Action] = []

    def add(*names: str, **kwargs: Any) -> None:
        actions.append(p.add_argument(*names, **kwargs))

    add("--data-dir", default=".fleetplane", help="where the database, PKI and kubeconfig live")
    add("--bind", default="127.0.0.1")
    add("--port", type=int, default=6443)
    add("--insecure-http", action="store_true", help="serve plain HTTP instead of HTTPS (tests, local tools)")
    add("--no-auth", action="store_true", help="serve every request unauthenticated and unauthorized (local experiments only)")
    add("--token-auth-file", metavar="FILE", help='static bearer tokens, kube\'s CSV format: token,user,uid[,"group1,group2"]')
    add("--authentication-config", metavar="FILE",
                       help="JWT (OIDC) authenticators and anonymous access, kube's AuthenticationConfiguration format")
    add("--anonymous-auth", default=True, action=argparse.BooleanOptionalAction,
                       help="requests without credentials are system:anonymous, which RBAC grants only the "
                            "public-info paths (/healthz, /livez, /readyz, /version); --no-anonymous-auth refuses them with 401")
    add("--service-account-issuer", metavar="URL",
                       help="base of each logical cluster's token issuer, <URL>/clusters/<name> (default: this hub's "
                            "URL); replicas behind one address must share it")
    add("--service-account-max-token-expiration", type=float, default=86400.0, metavar="SECONDS",
                       help="the longest a TokenRequest token may live")
    add("--encryption-provider-config", metavar="FILE",
                       help="encrypt resources (Secrets) at rest: kube's EncryptionConfiguration format (aesgcm, aescbc, secretbox, identity)")
    add("--audit-log-path", metavar="FILE", help="write audit.k8s.io/v1 Events as JSON lines here")
    add("--audit-policy-file", metavar="FILE", help="which requests to audit at which level (audit.k8s.io/v1 Policy)")
    add("--disable-admission-plugins", type=comma_separated, default=(), metavar="NAME,...",
                       help="admission plugins to turn off, as kube-apiserver's flag")
    add("--webhook-service-host", action="append", metavar="NAME.NAMESPACE.svc=HOST",
                       help="where a webhook clientConfig.service reference is dialled (repeatable; else DNS for the .svc name)")
    add("--enable-priority-and-fairness", default=True, action=argparse.BooleanOptionalAction,
                       help="API Priority and Fairness: classify requests by the root logical cluster's FlowSchemas, "
                            "queue them fairly per tenant and user, 429 when a priority level's queues are full")
    add("--max-requests-inflight", type=int, default=40, metavar="N",
                       help="with --max-mutating-requests-inflight, the seats flow control shares among priority levels")
    add("--max-mutating-requests-inflight", type=int, default=20, metavar="N",
                       help="added to --max-requests-inflight for flow control's total seats (kube's meaning)")
    add("--kubeconfig-cluster", action="append", metavar="NAME",
                       help="add a context for this logical cluster to admin.kubeconfig (repeatable; root is always there)")
    add("--watch-bookmark-interval", type=float, default=60.0, metavar="SECONDS",
                       help="how often watches that allow bookmarks get one (kube: about every minute)")
    add("--history-retention", type=float, default=300.0, metavar="SECONDS",
                       help="how long the store keeps history for watches to resume from before compacting it")
    add("--no-cluster-profiles", action="store_true",
                       help="do not serve the ClusterProfile API (KEP-4322) in every logical cluster")
    add("--storage", default="sqlite", metavar="sqlite|etcd|URL",
                       help="sqlite (a file in the data dir; the default), etcd (with --etcd-endpoints), or a store URL")
    add("--etcd-endpoints", metavar="URL[,URL...]", help="etcd members, e.g. https://10.0.0.1:2379,https://10.0.0.2:2379")
    add("--etcd-cacert", metavar="FILE", help="CA bundle that signed the etcd members' certificates")
    add("--etcd-cert", metavar="FILE", help="client certificate for etcd (mutual TLS)")
    add("--etcd-key", metavar="FILE", help="key of the etcd client certificate")
    add("--etcd-request-timeout", type=float, default=5.0, metavar="SECONDS",
                       help="how long one etcd request may take before the API answers 504")
    add("--request-header-timeout", type=float, default=32.0, metavar="SECONDS",
                       help="close a connection whose request headers are not complete within this (kube: 32 s)")
    add("--idle-timeout", type=float, default=90.0, metavar="SECONDS",
                       help="close a kept-alive connection that sends no request within this (kube: 90 s)")
    add("--max-connections", type=int, default=10000, metavar="N",
                       help="open connections in all; more are answered 503 and closed (0: as many as file descriptors allow)")
    add("--max-connections-per-client", type=int, default=2000, metavar="N",
                       help="open connections from one client address; more are answered 429 and closed (0: no cap)")
    add("--max-requests-per-connection", type=int, default=1000, metavar="N",
                       help="requests on one kept-alive connection before the server closes it (0: no limit)")
    return actions


def _add_controller_arguments(p: argparse.ArgumentParser, where: bool = True) -> None:
    """``start``'s flags for the controllers: where (accepted, hidden, by the controller-manager),
    which run, with which options."""
    p.add_argument("--controllers", choices=CONTROLLER_MODES, default="separate",
                   help=argparse.SUPPRESS if not where else"where the controllers run: separate (a controller-manager process beside the server, "
                        "started once it serves, restarted if it exits, stopped before it stops; the default), "
                        "in-process (the server's own event loop) or none (run `fleetplane controller-manager` "
                        "with the same flags yourself)")
    p.add_argument("--controller-manager-shards", type=_shard_count, default=1, metavar="N",
                   help=argparse.SUPPRESS if not where else "with --controllers=separate: run N controller-manager "
                        "processes; the Clusters (and their Syncers) are divided among them by a hash of logical "
                        "cluster and name, the other controllers run in the first (default 1). Each process has "
                        "its own open-files limit and core")
    p.add_argument("--no-cluster-controller", action="store_true",
                       help="do not run the Cluster controller (the Cluster API is still served)")
    add_arguments(p, ClusterControllerOptions, prefix="cluster-", only=CLUSTER_START_FLAGS)
    p.add_argument("--no-splitter", action="store_true",
                       help="do not run the Deployment splitter and ClusterDaemonSet controller")
    add_arguments(p, SplitterOptions, prefix="splitter-", only=SPLITTER_START_FLAGS)
    p.add_argument("--no-service-controller", action="store_true",
                       help="do not run the Service controller (Services on the hub go to their workloads' clusters)")
    add_arguments(p, ServiceControllerOptions, prefix="service-controller-", only=SERVICE_CONTROLLER_START_FLAGS)
    p.add_argument("--no-hpa-controller", action="store_true",
                       help="do not run the HorizontalPodAutoscaler controller (HPAs on split Deployments; "
                            "it does not run with --no-splitter either)")
    add_arguments(p, HPAControllerOptions, prefix="hpa-", only=HPA_START_FLAGS)
    p.add_argument("--no-cronjob-controller", action="store_true",
                       help="do not run the fleet-wide CronJob controller (CronJobs on the hub then do not fire)")
    add_arguments(p, CronJobOptions, prefix="cronjob-", only=CRONJOB_START_FLAGS)
    p.add_argument("--no-placement-decisions", action="store_true",
                       help="do not publish PlacementDecisions (multicluster.x-k8s.io) for split workloads")
    add_arguments(p, DecisionPublisherOptions, prefix="placement-decisions-", only=DECISIONS_START_FLAGS)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fleetplane", description="A multi-cluster Kubernetes control plane.")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.add_argument("--log-format", default="json", choices=["json", "console"])
    sub = p.add_subparsers(dest="command", required=True)
    start = sub.add_parser("start", help="run the hub API server")
    _add_server_arguments(start)
    _add_controller_arguments(start)
    start.set_defaults(func=_start, component="hub")
    manager = sub.add_parser(
        "controller-manager", help="run the hub's controllers (what `fleetplane start` runs beside its server)",
        description="Run the hub's controllers (Cluster controller and Syncers, splitter, HPA, CronJob and Service "
                    "controllers, PlacementDecision publisher) in a process of their own, as kube-controller-manager. "
                    "`fleetplane start` runs it itself; run it by hand with `fleetplane start --controllers=none` "
                    "and the same flags. It takes `fleetplane start`'s flags (those of the server are accepted "
                    "and ignored) and talks to the hub only through its API, each controller as its own identity.")
    for action in _add_server_arguments(manager):
        if action.dest not in ("data_dir", "no_cluster_profiles"):
            action.help = argparse.SUPPRESS
    _add_controller_arguments(manager, where=False)
    manager.add_argument("--controller-kubeconfig", action="append", metavar="NAME=PATH",
                         help="the kubeconfig controller NAME uses (repeatable; `fleetplane start` passes the one it "
                              "wrote for each controller's identity, <data-dir>/identities/<identity>.kubeconfig)")
    manager.add_argument("--kubeconfig", metavar="PATH",
                         help="the kubeconfig of every controller --controller-kubeconfig does not name "
                              "(e.g. the hub's admin.kubeconfig)")
    manager.add_argument("--metrics-bind-address", default="127.0.0.1:0", metavar="HOST:PORT",
                         help="serve the process's Prometheus metrics over HTTP here (port 0: any free port; the "
                              "address is written to <data-dir>/" + METRICS_ADDRESS_FILE + "; '' not to serve them)")
    manager.add_argument("--shard", type=int, default=0, metavar="I",
                         help="this process is shard I (from 0) of --shards: it reconciles the Clusters that hash to "
                              "it, and runs the controllers that are not sharded only if I is 0")
    manager.add_argument("--shards", type=_shard_count, default=1, metavar="N",
                         help="how many controller-manager processes share the Clusters (default 1)")
    manager.add_argument("--lifeline", action="store_true", help=argparse.SUPPRESS)  # stop when stdin closes
    manager.set_defaults(func=_controller_manager, component="controller-manager")
    add_inventory_parser(sub)
    add_storage_parser(sub)
    add_kubeconfig_parser(sub)
    add_cluster_parser(sub)
    add_syncer_parser(sub)
    add_placement_parser(sub)
    add_rollout_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    tune_malloc()  # before the servers' and clients' connections exist (fleetplane/memory.py)
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser().parse_args(argv)
    args.argv = argv
    configure_logging(args.log_level, args.log_format, getattr(args, "component", None))
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
