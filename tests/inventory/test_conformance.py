"""The conformance rules as pure functions, and the CLI's argument parsing."""

from __future__ import annotations

import argparse
import base64

import pytest
import yaml

from fleetplane.cli.inventory import add_parser
from fleetplane.inventory.conformance import (
    FAIL,
    PASS,
    RULES,
    WARN,
    check_profiles,
    check_resource,
    summarize,
)

from . import kep_examples as kep

CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()
DISCOVERY = [{"name": "clusterprofiles", "namespaced": True, "kind": "ClusterProfile"},
             {"name": "clusterprofiles/status", "namespaced": True, "kind": "ClusterProfile"}]


def good(name: str = "c1", ns: str = "fleet") -> dict:
    return {
        "apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile",
        "metadata": {"name": name, "namespace": ns, "labels": {"x-k8s.io/cluster-manager": "mgr"}},
        "spec": {"displayName": name, "clusterManager": {"name": "mgr"}},
        "status": {
            "version": {"kubernetes": "1.31.2"},
            "conditions": [
                {"type": "ControlPlaneHealthy", "status": "True", "reason": "Healthy", "message": "",
                 "lastTransitionTime": "2024-01-01T00:00:00Z", "observedGeneration": 1},
                {"type": "Joined", "status": "True", "reason": "Joined", "message": "", "lastTransitionTime": "2024-01-01T00:00:00Z"}],
            "properties": [{"name": "location", "value": "us-east-1", "lastObservedTime": "2024-01-01T00:00:00Z"}],
            "accessProviders": [{"name": "secretreader", "cluster": {
                "server": "https://spoke:6443", "certificate-authority-data": CA,
                "extensions": [{"name": "client.authentication.k8s.io/exec", "extension": {"clusterName": name}}]}}],
        },
    }


def by_rule(results, subject: str = "fleet/c1") -> dict[str, tuple[str, str]]:
    return {r.rule: (r.outcome, r.message) for r in results if r.subject == subject}


def test_resource_rules() -> None:
    assert [(r.rule, r.outcome) for r in check_resource("v1alpha1", DISCOVERY)] == [
        ("served", PASS), ("namespaced", PASS), ("status-subresource", PASS)]
    assert [(r.rule, r.outcome) for r in check_resource(None, None)] == [("served", FAIL)]
    assert [(r.rule, r.outcome) for r in check_resource("v1alpha1", [{"name": "other"}])] == [("served", FAIL)]
    rs = check_resource("v1alpha2", [{"name": "clusterprofiles", "namespaced": False}])
    assert [(r.rule, r.outcome) for r in rs] == [("served", PASS), ("namespaced", FAIL), ("status-subresource", WARN)]


def test_a_good_profile_passes_every_rule() -> None:
    results = check_profiles([good()], {"fleet": {}})
    rules = by_rule(results)
    assert {r: o for r, (o, _) in rules.items()} == {r: PASS for r in RULES if r not in (
        "served", "namespaced", "status-subresource", "profiles-present",
        "v1alpha2-served", "v1alpha2-shape", "versions-agree")}  # (the v1alpha2 rules: test_v1alpha2.py)
    assert summarize(results)["failed_rules"] == []


def test_no_profiles_fails() -> None:
    (r,) = check_profiles([], {}, where=" in namespace x")
    assert (r.rule, r.outcome, r.message) == ("profiles-present", FAIL, "no ClusterProfiles in namespace x")


@pytest.mark.parametrize("mutate, rule, outcome, text", [
    (lambda p: p["metadata"]["labels"].clear(), "manager-label", FAIL, "missing"),
    (lambda p: p["metadata"]["labels"].update({"x-k8s.io/cluster-manager": "x"}), "manager-label", FAIL, "differs"),
    (lambda p: p["spec"]["clusterManager"].update(name="a b"), "manager-name", FAIL, "not a valid label value"),
    (lambda p: p["status"]["conditions"].pop(0), "condition-ControlPlaneHealthy", WARN, "not reported"),
    (lambda p: p["status"]["conditions"].pop(1), "condition-Joined", WARN, "not reported"),
    (lambda p: p["status"]["conditions"][0].update(status=True), "conditions", FAIL, "is not \"True\""),
    (lambda p: p["status"]["conditions"][0].pop("reason"), "conditions", FAIL, "reason"),
    (lambda p: p["status"]["conditions"].append(dict(p["status"]["conditions"][0])), "conditions", FAIL, "appears 2 times"),
    (lambda p: p["status"].pop("version"), "version", WARN, "not reported"),
    (lambda p: p["status"]["properties"].append({"name": "location", "value": "x"}), "properties", FAIL, "appears 2 times"),
    (lambda p: p["status"]["accessProviders"][0]["cluster"].update(server="spoke"), "access-providers", FAIL, "absolute"),
    (lambda p: p["status"]["accessProviders"][0]["cluster"].update({"certificate-authority-data": "bm90IGEgY2VydA=="}),
     "access-providers", FAIL, "PEM certificates"),
    (lambda p: p["status"]["accessProviders"][0]["cluster"].update({"proxy-url": "ftp://p"}), "access-providers", FAIL, "proxy-url"),
    (lambda p: p["status"]["accessProviders"][0]["cluster"]["extensions"].append(
        {"name": "client.authentication.k8s.io/exec", "extension": {}}), "access-providers", FAIL, "appears 2 times"),
    (lambda p: p["status"]["accessProviders"][0]["cluster"]["extensions"].append(
        {"name": "clusterprofiles.multicluster.x-k8s.io/exec/additional-args", "extension": {"a": 1}}),
     "access-providers", FAIL, "list of strings"),
    (lambda p: p["status"]["accessProviders"][0]["cluster"].update({"insecure-skip-tls-verify": True}),
     "access-providers", WARN, "insecure-skip-tls-verify"),
    (lambda p: p["status"]["accessProviders"][0]["cluster"].update({"certificate-authority": "/etc/ca.crt"}),
     "access-providers", WARN, "file path"),
    (lambda p: p["status"].update(credentialProviders=p["status"].pop("accessProviders")), "access-providers", WARN, "deprecated"),
    (lambda p: p["status"].pop("accessProviders"), "access-providers", WARN, "no access providers"),
    (lambda p: p["status"]["accessProviders"][0]["cluster"].update(token="abc"), "no-credentials", FAIL, "cluster.token"),
    (lambda p: p["metadata"]["labels"].update({"multicluster.x-k8s.io/inventory-member-id": ""}), "member-id", FAIL, "empty"),
])
def test_each_rule_reports(mutate, rule: str, outcome: str, text: str) -> None:
    p = good()
    mutate(p)
    got, message = by_rule(check_profiles([p], {"fleet": {}}))[rule]
    assert (got, text in message) == (outcome, True), message
    assert RULES[rule][0] is (outcome == FAIL) or outcome == WARN


def test_clusterset_rule() -> None:
    p = good()
    p["metadata"]["labels"]["clusterset.multicluster.x-k8s.io"] = "dev"
    assert by_rule(check_profiles([p], {"fleet": {"multicluster.x-k8s.io/clusterset": "prod"}}))["clusterset-namespace"][0] == FAIL
    assert by_rule(check_profiles([p], {"fleet": {"multicluster.x-k8s.io/clusterset": "dev"}}))["clusterset-namespace"][0] == PASS
    assert by_rule(check_profiles([p], {"fleet": {}}))["clusterset-namespace"][0] == WARN  # claim without a labelled namespace
    assert by_rule(check_profiles([p], {"fleet": None}))["clusterset-namespace"][0] == WARN  # namespace not readable
    assert by_rule(check_profiles([p], {"fleet": {"multicluster.x-k8s.io/clusterset": "a",
                                                  "clusterset.multicluster.x-k8s.io": "b"}}))["clusterset-namespace"][0] == FAIL


def test_duplicate_member_clusters_warn() -> None:
    a, b, c = good("a"), good("b"), good("c", ns="other")
    for p in (a, b, c):
        p["status"]["properties"].append({"name": "id.k8s.io", "value": "cluster-uid-1"})
    results = check_profiles([a, b, c], {"fleet": {}, "other": {}})
    assert by_rule(results, "fleet/a")["unique-member"] == (WARN, "represents the same member cluster as fleet/b "
                                                                  "(consumers act only on the oldest)")
    assert by_rule(results, "other/c")["unique-member"][0] == PASS


def test_kep_api_example_as_written() -> None:
    # The KEP's example, were a hub to store it as written: `status: True` (a boolean) and no reason.
    p = yaml.safe_load(kep.API_EXAMPLE)
    p["metadata"]["namespace"] = "fleet"
    rules = by_rule(check_profiles([p], {"fleet": {}}), "fleet/generated-cluster-name")
    assert rules["conditions"][0] == FAIL
    assert rules["manager-label"][0] == PASS and rules["no-credentials"][0] == PASS


def test_summary() -> None:
    p = good()
    p["status"].pop("version")
    results = check_resource("v1alpha1", DISCOVERY) + check_profiles([p, good("c2")], {"fleet": {}})
    s = summarize(results)
    assert s["profiles"] == 2 and s[WARN] == 1 and s[FAIL] == 0 and s["checks"] == len(results)


def test_cli_parser() -> None:
    p = argparse.ArgumentParser(prog="fp")
    sub = p.add_subparsers(dest="command", required=True)
    add_parser(sub)
    args = p.parse_args(["inventory", "check", "--kubeconfig", "k", "-n", "fleet", "--context", "c", "--strict", "-o", "json"])
    assert (args.command, args.inventory_command, args.kubeconfig, args.namespace, args.context, args.strict, args.output) == (
        "inventory", "check", "k", "fleet", "c", True, "json")
    assert callable(args.func)
    with pytest.raises(SystemExit):
        p.parse_args(["inventory", "check"])  # --kubeconfig is required
