"""The direct walk that computes a create's managedFields (``apply.created_fieldsv1``) gives the
very fieldsV1 the set-based code gives (``compare_fields`` against the skeleton, ``_strip``,
``to_fieldsv1``), byte for byte, over many random object shapes: nested maps, set / map / atomic
lists (elements lacking their keys, duplicates, non-scalars in sets), scalars of every JSON type,
empty values, nulls, unicode and odd keys, server metadata. The reference below is the set-based
code as it was before the walk (its own sort, not the fast one ``_sorted_elements`` now has)."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from fleetplane.apis import apps
from fleetplane.registry import apply as ssa
from fleetplane.registry.apply import (
    Path,
    _pe_sort_key,
    _skeleton,
    _sorted_elements,
    _strip,
    _tree,
    compare_fields,
    created_fieldsv1,
    metadata_list_type_at,
    to_fieldsv1,
    update_managed_fields,
)

NOW = "2026-12-02T08:00:00Z"


# -- the reference: the set-based code ---------------------------------------------------------


def reference_to_fieldsv1(paths: set[Path]) -> dict[str, Any]:
    def emit(node: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if node.member and node.children:
            out["."] = {}
        for pe in sorted(node.children, key=_pe_sort_key):
            out[pe] = emit(node.children[pe])
        return out

    return emit(_tree(paths))


def reference_created(obj: dict[str, Any], lt: ssa.ListTypeAt) -> dict[str, Any]:
    added, modified, _ = compare_fields(_skeleton(obj), obj, lt)
    return reference_to_fieldsv1(_strip(added | modified))


def reference_update_managed_fields(obj: dict[str, Any], lt: ssa.ListTypeAt) -> dict[str, Any]:
    """update_managed_fields(None, obj) as the set-based path computes it."""
    result = dict(obj)
    meta = result["metadata"] = dict(result["metadata"])
    meta.pop("managedFields", None)
    fields = reference_created(result, lt)
    if fields:
        meta["managedFields"] = [{"manager": "m", "operation": "Update", "apiVersion": "v1", "time": NOW,
                                  "fieldsType": "FieldsV1", "fieldsV1": fields}]
    return result


def same(a: Any, b: Any) -> bool:
    """Equal and in the same key order (what is stored and served)."""
    return bool(orjson.dumps(a) == orjson.dumps(b))


# -- random shapes ---------------------------------------------------------------------------

KEYS = ["a", "b", "name", "port", "protocol", "value", "x.y", "f:z", "k:v", "ünï", "日本", "with space", '"q"', "", ".", "Z", "a1"]
LIST_TYPES = [("atomic", []), ("set", []), ("map", ["name"]), ("map", ["name", "protocol"]), ("map", ["port"]),
              ("map", ["port", "protocol"])]


def list_type_at_for(seed: int) -> ssa.ListTypeAt:
    """A deterministic random list type per field path (as a schema would give)."""

    def lt(path: tuple[str, ...]) -> tuple[str, list[str]]:
        return LIST_TYPES[random.Random(f"{seed}:{'/'.join(path)}").randrange(len(LIST_TYPES))]

    return lt


def scalar(r: random.Random) -> Any:
    return r.choice([None, True, False, 0, 1, -7, 80, 80.0, 1.5, 2**40, "", "x", "ünï", "日本", '"q"', "a\\b", "80", "TCP", "UDP"])


def value(r: random.Random, depth: int) -> Any:
    roll = r.random()
    if depth <= 0 or roll < 0.35:
        return scalar(r)
    if roll < 0.6:
        return {r.choice(KEYS): value(r, depth - 1) for _ in range(r.randrange(0, 5))}
    if roll < 0.7:
        return [scalar(r) for _ in range(r.randrange(0, 4))]
    if roll < 0.75:
        return r.choice([{}, [], [{}], [[]], [[1, 2]], [{"name": None}]])
    return [element(r, depth - 1) for _ in range(r.randrange(0, 5))]


def element(r: random.Random, depth: int) -> Any:
    """A map-list element: usually with its keys, sometimes without, sometimes a duplicate's."""
    if r.random() < 0.1:
        return scalar(r)
    item: dict[str, Any] = {}
    for k in ("name", "port", "protocol"):
        if r.random() < 0.7:
            item[k] = r.choice(["web", "db", "ünï", 80, 443, 80.0, "TCP", "UDP", None]) if k != "port" else r.choice([80, 443, 80.0, 8080])
    for _ in range(r.randrange(0, 3)):
        item[r.choice(KEYS)] = value(r, depth - 1)
    return item


def random_object(r: random.Random) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for k in ("name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "generateName",
              "deletionTimestamp", "selfLink", "clusterName"):
        if r.random() < 0.3:
            meta[k] = scalar(r)
    for k in ("labels", "annotations"):
        if r.random() < 0.6:
            meta[k] = {r.choice(KEYS): r.choice(["", "v", "ünï"]) for _ in range(r.randrange(0, 4))}
    if r.random() < 0.3:
        meta["finalizers"] = [r.choice(["a", "b", "c", "a"]) for _ in range(r.randrange(0, 4))]
    if r.random() < 0.3:
        meta["ownerReferences"] = [{"uid": r.choice(["1", "2", "1"]), "name": "o", "kind": "K", "apiVersion": "v1"}
                                   for _ in range(r.randrange(0, 3))]
    if r.random() < 0.1:
        meta["managedFields"] = [{"manager": "old"}]
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Thing", "metadata": meta}
    for k in ("spec", "status", "data", "items", "ünï", "x.y"):
        if r.random() < 0.5:
            obj[k] = value(r, 4) if r.random() < 0.8 else r.choice([{}, [], None, "s", {"a": {}}])
    return obj


SEEDS = range(3000)


@pytest.mark.parametrize("chunk", range(6))
def test_created_fieldsv1_is_the_set_based_result(chunk: int) -> None:
    for seed in SEEDS[chunk::6]:
        r = random.Random(seed)
        obj = random_object(r)
        lt = list_type_at_for(seed) if seed % 4 else metadata_list_type_at
        want = reference_created(obj, lt)
        got = created_fieldsv1(obj, lt)
        assert same(got, want), (seed, obj, got, want)


def test_update_managed_fields_on_create_is_the_set_based_result() -> None:
    for seed in range(1500):
        r = random.Random(seed)
        obj = random_object(r)
        lt = list_type_at_for(seed)
        before = orjson.dumps(obj)
        got = update_managed_fields(None, obj, manager="m", api_version="v1", now=NOW, list_type_at=lt)
        assert orjson.dumps(obj) == before  # the input is not changed
        assert same(got, reference_update_managed_fields(obj, lt)), seed


def test_a_real_kind_schema() -> None:
    """A Deployment with the list types of the built-in kind (containers by name, ports by
    containerPort and protocol, env by name, atomic args)."""
    rt = next(t for t in apps.resource_types() if t.kind == "Deployment")
    obj = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "web", "namespace": "demo", "labels": {"app": "web"}, "finalizers": ["x", "y"],
                        "annotations": {"a": "b"}, "uid": "u"},
           "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                    "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                                 "spec": {"containers": [{"name": "web", "image": "nginx", "args": ["a", "b"],
                                                          "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 53}],
                                                          "env": [{"name": "A", "value": "1"}, {"name": "B"}],
                                                          "resources": {}}],
                                          "volumes": [{"name": "v", "emptyDir": {}}], "dnsPolicy": "ClusterFirst"}}},
           "status": {}}
    got = created_fieldsv1(obj, rt.list_type_at)
    assert same(got, reference_created(obj, rt.list_type_at))
    containers = got["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert list(containers) == [".", 'k:{"name":"web"}']
    assert list(containers['k:{"name":"web"}']["f:ports"]) == [".", 'k:{"containerPort":53,"protocol":"TCP"}',
                                                                'k:{"containerPort":80,"protocol":"TCP"}']
    assert "f:status" not in got and "f:uid" not in got["f:metadata"]


def test_sorted_elements_keeps_the_path_element_order() -> None:
    r = random.Random(7)
    for _ in range(500):
        names = [r.choice(["f:", "k:", "v:", "i:", ""]) + r.choice(KEYS + ['{"name":"a"}', '"x"', "1", "10", "2"])
                 for _ in range(r.randrange(0, 12))]
        assert _sorted_elements(names) == sorted(names, key=_pe_sort_key)


def test_to_fieldsv1_is_the_reference() -> None:
    for seed in range(1000):
        r = random.Random(seed)
        obj = random_object(r)
        lt = list_type_at_for(seed)
        paths = ssa.fields_of(obj, lt)
        assert same(to_fieldsv1(paths), reference_to_fieldsv1(paths)), seed


def test_key_elements_are_json_dumps() -> None:
    """A map-list key (the fast encoding of str and int values) is what json.dumps writes."""
    import json

    r = random.Random(3)
    for _ in range(3000):
        kv = {r.choice(KEYS): r.choice([scalar(r), r.randrange(-2**70, 2**70), "\u2028\x00\x1f\x7f<>&/\\", "😀"])
              for _ in range(r.randrange(0, 4))}
        want = json.dumps(ssa._canon(kv), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert ssa._compact(kv) == want, kv
