"""``make demo``: the kcp prototype's demo, played on one machine.

A hub and two simulated physical clusters start; the clusters are attached with kubectl; a
15-replica Deployment created on the hub is split over them and `kubectl get deployments`
shows it converge to 15/15 with its two virtual Deployments; then a third cluster joins and
the replicas re-balance. Everything runs locally and everything is stopped at the end.
"""

from __future__ import annotations

import shutil
import sys
import textwrap
import time

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

CLUSTERS = [("us-west1", "us-west-1"), ("us-east1", "us-east-1"), ("eu-central1", "eu-central-1")]
DEADLINE = 50.0  # the whole demo finishes in under a minute


class Demo:
    """The transcript: what a user types and sees; the processes are a :class:`~fleetplane.lab.Lab`'s."""

    def __init__(self) -> None:
        self.lab = Lab()
        self.started = time.monotonic()

    def start_hub(self) -> None:
        hub = self.lab.add("hub", ["start", "--cluster-probe-interval", "1", "--cluster-details-interval", "2",
                                   "--syncer-poll-interval", "2", "--splitter-join-grace", "2"])
        print(f"$ fleetplane start --data-dir {hub.data_dir.name} --port {hub.port}")
        hub.start(timeout=20)

    def start_cluster(self, name: str) -> None:
        sim = self.lab.add(name, ["cluster", "simulate", "--name", name, "--nodes", "3", "--node-cpu", "4",
                                  "--node-memory", "8Gi", "--kubelet-delay", "1"])
        print(f"$ fleetplane cluster simulate --name {name} --nodes 3 --port {sim.port} &")
        sim.start(timeout=20)

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

    def watch_deployments(self, done, timeout: float) -> None:
        """Print `kubectl get deployments` each time it changes, until ``done(table)``."""
        last = ""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.lab.check()
            table = self.k("get", "deployments", quiet=True)
            shown = "\n".join(line.rsplit(None, 1)[0] for line in table.splitlines() if line.strip())  # AGE aside
            if shown != last:
                print(f"$ kubectl get deployments        # t={time.monotonic() - self.started:4.1f}s")
                print(textwrap.indent(table, "  ") + "\n")
                last = shown
            if done(table):
                return
            time.sleep(0.5)
        raise LabError("the deployments did not converge in time")


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
    lab = demo.lab
    try:
        demo.start_hub()
        for name, _ in CLUSTERS[:2]:
            demo.start_cluster(name)
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
        name, location = CLUSTERS[2]
        print("# a third cluster joins: the splitter re-balances (make-before-break)")
        demo.start_cluster(name)
        demo.attach(name, location)
        demo.watch_deployments(lambda t: _ready(t, "my-deployment") == "15/15" and t.count("my-deployment--") == 3
                               and all(_ready(t, f"my-deployment--{c}") in ("5/5",) for c, _ in CLUSTERS),
                               max(15.0, 60 - (time.monotonic() - demo.started)))
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
