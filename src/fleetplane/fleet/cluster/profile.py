"""KEP-4322 duties of the Cluster controller: the ClusterProfile and the credentials Secret it keeps.

For a Cluster ``<ns>/<name>`` in logical cluster ``<lc>`` the controller keeps, in the same
logical cluster and namespace:

- the **ClusterProfile** ``<name>``: ``spec.clusterManager.name`` is the manager name
  (``fleetplane`` by default) and the ``x-k8s.io/cluster-manager`` label carries it; owned by
  the Cluster (ownerReference), labelled ``cluster.example.dev/cluster: <name>``. Its status
  (:func:`profile_status`) holds
  - ``version.kubernetes``: the cluster's ``/version`` gitVersion;
  - ``ControlPlaneHealthy``: from ``/livez`` and ``/readyz`` (False with the probe's reason
    when they fail or the cluster cannot be reached), ``Joined``: True once the cluster has been
    connected under this Cluster (it stays under management until the Cluster is deleted);
  - ``properties`` (see :data:`PROPERTY_NAMES`): ``location``, the Cluster labels listed in
    ``spec.publishLabels`` (name = label key), capacity summed from Nodes' allocatable
    resources, the node count, ``id.k8s.io`` (the kube-system namespace's uid, KEP-2149's
    recommendation) and the cluster's own ``about.k8s.io`` ClusterProperties, copied verbatim
    (they win on a name clash, as the KEP requires);
  - ``accessProviders``: one entry, ``secretreader``, with the cluster's server, CA and TLS
    settings and the ``client.authentication.k8s.io/exec`` extension ``{clusterName: <name>}``.
    Nothing secret (the hub's admission refuses it anyway).
- the **Secret** ``<name>`` (type Opaque, key ``token``): the bearer token of the Cluster's
  kubeconfig, exactly where the shipped ``fleetplane-secret-reader`` plugin (and upstream's
  ``secretreader``) looks: ``<consumer namespace>/<clusterName>``, key ``token``. A consumer
  configures the plugin with the hub kubeconfig of the logical cluster and ``--namespace <ns>``
  (or a context whose namespace is ``<ns>``). Kubeconfigs without a token (client certificates
  only) get no Secret and no access provider: the plugin can only hand out tokens.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from typing import Any

from ...inventory import constants as ic
from ...inventory.model import (
    AccessProvider,
    Cluster,
    ClusterProfileStatus,
    ClusterVersion,
    Condition,
    Property,
)
from ...inventory.model import set_condition as _set_condition
from ...kube.kubeconfig import ApiTarget
from .crd import API_VERSION, KIND, LABEL_CLUSTER
from .options import ACCESS_PROVIDER
from .probe import ClusterReport

#: The name consumers map to the secret-reader plugin in their provider file.
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY = "fleetplane-cluster-controller"
#: KEP-4322's Secret labels (its "credentials in a Secret" format), set for discoverability.
LABEL_CLUSTER_PROFILE = "x-k8s.io/cluster-profile"
LABEL_CLUSTER_PROFILE_NAMESPACE = "x-k8s.io/cluster-profile-namespace"
SECRET_TOKEN_KEY = "token"

PROPERTY_CPU = "resources.fleetplane.io/allocatable-cpu"
PROPERTY_MEMORY = "resources.fleetplane.io/allocatable-memory"
PROPERTY_PODS = "resources.fleetplane.io/allocatable-pods"
PROPERTY_NODES = "fleetplane.io/node-count"
#: Property names the controller publishes (besides published labels and the cluster's own properties).
PROPERTY_NAMES = (ic.PROPERTY_LOCATION, ic.PROPERTY_CLUSTER_ID, PROPERTY_CPU, PROPERTY_MEMORY, PROPERTY_PODS, PROPERTY_NODES)


def owner_reference(cluster: Mapping[str, Any]) -> dict[str, Any]:
    md = cluster["metadata"]
    return {"apiVersion": API_VERSION, "kind": KIND, "name": md["name"], "uid": md["uid"],
            "controller": True, "blockOwnerDeletion": True}


def new_profile(cluster: Mapping[str, Any], manager: str) -> dict[str, Any]:
    md = cluster["metadata"]
    return {
        "apiVersion": ic.API_VERSION, "kind": ic.KIND,
        "metadata": {"name": md["name"], "namespace": md["namespace"],
                     "labels": {ic.LABEL_CLUSTER_MANAGER: manager, LABEL_CLUSTER: md["name"]},
                     "ownerReferences": [owner_reference(cluster)]},
        "spec": {"displayName": md["name"], "clusterManager": {"name": manager}},
    }


def credentials_secret(cluster: Mapping[str, Any], token: str) -> dict[str, Any]:
    md = cluster["metadata"]
    return {
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": md["name"], "namespace": md["namespace"],
                     "labels": {LABEL_MANAGED_BY: MANAGED_BY, LABEL_CLUSTER: md["name"],
                                LABEL_CLUSTER_PROFILE: md["name"], LABEL_CLUSTER_PROFILE_NAMESPACE: md["namespace"]},
                     "ownerReferences": [owner_reference(cluster)]},
        "data": {SECRET_TOKEN_KEY: base64.b64encode(token.encode()).decode()},
    }


def is_ours(obj: Mapping[str, Any] | None) -> bool:
    labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
    return labels.get(LABEL_MANAGED_BY) == MANAGED_BY


def access_provider(endpoint: ApiTarget, cluster_name: str, name: str = ACCESS_PROVIDER) -> AccessProvider:
    c = Cluster(server=endpoint.server)
    if endpoint.ca_pem:
        c.set_ca_pem(endpoint.ca_pem)
    if endpoint.tls_server_name:
        c.tls_server_name = endpoint.tls_server_name
    if endpoint.insecure:
        c.insecure_skip_tls_verify = True
    if endpoint.proxy_url:
        c.proxy_url = endpoint.proxy_url
    c.set_extension(ic.EXTENSION_EXEC, {"clusterName": cluster_name})
    return AccessProvider(name=name, cluster=c)


def properties(cluster: Mapping[str, Any], report: ClusterReport | None) -> list[Property]:
    """The profile's properties, in a stable order (see the module docstring)."""
    spec = cluster.get("spec") or {}
    labels = (cluster.get("metadata") or {}).get("labels") or {}
    out: dict[str, str] = {}
    if spec.get("location"):
        out[ic.PROPERTY_LOCATION] = str(spec["location"])
    for key in spec.get("publishLabels") or ():
        if key in labels and labels[key] != "":
            out[key] = str(labels[key])
    if report is not None:
        if report.cluster_id:
            out[ic.PROPERTY_CLUSTER_ID] = report.cluster_id
        if report.allocatable:
            out[PROPERTY_CPU] = report.allocatable.get("cpu", "0")
            out[PROPERTY_MEMORY] = report.allocatable.get("memory", "0")
            out[PROPERTY_PODS] = report.allocatable.get("pods", "0")
        if report.nodes is not None:
            out[PROPERTY_NODES] = str(report.nodes)
        out.update(report.properties)  # the cluster's own ClusterProperties, verbatim
    return [Property(name=k, value=v[:1024]) for k, v in out.items() if k and v]


def set_condition(conditions: list[Condition], type_: str, status: bool | None, reason: str, message: str,
                  generation: int | None = None) -> None:
    value = "Unknown" if status is None else ("True" if status else "False")
    _set_condition(conditions, Condition(type=type_, status=value, reason=reason or "Unknown",
                                         message=(message or "")[:32768], observed_generation=generation))


def profile_status(conditions: list[Condition], *, cluster: Mapping[str, Any], report: ClusterReport | None,
                   healthy: tuple[bool | None, str, str], joined: tuple[bool, str, str],
                   providers: Iterable[AccessProvider]) -> ClusterProfileStatus:
    """The status to apply. ``conditions`` is the controller's running list (transition times are kept)."""
    set_condition(conditions, ic.CONDITION_CONTROL_PLANE_HEALTHY, *healthy)
    set_condition(conditions, ic.CONDITION_JOINED, *joined)
    st = ClusterProfileStatus()
    if report is not None and report.version:
        st.version = ClusterVersion(kubernetes=report.version)
    st.conditions = [c.copy() for c in conditions]
    props = properties(cluster, report)
    if props:
        st.properties = props
    aps = list(providers)
    if aps:
        st.access_providers = aps
    return st
