"""What a ClusterProfile's additional-envs / additional-args may do, even when the provider opts in:
no interpreter, loader or shell hooks in the plugin's environment (the PYTHONWARNINGS + BROWSER
exploit), and no argument that replaces one the operator's provider file sets."""

from __future__ import annotations

import logging
import sys

import pytest

from fleetplane.access import (
    ADDITIONAL_ARGS_EXTENSION,
    ADDITIONAL_ENVS_EXTENSION,
    EXEC_EXTENSION,
    ExecFailedError,
    ProfileError,
    build_access_config,
)
from fleetplane.access.plugins import secretreader
from fleetplane.access.profile import denied_profile_env

from .conftest import cluster_profile, provider_config
from .test_plugins import hub_kubeconfig

EXPLOIT_WARNINGS = "all:0:antigravity.x:0:0"  # importing antigravity opens $BROWSER


def profile_with(*, args=None, envs=None, provider="test", name="spoke-1"):
    exts = [{"name": EXEC_EXTENSION, "extension": {"clusterName": "spoke-1"}}]
    if args is not None:
        exts.append({"name": ADDITIONAL_ARGS_EXTENSION, "extension": args})
    if envs is not None:
        exts.append({"name": ADDITIONAL_ENVS_EXTENSION, "extension": envs})
    return cluster_profile(extensions=exts, provider=provider, name=name)


def module_cmd(module: str, *args: str, **kw):
    return provider_config(sys.executable, args=["-m", f"fleetplane.access.plugins.{module}", *args], **kw)


# -- 3. environment ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [
    "PYTHONWARNINGS", "PYTHONPATH", "PYTHONSTARTUP", "pythonpath", "BROWSER", "LD_PRELOAD", "LD_AUDIT",
    "DYLD_INSERT_LIBRARIES", "PERL5OPT", "PERLLIB", "RUBYOPT", "NODE_OPTIONS", "BASH_ENV", "ENV", "PATH", "HOME",
    "GIT_SSH_COMMAND", "GIT_CONFIG_GLOBAL", "JAVA_TOOL_OPTIONS", "KUBECONFIG", "KUBERNETES_EXEC_INFO",
    "KUBERNETES_SERVICE_HOST", "FLEETPLANE_SECRETREADER_NAMESPACE", "FLEETPLANE_EXEC_PROFILE_ARGC",
    "SSL_CERT_FILE", "OPENSSL_CONF", "HTTPS_PROXY", "https_proxy", "GLIBC_TUNABLES", "GODEBUG",
    "AWS_CONFIG_FILE", "GOOGLE_APPLICATION_CREDENTIALS", "XDG_CONFIG_HOME", "DOTNET_STARTUP_HOOKS",
])
@pytest.mark.parametrize("policy", ["AppendIfNotExists", "Replace"])
def test_hook_variables_are_not_passed(name, policy, caplog):
    cfg = provider_config("/bin/p", env=[{"name": "ZED", "value": "z"}], env_policy=policy)
    with caplog.at_level(logging.WARNING, "fleetplane.access.profile"):
        cp = profile_with(envs={name: "attacker-value", "TENANT_ID": "t"}, name=f"{policy}-{name}".lower())
        ac = build_access_config(cp, cfg)
    assert ac.exec_config.env == (("ZED", "z"), ("TENANT_ID", "t"))  # the rest of the profile still works
    assert denied_profile_env(name)
    assert f"additional-envs may not set {name} (" in caplog.text and "attacker-value" not in caplog.text


def test_the_kep_example_variables_pass():
    cfg = provider_config("/bin/p", env_policy="Replace")
    ac = build_access_config(profile_with(envs={"CLIENT_ID": "my-client-id", "TENANT_ID": "my-tenant-id"}), cfg)
    assert ac.exec_config.env == (("CLIENT_ID", "my-client-id"), ("TENANT_ID", "my-tenant-id"))
    for ok in ("AZURE_CLIENT_ID", "AWS_REGION", "AWS_ROLE_ARN", "AUDIENCE", "PYTHON_IS_NOT_A_PREFIX_OF_THIS"[7:]):
        assert denied_profile_env(ok) is None, ok


def test_the_operator_may_still_set_hook_variables():
    # the provider file is trusted: its env is passed as written
    cfg = provider_config("/bin/p", env=[{"name": "PYTHONPATH", "value": "/opt/plugins"}], env_policy="Replace")
    ac = build_access_config(profile_with(envs={"PYTHONPATH": "/tmp/evil"}), cfg)
    assert ac.exec_config.env == (("PYTHONPATH", "/opt/plugins"),)


@pytest.mark.parametrize("policy", ["AppendIfNotExists", "Replace"])
async def test_pythonwarnings_browser_exploit_does_not_run(tmp_path, plugins, policy):
    """The issue's exploit, through the shipped Python plugin: the marker never appears.

    webbrowser runs $BROWSER and waits for it, so it would have written the marker before the
    plugin printed its credential; the successful run having finished is the proof.
    """
    marker = tmp_path / "pwned"
    browser = plugins.root / "browser"  # a shell script: a Python one would re-trigger the hook itself
    browser.write_text(f"#!/bin/sh\nprintf ran > '{marker}'\n")
    browser.chmod(0o755)
    token_file = tmp_path / "token"
    token_file.write_text("file-token")
    evil = {"PYTHONWARNINGS": EXPLOIT_WARNINGS, "BROWSER": str(browser)}

    cfg = module_cmd("tokenfile", "--token-file", str(token_file), env_policy=policy)
    cred = await build_access_config(profile_with(envs=evil), cfg).get_credential()
    assert cred.token == "file-token"
    assert not marker.exists()

    # control: the same variables from the (trusted) provider file do run the script, so the
    # exploit is real on this interpreter and the assertion above means something
    env = [{"name": k, "value": v} for k, v in evil.items()]
    cfg = module_cmd("tokenfile", "--token-file", str(token_file), env=env, name="control")
    cred = await build_access_config(profile_with(provider="control"), cfg).get_credential()
    assert cred.token == "file-token"
    assert marker.read_text() == "ran"


# -- 4. arguments -----------------------------------------------------------------------------------


@pytest.mark.parametrize("extra", [
    ["--namespace", "team-b"], ["--namespace=team-b"], ["-namespace", "team-b"], ["--names", "team-b"],
    ["--ttl", "1", "--namespace", "team-b"],
])
def test_profile_args_cannot_repeat_an_operator_flag(extra):
    cfg = provider_config("/bin/p", args=["--kubeconfig", "/etc/hub", "--namespace", "team-a"], cli_policy="Append")
    with pytest.raises(ProfileError, match=r"would override the provider file's --namespace") as ei:
        build_access_config(profile_with(args=extra), cfg)
    assert "team-b" not in str(ei.value)


def test_short_operator_flags_are_protected_too():
    cfg = provider_config("/bin/p", args=["-n", "team-a"], cli_policy="Append")
    for extra in (["-n", "team-b"], ["-nteam-b"], ["--n=team-b"]):
        with pytest.raises(ProfileError, match="would override the provider file's -n"):
            build_access_config(profile_with(args=extra), cfg)
    # other flags are fine
    ac = build_access_config(profile_with(args=["--name-suffix", "x"]), cfg)
    assert ac.exec_config.args == ("-n", "team-a", "--name-suffix", "x")


@pytest.fixture
def teams(api_server):
    """A hub holding one Secret per team for the same cluster name."""
    api_server.state.tokens.add("hub-token")
    api_server.state.add_secret("team-a", "spoke-1", {"token": b"team-a-token"})
    api_server.state.add_secret("team-b", "spoke-1", {"token": b"team-b-token"})
    return api_server


async def test_append_cannot_get_another_teams_token(tmp_path, teams):
    """The issue's case: the operator's --namespace team-a, the profile's --namespace team-b."""
    kubeconfig = hub_kubeconfig(tmp_path, teams)
    cfg = module_cmd("secretreader", "--kubeconfig", kubeconfig, "--namespace", "team-a", cli_policy="Append")
    with pytest.raises(ProfileError, match="would override the provider file's --namespace"):
        build_access_config(profile_with(args=["--namespace", "team-b"]), cfg)
    # arguments the operator did not set still reach the plugin
    ac = build_access_config(profile_with(args=["--ttl", "300"]), cfg)
    cred = await ac.get_credential()
    assert cred.token == "team-a-token" and cred.expiration is not None


async def test_plugin_refuses_operator_settings_from_profile_args(tmp_path, teams):
    """The operator chose the namespace through the environment, not a flag: the library cannot see a
    clash, the plugin (told how many arguments came from the profile) refuses it."""
    kubeconfig = hub_kubeconfig(tmp_path, teams)
    env = [{"name": "FLEETPLANE_SECRETREADER_NAMESPACE", "value": "team-a"}]
    cfg = module_cmd("secretreader", "--kubeconfig", kubeconfig, env=env, cli_policy="Append")
    assert (await build_access_config(profile_with(), cfg).get_credential()).token == "team-a-token"
    with pytest.raises(ExecFailedError) as ei:
        await build_access_config(profile_with(args=["--namespace", "team-b"]), cfg).get_credential()
    assert "--namespace may only be set by the provider file, not by a ClusterProfile's additional-args" in str(ei.value)
    assert teams.state.statuses("/api/v1/namespaces/team-b") == []  # never even asked the hub


def test_plugin_refuses_a_repeated_option(tmp_path, teams, monkeypatch, capsys):
    """Run as upstream's Go library would (Append, no de-duplication): the second --namespace fails."""
    kubeconfig = hub_kubeconfig(tmp_path, teams)
    monkeypatch.delenv("FLEETPLANE_EXEC_PROFILE_ARGC", raising=False)
    monkeypatch.setenv("KUBERNETES_EXEC_INFO", '{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1",'
                       '"spec":{"cluster":{"server":"https://x","config":{"clusterName":"spoke-1"}},"interactive":false}}')
    rc = secretreader.main(["--kubeconfig", kubeconfig, "--namespace", "team-a", "--namespace=team-b"])
    err = capsys.readouterr().err
    assert rc == 1 and "--namespace given more than once (also as --namespace)" in err
    assert secretreader.main(["--kubeconfig", kubeconfig, "--namespace", "team-a"]) == 0
    assert "team-a-token" in capsys.readouterr().out


async def test_token_file_path_is_the_operators(tmp_path):
    mine, other = tmp_path / "mine", tmp_path / "other-team"
    mine.write_text("my-token")
    other.write_text("other-team-token")
    env = [{"name": "FLEETPLANE_TOKEN_FILE", "value": str(mine)}]
    cfg = module_cmd("tokenfile", env=env, cli_policy="Append")
    ok = build_access_config(profile_with(args=["--ttl", "60"]), cfg)
    assert (await ok.get_credential()).token == "my-token"
    bad = build_access_config(profile_with(args=[f"--token-file={other}"]), cfg)
    with pytest.raises(ExecFailedError, match="--token-file may only be set by the provider file") as ei:
        await bad.get_credential()
    assert "other-team-token" not in str(ei.value)
