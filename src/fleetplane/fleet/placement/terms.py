"""Cluster terms: the selector every part of a placement policy uses to pick clusters (``required``,
``preferred``, weights, override and rollout stages), with the value checks their parsers share.
A term is a conjunction of ``labels`` (a label selector), ``properties`` (status.properties),
``clusters`` (names), ``clusterSet`` and ``location``; errors name the field path."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ...apimachinery.errors import StatusError
from ...apimachinery.labels import LabelSelector
from ...inventory.selection import PropertyRequirement, parse_property_selector

__all__ = ["TERM_KEYS", "ClusterTerm", "PolicyError"]


class PolicyError(ValueError):
    """A malformed policy; ``errors`` lists ``"field: what is wrong"``."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        super().__init__("; ".join(errors))

TERM_KEYS = ("labels", "properties", "clusters", "clusterSet", "location")


@dataclass(frozen=True)
class ClusterTerm:
    """A conjunction of requirements on a cluster (every given field must hold)."""

    labels: LabelSelector | None = None
    properties: tuple[PropertyRequirement, ...] = ()
    clusters: frozenset[str] | None = None
    clusterset: str | None = None
    location: str | None = None
    #: the term as written, for messages
    text: str = ""

    def mismatch(self, cluster: Any) -> str | None:
        """Why ``cluster`` (a :class:`~.fleet.ClusterInfo`) does not match, or None if it does."""
        if self.clusters is not None and cluster.name not in self.clusters:
            return f"not one of clusters [{', '.join(sorted(self.clusters))}]"
        if self.labels is not None and not self.labels.matches(cluster.labels):
            return f"labels do not match {self._part('labels')}"
        props = cluster.properties
        for r in self.properties:
            if not r.matches(props):
                return f"property requirement {_req_text(r)} does not hold ({r.name}={props.get(r.name, '<unset>')})"
        if self.clusterset is not None and cluster.clusterset != self.clusterset:
            return f"not in ClusterSet {self.clusterset} ({cluster.clusterset or 'none'})"
        if self.location is not None and self.location not in cluster.locations:
            return f"location is not {self.location} ({', '.join(cluster.locations) or 'none'})"
        return None

    def matches(self, cluster: Any) -> bool:
        """:meth:`mismatch` without the message (the fast path)."""
        if self.clusters is not None and cluster.name not in self.clusters:
            return False
        if self.labels is not None and not self.labels.matches(cluster.labels):
            return False
        if self.properties:
            props = cluster.properties
            for r in self.properties:
                if not r.matches(props):
                    return False
        if self.clusterset is not None and cluster.clusterset != self.clusterset:
            return False
        return self.location is None or self.location in cluster.locations

    def _part(self, key: str) -> str:
        return self.text if self.text else key


def _req_text(r: PropertyRequirement) -> str:
    if r.operator == "Exists":
        return r.name
    if r.operator == "DoesNotExist":
        return f"!{r.name}"
    if r.operator == "In" and len(r.values) == 1:
        return f"{r.name}={r.values[0]}"
    if r.operator == "NotIn" and len(r.values) == 1:
        return f"{r.name}!={r.values[0]}"
    if r.operator in ("Gt", "Lt"):
        return f"{r.name}{'>' if r.operator == 'Gt' else '<'}{r.values[0]}"
    return f"{r.name} {r.operator.lower()} ({','.join(r.values)})"


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    return {dict: "a mapping", list: "a list", str: f"the string {v!r}", bool: f"{v}", int: f"the number {v}",
            float: f"the number {v}"}.get(type(v), type(v).__name__)


def _int(v: Any, where: str, errors: list[str], lo: int | None = None, hi: int | None = None,
         required: bool = False) -> int | None:
    if v is None:
        if required:
            errors.append(f"{where}: required")
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        if isinstance(v, str) and v.strip().lstrip("-").isdigit():
            v = int(v)
        else:
            errors.append(f"{where}: must be an integer, not {_kind(v)}")
            return None
    if lo is not None and v < lo:
        errors.append(f"{where}: must be at least {lo}, not {v}")
        return None
    if hi is not None and v > hi:
        errors.append(f"{where}: must be at most {hi}, not {v}")
        return None
    return v


def _terms(v: Any, where: str, errors: list[str]) -> list[ClusterTerm]:
    if v is None:
        return []
    items = v if isinstance(v, list) else [v]
    out = []
    for i, item in enumerate(items):
        term = _term(item, f"{where}[{i}]" if isinstance(v, list) else where, errors)
        if term is not None:
            out.append(term)
    if isinstance(v, list) and not v:
        errors.append(f"{where}: an empty list of terms matches no cluster; leave it out to allow every cluster")
    return out


def _term(item: Any, where: str, errors: list[str], extra_ok: Iterable[str] = ()) -> ClusterTerm | None:
    if not isinstance(item, Mapping):
        errors.append(f"{where}: must be a mapping of {', '.join(TERM_KEYS)}, not {_kind(item)}")
        return None
    n = len(errors)
    for k in item:
        if k not in TERM_KEYS and k not in extra_ok:
            errors.append(f"{where}.{k}: unknown field (known: {', '.join(TERM_KEYS)})")
    labels = None
    text: list[str] = []
    if item.get("labels") is not None:
        sel = item["labels"]
        try:
            if isinstance(sel, str):
                labels = LabelSelector.parse(sel)
                text.append(f"labels {sel}")
            elif isinstance(sel, Mapping):
                for k in sel:
                    if k not in ("matchLabels", "matchExpressions"):
                        raise ValueError(f"unknown field {k!r} (a label selector has matchLabels, matchExpressions)")
                labels = LabelSelector.from_match(sel)
                text.append("labels " + ",".join(_req_label_text(r) for r in labels.requirements))
            else:
                raise ValueError(f"must be a selector string or a LabelSelector mapping, not {_kind(sel)}")
        except StatusError as exc:
            errors.append(f"{where}.labels: {exc.message}")
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            errors.append(f"{where}.labels: {exc}")
    props: tuple[PropertyRequirement, ...] = ()
    if item.get("properties") is not None:
        p = item["properties"]
        try:
            if isinstance(p, str):
                props = tuple(parse_property_selector(p))
            elif isinstance(p, Mapping):  # {name: value}
                props = tuple(PropertyRequirement.equals(str(k), str(v)) for k, v in p.items())
            elif isinstance(p, list):  # [{name, operator, values}]
                props = tuple(PropertyRequirement(str(r["name"]), r.get("operator", "Exists"),
                                                  tuple(str(x) for x in r.get("values") or ())) for r in p)
            else:
                raise ValueError(f"must be a selector string, a name -> value mapping or a list, not {_kind(p)}")
            if props:
                text.append("properties " + ",".join(_req_text(r) for r in props))
        except (ValueError, KeyError, TypeError) as exc:
            errors.append(f"{where}.properties: {exc}")
    clusters = None
    if item.get("clusters") is not None:
        c = item["clusters"]
        if isinstance(c, str):
            c = [x.strip() for x in c.split(",") if x.strip()]
        if not isinstance(c, list) or not all(isinstance(x, str) and x for x in c):
            errors.append(f"{where}.clusters: must be a list of cluster names")
        else:
            clusters = frozenset(c)
            text.append(f"clusters {','.join(c)}")
    cs = item.get("clusterSet")
    if cs is not None and (not isinstance(cs, str) or not cs):
        errors.append(f"{where}.clusterSet: must be a ClusterSet name")
        cs = None
    elif cs:
        text.append(f"clusterSet {cs}")
    loc = item.get("location")
    if loc is not None and (not isinstance(loc, str) or not loc):
        errors.append(f"{where}.location: must be a location name")
        loc = None
    elif loc:
        text.append(f"location {loc}")
    if len(errors) > n:
        return None
    return ClusterTerm(labels=labels, properties=props, clusters=clusters, clusterset=cs, location=loc,
                       text="; ".join(text))


def _req_label_text(r: Any) -> str:
    if r.op in ("=", "==") and len(r.values) == 1:
        return f"{r.key}={r.values[0]}"
    if r.op == "!=":
        return f"{r.key}!={r.values[0]}"
    if r.op == "exists":
        return r.key
    if r.op == "!exists":
        return f"!{r.key}"
    return f"{r.key} {r.op} ({','.join(r.values)})"
