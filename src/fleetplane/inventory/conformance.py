"""The KEP-4322 conformance rules, as pure functions over what a hub serves.

:func:`check_resource` judges the API discovery of the group, :func:`check_profiles` the
profiles (dicts, as listed from any hub) and the labels of their namespaces. Each rule yields
one :class:`Result` per subject: ``FAIL`` when a rule the KEP (or the CRD schema) makes
mandatory is broken, ``WARN`` when a recommendation is not followed, ``PASS`` otherwise.
``fleetplane inventory check`` (``fleetplane.cli.inventory``) runs them against a live hub.

Required rules (a FAIL makes the check fail):
  served, namespaced, profiles-present, manager-name, manager-label, clusterset-namespace,
  conditions (well-formed when present), properties (well-formed), access-providers
  (well-formed), no-credentials, member-id (non-empty when set)
Recommended rules (WARN at worst):
  status-subresource, condition-ControlPlaneHealthy, condition-Joined, version, unique-member,
  v1alpha2-served

Where the hub serves v1alpha2 beside v1alpha1, :func:`check_v1alpha2` judges the profiles as
read in v1alpha2 too (required): v1alpha2-shape (upstream's v1alpha2 schema and CEL rules:
no credentialProviders, at most 64 access providers, each with a cluster whose server is an
absolute URL with a host, ...) and versions-agree (the two reads say the same, but for the
fields v1alpha2 dropped).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

from ..apimachinery.metatime import parse_time
from ..apimachinery.validation import is_label_value
from .admission import clusterset_of_namespace
from .constants import (
    CLUSTERSET_LABELS,
    CONDITION_CONTROL_PLANE_HEALTHY,
    CONDITION_JOINED,
    EXTENSION_ADDITIONAL_ARGS,
    EXTENSION_ADDITIONAL_ENVS,
    GROUP,
    LABEL_CLUSTER_MANAGER,
    LABEL_INVENTORY_MEMBER_ID,
    PLURAL,
    PROPERTY_CLUSTER_ID,
    PROPERTY_CLUSTERSET,
    VERSION,
    VERSION_V1ALPHA2,
)
from .credentials import find_credentials

__all__ = ["FAIL", "PASS", "RULES", "WARN", "Result", "check_profiles", "check_resource", "check_v1alpha2",
           "check_versions", "summarize"]

PASS, WARN, FAIL = "PASS", "WARN", "FAIL"

#: rule -> (required?, what it checks)
RULES: dict[str, tuple[bool, str]] = {
    "served": (True, "clusterprofiles is served in the multicluster.x-k8s.io group"),
    "namespaced": (True, "clusterprofiles is a namespaced resource"),
    "status-subresource": (False, "clusterprofiles has the status subresource"),
    "profiles-present": (True, "at least one ClusterProfile exists where the check looks"),
    "manager-name": (True, "spec.clusterManager.name is set and usable as a label value"),
    "manager-label": (True, "the x-k8s.io/cluster-manager label equals spec.clusterManager.name"),
    "clusterset-namespace": (True, "a profile in a ClusterSet's namespace claims no other ClusterSet"),
    "conditions": (True, "conditions are well-formed metav1.Conditions, one per type"),
    f"condition-{CONDITION_CONTROL_PLANE_HEALTHY}": (False, "the ControlPlaneHealthy condition is reported"),
    f"condition-{CONDITION_JOINED}": (False, "the Joined condition is reported"),
    "version": (False, "status.version.kubernetes is reported"),
    "properties": (True, "properties are well-formed, one per name"),
    "access-providers": (True, "access providers are well-formed kubeconfig clusters"),
    "no-credentials": (True, "the profile carries no credential material"),
    "member-id": (True, "the inventory-member-id label, when set, is not empty"),
    "unique-member": (False, "no other profile in the namespace represents the same member cluster"),
    "v1alpha2-served": (False, f"{GROUP}/{VERSION_V1ALPHA2} is served beside {VERSION} (cluster-inventory-api v0.2.0)"),
    "v1alpha2-shape": (True, "read as v1alpha2, the profile fits v1alpha2's schema"),
    "versions-agree": (True, "the profile reads the same in v1alpha1 and v1alpha2, but for the fields v1alpha2 dropped"),
}

_CONDITION_TYPE = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$")
_REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?\Z")


@dataclass(frozen=True)
class Result:
    outcome: str  # PASS, WARN, FAIL
    subject: str  # "clusterprofiles" or "<namespace>/<name>"
    rule: str
    message: str

    @property
    def required(self) -> bool:
        return RULES.get(self.rule, (False, ""))[0]

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "required": self.required}


def _rfc3339(s: Any) -> bool:
    return isinstance(s, str) and "T" in s and parse_time(s) is not None


# -- the resource ---------------------------------------------------------------------------------


def check_resource(version: str | None, resources: Iterable[Mapping[str, Any]] | None) -> list[Result]:
    """Rules on discovery: ``resources`` is the APIResourceList of ``multicluster.x-k8s.io/<version>``
    (None if the group is not served at all)."""
    subject = f"{PLURAL}.{GROUP}"
    if version is None or resources is None:
        return [Result(FAIL, subject, "served", f"the API group {GROUP} is not served")]
    by_name = {r.get("name"): r for r in resources}
    main = by_name.get(PLURAL)
    if main is None:
        return [Result(FAIL, subject, "served", f"{GROUP}/{version} does not serve {PLURAL}")]
    out = [Result(PASS, subject, "served", f"{GROUP}/{version} serves {PLURAL} (kind {main.get('kind')})")]
    if main.get("namespaced"):
        out.append(Result(PASS, subject, "namespaced", f"{PLURAL} is namespaced"))
    else:
        out.append(Result(FAIL, subject, "namespaced", f"{PLURAL} is cluster-scoped; KEP-4322 ClusterProfiles are namespaced"))
    if f"{PLURAL}/status" in by_name:
        out.append(Result(PASS, subject, "status-subresource", f"{PLURAL}/status is served"))
    else:
        out.append(Result(WARN, subject, "status-subresource", f"{PLURAL}/status is not served: status is not separated from spec"))
    return out


# -- the profiles ---------------------------------------------------------------------------------


def _key(p: Mapping[str, Any]) -> str:
    meta = p.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or '?'}"


def _manager_name(p: Mapping[str, Any], subject: str) -> Result:
    name = ((p.get("spec") or {}).get("clusterManager") or {}).get("name")
    if not isinstance(name, str) or not name:
        return Result(FAIL, subject, "manager-name", "spec.clusterManager.name is not set")
    if not is_label_value(name):
        return Result(FAIL, subject, "manager-name",
                      f'spec.clusterManager.name "{name}" is not a valid label value, so no label can equal it')
    return Result(PASS, subject, "manager-name", f'cluster manager "{name}"')


def _manager_label(p: Mapping[str, Any], subject: str) -> Result:
    name = ((p.get("spec") or {}).get("clusterManager") or {}).get("name")
    labels = (p.get("metadata") or {}).get("labels") or {}
    if LABEL_CLUSTER_MANAGER not in labels:
        return Result(FAIL, subject, "manager-label", f"label {LABEL_CLUSTER_MANAGER} is missing (KEP-4322: MUST be set)")
    if labels[LABEL_CLUSTER_MANAGER] != name:
        return Result(FAIL, subject, "manager-label",
                      f'label {LABEL_CLUSTER_MANAGER}="{labels[LABEL_CLUSTER_MANAGER]}" differs from '
                      f'spec.clusterManager.name "{name}"')
    return Result(PASS, subject, "manager-label", f"{LABEL_CLUSTER_MANAGER}={name} matches spec.clusterManager.name")


def _claims(p: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(where, clusterset) for every ClusterSet the profile itself claims."""
    out = []
    labels = (p.get("metadata") or {}).get("labels") or {}
    for k in CLUSTERSET_LABELS:
        if labels.get(k):
            out.append((f"label {k}", labels[k]))
    for prop in (p.get("status") or {}).get("properties") or []:
        if isinstance(prop, Mapping) and prop.get("name") == PROPERTY_CLUSTERSET and prop.get("value"):
            out.append((f"property {PROPERTY_CLUSTERSET}", prop["value"]))
    return out


def _clusterset(p: Mapping[str, Any], subject: str, ns_labels: Mapping[str, str] | None) -> Result:
    rule = "clusterset-namespace"
    claims = _claims(p)
    if ns_labels is None:
        return Result(WARN, subject, rule, "the namespace's labels could not be read; rule not checked")
    try:
        clusterset, keys = clusterset_of_namespace(ns_labels)
    except ValueError as exc:
        return Result(FAIL, subject, rule, f"the namespace is labelled with two different ClusterSets ({exc})")
    if clusterset is None:
        if claims:
            where, value = claims[0]
            return Result(WARN, subject, rule, f'{where} claims ClusterSet "{value}" but the namespace is not labelled '
                                               f"as a ClusterSet's (KEP-4322: namespace is the grouping mechanism)")
        return Result(PASS, subject, rule, "not in a ClusterSet namespace")
    wrong = [(w, v) for w, v in claims if v != clusterset]
    if wrong:
        return Result(FAIL, subject, rule, "; ".join(f'{w} claims ClusterSet "{v}"' for w, v in wrong)
                      + f' but the namespace belongs to ClusterSet "{clusterset}" ({keys[0]})')
    return Result(PASS, subject, rule, f'in ClusterSet "{clusterset}" ({keys[0]} on the namespace)')


def _conditions(p: Mapping[str, Any], subject: str) -> list[Result]:
    conds = (p.get("status") or {}).get("conditions")
    out: list[Result] = []
    problems: list[str] = []
    if conds is not None and not isinstance(conds, list):
        problems.append("status.conditions is not a list")
        conds = []
    conds = conds or []
    types = Counter(c.get("type") for c in conds if isinstance(c, Mapping))
    for t, n in types.items():
        if n > 1:
            problems.append(f'condition type "{t}" appears {n} times')
    for i, c in enumerate(conds):
        where = f"status.conditions[{i}]"
        if not isinstance(c, Mapping):
            problems.append(f"{where} is not an object")
            continue
        if not isinstance(c.get("type"), str) or not _CONDITION_TYPE.match(c["type"]) or len(c["type"]) > 316:
            problems.append(f"{where}.type {c.get('type')!r} is not a valid condition type")
        if c.get("status") not in ("True", "False", "Unknown"):
            problems.append(f'{where}.status {c.get("status")!r} is not "True", "False" or "Unknown"')
        if not isinstance(c.get("reason"), str) or not _REASON.match(c["reason"]) or len(c["reason"]) > 1024:
            problems.append(f"{where}.reason {c.get('reason')!r} is not a CamelCase reason")
        if not _rfc3339(c.get("lastTransitionTime")):
            problems.append(f"{where}.lastTransitionTime {c.get('lastTransitionTime')!r} is not an RFC 3339 time")
        if not isinstance(c.get("message"), str):
            problems.append(f"{where}.message is missing")
        og = c.get("observedGeneration")
        if og is not None and (not isinstance(og, int) or isinstance(og, bool) or og < 0):
            problems.append(f"{where}.observedGeneration {og!r} is not a non-negative integer")
    if problems:
        out.append(Result(FAIL, subject, "conditions", "; ".join(problems)))
    else:
        out.append(Result(PASS, subject, "conditions", f"{len(conds)} well-formed condition(s)" if conds else "no conditions"))
    by_type = {c.get("type"): c for c in conds if isinstance(c, Mapping)}
    for t in (CONDITION_CONTROL_PLANE_HEALTHY, CONDITION_JOINED):
        c = by_type.get(t)
        rule = f"condition-{t}"
        if c is None:
            out.append(Result(WARN, subject, rule, f"condition {t} is not reported"))
        else:
            detail = f" ({c.get('reason')}: {c.get('message')})" if c.get("message") else (f" ({c.get('reason')})" if c.get("reason") else "")
            out.append(Result(PASS, subject, rule, f"{t}={c.get('status')}{detail}"))
    return out


def _version(p: Mapping[str, Any], subject: str) -> Result:
    v = ((p.get("status") or {}).get("version") or {}).get("kubernetes")
    if isinstance(v, str) and v:
        return Result(PASS, subject, "version", f"Kubernetes {v}")
    return Result(WARN, subject, "version", "status.version.kubernetes is not reported")


def _properties(p: Mapping[str, Any], subject: str) -> Result:
    props = (p.get("status") or {}).get("properties")
    if props is None:
        return Result(PASS, subject, "properties", "no properties")
    if not isinstance(props, list):
        return Result(FAIL, subject, "properties", "status.properties is not a list")
    problems = []
    names = Counter(x.get("name") for x in props if isinstance(x, Mapping))
    problems += [f'property "{n}" appears {k} times' for n, k in names.items() if k > 1]
    for i, x in enumerate(props):
        where = f"status.properties[{i}]"
        if not isinstance(x, Mapping):
            problems.append(f"{where} is not an object")
            continue
        if not isinstance(x.get("name"), str) or not 1 <= len(x["name"]) <= 253:
            problems.append(f"{where}.name must be 1-253 characters")
        if not isinstance(x.get("value"), str) or not 1 <= len(x["value"]) <= 1024:
            problems.append(f"{where}.value must be 1-1024 characters")
        if x.get("lastObservedTime") is not None and not _rfc3339(x["lastObservedTime"]):
            problems.append(f"{where}.lastObservedTime is not an RFC 3339 time")
    if problems:
        return Result(FAIL, subject, "properties", "; ".join(problems))
    return Result(PASS, subject, "properties", f"{len(props)} well-formed propert{'y' if len(props) == 1 else 'ies'}")


def _cluster_problems(cluster: Any, where: str) -> tuple[list[str], list[str]]:
    """(errors, warnings) for one kubeconfig cluster."""
    errs: list[str] = []
    warns: list[str] = []
    if not isinstance(cluster, Mapping):
        return [f"{where} is missing"], []
    server = cluster.get("server")
    if not isinstance(server, str) or not server:
        errs.append(f"{where}.server is missing")
    else:
        u = urlsplit(server)
        if u.scheme not in ("https", "http") or not u.hostname:
            errs.append(f"{where}.server {server!r} is not an absolute http(s) URL with a host")
        elif u.scheme == "http":
            warns.append(f"{where}.server uses plain http")
    for flag in ("insecure-skip-tls-verify", "disable-compression"):
        if flag in cluster and not isinstance(cluster[flag], bool):
            errs.append(f"{where}.{flag} is not a boolean")
    ca = cluster.get("certificate-authority-data")
    if ca is not None:
        try:
            pem = base64.b64decode(ca, validate=True) if isinstance(ca, str) else b""
        except (binascii.Error, ValueError):
            pem = b""
        if b"-----BEGIN CERTIFICATE-----" not in pem:
            errs.append(f"{where}.certificate-authority-data is not base64-encoded PEM certificates")
        if cluster.get("insecure-skip-tls-verify"):
            warns.append(f"{where} sets both insecure-skip-tls-verify and certificate-authority-data (kubeconfig rejects that)")
    elif cluster.get("insecure-skip-tls-verify"):
        warns.append(f"{where}.insecure-skip-tls-verify is set: the server certificate is not verified")
    if cluster.get("certificate-authority"):
        warns.append(f"{where}.certificate-authority is a file path, meaningless to other hosts; use certificate-authority-data")
    proxy = cluster.get("proxy-url")
    if proxy:
        pu = urlsplit(proxy) if isinstance(proxy, str) else None
        if pu is None or pu.scheme not in ("http", "https", "socks5") or not pu.hostname:
            errs.append(f"{where}.proxy-url must be an http, https or socks5 URL with a host")
    exts = cluster.get("extensions")
    if exts is not None:
        if not isinstance(exts, list):
            errs.append(f"{where}.extensions is not a list")
            exts = []
        names = Counter(e.get("name") for e in exts if isinstance(e, Mapping))
        errs += [f'{where}.extensions: name "{n}" appears {k} times (client-go refuses duplicates)' for n, k in names.items() if k > 1]
        for j, ext in enumerate(exts):
            ew = f"{where}.extensions[{j}]"
            if not isinstance(ext, Mapping) or not ext.get("name"):
                errs.append(f"{ew} has no name")
                continue
            value = ext.get("extension")
            if ext["name"] == EXTENSION_ADDITIONAL_ARGS and not (
                    isinstance(value, list) and all(isinstance(a, str) for a in value)):
                errs.append(f"{ew} ({EXTENSION_ADDITIONAL_ARGS}) must be a list of strings")
            if ext["name"] == EXTENSION_ADDITIONAL_ENVS and not (
                    isinstance(value, Mapping) and all(isinstance(v, str) for v in value.values())):
                errs.append(f"{ew} ({EXTENSION_ADDITIONAL_ENVS}) must be a map of strings")
    return errs, warns


def _access_providers(p: Mapping[str, Any], subject: str) -> Result:
    status = p.get("status") or {}
    errs: list[str] = []
    warns: list[str] = []
    total = 0
    for field in ("accessProviders", "credentialProviders"):
        entries = status.get(field)
        if entries is None:
            continue
        if not isinstance(entries, list):
            errs.append(f"status.{field} is not a list")
            continue
        if field == "credentialProviders" and entries:
            warns.append("status.credentialProviders is deprecated; publish accessProviders")
        names = Counter(e.get("name") for e in entries if isinstance(e, Mapping))
        errs += [f'status.{field}: name "{n}" appears {k} times' for n, k in names.items() if k > 1]
        for i, entry in enumerate(entries):
            total += 1
            where = f"status.{field}[{i}]"
            if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str) or not entry.get("name"):
                errs.append(f"{where} has no name")
                continue
            e2, w2 = _cluster_problems(entry.get("cluster"), f"{where}.cluster")
            errs += e2
            warns += w2
    if errs:
        return Result(FAIL, subject, "access-providers", "; ".join(errs + warns))
    if total == 0:
        return Result(WARN, subject, "access-providers", "no access providers: consumers cannot reach the cluster "
                                                         "through access provider plugins")
    if warns:
        return Result(WARN, subject, "access-providers", "; ".join(warns))
    provider_names = [e.get("name") for e in status.get("accessProviders") or status.get("credentialProviders") or []]
    return Result(PASS, subject, "access-providers", f"{total} well-formed: {', '.join(map(str, provider_names))}")


def _no_credentials(p: Mapping[str, Any], subject: str) -> Result:
    found = find_credentials(p)
    if found:
        return Result(FAIL, subject, "no-credentials", "; ".join(str(f) for f in found))
    return Result(PASS, subject, "no-credentials", "no credential material found")


def _member_id(p: Mapping[str, Any], subject: str) -> Result:
    labels = (p.get("metadata") or {}).get("labels") or {}
    if LABEL_INVENTORY_MEMBER_ID not in labels:
        return Result(PASS, subject, "member-id", f"{LABEL_INVENTORY_MEMBER_ID} not set (optional)")
    if not labels[LABEL_INVENTORY_MEMBER_ID]:
        return Result(FAIL, subject, "member-id", f"{LABEL_INVENTORY_MEMBER_ID} is set but empty")
    return Result(PASS, subject, "member-id", f"{LABEL_INVENTORY_MEMBER_ID}={labels[LABEL_INVENTORY_MEMBER_ID]}")


def _member_identities(p: Mapping[str, Any]) -> list[str]:
    out = []
    member = ((p.get("metadata") or {}).get("labels") or {}).get(LABEL_INVENTORY_MEMBER_ID)
    if member:
        out.append(f"{LABEL_INVENTORY_MEMBER_ID}={member}")
    for prop in (p.get("status") or {}).get("properties") or []:
        if isinstance(prop, Mapping) and prop.get("name") == PROPERTY_CLUSTER_ID and prop.get("value"):
            out.append(f"{PROPERTY_CLUSTER_ID}={prop['value']}")
    return out


def check_profiles(profiles: Iterable[Mapping[str, Any]],
                   namespace_labels: Mapping[str, Mapping[str, str] | None] | None = None, *,
                   where: str = "") -> list[Result]:
    """Every per-profile rule for every profile; ``namespace_labels`` maps namespace -> labels
    (None: could not be read). ``where`` names the scope in the profiles-present result."""
    profiles = list(profiles)
    ns_labels = namespace_labels or {}
    out: list[Result] = []
    if profiles:
        out.append(Result(PASS, f"{PLURAL}.{GROUP}", "profiles-present", f"{len(profiles)} ClusterProfile(s){where}"))
    else:
        out.append(Result(FAIL, f"{PLURAL}.{GROUP}", "profiles-present", f"no ClusterProfiles{where}"))
    identities: dict[tuple[str, str], list[str]] = {}
    for p in profiles:
        ns = (p.get("metadata") or {}).get("namespace") or ""
        for ident in _member_identities(p):
            identities.setdefault((ns, ident), []).append(_key(p))
    for p in profiles:
        subject = _key(p)
        ns = (p.get("metadata") or {}).get("namespace") or ""
        out.append(_manager_name(p, subject))
        out.append(_manager_label(p, subject))
        out.append(_clusterset(p, subject, ns_labels.get(ns, {}) if ns in ns_labels else None))
        out.extend(_conditions(p, subject))
        out.append(_version(p, subject))
        out.append(_properties(p, subject))
        out.append(_access_providers(p, subject))
        out.append(_no_credentials(p, subject))
        out.append(_member_id(p, subject))
        dups = sorted({other for ident in _member_identities(p) for other in identities[(ns, ident)] if other != subject})
        if dups:
            out.append(Result(WARN, subject, "unique-member", f"represents the same member cluster as {', '.join(dups)} "
                                                              "(consumers act only on the oldest)"))
        else:
            out.append(Result(PASS, subject, "unique-member", "no other profile in the namespace for this member cluster"))
    return out


# -- v1alpha2 ----------------------------------------------------------------------------------------

#: v1alpha2's limits (kubebuilder markers of cluster-inventory-api apis/v1alpha2)
MAX_ACCESS_PROVIDERS = 64
_URL_MAX = 2048
_NAME_MAX = 253


def check_versions(served: Iterable[str]) -> list[Result]:
    """Rule on the group's served versions (from discovery)."""
    subject = f"{PLURAL}.{GROUP}"
    versions = list(served)
    if VERSION_V1ALPHA2 in versions:
        return [Result(PASS, subject, "v1alpha2-served", f"{GROUP} serves {', '.join(versions)}")]
    return [Result(WARN, subject, "v1alpha2-served", f"{GROUP} serves {', '.join(versions) or 'nothing'}, not "
                                                    f"{VERSION_V1ALPHA2} (cluster-inventory-api v0.2.0 serves it)")]


def _v1alpha2_cluster(cluster: Any, where: str) -> list[str]:
    if not isinstance(cluster, Mapping):
        return [f"{where}: Required value"]
    errs: list[str] = []
    server = cluster.get("server")
    if not isinstance(server, str) or not server:
        errs.append(f"{where}.server: Required value")
    elif len(server) > _URL_MAX:
        errs.append(f"{where}.server: Too long: may not be more than {_URL_MAX} bytes")
    elif not urlsplit(server).scheme or not urlsplit(server).netloc:
        errs.append(f"{where}.server: server must be a valid absolute URL with a host")
    name = cluster.get("tls-server-name")
    if isinstance(name, str) and len(name) > _NAME_MAX:
        errs.append(f"{where}.tls-server-name: Too long: may not be more than {_NAME_MAX} bytes")
    proxy = cluster.get("proxy-url")
    if isinstance(proxy, str) and proxy:
        pu = urlsplit(proxy)
        if len(proxy) > _URL_MAX or pu.scheme not in ("http", "https", "socks5") or not pu.netloc:
            errs.append(f"{where}.proxy-url: proxy-url must be a valid URL with scheme http, https, or socks5 and a host")
    if "certificate-authority" in cluster:
        errs.append(f"{where}.certificate-authority: v1alpha2 has no such field")
    exts = cluster.get("extensions")
    for j, ext in enumerate(exts if isinstance(exts, list) else []):
        ename = ext.get("name") if isinstance(ext, Mapping) else None
        if not isinstance(ename, str) or not 1 <= len(ename) <= _NAME_MAX:
            errs.append(f"{where}.extensions[{j}].name must be 1-{_NAME_MAX} characters")
    return errs


def _v1alpha2_shape(p: Mapping[str, Any], subject: str) -> Result:
    errs: list[str] = []
    if p.get("apiVersion") != f"{GROUP}/{VERSION_V1ALPHA2}":
        errs.append(f"read as {VERSION_V1ALPHA2}, apiVersion is {p.get('apiVersion')!r}")
    name = ((p.get("spec") or {}).get("clusterManager") or {}).get("name")
    if not isinstance(name, str) or not 1 <= len(name) <= 63 or not is_label_value(name):
        errs.append("spec.clusterManager.name: must be a valid Kubernetes label value")
    status = p.get("status") or {}
    if "credentialProviders" in status:
        errs.append("status.credentialProviders: v1alpha2 has no such field")
    providers = status.get("accessProviders") or []
    if not isinstance(providers, list):
        providers = []
        errs.append("status.accessProviders is not a list")
    if len(providers) > MAX_ACCESS_PROVIDERS:
        errs.append(f"status.accessProviders: Too many: {len(providers)}: must have at most {MAX_ACCESS_PROVIDERS} items")
    for i, ap in enumerate(providers):
        where = f"status.accessProviders[{i}]"
        apname = ap.get("name") if isinstance(ap, Mapping) else None
        if not isinstance(apname, str) or not 1 <= len(apname) <= _NAME_MAX:
            errs.append(f"{where}.name must be 1-{_NAME_MAX} characters")
        errs += _v1alpha2_cluster(ap.get("cluster") if isinstance(ap, Mapping) else None, f"{where}.cluster")
    if errs:
        return Result(FAIL, subject, "v1alpha2-shape", "; ".join(errs))
    return Result(PASS, subject, "v1alpha2-shape", f"fits {GROUP}/{VERSION_V1ALPHA2}")


def _common(p: Mapping[str, Any]) -> dict[str, Any]:
    """What both versions hold: spec, labels, and status without v1alpha1's extra fields."""
    status = {k: v for k, v in (p.get("status") or {}).items() if k != "credentialProviders"}
    if isinstance(status.get("accessProviders"), list):
        status["accessProviders"] = [
            {**ap, "cluster": {k: v for k, v in ap["cluster"].items() if k != "certificate-authority"}}
            if isinstance(ap, Mapping) and isinstance(ap.get("cluster"), Mapping) else ap
            for ap in status["accessProviders"]]
    meta = p.get("metadata") or {}
    return {"spec": p.get("spec"), "status": status, "labels": meta.get("labels") or {}, "uid": meta.get("uid")}


def check_v1alpha2(v1alpha1: Iterable[Mapping[str, Any]], v1alpha2: Iterable[Mapping[str, Any]]) -> list[Result]:
    """The v1alpha2 rules for the same profiles listed in both versions."""
    first = {_key(p): p for p in v1alpha1}
    out: list[Result] = []
    for p in v1alpha2:
        subject = _key(p)
        out.append(_v1alpha2_shape(p, subject))
        other = first.get(subject)
        if other is None:
            out.append(Result(FAIL, subject, "versions-agree", f"listed in {VERSION_V1ALPHA2} but not in {VERSION}"))
            continue
        a, b = _common(other), _common(p)
        differ = [k for k in a if a[k] != b[k]]
        if differ:
            out.append(Result(FAIL, subject, "versions-agree",
                              f"{VERSION} and {VERSION_V1ALPHA2} differ in {', '.join(differ)}"))
        else:
            out.append(Result(PASS, subject, "versions-agree", f"{VERSION} and {VERSION_V1ALPHA2} agree"))
    return out


def summarize(results: Iterable[Result]) -> dict[str, Any]:
    results = list(results)
    counts = Counter(r.outcome for r in results)
    failed = sorted({r.rule for r in results if r.outcome == FAIL})
    profiles = len({r.subject for r in results if "/" in r.subject})
    return {"profiles": profiles, "checks": len(results), PASS: counts[PASS], WARN: counts[WARN], FAIL: counts[FAIL],
            "failed_rules": failed}
