"""CRD validation on hostile input: a problem is a field error, never an exception (a 500)."""

from __future__ import annotations

from fleetplane.registry.crd import validate_crd


def _crd(versions: list) -> dict:
    return {"metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                     "versions": versions}}


def test_a_version_named_by_a_list_or_an_object_is_a_field_error() -> None:
    for bad in (["v1"], {"v": 1}):
        errors = validate_crd(_crd([{"name": bad, "served": True, "storage": True},
                                    {"name": "v1", "served": True, "storage": False}]))
        assert any(err.field == "spec.versions[0].name" for err in errors), errors


def test_duplicate_version_names_are_still_reported() -> None:
    errors = validate_crd(_crd([{"name": "v1", "served": True, "storage": True},
                                {"name": "v1", "served": True, "storage": False}]))
    assert any("spec.versions" in err.field and err.type == "FieldValueDuplicate" for err in errors), errors


def test_an_update_that_leaves_the_spec_as_it_was_is_not_refused_for_it() -> None:
    """Ratcheting, as kube's: a spec stored before a rule got stricter still takes a label; a
    changed spec is validated in full, and the immutable fields stay immutable."""
    import copy

    from fleetplane.apis.apiextensions import CRDStrategy

    strategy = CRDStrategy(lambda cluster: [])
    stored = _crd([{"name": "v1", "served": True, "storage": True},
                   {"name": "v1", "served": True, "storage": False}])  # duplicate versions: invalid now
    assert strategy.validate(stored)
    labelled = copy.deepcopy(stored)
    labelled["metadata"]["labels"] = {"fleetplane.io/imported-from-east": "true"}
    assert strategy.validate_update(labelled, stored) == []
    bad_label = copy.deepcopy(stored)
    bad_label["metadata"]["labels"] = {"not a key": "x"}
    assert [err.field for err in strategy.validate_update(bad_label, stored)] == ["metadata.labels"]
    changed = copy.deepcopy(labelled)
    changed["spec"]["names"]["singular"] = "gadget"
    errors = strategy.validate_update(changed, stored)
    assert any(err.type == "FieldValueDuplicate" for err in errors), errors
    moved = copy.deepcopy(changed)
    moved["spec"]["scope"] = "Cluster"
    assert any(err.field == "spec.scope" for err in strategy.validate_update(moved, stored))
