"""kube's default admission plugins for Pods, wherever Pods are served (a simulated cluster;
the hub serves none): ServiceAccount, Priority and DefaultTolerationSeconds, mutating halves.

They run before the Pod strategy defaults the spec, as kube's mutating admission runs before
``PrepareForCreate``. kube's ServiceAccount plugin also refuses a Pod whose ServiceAccount does
not exist and mounts its token; fleetplane runs no ServiceAccount controller that would create
each namespace's ``default`` ServiceAccount, so it only defaults the name.
"""

from __future__ import annotations

from .chain import CREATE, BasePlugin, Chain, Request

#: DefaultTolerationSeconds: 300 s on not-ready and unreachable nodes
DEFAULT_TOLERATIONS = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
)


def _pod_spec(req: Request) -> dict | None:
    """A built-in Pod's spec. Pods a cluster brings to the hub (an imported ``pods.core`` CRD) are
    stored as sent: the cluster's own admission defaults them when they arrive there (a hub
    default such as ``priority: 0`` would make the cluster refuse a Pod naming a PriorityClass)."""
    if req.group or req.resource != "pods" or req.subresource or req.obj is None or req.rt.custom:
        return None
    spec = req.obj.get("spec")
    return spec if isinstance(spec, dict) else None


class ServiceAccount(BasePlugin):
    name = "ServiceAccount"
    operations = frozenset({CREATE})

    async def admit(self, req: Request) -> None:
        spec = _pod_spec(req)
        if spec is not None:
            sa = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
            spec["serviceAccountName"] = spec["serviceAccount"] = sa


class Priority(BasePlugin):
    name = "Priority"
    operations = frozenset({CREATE})

    async def admit(self, req: Request) -> None:
        spec = _pod_spec(req)
        if spec is not None:
            spec.setdefault("priority", 0)
            spec.setdefault("preemptionPolicy", "PreemptLowerPriority")


class DefaultTolerationSeconds(BasePlugin):
    name = "DefaultTolerationSeconds"
    operations = frozenset({CREATE})

    async def admit(self, req: Request) -> None:
        spec = _pod_spec(req)
        if spec is None:
            return
        tolerations = spec.get("tolerations")
        if tolerations is not None and not isinstance(tolerations, list):
            return  # validation reports it
        tolerations = list(tolerations or [])
        for t in DEFAULT_TOLERATIONS:
            if not any(isinstance(x, dict) and x.get("key") == t["key"] and x.get("effect") in (None, "", "NoExecute")
                       for x in tolerations):
                tolerations.append(dict(t))
        spec["tolerations"] = tolerations


def add_pod_plugins(chain: Chain) -> None:
    """In kube's order (pipeline/admission/plugins.py keeps the rest of it)."""
    for plugin in (ServiceAccount(), Priority(), DefaultTolerationSeconds()):
        chain.add(plugin)
