"""Fixtures: a hub process with the splitter in it (tests/splitter/hubproc.py, as ``fleetplane
start`` runs it once wired) and a logical cluster per test."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..harness import Hub, wait_for
from .fixtures import Fleet

HUBPROC = Path(__file__).with_name("hubproc.py")


class SplitHub(Hub):
    """A hub with the splitter inside (and the Cluster controller with ``--cluster-controller``)."""

    def start(self, timeout: float = 20.0) -> SplitHub:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, str(HUBPROC), "--data-dir", str(self.data_dir), "--port", str(self.port),
               *self.extra]
        self._logf = open(self.log, "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(cmd, stdout=self._logf, stderr=subprocess.STDOUT)
        wait_for(self._ready, timeout, what=f"hub on {self.url} (log: {self.log})")
        return self


@pytest.fixture(scope="module")
def split_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SplitHub]:
    h = SplitHub(tmp_path_factory.mktemp("splithub")).start()
    yield h
    h.stop()


@pytest.fixture
def fleet(split_hub: SplitHub, tmp_path: Path) -> Fleet:
    return Fleet(split_hub, tmp_path)
