"""A hub with several identities: the admin token, a token file, client certificates."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..harness import Hub, Kubectl

TOKENS = {
    "alice": ("alice-token-0123456789", "alice", "1001", "team-a-devs"),
    "bob": ("bob-token-0123456789", "bob", "1002", "team-b-devs"),
    "vera": ("vera-token-0123456789", "vera", "1003", "viewers"),
}


@pytest.fixture(scope="module")
def auth_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    d = tmp_path_factory.mktemp("authhub")
    tokens = d / "tokens.csv"
    tokens.write_text("".join(f'{t},{u},{uid},"{g}"\n' for t, u, uid, g in TOKENS.values()))
    h = Hub(d / "data", extra=["--token-auth-file", str(tokens), "--no-cluster-controller", "--no-splitter"]).start()
    yield h
    h.stop()


def token_kubeconfig(hub: Hub, directory: Path, who: str, cluster: str) -> Path:
    """A kubeconfig for ``who``'s static token, pointed at ``cluster``."""
    import yaml

    cfg = yaml.safe_load(hub.kubeconfig_for(cluster, directory).read_text())
    cfg["users"] = [{"name": who, "user": {"token": TOKENS[who][0]}}]
    for c in cfg["contexts"]:
        c["context"]["user"] = who
    path = directory / f"kubeconfig-{who}-{cluster}"
    path.write_text(yaml.safe_dump(cfg))
    return path


def cert_kubeconfig(hub: Hub, directory: Path, user: str, groups: list[str], clusters: list[str],
                    expiration: str = "1h") -> Path:
    """``fleetplane kubeconfig create`` for ``user``, as an admin would run it."""
    out = directory / f"kubeconfig-cert-{user}"
    cmd = [sys.executable, "-m", "fleetplane.cli.main", "kubeconfig", "create", "--data-dir", str(hub.data_dir),
           "--user", user, "--expiration", expiration, "-o", str(out)]
    for g in groups:
        cmd += ["--group", g]
    for c in clusters:
        cmd += ["--logical-cluster", c]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return out


@pytest.fixture
def admin_in(auth_hub: Hub, tmp_path: Path):
    def make(cluster: str, namespace: str | None = None) -> Kubectl:
        return Kubectl(auth_hub.kubeconfig_for(cluster, tmp_path), namespace=namespace)

    return make


@pytest.fixture
def as_user(auth_hub: Hub, tmp_path: Path):
    """kubectl as a token-file user in a logical cluster: ``as_user("alice", "team-a")``."""

    def make(who: str, cluster: str, namespace: str | None = None) -> Kubectl:
        return Kubectl(token_kubeconfig(auth_hub, tmp_path, who, cluster), namespace=namespace)

    return make
