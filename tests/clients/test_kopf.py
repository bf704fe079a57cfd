"""A small Kopf operator, run unmodified (``kopf run``) against the hub."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

from ..harness import Hub, Kubectl, wait_for

OPERATOR = textwrap.dedent('''\
    import kopf

    @kopf.on.startup()
    def configure(settings, **_):
        settings.watching.server_timeout = 30
        settings.persistence.finalizer = "example.com/kopf-finalizer"

    @kopf.on.create("example.com", "v1", "gizmos")
    def created(spec, patch, **_):
        patch.status["seen"] = spec.get("value", 0) * 2
        return {"handled": True}

    @kopf.on.delete("example.com", "v1", "gizmos")
    def deleted(name, **_):
        print(f"deleted {name}", flush=True)
    ''')

CRD = textwrap.dedent("""\
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata: {name: gizmos.example.com}
    spec:
      group: example.com
      scope: Namespaced
      names: {plural: gizmos, kind: Gizmo}
      versions:
      - name: v1
        served: true
        storage: true
        subresources: {status: {}}
        schema:
          openAPIV3Schema:
            type: object
            x-kubernetes-preserve-unknown-fields: true
    """)


OPERATOR_RBAC = textwrap.dedent("""\
    apiVersion: rbac.authorization.k8s.io/v1
    kind: Role
    metadata: {name: gizmo-operator, namespace: default}
    rules:
    - {apiGroups: [example.com], resources: [gizmos, gizmos/status], verbs: [get, list, watch, patch, update]}
    - {apiGroups: [""], resources: [events], verbs: [create]}
    ---
    apiVersion: rbac.authorization.k8s.io/v1
    kind: RoleBinding
    metadata: {name: gizmo-operator, namespace: default}
    roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: gizmo-operator}
    subjects: [{kind: ServiceAccount, name: gizmo-operator, namespace: default}]
    ---
    # Kopf's own needs (its docs' RBAC): namespaces and CRDs, cluster-wide, read only
    apiVersion: rbac.authorization.k8s.io/v1
    kind: ClusterRole
    metadata: {name: kopf-scanning}
    rules:
    - {apiGroups: [""], resources: [namespaces], verbs: [list, watch]}
    - {apiGroups: [apiextensions.k8s.io], resources: [customresourcedefinitions], verbs: [list, watch]}
    ---
    apiVersion: rbac.authorization.k8s.io/v1
    kind: ClusterRoleBinding
    metadata: {name: gizmo-operator-scanning}
    roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: kopf-scanning}
    subjects: [{kind: ServiceAccount, name: gizmo-operator, namespace: default}]
    """)


def test_kopf_operator_handles_create_and_removes_finalizer_on_delete(hub: Hub, tmp_path: Path):
    _run_operator(hub, tmp_path, as_service_account=False)


def test_kopf_operator_as_its_own_service_account(hub: Hub, tmp_path: Path):
    """The same operator with a ServiceAccount token and a Role for what it touches, not as admin."""
    _run_operator(hub, tmp_path, as_service_account=True)


def _run_operator(hub: Hub, tmp_path: Path, as_service_account: bool) -> None:
    cluster = "kopf-" + uuid.uuid4().hex[:6]
    kubeconfig = hub.kubeconfig_for(cluster, tmp_path)
    k = Kubectl(kubeconfig, namespace="default")
    k("apply", "-f", "-", stdin=CRD)
    k("wait", "--for=condition=Established", "crd/gizmos.example.com", "--timeout=10s")
    operator_kubeconfig = kubeconfig
    if as_service_account:
        import yaml

        k("create", "serviceaccount", "gizmo-operator")
        k("apply", "-f", "-", stdin=OPERATOR_RBAC)
        token = k("create", "token", "gizmo-operator").out.strip()
        cfg = yaml.safe_load(kubeconfig.read_text())
        cfg["users"] = [{"name": "gizmo-operator", "user": {"token": token}}]
        for c in cfg["contexts"]:
            c["context"]["user"] = "gizmo-operator"
        operator_kubeconfig = tmp_path / "operator.kubeconfig"
        operator_kubeconfig.write_text(yaml.safe_dump(cfg))
    op = tmp_path / "operator.py"
    op.write_text(OPERATOR)
    log = open(tmp_path / "kopf.log", "w")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "-m", "kopf", "run", "--standalone", "--namespace", "default", str(op)],
                            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "KUBECONFIG": str(operator_kubeconfig)})
    try:
        k("apply", "-f", "-", stdin="apiVersion: example.com/v1\nkind: Gizmo\nmetadata: {name: g1}\nspec: {value: 21}\n")
        obj = wait_for(lambda: (o := k.get_json("gizmo", "g1")).get("status", {}).get("seen") == 42 and o,
                       timeout=30, what=f"kopf to handle the create ({tmp_path / 'kopf.log'})")
        assert "example.com/kopf-finalizer" in obj["metadata"]["finalizers"]
        k("delete", "gizmo", "g1", "--timeout=30s")
        wait_for(lambda: "deleted g1" in (tmp_path / "kopf.log").read_text(), timeout=10, what="the delete handler")
        assert k("get", "gizmo", "g1", check=False).code != 0
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()
