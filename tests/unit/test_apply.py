"""Server-Side Apply and managedFields bookkeeping, as a kubectl user sees them."""

from __future__ import annotations

import copy
import json

import pytest

from fleetplane.apimachinery.errors import StatusError
from fleetplane.apis import known_type
from fleetplane.registry.apply import (
    LAST_APPLIED_ANNOTATION,
    compare_fields,
    fields_of,
    format_path,
    from_fieldsv1,
    metadata_list_type_at,
    server_side_apply,
    to_fieldsv1,
    update_managed_fields,
)

T0, T1, T2, T3 = (f"2024-01-0{i}T00:00:00Z" for i in range(1, 5))
DEPLOY_LT = known_type("apps", "Deployment").list_type_at
POD_LT = known_type("", "Pod").list_type_at


def cm(data=None, **meta):
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "default", **meta},
    }
    if data is not None:
        obj["data"] = data
    return obj


def deploy(containers, **spec):
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"template": {"spec": {"containers": containers}}, **spec},
    }


def apply(live, config, manager="kubectl", force=False, now=T1, **kw):
    kw.setdefault("list_type_at", DEPLOY_LT if config.get("kind") == "Deployment" else metadata_list_type_at)
    return server_side_apply(
        live, config, manager=manager, force=force, api_version=config["apiVersion"], now=now, **kw
    )


def update(old, new, manager, now=T1, **kw):
    kw.setdefault("list_type_at", DEPLOY_LT if new.get("kind") == "Deployment" else metadata_list_type_at)
    return update_managed_fields(old, new, manager=manager, api_version=new["apiVersion"], now=now, **kw)


def entries(obj):
    return {(e["manager"], e["operation"]): e for e in obj["metadata"].get("managedFields", [])}


def owned(obj, manager, operation="Apply"):
    return from_fieldsv1(entries(obj)[(manager, operation)]["fieldsV1"])


def F(*names):
    """A path of plain fields: F("data", "k") == ("f:data", "f:k")."""
    return tuple("f:" + n for n in names)


def conflict(fn, *args, **kw):
    with pytest.raises(StatusError) as info:
        fn(*args, **kw)
    assert info.value.code == 409
    assert info.value.reason == "Conflict"
    return info.value


CONTAINERS = ("f:spec", "f:template", "f:spec", "f:containers")


def K(**key):
    return "k:" + json.dumps(key, sort_keys=True, separators=(",", ":"))


# ----------------------------------------------------------------------------- field sets


class TestFieldSets:
    def test_fields_of_config(self):
        paths = fields_of(
            {
                "metadata": {"labels": {"a": "1"}, "finalizers": ["f1"]},
                "data": {"k": "v", "empty": {}, "null": None},
                "tags": ["x", "y"],
            }
        )
        assert paths == {
            F("metadata", "labels", "a"),  # a non-empty map is owned through its fields only
            ("f:metadata", "f:finalizers", 'v:"f1"'),  # set elements, not the set itself
            F("data", "k"),
            F("data", "empty"),  # an empty map is a leaf
            F("data", "null"),
            F("tags"),  # atomic list: a leaf
        }

    def test_map_list_elements_and_their_fields(self):
        paths = fields_of(
            deploy([{"name": "app", "image": "i", "ports": [{"containerPort": 80}]}]), DEPLOY_LT
        )
        app = CONTAINERS + (K(name="app"),)
        port = app + ("f:ports", K(containerPort=80, protocol="TCP"))
        assert {app, app + ("f:image",), app + ("f:name",), port, port + ("f:containerPort",)} <= paths

    def test_empty_non_atomic_list_owns_nothing(self):
        assert fields_of({"metadata": {"finalizers": []}}) == set()

    def test_fieldsv1_round_trip_and_dot(self):
        paths = {F("metadata", "labels"), F("metadata", "labels", "a"), F("data", "k")}
        encoded = to_fieldsv1(paths)
        assert encoded == {"f:data": {"f:k": {}}, "f:metadata": {"f:labels": {".": {}, "f:a": {}}}}
        assert list(encoded) == ["f:data", "f:metadata"]
        assert from_fieldsv1(encoded) == paths

    def test_fieldsv1_key_order_is_fields_then_keys_then_values(self):
        enc = to_fieldsv1({("f:l", 'v:"b"'), ("f:l", 'v:"a"'), ("f:c", K(name="z")), ("f:c", "f:x")})
        assert list(enc["f:l"]) == ['v:"a"', 'v:"b"']
        assert list(enc["f:c"]) == ["f:x", K(name="z")]

    def test_from_fieldsv1_canonicalises_keys(self):
        assert from_fieldsv1({"f:c": {'k:{ "name" : "a" }': {}}}) == {("f:c", K(name="a"))}

    def test_from_fieldsv1_rejects_garbage(self):
        with pytest.raises(ValueError):
            from_fieldsv1({"x:y": {}})

    def test_format_path(self):
        assert format_path(F("data", "k")) == ".data.k"
        assert (
            format_path(CONTAINERS + (K(name="app"), "f:image"))
            == '.spec.template.spec.containers[name="app"].image'
        )
        assert (
            format_path(("f:ports", K(containerPort=80, protocol="TCP")))
            == '.ports[containerPort=80,protocol="TCP"]'
        )
        assert format_path(("f:metadata", "f:finalizers", 'v:"x"')) == '.metadata.finalizers[="x"]'

    def test_list_types_from_the_schemas(self):
        for list_type_at in (metadata_list_type_at, POD_LT, DEPLOY_LT):
            assert list_type_at(("metadata", "finalizers")) == ("set", [])
            assert list_type_at(("metadata", "ownerReferences")) == ("map", ["uid"])
            assert list_type_at(("spec", "whatever")) == ("atomic", [])
        assert DEPLOY_LT(("spec", "template", "spec", "containers")) == ("map", ["name"])
        assert POD_LT(("spec", "containers", "env")) == ("map", ["name"])
        assert POD_LT(("spec", "containers", "ports")) == ("map", ["containerPort", "protocol"])
        assert DEPLOY_LT(("spec", "template", "spec", "containers", "volumeMounts")) == (
            "map",
            ["mountPath"],
        )
        assert POD_LT(("spec", "imagePullSecrets")) == ("map", ["name"])
        assert POD_LT(("spec", "tolerations")) == ("atomic", [])
        assert metadata_list_type_at(("spec", "containers")) == ("atomic", [])

    def test_compare(self):
        added, modified, removed = compare_fields(cm({"a": "1", "b": "2"}), cm({"a": "9", "c": "3"}))
        assert (added, modified, removed) == ({F("data", "c")}, {F("data", "a")}, {F("data", "b")})


# ----------------------------------------------------------------------------- apply


class TestApplyCreate:
    def test_create_when_missing(self):
        config = cm({"k": "v"}, labels={"app": "web"})
        out = apply(None, config, manager="kubectl")
        assert out["data"] == {"k": "v"}
        assert out["metadata"]["labels"] == {"app": "web"}
        (entry,) = out["metadata"]["managedFields"]
        assert entry == {
            "manager": "kubectl",
            "operation": "Apply",
            "apiVersion": "v1",
            "time": T1,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:k": {}}, "f:metadata": {"f:labels": {"f:app": {}}}},
        }

    def test_inputs_not_modified(self):
        config = cm({"k": "v"})
        live = apply(None, cm({"a": "1"}), manager="other")
        before = copy.deepcopy((live, config))
        apply(live, config)
        assert (live, config) == before

    def test_server_metadata_is_not_applied(self):
        live = update(None, cm({"k": "v"}, uid="u-1", resourceVersion="5", creationTimestamp=T0), "creator")
        out = apply(live, cm({"k": "v"}, uid="evil", resourceVersion="1", generation=9), manager="m")
        assert out["metadata"]["uid"] == "u-1"
        assert out["metadata"]["resourceVersion"] == "5"
        assert "generation" not in out["metadata"]
        assert all(not p[1:] or p[1] not in ("f:uid", "f:resourceVersion") for p in owned(out, "m"))

    def test_managed_fields_in_config_is_400(self):
        with pytest.raises(StatusError) as info:
            apply(None, cm({"k": "v"}, managedFields=[{"manager": "x"}]))
        assert (info.value.code, info.value.message) == (400, "metadata.managedFields must be nil")

    def test_wrong_version_is_400(self):
        config = cm({"k": "v"})
        with pytest.raises(StatusError) as info:
            server_side_apply(None, config, manager="m", force=False, api_version="v2", now=T1)
        assert info.value.code == 400
        assert info.value.message == "invalid object type: /v1, Kind=ConfigMap"

    def test_map_list_element_without_key_is_rejected(self):
        with pytest.raises(StatusError) as info:
            apply(None, deploy([{"image": "x"}]))
        assert info.value.code == 422
        assert 'omits key field "name"' in info.value.message

    def test_duplicate_map_list_keys_are_rejected(self):
        with pytest.raises(StatusError) as info:
            apply(None, deploy([{"name": "a"}, {"name": "a"}]))
        assert info.value.code == 422


class TestApplyRemoval:
    def test_dropped_fields_are_removed(self):
        live = apply(None, cm({"a": "1", "b": "2"}, labels={"x": "1", "y": "2"}))
        out = apply(live, cm({"a": "1"}, labels={"x": "1"}), now=T2)
        assert out["data"] == {"a": "1"}
        assert out["metadata"]["labels"] == {"x": "1"}
        assert owned(out, "kubectl") == {F("data", "a"), F("metadata", "labels", "x")}

    def test_emptied_maps_go_too(self):
        live = apply(None, cm({"a": "1"}, labels={"x": "1"}))
        out = apply(live, cm(), now=T2)
        assert "data" not in out
        assert "labels" not in out["metadata"]
        assert "managedFields" not in out["metadata"]  # the applier owns nothing any more

    def test_field_shared_with_another_manager_is_kept(self):
        live = apply(None, cm({"a": "1", "b": "2"}), manager="one")
        live = apply(live, cm({"a": "1"}), manager="two")  # same value: shared
        out = apply(live, cm({"b": "2"}), manager="one", now=T2)
        assert out["data"] == {"a": "1", "b": "2"}
        assert owned(out, "two") == {F("data", "a")}
        assert owned(out, "one") == {F("data", "b")}

    def test_field_taken_over_by_an_update_is_not_removed(self):
        live = apply(None, cm({"a": "1"}), manager="kubectl")
        edited = copy.deepcopy(live)
        edited["data"]["a"] = "2"
        live = update(live, edited, "kubectl-edit", now=T2)
        out = apply(live, cm({"other": "x"}), manager="kubectl", now=T3)
        assert out["data"] == {"a": "2", "other": "x"}

    def test_unowned_fields_are_never_removed(self):
        live = update(None, cm({"a": "1", "b": "2"}), "creator")
        out = apply(live, cm({"a": "1"}), manager="m")
        assert out["data"] == {"a": "1", "b": "2"}

    def test_map_list_elements_merge_and_prune_by_key(self):
        live = apply(None, deploy([{"name": "a", "image": "a:1"}]), manager="team-a")
        live = apply(live, deploy([{"name": "b", "image": "b:1"}]), manager="team-b", now=T2)
        assert [c["name"] for c in live["spec"]["template"]["spec"]["containers"]] == ["a", "b"]
        out = apply(live, deploy([]), manager="team-a", now=T3)
        assert out["spec"]["template"]["spec"]["containers"] == [{"name": "b", "image": "b:1"}]

    def test_map_list_element_fields_merge(self):
        live = apply(
            None, deploy([{"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}]}]), "one"
        )
        out = apply(live, deploy([{"name": "a", "env": [{"name": "Y", "value": "2"}]}]), "two", now=T2)
        (c,) = out["spec"]["template"]["spec"]["containers"]
        assert c["image"] == "a:1"
        assert c["env"] == [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]
        assert CONTAINERS + (K(name="a"), "f:env", K(name="Y"), "f:value") in owned(out, "two")

    def test_set_list_union_and_prune(self):
        live = apply(None, cm(finalizers=["a.io/x"]), manager="one")
        live = apply(live, cm(finalizers=["b.io/y"]), manager="two", now=T2)
        assert live["metadata"]["finalizers"] == ["a.io/x", "b.io/y"]
        out = apply(live, cm(finalizers=[]), manager="one", now=T3)
        assert out["metadata"]["finalizers"] == ["b.io/y"]

    def test_merged_list_order(self):
        live = apply(None, cm(finalizers=["a", "b", "c"]), manager="one")
        out = apply(live, cm(finalizers=["c", "a", "new"]), manager="two", now=T2)
        # shared elements in the configuration's order, live-only ones stay in place
        assert out["metadata"]["finalizers"] == ["b", "c", "a", "new"]

    def test_atomic_list_is_replaced(self):
        live = apply(None, deploy([{"name": "a", "args": ["1", "2"]}]), "one")
        out = apply(live, deploy([{"name": "a", "args": ["3"]}]), "one", now=T2)
        assert out["spec"]["template"]["spec"]["containers"][0]["args"] == ["3"]


class TestApplyConflicts:
    def test_conflict_with_update_manager(self):
        live = update(None, cm({"k": "v"}), "kubectl-client-side-apply")
        err = conflict(apply, live, cm({"k": "other"}), manager="kubectl")
        assert (
            err.message
            == 'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .data.k'
        )
        assert err.details == {
            "causes": [
                {
                    "reason": "FieldManagerConflict",
                    "message": 'conflict with "kubectl-client-side-apply" using v1',
                    "field": ".data.k",
                }
            ]
        }
        assert err.status()["code"] == 409

    def test_conflict_with_apply_manager_and_several_fields(self):
        live = apply(None, cm({"a": "1", "b": "2"}, labels={"x": "1"}), manager="ci")
        live = update(live, {**live, "spec": {"z": 1}}, "ctrl", now=T2)
        err = conflict(apply, live, cm({"a": "9", "b": "9"}, labels={"x": "9"}), manager="me")
        assert err.message == (
            'Apply failed with 3 conflicts: conflicts with "ci":\n- .data.a\n- .data.b\n- .metadata.labels.x'
        )
        assert [c["field"] for c in err.details["causes"]] == [".data.a", ".data.b", ".metadata.labels.x"]
        assert {c["message"] for c in err.details["causes"]} == {'conflict with "ci"'}

    def test_conflicts_with_several_managers_are_grouped(self):
        live = apply(None, cm({"a": "1"}), manager="one")
        live = apply(live, cm({"b": "2"}), manager="two", now=T2)
        err = conflict(apply, live, cm({"a": "x", "b": "y"}), manager="three")
        assert err.message == (
            'Apply failed with 2 conflicts: conflicts with "one":\n- .data.a\nconflicts with "two":\n- .data.b'
        )

    def test_subresource_manager_is_named(self):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "status": {"phase": "Pending"}}
        live = update(None, pod, "kubelet", subresource="status")
        err = conflict(apply, live, {**pod, "status": {"phase": "Running"}}, manager="me")
        assert (
            err.details["causes"][0]["message"]
            == 'conflict with "kubelet" with subresource "status" using v1'
        )

    def test_force_takes_ownership(self):
        live = update(None, cm({"k": "v", "other": "o"}), "kubectl-client-side-apply")
        out = apply(live, cm({"k": "new"}), manager="kubectl", force=True, now=T2)
        assert out["data"] == {"k": "new", "other": "o"}
        assert owned(out, "kubectl") == {F("data", "k")}
        assert owned(out, "kubectl-client-side-apply", "Update") == {F("data"), F("data", "other")}

    def test_force_removes_emptied_entries(self):
        live = apply(None, cm({"k": "v"}), manager="one")
        out = apply(live, cm({"k": "w"}), manager="two", force=True, now=T2)
        assert set(entries(out)) == {("two", "Apply")}

    def test_equal_values_share_ownership(self):
        live = update(None, cm({"k": "v"}), "creator")
        out = apply(live, cm({"k": "v"}), manager="applier", now=T2)
        assert F("data", "k") in owned(out, "creator", "Update")
        assert F("data", "k") in owned(out, "applier")

    def test_reapplying_own_fields_never_conflicts(self):
        live = apply(None, cm({"k": "v"}), manager="m")
        out = apply(live, cm({"k": "w"}), manager="m", now=T2)
        assert out["data"] == {"k": "w"}

    def test_no_op_apply_keeps_the_time(self):
        live = apply(None, cm({"k": "v"}), manager="m", now=T1)
        out = apply(live, cm({"k": "v"}), manager="m", now=T2)
        assert entries(out)[("m", "Apply")]["time"] == T1
        out = apply(live, cm({"k": "w"}), manager="m", now=T3)
        assert entries(out)[("m", "Apply")]["time"] == T3

    def test_container_image_conflict_path(self):
        live = apply(None, deploy([{"name": "app", "image": "a:1"}]), manager="helm")
        err = conflict(apply, live, deploy([{"name": "app", "image": "a:2"}]), manager="argocd")
        assert err.details["causes"][0]["field"] == '.spec.template.spec.containers[name="app"].image'


class TestKubectlInterplay:
    def test_kubectl_last_applied_second_apply_wipes_nothing(self):
        config = deploy([{"name": "app", "image": "a:1"}], replicas=2)
        config["metadata"]["labels"] = {"app": "web"}
        live = apply(None, config, manager="kubectl")
        # a bare configuration holding only the annotation, as kubectl sends it
        last = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": "web",
                "namespace": "default",
                "annotations": {LAST_APPLIED_ANNOTATION: json.dumps(config)},
            },
        }
        out = apply(live, last, manager="kubectl-last-applied", now=T2)
        again = apply(out, last, manager="kubectl-last-applied", now=T3)
        for obj in (out, again):
            assert obj["spec"] == live["spec"]
            assert obj["metadata"]["labels"] == {"app": "web"}
            assert obj["metadata"]["annotations"] == {LAST_APPLIED_ANNOTATION: json.dumps(config)}
            assert owned(obj, "kubectl-last-applied") == {
                F("metadata", "annotations", LAST_APPLIED_ANNOTATION)
            }
            assert owned(obj, "kubectl") == owned(live, "kubectl")

    def test_kubectl_reapply_after_last_applied_keeps_annotation_in_step(self):
        config = cm({"k": "v"})
        live = apply(None, config, manager="kubectl")
        last = cm(annotations={LAST_APPLIED_ANNOTATION: json.dumps(config)})
        live = apply(live, last, manager="kubectl-last-applied", now=T2)
        out = apply(live, cm({"k": "v2"}), manager="kubectl", now=T3)
        assert out["data"] == {"k": "v2"}
        assert out["metadata"]["annotations"][LAST_APPLIED_ANNOTATION] == (
            '{"apiVersion":"v1","data":{"k":"v2"},"kind":"ConfigMap",'
            '"metadata":{"name":"cm","namespace":"default"}}\n'
        )

    def test_client_side_to_server_side_migration_does_not_conflict(self):
        config = cm({"k": "v"})
        csa = copy.deepcopy(config)
        csa["metadata"]["annotations"] = {LAST_APPLIED_ANNOTATION: json.dumps(config)}
        live = update(None, csa, "kubectl-client-side-apply")
        # `kubectl apply --server-side` with the same manifest takes the fields over...
        out = apply(live, cm({"k": "v2"}), manager="kubectl", now=T2)
        assert out["data"] == {"k": "v2"}
        assert F("data", "k") in owned(out, "kubectl")
        # ... and keeps the client-side annotation in step with what it applied.
        assert json.loads(out["metadata"]["annotations"][LAST_APPLIED_ANNOTATION]) == cm({"k": "v2"})
        assert out["metadata"]["annotations"][LAST_APPLIED_ANNOTATION].endswith("\n")

    def test_migration_still_conflicts_on_fields_changed_since(self):
        config = cm({"k": "v"})
        csa = copy.deepcopy(config)
        csa["metadata"]["annotations"] = {LAST_APPLIED_ANNOTATION: json.dumps(config)}
        live = update(None, csa, "kubectl-client-side-apply")
        edited = copy.deepcopy(live)
        edited["data"]["k"] = "edited"
        live = update(live, edited, "kubectl-edit", now=T2)
        err = conflict(apply, live, cm({"k": "v2"}), manager="kubectl", now=T3)
        assert '"kubectl-edit" using v1' in err.message

    def test_other_managers_get_no_migration_pass(self):
        config = cm({"k": "v"})
        csa = copy.deepcopy(config)
        csa["metadata"]["annotations"] = {LAST_APPLIED_ANNOTATION: json.dumps(config)}
        live = update(None, csa, "kubectl-client-side-apply")
        conflict(apply, live, cm({"k": "v2"}), manager="helm")

    def test_object_without_managed_fields_belongs_to_before_first_apply(self):
        live = cm({"k": "v"}, uid="u")
        err = conflict(apply, live, cm({"k": "x"}), manager="m")
        assert (
            err.message
            == 'Apply failed with 1 conflict: conflict with "before-first-apply" using v1: .data.k'
        )
        out = apply(live, cm({"n": "1"}), manager="m")
        assert owned(out, "before-first-apply", "Update") == {F("data"), F("data", "k")}


# ----------------------------------------------------------------------------- update


class TestUpdateManagedFields:
    def test_create_owns_everything_with_dots_for_new_maps(self):
        out = update(None, cm({"k": "v"}, labels={"a": "1"}), "kubectl-create")
        (entry,) = out["metadata"]["managedFields"]
        assert entry["operation"] == "Update"
        assert entry["time"] == T1
        assert entry["fieldsV1"] == {
            "f:data": {".": {}, "f:k": {}},
            "f:metadata": {"f:labels": {".": {}, "f:a": {}}},
        }

    def test_create_of_a_deployment(self):
        out = update(None, deploy([{"name": "app", "image": "x"}], replicas=1), "kubectl-create")
        fv1 = out["metadata"]["managedFields"][0]["fieldsV1"]
        assert fv1["f:spec"]["f:replicas"] == {}
        assert fv1["f:spec"]["f:template"]["f:spec"]["f:containers"][K(name="app")] == {
            ".": {},
            "f:image": {},
            "f:name": {},
        }
        assert "." not in fv1["f:spec"]

    def test_update_transfers_ownership(self):
        live = apply(None, cm({"a": "1", "b": "2"}), manager="kubectl")
        edited = copy.deepcopy(live)
        edited["data"]["a"] = "changed"
        out = update(live, edited, "kubectl-edit", now=T2)
        assert owned(out, "kubectl") == {F("data", "b")}
        assert owned(out, "kubectl-edit", "Update") == {F("data", "a")}
        # the applier now conflicts when it tries to put its value back
        err = conflict(apply, out, cm({"a": "1", "b": "2"}), manager="kubectl", now=T3)
        assert err.details["causes"][0]["message"] == 'conflict with "kubectl-edit" using v1'

    def test_removed_fields_leave_every_set_and_empty_entries_disappear(self):
        live = apply(None, cm({"a": "1"}), manager="one")
        edited = copy.deepcopy(live)
        del edited["data"]
        out = update(live, edited, "janitor", now=T2)
        assert "managedFields" not in out["metadata"]

    def test_update_that_changes_nothing_leaves_entries_alone(self):
        live = update(None, cm({"a": "1"}), "creator", now=T1)
        out = update(live, copy.deepcopy(live), "someone", now=T2)
        assert out["metadata"]["managedFields"] == live["metadata"]["managedFields"]

    def test_same_manager_accumulates_and_time_moves(self):
        live = update(None, cm({"a": "1"}), "ctrl", now=T1)
        new = copy.deepcopy(live)
        new["data"]["b"] = "2"
        out = update(live, new, "ctrl", now=T2)
        (entry,) = out["metadata"]["managedFields"]
        assert from_fieldsv1(entry["fieldsV1"]) == {F("data"), F("data", "a"), F("data", "b")}
        assert entry["time"] == T2

    def test_updates_per_api_version_are_distinct_entries(self):
        live = update(None, cm({"a": "1"}), "ctrl")
        new = copy.deepcopy(live)
        new["data"]["b"] = "2"
        out = update_managed_fields(live, new, manager="ctrl", api_version="v1beta1", now=T2)
        assert sorted(e["apiVersion"] for e in out["metadata"]["managedFields"]) == ["v1", "v1beta1"]

    def test_client_written_managed_fields_are_kept(self):
        # kubectl's client-side -> server-side migration rewrites managedFields with a JSON patch
        live = update(None, cm({"k": "v"}), "kubectl-client-side-apply")
        rewritten = copy.deepcopy(live)
        rewritten["metadata"]["managedFields"] = [
            {
                "manager": "kubectl",
                "operation": "Apply",
                "apiVersion": "v1",
                "time": T0,
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {"f:k": {}}},
            }
        ]
        out = update(live, rewritten, "kubectl", now=T2)
        assert out["metadata"]["managedFields"] == rewritten["metadata"]["managedFields"]

    def test_client_cannot_drop_managed_fields_by_omitting_them(self):
        live = update(None, cm({"k": "v"}), "creator")
        new = copy.deepcopy(live)
        del new["metadata"]["managedFields"]
        assert (
            update(live, new, "x", now=T2)["metadata"]["managedFields"] == live["metadata"]["managedFields"]
        )
        new["metadata"]["managedFields"] = []
        assert (
            update(live, new, "x", now=T2)["metadata"]["managedFields"] == live["metadata"]["managedFields"]
        )

    def test_invalid_client_managed_fields_fall_back_to_stored(self):
        live = update(None, cm({"k": "v"}), "creator")
        new = copy.deepcopy(live)
        new["metadata"]["managedFields"] = [{"manager": "x", "operation": "Bogus"}]
        assert (
            update(live, new, "x", now=T2)["metadata"]["managedFields"] == live["metadata"]["managedFields"]
        )

    def test_single_empty_entry_resets(self):
        live = update(None, cm({"k": "v"}), "creator")
        new = copy.deepcopy(live)
        new["metadata"]["managedFields"] = [{}]
        assert "managedFields" not in update(live, new, "x", now=T2)["metadata"]

    def test_subresource_writes_ignore_client_managed_fields(self):
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"nodeName": "n"},
            "status": {"phase": "Pending"},
        }
        live = update(None, pod, "creator")
        new = copy.deepcopy(live)
        new["status"]["phase"] = "Running"
        new["metadata"]["managedFields"] = [{}]
        out = update(live, new, "kubelet", now=T2, subresource="status")
        by = {(e["manager"], e.get("subresource")): e for e in out["metadata"]["managedFields"]}
        assert set(by) == {("creator", None), ("kubelet", "status")}
        assert from_fieldsv1(by[("kubelet", "status")]["fieldsV1"]) == {F("status", "phase")}

    def test_server_fields_are_never_owned(self):
        old = cm({"k": "v"}, resourceVersion="1", uid="u", generation=1)
        new = cm({"k": "v"}, resourceVersion="2", uid="u", generation=2, creationTimestamp=T0)
        assert "managedFields" not in update(old, new, "x")["metadata"]

    def test_entries_are_sorted_apply_first_then_by_time(self):
        live = update(None, cm({"a": "1"}), "zeta", now=T1)
        live = apply(live, cm({"b": "2"}), manager="applier", now=T2)
        new = copy.deepcopy(live)
        new["data"]["c"] = "3"
        out = update(live, new, "alpha", now=T3)
        assert [(e["manager"], e["operation"]) for e in out["metadata"]["managedFields"]] == [
            ("applier", "Apply"),
            ("zeta", "Update"),
            ("alpha", "Update"),
        ]

    def test_update_managers_are_capped(self):
        obj = update(None, cm({"k0": "0"}), "m00", now="2024-01-01T00:00:00Z")
        for i in range(1, 12):
            new = copy.deepcopy(obj)
            new["data"][f"k{i}"] = str(i)
            obj = update(obj, new, f"m{i:02d}", now=f"2024-01-01T00:00:{i:02d}Z")
        managers = [e["manager"] for e in obj["metadata"]["managedFields"]]
        assert len(managers) == 10
        assert "ancient-changes" in managers
        assert "m00" not in managers and "m01" not in managers and "m02" not in managers
        ancient = next(e for e in obj["metadata"]["managedFields"] if e["manager"] == "ancient-changes")
        assert {F("data", "k1"), F("data", "k2")} <= from_fieldsv1(ancient["fieldsV1"])

    def test_input_not_modified(self):
        old = update(None, cm({"a": "1"}), "x")
        new = copy.deepcopy(old)
        new["data"]["a"] = "2"
        before = copy.deepcopy((old, new))
        update(old, new, "y", now=T2)
        assert (old, new) == before


def test_a_patch_keeps_other_managers_entries_and_reencodes_only_what_changed():
    """A patch sends the stored entries back unchanged; entries the write does not touch come
    out exactly as stored, an entry that lost fields is re-encoded without them."""
    live = update(None, cm({"a": "1", "b": "2"}), "creator", T0)
    live = update(live, {**copy.deepcopy(live), "data": {"a": "1", "b": "2", "c": "3"}}, "adder", T1)
    stored = {e["manager"]: e for e in live["metadata"]["managedFields"]}
    # "patcher" changes c: adder loses it (re-encoded), creator is untouched (kept as stored)
    out = update(live, {**copy.deepcopy(live), "data": {"a": "1", "b": "2", "c": "4"}}, "patcher", T2)
    entries = {e["manager"]: e for e in out["metadata"]["managedFields"]}
    assert entries["creator"] == stored["creator"]
    assert "adder" not in entries  # it owned only c
    assert from_fieldsv1(entries["patcher"]["fieldsV1"]) == {("f:data", "f:c")}
    # patching a field creator owns takes it from creator's entry
    out2 = update(out, {**copy.deepcopy(out), "data": {"a": "9", "b": "2", "c": "4"}}, "patcher", T3)
    entries2 = {e["manager"]: e for e in out2["metadata"]["managedFields"]}
    assert ("f:data", "f:a") not in from_fieldsv1(entries2["creator"]["fieldsV1"])
    assert ("f:data", "f:b") in from_fieldsv1(entries2["creator"]["fieldsV1"])
