"""CRD structural schemas: pruning, defaulting, validation messages, list types, CEL rules."""

from __future__ import annotations

import copy

import pytest

from fleetplane.registry.schema import StructuralSchema, escape_cel_property, validate_structural

# --- helpers -------------------------------------------------------------------------------


def crd_schema(spec_props: dict, **spec_extra) -> dict:
    return {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": spec_props, **spec_extra},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }


def cr(spec: dict | None = None, **top) -> dict:
    obj = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "default"},
    }
    if spec is not None:
        obj["spec"] = spec
    obj.update(top)
    return obj


def messages(errs) -> list[str]:
    return [str(e) for e in errs]


def one(errs):
    assert len(errs) == 1, messages(errs)
    return errs[0]


# --- pruning -------------------------------------------------------------------------------


def test_prune_removes_unknown_fields_and_reports_kube_paths():
    s = StructuralSchema(
        crd_schema(
            {
                "size": {"type": "integer"},
                "items": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"a": {"type": "string"}}},
                },
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            }
        )
    )
    obj = cr({"size": 1, "foo": 2, "items": [{"a": "x", "b": 1}], "labels": {"any": "kept"}}, bar=True)
    unknown = s.prune(obj)
    assert unknown == ["bar", "spec.foo", "spec.items[0].b"]
    assert obj["spec"] == {"size": 1, "items": [{"a": "x"}], "labels": {"any": "kept"}}
    assert obj["apiVersion"] == "example.com/v1" and obj["kind"] == "Widget"
    assert "bar" not in obj


def test_prune_metadata_to_object_meta():
    s = StructuralSchema(crd_schema({}))
    obj = cr({})
    obj["metadata"].update(
        {
            "labels": {"a": "b"},
            "finalizers": ["x"],
            "creationTimestamp": None,
            "bogus": 1,
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u", "extra": 1}],
        }
    )
    assert s.prune(obj) == ["metadata.bogus", "metadata.ownerReferences[0].extra"]
    assert obj["metadata"] == {
        "name": "w1",
        "namespace": "default",
        "labels": {"a": "b"},
        "finalizers": ["x"],
        "creationTimestamp": None,
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u"}],
    }


def test_prune_preserve_unknown_fields_stops_pruning_but_prunes_declared_fields():
    s = StructuralSchema(
        crd_schema(
            {
                "free": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}},
                }
            }
        )
    )
    obj = cr({"free": {"anything": {"deep": [1, {"x": 2}]}, "known": {"a": "1", "zz": 2}}})
    assert s.prune(obj) == ["spec.free.known.zz"]
    assert obj["spec"]["free"] == {"anything": {"deep": [1, {"x": 2}]}, "known": {"a": "1"}}
    # status in crd_schema preserves unknown fields too
    obj = cr({}, status={"whatever": {"a": 1}})
    assert s.prune(obj) == []
    assert obj["status"] == {"whatever": {"a": 1}}


def test_prune_root_preserve_unknown_fields_keeps_everything():
    s = StructuralSchema({"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    obj = cr({"a": 1}, extra={"b": 2})
    assert s.prune(obj) == []
    assert obj["extra"] == {"b": 2}


def test_prune_embedded_resource_keeps_type_and_object_meta():
    s = StructuralSchema(
        crd_schema(
            {
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}}}},
                },
                "raw": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "x-kubernetes-preserve-unknown-fields": True,
                },
            }
        )
    )
    obj = cr(
        {
            "template": {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p", "labels": {"a": "b"}, "junk": 1},
                "spec": {"x": "1", "y": 2},
                "other": 1,
            },
            "raw": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "c", "nope": 1},
                "data": {"k": "v"},
            },
        }
    )
    assert s.prune(obj) == [
        "spec.raw.metadata.nope",
        "spec.template.metadata.junk",
        "spec.template.other",
        "spec.template.spec.y",
    ]
    assert obj["spec"]["template"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"a": "b"}},
        "spec": {"x": "1"},
    }
    assert obj["spec"]["raw"]["data"] == {"k": "v"}


def test_prune_drops_non_nullable_nulls_without_default():
    s = StructuralSchema(
        crd_schema(
            {
                "a": {"type": "string"},
                "b": {"type": "string", "nullable": True},
                "c": {"type": "string", "default": "dflt"},
            }
        )
    )
    obj = cr({"a": None, "b": None, "c": None})
    assert s.prune(obj) == []
    assert obj["spec"] == {"b": None, "c": None}
    s.default(obj)
    assert obj["spec"] == {"b": None, "c": "dflt"}


# --- defaulting ----------------------------------------------------------------------------


def test_defaults_apply_only_under_present_parents():
    schema = crd_schema({"replicas": {"type": "integer", "default": 1}})
    s = StructuralSchema(schema)
    obj = cr()
    s.default(obj)
    assert "spec" not in obj
    obj = cr({})
    s.default(obj)
    assert obj["spec"] == {"replicas": 1}
    obj = cr({"replicas": 5})
    s.default(obj)
    assert obj["spec"] == {"replicas": 5}


def test_defaults_nested_and_recursing_into_defaults():
    s = StructuralSchema(
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "default": {},
                    "properties": {
                        "strategy": {
                            "type": "object",
                            "default": {"type": "Rolling"},
                            "properties": {
                                "type": {"type": "string"},
                                "maxSurge": {"type": "integer", "default": 1},
                            },
                        }
                    },
                }
            },
        }
    )
    obj = cr()
    s.default(obj)
    assert obj["spec"] == {"strategy": {"type": "Rolling", "maxSurge": 1}}
    # defaults are copies: mutating the object must not change the schema's default
    obj["spec"]["strategy"]["type"] = "Recreate"
    obj2 = cr()
    s.default(obj2)
    assert obj2["spec"]["strategy"]["type"] == "Rolling"


def test_defaults_for_array_items_and_additional_properties():
    item = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "protocol": {"type": "string", "default": "TCP"}},
    }
    s = StructuralSchema(
        crd_schema(
            {
                "ports": {"type": "array", "items": item},
                "byName": {"type": "object", "additionalProperties": item},
                "scalars": {"type": "array", "items": {"type": "string", "default": "x"}},
            }
        )
    )
    obj = cr(
        {
            "ports": [{"name": "a"}, {"name": "b", "protocol": "UDP"}],
            "byName": {"k": {}},
            "scalars": ["a", None],
        }
    )
    s.default(obj)
    assert obj["spec"]["ports"] == [{"name": "a", "protocol": "TCP"}, {"name": "b", "protocol": "UDP"}]
    assert obj["spec"]["byName"] == {"k": {"protocol": "TCP"}}
    assert obj["spec"]["scalars"] == ["a", "x"]


def test_default_replaces_null_of_non_nullable_field_only():
    s = StructuralSchema(
        crd_schema(
            {
                "a": {"type": "string", "default": "x"},
                "b": {"type": "string", "nullable": True, "default": "y"},
            }
        )
    )
    obj = cr({"a": None, "b": None})
    s.default(obj)
    assert obj["spec"] == {"a": "x", "b": None}


# --- validation ----------------------------------------------------------------------------


def test_type_mismatch_message():
    s = StructuralSchema(crd_schema({"size": {"type": "integer"}}))
    e = one(s.validate(cr({"size": "string"})))
    assert str(e) == 'spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"'
    assert e.type == "FieldValueTypeInvalid"
    assert e.cause() == {
        "reason": "FieldValueTypeInvalid",
        "message": 'Invalid value: "string": spec.size in body must be of type integer: "string"',
        "field": "spec.size",
    }
    # an integral float is a valid integer, an int is a valid number
    assert s.validate(cr({"size": 3.0})) == []
    assert StructuralSchema(crd_schema({"r": {"type": "number"}})).validate(cr({"r": 3})) == []
    e = one(s.validate(cr({"size": 1.5})))
    assert str(e) == 'spec.size: Invalid value: "number": spec.size in body must be of type integer: "number"'


def test_required_message():
    s = StructuralSchema(crd_schema({"color": {"type": "string"}}, required=["color"]))
    e = one(s.validate(cr({})))
    assert str(e) == "spec.color: Required value"
    assert e.type == "FieldValueRequired"


def test_enum_message():
    s = StructuralSchema(
        crd_schema({"x": {"type": "string", "enum": ["a", "b"]}, "n": {"type": "integer", "enum": [1, 2]}})
    )
    e = one(s.validate(cr({"x": "z"})))
    assert str(e) == 'spec.x: Unsupported value: "z": supported values: "a", "b"'
    assert e.type == "FieldValueNotSupported"
    assert str(one(s.validate(cr({"n": 3})))) == 'spec.n: Unsupported value: 3: supported values: "1", "2"'
    assert s.validate(cr({"x": "a", "n": 2})) == []


def test_numeric_bounds_messages():
    s = StructuralSchema(
        crd_schema(
            {
                "i": {"type": "integer", "minimum": 1, "maximum": 10},
                "ex": {
                    "type": "integer",
                    "minimum": 1,
                    "exclusiveMinimum": True,
                    "maximum": 10,
                    "exclusiveMaximum": True,
                },
                "f": {"type": "number", "maximum": 1.5},
                "m": {"type": "integer", "multipleOf": 5},
                "mf": {"type": "number", "multipleOf": 0.5},
            }
        )
    )
    assert messages(s.validate(cr({"i": 0}))) == [
        "spec.i: Invalid value: 0: spec.i in body should be greater than or equal to 1"
    ]
    assert messages(s.validate(cr({"i": 11}))) == [
        "spec.i: Invalid value: 11: spec.i in body should be less than or equal to 10"
    ]
    assert messages(s.validate(cr({"ex": 1}))) == [
        "spec.ex: Invalid value: 1: spec.ex in body should be greater than 1"
    ]
    assert messages(s.validate(cr({"ex": 10}))) == [
        "spec.ex: Invalid value: 10: spec.ex in body should be less than 10"
    ]
    assert messages(s.validate(cr({"f": 2.25}))) == [
        "spec.f: Invalid value: 2.25: spec.f in body should be less than or equal to 1.5"
    ]
    assert messages(s.validate(cr({"m": 7}))) == [
        "spec.m: Invalid value: 7: spec.m in body should be a multiple of 5"
    ]
    assert messages(s.validate(cr({"mf": 0.3}))) == [
        "spec.mf: Invalid value: 0.3: spec.mf in body should be a multiple of 0.5"
    ]
    assert s.validate(cr({"i": 5, "ex": 5, "f": 1.5, "m": 10, "mf": 2.5})) == []


def test_string_length_and_pattern_messages():
    s = StructuralSchema(
        crd_schema({"name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"}})
    )
    e = one(s.validate(cr({"name": "abcdef"})))
    assert str(e) == "spec.name: Too long: may not be more than 5 bytes"
    assert e.type == "FieldValueTooLong"
    assert str(one(s.validate(cr({"name": "a"})))) == (
        'spec.name: Invalid value: "a": spec.name in body should be at least 2 chars long'
    )
    assert str(one(s.validate(cr({"name": "AB"})))) == (
        "spec.name: Invalid value: \"AB\": spec.name in body should match '^[a-z]+$'"
    )
    # Go's $ only matches at the very end of the text
    assert len(s.validate(cr({"name": "abc\n"}))) == 1
    # lengths count characters, not bytes
    assert (
        StructuralSchema(crd_schema({"n": {"type": "string", "maxLength": 2}})).validate(cr({"n": "éé"}))
        == []
    )


def test_array_size_and_uniqueness_messages():
    s = StructuralSchema(
        crd_schema(
            {
                "xs": {
                    "type": "array",
                    "items": {"type": "integer"},
                    "minItems": 2,
                    "maxItems": 3,
                    "uniqueItems": True,
                }
            }
        )
    )
    assert messages(s.validate(cr({"xs": [1]}))) == [
        "spec.xs: Invalid value: 1: spec.xs in body should have at least 2 items"
    ]
    e = one(s.validate(cr({"xs": [1, 2, 3, 4]})))
    assert str(e) == "spec.xs: Too many: 4: must have at most 3 items"
    assert e.type == "FieldValueTooMany"
    assert messages(s.validate(cr({"xs": [1, 1]}))) == [
        'spec.xs: Invalid value: "": spec.xs in body shouldn\'t contain duplicates'
    ]
    assert messages(s.validate(cr({"xs": [1, "a"]}))) == [
        'spec.xs[1]: Invalid value: "string": spec.xs[1] in body must be of type integer: "string"'
    ]


def test_object_property_count_messages():
    s = StructuralSchema(
        crd_schema(
            {
                "m": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "minProperties": 1,
                    "maxProperties": 2,
                }
            }
        )
    )
    assert messages(s.validate(cr({"m": {}}))) == [
        "spec.m: Invalid value: 0: spec.m in body should have at least 1 properties"
    ]
    assert messages(s.validate(cr({"m": {"a": "1", "b": "2", "c": "3"}}))) == [
        "spec.m: Too many: 3: must have at most 2 items"
    ]


def test_additional_properties_values_are_validated():
    s = StructuralSchema(
        crd_schema({"labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}}})
    )
    assert messages(s.validate(cr({"labels": {"a": "ok", "b": 1, "c": "long"}}))) == [
        'spec.labels.b: Invalid value: "integer": spec.labels.b in body must be of type string: "integer"',
        "spec.labels.c: Too long: may not be more than 3 bytes",
    ]


@pytest.mark.parametrize(
    ("fmt", "good", "bad"),
    [
        ("date-time", "2024-05-01T10:00:00Z", "2024-05-01 10:00"),
        ("date-time", "2024-05-01T10:00:00.123+02:00", "2024-13-01T10:00:00Z"),
        ("date", "2024-02-29", "2023-02-29"),
        ("byte", "aGVsbG8=", "not base64!"),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000", "123e4567"),
        ("ipv4", "10.0.0.1", "10.0.0.256"),
        ("cidr", "10.0.0.0/8", "10.0.0.0"),
        ("duration", "1h30m", "soon"),
        ("hostname", "example.com", "-bad-.com"),
        ("email", "a@b.io", "nope"),
    ],
)
def test_formats(fmt, good, bad):
    s = StructuralSchema(crd_schema({"v": {"type": "string", "format": fmt}}))
    assert s.validate(cr({"v": good})) == []
    e = one(s.validate(cr({"v": bad})))
    assert e.type == "FieldValueTypeInvalid"
    assert e.detail == f'spec.v in body must be of type {fmt}: "{bad}"'


def test_unsupported_formats_are_ignored_like_kube():
    # apiextensions strips formats it does not support (int32, int64, quantity, ...)
    s = StructuralSchema(
        crd_schema(
            {"i": {"type": "integer", "format": "int32"}, "q": {"type": "string", "format": "quantity"}}
        )
    )
    assert s.validate(cr({"i": 2**40, "q": "not-a-quantity"})) == []


def test_nullable():
    s = StructuralSchema(crd_schema({"a": {"type": "string", "nullable": True}, "b": {"type": "string"}}))
    assert s.validate(cr({"a": None})) == []
    assert messages(s.validate(cr({"b": None}))) == [
        'spec.b: Invalid value: "null": spec.b in body must be of type string: "null"'
    ]


def test_int_or_string():
    s = StructuralSchema(crd_schema({"port": {"x-kubernetes-int-or-string": True}}))
    assert s.validate(cr({"port": 80})) == []
    assert s.validate(cr({"port": "http"})) == []
    assert messages(s.validate(cr({"port": 1.5}))) == [
        'spec.port: Invalid value: "number": spec.port in body must be of type integer,string: "number"'
    ]
    # controller-gen's form with anyOf passes as well
    s = StructuralSchema(
        crd_schema(
            {
                "q": {
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                    "x-kubernetes-int-or-string": True,
                    "pattern": "^[0-9]+m?$",
                }
            }
        )
    )
    assert s.validate(cr({"q": "100m"})) == []
    assert s.validate(cr({"q": 3})) == []
    assert len(s.validate(cr({"q": "1x"}))) == 1


def test_all_any_one_not():
    s = StructuralSchema(
        crd_schema(
            {
                "a": {"type": "string", "anyOf": [{"pattern": "^x"}, {"pattern": "^y"}]},
                "o": {"type": "integer", "oneOf": [{"minimum": 5}, {"maximum": 10}]},
                "n": {"type": "string", "not": {"enum": ["forbidden"]}},
                "l": {"type": "integer", "allOf": [{"minimum": 1}, {"maximum": 3}]},
            }
        )
    )
    assert s.validate(cr({"a": "xa", "o": 20, "n": "fine", "l": 2})) == []
    errs = messages(s.validate(cr({"a": "za"})))
    assert '<nil>: Invalid value: "": "spec.a" must validate at least one schema (anyOf)' in errs
    errs = messages(s.validate(cr({"o": 7})))
    assert errs == [
        '<nil>: Invalid value: "": "spec.o" must validate one and only one schema (oneOf). Found 2 valid alternatives'
    ]
    errs = messages(s.validate(cr({"n": "forbidden"})))
    assert errs == ['<nil>: Invalid value: "": "spec.n" must not validate the schema (not)']
    errs = messages(s.validate(cr({"l": 5})))
    assert errs == [
        "spec.l: Invalid value: 5: spec.l in body should be less than or equal to 3",
        '<nil>: Invalid value: "": "spec.l" must validate all the schemas (allOf)',
    ]


def test_list_type_set_and_map_duplicates():
    s = StructuralSchema(
        crd_schema(
            {
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["port", "protocol"],
                    "items": {
                        "type": "object",
                        "required": ["port"],
                        "properties": {
                            "port": {"type": "integer"},
                            "protocol": {"type": "string", "default": "TCP"},
                        },
                    },
                },
                "byName": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                },
            }
        )
    )
    obj = cr(
        {
            "tags": ["a", "b", "a", "a"],
            "ports": [{"port": 80}, {"port": 80, "protocol": "UDP"}, {"port": 80}],
            "byName": [{"name": "x"}, {"name": "x"}],
        }
    )
    s.default(obj)
    errs = s.validate(obj)
    assert messages(errs) == [
        'spec.tags[2]: Duplicate value: "a"',
        'spec.ports[2]: Duplicate value: {"port":80,"protocol":"TCP"}',
        'spec.byName[1]: Duplicate value: {"name":"x"}',
    ]
    assert {e.type for e in errs} == {"FieldValueDuplicate"}


def test_list_type_at_descends_through_list_items():
    s = StructuralSchema(
        crd_schema(
            {
                "containers": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "ports": {
                                "type": "array",
                                "x-kubernetes-list-type": "set",
                                "items": {"type": "integer"},
                            },
                            "args": {"type": "array", "items": {"type": "string"}},
                        },
                    },
                },
                "sel": {"type": "object", "x-kubernetes-map-type": "atomic"},
            }
        )
    )
    assert s.list_type_at(("spec", "containers")) == ("map", ["name"])
    assert s.list_type_at(("spec", "containers", "ports")) == ("set", [])
    assert s.list_type_at(("spec", "containers", "args")) == ("atomic", [])
    assert s.list_type_at(("spec", "unknown")) == ("atomic", [])
    assert s.map_type_at(("spec", "sel")) == "atomic"
    assert s.map_type_at(("spec",)) == "granular"


def test_embedded_resource_requires_api_version_and_kind():
    s = StructuralSchema(
        crd_schema(
            {
                "tpl": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "x-kubernetes-preserve-unknown-fields": True,
                }
            }
        )
    )
    assert messages(s.validate(cr({"tpl": {"metadata": {"name": "x"}}}))) == [
        "spec.tpl.apiVersion: Required value",
        "spec.tpl.kind: Required value",
    ]
    assert s.validate(cr({"tpl": {"apiVersion": "v1", "kind": "Pod"}})) == []
    errs = messages(s.validate(cr({"tpl": {"apiVersion": "a/b/c", "kind": "Pod"}})))
    assert errs == ['spec.tpl.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c']


def test_ratcheting_keeps_unchanged_invalid_values():
    s = StructuralSchema(
        crd_schema(
            {
                "name": {"type": "string", "maxLength": 3},
                "other": {"type": "string"},
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            }
        )
    )
    old = cr({"name": "toolong", "other": "a", "tags": ["x", "x"]})
    new = cr({"name": "toolong", "other": "b", "tags": ["x", "x"]})
    assert s.validate(new, old) == []
    assert len(s.validate(new)) == 2  # on create both are reported
    new["spec"]["name"] = "stilltoolong"
    assert messages(s.validate(new, old)) == ["spec.name: Too long: may not be more than 3 bytes"]
    assert len(s.validate(new, old, ratcheting=False)) == 2


def test_root_metadata_schema_restricts_name():
    s = StructuralSchema(
        {
            "type": "object",
            "properties": {
                "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 4}}}
            },
        }
    )
    assert messages(s.validate(cr())) == []
    obj = cr()
    obj["metadata"]["name"] = "toolong"
    assert messages(s.validate(obj)) == ["metadata.name: Too long: may not be more than 4 bytes"]


# --- CEL -----------------------------------------------------------------------------------


def cel_schema(rules: list[dict], **spec_props) -> StructuralSchema:
    props = {
        "replicas": {"type": "integer"},
        "maxReplicas": {"type": "integer"},
        **spec_props,
    }
    return StructuralSchema(crd_schema(props, **{"x-kubernetes-validations": rules}))


def test_cel_rule_on_self_with_default_message():
    s = cel_schema([{"rule": "self.replicas <= self.maxReplicas"}])
    assert s.validate(cr({"replicas": 1, "maxReplicas": 2})) == []
    e = one(s.validate(cr({"replicas": 3, "maxReplicas": 2})))
    assert str(e) == 'spec: Invalid value: "object": failed rule: self.replicas <= self.maxReplicas'
    assert e.type == "FieldValueInvalid"


def test_cel_message_message_expression_reason_and_field_path():
    s = cel_schema(
        [
            {"rule": "self.replicas >= 0", "message": "must be non-negative"},
            {
                "rule": "self.replicas <= self.maxReplicas",
                "messageExpression": "'replicas (' + string(self.replicas) + ') exceed ' + string(self.maxReplicas)",
                "fieldPath": ".replicas",
            },
            {"rule": "self.replicas != 13", "reason": "FieldValueForbidden", "message": "unlucky"},
            {
                "rule": "has(self.maxReplicas)",
                "reason": "FieldValueRequired",
                "message": "set it",
                "fieldPath": ".maxReplicas",
            },
            {"rule": "self.replicas != 7", "reason": "FieldValueDuplicate"},
        ]
    )
    assert messages(s.validate(cr({"replicas": -1, "maxReplicas": 2}))) == [
        'spec: Invalid value: "object": must be non-negative'
    ]
    assert messages(s.validate(cr({"replicas": 13, "maxReplicas": 2}))) == [
        'spec.replicas: Invalid value: "object": replicas (13) exceed 2',
        "spec: Forbidden: unlucky",
    ]
    errs = s.validate(cr({"replicas": 7}))
    assert messages(errs) == [
        'spec: Invalid value: "object": no such key: maxReplicas evaluating rule: self.replicas <= self.maxReplicas',
        "spec.maxReplicas: Required value: set it",
        'spec: Duplicate value: "object"',
    ]


def test_cel_message_expression_failure_falls_back_to_message():
    s = cel_schema([{"rule": "self.replicas < 5", "message": "static", "messageExpression": "self.nope"}])
    assert messages(s.validate(cr({"replicas": 9}))) == ['spec: Invalid value: "object": static']


def test_cel_transition_rules_skipped_on_create():
    s = StructuralSchema(
        crd_schema(
            {
                "mode": {
                    "type": "string",
                    "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "is immutable"}],
                },
                "count": {
                    "type": "integer",
                    "x-kubernetes-validations": [
                        {
                            "rule": "!oldSelf.hasValue() || self >= oldSelf.value()",
                            "optionalOldSelf": True,
                            "message": "may not decrease",
                        }
                    ],
                },
            }
        )
    )
    assert s.validate(cr({"mode": "a", "count": 1})) == []
    assert s.validate(cr({"mode": "a", "count": 2}), cr({"mode": "a", "count": 1})) == []
    assert messages(s.validate(cr({"mode": "b", "count": 0}), cr({"mode": "a", "count": 1}))) == [
        'spec.mode: Invalid value: "string": is immutable',
        'spec.count: Invalid value: "integer": may not decrease',
    ]
    # a field added on update has no old value: the transition rule does not run
    assert s.validate(cr({"mode": "b"}), cr({})) == []


def test_cel_old_self_correlates_map_list_items_by_key():
    item = {
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": {"type": "string"},
            "port": {
                "type": "integer",
                "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "immutable"}],
            },
        },
    }
    s = StructuralSchema(
        crd_schema(
            {
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": item,
                }
            }
        )
    )
    old = cr({"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}]})
    reordered = cr({"ports": [{"name": "b", "port": 2}, {"name": "a", "port": 1}, {"name": "c", "port": 9}]})
    assert s.validate(reordered, old) == []
    changed = cr({"ports": [{"name": "b", "port": 3}, {"name": "a", "port": 1}]})
    assert messages(s.validate(changed, old)) == ['spec.ports[0].port: Invalid value: "integer": immutable']


def test_cel_rules_on_items_and_map_values():
    s = StructuralSchema(
        crd_schema(
            {
                "xs": {
                    "type": "array",
                    "items": {
                        "type": "string",
                        "x-kubernetes-validations": [{"rule": "self.startsWith('x')"}],
                    },
                },
                "m": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "integer",
                        "x-kubernetes-validations": [{"rule": "self > 0"}],
                    },
                },
            }
        )
    )
    assert messages(s.validate(cr({"xs": ["xa", "b"], "m": {"ok": 1, "bad": 0}}))) == [
        "spec.xs[1]: Invalid value: \"string\": failed rule: self.startsWith('x')",
        'spec.m[bad]: Invalid value: "integer": failed rule: self > 0',
    ]


def test_cel_root_rule_sees_metadata_name_and_reports_nil_path():
    s = StructuralSchema(
        {
            "type": "object",
            "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            "x-kubernetes-validations": [
                {"rule": "self.metadata.name.startsWith('w')", "message": "bad name"}
            ],
        }
    )
    assert s.validate(cr({})) == []
    obj = cr({})
    obj["metadata"]["name"] = "other"
    assert messages(s.validate(obj)) == ['<nil>: Invalid value: "object": bad name']


def test_cel_skipped_when_schema_errors_block():
    s = cel_schema([{"rule": "self.replicas <= self.maxReplicas"}])
    assert messages(s.validate(cr({"replicas": "x", "maxReplicas": 1}))) == [
        'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"',
        '<nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; '
        "correct the existing errors to complete validation",
    ]


def test_cel_typed_values_escaping_and_library():
    s = StructuralSchema(
        crd_schema(
            {
                "ratio": {"type": "number"},
                "dash-name": {"type": "string"},
                "namespace": {"type": "string"},
                "since": {"type": "string", "format": "date-time"},
                "timeout": {"type": "string", "format": "duration"},
                "mem": {"type": "string"},
                "xs": {"type": "array", "items": {"type": "integer"}},
                "url": {"type": "string"},
            },
            **{
                "x-kubernetes-validations": [
                    {"rule": "self.ratio * 2.0 <= 3.0", "message": "ratio"},
                    {"rule": "self.dash__dash__name != 'bad'", "message": "dash"},
                    {"rule": "self.__namespace__ != 'kube-system'", "message": "namespace"},
                    {"rule": "self.since > timestamp('2020-01-01T00:00:00Z')", "message": "since"},
                    {"rule": "self.timeout <= duration('1h')", "message": "timeout"},
                    {"rule": "quantity(self.mem).isLessThan(quantity('1Gi'))", "message": "mem"},
                    {"rule": "self.xs.isSorted() && self.xs.indexOf(3) != 0", "message": "xs"},
                    {"rule": "url(self.url).getScheme() == 'https'", "message": "url"},
                    {"rule": "'%s-%d'.format(['a', 1]) == 'a-1'", "message": "format"},
                ]
            },
        )
    )
    good = {
        "ratio": 1,
        "dash-name": "ok",
        "namespace": "default",
        "since": "2024-01-01T00:00:00Z",
        "timeout": "30m",
        "mem": "512Mi",
        "xs": [1, 2, 3],
        "url": "https://example.com/x",
    }
    assert s.validate(cr(good)) == []
    bad = {
        "ratio": 2,
        "dash-name": "bad",
        "namespace": "kube-system",
        "since": "2019-01-01T00:00:00Z",
        "timeout": "2h",
        "mem": "2Gi",
        "xs": [3, 1],
        "url": "http://example.com",
    }
    details = [e.detail for e in s.validate(cr(bad))]
    assert details == ["ratio", "dash", "namespace", "since", "timeout", "mem", "xs", "url"]


def test_cel_programs_are_compiled_once():
    s = cel_schema([{"rule": "self.replicas <= self.maxReplicas"}])
    s.validate(cr({"replicas": 1, "maxReplicas": 2}))
    rule = s._root.props["spec"].rules[0]
    prog = rule.program
    s.validate(cr({"replicas": 2, "maxReplicas": 2}))
    assert rule.program is prog
    # an identical rule in another schema reuses the compiled program
    other = cel_schema([{"rule": "self.replicas <= self.maxReplicas"}])
    other.validate(cr({"replicas": 1, "maxReplicas": 2}))
    assert other._root.props["spec"].rules[0].program is prog


def test_precompile_compiles_rules_up_front():
    s = cel_schema([{"rule": "self.replicas >= 0", "messageExpression": "'bad'"}])
    rule = s._root.props["spec"].rules[0]
    assert rule._prog is None
    s.precompile()
    assert rule._prog is not None and rule._prog.error is None
    assert rule._msg_prog is not None


def test_cel_string_size_counts_characters():
    s = StructuralSchema(
        crd_schema({"n": {"type": "string", "x-kubernetes-validations": [{"rule": "self.size() <= 3"}]}})
    )
    assert s.validate(cr({"n": "héé"})) == []
    assert len(s.validate(cr({"n": "héé!"}))) == 1


def test_cel_ratcheting_skips_unchanged_subtrees():
    s = StructuralSchema(
        crd_schema(
            {
                "a": {
                    "type": "integer",
                    "x-kubernetes-validations": [{"rule": "self < 5", "message": "small"}],
                },
                "b": {"type": "integer"},
            }
        )
    )
    old = cr({"a": 9, "b": 1})
    assert s.validate(cr({"a": 9, "b": 2}), old) == []
    assert messages(s.validate(cr({"a": 8, "b": 2}), old)) == ['spec.a: Invalid value: "integer": small']


def test_escape_cel_property():
    assert escape_cel_property("foo") == "foo"
    assert escape_cel_property("a-b.c/d") == "a__dash__b__dot__c__slash__d"
    assert escape_cel_property("x__y") == "x__underscores__y"
    assert escape_cel_property("namespace") == "__namespace__"
    assert escape_cel_property("has space") is None


# --- CRD-time structural checks ----------------------------------------------------------------

P = "spec.versions[0].schema.openAPIV3Schema"


def test_valid_structural_schema_has_no_errors():
    schema = crd_schema(
        {
            "replicas": {"type": "integer", "default": 1, "minimum": 0},
            "ports": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
            },
            "q": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True},
        },
        **{
            "x-kubernetes-validations": [
                {"rule": "self.replicas >= 0", "messageExpression": "'bad: ' + string(self.replicas)"}
            ]
        },
    )
    schema["properties"]["metadata"] = {
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 10}},
    }
    assert validate_structural(schema) == []


def test_non_structural_missing_types():
    schema = {
        "type": "object",
        "properties": {"spec": {"properties": {"a": {"type": "string"}}}, "xs": {"type": "array"}},
    }
    assert messages(validate_structural(schema)) == [
        f"{P}.properties[spec].type: Required value: must not be empty for specified object fields",
        f"{P}.properties[xs].items: Required value: must be specified",
    ]
    assert messages(validate_structural({"properties": {}})) == [
        f"{P}.type: Required value: must not be empty at the root"
    ]
    assert messages(validate_structural({"type": "string"})) == [
        f'{P}.type: Invalid value: "string": must be object at the root'
    ]
    # preserve-unknown-fields and int-or-string may omit the type
    assert (
        validate_structural(
            {"type": "object", "properties": {"x": {"x-kubernetes-preserve-unknown-fields": True}}}
        )
        == []
    )


def test_forbidden_keywords_and_exclusive_properties():
    schema = {
        "type": "object",
        "properties": {
            "a": {"$ref": "#/definitions/x", "type": "object"},
            "b": {
                "type": "array",
                "items": {"type": "string"},
                "additionalItems": False,
                "uniqueItems": True,
            },
            "c": {
                "type": "object",
                "properties": {"x": {"type": "string"}},
                "additionalProperties": {"type": "string"},
            },
            "d": {"type": "null"},
        },
    }
    errs = messages(validate_structural(schema))
    assert f"{P}.properties[a].$ref: Forbidden: $ref is not supported" in errs
    assert f"{P}.properties[b].additionalItems: Forbidden: additionalItems is not supported" in errs
    assert (
        f"{P}.properties[b].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
        in errs
    )
    assert (
        f"{P}.properties[c].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"
        in errs
    )
    assert (
        f"{P}.properties[d].type: Forbidden: type cannot be set to null, use nullable as an alternative"
        in errs
    )


def test_metadata_at_root_may_only_restrict_name_and_generate_name():
    schema = {
        "type": "object",
        "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}},
    }
    assert messages(validate_structural(schema)) == [
        f"{P}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, "
        "but metadata is implicitly specified"
    ]
    schema["properties"]["metadata"]["properties"] = {
        "name": {"type": "string"},
        "generateName": {"type": "string"},
    }
    assert validate_structural(schema) == []


def test_value_validations_must_not_declare_types_or_new_fields():
    schema = crd_schema({"a": {"type": "string", "anyOf": [{"type": "string"}, {"pattern": "x"}]}})
    # like kube, completeness is checked for the value validations at the root
    schema["allOf"] = [{"properties": {"spec": {"properties": {"b": {"minLength": 1}}}}}]
    assert messages(validate_structural(schema)) == [
        f"{P}.properties[spec].properties[a].anyOf[0].type: Forbidden: must be empty to be structural",
        f"{P}.properties[spec].properties[b]: Required value: because it is defined in "
        f"{P}.allOf[0].properties[spec].properties[b]",
    ]


def test_defaults_must_validate_and_be_pruned():
    schema = crd_schema(
        {
            "size": {"type": "integer", "default": "big"},
            "obj": {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "default": {"a": "x", "zz": 1},
            },
        }
    )
    assert messages(validate_structural(schema)) == [
        f'{P}.properties[spec].properties[size].default: Invalid value: "string":  in body must be of type integer: "string"',
        f'{P}.properties[spec].properties[obj].default: Invalid value: {{"a":"x","zz":1}}: must not have unknown fields',
    ]
    errs = messages(
        validate_structural({"type": "object", "properties": {"metadata": {"type": "object", "default": {}}}})
    )
    assert f"{P}.properties[metadata].default: Forbidden: must not be set in top-level metadata" in errs


def test_cel_compile_errors_are_reported_at_the_rule():
    schema = crd_schema(
        {"a": {"type": "string"}},
        **{
            "x-kubernetes-validations": [
                {"rule": "self.a +"},
                {"rule": "self.a == 'x'", "messageExpression": "nosuchfn(self.a)"},
                {"rule": "self.a == 'x'", "optionalOldSelf": True},
                {"rule": "self.a == 'x'", "reason": "Bogus"},
                {"rule": ""},
            ]
        },
    )
    errs = validate_structural(schema)
    paths = [(e.field, e.type) for e in errs]
    v = f"{P}.properties[spec].x-kubernetes-validations"
    assert (f"{v}[3].reason", "FieldValueNotSupported") in paths
    assert (f"{v}[4].rule", "FieldValueRequired") in paths
    # CEL compilation only runs once the schema itself is valid
    del schema["properties"]["spec"]["x-kubernetes-validations"][3:]
    errs = validate_structural(schema)
    assert [(e.field, e.type) for e in errs] == [
        (f"{v}[0].rule", "FieldValueInvalid"),
        (f"{v}[1].messageExpression", "FieldValueInvalid"),
        (f"{v}[2].optionalOldSelf", "FieldValueInvalid"),
    ]
    assert errs[0].detail.startswith("compilation failed: ERROR: <input>:1:")
    assert "undeclared reference to 'nosuchfn'" in errs[1].detail


def test_old_self_is_rejected_on_uncorrelatable_items():
    schema = crd_schema(
        {
            "xs": {
                "type": "array",
                "items": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]},
            }
        }
    )
    e = one(validate_structural(schema))
    assert e.field == f"{P}.properties[spec].properties[xs].items.x-kubernetes-validations[0].rule"
    assert (
        e.detail
        == f"oldSelf cannot be used on the uncorrelatable portion of the schema within {P}.properties[spec].properties[xs]"
    )


def test_list_map_keys_must_be_required_or_defaulted():
    schema = crd_schema(
        {
            "ports": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name", "missing"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}}},
            },
            "tags": {"type": "array", "x-kubernetes-list-map-keys": ["x"], "items": {"type": "string"}},
        }
    )
    errs = messages(validate_structural(schema))
    base = f"{P}.properties[spec].properties"
    assert (
        f'{base}[ports].x-kubernetes-list-map-keys: Invalid value: ["name","missing"]: entries must all be names of item properties'
        in errs
    )
    assert (
        f"{base}[ports].items.properties[name].default: Required value: this property is in x-kubernetes-list-map-keys, "
        "so it must have a default or be a required property" in errs
    )
    assert (
        f"{base}[tags].x-kubernetes-list-type: Required value: must be map if x-kubernetes-list-map-keys is non-empty"
        in errs
    )


def test_invalid_pattern_is_rejected():
    errs = validate_structural(crd_schema({"a": {"type": "string", "pattern": "(?=x)a"}}))
    e = one(errs)
    assert e.field == f"{P}.properties[spec].properties[a].pattern"
    assert e.detail.startswith("must be a valid regular expression, but isn't: error parsing regexp:")


def test_embedded_resource_needs_object_type_and_properties():
    schema = crd_schema({"tpl": {"x-kubernetes-embedded-resource": True, "type": "string"}})
    assert messages(validate_structural(schema)) == [
        f"{P}.properties[spec].properties[tpl].properties: Required value: must not be empty if "
        "x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        f'{P}.properties[spec].properties[tpl].type: Invalid value: "string": must be object if '
        "x-kubernetes-embedded-resource is true",
    ]


def test_status_subresource_restricts_root_keywords():
    schema = {"type": "object", "properties": {}, "x-kubernetes-preserve-unknown-fields": True, "enum": [{}]}
    errs = validate_structural(copy.deepcopy(schema), status_subresource=True)
    assert any(
        "fields are allowed at the root of the schema if the status subresource is enabled" in e.detail
        for e in errs
    )
