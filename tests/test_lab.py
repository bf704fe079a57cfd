"""fleetplane.lab: a hub and a simulated cluster as processes through the CLI, attached with kubectl;
a restart keeps the data; a process that dies is reported with its log. (`make demo`, which
uses the lab throughout, is tests/test_demo.py.)"""

from __future__ import annotations

import pytest

from fleetplane.lab import Lab, LabError


def test_a_fleet_of_processes(tmp_path):
    with Lab(tmp_path / "lab") as lab:
        hub = lab.start_hub("--cluster-probe-interval", "0.5", "--no-splitter")
        lab.simulate("east", "--nodes", "1", "--kubelet-delay", "0")
        assert "cluster.cluster.example.dev/east created" in lab.attach("east", location="eu").stdout
        lab.wait_attached(["east"], timeout=60)
        lab.wait_served("apps/v1", "deployments", timeout=60)  # the Syncer imported the type
        assert "east" in lab.kubectl("get", "clusterprofiles", check=True).stdout

        pid = hub.pid
        hub.restart()
        assert hub.pid != pid and hub.ready_s is not None and hub.ready_s < 30
        assert "east" in lab.attached() or lab.wait_attached(["east"], timeout=60)  # same data, same port

        lab["east"].kill()  # on purpose: not an error
        lab.check()
        with pytest.raises(LabError, match="already is a process named east"):
            lab.simulate("east")
        with pytest.raises(LabError, match="exited with code"):
            lab.start_hub("--storage", "nonsense", name="broken")
    assert not hub.running
    assert (tmp_path / "lab" / "hub.log").exists()  # a directory it was given is kept
    with Lab(tmp_path / "lab") as again, pytest.raises(LabError, match="already exists"):
        again.start_hub()  # another run's objects would mix with this one's
