"""Client integrations against a local HTTPS API server (self-signed CA, bearer tokens, client certs)."""

from __future__ import annotations

import copy

import pytest

from fleetplane.access import build_access_config
from fleetplane.access.clients.kr8s_client import kr8s_api
from fleetplane.access.clients.kubernetes_asyncio_client import new_kubernetes_asyncio_client
from fleetplane.access.clients.kubernetes_client import kubernetes_configuration, new_kubernetes_api_client
from fleetplane.access.clients.lightkube_client import lightkube_async_client, lightkube_client

from .conftest import cluster_profile, provider_config

EXP = 1893456000.0  # 2030-01-01T00:00:00Z, the expiry the token plugin reports when asked to


class TokenPlugin:
    """A plugin returning the token (and optional expiry / cert) currently in its state files."""

    def __init__(self, plugins) -> None:
        self.plugins = plugins
        self.cmd = plugins.script(
            f"""
            bump({plugins.path("count")!r})
            st = json.load(open({plugins.path("state.json")!r}))
            status = {{k: v for k, v in st.items() if v}}
            emit(status)
            """
        )
        self.set(token="good-token")

    def set(self, token=None, cert=None, key=None, expires=False) -> None:
        import json

        st = {"token": token, "clientCertificateData": cert, "clientKeyData": key}
        if expires:
            st["expirationTimestamp"] = "2030-01-01T00:00:00Z"
        with open(self.plugins.path("state.json"), "w") as f:
            json.dump(st, f)

    @property
    def execs(self) -> int:
        return self.plugins.count()


@pytest.fixture
def plugin(plugins) -> TokenPlugin:
    return TokenPlugin(plugins)


def access(server, plugin, *, ca=None, **cluster_fields):
    ca_pem = server.pki.server_ca.pem if ca is None else ca
    cp = cluster_profile(server.url, ca_pem=ca_pem, **cluster_fields)
    return build_access_config(cp, provider_config(plugin.cmd))


def fake_clock(acc, t=EXP - 60):
    now = [t]
    acc.authenticator().clock = lambda: now[0]
    return now


# ----------------------------------------------------------------------------------------------
# kubernetes (sync)


def test_kubernetes_sync_token_and_version(api_server, plugin):
    from kubernetes import client as k

    api_server.state.tokens.add("good-token")
    api = new_kubernetes_api_client(access(api_server, plugin))
    names = [n.metadata.name for n in k.CoreV1Api(api).list_namespace().items]
    assert names == ["default", "kube-system"]
    assert k.VersionApi(api).get_code().git_version == "v1.33.0-fleetplane-test"
    assert api_server.state.log[-1][2] == "good-token"


def test_kubernetes_sync_wrong_ca_fails(api_server, plugin):
    from kubernetes import client as k

    api_server.state.tokens.add("good-token")
    api = new_kubernetes_api_client(access(api_server, plugin, ca=api_server.pki.other_ca.pem))
    with pytest.raises(Exception, match="CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
        k.CoreV1Api(api).list_namespace()
    assert api_server.state.log == []


def test_kubernetes_sync_wrong_token_fails_visibly(api_server, plugin):
    from kubernetes import client as k

    api_server.state.tokens.add("another-token")
    api = new_kubernetes_api_client(access(api_server, plugin))
    with pytest.raises(k.ApiException) as ei:
        k.CoreV1Api(api).list_namespace()
    assert ei.value.status == 401
    # the rejected credential was invalidated and the plugin re-run once; same token -> no retry
    assert plugin.execs == 2 and api_server.state.statuses() == [401]


def test_kubernetes_sync_refresh_after_401(api_server, plugin):
    from kubernetes import client as k

    api_server.state.tokens.add("good-token")
    api = new_kubernetes_api_client(access(api_server, plugin))
    k.CoreV1Api(api).list_namespace()
    # the token is revoked on the server and the plugin now hands out a new one
    api_server.state.tokens.clear()
    api_server.state.tokens.add("rotated-token")
    plugin.set(token="rotated-token")
    assert k.CoreV1Api(api).list_namespace().items
    assert api_server.state.statuses() == [200, 401, 200]
    assert api_server.state.log[-1][2] == "rotated-token" and plugin.execs == 2


def test_kubernetes_sync_expired_credential_is_refreshed_before_use(api_server, plugin):
    from kubernetes import client as k

    api_server.state.tokens.add("good-token")
    plugin.set(token="good-token", expires=True)
    acc = access(api_server, plugin)
    now = fake_clock(acc)
    # a stock ApiClient: the refresh_api_key_hook alone keeps the token fresh
    conf = kubernetes_configuration(acc)
    api = k.ApiClient(copy.deepcopy(conf))
    k.CoreV1Api(api).list_namespace()
    api_server.state.tokens = {"next-token"}
    plugin.set(token="next-token", expires=True)
    now[0] = EXP + 1  # the credential expired: the hook re-runs the plugin before sending
    k.CoreV1Api(api).list_namespace()
    assert api_server.state.statuses() == [200, 200] and plugin.execs == 2
    # without the refresh, the old (expired) token is visibly rejected
    stale = k.ApiClient(
        k.Configuration(
            host=api_server.url,
            ca_cert_data=api_server.pki.server_ca.pem.decode(),
            api_key={"BearerToken": "good-token"},
            api_key_prefix={"BearerToken": "Bearer"},
        )
    )
    with pytest.raises(k.ApiException) as ei:
        k.CoreV1Api(stale).list_namespace()
    assert ei.value.status == 401


def test_kubernetes_sync_client_certificate_and_rotation(api_server, plugin):
    from kubernetes import client as k

    pki = api_server.pki
    cert1, key1 = pki.client_pair("user-1")
    cert2, key2 = pki.client_pair("user-2")
    plugin.set(cert=cert1, key=key1, expires=True)
    api_server.state.cert_users.add("user-1")
    acc = access(api_server, plugin)
    now = fake_clock(acc)
    api = new_kubernetes_api_client(acc)
    k.CoreV1Api(api).list_namespace()
    assert api_server.state.log[-1][3] == "user-1"
    api_server.state.cert_users = {"user-2"}
    plugin.set(cert=cert2, key=key2, expires=True)
    now[0] = EXP + 1
    k.CoreV1Api(api).list_namespace()  # new cert file + pool cleared: a fresh connection
    assert api_server.state.log[-1][3] == "user-2"
    assert api_server.state.statuses() == [200, 200]
    # the key material lives in a private file
    import os
    import stat

    path = api.configuration.cert_file
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700


def test_kubernetes_sync_tls_server_name(api_server, plugin):
    from kubernetes import client as k

    api_server.state.tokens.add("good-token")
    api = new_kubernetes_api_client(access(api_server, plugin, **{"tls-server-name": "hub.fleet.test"}))
    assert k.CoreV1Api(api).list_namespace().items
    plugin2 = plugin  # same plugin, different cluster config
    bad = new_kubernetes_api_client(access(api_server, plugin2, **{"tls-server-name": "wrong.example"}))
    with pytest.raises(Exception, match="CERTIFICATE_VERIFY_FAILED|certificate verify failed|match|mismatch"):
        k.CoreV1Api(bad).list_namespace()


def test_kubernetes_configuration_fields_and_deepcopy(api_server, plugin):
    acc = access(
        api_server, plugin, **{"proxy-url": "http://proxy.example:3128", "insecure-skip-tls-verify": True}
    )
    conf = kubernetes_configuration(acc)
    assert (
        conf.host == api_server.url and conf.proxy == "http://proxy.example:3128" and conf.verify_ssl is False
    )
    clone = copy.deepcopy(conf)
    assert clone.refresh_api_key_hook is conf.refresh_api_key_hook
    assert clone.get_api_key_with_prefix("BearerToken") == "Bearer good-token"


# ----------------------------------------------------------------------------------------------
# kubernetes_asyncio


async def test_kubernetes_asyncio_token_401_refresh_and_disable_compression(api_server, plugin):
    from kubernetes_asyncio import client as k

    api_server.state.tokens.add("good-token")
    api = await new_kubernetes_asyncio_client(access(api_server, plugin, **{"disable-compression": True}))
    try:
        names = [n.metadata.name for n in (await k.CoreV1Api(api).list_namespace()).items]
        assert names == ["default", "kube-system"]
        assert api_server.state.headers[-1].get("Accept-Encoding") == "identity"
        api_server.state.tokens = {"rotated-token"}
        plugin.set(token="rotated-token")
        assert (await k.VersionApi(api).get_code()).git_version == "v1.33.0-fleetplane-test"
        assert api_server.state.statuses() == [200, 401, 200]
    finally:
        await api.close()


async def test_kubernetes_asyncio_wrong_ca_and_wrong_token(api_server, plugin):
    from kubernetes_asyncio import client as k

    api = await new_kubernetes_asyncio_client(access(api_server, plugin, ca=api_server.pki.other_ca.pem))
    try:
        with pytest.raises(Exception, match="CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
            await k.CoreV1Api(api).list_namespace()
    finally:
        await api.close()
    api_server.state.tokens.add("someone-elses-token")
    api = await new_kubernetes_asyncio_client(access(api_server, plugin))
    try:
        with pytest.raises(k.ApiException) as ei:
            await k.CoreV1Api(api).list_namespace()
        assert ei.value.status == 401
    finally:
        await api.close()


async def test_kubernetes_asyncio_expiry_and_client_certificate(api_server, plugin):
    from kubernetes_asyncio import client as k

    pki = api_server.pki
    cert1, key1 = pki.client_pair("async-1")
    cert2, key2 = pki.client_pair("async-2")
    plugin.set(cert=cert1, key=key1, expires=True)
    api_server.state.cert_users = {"async-1"}
    acc = access(api_server, plugin)
    now = fake_clock(acc)
    api = await new_kubernetes_asyncio_client(acc)
    try:
        await k.CoreV1Api(api).list_namespace()
        assert api_server.state.log[-1][3] == "async-1"
        api_server.state.cert_users = {"async-2"}
        plugin.set(cert=cert2, key=key2, expires=True)
        now[0] = EXP + 1
        await k.CoreV1Api(api).list_namespace()
        assert api_server.state.log[-1][3] == "async-2"
        assert api_server.state.statuses() == [200, 200]
    finally:
        await api.close()


# ----------------------------------------------------------------------------------------------
# lightkube


def test_lightkube_sync(api_server, plugin):
    from lightkube.resources.core_v1 import Namespace

    api_server.state.tokens.add("good-token")
    client = lightkube_client(
        access(api_server, plugin, **{"tls-server-name": "hub.fleet.test", "disable-compression": True})
    )
    try:
        assert [n.metadata.name for n in client.list(Namespace)] == ["default", "kube-system"]
        assert api_server.state.headers[-1].get("Accept-Encoding") == "identity"
        api_server.state.tokens = {"rotated-token"}
        plugin.set(token="rotated-token")
        assert len(list(client.list(Namespace))) == 2
        assert api_server.state.statuses() == [200, 401, 200]
    finally:
        client.close()


def test_lightkube_sync_failures(api_server, plugin):
    from lightkube import ApiError
    from lightkube.resources.core_v1 import Namespace

    client = lightkube_client(access(api_server, plugin, ca=api_server.pki.other_ca.pem))
    with pytest.raises(Exception, match="CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
        list(client.list(Namespace))
    client.close()
    client = lightkube_client(access(api_server, plugin))  # server accepts no token at all
    with pytest.raises(ApiError) as ei:
        list(client.list(Namespace))
    assert ei.value.status.code == 401
    client.close()


async def test_lightkube_async_expiry_and_certificate(api_server, plugin):
    from lightkube.resources.core_v1 import Namespace

    pki = api_server.pki
    cert, key = pki.client_pair("lk-user")
    plugin.set(token="good-token", expires=True)
    api_server.state.tokens = {"good-token"}
    acc = access(api_server, plugin)
    now = fake_clock(acc)
    client = lightkube_async_client(acc)
    try:
        assert len([n async for n in client.list(Namespace)]) == 2
        api_server.state.tokens = set()
        api_server.state.cert_users = {"lk-user"}
        plugin.set(cert=cert, key=key, expires=True)
        now[0] = EXP + 1  # expired: proactive re-exec, now a client certificate
        assert len([n async for n in client.list(Namespace)]) == 2
        assert api_server.state.statuses() == [200, 200] and api_server.state.log[-1][3] == "lk-user"
    finally:
        await client.close()


# ----------------------------------------------------------------------------------------------
# kr8s


async def test_kr8s(api_server, plugin):
    api_server.state.tokens.add("good-token")
    api = await kr8s_api(access(api_server, plugin))
    try:
        assert (await api.version())["gitVersion"] == "v1.33.0-fleetplane-test"
        async with api.call_api("GET", version="v1", url="namespaces") as resp:
            assert [i["metadata"]["name"] for i in resp.json()["items"]] == ["default", "kube-system"]
        api_server.state.tokens = {"rotated-token"}
        plugin.set(token="rotated-token")
        assert (await api.version())["major"] == "1"
        assert api_server.state.statuses()[-2:] == [401, 200]
    finally:
        await api.aclose()


async def test_kr8s_client_certificate_and_wrong_ca(api_server, plugin):
    cert, key = api_server.pki.client_pair("kr8s-user")
    plugin.set(cert=cert, key=key)
    api_server.state.cert_users.add("kr8s-user")
    api = await kr8s_api(access(api_server, plugin))
    try:
        assert (await api.version())["major"] == "1"
        assert api_server.state.log[-1][3] == "kr8s-user"
    finally:
        await api.aclose()
    with pytest.raises(Exception, match="CERTIFICATE_VERIFY_FAILED"):
        await kr8s_api(access(api_server, plugin, ca=api_server.pki.other_ca.pem))


def test_clients_for_equal_configs_share_one_credential(api_server, plugin):
    from kubernetes import client as k

    api_server.state.tokens.add("good-token")
    a1 = access(api_server, plugin)
    a2 = access(api_server, plugin)
    assert a1 == a2 and hash(a1) == hash(a2)
    cache = {a1: new_kubernetes_api_client(a1)}
    assert cache.get(a2) is not None  # a consumer's client cache hits for an unchanged profile
    k.CoreV1Api(new_kubernetes_api_client(a2)).list_namespace()
    k.CoreV1Api(cache[a1]).list_namespace()
    assert plugin.execs == 1
