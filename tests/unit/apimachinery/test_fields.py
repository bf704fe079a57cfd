"""Field selectors: parsing with kube's messages, matching against a kind's selectable fields."""

from __future__ import annotations

import pytest

from fleetplane.apimachinery.errors import StatusError
from fleetplane.apimachinery.fields import FieldSelector

ALLOWED = {
    "metadata.name": lambda o: o["metadata"]["name"],
    "status.phase": lambda o: (o.get("status") or {}).get("phase"),
}
NOT_SUPPORTED = '"{field}" is not a known field selector: only "metadata.name", "status.phase"'
POD = {"metadata": {"name": "web-1"}, "status": {"phase": "Running"}}


def parse(text):
    return FieldSelector.parse(text, ALLOWED, NOT_SUPPORTED)


@pytest.mark.parametrize(("text", "matches"), [
    ("", True),
    ("metadata.name=web-1", True),
    ("metadata.name==web-1", True),
    ("metadata.name!=web-1", False),
    ("metadata.name=web-1,status.phase=Running", True),
    ("metadata.name=web-1,status.phase!=Running", False),
    ("status.phase=", False),
])
def test_matches(text, matches):
    assert parse(text).matches(POD, ALLOWED) is matches


def test_a_missing_field_is_the_empty_string():
    assert parse("status.phase=").matches({"metadata": {"name": "x"}}, ALLOWED)


def test_escaped_separators_are_part_of_the_value():
    sel = parse(r"metadata.name=a\,b\=c")
    assert sel.exact_value("metadata.name") == "a,b=c"
    assert sel.matches({"metadata": {"name": "a,b=c"}}, ALLOWED)


def test_exact_value_narrows_only_on_equality():
    assert parse("metadata.name=x").exact_value("metadata.name") == "x"
    assert parse("metadata.name!=x").exact_value("metadata.name") is None
    assert parse("").empty()


def test_errors_are_kubes_400():
    with pytest.raises(StatusError) as err:
        parse("metadata.name")
    assert (err.value.code, err.value.message) == (400, "invalid selector: 'metadata.name'; can't understand 'metadata.name'")
    with pytest.raises(StatusError) as err:
        parse("spec.nodeName=n1")
    assert err.value.message == '"spec.nodeName" is not a known field selector: only "metadata.name", "status.phase"'
