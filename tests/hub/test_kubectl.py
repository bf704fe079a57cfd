"""The real kubectl against the hub: the everyday commands, their output, their errors."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import textwrap
import threading
from pathlib import Path

import pytest

from ..harness import DEFAULT_MINOR, Hub, Kubectl, wait_for

WIDGET_CRD = textwrap.dedent("""\
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata:
      name: widgets.example.com
    spec:
      group: example.com
      scope: Namespaced
      names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd], categories: [all]}
      versions:
      - name: v1
        served: true
        storage: true
        subresources:
          status: {}
          scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
        additionalPrinterColumns:
        - {name: Replicas, type: integer, jsonPath: .spec.replicas}
        - {name: Color, type: string, jsonPath: .spec.color}
        - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
        schema:
          openAPIV3Schema:
            type: object
            description: A widget for tests.
            properties:
              spec:
                type: object
                description: What the widget should be.
                required: [color]
                properties:
                  color: {type: string, enum: [red, green, blue], description: The widget's colour.}
                  replicas: {type: integer, minimum: 0, default: 1}
                  size: {type: integer}
                  tags: {type: array, items: {type: string}}
              status:
                type: object
                properties:
                  replicas: {type: integer}
                  conditions:
                    type: array
                    items:
                      type: object
                      properties:
                        type: {type: string}
                        status: {type: string}
    """)

WIDGET = textwrap.dedent("""\
    apiVersion: example.com/v1
    kind: Widget
    metadata:
      name: {name}
    spec:
      color: red
      size: 3
    """)




@pytest.fixture(params=[DEFAULT_MINOR, "1.28"])
def minor(request: pytest.FixtureRequest) -> str:
    """The kubectl minor the ``kubectl`` and ``widgets`` fixtures run: every check runs with the
    default kubectl and with 1.28 (which reads only /openapi/v2)."""
    return str(request.param)


@pytest.fixture
def kubectl(hub: Hub, namespace: str, minor: str) -> Kubectl:
    return Kubectl(hub.kubeconfig, minor=minor, namespace=namespace)


@pytest.fixture
def widgets(hub: Hub, tmp_path: Path, minor: str) -> Kubectl:
    """kubectl in a fresh logical cluster where the Widget CRD is established."""
    import uuid

    k = Kubectl(hub.kubeconfig_for("kc-" + uuid.uuid4().hex[:8], tmp_path), minor=minor, namespace="default")
    k("apply", "-f", "-", stdin=WIDGET_CRD)
    k("wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=10s")
    return k


def test_api_resources_lists_builtins(kubectl: Kubectl):
    out = kubectl("api-resources").out
    for line in ("configmaps", "namespaces", "customresourcedefinitions", "leases", "logicalclusters"):
        assert line in out
    assert "cm " in out and "crd,crds" in out


def test_create_get_formats_and_delete(kubectl: Kubectl, namespace: str):
    assert kubectl("create", "configmap", "cfg", "--from-literal=a=1", "--from-literal=b=2").out.strip() == "configmap/cfg created"
    table = kubectl("get", "cm", "cfg").out.splitlines()
    assert table[0].split() == ["NAME", "DATA", "AGE"] and table[1].split()[:2] == ["cfg", "2"]
    obj = kubectl("get", "cm", "cfg", "-o", "json").json()
    assert obj["data"] == {"a": "1", "b": "2"} and obj["metadata"]["namespace"] == namespace
    assert "data:\n  a: \"1\"" in kubectl("get", "cm", "cfg", "-o", "yaml").out
    assert kubectl("get", "cm", "cfg", "-o", "jsonpath={.data.b}").out == "2"
    assert kubectl("get", "cm", "-o", "name").out.strip() == "configmap/cfg"
    wide = kubectl("get", "cm", "--show-labels").out
    assert "LABELS" in wide
    assert kubectl("delete", "cm", "cfg").out.strip() == 'configmap "cfg" deleted'
    err = kubectl.fail("get", "cm", "cfg").err
    assert 'Error from server (NotFound): configmaps "cfg" not found' in err


def test_apply_client_side_add_change_remove(kubectl: Kubectl):
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ap\n  labels: {a: one}\ndata:\n  keep: '1'\n  drop: '2'\n"
    assert "created" in kubectl("apply", "-f", "-", stdin=manifest).out
    manifest2 = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ap\n  labels: {a: two}\ndata:\n  keep: '1'\n"
    assert "configured" in kubectl("apply", "-f", "-", stdin=manifest2).out
    obj = kubectl.get_json("cm", "ap")
    assert obj["data"] == {"keep": "1"} and obj["metadata"]["labels"] == {"a": "two"}
    assert "unchanged" in kubectl("apply", "-f", "-", stdin=manifest2).out


def test_patch_label_annotate(kubectl: Kubectl):
    kubectl("create", "configmap", "p", "--from-literal=a=1")
    kubectl("patch", "cm", "p", "-p", '{"data":{"b":"2"}}')
    kubectl("patch", "cm", "p", "--type=merge", "-p", '{"data":{"a":null}}')
    kubectl("patch", "cm", "p", "--type=json", "-p", '[{"op":"add","path":"/data/c","value":"3"}]')
    assert kubectl.get_json("cm", "p")["data"] == {"b": "2", "c": "3"}
    err = kubectl.fail("patch", "cm", "p", "--type=json", "-p", '[{"op":"test","path":"/data/b","value":"nope"}]').err
    assert "the server rejected our request due to an error in our request" in err
    kubectl("label", "cm", "p", "tier=web")
    kubectl("annotate", "cm", "p", "note=hello")
    meta = kubectl.get_json("cm", "p")["metadata"]
    assert meta["labels"] == {"tier": "web"} and meta["annotations"]["note"] == "hello"
    kubectl("label", "cm", "p", "tier-")
    assert "labels" not in kubectl.get_json("cm", "p")["metadata"] or not kubectl.get_json("cm", "p")["metadata"]["labels"]
    err = kubectl.fail("label", "cm", "p", "bad key=x").err
    assert err


def test_edit_with_scripted_editor(kubectl: Kubectl, tmp_path: Path):
    kubectl("create", "configmap", "ed", "--from-literal=a=1")
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nsed -i \'s/a: "1"/a: "edited"/\' "$1"\n')
    editor.chmod(editor.stat().st_mode | stat.S_IEXEC)
    out = kubectl("edit", "cm", "ed", env={"KUBE_EDITOR": str(editor), "EDITOR": str(editor)}).out
    assert "edited" in out
    assert kubectl.get_json("cm", "ed")["data"] == {"a": "edited"}


def test_dry_run_server_and_diff(kubectl: Kubectl):
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dr\ndata:\n  a: '1'\n"
    assert "(server dry run)" in kubectl("apply", "--dry-run=server", "-f", "-", stdin=manifest).out
    kubectl.fail("get", "cm", "dr")
    kubectl("apply", "-f", "-", stdin=manifest)
    changed = manifest.replace("'1'", "'2'")
    diff = kubectl("diff", "-f", "-", stdin=changed, check=False)
    assert diff.code == 1, diff.err
    assert "-  a: \"1\"" in diff.out and "+  a: \"2\"" in diff.out
    assert kubectl.get_json("cm", "dr")["data"] == {"a": "1"}


def test_server_side_apply_with_conflict_and_force(kubectl: Kubectl):
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  owned: mine\n"
    kubectl("apply", "--server-side", "-f", "-", stdin=manifest)
    other = manifest.replace("mine", "theirs")
    err = kubectl.fail("apply", "--server-side", "--field-manager=other", "-f", "-", stdin=other).err
    assert "conflict" in err.lower() and ".data.owned" in err
    kubectl("apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", "-", stdin=other)
    obj = kubectl.get_json("cm", "ssa", "--show-managed-fields")
    assert obj["data"]["owned"] == "theirs"
    managers = {m["manager"] for m in obj["metadata"]["managedFields"]}
    assert "other" in managers


def test_client_side_to_server_side_apply_migration(kubectl: Kubectl):
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mig\ndata:\n  a: '1'\n  b: '2'\n"
    kubectl("apply", "-f", "-", stdin=manifest)
    kubectl("apply", "--server-side", "-f", "-", stdin=manifest.replace("  b: '2'\n", ""))
    obj = kubectl.get_json("cm", "mig")
    assert obj["data"] == {"a": "1"}


def test_custom_resources_end_to_end(widgets: Kubectl):
    k = widgets
    assert "widget.example.com/w1 created" in k("apply", "-f", "-", stdin=WIDGET.format(name="w1")).out
    table = k("get", "widgets").out.splitlines()
    assert table[0].split() == ["NAME", "REPLICAS", "COLOR", "AGE"]
    assert table[1].split()[:3] == ["w1", "1", "red"]  # replicas defaulted from the schema
    assert k("get", "wd", "w1", "-o", "name").out.strip() == "widget.example.com/w1"
    assert k("get", "all", "-o", "name").out.strip() == "widget.example.com/w1"
    k("scale", "widget", "w1", "--replicas=4")
    assert k.get_json("widget", "w1")["spec"]["replicas"] == 4
    err = k.fail("apply", "-f", "-", stdin=WIDGET.format(name="w2").replace("red", "purple")).err
    assert "Unsupported value" in err and "spec.color" in err
    err = k.fail("apply", "-f", "-", stdin=WIDGET.format(name="w3") + "  bogus: 1\n").err
    assert 'unknown field "spec.bogus"' in err
    k("patch", "widget", "w1", "--type=merge", "-p", '{"spec":{"size":5}}')
    assert k.get_json("widget", "w1")["metadata"]["generation"] == 3


def test_wait_for_condition_jsonpath_and_delete(widgets: Kubectl):
    k = widgets
    k("apply", "-f", "-", stdin=WIDGET.format(name="ww"))
    status = '{"status":{"replicas":2,"conditions":[{"type":"Ready","status":"True"}]}}'

    def later():
        k("patch", "widget", "ww", "--subresource=status", "--type=merge", "-p", status)

    timer = threading.Timer(1.0, later)
    timer.start()
    k("wait", "--for=condition=Ready", "widget/ww", "--timeout=20s")
    k("wait", "--for=jsonpath={.status.replicas}=2", "widget/ww", "--timeout=10s")
    timer.join()
    deleter = threading.Timer(1.0, lambda: k("delete", "widget", "ww", "--wait=false"))
    deleter.start()
    k("wait", "--for=delete", "widget/ww", "--timeout=20s")
    deleter.join()


def test_delete_with_finalizer_and_propagation_policies(kubectl: Kubectl, hub: Hub, namespace: str):
    kubectl("create", "configmap", "own")
    uid = kubectl.get_json("cm", "own")["metadata"]["uid"]
    dep = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dep", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "own", "uid": uid}]}}
    kubectl("create", "-f", "-", stdin=json.dumps(dep))
    kubectl("delete", "cm", "own", "--cascade=orphan")
    assert "ownerReferences" not in kubectl.get_json("cm", "dep")["metadata"]
    kubectl("create", "configmap", "own2")
    uid2 = kubectl.get_json("cm", "own2")["metadata"]["uid"]
    dep["metadata"] = {"name": "dep2", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "own2", "uid": uid2, "blockOwnerDeletion": True}]}
    kubectl("create", "-f", "-", stdin=json.dumps(dep))
    kubectl("delete", "cm", "own2", "--cascade=foreground")
    kubectl.fail("get", "cm", "dep2")
    kubectl("create", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fin", "finalizers": ["example.com/x"]}}))
    kubectl("delete", "cm", "fin", "--wait=false")
    assert kubectl.get_json("cm", "fin")["metadata"]["deletionTimestamp"]
    kubectl("patch", "cm", "fin", "--type=json", "-p", '[{"op":"remove","path":"/metadata/finalizers"}]')
    wait_for(lambda: kubectl("get", "cm", "fin", check=False).code != 0, what="finalized configmap gone")


def test_explain_builtin_and_custom(widgets: Kubectl):
    out = widgets("explain", "configmap.data").out
    assert "FIELD: data" in out or "data" in out
    out = widgets("explain", "widget.spec.color").out
    assert "The widget's colour." in out


def test_watch_with_kubectl_get_w(kubectl: Kubectl):
    proc = subprocess.Popen([kubectl.binary, "--kubeconfig", str(kubectl.kubeconfig), "--cache-dir", kubectl.cache_dir,
                             "-n", kubectl.namespace or "default", "get", "cm", "-w", "-o", "name"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    threading.Thread(target=lambda: [lines.append(x.strip()) for x in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
    kubectl("create", "configmap", "seen-by-watch")
    wait_for(lambda: "configmap/seen-by-watch" in lines, what="kubectl get -w to print the new object")
    proc.terminate()
    proc.wait(5)


def test_error_reasons_as_kubectl_prints_them(kubectl: Kubectl):
    kubectl("create", "configmap", "dup")
    assert 'configmaps "dup" already exists' in kubectl.fail("create", "configmap", "dup").err
    dup = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dup\n"
    assert 'Error from server (AlreadyExists): error when creating "STDIN": configmaps "dup" already exists' in kubectl.fail("create", "-f", "-", stdin=dup).err
    assert "Error from server (NotFound)" in kubectl.fail("get", "cm", "missing").err
    bad = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Bad_Name\n"
    assert 'The ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name"' in kubectl.fail("create", "-f", "-", stdin=bad).err
    assert "Error from server (Forbidden)" in kubectl.fail("delete", "namespace", "kube-system").err
    assert "doesn't have a resource type" in kubectl.fail("get", "nosuchthings").err


@pytest.mark.parametrize("minor", ["1.28", "1.29", "1.31", "1.33"])
def test_other_kubectl_minors(hub: Hub, namespace: str, minor: str):
    k = Kubectl(hub.kubeconfig, minor=minor, namespace=namespace)
    k("create", "configmap", f"v{minor.replace('.', '')}", "--from-literal=a=b")
    k("apply", "-f", "-", stdin=f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ap{minor.replace('.', '')}\ndata:\n  x: \"yes\"\n")
    assert "AGE" in k("get", "cm").out
    k("delete", "cm", f"v{minor.replace('.', '')}")


def test_isolation_in_a_second_logical_cluster(hub: Hub, tmp_path: Path, namespace: str):
    import uuid

    lc = "iso-" + uuid.uuid4().hex[:6]
    k = Kubectl(hub.kubeconfig_for(lc, tmp_path), namespace="default")
    k("create", "configmap", "only-here")
    assert k("get", "cm", "-o", "name").out.strip() == "configmap/only-here"
    root = Kubectl(hub.kubeconfig, namespace="default")
    root.fail("get", "cm", "only-here")
    star = Kubectl(hub.kubeconfig_for("*", tmp_path))
    listed = star("get", "configmaps", "-A", "-o", "json").json()
    assert any(i["metadata"]["name"] == "only-here" and i["metadata"]["annotations"]["kcp.io/cluster"] == lc for i in listed["items"])
    assert os.path.exists(hub.kubeconfig)


def test_apply_of_a_secret_with_line_wrapped_base64(kubectl: Kubectl, hub: Hub, namespace: str):
    """The Kubernetes docs' TLS Secret example wraps its base64 lines; Go's decoder skips the line
    breaks, and kube stores (and returns) the value re-encoded without them."""
    import base64

    pem = b"-----BEGIN CERTIFICATE-----\n" + b"A" * 150 + b"\n-----END CERTIFICATE-----\n"
    encoded = base64.b64encode(pem).decode()
    wrapped = "\n".join(encoded[i:i + 64] for i in range(0, len(encoded), 64))
    manifest = textwrap.dedent("""\
        apiVersion: v1
        kind: Secret
        metadata: {name: wrapped-tls}
        type: kubernetes.io/tls
        data:
          tls.crt: |
        %s
          tls.key: "a2V5\\r\\n"
        """) % textwrap.indent(wrapped, " " * 4)
    kubectl("apply", "-f", "-", stdin=manifest)
    _, secret = hub.json("GET", f"/api/v1/namespaces/{namespace}/secrets/wrapped-tls")
    assert secret["data"] == {"tls.crt": encoded, "tls.key": "a2V5"}
    code, cm = hub.json("POST", f"/api/v1/namespaces/{namespace}/configmaps",
                        {"metadata": {"name": "wrapped"}, "binaryData": {"b": wrapped}})
    assert code == 201 and cm["binaryData"] == {"b": encoded}
    code, bad = hub.json("POST", f"/api/v1/namespaces/{namespace}/configmaps",
                         {"metadata": {"name": "bad"}, "binaryData": {"b": "not base64!"}})
    assert code == 422 and "binaryData[b]" in bad["message"]
