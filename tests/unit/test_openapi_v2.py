"""The v2 document's conversions and kube-openapi's serving rules, without a server."""

from __future__ import annotations

from fleetplane.server import openapi_v2
from fleetplane.server.http import not_modified
from fleetplane.server.openapiv2_pb2 import Document


def test_v3_schemas_become_swagger_forms():
    schema = {"properties": {"meta": {"allOf": [{"$ref": "#/components/schemas/X"}], "description": "d", "default": {}},
                             "n": {"oneOf": [{"type": "integer"}, {"type": "string"}], "format": "int-or-string"},
                             "opt": {"type": "string", "nullable": True}}, "type": "object"}
    got = openapi_v2._schema(schema)
    assert got["properties"]["meta"] == {"$ref": "#/definitions/X", "description": "d", "default": {}}
    assert got["properties"]["n"] == {"format": "int-or-string", "type": "string"}
    assert got["properties"]["opt"] == {"type": "string"}


def test_crd_schema_as_to_structural_openapi_v2():
    schema = {"type": "object", "required": ["a", "b"], "properties": {
        "a": {"type": "object", "nullable": True, "properties": {"x": {"type": "string"}}},
        "b": {"type": "array"},
        "c": {"type": "string", "anyOf": [{"enum": ["p"]}], "not": {"enum": ["q"]}},
        "d": {"type": "array", "items": {"type": "integer", "allOf": [{"minimum": 1}]}}}}
    got = openapi_v2.structural_v2(schema)
    assert got["required"] == ["b"]  # a nullable property is no longer required
    assert got["properties"]["a"] == {}  # nullable: untyped, without properties
    assert got["properties"]["b"] == {}  # an array without items: untyped
    assert got["properties"]["c"] == {"type": "string"}
    assert got["properties"]["d"] == {"type": "array", "items": {"type": "integer"}}
    assert schema["properties"]["a"]["nullable"] is True  # the CRD's own schema is untouched


def test_negotiation_follows_the_clients_order():
    pb = openapi_v2.MEDIA_PROTOBUF
    assert openapi_v2.negotiate("") == "application/json"
    assert openapi_v2.negotiate("application/com.github.proto-openapi.spec.v2@v1.0+protobuf, application/json") == pb
    assert openapi_v2.negotiate("application/json;q=0.9, application/com.github.proto-openapi.spec.v2.v1.0+protobuf") == pb
    assert openapi_v2.negotiate("*/*, application/com.github.proto-openapi.spec.v2@v1.0+protobuf") == pb
    assert openapi_v2.negotiate("application/json, application/com.github.proto-openapi.spec.v2@v1.0+protobuf") == "application/json"
    assert openapi_v2.negotiate("application/*") == "application/json"
    assert openapi_v2.negotiate("text/html") is None


def test_if_none_match_lists_weak_tags_and_star():
    tag = '"ABC"'
    assert not_modified('"ABC"', tag) and not_modified('"x", W/"ABC"', tag)
    assert not_modified("*", tag)
    assert not not_modified("", tag) and not not_modified('"abc"', tag)


def test_protobuf_forms_of_gnostic():
    doc = {"swagger": "2.0", "info": {"title": "t", "version": "v"}, "paths": {"/a": {"get": {
        "parameters": [{"$ref": "#/parameters/p"}, {"in": "path", "name": "n", "type": "string", "required": True}],
        "responses": {"200": {"description": "OK", "schema": {"$ref": "#/definitions/D"}}}, "x-kubernetes-action": "get"}}},
        "definitions": {"D": {"type": "object", "additionalProperties": True, "items": [{"type": "string"}],
                              "enum": ["a", 1], "properties": {"k": {"type": ["string", "null"], "default": "z"}}}},
        "securityDefinitions": openapi_v2.SECURITY_DEFINITIONS, "security": [{"BearerToken": []}]}
    got = Document.FromString(openapi_v2.to_protobuf(doc))
    op = got.paths.path[0].value.get
    assert op.parameters[0].json_reference._ref == "#/parameters/p"
    assert op.parameters[1].parameter.non_body_parameter.path_parameter_sub_schema.required
    assert op.responses.response_code[0].value.response.schema.schema._ref == "#/definitions/D"
    assert op.vendor_extension[0].value.yaml == '"get"'
    d = got.definitions.additional_properties[0].value
    assert d.additional_properties.boolean and d.items.schema[0].type.value == ["string"]
    assert [e.yaml for e in d.enum] == ['"a"', "1"]
    k = d.properties.additional_properties[0].value
    assert list(k.type.value) == ["string", "null"] and k.default.yaml == '"z"'
    assert got.security_definitions.additional_properties[0].value.api_key_security.name == "authorization"
    assert got.security[0].additional_properties[0].name == "BearerToken"
