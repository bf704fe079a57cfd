"""Label selectors: the query string and metav1.LabelSelector objects, parsed, matched and printed."""

from __future__ import annotations

import pytest

from fleetplane.apimachinery.errors import StatusError
from fleetplane.apimachinery.labels import LabelSelector, format_label_selector, selector_matches

LABELS = {"app": "web", "tier": "front", "env": "prod"}


@pytest.mark.parametrize(("text", "matches"), [
    ("", True),
    ("   ", True),
    ("app=web", True),
    ("app==web", True),
    ("app=db", False),
    ("app!=db", True),
    ("missing!=x", True),  # != matches objects without the label, as kube
    ("app", True),
    ("!app", False),
    ("!missing", True),
    ("tier in (front,back)", True),
    ("tier in (back)", False),
    ("tier notin (back)", True),
    ("missing notin (x)", True),
    ("missing in (x)", False),
    ("app=web,env=prod", True),
    ("app=web,env=dev", False),
    ("app=web, tier in (front), !canary", True),
    ("env=", False),
])
def test_string_selectors_match(text, matches):
    assert LabelSelector.parse(text).matches(LABELS) is matches


def test_an_empty_selector_matches_everything_even_no_labels():
    assert LabelSelector.parse("").empty()
    assert LabelSelector.parse(None).matches(None)
    assert not LabelSelector.parse("a").matches(None)


@pytest.mark.parametrize(("text", "message"), [
    ("a=b,", "unable to parse requirement: found '', expected: identifier"),
    ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
    ("a in b", "unable to parse requirement: found 'b', expected: '('"),
    ("a in (b", "unable to parse requirement: found '', expected: ')'"),
    ("a=b c", "unable to parse requirement: found 'c', expected: ',' or end of string"),
    ("-bad=x", 'unable to parse requirement: invalid label key "-bad": name part must consist of alphanumeric '
               "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  "
               "or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
    ("a=-x", 'unable to parse requirement: invalid label value: "-x": at key: ...: a valid label must be an empty '
             "string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
             "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
             "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
])
def test_parse_errors_are_kubes_400(text, message):
    with pytest.raises(StatusError) as err:
        LabelSelector.parse(text)
    assert err.value.code == 400
    assert err.value.message == message


SELECTOR_OBJECT = {
    "matchLabels": {"tier": "front"},
    "matchExpressions": [
        {"key": "env", "operator": "In", "values": ["prod", "dev"]},
        {"key": "canary", "operator": "DoesNotExist"},
        {"key": "app", "operator": "Exists"},
        {"key": "zone", "operator": "NotIn", "values": ["b", "a"]},
    ],
}


def test_selector_objects_match_as_label_selector_as_selector():
    assert selector_matches(SELECTOR_OBJECT, LABELS)
    assert not selector_matches(SELECTOR_OBJECT, {**LABELS, "canary": "yes"})
    assert not selector_matches(SELECTOR_OBJECT, {**LABELS, "zone": "a"})
    assert selector_matches({}, {})  # empty: everything
    assert not selector_matches(None, LABELS)  # null: nothing
    assert LabelSelector.from_match(SELECTOR_OBJECT).matches(LABELS)


def test_string_form_sorts_requirements_by_key_and_values():
    text = str(LabelSelector.from_match(SELECTOR_OBJECT))
    assert text == "app,!canary,env in (dev,prod),tier=front,zone notin (a,b)"
    # the string form parses back to the same selection
    again = LabelSelector.parse(text)
    for labels in (LABELS, {**LABELS, "canary": "1"}, {"tier": "front", "app": "x", "env": "dev"}):
        assert again.matches(labels) == selector_matches(SELECTOR_OBJECT, labels)
    assert str(LabelSelector.parse("b!=2,a=1")) == "a=1,b!=2"


def test_format_label_selector_as_kubectl_shows_it():
    assert format_label_selector({"matchLabels": {"b": "2", "a": "1"}}) == "a=1,b=2"
    assert format_label_selector({}) == "<none>"
    assert format_label_selector(None) == "<none>"
    assert format_label_selector({}, empty="") == ""
    assert format_label_selector({"matchExpressions": [{"key": "k", "operator": "Is"}]}) == "<error>"
    assert format_label_selector({"matchExpressions": [{"operator": "Exists"}]}) == "<error>"
