"""A typed ClusterProfile (``multicluster.x-k8s.io/v1alpha1``) that round-trips its wire form exactly.

Every class is a plain dataclass over one JSON object of the API:

- JSON names are kept, dashed ones included (``certificate-authority-data`` is the attribute
  ``certificate_authority_data``);
- an attribute that is ``None`` is *absent* on the wire: :meth:`to_dict` never writes ``null``
  (a ``null`` read from the wire, as Go writes for nil ``conditions``, reads as absent);
- keys the model does not know are kept in ``extra`` and written back, as are the original key
  order and every value as it was given (nothing is coerced), so
  ``ClusterProfile.from_dict(d).to_dict() == d`` for any object without ``null`` values, and
  ``json.dumps`` of both is byte-identical;
- ``metadata`` stays a plain dict (ObjectMeta is the API machinery's, not this API's).

Condition helpers follow apimachinery's ``meta.SetStatusCondition``: ``lastTransitionTime`` moves
only when ``status`` changes. Clocks are injectable (``now=``) everywhere a time is taken.
"""

from __future__ import annotations

import base64
import binascii
import copy
import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar, TypeVar, dataclass_transform

from ..apimachinery import metatime
from .constants import (
    API_VERSION,
    CLUSTERSET_LABELS,
    CONDITION_CONTROL_PLANE_HEALTHY,
    CONDITION_JOINED,
    KIND,
    LABEL_CLUSTER_MANAGER,
    PROPERTY_CLUSTER_ID,
    PROPERTY_CLUSTER_ID_LEGACY,
    PROPERTY_CLUSTERSET,
    PROPERTY_CRD_PREFIX,
    PROPERTY_LOCATION,
    PROPERTY_REGION,
)

__all__ = [
    "AccessProvider",
    "Cluster",
    "ClusterManager",
    "ClusterProfile",
    "ClusterProfileSpec",
    "ClusterProfileStatus",
    "ClusterVersion",
    "Condition",
    "NamedExtension",
    "ProfileFormatError",
    "Property",
    "find_condition",
    "format_time",
    "is_condition_true",
    "remove_condition",
    "set_condition",
    "utcnow",
]

T = TypeVar("T", bound="_Wire")
Clock = Callable[[], datetime]


class ProfileFormatError(ValueError):
    """The input does not have the shape of a ClusterProfile (e.g. ``status`` is a list)."""


def utcnow() -> datetime:
    return datetime.now(UTC)


def format_time(t: datetime | str) -> str:
    """metav1.Time on the wire: RFC 3339 in UTC, whole seconds (``2023-05-08T07:56:55Z``)."""
    return t if isinstance(t, str) else metatime.format_time(t)


def _wire(key: str, kind: type[_Wire] | None = None, many: bool = False) -> Any:
    """A dataclass field that maps to JSON key ``key`` (a nested model type, or a list of them)."""
    return field(default=None, metadata={"key": key, "kind": kind, "many": many})


class _Wire:
    """from_dict/to_dict for the dataclasses below: exact round trips, unknown keys kept."""

    _SPECS: ClassVar[tuple[tuple[str, str, type[_Wire] | None, bool], ...]]  # (attr, key, kind, many)
    extra: dict[str, Any]
    _order: tuple[str, ...]

    @classmethod
    def _specs(cls) -> tuple[tuple[str, str, type[_Wire] | None, bool], ...]:
        specs = cls.__dict__.get("_SPECS_CACHE")
        if specs is None:
            specs = tuple(
                (f.name, f.metadata["key"], f.metadata["kind"], f.metadata["many"])
                for f in dataclasses.fields(cls)  # type: ignore[arg-type]
                if "key" in f.metadata
            )
            cls._SPECS_CACHE = specs  # type: ignore[attr-defined]
        return specs

    @classmethod
    def from_dict(cls: type[T], data: Mapping[str, Any], path: str = "") -> T:
        if not isinstance(data, Mapping):
            raise ProfileFormatError(f"{path or cls.__name__}: expected an object, got {type(data).__name__}")
        by_key = {key: (attr, kind, many) for attr, key, kind, many in cls._specs()}
        kwargs: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in data.items():
            spec = by_key.get(key)
            if spec is None:
                extra[key] = copy.deepcopy(value)
                continue
            if value is None:  # null reads as absent
                continue
            attr, kind, many = spec
            sub = f"{path}.{key}" if path else key
            if kind is None:
                kwargs[attr] = copy.deepcopy(value)
            elif many:
                if not isinstance(value, list):
                    raise ProfileFormatError(f"{sub}: expected a list, got {type(value).__name__}")
                kwargs[attr] = [kind.from_dict(item, f"{sub}[{i}]") for i, item in enumerate(value)]
            else:
                kwargs[attr] = kind.from_dict(value, sub)
        obj = cls(**kwargs, extra=extra)  # type: ignore[call-arg]
        obj._order = tuple(data.keys())
        return obj

    def to_dict(self) -> dict[str, Any]:
        """The wire form: set fields and unknown keys, in the order they were read."""
        values: dict[str, Any] = {}
        for attr, key, kind, many in self._specs():
            value = getattr(self, attr)
            if value is None:
                continue
            if kind is None:
                values[key] = copy.deepcopy(value)
            elif many:
                values[key] = [item.to_dict() for item in value]
            else:
                values[key] = value.to_dict()
        out: dict[str, Any] = {}
        for key in getattr(self, "_order", ()):
            if key in values:
                out[key] = values.pop(key)
            elif key in self.extra:
                out[key] = copy.deepcopy(self.extra[key])
        out.update(values)
        for key, value in self.extra.items():
            if key not in out:
                out[key] = copy.deepcopy(value)
        return out

    def copy(self: T) -> T:
        return type(self).from_dict(self.to_dict())


@dataclass_transform(field_specifiers=(field,))
def _model(cls: type[T]) -> type[T]:
    """Make ``cls`` a dataclass with the ``extra`` and ``_order`` bookkeeping fields."""
    cls.__annotations__["extra"] = "dict[str, Any]"
    cls.extra = field(default_factory=dict, repr=False)
    cls.__annotations__["_order"] = "tuple[str, ...]"
    cls._order = field(default=(), repr=False, compare=False)
    return dataclass(cls)


# -- spec -----------------------------------------------------------------------------------------


@_model
class ClusterManager(_Wire):
    name: str | None = _wire("name")


@_model
class ClusterProfileSpec(_Wire):
    display_name: str | None = _wire("displayName")
    cluster_manager: ClusterManager | None = _wire("clusterManager", ClusterManager)


# -- status ---------------------------------------------------------------------------------------


@_model
class ClusterVersion(_Wire):
    kubernetes: str | None = _wire("kubernetes")


@_model
class Property(_Wire):
    name: str | None = _wire("name")
    value: str | None = _wire("value")
    last_observed_time: str | None = _wire("lastObservedTime")


@_model
class Condition(_Wire):
    """metav1.Condition."""

    type: str | None = _wire("type")
    status: str | None = _wire("status")
    observed_generation: int | None = _wire("observedGeneration")
    last_transition_time: str | None = _wire("lastTransitionTime")
    reason: str | None = _wire("reason")
    message: str | None = _wire("message")

    def is_true(self) -> bool:
        # ``status: True`` unquoted in YAML (as in the KEP's example) is a boolean; read it leniently.
        return self.status == "True" or self.status is True


@_model
class NamedExtension(_Wire):
    name: str | None = _wire("name")
    #: any JSON value, kept as given (an object for client.authentication.k8s.io/exec, a list of
    #: strings for .../additional-args, a string map for .../additional-envs)
    extension: Any = _wire("extension")


@_model
class Cluster(_Wire):
    """clientcmd v1 ``Cluster``: how to reach the cluster's API server (never credentials)."""

    server: str | None = _wire("server")
    tls_server_name: str | None = _wire("tls-server-name")
    insecure_skip_tls_verify: bool | None = _wire("insecure-skip-tls-verify")
    certificate_authority: str | None = _wire("certificate-authority")
    #: base64 of the PEM CA bundle, as on the wire (see :meth:`ca_pem`)
    certificate_authority_data: str | None = _wire("certificate-authority-data")
    proxy_url: str | None = _wire("proxy-url")
    disable_compression: bool | None = _wire("disable-compression")
    extensions: list[NamedExtension] | None = _wire("extensions", NamedExtension, many=True)

    def ca_pem(self) -> bytes | None:
        """The decoded CA bundle, or None; ValueError if ``certificate-authority-data`` is not base64."""
        if not self.certificate_authority_data:
            return None
        try:
            return base64.b64decode(self.certificate_authority_data, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ValueError(f"certificate-authority-data is not valid base64: {exc}") from None

    def set_ca_pem(self, pem: bytes | str) -> None:
        raw = pem.encode() if isinstance(pem, str) else pem
        self.certificate_authority_data = base64.b64encode(raw).decode("ascii")

    def extension(self, name: str) -> Any:
        """The value of extension ``name``, or None."""
        for ext in self.extensions or ():
            if ext.name == name:
                return ext.extension
        return None

    def set_extension(self, name: str, value: Any) -> None:
        for ext in self.extensions or ():
            if ext.name == name:
                ext.extension = value
                return
        if self.extensions is None:
            self.extensions = []
        self.extensions.append(NamedExtension(name=name, extension=value))


@_model
class AccessProvider(_Wire):
    name: str | None = _wire("name")
    cluster: Cluster | None = _wire("cluster", Cluster)


@_model
class ClusterProfileStatus(_Wire):
    version: ClusterVersion | None = _wire("version", ClusterVersion)
    properties: list[Property] | None = _wire("properties", Property, many=True)
    conditions: list[Condition] | None = _wire("conditions", Condition, many=True)
    access_providers: list[AccessProvider] | None = _wire("accessProviders", AccessProvider, many=True)
    #: deprecated alias of access_providers (same item type)
    credential_providers: list[AccessProvider] | None = _wire("credentialProviders", AccessProvider, many=True)


# -- condition helpers (apimachinery meta.SetStatusCondition semantics) -------------------------


def find_condition(conditions: Iterable[Condition] | None, type_: str) -> Condition | None:
    for c in conditions or ():
        if c.type == type_:
            return c
    return None


def is_condition_true(conditions: Iterable[Condition] | None, type_: str) -> bool:
    c = find_condition(conditions, type_)
    return c is not None and c.is_true()


def set_condition(conditions: list[Condition], new: Condition, *, now: Clock | datetime | None = None) -> bool:
    """Add or update ``new`` in ``conditions`` by type; return whether anything changed.

    ``lastTransitionTime`` is set (to ``new.last_transition_time`` if given, else now) when the
    condition is added or its status changes, and left alone otherwise. reason, message and
    observedGeneration are always taken from ``new``.
    """
    if not new.type:
        raise ValueError("a condition needs a type")

    def stamp() -> str:
        if new.last_transition_time:
            return format_time(new.last_transition_time)
        t = now() if callable(now) else (now or utcnow())
        return format_time(t)

    cur = find_condition(conditions, new.type)
    if cur is None:
        added = Condition(type=new.type, status=new.status, observed_generation=new.observed_generation,
                          last_transition_time=stamp(), reason=new.reason,
                          message=new.message if new.message is not None else "")
        conditions.append(added)
        return True
    changed = False
    if cur.status != new.status:
        cur.status = new.status
        cur.last_transition_time = stamp()
        changed = True
    for attr in ("reason", "observed_generation"):
        if getattr(cur, attr) != getattr(new, attr):
            setattr(cur, attr, getattr(new, attr))
            changed = True
    message = new.message if new.message is not None else ""
    if cur.message != message:
        cur.message = message
        changed = True
    return changed


def remove_condition(conditions: list[Condition], type_: str) -> bool:
    for i, c in enumerate(conditions):
        if c.type == type_:
            del conditions[i]
            return True
    return False


_USE_GENERATION: Any = object()


# -- the profile --------------------------------------------------------------------------------


@_model
class ClusterProfile(_Wire):
    api_version: str | None = _wire("apiVersion")
    kind: str | None = _wire("kind")
    metadata: dict[str, Any] | None = _wire("metadata")
    spec: ClusterProfileSpec | None = _wire("spec", ClusterProfileSpec)
    status: ClusterProfileStatus | None = _wire("status", ClusterProfileStatus)

    @classmethod
    def new(cls, name: str, manager: str, *, namespace: str | None = None, display_name: str | None = None,
            labels: Mapping[str, str] | None = None) -> ClusterProfile:
        """A new profile with the ``x-k8s.io/cluster-manager`` label the KEP requires already set."""
        meta: dict[str, Any] = {"name": name}
        if namespace is not None:
            meta["namespace"] = namespace
        meta["labels"] = {**(labels or {}), LABEL_CLUSTER_MANAGER: manager}
        return cls(api_version=API_VERSION, kind=KIND, metadata=meta,
                   spec=ClusterProfileSpec(display_name=display_name, cluster_manager=ClusterManager(name=manager)))

    # -- metadata ---------------------------------------------------------------------------

    @property
    def name(self) -> str | None:
        return (self.metadata or {}).get("name")

    @property
    def namespace(self) -> str | None:
        return (self.metadata or {}).get("namespace")

    @property
    def key(self) -> str:
        """``namespace/name`` (multicluster-runtime's cluster name for a profile)."""
        return f"{self.namespace}/{self.name}" if self.namespace else str(self.name)

    @property
    def labels(self) -> dict[str, str]:
        """The labels (a live dict: changes write through)."""
        if self.metadata is None:
            self.metadata = {}
        labels = self.metadata.get("labels")
        if not isinstance(labels, dict):
            labels = self.metadata["labels"] = {}
        return labels

    @property
    def generation(self) -> int | None:
        g = (self.metadata or {}).get("generation")
        return g if isinstance(g, int) else None

    @property
    def manager(self) -> str | None:
        """``spec.clusterManager.name``."""
        cm = self.spec.cluster_manager if self.spec else None
        return cm.name if cm else None

    @property
    def display_name(self) -> str | None:
        return self.spec.display_name if self.spec else None

    # -- status -----------------------------------------------------------------------------

    def ensure_status(self) -> ClusterProfileStatus:
        if self.status is None:
            self.status = ClusterProfileStatus()
        return self.status

    @property
    def conditions(self) -> list[Condition]:
        """The conditions (a live list; empty if there are none)."""
        st = self.ensure_status()
        if st.conditions is None:
            st.conditions = []
        return st.conditions

    def condition(self, type_: str) -> Condition | None:
        return find_condition(self.status.conditions if self.status else None, type_)

    def set_condition(self, type_: str, status: str | bool, reason: str, message: str = "", *,
                      observed_generation: int | None = _USE_GENERATION,
                      now: Clock | datetime | None = None) -> bool:
        """Set a condition with metav1 semantics; ``observedGeneration`` defaults to metadata.generation.

        ``status`` may be a bool (True/False) or "True"/"False"/"Unknown". Returns whether the
        status changed in any way.
        """
        if isinstance(status, bool):
            status = "True" if status else "False"
        if status not in ("True", "False", "Unknown"):
            raise ValueError(f'condition status must be "True", "False" or "Unknown", not {status!r}')
        if observed_generation is _USE_GENERATION:
            observed_generation = self.generation
        return set_condition(self.conditions, Condition(type=type_, status=status, reason=reason, message=message,
                                                        observed_generation=observed_generation), now=now)

    def remove_condition(self, type_: str) -> bool:
        if not self.status or not self.status.conditions:
            return False
        return remove_condition(self.status.conditions, type_)

    def is_ready(self) -> bool:
        """The consumers' readiness gate (multicluster-runtime's default): ControlPlaneHealthy is True."""
        c = self.condition(CONDITION_CONTROL_PLANE_HEALTHY)
        return c is not None and c.is_true()

    def is_joined(self) -> bool:
        c = self.condition(CONDITION_JOINED)
        return c is not None and c.is_true()

    @property
    def kubernetes_version(self) -> str | None:
        v = self.status.version if self.status else None
        return v.kubernetes if v else None

    @kubernetes_version.setter
    def kubernetes_version(self, value: str | None) -> None:
        st = self.ensure_status()
        if st.version is None:
            st.version = ClusterVersion()
        st.version.kubernetes = value

    # -- properties -------------------------------------------------------------------------

    @property
    def properties(self) -> dict[str, str]:
        """Property name -> value (a snapshot)."""
        return {p.name: p.value for p in (self.status.properties if self.status else None) or () if p.name is not None}  # type: ignore[misc]

    def property_value(self, name: str) -> str | None:
        for p in (self.status.properties if self.status else None) or ():
            if p.name == name:
                return p.value
        return None

    def set_property(self, name: str, value: str, *, observed: datetime | str | None = None) -> bool:
        """Add or update a property; return whether it changed. ``observed`` sets lastObservedTime."""
        st = self.ensure_status()
        if st.properties is None:
            st.properties = []
        stamp = format_time(observed) if observed is not None else None
        for p in st.properties:
            if p.name == name:
                changed = p.value != value or (stamp is not None and p.last_observed_time != stamp)
                p.value = value
                if stamp is not None:
                    p.last_observed_time = stamp
                return changed
        st.properties.append(Property(name=name, value=value, last_observed_time=stamp))
        return True

    def remove_property(self, name: str) -> bool:
        props = self.status.properties if self.status else None
        if not props:
            return False
        for i, p in enumerate(props):
            if p.name == name:
                del props[i]
                return True
        return False

    @property
    def cluster_id(self) -> str | None:
        """The KEP-2149 cluster ID property (``id.k8s.io``, formerly ``cluster.clusterset.k8s.io``)."""
        return self.property_value(PROPERTY_CLUSTER_ID) or self.property_value(PROPERTY_CLUSTER_ID_LEGACY)

    @property
    def location(self) -> str | None:
        """The ``location`` property of the KEP's examples, else ``topology.kubernetes.io/region``."""
        return self.property_value(PROPERTY_LOCATION) or self.property_value(PROPERTY_REGION)

    def clusterset(self, namespace_labels: Mapping[str, str] | None = None) -> str | None:
        """The ClusterSet the profile is in: its namespace's clusterset label (the KEP's rule), else
        its own clusterset label, else the ``clusterset.k8s.io`` property."""
        for labels in (namespace_labels or {}, (self.metadata or {}).get("labels") or {}):
            for key in CLUSTERSET_LABELS:
                if labels.get(key):
                    return labels[key]
        return self.property_value(PROPERTY_CLUSTERSET)

    def installed_crds(self) -> dict[str, list[str]]:
        """CRDs the manager reported (fleetplane's ``crd.fleetplane.io/<name>`` properties): name -> versions."""
        out: dict[str, list[str]] = {}
        for name, value in self.properties.items():
            if name.startswith(PROPERTY_CRD_PREFIX):
                out[name[len(PROPERTY_CRD_PREFIX):]] = [v.strip() for v in (value or "").split(",") if v.strip()]
        return out

    def has_crd(self, name: str, version: str | None = None) -> bool:
        versions = self.installed_crds().get(name)
        return versions is not None and (version is None or version in versions)

    # -- access -----------------------------------------------------------------------------

    def access_providers(self) -> list[AccessProvider]:
        """accessProviders plus deprecated credentialProviders; accessProviders wins on a name clash."""
        if not self.status:
            return []
        merged: dict[str | None, AccessProvider] = {}
        for ap in self.status.credential_providers or ():
            merged[ap.name] = ap
        for ap in self.status.access_providers or ():
            merged[ap.name] = ap
        return list(merged.values())

    def access_provider(self, name: str) -> AccessProvider | None:
        for ap in self.access_providers():
            if ap.name == name:
                return ap
        return None

    def set_access_provider(self, provider: AccessProvider) -> None:
        st = self.ensure_status()
        if st.access_providers is None:
            st.access_providers = []
        for i, ap in enumerate(st.access_providers):
            if ap.name == provider.name:
                st.access_providers[i] = provider
                return
        st.access_providers.append(provider)
