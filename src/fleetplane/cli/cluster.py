"""``fleetplane cluster``: simulated physical clusters.

``fleetplane cluster simulate --name NAME [--data-dir D] [--port P] [--nodes N] [--node-cpu C
--node-memory M --node-pods K] [--labels k=v,...] [--kubelet-delay S] [--hpa-sync-period S]
[--hpa-downscale-stabilization S] [--service-cluster-ip-range CIDR] [--service-node-port-range LO-HI]
[--load-balancer-pool CIDR] [--insecure-http] [--count N [--first-index I]]`` serves a cluster that behaves like a real
one to a client (Deployments, ReplicaSets, DaemonSets, StatefulSets, HorizontalPodAutoscalers,
Pods, Nodes, PersistentVolumeClaims, Services, EndpointSlices and their controllers, a scheduler,
a toy volume provisioner, a simulated load balancer and simulated kubelets), in the spirit of KWOK. See docs/sim.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..apimachinery.validation import DNS1123_LABEL


def _name(value: str) -> str:
    if len(value) > 40 or not DNS1123_LABEL.match(value):
        raise argparse.ArgumentTypeError(
            f"invalid cluster name {value!r}: a lowercase RFC 1123 label of at most 40 characters (it prefixes node names)")
    return value


def _name_or_pattern(value: str) -> str:
    """A cluster name, or with ``--count`` a pattern: ``{i}`` (a format field such as ``{i:04d}``)
    is each cluster's index; the names it makes are checked once the count is known."""
    if "{" not in value:
        return _name(value)
    try:
        _name(value.format(i=0))
    except (KeyError, IndexError, ValueError) as exc:
        raise argparse.ArgumentTypeError(f"invalid cluster name pattern {value!r}: {exc}") from None
    return value


def _quantity(value: str) -> str:
    from ..apimachinery.quantity import QuantityError, parse_quantity

    try:
        if parse_quantity(value) <= 0:
            raise QuantityError
    except QuantityError:
        raise argparse.ArgumentTypeError(f"invalid quantity {value!r} (e.g. 4, 500m, 16Gi)") from None
    return value


def _positive_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number {value!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {n}")
    return n


def _labels(value: str) -> dict[str, str]:
    from ..apimachinery.validation import label_value_error, qualified_name_error

    out: dict[str, str] = {}
    for part in (p.strip() for p in value.split(",")):
        if not part:
            continue
        key, sep, val = part.partition("=")
        if not sep:
            raise argparse.ArgumentTypeError(f"invalid label {part!r}: expected key=value")
        why = qualified_name_error(key) or label_value_error(val)
        if why:
            raise argparse.ArgumentTypeError(f"invalid label {part!r}: {why}")
        out[key] = val
    return out


def member_names(pattern: str, count: int, first: int = 0) -> list[str]:
    """``count`` cluster names from ``pattern``: ``{i}`` in it is the index (a format field, e.g.
    ``eu-{i:04d}``), else the index is appended (``eu`` -> ``eu-0``, ``eu-1``, ...)."""
    fmt = pattern if "{" in pattern else pattern + "-{i}"
    return [fmt.format(i=i) for i in range(first, first + count)]


def comma_separated(value: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in value.split(",") if n.strip())


def _seconds(value: str) -> float:
    try:
        s = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number of seconds {value!r}") from None
    if s < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return s


def _cidr(value: str) -> str:
    import ipaddress

    try:
        net = ipaddress.ip_network(value, strict=False)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid CIDR {value!r} (e.g. 10.96.0.0/16)") from None
    if net.version != 4 or net.num_addresses < 4:
        raise argparse.ArgumentTypeError(f"invalid CIDR {value!r}: an IPv4 range of at least 4 addresses")
    return str(net)


def _port_range(value: str) -> tuple[int, int]:
    lo, sep, hi = value.partition("-")
    try:
        low, high = int(lo), int(hi)
    except ValueError:
        low = high = 0
    if not sep or not 1 <= low <= high <= 65535:
        raise argparse.ArgumentTypeError(f"invalid port range {value!r} (e.g. 30000-32767)")
    return low, high


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``cluster`` (with its ``simulate`` subcommand) on the ``fleetplane`` subparsers."""
    cluster = subparsers.add_parser("cluster", help="simulated physical clusters",
                                    description="Simulated physical Kubernetes clusters.")
    sub = cluster.add_subparsers(dest="cluster_command", required=True)
    sim = sub.add_parser(
        "simulate", help="run a simulated physical cluster (Deployments, DaemonSets, StatefulSets, Pods, Nodes, "
                         "PersistentVolumeClaims, Services, scheduler, kubelets)",
        description="Run a simulated physical cluster that behaves like a real one to a client, in the spirit of "
                    "KWOK: the hub's API server with apps/v1 Deployments, ReplicaSets, DaemonSets and StatefulSets, "
                    "autoscaling/v2 (and v1) HorizontalPodAutoscalers, batch/v1 Jobs and CronJobs and core/v1 Pods, "
                    "Nodes and PersistentVolumeClaims, a Deployment, a ReplicaSet, an HPA, a Job and a CronJob "
                    "controller, a scheduler and simulated kubelets. The DaemonSet controller runs one pod per node matching "
                    "the template's node selector and affinity and tolerating its taints (bound through node "
                    "affinity by the scheduler) and rolls updates within maxUnavailable/maxSurge; the StatefulSet "
                    "controller creates pods <name>-<ordinal> from spec.ordinals.start in order (OrderedReady: "
                    "each Ready for minReadySeconds before the next; or Parallel), scales down and rolls updates from the highest "
                    "ordinal, and creates claims <template>-<name>-<ordinal> from volumeClaimTemplates, kept or "
                    "deleted per the retention policy; a toy provisioner binds every PersistentVolumeClaim at once "
                    "(volumeName pvc-<uid>, capacity = request, no PersistentVolume objects) and holds a deleted "
                    "claim (pvc-protection finalizer) while a pod uses it. Jobs and CronJobs run as kube's, "
                    "simplified: a pod finishes when its run time is known, from the annotation "
                    "sim.fleetplane.io/run-seconds or its containers' command and args ('sleep N', "
                    "'sh -c \"sleep N\"', 'exit N'), with exit code 0 or the annotation "
                    "sim.fleetplane.io/exit-code; other pods run forever. "
                    "Services get cluster IPs and node ports from the server as kube-apiserver allocates them; "
                    "an EndpointSlice controller keeps one discovery.k8s.io/v1 EndpointSlice per Service with a "
                    "selector (the matching Pods' IPs, targetPorts resolved, Ready as the Pods are); a simulated "
                    "load balancer gives LoadBalancer Services an ingress IP from a pool. It "
                    "writes <data-dir>/admin.kubeconfig and keeps its state in <data-dir>.")
    sim.add_argument("--name", required=True, type=_name_or_pattern,
                     help="the cluster's name (prefixes its node names); with --count, the clusters' names: "
                          "NAME-0, NAME-1, ... or, when it holds {i} (e.g. eu-{i:04d}), the index put there")
    sim.add_argument("--count", type=_positive_int, default=0, metavar="N",
                     help="serve N simulated clusters from this one process, socket and store: each is a logical "
                          "cluster at https://<bind>:<port>/clusters/<name> with its own objects, controllers and "
                          "kubeconfig <data-dir>/clusters/<name>/admin.kubeconfig (default: one cluster at the "
                          "server's root, <data-dir>/admin.kubeconfig)")
    sim.add_argument("--first-index", type=_positive_int, default=0, metavar="I",
                     help="with --count, the first cluster's index (default 0)")
    sim.add_argument("--data-dir", help="where the database, PKI and kubeconfig live (default: .fleetplane-<name>)")
    sim.add_argument("--bind", default="127.0.0.1")
    sim.add_argument("--port", type=int, default=6443)
    sim.add_argument("--insecure-http", action="store_true", help="serve plain HTTP instead of HTTPS (tests, local tools)")
    sim.add_argument("--nodes", type=_positive_int, default=3, metavar="N", help="number of nodes (default 3)")
    sim.add_argument("--node-cpu", type=_quantity, default="4", metavar="C", help="each node's cpu (default 4)")
    sim.add_argument("--node-memory", type=_quantity, default="16Gi", metavar="M", help="each node's memory (default 16Gi)")
    sim.add_argument("--node-pods", type=_positive_int, default=110, metavar="K", help="pods per node (default 110)")
    sim.add_argument("--labels", type=_labels, default={}, metavar="k=v,...",
                     help="labels of the cluster, put on every node (e.g. topology.kubernetes.io/region=eu-west)")
    sim.add_argument("--kubelet-delay", type=_seconds, default=1.0, metavar="SECONDS",
                     help="how long a scheduled pod stays ContainerCreating before it is Running and Ready (default 1)")
    sim.add_argument("--heartbeat-interval", type=_seconds, default=10.0, metavar="SECONDS",
                     help="how often the kubelets renew their node leases (default 10, as kube)")
    sim.add_argument("--hpa-sync-period", type=_seconds, default=15.0, metavar="SECONDS",
                     help="how often the HorizontalPodAutoscaler controller syncs each HPA (default 15, kube's "
                          "--horizontal-pod-autoscaler-sync-period); a Pod's simulated CPU utilisation is its "
                          "annotation sim.fleetplane.io/cpu-utilization: \"<percent>\" (e.g. on the pod template)")
    sim.add_argument("--hpa-downscale-stabilization", type=_seconds, default=300.0, metavar="SECONDS",
                     help="the scale-down stabilisation window of HPAs whose behavior sets none (default 300, kube's "
                          "--horizontal-pod-autoscaler-downscale-stabilization)")
    sim.add_argument("--disable-admission-plugins", type=comma_separated, default=(), metavar="NAME,...",
                     help="admission plugins to turn off, as kube-apiserver's flag (e.g. "
                          "ServiceAccount,DefaultTolerationSeconds: Pods are then stored without their defaulting)")
    sim.add_argument("--service-cluster-ip-range", type=_cidr, default="10.96.0.0/16", metavar="CIDR",
                     help="Services' cluster IPs, allocated by the server as a Service is stored, unique, an explicit free "
                          "one honoured, released on delete (default 10.96.0.0/16, as kubeadm's)")
    sim.add_argument("--service-node-port-range", type=_port_range, default=(30000, 32767), metavar="LO-HI",
                     help="node ports of NodePort and LoadBalancer Services, allocated the same way (default 30000-32767)")
    sim.add_argument("--load-balancer-pool", type=_cidr, default=None, metavar="CIDR",
                     help="the simulated load balancer's addresses: each LoadBalancer Service gets the lowest free one "
                          "(or its spec.loadBalancerIP) as status.loadBalancer.ingress, released on delete or type change "
                          "(default 172.18.<n>.0/24, n derived from --name)")
    sim.set_defaults(func=run_simulate)
    return cluster


def run_simulate(args: argparse.Namespace) -> int:
    from ..sim.run import SimOptions, run, run_many

    names: list[str] = []
    if args.count:
        names = member_names(args.name, args.count, args.first_index)
        for n in names:
            _name(n)
        if len(set(names)) != len(names):
            raise argparse.ArgumentTypeError(f"the pattern {args.name!r} gives the same name to several clusters")
    elif "{" in args.name:
        raise argparse.ArgumentTypeError(f"invalid cluster name {args.name!r}: a pattern needs --count")
    prefix = args.name.split("{", 1)[0].rstrip("-") or "sim"
    opts = SimOptions(name=args.name if not names else prefix,
                      data_dir=Path(args.data_dir or f".fleetplane-{prefix}"), bind=args.bind,
                      port=args.port, tls=not args.insecure_http, nodes=args.nodes, node_cpu=args.node_cpu,
                      node_memory=args.node_memory, node_pods=args.node_pods, labels=args.labels,
                      kubelet_delay=args.kubelet_delay, heartbeat_interval=max(args.heartbeat_interval, 1.0),
                      disable_admission_plugins=args.disable_admission_plugins,
                      service_cluster_ip_range=args.service_cluster_ip_range,
                      service_node_port_range=args.service_node_port_range, load_balancer_pool=args.load_balancer_pool or "",
                      hpa_sync_period=max(args.hpa_sync_period, 0.2), hpa_downscale_stabilization=args.hpa_downscale_stabilization)
    if names:
        run_many(opts, names)
    else:
        run(opts)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m fleetplane.cli.cluster simulate ...``: the same command without ``fleetplane``'s
    other subcommands (what tests and benchmarks run before the CLI wires ``cluster`` in)."""
    import logging
    import sys

    from ..logs import configure_logging

    p = argparse.ArgumentParser(prog="fleetplane")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.add_argument("--log-format", default="json", choices=["json", "console"])
    sub = p.add_subparsers(dest="command", required=True)
    add_parser(sub)
    argv = list(sys.argv[1:] if argv is None else argv)
    at = next((i for i, a in enumerate(argv) if a == "simulate"), len(argv))
    args = p.parse_args([*argv[:at], "cluster", *argv[at:]])
    configure_logging(args.log_level, args.log_format)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        logging.getLogger("fleetplane").debug("command failed", exc_info=True)
        print(f"fleetplane: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    import sys

    sys.exit(main())
