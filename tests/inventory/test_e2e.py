"""ClusterProfiles on a real hub process, driven by the real kubectl, kubernetes_asyncio and the CLI.

The hub serves ``clusterprofiles.multicluster.x-k8s.io`` in every logical cluster as a built-in-like
type, with :func:`fleetplane.inventory.admit` as its admission: nothing is applied first.
"""

from __future__ import annotations

import json
import socket

import pytest
import yaml

from ..harness import Kubectl
from . import kep_examples as kep
from .conftest import Inventory, ca_data

pytestmark = pytest.mark.timeout(180)


def profile_yaml(name: str, manager: str = "fleet-manager", labels: dict | None = None, display: str | None = None) -> str:
    md: dict = {"name": name}
    if labels is not None:
        md["labels"] = labels
    spec: dict = {"clusterManager": {"name": manager}}
    if display:
        spec["displayName"] = display
    return yaml.safe_dump({"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile", "metadata": md, "spec": spec})


def good_status(name: str, *, joined: bool = True) -> dict:
    conds = [{"type": "ControlPlaneHealthy", "status": "True", "reason": "Healthy", "message": "healthz ok",
              "lastTransitionTime": "2024-01-01T00:00:00Z"}]
    if joined:
        conds.append({"type": "Joined", "status": "True", "reason": "Joined", "message": "",
                      "lastTransitionTime": "2024-01-01T00:00:00Z"})
    return {"status": {
        "version": {"kubernetes": "1.31.2"},
        "conditions": conds,
        "properties": [{"name": "location", "value": "us-east-1"}],
        "accessProviders": [{"name": "secretreader", "cluster": {
            "server": f"https://{name}.example.dev:6443", "certificate-authority-data": ca_data(),
            "extensions": [{"name": "client.authentication.k8s.io/exec", "extension": {"clusterName": name}}]}}],
    }}


#: v1alpha1 by name: kubectl's plain ``clusterprofile`` is the preferred version, v1alpha2
V1ALPHA1 = "clusterprofiles.v1alpha1.multicluster.x-k8s.io"


def patch_status(k: Kubectl, name: str, status: dict, check: bool = True, resource: str = "clusterprofile"):
    return k("patch", resource, name, "--subresource=status", "--type=merge", "-p", json.dumps(status), check=check)


# -- served everywhere ----------------------------------------------------------------------------


def test_served_in_every_logical_cluster_without_a_crd(inventory: Inventory, hub, tmp_path) -> None:
    k = inventory.kubectl
    out = k("api-resources", "--api-group=multicluster.x-k8s.io", "--no-headers").out
    # the group also holds PlacementDecisions (KEP-5313), served by the fleet plugin (tests/decisions);
    # the preferred version: v1alpha2 (v1alpha1 is stored, served too)
    (line,) = [ln for ln in out.strip().splitlines() if ln.startswith("clusterprofiles ")]
    assert line.split() == ["clusterprofiles", "multicluster.x-k8s.io/v1alpha2", "true", "ClusterProfile"]
    assert "v1alpha1" in k("api-versions").out
    assert "clusterprofiles" not in k("get", "crds", "-o", "name").out  # built-in-like: not stored per cluster
    assert "clusterManager" in k("explain", "clusterprofile.spec").out
    other = Inventory(hub, inventory.cluster + "-b", tmp_path)
    assert "clusterprofiles" in other.kubectl("api-resources", "--api-group=multicluster.x-k8s.io").out
    assert "multicluster" in k("api-resources", "--categories=multicluster", "-o", "name").out


def test_profiles_are_isolated_per_logical_cluster(inventory: Inventory, hub, tmp_path) -> None:
    ns = inventory.namespace(name="fleet")
    inventory.kubectl_in(ns)("apply", "-f", "-", stdin=profile_yaml("c1"))
    other = Inventory(hub, inventory.cluster + "-b", tmp_path)
    other.namespace(name="fleet")
    assert other.kubectl("get", "clusterprofiles", "-n", "fleet", "-o", "name").out.strip() == ""
    every = Kubectl(hub.kubeconfig_for("*", tmp_path))
    names = every("get", "clusterprofiles", "-A", "-o", "name").out
    assert "clusterprofile.multicluster.x-k8s.io/c1" in names


# -- the KEP's examples ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(kep.VALID_EXAMPLES))
def test_kep_examples_apply_unchanged(inventory: Inventory, name: str) -> None:
    text = kep.VALID_EXAMPLES[name]
    doc = yaml.safe_load(text)
    ns = inventory.namespace()  # two examples share the name my-cluster-1 (with different managers)
    k = inventory.kubectl_in(ns)
    assert "created" in k("apply", "-f", "-", stdin=text).out
    got = k.get_json("clusterprofile", doc["metadata"]["name"])
    assert got["spec"] == doc["spec"]
    assert got["metadata"]["labels"]["x-k8s.io/cluster-manager"] == doc["spec"]["clusterManager"]["name"]
    assert "status" not in got  # the status subresource: create does not take a status
    k("apply", "-f", "-", stdin=text)  # again: "configured" when the example carries a status the main endpoint ignores
    assert k.get_json("clusterprofile", doc["metadata"]["name"])["metadata"]["generation"] == 1


@pytest.mark.parametrize("name", sorted(kep.ELIDED_EXAMPLES))
def test_elided_kep_examples(inventory: Inventory, name: str) -> None:
    given, completed = kep.ELIDED_EXAMPLES[name]
    k = inventory.kubectl_in(inventory.namespace())
    bad = k.fail("apply", "-f", "-", stdin=given)  # "spec: ..." and "status: ...": not YAML
    assert "yaml" in bad.err.lower() or "mapping values" in bad.err
    assert "created" in k("apply", "-f", "-", stdin=completed).out


def test_kep_example_statuses(inventory: Inventory) -> None:
    """Each example's status written through /status: the KEP's first example is not valid as written."""
    kubectls: dict[str, Kubectl] = {}
    results = {}
    for name, text in kep.ALL_PROFILES.items():
        k = kubectls[name] = inventory.kubectl_in(inventory.namespace())
        k("apply", "-f", "-", stdin=text)
        results[name] = k("apply", "--server-side", "--subresource=status", "-f", "-", stdin=text, check=False)
    # API Example: `status: True` is a YAML boolean and metav1.Condition requires a reason
    r = results["api-example"]
    assert r.code != 0
    assert "status.conditions[0].status" in r.err and "must be of type string" in r.err
    assert "status.conditions[0].reason: Required value" in r.err
    # the secretreader example's certificate-authority-data is a placeholder, not base64
    r = results["exec-extension"]
    assert r.code != 0 and "certificate-authority-data" in r.err
    # the others are valid as given (the additional-args one needs `extension` to accept a list)
    for name in ("gke", "additional-args", "additional-envs"):
        assert results[name].code == 0, (name, results[name].err)
    got = kubectls["additional-args"].get_json("clusterprofile", "my-on-prem-cluster")
    assert got["status"]["accessProviders"][0]["cluster"]["extensions"][0]["extension"] == [
        "-audience", "https://my-on-prem-k8s.example.dev"]
    got = kubectls["gke"].get_json("clusterprofile", "my-cluster-1")
    assert got["status"] == yaml.safe_load(kep.GKE_EXAMPLE)["status"]

    # corrected: quoted statuses and reasons; a real CA
    fixed = yaml.safe_load(kep.API_EXAMPLE)
    for c in fixed["status"]["conditions"]:
        c["status"], c["reason"] = "True", "Healthy"
    k = kubectls["api-example"]
    k("apply", "--server-side", "--subresource=status", "-f", "-", stdin=yaml.safe_dump(fixed))
    assert k.get_json("clusterprofile", "generated-cluster-name")["status"] == fixed["status"]
    fixed = yaml.safe_load(kep.EXEC_EXTENSION_EXAMPLE)
    fixed["status"]["accessProviders"][0]["cluster"]["certificate-authority-data"] = ca_data()
    k = kubectls["exec-extension"]
    k("apply", "--server-side", "--subresource=status", "-f", "-", stdin=yaml.safe_dump(fixed))
    assert k.get_json("clusterprofile", "my-cluster-1")["status"] == fixed["status"]


def test_printer_columns(inventory: Inventory) -> None:
    k = inventory.kubectl_in(inventory.namespace())
    k("apply", "-f", "-", stdin=profile_yaml("healthy"))
    k("apply", "-f", "-", stdin=profile_yaml("fresh", manager="other-manager"))
    patch_status(k, "healthy", good_status("healthy"))
    lines = k("get", V1ALPHA1).out.strip().splitlines()  # v1alpha2's columns: tests/inventory/test_v1alpha2.py
    assert lines[0].split() == ["NAME", "MANAGER", "VERSION", "HEALTHY", "AGE"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["healthy"][1:4] == ["fleet-manager", "1.31.2", "True"]
    assert rows["fresh"][1] == "other-manager" and len(rows["fresh"]) == 3  # no version, no health yet: empty cells
    patch_status(k, "healthy", {"status": {"conditions": [{
        "type": "ControlPlaneHealthy", "status": "False", "reason": "APIServerDown", "message": "",
        "lastTransitionTime": "2024-01-02T00:00:00Z"}]}})
    row = next(line for line in k("get", V1ALPHA1).out.splitlines() if line.startswith("healthy"))
    assert row.split()[3] == "False"


# -- the rules ----------------------------------------------------------------------------------


def test_cluster_manager_is_immutable(inventory: Inventory) -> None:
    k = inventory.kubectl_in(inventory.namespace())
    k("apply", "-f", "-", stdin=profile_yaml("c1"))
    r = k.fail("patch", "clusterprofile", "c1", "--type=merge", "-p", '{"spec":{"clusterManager":{"name":"thief"}}}')
    assert "immutable" in r.err and "spec.clusterManager" in r.err
    r = k.fail("apply", "-f", "-", stdin=profile_yaml("c1", manager="thief"))
    assert "immutable" in r.err
    k("patch", "clusterprofile", "c1", "--type=merge", "-p", '{"spec":{"displayName":"renamed"}}')  # the rest may change
    assert k.get_json("clusterprofile", "c1")["spec"] == {"clusterManager": {"name": "fleet-manager"}, "displayName": "renamed"}


def test_cluster_manager_label_rule(inventory: Inventory) -> None:
    k = inventory.kubectl_in(inventory.namespace())
    r = k.fail("apply", "-f", "-", stdin=profile_yaml("c1", labels={"x-k8s.io/cluster-manager": "someone-else"}))
    assert 'metadata.labels[x-k8s.io/cluster-manager]: Invalid value: "someone-else"' in r.err
    assert 'must equal spec.clusterManager.name "fleet-manager"' in r.err
    k("apply", "-f", "-", stdin=profile_yaml("c1"))  # no label: the hub sets it
    assert k.get_json("clusterprofile", "c1")["metadata"]["labels"] == {"x-k8s.io/cluster-manager": "fleet-manager"}
    r = k.fail("label", "clusterprofile", "c1", "x-k8s.io/cluster-manager=other", "--overwrite")
    assert "must equal spec.clusterManager.name" in r.err
    k("label", "clusterprofile", "c1", "x-k8s.io/cluster-manager-")
    assert k.get_json("clusterprofile", "c1")["metadata"]["labels"] == {"x-k8s.io/cluster-manager": "fleet-manager"}
    assert k("get", "clusterprofiles", "-l", "x-k8s.io/cluster-manager=fleet-manager", "-o", "name").out.strip() == \
        "clusterprofile.multicluster.x-k8s.io/c1"


def test_no_credentials(inventory: Inventory) -> None:
    k = inventory.kubectl_in(inventory.namespace())
    k("apply", "-f", "-", stdin=profile_yaml("c1"))
    base = good_status("c1")
    cluster = base["status"]["accessProviders"][0]["cluster"]

    cluster["extensions"][0]["extension"]["token"] = "s3cr3t-value"
    r = patch_status(k, "c1", base, check=False)
    assert r.code != 0
    assert ("status.accessProviders[0].cluster.extensions[0].extension.token: Forbidden: credential material is not "
            "allowed in a ClusterProfile") in r.err
    assert "s3cr3t-value" not in r.err

    del cluster["extensions"][0]["extension"]["token"]
    cluster["extensions"].append({"name": "clusterprofiles.multicluster.x-k8s.io/exec/additional-envs",
                                  "extension": {"CLIENT_ID": "id", "CLIENT_SECRET": "s3cr3t-value"}})
    r = patch_status(k, "c1", base, check=False)
    assert "extension.CLIENT_SECRET" in r.err and "s3cr3t-value" not in r.err

    cluster["extensions"][1]["extension"] = {"CLIENT_ID": "id", "TENANT_ID": "tenant"}
    cluster["extensions"].append({"name": "kubeconfig", "extension": {"users": [{"name": "admin", "user": {"client-key-data": "x"}}]}})
    r = patch_status(k, "c1", base, check=False)
    assert "extensions[2].extension.users: Forbidden" in r.err

    cluster["extensions"].pop()  # reachability only: certificate-authority-data, the exec extension, client ids
    patch_status(k, "c1", base)
    assert k.get_json("clusterprofile", "c1")["status"]["accessProviders"][0]["cluster"]["certificate-authority-data"] == ca_data()


def test_no_credentials_even_when_pruned(inventory: Inventory) -> None:
    """A field the schema prunes would still live on in kubectl's last-applied annotation."""
    k = inventory.kubectl_in(inventory.namespace())
    doc = yaml.safe_load(profile_yaml("c1"))
    doc["spec"]["token"] = "s3cr3t-value"
    r = k.fail("apply", "--validate=false", "-f", "-", stdin=yaml.safe_dump(doc))
    assert "metadata.annotations[kubectl.kubernetes.io/last-applied-configuration]" in r.err
    assert "spec.token" in r.err and "s3cr3t-value" not in r.err
    r = k.fail("apply", "-f", "-", stdin=yaml.safe_dump(doc))  # kubectl's default: strict field validation
    assert "token" in r.err


@pytest.mark.parametrize("key", ["multicluster.x-k8s.io/clusterset", "clusterset.multicluster.x-k8s.io"])
def test_clusterset_namespace_rule(inventory: Inventory, key: str) -> None:
    ns = inventory.namespace(labels={key: "prod"})
    k = inventory.kubectl_in(ns)
    k("apply", "-f", "-", stdin=profile_yaml("plain"))  # no claim: the namespace says it
    k("apply", "-f", "-", stdin=profile_yaml("claims-prod", labels={"multicluster.x-k8s.io/clusterset": "prod"}))
    r = k.fail("apply", "-f", "-", stdin=profile_yaml("claims-dev", labels={"clusterset.multicluster.x-k8s.io": "dev"}))
    assert 'metadata.labels[clusterset.multicluster.x-k8s.io]: Invalid value: "dev"' in r.err
    assert 'ClusterSet "prod"' in r.err
    r = patch_status(k, "plain", {"status": {"properties": [{"name": "clusterset.k8s.io", "value": "dev"}]}}, check=False)
    assert r.code != 0 and "status.properties[0].value" in r.err
    patch_status(k, "plain", {"status": {"properties": [{"name": "clusterset.k8s.io", "value": "prod"}]}})
    # elsewhere a profile may name a ClusterSet by property (as the KEP's example does)
    k2 = inventory.kubectl_in(inventory.namespace())
    k2("apply", "-f", "-", stdin=profile_yaml("c"))
    patch_status(k2, "c", {"status": {"properties": [{"name": "clusterset.k8s.io", "value": "dev"}]}})


# -- the status writer --------------------------------------------------------------------------


async def test_status_writer_against_the_hub(inventory: Inventory) -> None:
    from kubernetes_asyncio import config

    from fleetplane.inventory import ClusterProfile, StatusWriter

    ns = inventory.namespace()
    k = inventory.kubectl_in(ns)
    k("apply", "-f", "-", stdin=profile_yaml("c1"))
    # another writer owns Joined
    patch_status(k, "c1", {"status": {"conditions": [{"type": "Joined", "status": "True", "reason": "Joined",
                                                      "message": "", "lastTransitionTime": "2024-01-01T00:00:00Z"}]}})
    api = await config.new_client_from_config(config_file=str(inventory.kubeconfig))
    errors = []
    try:
        writer = StatusWriter(api, field_manager="test-manager", on_error=errors.append)
        cp = ClusterProfile.from_dict(k.get_json("clusterprofile", "c1"))
        cp.status.conditions = []  # this writer's view: only what it owns
        for minor in range(5):  # submitted back to back: coalesced into one write
            cp.kubernetes_version = f"1.31.{minor}"
            cp.set_condition("ControlPlaneHealthy", True, "Healthy", "healthz ok")
            cp.set_property("location", "us-east-1")
            cp.set_property("nodes", str(minor))
            writer.submit_profile(cp)
        await writer.flush()
        assert writer.writes[(ns, "c1")] == 1 and writer.coalesced[(ns, "c1")] == 4
        got = ClusterProfile.from_dict(k.get_json("clusterprofile", "c1"))
        assert got.kubernetes_version == "1.31.4" and got.property_value("nodes") == "4" and got.is_ready()
        assert got.is_joined()  # the other writer's condition is still there (server-side apply merges by type)
        shown = k("get", "clusterprofile", "c1", "--show-managed-fields", "-o", "json").json()
        managers = {m["manager"] for m in shown["metadata"]["managedFields"]}
        assert "test-manager" in managers

        cp.remove_property("nodes")  # dropping a field this writer owns removes it
        writer.submit_profile(cp)
        await writer.flush()
        got = ClusterProfile.from_dict(k.get_json("clusterprofile", "c1"))
        assert got.properties == {"location": "us-east-1"} and got.is_joined()
        assert writer.writes[(ns, "c1")] == 2
        writer.submit_profile(cp)  # unchanged: not written again
        await writer.flush()
        assert writer.writes[(ns, "c1")] == 2

        bad = cp.copy()
        bad.set_property("auth-token", "s3cr3t-value")
        writer.submit_profile(bad)
        writer.submit(ns, "missing", {"version": {"kubernetes": "1.0.0"}})
        await writer.flush()
        assert {(e.key, e.code) for e in errors} == {((ns, "c1"), 422), ((ns, "missing"), 404)}
        assert "s3cr3t-value" not in json.dumps(k.get_json("clusterprofile", "c1"))
        row = next(line for line in k("get", "clusterprofiles").out.splitlines() if line.startswith("c1"))
        assert row.split()[1:4] == ["fleet-manager", "1.31.4", "True"]
        assert await writer.close() == {}
    finally:
        await api.close()


# -- the conformance kit ------------------------------------------------------------------------


def test_inventory_check_passes_on_good_profiles(inventory: Inventory) -> None:
    ns = inventory.namespace()
    k = inventory.kubectl_in(ns)
    for name in ("spoke-1", "spoke-2"):
        k("apply", "-f", "-", stdin=profile_yaml(name))
        patch_status(k, name, good_status(name))
    r = inventory.check("--namespace", ns)
    assert r.code == 0, r.out + r.err
    lines = r.out.strip().splitlines()
    for rule in ("served", "namespaced", "status-subresource", "profiles-present"):
        assert any(line.split()[:3] == ["PASS", "clusterprofiles.multicluster.x-k8s.io", rule] for line in lines), rule
    for name in ("spoke-1", "spoke-2"):
        for rule in ("manager-label", "condition-ControlPlaneHealthy", "condition-Joined", "version",
                     "access-providers", "no-credentials", "clusterset-namespace"):
            assert any(line.split()[:3] == ["PASS", f"{ns}/{name}", rule] for line in lines), (name, rule, r.out)
    assert not any(line.startswith(("FAIL", "WARN")) for line in lines)
    assert lines[-1].startswith("Summary: PASSED: 2 profile(s)")

    r = inventory.check("--namespace", ns, "-o", "json")
    report = json.loads(r.out)
    assert r.code == 0 and report["passed"] is True and report["summary"]["FAIL"] == 0
    assert inventory.check().code == 0  # all namespaces of the logical cluster
    assert inventory.check("--manager", "fleet-manager").code == 0


def test_inventory_check_fails_on_bad_profiles(inventory: Inventory) -> None:
    ns = inventory.namespace()
    k = inventory.kubectl_in(ns)
    k("apply", "-f", "-", stdin=profile_yaml("ok"))
    patch_status(k, "ok", good_status("ok"))
    k("apply", "-f", "-", stdin=profile_yaml("bad"))
    status = good_status("bad")
    cluster = status["status"]["accessProviders"][0]["cluster"]
    cluster["server"] = "spoke-without-scheme"  # v1alpha1's schema takes any string; the kit does not
    cluster["extensions"].append({"name": "client.authentication.k8s.io/exec", "extension": {}})  # duplicate name
    patch_status(k, "bad", status, resource=V1ALPHA1)  # (v1alpha2's schema refuses both)
    r = inventory.check("--namespace", ns)
    assert r.code == 1, r.out
    fails = [line for line in r.out.splitlines() if line.startswith("FAIL")]
    assert [f.split()[1:3] for f in fails] == [[f"{ns}/bad", "access-providers"], [f"{ns}/bad", "v1alpha2-shape"]]
    assert "absolute http(s) URL" in fails[0] and "appears 2 times" in fails[0]
    assert "server must be a valid absolute URL with a host" in fails[1]
    assert "failed rules: access-providers, v1alpha2-shape" in r.out.splitlines()[-1]

    # recommendations only warn, unless --strict
    ns2 = inventory.namespace()
    k2 = inventory.kubectl_in(ns2)
    k2("apply", "-f", "-", stdin=profile_yaml("unjoined"))
    patch_status(k2, "unjoined", good_status("unjoined", joined=False))
    r = inventory.check("--namespace", ns2)
    assert r.code == 0 and any(line.split()[:3] == ["WARN", f"{ns2}/unjoined", "condition-Joined"] for line in r.out.splitlines())
    assert inventory.check("--namespace", ns2, "--strict").code == 1

    # an empty inventory fails (as upstream's conformance suite requires a profile)
    r = inventory.check("--namespace", inventory.namespace())
    assert r.code == 1 and "FAIL" in r.out and "profiles-present" in r.out


def test_inventory_check_unreachable_hub(inventory: Inventory, tmp_path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = yaml.safe_load(inventory.kubeconfig.read_text())
    cfg["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{port}"
    dead = tmp_path / "dead.kubeconfig"
    dead.write_text(yaml.safe_dump(cfg))
    r = inventory.check("--request-timeout", "5", kubeconfig=dead)
    assert r.code == 2 and "error" in r.err
    r = inventory.check(kubeconfig=tmp_path / "missing.kubeconfig")
    assert r.code == 2 and "cannot load kubeconfig" in r.err
