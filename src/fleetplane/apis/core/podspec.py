"""Pod specs as core/v1 defaults and validates them, wherever they appear (Pods, and the pod
templates of Deployments and ReplicaSets): ``pkg/apis/core/v1/defaults.go`` and
``pkg/apis/core/validation`` for the common mistakes, with kube's messages."""

from __future__ import annotations

from typing import Any

from ...apimachinery import errors as e
from ...apimachinery.errors import FieldError
from ...apimachinery.gofmt import go_string_map
from ...apimachinery.labels import selector_matches
from ...apimachinery.quantity import Quantity, QuantityError, canonical_quantity, parse_quantity
from ...apimachinery.validation import dns1123_label_error, dns1123_subdomain_error, validate_labels

# -- pod spec defaulting -------------------------------------------------------------------------


def _image_has_tag_or_digest(image: str) -> tuple[bool, str]:
    """(pinned, tag): a digest pins; the tag is what follows ':' in the last path component."""
    if "@" in image:
        return True, ""
    last = image.rsplit("/", 1)[-1]
    if ":" in last:
        return False, last.rsplit(":", 1)[1]
    return False, ""


def _default_probe(p: Any) -> None:
    if not isinstance(p, dict):
        return
    p.setdefault("timeoutSeconds", 1)
    p.setdefault("periodSeconds", 10)
    p.setdefault("successThreshold", 1)
    p.setdefault("failureThreshold", 3)
    if isinstance(p.get("httpGet"), dict):
        p["httpGet"].setdefault("path", "/")
        p["httpGet"].setdefault("scheme", "HTTP")
    if isinstance(p.get("grpc"), dict):
        p["grpc"].setdefault("service", "")


def _default_container(c: Any) -> None:
    if not isinstance(c, dict):
        return
    image = c.get("image")
    if "imagePullPolicy" not in c and isinstance(image, str) and image:
        pinned, tag = _image_has_tag_or_digest(image)
        c["imagePullPolicy"] = "IfNotPresent" if pinned or (tag and tag != "latest") else "Always"
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    c.setdefault("resources", {})
    for port in c.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
    for env in c.get("env") or []:
        if isinstance(env, dict) and isinstance(env.get("valueFrom"), dict):
            ref = env["valueFrom"].get("fieldRef")
            if isinstance(ref, dict):
                ref.setdefault("apiVersion", "v1")
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        _default_probe(c.get(key))
    lifecycle = c.get("lifecycle")
    if isinstance(lifecycle, dict):
        for hook in lifecycle.values():
            if isinstance(hook, dict) and isinstance(hook.get("httpGet"), dict):
                hook["httpGet"].setdefault("path", "/")
                hook["httpGet"].setdefault("scheme", "HTTP")


_MODE_VOLUMES = ("configMap", "secret", "downwardAPI", "projected")


def default_pod_spec(spec: Any) -> None:
    """``SetDefaults_PodSpec`` and the container/volume defaults under it."""
    if not isinstance(spec, dict):
        return
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for c in spec.get(key) or []:
            _default_container(c)
    for v in spec.get("volumes") or []:
        if not isinstance(v, dict):
            continue
        if all(k == "name" or v[k] is None for k in v):  # SetDefaults_Volume: no source is an emptyDir
            v["emptyDir"] = {}
        for kind in _MODE_VOLUMES:
            if isinstance(v.get(kind), dict):
                v[kind].setdefault("defaultMode", 420)
        if isinstance(v.get("hostPath"), dict):
            v["hostPath"].setdefault("type", "")


def default_template(template: Any) -> None:
    if isinstance(template, dict):
        default_pod_spec(template.get("spec"))


def requests_from_limits(spec: dict) -> None:
    """``SetDefaults_Pod``: a resource with a limit and no request requests its limit."""
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or []:
            if not isinstance(c, dict) or not isinstance(c.get("resources"), dict):
                continue
            limits = c["resources"].get("limits")
            if isinstance(limits, dict) and limits:
                requests = c["resources"].setdefault("requests", {})
                if isinstance(requests, dict):
                    for k, v in limits.items():
                        requests.setdefault(k, v)


def qos_class(spec: dict) -> str:
    """``qos.GetPodQOS``: Guaranteed, Burstable or BestEffort from cpu and memory requests/limits."""
    requests: dict[str, Quantity] = {}
    limits: dict[str, Quantity] = {}
    guaranteed = True
    any_set = False
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or []:
            res = (c or {}).get("resources") or {}
            creq = {k: parse_quantity(v) for k, v in (res.get("requests") or {}).items() if k in ("cpu", "memory")}
            clim = {k: parse_quantity(v) for k, v in (res.get("limits") or {}).items() if k in ("cpu", "memory")}
            for k, v in creq.items():
                if v != 0:
                    any_set = True
                    requests[k] = requests.get(k, Quantity(0)) + v
            for k, v in clim.items():
                if v != 0:
                    any_set = True
                    limits[k] = limits.get(k, Quantity(0)) + v
            if set(clim) != {"cpu", "memory"}:
                guaranteed = False
    if not any_set:
        return "BestEffort"
    if guaranteed and requests == limits:
        return "Guaranteed"
    return "Burstable"


# -- pod spec validation -------------------------------------------------------------------------

_RESTART_POLICIES = ["Always", "OnFailure", "Never"]
_DNS_POLICIES = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"]
_PULL_POLICIES = ["Always", "IfNotPresent", "Never"]
_PROTOCOLS = ["SCTP", "TCP", "UDP"]
TAINT_EFFECTS = ["NoExecute", "NoSchedule", "PreferNoSchedule"]
_STANDARD_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods", "storage")


def _validate_resources(res: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if res is None:
        return errs
    if not isinstance(res, dict):
        return [e.invalid(path, res, "must be an object")]
    parsed: dict[str, dict[str, Quantity]] = {}
    for part in ("limits", "requests"):
        values = res.get(part) or {}
        if not isinstance(values, dict):
            errs.append(e.invalid(f"{path}.{part}", values, "must be a map of quantities"))
            continue
        parsed[part] = {}
        for name, q in values.items():
            try:
                v = parse_quantity(q)
            except QuantityError:
                errs.append(e.invalid(f"{path}.{part}[{name}]", q, "must be a valid quantity"))
                continue
            if v < 0:
                errs.append(e.invalid(f"{path}.{part}[{name}]", str(q), "must be greater than or equal to 0"))
            parsed[part][name] = v
    limits, requests = parsed.get("limits", {}), parsed.get("requests", {})
    for name, req in requests.items():
        lim = limits.get(name)
        if lim is not None and req > lim:
            errs.append(e.invalid(f"{path}.requests", str(res["requests"][name]),
                                  f"must be less than or equal to {name} limit of {res['limits'][name]}"))
    return errs


def _validate_probe(p: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not isinstance(p, dict):
        return errs
    for f in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"):
        v = p.get(f)
        if isinstance(v, int) and v < 0:
            errs.append(e.invalid(f"{path}.{f}", v, "must be greater than or equal to 0"))
    return errs


def _validate_containers(containers: Any, path: str, names: set[str], *, required: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    if containers is None or containers == []:
        return [e.required(path)] if required else []
    if not isinstance(containers, list):
        return [e.invalid(path, containers, "must be a list")]
    for i, c in enumerate(containers):
        p = f"{path}[{i}]"
        if not isinstance(c, dict):
            errs.append(e.invalid(p, c, "must be an object"))
            continue
        name = c.get("name")
        if not name:
            errs.append(e.required(f"{p}.name"))
        elif not isinstance(name, str) or dns1123_label_error(name):
            errs.append(e.invalid(f"{p}.name", name, dns1123_label_error(str(name)) or "must be a string"))
        elif name in names:
            errs.append(e.duplicate(f"{p}.name", name))
        else:
            names.add(name)
        image = c.get("image")
        if not image or not isinstance(image, str) or not image.strip():
            errs.append(e.required(f"{p}.image"))
        pull = c.get("imagePullPolicy")
        if pull is not None and pull not in _PULL_POLICIES:
            errs.append(e.not_supported(f"{p}.imagePullPolicy", pull, _PULL_POLICIES))
        seen_ports: set[tuple[Any, Any]] = set()
        for j, port in enumerate(c.get("ports") or []):
            pp = f"{p}.ports[{j}]"
            if not isinstance(port, dict):
                errs.append(e.invalid(pp, port, "must be an object"))
                continue
            cp = port.get("containerPort")
            if not isinstance(cp, int) or isinstance(cp, bool) or not 1 <= cp <= 65535:
                errs.append(e.required(f"{pp}.containerPort") if cp is None
                            else e.invalid(f"{pp}.containerPort", cp, "must be between 1 and 65535, inclusive"))
            hp = port.get("hostPort")
            if hp not in (None, 0) and (not isinstance(hp, int) or not 1 <= hp <= 65535):
                errs.append(e.invalid(f"{pp}.hostPort", hp, "must be between 1 and 65535, inclusive"))
            proto = port.get("protocol")
            if proto is not None and proto not in _PROTOCOLS:
                errs.append(e.not_supported(f"{pp}.protocol", proto, _PROTOCOLS))
            if (cp, proto) in seen_ports:
                errs.append(e.duplicate(f"{pp}", f"{cp}/{proto}"))
            seen_ports.add((cp, proto))
            pname = port.get("name")
            if pname and (not isinstance(pname, str) or len(pname) > 15 or dns1123_label_error(pname)):
                errs.append(e.invalid(f"{pp}.name", pname, "must be no more than 15 characters"
                                      if isinstance(pname, str) and len(pname) > 15 else "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"))
        for j, env in enumerate(c.get("env") or []):
            if not isinstance(env, dict) or not env.get("name"):
                errs.append(e.required(f"{p}.env[{j}].name"))
        errs += _validate_resources(c.get("resources"), f"{p}.resources")
        for key in ("livenessProbe", "readinessProbe", "startupProbe"):
            errs += _validate_probe(c.get(key), f"{p}.{key}")
    return errs


def validate_pod_spec(spec: Any, path: str, *, template: bool = False,
                      restart_policies: list[str] | None = None) -> list[FieldError]:
    """``restart_policies``: what a template's owner allows (a Job's: OnFailure, Never); a
    template otherwise allows Always only."""
    errs: list[FieldError] = []
    if not isinstance(spec, dict):
        return [e.required(path)] if spec is None else [e.invalid(path, spec, "must be an object")]
    names: set[str] = set()
    errs += _validate_containers(spec.get("containers"), f"{path}.containers", names, required=True)
    errs += _validate_containers(spec.get("initContainers"), f"{path}.initContainers", names, required=False)
    rp = spec.get("restartPolicy")
    if restart_policies is not None:
        if rp not in restart_policies:
            errs.append(e.not_supported(f"{path}.restartPolicy", rp, restart_policies))
    elif template:
        if rp not in (None, "Always"):
            errs.append(e.not_supported(f"{path}.restartPolicy", rp, ["Always"]))
    elif rp is not None and rp not in _RESTART_POLICIES:
        errs.append(e.not_supported(f"{path}.restartPolicy", rp, _RESTART_POLICIES))
    dp = spec.get("dnsPolicy")
    if dp is not None and dp not in _DNS_POLICIES:
        errs.append(e.not_supported(f"{path}.dnsPolicy", dp, _DNS_POLICIES))
    tgps = spec.get("terminationGracePeriodSeconds")
    if tgps is not None and (not isinstance(tgps, int) or isinstance(tgps, bool)):
        errs.append(e.invalid(f"{path}.terminationGracePeriodSeconds", tgps, "must be an integer"))
    ads = spec.get("activeDeadlineSeconds")
    if ads is not None and (not isinstance(ads, int) or ads <= 0):
        errs.append(e.invalid(f"{path}.activeDeadlineSeconds", ads, "must be between 1 and 2147483647, inclusive"))
    node_name = spec.get("nodeName")
    if node_name and (not isinstance(node_name, str) or dns1123_subdomain_error(node_name)):
        errs.append(e.invalid(f"{path}.nodeName", node_name, dns1123_subdomain_error(str(node_name)) or "must be a string"))
    sel = spec.get("nodeSelector")
    if sel is not None:
        errs += validate_labels(sel, f"{path}.nodeSelector")
    for i, t in enumerate(spec.get("tolerations") or []):
        p = f"{path}.tolerations[{i}]"
        if not isinstance(t, dict):
            errs.append(e.invalid(p, t, "must be an object"))
            continue
        op = t.get("operator")
        if op not in (None, "", "Equal", "Exists"):
            errs.append(e.not_supported(f"{p}.operator", op, ["Equal", "Exists"]))
        if op == "Exists" and t.get("value"):
            errs.append(e.invalid(f"{p}.operator", t.get("value"), "value must be empty when `operator` is 'Exists'"))
        eff = t.get("effect")
        if eff not in (None, "") and eff not in TAINT_EFFECTS:
            errs.append(e.not_supported(f"{p}.effect", eff, TAINT_EFFECTS))
    vol_names: set[str] = set()
    for i, v in enumerate(spec.get("volumes") or []):
        p = f"{path}.volumes[{i}]"
        vname = v.get("name") if isinstance(v, dict) else None
        if not vname:
            errs.append(e.required(f"{p}.name"))
        elif dns1123_label_error(str(vname)):
            errs.append(e.invalid(f"{p}.name", vname, dns1123_label_error(str(vname)) or ""))
        elif vname in vol_names:
            errs.append(e.duplicate(f"{p}.name", vname))
        else:
            vol_names.add(vname)
    return errs


def validate_template(template: Any, path: str, selector: Any, *,
                      restart_policies: list[str] | None = None) -> list[FieldError]:
    if not isinstance(template, dict):
        return [e.required(path)]
    errs: list[FieldError] = []
    tmeta = template.get("metadata") or {}
    labels = tmeta.get("labels") if isinstance(tmeta, dict) else None
    errs += validate_labels(labels, f"{path}.metadata.labels")
    if isinstance(selector, dict) and (selector.get("matchLabels") or selector.get("matchExpressions")):
        if not selector_matches(selector, labels):
            errs.append(e.invalid_literal(f"{path}.metadata.labels", go_string_map(labels), "`selector` does not match template `labels`"))
    errs += validate_pod_spec(template.get("spec"), f"{path}.spec", template=True, restart_policies=restart_policies)
    return errs


def canonicalize_resources(spec: Any, kind: str, version: str) -> None:
    """Quantities as kube stores them; a malformed one is the decoder's 400, as kube answers."""
    if not isinstance(spec, dict):
        return
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for c in spec.get(key) or []:
            res = (c or {}).get("resources") if isinstance(c, dict) else None
            if not isinstance(res, dict):
                continue
            for part in ("limits", "requests"):
                values = res.get(part)
                if not isinstance(values, dict):
                    continue
                for name, q in list(values.items()):
                    try:
                        values[name] = canonical_quantity(q)
                    except QuantityError as exc:
                        raise e.bad_request(f'{kind} in version "{version}" cannot be handled as a {kind}: {exc}') from None
