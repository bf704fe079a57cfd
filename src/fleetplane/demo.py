"""``make demo``: the kcp prototype's demo, played on one machine.

A hub and two simulated physical clusters start; the clusters are attached with kubectl; a
15-replica Deployment created on the hub is split over them and `kubectl get deployments`
shows it converge to 15/15 with its two virtual Deployments; then a third cluster joins and
the replicas re-balance. Everything runs locally and everything is stopped at the end.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from pathlib import Path

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

CLUSTERS = [("us-west1", "us-west-1"), ("us-east1", "us-east-1"), ("eu-central1", "eu-central-1")]
DEADLINE = 50.0  # the whole demo finishes in under a minute


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Demo:
    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="fleetplane-demo-"))
        self.procs: list[subprocess.Popen] = []
        self.kubectl = shutil.which("kubectl") or "kubectl"
        self.cache = tempfile.mkdtemp(prefix="kubectl-cache-")
        self.started = time.monotonic()
        self.log = open(self.root / "processes.log", "ab")  # noqa: SIM115

    # -- processes -------------------------------------------------------------------------

    def _spawn(self, args: list[str]) -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-m", "fleetplane.cli.main", "--log-level", "warning", *args],
                                stdout=self.log, stderr=subprocess.STDOUT)
        self.procs.append(proc)
        return proc

    def _wait_ready(self, data_dir: Path, port: int, proc: subprocess.Popen, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise SystemExit(f"a process exited early (code {proc.returncode}); see {self.root / 'processes.log'}")
            ca = data_dir / "pki" / "ca.crt"
            try:
                if ca.exists() and urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", timeout=1,
                                                          context=ssl.create_default_context(cafile=str(ca))).status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise SystemExit(f"https://127.0.0.1:{port} did not become ready")

    def start_hub(self) -> None:
        self.hub_dir, port = self.root / "hub", _free_port()
        print(f"$ fleetplane start --data-dir {self.hub_dir.name} --port {port}")
        proc = self._spawn(["start", "--data-dir", str(self.hub_dir), "--port", str(port),
                            "--cluster-probe-interval", "1", "--cluster-details-interval", "2", "--syncer-poll-interval", "2",
                            "--splitter-join-grace", "2"])
        self._wait_ready(self.hub_dir, port, proc)
        self.env = {**os.environ, "KUBECONFIG": str(self.hub_dir / "admin.kubeconfig")}

    def start_cluster(self, name: str) -> Path:
        data, port = self.root / name, _free_port()
        print(f"$ fleetplane cluster simulate --name {name} --nodes 3 --port {port} &")
        proc = self._spawn(["cluster", "simulate", "--name", name, "--data-dir", str(data), "--port", str(port),
                            "--nodes", "3", "--node-cpu", "4", "--node-memory", "8Gi", "--kubelet-delay", "1"])
        self._wait_ready(data, port, proc)
        return data / "admin.kubeconfig"

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)
        shutil.rmtree(self.cache, ignore_errors=True)

    # -- kubectl ---------------------------------------------------------------------------

    def k(self, *args: str, stdin: str | None = None, show: str | None = None, quiet: bool = False) -> str:
        out = subprocess.run([self.kubectl, "--cache-dir", self.cache, *args], input=stdin, text=True,
                             capture_output=True, env=self.env, timeout=60)
        text = (out.stdout + out.stderr).rstrip()
        if not quiet:
            print("$ kubectl " + (show or " ".join(args)))
            print(textwrap.indent(text, "  ") + "\n")
        return text

    def fleetplane(self, *args: str) -> None:
        print("$ fleetplane " + " ".join(args))
        out = subprocess.run([sys.executable, "-m", "fleetplane.cli.main", *args,
                              "--kubeconfig", str(self.hub_dir / "admin.kubeconfig")],
                             text=True, capture_output=True, env=self.env, timeout=60)
        print(textwrap.indent((out.stdout + out.stderr).rstrip(), "  ") + "\n")

    def attach(self, name: str, location: str, kubeconfig: Path) -> None:
        cluster = (f"apiVersion: cluster.example.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: {name}\n"
                   f"spec:\n  location: {location}\n  kubeconfig: |\n" + textwrap.indent(kubeconfig.read_text(), "    "))
        self.k("apply", "-f", "-", stdin=cluster, show=f"apply -f cluster-{name}.yaml")

    def until(self, what: str, check, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check():
                return
            time.sleep(0.3)
        raise SystemExit(f"timed out waiting for {what}")

    def watch_deployments(self, done, timeout: float) -> None:
        """Print `kubectl get deployments` each time it changes, until ``done(table)``."""
        last = ""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            table = self.k("get", "deployments", quiet=True)
            shown = "\n".join(line.rsplit(None, 1)[0] for line in table.splitlines() if line.strip())  # AGE aside
            if shown != last:
                print(f"$ kubectl get deployments        # t={time.monotonic() - self.started:4.1f}s")
                print(textwrap.indent(table, "  ") + "\n")
                last = shown
            if done(table):
                return
            time.sleep(0.5)
        raise SystemExit("the deployments did not converge in time")


def _ready(table: str, name: str) -> str:
    for line in table.splitlines()[1:]:
        cols = line.split()
        if cols and cols[0] == name:
            return cols[1]
    return ""


def main() -> int:
    if not shutil.which("kubectl"):
        print("kubectl is needed for the demo", file=sys.stderr)
        return 1
    demo = Demo()
    try:
        demo.start_hub()
        kubeconfigs = {name: demo.start_cluster(name) for name, _ in CLUSTERS[:2]}
        print("# attach the two physical clusters (the seed's Cluster objects)")
        for name, location in CLUSTERS[:2]:
            demo.attach(name, location, kubeconfigs[name])
        ready = "jsonpath={range .items[*]}{.status.conditions[?(@.type=='Ready')].status}{' '}{end}"
        demo.until("clusters Ready", lambda: demo.k("get", "clusters", "-o", ready, quiet=True).split().count("True") == 2, 30)
        demo.until("the Deployment type", lambda: "deployments" in demo.k("api-resources", "--api-group=apps", quiet=True), 20)
        demo.k("get", "clusters")
        demo.k("get", "clusterprofiles")
        demo.k("create", "-f", "-", stdin=DEPLOYMENT, show="create -f deployment.yaml")
        demo.watch_deployments(lambda t: _ready(t, "my-deployment") == "15/15" and t.count("my-deployment--") == 2,
                               DEADLINE - (time.monotonic() - demo.started))
        demo.k("rollout", "status", "deployment/my-deployment", "--timeout=20s")
        demo.fleetplane("placement", "explain", "deployment/my-deployment", "-n", "default")
        name, location = CLUSTERS[2]
        print("# a third cluster joins: the splitter re-balances (make-before-break)")
        demo.attach(name, location, demo.start_cluster(name))
        demo.watch_deployments(lambda t: _ready(t, "my-deployment") == "15/15" and t.count("my-deployment--") == 3
                               and all(_ready(t, f"my-deployment--{c}") in ("5/5",) for c, _ in CLUSTERS),
                               max(15.0, 60 - (time.monotonic() - demo.started)))
        print(f"done in {time.monotonic() - demo.started:.1f}s")
    finally:
        demo.stop()
    print("everything stopped; nothing left running")
    return 0


if __name__ == "__main__":
    sys.exit(main())
