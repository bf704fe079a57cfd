"""Types as CRDs: a structural schema from a cluster's OpenAPI v3, the CRD that imports a
cluster's type into the hub, and the compatibility check between two schemas.

kube-apiserver publishes built-in types in OpenAPI v3 with ``$ref``s (``allOf: [{$ref}]`` where
a field has its own description or default), ``oneOf`` for int-or-string, and extensions a CRD
may not carry (``x-kubernetes-patch-*``, ``x-kubernetes-unions``). A CRD needs a *structural*
schema: every node typed (or int-or-string / preserve-unknown-fields), no references, no
``oneOf`` carrying types, ``properties`` and ``additionalProperties`` exclusive, defaults valid.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import orjson

META = "io.k8s.apimachinery.pkg.apis.meta.v1."
OBJECT_META = META + "ObjectMeta"
#: types whose JSON is an int or a string
INT_OR_STRING = frozenset({"io.k8s.apimachinery.pkg.util.intstr.IntOrString", "io.k8s.apimachinery.pkg.api.resource.Quantity"})
#: types whose JSON is arbitrary: kept as they are
ARBITRARY = frozenset({
    "io.k8s.apimachinery.pkg.runtime.RawExtension",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
    META + "FieldsV1",
})
#: keywords a CRD schema node may carry (others are dropped)
KEEP = frozenset({
    "description", "type", "format", "enum", "nullable", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "minLength", "maxLength", "minItems", "maxItems", "multipleOf", "minProperties",
    "maxProperties", "x-kubernetes-map-type",
})
FORMATS = frozenset({"int32", "int64", "float", "double", "byte", "date", "date-time", "uuid", "email", "hostname"})
MAX_DEPTH = 48

PRESERVE = {"x-kubernetes-preserve-unknown-fields": True}
PERMISSIVE_SCHEMA = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
    "x-kubernetes-preserve-unknown-fields": True,
}


class SchemaError(Exception):
    pass


def _name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def find_kind(doc: dict, group: str, version: str, kind: str) -> str | None:
    """The components.schemas name of ``group/version, Kind=kind`` in an OpenAPI v3 document."""
    for name, s in ((doc.get("components") or {}).get("schemas") or {}).items():
        for gvk in s.get("x-kubernetes-group-version-kind") or []:
            if gvk.get("group", "") == group and gvk.get("version") == version and gvk.get("kind") == kind:
                return name
    return None


def _scalar_default_ok(node: dict, value: Any) -> bool:
    t: Any = node.get("type")
    ok = {"string": isinstance(value, str), "boolean": isinstance(value, bool),
          "integer": isinstance(value, int) and not isinstance(value, bool),
          "number": isinstance(value, int | float) and not isinstance(value, bool)}.get(t, False)
    return ok and (node.get("enum") is None or value in node["enum"])


class _Converter:
    def __init__(self, schemas: dict) -> None:
        self.schemas = schemas

    def convert(self, node: Any, stack: tuple[str, ...]) -> dict:
        if not isinstance(node, dict):
            return dict(PRESERVE)
        ref = node.get("$ref")
        all_of = node.get("allOf")
        if ref is None and isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict) and "$ref" in all_of[0]:
            ref = all_of[0]["$ref"]
        if ref is not None:
            name = _name(ref)
            desc = {"description": node["description"]} if isinstance(node.get("description"), str) else {}
            if name in INT_OR_STRING:
                return {"x-kubernetes-int-or-string": True, **desc}
            if name in ARBITRARY:
                return {"type": "object", "x-kubernetes-preserve-unknown-fields": True, **desc}
            if name == OBJECT_META:  # embedded metadata (a pod template's): kept as written
                return {"type": "object", "x-kubernetes-preserve-unknown-fields": True, **desc}
            target = self.schemas.get(name)
            if target is None or name in stack or len(stack) > MAX_DEPTH:
                return {"type": "object", "x-kubernetes-preserve-unknown-fields": True, **desc}
            merged = {**target, **desc}
            if "default" in node and "default" not in merged:
                merged["default"] = node["default"]
            return self.convert(merged, (*stack, name))
        if isinstance(all_of, list) and all_of:
            return dict(PRESERVE)  # a real intersection: not expressible structurally
        one_of = node.get("oneOf") or node.get("anyOf")
        if node.get("format") == "int-or-string" or node.get("x-kubernetes-int-or-string"):
            return {"x-kubernetes-int-or-string": True, **({"description": node["description"]} if "description" in node else {})}
        if isinstance(one_of, list) and one_of:
            types = {s.get("type") for s in one_of if isinstance(s, dict)}
            out: dict = {"description": node["description"]} if "description" in node else {}
            if types <= {"integer", "string", "number"} and "string" in types:
                out["x-kubernetes-int-or-string"] = True
            else:
                out["x-kubernetes-preserve-unknown-fields"] = True
            return out
        out = {k: copy.deepcopy(v) for k, v in node.items() if k in KEEP}
        if out.get("format") not in FORMATS:
            out.pop("format", None)
        t = node.get("type")
        if t is None and ("properties" in node or "additionalProperties" in node):
            t = "object"
        if t == "object":
            out["type"] = "object"
            props = node.get("properties")
            ap = node.get("additionalProperties")
            if isinstance(props, dict) and props:
                out["properties"] = {k: self.convert(v, stack) for k, v in props.items()}
                req = [r for r in node.get("required") or [] if r in props]
                if req:
                    out["required"] = req
                if ap not in (None, False):
                    out["x-kubernetes-preserve-unknown-fields"] = True
            elif isinstance(ap, dict):
                out["additionalProperties"] = self.convert(ap, stack)
            else:
                out["x-kubernetes-preserve-unknown-fields"] = True
        elif t == "array":
            out["type"] = "array"
            items = node.get("items")
            out["items"] = self.convert(items, stack) if isinstance(items, dict) else dict(PRESERVE)
            self._list_type(node, out)
        elif t in ("string", "integer", "number", "boolean"):
            out["type"] = t
            if "default" in node and _scalar_default_ok(out, node["default"]):
                out["default"] = node["default"]
            if out.get("enum") is not None and not all(_scalar_default_ok({"type": t}, v) for v in out["enum"]):
                out.pop("enum")
        else:
            desc = {"description": node["description"]} if "description" in node else {}
            return {**PRESERVE, **desc}
        return out

    @staticmethod
    def _list_type(node: dict, out: dict) -> None:
        lt = node.get("x-kubernetes-list-type")
        items = out["items"]
        if lt == "map":
            keys = node.get("x-kubernetes-list-map-keys") or []
            props = items.get("properties") or {}
            required = set(items.get("required") or [])
            ok = items.get("type") == "object" and keys and all(
                k in props and (k in required or "default" in props[k]) and props[k].get("type") in ("string", "integer", "boolean", "number")
                for k in keys)
            if ok:
                out["x-kubernetes-list-type"] = "map"
                out["x-kubernetes-list-map-keys"] = list(keys)
        elif lt == "set":
            if items.get("type") in ("string", "integer", "number", "boolean"):
                out["x-kubernetes-list-type"] = "set"
        elif lt == "atomic":
            out["x-kubernetes-list-type"] = "atomic"


def structural_from_openapi(doc: dict, group: str, version: str, kind: str) -> dict:
    """The structural ``openAPIV3Schema`` of a kind from its group version's OpenAPI v3 document."""
    schemas = (doc.get("components") or {}).get("schemas") or {}
    name = find_kind(doc, group, version, kind)
    if name is None:
        raise SchemaError(f"the cluster's OpenAPI v3 document for {group or 'core'}/{version} has no schema for kind {kind}")
    root = _Converter(schemas).convert(schemas[name], (name,))
    if root.get("type") != "object":
        raise SchemaError(f"the schema of {kind} is not an object")
    props = root.setdefault("properties", {})
    props["apiVersion"] = {"type": "string", **({"description": props["apiVersion"]["description"]} if "description" in props.get("apiVersion", {}) else {})}
    props["kind"] = {"type": "string", **({"description": props["kind"]["description"]} if "description" in props.get("kind", {}) else {})}
    props["metadata"] = {"type": "object"}
    for k in ("x-kubernetes-preserve-unknown-fields", "required", "nullable", "enum", "default", "format"):
        root.pop(k, None)
    return root


# -- printer columns for built-in kinds, as kubectl shows them ------------------------------

def _col(name: str, path: str, t: str = "integer", priority: int = 0) -> dict:
    c: dict[str, Any] = {"name": name, "type": t, "jsonPath": path}
    if priority:
        c["priority"] = priority
    return c


AGE = _col("Age", ".metadata.creationTimestamp", "date")
#: kube's printers cannot all be one JSONPath per column (Deployment READY is ready/desired);
#: these are the nearest CRD columns. The hub may print a kind with its built-in printer instead.
BUILTIN_COLUMNS: dict[tuple[str, str], list[dict]] = {
    ("apps", "Deployment"): [_col("Ready", ".status.readyReplicas"), _col("Desired", ".spec.replicas"),
                             _col("Up-to-date", ".status.updatedReplicas"), _col("Available", ".status.availableReplicas"), AGE],
    ("apps", "ReplicaSet"): [_col("Desired", ".spec.replicas"), _col("Current", ".status.replicas"),
                             _col("Ready", ".status.readyReplicas"), AGE],
    ("apps", "StatefulSet"): [_col("Ready", ".status.readyReplicas"), _col("Desired", ".spec.replicas"), AGE],
    ("apps", "DaemonSet"): [_col("Desired", ".status.desiredNumberScheduled"), _col("Current", ".status.currentNumberScheduled"),
                            _col("Ready", ".status.numberReady"), _col("Up-to-date", ".status.updatedNumberScheduled"),
                            _col("Available", ".status.numberAvailable"), AGE],
    ("batch", "Job"): [_col("Completions", ".spec.completions"), _col("Succeeded", ".status.succeeded"), AGE],
    ("batch", "CronJob"): [_col("Schedule", ".spec.schedule", "string"), _col("Suspend", ".spec.suspend", "boolean"),
                           _col("Last Schedule", ".status.lastScheduleTime", "date"), AGE],
    ("autoscaling", "HorizontalPodAutoscaler"): [_col("Reference", ".spec.scaleTargetRef.name", "string"),
                                                 _col("MinPods", ".spec.minReplicas"), _col("MaxPods", ".spec.maxReplicas"),
                                                 _col("Replicas", ".status.currentReplicas"), AGE],
    ("networking.k8s.io", "Ingress"): [_col("Class", ".spec.ingressClassName", "string"), AGE],
    ("policy", "PodDisruptionBudget"): [_col("Min Available", ".spec.minAvailable", "string"),
                                        _col("Max Unavailable", ".spec.maxUnavailable", "string"),
                                        _col("Allowed Disruptions", ".status.disruptionsAllowed"), AGE],
}


def _has_path(schema: dict, path: str) -> bool:
    node: Any = schema
    for part in path.strip(".").split("."):
        node = (node.get("properties") or {}).get(part)
        if not isinstance(node, dict):
            return False
    return True


def crd_version_from_openapi(doc: dict, group: str, version: str, kind: str, subresources: frozenset[str]) -> dict:
    """One CRD version for a built-in type: schema, subresources from discovery, printer columns."""
    schema = structural_from_openapi(doc, group, version, kind)
    v: dict = {"name": version, "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}
    subs: dict = {}
    if "status" in subresources and "status" in schema.get("properties", {}):
        subs["status"] = {}
    if "scale" in subresources and _has_path(schema, ".spec.replicas") and _has_path(schema, ".status.replicas"):
        subs["scale"] = {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}
        if _has_path(schema, ".status.selector"):
            subs["scale"]["labelSelectorPath"] = ".status.selector"
    if subs:
        v["subresources"] = subs
    cols = [c for c in BUILTIN_COLUMNS.get((group, kind), []) if c is AGE or _has_path(schema, c["jsonPath"])]
    if cols:
        v["additionalPrinterColumns"] = cols
    return v


_CRD_VERSION_KEYS = ("name", "served", "storage", "schema", "subresources", "additionalPrinterColumns",
                     "selectableFields", "deprecated", "deprecationWarning")


def crd_spec_from_crd(spec: dict) -> dict:
    """A cluster's own CRD spec, made servable by the hub: conversion None (the hub runs no
    webhooks), no legacy fields."""
    out = {k: copy.deepcopy(spec[k]) for k in ("group", "names", "scope") if k in spec}
    out["versions"] = [{k: copy.deepcopy(v[k]) for k in _CRD_VERSION_KEYS if k in v} for v in spec.get("versions") or []]
    out["conversion"] = {"strategy": "None"}
    return out


# -- comparing schemas ----------------------------------------------------------------------

_DOC_KEYS = frozenset({"description", "example", "externalDocs", "title"})


def strip_docs(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: strip_docs(v) for k, v in node.items() if k not in _DOC_KEYS}
    if isinstance(node, list):
        return [strip_docs(v) for v in node]
    return node


def canonical(obj: Any) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)


def digest(obj: Any, n: int = 16) -> str:
    return hashlib.sha256(canonical(obj)).hexdigest()[:n]


def schema_fingerprint(spec: dict) -> str:
    """What makes two CRD specs the same type (documentation and printer columns aside)."""
    versions = sorted(
        ({"name": v.get("name"), "served": v.get("served", True),
          "schema": strip_docs((v.get("schema") or {}).get("openAPIV3Schema") or {}),
          "subresources": v.get("subresources") or {}} for v in spec.get("versions") or []),
        key=lambda v: str(v["name"]))
    names = spec.get("names") or {}
    return digest({"group": spec.get("group"), "scope": spec.get("scope"),
                   "names": {"kind": names.get("kind"), "plural": names.get("plural")}, "versions": versions})


def _type_of(n: dict) -> str:
    if n.get("x-kubernetes-int-or-string"):
        return "int-or-string"
    return n.get("type") or ("any" if n.get("x-kubernetes-preserve-unknown-fields") else "untyped")


def _compat(h: dict, c: dict, path: str, out: list[str], limit: int) -> None:
    if len(out) >= limit:
        return
    where = path or "<root>"
    ht, ct = _type_of(h), _type_of(c)
    c_open = (c.get("x-kubernetes-preserve-unknown-fields") and not c.get("properties")
              and not isinstance(c.get("additionalProperties"), dict) and "items" not in c)
    if c_open and ct in ("any", ht):
        return
    if ht != ct:
        if not (ct == "int-or-string" and ht in ("integer", "string")) and not (ct == "number" and ht == "integer"):
            out.append(f"{where}: {ht} on the hub, {ct} in the cluster")
        return
    if c.get("enum") is not None:
        extra = [v for v in (h.get("enum") or ["<any>"]) if v not in c["enum"]]
        if h.get("enum") is None or extra:
            out.append(f"{where}: the cluster allows only {c['enum']}")
    if ht == "object":
        hp, cp = h.get("properties") or {}, c.get("properties") or {}
        c_keep = bool(c.get("x-kubernetes-preserve-unknown-fields"))
        cap = c.get("additionalProperties")
        for k, hs in hp.items():
            sub = f"{path}.{k}" if path else k
            if k in cp:
                _compat(hs, cp[k], sub, out, limit)
            elif isinstance(cap, dict):
                _compat(hs, cap, sub, out, limit)
            elif not c_keep and cap is not True:
                out.append(f"{sub}: not in the cluster's schema (the cluster would drop it)")
        hap = h.get("additionalProperties")
        if isinstance(hap, dict):
            if isinstance(cap, dict):
                _compat(hap, cap, f"{path}[*]" if path else "[*]", out, limit)
            elif not c_keep:
                out.append(f"{where}: a map on the hub, fixed fields in the cluster")
        if h.get("x-kubernetes-preserve-unknown-fields") and not c_keep:
            out.append(f"{where}: keeps unknown fields on the hub, the cluster drops them")
        extra_req = sorted(set(c.get("required") or []) - set(h.get("required") or []))
        if extra_req:
            out.append(f"{where}: the cluster requires {', '.join(extra_req)}")
    elif ht == "array":
        hi, ci = h.get("items"), c.get("items")
        if isinstance(hi, dict) and isinstance(ci, dict):
            _compat(hi, ci, f"{path}[*]", out, limit)


def schema_problems(hub: dict, cluster: dict, limit: int = 10) -> list[str]:
    """Why the cluster cannot take every object the hub's schema accepts (empty when it can):
    checked are types, int-or-string, fields the cluster would drop, maps, enums, required fields."""
    out: list[str] = []
    _compat(hub, cluster, "", out, limit)
    return out


def crd_problems(hub_spec: dict, cluster_spec: dict) -> list[str]:
    """Incompatibilities between the hub's CRD spec and a cluster's version of the type."""
    out: list[str] = []
    hn, cn = hub_spec.get("names") or {}, cluster_spec.get("names") or {}
    if hn.get("kind") != cn.get("kind"):
        out.append(f"kind {hn.get('kind')} on the hub, {cn.get('kind')} in the cluster")
    if hub_spec.get("scope") != cluster_spec.get("scope"):
        out.append(f"scope {hub_spec.get('scope')} on the hub, {cluster_spec.get('scope')} in the cluster")
    cv = {v.get("name"): v for v in cluster_spec.get("versions") or []}
    common = [v for v in hub_spec.get("versions") or [] if v.get("name") in cv and v.get("served", True)]
    if not common:
        out.append("no version in common: hub " + ", ".join(str(v.get("name")) for v in hub_spec.get("versions") or [])
                   + "; cluster " + ", ".join(map(str, cv)))
    for v in common:
        c = cv[v["name"]]
        hs = (v.get("schema") or {}).get("openAPIV3Schema") or {}
        cs = (c.get("schema") or {}).get("openAPIV3Schema") or {}
        for p in schema_problems(hs, cs):
            out.append(f"{v['name']}: {p}")
        hsub, csub = v.get("subresources") or {}, c.get("subresources") or {}
        for s in ("status", "scale"):
            if (s in hsub) != (s in csub):
                out.append(f"{v['name']}: {s} subresource {'on the hub only' if s in hsub else 'in the cluster only'}")
    return out
