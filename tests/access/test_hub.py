"""The credential library end to end against the real hub over TLS: a ClusterProfile names
the hub, a shipped plugin supplies the credential, the official clients talk to the hub."""

from __future__ import annotations

import base64
import json
import sys
import uuid
from pathlib import Path

import pytest

from fleetplane.access import ProviderConfig

from ..harness import Hub


def profile(hub: Hub, provider: str, cluster_name: str = "", ca: bytes | None = None) -> dict:
    cluster: dict = {"server": f"{hub.url}/clusters/root",
                     "certificate-authority-data": base64.b64encode(ca or hub.ca.read_bytes()).decode()}
    if cluster_name:
        cluster["extensions"] = [{"name": "client.authentication.k8s.io/exec", "extension": {"clusterName": cluster_name}}]
    return {"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile",
            "metadata": {"name": "hub", "namespace": "fleet"},
            "spec": {"clusterManager": {"name": "test"}},
            "status": {"accessProviders": [{"name": provider, "cluster": cluster}]}}


def providers(name: str, args: list[str], env: dict[str, str] | None = None, cluster_info: bool = False) -> ProviderConfig:
    return ProviderConfig.from_dict({"providers": [{"name": name, "execConfig": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable, "args": args,
        "env": [{"name": k, "value": v} for k, v in (env or {}).items()],
        "provideClusterInfo": cluster_info, "interactiveMode": "Never"}}]})


def list_namespaces(access) -> list[str]:
    from kubernetes import client

    from fleetplane.access.clients.kubernetes_client import new_kubernetes_api_client

    api = new_kubernetes_api_client(access)
    try:
        return [n.metadata.name for n in client.CoreV1Api(api).list_namespace().items]
    finally:
        api.close()


def test_token_file_plugin_right_token_works_wrong_token_and_wrong_ca_fail(hub: Hub, tmp_path: Path):
    good = tmp_path / "good"
    good.write_text(hub.token)
    bad = tmp_path / "bad"
    bad.write_text("not-the-token")
    plugin = ["-m", "fleetplane.access.plugins.tokenfile", "--token-file"]

    ok = providers("tokenfile", [*plugin, str(good)]).build_access_config(profile(hub, "tokenfile"))
    assert "default" in list_namespaces(ok)

    from kubernetes.client import ApiException

    wrong = providers("tokenfile", [*plugin, str(bad)]).build_access_config(profile(hub, "tokenfile"))
    with pytest.raises(ApiException) as exc:
        list_namespaces(wrong)
    assert exc.value.status == 401

    from cryptography.hazmat.primitives import serialization

    from fleetplane.server.certs import _new_ca

    foreign, _ = _new_ca("someone-else")  # a CA that did not sign the hub's certificate
    foreign_pem = foreign.public_bytes(serialization.Encoding.PEM)
    untrusted = providers("tokenfile", [*plugin, str(good)]).build_access_config(profile(hub, "tokenfile", ca=foreign_pem))
    with pytest.raises(Exception) as exc2:
        list_namespaces(untrusted)
    assert "CERTIFICATE_VERIFY_FAILED" in repr(exc2.value) or "certificate verify failed" in repr(exc2.value).lower()


def test_secret_reader_plugin_reads_the_token_from_the_hub(hub: Hub, tmp_path: Path):
    name = "spoke-" + uuid.uuid4().hex[:6]
    code, _ = hub.json("POST", "/api/v1/namespaces/default/secrets", {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": {"token": hub.token}})
    assert code == 201
    cfg = providers("secretreader", ["-m", "fleetplane.access.plugins.secretreader"],
                    env={"FLEETPLANE_HUB_KUBECONFIG": str(hub.kubeconfig), "FLEETPLANE_SECRETREADER_NAMESPACE": "default"},
                    cluster_info=True)
    access = cfg.build_access_config(profile(hub, "secretreader", cluster_name=name))
    assert "kube-system" in list_namespaces(access)
    # the same profile content gives an equal config: consumers can cache clients on it
    assert cfg.build_access_config(profile(hub, "secretreader", cluster_name=name)) == access
    # no Secret for that cluster: a clear error naming the plugin's complaint, and no token in it
    missing = cfg.build_access_config(profile(hub, "secretreader", cluster_name=name + "-gone"))
    with pytest.raises(Exception) as exc:
        list_namespaces(missing)
    assert hub.token not in str(exc.value) and json.dumps(hub.token) not in repr(exc.value)
