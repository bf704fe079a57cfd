"""``make demo``: the kcp prototype's demo, played on one machine.

A hub and three simulated physical clusters start; two clusters are attached with kubectl; a
15-replica Deployment created on the hub is split over them and `kubectl get deployments`
shows it converge to 15/15 with its two virtual Deployments; then a whole application (a
Deployment with its LoadBalancer Service, a ConfigMap, an HPA, a CronJob, a DaemonSet, a
StatefulSet with a volume per replica) is applied to the hub as one YAML and `kubectl get` on the
hub shows where each part runs and its aggregated status; then the third cluster joins and the
replicas, the DaemonSet and the StatefulSet's ordinals re-balance. Everything runs locally and
everything is stopped at the end.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable

from .lab import Lab, LabError

DEPLOYMENT = textwrap.dedent("""\
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: my-deployment
    spec:
      replicas: 15
      selector:
        matchLabels: {app: my-app}
      template:
        metadata:
          labels: {app: my-app}
        spec:
          containers:
          - name: web
            image: nginx:1.27
            resources:
              requests: {cpu: 100m, memory: 64Mi}
    """)

APP = textwrap.dedent("""\
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: web-config
      labels: {kcp.dev/cluster: us-west1}   # not split: the label sends it, as it is, to one cluster
    data: {greeting: hello from the hub}
    ---
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: web
    spec:
      replicas: 2
      selector:
        matchLabels: {app: web}
      template:
        metadata:
          labels: {app: web}
          annotations: {sim.fleetplane.io/cpu-utilization: "40"}   # the simulated clusters' CPU metric
        spec:
          containers:
          - name: web
            image: nginx:1.27
            resources:
              requests: {cpu: 100m, memory: 64Mi}
    ---
    apiVersion: v1
    kind: Service
    metadata:
      name: web
    spec:
      type: LoadBalancer
      selector: {app: web}
      ports:
      - {port: 80, targetPort: 80, protocol: TCP}
    ---
    apiVersion: autoscaling/v2
    kind: HorizontalPodAutoscaler
    metadata:
      name: web
    spec:
      scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
      minReplicas: 2
      maxReplicas: 6
      metrics:
      - type: Resource
        resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
    ---
    apiVersion: batch/v1
    kind: CronJob
    metadata:
      name: report
    spec:
      schedule: "0 * * * *"
      jobTemplate:
        spec:
          template:
            spec:
              restartPolicy: Never
              containers:
              - name: report
                image: busybox:1.36
                command: [sh, -c, "sleep 1"]
    ---
    apiVersion: apps/v1
    kind: DaemonSet
    metadata:
      name: log-agent
    spec:
      updateStrategy: {type: RollingUpdate}
      selector:
        matchLabels: {app: log-agent}
      template:
        metadata:
          labels: {app: log-agent}
        spec:
          containers:
          - name: agent
            image: busybox:1.36
            resources:
              requests: {cpu: 10m, memory: 16Mi}
    ---
    apiVersion: apps/v1
    kind: StatefulSet
    metadata:
      name: db
    spec:
      serviceName: db
      replicas: 3
      selector:
        matchLabels: {app: db}
      template:
        metadata:
          labels: {app: db}
        spec:
          containers:
          - name: db
            image: postgres:17
            resources:
              requests: {cpu: 100m, memory: 128Mi}
      volumeClaimTemplates:
      - metadata: {name: data}
        spec:
          accessModes: [ReadWriteOnce]
          resources:
            requests: {storage: 1Gi}
    """)
#: the application's parents on the hub, as `kubectl get` names them
APP_PARTS = ("deployment/web", "service/web", "hpa/web", "cronjob/report", "daemonset/log-agent", "statefulset/db")
NODES = 3  # per simulated cluster: the DaemonSet runs a Pod on each

CLUSTERS = [("us-west1", "us-west-1"), ("us-east1", "us-east-1"), ("eu-central1", "eu-central-1")]
DEADLINE = 50.0  # the whole demo finishes in under a minute


class Demo:
    """The transcript: what a user types and sees; the processes are a :class:`~fleetplane.lab.Lab`'s."""

    def __init__(self) -> None:
        self.lab = Lab()
        self.started = time.monotonic()

    def start_hub(self) -> None:
        hub = self.lab.add("hub", ["start", "--cluster-probe-interval", "1", "--cluster-details-interval", "2",
                                   "--syncer-poll-interval", "2", "--splitter-join-grace", "2",
                                   "--cronjob-join-grace", "2", "--hpa-resync", "2"])
        print(f"$ fleetplane start --data-dir {hub.data_dir.name} --port {hub.port}")
        hub.start(timeout=20)

    def start_cluster(self, name: str) -> None:
        """Spawn ``fleetplane cluster simulate`` (not waited for: see :meth:`wait_clusters`)."""
        sim = self.lab.add(name, ["cluster", "simulate", "--name", name, "--nodes", str(NODES), "--node-cpu", "4",
                                  "--node-memory", "8Gi", "--kubelet-delay", "1",
                                  "--hpa-sync-period", "2"])
        print(f"$ fleetplane cluster simulate --name {name} --nodes {NODES} --port {sim.port} &")
        sim.start(wait=False)

    def wait_clusters(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        for name, _ in CLUSTERS:
            self.lab[name].wait_ready(max(1.0, deadline - time.monotonic()))

    def k(self, *args: str, stdin: str | None = None, show: str | None = None, quiet: bool = False) -> str:
        out = self.lab.kubectl(*args, stdin=stdin)
        text = (out.stdout + out.stderr).rstrip()
        if not quiet:
            print("$ kubectl " + (show or " ".join(args)))
            print(textwrap.indent(text, "  ") + "\n")
        return text

    def fleetplane(self, *args: str) -> None:
        print("$ fleetplane " + " ".join(args))
        out = self.lab.cli(*args)
        print(textwrap.indent((out.stdout + out.stderr).rstrip(), "  ") + "\n")

    def attach(self, name: str, location: str) -> None:
        out = self.lab.attach(name, location=location, check=False)
        print(f"$ kubectl apply -f cluster-{name}.yaml")
        print(textwrap.indent((out.stdout + out.stderr).rstrip(), "  ") + "\n")

    def watch(self, args: tuple[str, ...], done: Callable[[str], bool], timeout: float, what: str) -> str:
        """Print `kubectl get ARGS` each time it changes (ages and durations aside), until
        ``done(table)``; the last table."""
        last = ""

        def show(table: str) -> None:
            nonlocal last
            shown = _DURATION.sub("", table)
            if shown != last:
                print(f"$ kubectl get {' '.join(args)}        # t={time.monotonic() - self.started:4.1f}s")
                print(textwrap.indent(table, "  ") + "\n")
                last = shown

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.lab.check()
            table = self.k("get", *args, quiet=True)
            show(table)
            if done(table):
                # a condition read from the API may have come true after this table was taken: the
                # transcript ends with what was there once it held
                table = self.k("get", *args, quiet=True)
                show(table)
                return table
            time.sleep(0.5)
        raise LabError(f"{what} did not converge in time:\n{table}")

    def watch_deployments(self, done: Callable[[str], bool], timeout: float) -> None:
        self.watch(("deployments",), done, timeout, "the deployments")

    def in_cluster(self, name: str, *args: str) -> None:
        """kubectl against the physical cluster ``name`` itself (its own admin kubeconfig)."""
        kubeconfig = self.lab[name].kubeconfig
        out = subprocess.run([self.lab.kubectl_binary, "--kubeconfig", str(kubeconfig), *args], text=True,
                             capture_output=True, timeout=60)
        print(f"$ kubectl --kubeconfig {name}.kubeconfig " + " ".join(args))
        print(textwrap.indent((out.stdout + out.stderr).rstrip(), "  ") + "\n")

    def app_ready(self) -> bool:
        """Every part of the application running and its aggregated status on the hub."""
        hub = self.lab.hub
        ns = "/namespaces/default"
        deploy = hub.get(f"/apis/apps/v1{ns}/deployments/web") or {}
        svc = hub.get(f"/api/v1{ns}/services/web") or {}
        hpa = hub.get(f"/apis/autoscaling/v2{ns}/horizontalpodautoscalers/web") or {}
        cron = hub.get(f"/apis/batch/v1{ns}/cronjobs/report") or {}
        ds = hub.get(f"/apis/apps/v1{ns}/daemonsets/log-agent") or {}
        sts = hub.get(f"/apis/apps/v1{ns}/statefulsets/db") or {}

        def status(o: dict) -> dict:
            return o.get("status") or {}

        return bool(
            status(deploy).get("readyReplicas") == 2
            and len((status(svc).get("loadBalancer") or {}).get("ingress") or []) == 2
            and status(hpa).get("currentMetrics")
            and status(cron).get("lastSuccessfulTime")
            and status(ds).get("desiredNumberScheduled") == status(ds).get("numberReady") == 2 * NODES
            and status(sts).get("readyReplicas") == 3)

    def application(self) -> None:
        """The whole application: one YAML on the hub, then where each part runs and its status."""
        print("# a whole application: Deployment, LoadBalancer Service, ConfigMap, HPA, CronJob, DaemonSet, StatefulSet")
        self.k("apply", "-f", "-", stdin=APP, show="apply -f app.yaml")
        print("# the CronJob runs hourly: a last run written two hours back (its status, as any client may\n"
              "# write it) makes the fleet's CronJob controller start this hour's missed run now, as kube's does")
        stamp = time.strftime("%Y-%m-%dT%H:00:00Z", time.gmtime(time.time() - 7200))
        patch = f'{{"status":{{"lastScheduleTime":"{stamp}"}}}}'
        self.k("patch", "cronjob", "report", "--subresource=status", "--type=merge", "-p", patch,
               show=f"patch cronjob report --subresource=status --type=merge -p '{patch}'")
        self.watch(APP_PARTS, lambda _: self.app_ready(), max(20.0, DEADLINE - (time.monotonic() - self.started)),
                   "the application")
        print("# where each part runs: the hub's children, one per cluster (the Job's cluster is its run's)")
        self.k("get", "deploy,svc,hpa,job,ds,sts,configmap", "-L", "kcp.dev/cluster", "-l", "kcp.dev/cluster")
        self.fleetplane("placement", "explain", "statefulset/db", "-n", "default")
        print("# and in one physical cluster itself: its StatefulSet's ordinals, their volumes, the ConfigMap")
        self.in_cluster("us-west1", "get", "sts,pvc,configmap", "-n", "default")


#: what changes in a table by itself as time goes by: AGE, DURATION, LAST SCHEDULE
_DURATION = re.compile(r"(?<!\S)(?:\d+d)?(?:\d+h)?(?:\d+m)?(?:\d+s)?(?=\s|$)", re.M)


def _ready(table: str, name: str) -> str:
    for line in table.splitlines()[1:]:
        cols = line.split()
        if cols and cols[0] == name:
            return cols[1]
    return ""


def _spread_to_three(table: str) -> bool:
    """log-agent on every node of the three clusters, db's three ordinals one per cluster."""
    rows = {cols[0]: cols for cols in (line.split() for line in table.splitlines()) if cols}
    agent = rows.get("daemonset.apps/log-agent", [])
    return (len(agent) > 3 and agent[1] == agent[3] == str(3 * NODES)
            and all(rows.get(f"statefulset.apps/db--{c}", ["", ""])[1] == "1/1" for c, _ in CLUSTERS))


def main() -> int:
    if not shutil.which("kubectl"):
        print("kubectl is needed for the demo", file=sys.stderr)
        return 1
    demo = Demo()
    lab = demo.lab
    try:
        demo.start_hub()
        print("# three physical clusters, started side by side; two are attached now, the third joins later")
        for name, _ in CLUSTERS:
            demo.start_cluster(name)
        demo.wait_clusters()
        print("# attach the two physical clusters (the seed's Cluster objects)")
        for name, location in CLUSTERS[:2]:
            demo.attach(name, location)
        lab.wait_attached([name for name, _ in CLUSTERS[:2]], 30)
        lab.wait_served("apps/v1", "deployments", 20)
        demo.k("get", "clusters")
        demo.k("get", "clusterprofiles")
        demo.k("create", "-f", "-", stdin=DEPLOYMENT, show="create -f deployment.yaml")
        demo.watch_deployments(lambda t: _ready(t, "my-deployment") == "15/15" and t.count("my-deployment--") == 2,
                               DEADLINE - (time.monotonic() - demo.started))
        demo.k("rollout", "status", "deployment/my-deployment", "--timeout=20s")
        demo.fleetplane("placement", "explain", "deployment/my-deployment", "-n", "default")
        demo.application()
        name, location = CLUSTERS[2]
        print("# a third cluster joins: the splitter re-balances (make-before-break)")
        demo.attach(name, location)
        demo.watch_deployments(lambda t: _ready(t, "my-deployment") == "15/15" and t.count("my-deployment--") == 3
                               and all(_ready(t, f"my-deployment--{c}") in ("5/5",) for c, _ in CLUSTERS),
                               max(15.0, 60 - (time.monotonic() - demo.started)))
        demo.watch(("daemonsets,statefulsets",), _spread_to_three, max(10.0, 60 - (time.monotonic() - demo.started)),
                   "the DaemonSet and the StatefulSet")
        demo.k("get", "statefulsets", "-l", "kcp.dev/cluster", "-o",
               "custom-columns=NAME:.metadata.name,CLUSTER:.metadata.labels.kcp\\.dev/cluster,"
               "FIRST-ORDINAL:.spec.ordinals.start,REPLICAS:.spec.replicas")
        print(f"done in {time.monotonic() - demo.started:.1f}s")
    except LabError as err:
        print(f"demo failed: {err}", file=sys.stderr)
        return 1
    finally:
        lab.stop()
    print("everything stopped; nothing left running")
    return 0


if __name__ == "__main__":
    sys.exit(main())
