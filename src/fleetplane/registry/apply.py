"""Server-Side Apply and ``metadata.managedFields``, as kube-apiserver computes them.

This follows sigs.k8s.io/structured-merge-diff (merge, compare, prune, conflicts) and
k8s.io/apimachinery's managedfields stack (strip-meta, before-first-apply, last-applied
handling, capping of update managers), but works on plain JSON objects without OpenAPI
schemas: the only schema knowledge needed is which lists are atomic, sets or maps, supplied
by a ``list_type_at`` callable (``ResourceType.list_type_at``: read from the kind's OpenAPI
definition, or from a CRD's structural schema).

Field paths
    A field path is a tuple of *encoded path elements*, exactly the keys used by the
    ``fieldsV1`` format: ``"f:<field>"`` for an object field, ``'k:{"name":"app"}'`` for the
    element of a map-list (key fields as compact JSON with sorted keys), ``'v:"x"'`` for the
    element of a set-list. E.g. ``("f:spec", "f:containers", 'k:{"name":"app"}', "f:image")``.

List types
    ``list_type_at(path)`` receives the list's position as a tuple of *field names only*; list
    elements are not part of it since a list element continues the path of its list (kube has
    no lists of lists). So a container's env list is ``("spec", "template", "spec",
    "containers", "env")``. It returns ``("atomic" | "set" | "map", map_keys)``. A "map" list
    with an element lacking a key field (or a "set" with non-scalar elements) is treated as
    atomic when it is found in a stored object, and rejected (422) in an apply configuration.
"""

from __future__ import annotations

import copy
import heapq
import json
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from json.encoder import encode_basestring as _encode_str
from typing import Any

from fleetplane.apimachinery.errors import StatusError, bad_request
from fleetplane.apimachinery.jsonvalue import MISSING, json_equal
from fleetplane.registry.definitions import metadata_only
from fleetplane.registry.patch import PatchMeta

__all__ = [
    "ANCIENT_CHANGES_MANAGER",
    "BEFORE_FIRST_APPLY_MANAGER",
    "LAST_APPLIED_ANNOTATION",
    "MAX_UPDATE_MANAGERS",
    "ListTypeAt",
    "Path",
    "compare_fields",
    "created_fieldsv1",
    "fields_of",
    "format_path",
    "from_fieldsv1",
    "list_types_from_meta",
    "metadata_list_type_at",
    "server_side_apply",
    "to_fieldsv1",
    "update_managed_fields",
]

Path = tuple[str, ...]
ListTypeAt = Callable[[tuple[str, ...]], tuple[str, list[str]]]

LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
# Owner of whatever an object held before its first apply, if it had no managedFields.
BEFORE_FIRST_APPLY_MANAGER = "before-first-apply"
# Bucket into which the oldest Update managers are folded past MAX_UPDATE_MANAGERS.
ANCIENT_CHANGES_MANAGER = "ancient-changes"
MAX_UPDATE_MANAGERS = 10
# kube's total annotation size limit; the last-applied sync gives up past it.
_ANNOTATIONS_SIZE_LIMIT = 256 * 1024

# Key fields with a schema default (kube fills them in when computing a map-list key).
_KEY_DEFAULTS: dict[str, Any] = {"protocol": "TCP"}

# Metadata kube strips from every field set (stripmeta.go), plus the deletion fields which
# only the server writes. Apply never sets them; name/namespace are the object's identity.
_SERVER_METADATA = frozenset(
    {
        "name",
        "namespace",
        "generateName",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    }
)
_NOT_APPLIABLE_METADATA = _SERVER_METADATA - {"name", "namespace", "generateName"}



# --------------------------------------------------------------------------------------------
# List types
# --------------------------------------------------------------------------------------------


def _list_type_of(node: PatchMeta) -> tuple[str, list[str]]:
    if node.list_type:
        keys = list(node.list_keys) or ([node.key] if node.key else [])
        return node.list_type, keys if node.list_type == "map" else []
    if node.strategy == "merge":
        return ("map", [node.key]) if node.key else ("set", [])
    return "atomic", []


def list_types_from_meta(meta: PatchMeta) -> ListTypeAt:
    """A ``list_type_at`` reading a :class:`PatchMeta` tree (its SSA overrides included)."""

    def list_type_at(path: tuple[str, ...]) -> tuple[str, list[str]]:
        return _list_type_of(meta.at(*path))

    return list_type_at


def metadata_list_type_at(path: tuple[str, ...]) -> tuple[str, list[str]]:
    """The list types of a kind known only by its ObjectMeta: ``metadata.finalizers`` a set,
    ``metadata.ownerReferences`` a map by uid, every other list atomic. A served kind's own are
    ``ResourceType.list_type_at``."""
    return _list_type_of(metadata_only().at(*path))


# --------------------------------------------------------------------------------------------
# Path elements
# --------------------------------------------------------------------------------------------


def _canon(v: Any) -> Any:
    """Integral floats as ints, so 80 and 80.0 give the same key (Go prints both as 80)."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, dict):
        return {k: _canon(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_canon(x) for x in v]
    return v


def _compact(v: Any) -> str:
    if type(v) is dict and all(type(k) is str and (type(x) is str or type(x) is int) for k, x in v.items()):
        # a map-list key (names, ports): what json.dumps writes for it, without its encoder
        return "{" + ",".join(_encode_str(k) + ":" + (_encode_str(x) if type(x) is str else int.__repr__(x))
                              for k, x in sorted(v.items())) + "}"
    return json.dumps(_canon(v), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _has_keys(item: Any, keys: list[str]) -> bool:
    """Whether ``item`` can be a map-list element (``_key_element`` is not None)."""
    return isinstance(item, dict) and bool(keys) and all(item.get(k) is not None or k in _KEY_DEFAULTS for k in keys)


def _key_element(item: Any, keys: list[str]) -> str | None:
    if not isinstance(item, dict) or not keys:
        return None
    kv = {}
    for k in keys:
        if item.get(k) is not None:
            kv[k] = item[k]
        elif k in _KEY_DEFAULTS:
            kv[k] = _KEY_DEFAULTS[k]
        else:
            return None
    return "k:" + _compact(kv)


def _is_scalar(v: Any) -> bool:
    return v is None or isinstance(v, (str, int, float, bool))


def _effective_list(kind: str, keys: list[str], *lists: list[Any]) -> tuple[str, list[str]]:
    """Degrade to atomic when the elements cannot carry the declared list type."""
    items = [i for lst in lists for i in lst]
    if kind == "map" and all(_has_keys(i, keys) for i in items):
        return "map", keys
    if kind == "set" and all(_is_scalar(i) for i in items):
        return "set", []
    return "atomic", []


def _element(item: Any, kind: str, keys: list[str]) -> str:
    if kind == "map":
        return _key_element(item, keys)  # type: ignore[return-value]
    return "v:" + _compact(item)


def _indexed(items: list[Any], kind: str, keys: list[str]) -> dict[str, Any]:
    """Elements by path element, in list order (a repeated element keeps its first value)."""
    out: dict[str, Any] = {}
    for item in items:
        out.setdefault(_element(item, kind, keys), item)
    return out


def _value_sort_key(v: Any) -> tuple[Any, ...]:
    if v is None:
        return (0, 0)
    if isinstance(v, bool):
        return (1, v)
    if isinstance(v, (int, float)):
        return (2, v)
    if isinstance(v, str):
        return (3, v)
    return (4, _compact(v))


#: above this many, path elements are sorted in runs merged in Python (see _sorted_elements)
_SORT_RUN = 4096


def _sorted_elements(names: Iterable[str]) -> list[str]:
    """Path elements in structured-merge-diff's order. A huge set (a 150,000-key ConfigMap's data)
    is sorted in runs merged by ``heapq.merge``: one ``sorted`` call over all of it compares in C
    for a few hundred milliseconds without letting the event loop's thread have the GIL, even
    when it runs in a worker thread. Fields only (an object's children, the common case) sort as
    plain strings: their common ``f:`` prefix keeps :func:`_pe_sort_key`'s order."""
    names = list(names)
    if len(names) <= _SORT_RUN:
        if all(pe.startswith("f:") for pe in names):
            return sorted(names)
        return sorted(names, key=_pe_sort_key)
    keyed = [(_pe_sort_key(pe), pe) for pe in names]
    runs = [sorted(keyed[i:i + _SORT_RUN]) for i in range(0, len(keyed), _SORT_RUN)]
    return [pe for _, pe in heapq.merge(*runs)]


def _pe_sort_key(pe: str) -> tuple[Any, ...]:
    """structured-merge-diff's PathElement order: fields, then keys, then values, then indexes."""
    kind, _, rest = pe.partition(":")
    try:
        if kind == "f":
            return (0, rest)
        if kind == "k":
            parsed = json.loads(rest)
            return (1, tuple((n, _value_sort_key(parsed[n])) for n in sorted(parsed)))
        if kind == "v":
            return (2, _value_sort_key(json.loads(rest)))
        if kind == "i":
            return (3, int(rest))
    except (ValueError, TypeError, AttributeError):
        pass
    return (9, pe)


def _go_value(v: Any) -> str:
    """structured-merge-diff's value.ToString."""
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, (int, float)):
        return str(_canon(v))
    return _compact(v)


def format_path(path: Path) -> str:
    """A field path as kube prints it: ``.spec.containers[name="app"].image``."""
    out = []
    for pe in path:
        kind, _, rest = pe.partition(":")
        if kind == "f":
            out.append("." + rest)
        elif kind == "k":
            parsed = json.loads(rest)
            out.append("[" + ",".join(f"{n}={_go_value(parsed[n])}" for n in sorted(parsed)) + "]")
        elif kind == "v":
            out.append("[=" + _go_value(json.loads(rest)) + "]")
        elif kind == "i":
            out.append(f"[{rest}]")
        else:
            out.append(pe)
    return "".join(out)


# --------------------------------------------------------------------------------------------
# Field sets and the fieldsV1 encoding
# --------------------------------------------------------------------------------------------


def fields_of(obj: Any, list_types: ListTypeAt = metadata_list_type_at) -> set[Path]:
    """The fields an object (or apply configuration) sets, as kube's ``ToFieldSet``.

    Scalars, nulls, empty objects and atomic lists are owned as leaves; every element of a
    set or map list is owned itself (and, for map lists, so are its fields). A non-empty
    object is not owned itself, only through its fields.
    """
    out: set[Path] = set()
    _collect(obj, (), (), list_types, out)
    return out


def _collect(v: Any, path: Path, fpath: tuple[str, ...], lt: ListTypeAt, out: set[Path]) -> None:
    if isinstance(v, dict):
        if not v:
            if path:
                out.add(path)
            return
        for k, child in v.items():
            _collect(child, path + ("f:" + k,), fpath + (k,), lt, out)
    elif isinstance(v, list):
        kind, keys = _effective_list(*lt(fpath), v)
        if kind == "atomic":
            out.add(path)
            return
        for pe, item in _indexed(v, kind, keys).items():
            ip = path + (pe,)
            out.add(ip)
            if isinstance(item, dict):
                _collect(item, ip, fpath, lt, out)
    elif path:
        out.add(path)


class _Node:
    __slots__ = ("children", "member")

    def __init__(self) -> None:
        self.member = False
        self.children: dict[str, _Node] = {}


def _tree(paths: Iterable[Path]) -> _Node:
    root = _Node()
    for p in paths:
        node = root
        for pe in p:
            child = node.children.get(pe)
            if child is None:
                child = node.children[pe] = _Node()
            node = child
        if p:
            node.member = True
    return root


def to_fieldsv1(paths: Iterable[Path]) -> dict[str, Any]:
    """Encode a field set as kube's ``fieldsV1`` JSON (``.`` marks an owned node that also has
    owned children; keys in structured-merge-diff order)."""

    def emit(node: _Node) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if node.member and node.children:
            out["."] = {}
        for pe in _sorted_elements(node.children):
            out[pe] = emit(node.children[pe])
        return out

    return emit(_tree(paths))


def _fields_from_missing(v: Any, fpath: tuple[str, ...], lt: ListTypeAt) -> dict[str, Any]:
    """The fieldsV1 node of a value that appeared where there was nothing (``_cmp`` against
    MISSING): the value is owned itself, and so is every field and set/map element below it."""
    if isinstance(v, dict):
        if not v:
            return {}
        out: dict[str, Any] = {".": {}}
        for k in sorted(v):
            x = v[k]  # a leaf (scalar, null, empty) is {}: not walked
            out["f:" + k] = _fields_from_missing(x, fpath + (k,), lt) if x and isinstance(x, (dict, list)) else {}
        return out
    if isinstance(v, list):
        if not v:
            return {}
        kind, keys = _effective_list(*lt(fpath), v)
        if kind == "atomic":
            return {}
        items = _indexed(v, kind, keys)
        out = {".": {}}
        for pe in _sorted_elements(items):
            out[pe] = _fields_from_missing(items[pe], fpath, lt)
        return out
    return {}


def created_fieldsv1(obj: dict[str, Any], list_types: ListTypeAt = metadata_list_type_at) -> dict[str, Any]:
    """The fieldsV1 a create's manager owns (``obj`` diffed against :func:`_skeleton`, server
    metadata stripped), by one walk of the object: exactly
    ``to_fieldsv1(_strip(added | modified))`` of ``compare_fields(_skeleton(obj), obj)``, without
    building and sorting a set of path tuples (every create pays this). ``{}``: nothing owned."""
    out: dict[str, Any] = {}
    for k in sorted(obj):
        if k == "apiVersion" or k == "kind":
            continue
        v = obj[k]
        if k == "metadata" or ((k == "spec" or k == "status") and isinstance(v, dict)):
            # in the skeleton as {}: not owned itself, only through what it holds
            node: dict[str, Any] = {}
            for c in sorted(v):
                if k == "metadata" and c in _SERVER_METADATA:
                    continue
                x = v[c]
                node["f:" + c] = _fields_from_missing(x, (k, c), list_types) if x and isinstance(x, (dict, list)) else {}
            if node:
                out["f:" + k] = node
        else:
            out["f:" + k] = _fields_from_missing(v, (k,), list_types)
    return out


def from_fieldsv1(fields: dict[str, Any]) -> set[Path]:
    """Decode ``fieldsV1`` JSON into a field set; ValueError if it is malformed. Key and value
    elements are re-encoded canonically, so differently spaced JSON compares equal."""
    if not isinstance(fields, dict):
        raise ValueError("fieldsV1 must be an object")
    out: set[Path] = set()

    def walk(node: dict[str, Any], path: Path) -> None:
        for pe, child in node.items():
            if not isinstance(child, dict):
                raise ValueError(f"invalid fieldsV1 entry {pe!r}")
            if pe == ".":
                if path:
                    out.add(path)
                continue
            p = path + (_canonical_pe(pe),)
            if child:
                walk(child, p)
            else:
                out.add(p)

    walk(fields, ())
    return out


def _canonical_pe(pe: str) -> str:
    kind, sep, rest = pe.partition(":")
    if not sep or kind not in ("f", "k", "v", "i"):
        raise ValueError(f"invalid path element {pe!r}")
    if kind == "k":
        parsed = json.loads(rest)
        if not isinstance(parsed, dict):
            raise ValueError(f"invalid key path element {pe!r}")
        return "k:" + _compact(parsed)
    if kind == "v":
        return "v:" + _compact(json.loads(rest))
    return pe


def _ordered(paths: Iterable[Path]) -> list[Path]:
    """Paths in structured-merge-diff's Set iteration order: the members of a level, then
    each child subtree."""
    out: list[Path] = []

    def walk(node: _Node, prefix: Path) -> None:
        names = _sorted_elements(node.children)
        for pe in names:
            if node.children[pe].member:
                out.append(prefix + (pe,))
        for pe in names:
            walk(node.children[pe], prefix + (pe,))

    walk(_tree(paths), ())
    return out


def _is_server_path(p: Path) -> bool:
    if not p or p[0] in ("f:apiVersion", "f:kind"):
        return True
    if p[0] == "f:metadata":
        return len(p) == 1 or (p[1].startswith("f:") and p[1][2:] in _SERVER_METADATA)
    return False


def _strip(paths: Iterable[Path]) -> set[Path]:
    return {p for p in paths if not _is_server_path(p)}


def _with_field_ancestors(paths: set[Path]) -> set[Path]:
    """Also count as owned every ancestor that is a named field (kube's
    EnsureNamedFieldsAreMembers): owning ``.spec.x.y`` keeps ``.spec.x``, but owning a field of
    a list element does not keep the element."""
    out = set(paths)
    for p in paths:
        for i in range(1, len(p)):
            if p[i - 1].startswith("f:"):
                out.add(p[:i])
    return out


# --------------------------------------------------------------------------------------------
# Compare (what an update changed)
# --------------------------------------------------------------------------------------------


def compare_fields(
    old: Any, new: Any, list_types: ListTypeAt = metadata_list_type_at
) -> tuple[set[Path], set[Path], set[Path]]:
    """``(added, modified, removed)`` between two objects, as structured-merge-diff's Compare:
    changed leaves, plus object/list-element nodes that appeared or disappeared."""
    added: set[Path] = set()
    modified: set[Path] = set()
    removed: set[Path] = set()
    _cmp(old, new, (), (), list_types, added, modified, removed)
    return added, modified, removed




def _cmp(l: Any, r: Any, path: Path, fpath: tuple[str, ...], lt: ListTypeAt, A: set[Path], M: set[Path], R: set[Path]) -> None:  # noqa: E741
    if l is r or (type(l) is type(r) and l == r and json_equal(l, r)):
        return  # an unchanged subtree (most of an object on an update): nothing to walk
    lmiss, rmiss = l is MISSING, r is MISSING
    if (lmiss or isinstance(l, dict)) and (rmiss or isinstance(r, dict)):
        lm = {} if lmiss else l
        rm = {} if rmiss else r
        if not lm and not rm:
            _leaf(l, r, path, A, M, R)
            return
        for k in dict.fromkeys([*lm, *rm]):
            _cmp(lm.get(k, MISSING), rm.get(k, MISSING), path + ("f:" + k,), fpath + (k,), lt, A, M, R)
        _node(lmiss, rmiss, path, A, R)
        return
    if (lmiss or isinstance(l, list)) and (rmiss or isinstance(r, list)):
        ll = [] if lmiss else l
        rl = [] if rmiss else r
        kind, keys = _effective_list(*lt(fpath), ll, rl)
        if kind == "atomic" or (not ll and not rl):
            _leaf(l, r, path, A, M, R)
            return
        li, ri = _indexed(ll, kind, keys), _indexed(rl, kind, keys)
        for pe in dict.fromkeys([*li, *ri]):
            _cmp(li.get(pe, MISSING), ri.get(pe, MISSING), path + (pe,), fpath, lt, A, M, R)
        _node(lmiss, rmiss, path, A, R)
        return
    if not lmiss and not rmiss and (isinstance(l, (dict, list)) or isinstance(r, (dict, list))):
        # The value changed shape: the old subtree went away and the new one appeared.
        if isinstance(l, (dict, list)):
            _cmp(l, MISSING, path, fpath, lt, A, M, R)
        if isinstance(r, (dict, list)):
            _cmp(MISSING, r, path, fpath, lt, A, M, R)
        if path:
            M.add(path)
        return
    _leaf(l, r, path, A, M, R)


def _leaf(l: Any, r: Any, path: Path, A: set[Path], M: set[Path], R: set[Path]) -> None:  # noqa: E741
    if not path:
        return
    if l is MISSING:
        A.add(path)
    elif r is MISSING:
        R.add(path)
    elif not json_equal(l, r):
        M.add(path)


def _node(lmiss: bool, rmiss: bool, path: Path, A: set[Path], R: set[Path]) -> None:
    if path and lmiss:
        A.add(path)
    elif path and rmiss:
        R.add(path)


# --------------------------------------------------------------------------------------------
# Merge and prune (apply)
# --------------------------------------------------------------------------------------------


def _clean(v: Any) -> Any:
    """A copy of a configuration value with null fields dropped (null means "unset")."""
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_clean(x) for x in v]
    return v


def _merge(live: Any, config: Any, fpath: tuple[str, ...], lt: ListTypeAt) -> Any:
    """Merge an apply configuration into the live value: objects field by field, atomic lists
    replaced, set/map lists merged element by element."""
    if isinstance(config, dict):
        out = dict(live) if isinstance(live, dict) else {}
        for k, v in config.items():
            if v is None:
                out.pop(k, None)
            elif k in out:
                out[k] = _merge(out[k], v, fpath + (k,), lt)
            else:
                out[k] = _clean(v)
        return out
    if isinstance(config, list) and isinstance(live, list):
        kind, keys = _effective_list(*lt(fpath), live, config)
        if kind == "atomic":
            return _clean(config)
        li, ri = _indexed(live, kind, keys), _indexed(config, kind, keys)
        out_list = []
        for pe in _merge_order(list(li), list(ri)):
            if pe not in ri:
                out_list.append(li[pe])
            elif pe in li:
                out_list.append(_merge(li[pe], ri[pe], fpath, lt))
            else:
                out_list.append(_clean(ri[pe]))
        return out_list
    return _clean(config)


def _merge_order(lhs: list[str], rhs: list[str]) -> list[str]:
    """Element order of a merged list (structured-merge-diff): elements both lists have keep
    the configuration's order; live-only elements stay where they were relative to them, and
    configuration-only elements are placed as in the configuration."""
    in_rhs, in_lhs = set(rhs), set(lhs)
    shared = [pe for pe in rhs if pe in in_lhs]
    nxt = 0  # index in `shared` of the next shared element we expect
    out: list[str] = []
    emitted: set[str] = set()

    def emit(pe: str) -> None:
        nonlocal nxt
        out.append(pe)
        emitted.add(pe)
        if nxt < len(shared) and shared[nxt] == pe:
            nxt += 1

    li = ri = 0
    while li < len(lhs) or ri < len(rhs):
        if li < len(lhs) and ri < len(rhs):
            if lhs[li] == rhs[ri]:
                emit(lhs[li])
                li += 1
                ri += 1
                continue
            expected = shared[nxt] if nxt < len(shared) else None
            if lhs[li] in in_rhs and expected is not None and expected != lhs[li]:
                li += 1  # a shared element, but not the one due now: taken from rhs later
                continue
        if li < len(lhs):
            if lhs[li] not in in_rhs:
                emit(lhs[li])
                li += 1
                continue
            if lhs[li] in emitted:
                li += 1
                continue
        if ri < len(rhs):
            if rhs[ri] not in emitted:
                emit(rhs[ri])
            ri += 1
    return out


def _remove_paths(obj: dict[str, Any], doomed: set[Path], owned: set[Path], lt: ListTypeAt) -> None:
    """Remove fields and list elements at ``doomed`` paths; containers emptied by a removal
    go too unless someone owns them as such."""
    for path in sorted(doomed, key=len):
        _remove_path(obj, path, owned, lt)


def _remove_path(obj: dict[str, Any], path: Path, owned: set[Path], lt: ListTypeAt) -> None:
    chain: list[tuple[Any, Any, Path]] = []  # (container, accessor, container path)
    node: Any = obj
    fpath: tuple[str, ...] = ()
    for depth, pe in enumerate(path):
        here = path[:depth]
        if pe.startswith("f:"):
            name = pe[2:]
            if not isinstance(node, dict) or name not in node:
                return
            chain.append((node, name, here))
            node = node[name]
            fpath += (name,)
        else:
            if not isinstance(node, list):
                return
            kind, keys = _effective_list(*lt(fpath), node)
            idx = next(
                (i for i, item in enumerate(node) if kind != "atomic" and _element(item, kind, keys) == pe),
                None,
            )
            if idx is None:
                return
            chain.append((node, idx, here))
            node = node[idx]
    # Delete the target, then any container the deletion left empty.
    while chain:
        container, accessor, cpath = chain.pop()
        del container[accessor]
        if container or not cpath or cpath in owned:
            return


# --------------------------------------------------------------------------------------------
# managedFields entries
# --------------------------------------------------------------------------------------------


@dataclass
class _Entry:
    manager: str
    operation: str
    api_version: str
    time: str | None
    subresource: str
    fields: set[Path]
    #: the stored fieldsV1 and the set it decoded to: re-encoded only if ``fields`` changed
    raw: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    #: (a frozenset; typed as a Set so that comparing it with ``fields``, a set, type-checks)
    decoded: AbstractSet[Path] | None = field(default=None, compare=False, repr=False)

    def ident(self) -> tuple[str, str, str, str]:
        """kube's manager identifier: appliers are one entry whatever the version they apply
        with; updaters are one entry per API version."""
        version = "" if self.operation == "Apply" else self.api_version
        return (self.manager, self.operation, version, self.subresource)

    def identifier_json(self) -> str:
        """The JSON identifier kube keys managers by (its sort order orders conflict messages)."""
        d: dict[str, str] = {"manager": self.manager, "operation": self.operation}
        if self.operation != "Apply" and self.api_version:
            d["apiVersion"] = self.api_version
        if self.subresource:
            d["subresource"] = self.subresource
        return json.dumps(d, separators=(",", ":"))

    def printable(self) -> str:
        """How kube names a manager in conflict messages (printManager)."""
        s = json.dumps(self.manager, ensure_ascii=False)
        if self.subresource:
            s += f" with subresource {json.dumps(self.subresource, ensure_ascii=False)}"
        if self.operation == "Update":
            s += f" using {self.api_version}"
        return s

    def encode(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
        }
        if self.time:
            out["time"] = self.time
        out["fieldsType"] = "FieldsV1"
        unchanged = self.raw is not None and self.fields == self.decoded
        out["fieldsV1"] = self.raw if unchanged else to_fieldsv1(self.fields)
        if self.subresource:
            out["subresource"] = self.subresource
        return out


_Managers = dict[tuple[str, str, str, str], _Entry]


def _decode(managed_fields: Any, stored: bool = False) -> _Managers:
    """Decode ``metadata.managedFields``; ValueError if invalid (as DecodeManagedFields).
    ``stored``: the server's own encoding, kept for entries a write leaves unchanged."""
    if managed_fields is None:
        return {}
    if not isinstance(managed_fields, list):
        raise ValueError("managedFields must be a list")
    out: _Managers = {}
    for i, raw in enumerate(managed_fields):
        if not isinstance(raw, dict):
            raise ValueError(f"managed fields entry {i} is not an object")
        op = raw.get("operation")
        if op not in ("Apply", "Update"):
            raise ValueError("operation must be `Apply` or `Update`")
        api_version = raw.get("apiVersion")
        if not isinstance(api_version, str) or not api_version:
            raise ValueError("apiVersion must not be empty")
        if raw.get("fieldsType") != "FieldsV1":
            raise ValueError(f"invalid fieldsType in managed fields entry {i}")
        manager = raw.get("manager", "")
        sub = raw.get("subresource") or ""
        time = raw.get("time")
        if (
            not isinstance(manager, str)
            or not isinstance(sub, str)
            or not isinstance(time, (str, type(None)))
        ):
            raise ValueError(f"invalid managed fields entry {i}")
        fields = from_fieldsv1(raw.get("fieldsV1") or {})
        entry = _Entry(manager, op, api_version, time, sub, fields)
        if stored:
            entry.raw, entry.decoded = raw.get("fieldsV1") or {}, frozenset(fields)
        out[entry.ident()] = entry
    return out


def _decode_or_empty(managed_fields: Any, stored: bool = False) -> _Managers:
    try:
        return _decode(managed_fields, stored)
    except (ValueError, TypeError):
        return {}


def _encode(managers: _Managers) -> list[dict[str, Any]]:
    """Entries in kube's order: Apply before Update, then by time, manager, version, subresource."""
    entries = sorted(
        (e for e in managers.values() if e.fields),
        key=lambda e: (e.operation, e.time or "", e.manager, e.api_version, e.subresource),
    )
    return [e.encode() for e in entries]


def _cap_update_managers(managers: _Managers, limit: int = MAX_UPDATE_MANAGERS) -> None:
    """Fold the oldest Update entries into per-version "ancient-changes" entries so that at most
    ``limit`` Update entries remain (kube's capmanagers)."""
    while True:
        updaters = [e for e in managers.values() if e.operation == "Update"]
        candidates = [e for e in updaters if e.manager != ANCIENT_CHANGES_MANAGER]
        if len(updaters) <= limit or not candidates:
            return
        oldest = min(candidates, key=lambda e: (e.time or "", e.manager))
        del managers[oldest.ident()]
        bucket = _Entry(ANCIENT_CHANGES_MANAGER, "Update", oldest.api_version, oldest.time, "", set())
        bucket = managers.setdefault(bucket.ident(), bucket)
        bucket.fields |= oldest.fields
        if oldest.time and (bucket.time is None or oldest.time > bucket.time):
            bucket.time = oldest.time


def _skeleton(obj: dict[str, Any]) -> dict[str, Any]:
    """What kube diffs a created object against: the zero value of the type, whose
    non-pointer structs (metadata, spec, status) already exist as empty objects."""
    out: dict[str, Any] = {"metadata": {}}
    for key in ("spec", "status"):
        if isinstance(obj.get(key), dict):
            out[key] = {}
    return out


def _without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj


def _shallow_without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` without metadata.managedFields, sharing everything else (read-only use)."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}


def _store(obj: dict[str, Any], managers: _Managers) -> dict[str, Any]:
    _cap_update_managers(managers)
    encoded = _encode(managers)
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = obj["metadata"] = {}
    if encoded:
        meta["managedFields"] = encoded
    else:
        meta.pop("managedFields", None)
    return obj


# --------------------------------------------------------------------------------------------
# Update (create / update / patch)
# --------------------------------------------------------------------------------------------


def update_managed_fields(
    old: dict[str, Any] | None,
    new: dict[str, Any],
    *,
    manager: str,
    api_version: str,
    now: str,
    list_type_at: ListTypeAt = metadata_list_type_at,
    subresource: str | None = None,
) -> dict[str, Any]:
    """Record a non-apply write (create when ``old`` is None, update, patch) in
    ``metadata.managedFields`` and return the new object (``new`` is not modified).

    The fields that changed become owned by ``manager`` (operation ``Update``) and are taken
    away from every other manager; removed fields leave every set; empty entries disappear.
    The entry's ``time`` moves only when this write changed something.

    The base entries are the ones the client sent in ``new`` when it sent a valid, non-empty
    list (this is how clients edit managedFields, e.g. kubectl's client-side to server-side
    apply migration), else the stored ones. ``[{}]`` resets them. Writes to a subresource
    always start from the stored entries.
    """
    # Only metadata.managedFields changes, so shallow copies of the top and of metadata do:
    # this runs on every write, and deep copies were its largest cost.
    result = dict(new)
    meta = result.get("metadata")
    if not isinstance(meta, dict):
        return result
    meta = result["metadata"] = dict(meta)
    requested = meta.pop("managedFields", None)
    old_obj = _shallow_without_managed_fields(old) if isinstance(old, dict) else None
    stored = (old.get("metadata") or {}).get("managedFields") if isinstance(old, dict) else None

    if subresource:
        managers = _decode_or_empty(stored, stored=True)
    elif requested == [{}]:
        managers = {}
    else:
        # a patch or an update of a read object sends the stored entries back unchanged
        same = requested is not None and requested == stored
        managers = _decode_or_empty(requested) if requested and not same else {}
        if not managers:
            managers = _decode_or_empty(stored, stored=True)

    if old_obj is None and not managers and not subresource:
        # a create with no entries to start from (every create but a client's own managedFields):
        # the manager's entry is the object's fields, by one walk (see created_fieldsv1)
        fields_v1 = created_fieldsv1(result, list_type_at)
        if fields_v1:  # as _Entry.encode lays it out
            created: dict[str, Any] = {"manager": manager, "operation": "Update", "apiVersion": api_version}
            if now:
                created["time"] = now
            created["fieldsType"] = "FieldsV1"
            created["fieldsV1"] = fields_v1
            meta["managedFields"] = [created]
        return result
    base = old_obj if old_obj is not None else _skeleton(result)
    added, modified, removed = compare_fields(base, result, list_type_at)
    changed = _strip(added | modified)
    gone = _strip(removed)
    for entry in managers.values():
        entry.fields -= changed
        entry.fields -= gone

    if changed:
        mine = _Entry(manager, "Update", api_version, now, subresource or "", set())
        mine = managers.setdefault(mine.ident(), mine)
        mine.fields |= changed
        mine.time = now
    return _store(result, {k: e for k, e in managers.items() if e.fields})


# --------------------------------------------------------------------------------------------
# Apply
# --------------------------------------------------------------------------------------------


def _gvk_string(api_version: Any, kind: Any) -> str:
    av = api_version if isinstance(api_version, str) else ""
    group, _, version = av.rpartition("/")
    return f"{group}/{version}, Kind={kind if isinstance(kind, str) else ''}"


def _validate_config_lists(v: Any, shown: str, fpath: tuple[str, ...], lt: ListTypeAt) -> None:
    """Map-list elements of an apply configuration must carry their keys, once each."""
    if isinstance(v, dict):
        for k, child in v.items():
            _validate_config_lists(child, f"{shown}.{k}", fpath + (k,), lt)
    elif isinstance(v, list):
        kind, keys = lt(fpath)
        seen: set[str] = set()
        for i, item in enumerate(v):
            if kind == "map":
                if not isinstance(item, dict):
                    raise _invalid_config(f"{shown}: element {i}: expected a map, got {json.dumps(item)}")
                missing = [k for k in keys if item.get(k) is None and k not in _KEY_DEFAULTS]
                if missing:
                    raise _invalid_config(
                        f"{shown}: element {i}: associative list with keys has an element that omits "
                        f'key field "{missing[0]}" (and doesn\'t have default value)'
                    )
                pe = _key_element(item, keys)
                if pe in seen:
                    raise _invalid_config(f"{shown}: duplicate entries for key {format_path((pe,))}")
                seen.add(pe)  # type: ignore[arg-type]
            _validate_config_lists(item, f"{shown}[{i}]", fpath, lt)


def _invalid_config(detail: str) -> StatusError:
    return StatusError(422, "Invalid", f"failed to create typed patch object: {detail}")


def _annotations(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    ann = meta.get("annotations") if isinstance(meta, dict) else None
    return ann if isinstance(ann, dict) else {}


def _go_json(v: Any) -> str:
    """Go's json.Encoder output: sorted keys, HTML-safe escapes, trailing newline."""
    s = json.dumps(_canon(v), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for ch, esc in (
        ("&", "\\u0026"),
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        s = s.replace(ch, esc)
    return s + "\n"


def _sync_last_applied(merged: dict[str, Any], config: dict[str, Any]) -> None:
    """kubectl server-side apply keeps an existing client-side last-applied annotation in
    step with what it applied (lastappliedupdater.go)."""
    ann = _annotations(merged)
    if not ann.get(LAST_APPLIED_ANNOTATION):
        return
    snapshot = copy.deepcopy(config)
    snap_ann = _annotations(snapshot)
    snap_ann.pop(LAST_APPLIED_ANNOTATION, None)
    ann[LAST_APPLIED_ANNOTATION] = _go_json(snapshot)
    if sum(len(k) + len(str(v)) for k, v in ann.items()) > _ANNOTATIONS_SIZE_LIMIT:
        del ann[LAST_APPLIED_ANNOTATION]


def _allowed_by_last_applied(live: dict[str, Any], api_version: str, lt: ListTypeAt) -> set[Path]:
    """Conflicts kubectl may take over when moving from client-side to server-side apply:
    fields of the last-applied configuration whose live value still matches it."""
    raw = _annotations(live).get(LAST_APPLIED_ANNOTATION)
    if not raw:
        return set()
    try:
        last = json.loads(raw)
    except ValueError:
        return set()
    if not isinstance(last, dict) or last.get("apiVersion") != api_version:
        return set()
    added, modified, removed = compare_fields(last, live, lt)
    return fields_of(last, lt) - added - modified - removed


def _conflict_error(conflicts: list[tuple[_Entry, Path]]) -> StatusError:
    """The 409 kube answers, with its message layout (managedfields conflict.go)."""
    conflicts = sorted(conflicts, key=lambda c: c[0].identifier_json())
    causes = [
        {
            "reason": "FieldManagerConflict",
            "message": f"conflict with {entry.printable()}",
            "field": format_path(path),
        }
        for entry, path in conflicts
    ]
    if len(conflicts) == 1:
        entry, path = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {entry.printable()}: {format_path(path)}"
    else:
        lines = []
        by_manager: dict[str, list[tuple[_Entry, Path]]] = {}
        for c in conflicts:
            by_manager.setdefault(c[0].identifier_json(), []).append(c)
        for ident in sorted(by_manager):
            group = by_manager[ident]
            lines.append(f"conflicts with {group[0][0].printable()}:")
            lines.extend(f"- {format_path(p)}" for _, p in group)
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return StatusError(409, "Conflict", message, {"causes": causes})


def server_side_apply(
    live: dict[str, Any] | None,
    config: dict[str, Any],
    *,
    manager: str,
    force: bool,
    api_version: str,
    now: str,
    list_type_at: ListTypeAt = metadata_list_type_at,
    subresource: str | None = None,
) -> dict[str, Any]:
    """Apply ``config`` for ``manager`` onto ``live`` (None: the object does not exist yet) and
    return the new object with its ``metadata.managedFields``. Inputs are not modified.

    * Every field of ``config`` becomes owned by ``manager`` (operation ``Apply``).
    * A field this manager applied last time but no longer sets is removed, unless another
      manager owns it too.
    * Changing a field another manager owns is a 409 conflict unless ``force`` (which takes
      the field away from them); applying the value it already has shares ownership.
    * Server-owned metadata (uid, resourceVersion, creationTimestamp, generation,
      deletionTimestamp, managedFields) is never applied; name/namespace are identity and come
      from ``live`` when it exists. Callers check a resourceVersion precondition themselves.
    * ``status`` is applied like any field: for kinds whose status belongs to a subresource,
      drop it from ``config`` (kube's strategy resets it) before calling.
    """
    if not isinstance(config, dict):
        raise bad_request("error decoding YAML: the apply configuration must be an object")
    cfg_meta = config.get("metadata")
    if cfg_meta is not None and not isinstance(cfg_meta, dict):
        raise bad_request("error decoding YAML: metadata must be an object")
    expected_kind = live.get("kind") if isinstance(live, dict) else None
    if (
        config.get("apiVersion") != api_version
        or not config.get("kind")
        or (expected_kind and config.get("kind") != expected_kind)
    ):
        raise bad_request(f"invalid object type: {_gvk_string(config.get('apiVersion'), config.get('kind'))}")
    if isinstance(cfg_meta, dict) and cfg_meta.get("managedFields") is not None:
        raise bad_request("metadata.managedFields must be nil")

    sub = subresource or ""
    live_obj = copy.deepcopy(live) if isinstance(live, dict) else {}
    stored = (live_obj.get("metadata") or {}).get("managedFields") if live_obj else None
    _without_managed_fields(live_obj)
    managers = _decode_or_empty(stored, stored=True)
    if live is not None and not managers:
        # An object that never had managedFields: whatever it holds belongs to someone.
        added, modified, _ = compare_fields(_skeleton(live_obj), live_obj, list_type_at)
        held = _strip(added | modified)
        if held:
            bfa = _Entry(BEFORE_FIRST_APPLY_MANAGER, "Update", api_version, now, sub, held)
            managers[bfa.ident()] = bfa

    cfg = copy.deepcopy(config)
    cm = cfg.get("metadata")
    if isinstance(cm, dict):
        for name in _NOT_APPLIABLE_METADATA:
            cm.pop(name, None)
        if live is not None:
            for name in ("name", "namespace", "generateName"):
                cm.pop(name, None)
    _validate_config_lists(cfg, "", (), list_type_at)

    merged = _merge(live_obj, cfg, (), list_type_at)
    applied = _strip(fields_of(cfg, list_type_at))
    me = _Entry(manager, "Apply", api_version, None, sub, applied)
    previous = managers.get(me.ident())
    last_applied = previous.fields if previous else set()
    if previous:
        me.time = previous.time
    managers[me.ident()] = me

    if last_applied:
        owned = set().union(*(e.fields for e in managers.values()))
        kept = _with_field_ancestors(owned)
        _remove_paths(merged, {p for p in last_applied if p not in kept}, kept, list_type_at)

    added, modified, removed = compare_fields(live_obj, merged, list_type_at)
    changed = _strip(added | modified)
    gone = _strip(removed)
    conflicts = [
        (entry, path)
        for ident, entry in managers.items()
        if ident != me.ident()
        for path in _ordered(entry.fields & changed)
    ]
    if conflicts and not force:
        if manager == "kubectl":
            allowed = _allowed_by_last_applied(live_obj, api_version, list_type_at)
            conflicts = [c for c in conflicts if c[1] not in allowed]
        if conflicts:
            raise _conflict_error(conflicts)
    for ident, entry in managers.items():
        if ident != me.ident():
            entry.fields -= changed
            entry.fields -= gone

    if me.time is None or not json_equal(live_obj, merged):
        me.time = now
    if manager == "kubectl":
        _sync_last_applied(merged, config)
    return _store(merged, {k: e for k, e in managers.items() if e.fields})
