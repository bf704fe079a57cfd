#!/usr/bin/env python3
"""Generate ``src/fleetplane/server/protobuf_messages.py``, the message schemas of kube's protobuf codec.

The hub reads request bodies in ``application/vnd.kubernetes.protobuf`` with a hand-written wire
reader (``fleetplane.server.protobuf``) driven by a table of message schemas. This script writes that
table at development time, so the server needs neither protoc nor generated classes at run time.

Inputs: the Go modules ``k8s.io/api``, ``k8s.io/apimachinery`` and ``k8s.io/apiextensions-apiserver``
at ``K8S_VERSION`` (v0.33.9, Kubernetes 1.33), unpacked under one directory by import path::

    SRC/k8s.io/api/...                       (github.com/kubernetes/api, tag v0.33.9)
    SRC/k8s.io/apimachinery/...              (github.com/kubernetes/apimachinery, tag v0.33.9)
    SRC/k8s.io/apiextensions-apiserver/...   (github.com/kubernetes/apiextensions-apiserver, tag v0.33.9)

1.33 rather than 1.32: kubectl 1.32 and 1.33 both talk to the hub, and the v1 APIs only ever gain
fields, so 1.33's messages decode every 1.32 body and also the fields 1.33 added
(``terminatingReplicas``, ``stopSignal``, ``observedGeneration`` of Pod conditions, ...).
Get the inputs from the published repositories::

    for r in api apimachinery apiextensions-apiserver; do
      git clone -q --depth 1 --branch v0.33.9 https://github.com/kubernetes/$r /tmp/k8s/k8s.io/$r
    done

or from the Go module proxy (``https://proxy.golang.org/k8s.io/api/@v/v0.33.9.zip`` and the same for
apimachinery and apiextensions-apiserver; each zip holds ``k8s.io/<module>@v0.33.9/``: unzip them
into ``/tmp/k8s`` and rename each folder to ``k8s.io/<module>``). None of them is committed here.
apiextensions-apiserver is optional: it is compiled when present, for a CustomResourceDefinition
root, which would also need the codec to render apiextensions' own JSON types (``JSON``,
``JSONSchemaPropsOrBool``, ...); the hub decodes CRDs from JSON only today.

Two sources per message, joined by field number:

- the ``generated.proto`` files, compiled by protoc (``grpcio-tools``, see the ``dev`` extra in
  pyproject.toml) into descriptors: field numbers, wire types, repeated fields, maps and message
  references, and so which messages are reachable from ``ROOTS``;
- the Go structs of the same package (``types.go`` and its siblings), whose struct tags
  (``json:"name,omitempty" protobuf:"bytes,1,opt,name=..."``) give what protobuf does not carry and
  kube's JSON form needs: the json name, ``omitempty``, pointer-ness, ``,inline`` and Go field order.
  A type with its own ``MarshalJSON`` (``metav1.Time``, ``resource.Quantity``, ``intstr.IntOrString``,
  ...) is a leaf: it is left out of the table and the codec renders it by hand (its ``CUSTOM_JSON``).

Regenerate::

    python3 -m venv /tmp/protoenv && /tmp/protoenv/bin/pip install "grpcio-tools==1.85.1"
    /tmp/protoenv/bin/python tools/gen_protobuf.py /tmp/k8s
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import descriptor_pb2

OUTPUT = Path(__file__).resolve().parent.parent / "src" / "fleetplane" / "server" / "protobuf_messages.py"
K8S_VERSION = "v0.33.9"

# The kinds the hub decodes from protobuf bodies: every message in the output is reachable from one.
ROOTS = [
    "k8s.io.api.apps.v1.ControllerRevision",
    "k8s.io.api.apps.v1.DaemonSet",
    "k8s.io.api.apps.v1.Deployment",
    "k8s.io.api.apps.v1.ReplicaSet",
    "k8s.io.api.apps.v1.StatefulSet",
    "k8s.io.api.authentication.v1.SelfSubjectReview",
    "k8s.io.api.authentication.v1.TokenRequest",
    "k8s.io.api.authentication.v1.TokenReview",
    "k8s.io.api.authorization.v1.LocalSubjectAccessReview",
    "k8s.io.api.authorization.v1.SelfSubjectAccessReview",
    "k8s.io.api.authorization.v1.SelfSubjectRulesReview",
    "k8s.io.api.authorization.v1.SubjectAccessReview",
    "k8s.io.api.autoscaling.v1.HorizontalPodAutoscaler",
    "k8s.io.api.autoscaling.v1.Scale",
    "k8s.io.api.autoscaling.v2.HorizontalPodAutoscaler",
    "k8s.io.api.batch.v1.CronJob",
    "k8s.io.api.batch.v1.Job",
    "k8s.io.api.certificates.v1.CertificateSigningRequest",
    "k8s.io.api.coordination.v1.Lease",
    "k8s.io.api.core.v1.Binding",
    "k8s.io.api.core.v1.ConfigMap",
    "k8s.io.api.core.v1.Endpoints",
    "k8s.io.api.core.v1.Event",
    "k8s.io.api.core.v1.LimitRange",
    "k8s.io.api.core.v1.Namespace",
    "k8s.io.api.core.v1.Node",
    "k8s.io.api.core.v1.PersistentVolume",
    "k8s.io.api.core.v1.PersistentVolumeClaim",
    "k8s.io.api.core.v1.Pod",
    "k8s.io.api.core.v1.PodTemplate",
    "k8s.io.api.core.v1.ReplicationController",
    "k8s.io.api.core.v1.ResourceQuota",
    "k8s.io.api.core.v1.Secret",
    "k8s.io.api.core.v1.Service",
    "k8s.io.api.core.v1.ServiceAccount",
    "k8s.io.api.events.v1.Event",
    "k8s.io.api.networking.v1.Ingress",
    "k8s.io.api.networking.v1.IngressClass",
    "k8s.io.api.networking.v1.NetworkPolicy",
    "k8s.io.api.policy.v1.Eviction",
    "k8s.io.api.policy.v1.PodDisruptionBudget",
    "k8s.io.api.rbac.v1.ClusterRole",
    "k8s.io.api.rbac.v1.ClusterRoleBinding",
    "k8s.io.api.rbac.v1.Role",
    "k8s.io.api.rbac.v1.RoleBinding",
    "k8s.io.api.scheduling.v1.PriorityClass",
]

# FieldDescriptorProto.Type -> the codec's scalar names
_SCALARS = {
    1: "double", 2: "float", 3: "int64", 4: "uint64", 5: "int32", 6: "fixed64", 7: "fixed32",
    8: "bool", 9: "string", 12: "bytes", 13: "uint32", 14: "enum", 15: "sfixed32", 16: "sfixed64",
    17: "sint32", 18: "sint64",
}  # fmt: skip
_TYPE_MESSAGE = 11
_LABEL_REPEATED = 3


@dataclass(frozen=True)
class GoField:
    """One protobuf-tagged field of a Go struct: what kube's JSON form of it needs."""

    number: int
    json_name: str
    omitempty: bool
    inline: bool
    pointer: bool


Field = tuple[str, str, str]  # (json name, type, flags), as the codec reads them
Schema = dict[int, Field] | tuple[str, str]


def compile_descriptors(src: Path) -> list[descriptor_pb2.FileDescriptorProto]:
    """Every ``generated.proto`` of k8s.io/api and apiextensions (with their imports) as descriptors."""
    protos = sorted((src / "k8s.io" / "api").glob("**/generated.proto"))
    protos += sorted(
        (src / "k8s.io" / "apiextensions-apiserver" / "pkg" / "apis").glob("*/v1/generated.proto")
    )
    if not protos:
        sys.exit(f"no k8s.io/api generated.proto files under {src}")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "k8s.pb"
        args = [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"--proto_path={src}",
            "--include_imports",
            f"--descriptor_set_out={out}",
        ] + [str(p.relative_to(src)) for p in protos]
        done = subprocess.run(args, capture_output=True, text=True)
        if done.returncode:
            sys.exit(f"protoc failed:\n{done.stderr}")
        files = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    return list(files.file)


_STRUCT = re.compile(r"^type (\w+) struct ?\{(?:\}|\n(.*?)^\})", re.M | re.S)
_NAMED_SLICE = re.compile(r"^type (\w+) \[\](\w+)$", re.M)
_FIELD = re.compile(r"^\t(?:\w+\s+)?(\*?)[\w.\[\]*]+\s+`([^`]*)`", re.M)
_MARSHAL_JSON = re.compile(r"^func \(\w+ \*?(\w+)\) MarshalJSON\(", re.M)
_TAG = re.compile(r'(\w+):"([^"]*)"')


@dataclass
class GoPackage:
    """The types of one Go package that protobuf does not describe fully."""

    structs: dict[str, list[GoField]]  # the protobuf-tagged fields of each struct, in struct order
    slices: set[str]  # named slice types (``type ExtraValue []string``)
    custom_json: set[str]  # types with their own MarshalJSON (Time, Quantity, ...), which the codec renders


def read_go_package(package_dir: Path) -> GoPackage:
    """The structs and named slices of a Go package's sources."""
    structs: dict[str, list[GoField]] = {}
    slices: set[str] = set()
    custom_json: set[str] = set()
    for path in sorted(package_dir.glob("*.go")):
        if path.name.endswith("_test.go") or path.name.startswith("zz_generated"):
            continue
        text = path.read_text()
        slices.update(m.group(1) for m in _NAMED_SLICE.finditer(text))
        custom_json.update(m.group(1) for m in _MARSHAL_JSON.finditer(text))
        for struct in _STRUCT.finditer(text):
            fields = []
            for field in _FIELD.finditer(struct.group(2) or ""):
                tags = dict(_TAG.findall(field.group(2)))
                if tags.get("protobuf", "-") == "-" or tags.get("json") == "-":
                    continue
                json_name, *options = tags.get("json", "").split(",")
                fields.append(GoField(
                    number=int(tags["protobuf"].split(",")[1]),
                    json_name=json_name,
                    omitempty="omitempty" in options,
                    inline="inline" in options,
                    pointer=field.group(1) == "*",
                ))  # fmt: skip
            structs[struct.group(1)] = fields
    return GoPackage(structs, slices, custom_json)


@dataclass
class Package:
    """One proto package: its messages and the Go package that defines the same types."""

    messages: dict[str, descriptor_pb2.DescriptorProto]  # by short name
    go_dir: Path
    group: str


def load_packages(src: Path) -> dict[str, Package]:
    """The proto packages of the sources by name, each with its Go directory and API group."""
    packages: dict[str, Package] = {}
    for file in compile_descriptors(src):
        go_dir = src / file.options.go_package
        register = go_dir / "register.go"
        match = (
            re.search(r'^const GroupName = "([^"]*)"', register.read_text(), re.M)
            if register.exists()
            else None
        )
        pkg = packages.setdefault(file.package, Package({}, go_dir, match.group(1) if match else ""))
        for message in file.message_type:
            pkg.messages[message.name] = message
    return packages


def _field_type(message: descriptor_pb2.DescriptorProto, field: descriptor_pb2.FieldDescriptorProto) -> str:
    """The codec's type of a field: a scalar, ``map<K,V>`` (a map-entry message) or a message name."""
    if field.type != _TYPE_MESSAGE:
        return _SCALARS[field.type]
    entry_name = field.type_name.rsplit(".", 1)[1]
    entry = next((n for n in message.nested_type if n.name == entry_name and n.options.map_entry), None)
    if entry is None:
        return field.type_name.lstrip(".")
    key, value = (_field_type(entry, f) for f in entry.field)
    return f"map<{key},{value}>"


def _message_type(typ: str) -> str | None:
    """The message a field's type refers to (a map's value), None for a scalar."""
    if typ.startswith("map<"):
        typ = typ[4:-1].split(",", 1)[1]
    return None if typ in _SCALARS.values() else typ


def _schema(name: str, message: descriptor_pb2.DescriptorProto, go: GoPackage) -> Schema:
    """One message's schema: proto numbers and types in the order and with the json tags of Go."""
    short = name.rsplit(".", 1)[1]
    if short in go.slices:  # a named Go slice: protobuf wraps it as {repeated items = 1}
        (items,) = message.field
        return ("list", _field_type(message, items))
    by_number = {f.number: f for f in message.field}
    go_fields = go.structs[short]
    if {f.number for f in go_fields} != set(by_number):
        sys.exit(f"{name}: proto fields {sorted(by_number)} != Go fields {[f.number for f in go_fields]}")
    schema: dict[int, Field] = {}
    for go_field in go_fields:
        field = by_number[go_field.number]
        typ = _field_type(message, field)
        repeated = field.label == _LABEL_REPEATED and not typ.startswith("map<")
        flags = "r" if repeated else "*" if go_field.pointer else ""
        flags += ("o" if go_field.omitempty else "") + ("i" if go_field.inline else "")
        schema[go_field.number] = (go_field.json_name, typ, flags)
    return schema


def build(src: Path) -> tuple[dict[str, Schema], dict[tuple[str, str], str]]:
    """The schemas reachable from ``ROOTS`` and the (apiVersion, kind) of each root."""
    packages = load_packages(src)
    go_packages: dict[Path, GoPackage] = {}
    schemas: dict[str, Schema] = {}
    todo = list(ROOTS)
    while todo:
        name = todo.pop()
        if name in schemas:
            continue
        package_name, _, short = name.rpartition(".")
        package = packages[package_name]
        if package.go_dir not in go_packages:
            go_packages[package.go_dir] = read_go_package(package.go_dir)
        go = go_packages[package.go_dir]
        if short in go.custom_json:
            continue  # a leaf: the codec renders it (its CUSTOM_JSON)
        schema = _schema(name, package.messages[short], go)
        schemas[name] = schema
        types = [schema[1]] if isinstance(schema, tuple) else [typ for _, typ, _ in schema.values()]
        todo.extend(t for t in map(_message_type, types) if t is not None)
    kinds = {}
    for root in ROOTS:
        package_name, _, kind = root.rpartition(".")
        group, version = packages[package_name].group, package_name.rpartition(".")[2]
        kinds[(f"{group}/{version}" if group else version, kind)] = root
    return dict(sorted(schemas.items())), dict(sorted(kinds.items()))


def render(schemas: dict[str, Schema], kinds: dict[tuple[str, str], str]) -> str:
    lines = [
        '"""Protobuf message schemas of the kinds the hub decodes from protobuf request bodies.',
        "",
        f"Generated by tools/gen_protobuf.py from k8s.io/api and k8s.io/apimachinery {K8S_VERSION}:",
        "do not edit; change ROOTS there and regenerate.",
        "",
        "``MESSAGES`` maps a fully-qualified proto message name to ``{field number: (json name, type, flags)}``",
        'in Go struct order, or to ``("list", item type)`` for a named Go slice (``ExtraValue []string``).',
        "The codec (fleetplane.server.protobuf) explains the types and flags.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Final",
        "",
        "Field = tuple[str, str, str]",
        "Schema = dict[int, Field] | tuple[str, str]",
        "",
        "MESSAGES: Final[dict[str, Schema]] = {",
    ]
    for name, schema in schemas.items():
        if isinstance(schema, tuple):
            lines.append(f"    {_literal(name)}: {_literal(schema)},")
            continue
        lines.append(f"    {_literal(name)}: {{")
        lines.extend(f"        {number}: {_literal(field)}," for number, field in schema.items())
        lines.append("    },")
    lines += [
        "}",
        "",
        "# (apiVersion, kind) of a runtime.Unknown envelope -> its message",
        "KINDS: Final[dict[tuple[str, str], str]] = {",
    ]
    lines.extend(f"    {_literal(key)}: {_literal(name)}," for key, name in kinds.items())
    lines += ["}", ""]
    return "\n".join(lines)


def _literal(value: str | tuple[str, ...]) -> str:
    """A string or a tuple of strings as Python source in the repository's style (double quotes)."""
    if isinstance(value, tuple):
        return "(" + ", ".join(json.dumps(v) for v in value) + ")"
    return json.dumps(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("src", type=Path, help="directory holding k8s.io/api, k8s.io/apimachinery, ...")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args()
    args.output.write_text(render(*build(args.src)))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
