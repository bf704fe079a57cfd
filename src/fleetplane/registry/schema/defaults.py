"""Defaulting: applying ``default:`` values under present parents (kube's defaulting package)."""

from __future__ import annotations

from typing import Any

from ...apimachinery.jsonvalue import MISSING, copy_json
from .tree import _Node


class _DefaultMixin:
    """The defaulting methods of :class:`~.compiled.StructuralSchema`."""

    _root: _Node

    def default(self, obj: dict[str, Any]) -> None:
        """Apply ``default:`` values in place, only where the parent exists (kube's Default)."""
        if self._root.sub_defaults:
            self._default(obj, self._root)

    def _default(self, x: Any, n: _Node) -> None:
        tx = type(x)
        if tx is dict:
            for k, dp in n.default_props:
                v = x.get(k, MISSING)
                if v is MISSING or (v is None and not dp.nullable):
                    x[k] = copy_json(dp.default)
            props = n.props
            additional = n.additional
            for k, v in list(x.items()):
                p = props.get(k)
                if p is not None:
                    if p.sub_defaults and v is not None:
                        self._default(v, p)
                elif additional is not None:
                    if v is None and not additional.nullable and additional.has_default:
                        x[k] = v = copy_json(additional.default)
                    if additional.sub_defaults and v is not None:
                        self._default(v, additional)
        elif tx is list:
            items = n.items
            if items is None:
                return
            for i, v in enumerate(x):
                if v is None and not items.nullable and items.has_default:
                    x[i] = v = copy_json(items.default)
                if items.sub_defaults and v is not None:
                    self._default(v, items)
