"""``fleetplane cluster``: simulated physical clusters.

``fleetplane cluster simulate --name NAME [--data-dir D] [--port P] [--nodes N] [--node-cpu C
--node-memory M --node-pods K] [--labels k=v,...] [--kubelet-delay S] [--hpa-sync-period S]
[--hpa-downscale-stabilization S] [--insecure-http]`` serves a cluster that behaves like a real
one to a client (Deployments, ReplicaSets, DaemonSets, StatefulSets, HorizontalPodAutoscalers,
Pods, Nodes, PersistentVolumeClaims and their controllers, a scheduler, a toy volume provisioner
and simulated kubelets), in the spirit of KWOK. See docs/sim.md.
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


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``cluster`` (with its ``simulate`` subcommand) on the ``fleetplane`` subparsers."""
    cluster = subparsers.add_parser("cluster", help="simulated physical clusters",
                                    description="Simulated physical Kubernetes clusters.")
    sub = cluster.add_subparsers(dest="cluster_command", required=True)
    sim = sub.add_parser(
        "simulate", help="run a simulated physical cluster (Deployments, DaemonSets, StatefulSets, Pods, Nodes, "
                         "PersistentVolumeClaims, scheduler, kubelets)",
        description="Run a simulated physical cluster that behaves like a real one to a client, in the spirit of "
                    "KWOK: the hub's API server with apps/v1 Deployments, ReplicaSets, DaemonSets and StatefulSets, "
                    "autoscaling/v2 (and v1) HorizontalPodAutoscalers and core/v1 Pods, Nodes and "
                    "PersistentVolumeClaims, a Deployment, a ReplicaSet and an HPA controller, "
                    "a scheduler and simulated kubelets. The DaemonSet controller runs one pod per node matching "
                    "the template's node selector and affinity and tolerating its taints (bound through node "
                    "affinity by the scheduler) and rolls updates within maxUnavailable/maxSurge; the StatefulSet "
                    "controller creates pods <name>-<ordinal> from spec.ordinals.start in order (OrderedReady: "
                    "each Ready for minReadySeconds before the next; or Parallel), scales down and rolls updates from the highest "
                    "ordinal, and creates claims <template>-<name>-<ordinal> from volumeClaimTemplates, kept or "
                    "deleted per the retention policy; a toy provisioner binds every PersistentVolumeClaim at once "
                    "(volumeName pvc-<uid>, capacity = request, no PersistentVolume objects) and holds a deleted "
                    "claim (pvc-protection finalizer) while a pod uses it. It "
                    "writes <data-dir>/admin.kubeconfig and keeps its state in <data-dir>.")
    sim.add_argument("--name", required=True, type=_name, help="the cluster's name (prefixes its node names)")
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
    sim.set_defaults(func=run_simulate)
    return cluster


def run_simulate(args: argparse.Namespace) -> int:
    from ..sim.run import SimOptions, run

    run(SimOptions(name=args.name, data_dir=Path(args.data_dir or f".fleetplane-{args.name}"), bind=args.bind,
                   port=args.port, tls=not args.insecure_http, nodes=args.nodes, node_cpu=args.node_cpu,
                   node_memory=args.node_memory, node_pods=args.node_pods, labels=args.labels,
                   kubelet_delay=args.kubelet_delay, heartbeat_interval=max(args.heartbeat_interval, 1.0),
                   disable_admission_plugins=args.disable_admission_plugins,
                   hpa_sync_period=max(args.hpa_sync_period, 0.2), hpa_downscale_stabilization=args.hpa_downscale_stabilization))
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
