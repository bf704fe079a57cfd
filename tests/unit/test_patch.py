"""JSON patch, JSON merge patch and strategic merge patch as kube-apiserver applies them."""

from __future__ import annotations

import copy

import pytest

from fleetplane.apimachinery.errors import StatusError
from fleetplane.apis import builtin_types, known_type, logical_cluster_type, workload_types
from fleetplane.registry.definitions import metadata_only
from fleetplane.registry.patch import (
    MAX_JSON_PATCH_OPERATIONS,
    PatchMeta,
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
    patch_meta_from_openapi,
)


def patch_meta_for(group: str, kind: str) -> PatchMeta:
    """A built-in kind's patch meta; any other kind's is ObjectMeta's only."""
    rt = known_type(group, kind)
    return rt.patch_meta if rt is not None else metadata_only()


POD = patch_meta_for("", "Pod")
DEPLOY = patch_meta_for("apps", "Deployment")
SERVED = [*builtin_types(), logical_cluster_type(), *workload_types()]


def _cm(**data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": dict(data)}


def _deploy(containers, **spec):
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"template": {"spec": {"containers": containers}}, **spec},
    }


def _containers(obj):
    return obj["spec"]["template"]["spec"]["containers"]


def _raises(code, fn, *args):
    with pytest.raises(StatusError) as info:
        fn(*args)
    assert info.value.code == code, info.value
    return info.value


# ----------------------------------------------------------------------------- JSON patch


class TestJsonPatch:
    def test_add_replace_remove(self):
        doc = _cm(a="1", b="2")
        out = apply_json_patch(
            doc,
            [
                {"op": "replace", "path": "/data/a", "value": "x"},
                {"op": "remove", "path": "/data/b"},
                {"op": "add", "path": "/metadata/labels", "value": {"app": "web"}},
            ],
        )
        assert out["data"] == {"a": "x"}
        assert out["metadata"]["labels"] == {"app": "web"}

    def test_does_not_mutate_input(self):
        doc = _cm(a="1")
        before = copy.deepcopy(doc)
        apply_json_patch(doc, [{"op": "replace", "path": "/data/a", "value": "2"}])
        assert doc == before

    def test_failed_test_op_is_422_with_kube_message(self):
        err = _raises(422, apply_json_patch, _cm(a="1"), [{"op": "test", "path": "/data/a", "value": "2"}])
        assert err.reason == "Invalid"
        assert err.message == "the server rejected our request due to an error in our request"

    def test_successful_test_op(self):
        out = apply_json_patch(
            _cm(a="1"),
            [{"op": "test", "path": "/data/a", "value": "1"}, {"op": "add", "path": "/data/b", "value": "2"}],
        )
        assert out["data"] == {"a": "1", "b": "2"}

    def test_test_op_does_not_equate_true_and_1(self):
        doc = {"spec": {"replicas": 1}}
        _raises(422, apply_json_patch, doc, [{"op": "test", "path": "/spec/replicas", "value": True}])

    @pytest.mark.parametrize(
        "op",
        [
            {"op": "remove", "path": "/data/missing"},
            {"op": "replace", "path": "/nope/x", "value": 1},
            {"op": "add", "path": "/nope/x", "value": 1},
            {"op": "move", "from": "/nope", "path": "/x"},
            {"op": "frobnicate", "path": "/data"},
            {"op": "add", "path": "/data/x"},
        ],
    )
    def test_inapplicable_operation_is_422(self, op):
        _raises(422, apply_json_patch, _cm(a="1"), [op])

    @pytest.mark.parametrize("patch", [{"op": "add"}, "x", 3, None])
    def test_not_a_list_is_400(self, patch):
        err = _raises(400, apply_json_patch, _cm(), patch)
        assert err.reason == "BadRequest"
        assert "jsonpatch.Patch" in err.message

    def test_operation_not_an_object_is_400(self):
        err = _raises(400, apply_json_patch, _cm(), ["add"])
        assert "jsonpatch.Operation" in err.message

    def test_too_many_operations_is_413(self):
        ops = [{"op": "test", "path": "/kind", "value": "ConfigMap"}] * (MAX_JSON_PATCH_OPERATIONS + 1)
        err = _raises(413, apply_json_patch, _cm(), ops)
        assert err.reason == "RequestEntityTooLarge"
        assert err.message == "The allowed maximum operations in a JSON patch is 10000, got 10001"

    def test_exactly_the_maximum_is_fine(self):
        ops = [{"op": "test", "path": "/kind", "value": "ConfigMap"}] * MAX_JSON_PATCH_OPERATIONS
        assert apply_json_patch(_cm(), ops) == _cm()

    def test_append_to_list(self):
        doc = {"metadata": {"finalizers": ["a"]}}
        out = apply_json_patch(doc, [{"op": "add", "path": "/metadata/finalizers/-", "value": "b"}])
        assert out["metadata"]["finalizers"] == ["a", "b"]


# ----------------------------------------------------------------------------- merge patch


class TestMergePatch:
    def test_null_deletes(self):
        out = apply_merge_patch(_cm(a="1", b="2"), {"data": {"a": None}})
        assert out["data"] == {"b": "2"}

    def test_nested_merge_and_add(self):
        doc = {"metadata": {"name": "x", "labels": {"a": "1"}}}
        out = apply_merge_patch(doc, {"metadata": {"labels": {"b": "2"}}})
        assert out == {"metadata": {"name": "x", "labels": {"a": "1", "b": "2"}}}

    def test_lists_are_replaced(self):
        doc = {"metadata": {"finalizers": ["a", "b"]}}
        out = apply_merge_patch(doc, {"metadata": {"finalizers": ["c"]}})
        assert out["metadata"]["finalizers"] == ["c"]

    def test_non_object_value_replaces_object(self):
        out = apply_merge_patch({"spec": {"x": {"y": 1}}}, {"spec": {"x": 5}})
        assert out == {"spec": {"x": 5}}

    def test_nulls_inside_new_objects_are_dropped(self):
        out = apply_merge_patch({}, {"spec": {"a": 1, "b": None}})
        assert out == {"spec": {"a": 1}}

    def test_deleting_missing_key_is_fine(self):
        assert apply_merge_patch(_cm(a="1"), {"data": {"zzz": None}}) == _cm(a="1")

    @pytest.mark.parametrize("patch", [[1, 2], "x", 1, None])
    def test_non_object_patch_is_400(self, patch):
        _raises(400, apply_merge_patch, _cm(), patch)

    def test_does_not_mutate(self):
        doc, patch = _cm(a="1"), {"data": {"a": None, "b": {"c": 1}}}
        before = copy.deepcopy((doc, patch))
        out = apply_merge_patch(doc, patch)
        out["data"]["b"]["c"] = 2
        assert (doc, patch) == before


# ----------------------------------------------------------------------------- strategic merge patch


class TestStrategicMergePatch:
    def test_behaves_as_merge_patch_for_plain_fields(self):
        out = apply_strategic_merge_patch(_cm(a="1", b="2"), {"data": {"a": None, "c": "3"}}, POD)
        assert out["data"] == {"b": "2", "c": "3"}

    def test_finalizers_union_keeps_order(self):
        doc = {"metadata": {"name": "x", "finalizers": ["a", "b"]}}
        out = apply_strategic_merge_patch(
            doc, {"metadata": {"finalizers": ["b", "c"]}}, patch_meta_for("", "Foo")
        )
        assert out["metadata"]["finalizers"] == ["a", "b", "c"]

    def test_new_finalizer_goes_first_like_kube(self):
        # kube's mergeSortedSlice puts items the live list never had ahead of the server-only ones
        doc = {"metadata": {"finalizers": ["a"]}}
        out = apply_strategic_merge_patch(doc, {"metadata": {"finalizers": ["z"]}}, POD)
        assert out["metadata"]["finalizers"] == ["z", "a"]

    def test_merge_patch_would_replace_finalizers(self):
        doc = {"metadata": {"finalizers": ["a"]}}
        assert apply_merge_patch(doc, {"metadata": {"finalizers": ["z"]}})["metadata"]["finalizers"] == ["z"]

    def test_owner_references_merge_by_uid(self):
        doc = {
            "metadata": {
                "ownerReferences": [
                    {"uid": "u1", "kind": "ReplicaSet", "name": "rs1", "controller": True},
                    {"uid": "u2", "kind": "Foo", "name": "f"},
                ]
            }
        }
        patch = {
            "metadata": {
                "ownerReferences": [
                    {"uid": "u1", "blockOwnerDeletion": True},
                    {"uid": "u3", "kind": "Bar", "name": "b"},
                ]
            }
        }
        refs = apply_strategic_merge_patch(doc, patch, patch_meta_for("example.com", "Widget"))["metadata"][
            "ownerReferences"
        ]
        by_uid = {r["uid"]: r for r in refs}
        assert set(by_uid) == {"u1", "u2", "u3"}
        assert by_uid["u1"] == {
            "uid": "u1",
            "kind": "ReplicaSet",
            "name": "rs1",
            "controller": True,
            "blockOwnerDeletion": True,
        }

    def test_containers_merge_by_name_and_nested_lists_merge(self):
        doc = _deploy(
            [
                {
                    "name": "app",
                    "image": "app:1",
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                    "ports": [{"containerPort": 80, "name": "http"}],
                },
                {"name": "sidecar", "image": "side:1"},
            ]
        )
        patch = {
            "spec": {
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "app",
                                "image": "app:2",
                                "env": [{"name": "B", "value": "20"}],
                                "ports": [{"containerPort": 443, "name": "https"}],
                            }
                        ]
                    }
                }
            }
        }
        out = apply_strategic_merge_patch(doc, patch, DEPLOY)
        cs = {c["name"]: c for c in _containers(out)}
        assert set(cs) == {"app", "sidecar"}
        assert cs["app"]["image"] == "app:2"
        assert {e["name"]: e["value"] for e in cs["app"]["env"]} == {"A": "1", "B": "20"}
        assert sorted(p["containerPort"] for p in cs["app"]["ports"]) == [80, 443]
        assert cs["sidecar"] == {"name": "sidecar", "image": "side:1"}

    def test_pod_volume_mounts_merge_by_mount_path(self):
        pod = {"spec": {"containers": [{"name": "c", "volumeMounts": [{"mountPath": "/a", "name": "v1"}]}]}}
        patch = {"spec": {"containers": [{"name": "c", "volumeMounts": [{"mountPath": "/b", "name": "v2"}]}]}}
        out = apply_strategic_merge_patch(pod, patch, POD)
        assert sorted(m["mountPath"] for m in out["spec"]["containers"][0]["volumeMounts"]) == ["/a", "/b"]

    def test_tolerations_are_atomic(self):
        pod = {"spec": {"tolerations": [{"key": "a", "operator": "Exists"}]}}
        out = apply_strategic_merge_patch(
            pod, {"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}}, POD
        )
        assert out["spec"]["tolerations"] == [{"key": "b", "operator": "Exists"}]

    def test_image_pull_secrets_merge_by_name(self):
        pod = {"spec": {"imagePullSecrets": [{"name": "a"}]}}
        out = apply_strategic_merge_patch(pod, {"spec": {"imagePullSecrets": [{"name": "b"}]}}, POD)
        assert sorted(s["name"] for s in out["spec"]["imagePullSecrets"]) == ["a", "b"]

    def test_unknown_kind_replaces_lists_but_merges_metadata(self):
        meta = patch_meta_for("example.com", "Widget")
        doc = {"metadata": {"finalizers": ["a"]}, "spec": {"containers": [{"name": "x"}]}}
        patch = {"metadata": {"finalizers": ["b"]}, "spec": {"containers": [{"name": "y"}]}}
        out = apply_strategic_merge_patch(doc, patch, meta)
        assert sorted(out["metadata"]["finalizers"]) == ["a", "b"]
        assert out["spec"]["containers"] == [{"name": "y"}]

    def test_patch_delete_list_element(self):
        doc = _deploy([{"name": "a", "image": "a"}, {"name": "b", "image": "b"}])
        patch = {"spec": {"template": {"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}}}
        out = apply_strategic_merge_patch(doc, patch, DEPLOY)
        assert _containers(out) == [{"name": "b", "image": "b"}]

    def test_patch_delete_of_absent_element_is_a_no_op(self):
        doc = _deploy([{"name": "a"}])
        patch = {"spec": {"template": {"spec": {"containers": [{"name": "zz", "$patch": "delete"}]}}}}
        assert _containers(apply_strategic_merge_patch(doc, patch, DEPLOY)) == [{"name": "a"}]

    def test_patch_delete_map(self):
        doc = {"metadata": {"labels": {"a": "1"}}, "spec": {"x": 1}}
        out = apply_strategic_merge_patch(doc, {"metadata": {"labels": {"$patch": "delete"}}}, POD)
        assert out["metadata"]["labels"] == {}  # kube leaves an empty map
        out = apply_strategic_merge_patch(doc, {"metadata": {"annotations": {"$patch": "delete"}}}, POD)
        assert "annotations" not in out["metadata"]

    def test_patch_replace_map(self):
        doc = {"spec": {"selector": {"a": "1", "b": "2"}}}
        out = apply_strategic_merge_patch(doc, {"spec": {"selector": {"$patch": "replace", "c": "3"}}}, POD)
        assert out["spec"]["selector"] == {"c": "3"}

    def test_patch_replace_list(self):
        doc = _deploy([{"name": "a", "image": "a"}, {"name": "b", "image": "b"}])
        patch = {
            "spec": {
                "template": {"spec": {"containers": [{"$patch": "replace"}, {"name": "c", "image": "c"}]}}
            }
        }
        out = apply_strategic_merge_patch(doc, patch, DEPLOY)
        assert _containers(out) == [{"name": "c", "image": "c"}]

    def test_patch_replace_list_with_nothing_else_empties_it(self):
        doc = _deploy([{"name": "a"}])
        patch = {"spec": {"template": {"spec": {"containers": [{"$patch": "replace"}]}}}}
        assert _containers(apply_strategic_merge_patch(doc, patch, DEPLOY)) == []

    def test_patch_merge_directive_is_the_default(self):
        doc = {"spec": {"selector": {"a": "1"}}}
        out = apply_strategic_merge_patch(doc, {"spec": {"selector": {"$patch": "merge", "b": "2"}}}, POD)
        assert out["spec"]["selector"] == {"a": "1", "b": "2"}

    def test_top_level_replace(self):
        out = apply_strategic_merge_patch({"a": 1, "b": 2}, {"$patch": "replace", "c": 3}, POD)
        assert out == {"c": 3}

    def test_unknown_patch_directive_is_400(self):
        _raises(400, apply_strategic_merge_patch, {"spec": {}}, {"spec": {"$patch": "explode"}}, POD)

    def test_set_element_order_reorders_containers(self):
        doc = _deploy([{"name": "a", "image": "a"}, {"name": "b", "image": "b"}, {"name": "c", "image": "c"}])
        patch = {
            "spec": {
                "template": {
                    "spec": {
                        "$setElementOrder/containers": [{"name": "c"}, {"name": "a"}, {"name": "b"}],
                        "containers": [{"name": "a", "image": "a2"}],
                    }
                }
            }
        }
        out = apply_strategic_merge_patch(doc, patch, DEPLOY)
        assert [(c["name"], c["image"]) for c in _containers(out)] == [("c", "c"), ("a", "a2"), ("b", "b")]

    def test_set_element_order_adds_new_item_in_place(self):
        # kube's "merge lists of maps" case
        doc = {"spec": {"containers": [{"name": "1", "x": "a"}, {"name": "2", "value": "2", "x": "b"}]}}
        patch = {
            "spec": {
                "$setElementOrder/containers": [{"name": "4"}, {"name": "1"}, {"name": "2"}, {"name": "3"}],
                "containers": [{"name": "4", "value": "4"}, {"name": "3", "value": "3"}],
            }
        }
        out = apply_strategic_merge_patch(doc, patch, POD)
        assert [c["name"] for c in out["spec"]["containers"]] == ["4", "1", "2", "3"]

    def test_set_element_order_on_primitive_list_without_patch_list(self):
        doc = {"metadata": {"finalizers": ["1", "3"]}}
        patch = {"metadata": {"$setElementOrder/finalizers": ["3", "2", "1"]}}
        assert apply_strategic_merge_patch(doc, patch, POD)["metadata"]["finalizers"] == ["3", "1"]

    def test_set_element_order_mismatch_is_422(self):
        doc = {"spec": {"containers": [{"name": "1"}, {"name": "3"}, {"name": "2"}]}}
        patch = {
            "spec": {
                "$setElementOrder/containers": [{"name": "1"}, {"name": "2"}, {"name": "3"}],
                "containers": [{"name": "3", "x": 3}, {"name": "1", "x": 1}],
            }
        }
        err = _raises(422, apply_strategic_merge_patch, doc, patch, POD)
        assert "doesn't match" in err.message

    def test_set_element_order_must_be_a_list(self):
        _raises(400, apply_strategic_merge_patch, {}, {"$setElementOrder/x": "nope"}, POD)

    def test_delete_from_primitive_list(self):
        doc = {"metadata": {"finalizers": ["a", "b", "c", "b"]}}
        patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["b", "zz"]}}
        assert apply_strategic_merge_patch(doc, patch, POD)["metadata"]["finalizers"] == ["a", "c"]

    def test_delete_from_primitive_list_with_kubectl_style_patch(self):
        # what kubectl apply sends: the parallel order list, deletions and additions
        doc = {"metadata": {"finalizers": ["1", "2", "3", "4"]}}
        patch = {
            "metadata": {
                "$setElementOrder/finalizers": ["1", "2"],
                "$deleteFromPrimitiveList/finalizers": ["3"],
            }
        }
        assert apply_strategic_merge_patch(doc, patch, POD)["metadata"]["finalizers"] == ["1", "2", "4"]

    def test_delete_from_primitive_list_on_missing_list_adds_nothing(self):
        doc = {"metadata": {"name": "x"}}
        patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}
        assert apply_strategic_merge_patch(doc, patch, POD) == doc

    def test_delete_from_primitive_list_bad_format_is_400(self):
        _raises(400, apply_strategic_merge_patch, {}, {"$deleteFromPrimitiveList/x": "a"}, POD)
        _raises(400, apply_strategic_merge_patch, {}, {"$deleteFromPrimitiveListx": ["a"]}, POD)

    def test_retain_keys_clears_other_fields(self):
        doc = _deploy(
            [{"name": "a"}],
            strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
        )
        patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
        out = apply_strategic_merge_patch(doc, patch, DEPLOY)
        assert out["spec"]["strategy"] == {"type": "Recreate"}

    def test_retain_keys_inside_a_list_element(self):
        pod = {"spec": {"volumes": [{"name": "v", "emptyDir": {}}, {"name": "w", "emptyDir": {}}]}}
        patch = {
            "spec": {
                "volumes": [{"name": "v", "$retainKeys": ["name", "configMap"], "configMap": {"name": "c"}}]
            }
        }
        vols = {v["name"]: v for v in apply_strategic_merge_patch(pod, patch, POD)["spec"]["volumes"]}
        assert vols["v"] == {"name": "v", "configMap": {"name": "c"}}
        assert vols["w"] == {"name": "w", "emptyDir": {}}

    def test_retain_keys_must_list_the_patched_fields(self):
        patch = {"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {"maxSurge": 1}}}}
        _raises(400, apply_strategic_merge_patch, _deploy([]), patch, DEPLOY)

    def test_retain_keys_must_be_a_list(self):
        _raises(400, apply_strategic_merge_patch, {}, {"spec": {"$retainKeys": "type"}}, DEPLOY)

    def test_preserves_patch_order_like_kube(self):
        # kube: "preserve the order from the patch in a merging list 2"
        doc = {"spec": {"containers": [{"name": "1"}, {"name": "2", "value": "b"}, {"name": "3"}]}}
        patch = {"spec": {"containers": [{"name": "3", "value": "c"}, {"name": "1", "value": "a"}]}}
        out = apply_strategic_merge_patch(doc, patch, POD)
        assert out["spec"]["containers"] == [
            {"name": "2", "value": "b"},
            {"name": "3", "value": "c"},
            {"name": "1", "value": "a"},
        ]

    def test_missing_merge_key_is_422(self):
        doc = {"spec": {"containers": [{"name": "a"}]}}
        err = _raises(422, apply_strategic_merge_patch, doc, {"spec": {"containers": [{"image": "x"}]}}, POD)
        assert "does not contain declared merge key: name" in err.message

    def test_list_of_lists_is_422(self):
        doc = {"metadata": {"finalizers": ["a"]}}
        _raises(422, apply_strategic_merge_patch, doc, {"metadata": {"finalizers": [["b"]]}}, POD)

    def test_new_list_from_patch_is_cleaned_of_directives(self):
        doc = {"spec": {}}
        patch = {
            "spec": {
                "containers": [
                    {"name": "a", "env": [{"name": "X", "value": None}]},
                    {"name": "b", "$patch": "delete"},
                ]
            }
        }
        out = apply_strategic_merge_patch(doc, patch, POD)
        assert out["spec"]["containers"] == [{"name": "a", "env": [{"name": "X"}]}]

    def test_null_deletes_list(self):
        doc = {"metadata": {"finalizers": ["a"], "name": "x"}}
        assert apply_strategic_merge_patch(doc, {"metadata": {"finalizers": None}}, POD) == {
            "metadata": {"name": "x"}
        }

    @pytest.mark.parametrize("patch", [[{"a": 1}], "x", None])
    def test_non_object_patch_is_400(self, patch):
        _raises(400, apply_strategic_merge_patch, {}, patch, POD)

    def test_does_not_mutate_inputs(self):
        doc = _deploy([{"name": "a", "env": [{"name": "X", "value": "1"}]}])
        patch = {
            "spec": {
                "template": {"spec": {"containers": [{"name": "a", "env": [{"name": "Y", "value": "2"}]}]}}
            }
        }
        before = copy.deepcopy((doc, patch))
        out = apply_strategic_merge_patch(doc, patch, DEPLOY)
        _containers(out)[0]["env"].append({"name": "Z"})
        assert (doc, patch) == before

    def test_metadata_only_meta_merges_finalizers(self):
        doc = {"metadata": {"finalizers": ["a"]}}
        assert apply_strategic_merge_patch(doc, {"metadata": {"finalizers": ["b"]}}, metadata_only())["metadata"][
            "finalizers"
        ] == [
            "b",
            "a",
        ]


class TestPatchMeta:
    def test_builtin_kinds_read_their_openapi_definition(self):
        assert {("", "Pod"), ("apps", "Deployment")} <= {(rt.group, rt.kind) for rt in SERVED if rt.openapi_definition}
        assert POD.at("spec", "containers").key == "name"
        assert DEPLOY.at("spec", "strategy").retain_keys

    def test_describes_nested_element_schema(self):
        env = DEPLOY.at("spec", "template", "spec", "containers", "env")
        assert (env.strategy, env.key) == ("merge", "name")
        ports = POD.at("spec", "containers", "ports")
        assert (ports.strategy, ports.key) == ("merge", "containerPort")
        assert POD.at("spec", "containers", "volumeMounts").key == "mountPath"
        assert POD.at("spec", "tolerations").strategy == ""
        assert POD.at("spec", "imagePullSecrets").key == "name"

    def test_every_kind_gets_metadata(self):
        for meta in [*(rt.patch_meta for rt in SERVED), patch_meta_for("x.io", "Unknown")]:
            assert meta.at("metadata", "finalizers").strategy == "merge"
            assert meta.at("metadata", "ownerReferences").key == "uid"

    def test_unknown_kind_has_nothing_else(self):
        assert set(patch_meta_for("x.io", "Unknown").fields) == {"metadata"}

    def test_read_from_openapi_extensions_through_refs(self):
        definitions = {
            "Thing": {"properties": {
                "spec": {"allOf": [{"$ref": "#/components/schemas/ThingSpec"}], "x-kubernetes-patch-strategy": "retainKeys"},
            }},
            "ThingSpec": {"properties": {
                "items": {"type": "array", "items": {"$ref": "#/components/schemas/Item"},
                          "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "id",
                          "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["id", "zone"]},
                "next": {"allOf": [{"$ref": "#/components/schemas/ThingSpec"}]},
            }},
            "Item": {"properties": {"tags": {"type": "array", "items": {"type": "string"},
                                             "x-kubernetes-patch-strategy": "merge", "x-kubernetes-list-type": "set"}}},
        }
        meta = patch_meta_from_openapi(definitions, "Thing")
        assert meta.at("spec").retain_keys
        items = meta.at("spec", "items")
        assert (items.strategy, items.key, items.list_type, items.list_keys) == ("merge", "id", "map", ("id", "zone"))
        assert meta.at("spec", "items", "tags").strategy == "merge"
        assert meta.at("spec", "next", "next", "items").key == "id"  # a recursive schema

    def test_custom_meta(self):
        meta = PatchMeta(fields={"spec": PatchMeta(fields={"items": PatchMeta(strategy="merge", key="id")})})
        doc = {"spec": {"items": [{"id": 1, "v": "a"}]}}
        out = apply_strategic_merge_patch(doc, {"spec": {"items": [{"id": 1, "w": "b"}, {"id": 2}]}}, meta)
        assert out["spec"]["items"] == [{"id": 1, "v": "a", "w": "b"}, {"id": 2}]
