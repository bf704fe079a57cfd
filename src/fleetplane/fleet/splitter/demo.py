"""The Deployment Splitter demo: the 2021 kcp prototype's walkthrough, on fleetplane, with kubectl.

``python -m fleetplane.fleet.splitter.demo [--workdir DIR] [--fast]`` starts a hub (with the
Cluster controller, its Syncers and the splitter) and simulated physical clusters, then prints a
transcript of what a user types and sees:

1. two Clusters are registered; their ClusterProfiles appear, healthy;
2. ``kubectl apply`` of a Deployment with 15 replicas: the splitter creates one virtual Deployment
   per cluster (8 + 7), the clusters run them, the parent goes to ``15/15``;
   ``kubectl rollout status`` on the parent; ``fleetplane placement explain``;
3. a third cluster joins: 5 + 5 + 5, make-before-break;
4. a cluster is killed: after the grace period its replicas move to the others; the operator
   deletes its Cluster; the Events on the parent tell the story.

Processes: the hub is ``--serve-hub`` of this module (``fleetplane start`` once the splitter is
wired into it is the same thing), each cluster ``--serve-sim`` (= ``fleetplane cluster
simulate``). The hub knows no Deployments until the first cluster's Syncer imports the type.
Exit status 0 when every step did what it should.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

__all__ = ["Demo", "main"]

DEPLOYMENT = """apiVersion: apps/v1
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
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Demo:
    def __init__(self, workdir: Path, *, fast: bool = False, out: Callable[[str], None] = print) -> None:
        self.dir = workdir
        self.fast = fast
        self.out = out
        self.procs: dict[str, subprocess.Popen] = {}
        self.ports: dict[str, int] = {}
        self.kubelet_delay = "0.2" if fast else "1"
        self.grace = "2" if fast else "5"
        self.kubectl_bin = shutil.which("kubectl") or "kubectl"
        self.ok = True

    # -- processes --------------------------------------------------------------------------------

    def _spawn(self, name: str, args: list[str]) -> None:
        log = open(self.dir / f"{name}.log", "ab")  # noqa: SIM115
        self.procs[name] = subprocess.Popen([sys.executable, "-m", "fleetplane.fleet.splitter.demo", *args],
                                            stdout=log, stderr=subprocess.STDOUT)

    def _wait_ready(self, name: str, timeout: float = 40.0) -> None:
        port = self.ports[name]
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            proc = self.procs[name]
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode}; see {self.dir / (name + '.log')}")
            try:
                with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", context=ctx, timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"{name} did not become ready in {timeout}s")

    def start_hub(self) -> None:
        self.ports["hub"] = _free_port()
        self._spawn("hub", ["--serve-hub", str(self.dir / "hub"), str(self.ports["hub"]), "--grace", self.grace])
        self._wait_ready("hub")
        self.kubeconfig = self.dir / "hub" / "admin.kubeconfig"

    def start_cluster(self, name: str, nodes: int = 2) -> None:
        self.ports[name] = _free_port()
        self._spawn(name, ["--serve-sim", name, str(self.dir / name), str(self.ports[name]),
                           "--kubelet-delay", self.kubelet_delay, "--nodes", str(nodes)])
        self._wait_ready(name)

    def kill(self, name: str) -> None:
        proc = self.procs.get(name)
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)

    def stop(self) -> None:
        for proc in list(self.procs.values())[::-1]:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()

    # -- the transcript ---------------------------------------------------------------------------

    def say(self, text: str) -> None:
        self.out(f"\n# {text}")

    def kubectl(self, *args: str, stdin: str | None = None, show: bool = True, check: bool = True,
                shown: str | None = None) -> str:
        cmd = [self.kubectl_bin, "--kubeconfig", str(self.kubeconfig), "--context", "demo", *args]
        proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=180)
        text = (proc.stdout + proc.stderr).rstrip()
        if show:
            self.out(f"$ {shown or 'kubectl ' + ' '.join(args)}")
            if text:
                self.out(text)
        if check and proc.returncode != 0:
            self.ok = False
            raise RuntimeError(f"kubectl {' '.join(args)} failed: {text}")
        return text

    def get(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json", show=False))

    def wait(self, what: str, fn: Callable[[], Any], timeout: float = 90.0) -> Any:
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                last = fn()
            except (RuntimeError, ValueError, KeyError):
                last = None
            if last:
                return last
            time.sleep(0.2)
        self.ok = False
        raise RuntimeError(f"timed out waiting for {what} (last: {last!r})")

    def split(self) -> dict[str, int]:
        items = self.get("deployments", "-l", "kcp.dev/owned-by=my-deployment")["items"]
        return {d["metadata"]["labels"]["kcp.dev/cluster"]: d["spec"]["replicas"] for d in items
                if not d["metadata"].get("deletionTimestamp")}

    def ready(self, n: int) -> bool:
        st = self.get("deployment", "my-deployment").get("status") or {}
        return st.get("readyReplicas") == n and st.get("availableReplicas") == n and st.get("replicas") == n

    def cluster_doc(self, name: str, location: str) -> str:
        kc = (self.dir / name / "admin.kubeconfig").read_text()
        return yaml.safe_dump({"apiVersion": "cluster.example.dev/v1alpha1", "kind": "Cluster",
                               "metadata": {"name": name},
                               "spec": {"location": location, "resources": ["deployments.apps"], "kubeconfig": kc}})

    def run(self) -> bool:
        self.out("# fleetplane: the Deployment Splitter demo (kcp's 2021 prototype, on a KEP-4322 inventory)")
        self.start_hub()
        self.start_cluster("us-east1")
        self.start_cluster("us-west1")
        self.kubectl("create", "namespace", "demo", show=False, check=False)
        self.say("A hub, and two physical clusters (simulated: nodes, scheduler, kubelets). The hub knows no "
                 "cluster, and no Deployments:")
        self.kubectl("get", "clusterprofiles")
        self.kubectl("api-resources", "--api-group=apps")
        self.say("Register the clusters (a kubeconfig each); the Cluster controller connects them, starts their "
                 "Syncers and publishes a ClusterProfile per cluster")
        docs = "---\n".join(self.cluster_doc(n, loc) for n, loc in (("us-east1", "us-east"), ("us-west1", "us-west")))
        self.kubectl("apply", "-f", "-", stdin=docs, shown="kubectl apply -f clusters.yaml")
        self.kubectl("wait", "--for=condition=Ready", "cluster/us-east1", "cluster/us-west1", "--timeout=60s")
        self.wait("healthy ClusterProfiles", lambda: len([
            p for p in self.get("clusterprofiles")["items"]
            if any(c["type"] == "ControlPlaneHealthy" and c["status"] == "True"
                   for c in (p.get("status") or {}).get("conditions") or [])]) == 2)
        self.kubectl("get", "clusterprofiles")
        self.say("The clusters' Syncers taught the hub their types: Deployments now exist on the hub")
        self.wait("the Deployment type", lambda: "deployments" in self.kubectl(
            "api-resources", "--api-group=apps", show=False, check=False))
        self.kubectl("api-resources", "--api-group=apps")
        self.say("A Deployment with 15 replicas and no kcp.dev/cluster label: the splitter places it")
        self.kubectl("apply", "-f", "-", stdin=DEPLOYMENT, shown="kubectl apply -f deployment.yaml")
        self.wait("the virtual Deployments", lambda: self.split() == {"us-east1": 8, "us-west1": 7})
        self.kubectl("get", "deployments")
        self.kubectl("rollout", "status", "deployment/my-deployment", "--timeout=120s")
        self.wait("15/15", lambda: self.ready(15))
        self.kubectl("get", "deployments")
        self.say("Why there? The splitter explains its decision")
        self.explain()
        self.say("A third cluster joins: replicas move to it, the new ones up before the old ones go")
        self.start_cluster("eu-central1")
        self.kubectl("apply", "-f", "-", stdin=self.cluster_doc("eu-central1", "eu-central"),
                     shown="kubectl apply -f cluster-eu-central1.yaml")
        self.wait("5/5/5", lambda: self.split() == {"us-east1": 5, "us-west1": 5, "eu-central1": 5} and self.ready(15),
                  timeout=120)
        self.kubectl("get", "deployments")
        self.say("us-west1 goes away (its process is killed): after the grace period its replicas move")
        self.kill("us-west1")
        self.wait("us-west1 unhealthy", lambda: any(
            c["type"] == "ControlPlaneHealthy" and c["status"] != "True"
            for c in (self.get("clusterprofile", "us-west1").get("status") or {}).get("conditions") or []))
        self.kubectl("get", "clusterprofiles")
        self.wait("15 ready on the two clusters left",
                  lambda: set(self.split()) == {"eu-central1", "us-east1"} and self.ready(15), timeout=120)
        self.kubectl("get", "deployments", "my-deployment", "my-deployment--us-east1", "my-deployment--eu-central1")
        self.say("The operator removes the lost cluster; the parent's Events tell the story")
        self.kubectl("delete", "cluster", "us-west1", "--wait=false")
        self.wait("us-west1 gone", lambda: not any(
            p["metadata"]["name"] == "us-west1" for p in self.get("clusterprofiles")["items"]))
        self.events()
        self.out("\n# done")
        return self.ok

    def diagnose(self) -> None:
        """What the hub says, when a step did not happen."""
        try:
            self.kubectl("get", "deployments", check=False)
            self.kubectl("get", "clusterprofiles", check=False)
            st = self.get("deployment", "my-deployment").get("status") or {}
            for c in st.get("conditions") or []:
                self.out(f"  {c['type']}={c['status']} {c.get('reason')}: {c.get('message')}")
            self.explain()
        except Exception as exc:  # noqa: BLE001 - best effort
            self.out(f"  (cannot read the hub: {exc})")

    def explain(self) -> None:
        cmd = [sys.executable, "-m", "fleetplane.cli.placement", "explain", "deployment/my-deployment",
               "--kubeconfig", str(self.kubeconfig), "--context", "demo"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        self.out("$ fleetplane placement explain deployment/my-deployment")
        self.out((proc.stdout + proc.stderr).rstrip())
        if proc.returncode != 0:
            self.ok = False

    def events(self) -> None:
        items = self.get("events", "--field-selector", "involvedObject.name=my-deployment")["items"]
        items.sort(key=lambda e: (e.get("lastTimestamp") or "", e["metadata"].get("resourceVersion", "")))
        self.out("$ kubectl get events --field-selector involvedObject.name=my-deployment")
        self.out(f"{'TYPE':<8} {'REASON':<18} MESSAGE")
        for e in items:
            self.out(f"{e.get('type', ''):<8} {e.get('reason', ''):<18} {e.get('message', '')}")


# -- the processes ----------------------------------------------------------------------------------


def serve_hub(data_dir: Path, port: int, grace: float) -> None:
    """The hub as ``fleetplane start`` runs it with the fleet controllers wired."""
    from ...logs import configure_logging
    from ...server.serve import Options, run
    from ..cluster_controller import background as cluster_controller
    from ..cluster_crd import CLUSTER_CRD
    from . import CLUSTERDAEMONSET_CRD
    from . import background as splitter

    configure_logging("info", "console")
    run(Options(data_dir=data_dir, port=port, kubeconfig_clusters=["root", "demo"],
                system_crds=[CLUSTER_CRD, CLUSTERDAEMONSET_CRD]),
        background=[cluster_controller(probe_interval=0.5, details_interval=5.0, request_timeout=2.0,
                                       syncer_poll_interval=2.0, status_rate=1.0, status_burst=20),
                    splitter(unhealthy_grace=grace, join_grace=min(grace, 3.0), unschedulable_grace=30.0)])


def serve_sim(name: str, data_dir: Path, port: int, kubelet_delay: float, nodes: int = 2) -> None:
    from ...logs import configure_logging
    from ...sim.run import SimOptions, run

    configure_logging("info", "console")
    run(SimOptions(name=name, data_dir=data_dir, port=port, nodes=nodes, kubelet_delay=kubelet_delay))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m fleetplane.fleet.splitter.demo")
    p.add_argument("--workdir", help="where the processes keep their data (default: a temporary directory)")
    p.add_argument("--fast", action="store_true", help="short delays and grace periods (tests)")
    p.add_argument("--serve-hub", nargs=2, metavar=("DIR", "PORT"), help=argparse.SUPPRESS)
    p.add_argument("--serve-sim", nargs=3, metavar=("NAME", "DIR", "PORT"), help=argparse.SUPPRESS)
    p.add_argument("--grace", type=float, default=5.0, help=argparse.SUPPRESS)
    p.add_argument("--kubelet-delay", type=float, default=1.0, help=argparse.SUPPRESS)
    p.add_argument("--nodes", type=int, default=2, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.serve_hub:
        serve_hub(Path(args.serve_hub[0]), int(args.serve_hub[1]), args.grace)
        return 0
    if args.serve_sim:
        serve_sim(args.serve_sim[0], Path(args.serve_sim[1]), int(args.serve_sim[2]), args.kubelet_delay, args.nodes)
        return 0
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="fleetplane-demo-"))
    workdir.mkdir(parents=True, exist_ok=True)
    demo = Demo(workdir, fast=args.fast, out=lambda s: print(s, flush=True))
    try:
        ok = demo.run()
    except RuntimeError as err:
        print(f"\n# demo failed: {err} (logs in {workdir})", flush=True)
        demo.diagnose()
        ok = False
    finally:
        demo.stop()
    if ok and not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
