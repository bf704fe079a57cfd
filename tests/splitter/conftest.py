"""Fixtures: a hub process with the splitter in it (tests/splitter/hubproc.py, as ``fleetplane
start`` runs it once wired) and a logical cluster per test."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..harness import Hub
from .fixtures import Fleet

HUBPROC = Path(__file__).with_name("hubproc.py")


class SplitHub(Hub):
    """A hub with the splitter inside (and the Cluster controller with ``--cluster-controller``)."""

    start_timeout = 20.0

    def command(self, cli: list[str]) -> list[str]:
        return [sys.executable, str(HUBPROC), "--data-dir", str(self.data_dir), "--port", str(self.port), *self.extra]


@pytest.fixture(scope="module")
def split_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SplitHub]:
    h = SplitHub(tmp_path_factory.mktemp("splithub")).start()
    yield h
    h.stop()


@pytest.fixture
def fleet(split_hub: SplitHub, tmp_path: Path) -> Fleet:
    return Fleet(split_hub, tmp_path)
