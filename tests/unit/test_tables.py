"""Table responses: built-in printers, CRD printer columns, durations, includeObject."""

from __future__ import annotations

import time

import pytest

from fleetplane.apis import builtin_types, logical_cluster_type, workload_types
from fleetplane.registry.printers import AGE, NAME, Column, Printer
from fleetplane.registry.types import PrinterColumn, ResourceType
from fleetplane.server import tables
from fleetplane.server.tables import human_duration, to_table

NOW = 1_700_000_000.0


def ts(seconds_ago: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW - seconds_ago))


def builtin(group: str, kind: str) -> ResourceType:
    for rt in [*builtin_types(), logical_cluster_type()]:
        if rt.group == group and rt.kind == kind:
            return rt
    raise KeyError(kind)


def workload(group: str, kind: str, plural: str) -> ResourceType:
    return next(rt for rt in workload_types() if (rt.group, rt.kind, rt.plural) == (group, kind, plural))


def cells(rt: ResourceType, obj: dict) -> list:
    return to_table(rt, [obj], now=NOW)["rows"][0]["cells"]


def columns(rt: ResourceType) -> list[tuple[str, str, int]]:
    return [(c["name"], c["type"], c["priority"]) for c in to_table(rt, [], now=NOW)["columnDefinitions"]]


# -- human durations ----------------------------------------------------------------------------


@pytest.mark.parametrize(("seconds", "expected"), [
    (-5, "<invalid>"), (-1.5, "0s"), (0, "0s"), (5, "5s"), (119, "119s"), (120, "2m"), (182, "3m2s"),
    (599, "9m59s"), (600, "10m"), (179 * 60, "179m"), (3 * 3600, "3h"), (4 * 3600 + 5 * 60, "4h5m"),
    (8 * 3600, "8h"), (47 * 3600 + 59 * 60, "47h"), (48 * 3600, "2d"), (3 * 86400 + 5 * 3600, "3d5h"),
    (8 * 86400, "8d"), (400 * 86400, "400d"), (2 * 365 * 86400, "2y"), (3 * 365 * 86400 + 10 * 86400, "3y10d"),
    (9 * 365 * 86400, "9y"),
])
def test_human_duration(seconds, expected):
    assert human_duration(seconds) == expected


# -- JSONPath -----------------------------------------------------------------------------------

# -- custom resources ------------------------------------------------------------------------------


def widget(columns=None) -> ResourceType:
    return ResourceType("example.com", "v1", "Widget", "widgets", "widget", True, custom=True,
                        printer_columns=columns)


WIDGET_COLUMNS = (
    PrinterColumn("Replicas", "integer", ".spec.replicas", "desired"),
    PrinterColumn("Ratio", "number", ".spec.ratio"),
    PrinterColumn("Paused", "boolean", ".spec.paused"),
    PrinterColumn("Ready", "string", '.status.conditions[?(@.type=="Ready")].status'),
    PrinterColumn("Images", "string", ".spec.containers[*].image", priority=1),
    PrinterColumn("Selector", "string", ".spec.selector"),
    PrinterColumn("Size", "string", ".spec.size"),
    PrinterColumn("Started", "date", ".status.startTime", format="date"),
    PrinterColumn("Bad", "date", ".spec.notATime"),
    PrinterColumn("Missing", "string", ".spec.nothing"),
    PrinterColumn("Wrong", "integer", ".spec.paused"),
)

WIDGET = {
    "apiVersion": "example.com/v1", "kind": "Widget",
    "metadata": {"name": "w1", "namespace": "default", "creationTimestamp": ts(300), "resourceVersion": "7",
                 "labels": {"app": "x"}, "uid": "u1"},
    "spec": {"replicas": 4, "ratio": 2, "paused": True, "containers": [{"image": "nginx"}, {"image": "redis"}],
             "selector": {"matchLabels": {"b": "<2>", "a": 1}}, "size": 1.5, "notATime": "yesterday"},
    "status": {"conditions": [{"type": "Ready", "status": "True"}], "startTime": ts(182)},
}


def test_custom_resource_columns_and_cells():
    rt = widget(WIDGET_COLUMNS)
    table = to_table(rt, [WIDGET], now=NOW)
    defs = table["columnDefinitions"]
    assert defs[0]["name"] == "Name" and defs[0]["format"] == "name" and defs[0]["type"] == "string"
    assert defs[1] == {"name": "Replicas", "type": "integer", "format": "", "description": "desired", "priority": 0}
    assert defs[5]["priority"] == 1
    assert defs[8]["format"] == "date"
    assert table["rows"][0]["cells"] == [
        "w1", 4, 2.0, True, "True", "nginx", '{"matchLabels":{"a":1,"b":"\\u003c2\\u003e"}}', "1.5", "3m2s", "<invalid>", None, None]


def test_custom_resource_default_age_column():
    rt = widget()
    table = to_table(rt, [WIDGET], now=NOW)
    assert [(c["name"], c["type"]) for c in table["columnDefinitions"]] == [("Name", "string"), ("Age", "date")]
    assert table["columnDefinitions"][1]["description"].startswith("CreationTimestamp")
    assert table["rows"][0]["cells"] == ["w1", "5m"]


# -- includeObject, metadata, headers --------------------------------------------------------------


def test_include_object_variants():
    rt = widget(WIDGET_COLUMNS)
    meta = to_table(rt, [WIDGET], now=NOW)["rows"][0]["object"]
    assert meta == {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": WIDGET["metadata"]}
    assert to_table(rt, [WIDGET], include_object="Object", now=NOW)["rows"][0]["object"] == WIDGET
    assert "object" not in to_table(rt, [WIDGET], include_object="None", now=NOW)["rows"][0]
    with pytest.raises(ValueError):
        to_table(rt, [WIDGET], include_object="Everything")


def test_table_envelope_and_list_metadata():
    rt = builtin("", "ConfigMap")
    table = to_table(rt, [], list_metadata={"resourceVersion": "42", "continue": "tok", "remainingItemCount": 3})
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    assert table["metadata"] == {"resourceVersion": "42", "continue": "tok", "remainingItemCount": 3}
    assert table["rows"] == []
    single = to_table(rt, [{"metadata": {"name": "x", "resourceVersion": "9"}}])
    assert single["metadata"] == {"resourceVersion": "9"}
    assert to_table(rt, [], no_headers=True)["columnDefinitions"] == []


def test_ten_thousand_rows():
    """Every row present and right (speed is for the benchmarks, not an assertion here)."""
    rt = widget(WIDGET_COLUMNS)
    objs = [dict(WIDGET, metadata=dict(WIDGET["metadata"], name=f"w{i}")) for i in range(10_000)]
    table = to_table(rt, objs, now=NOW)
    assert len(table["rows"]) == 10_000 and table["rows"][-1]["cells"][0] == "w9999"
    cm = builtin("", "ConfigMap")
    cms = [{"metadata": {"name": f"c{i}", "creationTimestamp": ts(i)}, "data": {"a": "b"}} for i in range(10_000)]
    assert [r["cells"][:2] for r in to_table(cm, cms, now=NOW)["rows"][:2]] == [["c0", 1], ["c1", 1]]


# -- built-in printers ---------------------------------------------------------------------------


def test_namespace_configmap_secret_serviceaccount_lease():
    ns = builtin("", "Namespace")
    assert columns(ns) == [("Name", "string", 0), ("Status", "string", 0), ("Age", "string", 0)]
    assert cells(ns, {"metadata": {"name": "default", "creationTimestamp": ts(90000)},
                      "status": {"phase": "Active"}}) == ["default", "Active", "25h"]
    cm = builtin("", "ConfigMap")
    assert [c[0] for c in columns(cm)] == ["Name", "Data", "Age"]
    assert cells(cm, {"metadata": {"name": "c", "creationTimestamp": ts(5)}, "data": {"a": "1"},
                      "binaryData": {"b": "AA=="}}) == ["c", 2, "5s"]
    secret = builtin("", "Secret")
    assert [c[0] for c in columns(secret)] == ["Name", "Type", "Data", "Age"]
    assert cells(secret, {"metadata": {"name": "s", "creationTimestamp": ts(60)}, "type": "Opaque",
                          "data": {"x": "eA=="}}) == ["s", "Opaque", 1, "60s"]
    sa = builtin("", "ServiceAccount")
    assert cells(sa, {"metadata": {"name": "default"}, "secrets": [{"name": "t"}]}) == ["default", 1, "<unknown>"]
    lease = builtin("coordination.k8s.io", "Lease")
    assert [c[0] for c in columns(lease)] == ["Name", "Holder", "Age"]
    assert cells(lease, {"metadata": {"name": "l", "creationTimestamp": ts(10)},
                         "spec": {"holderIdentity": "me"}}) == ["l", "me", "10s"]
    assert to_table(cm, [], now=NOW)["columnDefinitions"][1]["description"].startswith("Data contains")


def test_crd_uses_default_table():
    crd = builtin("apiextensions.k8s.io", "CustomResourceDefinition")
    table = to_table(crd, [{"metadata": {"name": "widgets.example.com", "creationTimestamp": "2024-05-06T07:08:09Z"}}])
    assert [(c["name"], c["type"]) for c in table["columnDefinitions"]] == [("Name", "string"), ("Created At", "date")]
    assert table["rows"][0]["cells"] == ["widgets.example.com", "2024-05-06T07:08:09Z"]


def test_logical_cluster_printer():
    lc = builtin("tenancy.fleetplane.io", "LogicalCluster")
    assert [c[0] for c in columns(lc)] == ["Name", "Phase", "URL", "Age"]
    assert cells(lc, {"metadata": {"name": "root:team-a", "creationTimestamp": ts(7200)},
                      "status": {"phase": "Ready"}}) == ["root:team-a", "Ready", "/clusters/root:team-a", "120m"]


def test_core_event_printer():
    ev = builtin("", "Event")
    assert columns(ev) == [
        ("Last Seen", "string", 0), ("Type", "string", 0), ("Reason", "string", 0), ("Object", "string", 0),
        ("Subobject", "string", 1), ("Source", "string", 1), ("Message", "string", 0), ("First Seen", "string", 1),
        ("Count", "string", 1), ("Name", "string", 1)]
    obj = {"metadata": {"name": "p.123"}, "involvedObject": {"kind": "Pod", "name": "p", "fieldPath": "spec.containers{c}"},
           "reason": "Pulled", "message": " done \n", "type": "Normal", "source": {"component": "kubelet", "host": "n1"},
           "firstTimestamp": ts(600), "lastTimestamp": ts(30), "count": 3}
    assert cells(ev, obj) == ["30s", "Normal", "Pulled", "pod/p", "spec.containers{c}", "kubelet, n1", "done",
                              "10m", 3, "p.123"]
    new_style = {"metadata": {"name": "e"}, "involvedObject": {"kind": "Node"}, "eventTime": "2023-11-14T22:12:20.000000Z",
                 "reportingComponent": "ctrl", "type": "Warning", "reason": "X", "message": "m"}
    got = cells(ev, new_style)
    assert got[3] == "node" and got[5] == "ctrl" and got[8] == 1 and got[0] == got[7]


def test_events_v1_printer():
    ev = builtin("events.k8s.io", "Event")
    obj = {"metadata": {"name": "e1"}, "regarding": {"kind": "Deployment", "name": "d"}, "note": "scaled",
           "reason": "ScalingReplicaSet", "type": "Normal", "reportingController": "deployment-controller",
           "reportingInstance": "kcm-1", "eventTime": ts(45), "series": {"count": 4, "lastObservedTime": ts(5)}}
    assert cells(ev, obj) == ["5s", "Normal", "ScalingReplicaSet", "deployment/d", "",
                              "deployment-controller, kcm-1", "scaled", "45s", 4, "e1"]


def test_deployment_and_replicaset_printers():
    dep = workload("apps", "Deployment", "deployments")
    assert columns(dep) == [("Name", "string", 0), ("Ready", "string", 0), ("Up-to-date", "string", 0),
                            ("Available", "string", 0), ("Age", "string", 0), ("Containers", "string", 1),
                            ("Images", "string", 1), ("Selector", "string", 1)]
    obj = {"metadata": {"name": "web", "creationTimestamp": ts(3600)},
           "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"},
                                                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}]},
                    "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1"}, {"name": "s", "image": "side"}]}}},
           "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}}
    assert cells(dep, obj) == ["web", "2/3", 3, 2, "60m", "nginx,s", "nginx:1,side", "app=web,tier in (a,b)"]
    rs = workload("apps", "ReplicaSet", "replicasets")
    assert [c[0] for c in columns(rs)] == ["Name", "Desired", "Current", "Ready", "Age", "Containers", "Images", "Selector"]
    assert cells(rs, {"metadata": {"name": "web-1"}, "spec": {"replicas": 2}, "status": {"replicas": 2}}) == [
        "web-1", 2, 2, 0, "<unknown>", "", "", "<none>"]


def test_daemonset_statefulset_and_pvc_printers():
    ds = workload("apps", "DaemonSet", "daemonsets")
    assert columns(ds) == [("Name", "string", 0), ("Desired", "integer", 0), ("Current", "integer", 0), ("Ready", "integer", 0),
                           ("Up-to-date", "integer", 0), ("Available", "integer", 0), ("Node Selector", "string", 0),
                           ("Age", "string", 0), ("Containers", "string", 1), ("Images", "string", 1), ("Selector", "string", 1)]
    obj = {"metadata": {"name": "agent", "creationTimestamp": ts(60)},
           "spec": {"selector": {"matchLabels": {"app": "agent"}},
                    "template": {"spec": {"nodeSelector": {"zone": "a", "disk": "ssd"}, "containers": [{"name": "a", "image": "busybox"}]}}},
           "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2, "updatedNumberScheduled": 1,
                      "numberAvailable": 2}}
    assert cells(ds, obj) == ["agent", 3, 3, 2, 1, 2, "disk=ssd,zone=a", "60s", "a", "busybox", "app=agent"]
    assert cells(ds, {"metadata": {"name": "x"}, "spec": {}})[:7] == ["x", 0, 0, 0, 0, 0, "<none>"]
    sts = workload("apps", "StatefulSet", "statefulsets")
    assert columns(sts) == [("Name", "string", 0), ("Ready", "string", 0), ("Age", "string", 0), ("Containers", "string", 1),
                            ("Images", "string", 1)]
    assert cells(sts, {"metadata": {"name": "web", "creationTimestamp": ts(7200)}, "spec": {"replicas": 3, "template": {
        "spec": {"containers": [{"name": "db", "image": "postgres"}]}}}, "status": {"readyReplicas": 1}}) == [
        "web", "1/3", "120m", "db", "postgres"]
    pvc = workload("", "PersistentVolumeClaim", "persistentvolumeclaims")
    assert [c[0] for c in columns(pvc)] == ["Name", "Status", "Volume", "Capacity", "Access Modes", "StorageClass",
                                           "VolumeAttributesClass", "Age", "VolumeMode"]
    assert columns(pvc)[-1] == ("VolumeMode", "string", 1)
    bound = {"metadata": {"name": "data-web-0", "creationTimestamp": ts(5)},
             "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "volumeName": "pvc-1",
                      "storageClassName": "standard", "volumeMode": "Filesystem"},
             "status": {"phase": "Bound", "accessModes": ["ReadOnlyMany", "ReadWriteOnce"], "capacity": {"storage": "2Gi"}}}
    assert cells(pvc, bound) == ["data-web-0", "Bound", "pvc-1", "2Gi", "RWO,ROX", "standard", "<unset>", "5s", "Filesystem"]
    pending = {"metadata": {"name": "p", "deletionTimestamp": ts(0)}, "spec": {"accessModes": ["ReadWriteOnce"]},
               "status": {"phase": "Pending", "accessModes": ["ReadWriteOnce"]}}
    assert cells(pvc, pending) == ["p", "Terminating", "", "", "", "", "<unset>", "<unknown>", "<unset>"]


def test_pod_printer():
    pod = workload("", "Pod", "pods")
    assert [c[0] for c in columns(pod)] == ["Name", "Ready", "Status", "Restarts", "Age", "IP", "Node",
                                            "Nominated Node", "Readiness Gates"]
    running = {
        "metadata": {"name": "p", "creationTimestamp": ts(120)},
        "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "n1",
                 "readinessGates": [{"conditionType": "example.com/gate"}]},
        "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.5"}],
                   "conditions": [{"type": "Ready", "status": "True"}, {"type": "example.com/gate", "status": "True"}],
                   "containerStatuses": [
                       {"name": "a", "ready": True, "restartCount": 0, "state": {"running": {}}},
                       {"name": "b", "ready": True, "restartCount": 2, "state": {"running": {}},
                        "lastState": {"terminated": {"finishedAt": ts(65)}}},
                   ]},
    }
    assert cells(pod, running) == ["p", "2/2", "Running", "2 (65s ago)", "2m", "10.0.0.5", "n1", "<none>", "1/1"]
    pending = {"metadata": {"name": "q"}, "spec": {"containers": [{"name": "a"}]},
               "status": {"phase": "Pending", "containerStatuses": [
                   {"name": "a", "ready": False, "state": {"waiting": {"reason": "ImagePullBackOff"}}}]}}
    assert cells(pod, pending)[:4] == ["q", "0/1", "ImagePullBackOff", "0"]
    init = {"metadata": {"name": "i"}, "spec": {"initContainers": [{"name": "setup"}], "containers": [{"name": "a"}]},
            "status": {"phase": "Pending", "initContainerStatuses": [{"name": "setup", "state": {"running": {}}}]}}
    assert cells(pod, init)[2] == "Init:0/1"
    done = {"metadata": {"name": "d"}, "spec": {"containers": [{"name": "a"}]},
            "status": {"phase": "Succeeded", "containerStatuses": [
                {"name": "a", "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]}}
    row = to_table(pod, [done], now=NOW)["rows"][0]
    assert row["cells"][2] == "Completed"
    assert row["conditions"] == [{"type": "Completed", "status": "True", "reason": "Succeeded",
                                  "message": "The pod has completed successfully."}]
    deleting = dict(running, metadata={"name": "p", "deletionTimestamp": ts(1)})
    assert cells(pod, deleting)[2] == "Terminating"


def test_node_printer():
    node = workload("", "Node", "nodes")
    assert [c[0] for c in columns(node)] == ["Name", "Status", "Roles", "Age", "Version", "Internal-IP", "External-IP",
                                             "OS-Image", "Kernel-Version", "Container-Runtime"]
    obj = {"metadata": {"name": "n1", "creationTimestamp": ts(86400 * 3),
                        "labels": {"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/worker": "",
                                   "kubernetes.io/hostname": "n1"}},
           "spec": {"unschedulable": True},
           "status": {"conditions": [{"type": "Ready", "status": "True"}],
                      "addresses": [{"type": "InternalIP", "address": "192.0.2.1"}],
                      "nodeInfo": {"kubeletVersion": "v1.32.4", "osImage": "Debian", "kernelVersion": "6.1",
                                   "containerRuntimeVersion": "containerd://1.7"}}}
    assert cells(node, obj) == ["n1", "Ready,SchedulingDisabled", "control-plane,worker", "3d", "v1.32.4",
                                "192.0.2.1", "<none>", "Debian", "6.1", "containerd://1.7"]
    assert cells(node, {"metadata": {"name": "n2"}})[1:3] == ["Unknown", "<none>"]


def test_flow_schema_and_priority_level_printers():
    fs = builtin("flowcontrol.apiserver.k8s.io", "FlowSchema")
    assert [c[0] for c in columns(fs)] == ["Name", "PriorityLevel", "MatchingPrecedence", "DistinguisherMethod", "Age",
                                           "MissingPL"]
    obj = {"metadata": {"name": "probes", "creationTimestamp": ts(60)},
           "spec": {"priorityLevelConfiguration": {"name": "exempt"}, "matchingPrecedence": 2}}
    assert cells(fs, obj) == ["probes", "exempt", 2, "<none>", "60s", "?"]
    obj["spec"]["distinguisherMethod"] = {"type": "ByUser"}
    obj["status"] = {"conditions": [{"type": "Dangling", "status": "True"}]}
    assert cells(fs, obj)[3:] == ["ByUser", "60s", "True"]
    pl = builtin("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration")
    assert [c[0] for c in columns(pl)] == ["Name", "Type", "NominalConcurrencyShares", "Queues", "HandSize",
                                           "QueueLengthLimit", "Age"]
    assert cells(pl, {"metadata": {"name": "exempt", "creationTimestamp": ts(5)}, "spec": {"type": "Exempt"}}) == \
        ["exempt", "Exempt", "<none>", "<none>", "<none>", "<none>", "5s"]
    limited = {"type": "Limited", "limited": {"nominalConcurrencyShares": 20, "limitResponse": {
        "type": "Queue", "queuing": {"queues": 128, "handSize": 6, "queueLengthLimit": 50}}}}
    assert cells(pl, {"metadata": {"name": "g", "creationTimestamp": ts(5)}, "spec": limited}) == \
        ["g", "Limited", 20, 128, 6, 50, "5s"]


def test_a_new_kind_prints_with_its_printer():
    rt = ResourceType("example.io", "v1", "Thing", "things", "thing", True)
    assert [c["name"] for c in to_table(rt, [])["columnDefinitions"]] == ["Name", "Created At"]
    rt.printer = Printer((NAME, Column("Size", "integer", "how big"), AGE),
                         lambda o, clock: [o["metadata"]["name"], o["size"], clock.since(o["metadata"].get("creationTimestamp"))])
    table = to_table(rt, [{"metadata": {"name": "t", "creationTimestamp": ts(3)}, "size": 2}], now=NOW)
    assert table["rows"][0]["cells"] == ["t", 2, "3s"]
    assert table["columnDefinitions"][1]["description"] == "how big"


def test_builtin_column_descriptions_come_from_the_schemas():
    printed = [rt for rt in [*builtin_types(), logical_cluster_type(), *workload_types()] if rt.printer is not None]
    assert len(printed) == 25  # every kind with a printer in kube (HorizontalPodAutoscalers in v1 and v2, webhook configurations and admission policies, FlowSchemas and PriorityLevelConfigurations included); Roles, ClusterRoles, CRDs use the default
    for rt in printed:
        assert rt.printer is not None
        for definition in rt.printer.column_definitions():
            assert definition["description"], (rt.group, rt.kind, definition["name"])
    secret_type = tables.printer_for(builtin("", "Secret")).column_definitions()[1]
    assert secret_type["description"].startswith("Used to facilitate programmatic handling of secret data")


def test_timestamps_with_offsets_and_fractions():
    cm = builtin("", "ConfigMap")
    for stamp in ("2023-11-14T22:13:09.512345678Z", "2023-11-14T23:13:10+01:00"):
        assert cells(cm, {"metadata": {"name": "c", "creationTimestamp": stamp}})[2] == "10s"
    assert cells(cm, {"metadata": {"name": "c", "creationTimestamp": "0001-01-01T00:00:00Z"}})[2] == "<unknown>"
    assert cells(cm, {"metadata": {"name": "c", "creationTimestamp": "garbage"}})[2] == "<unknown>"
