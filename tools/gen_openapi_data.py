#!/usr/bin/env python3
"""Generate ``src/fleetplane/registry/openapi_data/k8s-definitions.json``.

The hub's OpenAPI v3 documents (``fleetplane.server.openapi``) embed the Kubernetes 1.32
schemas of the kinds it serves, with their descriptions, so that ``kubectl explain`` and
kubectl's client-side apply (strategic merge patch metadata) work; the hub reads its own
strategic-merge-patch and server-side-apply list metadata from the same schemas
(``fleetplane.registry.definitions``). This script extracts them once; the server only reads
the JSON file it writes (no runtime dependency). A kind listed here is named by its
``ResourceType.openapi_definition`` in ``fleetplane.apis``.

Source: the PyPI package ``kubernetes-validate`` (1.37.0), which ships the upstream OpenAPI
definitions of every Kubernetes version as JSON Schema (``v1.32.0-local/_definitions.json``).
They are the upstream swagger definitions with two mechanical changes, undone here:
``type: [T, "null"]`` (back to ``T``) and ``apiVersion``/``kind`` enums (dropped). ``$ref``
siblings become ``allOf: [{$ref}]`` as in kube-apiserver's v3 documents, refs point to
``#/components/schemas/``, and IntOrString/Quantity get their v3 ``oneOf`` form back with
their descriptions.

Only the kinds fleetplane serves (or will serve on simulated physical clusters) and the
definitions they reference are kept; see ``ROOTS``. fleetplane's own LogicalCluster schema
is written by hand below.

Regenerate::

    .venv/bin/pip download --no-deps -d /tmp/kv kubernetes-validate==1.37.0
    .venv/bin/python tools/gen_openapi_data.py --source /tmp/kv/kubernetes_validate-1.37.0-py3-none-any.whl

``--source`` also takes an unpacked ``_definitions.json`` or a directory holding one; with no
``--source`` the installed ``kubernetes_validate`` package is used.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import zipfile
from pathlib import Path

K8S_VERSION = "v1.32.0"
SOURCE_DIR = f"{K8S_VERSION}-local"
OUT = Path(__file__).resolve().parent.parent / "src/fleetplane/registry/openapi_data/k8s-definitions.json"
PREFIX = "#/components/schemas/"

# The kinds (and their lists) whose schemas are published, plus the meta types every
# group-version document refers to. Everything they reference comes along.
ROOTS = [
    "io.k8s.api.core.v1.Namespace", "io.k8s.api.core.v1.NamespaceList",
    "io.k8s.api.core.v1.ConfigMap", "io.k8s.api.core.v1.ConfigMapList",
    "io.k8s.api.core.v1.Secret", "io.k8s.api.core.v1.SecretList",
    "io.k8s.api.core.v1.ServiceAccount", "io.k8s.api.core.v1.ServiceAccountList",
    "io.k8s.api.core.v1.Event", "io.k8s.api.core.v1.EventList",
    "io.k8s.api.core.v1.Pod", "io.k8s.api.core.v1.PodList",
    "io.k8s.api.core.v1.Node", "io.k8s.api.core.v1.NodeList",
    "io.k8s.api.events.v1.Event", "io.k8s.api.events.v1.EventList",
    "io.k8s.api.coordination.v1.Lease", "io.k8s.api.coordination.v1.LeaseList",
    "io.k8s.api.apps.v1.Deployment", "io.k8s.api.apps.v1.DeploymentList",
    "io.k8s.api.apps.v1.ReplicaSet", "io.k8s.api.apps.v1.ReplicaSetList",
    "io.k8s.api.apps.v1.DaemonSet", "io.k8s.api.apps.v1.DaemonSetList",
    "io.k8s.api.apps.v1.StatefulSet", "io.k8s.api.apps.v1.StatefulSetList",
    "io.k8s.api.core.v1.PersistentVolumeClaim", "io.k8s.api.core.v1.PersistentVolumeClaimList",
    "io.k8s.api.autoscaling.v1.Scale",
    "io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler", "io.k8s.api.autoscaling.v1.HorizontalPodAutoscalerList",
    "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler", "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerList",
    "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration",
    "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfigurationList",
    "io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration",
    "io.k8s.api.admissionregistration.v1.MutatingWebhookConfigurationList",
    "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicy",
    "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyList",
    "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBinding",
    "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBindingList",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionList",
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
    "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
    "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
    "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent",
    "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList",
]

# Kinds registered in every group version (DeleteOptions, WatchEvent): upstream lists ~50
# group versions; keep the core one, the server adds the document's own at build time.
MULTI_GVK = {"io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions", "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent"}

INT_OR_STRING = {
    "description": "IntOrString is a type that can hold an int32 or a string.  When used in JSON or YAML "
                   "marshalling and unmarshalling, it produces or consumes the inner type.  This allows you "
                   "to have, for example, a JSON field that can accept a name or number.",
    "format": "int-or-string",
    "oneOf": [{"type": "integer"}, {"type": "string"}],
}

QUANTITY = {
    "description": (
        "Quantity is a fixed-point representation of a number. It provides convenient marshaling/unmarshaling "
        "in JSON and YAML, in addition to String() and AsInt64() accessors.\n\nThe serialization format is:\n\n"
        "``` <quantity>        ::= <signedNumber><suffix>\n\n\t(Note that <suffix> may be empty, from the \"\" "
        "case in <decimalSI>.)\n\n<digit>           ::= 0 | 1 | ... | 9 <digits>          ::= <digit> | "
        "<digit><digits> <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits> <sign>"
        "            ::= \"+\" | \"-\" <signedNumber>    ::= <number> | <sign><number> <suffix>          ::= "
        "<binarySI> | <decimalExponent> | <decimalSI> <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei\n\n\t"
        "(International System of units; See: http://physics.nist.gov/cuu/Units/binary.html)\n\n<decimalSI>"
        "       ::= m | \"\" | k | M | G | T | P | E\n\n\t(Note that 1024 = 1Ki but 1000 = 1k; I didn't choose "
        "the capitalization.)\n\n<decimalExponent> ::= \"e\" <signedNumber> | \"E\" <signedNumber> ```\n\n"
        "No matter which of the three exponent forms is used, no quantity may represent a number greater "
        "than 2^63-1 in magnitude, nor may it have more than 3 decimal places. Numbers larger or more precise "
        "will be capped or rounded up. (E.g.: 0.1m will rounded up to 1m.) This may be extended in the future "
        "if we require larger or smaller quantities.\n\nWhen a Quantity is parsed from a string, it will "
        "remember the type of suffix it had, and will use the same type again when it is serialized.\n\n"
        "Before serializing, Quantity will be put in \"canonical form\". This means that Exponent/suffix "
        "will be adjusted up or down (with a corresponding increase or decrease in Mantissa) such that:\n\n"
        "- No precision is lost - No fractional digits will be emitted - The exponent (or suffix) is as "
        "large as possible.\n\nThe sign will be omitted unless the number is negative.\n\nExamples:\n\n"
        "- 1.5 will be serialized as \"1500m\" - 1.5Gi will be serialized as \"1536Mi\"\n\nNote that the "
        "quantity will NEVER be internally represented by a floating point number. That is the whole point "
        "of this exercise.\n\nNon-canonical values will still parse as long as they are well formed, but "
        "will be re-emitted in their canonical form. (So always use canonical form, or don't diff.)\n\nThis "
        "format is intended to make it difficult to use these numbers without writing some sort of special "
        "handling code in the hopes that that will cause implementors to also use a fixed point "
        "implementation."
    ),
    "oneOf": [{"type": "string"}, {"type": "number"}],
}

_API_VERSION_DOC = (
    "APIVersion defines the versioned schema of this representation of an object. Servers should convert "
    "recognized schemas to the latest internal value, and may reject unrecognized values. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
)
_KIND_DOC = (
    "Kind is a string value representing the REST resource this object represents. Servers may infer this "
    "from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)
_LC = "io.fleetplane.tenancy.v1alpha1."
LOGICAL_CLUSTER = {
    _LC + "LogicalCluster": {
        "description": "LogicalCluster is a logical cluster served by the hub: an isolated set of namespaces and "
                       "resources, addressed by clients as /clusters/<name>. Creating one makes the cluster "
                       "(with its default namespaces); deleting one removes the cluster and everything in it.",
        "type": "object",
        "properties": {
            "apiVersion": {"description": _API_VERSION_DOC, "type": "string"},
            "kind": {"description": _KIND_DOC, "type": "string"},
            "metadata": {
                "allOf": [{"$ref": PREFIX + "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}],
                "default": {},
                "description": "Standard object's metadata. The name is the cluster's path, e.g. root:team-a. "
                               "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
            },
            "spec": {
                "allOf": [{"$ref": PREFIX + _LC + "LogicalClusterSpec"}],
                "default": {},
                "description": "Specification of the logical cluster. Reserved: it has no fields yet.",
            },
            "status": {
                "allOf": [{"$ref": PREFIX + _LC + "LogicalClusterStatus"}],
                "default": {},
                "description": "Most recently observed status of the logical cluster. Read-only.",
            },
        },
        "x-kubernetes-group-version-kind": [
            {"group": "tenancy.fleetplane.io", "kind": "LogicalCluster", "version": "v1alpha1"}],
    },
    _LC + "LogicalClusterList": {
        "description": "LogicalClusterList is a list of LogicalCluster objects.",
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"description": _API_VERSION_DOC, "type": "string"},
            "items": {"description": "Items is the list of logical clusters.", "type": "array",
                      "items": {"$ref": PREFIX + _LC + "LogicalCluster", "default": {}}},
            "kind": {"description": _KIND_DOC, "type": "string"},
            "metadata": {
                "allOf": [{"$ref": PREFIX + "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"}],
                "default": {},
                "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
            },
        },
        "x-kubernetes-group-version-kind": [
            {"group": "tenancy.fleetplane.io", "kind": "LogicalClusterList", "version": "v1alpha1"}],
    },
    _LC + "LogicalClusterSpec": {
        "description": "LogicalClusterSpec is the specification of a logical cluster. It has no fields yet.",
        "type": "object",
    },
    _LC + "LogicalClusterStatus": {
        "description": "LogicalClusterStatus is the observed state of a logical cluster.",
        "type": "object",
        "properties": {
            "phase": {
                "description": "Phase of the logical cluster: Ready while it is served, Deleting once its "
                               "deletion has started and its content is being removed.",
                "type": "string",
            },
        },
    },
}


def load_source(source: str | None) -> dict:
    """The ``$defs`` of kubernetes-validate's ``_definitions.json`` for Kubernetes 1.32."""
    member = f"kubernetes_validate/kubernetes-json-schema/{SOURCE_DIR}/_definitions.json"
    if source is None:
        spec = importlib.util.find_spec("kubernetes_validate")
        if spec is None or not spec.submodule_search_locations:
            sys.exit("kubernetes_validate is not installed: pass --source (see the module docstring)")
        path = Path(next(iter(spec.submodule_search_locations))) / "kubernetes-json-schema" / SOURCE_DIR / "_definitions.json"
        doc = json.loads(path.read_text())
    else:
        p = Path(source)
        if p.suffix == ".whl":
            with zipfile.ZipFile(p) as z:
                doc = json.loads(z.read(member))
        elif p.is_dir():
            candidates = [p / "_definitions.json", p / SOURCE_DIR / "_definitions.json", p / member]
            path = next((c for c in candidates if c.exists()), None)
            if path is None:
                sys.exit(f"no _definitions.json under {p}")
            doc = json.loads(path.read_text())
        else:
            doc = json.loads(p.read_text())
    return doc.get("$defs") or doc["definitions"]


def ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def convert(node, *, drop_enum: bool = False):
    """One schema node, JSON-Schema-with-nulls form -> kube's OpenAPI v3 form."""
    if not isinstance(node, dict):
        return node
    out: dict = {}
    ref = node.get("$ref")
    if isinstance(ref, str):
        target = {"$ref": PREFIX + ref_name(ref)}
        rest = {k: v for k, v in node.items() if k != "$ref"}
        if not rest:
            return target
        out["allOf"] = [target]
        node = rest
    for key, value in node.items():
        if key == "type" and isinstance(value, list):
            kinds = [t for t in value if t != "null"]
            out["type"] = kinds[0] if len(kinds) == 1 else kinds
        elif key == "enum" and drop_enum:
            continue
        elif key == "properties" and isinstance(value, dict):
            out["properties"] = {
                name: convert(sub, drop_enum=name in ("apiVersion", "kind")) for name, sub in value.items()
            }
        elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
            out[key] = convert(value)
        elif key in ("allOf", "anyOf", "oneOf") and isinstance(value, list):
            out[key] = out.get(key, []) + [convert(v) for v in value]
        else:
            out[key] = value
    return out


def refs(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                yield ref_name(v)
            else:
                yield from refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from refs(v)


def build(defs: dict) -> dict:
    seen: set[str] = set()
    stack = list(ROOTS)
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        if name not in defs:
            sys.exit(f"definition {name} missing from the source")
        seen.add(name)
        stack.extend(refs(defs[name]))
    out = {}
    for name in sorted(seen):
        if name == "io.k8s.apimachinery.pkg.util.intstr.IntOrString":
            out[name] = INT_OR_STRING
            continue
        if name == "io.k8s.apimachinery.pkg.api.resource.Quantity":
            out[name] = QUANTITY
            continue
        schema = convert(defs[name])
        if name in MULTI_GVK:
            schema["x-kubernetes-group-version-kind"] = [
                g for g in schema["x-kubernetes-group-version-kind"] if g["group"] == "" and g["version"] == "v1"]
        out[name] = schema
    out.update(LOGICAL_CLUSTER)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", help="kubernetes-validate wheel, _definitions.json, or a directory")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    definitions = build(load_source(args.source))
    doc = {
        "kubernetesVersion": K8S_VERSION,
        "source": f"kubernetes-validate 1.37.0, kubernetes-json-schema/{SOURCE_DIR}/_definitions.json; "
                  "regenerate with tools/gen_openapi_data.py",
        "definitions": definitions,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, separators=(",", ":"), sort_keys=True, ensure_ascii=False) + "\n")
    print(f"wrote {len(definitions)} definitions, {out.stat().st_size} bytes to {out}")


if __name__ == "__main__":
    main()
