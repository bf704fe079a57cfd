"""Provider file loading and load-time validation."""

from __future__ import annotations

import argparse
import json
import logging

import pytest

from fleetplane.access import (
    CLIArgsPolicy,
    EnvVarsPolicy,
    InteractiveMode,
    ProviderConfig,
    ProviderFileError,
    add_provider_file_flag,
    load_provider_file,
)

from .conftest import V1, V1BETA1


def write(tmp_path, data) -> str:
    p = tmp_path / "providers.json"
    p.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(p)


def good_provider(name="secretreader", **over):
    p = {
        "name": name,
        "execConfig": {
            "apiVersion": V1,
            "command": "/plugins/secretreader",
            "args": None,
            "env": None,
            "provideClusterInfo": True,
        },
    }
    p.update(over)
    return p


def test_upstream_example_file_loads(tmp_path):
    # examples/controller-example/plugins/secretreader/provider-config.json shape (args/env null)
    cfg = load_provider_file(write(tmp_path, {"providers": [good_provider()]}))
    (p,) = cfg.providers
    assert p.name == "secretreader"
    assert p.exec_config.command == "/plugins/secretreader"
    assert p.exec_config.args == () and p.exec_config.env == ()
    assert p.exec_config.provide_cluster_info is True
    assert p.exec_config.interactive_mode is InteractiveMode.NEVER
    assert p.cli_args_policy is CLIArgsPolicy.IGNORE and p.env_vars_policy is EnvVarsPolicy.IGNORE
    assert cfg.warnings == ()


def test_full_provider_round_trip(tmp_path):
    raw = {
        "providers": [
            {
                "name": "kubelogin",
                "execConfig": {
                    "apiVersion": V1BETA1,
                    "command": "kubelogin",
                    "args": ["get-token", "--login", "workloadidentity"],
                    "env": [{"name": "AZURE_CLIENT_ID", "value": "None"}],
                    "provideClusterInfo": False,
                    "interactiveMode": "IfAvailable",
                    "installHint": "az aks install-cli",
                },
                "profileSourcedCLIArgsPolicy": "Append",
                "profileSourcedEnvVarsPolicy": "Replace",
                "execTimeoutSeconds": 5,
            }
        ]
    }
    cfg = load_provider_file(write(tmp_path, raw))
    p = cfg.get("kubelogin")
    assert p.exec_config.env == (("AZURE_CLIENT_ID", "None"),)
    assert p.cli_args_policy is CLIArgsPolicy.APPEND and p.env_vars_policy is EnvVarsPolicy.REPLACE
    assert p.exec_timeout == 5.0
    assert p.exec_config.install_hint == "az aks install-cli"
    assert ProviderConfig.from_dict({"providers": [p.to_dict()]}).providers == cfg.providers


@pytest.mark.parametrize("text", ["{}", '{"providers": null}', '{"providers": []}'])
def test_empty_files_are_valid(tmp_path, text):
    assert load_provider_file(write(tmp_path, text)).providers == ()


def test_missing_file(tmp_path):
    with pytest.raises(ProviderFileError, match="failed to read access config file"):
        load_provider_file(tmp_path / "nope.json")


def test_invalid_json(tmp_path):
    with pytest.raises(ProviderFileError, match="failed to unmarshal access providers"):
        load_provider_file(write(tmp_path, "{not json"))


def test_providers_must_be_a_list(tmp_path):
    with pytest.raises(ProviderFileError, match='"providers" must be a list'):
        load_provider_file(write(tmp_path, {"providers": {"a": {}}}))


@pytest.mark.parametrize(
    ("over", "match"),
    [
        ({"profileSourcedCLIArgsPolicy": "Prepend"}, 'unsupported ProfileSourcedCLIArgsPolicy: "Prepend"'),
        ({"profileSourcedEnvVarsPolicy": "Merge"}, 'unsupported ProfileSourcedEnvVarsPolicy: "Merge"'),
        ({"execConfig": None}, "execConfig.*required"),
        ({"execTimeoutSeconds": 0}, "execTimeoutSeconds"),
    ],
)
def test_provider_level_errors_name_the_provider(tmp_path, over, match):
    with pytest.raises(ProviderFileError, match=match) as ei:
        load_provider_file(write(tmp_path, {"providers": [good_provider("bad-one", **over)]}))
    assert "'bad-one'" in str(ei.value)
    assert ei.value.provider == "bad-one"


@pytest.mark.parametrize(
    ("exec_over", "match"),
    [
        (
            {"apiVersion": "client.authentication.k8s.io/v1alpha1"},
            'invalid apiVersion "client.authentication.k8s.io/v1alpha1"',
        ),
        ({"apiVersion": None}, "apiVersion is required"),
        ({"command": ""}, "command is required"),
        ({"command": None}, "command is required"),
        ({"args": "--x"}, "args must be a list of strings"),
        ({"args": [1]}, "args must be a list of strings"),
        ({"env": [{"name": "", "value": "x"}]}, r"env\[0\].name"),
        ({"env": [{"name": "A=B", "value": "x"}]}, r"env\[0\].name"),
        ({"env": [{"name": "A", "value": 3}]}, "value must be a string"),
        ({"interactiveMode": "Sometimes"}, "unknown interactiveMode"),
        ({"provideClusterInfo": "yes"}, "provideClusterInfo must be a boolean"),
    ],
)
def test_exec_config_errors_name_the_provider(tmp_path, exec_over, match):
    p = good_provider("broken")
    p["execConfig"].update(exec_over)
    with pytest.raises(ProviderFileError, match=match) as ei:
        load_provider_file(write(tmp_path, {"providers": [p]}))
    assert "provider 'broken'" in str(ei.value)


def test_duplicate_provider_names(tmp_path):
    with pytest.raises(ProviderFileError, match="duplicate provider name") as ei:
        load_provider_file(
            write(tmp_path, {"providers": [good_provider("dup"), good_provider("ok"), good_provider("dup")]})
        )
    assert ei.value.provider == "dup"


def test_missing_name(tmp_path):
    p = good_provider()
    del p["name"]
    with pytest.raises(ProviderFileError, match=r'providers\[0\]: "name" is required'):
        load_provider_file(write(tmp_path, {"providers": [p]}))


def test_unknown_keys_warn_or_fail_in_strict_mode(tmp_path, caplog):
    p = good_provider("x")
    p["execConfig"]["comand"] = "typo"
    path = write(tmp_path, {"providers": [p]})
    with caplog.at_level(logging.WARNING, logger="fleetplane.access.provider"):
        cfg = load_provider_file(path)
    assert any("unknown key 'comand'" in w for w in cfg.warnings)
    assert "unknown key 'comand'" in caplog.text
    with pytest.raises(ProviderFileError, match="unknown key 'comand'"):
        load_provider_file(path, strict=True)


def test_keys_match_case_insensitively_like_go(tmp_path):
    raw = {"Providers": [{"Name": "x", "ExecConfig": {"APIVersion": V1, "Command": "/bin/true"}}]}
    cfg = load_provider_file(write(tmp_path, raw))
    assert cfg.get("x").exec_config.command == "/bin/true"
    assert any("case-insensitively" in w for w in cfg.warnings)


def test_duplicate_env_names_warn(tmp_path):
    p = good_provider("x")
    p["execConfig"]["env"] = [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]
    cfg = load_provider_file(write(tmp_path, {"providers": [p]}))
    assert cfg.get("x").exec_config.env == (("A", "1"), ("A", "2"))
    assert any("'A' given more than once" in w for w in cfg.warnings)


def test_empty_policy_means_ignore(tmp_path):
    cfg = load_provider_file(
        write(
            tmp_path,
            {"providers": [good_provider(profileSourcedCLIArgsPolicy="", profileSourcedEnvVarsPolicy="")]},
        )
    )
    p = cfg.providers[0]
    assert p.cli_args_policy is CLIArgsPolicy.IGNORE and p.env_vars_policy is EnvVarsPolicy.IGNORE


def test_loaded_config_is_immutable(tmp_path):
    cfg = load_provider_file(write(tmp_path, {"providers": [good_provider()]}))
    with pytest.raises(AttributeError):
        cfg.providers[0].exec_config.args = ("x",)
    assert isinstance(cfg.providers[0].exec_config.args, tuple)


def test_argparse_flag(tmp_path):
    parser = argparse.ArgumentParser()
    add_provider_file_flag(parser)
    assert parser.parse_args([]).clusterprofile_provider_file == "clusterprofile-provider-file.json"
    path = write(tmp_path, {"providers": [good_provider()]})
    ns = parser.parse_args(["--clusterprofile-provider-file", path])
    assert load_provider_file(ns.clusterprofile_provider_file).names == ("secretreader",)
    req = argparse.ArgumentParser()
    add_provider_file_flag(req, required=True)
    with pytest.raises(SystemExit):
        req.parse_args([])
