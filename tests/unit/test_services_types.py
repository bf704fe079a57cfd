"""core/v1 Service and discovery.k8s.io/v1 EndpointSlice: the printers' cells as kube's
printers.go prints them, and the Service strategy's defaults, validation and update rules."""

from __future__ import annotations

from fleetplane.apis import workload_types
from fleetplane.apis.core.service import ServiceStrategy
from fleetplane.registry.types import ResourceType
from fleetplane.server.tables import to_table

NOW = 1700000000.0


def _type(group: str, kind: str) -> ResourceType:
    return next(rt for rt in workload_types() if (rt.group, rt.kind) == (group, kind))


def _cells(rt: ResourceType, obj: dict) -> list:
    obj = {"metadata": {"name": "x", "creationTimestamp": "2023-11-14T22:13:10Z"}, **obj}
    return to_table(rt, [obj], now=NOW)["rows"][0]["cells"]


def test_service_columns_and_cells():
    rt = _type("", "Service")
    cols = [(c["name"], c["priority"]) for c in to_table(rt, [], now=NOW)["columnDefinitions"]]
    assert cols == [("Name", 0), ("Type", 0), ("Cluster-IP", 0), ("External-IP", 0), ("Port(s)", 0), ("Age", 0),
                    ("Selector", 1)]
    lb = {"spec": {"type": "LoadBalancer", "clusterIPs": ["10.96.0.7"], "selector": {"b": "2", "a": "1"},
                   "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]},
          "status": {"loadBalancer": {"ingress": [{"ip": "172.18.2.1"}, {"hostname": "lb.example"}, {"ip": "172.18.1.1"}]}}}
    assert _cells(rt, lb) == ["x", "LoadBalancer", "10.96.0.7", "172.18.1.1,172.18.2.1,lb.example",
                              "80:30080/TCP,53/UDP", "10s", "a=1,b=2"]
    lb["status"] = {"loadBalancer": {}}
    assert _cells(rt, lb)[3] == "<pending>"
    lb["spec"]["externalIPs"] = ["1.2.3.4"]
    assert _cells(rt, lb)[3] == "1.2.3.4"
    assert _cells(rt, {"spec": {"type": "ExternalName", "externalName": "db.example.com"}})[2:5] == [
        "<none>", "db.example.com", "<none>"]
    assert _cells(rt, {"spec": {"type": "ClusterIP", "clusterIPs": ["None"], "ports": [{"port": 80, "protocol": "TCP"}]}})[
        2:7] == ["None", "<none>", "80/TCP", "10s", "<none>"]


def test_endpointslice_columns_and_cells():
    rt = _type("discovery.k8s.io", "EndpointSlice")
    assert [c["name"] for c in to_table(rt, [], now=NOW)["columnDefinitions"]] == [
        "Name", "AddressType", "Ports", "Endpoints", "Age"]
    eps = {"addressType": "IPv4", "ports": [{"port": 80}, {"name": "x"}, {}, {"port": 9}],
           "endpoints": [{"addresses": [f"10.0.0.{i}"]} for i in range(5)]}
    assert _cells(rt, eps) == ["x", "IPv4", "80,x,* + 1 more...", "10.0.0.0,10.0.0.1,10.0.0.2 + 2 more...", "10s"]
    assert _cells(rt, {"addressType": "IPv4"})[2:4] == ["<unset>", "<unset>"]


def _svc(**spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "d"}, "spec": dict(spec)}


def _created(obj: dict) -> tuple[dict, list[str]]:
    s = ServiceStrategy()
    s.default(obj)
    s.prepare_for_create(obj)
    return obj, [str(err) for err in s.validate(obj)]


def test_defaults_by_type():
    obj, errs = _created(_svc(type="LoadBalancer", ports=[{"port": 80, "name": "http"}], sessionAffinity="ClientIP"))
    assert errs == []
    spec = obj["spec"]
    assert spec["ports"] == [{"port": 80, "name": "http", "protocol": "TCP", "targetPort": 80}]
    assert spec["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 10800}}
    assert (spec["externalTrafficPolicy"], spec["internalTrafficPolicy"], spec["allocateLoadBalancerNodePorts"]) == (
        "Cluster", "Cluster", True)
    assert (spec["ipFamilies"], spec["ipFamilyPolicy"]) == (["IPv4"], "SingleStack")
    obj, errs = _created(_svc(type="ExternalName", externalName="db.example.com."))
    assert errs == [] and "ipFamilies" not in obj["spec"] and "internalTrafficPolicy" not in obj["spec"]
    obj, _ = _created(_svc(clusterIP="None"))
    assert obj["spec"]["ipFamilyPolicy"] == "RequireDualStack" and obj["spec"]["ipFamilies"] == ["IPv4", "IPv6"]


def test_validation_messages():
    _, errs = _created(_svc(type="NodePort", clusterIP="None", ports=[{"port": 0, "targetPort": "Bad_Name"}]))
    assert "spec.clusterIPs[0]: Invalid value: \"None\": may not be set to 'None' for NodePort services" in errs
    assert "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive" in errs
    assert ('spec.ports[0].targetPort: Invalid value: "Bad_Name": must contain only alpha-numeric characters '
            "(a-z, 0-9), and hyphens (-)") in errs
    _, errs = _created(_svc(type="Magic", ports=[{"port": 80}]))
    assert 'spec.type: Unsupported value: "Magic": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"' in errs
    _, errs = _created(_svc(type="ExternalName"))
    assert errs == ["spec.externalName: Required value"]
    _, errs = _created(_svc(ports=[{"port": 80}], externalTrafficPolicy="Local"))
    assert 'spec.externalTrafficPolicy: Invalid value: "Local": may only be set for externally-accessible services' in errs


def test_update_keeps_allocated_values_and_drops_type_dependent_ones():
    s = ServiceStrategy()
    old, _ = _created(_svc(type="NodePort", ports=[{"port": 80, "name": "a"}]))
    old["spec"] |= {"clusterIP": "10.96.0.9", "clusterIPs": ["10.96.0.9"]}
    old["spec"]["ports"][0]["nodePort"] = 30001
    new = _svc(type="NodePort", ports=[{"port": 80, "name": "a"}])  # a PUT of the manifest
    s.default(new)
    s.prepare_for_update(new, old)
    assert new["spec"]["clusterIP"] == "10.96.0.9" and new["spec"]["ports"][0]["nodePort"] == 30001
    assert s.validate_update(new, old) == []
    new = {**old, "spec": {**old["spec"], "type": "ClusterIP", "ports": [dict(old["spec"]["ports"][0])]}}
    s.prepare_for_update(new, old)
    assert "nodePort" not in new["spec"]["ports"][0] and "externalTrafficPolicy" not in new["spec"]
    assert s.validate_update(new, old) == []
    moved = {**old, "spec": {**old["spec"], "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"]}}
    assert [str(x) for x in s.validate_update(moved, old)] == [
        'spec.clusterIPs[0]: Invalid value: []string{"10.96.0.10"}: may not change once set']
