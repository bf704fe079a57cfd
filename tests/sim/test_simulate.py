"""``fleetplane cluster simulate`` as a process, driven with the real kubectl and the kubernetes client:
it should look and behave like a real cluster to them."""

from __future__ import annotations

import json
import textwrap

import yaml

from ..harness import Kubectl, wait_for
from .conftest import Sim


def _rollout(k: Kubectl, name: str, timeout: str = "30s") -> str:
    return k("rollout", "status", f"deployment/{name}", f"--timeout={timeout}").out


def _pods(k: Kubectl, *selector: str) -> list[dict]:
    """The pods that are not on their way out: a deleted Pod stays, Terminating, until the
    simulated kubelet has stopped it (as on a real cluster), and the controllers no longer count it."""
    return [p for p in k.get_json("pods", *selector)["items"] if not p["metadata"].get("deletionTimestamp")]


def _rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.strip().splitlines()]


def _condition(obj: dict, ctype: str) -> dict:
    return next((c for c in obj.get("status", {}).get("conditions") or [] if c["type"] == ctype), {})


def _events(k: Kubectl, *args: str) -> list[dict]:
    return k.get_json("events", *args)["items"]


def test_version_nodes_leases_and_kubeconfig(sim: Sim):
    code, version = sim.json("GET", "/version", auth=False)
    assert code == 200 and version["gitVersion"] == "v1.32.0+fleetplane-sim" and version["minor"] == "32"
    k = Kubectl(sim.kubeconfig)
    assert "Server Version: v1.32.0+fleetplane-sim" in k("version").out
    cfg = yaml.safe_load(sim.kubeconfig.read_text())
    assert cfg["current-context"] == "sim" and cfg["clusters"][0]["cluster"]["server"] == sim.url
    rows = _rows(k("get", "nodes", "-o", "wide").out)
    assert rows[0][:8] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE"]
    assert [(r[0], r[1], r[2], r[4], r[5]) for r in rows[1:]] == [
        (f"sim-node-{i}", "Ready", "<none>", "v1.32.0", f"172.18.0.{i + 2}") for i in range(3)]
    node = k.get_json("node", "sim-node-1")
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "sim-node-1"
    assert node["metadata"]["labels"]["topology.kubernetes.io/region"] == "test"
    assert node["metadata"]["labels"]["tier"] == "gold"
    assert node["status"]["allocatable"] == node["status"]["capacity"]
    assert {k_: node["status"]["capacity"][k_] for k_ in ("cpu", "memory", "pods")} == {"cpu": "4", "memory": "8Gi", "pods": "110"}
    assert node["spec"]["podCIDR"] == "10.244.1.0/24"
    assert _condition(node, "Ready")["reason"] == "KubeletReady"
    leases = wait_for(lambda: len(k.get_json("leases", "-n", "kube-node-lease")["items"]) == 3 and
                      k.get_json("leases", "-n", "kube-node-lease")["items"], what="node leases")
    assert sorted(lease["spec"]["holderIdentity"] for lease in leases) == ["sim-node-0", "sim-node-1", "sim-node-2"]
    assert all(lease["metadata"]["ownerReferences"][0]["kind"] == "Node" for lease in leases)
    resources = k("api-resources").out
    for line in ("deployments ", "deploy ", "replicasets ", "rs ", "pods ", "po ", "nodes ", "no "):
        assert line in resources
    assert k("get", "nodes", "--field-selector", "spec.unschedulable=false", "-o", "name").out.count("node/") == 3


def test_create_deployment_pods_scheduled_and_ready(kubectl: Kubectl, ns: str):
    # kubectl's create generators POST protobuf
    assert kubectl("create", "deployment", "web", "--image=nginx", "--replicas=3").out.strip() == "deployment.apps/web created"
    assert 'deployment "web" successfully rolled out' in _rollout(kubectl, "web")
    rows = _rows(kubectl("get", "deployments").out)
    assert rows[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert rows[1][:4] == ["web", "3/3", "3", "3"]
    rows = _rows(kubectl("get", "pods", "-o", "wide").out)
    assert rows[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED", "NODE", "READINESS", "GATES"]
    assert len(rows) == 4
    for r in rows[1:]:
        assert r[1:4] == ["1/1", "Running", "0"] and r[5].startswith("10.244.") and r[6].startswith("sim-node-"), r
    assert len({r[6] for r in rows[1:]}) == 3  # spread across the nodes
    assert len({r[5] for r in rows[1:]}) == 3

    d = kubectl.get_json("deployment", "web")
    assert d["spec"]["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}
    assert d["spec"]["revisionHistoryLimit"] == 10 and d["spec"]["progressDeadlineSeconds"] == 600
    assert d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "Always"
    st = d["status"]
    assert (st["replicas"], st["updatedReplicas"], st["readyReplicas"], st["availableReplicas"]) == (3, 3, 3, 3)
    assert st["observedGeneration"] == d["metadata"]["generation"] == 1
    assert (_condition(d, "Available")["status"], _condition(d, "Available")["reason"]) == ("True", "MinimumReplicasAvailable")
    assert (_condition(d, "Progressing")["status"], _condition(d, "Progressing")["reason"]) == ("True", "NewReplicaSetAvailable")
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"

    [rs] = kubectl.get_json("replicasets")["items"]
    h = rs["metadata"]["labels"]["pod-template-hash"]
    assert rs["metadata"]["name"] == f"web-{h}"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": h}
    assert rs["metadata"]["ownerReferences"][0]["kind"] == "Deployment" and rs["metadata"]["ownerReferences"][0]["controller"]
    ann = rs["metadata"]["annotations"]
    assert (ann["deployment.kubernetes.io/revision"], ann["deployment.kubernetes.io/desired-replicas"],
            ann["deployment.kubernetes.io/max-replicas"]) == ("1", "3", "4")
    assert (rs["status"]["replicas"], rs["status"]["readyReplicas"], rs["status"]["availableReplicas"],
            rs["status"]["fullyLabeledReplicas"]) == (3, 3, 3, 3)

    pod = _pods(kubectl)[0]
    assert pod["metadata"]["generateName"] == f"web-{h}-" and pod["metadata"]["ownerReferences"][0]["name"] == f"web-{h}"
    assert pod["status"]["phase"] == "Running" and pod["status"]["hostIP"].startswith("172.18.0.")
    assert pod["status"]["qosClass"] == "BestEffort" and pod["spec"]["serviceAccountName"] == "default"
    assert {c["type"]: c["status"] for c in pod["status"]["conditions"]} == {
        "PodReadyToStartContainers": "True", "Initialized": "True", "Ready": "True", "ContainersReady": "True", "PodScheduled": "True"}
    cs = pod["status"]["containerStatuses"][0]
    assert cs["ready"] and cs["started"] and "running" in cs["state"] and cs["image"] == "docker.io/library/nginx:latest"
    assert cs["containerID"].startswith("containerd://")

    reasons = wait_for(lambda: {"Scheduled", "SuccessfulCreate", "ScalingReplicaSet", "Started"} <=
                       {e["reason"] for e in _events(kubectl)}, what="events")
    assert reasons
    scheduled = [e for e in _events(kubectl) if e["reason"] == "Scheduled"]
    assert scheduled[0]["source"]["component"] == "default-scheduler"
    assert scheduled[0]["message"].startswith(f"Successfully assigned {ns}/web-{h}-")
    described = kubectl("describe", "pod", pod["metadata"]["name"]).out
    assert "Controlled By:  ReplicaSet/web-" in described and "Started container nginx" in described


def test_rolling_update_history_and_undo(kubectl: Kubectl):
    kubectl("create", "deployment", "web", "--image=nginx:1.26", "--replicas=4")
    _rollout(kubectl, "web")
    kubectl("set", "image", "deployment/web", "nginx=nginx:1.27")
    out = _rollout(kubectl, "web")
    assert 'deployment "web" successfully rolled out' in out
    rss = sorted(kubectl.get_json("replicasets")["items"], key=lambda r: r["metadata"]["annotations"]["deployment.kubernetes.io/revision"])
    assert [(r["metadata"]["annotations"]["deployment.kubernetes.io/revision"], r["spec"]["replicas"]) for r in rss] == [("1", 0), ("2", 4)]
    assert rss[1]["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    d = kubectl.get_json("deployment", "web")
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2" and d["metadata"]["generation"] == 2
    new_hash = rss[1]["metadata"]["labels"]["pod-template-hash"]
    pods = _pods(kubectl)
    assert len(pods) == 4 and all(p["metadata"]["labels"]["pod-template-hash"] == new_hash for p in pods)
    history = kubectl("rollout", "history", "deployment/web").out
    assert "REVISION" in history and "\n1 " in history and "\n2 " in history
    messages = [e["message"] for e in _events(kubectl, "--field-selector", "reason=ScalingReplicaSet")]
    old = rss[0]["metadata"]["name"]
    assert f"Scaled down replica set {old} from 1 to 0" in messages, messages

    kubectl("rollout", "undo", "deployment/web")
    _rollout(kubectl, "web")
    back = kubectl.get_json("replicaset", old)
    assert back["spec"]["replicas"] == 4
    assert back["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    assert back["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"] == "1"
    assert {p["spec"]["containers"][0]["image"] for p in _pods(kubectl)} == {"nginx:1.26"}


def test_scale_pod_deletion_and_delete_deployment(kubectl: Kubectl):
    kubectl("create", "deployment", "web", "--image=nginx", "--replicas=2")
    _rollout(kubectl, "web")
    assert kubectl("scale", "deployment", "web", "--replicas=5").out.strip() == "deployment.apps/web scaled"
    _rollout(kubectl, "web")
    assert _rows(kubectl("get", "deploy", "web").out)[1][:4] == ["web", "5/5", "5", "5"]
    kubectl("scale", "deployment", "web", "--replicas=2")
    wait_for(lambda: len(_pods(kubectl)) == 2, what="scale down to 2 pods")
    victim = _pods(kubectl)[0]["metadata"]["name"]
    kubectl("delete", "pod", victim)
    wait_for(lambda: victim not in {p["metadata"]["name"] for p in _pods(kubectl)} and len(_pods(kubectl)) == 2
             and all(p["status"].get("phase") == "Running" for p in _pods(kubectl)), what="a replacement pod")
    _rollout(kubectl, "web")
    scale = json.loads(kubectl("get", "--raw", f"/apis/apps/v1/namespaces/{kubectl.namespace}/deployments/web/scale").out)
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 2 and scale["status"]["replicas"] == 2
    assert kubectl("delete", "deployment", "web").out.strip() == 'deployment.apps "web" deleted'
    wait_for(lambda: not kubectl.get_json("replicasets")["items"] and not _pods(kubectl), what="ReplicaSets and pods collected")


BIG = textwrap.dedent("""\
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: big}
    spec:
      replicas: 4
      progressDeadlineSeconds: 2
      selector: {matchLabels: {app: big}}
      template:
        metadata: {labels: {app: big}}
        spec:
          containers:
          - name: c
            image: busybox:1.36
            resources: {requests: {cpu: "3", memory: 1Gi}, limits: {memory: 1Gi}}
    """)


def test_pods_that_do_not_fit_stay_pending(kubectl: Kubectl):
    kubectl("apply", "-f", "-", stdin=BIG)
    try:
        def pending() -> list[dict]:
            pods = _pods(kubectl)
            waiting = [p for p in pods if _condition(p, "PodScheduled").get("reason") == "Unschedulable"]
            running = [p for p in pods if p["status"].get("phase") == "Running"]
            return waiting if len(running) == 3 and len(waiting) == 1 else []

        [pod] = wait_for(pending, what="3 running pods and 1 unschedulable")
        cond = _condition(pod, "PodScheduled")
        assert cond["status"] == "False" and pod["status"]["phase"] == "Pending" and "nodeName" not in pod["spec"]
        assert cond["message"] == ("0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: "
                                   "3 No preemption victims found for incoming pod.")
        assert pod["status"]["qosClass"] == "Burstable"
        rows = {r[0]: r for r in _rows(kubectl("get", "pods", "-o", "wide").out)[1:]}
        assert rows[pod["metadata"]["name"]][1:3] == ["0/1", "Pending"] and rows[pod["metadata"]["name"]][6] == "<none>"
        events = wait_for(lambda: _events(kubectl, "--field-selector", f"reason=FailedScheduling,involvedObject.name={pod['metadata']['name']}"),
                          what="a FailedScheduling event")
        assert events[0]["type"] == "Warning" and events[0]["message"] == cond["message"]
        assert "FailedScheduling" in kubectl("describe", "pod", pod["metadata"]["name"]).out
        d = wait_for(lambda: (d := kubectl.get_json("deployment", "big"))["status"].get("readyReplicas") == 3 and d, what="status")
        assert d["status"]["unavailableReplicas"] == 1 and _condition(d, "Available")["status"] == "True"
        assert _rows(kubectl("get", "deploy", "big").out)[1][:4] == ["big", "3/4", "4", "3"]
        progressing = wait_for(lambda: (c := _condition(kubectl.get_json("deployment", "big"), "Progressing")).get("status") == "False" and c,
                               timeout=10, what="the progress deadline to pass")
        assert progressing["reason"] == "ProgressDeadlineExceeded"
        assert progressing["message"] == f'ReplicaSet "{pod["metadata"]["ownerReferences"][0]["name"]}" has timed out progressing.'
        err = kubectl.fail("rollout", "status", "deployment/big", "--timeout=10s").err
        assert 'deployment "big" exceeded its progress deadline' in err
        # scaling down removes the unscheduled pod first, and the rollout completes
        kubectl("scale", "deployment", "big", "--replicas=3")
        wait_for(lambda: _condition(kubectl.get_json("deployment", "big"), "Progressing").get("reason") == "NewReplicaSetAvailable",
                 what="the rollout to complete")
        assert _rows(kubectl("get", "deploy", "big").out)[1][:4] == ["big", "3/3", "3", "3"]
        assert pod["metadata"]["name"] not in {p["metadata"]["name"] for p in _pods(kubectl)}
    finally:
        kubectl("delete", "deployment", "big")
        wait_for(lambda: not _pods(kubectl), what="big's pods gone")


NODE_SELECTOR_POD = textwrap.dedent("""\
    apiVersion: v1
    kind: Pod
    metadata: {name: picky}
    spec:
      nodeSelector: {disk: ssd}
      containers: [{name: c, image: nginx:1.27}]
    """)


def test_node_selector_cordon_and_node_changes(sim: Sim, kubectl: Kubectl):
    admin = Kubectl(sim.kubeconfig)
    kubectl("apply", "-f", "-", stdin=NODE_SELECTOR_POD)
    try:
        msg = wait_for(lambda: _condition(kubectl.get_json("pod", "picky"), "PodScheduled").get("message"), what="unschedulable")
        assert msg == ("0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: "
                       "0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
        admin("cordon", "sim-node-1")
        admin("label", "node", "sim-node-1", "disk=ssd")
        wait_for(lambda: "node(s) were unschedulable" in (_condition(kubectl.get_json("pod", "picky"), "PodScheduled").get("message") or ""),
                 what="the cordoned node named")
        assert "SchedulingDisabled" in admin("get", "node", "sim-node-1").out
        admin("uncordon", "sim-node-1")
        pod = wait_for(lambda: (p := kubectl.get_json("pod", "picky"))["status"].get("phase") == "Running" and p, what="scheduled")
        assert pod["spec"]["nodeName"] == "sim-node-1" and pod["status"]["podIP"].startswith("10.244.1.")
        assert kubectl("get", "pods", "--field-selector", "spec.nodeName=sim-node-1", "-o", "name").out.strip() == "pod/picky"
        assert kubectl("get", "pods", "--field-selector", "spec.nodeName=sim-node-0", "-o", "name").out.strip() == ""
        assert kubectl("get", "pods", "--field-selector", "status.phase=Running", "-o", "name").out.strip() == "pod/picky"
        err = kubectl.fail("patch", "pod", "picky", "-p", '{"spec":{"nodeName":"sim-node-0"}}').err
        assert "pod updates may not change fields other than `spec.containers[*].image`" in err
    finally:
        admin("uncordon", "sim-node-1")
        admin("label", "node", "sim-node-1", "disk-")


def test_validation_messages(kubectl: Kubectl):
    base = yaml.safe_load(BIG)
    base["metadata"]["name"] = "bad"

    def apply(mutate) -> str:
        obj = json.loads(json.dumps(base))
        mutate(obj)
        return kubectl.fail("apply", "-f", "-", stdin=json.dumps(obj)).err

    err = apply(lambda o: o["spec"]["template"]["metadata"].update(labels={"app": "other"}))
    assert ('The Deployment "bad" is invalid: spec.template.metadata.labels: Invalid value: '
            'map[string]string{"app":"other"}: `selector` does not match template `labels`') in err
    assert "spec.replicas: Invalid value: -1: must be greater than or equal to 0" in apply(lambda o: o["spec"].update(replicas=-1))
    assert "spec.template.spec.containers[0].image: Required value" in apply(
        lambda o: o["spec"]["template"]["spec"]["containers"][0].pop("image"))
    assert "spec.selector: Required value" in apply(lambda o: o["spec"].pop("selector"))
    assert "quantities must match the regular expression" in apply(
        lambda o: o["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"].update(cpu="lots"))
    assert 'Unsupported value: "Never": supported values: "Always"' in apply(
        lambda o: o["spec"]["template"]["spec"].update(restartPolicy="Never"))
    kubectl("create", "deployment", "sel", "--image=nginx", "--replicas=0")
    err = kubectl.fail("patch", "deployment", "sel", "--type=merge", "-p",
                       '{"spec":{"selector":{"matchLabels":{"app":"x"}},"template":{"metadata":{"labels":{"app":"x"}}}}}').err
    assert "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"x\"}" in err and "field is immutable" in err
    # quantities are stored canonically
    kubectl("create", "deployment", "q", "--image=nginx", "--replicas=0")
    kubectl("set", "resources", "deployment", "q", "--requests=cpu=0.5,memory=1024Mi")
    res = kubectl.get_json("deployment", "q")["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert res["requests"] == {"cpu": "500m", "memory": "1Gi"}


def test_python_clients_read_typed_objects(sim: Sim, ns: str):
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=str(sim.kubeconfig))
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "py"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "py"}},
                     "template": {"metadata": {"labels": {"app": "py"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx:1.27",
                                                           "readinessProbe": {"httpGet": {"port": 80}}}]}}}}
    apps.create_namespaced_deployment(ns, body)
    assert apps.read_namespaced_deployment("py", ns).status.replicas is None  # status: {} until the controller writes it
    wait_for(lambda: apps.read_namespaced_deployment("py", ns).status.ready_replicas == 2, timeout=20, what="ready")
    d = apps.read_namespaced_deployment("py", ns)
    assert d.status.conditions[0].type in ("Available", "Progressing") and d.status.observed_generation == 1
    probe = d.spec.template.spec.containers[0].readiness_probe
    assert (probe.period_seconds, probe.timeout_seconds, probe.http_get.scheme) == (10, 1, "HTTP")
    pods = core.list_namespaced_pod(ns, label_selector="app=py").items
    assert len(pods) == 2 and all(p.status.pod_ip and p.status.container_statuses[0].ready for p in pods)
    apps.patch_namespaced_deployment_scale("py", ns, {"spec": {"replicas": 3}})
    wait_for(lambda: apps.read_namespaced_deployment("py", ns).status.available_replicas == 3, timeout=20, what="scaled")
    assert apps.read_namespaced_deployment_scale("py", ns).status.replicas == 3
    nodes = core.list_node().items
    assert {n.metadata.name for n in nodes} == {"sim-node-0", "sim-node-1", "sim-node-2"}


def test_restart_keeps_state_and_converges(tmp_path):
    s = Sim(tmp_path / "restart", name="rs", nodes=2, extra=["--kubelet-delay", "1"]).start()
    k = Kubectl(s.kubeconfig, namespace="default")
    try:
        k("create", "deployment", "app", "--image=nginx", "--replicas=2")
        _rollout(k, "app")
        before = {p["metadata"]["name"]: p["status"]["podIP"] for p in _pods(k)}
        k("scale", "deployment", "app", "--replicas=3")
        wait_for(lambda: any(p["status"].get("startTime") and p["status"].get("phase") == "Pending"
                             for p in s.json("GET", "/api/v1/namespaces/default/pods")[1]["items"]),
                 interval=0.02, what="a pod in ContainerCreating")
    finally:
        assert s.stop() == 0, s.logs()
    assert "Traceback" not in s.log.read_text(), s.logs()
    s2 = Sim(s.data_dir, name="rs", port=s.port, nodes=2, extra=["--kubelet-delay", "1"]).start()
    try:
        _rollout(k, "app")
        after = {p["metadata"]["name"]: p["status"]["podIP"] for p in _pods(k)}
        assert len(after) == 3 and all(after[name] == ip for name, ip in before.items())
        k("scale", "deployment", "app", "--replicas=5")
        _rollout(k, "app")
        ips = [p["status"]["podIP"] for p in _pods(k)]
        assert len(ips) == 5 and len(set(ips)) == 5
        assert _rows(k("get", "deploy").out)[1][:4] == ["app", "5/5", "5", "5"]
    finally:
        assert s2.stop() == 0, s2.logs()


POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "plain"},
       "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}], "volumes": [{"name": "scratch"}]}}


def test_pod_defaulting_and_disabled_admission_plugins(sim: Sim, ns: str, tmp_path):
    """A volume with no source defaults to emptyDir (SetDefaults_Volume); the ServiceAccount and
    DefaultTolerationSeconds plugins default a Pod unless --disable-admission-plugins turns them off,
    as kube's own test/cmd runs its apiserver."""
    code, pod = sim.json("POST", f"/api/v1/namespaces/{ns}/pods", POD)
    assert code == 201, pod
    assert pod["spec"]["volumes"][0] == {"name": "scratch", "emptyDir": {}}
    assert pod["spec"]["serviceAccountName"] == "default"
    assert {t["key"] for t in pod["spec"]["tolerations"]} == {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}
    bare = Sim(tmp_path / "bare", name="bare", nodes=1,
               extra=["--disable-admission-plugins", "ServiceAccount,DefaultTolerationSeconds"]).start()
    try:
        code, pod = bare.json("POST", "/api/v1/namespaces/default/pods", POD)
        assert code == 201, pod
        assert "serviceAccountName" not in pod["spec"] and "tolerations" not in pod["spec"]
        assert pod["spec"]["volumes"][0] == {"name": "scratch", "emptyDir": {}}
    finally:
        assert bare.stop() == 0, bare.logs()
    wrong = Sim(tmp_path / "wrong", name="wrong", nodes=1, extra=["--disable-admission-plugins", "NoSuchPlugin"])
    wrong.start(wait=False)
    assert wrong.proc is not None and wrong.proc.wait(timeout=60) != 0
    assert "unknown admission plugins ['NoSuchPlugin']" in wrong.logs()


def test_managed_fields_are_what_the_client_sent_not_admission_defaults(kubectl: Kubectl, sim: Sim, ns: str):
    """kube computes managedFields before mutating admission: the creating manager owns the fields
    it sent (and the type's defaults), not serviceAccountName, tolerations or priority, so a later
    server-side apply of the same manifest (kubectl's client-side to server-side upgrade) is accepted."""
    manifest = json.dumps({**POD, "metadata": {"name": "owned"}, "spec": {**POD["spec"], "volumes": []}})
    kubectl("apply", "-f", "-", stdin=manifest)
    pod = kubectl.get_json("pod", "owned", "--show-managed-fields")
    owned = next(m for m in pod["metadata"]["managedFields"] if m["manager"] == "kubectl-client-side-apply")
    spec_fields = set(owned["fieldsV1"]["f:spec"])
    assert "f:containers" in spec_fields and "f:dnsPolicy" in spec_fields  # sent, and a type default
    assert not spec_fields & {"f:serviceAccountName", "f:serviceAccount", "f:tolerations", "f:priority"}
    assert pod["spec"]["serviceAccountName"] == "default" and pod["spec"]["tolerations"]
    result = kubectl("apply", "--server-side", "-f", "-", stdin=manifest)
    assert "serverside-applied" in result.out
    again = kubectl.get_json("pod", "owned")
    assert again["spec"]["serviceAccountName"] == "default" and again["spec"]["tolerations"] == pod["spec"]["tolerations"]


def test_pod_deletion_is_graceful_and_the_kubelet_finishes_it(sim: Sim, ns: str, kubectl: Kubectl):
    """DELETE of a running Pod answers the Pod with deletionTimestamp and its grace period (kube's
    ReturnDeletedObject); the kubelet stops its containers and removes it; an unscheduled Pod and a
    --grace-period=0 --force delete go at once."""
    sim_pod = {**POD, "metadata": {"name": "graceful"}, "spec": {**POD["spec"], "volumes": [], "terminationGracePeriodSeconds": 20}}
    assert sim.json("POST", f"/api/v1/namespaces/{ns}/pods", sim_pod)[0] == 201
    wait_for(lambda: sim.json("GET", f"/api/v1/namespaces/{ns}/pods/graceful")[1]["status"].get("phase") == "Running", 30,
             what="the pod to run")
    code, deleting = sim.json("DELETE", f"/api/v1/namespaces/{ns}/pods/graceful")
    assert code == 200 and deleting["kind"] == "Pod"
    assert deleting["metadata"]["deletionGracePeriodSeconds"] == 20 and deleting["metadata"]["deletionTimestamp"]
    wait_for(lambda: sim.json("GET", f"/api/v1/namespaces/{ns}/pods/graceful")[0] == 404, 30, what="the kubelet to finish the pod")
    events = [e for e in _events(kubectl) if e.get("involvedObject", {}).get("name") == "graceful"]
    assert any(e["reason"] == "Started" for e in events)
    unscheduled = {**sim_pod, "metadata": {"name": "nowhere"}, "spec": {**sim_pod["spec"], "nodeSelector": {"no": "such-node"}}}
    assert sim.json("POST", f"/api/v1/namespaces/{ns}/pods", unscheduled)[0] == 201
    code, gone = sim.json("DELETE", f"/api/v1/namespaces/{ns}/pods/nowhere")
    assert code == 200 and "deletionTimestamp" not in gone["metadata"]
    assert sim.json("GET", f"/api/v1/namespaces/{ns}/pods/nowhere")[0] == 404
    assert sim.json("POST", f"/api/v1/namespaces/{ns}/pods", {**sim_pod, "metadata": {"name": "forced"}})[0] == 201
    wait_for(lambda: sim.json("GET", f"/api/v1/namespaces/{ns}/pods/forced")[1]["spec"].get("nodeName"), 30, what="scheduling")
    kubectl("delete", "pod", "forced", "--grace-period=0", "--force")
    assert sim.json("GET", f"/api/v1/namespaces/{ns}/pods/forced")[0] == 404


def _running_pod(sim: Sim, ns: str, name: str, env: list | None = None) -> None:
    pod = {**POD, "metadata": {"name": name}, "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "env": env or []}]}}
    assert sim.json("POST", f"/api/v1/namespaces/{ns}/pods", pod)[0] == 201
    wait_for(lambda: sim.json("GET", f"/api/v1/namespaces/{ns}/pods/{name}")[1]["status"].get("phase") == "Running", 30,
             what=f"{name} to run")


def test_logs_and_exec_through_kubectl(sim: Sim, ns: str, kubectl: Kubectl):
    """kubectl logs and kubectl exec (over WebSocket, kubectl's default since 1.30) against a simulated
    container: synthetic log lines, a scripted shell, exit codes and kube's refusals."""
    _running_pod(sim, ns, "talker", env=[{"name": "GREETING", "value": "hello"}])
    logs = kubectl("logs", "talker").out
    assert f"container web of pod {ns}/talker started" in logs and "image nginx:1.27" in logs
    assert kubectl("logs", "talker", "--tail=1").out.strip() == "fleetplane-sim: ready"
    assert kubectl("logs", "talker", "--timestamps").out.split()[0].endswith("Z")
    assert kubectl("exec", "talker", "--", "echo", "hi", "there").out == "hi there\n"
    assert kubectl("exec", "talker", "--", "printenv", "GREETING").out == "hello\n"
    assert kubectl("exec", "talker", "--", "sh", "-c", "hostname").out == "talker\n"
    assert kubectl("exec", "-i", "talker", "--", "cat", stdin="piped through\n").out == "piped through\n"
    failed = kubectl.fail("exec", "talker", "--", "nosuchtool")
    assert failed.code == 127 and "nosuchtool: command not found" in failed.err
    assert kubectl.fail("exec", "talker", "--", "false").code == 1
    wrong = kubectl.fail("exec", "talker", "-c", "nope", "--", "true")
    assert "container nope is not valid for pod talker" in wrong.err
    assert "container nope is not valid for pod talker" in kubectl.fail("logs", "talker", "-c", "nope").err


def test_exec_attach_and_portforward_through_the_python_client(sim: Sim, ns: str):
    """The official client's stream API (v4.channel.k8s.io) for exec and attach, and its
    portforward (each simulated port echoes what it is sent)."""
    from kubernetes import client, config
    from kubernetes.stream import portforward, stream

    _running_pod(sim, ns, "streams")
    api = client.CoreV1Api(config.new_client_from_config(str(sim.kubeconfig)))
    out = stream(api.connect_get_namespaced_pod_exec, "streams", ns, command=["echo", "from", "python"],
                 stderr=True, stdin=False, stdout=True, tty=False)
    assert out == "from python\n"
    ws = stream(api.connect_get_namespaced_pod_exec, "streams", ns, command=["sh", "-c", "exit 3"],
                stderr=True, stdin=False, stdout=True, tty=False, _preload_content=False)
    ws.run_forever(timeout=20)
    assert ws.returncode == 3
    attached = stream(api.connect_get_namespaced_pod_attach, "streams", ns, stdout=True, stdin=True, stderr=False,
                      tty=False, _preload_content=False)
    wait_for(lambda: (attached.update(timeout=1) or True) and "fleetplane-sim: ready" in attached.peek_stdout(), 20,
             what="the attached container's output")
    attached.read_stdout()
    attached.write_stdin("typed\n")
    wait_for(lambda: (attached.update(timeout=1) or True) and "typed" in attached.peek_stdout(), 20, what="stdin echoed")
    attached.close()
    forward = portforward(api.connect_get_namespaced_pod_portforward, "streams", ns, ports="8080")
    sock = forward.socket(8080)
    sock.settimeout(20)
    sock.sendall(b"ping")
    assert sock.recv(4) == b"ping"
    sock.close()
    forward.close()
