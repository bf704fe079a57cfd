"""The exec credential protocol against real plugin processes."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import pickle
import threading
import time
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from fleetplane.access import (
    ADDITIONAL_ARGS_EXTENSION,
    ADDITIONAL_ENVS_EXTENSION,
    EXEC_EXTENSION,
    ExecFailedError,
    ExecInteractiveError,
    ExecNotExecutableError,
    ExecNotFoundError,
    ExecOutputError,
    ExecPluginError,
    ExecTimeoutError,
    build_access_config,
    run_exec_plugin,
    run_exec_plugin_sync,
)

from .conftest import V1, V1BETA1, async_wait_for, cluster_profile, pid_gone, provider_config, wait_for

SECRET = "s3cr3t-t0ken-value-do-not-leak"


def access_for(command: str, *, profile=None, **kw):
    profile = profile or cluster_profile(provider=kw.get("name", "test"))
    return build_access_config(profile, provider_config(command, **kw))


def read_json(path: str):
    return json.loads(Path(path).read_text())


def sample(name: str, labels: dict[str, str]) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


# ----------------------------------------------------------------------------------------------
# happy paths


async def test_token_and_exec_info_exactly_as_client_go(plugins, monkeypatch):
    monkeypatch.setenv("FROM_PARENT", "parent-value")
    cmd = plugins.script(
        f"""
        with open({plugins.path("info.json")!r}, "w") as f:
            json.dump({{"raw": os.environ["KUBERNETES_EXEC_INFO"], "argv": sys.argv[1:],
                       "argv0": sys.argv[0], "parent": os.environ.get("FROM_PARENT"),
                       "file_env": os.environ.get("FILE_VAR"), "stdin_tty": sys.stdin.isatty(),
                       "stdin": sys.stdin.read()}}, f)
        emit({{"token": "tok-1"}})
        """
    )
    ca = b"-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"
    profile = cluster_profile(
        "https://10.1.2.3:6443",
        ca_pem=ca,
        extensions=[{"name": EXEC_EXTENSION, "extension": {"clusterName": "spoke-1", "audience": "x"}}],
        **{"tls-server-name": "api.spoke-1", "proxy-url": "http://proxy:3128"},
    )
    access = access_for(cmd, profile=profile, args=["--flag", "v"], env=[{"name": "FILE_VAR", "value": "fv"}])
    cred = await access.get_credential()
    assert cred.token == "tok-1" and cred.expiration is None and not cred.has_client_certificate
    info = read_json(plugins.path("info.json"))
    # client-go LegacyCodec field order: kind, apiVersion, spec{cluster{...}, interactive}
    assert info["raw"] == json.dumps(
        {
            "kind": "ExecCredential",
            "apiVersion": V1,
            "spec": {
                "cluster": {
                    "server": "https://10.1.2.3:6443",
                    "tls-server-name": "api.spoke-1",
                    "certificate-authority-data": base64.b64encode(ca).decode(),
                    "proxy-url": "http://proxy:3128",
                    "config": {"audience": "x", "clusterName": "spoke-1"},
                },
                "interactive": False,
            },
        },
        separators=(",", ":"),
    )
    assert info["argv"] == ["--flag", "v"]
    assert info["argv0"] == cmd
    assert info["parent"] == "parent-value" and info["file_env"] == "fv"
    assert info["stdin_tty"] is False and info["stdin"] == ""  # non-interactive: /dev/null


async def test_v1beta1_and_no_cluster_info(plugins):
    cmd = plugins.script(
        f"""
        open({plugins.path("info.json")!r}, "w").write(os.environ["KUBERNETES_EXEC_INFO"])
        emit({{"token": "beta"}})
        """
    )
    access = access_for(
        cmd,
        api_version=V1BETA1,
        provide_cluster_info=False,
        profile=cluster_profile(extensions=[{"name": EXEC_EXTENSION, "extension": {"clusterName": "c"}}]),
    )
    assert (await access.get_credential()).token == "beta"
    info = read_json(plugins.path("info.json"))
    assert info == {"kind": "ExecCredential", "apiVersion": V1BETA1, "spec": {"interactive": False}}


async def test_exec_config_null_when_no_extension(plugins):
    cmd = plugins.script(
        f"""
        open({plugins.path("info.json")!r}, "w").write(os.environ["KUBERNETES_EXEC_INFO"])
        emit({{"token": "t"}})
        """
    )
    await access_for(cmd).get_credential()
    info = read_json(plugins.path("info.json"))
    assert info["spec"]["cluster"] == {"server": "https://127.0.0.1:6443", "config": None}


async def test_client_certificate_and_key(plugins, pki):
    cert, key = pki.client_pair("cert-user")
    cmd = plugins.script(f"emit({{'clientCertificateData': {cert!r}, 'clientKeyData': {key!r}}})")
    cred = await access_for(cmd).get_credential()
    assert cred.has_client_certificate and cred.token is None and cred.kind == "client-certificate"
    assert cred.client_certificate_data == cert and cred.client_key_data == key


@pytest.mark.parametrize(
    ("status", "match"),
    [
        ("{'clientCertificateData': CERT}", "only certificate or key, not both"),
        ("{'clientKeyData': KEY}", "only certificate or key, not both"),
        ("{'clientCertificateData': 'garbage', 'clientKeyData': KEY}", "not a PEM certificate"),
        ("{'clientCertificateData': CERT, 'clientKeyData': OTHER_KEY}", "private key does not match"),
    ],
)
async def test_bad_certificate_responses(plugins, pki, status, match):
    cert, key = pki.client_pair("a")
    _, other_key = pki.client_pair("b")
    cmd = plugins.script(f"CERT, KEY, OTHER_KEY = {cert!r}, {key!r}, {other_key!r}\nemit({status})")
    with pytest.raises(ExecOutputError, match=match) as ei:
        await access_for(cmd).get_credential()
    assert "PRIVATE KEY" not in str(ei.value)


async def test_yaml_output_is_accepted(plugins):
    cmd = plugins.script(
        """
        print("apiVersion: " + API)
        print("kind: ExecCredential")
        print("status:")
        print("  token: yaml-token")
        print("  expirationTimestamp: '2099-01-01T00:00:00Z'")
        """
    )
    cred = await access_for(cmd).get_credential()
    assert cred.token == "yaml-token" and cred.expiration_datetime.year == 2099


# ----------------------------------------------------------------------------------------------
# caching, expiry, single flight, refresh


async def test_cached_until_expiry_then_re_exec(plugins):
    cmd = plugins.script(
        f"""
        bump({plugins.path("count")!r})
        n = len(open({plugins.path("count")!r}).read().splitlines())
        emit({{"token": f"tok-{{n}}", "expirationTimestamp": "2030-01-01T00:00:00Z"}})
        """
    )
    access = access_for(cmd)
    auth = access.authenticator()
    exp = 1893456000.0  # 2030-01-01T00:00:00Z
    now = [exp - 100]
    auth.clock = lambda: now[0]
    c1 = await access.get_credential()
    assert c1.token == "tok-1" and c1.expiration == exp
    now[0] = exp  # client-go: expired only when now is *after* the expiry
    assert await access.get_credential() is c1
    assert access.get_credential_sync() is c1
    assert plugins.count() == 1
    now[0] = exp + 0.001
    c2 = await access.get_credential()
    assert c2.token == "tok-2" and plugins.count() == 2


async def test_no_expiry_cached_for_process_lifetime(plugins):
    cmd = plugins.script(f"bump({plugins.path('count')!r})\nemit({{'token': 't'}})")
    access = access_for(cmd)
    access.authenticator().clock = lambda: 4e9  # far future
    first = await access.get_credential()
    for _ in range(5):
        assert await access.get_credential() is first
    assert plugins.count() == 1


async def test_equal_configs_share_one_authenticator(plugins):
    cmd = plugins.script(f"bump({plugins.path('count')!r})\nemit({{'token': 't'}})")
    a = access_for(cmd)
    b = access_for(cmd, profile=cluster_profile(name="same-cluster-other-name"))
    assert a == b and a.authenticator() is b.authenticator()
    await a.get_credential()
    await b.get_credential()
    assert plugins.count() == 1


async def test_already_expired_credential_re_execs_each_time(plugins):
    cmd = plugins.script(
        f"bump({plugins.path('count')!r})\nemit({{'token': 't', 'expirationTimestamp': '2001-01-01T00:00:00Z'}})"
    )
    access = access_for(cmd)
    await access.get_credential()
    await access.get_credential()
    assert plugins.count() == 2


async def test_single_flight_across_tasks_and_threads(plugins):
    cmd = plugins.script(
        f"""
        bump({plugins.path("count")!r})
        open({plugins.path("started")!r}, "w").close()
        deadline = time.time() + 30
        while not os.path.exists({plugins.path("release")!r}) and time.time() < deadline:
            time.sleep(0.01)
        emit({{"token": "shared"}})
        """
    )
    access = access_for(cmd, name="singleflight")
    labels = {"provider": "singleflight", "result": "shared"}
    shared_before = sample("clusterprofile_credential_cache_total", labels)
    tasks = [asyncio.ensure_future(access.get_credential()) for _ in range(10)]
    thread_results: list = []
    threads = [
        threading.Thread(target=lambda: thread_results.append(access.get_credential_sync())) for _ in range(5)
    ]
    for t in threads:
        t.start()
    await async_wait_for(lambda: os.path.exists(plugins.path("started")), what="plugin start")
    await async_wait_for(
        lambda: sample("clusterprofile_credential_cache_total", labels) - shared_before >= 14,
        what="all callers joined",
    )
    plugins.touch("release")
    results = await asyncio.gather(*tasks)
    for t in threads:
        await asyncio.to_thread(t.join, 10)
    creds = results + thread_results
    assert len(creds) == 15 and all(c is creds[0] for c in creds) and creds[0].token == "shared"
    assert plugins.count() == 1
    assert access.authenticator().exec_count == 1


async def test_cancelled_caller_does_not_cancel_the_shared_exec(plugins):
    cmd = plugins.script(
        f"""
        bump({plugins.path("count")!r})
        open({plugins.path("started")!r}, "w").close()
        while not os.path.exists({plugins.path("release")!r}):
            time.sleep(0.01)
        emit({{"token": "survivor"}})
        """
    )
    access = access_for(cmd)
    first = asyncio.ensure_future(access.get_credential())
    await async_wait_for(lambda: os.path.exists(plugins.path("started")), what="plugin start")
    second = asyncio.ensure_future(access.get_credential())
    await asyncio.sleep(0)
    first.cancel()
    plugins.touch("release")
    assert (await second).token == "survivor"
    assert first.cancelled() and plugins.count() == 1


async def test_refresh_after_401_re_execs_once(plugins):
    cmd = plugins.script(
        f"""
        bump({plugins.path("count")!r})
        n = len(open({plugins.path("count")!r}).read().splitlines())
        emit({{"token": f"tok-{{n}}"}})
        """
    )
    auth = access_for(cmd).authenticator()
    old = await auth.get_credential()
    # three requests failed with the same credential: one refresh
    fresh = await asyncio.gather(auth.refresh(old), auth.refresh(old), auth.refresh(old))
    assert {c.token for c in fresh} == {"tok-2"} and plugins.count() == 2
    # a late 401 for the old credential does not drop the new one
    assert auth.invalidate(old) is False
    assert (await auth.get_credential()).token == "tok-2"
    assert auth.invalidate() is True
    assert auth.refresh_sync().token == "tok-3"


async def test_failures_are_not_cached(plugins):
    cmd = plugins.script(
        f"""
        bump({plugins.path("count")!r})
        if len(open({plugins.path("count")!r}).read().splitlines()) == 1:
            sys.exit(3)
        emit({{"token": "second-time-lucky"}})
        """
    )
    access = access_for(cmd)
    with pytest.raises(ExecFailedError):
        await access.get_credential()
    assert (await access.get_credential()).token == "second-time-lucky"


def test_sync_wrapper(plugins):
    cmd = plugins.script("emit({'token': 'sync'})")
    access = access_for(cmd)
    assert access.get_credential_sync().token == "sync"
    assert run_exec_plugin_sync(access.exec_config, access.cluster, provider="p").token == "sync"


# ----------------------------------------------------------------------------------------------
# failures


async def test_missing_command_shows_install_hint(tmp_path):
    access = access_for(
        str(tmp_path / "no-such-plugin"), install_hint="Install it with: brew install no-such-plugin"
    )
    with pytest.raises(ExecNotFoundError) as ei:
        await access.get_credential()
    msg = str(ei.value)
    assert f"exec: executable {tmp_path / 'no-such-plugin'} not found" in msg
    assert "brew install no-such-plugin" in msg and 'provider "test"' in msg
    assert ei.value.provider == "test" and ei.value.server == "https://127.0.0.1:6443"


async def test_missing_command_in_path(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(
        ExecNotFoundError,
        match=r"exec: executable fleetplane-nonexistent-plugin not found \(not found in \$PATH\)",
    ):
        await access_for("fleetplane-nonexistent-plugin").get_credential()


async def test_command_found_in_path(plugins, monkeypatch):
    plugins.script("emit({'token': 'from-path'})", name="my-plugin")
    monkeypatch.setenv("PATH", str(plugins.root) + os.pathsep + os.environ.get("PATH", ""))
    assert (await access_for("my-plugin").get_credential()).token == "from-path"


async def test_not_executable(plugins, tmp_path):
    cmd = plugins.script("emit({'token': 'x'})")
    os.chmod(cmd, 0o644)
    with pytest.raises(ExecNotExecutableError, match="not executable"):
        await access_for(cmd).get_credential()
    with pytest.raises(ExecNotExecutableError, match="is a directory"):
        await access_for(str(tmp_path)).get_credential()


async def test_bad_interpreter(plugins):
    path = plugins.root / "bad-shebang"
    path.write_text("#!/nonexistent/interpreter\n")
    path.chmod(0o755)
    with pytest.raises(ExecNotExecutableError, match="interpreter"):
        await access_for(str(path)).get_credential()


async def test_timeout_kills_the_plugin_and_its_children(plugins):
    cmd = plugins.script(
        f"""
        import subprocess
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        open({plugins.path("pids")!r}, "w").write(f"{{os.getpid()}} {{child.pid}}")
        time.sleep(3600)
        """
    )
    access = access_for(cmd, timeout=0.5, name="slow")
    before = sample("clusterprofile_credential_fetch_total", {"provider": "slow", "result": "timeout"})
    with pytest.raises(ExecTimeoutError, match=r"did not finish within 0.5s and was killed"):
        await access.get_credential()
    pids = [int(p) for p in plugins.read("pids").split()]
    await async_wait_for(lambda: all(pid_gone(p) for p in pids), what="plugin processes to die")
    assert (
        sample("clusterprofile_credential_fetch_total", {"provider": "slow", "result": "timeout"})
        == before + 1
    )


async def test_non_zero_exit_shows_exit_code_and_truncated_stderr(plugins):
    cmd = plugins.script(
        """
        sys.stderr.write("x" * 5000 + "\\nerror: the cloud said no\\n")
        sys.exit(7)
        """
    )
    with pytest.raises(ExecFailedError) as ei:
        await access_for(cmd).get_credential()
    e = ei.value
    assert e.exit_code == 7
    assert f"exec: executable {cmd} failed with exit code 7" in str(e)
    assert "error: the cloud said no" in str(e) and "characters truncated" in str(e)
    assert len(str(e)) < 3000


async def test_killed_by_signal(plugins):
    cmd = plugins.script("import signal\nos.kill(os.getpid(), signal.SIGTERM)")
    with pytest.raises(ExecFailedError, match="killed by signal SIGTERM"):
        await access_for(cmd).get_credential()


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ("print('this is not json at all: [')", "neither JSON nor YAML|expected an ExecCredential object"),
        ("print('{\"unterminated\": ')", "neither JSON nor YAML"),
        ("pass", "wrote nothing to standard output"),
        (
            "print(json.dumps({'kind': 'ExecCredential', 'status': {'token': 't'}}))",
            "'apiVersion' is missing",
        ),
        ("print(json.dumps({'apiVersion': API, 'status': {'token': 't'}}))", "'Kind' is missing"),
        ("emit({'token': 't'}, kind='Secret')", 'no kind "Secret"'),
        ("print(json.dumps({'apiVersion': API, 'kind': 'ExecCredential'}))", "didn't return a status field"),
        ("emit({})", "didn't return a token or cert/key pair"),
        ("emit({'token': 't', 'expirationTimestamp': 'tomorrow'})", "not an RFC 3339 timestamp"),
        ("emit({'token': 5})", "status.token must be a string"),
        ("sys.stdout.write('x' * (2 << 20))", "exceeds"),
    ],
)
async def test_invalid_output(plugins, body, match):
    with pytest.raises(ExecOutputError, match=match):
        await access_for(plugins.script(body)).get_credential()


async def test_wrong_api_version(plugins):
    cmd = plugins.script(f"emit({{'token': 't'}}, api={V1BETA1!r})")
    with pytest.raises(
        ExecOutputError,
        match=f"exec plugin is configured to use API version {V1}, plugin returned version {V1BETA1}",
    ):
        await access_for(cmd).get_credential()


async def test_interactive_always_fails_without_running_the_plugin(plugins):
    cmd = plugins.script(f"bump({plugins.path('count')!r})\nemit({{'token': 't'}})")
    with pytest.raises(ExecInteractiveError, match="standard input is not a terminal"):
        await access_for(cmd, interactive_mode="Always").get_credential()
    assert plugins.count() == 0


async def test_interactive_if_available_runs_non_interactive(plugins):
    cmd = plugins.script("emit({'token': str(INFO['spec']['interactive'])})")
    assert (await access_for(cmd, interactive_mode="IfAvailable").get_credential()).token == "False"
    assert (await access_for(cmd, interactive_mode=None, name="other").get_credential()).token == "False"


async def test_profile_sourced_args_and_envs_reach_the_plugin(plugins, monkeypatch):
    monkeypatch.setenv("CLIENT_ID", "from-controller-env")
    cmd = plugins.script(
        f"""
        json.dump({{"argv": sys.argv[1:], "CLIENT_ID": os.environ.get("CLIENT_ID"),
                    "TENANT_ID": os.environ.get("TENANT_ID")}}, open({plugins.path("seen.json")!r}, "w"))
        emit({{"token": "t"}})
        """
    )
    profile = cluster_profile(
        extensions=[
            {"name": ADDITIONAL_ARGS_EXTENSION, "extension": ["--tenant-id", "t-1"]},
            {
                "name": ADDITIONAL_ENVS_EXTENSION,
                "extension": {"CLIENT_ID": "from-profile", "TENANT_ID": "t-1"},
            },
        ]
    )
    env = [{"name": "CLIENT_ID", "value": "from-file"}]
    seen = lambda: read_json(plugins.path("seen.json"))  # noqa: E731

    await access_for(cmd, profile=profile, args=["get-token"], env=env).get_credential()
    assert seen() == {"argv": ["get-token"], "CLIENT_ID": "from-file", "TENANT_ID": None}  # default Ignore

    await access_for(
        cmd, profile=profile, args=["get-token"], env=env, cli_policy="Append", env_policy="AppendIfNotExists"
    ).get_credential()
    assert seen() == {
        "argv": ["get-token", "--tenant-id", "t-1"],
        "CLIENT_ID": "from-file",
        "TENANT_ID": "t-1",
    }

    await access_for(
        cmd, profile=profile, args=["get-token"], env=env, cli_policy="Append", env_policy="Replace"
    ).get_credential()
    assert seen() == {
        "argv": ["get-token", "--tenant-id", "t-1"],
        "CLIENT_ID": "from-profile",
        "TENANT_ID": "t-1",
    }


async def test_provider_env_cannot_override_exec_info(plugins):
    cmd = plugins.script("emit({'token': INFO['kind']})")
    access = access_for(cmd, env=[{"name": "KUBERNETES_EXEC_INFO", "value": "{}"}])
    assert (await access.get_credential()).token == "ExecCredential"


async def test_direct_run_exec_plugin(plugins):
    cmd = plugins.script("emit({'token': 'direct'})")
    access = access_for(cmd)
    cred = await run_exec_plugin(access.exec_config, access.cluster, provider="direct", exec_timeout=5)
    assert cred.token == "direct"


# ----------------------------------------------------------------------------------------------
# secrets never leak


@pytest.mark.parametrize(
    "body",
    [
        # prints the credential, then fails and repeats it on stderr
        f"emit({{'token': {SECRET!r}}})\nsys.stderr.write('debug: got ' + {SECRET!r} + '\\n')\nsys.exit(1)",
        # stderr with a bearer header and a private key
        f"sys.stderr.write('Authorization: Bearer ' + {SECRET!r} + '\\n-----BEGIN PRIVATE KEY-----\\nMIIEv\\n-----END PRIVATE KEY-----\\n')\nsys.exit(2)",
        # garbage output that contains the secret
        f"print('oops ' + {SECRET!r} + ' [[[')",
        # YAML parse error messages would quote the offending line
        f"print('token: ' + {SECRET!r} + '\\n  - : [')",
        # valid JSON with the secret but the wrong apiVersion
        f"emit({{'token': {SECRET!r}}}, api='client.authentication.k8s.io/v1alpha1')",
        # secret in the output, no status token (wrong field)
        f"print(json.dumps({{'apiVersion': API, 'kind': 'ExecCredential', 'status': {{'tokn': {SECRET!r}}}}}))\nsys.stderr.write('token=' + {SECRET!r})",
        # JWT-looking value echoed on stderr
        "sys.stderr.write('issued eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZG1pbiJ9.c2lnbmF0dXJl\\n')\nsys.exit(1)",
    ],
)
async def test_secret_material_never_in_errors(plugins, body):
    with pytest.raises(ExecPluginError) as ei:
        await access_for(plugins.script(body)).get_credential()
    text = str(ei.value) + repr(ei.value) + str(getattr(ei.value, "stderr", ""))
    assert SECRET not in text
    assert "MIIEv" not in text and "eyJzdWIiOiJhZG1pbiJ9" not in text


async def test_credentials_do_not_show_in_repr_logs_or_pickles(plugins, caplog):
    cmd = plugins.script(
        f"sys.stderr.write('note: token ' + {SECRET!r} + '\\n')\nemit({{'token': {SECRET!r}, 'expirationTimestamp': '2099-01-01T00:00:00Z'}})"
    )
    with caplog.at_level(logging.DEBUG, logger="fleetplane.access"):
        cred = await access_for(cmd).get_credential()
    assert cred.token == SECRET
    assert SECRET not in repr(cred) and SECRET not in str(cred) and "2099-01-01" in repr(cred)
    assert SECRET not in caplog.text and "stderr: note: token [REDACTED]" in caplog.text
    with pytest.raises(TypeError):
        pickle.dumps(cred)


async def test_fetch_metrics(plugins):
    ok = plugins.script("emit({'token': 't'})")
    bad = plugins.script("sys.exit(1)", name="bad")
    labels = {"provider": "metrics-test"}
    before_ok = sample("clusterprofile_credential_fetch_total", {**labels, "result": "success"})
    before_err = sample("clusterprofile_credential_fetch_total", {**labels, "result": "exit_error"})
    before_n = sample("clusterprofile_credential_fetch_duration_seconds_count", labels)
    before_hit = sample("clusterprofile_credential_cache_total", {**labels, "result": "hit"})
    access = access_for(ok, name="metrics-test")
    await access.get_credential()
    await access.get_credential()
    with pytest.raises(ExecFailedError):
        await access_for(bad, name="metrics-test").get_credential()
    assert sample("clusterprofile_credential_fetch_total", {**labels, "result": "success"}) == before_ok + 1
    assert (
        sample("clusterprofile_credential_fetch_total", {**labels, "result": "exit_error"}) == before_err + 1
    )
    assert sample("clusterprofile_credential_fetch_duration_seconds_count", labels) == before_n + 2
    assert sample("clusterprofile_credential_cache_total", {**labels, "result": "hit"}) == before_hit + 1


def test_wait_helper_is_used_not_sleep():
    # guard for the suite's own rule: helpers exist and time out loudly
    with pytest.raises(AssertionError, match="timed out"):
        wait_for(lambda: False, timeout=0.05, what="nothing")


async def test_timeout_with_a_chatty_plugin_is_prompt(plugins):
    # a hung plugin that filled its pipes must still be killed and reaped promptly
    cmd = plugins.script(
        """
        sys.stdout.write("o" * (3 << 20))
        sys.stdout.flush()
        sys.stderr.write("e" * (1 << 20))
        time.sleep(3600)
        """
    )
    t0 = time.monotonic()
    with pytest.raises(ExecPluginError, match="exceeds|did not finish"):
        await access_for(cmd, timeout=1).get_credential()
    assert time.monotonic() - t0 < 4
