"""The plugin file is trusted before it runs: no command relative to the working directory (Go's
``exec.ErrDot``), no file or directory others could have replaced, and the documented opt-out."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from fleetplane.access import (
    ExecConfig,
    ExecUntrustedError,
    ProviderConfig,
    ProviderFileError,
    build_access_config,
    run_exec_plugin,
)

from .conftest import V1, cluster_profile, provider_config

NOBODY = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")


def access_for(command: str, **kw):
    return build_access_config(cluster_profile(provider=kw.get("name", "test")), provider_config(command, **kw))


def skip_check_config(command: str) -> ProviderConfig:
    return ProviderConfig.from_dict({"providers": [{
        "name": "test", "insecureSkipPluginPermissionCheck": True,
        "execConfig": {"apiVersion": V1, "command": command, "interactiveMode": "Never"}}]})


# -- 1. relative commands ---------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["./plugin", "bin/plugin", "../plugins/plugin"])
def test_relative_command_refused_when_the_provider_file_loads(command):
    with pytest.raises(ProviderFileError, match="relative to the working directory .*ErrDot.*absolute path") as ei:
        provider_config(command)
    assert ei.value.provider == "test"


async def test_relative_command_refused_before_running(plugins, monkeypatch):
    plugins.script(f"bump({plugins.path('ran')!r}); emit({{'token': 't'}})", name="plugin")
    monkeypatch.chdir(plugins.root)
    # an ExecConfig built in code skips the provider file's check; the runner refuses it too
    with pytest.raises(ExecUntrustedError, match="cannot run executable found relative to current directory"):
        await run_exec_plugin(ExecConfig(api_version=V1, command="./plugin"), None, provider="p")
    assert plugins.count("ran") == 0


@pytest.mark.parametrize("entry", [".", "", "plugins"])
async def test_relative_path_entries_are_errdot(plugins, monkeypatch, entry):
    plugins.script(f"bump({plugins.path('ran')!r}); emit({{'token': 't'}})", name="cwd-plugin")
    monkeypatch.chdir(plugins.root if entry != "plugins" else plugins.root.parent)
    # an empty entry is written as a leading ':'; "plugins" is a relative directory name
    monkeypatch.setenv("PATH", f"{entry}{os.pathsep}/usr/bin")
    with pytest.raises(ExecUntrustedError) as ei:
        await access_for("cwd-plugin").get_credential()
    assert "exec: executable cwd-plugin cannot be run: cannot run executable found relative to current directory" in str(ei.value)
    assert "remove relative and empty entries from $PATH" in str(ei.value)
    assert plugins.count("ran") == 0


async def test_relative_entries_are_skipped(plugins, monkeypatch, tmp_path):
    plugins.script("emit({'token': 'from-absolute-entry'})", name="abs-plugin")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    decoy = cwd / "abs-plugin"  # dropped in the working directory, first in $PATH order
    decoy.write_text(f"#!/bin/sh\ntouch {cwd / 'decoy-ran'}\n")
    decoy.chmod(0o755)
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("PATH", f"{os.pathsep}.{os.pathsep}{plugins.root}")
    assert (await access_for("abs-plugin").get_credential()).token == "from-absolute-entry"
    assert not (cwd / "decoy-ran").exists()  # the real plugin has finished: the decoy never ran


# -- 2. files and directories others could replace --------------------------------------------------


@pytest.mark.parametrize(("mode", "who"), [(0o757, "others"), (0o775, "its group"), (0o777, "group and others")])
async def test_plugin_writable_by_others_is_refused(plugins, mode, who):
    cmd = plugins.script(f"bump({plugins.path('ran')!r}); emit({{'token': 't'}})")
    os.chmod(cmd, mode)
    with pytest.raises(ExecUntrustedError) as ei:
        await access_for(cmd).get_credential()
    msg = str(ei.value)
    assert f"the file {cmd} (mode {mode:04o}) is writable by {who}" in msg
    assert f"chmod go-w {cmd}" in msg and '"insecureSkipPluginPermissionCheck": true' in msg
    assert plugins.count("ran") == 0


async def test_directory_writable_by_others_is_refused_unless_sticky(plugins):
    cmd = plugins.script(f"bump({plugins.path('ran')!r}); emit({{'token': 't'}})")
    os.chmod(plugins.root, 0o777)
    with pytest.raises(ExecUntrustedError, match=f"the directory {plugins.root} \\(mode 0777\\) is writable by group and others"):
        await access_for(cmd).get_credential()
    assert plugins.count("ran") == 0
    # with the sticky bit (as /tmp) others cannot rename or delete the plugin: accepted
    os.chmod(plugins.root, 0o1777)
    assert (await access_for(cmd).get_credential()).token == "t"
    assert plugins.count("ran") == 1  # the counter the refusals above are checked with works


async def test_symlink_into_a_writable_directory_is_refused(plugins, tmp_path):
    real_dir = tmp_path / "shared"
    real_dir.mkdir()
    real = plugins.script("emit({'token': 't'})", name="real")
    target = real_dir / "real"
    shutil.move(real, target)
    link = plugins.root / "link"
    link.symlink_to(target)
    assert (await access_for(str(link)).get_credential()).token == "t"
    os.chmod(real_dir, 0o777)  # the link itself is fine, where it points is not
    with pytest.raises(ExecUntrustedError, match=f"the directory {real_dir} \\(mode 0777\\)"):
        await access_for(str(link), name="again").get_credential()


@as_root
async def test_plugin_owned_by_another_user_is_refused(plugins):
    cmd = plugins.script("emit({'token': 't'})")
    os.chown(cmd, NOBODY, -1)
    with pytest.raises(ExecUntrustedError, match=f"the file {cmd} is owned by uid {NOBODY}, neither root nor"):
        await access_for(cmd).get_credential()
    os.chown(cmd, 0, -1)
    os.chown(plugins.root, NOBODY, -1)
    with pytest.raises(ExecUntrustedError, match=f"the directory {plugins.root} is owned by uid {NOBODY}"):
        await access_for(cmd, name="dir").get_credential()


async def test_opt_out_per_provider(plugins, caplog):
    cmd = plugins.script("emit({'token': 'ran-anyway'})")
    os.chmod(cmd, 0o777)
    cfg = skip_check_config(cmd)
    assert any("insecureSkipPluginPermissionCheck" in w for w in cfg.warnings)
    assert cfg.providers[0].to_dict()["insecureSkipPluginPermissionCheck"] is True
    assert (await build_access_config(cluster_profile(), cfg).get_credential()).token == "ran-anyway"
    # the opt-out never allows a relative command
    with pytest.raises(ProviderFileError, match="relative"):
        skip_check_config("./plugin")
    with pytest.raises(ProviderFileError, match="must be a boolean"):
        ProviderConfig.from_dict({"providers": [{"name": "x", "insecureSkipPluginPermissionCheck": "yes",
                                                 "execConfig": {"apiVersion": V1, "command": cmd}}]})


async def test_refusals_are_counted_as_untrusted(plugins):
    cmd = plugins.script("emit({'token': 't'})")
    os.chmod(cmd, 0o777)
    labels = {"provider": "trust-metrics", "result": "untrusted"}
    before = REGISTRY.get_sample_value("clusterprofile_credential_fetch_total", labels) or 0.0
    with pytest.raises(ExecUntrustedError):
        await access_for(cmd, name="trust-metrics").get_credential()
    assert REGISTRY.get_sample_value("clusterprofile_credential_fetch_total", labels) == before + 1


def script_run_by(plugins, interp_dir: Path) -> str:
    """A plugin script whose #! line names a link to this Python in ``interp_dir``."""
    interp = interp_dir / "python"
    interp.symlink_to(Path(sys.executable).resolve())
    cmd = Path(plugins.script("emit({'token': 't'})"))
    cmd.write_text(f"#!{interp}\n" + cmd.read_text().split("\n", 1)[1])
    return str(cmd)


async def test_a_scripts_interpreter_is_checked_too(plugins, tmp_path):
    interp_dir = tmp_path / "shared-bin"
    interp_dir.mkdir()
    cmd = script_run_by(plugins, interp_dir)
    assert (await access_for(cmd).get_credential()).token == "t"
    os.chmod(interp_dir, 0o777)  # anyone could swap the interpreter
    with pytest.raises(ExecUntrustedError, match=f"the directory {interp_dir} \\(mode 0777\\)"):
        await access_for(cmd, name="again").get_credential()
