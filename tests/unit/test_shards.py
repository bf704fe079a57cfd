"""The controller-manager's shards: how Clusters are divided among them, which controllers each
shard runs, and the command lines that refuse a shard that cannot be."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from fleetplane.controllermanager import of_shard
from fleetplane.fleet.cluster.options import ClusterControllerOptions, shard_of
from fleetplane.fleet.cluster.run import LEASE_NAME, lease_name
from fleetplane.plugin import Controller


async def _noop(ctx: object) -> None:
    return None


def test_clusters_spread_evenly_and_always_to_the_same_shard() -> None:
    names = [f"cluster-{i}" for i in range(4000)]
    counts = Counter(shard_of("root", n, 4) for n in names)
    assert set(counts) == {0, 1, 2, 3}
    assert all(900 <= c <= 1100 for c in counts.values()), counts
    # stable across calls and processes (not Python's salted hash()): the same name, the same shard
    again = subprocess.run([sys.executable, "-c", "from fleetplane.fleet.cluster.options import shard_of;"
                            "print([shard_of('root', f'cluster-{i}', 4) for i in range(50)])"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert again == str([shard_of("root", f"cluster-{i}", 4) for i in range(50)])
    # the logical cluster is part of the key: the same name elsewhere may land elsewhere
    assert any(shard_of("root", n, 4) != shard_of("team-a", n, 4) for n in names[:20])


def test_a_shard_owns_only_its_part_and_an_unsharded_controller_owns_all() -> None:
    whole = ClusterControllerOptions()
    parts = [ClusterControllerOptions(shard=i, shards=3) for i in range(3)]
    for n in (f"c{i}" for i in range(30)):
        assert whole.owns("root", n)
        assert sum(p.owns("root", n) for p in parts) == 1
    with pytest.raises(ValueError, match="shard 3 is not one of 0..2"):
        ClusterControllerOptions(shard=3, shards=3)


def test_each_shard_has_its_own_lease() -> None:
    assert lease_name(ClusterControllerOptions()) == LEASE_NAME
    names = {lease_name(ClusterControllerOptions(shard=i, shards=4)) for i in range(4)}
    assert names == {f"{LEASE_NAME}-shard-{i}" for i in range(4)}
    # the controller's identity may renew each of them (RBAC names them: there is a most)
    from fleetplane.fleet.identities import cluster_roles

    role = next(r for r in cluster_roles() if r["metadata"]["name"] == "system:fleetplane:cluster-controller")
    renew = next(r for r in role["rules"] if "update" in r["verbs"] and r.get("resources") == ["leases"])
    assert set(renew["resourceNames"]) >= names | {LEASE_NAME}
    with pytest.raises(ValueError, match="shards: want 1 to 32"):
        ClusterControllerOptions(shards=33)


def test_the_first_shard_runs_every_controller_the_others_only_the_sharded() -> None:
    cs = [Controller("cluster-controller", _noop, sharded=True), Controller("splitter", _noop)]
    assert [c.name for c in of_shard(cs, 0)] == ["cluster-controller", "splitter"]
    assert [c.name for c in of_shard(cs, 2)] == ["cluster-controller"]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=60)


def test_command_lines_refuse_a_shard_out_of_range(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n")
    res = _run("-m", "fleetplane.fleet.cluster", "--kubeconfig", str(kubeconfig), "--shard", "2", "--shards", "2")
    assert res.returncode == 2 and "shard 2 is not one of 0..1 of 2 shards" in res.stderr, res.stderr
    res = _run("-m", "fleetplane.cli.main", "controller-manager", "--kubeconfig", str(kubeconfig),
               "--shard", "2", "--shards", "2", "--data-dir", str(tmp_path))
    assert res.returncode == 2 and "--shard 2 is not one of 0..1" in res.stderr, res.stderr
    res = _run("-m", "fleetplane.cli.main", "controller-manager", "--shards", "0")
    assert res.returncode == 2 and "want 1 to 32, not 0" in res.stderr, res.stderr
    res = _run("-m", "fleetplane.cli.main", "controller-manager", "--shards", "33")
    assert res.returncode == 2 and "want 1 to 32, not 33" in res.stderr, res.stderr
    res = _run("-m", "fleetplane.cli.main", "start", "--controller-manager-shards", "33")
    assert res.returncode == 2 and "want 1 to 32, not 33" in res.stderr, res.stderr
    res = _run("-m", "fleetplane.cli.main", "start", "--data-dir", str(tmp_path / "hub"),
               "--controllers=in-process", "--controller-manager-shards", "2")
    assert res.returncode == 1 and "it needs --controllers=separate, not in-process" in res.stderr, res.stderr
    assert not (tmp_path / "hub").exists()  # refused before anything was written
