"""Fixtures for the multicluster runtime's end-to-end tests: a hub running the Cluster controller
(it publishes a ClusterProfile with the ``secretreader`` access provider for every Cluster),
simulated member clusters, and the example operator as its own process."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ..fleet.conftest import Fleet, FleetHub, PhysicalCluster
from ..harness import free_port

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "configmap_everywhere.py"


@pytest.fixture(scope="session")
def mc_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FleetHub]:
    h = FleetHub(tmp_path_factory.mktemp("mchub")).start()
    yield h
    h.stop()


@pytest.fixture(scope="session")
def member(tmp_path_factory: pytest.TempPathFactory, mc_hub: FleetHub) -> Iterator[PhysicalCluster]:
    """A simulated cluster shared by the session (started after the hub, so stopped before it)."""
    c = PhysicalCluster(tmp_path_factory.mktemp("mc-a"), "mc-a").start()
    yield c
    c.stop(signal.SIGTERM)


@pytest.fixture
def fleet(mc_hub: FleetHub, tmp_path: Path) -> Fleet:
    return Fleet(mc_hub, tmp_path)


def secretreader_provider_file(fleet: Fleet) -> Path:
    """The consumer's provider file: the shipped secret reader, reading the hub Secrets the Cluster
    controller keeps next to the profiles."""
    path = fleet.tmp_path / "clusterprofile-provider-file.json"
    path.write_text(json.dumps({"providers": [{"name": "secretreader", "execConfig": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
        "args": ["-m", "fleetplane.access.plugins.secretreader", "--kubeconfig", str(fleet.kubeconfig),
                 "--namespace", "default"],
        "provideClusterInfo": True, "interactiveMode": "Never"}}]}))
    return path


class Operator:
    """examples/configmap_everywhere.py as a process, with its metrics endpoint."""

    def __init__(self, fleet: Fleet, *args: str) -> None:
        self.port = free_port()
        self.log = fleet.tmp_path / "operator.log"
        cmd = [sys.executable, str(EXAMPLE), "--kubeconfig", str(fleet.kubeconfig), "--namespace", "default",
               "--clusterprofile-provider-file", str(secretreader_provider_file(fleet)),
               "--metrics-port", str(self.port), *args]
        self.proc = subprocess.Popen(cmd, stdout=self.log.open("wb"), stderr=subprocess.STDOUT)

    def metrics(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """Every sample as {(name, labels): value}; empty while the endpoint is not up yet."""
        if self.proc.poll() is not None:
            raise AssertionError(f"the operator exited with {self.proc.returncode}:\n{self.log.read_text()[-3000:]}")
        try:
            text = urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5).read().decode()
        except OSError:
            return {}
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for fam in text_string_to_metric_families(text) for s in fam.samples}

    def metric(self, name: str, **labels: str) -> float:
        want = tuple(sorted({"name": "configmap_everywhere", **labels}.items()))
        return self.metrics().get((name, want), 0.0)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
