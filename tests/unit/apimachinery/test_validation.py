"""Name and label rules with kube's messages; every rule is a full match (no trailing newline)."""

from __future__ import annotations

import pytest

from fleetplane.apimachinery.validation import (
    DNS1123_LABEL_MSG,
    DNS1123_SUBDOMAIN_MSG,
    dns1035_label_errors,
    dns1123_label_error,
    dns1123_subdomain_error,
    is_dns1123_label,
    is_label_value,
    is_qualified_name,
    label_value_error,
    path_segment_error,
    qualified_name_error,
    validate_annotations,
    validate_label_selector,
    validate_labels,
)


@pytest.mark.parametrize("name", ["a", "abc-123", "0", "a" * 63])
def test_dns1123_labels(name):
    assert dns1123_label_error(name) is None and is_dns1123_label(name)


@pytest.mark.parametrize("name", ["", "A", "-a", "a-", "a.b", "a_b", "a\n"])
def test_not_dns1123_labels(name):
    assert dns1123_label_error(name) == DNS1123_LABEL_MSG
    assert not is_dns1123_label(name)


def test_length_limits_come_first():
    assert dns1123_label_error("a" * 64) == "must be no more than 63 characters"
    assert dns1123_subdomain_error("a" * 254) == "must be no more than 253 characters"
    assert label_value_error("a" * 64) == "must be no more than 63 characters"
    assert qualified_name_error("a" * 64) == "name part must be no more than 63 characters"


def test_dns1123_subdomains():
    for ok in ("example.com", "a.b-c.d", "a" * 253):
        assert dns1123_subdomain_error(ok) is None
    for bad in ("Example.com", "a..b", ".a", "a.", "a.b\n"):
        assert dns1123_subdomain_error(bad) == DNS1123_SUBDOMAIN_MSG
    assert DNS1123_SUBDOMAIN_MSG.endswith("regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")


def test_dns1035_labels_report_every_broken_rule():
    assert dns1035_label_errors("my-kind") == []
    assert dns1035_label_errors("1abc") == [
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
        "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
        "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"]
    assert len(dns1035_label_errors("1" * 64)) == 2


@pytest.mark.parametrize("key", ["a", "A_b.c-d", "example.com/name", "k8s.io/a" + "b" * 62])
def test_qualified_names(key):
    assert qualified_name_error(key) is None and is_qualified_name(key)


@pytest.mark.parametrize(("key", "why"), [
    ("a/b/c", "a qualified name must consist of alphanumeric characters, '-', '_' or '.', with an optional DNS "
              "subdomain prefix and '/'"),
    ("Example.com/a", "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                      "characters, '-' or '.', and must start and end with an alphanumeric character"),
    ("example.com/", "name part must be non-empty"),
    ("-a", "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
           "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
           "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
])
def test_not_qualified_names(key, why):
    assert qualified_name_error(key) == why
    assert not is_qualified_name(key)


def test_label_values():
    for ok in ("", "a", "My_Value.1", "a" * 63):
        assert label_value_error(ok) is None and is_label_value(ok)
    for bad in ("-a", "a-", "a b", "a\n", "a" * 64):
        assert label_value_error(bad) is not None and not is_label_value(bad)


def test_path_segments():
    assert path_segment_error("ok") is None
    assert path_segment_error(".") == "may not be '.'"
    assert path_segment_error("..") == "may not be '..'"
    assert path_segment_error("a/b") == "may not contain '/'"
    assert path_segment_error("a%b") == "may not contain '%'"


def messages(errs):
    return [e.message() for e in errs]


def test_validate_labels():
    assert validate_labels(None, "metadata.labels") == []
    assert messages(validate_labels({"ok": "v", "-bad": "v", "k": "-x", "n": 1}, "metadata.labels")) == [
        'Invalid value: "-bad": name part must consist of alphanumeric characters, \'-\', \'_\' or \'.\', and must '
        "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
        "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        'Invalid value: "-x": a valid label must be an empty string or consist of alphanumeric characters, \'-\', '
        "'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
        "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        "Invalid value: 1: label values must be strings",
    ]
    assert messages(validate_labels(["a"], "metadata.labels")) == ['Invalid value: ["a"]: must be a map of strings']


def test_validate_label_selector():
    assert validate_label_selector({"matchLabels": {"a": "b"}}, "spec.selector") == []
    errs = validate_label_selector({"matchExpressions": [
        {"key": "a", "operator": "In"},
        {"key": "b", "operator": "Exists", "values": ["x"]},
        {"key": "c", "operator": "Is"},
        {"key": "-d", "operator": "Exists"},
        {"key": "e", "operator": "In", "values": ["-v"]},
    ]}, "spec.selector")
    assert [e.field for e in errs] == [
        "spec.selector.matchExpressions[0].values",
        "spec.selector.matchExpressions[1].values",
        "spec.selector.matchExpressions[2].operator",
        "spec.selector.matchExpressions[3].key",
        "spec.selector.matchExpressions[4].values[0]",
    ]
    assert messages(errs)[:3] == [
        "Required value: must be specified when `operator` is 'In' or 'NotIn'",
        "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        'Invalid value: "Is": not a valid selector operator',
    ]
    assert messages(validate_label_selector("app=x", "spec.selector")) == ['Invalid value: "app=x": must be an object']


def test_validate_annotations():
    assert validate_annotations({"example.com/any": "-value with spaces-"}, "metadata.annotations") == []
    assert messages(validate_annotations({"a": 1}, "metadata.annotations")) == [
        "Invalid value: 1: annotation values must be strings"]
    errs = validate_annotations({"a": "x" * (256 * 1024)}, "metadata.annotations")
    assert [e.type for e in errs] == ["FieldValueTooLong"]
