"""``fleetplane rollout``: progressive rollouts across clusters, for what kubectl has no verb for.

::

    fleetplane rollout status   KIND/NAME [-n NS] [-o wide] [--watch]   # the stages table
    fleetplane rollout approve  KIND/NAME      # lift the current stage's "approval" pause
    fleetplane rollout abort    KIND/NAME      # stop; released clusters back to the previous revision
    fleetplane rollout pause    KIND/NAME      # hold: nothing new is released (any kind)
    fleetplane rollout resume   KIND/NAME

KIND is deployment, statefulset, daemonset or clusterdaemonset. Everything goes through the
parent's annotations (``rollout.fleetplane.io/*``), which the splitter reads: an approval names the
revision and the stage it approves, so a stale one never lifts a later pause. ``pause`` on a
Deployment sets ``spec.paused`` as ``kubectl rollout pause`` does. Exit status: 0; 1 when there is
nothing to approve or abort (or the rollout failed, for ``status``); 2 when the parent cannot be read.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from typing import Any

__all__ = ["add_parser", "stage_rows"]

_VERBS = ("status", "approve", "abort", "pause", "resume")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``rollout`` on the ``fleetplane`` subparsers."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("target", metavar="KIND/NAME",
                        help="deployment/NAME, statefulset/NAME, daemonset/NAME or clusterdaemonset/NAME")
    common.add_argument("-n", "--namespace", default=None, help="namespace (default: the context's, else default)")
    common.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"), help="the hub's kubeconfig")
    common.add_argument("--context", default=None, help="kubeconfig context")
    ro = subparsers.add_parser(
        "rollout", help="follow and steer progressive rollouts across clusters",
        description="Progressive rollouts across clusters (the rollout key of the placement policy): the "
                    "stages, and the verbs kubectl has no equivalent for. See docs/placement.md, "
                    "'Progressive rollouts'.")
    sub = ro.add_subparsers(dest="rollout_command", required=True)
    st = sub.add_parser("status", parents=[common], help="print the stages of the current rollout",
                        description="The stages table (STAGE, CLUSTERS, STATE), and with -o wide each cluster.")
    st.add_argument("-o", "--output", default="", choices=["", "wide", "json"])
    st.add_argument("-w", "--watch", action="store_true", help="follow until the rollout completes, fails or is aborted")
    sub.add_parser("approve", parents=[common], help="lift the current stage's approval pause",
                   description="Approve the stage that waits for approval (pause: approval), for this revision.")
    sub.add_parser("abort", parents=[common], help="stop the rollout; released clusters go back to the previous revision",
                   description="Abort the current rollout: nothing more is released and the clusters that got the "
                               "new revision go back to the previous one at once. A new revision (or undo) starts "
                               "a new rollout.")
    sub.add_parser("pause", parents=[common], help="hold the rollout: nothing new is released",
                   description="Hold the stage machine (spec.paused on a Deployment, the rollout.fleetplane.io/paused "
                               "annotation on other kinds). The stage's progress deadline restarts on resume.")
    sub.add_parser("resume", parents=[common], help="resume a held rollout")
    ro.set_defaults(func=run)
    return ro


def stage_rows(state: dict[str, Any]) -> tuple[list[list[str]], list[list[str]]]:
    """(stage rows, cluster rows) of a rollout state (the ``rollout.fleetplane.io/state`` JSON)."""
    phase = state.get("phase", "")
    cur = int(state.get("stage") or 0)
    released, done = state.get("released") or {}, state.get("done") or {}
    stage_rows_: list[list[str]] = []
    cluster_rows: list[list[str]] = []
    for i, members in enumerate(state.get("stages") or []):
        if phase == "Complete" or i < cur:
            what = "done"
        elif i > cur or phase == "Aborted":
            what = "waiting" if phase != "Aborted" else "aborted"
        elif phase == "Failed":
            what = "failed"
        elif phase == "WaitingForApproval":
            what = "waiting-approval"
        elif phase == "Pausing" or state.get("held"):
            what = "paused"
        elif any(c in released and c not in done for c in members):
            what = "in-flight"
        elif all(c in done for c in members):
            what = "done"
        else:
            what = "waiting"
        stage_rows_.append([str(i + 1), ",".join(members) or "-", what])
        for c in members:
            if c in done and phase != "Aborted":
                cs = "done"
            elif c in released:
                cs = "failed" if phase == "Failed" else "in-flight"
            else:
                cs = "aborted" if phase == "Aborted" else "waiting"
            cluster_rows.append([c, str(i + 1), cs, _clock(released.get(c)), _clock(done.get(c))])
    return stage_rows_, cluster_rows


def _clock(t: Any) -> str:
    return time.strftime("%H:%M:%SZ", time.gmtime(float(t))) if t else "-"


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("   ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)


def _render(obj: dict[str, Any], output: str) -> str:
    from ..fleet.splitter.stages import ANNOTATION_STATE

    raw = ((obj.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_STATE)
    if not raw:
        return "no rollout recorded (the placement policy has no rollout, or the splitter has not seen it yet)"
    state = json.loads(raw)
    if output == "json":
        return json.dumps(state, indent=2, sort_keys=True)
    stages, clusters = stage_rows(state)
    out = _table([["STAGE", "CLUSTERS", "STATE"], *stages])
    if output == "wide":
        out += "\n\n" + _table([["CLUSTER", "STAGE", "STATE", "RELEASED", "DONE"], *clusters])
    summary = f"revision {state.get('number')}{' (undo: stages in reverse)' if state.get('reverse') else ''}: " \
              f"{state.get('phase')}"
    if state.get("message"):
        summary += f": {state['message']}"
    return out + "\n\n" + summary


def run(args: argparse.Namespace) -> int:
    from .placement import _context_namespace

    kinds = {"deployment": "Deployment", "deployments": "Deployment", "deploy": "Deployment",
             "statefulset": "StatefulSet", "statefulsets": "StatefulSet", "sts": "StatefulSet",
             "daemonset": "DaemonSet", "daemonsets": "DaemonSet", "ds": "DaemonSet",
             "clusterdaemonset": "ClusterDaemonSet", "clusterdaemonsets": "ClusterDaemonSet", "cds": "ClusterDaemonSet"}
    kind, sep, name = args.target.partition("/")
    if not sep or not name or kind.lower().split(".")[0] not in kinds:
        print(f"fleetplane rollout: want deployment/NAME, statefulset/NAME, daemonset/NAME or clusterdaemonset/NAME, "
              f"not {args.target!r}", file=sys.stderr)
        return 2
    if not args.kubeconfig:
        print("fleetplane rollout: no kubeconfig (--kubeconfig or KUBECONFIG)", file=sys.stderr)
        return 2
    ns = args.namespace or _context_namespace(args.kubeconfig, args.context) or "default"
    return asyncio.run(_run(args, kinds[kind.lower().split(".")[0]], name, ns))


async def _run(args: argparse.Namespace, kind: str, name: str, ns: str) -> int:
    from ..fleet.splitter import stages
    from ..fleet.splitter.kinds import KINDS
    from ..kube.client import MERGE_PATCH, ApiError, Client
    from ..kube.kubeconfig import ApiTarget

    target = ApiTarget.from_kubeconfig(args.kubeconfig, args.context)
    lc = target.logical_cluster or "root"
    hub = Client(target.with_server(target.base), "fleetplane-rollout")
    wk = KINDS[kind]
    path = f"/clusters/{lc}/apis/{wk.api_version}/namespaces/{ns}/{wk.plural}/{name}"
    ref = f"{kind.lower()}/{name}"
    try:
        try:
            obj = await hub.get(path)
        except ApiError as err:
            print(f"fleetplane rollout: {err.message}", file=sys.stderr)
            return 2
        if obj is None:
            print(f'fleetplane rollout: {kind.lower()} "{name}" not found in namespace {ns} of logical cluster {lc}',
                  file=sys.stderr)
            return 2
        state = stages.load(((obj.get("metadata") or {}).get("annotations") or {}).get(stages.ANNOTATION_STATE))
        verb = args.rollout_command
        if verb == "status":
            return await _status(hub, path, obj, args)
        if verb == "approve":
            if state is None or state.phase != stages.APPROVAL:
                print(f"fleetplane rollout: {ref}: nothing to approve "
                      f"({state.phase + ': ' + state.message if state else 'no rollout'})", file=sys.stderr)
                return 1
            await hub.patch(path, {"metadata": {"annotations": {
                stages.ANNOTATION_APPROVE: f"{state.revision}/{state.stage + 1}"}}}, MERGE_PATCH, "fleetplane-rollout")
            print(f"{ref}: approved {state.stage_label()} of revision {state.number}")
            return 0
        if verb == "abort":
            if state is None or not state.active:
                print(f"fleetplane rollout: {ref}: no rollout in progress to abort "
                      f"({state.phase if state else 'none recorded'})", file=sys.stderr)
                return 1
            await hub.patch(path, {"metadata": {"annotations": {stages.ANNOTATION_ABORT: state.revision}}},
                            MERGE_PATCH, "fleetplane-rollout")
            print(f"{ref}: aborted the rollout of revision {state.number}")
            return 0
        pause = verb == "pause"
        if kind == "Deployment":
            body: dict[str, Any] = {"spec": {"paused": True if pause else None}}
        else:
            body = {"metadata": {"annotations": {stages.ANNOTATION_PAUSED: "true" if pause else None}}}
        await hub.patch(path, body, MERGE_PATCH, "fleetplane-rollout")
        print(f"{ref} {'paused' if pause else 'resumed'}")
        return 0
    finally:
        await hub.close()


async def _status(hub: Any, path: str, obj: dict[str, Any], args: argparse.Namespace) -> int:
    from ..kube.client import Unreachable

    text = _render(obj, args.output)
    print(text, flush=True)
    if not args.watch:
        return _exit(obj)
    while not _finished(obj):
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        name = (obj.get("metadata") or {}).get("name")
        try:
            async for ev in hub.watch(path.rsplit("/", 1)[0], {"fieldSelector": f"metadata.name={name}",
                                                               "resourceVersion": rv}):
                if ev.get("type") not in ("ADDED", "MODIFIED"):
                    continue
                obj = ev["object"]
                new = _render(obj, args.output)
                if new != text:
                    text = new
                    print("\n" + text, flush=True)
                if _finished(obj):
                    break
        except Unreachable:
            obj = await hub.get(path) or obj
    return _exit(obj)


def _phase(obj: dict[str, Any]) -> str:
    from ..fleet.splitter.stages import ANNOTATION_STATE, load

    st = load(((obj.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_STATE))
    return st.phase if st else ""


def _finished(obj: dict[str, Any]) -> bool:
    return _phase(obj) in ("", "Complete", "Failed", "Aborted")


def _exit(obj: dict[str, Any]) -> int:
    return 1 if _phase(obj) == "Failed" else 0
