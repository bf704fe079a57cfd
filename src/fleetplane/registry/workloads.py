"""The workload types a simulated physical cluster serves: apps/v1 Deployments and
ReplicaSets, core/v1 Pods and Nodes.

Served only in the "physical" mode (``fleetplane cluster simulate``), through
``Options.extra_types``; the hub itself stays Kubernetes-the-API without workloads. Each type
has a strategy in the style of :mod:`.builtins` with kube's semantics for what clients see:

* defaulting as ``pkg/apis/{apps,core}/v1/defaults.go`` (Deployment replicas 1, RollingUpdate
  25%/25%, revisionHistoryLimit 10, progressDeadlineSeconds 600; pod specs: restartPolicy,
  dnsPolicy, terminationGracePeriodSeconds, schedulerName, securityContext, container
  terminationMessagePath/Policy, imagePullPolicy by tag, port protocols, probe defaults), and
  for Pods what the default admission plugins add (serviceAccountName, priority,
  preemptionPolicy, the not-ready/unreachable tolerations) and status Pending with its QoS class;
* validation with kube's messages for the common mistakes (selector required, non-empty,
  matching the template's labels and immutable; replicas >= 0; container name and image;
  quantities that parse, requests <= limits; restartPolicy Always in templates; pod updates
  that may change only images, tolerations additions, activeDeadlineSeconds);
* resource quantities canonicalized as ``resource.Quantity`` marshals them ("0.5" -> "500m",
  "1024Mi" -> "1Gi"), a malformed one is kube's decoding error (400);
* generation on spec change (Deployments also on annotation changes, as kube), status and
  scale subresources, the field selectors kube supports, short names and the "all" category.

Binding: the scheduler (a client) sets ``spec.nodeName`` with an ordinary update, which the Pod
strategy allows only while ``nodeName`` is empty; that write also sets ``PodScheduled=True`` as
kube's ``pods/binding`` does.
"""

from __future__ import annotations

from typing import Any

from ..apimachinery import errors as e
from ..apimachinery.errors import FieldError
from ..apimachinery.gofmt import go_quote
from ..apimachinery.intstr import PERCENT
from ..apimachinery.labels import selector_matches
from ..apimachinery.metatime import now_rfc3339
from ..apimachinery.quantity import Quantity, QuantityError, canonical_quantity, parse_quantity
from ..apimachinery.validation import (
    dns1123_label_error,
    dns1123_subdomain_error,
    validate_label_selector,
    validate_labels,
)
from .types import META_FIELDS, ResourceType, ScaleSpec, Strategy
from .validation import validate_object_meta

POD_TEMPLATE_HASH = "pod-template-hash"
REVISION_ANNOTATION = "deployment.kubernetes.io/revision"
#: where a Scale's ``status.selector`` comes from. ``None`` until the scale handler renders a
#: metav1.LabelSelector object in its string form (``str(LabelSelector)``); then ".spec.selector".
SCALE_SELECTOR_PATH: str | None = ".spec.selector"

# -- Go-formatted values in messages -------------------------------------------------------------


class _GoInvalid(FieldError):
    """FieldValueInvalid whose value is printed verbatim (a Go literal such as ``map[string]string{...}``)."""

    def message(self) -> str:
        return f"Invalid value: {self.bad_value}: {self.detail}" if self.detail else f"Invalid value: {self.bad_value}"


def _go_invalid(path: str, literal: str, detail: str) -> FieldError:
    return _GoInvalid("FieldValueInvalid", path, detail, literal, True)


def go_string_map(m: Any) -> str:
    if not m:
        return "map[string]string(nil)"
    return "map[string]string{" + ", ".join(f"{go_quote(str(k))}:{go_quote(str(v))}" for k, v in sorted(m.items())) + "}"


def go_label_selector(sel: Any) -> str:
    sel = sel if isinstance(sel, dict) else {}
    exprs = sel.get("matchExpressions") or []
    if exprs:
        parts = []
        for x in exprs:
            vals = x.get("values")
            values = "[]string(nil)" if not vals else "[]string{" + ", ".join(go_quote(str(v)) for v in vals) + "}"
            parts.append(f"v1.LabelSelectorRequirement{{Key:{go_quote(str(x.get('key', '')))}, "
                         f"Operator:{go_quote(str(x.get('operator', '')))}, Values:{values}}}")
        expr_text = "[]v1.LabelSelectorRequirement{" + ", ".join(parts) + "}"
    else:
        expr_text = "[]v1.LabelSelectorRequirement(nil)"
    return f"v1.LabelSelector{{MatchLabels:{go_string_map(sel.get('matchLabels'))}, MatchExpressions:{expr_text}}}"


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
        for kind in _MODE_VOLUMES:
            if isinstance(v.get(kind), dict):
                v[kind].setdefault("defaultMode", 420)
        if isinstance(v.get("hostPath"), dict):
            v["hostPath"].setdefault("type", "")


def _default_template(template: Any) -> None:
    if isinstance(template, dict):
        default_pod_spec(template.get("spec"))


def _requests_from_limits(spec: dict) -> None:
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
_TAINT_EFFECTS = ["NoExecute", "NoSchedule", "PreferNoSchedule"]
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


def validate_pod_spec(spec: Any, path: str, *, template: bool = False) -> list[FieldError]:
    errs: list[FieldError] = []
    if not isinstance(spec, dict):
        return [e.required(path)] if spec is None else [e.invalid(path, spec, "must be an object")]
    names: set[str] = set()
    errs += _validate_containers(spec.get("containers"), f"{path}.containers", names, required=True)
    errs += _validate_containers(spec.get("initContainers"), f"{path}.initContainers", names, required=False)
    rp = spec.get("restartPolicy")
    if template:
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
        if eff not in (None, "") and eff not in _TAINT_EFFECTS:
            errs.append(e.not_supported(f"{p}.effect", eff, _TAINT_EFFECTS))
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


def _validate_template(template: Any, path: str, selector: Any) -> list[FieldError]:
    if not isinstance(template, dict):
        return [e.required(path)]
    errs: list[FieldError] = []
    tmeta = template.get("metadata") or {}
    labels = tmeta.get("labels") if isinstance(tmeta, dict) else None
    errs += validate_labels(labels, f"{path}.metadata.labels")
    if isinstance(selector, dict) and (selector.get("matchLabels") or selector.get("matchExpressions")):
        if not selector_matches(selector, labels):
            errs.append(_go_invalid(f"{path}.metadata.labels", go_string_map(labels), "`selector` does not match template `labels`"))
    errs += validate_pod_spec(template.get("spec"), f"{path}.spec", template=True)
    return errs


def _canonicalize_resources(spec: Any, kind: str, version: str) -> None:
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


# -- int-or-string ---------------------------------------------------------------------------------

def _validate_int_or_percent(value: Any, path: str) -> list[FieldError]:
    if isinstance(value, int) and not isinstance(value, bool):
        return [e.invalid(path, value, "must be greater than or equal to 0")] if value < 0 else []
    if isinstance(value, str):
        m = PERCENT.match(value)
        if m:
            if int(m.group(1)) > 100:
                return [e.invalid(path, value, "must not be greater than 100%")]
            return []
        return [e.invalid(path, value, "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")]
    return [e.invalid(path, value, "must be an integer or percentage (e.g '5%')")]


def _is_zero(value: Any) -> bool:
    return value in (0, "0%", "0")


# -- strategies ------------------------------------------------------------------------------------


def _non_negative(obj: dict, path: str, value: Any) -> list[FieldError]:
    if value is None:
        return []
    if not isinstance(value, int) or isinstance(value, bool):
        return [e.invalid(path, value, "must be an integer")]
    if value < 0:
        return [e.invalid(path, value, "must be greater than or equal to 0")]
    return []


class _WorkloadStrategy(Strategy):
    """Deployments and ReplicaSets: generation, status subresource, unconditional PUT (as apps/v1)."""

    kind = ""
    tracks_generation = True
    allow_unconditional_update = True
    status_subresource = True

    def canonicalize(self, obj: dict) -> None:
        template = (obj.get("spec") or {}).get("template") if isinstance(obj.get("spec"), dict) else None
        if isinstance(template, dict):
            _canonicalize_resources(template.get("spec"), self.kind, "v1")

    def prepare_for_status_update(self, obj: dict, old: dict) -> dict:
        """kube's status strategies keep spec (and labels) and take the rest, annotations included
        (the deployment controller records the revision annotation through /status)."""
        new = dict(obj)
        new["metadata"] = dict(obj.get("metadata") or {})
        if "spec" in old:
            new["spec"] = old["spec"]
        else:
            new.pop("spec", None)
        if "labels" in old["metadata"]:
            new["metadata"]["labels"] = old["metadata"]["labels"]
        else:
            new["metadata"].pop("labels", None)
        return new

    def spec_changed(self, obj: dict, old: dict) -> bool:
        return obj.get("spec") != old.get("spec")

    def _validate_common(self, obj: dict, *, selector_required: bool = True) -> list[FieldError]:
        errs = validate_object_meta(obj, namespaced=True)
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return errs + [e.required("spec")]
        errs += _non_negative(obj, "spec.replicas", spec.get("replicas"))
        errs += _non_negative(obj, "spec.minReadySeconds", spec.get("minReadySeconds"))
        sel = spec.get("selector")
        if sel is None:
            errs.append(e.required("spec.selector"))
        else:
            errs += validate_label_selector(sel, "spec.selector")
            if isinstance(sel, dict) and not sel.get("matchLabels") and not sel.get("matchExpressions"):
                errs.append(_go_invalid("spec.selector", go_label_selector(sel), f"empty selector is invalid for {self.kind.lower()}"))
        errs += _validate_template(spec.get("template"), "spec.template", sel)
        return errs

    def validate_update(self, obj: dict, old: dict) -> list[FieldError]:
        errs = self.validate(obj)
        new_sel = (obj.get("spec") or {}).get("selector")
        old_sel = (old.get("spec") or {}).get("selector")
        if new_sel != old_sel and new_sel is not None:
            errs.append(_go_invalid("spec.selector", go_label_selector(new_sel), "field is immutable"))
        return errs


class DeploymentStrategy(_WorkloadStrategy):
    kind = "Deployment"

    def _default(self, obj: dict) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        spec.setdefault("replicas", 1)
        strategy = spec.get("strategy")
        if not isinstance(strategy, dict):
            strategy = spec["strategy"] = {}
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            ru = strategy.get("rollingUpdate")
            if not isinstance(ru, dict):
                ru = strategy["rollingUpdate"] = {}
            ru.setdefault("maxUnavailable", "25%")
            ru.setdefault("maxSurge", "25%")
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
        _default_template(spec.get("template"))

    def prepare_for_create(self, obj: dict) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {}  # a Go struct: always there, empty until the controller writes it
        self._default(obj)

    def prepare_for_update(self, obj: dict, old: dict) -> None:
        super().prepare_for_update(obj, old)
        self._default(obj)

    def spec_changed(self, obj: dict, old: dict) -> bool:
        """kube: spec changes and annotation changes bump generation (annotations are copied to the
        ReplicaSets); the controller's own ``deployment.kubernetes.io/`` annotations do not."""
        if obj.get("spec") != old.get("spec"):
            return True

        def user_annotations(o: dict) -> dict:
            return {k: v for k, v in ((o.get("metadata") or {}).get("annotations") or {}).items()
                    if not k.startswith("deployment.kubernetes.io/") and k != "kcp.io/cluster"}

        return user_annotations(obj) != user_annotations(old)

    def validate(self, obj: dict) -> list[FieldError]:
        errs = self._validate_common(obj)
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return errs
        strategy = spec.get("strategy") or {}
        stype = strategy.get("type")
        if stype not in ("Recreate", "RollingUpdate"):
            errs.append(e.required("spec.strategy.type") if not stype
                        else e.not_supported("spec.strategy.type", stype, ["Recreate", "RollingUpdate"]))
        ru = strategy.get("rollingUpdate")
        if stype == "Recreate" and ru is not None:
            errs.append(e.forbidden("spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'"))
        if stype == "RollingUpdate" and isinstance(ru, dict):
            mu, ms = ru.get("maxUnavailable"), ru.get("maxSurge")
            errs += _validate_int_or_percent(mu, "spec.strategy.rollingUpdate.maxUnavailable")
            errs += _validate_int_or_percent(ms, "spec.strategy.rollingUpdate.maxSurge")
            if _is_zero(mu) and _is_zero(ms):
                errs.append(e.invalid("spec.strategy.rollingUpdate.maxUnavailable", mu, "may not be 0 when `maxSurge` is 0"))
        errs += _non_negative(obj, "spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))
        pds = spec.get("progressDeadlineSeconds")
        errs += _non_negative(obj, "spec.progressDeadlineSeconds", pds)
        mrs = spec.get("minReadySeconds") or 0
        if isinstance(pds, int) and isinstance(mrs, int) and pds <= mrs:
            errs.append(e.invalid("spec.progressDeadlineSeconds", pds, "must be greater than minReadySeconds"))
        return errs


class ReplicaSetStrategy(_WorkloadStrategy):
    kind = "ReplicaSet"

    def _default(self, obj: dict) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            spec.setdefault("replicas", 1)
            _default_template(spec.get("template"))

    def prepare_for_create(self, obj: dict) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {"replicas": 0}  # replicas has no omitempty
        self._default(obj)

    def prepare_for_update(self, obj: dict, old: dict) -> None:
        super().prepare_for_update(obj, old)
        self._default(obj)

    def validate(self, obj: dict) -> list[FieldError]:
        return self._validate_common(obj)


POD_UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)


def _pod_condition(ctype: str, status: str, reason: str = "", message: str = "") -> dict:
    c: dict[str, Any] = {"type": ctype, "status": status, "lastProbeTime": None, "lastTransitionTime": now_rfc3339()}
    if reason:
        c["reason"] = reason
    if message:
        c["message"] = message
    return c


class PodStrategy(Strategy):
    """core/v1 Pod: defaults and admission defaults, status Pending, mostly immutable spec."""

    tracks_generation = False
    allow_unconditional_update = True
    status_subresource = True

    def canonicalize(self, obj: dict) -> None:
        _canonicalize_resources(obj.get("spec"), "Pod", "v1")

    def _default(self, obj: dict) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        default_pod_spec(spec)
        _requests_from_limits(spec)
        spec.setdefault("enableServiceLinks", True)

    def prepare_for_create(self, obj: dict) -> None:
        self._default(obj)
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        # serviceAccountName, priority and tolerations come from admission (pipeline/admission/pods.py)
        status: dict[str, Any] = {"phase": "Pending"}
        try:
            status["qosClass"] = qos_class(spec)
        except QuantityError:
            pass
        if spec.get("schedulingGates"):
            status["conditions"] = [_pod_condition("PodScheduled", "False", "SchedulingGated",
                                                   "Scheduling is blocked due to non-empty scheduling gates")]
        obj["status"] = status

    def prepare_for_update(self, obj: dict, old: dict) -> None:
        super().prepare_for_update(obj, old)
        self._default(obj)
        new_spec, old_spec = obj.get("spec"), old.get("spec") or {}
        if not isinstance(new_spec, dict):
            return
        # fields admission set on create stay (a PUT from an older copy need not repeat them)
        for f in ("serviceAccountName", "serviceAccount", "priority", "preemptionPolicy", "enableServiceLinks"):
            if f not in new_spec and f in old_spec:
                new_spec[f] = old_spec[f]
        if new_spec.get("nodeName") and not old_spec.get("nodeName"):
            # binding: the scheduler's assignment, recorded with PodScheduled=True (as pods/binding does)
            status = dict(obj.get("status") or {})
            conds = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
            conds.append(_pod_condition("PodScheduled", "True"))
            status["conditions"] = conds
            status.pop("nominatedNodeName", None)
            obj["status"] = status

    def prepare_for_status_update(self, obj: dict, old: dict) -> dict:
        new = dict(obj)
        new["metadata"] = dict(obj.get("metadata") or {})
        new["spec"] = old.get("spec")
        for f in ("ownerReferences",):
            if f in old["metadata"]:
                new["metadata"][f] = old["metadata"][f]
            else:
                new["metadata"].pop(f, None)
        return new

    def validate(self, obj: dict) -> list[FieldError]:
        errs = validate_object_meta(obj, namespaced=True)
        errs += validate_pod_spec(obj.get("spec"), "spec")
        return errs

    def validate_update(self, obj: dict, old: dict) -> list[FieldError]:
        errs = validate_object_meta(obj, namespaced=True)
        new_spec, old_spec = obj.get("spec") or {}, old.get("spec") or {}
        if new_spec == old_spec:
            return errs
        errs += validate_pod_spec(new_spec, "spec")
        if errs:
            return errs
        if not _pod_spec_update_allowed(new_spec, old_spec):
            errs.append(e.forbidden("spec", POD_UPDATE_FORBIDDEN))
        return errs


def _pod_spec_update_allowed(new: dict, old: dict) -> bool:
    """ValidatePodUpdate: images, activeDeadlineSeconds, tolerations additions, removing scheduling
    gates, and (fleetplane's binding) nodeName set once."""
    a, b = dict(new), dict(old)
    for key in ("containers", "initContainers"):
        na, ob = a.get(key) or [], b.get(key) or []
        if len(na) != len(ob):
            return False
        a[key] = [{k: v for k, v in c.items() if k != "image"} for c in na]
        b[key] = [{k: v for k, v in c.items() if k != "image"} for c in ob]
    if b.get("activeDeadlineSeconds") is None or (a.get("activeDeadlineSeconds") or 0) <= b.get("activeDeadlineSeconds", 0):
        a.pop("activeDeadlineSeconds", None)
        b.pop("activeDeadlineSeconds", None)
    old_tol = b.pop("tolerations", None) or []
    new_tol = a.pop("tolerations", None) or []
    if any(t not in new_tol for t in old_tol):
        return False
    old_gates = b.pop("schedulingGates", None) or []
    new_gates = a.pop("schedulingGates", None) or []
    if any(g not in old_gates for g in new_gates):
        return False
    if not b.get("nodeName"):
        a.pop("nodeName", None)
        b.pop("nodeName", None)
    tg_old = b.get("terminationGracePeriodSeconds")
    if isinstance(tg_old, int) and tg_old < 0 and a.get("terminationGracePeriodSeconds") == 1:
        a.pop("terminationGracePeriodSeconds")
        b.pop("terminationGracePeriodSeconds")
    return a == b


class NodeStrategy(Strategy):
    """core/v1 Node: cluster-scoped; the registering kubelet sets status on create."""

    tracks_generation = False
    allow_unconditional_update = True
    status_subresource = True

    def canonicalize(self, obj: dict) -> None:
        status = obj.get("status")
        if not isinstance(status, dict):
            return
        for part in ("capacity", "allocatable"):
            values = status.get(part)
            if isinstance(values, dict):
                for name, q in list(values.items()):
                    try:
                        values[name] = canonical_quantity(q)
                    except QuantityError as exc:
                        raise e.bad_request(f'Node in version "v1" cannot be handled as a Node: {exc}') from None

    def prepare_for_create(self, obj: dict) -> None:
        status = obj.get("status")
        if isinstance(status, dict) and isinstance(status.get("capacity"), dict) and "allocatable" not in status:
            status["allocatable"] = dict(status["capacity"])

    def prepare_for_status_update(self, obj: dict, old: dict) -> dict:
        new = dict(obj)
        new["spec"] = old.get("spec", {})
        if "spec" not in old:
            new.pop("spec", None)
        return new

    def validate(self, obj: dict) -> list[FieldError]:
        errs = validate_object_meta(obj, namespaced=False)
        spec = obj.get("spec") or {}
        for i, t in enumerate(spec.get("taints") or []):
            p = f"spec.taints[{i}]"
            if not isinstance(t, dict) or not t.get("key"):
                errs.append(e.required(f"{p}.key"))
                continue
            if t.get("effect") not in _TAINT_EFFECTS:
                errs.append(e.required(f"{p}.effect") if not t.get("effect")
                            else e.not_supported(f"{p}.effect", t.get("effect"), _TAINT_EFFECTS))
        return errs

    def validate_update(self, obj: dict, old: dict) -> list[FieldError]:
        errs = self.validate(obj)
        old_cidr = (old.get("spec") or {}).get("podCIDR")
        if old_cidr and (obj.get("spec") or {}).get("podCIDR") != old_cidr:
            errs.append(e.forbidden("spec.podCIDR", "node updates may not change podCIDR except from \"\" to valid"))
        return errs


# -- field selectors -------------------------------------------------------------------------------


def _get(*path: str):
    def getter(obj: dict) -> Any:
        cur: Any = obj
        for p in path:
            if not isinstance(cur, dict):
                return None
            cur = cur.get(p)
        return cur

    return getter


def _bool_field(*path: str):
    get = _get(*path)
    return lambda o: "true" if get(o) is True else "false"


def _pod_ip(o: dict) -> str:
    ips = (o.get("status") or {}).get("podIPs")
    if isinstance(ips, list) and ips and isinstance(ips[0], dict):
        return str(ips[0].get("ip") or "")
    return ""


POD_FIELDS = dict(META_FIELDS) | {
    "spec.nodeName": _get("spec", "nodeName"),
    "spec.restartPolicy": _get("spec", "restartPolicy"),
    "spec.schedulerName": _get("spec", "schedulerName"),
    "spec.serviceAccountName": _get("spec", "serviceAccountName"),
    "spec.hostNetwork": _bool_field("spec", "hostNetwork"),
    "status.phase": _get("status", "phase"),
    "status.podIP": _pod_ip,
    "status.nominatedNodeName": _get("status", "nominatedNodeName"),
}
NODE_FIELDS = {"metadata.name": META_FIELDS["metadata.name"], "spec.unschedulable": _bool_field("spec", "unschedulable")}
REPLICASET_FIELDS = dict(META_FIELDS) | {"status.replicas": lambda o: str(((o.get("status") or {}).get("replicas")) or 0)}


def workload_types() -> list[ResourceType]:
    """Fresh ResourceType objects for Deployments, ReplicaSets, Pods and Nodes."""
    return [
        ResourceType("apps", "v1", "Deployment", "deployments", "deployment", True, DeploymentStrategy(),
                     short_names=("deploy",), categories=("all",), subresources=("status", "scale"),
                     scale=ScaleSpec(".spec.replicas", ".status.replicas", SCALE_SELECTOR_PATH)),
        ResourceType("apps", "v1", "ReplicaSet", "replicasets", "replicaset", True, ReplicaSetStrategy(),
                     short_names=("rs",), categories=("all",), subresources=("status", "scale"),
                     scale=ScaleSpec(".spec.replicas", ".status.replicas", SCALE_SELECTOR_PATH),
                     field_selectors=REPLICASET_FIELDS),
        ResourceType("", "v1", "Pod", "pods", "pod", True, PodStrategy(), short_names=("po",), categories=("all",),
                     subresources=("status",), field_selectors=POD_FIELDS),
        ResourceType("", "v1", "Node", "nodes", "node", False, NodeStrategy(), short_names=("no",),
                     subresources=("status",), field_selectors=NODE_FIELDS),
    ]
