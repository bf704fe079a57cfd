"""The plugins shipped with fleetplane, run as real processes through the library."""

from __future__ import annotations

import base64
import datetime as dt
import json
import sys
import time

import pytest
import yaml

from fleetplane.access import EXEC_EXTENSION, ExecFailedError, build_access_config
from fleetplane.access.plugins import secretreader, tokenfile

from .conftest import V1BETA1, cluster_profile, provider_config

SPOKE_TOKEN = "spoke-token-from-a-secret"


def module_cmd(module: str, *args: str, **kw):
    return provider_config(sys.executable, args=["-m", f"fleetplane.access.plugins.{module}", *args], **kw)


def profile(server="https://127.0.0.1:6443", cluster_name="spoke-1", **kw):
    exts = [{"name": EXEC_EXTENSION, "extension": {"clusterName": cluster_name}}] if cluster_name else []
    return cluster_profile(server, extensions=exts, **kw)


# ----------------------------------------------------------------------------------------------
# fleetplane-token-file


async def test_token_file_plugin_with_cluster_name_and_ttl(tmp_path):
    (tmp_path / "spoke-1").write_text("  token-for-spoke-1\n")
    access = build_access_config(
        profile(), module_cmd("tokenfile", "--token-file", str(tmp_path / "{clusterName}"), "--ttl", "300")
    )
    cred = await access.get_credential()
    assert cred.token == "token-for-spoke-1"
    assert 250 < cred.expiration - time.time() <= 300


async def test_token_file_plugin_v1beta1_and_env_default(tmp_path):
    (tmp_path / "t").write_text("beta-token")
    cfg = module_cmd(
        "tokenfile",
        api_version=V1BETA1,
        provide_cluster_info=False,
        env=[{"name": "FLEETPLANE_TOKEN_FILE", "value": str(tmp_path / "t")}],
    )
    cred = await build_access_config(profile(), cfg).get_credential()
    assert cred.token == "beta-token" and cred.expiration is None


async def test_token_file_plugin_jwt_expiry(tmp_path):
    def b64(d):
        return base64.urlsafe_b64encode(json.dumps(d).encode()).rstrip(b"=").decode()

    jwt = f"{b64({'alg': 'none'})}.{b64({'sub': 'x', 'exp': 1893456000})}.sig"
    (tmp_path / "jwt").write_text(jwt)
    cred = await build_access_config(
        profile(), module_cmd("tokenfile", "--token-file", str(tmp_path / "jwt"), "--jwt-expiry")
    ).get_credential()
    assert cred.expiration == 1893456000


@pytest.mark.parametrize(
    ("setup", "args", "match"),
    [
        (None, ["--token-file", "{dir}/missing"], "cannot read token file"),
        ("", ["--token-file", "{dir}/t"], "is empty"),
        ("two words-secret", ["--token-file", "{dir}/t"], "more than one word"),
        ("tok", ["--token-file", "{dir}/t", "--jwt-expiry"], "not a JWT"),
        ("tok", [], "no token file"),
    ],
)
async def test_token_file_plugin_errors(tmp_path, setup, args, match):
    if setup is not None:
        (tmp_path / "t").write_text(setup)
    cfg = module_cmd("tokenfile", *[a.replace("{dir}", str(tmp_path)) for a in args])
    with pytest.raises(ExecFailedError, match=match) as ei:
        await build_access_config(profile(), cfg).get_credential()
    assert ei.value.exit_code == 1 and "[fleetplane-token-file]" in str(ei.value)
    assert "words-secret" not in str(ei.value)


async def test_token_file_cluster_name_requires_cluster_info(tmp_path):
    cfg = module_cmd("tokenfile", "--token-file", str(tmp_path / "{clusterName}"), provide_cluster_info=False)
    with pytest.raises(ExecFailedError, match="clusterName is missing"):
        await build_access_config(profile(), cfg).get_credential()


def test_token_file_main_in_process(tmp_path, monkeypatch, capsys):
    (tmp_path / "t").write_text("in-process")
    monkeypatch.setenv(
        "KUBERNETES_EXEC_INFO",
        json.dumps({"kind": "ExecCredential", "apiVersion": V1BETA1, "spec": {"interactive": False}}),
    )
    assert (
        tokenfile.main(["--token-file", str(tmp_path / "t"), "--expires-at", "2031-02-03T04:05:06+01:00"])
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out == {
        "apiVersion": V1BETA1,
        "kind": "ExecCredential",
        "status": {"expirationTimestamp": "2031-02-03T03:05:06Z", "token": "in-process"},
    }
    monkeypatch.setenv(
        "KUBERNETES_EXEC_INFO",
        json.dumps({"kind": "ExecCredential", "apiVersion": "client.authentication.k8s.io/v1alpha1"}),
    )
    assert tokenfile.main(["--token-file", str(tmp_path / "t")]) == 1
    assert "unsupported ExecCredential apiVersion" in capsys.readouterr().err


# ----------------------------------------------------------------------------------------------
# fleetplane-secret-reader


def hub_kubeconfig(
    tmp_path,
    api_server,
    *,
    token="hub-token",
    namespace="fleet-consumer",
    tls_server_name=None,
    cert=None,
    key=None,
) -> str:
    cluster = {
        "server": api_server.url,
        "certificate-authority-data": base64.b64encode(api_server.pki.server_ca.pem).decode(),
    }
    if tls_server_name:
        cluster["tls-server-name"] = tls_server_name
    user = {}
    if token:
        user["token"] = token
    if cert:
        user["client-certificate-data"] = base64.b64encode(cert.encode()).decode()
        user["client-key-data"] = base64.b64encode(key.encode()).decode()
    ctx = {"cluster": "hub", "user": "me"}
    if namespace:
        ctx["namespace"] = namespace
    kc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "hub",
        "clusters": [{"name": "hub", "cluster": cluster}],
        "users": [{"name": "me", "user": user}],
        "contexts": [{"name": "hub", "context": ctx}],
    }
    path = tmp_path / "hub.kubeconfig"
    path.write_text(yaml.safe_dump(kc))
    return str(path)


@pytest.fixture
def hub(api_server):
    st = api_server.state
    st.tokens.add("hub-token")
    st.add_secret("fleet-consumer", "spoke-1", {"token": SPOKE_TOKEN.encode()})
    st.add_secret("other-ns", "spoke-1", {"token": b"wrong-namespace-token"})
    return api_server


async def test_secret_reader_end_to_end(tmp_path, hub):
    """ClusterProfile -> provider file -> shipped plugin -> hub Secret -> token -> spoke API call."""
    from kubernetes import client as k

    from fleetplane.access.clients.kubernetes_client import new_kubernetes_api_client

    kubeconfig = hub_kubeconfig(tmp_path, hub)
    cp = profile(hub.url, ca_pem=hub.pki.server_ca.pem, provider="secretreader")
    cfg = module_cmd("secretreader", "--kubeconfig", kubeconfig, name="secretreader")
    access = build_access_config(cp, cfg)
    cred = await access.get_credential()
    assert cred.token == SPOKE_TOKEN and cred.expiration is None
    hub.state.tokens.add(SPOKE_TOKEN)  # the "spoke" is the same test server
    api = new_kubernetes_api_client(access)
    assert k.VersionApi(api).get_code().major == "1"
    assert hub.state.log[-1][2] == SPOKE_TOKEN


async def test_secret_reader_hub_from_env_namespace_flag_and_ttl(tmp_path, hub):
    kubeconfig = hub_kubeconfig(tmp_path, hub, namespace=None)
    cfg = module_cmd(
        "secretreader",
        "--namespace",
        "fleet-consumer",
        "--ttl",
        "120",
        env=[{"name": "FLEETPLANE_HUB_KUBECONFIG", "value": kubeconfig}],
    )
    cred = await build_access_config(profile(), cfg).get_credential()
    assert cred.token == SPOKE_TOKEN and 60 < cred.expiration - time.time() <= 120


async def test_secret_reader_tls_server_name_and_client_certificate(tmp_path, hub):
    cert, key = hub.pki.client_pair("hub-reader")
    hub.state.cert_users.add("hub-reader")
    kubeconfig = hub_kubeconfig(
        tmp_path, hub, token=None, tls_server_name="hub.fleet.test", cert=cert, key=key
    )
    cred = await build_access_config(
        profile(), module_cmd("secretreader", "--kubeconfig", kubeconfig)
    ).get_credential()
    assert cred.token == SPOKE_TOKEN
    assert hub.state.log[-1][3] == "hub-reader"
    bad = hub_kubeconfig(tmp_path, hub, token=None, tls_server_name="wrong.example", cert=cert, key=key)
    with pytest.raises(ExecFailedError, match="cannot reach the hub"):
        await build_access_config(
            profile(provider="x"), module_cmd("secretreader", "--kubeconfig", bad, name="x")
        ).get_credential()


@pytest.mark.parametrize(
    ("kw", "cluster_name", "match"),
    [
        ({}, "spoke-9", 'secret "fleet-consumer/spoke-9" not found on the hub'),
        ({"token": "bad-hub-token"}, "spoke-1", "HTTP 401"),
        ({}, None, "missing clusterName"),
    ],
)
async def test_secret_reader_errors(tmp_path, hub, kw, cluster_name, match):
    kubeconfig = hub_kubeconfig(tmp_path, hub, **kw)
    cfg = module_cmd("secretreader", "--kubeconfig", kubeconfig)
    with pytest.raises(ExecFailedError, match=match) as ei:
        await build_access_config(profile(cluster_name=cluster_name), cfg).get_credential()
    assert "[fleetplane-secret-reader]" in str(ei.value)
    assert "bad-hub-token" not in str(ei.value) and "hub-token" not in str(ei.value)


async def test_secret_reader_key_and_name_format(tmp_path, hub):
    hub.state.add_secret("fleet-consumer", "spoke-1-creds", {"bearer": b"formatted"})
    kubeconfig = hub_kubeconfig(tmp_path, hub)
    cfg = module_cmd(
        "secretreader", "--kubeconfig", kubeconfig, "--name-format", "{clusterName}-creds", "--key", "bearer"
    )
    assert (await build_access_config(profile(), cfg).get_credential()).token == "formatted"


def test_secret_reader_cannot_find_hub(monkeypatch, tmp_path, capsys):
    for var in ("FLEETPLANE_HUB_KUBECONFIG", "KUBECONFIG", "KUBERNETES_SERVICE_HOST"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBERNETES_EXEC_INFO", raising=False)
    assert secretreader.main(["--cluster-name", "c"]) == 1
    assert "cannot find the hub" in capsys.readouterr().err


def test_plugins_have_main_and_protocol_timestamp_format():
    from fleetplane.access.plugins._protocol import format_timestamp

    assert callable(secretreader.main) and callable(tokenfile.main)
    assert (
        format_timestamp(dt.datetime(2030, 1, 1, 1, 0, 0, 123, tzinfo=dt.timezone(dt.timedelta(hours=1))))
        == "2030-01-01T00:00:00Z"
    )
