"""Find credential material in a ClusterProfile.

KEP-4322: a ClusterProfile "cannot contain any data considered a secret; reachability information
is not sensitive". Consumers get credentials from access provider plugins configured on their
side, never from the profile. This module looks for what a careless cluster manager might put
there anyway, and says where, without ever repeating the secret itself:

- credential *fields*, wherever they occur (typically inside an extension or a JSON annotation):
  ``token``, ``client-key``, ``client-key-data``, ``client-certificate-data`` (and their camelCase
  spellings from ExecCredential), ``password``, ``client-secret``, ``id-token``/``refresh-token``, ``api-key``,
  ``private-key``, a kubeconfig ``user`` block or ``users`` list, an ``auth-provider`` block; and any
  name whose *words* say secret, however spelled (``credential(s)``, ``githubToken``,
  ``github_token``, ``bearer``, ``slackWebhookSecret``; not ``tokenFile``, ``secretName``, ``keyId``);
- secret *environment variables* (``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``CLIENT_SECRET``, ...)
  in an ``env`` list or in the ``.../exec/additional-envs`` extension, ``{name, value}`` pairs
  (properties, env entries) whose name says the value is a secret, and secret *flags*
  (``--token=...``, ``--password x``, ``--client-secret ...``) in argument lists such as
  ``.../exec/additional-args`` *or inside one string* (``"kubectl --token=abc"``);
- secret-looking *values* anywhere (label values and field names included): PEM private keys
  (also PGP and PuTTY ones), JSON Web Tokens (any ``header.payload.signature`` whose header
  decodes to a JOSE header: unsigned and encrypted ones too), ``Bearer <token>``, HTTP basic
  credentials, URLs with a password (``https://user:password@host``, in ``server``, ``proxy-url``
  or anywhere), AWS access key pairs, vendor token formats (GitHub, GitLab, Slack, Google API
  keys, Stripe, OpenShift), secret assignments in embedded text (``GITHUB_TOKEN=...``, an AWS
  credentials file, a ``.env`` file), and kubeconfigs or JSON documents embedded in strings
  (scanned like the rest);
- any of those *base64-encoded*, up to three layers deep (a base64 kubeconfig, a base64 JWT, a
  twice-encoded key);
- anything nested deeper than :data:`MAX_DEPTH` levels, refused because it cannot be checked.

A random token encoded in base64 with nothing around it cannot be told from other data; the rules
catch what has a recognisable shape or name.

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

__all__ = ["Finding", "find_credentials", "is_secret_env_name", "is_secret_key"]


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
                                    "AUDIENCE", "HOST", "REGION", "ENABLED", "TYPE", "MODE",
                                    # parameters *about* a secret, not the secret (``secretNamespace``)
                                    "NAMESPACE", "NS", "POLICY", "KIND", "VERSION", "FORMAT", "PROVIDER",
                                    "SELECTOR", "PREFIX", "HEADER", "ARN", "TTL", "EXPIRY", "LENGTH"})
_ENV_SECRET_WORDS = frozenset({"SECRET", "PASSWORD", "PASSWD", "PASSPHRASE"})
_ENV_SECRET_LAST = frozenset({"TOKEN", "APIKEY", "CREDENTIAL", "CREDENTIALS", "PAT", "BEARER"})
_ENV_SECRET_TAIL = (("API", "KEY"), ("PRIVATE", "KEY"), ("ACCESS", "KEY"), ("SECRET", "KEY"), ("SIGNING", "KEY"))

_SECRET_FLAG = re.compile(
    r"^--?(token|bearer-token|id-token|refresh-token|access-token|password|passwd|client-secret|"
    r"client-key-data|client-certificate-data|api-key|apikey|private-key|secret)(=(?P<value>.*))?$",
    re.IGNORECASE,
)
_PEM_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|PuTTY-User-Key-File-\d+:")
_B64_PEM = "LS0tLS1CRUdJTi"  # base64("-----BEGIN")
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")
_BEARER = re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/-]{16,}=*")
#: Keys that make a document embedded in a string worth scanning (kubeconfigs and ExecCredentials).
_EMBEDDED_MARKERS = frozenset({"users", "user", "authprovider", "token", "clientkeydata", "clientcertificatedata",
                               "password", "exec", "status", "clusters"})
_MAX_EMBEDDED = 1 << 20
#: Deeper than this is refused rather than scanned (a secret could hide below any fixed limit).
MAX_DEPTH = 64
#: Nested base64 layers decoded before giving up (each layer is scanned like the original).
_MAX_BASE64_LAYERS = 3
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
#: ``scheme://user:password@host``: a password in a URL (server, proxy-url or anywhere).
_URL_PASSWORD = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@?#]*:[^/\s@?#]+@")
#: A secret flag with its value inside one string (``kubectl --token=abc``, ``plugin --password x``).
_SECRET_FLAG_IN_TEXT = re.compile(
    r"(?:^|\s)--?(token|bearer-token|id-token|refresh-token|access-token|password|passwd|client-secret|"
    r"client-key-data|client-certificate-data|api-key|apikey|private-key|secret)(?:=|\s+)(?!-)\S",
    re.IGNORECASE,
)
#: ``NAME=value`` / ``name: value`` / ``name = value`` lines (shell, .env, INI, AWS credentials files).
_ASSIGNMENT = re.compile(r"(?m)^[ \t]*(?:export[ \t]+)?([A-Za-z_][A-Za-z0-9_.-]{0,63})[ \t]*[=:][ \t]*[\"']?([^\s\"']+)")
_INLINE_ENV_ASSIGNMENT = re.compile(r"(?:^|\s)([A-Z][A-Z0-9]*_[A-Z0-9_]+)=(\S+)")
_AWS_KEY_ID = re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b")
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
#: Tokens whose format says what they are (vendor prefixes with their documented lengths).
_TOKEN_START, _TOKEN_END = r"(?<![A-Za-z0-9+/=_~-])", r"(?![A-Za-z0-9+/=_~-])"
_KNOWN_TOKENS = tuple((re.compile(_TOKEN_START + pattern + _TOKEN_END), what) for pattern, what in (
    (r"gh[pousr]_[A-Za-z0-9]{36,}", "a GitHub token"),
    (r"github_pat_[A-Za-z0-9_]{22,}", "a GitHub fine-grained token"),
    (r"glpat-[A-Za-z0-9_-]{20,}", "a GitLab token"),
    (r"xox[abposr]-[A-Za-z0-9-]{10,}", "a Slack token"),
    (r"AIza[0-9A-Za-z_-]{35}", "a Google API key"),
    (r"[sr]k_live_[0-9A-Za-z]{24,}", "a Stripe secret key"),
    (r"sha256~[A-Za-z0-9_-]{43}", "an OpenShift token"),
))
_BASIC_AUTH = re.compile(r"(?i)\bbasic\s+([A-Za-z0-9+/]{6,}={0,2})")
_JWT_LIKE = re.compile(r"(?<![A-Za-z0-9_-])([A-Za-z0-9_-]{10,})((?:\.[A-Za-z0-9_-]*){2,4})")


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


def _key_words(key: str) -> str:
    """``githubToken``, ``github-token``, ``github.token`` -> ``GITHUB_TOKEN`` (to judge it by its words)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", key)
    return "_".join(w for w in re.split(r"[^A-Za-z0-9]+", spaced) if w).upper()


def is_secret_key(key: str) -> bool:
    """Whether a field name says its value is a secret, however it is spelled (camel, snake, kebab)."""
    return _norm(key) in SECRET_FIELDS or is_secret_env_name(_key_words(key))


def _b64decode_text(value: str) -> str | None:
    """``value`` decoded from (url-safe) base64 when the result is text, else ``None``."""
    compact = "".join(value.split())
    if len(compact) < 16 or len(compact) > 4 * _MAX_EMBEDDED or not _BASE64.fullmatch(compact):
        return None
    try:
        raw = base64.b64decode(compact.replace("-", "+").replace("_", "/") + "=" * (-len(compact) % 4))
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    if not text or any(not (c.isprintable() or c in "\n\r\t") for c in text):
        return None
    return text


def _jwt_header(segment: str) -> bool:
    try:
        head = json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))
    except (binascii.Error, ValueError):
        return False
    return isinstance(head, Mapping) and ("alg" in head or "enc" in head)


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
        if depth > MAX_DEPTH:
            self.add(path, f"nested more than {MAX_DEPTH} levels deep, too deep to check for credentials")
            return
        if isinstance(node, Mapping):
            self.walk_map(node, path, depth)
        elif isinstance(node, list):
            self.walk_list(node, path, depth)
        elif isinstance(node, str):
            self.check_string(node, path, depth)

    def walk_map(self, node: Mapping, path: str, depth: int) -> None:
        for index, (key, value) in enumerate(node.items()):
            key = str(key)
            if len(key) > 32 and (reason := self.secret_in_text(key)) is not None:
                # the key is the secret: name it by position, never by itself
                self.add(f"{path}[<key {index}>]", f"a field name that {reason}")
                continue
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
            if not isinstance(value, Mapping) and _nonempty(value) and is_secret_key(key):
                self.add(sub, f'"{key}" names a credential')
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

    def check_string(self, value: str, path: str, depth: int, layers: int = 0) -> None:
        reason = self.secret_in_text(value)
        if reason is not None:
            self.add(path, ("base64-encoded, " * layers) + reason)
            return
        stripped = value.strip()
        decoded = _b64decode_text(stripped) if layers < _MAX_BASE64_LAYERS else None
        if decoded is not None:
            before = len(self.findings)
            self.check_string(decoded, path, depth + 1, layers + 1)
            if len(self.findings) > before:
                return
        self.check_embedded(stripped, path, depth)

    @staticmethod
    def secret_in_text(value: str) -> str | None:
        """Why ``value`` holds a credential by its content alone, or ``None``."""
        if _PEM_PRIVATE_KEY.search(value):
            return "contains a PEM private key"
        if _JWT.search(value):
            return "contains a JSON Web Token (a bearer token)"
        for m in _JWT_LIKE.finditer(value):
            if _jwt_header(m.group(1)):
                return "contains a JSON Web Token (a bearer token)"
        if _BEARER.search(value):
            return "contains a bearer token"
        for m in _BASIC_AUTH.finditer(value):
            try:
                plain = base64.b64decode(m.group(1) + "=" * (-len(m.group(1)) % 4)).decode("utf-8")
            except (binascii.Error, ValueError):
                continue
            if ":" in plain:
                return "contains HTTP basic credentials (user:password)"
        if _URL_PASSWORD.search(value):
            return "contains a URL with a password (user:password@)"
        flag = _SECRET_FLAG_IN_TEXT.search(value)
        if flag:
            return f'contains the argument "--{flag.group(1)}" with a value (a secret)'
        for pattern, what in _KNOWN_TOKENS:
            if pattern.search(value):
                return f"contains {what}"
        if _AWS_KEY_ID.search(value) and _AWS_SECRET.search(value):
            return "contains an AWS access key pair (key id and secret access key)"
        for m in _INLINE_ENV_ASSIGNMENT.finditer(value):
            if is_secret_env_name(m.group(1)):
                return f'assigns the secret variable "{m.group(1)}"'
        if "\n" in value:
            for m in _ASSIGNMENT.finditer(value):
                # a plain lower-case word ("token: expired") is prose, not a credential
                if is_secret_key(m.group(1)) and not m.group(2).isalpha():
                    return f'sets "{m.group(1)}" (a credential) in embedded configuration text'
        return None

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

    ``metadata.managedFields`` is skipped; label values (63 characters at most, still room for a
    GitHub token) are checked by content; annotation values are scanned as strings, JSON included
    (kubectl's last-applied-configuration would otherwise keep a secret the schema pruned from the
    object).
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
            labels = value.get("labels")
            if isinstance(labels, Mapping):
                for name, text in labels.items():
                    reason = s.secret_in_text(str(text)) if isinstance(text, str) else None
                    if reason is not None:
                        s.add(f"metadata.labels[{name}]", reason)
            continue
        if key in ("apiVersion", "kind"):
            continue
        s.walk(value, key, 0)
    return s.findings
