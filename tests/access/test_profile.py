"""ClusterProfile -> AccessConfig: provider selection, endpoint fields, extensions and policies."""

from __future__ import annotations

import base64
import copy
import logging

import pytest

from fleetplane.access import (
    ADDITIONAL_ARGS_EXTENSION,
    ADDITIONAL_ENVS_EXTENSION,
    EXEC_EXTENSION,
    AccessConfig,
    NoMatchingProviderError,
    ProfileError,
    ProviderConfig,
    build_access_config,
)

from .conftest import V1, cluster_profile, provider_config


def providers(*names, **kw) -> ProviderConfig:
    return ProviderConfig.from_dict(
        {
            "providers": [
                {"name": n, "execConfig": {"apiVersion": V1, "command": f"/bin/{n}"}, **kw} for n in names
            ]
        }
    )


def profile_with(*entries, field="accessProviders", deprecated=()):
    status = {field: [{"name": n, "cluster": {"server": f"https://{n}.example"}} for n in entries]}
    if deprecated:
        status["credentialProviders"] = [
            {"name": n, "cluster": {"server": f"https://old-{n}.example"}} for n in deprecated
        ]
    return {"metadata": {"name": "cp", "namespace": "ns"}, "status": status}


def test_file_order_decides_not_profile_order():
    cfg = providers("b", "a")
    assert build_access_config(profile_with("a", "b"), cfg).provider == "b"
    assert build_access_config(profile_with("a", "b"), providers("a", "b")).provider == "a"


def test_deprecated_credential_providers_are_read_and_warned_once(caplog):
    cp = profile_with(deprecated=["a"])
    with caplog.at_level(logging.WARNING, logger="fleetplane.access.profile"):
        ac = build_access_config(cp, providers("a"))
        build_access_config(cp, providers("a"))
    assert ac.server == "https://old-a.example"
    assert caplog.text.count("deprecated field status.credentialProviders") == 1


def test_access_providers_win_over_credential_providers_on_name_clash():
    cp = profile_with("a", deprecated=["a", "b"])
    assert build_access_config(cp, providers("a")).server == "https://a.example"
    assert build_access_config(cp, providers("b")).server == "https://old-b.example"


def test_no_matching_provider():
    with pytest.raises(
        NoMatchingProviderError, match='no matching cluster accessor found for cluster profile "ns/cp"'
    ) as ei:
        build_access_config(profile_with("x", "y"), providers("a"))
    assert "['x', 'y']" in str(ei.value) and "['a']" in str(ei.value)
    with pytest.raises(NoMatchingProviderError):
        build_access_config({"metadata": {"name": "empty"}}, providers("a"))


def test_all_transport_fields_are_propagated():
    ca = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    cp = cluster_profile(
        "https://10.0.0.1:6443",
        ca_pem=ca,
        **{
            "tls-server-name": "api.spoke",
            "insecure-skip-tls-verify": True,
            "proxy-url": "socks5://proxy:1080",
            "disable-compression": True,
        },
    )
    ac = build_access_config(cp, provider_config("/bin/true"))
    c = ac.cluster
    assert (c.server, c.certificate_authority_data, c.tls_server_name) == (
        "https://10.0.0.1:6443",
        ca,
        "api.spoke",
    )
    assert c.insecure_skip_tls_verify and c.disable_compression and c.proxy_url == "socks5://proxy:1080"
    assert ac.profile == "fleet/spoke-1"


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("server", "", "cluster.server is required"),
        ("certificate-authority-data", "!!!notbase64", "not valid base64"),
        ("insecure-skip-tls-verify", "yes", "must be a boolean"),
        ("tls-server-name", 5, "must be a string"),
    ],
)
def test_bad_cluster_fields(field, value, match):
    cp = cluster_profile()
    cp["status"]["accessProviders"][0]["cluster"][field] = value
    with pytest.raises(ProfileError, match=match) as ei:
        build_access_config(cp, provider_config("/bin/true"))
    assert 'cluster profile "fleet/spoke-1", provider "test"' in str(ei.value)


def test_duplicate_extension_names_rejected():
    cp = cluster_profile(
        extensions=[{"name": EXEC_EXTENSION, "extension": {}}, {"name": EXEC_EXTENSION, "extension": {}}]
    )
    with pytest.raises(ProfileError, match="duplicate name"):
        build_access_config(cp, provider_config("/bin/true"))


def test_exec_extension_kept_verbatim():
    cp = cluster_profile(
        extensions=[
            {"name": EXEC_EXTENSION, "extension": {"clusterName": "spoke-1", "nested": {"b": 1, "a": [1, 2]}}}
        ]
    )
    ac = build_access_config(cp, provider_config("/bin/true"))
    assert ac.cluster.exec_extension == {"clusterName": "spoke-1", "nested": {"b": 1, "a": [1, 2]}}


def test_equal_profiles_give_equal_hashable_configs():
    cp1 = cluster_profile(ca_pem=b"ca", extensions=[{"name": EXEC_EXTENSION, "extension": {"b": 1, "a": 2}}])
    cp2 = copy.deepcopy(cp1)
    cp2["metadata"]["resourceVersion"] = "999"
    cp2["metadata"]["name"] = "other-name"  # the label is informational
    cp2["status"]["accessProviders"][0]["cluster"]["extensions"][0]["extension"] = {"a": 2, "b": 1}
    cfg = provider_config("/bin/true")
    a, b = build_access_config(cp1, cfg), build_access_config(cp2, cfg)
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    cp3 = copy.deepcopy(cp1)
    cp3["status"]["accessProviders"][0]["cluster"]["server"] = "https://elsewhere"
    assert build_access_config(cp3, cfg) != a
    assert isinstance(a, AccessConfig)


# --- additional-args / additional-envs ----------------------------------------------------------


def ext_profile(args=None, envs=None):
    exts = []
    if args is not None:
        exts.append({"name": ADDITIONAL_ARGS_EXTENSION, "extension": args})
    if envs is not None:
        exts.append({"name": ADDITIONAL_ENVS_EXTENSION, "extension": envs})
    return cluster_profile(extensions=exts)


BASE_ENV = [{"name": "CLIENT_ID", "value": "None"}, {"name": "ZED", "value": "z"}]


def test_extensions_ignored_by_default_even_when_malformed():
    cfg = provider_config("/bin/p", args=["--a"], env=BASE_ENV)
    ac = build_access_config(ext_profile(args={"not": "a list"}, envs=["not", "a", "map"]), cfg)
    assert ac.exec_config == cfg.providers[0].exec_config


def test_append_args_without_dedup_and_without_mutating_the_provider():
    cfg = provider_config("/bin/p", args=["file", "--ttl", "60"], cli_policy="Append")
    cp = ext_profile(args=["--audience", "a", "--audience", "b"])
    a1 = build_access_config(cp, cfg)
    a2 = build_access_config(cp, cfg)
    other = build_access_config(cluster_profile(name="other"), cfg)
    assert a1.exec_config.args == ("file", "--ttl", "60", "--audience", "a", "--audience", "b")
    assert a1.exec_config.operator_args == ("file", "--ttl", "60") and a1.exec_config.profile_args_start == 3
    assert a2.exec_config.args == a1.exec_config.args  # upstream appended again on every call
    assert other.exec_config.args == ("file", "--ttl", "60")  # and leaked into other profiles
    assert cfg.providers[0].exec_config.args == ("file", "--ttl", "60")


def test_ignore_policy_for_args():
    cfg = provider_config("/bin/p", args=["x"], cli_policy="Ignore")
    assert build_access_config(ext_profile(args=["--y"]), cfg).exec_config.args == ("x",)


def test_args_scalars_are_coerced_and_yaml_strings_accepted():
    cfg = provider_config("/bin/p", cli_policy="Append")
    assert build_access_config(ext_profile(args=["-n", 3, True, 1.5]), cfg).exec_config.args == (
        "-n",
        "3",
        "true",
        "1.5",
    )
    assert build_access_config(ext_profile(args="- -audience\n- https://x\n"), cfg).exec_config.args == (
        "-audience",
        "https://x",
    )
    assert build_access_config(ext_profile(args=None), cfg).exec_config.args == ()


@pytest.mark.parametrize("bad", [{"a": 1}, [["nested"]], [None], "{unclosed", "just a string"])
def test_bad_args_payload(bad):
    cfg = provider_config("/bin/p", cli_policy="Append")
    with pytest.raises(ProfileError, match="additional CLI args") as ei:
        build_access_config(ext_profile(args=bad), cfg)
    assert '"fleet/spoke-1"' in str(ei.value) and 'provider "test"' in str(ei.value)


def test_env_append_if_not_exists_file_wins_deterministic_order():
    cfg = provider_config("/bin/p", env=BASE_ENV, env_policy="AppendIfNotExists")
    ac = build_access_config(
        ext_profile(envs={"TENANT_ID": "t", "CLIENT_ID": "from-profile", "AAA": "a"}), cfg
    )
    assert ac.exec_config.env == (("CLIENT_ID", "None"), ("ZED", "z"), ("AAA", "a"), ("TENANT_ID", "t"))


def test_env_replace_profile_wins_deterministic_order():
    cfg = provider_config("/bin/p", env=BASE_ENV, env_policy="Replace")
    ac = build_access_config(ext_profile(envs={"TENANT_ID": "t", "CLIENT_ID": "from-profile"}), cfg)
    assert ac.exec_config.env == (("CLIENT_ID", "from-profile"), ("ZED", "z"), ("TENANT_ID", "t"))
    assert cfg.providers[0].exec_config.env == (("CLIENT_ID", "None"), ("ZED", "z"))


def test_env_ignore_and_null_payloads():
    cfg_ignore = provider_config("/bin/p", env=BASE_ENV, env_policy="Ignore")
    assert build_access_config(ext_profile(envs={"X": "1"}), cfg_ignore).exec_config.env == (
        ("CLIENT_ID", "None"),
        ("ZED", "z"),
    )
    cfg = provider_config("/bin/p", env=BASE_ENV, env_policy="AppendIfNotExists")
    # upstream panics on a null map with AppendIfNotExists
    assert build_access_config(ext_profile(envs=None), cfg).exec_config.env == (
        ("CLIENT_ID", "None"),
        ("ZED", "z"),
    )
    assert build_access_config(ext_profile(envs="TENANT_ID: t\n"), cfg).exec_config.env[-1] == (
        "TENANT_ID",
        "t",
    )


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (["A=1"], "expected a map"),
        ({"A": {"nested": 1}}, "must be a string"),
        ({"": "x"}, "invalid variable name"),
        ({"BASH_FUNC_f%%": "() { id; }"}, "invalid variable name"),
        ({"1X": "x"}, "invalid variable name"),
    ],
)
def test_bad_env_payload(bad, match):
    cfg = provider_config("/bin/p", env_policy="Replace")
    with pytest.raises(ProfileError, match=match) as ei:
        build_access_config(ext_profile(envs=bad), cfg)
    assert ei.value.profile == "fleet/spoke-1" and ei.value.provider == "test"


def test_ca_data_with_whitespace_decodes():
    pem = b"-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n"
    enc = base64.b64encode(pem).decode()
    cp = cluster_profile()
    cp["status"]["accessProviders"][0]["cluster"]["certificate-authority-data"] = enc[:10] + "\n" + enc[10:]
    assert build_access_config(cp, provider_config("/bin/p")).cluster.certificate_authority_data == pem


def test_objects_with_to_dict_are_accepted():
    class Resource:
        def to_dict(self):
            return cluster_profile()

    assert build_access_config(Resource(), provider_config("/bin/p")).server == "https://127.0.0.1:6443"
    with pytest.raises(ProfileError, match="must be a mapping"):
        build_access_config(42, provider_config("/bin/p"))
