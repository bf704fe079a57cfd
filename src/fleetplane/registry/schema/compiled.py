"""StructuralSchema: a CRD version's schema, compiled once and applied to every request.

The class is assembled from the per-pass mixins (pruning, defaulting, schema validation, CEL
rules); this module adds construction, introspection and :meth:`StructuralSchema.validate`,
which combines schema validation and CEL rules the way kube's CR strategy does.
"""

from __future__ import annotations

import hashlib
import weakref
from typing import Any

import orjson

from fleetplane.apimachinery.errors import FieldError

from ...apimachinery.goregex import _go_regex, _RegexError
from .defaults import _DefaultMixin
from .prune import _PruneMixin
from .rules import _RulesMixin
from .tree import _Node, _root_node
from .validate import _ValidateMixin

# Error types that make kube skip CEL rules (registry/customresource/strategy.go hasBlockingErr).
_BLOCKING = frozenset(
    (
        "FieldValueNotSupported",
        "FieldValueRequired",
        "FieldValueTooLong",
        "FieldValueTooMany",
        "FieldValueTypeInvalid",
    )
)
_BLOCKED_CEL_MESSAGE = (
    "some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)


class StructuralSchema(_PruneMixin, _DefaultMixin, _ValidateMixin, _RulesMixin):
    """A CRD version's ``openAPIV3Schema``, compiled once and applied to every request."""

    def __init__(self, openapi_v3_schema: dict[str, Any] | None) -> None:
        self.raw = openapi_v3_schema if isinstance(openapi_v3_schema, dict) else {}
        self._root = _root_node(self.raw)
        self._node_cache: dict[tuple[str, ...], _Node | None] = {}

    # -- introspection ---------------------------------------------------------------------

    @property
    def has_defaults(self) -> bool:
        return self._root.sub_defaults

    @property
    def has_rules(self) -> bool:
        return self._root.sub_rules

    def precompile(self) -> None:
        """Compile every CEL rule and regular expression now instead of on first use."""
        stack = [self._root]
        while stack:
            n = stack.pop()
            for r in n.rules:
                _ = r.program, r.message_program
            if n.pattern is not None:
                try:
                    _go_regex(n.pattern)
                except _RegexError:
                    pass
            stack.extend(n.props.values())
            stack.extend(c for c in (n.items, n.additional, n.not_) if c is not None)
            stack.extend(n.all_of + n.any_of + n.one_of)

    def _node_at(self, path: tuple[str, ...]) -> _Node | None:
        try:
            return self._node_cache[path]
        except KeyError:
            pass
        n: _Node | None = self._root
        for name in path:
            while n is not None and n.type == "array" and n.items is not None:
                n = n.items
            if n is None:
                break
            p = n.props.get(name)
            n = p if p is not None else n.additional
        self._node_cache[path] = n
        return n

    def list_type_at(self, path: tuple[str, ...]) -> tuple[str, list[str]]:
        """``(list-type, map keys)`` of the list field at ``path`` (list items are transparent)."""
        n = self._node_at(tuple(path))
        if n is None or n.type != "array":
            return ("atomic", [])
        lt = n.list_type if n.list_type in ("set", "map") else "atomic"
        return (lt, list(n.list_map_keys) if lt == "map" else [])

    def map_type_at(self, path: tuple[str, ...]) -> str:
        """``granular`` (the default) or ``atomic`` for the object field at ``path``."""
        n = self._node_at(tuple(path))
        return "atomic" if n is not None and n.map_type == "atomic" else "granular"

    def field_schema_at(self, path: tuple[str, ...]) -> dict[str, Any] | None:
        """The raw schema of the field at ``path`` (list items transparent), if declared."""
        n = self._node_at(tuple(path))
        return n.raw if n is not None else None

    # -- validation --------------------------------------------------------------------------

    def validate(
        self,
        obj: Any,
        old: Any = None,
        *,
        ratcheting: bool = True,
        prior_errors: list[FieldError] | None = None,
    ) -> list[FieldError]:
        """Validate a (pruned and defaulted) custom resource, as kube's CR strategy does.

        Runs the OpenAPI value validations, the embedded-resource checks, the
        ``x-kubernetes-list-type`` uniqueness checks and then the ``x-kubernetes-validations``
        CEL rules (skipped, as in kube, when an earlier error leaves the object malformed;
        ``prior_errors``, e.g. metadata errors found by the caller, count for that too).

        With ``old`` (an update) transition rules using ``oldSelf`` run, and with ``ratcheting``
        (kube's CRDValidationRatcheting, on by default since 1.30) errors in parts of the object
        that did not change are not reported.
        """
        errs = self.validate_schema(obj, old, ratcheting=ratcheting)
        if self._root.sub_rules:
            blocking = any(e.type in _BLOCKING for e in errs) or any(
                e.type in _BLOCKING for e in prior_errors or ()
            )
            if blocking:
                errs.append(FieldError("FieldValueInvalid", "<nil>", _BLOCKED_CEL_MESSAGE, "null", True))
            else:
                errs.extend(self.validate_rules(obj, old, ratcheting=ratcheting))
        return errs


#: every compiled schema in use, by its content's digest (see :func:`shared_schema`)
_SHARED: weakref.WeakValueDictionary[bytes, StructuralSchema] = weakref.WeakValueDictionary()


def shared_schema(openapi_v3_schema: dict[str, Any]) -> StructuralSchema:
    """The compiled schema of this content, one per process while any type uses it: a CRD whose
    schema did not change (a label or annotation written: each Syncer marks the CRDs it imported
    with its cluster) is not compiled again, and the types of its older versions that watches
    still hold do not keep copies of the same tree (a few MiB for an imported Deployment)."""
    key = hashlib.sha256(orjson.dumps(openapi_v3_schema, option=orjson.OPT_SORT_KEYS)).digest()
    schema = _SHARED.get(key)
    if schema is None:
        schema = _SHARED[key] = StructuralSchema(openapi_v3_schema)
    return schema

