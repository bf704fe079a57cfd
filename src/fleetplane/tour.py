"""``python -m fleetplane.tour``: start a hub, take kubectl on a short tour of it, stop the hub.

The hub alone as a real
Kubernetes API with logical clusters, shown with the real kubectl.
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

CRD = textwrap.dedent("""\
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata: {name: widgets.demo.fleetplane.io}
    spec:
      group: demo.fleetplane.io
      scope: Namespaced
      names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
      versions:
      - name: v1
        served: true
        storage: true
        subresources: {status: {}, scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}}
        additionalPrinterColumns:
        - {name: Color, type: string, jsonPath: .spec.color}
        - {name: Replicas, type: integer, jsonPath: .spec.replicas}
        schema:
          openAPIV3Schema:
            type: object
            properties:
              spec:
                type: object
                properties:
                  color: {type: string, enum: [red, green, blue]}
                  replicas: {type: integer, default: 1, minimum: 0}
    """)

WIDGET = "apiVersion: demo.fleetplane.io/v1\nkind: Widget\nmetadata: {name: sprocket}\nspec: {color: blue}\n"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_ready(url: str, ca: Path, proc: subprocess.Popen, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the hub exited with code {proc.returncode}")
        try:
            ctx = ssl.create_default_context(cafile=str(ca)) if ca.exists() else None
            if ctx and urllib.request.urlopen(url + "/readyz", context=ctx, timeout=1).status == 200:
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise SystemExit("the hub did not become ready")


def main() -> int:
    kubectl = shutil.which("kubectl")
    if not kubectl:
        print("kubectl is needed for the demo", file=sys.stderr)
        return 1
    data = Path(tempfile.mkdtemp(prefix="fleetplane-demo-"))
    port = _free_port()
    url = f"https://127.0.0.1:{port}"
    print(f"$ fleetplane start --data-dir {data} --port {port}")
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "fleetplane.cli.main", "--log-level", "warning", "start",
                             "--data-dir", str(data), "--port", str(port), "--kubeconfig-cluster", "team-a"])
    try:
        _wait_ready(url, data / "pki" / "ca.crt", proc)
        print(f"  ready in {time.monotonic() - started:.2f}s\n")
        env = {**os.environ, "KUBECONFIG": str(data / "admin.kubeconfig")}
        cache = tempfile.mkdtemp(prefix="kubectl-cache-")

        def k(*args: str, stdin: str | None = None, show: str | None = None) -> None:
            print("$ kubectl " + (show or " ".join(args)))
            out = subprocess.run([kubectl, "--cache-dir", cache, *args], input=stdin, text=True, capture_output=True, env=env)
            text = (out.stdout + out.stderr).rstrip()
            print(textwrap.indent(text, "  ") + "\n")

        k("version")
        k("get", "namespaces")
        k("create", "configmap", "greeting", "--from-literal=hello=world")
        k("get", "configmap", "greeting", "-o", "jsonpath={.data.hello}")
        k("apply", "-f", "-", stdin=CRD, show="apply -f widget-crd.yaml")
        k("wait", "--for=condition=Established", "crd/widgets.demo.fleetplane.io")
        k("apply", "-f", "-", stdin=WIDGET, show="apply -f sprocket.yaml")
        k("scale", "widget", "sprocket", "--replicas=3")
        k("get", "widgets")
        k("apply", "-f", "-", stdin=WIDGET.replace("blue", "purple"), show="apply -f sprocket.yaml   # with color: purple")
        print("# logical clusters: team-a comes into being on first use, isolated from root")
        k("--context", "team-a", "create", "configmap", "greeting", "--from-literal=hello=team-a")
        k("--context", "team-a", "get", "widgets")
        k("get", "logicalclusters")
        print("# /clusters/* lists across every logical cluster")
        k("--server", f"{url}/clusters/*", "get", "configmaps", "-A", "-o",
          "custom-columns=CLUSTER:.metadata.annotations.kcp\\.io/cluster,NAMESPACE:.metadata.namespace,NAME:.metadata.name,DATA:.data",
          show="--server https://.../clusters/* get configmaps -A -o custom-columns=...")
        k("delete", "logicalcluster", "team-a")
        k("get", "logicalclusters")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(15)
        shutil.rmtree(data, ignore_errors=True)
    print("hub stopped; nothing left running")
    return 0


if __name__ == "__main__":
    sys.exit(main())
