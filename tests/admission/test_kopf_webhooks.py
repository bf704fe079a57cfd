"""A Kopf operator's @kopf.on.validate and @kopf.on.mutate handlers, served by Kopf's own webhook
server (kopf.WebhookServer) and registered by Kopf itself (settings.admission.managed), run
unmodified (``kopf run``) against the hub."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

from ..harness import Hub, Kubectl, wait_for
from .webhook_server import make_ca_and_cert

OPERATOR = textwrap.dedent('''\
    import kopf

    @kopf.on.startup()
    def configure(settings, **_):
        settings.admission.server = kopf.WebhookServer(
            addr="127.0.0.1", port={port}, host="127.0.0.1",
            cafile={ca!r}, certfile={cert!r}, pkeyfile={key!r})
        settings.admission.managed = "auto.kopf.dev"

    @kopf.on.validate("configmaps", operation="CREATE")
    def names(body, warnings, **_):
        if body["metadata"]["name"].startswith("forbidden"):
            raise kopf.AdmissionError("names starting with forbidden are refused", code=403)
        warnings.append("checked by kopf")

    @kopf.on.mutate("configmaps", operation="CREATE")
    def label(patch, **_):
        patch.metadata.labels["kopf-mutated"] = "yes"
    ''')


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_kopf_validates_and_mutates_through_its_own_webhook_server(hub: Hub, tmp_path: Path) -> None:
    cluster = "kopfwh-" + uuid.uuid4().hex[:6]
    k = Kubectl(hub.kubeconfig_for(cluster, tmp_path), namespace="default")
    ca, cert, key = make_ca_and_cert(["localhost"])
    for name, pem in (("ca.pem", ca), ("cert.pem", cert), ("key.pem", key)):
        (tmp_path / name).write_text(pem)
    (tmp_path / "key.pem").chmod(0o600)
    op = tmp_path / "operator.py"
    op.write_text(OPERATOR.format(port=_free_port(), ca=str(tmp_path / "ca.pem"), cert=str(tmp_path / "cert.pem"),
                                  key=str(tmp_path / "key.pem")))
    log_path = tmp_path / "kopf.log"
    log = open(log_path, "w")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "-m", "kopf", "run", "--standalone", "--namespace", "default", str(op)],
                            stdout=log, stderr=subprocess.STDOUT,
                            env={**os.environ, "KUBECONFIG": str(hub.kubeconfig_for(cluster, tmp_path))})
    try:
        wait_for(lambda: k("get", "validatingwebhookconfiguration", "auto.kopf.dev", check=False).code == 0
                 and k("get", "mutatingwebhookconfiguration", "auto.kopf.dev", check=False).code == 0,
                 timeout=60, what=f"Kopf to register its webhooks ({log_path})")
        vwc = k.get_json("validatingwebhookconfiguration", "auto.kopf.dev")
        assert vwc["webhooks"][0]["clientConfig"]["url"].startswith("https://127.0.0.1:")
        assert vwc["webhooks"][0]["clientConfig"]["caBundle"]
        # Kopf may register before its server listens: the first creates may fail closed
        denied = wait_for(lambda: (r := k("create", "configmap", "forbidden-1", check=False)).code != 0
                          and "denied the request" in r.err and r, timeout=60, what=f"Kopf's denial ({log_path})")
        assert 'admission webhook "names.auto.kopf.dev" denied the request: names starting with forbidden are refused' in denied.err
        created = k("create", "configmap", "allowed-1", "--from-literal=a=b")
        assert "Warning: checked by kopf" in created.err
        cm = k.get_json("configmap", "allowed-1")
        assert cm["metadata"]["labels"] == {"kopf-mutated": "yes"}
    finally:
        proc.terminate()
        proc.wait(15)
        log.close()
