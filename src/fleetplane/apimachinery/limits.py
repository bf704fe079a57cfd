"""The limits every decoded request body is held to, in one place.

kube-apiserver reads at most 3 MiB of a body (``MaxRequestBodyBytes``) and Go's decoders refuse
JSON and YAML nested deeper than 10,000 levels. Python cannot go that deep: orjson encodes at
most 254 levels and the registry's recursive helpers (copies, patches, pruning, managedFields)
use the interpreter's stack, so the hub's depth limit is :data:`MAX_DEPTH`, low enough that
every stage (and the wrappers a watch event, a list or managedFields add around an object)
stays well inside both.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DEPTH_MESSAGE", "MAX_BODY_BYTES", "MAX_DEPTH", "MAX_OBJECT_BYTES", "exceeds_depth", "too_large_message"]

#: kube-apiserver's ``MaxRequestBodyBytes`` (and ``JSONPatchMaxCopyBytes``)
MAX_BODY_BYTES = 3 * 1024 * 1024
#: what a decoded body (YAML aliases expanded, protobuf rendered as JSON) may encode to
MAX_OBJECT_BYTES = MAX_BODY_BYTES
#: the deepest nesting of arrays and objects a body may have (kube: 10,000)
MAX_DEPTH = 200
#: how a body past it is refused (the words of apimachinery's util/json and go-yaml)
DEPTH_MESSAGE = f"exceeded max depth of {MAX_DEPTH}"


def too_large_message(limit: int = MAX_BODY_BYTES) -> str:
    """kube's wording of a body over the limit (``NewRequestEntityTooLargeError``)."""
    return f"Request entity too large: limit is {limit}"


def exceeds_depth(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests arrays and objects more than ``limit`` deep (the top-level
    object is depth 1). Iterative, so it cannot itself run out of stack; shared subtrees (as
    YAML aliases give) are measured once."""
    if not isinstance(value, (dict, list)):
        return False
    seen: dict[int, int] = {}
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        if seen.get(id(node), 0) >= depth:
            continue
        seen[id(node)] = depth
        children = node.values() if isinstance(node, dict) else node
        for child in children:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return False
