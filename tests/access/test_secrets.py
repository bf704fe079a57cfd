"""Secret-based access (KEP-4322 Secret format)."""

from __future__ import annotations

import base64

import pytest
import yaml

from fleetplane.access import SecretAccessError, find_secret_kubeconfig, find_secret_kubeconfig_sync
from fleetplane.access.secrets import LABEL_CONSUMER, LABEL_PROFILE, LABEL_PROFILE_NAMESPACE, hub_reader

KUBECONFIG = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [{"name": "c", "cluster": {"server": "https://spoke:6443"}}],
    "users": [{"name": "u", "user": {"token": "spoke-token-secret"}}],
    "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
    "current-context": "ctx",
}


def secret(ns, name, labels, data=None, key="Config"):
    payload = (
        data if data is not None else {key: base64.b64encode(yaml.safe_dump(KUBECONFIG).encode()).decode()}
    )
    return {"metadata": {"namespace": ns, "name": name, "labels": labels}, "data": payload}


class FakeHub:
    def __init__(self, namespaces, secrets):
        self.namespaces = namespaces  # name -> labels
        self.secrets = secrets

    @staticmethod
    def _match(labels, selector):
        return all(labels.get(k) == v for k, _, v in (t.partition("=") for t in selector.split(",") if t))

    async def list_namespaces(self, label_selector):
        return [
            {"metadata": {"name": n, "labels": lb}}
            for n, lb in self.namespaces.items()
            if self._match(lb, label_selector)
        ]

    async def list_secrets(self, namespace, label_selector):
        return [
            s
            for s in self.secrets
            if (namespace is None or s["metadata"]["namespace"] == namespace)
            and self._match(s["metadata"]["labels"], label_selector)
        ]


CONSUMER_NS = {"consumer-a": {LABEL_CONSUMER: "argo"}, "other": {}}


def cp(name="spoke-1", namespace="fleet"):
    return {"metadata": {"name": name, "namespace": namespace}}


async def test_exactly_one_secret_found():
    hub = FakeHub(
        CONSUMER_NS,
        [secret("consumer-a", "s1", {LABEL_PROFILE: "spoke-1", LABEL_PROFILE_NAMESPACE: "fleet"})],
    )
    found = await find_secret_kubeconfig(hub, "argo", cp())
    assert (found.secret_namespace, found.secret_name, found.data_key) == ("consumer-a", "s1", "Config")
    assert found.kubeconfig["current-context"] == "ctx"
    assert "spoke-token-secret" not in repr(found)


async def test_secret_in_unlabelled_namespace_is_not_used():
    hub = FakeHub(
        CONSUMER_NS, [secret("other", "s1", {LABEL_PROFILE: "spoke-1", LABEL_PROFILE_NAMESPACE: "fleet"})]
    )
    with pytest.raises(
        SecretAccessError, match='no secret found for ClusterProfile "fleet/spoke-1" and consumer "argo"'
    ):
        await find_secret_kubeconfig(hub, "argo", cp())


async def test_no_consumer_namespace():
    with pytest.raises(
        SecretAccessError, match="namespaces labelled x-k8s.io/cluster-inventory-consumer=nobody: 0"
    ):
        await find_secret_kubeconfig(FakeHub(CONSUMER_NS, []), "nobody", cp())


async def test_several_matches_fail():
    hub = FakeHub(
        {**CONSUMER_NS, "consumer-b": {LABEL_CONSUMER: "argo"}},
        [
            secret("consumer-a", "s1", {LABEL_PROFILE: "spoke-1", LABEL_PROFILE_NAMESPACE: "fleet"}),
            secret("consumer-b", "s2", {LABEL_PROFILE: "spoke-1", LABEL_PROFILE_NAMESPACE: "fleet"}),
        ],
    )
    with pytest.raises(
        SecretAccessError, match="multiple secrets found .*consumer-a/s1, consumer-b/s2; expected exactly one"
    ):
        await find_secret_kubeconfig(hub, "argo", cp())


async def test_profile_namespace_label_semantics():
    no_ns_label = secret("consumer-a", "s-default", {LABEL_PROFILE: "spoke-1"})
    other_ns = secret(
        "consumer-a", "s-other", {LABEL_PROFILE: "spoke-1", LABEL_PROFILE_NAMESPACE: "elsewhere"}
    )
    hub = FakeHub(CONSUMER_NS, [no_ns_label, other_ns])
    # no namespace label: the profile is assumed to be in "default"
    assert (await find_secret_kubeconfig(hub, "argo", cp(namespace="default"))).secret_name == "s-default"
    assert (await find_secret_kubeconfig(hub, "argo", ("default", "spoke-1"))).secret_name == "s-default"
    assert (await find_secret_kubeconfig(hub, "argo", cp(namespace="elsewhere"))).secret_name == "s-other"
    with pytest.raises(SecretAccessError, match="no secret found"):
        await find_secret_kubeconfig(hub, "argo", cp(namespace="fleet"))


async def test_lowercase_config_key_and_bad_payloads():
    lower = secret("consumer-a", "s1", {LABEL_PROFILE: "spoke-1"}, key="config")
    assert (
        await find_secret_kubeconfig(FakeHub(CONSUMER_NS, [lower]), "argo", ("default", "spoke-1"))
    ).data_key == "config"
    for data, match in [
        ({"token": "eA=="}, "does not contain a kubeconfig under key 'Config'"),
        ({"Config": base64.b64encode(b"{ not: [yaml").decode()}, "not a valid kubeconfig"),
        ({"Config": base64.b64encode(b"just a string").decode()}, "is not a kubeconfig"),
    ]:
        hub = FakeHub(CONSUMER_NS, [secret("consumer-a", "s1", {LABEL_PROFILE: "spoke-1"}, data=data)])
        with pytest.raises(SecretAccessError, match=match):
            await find_secret_kubeconfig(hub, "argo", ("default", "spoke-1"))


async def test_secret_level_consumer_label_placement():
    s = secret("fleet", "mcr", {LABEL_CONSUMER: "argo", LABEL_PROFILE: "spoke-1"})
    hub = FakeHub({}, [s])
    with pytest.raises(SecretAccessError):
        await find_secret_kubeconfig(hub, "argo", cp())
    assert (await find_secret_kubeconfig(hub, "argo", cp(), placement="secret")).secret_name == "mcr"
    assert (await find_secret_kubeconfig(hub, "argo", cp(), placement="both")).secret_name == "mcr"


async def test_argument_errors():
    with pytest.raises(SecretAccessError, match="consumer name is required"):
        await find_secret_kubeconfig(FakeHub({}, []), "", cp())
    with pytest.raises(TypeError, match="unsupported hub client"):
        hub_reader(object())


def _seed(api_server):
    st = api_server.state
    st.tokens.add("hub-token")
    st.namespaces["consumer-a"] = {LABEL_CONSUMER: "argo"}
    spoke_kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "spoke",
                "cluster": {
                    "server": api_server.url,
                    "certificate-authority-data": base64.b64encode(api_server.pki.server_ca.pem).decode(),
                },
            }
        ],
        "users": [{"name": "u", "user": {"token": "spoke-token"}}],
        "contexts": [{"name": "spoke", "context": {"cluster": "spoke", "user": "u"}}],
        "current-context": "spoke",
    }
    st.add_secret(
        "consumer-a",
        "spoke-1-access",
        {"Config": yaml.safe_dump(spoke_kubeconfig).encode()},
        {LABEL_PROFILE: "spoke-1", LABEL_PROFILE_NAMESPACE: "fleet"},
    )
    st.add_secret("consumer-a", "unrelated", {"Config": b"x"}, {LABEL_PROFILE: "spoke-2"})


async def test_with_kubernetes_asyncio_hub_client(api_server, tmp_path):
    from kubernetes_asyncio import client as k

    _seed(api_server)
    ca_file = tmp_path / "hub-ca.pem"
    ca_file.write_bytes(api_server.pki.server_ca.pem)
    conf = k.Configuration(
        host=api_server.url,
        api_key={"BearerToken": "hub-token"},
        api_key_prefix={"BearerToken": "Bearer"},
        ssl_ca_cert=str(ca_file),
    )
    async with k.ApiClient(conf) as hub:
        found = await find_secret_kubeconfig(k.CoreV1Api(hub), "argo", cp())
    assert found.secret_name == "spoke-1-access"
    api_server.state.tokens.add("spoke-token")
    spoke = await found.new_kubernetes_asyncio_client()
    async with spoke:
        ns = await k.CoreV1Api(spoke).list_namespace()
    assert "consumer-a" in [n.metadata.name for n in ns.items]


def test_with_kubernetes_sync_hub_client(api_server):
    from kubernetes import client as k

    _seed(api_server)
    conf = k.Configuration(
        host=api_server.url,
        ca_cert_data=api_server.pki.server_ca.pem.decode(),
        api_key={"BearerToken": "hub-token"},
        api_key_prefix={"BearerToken": "Bearer"},
    )
    with k.ApiClient(conf) as hub:
        found = find_secret_kubeconfig_sync(hub, "argo", cp())
    assert found.secret_name == "spoke-1-access"
    api_server.state.tokens.add("spoke-token")
    spoke = found.new_kubernetes_api_client()
    assert k.VersionApi(spoke).get_code().major == "1"
