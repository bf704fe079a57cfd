"""CustomResourceDefinition structural schemas: pruning, defaulting, validation and CEL rules.

This is the pure-Python counterpart of kube-apiextensions-apiserver's ``pkg/apiserver/schema``
packages (``pruning``, ``defaulting``, ``listtype``, ``objectmeta``, ``cel``) together with the
kube-openapi validator that kube runs over custom resources, and the CRD-time checks of
``apis/apiextensions/validation``. Messages and field paths follow kube's wording because
clients and people match on them.

A :class:`StructuralSchema` is built once per CRD version and reused for every request. The
request pipeline is the one kube runs when it decodes a custom resource::

    unknown = schema.prune(obj)      # drop unknown fields (and non-nullable nulls), report paths
    schema.default(obj)              # apply ``default:`` under present parents
    errors = schema.validate(obj, old)

No I/O. Regular expressions and CEL programs are compiled lazily and cached.

Modules, each importing only from the ones listed before it (and from
:mod:`fleetplane.apimachinery`: Go-style printing, JSON values, quantities, name rules, Go
regular expressions (``goregex``), OpenAPI string formats (``formats``) and the Kubernetes CEL
compiler and function library (``cel``), which the admission policies and fleet controllers use too):

- ``fieldpath``: field paths and field errors.
- ``tree``: the compiled schema tree the request passes walk.
- ``listtype``, ``prune``, ``defaults``, ``validate``, ``rules``: the request passes
  (list-type helpers, pruning, defaulting, schema validation, CEL rule evaluation).
- ``compiled``: :class:`StructuralSchema`, assembled from the passes.
- ``structural``, ``crdcheck``: the CRD-time checks behind :func:`validate_structural`.
"""

from __future__ import annotations

from ...apimachinery.cel import escape_cel_property
from .compiled import StructuralSchema
from .crdcheck import validate_structural

__all__ = ["StructuralSchema", "validate_structural", "escape_cel_property"]
