"""The upstream Go library's shape (``access.New`` / ``NewFromFile`` / ``BuildConfigFromCP``) as
``fleetplane.access.Config``, with each supported client against the real hub over TLS."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

import pytest

from fleetplane.access import (
    Config,
    NoMatchingProviderError,
    ProviderConfig,
    ProviderFileError,
    add_provider_file_flag,
)

from ..harness import Hub
from .test_hub import profile


def provider_file(tmp_path: Path, hub: Hub) -> Path:
    token = tmp_path / "token"
    token.write_text(hub.token)
    path = tmp_path / "clusterprofile-provider-file.json"
    path.write_text(json.dumps({"providers": [{"name": "tokenfile", "execConfig": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
        "args": ["-m", "fleetplane.access.plugins.tokenfile", "--token-file", str(token)],
        "provideClusterInfo": False, "interactiveMode": "Never"}}]}))
    return path


def test_new_from_file_and_build_config_from_cluster_profile_with_kubernetes(hub: Hub, tmp_path: Path) -> None:
    from kubernetes import client as k

    cfg = Config.from_file(provider_file(tmp_path, hub))
    assert cfg.names == ("tokenfile",)
    conf = cfg.build_config_from_cluster_profile(profile(hub, "tokenfile"))
    assert isinstance(conf, k.Configuration)
    assert conf.host == f"{hub.url}/clusters/root"
    with k.ApiClient(conf) as api:  # a stock ApiClient on the returned Configuration
        assert "default" in {n.metadata.name for n in k.CoreV1Api(api).list_namespace().items}
    api2 = cfg.build_api_client_from_cluster_profile(profile(hub, "tokenfile"))
    try:
        assert k.VersionApi(api2).get_code().git_version
    finally:
        api2.close()


def test_kubernetes_asyncio_and_kr8s(hub: Hub, tmp_path: Path) -> None:
    from kubernetes_asyncio import client as ka

    cfg = Config(ProviderConfig.from_file(provider_file(tmp_path, hub)))
    cp = profile(hub, "tokenfile")

    async def go() -> tuple[str, str]:
        api = await cfg.build_asyncio_client_from_cluster_profile(cp)
        async with api:
            names = {n.metadata.name for n in (await ka.CoreV1Api(api).list_namespace()).items}
        kr = await cfg.build_kr8s_api_from_cluster_profile(cp)
        try:
            version = await kr.version()
        finally:
            await kr.aclose()
        return ",".join(sorted(names)), version["gitVersion"]

    names, version = asyncio.run(go())
    assert "default" in names.split(",") and version.startswith("v1.")


def test_lightkube_sync_and_async(hub: Hub, tmp_path: Path) -> None:
    from lightkube.resources.core_v1 import Namespace

    cfg = Config(json.loads(provider_file(tmp_path, hub).read_text()))  # the file's JSON form
    cp = profile(hub, "tokenfile")
    client = cfg.build_lightkube_client_from_cluster_profile(cp)
    assert "default" in {ns.metadata.name for ns in client.list(Namespace)}

    async def go() -> set[str]:
        aclient = cfg.build_lightkube_async_client_from_cluster_profile(cp)
        try:
            return {ns.metadata.name async for ns in aclient.list(Namespace)}
        finally:
            await aclient.close()

    assert "kube-system" in asyncio.run(go())


def test_new_accepts_providers_dicts_or_nothing(tmp_path: Path) -> None:
    loaded = ProviderConfig.from_dict({"providers": [
        {"name": "a", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1", "command": "/bin/true"}},
        {"name": "b", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "/bin/true"}}]})
    assert Config(loaded.providers) == Config(loaded) == Config([p.to_dict() for p in loaded.providers])
    assert Config(loaded).names == ("a", "b")
    assert Config().providers == () and Config([]).providers == () and Config(None).names == ()
    cp = {"metadata": {"name": "c1", "namespace": "fleet"},
          "status": {"accessProviders": [{"name": "x", "cluster": {"server": "https://c1:6443"}}]}}
    with pytest.raises(NoMatchingProviderError, match='no matching cluster accessor found for cluster profile "fleet/c1"'):
        Config().build_config_from_cluster_profile(cp)
    dup = loaded.providers[0]
    with pytest.raises(ProviderFileError, match="duplicate provider name"):
        Config([dup, dup])
    assert Config.from_file(_write(tmp_path / "empty.json", "{}")).providers == ()
    with pytest.raises(ProviderFileError, match="failed to read access config file"):
        Config.from_file(tmp_path / "missing.json")
    with pytest.raises(ProviderFileError, match="failed to unmarshal access providers"):
        Config.from_file(_write(tmp_path / "bad.json", "{not json"))
    with pytest.raises(ProviderFileError, match="unsupported ProfileSourcedCLIArgsPolicy"):
        Config([{"name": "a", "profileSourcedCLIArgsPolicy": "X",
                 "execConfig": {"apiVersion": "client.authentication.k8s.io/v1", "command": "/bin/true"}}])


def test_the_flag_has_the_library_and_the_kep_names() -> None:
    parser = argparse.ArgumentParser()
    add_provider_file_flag(parser)
    assert parser.parse_args([]).clusterprofile_provider_file == "clusterprofile-provider-file.json"
    assert parser.parse_args(["--clusterprofile-provider-file", "a.json"]).clusterprofile_provider_file == "a.json"
    assert parser.parse_args(["--clusterprofile-access-provider", "b.json"]).clusterprofile_provider_file == "b.json"
    assert "--clusterprofile-access-provider" in parser.format_help()


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path
