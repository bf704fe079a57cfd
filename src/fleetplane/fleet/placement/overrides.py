"""Per-cluster overrides: rules in the placement policy that change the child a cluster gets.

A policy's ``overrides`` is a list of rules; each selects clusters with the placement term syntax
(``clusters``, ``labels``, ``properties``, ``clusterSet``, ``location``; none: every cluster) and
changes what those clusters' children carry. Rules apply in order, later ones win::

    overrides:
      - name: eu-registry                 # optional: shown by explain
        clusters: [eu-1, eu-2]
        container: web                    # optional: the container image/env/resources change
                                          #   (default: every container and init container)
        image: {registry: eu.gcr.io/acme, tag: "1.2.3"}   # either or both; image.container too
        env: {LOG_LEVEL: debug}           # or [{name, value}] / [{name, valueFrom}]
        resources: {limits: {cpu: 500m, memory: 256Mi}, requests: {cpu: 100m}}
        maxReplicas: 3                    # a cap in the placement decision: the rest goes elsewhere
        labels: {tier: edge}              # on the child and its pod template
        annotations: {team: eu}           # on the child and its pod template
        jsonPatch:                        # RFC 6902 on the child ({metadata: {labels, annotations}, spec})
          - {op: replace, path: /spec/template/spec/containers/0/image, value: nginx:1.27}

Parsing (:func:`parse_overrides`, called by ``policy_from_dict``) checks everything that does not
depend on the workload; :func:`check_against` checks the rules against the child as it would be
built (a patch path that does not exist, a container that is not there, a label the selector
uses) on write; :func:`apply` builds a cluster's child and says what changed, for the splitter
and ``fleetplane placement explain``. Pure: no I/O.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jsonpatch
import jsonpointer

from ...apimachinery.errors import FieldError
from ...apimachinery.quantity import QuantityError, parse_quantity
from ...apimachinery.validation import qualified_name_error, validate_annotations, validate_labels
from ...apis.core.podspec import validate_template

__all__ = ["ANNOTATION_OVERRIDES", "ANNOTATION_OVERRIDES_HASH", "ANNOTATION_OVERRIDES_METADATA", "CHILD_ANNOTATIONS",
           "Applied", "Cache", "Override", "OverrideError", "apply", "cap_for", "check_against", "matching",
           "parse_overrides", "revision_source", "stale_keys"]

#: on a child: the rules that apply to its cluster (``"0,2"``: indexes into ``overrides``)
ANNOTATION_OVERRIDES = "placement.fleetplane.io/overrides"
#: on a child: a hash of what the rules changed in it (so a rule change rewrites only its children)
ANNOTATION_OVERRIDES_HASH = "placement.fleetplane.io/overrides-hash"
#: on a child: the metadata keys the rules set or removed (``labels=a,b;annotations=c``), so a key a
#: rule no longer sets is taken off again
ANNOTATION_OVERRIDES_METADATA = "placement.fleetplane.io/overrides-metadata"

#: what the splitter records on a child about its rules
CHILD_ANNOTATIONS = (ANNOTATION_OVERRIDES, ANNOTATION_OVERRIDES_HASH, ANNOTATION_OVERRIDES_METADATA)
_TERM_KEYS = ("labels", "properties", "clusters", "clusterSet", "location")
_RULE_KEYS = ("name", "clusters", "labels", "properties", "clusterSet", "location", "container", "image", "env",
              "resources", "maxReplicas", "annotations", "jsonPatch")
_OPS = ("add", "remove", "replace", "move", "copy", "test")
#: what the splitter sets on every child: no rule may change it
_RESERVED_LABELS = ("kcp.dev/cluster", "kcp.dev/owned-by")
_RESERVED_ANNOTATION_PREFIXES = ("placement.fleetplane.io/", "fleetplane.io/downstream-name")
#: spec fields the splitter owns (a cluster's share) or that must stay the parent's
_FORBIDDEN_SPEC = ("/spec/replicas", "/spec/selector", "/spec/ordinals")
_ENV_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
_ENV_NAME_MSG = ("a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or "
                 "'.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', "
                 "regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')")
# the distribution reference grammar (github.com/distribution/reference): a registry is a domain
# (with an optional port) and optional path components; a tag is [\w][\w.-]{0,127}
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
_REGISTRY = re.compile(rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?"
                       rf"(?:/{_PATH_COMPONENT})*")
_TAG = re.compile(r"[\w][\w.-]{0,127}")


class OverrideError(ValueError):
    """Rules that do not apply to a child; ``errors`` lists ``"overrides[i]...: what is wrong"``."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        super().__init__("; ".join(errors))


@dataclass(frozen=True, eq=False)
class Override:
    """One rule. ``term`` None selects every cluster; ``source`` is the rule as written (what
    equality and hashing compare, so a Policy holding rules stays hashable)."""

    index: int
    name: str = ""
    term: Any = None  # a policy.ClusterTerm
    container: str | None = None
    registry: str | None = None
    tag: str | None = None
    image_container: str | None = None
    env: tuple[Mapping[str, Any], ...] = ()
    resources: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    max_replicas: int | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    json_patch: tuple[Mapping[str, Any], ...] = ()
    source: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def _key(self) -> tuple[int, str]:
        return self.index, json.dumps(self.source, sort_keys=True, default=str)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Override) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    @property
    def ref(self) -> str:
        """How messages and explain name it: ``overrides[1]`` (``overrides[1] eu-registry``)."""
        return f"overrides[{self.index}]" + (f" {self.name}" if self.name else "")

    @property
    def changes_child(self) -> bool:
        """Whether it changes the child at all (``maxReplicas`` alone changes only the decision)."""
        return bool(self.registry or self.tag or self.env or self.resources or self.labels or self.annotations
                    or self.json_patch)

    def matches(self, cluster: Any) -> bool:
        return self.term is None or bool(self.term.matches(cluster))

    def selects(self) -> str:
        return self.term.text if self.term is not None and self.term.text else "every cluster"


def matching(overrides: Sequence[Override], cluster: Any) -> list[Override]:
    """The rules that select ``cluster`` (a ClusterInfo), in order."""
    return [o for o in overrides if o.matches(cluster)]


def cap_for(overrides: Sequence[Override], cluster: Any) -> tuple[int, Override] | None:
    """The replica cap the rules put on ``cluster`` (the last matching rule with ``maxReplicas``)."""
    for o in reversed(overrides):
        if o.max_replicas is not None and o.matches(cluster):
            return o.max_replicas, o
    return None


# -- parsing --------------------------------------------------------------------------------------


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    return "a mapping" if isinstance(v, Mapping) else "a list" if isinstance(v, list) else type(v).__name__


def _count(v: Any, where: str, errors: list[str]) -> int | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        errors.append(f"{where}: Invalid value: {json.dumps(v)}: must be a non-negative integer")
        return None
    return v


def parse_overrides(v: Any, where: str, errors: list[str], *, term: Callable[..., Any]) -> list[Override]:
    """The ``overrides`` list of a policy; problems are appended to ``errors`` with their field path.
    ``term`` parses a cluster term (the policy's ``_term``: one syntax for every rule that selects
    clusters, passed in so that this module does not import the policy's)."""
    if v is None:
        return []
    if not isinstance(v, list):
        errors.append(f"{where}: must be a list of rules, not {_kind(v)}")
        return []
    out = []
    names: set[str] = set()
    for i, item in enumerate(v):
        w = f"{where}[{i}]"
        n = len(errors)
        if not isinstance(item, Mapping):
            errors.append(f"{w}: must be a mapping (a cluster term and what to change), not {_kind(item)}")
            continue
        for k in item:
            if k not in _RULE_KEYS:
                errors.append(f"{w}.{k}: unknown field (known: {', '.join(_RULE_KEYS)})")
        name = item.get("name")
        if name is not None and (not isinstance(name, str) or not name):
            errors.append(f"{w}.name: must be a non-empty string")
            name = None
        elif name in names:
            errors.append(f"{w}.name: Duplicate value: {json.dumps(name)}")
        elif name:
            names.add(name)
        term_src, labels = _split_labels(item)
        selects = term(term_src, w, errors) if term_src else None
        container = _container(item.get("container"), f"{w}.container", errors)
        registry = tag = image_container = None
        image = item.get("image")
        if image is not None:
            registry, tag, image_container = _image(image, f"{w}.image", errors)
        env = _env(item.get("env"), f"{w}.env", errors)
        resources = _resources(item.get("resources"), f"{w}.resources", errors)
        cap = _count(item.get("maxReplicas"), f"{w}.maxReplicas", errors)
        labels = _meta_map(labels, f"{w}.labels", errors, "label")
        annotations = _meta_map(item.get("annotations"), f"{w}.annotations", errors, "annotation")
        patch = _json_patch(item.get("jsonPatch"), f"{w}.jsonPatch", errors)
        if len(errors) > n:
            continue
        o = Override(index=i, name=name or "", term=selects, container=container, registry=registry, tag=tag,
                     image_container=image_container, env=tuple(env), resources=resources, max_replicas=cap,
                     labels=labels, annotations=annotations, json_patch=tuple(patch), source=dict(item))
        if not o.changes_child and o.max_replicas is None:
            errors.append(f"{w}: changes nothing: give at least one of image, env, resources, maxReplicas, "
                          "labels, annotations, jsonPatch")
            continue
        out.append(o)
    return out


def _split_labels(item: Mapping[str, Any]) -> tuple[dict[str, Any], Any]:
    """``labels`` is both a cluster term (a selector: a string, or {matchLabels, matchExpressions})
    and what the child gets (a mapping of label -> value): a plain mapping is the child's labels,
    anything else selects clusters."""
    term = {k: item[k] for k in _TERM_KEYS if k in item and item[k] is not None}
    labels = term.get("labels")
    if isinstance(labels, Mapping) and not ({"matchLabels", "matchExpressions"} & set(labels)):
        del term["labels"]
        return term, labels
    return term, None


def _container(v: Any, where: str, errors: list[str]) -> str | None:
    if v is None:
        return None
    if not isinstance(v, str) or not v:
        errors.append(f"{where}: must be a container name")
        return None
    return v


def _image(v: Any, where: str, errors: list[str]) -> tuple[str | None, str | None, str | None]:
    if not isinstance(v, Mapping):
        errors.append(f"{where}: must be a mapping of registry, tag, container")
        return None, None, None
    for k in v:
        if k not in ("registry", "tag", "container"):
            errors.append(f"{where}.{k}: unknown field (known: registry, tag, container)")
    registry, tag = v.get("registry"), v.get("tag")
    if registry is None and tag is None:
        errors.append(f"{where}: give registry, tag or both")
    if registry is not None:
        registry = str(registry).rstrip("/") if isinstance(registry, str) else registry
        if not isinstance(registry, str) or not _REGISTRY.fullmatch(registry):
            errors.append(f"{where}.registry: Invalid value: {json.dumps(registry)}: must be a registry host "
                          "(with an optional port) and optional path, such as eu.gcr.io/acme or "
                          "registry.local:5000")
            registry = None
    if tag is not None:
        if isinstance(tag, (int, float)) and not isinstance(tag, bool):
            tag = str(tag)
        if not isinstance(tag, str) or not _TAG.fullmatch(tag):
            errors.append(f"{where}.tag: Invalid value: {json.dumps(tag)}: must be a valid image tag "
                          "(at most 128 letters, digits, '_', '.' and '-', not starting with '.' or '-')")
            tag = None
    return registry, tag, _container(v.get("container"), f"{where}.container", errors)


def _env(v: Any, where: str, errors: list[str]) -> list[dict[str, Any]]:
    if v is None:
        return []
    items: list[tuple[str, str, Any]]  # where, where the name is, the entry
    if isinstance(v, Mapping):
        items = [(f"{where}[{k}]", f"{where}[{k}]", {"name": str(k), "value": val}) for k, val in v.items()]
    elif isinstance(v, list):
        items = [(f"{where}[{i}]", f"{where}[{i}].name", x) for i, x in enumerate(v)]
    else:
        errors.append(f"{where}: must be a mapping of name -> value or a list of {{name, value}}")
        return []
    out = []
    for w, wname, e in items:
        if not isinstance(e, Mapping):
            errors.append(f"{w}: must be a mapping with name and value (or valueFrom)")
            continue
        for k in e:
            if k not in ("name", "value", "valueFrom"):
                errors.append(f"{w}.{k}: unknown field (known: name, value, valueFrom)")
        name = e.get("name")
        if not isinstance(name, str) or not name:
            errors.append(f"{wname}: Required value")
            continue
        if not _ENV_NAME.fullmatch(name):
            errors.append(f"{wname}: Invalid value: {json.dumps(name)}: {_ENV_NAME_MSG}")
            continue
        value = e.get("value")
        if value is not None and e.get("valueFrom") is not None:
            errors.append(f"{w}.valueFrom: Invalid value: may not be specified when `value` is not empty")
            continue
        if e.get("valueFrom") is not None and not isinstance(e.get("valueFrom"), Mapping):
            errors.append(f"{w}.valueFrom: must be a mapping (an EnvVarSource)")
            continue
        entry: dict[str, Any] = {"name": name}
        if e.get("valueFrom") is not None:
            entry["valueFrom"] = copy.deepcopy(dict(e["valueFrom"]))
        else:  # kube's EnvVar.value is a string: YAML's 1, true, 1.5 are taken as written
            entry["value"] = "" if value is None else (json.dumps(value) if isinstance(value, bool) else str(value))
        out.append(entry)
    return out


def _resources(v: Any, where: str, errors: list[str]) -> dict[str, dict[str, str]]:
    if v is None:
        return {}
    if not isinstance(v, Mapping):
        errors.append(f"{where}: must be a mapping with limits and requests")
        return {}
    out: dict[str, dict[str, str]] = {}
    for part, values in v.items():
        if part not in ("limits", "requests"):
            errors.append(f"{where}.{part}: unknown field (known: limits, requests)")
            continue
        if not isinstance(values, Mapping):
            errors.append(f"{where}.{part}: must be a mapping of resource name -> quantity")
            continue
        for rname, q in values.items():
            w = f"{where}.{part}[{rname}]"
            why = qualified_name_error(str(rname))
            if why:
                errors.append(f"{w}: Invalid value: {json.dumps(str(rname))}: {why}")
                continue
            try:
                qty = parse_quantity(q if isinstance(q, str) else str(q))
            except (QuantityError, ValueError) as exc:
                errors.append(f"{w}: Invalid value: {json.dumps(q)}: {exc}")
                continue
            if qty.value() < 0 or str(qty).startswith("-"):
                errors.append(f"{w}: Invalid value: {json.dumps(str(q))}: must be greater than or equal to 0")
                continue
            out.setdefault(part, {})[str(rname)] = str(qty)
    lim, req = out.get("limits") or {}, out.get("requests") or {}
    for rname, q in req.items():
        if rname in lim and parse_quantity(q) > parse_quantity(lim[rname]):
            errors.append(f"{where}.requests[{rname}]: Invalid value: {json.dumps(q)}: must be less than or equal "
                          f"to {rname} limit of {lim[rname]}")
    return out


def _meta_map(v: Any, where: str, errors: list[str], what: str) -> dict[str, str]:
    if v is None:
        return {}
    if not isinstance(v, Mapping):
        errors.append(f"{where}: must be a mapping of {what} -> value")
        return {}
    m = {str(k): (val if isinstance(val, str) else json.dumps(val) if isinstance(val, bool) else str(val))
         for k, val in v.items()}
    errs: list[FieldError] = validate_labels(m, where) if what == "label" else validate_annotations(m, where)
    errors.extend(str(e) for e in errs)
    for k in m:
        if (k in _RESERVED_LABELS if what == "label" else k.startswith(_RESERVED_ANNOTATION_PREFIXES)):
            errors.append(f"{where}[{k}]: Forbidden: set by the splitter on every child")
    return m if not errs else {}


def _pointer_error(path: Any) -> str | None:
    """RFC 6901's syntax: empty, or ``/``-separated tokens where ``~`` is ``~0`` or ``~1``."""
    if not isinstance(path, str):
        return "must be a JSON pointer string"
    if path and not path.startswith("/"):
        return "a JSON pointer starts with '/'"
    if re.search(r"~(?![01])", path):
        return "'~' must be followed by 0 or 1 (RFC 6901)"
    return None


def _tokens(path: str) -> list[str]:
    return [t.replace("~1", "/").replace("~0", "~") for t in path.split("/")[1:]]


def _patch_path_error(path: str) -> str | None:
    """Where a rule may patch: the spec (not the cluster's share or the selector) and the labels
    and annotations (not those the splitter sets)."""
    toks = _tokens(path)
    if len(toks) >= 2 and toks[0] == "metadata" and toks[1] in ("labels", "annotations"):
        if len(toks) >= 3 and ((toks[1] == "labels" and toks[2] in _RESERVED_LABELS)
                               or (toks[1] == "annotations" and toks[2].startswith(_RESERVED_ANNOTATION_PREFIXES))):
            return f"may not change {toks[1]}[{toks[2]}]: set by the splitter on every child"
        return None
    if len(toks) >= 2 and toks[0] == "spec":
        for bad in _FORBIDDEN_SPEC:
            if path == bad or path.startswith(bad + "/"):
                return f"may not change {bad}: " + ("the splitter sets each cluster's share" if bad != "/spec/selector"
                                                    else "the selector is the parent's")
        return None
    return "only paths under /spec/ and /metadata/labels, /metadata/annotations may be patched"


def _json_patch(v: Any, where: str, errors: list[str]) -> list[dict[str, Any]]:
    if v is None:
        return []
    if not isinstance(v, list):
        errors.append(f"{where}: must be a list of JSON patch operations (RFC 6902)")
        return []
    out = []
    for j, op in enumerate(v):
        w = f"{where}[{j}]"
        if not isinstance(op, Mapping):
            errors.append(f"{w}: must be a mapping with op, path (and value or from)")
            continue
        for k in op:
            if k not in ("op", "path", "value", "from"):
                errors.append(f"{w}.{k}: unknown field (known: op, path, value, from)")
        name = op.get("op")
        if name not in _OPS:
            errors.append(f"{w}.op: Unsupported value: {json.dumps(name)}: supported values: "
                          + ", ".join(f'"{o}"' for o in _OPS))
            continue
        keys = ["path"] + (["from"] if name in ("move", "copy") else [])
        ok = True
        for key in keys:
            p = op.get(key)
            if p is None:
                errors.append(f"{w}.{key}: Required value")
                ok = False
                continue
            why = _pointer_error(p) or _patch_path_error(p)
            if why:
                errors.append(f"{w}.{key}: Invalid value: {json.dumps(p)}: {why}")
                ok = False
        if name in ("add", "replace", "test") and "value" not in op:
            errors.append(f"{w}.value: Required value: op {name} needs a value")
            ok = False
        if ok:
            out.append(copy.deepcopy(dict(op)))
    return out


# -- applying -------------------------------------------------------------------------------------


@dataclass
class Applied:
    """A cluster's child after its rules: ``spec``, ``labels``, ``annotations`` (complete, the
    base's with the changes), the keys the rules removed or set, what changed (one line each), and
    the hash of the applied rules (None when none changes the child)."""

    spec: dict[str, Any]
    labels: dict[str, str]
    annotations: dict[str, str]
    rules: list[Override]
    lines: list[str]
    managed: dict[str, list[str]]
    hash: str | None

    def child_annotations(self) -> dict[str, str]:
        """What the splitter adds to the child's annotations to record the rules."""
        if self.hash is None:
            return {}
        out = {ANNOTATION_OVERRIDES: ",".join(str(o.index) for o in self.rules if o.changes_child),
               ANNOTATION_OVERRIDES_HASH: self.hash}
        keys = ";".join(f"{k}={','.join(v)}" for k, v in sorted(self.managed.items()) if v)
        if keys:
            out[ANNOTATION_OVERRIDES_METADATA] = keys
        return out


def _containers(spec: Mapping[str, Any], name: str | None) -> list[dict[str, Any]]:
    pod = ((spec.get("template") or {}).get("spec") or {})
    every = [c for key in ("containers", "initContainers") for c in pod.get(key) or () if isinstance(c, dict)]
    return every if name is None else [c for c in every if c.get("name") == name]


def _container_names(spec: Mapping[str, Any]) -> str:
    return ", ".join(str(c.get("name")) for c in _containers(spec, None)) or "none"


def _retag(image: str, registry: str | None, tag: str | None) -> str:
    """``image`` with its registry (the first component, when it is a domain) and/or tag replaced;
    a digest goes when the tag changes."""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    old_tag = ""
    if ":" in last:
        name, _, old_tag = name.rpartition(":")
    if registry is not None:
        first, sep, rest = name.partition("/")
        if sep and ("." in first or ":" in first or first == "localhost"):
            name = rest
        name = f"{registry}/{name}"
    if tag is not None:
        return f"{name}:{tag}"
    out = f"{name}:{old_tag}" if old_tag else name
    return f"{out}@{digest}" if digest else out


def _exists(doc: Any, path: str) -> bool:
    try:
        jsonpointer.resolve_pointer(doc, path)
    except (jsonpointer.JsonPointerException, TypeError, KeyError, IndexError):
        return False
    return True


def _patch_one(doc: dict[str, Any], op: Mapping[str, Any]) -> dict[str, Any]:
    """One operation, with RFC 6902's rules and a message that names the path."""
    name, path = op["op"], op["path"]
    if name in ("remove", "replace", "test") and not _exists(doc, path):
        raise ValueError(f"path {path} does not exist")
    if name in ("move", "copy") and not _exists(doc, op["from"]):
        raise ValueError(f"path {op['from']} does not exist")
    if name in ("add", "move", "copy"):
        parent = path.rpartition("/")[0]
        if not _exists(doc, parent):
            raise ValueError(f"path {parent} does not exist")
        target = jsonpointer.resolve_pointer(doc, parent)
        last = _tokens(path)[-1] if path else ""
        if isinstance(target, list) and last != "-" and (not last.isdigit() or int(last) > len(target)):
            raise ValueError(f"path {path} does not exist (index out of range: the list has {len(target)} items)")
    try:
        return dict(jsonpatch.apply_patch(doc, [dict(op)], in_place=False))
    except jsonpatch.JsonPatchTestFailed:
        have = jsonpointer.resolve_pointer(doc, path)
        raise ValueError(f"test failed: {path} is {json.dumps(have)}, not {json.dumps(op.get('value'))}") from None
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError, KeyError) as exc:
        raise ValueError(f"cannot apply {name} at {path}: {exc}") from None


def _apply_rule(doc: dict[str, Any], o: Override, lines: list[str]) -> dict[str, Any]:
    """One rule on ``doc`` ({metadata: {labels, annotations}, spec}); raises ValueError naming the field."""
    doc = copy.deepcopy(doc)
    spec = doc["spec"]
    ref = f"({o.ref})"
    if o.registry or o.tag or o.env or o.resources:
        for which, cname in (("image", o.image_container or o.container), ("env", o.container),
                             ("resources", o.container)):
            if cname is not None and not _containers(spec, cname):
                field_ = "image.container" if which == "image" and o.image_container else "container"
                raise ValueError(f"{field_}: no container named {json.dumps(cname)} in the pod template "
                                 f"(containers: {_container_names(spec)})")
    if o.registry or o.tag:
        targets = _containers(spec, o.image_container or o.container)
        for c in targets:
            c["image"] = _retag(str(c.get("image") or ""), o.registry, o.tag)
            lines.append(f"image {c['image']}" + (f" in {c.get('name')}" if len(_containers(spec, None)) > 1 else "")
                         + f" {ref}")
    if o.env:
        for c in _containers(spec, o.container):
            env = [e for e in c.get("env") or () if isinstance(e, dict)]
            by_name = {e.get("name"): i for i, e in enumerate(env)}
            for e in o.env:
                if e["name"] in by_name:
                    env[by_name[e["name"]]] = copy.deepcopy(dict(e))
                else:
                    by_name[e["name"]] = len(env)
                    env.append(copy.deepcopy(dict(e)))
            c["env"] = env
        lines.append("env " + ", ".join(f"{e['name']}={e['value']}" if "value" in e else f"{e['name']} (valueFrom)"
                                        for e in o.env) + (f" in {o.container}" if o.container else "") + f" {ref}")
    if o.resources:
        for c in _containers(spec, o.container):
            res: dict[str, Any] = c["resources"] if isinstance(c.get("resources"), dict) else {}
            c["resources"] = res
            for part, values in o.resources.items():
                res[part] = {**(res.get(part) or {}), **values}
        lines.append("resources " + "; ".join(f"{part} " + ", ".join(f"{k}={v}" for k, v in values.items())
                                              for part, values in o.resources.items())
                     + (f" in {o.container}" if o.container else "") + f" {ref}")
    if o.labels or o.annotations:
        tmeta = spec.setdefault("template", {}).setdefault("metadata", {})
        for key, values in (("labels", o.labels), ("annotations", o.annotations)):
            if not values:
                continue
            doc["metadata"][key] = {**(doc["metadata"].get(key) or {}), **values}
            tmeta[key] = {**(tmeta.get(key) or {}), **values}
            lines.append(f"{key} " + ", ".join(f"{k}={v}" for k, v in values.items()) + f" {ref}")
    for j, op in enumerate(o.json_patch):
        try:
            doc = _patch_one(doc, op)
        except ValueError as exc:
            raise ValueError(f"jsonPatch[{j}]: {exc}") from None
        if not isinstance(doc.get("spec"), dict) or not isinstance(doc.get("metadata"), dict):
            raise ValueError(f"jsonPatch[{j}]: the child must keep a spec and metadata")
        lines.append(f"jsonPatch {op['op']} {op['path']} {ref}")
    return doc


def _check_result(base: Mapping[str, Any], doc: Mapping[str, Any]) -> list[str]:
    """What the rules broke in the child: its template as kube validates one (only errors the
    parent's own template does not have), a selector that no longer selects the template."""
    spec = doc["spec"]
    out = []
    if spec.get("selector") != base["spec"].get("selector") or spec.get("replicas") != base["spec"].get("replicas"):
        out.append("may not change spec.selector or spec.replicas")
    for key in ("labels", "annotations"):
        m = (doc.get("metadata") or {}).get(key)
        errs = validate_labels(m, f"metadata.{key}") if key == "labels" else validate_annotations(m, f"metadata.{key}")
        out += [str(e) for e in errs]
    before = {str(e) for e in validate_template(base["spec"].get("template"), "spec.template",
                                                base["spec"].get("selector"))}
    out += [s for s in (str(e) for e in validate_template(spec.get("template"), "spec.template",
                                                          spec.get("selector"))) if s not in before]
    return out


def _selector_keys(selector: Any) -> set[str]:
    if not isinstance(selector, Mapping):
        return set()
    keys = set((selector.get("matchLabels") or {}).keys())
    keys |= {str(e.get("key")) for e in selector.get("matchExpressions") or () if isinstance(e, Mapping)}
    return keys


def _selector_clash(o: Override, selector_keys: set[str]) -> str | None:
    """The error of a rule that would change a label the parent's selector uses, if it does."""
    clash = sorted(selector_keys & set(o.labels))
    if not clash:
        return None
    return (f"overrides[{o.index}].labels[{clash[0]}]: Forbidden: spec.selector uses this label: "
            "a child's pod template must keep the parent's selector labels")


def apply(spec: Mapping[str, Any], labels: Mapping[str, str], annotations: Mapping[str, str],
          rules: Iterable[Override]) -> Applied:
    """The child of one cluster: ``spec`` (built by ``WorkloadKind.child_spec``), ``labels`` and
    ``annotations`` (the splitter's) with ``rules`` (those that select the cluster) applied in order.
    Raises :class:`OverrideError` naming the rule and field when one does not apply or breaks it."""
    rules = list(rules)
    if not rules:  # the common case: the child as the splitter builds it
        return Applied(spec=dict(spec), labels=dict(labels), annotations=dict(annotations), rules=[], lines=[],
                       managed={}, hash=None)
    base = {"metadata": {"labels": dict(labels), "annotations": dict(annotations)}, "spec": copy.deepcopy(dict(spec))}
    doc = base
    lines: list[str] = []
    errors: list[str] = []
    keys = _selector_keys(spec.get("selector"))
    for o in rules:
        if o.max_replicas is not None:
            lines.append(f"maxReplicas {o.max_replicas} ({o.ref})")
        if not o.changes_child:
            continue
        clash = _selector_clash(o, keys)
        if clash:
            errors.append(clash)
            continue
        try:
            doc = _apply_rule(doc, o, lines)
        except ValueError as exc:
            errors.append(f"overrides[{o.index}].{exc}")
    if not errors:
        errors += [f"overrides: {m}" for m in _check_result(base, doc)]
    if errors:
        raise OverrideError(errors)
    changing = [o for o in rules if o.changes_child]
    managed: dict[str, list[str]] = {}
    for key in ("labels", "annotations"):
        old, new = base["metadata"][key], doc["metadata"].get(key) or {}
        managed[key] = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    digest = None
    if changing:
        src = [{k: v for k, v in o.source.items() if k not in ("maxReplicas", "name")} for o in changing]
        digest = hashlib.sha256(json.dumps(src, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]
    return Applied(spec=doc["spec"], labels=dict(doc["metadata"].get("labels") or {}),
                   annotations=dict(doc["metadata"].get("annotations") or {}), rules=rules, lines=lines,
                   managed=managed, hash=digest)


def check_against(overrides: Sequence[Override], spec: Mapping[str, Any], labels: Mapping[str, str],
                  annotations: Mapping[str, str]) -> list[str]:
    """The write-time check of the rules against the child as it would be built (before any
    cluster is known): each rule must apply after the rules before it (as for a cluster they all
    select), or else to the child alone (as for a cluster only it selects)."""
    errors: list[str] = []
    base = {"metadata": {"labels": dict(labels), "annotations": dict(annotations)}, "spec": copy.deepcopy(dict(spec))}
    keys = _selector_keys(spec.get("selector"))
    doc = base
    for o in overrides:
        if not o.changes_child:
            continue
        clash = _selector_clash(o, keys)
        if clash:
            errors.append(clash)
            continue
        try:
            after = _apply_rule(doc, o, [])
        except ValueError as exc:
            try:
                after = _apply_rule(base, o, [])
            except ValueError:
                errors.append(f"overrides[{o.index}].{exc}")
                continue
            doc = after  # applies on its own: the cumulative child goes on without it
            continue
        broken = _check_result(base, after)
        if broken:
            errors += [f"overrides[{o.index}]: {m}" for m in broken]
            continue
        doc = after
    return errors


def revision_source(overrides: Sequence[Override]) -> list[dict[str, Any]]:
    """The rules as written: what of them a parent's revision hashes (beside the children's shared
    spec), so that a rule change is a new revision that a rollout policy rolls out."""
    return [dict(o.source) for o in overrides]


def _managed(annotations: Mapping[str, str]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {"labels": set(), "annotations": set()}
    for part in (annotations.get(ANNOTATION_OVERRIDES_METADATA) or "").split(";"):
        key, _, names = part.partition("=")
        if key in out:
            out[key] |= {n for n in names.split(",") if n}
    return out


def stale_keys(current: Mapping[str, str], labels: Mapping[str, str],
               annotations: Mapping[str, str]) -> dict[str, set[str]]:
    """The metadata keys to take off a child whose rules changed: those the old or new rules set
    or removed (``current``: the child's annotations now) that the new child does not have, and
    the records of rules that no longer apply."""
    old, new = _managed(current), _managed(annotations)
    return {"labels": (old["labels"] | new["labels"]) - set(labels),
            "annotations": (old["annotations"] | new["annotations"] | set(CHILD_ANNOTATIONS)) - set(annotations)}


class Cache:
    """:func:`apply` per cluster, reused while the child's spec (its share aside), metadata and
    rules stay the same: the splitter builds every child on every reconcile, and validating a
    template costs far more than comparing a key. Rules cannot touch a cluster's share
    (``spec.replicas``, ``spec.ordinals.start``), so a cached child takes the new share as is."""

    def __init__(self) -> None:
        self._by_cluster: dict[str, tuple[str, Applied]] = {}

    def apply(self, cluster: str, spec: Mapping[str, Any], labels: Mapping[str, str],
              annotations: Mapping[str, str], rules: Sequence[Override]) -> Applied:
        if not rules:
            self._by_cluster.pop(cluster, None)
            return apply(spec, labels, annotations, ())
        shared = {k: v for k, v in spec.items() if k != "replicas"}
        ordinals = spec.get("ordinals")
        if isinstance(ordinals, Mapping):
            shared["ordinals"] = {k: v for k, v in ordinals.items() if k != "start"}
        key = json.dumps([shared, labels, annotations, [o._key() for o in rules]], sort_keys=True, default=str)
        hit = self._by_cluster.get(cluster)
        if hit is None or hit[0] != key:
            self._by_cluster[cluster] = hit = (key, apply(spec, labels, annotations, rules))  # may raise
        a = hit[1]
        out = dict(a.spec)
        if "replicas" in spec:
            out["replicas"] = spec["replicas"]
        if isinstance(ordinals, Mapping):
            out["ordinals"] = {**(out.get("ordinals") or {}), "start": ordinals.get("start")}
        return Applied(spec=out, labels=dict(a.labels), annotations=dict(a.annotations), rules=a.rules,
                       lines=a.lines, managed=a.managed, hash=a.hash)
