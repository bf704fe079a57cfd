"""Secrets encrypted at rest (kube's EncryptionConfiguration, with a key rotation across restarts)
and the audit log (kube's Policy and Events), on a real hub driven by kubectl."""

from __future__ import annotations

import base64
import json
import os
import sqlite3
from pathlib import Path

import yaml

from ..harness import Hub, Kubectl, wait_for

OLD_KEY = base64.b64encode(b"k" * 32).decode()
NEW_KEY = base64.b64encode(b"n" * 32).decode()


def encryption_config(path: Path, keys: list[tuple[str, str]], provider: str = "aesgcm") -> None:
    path.write_text(yaml.safe_dump({
        "apiVersion": "apiserver.config.k8s.io/v1", "kind": "EncryptionConfiguration",
        "resources": [{"resources": ["secrets"], "providers": [
            {provider: {"keys": [{"name": n, "secret": s} for n, s in keys]}}, {"identity": {}}]}]}))
    os.chmod(path, 0o600)


def stored(hub: Hub, fragment: str) -> list[bytes]:
    """Raw stored values of keys containing ``fragment``, read from the SQLite file itself."""
    db = sqlite3.connect(hub.data_dir / "hub.db")
    try:
        return [bytes(v) for k, v in db.execute("SELECT key, value FROM kv") if fragment in k]
    finally:
        db.close()


def test_secrets_are_encrypted_at_rest_and_keys_rotate(tmp_path: Path) -> None:
    config = tmp_path / "encryption.yaml"
    encryption_config(config, [("old", OLD_KEY)])
    hub = Hub(tmp_path / "data", extra=["--encryption-provider-config", str(config), "--no-cluster-controller",
                                        "--no-splitter"]).start()
    try:
        k = Kubectl(hub.kubeconfig_for("vault", tmp_path), namespace="default")
        k("create", "secret", "generic", "db", "--from-literal=password=correct-horse-battery")
        k("create", "configmap", "plain", "--from-literal=colour=blue")
        [value] = stored(hub, "/secrets/vault/default/db")
        assert value.startswith(b"k8s:enc:aesgcm:v1:old:") and b"correct-horse" not in value
        assert base64.b64encode(b"correct-horse-battery") not in value
        [cm] = stored(hub, "/configmaps/vault/default/plain")
        assert cm.startswith(b"{") and b"blue" in cm  # only what the configuration names is encrypted
        assert base64.b64decode(k.get_json("secret", "db")["data"]["password"]) == b"correct-horse-battery"
    finally:
        hub.stop()
    # rotation as kube documents it: the new key first, the old one still readable; the hub
    # rewrites what the old key wrote when it starts
    encryption_config(config, [("new", NEW_KEY), ("old", OLD_KEY)])
    hub.start()
    try:
        wait_for(lambda: stored(hub, "/secrets/vault/default/db")[0].startswith(b"k8s:enc:aesgcm:v1:new:"), 20,
                 what="the secret re-encrypted with the new key")
        k = Kubectl(hub.kubeconfig_for("vault", tmp_path), namespace="default")
        assert base64.b64decode(k.get_json("secret", "db")["data"]["password"]) == b"correct-horse-battery"
    finally:
        hub.stop()
    encryption_config(config, [("new", NEW_KEY)])  # the old key is gone: everything still reads
    hub.start()
    try:
        k = Kubectl(hub.kubeconfig_for("vault", tmp_path), namespace="default")
        assert base64.b64decode(k.get_json("secret", "db")["data"]["password"]) == b"correct-horse-battery"
    finally:
        hub.stop()


POLICY = """
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  nonResourceURLs: ["/readyz*", "/healthz*", "/livez*"]
- level: RequestResponse
  resources: [{group: "", resources: [secrets, configmaps]}]
- level: Metadata
"""


def test_the_audit_log(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    log = tmp_path / "audit.log"
    hub = Hub(tmp_path / "data", extra=["--audit-log-path", str(log), "--audit-policy-file", str(policy),
                                        "--no-cluster-controller", "--no-splitter"]).start()
    try:
        k = Kubectl(hub.kubeconfig_for("audited", tmp_path), namespace="default")
        k("create", "configmap", "seen", "--from-literal=colour=blue")
        k("create", "secret", "generic", "hidden", "--from-literal=password=never-in-the-log")
        k("create", "serviceaccount", "bot")
        token = k("create", "token", "bot").out.strip()
        k("get", "configmap", "seen")
        hub.request("GET", "/clusters/audited/api/v1/namespaces/default/secrets", auth=False,
                    headers={"Authorization": "Bearer wrong-token"})

        def events() -> list[dict]:
            return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

        wait_for(lambda: any(e.get("responseStatus", {}).get("code") == 401 for e in events()), 10,
                 what="the failed request in the audit log")
    finally:
        hub.stop()
    assert oct(log.stat().st_mode & 0o777) == "0o600"
    text = log.read_text()
    assert "never-in-the-log" not in text and base64.b64encode(b"never-in-the-log").decode() not in text
    assert token not in text and "wrong-token" not in text
    evs = [json.loads(line) for line in text.splitlines()]
    assert all(e["kind"] == "Event" and e["apiVersion"] == "audit.k8s.io/v1" for e in evs)
    assert not any(e["stage"] == "RequestReceived" for e in evs)
    assert not any(e["requestURI"].startswith("/readyz") for e in evs)
    cm = next(e for e in evs if e["verb"] == "create" and e.get("objectRef", {}).get("resource") == "configmaps")
    assert cm["level"] == "RequestResponse" and cm["requestObject"]["data"] == {"colour": "blue"}
    assert cm["responseObject"]["metadata"]["name"] == "seen" and cm["user"]["username"] == "admin"
    assert cm["annotations"]["fleetplane.io/logical-cluster"] == "audited"
    secret = next(e for e in evs if e["verb"] == "create" and e.get("objectRef", {}).get("resource") == "secrets")
    assert secret["level"] == "Metadata" and "requestObject" not in secret and "responseObject" not in secret
    tr = next(e for e in evs if e.get("objectRef", {}).get("subresource") == "token")
    assert tr["level"] == "Metadata" and "responseObject" not in tr
    denied = next(e for e in evs if e.get("responseStatus", {}).get("code") == 401)
    assert denied["user"] == {}
