"""``fleetplane placement explain deployment/NAME``: why the splitter places a workload where it does
(``service/NAME``: which clusters a hub Service goes to and why, from the Service controller's rule).

It reads the live objects (the workload, the ClusterProfiles of its logical cluster, its children)
and computes the decision with the splitter's own engine, then prints every cluster considered:
selected or filtered out and why, score, weight, estimated fit, current and new share; and what
the splitter last recorded on the workload (the ``placement.fleetplane.io/decision`` annotation)::

    fleetplane placement explain deployment/web [-n NS] [--kubeconfig K] [--context C] [-o text|json]
    fleetplane placement explain clusterdaemonset/agent
    fleetplane placement explain cronjob/nightly      # the clusters its next run may go to, and which
    fleetplane placement explain daemonset/agent
    fleetplane placement explain statefulset/db     # and each cluster's ordinal range

The logical cluster is the one the kubeconfig context's server URL names (``/clusters/<lc>``),
else ``root``. Exit status: 0, 1 when the workload cannot be placed in full (or its policy is
malformed), 2 when it cannot be read.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from typing import Any

__all__ = ["add_parser", "explain", "main"]

_KINDS = {"deployment": "Deployment", "deployments": "Deployment", "deploy": "Deployment",
          "deployment.apps": "Deployment", "clusterdaemonset": "ClusterDaemonSet",
          "clusterdaemonsets": "ClusterDaemonSet", "cds": "ClusterDaemonSet",
          "cronjob": "CronJob", "cronjobs": "CronJob", "cj": "CronJob", "cronjob.batch": "CronJob",
          "service": "Service", "services": "Service", "svc": "Service",
          "daemonset": "DaemonSet", "daemonsets": "DaemonSet", "ds": "DaemonSet", "daemonset.apps": "DaemonSet",
          "statefulset": "StatefulSet", "statefulsets": "StatefulSet", "sts": "StatefulSet",
          "statefulset.apps": "StatefulSet"}
_WANT = "deployment/NAME, statefulset/NAME, daemonset/NAME, clusterdaemonset/NAME, cronjob/NAME or service/NAME"


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``placement`` (with ``explain``) on the ``fleetplane`` subparsers."""
    placement = subparsers.add_parser("placement", help="explain how workloads are placed on the fleet",
                                      description="Placement of hub workloads on the fleet's clusters.")
    sub = placement.add_subparsers(dest="placement_command", required=True)
    ex = sub.add_parser("explain", help="print the placement decision for a Deployment, StatefulSet, DaemonSet "
                                        "or ClusterDaemonSet",
                        description="Compute the placement decision for a workload from the live objects, with "
                                    "the splitter's engine, and print every cluster considered, filtered out and "
                                    "why, scores and shares, beside what the splitter last recorded.")
    ex.add_argument("target", metavar="KIND/NAME", help=_WANT)
    ex.add_argument("-n", "--namespace", default=None, help="namespace (default: the context's, else default)")
    ex.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"), help="the hub's kubeconfig")
    ex.add_argument("--context", default=None, help="kubeconfig context")
    ex.add_argument("-o", "--output", default="text", choices=["text", "json"])
    ex.add_argument("--unhealthy-grace", type=float, default=None, metavar="SECONDS",
                    help="the splitter's --unhealthy-grace (default: what it recorded on the workload)")
    ex.add_argument("--join-grace", type=float, default=None, metavar="SECONDS",
                    help="the splitter's --join-grace (default: what it recorded on the workload)")
    ex.add_argument("--profile-namespace", default=None, help="the splitter's --profile-namespace")
    ex.set_defaults(func=run_explain)
    return placement


def _parse_target(text: str) -> tuple[str, str]:
    kind, sep, name = text.partition("/")
    if not sep or not name or kind.lower() not in _KINDS:
        raise ValueError(f"want {_WANT}, not {text!r}")
    return _KINDS[kind.lower()], name


def _context_namespace(kubeconfig: str | None, context: str | None) -> str | None:
    if not kubeconfig:
        return None
    try:
        import yaml

        with open(kubeconfig) as f:
            cfg = yaml.safe_load(f) or {}
        name = context or cfg.get("current-context")
        for c in cfg.get("contexts") or ():
            if c.get("name") == name:
                return (c.get("context") or {}).get("namespace")
    except (OSError, ValueError):
        return None
    return None


async def explain(kubeconfig: str, kind: str, name: str, namespace: str, *, context: str | None = None,
                  unhealthy_grace: float | None = None, join_grace: float | None = None,
                  profile_namespace: str | None = None) -> dict[str, Any]:
    """The decision for one workload, computed from the live objects, and what was recorded."""
    if kind == "CronJob":
        return await explain_cronjob(kubeconfig, name, namespace, context=context, unhealthy_grace=unhealthy_grace,
                                     join_grace=join_grace, profile_namespace=profile_namespace)
    from ..fleet.placement import ClusterInfo, Limit, Options, PolicyError, decide, requests_of
    from ..fleet.splitter.controller import ANNOTATION_DECISION, LABEL_CLUSTER, SplitterOptions
    from ..fleet.splitter.kinds import KINDS
    from ..fleet.splitter.ordinals import Range, layout
    from ..inventory import constants as ic
    from ..kube.client import Client
    from ..kube.kubeconfig import ApiTarget

    target = ApiTarget.from_kubeconfig(kubeconfig, context)
    lc = target.logical_cluster or "root"
    hub = Client(target.with_server(target.base), "fleetplane-placement-explain")
    wk = KINDS[kind]
    try:
        base = f"/clusters/{lc}/apis/{wk.api_version}/namespaces/{namespace}/{wk.plural}"
        obj = await hub.get(f"{base}/{name}")
        if obj is None:
            raise LookupError(f'{kind.lower()} "{name}" not found in namespace {namespace} of logical cluster {lc}')
        md = obj.get("metadata") or {}
        if wk.group == "apps" and LABEL_CLUSTER in (md.get("labels") or {}):
            raise LookupError(f"{kind.lower()} {name} is assigned to cluster {md['labels'][LABEL_CLUSTER]} by its "
                              f"{LABEL_CLUSTER} label: the splitter does not place it")
        spec = obj.get("spec") or {}
        ppath = f"/clusters/{lc}/apis/{ic.GROUP}/{ic.VERSION}/"
        ppath += f"namespaces/{profile_namespace}/{ic.PLURAL}" if profile_namespace else ic.PLURAL
        profiles, _ = await hub.list_all(ppath)
        nss, _ = await hub.list_all(f"/clusters/{lc}/api/v1/namespaces")
        ns_labels = {(n.get("metadata") or {}).get("name"): (n.get("metadata") or {}).get("labels") or {} for n in nss}
        infos: dict[str, ClusterInfo] = {}
        for p in sorted(profiles, key=lambda p: ((p.get("metadata") or {}).get("creationTimestamp") or "",
                                                 (p.get("metadata") or {}).get("namespace") or "")):
            pm = p.get("metadata") or {}
            pname = pm.get("name")
            if pname is None:  # the API server names every object
                continue
            infos.setdefault(pname, ClusterInfo.from_profile(p, ns_labels.get(pm.get("namespace"))))
        kids, _ = await hub.list_all(f"/clusters/{lc}/apis/apps/v1/namespaces/{namespace}/{wk.child.plural}")
        uid = md.get("uid")
        children: dict[str, dict[str, Any]] = {}
        for k in kids:
            km = k.get("metadata") or {}
            cluster = (km.get("labels") or {}).get(LABEL_CLUSTER)
            if not cluster:  # not a child the splitter made: it skips these too
                continue
            if any(r.get("uid") == uid and r.get("controller") for r in km.get("ownerReferences") or ()) \
                    and not km.get("deletionTimestamp"):
                children[cluster] = k
    finally:
        await hub.close()

    recorded: dict[str, Any] = {}
    raw = (md.get("annotations") or {}).get(ANNOTATION_DECISION)
    if raw:
        try:
            recorded = json.loads(raw)
        except ValueError:
            recorded = {"error": f"unreadable {ANNOTATION_DECISION} annotation"}
    limits = {}
    for c, lim in (recorded.get("limits") or {}).items():
        try:
            limits[c] = Limit(int(lim["max"]), float(lim["since"]), str(lim.get("message") or ""))
        except (KeyError, TypeError, ValueError):
            continue
    for c, msg in (recorded.get("full") or {}).items():  # clusters other workloads found full
        if c not in limits:
            current_c = int(((children.get(c) or {}).get("spec") or {}).get("replicas") or 0)
            limits[c] = Limit(current_c, time.time(), str(msg))
    defaults = SplitterOptions()
    used = recorded.get("options") or {}  # the splitter's own settings, as it recorded them
    opts = Options(unhealthy_grace if unhealthy_grace is not None else float(used.get("unhealthyGrace", defaults.unhealthy_grace)),
                   join_grace if join_grace is not None else float(used.get("joinGrace", defaults.join_grace)))
    current = {c: wk.child.units(k) for c, k in children.items()}
    out: dict[str, Any] = {"kind": kind, "name": name, "namespace": namespace, "logicalCluster": lc,
                           "recorded": recorded, "children": {c: _child(wk, k) for c, k in sorted(children.items())}}
    replicas = wk.requested(spec)
    try:
        policy, _ = wk.policy(obj, replicas)
    except PolicyError as err:
        out["error"] = f"invalid placement policy: {err}"
        return out
    d = decide(replicas, policy, list(infos.values()), current, requests=requests_of(spec.get("template")),
               limits=limits, now=time.time(), options=opts, seed=f"{namespace}/{name}")
    out["decision"] = {**d.summary(max_filtered=10**6), "clusters": {c.name: c.to_dict() for c in d.clusters}}
    out["lines"] = d.explain()
    if wk.ordinals:  # the ordinal range each cluster runs now, and where the computed split puts them
        ranges = {c: Range(v["ordinals"]["start"], v["replicas"]) for c, v in out["children"].items()}
        first = wk.first_ordinal(spec)
        computed = {c: Range(first + r.start, r.count) for c, r in layout(d.assignment()).items()}
        out["ordinals"] = {"current": {c: str(r) for c, r in ranges.items()},
                           "computed": {c: str(r) for c, r in computed.items()}}
        out["lines"].append("Ordinals now: " + (", ".join(f"{c} {r}" for c, r in ranges.items()) or "none")
                            + "; computed: " + (", ".join(f"{c} {r}" for c, r in computed.items()) or "none"))
    if policy.overrides:
        out["overrides"] = _overrides(wk, obj, policy, infos, d, children)
        out["lines"] += _override_lines(out["overrides"])
        if any(v.get("error") for v in out["overrides"].values()):
            out["error"] = "; ".join(f"{c}: {v['error']}" for c, v in out["overrides"].items() if v.get("error"))
    out["complete"] = d.unplaced == 0
    return out


def _overrides(wk: Any, obj: dict[str, Any], policy: Any, infos: dict[str, Any], d: Any,
               children: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per cluster: the rules that select it, what they change in its child (computed now, as the
    splitter builds it), and the rules its child records."""
    from ..fleet.placement import overrides as ov
    from ..fleet.placement.policy import ANNOTATION_POLICY

    md = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    labels = dict(md.get("labels") or {})
    ann = {k: v for k, v in (md.get("annotations") or {}).items() if not k.startswith("placement.fleetplane.io/")
           and k != ANNOTATION_POLICY}
    shares = d.assignment()
    out: dict[str, dict[str, Any]] = {}
    for name, ci in sorted(infos.items()):
        rules = ov.matching(policy.overrides, ci)
        entry: dict[str, Any] = {"rules": [o.index for o in rules], "changes": []}
        try:
            entry["changes"] = ov.apply(wk.child_spec(spec, shares.get(name, 0), 0), labels, ann, rules).lines
        except ov.OverrideError as err:
            entry["error"] = str(err)
        recorded = ((children.get(name) or {}).get("metadata") or {}).get("annotations") or {}
        if ov.ANNOTATION_OVERRIDES in recorded:
            entry["recorded"] = recorded[ov.ANNOTATION_OVERRIDES]
        out[name] = entry
    return out


def _override_lines(per_cluster: dict[str, dict[str, Any]]) -> list[str]:
    lines = ["Overrides (rules in order, later ones win):"]
    for name, entry in per_cluster.items():
        changes = entry.get("changes") or []
        if entry.get("error"):
            lines.append(f"  {name}: cannot apply: {entry['error']}")
        elif not changes:
            lines.append(f"  {name}: none")
        else:
            lines.append(f"  {name}:")
            lines += [f"    {c}" for c in changes]
    return lines


async def explain_cronjob(kubeconfig: str, name: str, namespace: str, *, context: str | None = None,
                          unhealthy_grace: float | None = None, join_grace: float | None = None,
                          profile_namespace: str | None = None) -> dict[str, Any]:
    """A hub CronJob's candidate clusters for its next run (the fleet-wide CronJob controller's
    engine call), the one it would get (least recently used), its Jobs' clusters, what it recorded."""
    from ..apimachinery.metatime import parse_time
    from ..fleet.cronjobs.controller import (
        ANNOTATION_DECISION,
        LABEL_CLUSTER,
        choose_cluster,
        eligible_clusters,
    )
    from ..fleet.cronjobs.options import CronJobOptions
    from ..fleet.placement import ClusterInfo, Options
    from ..inventory import constants as ic
    from ..kube.client import Client
    from ..kube.kubeconfig import ApiTarget

    target = ApiTarget.from_kubeconfig(kubeconfig, context)
    lc = target.logical_cluster or "root"
    hub = Client(target.with_server(target.base), "fleetplane-placement-explain")
    try:
        obj = await hub.get(f"/clusters/{lc}/apis/batch/v1/namespaces/{namespace}/cronjobs/{name}")
        if obj is None:
            raise LookupError(f'cronjob "{name}" not found in namespace {namespace} of logical cluster {lc}')
        md = obj.get("metadata") or {}
        if LABEL_CLUSTER in (md.get("labels") or {}):
            raise LookupError(f"cronjob {name} is assigned to cluster {md['labels'][LABEL_CLUSTER]} by its "
                              f"{LABEL_CLUSTER} label: its cluster schedules it")
        ppath = f"/clusters/{lc}/apis/{ic.GROUP}/{ic.VERSION}/"
        ppath += f"namespaces/{profile_namespace}/{ic.PLURAL}" if profile_namespace else ic.PLURAL
        profiles, _ = await hub.list_all(ppath)
        jobs, _ = await hub.list_all(f"/clusters/{lc}/apis/batch/v1/namespaces/{namespace}/jobs")
    finally:
        await hub.close()
    defaults = CronJobOptions()
    opts = Options(defaults.unhealthy_grace if unhealthy_grace is None else unhealthy_grace,
                   defaults.join_grace if join_grace is None else join_grace)
    fleet = sorted((ClusterInfo.from_profile(p) for p in profiles), key=lambda c: c.name)
    eligible, decision = eligible_clusters(obj, fleet, time.time(), opts)
    recorded: dict[str, Any] = {}
    try:
        recorded = json.loads((md.get("annotations") or {}).get(ANNOTATION_DECISION) or "{}")
    except ValueError:
        recorded = {"error": f"unreadable {ANNOTATION_DECISION} annotation"}
    used = {str(k): float(v) for k, v in (recorded.get("lastUsed") or {}).items()}
    runs = {}
    for j in jobs:
        jm = j.get("metadata") or {}
        if any(r.get("uid") == md.get("uid") and r.get("controller") for r in jm.get("ownerReferences") or ()):
            cluster = (jm.get("labels") or {}).get(LABEL_CLUSTER) or ""
            runs[jm.get("name")] = cluster
            t = parse_time(jm.get("creationTimestamp"))
            if cluster and t is not None and t > used.get(cluster, -1.0):
                used[cluster] = t
    nxt = choose_cluster(eligible, used)
    lines = [f"Policy: {'; '.join(decision.policy.describe()) or 'any healthy cluster'}"]
    lines.append("CLUSTER  STATUS  LAST RUN  REASON")
    for c in decision.clusters:
        last = time.strftime("%H:%M:%SZ", time.gmtime(used[c.name])) if c.name in used else "-"
        lines.append(f"{c.name}  {'Candidate' if c.name in eligible else c.status}  {last}  {c.reason}")
    lines.append(f"Next run goes to: {nxt or 'nowhere (no eligible cluster)'}")
    lines.append("Jobs: " + (", ".join(f"{k} on {v}" for k, v in sorted(runs.items())) or "none"))
    out: dict[str, Any] = {"kind": "CronJob", "name": name, "namespace": namespace, "logicalCluster": lc,
                           "candidates": eligible, "next": nxt, "jobs": runs, "recorded": recorded,
                           "decision": {"clusters": {c.name: c.to_dict() for c in decision.clusters}},
                           "lines": lines, "complete": nxt is not None}
    if decision.error:
        out["error"] = decision.error
    return out


def _child(wk: Any, child: dict[str, Any]) -> dict[str, Any]:
    """What explain shows of a child: its name, share and readiness."""
    st = child.get("status") or {}
    if not wk.child.replicas:  # a DaemonSet: its nodes' pods
        return {"name": (child.get("metadata") or {}).get("name"),
                "replicas": int(st.get("desiredNumberScheduled") or 0), "readyReplicas": int(st.get("numberReady") or 0),
                "availableReplicas": int(st.get("numberAvailable") or 0)}
    out = {"name": (child.get("metadata") or {}).get("name"), "replicas": wk.child.units(child),
           "readyReplicas": int(st.get("readyReplicas") or 0), "availableReplicas": int(st.get("availableReplicas") or 0)}
    if wk.ordinals:
        out["ordinals"] = {"start": wk.child_start(child)}
    return out


def render(result: dict[str, Any]) -> str:
    lines = [f"{result['kind']} {result['namespace']}/{result['name']} (logical cluster {result['logicalCluster']})"]
    if result["kind"] == "CronJob":
        if result.get("error"):
            lines.append(f"Error: {result['error']}")
        cond = ((result.get("recorded") or {}).get("conditions") or [{}])[0]
        return "\n".join(lines + result.get("lines", []) + [
            f"Recorded by the CronJob controller: {cond.get('type', 'Placed')}={cond.get('status', 'Unknown')} "
            f"{cond.get('reason', '')}: {cond.get('message', '')}".rstrip(": ") if cond else
            "Recorded by the CronJob controller: nothing yet (is it running?)"])
    if result.get("error"):
        lines.append(f"Error: {result['error']}")
    lines += result.get("lines") or []
    kids = result.get("children") or {}
    if kids:
        lines.append("Children: " + ", ".join(f"{v['name']} {v['readyReplicas']}/{v['replicas']} ready"
                                                for v in kids.values()))
    else:
        lines.append("Children: none")
    rec = result.get("recorded") or {}
    if rec:
        shares = rec.get("shares") or {}
        text = ", ".join(f"{k} {v}" for k, v in shares.items()) or "nothing placed"
        lines.append(f"Recorded by the splitter: {rec.get('placed', 0)} of {rec.get('replicas', '?')} placed: {text}"
                     + (f"; {rec['waiting']}" if rec.get("waiting") else "")
                     + (f"; error: {rec['error']}" if rec.get("error") else ""))
        for c, lim in sorted((rec.get("limits") or {}).items()):
            lines.append(f"  limit: {c} at most {lim.get('max')}: {lim.get('message')}")
        now = (result.get("decision") or {}).get("shares")
        if now is not None and now != shares:
            lines.append("  (the split computed now differs: the splitter has not acted on the latest change yet, "
                         "or it is moving replicas step by step)")
    else:
        lines.append("Recorded by the splitter: nothing yet (is the splitter running?)")
    return "\n".join(lines)


def run_explain(args: argparse.Namespace) -> int:
    try:
        kind, name = _parse_target(args.target)
    except ValueError as err:
        print(f"fleetplane placement explain: {err}", file=sys.stderr)
        return 2
    if not args.kubeconfig:
        print("fleetplane placement explain: --kubeconfig (or $KUBECONFIG) is required", file=sys.stderr)
        return 2
    ns = args.namespace or _context_namespace(args.kubeconfig, args.context) or "default"
    if kind == "Service":
        return _run_explain_service(args, name, ns)
    try:
        result = asyncio.run(explain(args.kubeconfig, kind, name, ns, context=args.context,
                                     unhealthy_grace=args.unhealthy_grace, join_grace=args.join_grace,
                                     profile_namespace=args.profile_namespace))
    except LookupError as err:
        print(f"Error: {err}", file=sys.stderr)
        return 2
    except Exception as err:  # noqa: BLE001 - one clear line
        print(f"Error: cannot read the hub: {err}", file=sys.stderr)
        return 2
    if args.output == "json":
        result.pop("lines", None)
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        print(render(result))
    return 0 if result.get("complete") and not result.get("error") else 1


async def explain_service(kubeconfig: str, name: str, namespace: str, *, context: str | None = None,
                          profile_namespace: str | None = None) -> dict[str, Any]:
    """A hub Service's clusters and why, computed now with the Service controller's own rule
    (``fleet/services/controller.wanted_clusters``), beside its children and what it recorded."""
    from ..fleet.placement import ClusterInfo
    from ..fleet.services.controller import ANNOTATION_DECISION, LABEL_CLUSTER, WORKLOADS, wanted_clusters
    from ..inventory import constants as ic
    from ..kube.client import ApiError, Client
    from ..kube.kubeconfig import ApiTarget

    target = ApiTarget.from_kubeconfig(kubeconfig, context)
    lc = target.logical_cluster or "root"
    hub = Client(target.with_server(target.base), "fleetplane-placement-explain")
    try:
        base = f"/clusters/{lc}/api/v1/namespaces/{namespace}/services"
        obj = await hub.get(f"{base}/{name}")
        if obj is None:
            raise LookupError(f'service "{name}" not found in namespace {namespace} of logical cluster {lc}')
        md = obj.get("metadata") or {}
        if LABEL_CLUSTER in (md.get("labels") or {}):
            raise LookupError(f"service {name} is assigned to cluster {md['labels'][LABEL_CLUSTER]} by its "
                              f"{LABEL_CLUSTER} label: the Service controller does not place it")
        workloads: list[tuple[str, dict]] = []
        for g, v, plural, kind in WORKLOADS:
            try:
                items, _ = await hub.list_all(f"/clusters/{lc}/apis/{g}/{v}/namespaces/{namespace}/{plural}")
            except ApiError as err:
                if err.status == 404:
                    continue  # not served in this logical cluster
                raise
            workloads += [(kind, o) for o in items]
        ppath = f"/clusters/{lc}/apis/{ic.GROUP}/{ic.VERSION}/"
        ppath += f"namespaces/{profile_namespace}/{ic.PLURAL}" if profile_namespace else ic.PLURAL
        profiles, _ = await hub.list_all(ppath)
        kids, _ = await hub.list_all(base)
    finally:
        await hub.close()
    infos: dict[str, ClusterInfo] = {}
    for p in sorted(profiles, key=lambda p: (p.get("metadata") or {}).get("creationTimestamp") or ""):
        infos.setdefault((p.get("metadata") or {}).get("name") or "", ClusterInfo.from_profile(p))
    uid = md.get("uid")
    children = {((k.get("metadata") or {}).get("labels") or {}).get(LABEL_CLUSTER): k for k in kids
                if any(r.get("uid") == uid and r.get("controller") for r in (k.get("metadata") or {}).get("ownerReferences") or ())}
    placement = wanted_clusters(obj, workloads, list(infos.values()), [c for c in children if c], now=time.time())
    recorded: dict[str, Any] = {}
    raw = (md.get("annotations") or {}).get(ANNOTATION_DECISION)
    if raw:
        try:
            recorded = json.loads(raw)
        except ValueError:
            recorded = {"error": f"unreadable {ANNOTATION_DECISION} annotation"}
    return {"kind": "Service", "name": name, "namespace": namespace, "logicalCluster": lc,
            "byPolicy": placement.by_policy, "clusters": placement.clusters,
            "problem": list(placement.problem) if placement.problem else None,
            "children": {c: (k.get("metadata") or {}).get("name") for c, k in sorted(children.items()) if c},
            "recorded": recorded}


def render_service(result: dict[str, Any]) -> str:
    lines = [f"Service {result['namespace']}/{result['name']} (logical cluster {result['logicalCluster']}): "
             + ("clusters from its placement policy" if result["byPolicy"] else "the clusters its selector's workloads run in")]
    for c, why in result["clusters"].items():
        lines.append(f"  {c}: {why}")
    if result.get("problem"):
        lines.append(f"  none: {result['problem'][1]} ({result['problem'][0]})")
    kids = result.get("children") or {}
    lines.append("Children: " + (", ".join(f"{v} in {c}" for c, v in kids.items()) or "none"))
    rec = (result.get("recorded") or {}).get("clusters")
    if rec is not None:
        lines.append("Recorded by the Service controller: " + (", ".join(
            f"{c} (ingress {', '.join(map(str, d.get('ingress') or [])) or 'none'})" for c, d in sorted(rec.items()))
            or "no clusters"))
    else:
        lines.append("Recorded by the Service controller: nothing yet (is it running?)")
    return "\n".join(lines)


def _run_explain_service(args: argparse.Namespace, name: str, ns: str) -> int:
    try:
        result = asyncio.run(explain_service(args.kubeconfig, name, ns, context=args.context,
                                             profile_namespace=args.profile_namespace))
    except LookupError as err:
        print(f"Error: {err}", file=sys.stderr)
        return 2
    except Exception as err:  # noqa: BLE001 - one clear line
        print(f"Error: cannot read the hub: {err}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2, sort_keys=True) if args.output == "json" else render_service(result))
    return 1 if result.get("problem") else 0


def main(argv: list[str] | None = None) -> int:
    """``python -m fleetplane.cli.placement explain deployment/web`` (the ``placement`` word optional)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "placement":
        argv.insert(0, "placement")
    p = argparse.ArgumentParser(prog="fleetplane")
    add_parser(p.add_subparsers(dest="command", required=True))
    args = p.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
