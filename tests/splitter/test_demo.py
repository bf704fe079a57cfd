"""The demo itself, as a test: run it (real processes: hub, Cluster controller and Syncers, splitter,
simulated clusters, kubectl) and check its transcript."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path


def rows(block: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split()[1:] for line in block.strip().splitlines()[1:] if line.strip()}


def section(text: str, command: str, nth: int = 0) -> str:
    """The output of the ``nth`` time ``$ command`` appears."""
    parts = text.split(f"$ {command}\n")
    assert len(parts) > nth + 1, f"{command!r} not in the transcript (#{nth})"
    return re.split(r"\n(?=\$ |\n# )", parts[nth + 1])[0]


def test_the_demo_transcript(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "fleetplane.fleet.splitter.demo", "--fast", "--workdir",
                           str(tmp_path)], capture_output=True, text=True, timeout=240)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "No resources found" in section(out, "kubectl get clusterprofiles")
    assert "deployments" not in section(out, "kubectl api-resources --api-group=apps")
    assert "deployments   deploy       apps/v1" in section(out, "kubectl api-resources --api-group=apps", 1)
    profiles = rows(section(out, "kubectl get clusterprofiles", 1))
    assert {k: v[2] for k, v in profiles.items()} == {"us-east1": "True", "us-west1": "True"}
    assert 'deployment "my-deployment" successfully rolled out' in out
    first = rows(section(out, "kubectl get deployments", 1))
    assert {k: v[0] for k, v in first.items()} == {"my-deployment": "15/15", "my-deployment--us-east1": "8/8",
                                                  "my-deployment--us-west1": "7/7"}
    explain = section(out, "fleetplane placement explain deployment/my-deployment")
    assert re.search(r"us-east1\s+Selected\s+0\s+1\s+80\s+8\s+8", explain), explain
    assert "Recorded by the splitter: 15 of 15 placed: us-east1 8, us-west1 7" in explain
    joined = rows(section(out, "kubectl get deployments", 2))
    assert {k: v[0] for k, v in joined.items()} == {"my-deployment": "15/15", "my-deployment--eu-central1": "5/5",
                                                   "my-deployment--us-east1": "5/5", "my-deployment--us-west1": "5/5"}
    after = rows(section(out, "kubectl get deployments my-deployment my-deployment--us-east1 my-deployment--eu-central1"))
    assert after["my-deployment"][0] == "15/15"
    assert sorted(after[k][0] for k in ("my-deployment--us-east1", "my-deployment--eu-central1")) == ["7/7", "8/8"]
    events = section(out, "kubectl get events --field-selector involvedObject.name=my-deployment")
    for text in ("Placed             15 replicas placed: us-east1 8, us-west1 7",
                 "Rebalancing        keeping 3 in us-east1, 2 in us-west1 until their replacements are available",
                 "SuccessfulDelete   Deleted my-deployment--us-west1 from cluster us-west1"):
        assert text in events, events
    assert re.search(r"Placed +15 replicas placed: eu-central1 [78], us-east1 [78]\n", events + "\n"), events
    assert "Warning" not in events, events
    assert out.rstrip().endswith("# done")
