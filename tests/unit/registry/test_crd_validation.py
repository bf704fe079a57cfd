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
