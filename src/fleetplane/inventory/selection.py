"""Choose clusters from an inventory: by labels, by properties, by ClusterSet, by installed CRDs.

KEP-4322's scheduler stories, and how to express them here:

- "an EKS cluster in us-east-1":      ``select(profiles, location="us-east-1", properties="platform=eks")``
  (``location`` matches the ``location`` property of the KEP's examples or the
  ``topology.kubernetes.io/region`` / ``zone`` properties the SIG's site documents);
- "a cluster that has certain CRDs installed": ``select(profiles, crds=["widgets.example.com"])``
  (the KEP names no property for this; fleetplane's convention is one property per CRD,
  ``crd.fleetplane.io/<crd name>`` = comma-separated served versions; ``"name@v1"`` asks for a version);
- "my on-prem clusters": a label or property, e.g. ``labels="env=on-prem"``;
- clusters of one ClusterSet: ``clusterset="prod"`` (the namespace's clusterset label, the
  profile's own, or the ``clusterset.k8s.io`` property; see :meth:`ClusterProfile.clusterset`);
- healthy ones only: ``ready=True`` (ControlPlaneHealthy is True).

Property selectors use label-selector syntax over ``status.properties`` (names and values are
free-form strings, so nothing is validated as a label), plus ``>`` and ``<`` for numbers:
``"location in (us-east-1,us-west-2),clusterset.k8s.io=prod,!maintenance,nodes>3"``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..apimachinery.errors import StatusError
from ..apimachinery.labels import LabelSelector
from .constants import PROPERTY_LOCATION, PROPERTY_REGION, PROPERTY_ZONE
from .model import ClusterProfile

__all__ = ["ProfileSelector", "PropertyRequirement", "parse_property_selector", "select"]

P = TypeVar("P", ClusterProfile, Mapping[str, Any])

_OPS = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"}


def _number(s: str | None) -> float | None:
    try:
        return float(s) if s is not None else None
    except ValueError:
        return None


@dataclass(frozen=True)
class PropertyRequirement:
    """One requirement on ``status.properties``, with metav1.LabelSelectorRequirement operators
    (In, NotIn, Exists, DoesNotExist) plus Gt and Lt on numeric values."""

    name: str
    operator: str = "Exists"
    values: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.operator not in _OPS:
            raise ValueError(f"unknown operator {self.operator!r}; expected one of {sorted(_OPS)}")
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"operator {self.operator} needs at least one value")
        if self.operator in ("Gt", "Lt") and (len(self.values) != 1 or _number(self.values[0]) is None):
            raise ValueError(f"operator {self.operator} needs exactly one numeric value")

    def matches(self, properties: Mapping[str, str]) -> bool:
        present = self.name in properties
        value = properties.get(self.name)
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        if self.operator == "In":
            return present and value in self.values
        if self.operator == "NotIn":
            return not present or value not in self.values
        n, bound = _number(value), float(self.values[0])
        if n is None:
            return False
        return n > bound if self.operator == "Gt" else n < bound

    @classmethod
    def equals(cls, name: str, value: str) -> PropertyRequirement:
        return cls(name, "In", (value,))


_TOKEN = re.compile(r"\s*(!=|==|=|>|<|\(|\)|,|!|[^\s=!(),<>]+)")


def parse_property_selector(text: str) -> list[PropertyRequirement]:
    """Parse ``"a=b,c in (d,e),!f,g,h!=i,n>3"`` into requirements (ValueError on bad syntax)."""
    tokens = [m.group(1) for m in _TOKEN.finditer(text or "")]
    reqs: list[PropertyRequirement] = []
    i = 0

    def take() -> str | None:
        nonlocal i
        tok = tokens[i] if i < len(tokens) else None
        i += 1
        return tok

    def peek() -> str | None:
        return tokens[i] if i < len(tokens) else None

    def ident(tok: str | None) -> str:
        if tok is None or tok in ("=", "==", "!=", ">", "<", "(", ")", ",", "!"):
            raise ValueError(f"property selector {text!r}: expected a name or value, found {tok or 'end'!r}")
        return tok

    if not tokens:
        return reqs
    while True:
        tok = take()
        if tok == "!":
            reqs.append(PropertyRequirement(ident(take()), "DoesNotExist"))
        else:
            name = ident(tok)
            op = peek()
            if op in (None, ","):
                reqs.append(PropertyRequirement(name, "Exists"))
            else:
                take()
                if op in ("=", "=="):
                    reqs.append(PropertyRequirement(name, "In", (ident(take()),)))
                elif op == "!=":
                    reqs.append(PropertyRequirement(name, "NotIn", (ident(take()),)))
                elif op in (">", "<"):
                    reqs.append(PropertyRequirement(name, "Gt" if op == ">" else "Lt", (ident(take()),)))
                elif op in ("in", "notin"):
                    if take() != "(":
                        raise ValueError(f"property selector {text!r}: expected '(' after {op}")
                    values: list[str] = []
                    while True:
                        v = take()
                        if v == ")":
                            break
                        if v == ",":
                            continue
                        values.append(ident(v))
                    reqs.append(PropertyRequirement(name, "In" if op == "in" else "NotIn", tuple(values)))
                else:
                    raise ValueError(f"property selector {text!r}: expected =, ==, !=, in, notin, > or <, found {op!r}")
        sep = take()
        if sep is None:
            return reqs
        if sep != ",":
            raise ValueError(f"property selector {text!r}: expected ',' or end, found {sep!r}")


def _label_selector(sel: str | Mapping[str, Any] | LabelSelector | None) -> LabelSelector | None:
    if sel is None or isinstance(sel, LabelSelector):
        return sel
    try:
        if isinstance(sel, str):
            return LabelSelector.parse(sel)
        return LabelSelector.from_match(sel)
    except StatusError as exc:
        raise ValueError(f"label selector {sel!r}: {exc.message}") from None
    except (KeyError, TypeError) as exc:
        raise ValueError(f"label selector {sel!r}: {exc}") from None


def _crd_requirement(spec: str) -> tuple[str, str | None]:
    name, _, version = spec.partition("@")
    return name, version or None


NamespaceLabels = Mapping[str, Mapping[str, str]] | Callable[[str], Mapping[str, str]]


@dataclass
class ProfileSelector:
    """A reusable selection; every given criterion must hold (AND)."""

    #: label selector: string syntax, a metav1.LabelSelector dict, or a parsed LabelSelector
    labels: str | Mapping[str, Any] | LabelSelector | None = None
    #: property selector: string syntax or requirements
    properties: str | Sequence[PropertyRequirement] | None = None
    clusterset: str | None = None
    #: CRD names (``widgets.example.com``), optionally with a version (``widgets.example.com@v1``)
    crds: Sequence[str] = ()
    #: matches the location, region or zone property
    location: str | None = None
    managers: Sequence[str] = ()
    #: True: only ControlPlaneHealthy=True; False: only not ready; None: either
    ready: bool | None = None
    _labels: LabelSelector | None = field(default=None, init=False, repr=False)
    _props: list[PropertyRequirement] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        self._labels = _label_selector(self.labels)
        if isinstance(self.properties, str):
            self._props = parse_property_selector(self.properties)
        else:
            self._props = list(self.properties or ())

    def matches(self, profile: ClusterProfile | Mapping[str, Any],
                namespace_labels: Mapping[str, str] | None = None) -> bool:
        cp = profile if isinstance(profile, ClusterProfile) else ClusterProfile.from_dict(profile)
        if self._labels is not None and not self._labels.matches((cp.metadata or {}).get("labels") or {}):
            return False
        props = cp.properties
        if not all(r.matches(props) for r in self._props):
            return False
        if self.managers and cp.manager not in self.managers:
            return False
        if self.ready is not None and cp.is_ready() != self.ready:
            return False
        if self.location is not None and self.location not in (
                props.get(PROPERTY_LOCATION), props.get(PROPERTY_REGION), props.get(PROPERTY_ZONE)):
            return False
        for spec in self.crds:
            name, version = _crd_requirement(spec)
            if not cp.has_crd(name, version):
                return False
        if self.clusterset is not None and cp.clusterset(namespace_labels) != self.clusterset:
            return False
        return True

    def select(self, profiles: Iterable[P], namespace_labels: NamespaceLabels | None = None) -> list[P]:
        out = []
        for p in profiles:
            ns_labels: Mapping[str, str] | None = None
            if namespace_labels is not None:
                meta = (p.metadata if isinstance(p, ClusterProfile) else p.get("metadata")) or {}
                ns = meta.get("namespace") or ""
                ns_labels = namespace_labels(ns) if callable(namespace_labels) else namespace_labels.get(ns)
            if self.matches(p, ns_labels):
                out.append(p)
        return out


def select(profiles: Iterable[P], *, labels: str | Mapping[str, Any] | LabelSelector | None = None,
           properties: str | Sequence[PropertyRequirement] | None = None, clusterset: str | None = None,
           crds: Sequence[str] = (), location: str | None = None, managers: Sequence[str] = (),
           ready: bool | None = None, namespace_labels: NamespaceLabels | None = None) -> list[P]:
    """The profiles (dicts or :class:`ClusterProfile`, returned as given) matching every criterion.

    ``namespace_labels`` (namespace -> labels, or a function) lets ``clusterset`` use the KEP's
    namespace rule; without it only the profile's own label and property are consulted.
    """
    return ProfileSelector(labels=labels, properties=properties, clusterset=clusterset, crds=crds, location=location,
                           managers=managers, ready=ready).select(profiles, namespace_labels)
