"""`make demo` as a test: run it (hub, Cluster controller and Syncers, splitter, simulated
clusters, the real kubectl) and check its transcript."""

from __future__ import annotations

import re
import subprocess
import sys
import time


def tables(out: str) -> list[dict[str, str]]:
    """Every `kubectl get deployments` table printed, as {name: READY}."""
    found = []
    for block in out.split("$ kubectl get deployments")[1:]:
        lines = block.split("\n\n")[0].splitlines()[2:]  # the command's tail, then the header
        found.append({cols[0]: cols[1] for cols in (line.split() for line in lines) if len(cols) >= 2})
    return found


def test_make_demo_transcript():
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "fleetplane.demo"], capture_output=True, text=True, timeout=120)
    elapsed = time.monotonic() - started
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-3000:]
    assert "cluster.cluster.example.dev/us-west1 created" in out and "cluster.cluster.example.dev/us-east1 created" in out
    assert "deployment.apps/my-deployment created" in out
    seen = tables(out)
    two = next(t for t in seen if t.get("my-deployment") == "15/15" and len(t) == 3)
    ready = {name: tuple(map(int, r.split("/"))) for name, r in two.items() if name != "my-deployment"}
    assert set(ready) == {"my-deployment--us-west1", "my-deployment--us-east1"}
    assert sum(r for r, _ in ready.values()) == 15 and all(r == d for r, d in ready.values())
    assert any(t.get("my-deployment", "").startswith(("0/15", "1/", "2/", "3/", "4/", "5/", "6/", "7/", "8/")) for t in seen), \
        "the transcript shows the parent converging, not only converged"
    assert 'deployment "my-deployment" successfully rolled out' in out
    assert re.search(r"Recorded by the splitter: 15 of 15 placed", out)
    final = seen[-1]
    assert final == {"my-deployment": "15/15", "my-deployment--eu-central1": "5/5",
                     "my-deployment--us-east1": "5/5", "my-deployment--us-west1": "5/5"}, final
    assert out.rstrip().endswith("everything stopped; nothing left running")
    assert elapsed < 90, f"the demo took {elapsed:.0f}s"
