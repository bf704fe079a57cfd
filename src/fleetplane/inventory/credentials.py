"""Find credential material in a ClusterProfile.

KEP-4322: a ClusterProfile "cannot contain any data considered a secret; reachability information
is not sensitive". Consumers get credentials from access provider plugins configured on their
side, never from the profile. This module looks for what a careless cluster manager might put
there anyway, and says where, without ever repeating the secret itself:

- credential *fields*, wherever they occur (typically inside an extension or a JSON annotation):
  ``token``, ``client-key``, ``client-key-data``, ``client-certificate-data`` (and their camelCase
  spellings from ExecCredential), ``password``, ``client-secret``, ``id-token``/``refresh-token``, ``api-key``,
  ``private-key``, a kubeconfig ``user`` block or ``users`` list, an ``auth-provider`` block;
- secret *environment variables* (``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``CLIENT_SECRET``, ...)
  in an ``env`` list or in the ``.../exec/additional-envs`` extension, ``{name, value}`` pairs
  (properties, env entries) whose name says the value is a secret, and secret *flags*
  (``--token=...``, ``--password x``, ``--client-secret ...``) in argument lists such as
  ``.../exec/additional-args``;
- secret-looking *values* anywhere: PEM private keys (also base64-encoded, e.g. pasted into
  ``certificate-authority-data``), JSON Web Tokens, ``Bearer <token>`` strings, and kubeconfigs
  or JSON documents embedded in strings (scanned like the rest).

Legitimate reachability fields (``server``, ``certificate-authority-data`` holding certificates,
``tls-server-name``, ``proxy-url``, the ``client.authentication.k8s.io/exec`` extension's
non-secret plugin parameters such as ``clusterName``), references (``secretName``, ``secret:
{name: ...}``) and paths (``tokenFile``, ``AZURE_FEDERATED_TOKEN_FILE``) are not flagged.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

__all__ = ["Finding", "find_credentials", "is_secret_env_name"]


@dataclass(frozen=True)
class Finding:
    """Credential material at ``path`` (a kube field path); ``reason`` never contains the secret."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def _norm(key: str) -> str:
    return re.sub(r"[^a-z0-9]", "", key.lower())


#: Field names (normalised: lower case, no separators) that hold secrets when set.
SECRET_FIELDS = frozenset({
    "token", "accesstoken", "idtoken", "refreshtoken", "bearertoken", "authtoken", "apitoken",
    "serviceaccounttoken", "sessiontoken", "bootstraptoken",
    "password", "passwd", "passphrase",
    "clientsecret", "secret", "secretkey", "secretaccesskey", "apikey", "privatekey",
    "clientkey", "clientkeydata", "clientcertificatedata",
})
#: A ``secret: {name: ..., namespace: ...}`` object is a reference, not material.
_REFERENCE_OK = frozenset({"secret"})

_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*\Z")
_ENV_NOT_SECRET_SUFFIX = frozenset({"FILE", "PATH", "DIR", "NAME", "REF", "ID", "URL", "URI", "ENDPOINT",
                                    "AUDIENCE", "HOST", "REGION", "ENABLED", "TYPE", "MODE"})
_ENV_SECRET_WORDS = frozenset({"SECRET", "PASSWORD", "PASSWD", "PASSPHRASE"})
_ENV_SECRET_LAST = frozenset({"TOKEN", "APIKEY", "CREDENTIAL", "CREDENTIALS", "PAT"})
_ENV_SECRET_TAIL = (("API", "KEY"), ("PRIVATE", "KEY"), ("ACCESS", "KEY"), ("SECRET", "KEY"), ("SIGNING", "KEY"))

_SECRET_FLAG = re.compile(
    r"^--?(token|bearer-token|id-token|refresh-token|access-token|password|passwd|client-secret|"
    r"client-key-data|client-certificate-data|api-key|apikey|private-key|secret)(=(?P<value>.*))?$",
    re.IGNORECASE,
)
_PEM_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")
_B64_PEM = "LS0tLS1CRUdJTi"  # base64("-----BEGIN")
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")
_BEARER = re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/-]{16,}=*")
#: Keys that make a document embedded in a string worth scanning (kubeconfigs and ExecCredentials).
_EMBEDDED_MARKERS = frozenset({"users", "user", "authprovider", "token", "clientkeydata", "clientcertificatedata",
                               "password", "exec", "status", "clusters"})
_MAX_EMBEDDED = 1 << 20


def is_secret_env_name(name: str) -> bool:
    """Whether an environment variable name says it carries a secret (``GITHUB_TOKEN``: yes,
    ``AZURE_FEDERATED_TOKEN_FILE`` or ``CLIENT_ID``: no)."""
    parts = [p for p in name.upper().split("_") if p]
    if not parts or parts[-1] in _ENV_NOT_SECRET_SUFFIX:
        return False
    if any(p in _ENV_SECRET_WORDS for p in parts):
        return True
    if parts[-1] in _ENV_SECRET_LAST:
        return True
    return any(tuple(parts[-len(t):]) == t for t in _ENV_SECRET_TAIL)


def _child(path: str, key: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", key):
        return f"{path}.{key}" if path else key
    return f"{path}[{key}]"


def _nonempty(v: Any) -> bool:
    return v not in (None, "", [], {}, False)


class _Scanner:
    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self._seen: set[str] = set()

    def add(self, path: str, reason: str) -> None:
        if path not in self._seen:
            self._seen.add(path)
            self.findings.append(Finding(path, reason))

    # -- structure --------------------------------------------------------------------------

    def walk(self, node: Any, path: str, depth: int = 0) -> None:
        if depth > 64:
            return
        if isinstance(node, Mapping):
            self.walk_map(node, path, depth)
        elif isinstance(node, list):
            self.walk_list(node, path, depth)
        elif isinstance(node, str):
            self.check_string(node, path, depth)

    def walk_map(self, node: Mapping, path: str, depth: int) -> None:
        for key, value in node.items():
            key = str(key)
            sub = _child(path, key)
            nk = _norm(key)
            if nk in SECRET_FIELDS and _nonempty(value) and not (nk in _REFERENCE_OK and isinstance(value, Mapping)):
                self.add(sub, f'"{key}" is a credential field')
                continue
            if nk == "users" and isinstance(value, list) and value:
                self.add(sub, "a kubeconfig users list (credentials) is not allowed")
                continue
            if nk == "user" and isinstance(value, Mapping) and value:
                self.add(sub, "a kubeconfig user block (credentials) is not allowed")
                continue
            if nk == "authprovider" and _nonempty(value):
                self.add(sub, "a kubeconfig auth-provider block (carries tokens) is not allowed")
                continue
            if _ENV_NAME.match(key) and "_" in key and is_secret_env_name(key) and _nonempty(value):
                self.add(sub, f'environment variable "{key}" carries a secret')
                continue
            if key == "value" and isinstance(node.get("name"), str) and _nonempty(value) and self.named_secret(node["name"], sub):
                continue
            self.walk(value, sub, depth + 1)

    def named_secret(self, name: str, path: str) -> bool:
        """A ``{name, value}`` pair (a property, an ``env`` entry) whose name says the value is a secret."""
        if _norm(name.rpartition("/")[2]) in SECRET_FIELDS:
            self.add(path, f'"{name}" names a credential')
            return True
        if is_secret_env_name(name.replace("-", "_").replace(".", "_")):
            self.add(path, f'"{name}" names a secret')
            return True
        return False

    def walk_list(self, node: list, path: str, depth: int) -> None:
        pending_flag: str | None = None
        for i, item in enumerate(node):
            sub = f"{path}[{i}]"
            if pending_flag is not None:
                if isinstance(item, str) and item and not item.startswith("-"):
                    self.add(sub, f'the value of argument "{pending_flag}" is a secret')
                pending_flag = None
            if isinstance(item, str):
                m = _SECRET_FLAG.match(item.strip())
                if m:
                    if m.group("value"):
                        self.add(sub, f'argument "{item.split("=", 1)[0]}" carries a secret')
                    elif m.group(2) is None:
                        pending_flag = item.strip()
                    continue
            self.walk(item, sub, depth + 1)

    # -- values -----------------------------------------------------------------------------

    def check_string(self, value: str, path: str, depth: int) -> None:
        if _PEM_PRIVATE_KEY.search(value):
            self.add(path, "contains a PEM private key")
            return
        stripped = value.strip()
        if stripped.startswith(_B64_PEM) and len(stripped) < 4 * _MAX_EMBEDDED:
            try:
                decoded = base64.b64decode(stripped, validate=False).decode("ascii", "replace")
            except (binascii.Error, ValueError):
                decoded = ""
            if _PEM_PRIVATE_KEY.search(decoded):
                self.add(path, "contains a base64-encoded PEM private key")
                return
        if _JWT.search(value):
            self.add(path, "contains a JSON Web Token (a bearer token)")
            return
        if _BEARER.search(value):
            self.add(path, "contains a bearer token")
            return
        self.check_embedded(stripped, path, depth)

    def check_embedded(self, value: str, path: str, depth: int) -> None:
        """JSON documents and kubeconfig-like YAML inside a string are scanned too."""
        if len(value) > _MAX_EMBEDDED or len(value) < 2:
            return
        doc: Any = None
        if value[0] in "{[":
            try:
                doc = json.loads(value)
            except ValueError:
                doc = None
        elif "\n" in value and ":" in value:
            try:
                doc = yaml.safe_load(value)
            except yaml.YAMLError:
                doc = None
            if not (isinstance(doc, Mapping) and any(_norm(str(k)) in _EMBEDDED_MARKERS for k in doc)):
                doc = None
        if isinstance(doc, (Mapping, list)):
            self.walk(doc, path + "(embedded)", depth + 1)


def find_credentials(obj: Mapping[str, Any]) -> list[Finding]:
    """Every place in a ClusterProfile (a dict, as on the wire) that holds credential material.

    ``metadata.managedFields`` and labels are skipped (they cannot hold secrets worth finding);
    annotation values are scanned as strings, JSON included (kubectl's last-applied-configuration
    would otherwise keep a secret the schema pruned from the object).
    """
    s = _Scanner()
    if not isinstance(obj, Mapping):
        return []
    for key, value in obj.items():
        if key == "metadata" and isinstance(value, Mapping):
            annotations = value.get("annotations")
            if isinstance(annotations, Mapping):
                for name, text in annotations.items():
                    sub = f"metadata.annotations[{name}]"
                    nk = _norm(str(name).rpartition("/")[2])
                    if nk in SECRET_FIELDS and _nonempty(text):
                        s.add(sub, f'annotation "{name}" is named as a credential')
                    elif isinstance(text, str):
                        s.check_string(text, sub, 0)
            continue
        if key in ("apiVersion", "kind"):
            continue
        s.walk(value, key, 0)
    return s.findings
