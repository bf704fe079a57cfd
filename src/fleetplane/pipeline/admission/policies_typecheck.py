"""Type checking of a ValidatingAdmissionPolicy against the kinds it matches (kube's
``policy/validating/typechecking.go``), as far as the hub's CEL engine allows.

kube compiles each validation and message expression once per matched kind (up to 10, from
``matchConstraints.resourceRules`` without wildcards), with ``object``/``oldObject`` (and
``params``) typed by the kinds' OpenAPI schemas, and reports the issues in
``status.typeChecking.expressionWarnings``. The engine the hub uses has no type checker, so this
checks what a schema decides without one: every field an expression selects from ``object``,
``oldObject`` or ``params`` by a plain ``a.b.c`` chain must exist in the schema (cel-go's
``undefined field 'x'``, with its location and caret), and an expression that does not compile
(which validation refuses, but a stored policy may predate) is reported as kube's check would.
Type mismatches of operators are not found.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ...apimachinery.cel.library import code_segments
from ...registry.definitions import OBJECT_META, REF, definitions
from .policies_cel import OBJECT, OLD_OBJECT, PARAMS, compile_admission, issue

MAX_TYPES_TO_CHECK = 10
_RX_CHAIN = re.compile(r"(?<![\w.])(object|oldObject|params)((?:\s*\.\s*[A-Za-z_]\w*)+)")
_RX_STEP = re.compile(r"\s*(\.)\s*([A-Za-z_]\w*)")
_RX_CALL = re.compile(r"\s*\(")

#: (cluster, group, version, resource) -> (kind, schema) of a served type, or None
ResolveResource = Callable[[str, str, str, str], "tuple[str, dict[str, Any]] | None"]
#: (cluster, apiVersion, kind) -> schema of a served kind, or None
ResolveKind = Callable[[str, str, str], "dict[str, Any] | None"]


def _deref(schema: Any) -> Any:
    """Follow ``$ref`` and single-``allOf`` wrappers into the definitions."""
    for _ in range(8):
        if not isinstance(schema, dict):
            return schema
        ref = schema.get("$ref")
        if ref is None and len(schema.get("allOf") or []) == 1:
            ref = schema["allOf"][0].get("$ref")
        if not isinstance(ref, str) or not ref.startswith(REF):
            return schema
        schema = definitions().get(ref[len(REF):])
    return schema


def _child(schema: Any, name: str, root: bool) -> tuple[bool, Any]:
    """(known, child schema or None for dyn) of field ``name``."""
    schema = _deref(schema)
    if not isinstance(schema, dict):
        return True, None
    props = schema.get("properties")
    if root and name in ("apiVersion", "kind"):
        return True, None
    if root and name == "metadata" and not (isinstance(props, dict) and "metadata" in props and
                                            _deref(props["metadata"]).get("properties")):
        return True, definitions().get(OBJECT_META)
    if isinstance(props, dict) and props:
        if name in props:
            return True, props[name]
        if schema.get("x-kubernetes-preserve-unknown-fields") or schema.get("additionalProperties"):
            return True, None
        return False, None
    additional = schema.get("additionalProperties")
    if isinstance(additional, dict):
        return True, additional
    return True, None  # an open object, or no schema: dyn


def undefined_fields(source: str, schemas: dict[str, Any]) -> list[str]:
    """cel-go's issues for fields selected from ``schemas``' variables that the schema lacks."""
    issues: list[str] = []
    pos = 0
    for is_code, text in code_segments(source):
        if is_code:
            for m in _RX_CHAIN.finditer(text):
                schema = schemas.get(m.group(1))
                if schema is None:
                    continue
                steps = list(_RX_STEP.finditer(m.group(2)))
                for i, step in enumerate(steps):
                    if i == len(steps) - 1 and _RX_CALL.match(text, m.start(2) + step.end()):
                        break  # a method call on the value (``object.name.startsWith(...)``)
                    known, schema = _child(schema, step.group(2), i == 0)
                    if not known:
                        issues.append(issue(source, pos + m.start(2) + step.start(1), f"undefined field '{step.group(2)}'"))
                        break
                    if schema is None:
                        break
        pos += len(text)
    return issues


def _gvk_string(group: str, version: str, kind: str) -> str:
    """schema.GroupVersionKind's String(): ``apps/v1, Kind=Deployment``, ``/v1, Kind=ConfigMap``."""
    return f"{group}/{version}, Kind={kind}"


class TypeChecker:
    """``status.typeChecking.expressionWarnings`` of a policy in a logical cluster."""

    def __init__(self, resolve_resource: ResolveResource, resolve_kind: ResolveKind) -> None:
        self.resolve_resource = resolve_resource
        self.resolve_kind = resolve_kind

    def _types(self, policy: dict[str, Any], cluster: str) -> list[tuple[str, dict[str, Any]]]:
        spec = policy.get("spec") or {}
        found: dict[tuple[str, str, str], dict[str, Any]] = {}
        for rule in (spec.get("matchConstraints") or {}).get("resourceRules") or []:
            groups, versions = rule.get("apiGroups") or [], rule.get("apiVersions") or []
            if any("*" in g for g in groups) or any("*" in v for v in versions):
                continue
            resources = [r for r in rule.get("resources") or [] if "*" not in r and "/" not in r]
            for group in sorted(groups):
                for version in sorted(versions):
                    for resource in sorted(resources):
                        resolved = self.resolve_resource(cluster, group, version, resource)
                        if resolved is not None:
                            found[(group, version, resolved[0])] = resolved[1]
                            if len(found) == MAX_TYPES_TO_CHECK:
                                break
        return [(_gvk_string(*gvk), found[gvk]) for gvk in sorted(found)]

    def check(self, policy: dict[str, Any], cluster: str) -> list[dict[str, str]]:
        spec = policy.get("spec") or {}
        types = self._types(policy, cluster)
        if not types:
            return []
        params: Any = None
        pk = spec.get("paramKind")
        if isinstance(pk, dict):
            params = self.resolve_kind(cluster, str(pk.get("apiVersion") or ""), str(pk.get("kind") or ""))
        warnings: list[dict[str, str]] = []

        variables = tuple(str(v.get("name") or "") for v in spec.get("variables") or [] if isinstance(v, dict))

        def check_expression(field_ref: str, source: str) -> None:
            compiled = compile_admission(source, params=isinstance(pk, dict), authorizer=True, variables=variables)
            results = []
            for gvk, schema in types:
                if compiled.error is not None:  # a stored expression that does not compile (any more)
                    found = [compiled.error.removeprefix("compilation failed: ")]
                else:
                    schemas = {OBJECT: schema, OLD_OBJECT: schema, **({PARAMS: params} if params is not None else {})}
                    found = undefined_fields(source, schemas)
                if found:
                    results.append(f"{gvk}: " + "\n".join(found) + "\n")
            if results:
                warnings.append({"fieldRef": field_ref, "warning": "\n".join(results)})

        for i, v in enumerate(spec.get("validations") or []):
            if not isinstance(v, dict):
                continue
            check_expression(f"spec.validations[{i}].expression", str(v.get("expression") or ""))
            if v.get("messageExpression"):
                check_expression(f"spec.validations[{i}].messageExpression", str(v["messageExpression"]))
        return warnings
