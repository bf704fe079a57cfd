"""``fleetplane inventory``: the ClusterProfile (KEP-4322) conformance kit.

``fleetplane inventory check --kubeconfig K [--context C] [--namespace N]`` asks any hub that
serves ClusterProfiles (fleetplane's, or a Kubernetes cluster with the CRD) which of the KEP's
rules hold, one line per rule per profile, then a summary. It only reads (discovery, the
profiles, their namespaces' labels). Exit status: 0 when every required rule holds (with
``--strict``, when there is no warning either), 1 when one fails, 2 when the hub cannot be
queried. The rules are in :mod:`fleetplane.inventory.conformance`.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any, cast

EXIT_OK, EXIT_FAILED, EXIT_ERROR = 0, 1, 2


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``inventory`` (with its ``check`` subcommand) on the ``fleetplane`` subparsers."""
    inv = subparsers.add_parser("inventory", help="ClusterProfile (KEP-4322) inventory tools",
                                description="Tools for the ClusterProfile (KEP-4322) cluster inventory.")
    sub = inv.add_subparsers(dest="inventory_command", required=True)
    check = sub.add_parser(
        "check", help="report which KEP-4322 rules hold on a hub that serves ClusterProfiles",
        description="Report, for a hub that serves ClusterProfiles, which KEP-4322 rules hold: one line per "
                    "rule per profile (PASS, WARN or FAIL) and a summary. Exits 1 if a required rule fails, "
                    "2 if the hub cannot be queried.")
    check.add_argument("--kubeconfig", required=True, help="kubeconfig of the hub")
    check.add_argument("--context", help="kubeconfig context (default: the current context)")
    check.add_argument("--namespace", "-n", help="check the inventory in this namespace only (default: all namespaces)")
    check.add_argument("--manager", help="check only the profiles of this cluster manager (label x-k8s.io/cluster-manager)")
    check.add_argument("--strict", action="store_true", help="fail on warnings too")
    check.add_argument("--output", "-o", choices=["text", "json"], default="text", help="output format")
    check.add_argument("--request-timeout", type=float, default=30.0, metavar="SECONDS", help="per-request timeout")
    check.set_defaults(func=run_check)
    return inv


class _HubError(Exception):
    pass


def _gather(args: argparse.Namespace) -> tuple[list, str]:
    """Query the hub; return (results, description of the scope)."""
    from kubernetes import client, config
    from kubernetes.client.rest import ApiException

    from ..inventory import conformance as c
    from ..inventory.constants import GROUP, LABEL_CLUSTER_MANAGER, PLURAL, VERSION, VERSION_V1ALPHA2

    try:
        api = config.new_client_from_config(config_file=args.kubeconfig, context=args.context)
    except Exception as exc:  # noqa: BLE001 - a bad kubeconfig is a usage error, reported in one line
        raise _HubError(f"cannot load kubeconfig {args.kubeconfig}: {exc}") from None
    timeout = args.request_timeout
    host = api.configuration.host
    try:
        groups = client.ApisApi(api).get_api_versions(_request_timeout=timeout)
        group = next((g for g in groups.groups or [] if g.name == GROUP), None)
        version: str | None = None
        resources = None
        served: list[str] = []
        if group is not None:
            served = [v.version for v in group.versions or []]
            preferred = group.preferred_version
            version = VERSION if VERSION in served else (preferred.version if preferred is not None else None)
            if version is not None:
                listing = client.CustomObjectsApi(api).get_api_resources(GROUP, version, _request_timeout=timeout)
                resources = [{"name": r.name, "namespaced": r.namespaced, "kind": r.kind} for r in listing.resources or []]
        results = c.check_resource(version, resources)
        # check_resource fails "served" when version is None
        if version is None or any(r.outcome == c.FAIL and r.rule == "served" for r in results):
            return results, host
        custom = client.CustomObjectsApi(api)
        selector = f"{LABEL_CLUSTER_MANAGER}={args.manager}" if args.manager else None

        def listed(version: str) -> list[dict]:
            out: list[dict] = []
            token = None
            while True:
                kw: dict[str, Any] = {"limit": 500, "_request_timeout": timeout}
                if token:
                    kw["_continue"] = token
                if selector:
                    kw["label_selector"] = selector
                # the custom objects API returns the decoded JSON list; the client annotates it as object
                if args.namespace:
                    page = cast("dict[str, Any]",
                                custom.list_namespaced_custom_object(GROUP, version, args.namespace, PLURAL, **kw))
                else:
                    page = cast("dict[str, Any]", custom.list_cluster_custom_object(GROUP, version, PLURAL, **kw))
                out.extend(page.get("items") or [])
                token = (page.get("metadata") or {}).get("continue")
                if not token:
                    return out

        profiles = listed(version)
        results += c.check_versions(served)
        core = client.CoreV1Api(api)
        ns_labels: dict[str, dict[str, str] | None] = {}
        for ns in sorted({(p.get("metadata") or {}).get("namespace") or "" for p in profiles} - {""}):
            try:
                meta = core.read_namespace(ns, _request_timeout=timeout).metadata
                ns_labels[ns] = dict((meta.labels if meta is not None else None) or {})
            except ApiException:
                ns_labels[ns] = None
        where = f" in namespace {args.namespace}" if args.namespace else " in all namespaces"
        if args.manager:
            where += f" managed by {args.manager}"
        results += c.check_profiles(profiles, ns_labels, where=where)
        if VERSION_V1ALPHA2 in served and version != VERSION_V1ALPHA2:  # both versions: the same profiles
            results += c.check_v1alpha2(profiles, listed(VERSION_V1ALPHA2))
        scope = f"{host}, namespace {args.namespace}" if args.namespace else f"{host}, all namespaces"
        return results, scope
    except ApiException as exc:
        raise _HubError(f"{host}: {exc.status} {exc.reason}: {(exc.body or '').strip()[:300]}") from None
    except OSError as exc:
        raise _HubError(f"cannot reach {host}: {exc}") from None
    except Exception as exc:
        if type(exc).__module__.startswith("urllib3"):
            raise _HubError(f"cannot reach {host}: {exc}") from None
        raise


def run_check(args: argparse.Namespace) -> int:
    from ..inventory import conformance as c

    logging.getLogger("urllib3").setLevel(logging.ERROR)  # connection retries end in one error line below
    try:
        results, scope = _gather(args)
    except _HubError as exc:
        print(f"fleetplane inventory check: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    summary = c.summarize(results)
    failed = summary[c.FAIL] > 0 or (args.strict and summary[c.WARN] > 0)
    if args.output == "json":
        json.dump({"scope": scope, "results": [r.to_dict() for r in results], "summary": summary,
                   "passed": not failed}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(f"ClusterProfile conformance (KEP-4322): {scope}")
        w_subject = max((len(r.subject) for r in results), default=0)
        w_rule = max((len(r.rule) for r in results), default=0)
        for r in results:
            print(f"{r.outcome:<4}  {r.subject:<{w_subject}}  {r.rule:<{w_rule}}  {r.message}")
        verdict = "FAILED" if failed else "PASSED"
        line = (f"Summary: {verdict}: {summary['profiles']} profile(s), {summary['checks']} checks: "
                f"{summary[c.PASS]} passed, {summary[c.WARN]} warnings, {summary[c.FAIL]} failed")
        if summary["failed_rules"]:
            line += f" (failed rules: {', '.join(summary['failed_rules'])})"
        elif failed:
            line += " (--strict: warnings count as failures)"
        print(line)
    return EXIT_FAILED if failed else EXIT_OK
