"""Per-cluster overrides (fleet/placement/overrides.py): parsing and validation with field paths,
application to a child, the replica cap in the decision, and the write-time admission check."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from fleetplane.fleet.placement import ClusterInfo, PolicyError, decide, parse_policy
from fleetplane.fleet.placement import overrides as ov
from fleetplane.fleet.placement.admission import admission_checks

SPEC: dict[str, Any] = {
    "replicas": 6, "selector": {"matchLabels": {"app": "web"}},
    "template": {"metadata": {"labels": {"app": "web"}},
                 "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "env": [{"name": "A", "value": "1"}],
                                          "resources": {"requests": {"cpu": "100m"}}},
                                         {"name": "side", "image": "docker.io/library/busybox@sha256:abc"}]}}}
EU = ClusterInfo("eu-1", labels={"region": "eu"}, properties={"location": "eu-west-1"})
US = ClusterInfo("us-1", labels={"region": "us"})


def policy(doc: Any) -> Any:
    return parse_policy(yaml.safe_dump({"overrides": doc}))


def errors_of(doc: Any) -> list[str]:
    with pytest.raises(PolicyError) as info:
        policy(doc)
    return info.value.errors


def applied(doc: Any, cluster: ClusterInfo, spec: dict | None = None) -> ov.Applied:
    p = policy(doc)
    return ov.apply(spec or copy.deepcopy(SPEC), {"app": "web", "kcp.dev/cluster": cluster.name}, {"x": "y"},
                    ov.matching(p.overrides, cluster))


def test_selection_by_names_labels_properties_or_every_cluster() -> None:
    p = policy([{"clusters": ["eu-1"], "env": {"A": "2"}},
                {"labels": "region=us", "env": {"B": "1"}},
                {"properties": "location=eu-west-1", "env": {"C": "1"}},
                {"labels": {"matchLabels": {"region": "eu"}}, "env": {"D": "1"}},
                {"env": {"E": "1"}}])
    assert [o.index for o in ov.matching(p.overrides, EU)] == [0, 2, 3, 4]
    assert [o.index for o in ov.matching(p.overrides, US)] == [1, 4]


def test_image_env_resources_labels_annotations_applied_in_order() -> None:
    a = applied([{"clusters": ["eu-1"], "container": "web", "image": {"registry": "eu.gcr.io/acme", "tag": "1.2.3"},
                  "env": {"LOG_LEVEL": "debug", "A": 3}, "resources": {"limits": {"cpu": 0.5, "memory": "256Mi"}},
                  "labels": {"tier": "edge"}, "annotations": {"team": "eu"}},
                 {"env": [{"name": "LOG_LEVEL", "value": "info"}]}], EU)
    web, side = a.spec["template"]["spec"]["containers"]
    assert web["image"] == "eu.gcr.io/acme/nginx:1.2.3"
    assert side["image"] == "docker.io/library/busybox@sha256:abc"  # container: web only
    # later rules win; env merged by name (kube's EnvVar.value is a string)
    assert web["env"] == [{"name": "A", "value": "3"}, {"name": "LOG_LEVEL", "value": "info"}]
    assert side["env"] == [{"name": "LOG_LEVEL", "value": "info"}]  # the second rule: every container
    assert web["resources"] == {"requests": {"cpu": "100m"}, "limits": {"cpu": "500m", "memory": "256Mi"}}
    assert a.labels["tier"] == "edge" and a.spec["template"]["metadata"]["labels"] == {"app": "web", "tier": "edge"}
    assert a.annotations == {"x": "y", "team": "eu"}
    assert a.spec["template"]["metadata"]["annotations"] == {"team": "eu"}
    assert a.lines[0] == "image eu.gcr.io/acme/nginx:1.2.3 in web (overrides[0])"
    assert "env LOG_LEVEL=info (overrides[1])" in a.lines
    rec = a.child_annotations()
    assert rec[ov.ANNOTATION_OVERRIDES] == "0,1" and len(rec[ov.ANNOTATION_OVERRIDES_HASH]) == 16
    assert rec[ov.ANNOTATION_OVERRIDES_METADATA] == "annotations=team;labels=tier"
    assert SPEC["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"  # the input is not changed


def test_registry_replaces_a_domain_and_keeps_the_path_tag_replaces_a_digest() -> None:
    a = applied([{"image": {"registry": "registry.local:5000/mirror"}}], US)
    assert [c["image"] for c in a.spec["template"]["spec"]["containers"]] == [
        "registry.local:5000/mirror/nginx:1.27", "registry.local:5000/mirror/library/busybox@sha256:abc"]
    a = applied([{"image": {"tag": "1.36", "container": "side"}}], US)
    assert a.spec["template"]["spec"]["containers"][1]["image"] == "docker.io/library/busybox:1.36"


def test_no_rules_no_change_and_no_record() -> None:
    a = applied([{"clusters": ["eu-1"], "env": {"A": "2"}}], US)
    assert a.spec == SPEC and a.child_annotations() == {} and a.hash is None
    cap_only = applied([{"maxReplicas": 2}], US)
    assert cap_only.hash is None and cap_only.lines == ["maxReplicas 2 (overrides[0])"]


def test_the_hash_follows_what_applies() -> None:
    one = applied([{"clusters": ["eu-1"], "env": {"A": "2"}}, {"clusters": ["us-1"], "env": {"A": "3"}}], EU)
    other = applied([{"clusters": ["eu-1"], "env": {"A": "2"}}, {"clusters": ["us-1"], "env": {"A": "4"}}], EU)
    assert one.hash == other.hash  # a rule that does not select eu-1 changed: eu-1's child did not
    changed = applied([{"clusters": ["eu-1"], "env": {"A": "5"}}], EU)
    assert changed.hash != one.hash


def test_json_patch_on_the_child_and_its_metadata() -> None:
    a = applied([{"jsonPatch": [{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "x:1"},
                                {"op": "add", "path": "/spec/template/spec/containers/0/args", "value": ["-v"]},
                                {"op": "add", "path": "/metadata/labels/zone", "value": "a"},
                                {"op": "remove", "path": "/metadata/annotations/x"}]}], US)
    assert a.spec["template"]["spec"]["containers"][0]["image"] == "x:1"
    assert a.spec["template"]["spec"]["containers"][0]["args"] == ["-v"]
    assert a.labels["zone"] == "a" and "x" not in a.annotations
    assert a.managed == {"labels": ["zone"], "annotations": ["x"]}
    # what to take off a child whose rules changed
    stale = ov.stale_keys({**a.annotations, **a.child_annotations()}, {"app": "web"}, {"x": "y"})
    assert stale == {"labels": {"zone"}, "annotations": set(ov.CHILD_ANNOTATIONS)}


def test_a_rule_that_breaks_the_child_names_the_rule_and_field() -> None:
    with pytest.raises(ov.OverrideError) as info:
        applied([{"env": {"A": "1"}}, {"jsonPatch": [{"op": "replace", "path": "/spec/template/spec/containers/3/image",
                                                      "value": "x"}]}], US)
    assert info.value.errors == ["overrides[1].jsonPatch[0]: path /spec/template/spec/containers/3/image does not exist"]
    with pytest.raises(ov.OverrideError) as info:
        applied([{"container": "db", "env": {"A": "1"}}], US)
    assert info.value.errors == ['overrides[0].container: no container named "db" in the pod template '
                                 "(containers: web, side)"]
    with pytest.raises(ov.OverrideError) as info:  # the result is validated as kube validates a template
        applied([{"jsonPatch": [{"op": "remove", "path": "/spec/template/spec/containers/0/image"}]}], US)
    assert info.value.errors == ["overrides: spec.template.spec.containers[0].image: Required value"]
    with pytest.raises(ov.OverrideError) as info:
        applied([{"jsonPatch": [{"op": "replace", "path": "/spec/template/metadata/labels/app", "value": "x"}]}], US)
    assert "`selector` does not match template `labels`" in info.value.errors[0]


@pytest.mark.parametrize(("doc", "want"), [
    ({"colour": "red"}, "overrides[0].colour: unknown field"),
    ({"env": {"1X": "a"}}, 'overrides[0].env[1X]: Invalid value: "1X": a valid environment variable name'),
    ({"env": [{"value": "a"}]}, "overrides[0].env[0].name: Required value"),
    ({"resources": {"limits": {"cpu": "lots"}}},
     "overrides[0].resources.limits[cpu]: Invalid value: \"lots\": quantities must match the regular expression"),
    ({"resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "2"}}},
     "overrides[0].resources.requests[cpu]: Invalid value: \"2\": must be less than or equal to cpu limit of 1"),
    ({"image": {"registry": "Not A Registry"}}, 'overrides[0].image.registry: Invalid value: "Not A Registry"'),
    ({"image": {"tag": "-bad"}}, 'overrides[0].image.tag: Invalid value: "-bad": must be a valid image tag'),
    ({"image": {}}, "overrides[0].image: give registry, tag or both"),
    ({"maxReplicas": -1}, "overrides[0].maxReplicas: Invalid value: -1: must be a non-negative integer"),
    ({"labels": {"kcp.dev/cluster": "x"}}, "overrides[0].labels[kcp.dev/cluster]: Forbidden"),
    ({"labels": {"a": "not a value!"}}, "overrides[0].labels: Invalid value: \"not a value!\""),
    ({"annotations": {"placement.fleetplane.io/decision": "x"}},
     "overrides[0].annotations[placement.fleetplane.io/decision]: Forbidden"),
    ({"jsonPatch": [{"op": "frob", "path": "/spec/x"}]}, 'overrides[0].jsonPatch[0].op: Unsupported value: "frob"'),
    ({"jsonPatch": [{"op": "add", "path": "spec/x", "value": 1}]},
     "overrides[0].jsonPatch[0].path: Invalid value: \"spec/x\": a JSON pointer starts with '/'"),
    ({"jsonPatch": [{"op": "add", "path": "/spec/a~2b", "value": 1}]}, "'~' must be followed by 0 or 1"),
    ({"jsonPatch": [{"op": "replace", "path": "/spec/replicas", "value": 1}]}, "may not change /spec/replicas"),
    ({"jsonPatch": [{"op": "replace", "path": "/spec/selector/matchLabels/app", "value": "x"}]},
     "may not change /spec/selector"),
    ({"jsonPatch": [{"op": "replace", "path": "/status/replicas", "value": 1}]}, "only paths under /spec/"),
    ({"jsonPatch": [{"op": "add", "path": "/spec/x"}]}, "overrides[0].jsonPatch[0].value: Required value"),
    ({"clusters": ["a"]}, "overrides[0]: changes nothing"),
    ({"labels": "region in (", "env": {"A": "1"}}, "overrides[0].labels:"),
])
def test_validation_names_the_field(doc: dict, want: str) -> None:
    errs = errors_of([doc])
    assert any(e.startswith("placement.fleetplane.io/policy." + want) or want in e for e in errs), errs


def test_overrides_must_be_a_list() -> None:
    assert errors_of({"a": 1}) == ["placement.fleetplane.io/policy.overrides: must be a list of rules, not a mapping"]


def test_max_replicas_caps_the_cluster_in_the_decision_and_the_rest_goes_elsewhere() -> None:
    p = policy([{"clusters": ["eu-1"], "maxReplicas": 1}, {"labels": "region=eu", "maxReplicas": 2}])
    d = decide(9, p, [EU, US, ClusterInfo("eu-2", labels={"region": "eu"})], seed="default/web")
    assert d.assignment() == {"eu-1": 2, "eu-2": 2, "us-1": 5}  # the later rule wins for eu-1
    assert d.unplaced == 0
    assert "at most 2 replicas (overrides[1] maxReplicas)" in d.by_name()["eu-1"].note
    zero = decide(4, policy([{"clusters": ["us-1"], "maxReplicas": 0}]), [EU, US])
    assert zero.assignment() == {"eu-1": 4} and zero.by_name()["us-1"].reason == "overrides[0] maxReplicas is 0"
    full = decide(4, policy([{"maxReplicas": 1}]), [EU, US])
    assert full.unplaced == 2 and "eu-1: at its overrides' maxReplicas (1)" in full.reasons


def test_admission_rejects_with_kube_field_paths_and_ratchets() -> None:
    check = admission_checks()[("apps", "Deployment")]

    def obj(text: str, labels: dict | None = None) -> dict:
        return {"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "labels": labels or {},
                             "annotations": {"placement.fleetplane.io/policy": text}},
                "spec": copy.deepcopy(SPEC)}

    bad = obj("overrides:\n- jsonPatch: [{op: replace, path: /spec/template/spec/containers/3/image, value: x}]\n"
              "- env: {1X: a}\n")
    errs = check(bad, None, {})
    assert [str(e) for e in errs] == [
        'metadata.annotations[placement.fleetplane.io/policy].overrides[1].env[1X]: Invalid value: "1X": '
        + ov._ENV_NAME_MSG]
    bad = obj("overrides:\n- jsonPatch: [{op: replace, path: /spec/template/spec/containers/3/image, value: x}]\n")
    errs = check(bad, None, {})
    assert [(e.type, e.field) for e in errs] == [
        ("FieldValueInvalid", "metadata.annotations[placement.fleetplane.io/policy].overrides[0].jsonPatch[0]")]
    assert errs[0].message() == "Invalid value: path /spec/template/spec/containers/3/image does not exist"
    assert [str(e) for e in check(obj("strategy: Odd"), None, {})] == [
        "metadata.annotations[placement.fleetplane.io/policy].strategy: Invalid value: must be one of Even, "
        "Weighted, Capacity, not 'Odd'"]
    assert check(obj("strategy: Odd"), obj("strategy: Odd"), {}) == []  # unchanged on update: not checked again
    assert check(obj("strategy: Odd", {"kcp.dev/cluster": "east"}), None, {}) == []  # a leaf: not placed
    assert check(obj("overrides: [{clusters: [a], env: {A: '1'}}]"), None, {}) == []
    # a rule that needs an earlier one's change passes; one that applies on its own passes too
    chained = obj("overrides:\n- jsonPatch: [{op: add, path: /spec/template/spec/containers/-, "
                  "value: {name: c, image: 'c:1'}}]\n- jsonPatch: [{op: replace, path: "
                  "/spec/template/spec/containers/2/image, value: 'c:2'}]\n")
    assert check(chained, None, {}) == []
    ds = admission_checks()[("apps", "DaemonSet")]
    errs = ds(obj("overrides: [{maxReplicas: 1}]"), None, {})
    assert [str(e) for e in errs] == ["metadata.annotations[placement.fleetplane.io/policy].overrides[0].maxReplicas: "
                                      "Invalid value: not used by a DaemonSet (one per cluster)"]


def test_admission_of_cluster_daemonsets_and_services() -> None:
    cds = admission_checks()[("fleet.fleetplane.io", "ClusterDaemonSet")]
    obj = {"metadata": {"name": "agent"},
           "spec": {**copy.deepcopy(SPEC), "placement": {"overrides": [{"container": "nope", "env": {"A": "1"}}]}}}
    errs = cds(obj, None, {})
    assert [e.field for e in errs] == ["spec.placement.overrides[0].container"]
    svc = admission_checks()[("", "Service")]
    errs = svc({"metadata": {"name": "web", "annotations": {"placement.fleetplane.io/policy": "required: [1]"}}},
               None, {})
    assert [e.field for e in errs] == ["metadata.annotations[placement.fleetplane.io/policy].required[0]"]


def test_the_cache_reuses_a_child_and_takes_the_new_share() -> None:
    p = policy([{"env": {"A": "2"}}])
    cache = ov.Cache()
    first = cache.apply("us-1", {**copy.deepcopy(SPEC), "replicas": 2}, {}, {}, p.overrides)
    again = cache.apply("us-1", {**copy.deepcopy(SPEC), "replicas": 5}, {}, {}, p.overrides)
    assert again.spec["replicas"] == 5 and first.spec["replicas"] == 2
    assert again.spec["template"] == first.spec["template"] and again.hash == first.hash
    other = policy([{"env": {"A": "3"}}])
    changed = cache.apply("us-1", copy.deepcopy(SPEC), {}, {}, other.overrides)
    assert changed.hash != first.hash
    assert changed.spec["template"]["spec"]["containers"][0]["env"] == [{"name": "A", "value": "3"}]
    sts = {**copy.deepcopy(SPEC), "ordinals": {"start": 3}}
    assert cache.apply("eu-1", sts, {}, {}, p.overrides).spec["ordinals"] == {"start": 3}
    assert cache.apply("eu-1", {**sts, "ordinals": {"start": 7}}, {}, {}, p.overrides).spec["ordinals"] == {"start": 7}
