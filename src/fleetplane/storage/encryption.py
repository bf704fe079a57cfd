"""Secrets at rest: kube-apiserver's ``--encryption-provider-config``, as a wrapper around a store.

The file is kube's own ``apiVersion: apiserver.config.k8s.io/v1, kind: EncryptionConfiguration``
(the same file works for both servers), and stored values have kube's format, so that an
operator's knowledge (and tooling that inspects etcd) carries over:

* ``identity: {}`` stores plain bytes (no prefix);
* ``aesgcm``, ``aescbc``, ``secretbox`` store ``k8s:enc:<provider>:v1:<key name>:`` followed by
  kube's payload: AES-GCM is the 12-byte nonce then ciphertext and tag, authenticated with the
  storage key (kube authenticates with the etcd key) so a value copied to another key, or to
  another logical cluster, does not decrypt; AES-CBC is the 16-byte IV then PKCS#7-padded
  ciphertext (unauthenticated, as in kube, which discourages it); secretbox is the 24-byte nonce
  then NaCl's box (XSalsa20-Poly1305).
* ``kms`` is refused: fleetplane has no KMS plugin client.

Which providers a key gets is decided as kube decides it for a group/resource: the exact
resource (``secrets``, ``deployments.apps``), then its group's wildcard (``*.apps``, ``*.`` for
the core group), then ``*.*`` (everything, custom resources created later included). Overlaps
that would make part of the file ineffective are refused with kube's messages; a resource named
in several entries gets their providers in order (kube concatenates them). Keys of resources the
file does not name are written as they are and read as kube's identity check reads them: a plain
value passes, an encrypted one is an error. One AES-GCM key must not encrypt much more than
2^32 values (random nonces): rotate long before that.

Writes use the first provider and, within it, its first key. Reads pick the provider by prefix,
in order; a plain value is read only if the resource lists ``identity`` somewhere, as in kube
(so turning encryption on without listing ``identity`` second makes existing plain values
unreadable; list it until :meth:`EncryptedStore.rewrite_stale` has run). A value read with
anything but the first provider and key is stale.

Key rotation, as in kube, on every hub replica:

1. add the new key as the *second* key of the provider and restart (every replica can now read
   values written with it; writes still use the old key);
2. move the new key *first* and restart: writes use it, and the hub's start-up calls
   :meth:`EncryptedStore.rewrite_stale`, which re-encrypts every value still written with the
   old key (kube asks for ``kubectl get secrets -A -o json | kubectl replace -f -`` instead);
3. remove the old key and restart.

Turning encryption on is the same with ``identity: {}`` in the old key's place (new provider
first, identity second); turning it off puts ``identity: {}`` first and the old provider second.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from nacl.exceptions import CryptoError
from nacl.secret import SecretBox

from .interface import (
    Event,
    KeyNotFoundError,
    KeyValue,
    RevisionMismatchError,
    StorageError,
    Store,
)

API_VERSION = "apiserver.config.k8s.io/v1"
KIND = "EncryptionConfiguration"
#: every encrypted value starts with this (kube reserves it: identity refuses to read it)
ENCRYPTED_PREFIX = b"k8s:enc:"
PROVIDERS = ("aesgcm", "aescbc", "secretbox", "identity", "kms")
AES_KEY_SIZES = (16, 24, 32)
SECRETBOX_KEY_SIZES = (32,)
#: stale values re-encrypted concurrently by rewrite_stale (one SQLite commit covers a batch)
REWRITE_BATCH = 256
#: ranges with more encrypted values than this are decrypted off the event loop
_THREAD_THRESHOLD = 512

# kube's validation messages (validation_encryption.go)
_MORE_THAN_ONE = "more than one provider specified in a single element, should split into different list elements"
_NO_PROVIDER = "provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity"
_KEY_LEN = "secret is not of the expected length, got {}, expected one of {}"
_AT_LEAST_ONE = "at least one {} is required"
_MANDATORY = "{} is a mandatory field for a {}"
_BASE64 = "secrets must be base64 encoded"
_EVENTS_GROUP = "'*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the config file"
_EXTENSIONS = "'extensions' group has been removed and cannot be used for encryption"
_STAR = "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources"
_OVERLAP = "using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked"
_NON_REST = "resources which do not have REST API/s cannot be encrypted"
_CAPITAL = "resource name should not contain capital letters"
_ACROSS_GROUPS = "encrypting the same resource across groups is not supported"
_DUPLICATE = "the same resource cannot be specified multiple times"
_KMS = "KMS providers are not supported by fleetplane: use aesgcm, aescbc or secretbox"


class EncryptionConfigError(ValueError):
    """The encryption configuration file is unreadable or invalid (the hub refuses to start)."""


class DecryptError(StorageError):
    """A stored value could not be read back: wrong or missing key, tampering, or a value moved
    to another key. The message names the key, never the value."""

    http_status = 500

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"unable to transform key {json.dumps(key)}: {reason}")
        self.key = key
        self.reason = reason


class _TransformError(Exception):
    """One provider or key failed to read a value (kube goes on to the next one)."""


# -- field errors, formatted as apimachinery's field.Error -------------------------------------


def _quote(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)  # Go's %q, for the ASCII names found in these files
    if isinstance(value, bool | int | float):
        return str(value).lower() if isinstance(value, bool) else str(value)
    return json.dumps(value, separators=(",", ":"))


def _required(path: str, detail: str) -> str:
    return f"{path}: Required value" + (f": {detail}" if detail else "")


def _invalid(path: str, value: Any, detail: str) -> str:
    return f"{path}: Invalid value: {_quote(value)}: {detail}"


def _forbidden(path: str, detail: str) -> str:
    return f"{path}: Forbidden: {detail}"


def _aggregate(errors: Sequence[str]) -> str:
    """utilerrors.NewAggregate(...).Error(): one message, or ``[a, b]`` without duplicates."""
    unique = list(dict.fromkeys(errors))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


# -- the configuration ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Key:
    name: str
    secret: bytes = field(repr=False)


@dataclass(frozen=True)
class ProviderConfig:
    """One ``providers`` element: ``kind`` is identity, aesgcm, aescbc or secretbox."""

    kind: str
    keys: tuple[Key, ...] = ()


@dataclass(frozen=True)
class ResourceConfig:
    """One ``resources`` element: resource names as written, and their providers in order."""

    resources: tuple[str, ...]
    providers: tuple[ProviderConfig, ...]


def parse_group_resource(name: str) -> tuple[str, str]:
    """``(group, resource)`` as schema.ParseGroupResource: ``deployments.apps``, ``*.``, ``*.*``."""
    resource, sep, group = name.partition(".")
    return (group, resource) if sep else ("", name)


def _gr_string(group: str, resource: str) -> str:
    """How kube names a group/resource in its messages (``*.`` for the core wildcard)."""
    if group == "" and resource == "*":
        return "*."
    return f"{resource}.{group}" if group else resource


class _Cipher(Protocol):
    def seal(self, data: bytes, aad: bytes) -> bytes: ...

    def open(self, data: bytes, aad: bytes) -> bytes: ...


class _AESGCM:
    """kube's aesgcm: 12-byte random nonce, then ciphertext and tag; the storage key is authenticated."""

    def __init__(self, key: bytes) -> None:
        self._aead = AESGCM(key)

    def seal(self, data: bytes, aad: bytes) -> bytes:
        nonce = os.urandom(12)
        return nonce + self._aead.encrypt(nonce, data, aad)

    def open(self, data: bytes, aad: bytes) -> bytes:
        if len(data) < 12:
            raise _TransformError("the stored data was shorter than the required size")
        try:
            return self._aead.decrypt(data[:12], data[12:], aad)
        except InvalidTag:
            raise _TransformError("cipher: message authentication failed") from None


class _AESCBC:
    """kube's aescbc: 16-byte random IV, then PKCS#7-padded ciphertext (nothing authenticated)."""

    def __init__(self, key: bytes) -> None:
        self._algorithm = algorithms.AES(key)

    def seal(self, data: bytes, aad: bytes) -> bytes:
        pad = 16 - len(data) % 16
        iv = os.urandom(16)
        enc = Cipher(self._algorithm, modes.CBC(iv)).encryptor()
        return iv + enc.update(data + bytes([pad]) * pad) + enc.finalize()

    def open(self, data: bytes, aad: bytes) -> bytes:
        if len(data) < 16:
            raise _TransformError("the stored data was shorter than the required size")
        body = data[16:]
        if len(body) % 16:
            raise _TransformError("the stored data is not a multiple of the block size")
        dec = Cipher(self._algorithm, modes.CBC(data[:16])).decryptor()
        out = dec.update(body) + dec.finalize()
        pad = out[-1] if out else 0
        if pad == 0 or pad > len(out):
            raise _TransformError("invalid PKCS7 data (empty or not padded)")
        if out[-pad:] != bytes([pad]) * pad:
            raise _TransformError("invalid padding on input")
        return out[:-pad]


class _Secretbox:
    """kube's secretbox: 24-byte random nonce, then NaCl's box (its MAC, then the ciphertext)."""

    def __init__(self, key: bytes) -> None:
        self._box = SecretBox(key)

    def seal(self, data: bytes, aad: bytes) -> bytes:
        return bytes(self._box.encrypt(data, os.urandom(SecretBox.NONCE_SIZE)))

    def open(self, data: bytes, aad: bytes) -> bytes:
        if len(data) < SecretBox.NONCE_SIZE + SecretBox.MACBYTES:
            raise _TransformError("the stored data was shorter than the required size")
        try:
            return self._box.decrypt(data)
        except CryptoError:
            raise _TransformError("secretbox: message authentication failed") from None


_CIPHERS: dict[str, type[_AESGCM] | type[_AESCBC] | type[_Secretbox]] = {
    "aesgcm": _AESGCM, "aescbc": _AESCBC, "secretbox": _Secretbox,
}
_NO_KEY = {
    "aesgcm": "no matching key was found for the provided AES transformer",
    "aescbc": "no matching key was found for the provided AES transformer",
    "secretbox": "no matching key was found for the provided Secretbox transformer",
}


@dataclass(frozen=True)
class _Provider:
    kind: str
    prefix: bytes  # b"" for identity
    keys: tuple[tuple[bytes, _Cipher], ...]  # (b"<name>:", cipher), in the file's order


class Transformer:
    """The providers of one group/resource: write with the first, read by prefix (kube's
    prefixTransformers, one level for providers and one for each provider's keys)."""

    def __init__(self, providers: Sequence[ProviderConfig]) -> None:
        built = []
        for p in providers:
            if p.kind == "identity":
                built.append(_Provider("identity", b"", ()))
                continue
            cipher = _CIPHERS[p.kind]
            keys = tuple((k.name.encode() + b":", cipher(k.secret)) for k in p.keys)
            built.append(_Provider(p.kind, f"k8s:enc:{p.kind}:v1:".encode(), keys))
        self._providers = tuple(built)

    def to_storage(self, data: bytes, aad: bytes) -> bytes:
        first = self._providers[0]
        if not first.keys:
            return data
        name, cipher = first.keys[0]
        return first.prefix + name + cipher.seal(data, aad)

    def from_storage(self, data: bytes, aad: bytes) -> tuple[bytes, bool]:
        """``(plaintext, stale)``; stale when not read with the first provider and key."""
        errors: list[str] = []
        for i, p in enumerate(self._providers):
            if not p.keys:  # identity: anything not encrypted, else try the next provider
                if data.startswith(ENCRYPTED_PREFIX):
                    continue
                return data, i != 0
            if not data.startswith(p.prefix):
                continue
            try:
                out, stale = self._open(p, data[len(p.prefix):], aad)
            except _TransformError as exc:
                # Same provider listed twice with other keys: a failure here is not the end.
                errors.append(str(exc))
                continue
            return out, stale or i != 0
        raise _TransformError(_aggregate(errors) if errors else "no matching prefix found")

    @staticmethod
    def _open(p: _Provider, data: bytes, aad: bytes) -> tuple[bytes, bool]:
        errors: list[str] = []
        for j, (name, cipher) in enumerate(p.keys):
            if data.startswith(name):
                try:
                    return cipher.open(data[len(name):], aad), j != 0
                except _TransformError as exc:
                    errors.append(str(exc))
        raise _TransformError(_aggregate(errors) if errors else _NO_KEY[p.kind])


class EncryptionConfig:
    """A validated EncryptionConfiguration; :meth:`transformer_for` answers as kube's lookup.

    Built from its ``resources`` entries; raises EncryptionConfigError where kube's
    transformer building fails (a resource masked by an earlier wildcard).
    """

    def __init__(self, resources: Sequence[ResourceConfig]) -> None:
        self.resources = tuple(resources)
        merged: dict[tuple[str, str], list[ProviderConfig]] = {}
        for rc in self.resources:
            for name in rc.resources:
                group, resource = parse_group_resource(name)
                for masking in ((group, "*"), ("*", "*")):
                    if masking in merged:
                        raise EncryptionConfigError(
                            f"error while building transformers: resource {json.dumps(_gr_string(group, resource))} "
                            f"is masked by earlier rule {json.dumps(_gr_string(*masking))}")
                merged.setdefault((group, resource), []).extend(rc.providers)
        self._transformers = {gr: Transformer(providers) for gr, providers in merged.items()}

    def __repr__(self) -> str:
        return f"EncryptionConfig({list(self.resources)!r})"

    def transformer_for(self, group: str, resource: str) -> Transformer | None:
        """The exact resource's, its group's wildcard, ``*.*``'s, or None (not encrypted)."""
        t = self._transformers
        return t.get((group, resource)) or t.get((group, "*")) or t.get(("*", "*"))


def _validate_resources(resources: list[str], path: str) -> list[str]:
    errs: list[str] = []
    grs = [parse_group_resource(r) for r in resources]
    if len(grs) >= 2:
        duplicate = overlap = False
        for i, a in enumerate(grs):
            for j, b in enumerate(grs):
                if i == j:
                    continue
                if a == b and not duplicate:
                    duplicate = True
                    continue
                if overlap:
                    continue
                if a == ("*", "*") or (a[0] == b[0] and "*" in (a[1], b[1])):
                    overlap = True
        if duplicate:
            errs.append(_invalid(path, resources, _DUPLICATE))
        if overlap:
            errs.append(_invalid(path, resources, _OVERLAP))
    for j, res in enumerate(resources):
        p = f"{path}[{j}]"
        group, resource = parse_group_resource(res)
        if res != res.lower():
            errs.append(_invalid(p, res, _CAPITAL))
        elif res == "*":
            errs.append(_invalid(p, res, _STAR))
        elif res in ("apiserveripinfo", "serviceipallocations", "servicenodeportallocations"):
            errs.append(_invalid(p, res, _NON_REST))
        elif group == "events.k8s.io":
            errs.append(_invalid(p, res, _EVENTS_GROUP))
        elif group == "extensions":
            errs.append(_invalid(p, res, _EXTENSIONS))
        elif group == "*" and resource != "*":
            errs.append(_invalid(p, res, _ACROSS_GROUPS))
    return errs


def _validate_keys(keys: Any, path: str, sizes: tuple[int, ...], out: list[Key]) -> list[str]:
    if keys is None or keys == []:
        return [_required(path, _AT_LEAST_ONE.format("keys"))]
    if not isinstance(keys, list):
        return [_invalid(path, "REDACTED", "must be a list of {name, secret}")]
    errs: list[str] = []
    for i, k in enumerate(keys):
        p = f"{path}[{i}]"
        if not isinstance(k, Mapping):
            errs.append(_invalid(p, "REDACTED", "must be a mapping with name and secret"))
            continue
        name, secret = k.get("name") or "", k.get("secret") or ""
        if not isinstance(name, str):
            errs.append(_invalid(f"{p}.name", str(name), "must be a string"))
            name = ""
        elif not name:
            errs.append(_required(f"{p}.name", _MANDATORY.format("name", "key")))
        if not secret:
            errs.append(_required(f"{p}.secret", _MANDATORY.format("secret", "key")))
            continue
        try:
            raw = base64.b64decode(str(secret), validate=True)
        except (binascii.Error, ValueError):
            errs.append(_invalid(f"{p}.secret", "REDACTED", _BASE64))
            continue
        if len(raw) not in sizes:
            errs.append(_invalid(f"{p}.secret", "REDACTED", _KEY_LEN.format(len(raw), "[" + " ".join(map(str, sizes)) + "]")))
            continue
        if name:
            out.append(Key(name, raw))
    return errs


def parse_encryption_config(doc: Any, source: str = "") -> EncryptionConfig:
    """Validate a decoded EncryptionConfiguration (kube's checks and messages) and build it."""
    where = f" {source!r}" if source else ""
    if not isinstance(doc, Mapping):
        raise EncryptionConfigError(f"error decoding encryption provider configuration file{where}: not a mapping")
    if doc.get("apiVersion") != API_VERSION or doc.get("kind") != KIND:
        raise EncryptionConfigError(
            f"error while parsing file: got unexpected config type: {doc.get('apiVersion') or ''}, "
            f"Kind={doc.get('kind') or ''} (want apiVersion {API_VERSION}, kind {KIND})")
    errs: list[str] = []
    resources = doc.get("resources") or []
    if not isinstance(resources, list):
        raise EncryptionConfigError(f"error decoding encryption provider configuration file{where}: resources must be a list")
    if not resources:
        raise EncryptionConfigError(f"error while parsing file: {_required('resources', _AT_LEAST_ONE.format('resources'))}")
    built: list[ResourceConfig] = []
    for i, entry in enumerate(resources):
        rpath, ppath = f"resources[{i}].resources", f"resources[{i}].providers"
        if not isinstance(entry, Mapping):
            raise EncryptionConfigError(f"error decoding encryption provider configuration file{where}: resources[{i}] must be a mapping")
        names = entry.get("resources") or []
        providers = entry.get("providers") or []
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise EncryptionConfigError(f"error decoding encryption provider configuration file{where}: {rpath} must be a list of strings")
        if not isinstance(providers, list):
            raise EncryptionConfigError(f"error decoding encryption provider configuration file{where}: {ppath} must be a list")
        if not names:
            errs.append(_required(rpath, _AT_LEAST_ONE.format(rpath)))
        errs += _validate_resources(names, rpath)
        if not providers:
            errs.append(_required(ppath, _AT_LEAST_ONE.format(ppath)))
        provs: list[ProviderConfig] = []
        for j, p in enumerate(providers):
            path = f"{ppath}[{j}]"
            kinds = [k for k in PROVIDERS if isinstance(p, Mapping) and p.get(k) is not None]
            if not kinds:
                errs.append(_invalid(path, sorted(p) if isinstance(p, Mapping) else p, _NO_PROVIDER))
                continue
            if len(kinds) > 1:
                errs.append(_invalid(path, kinds, _MORE_THAN_ONE))  # the types only: never the secrets
                continue
            kind = kinds[0]
            if kind == "kms":
                errs.append(_forbidden(f"{path}.kms", _KMS))
                continue
            if kind == "identity":
                provs.append(ProviderConfig("identity"))
                continue
            body = p[kind]
            if not isinstance(body, Mapping):
                errs.append(_invalid(f"{path}.{kind}", "REDACTED", "must be a mapping with keys"))
                continue
            keys: list[Key] = []
            sizes = SECRETBOX_KEY_SIZES if kind == "secretbox" else AES_KEY_SIZES
            errs += _validate_keys(body.get("keys"), f"{path}.{kind}.keys", sizes, keys)
            provs.append(ProviderConfig(kind, tuple(keys)))
        built.append(ResourceConfig(tuple(names), tuple(provs)))
    if errs:
        raise EncryptionConfigError(f"error while parsing file: {_aggregate(errs)}")
    return EncryptionConfig(tuple(built))


def load_encryption_config(path: str | Path) -> EncryptionConfig:
    """Read ``--encryption-provider-config`` (YAML or JSON); raises EncryptionConfigError."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise EncryptionConfigError(f"error reading encryption provider configuration file {str(path)!r}: {exc.strerror}") from None
    if not data.strip():
        raise EncryptionConfigError(f"encryption provider configuration file {str(path)!r} is empty")
    try:
        doc = yaml.safe_load(data)
    except yaml.YAMLError as exc:
        # the parser's message quotes the offending line, which may hold a secret: keep only where
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise EncryptionConfigError(f"error decoding encryption provider configuration file {str(path)!r}: invalid YAML{at}") from None
    return parse_encryption_config(doc, str(path))


# -- the store -----------------------------------------------------------------------------------


def _resource_prefix(key: str) -> str | None:
    """``/<group>/<resource>/`` of a storage key, or None for a key outside the layout."""
    i = key.find("/", 1)
    j = key.find("/", i + 1) if i > 0 else -1
    return key[:j + 1] if j > i + 1 else None


class EncryptedStore:
    """A :class:`~fleetplane.storage.interface.Store` that encrypts values on their way into
    ``inner`` and decrypts them on every way out (get, range, watch events, the value a
    conflicting write reports). Keys of resources the config does not name pass through (one
    cached look-up per group/resource)."""

    def __init__(self, inner: Store, config: EncryptionConfig) -> None:
        self.inner = inner
        self.config = config
        self._decisions: dict[str, Transformer | None] = {}

    def __repr__(self) -> str:
        return f"EncryptedStore({self.inner!r})"

    def transformer(self, key: str) -> Transformer | None:
        """The providers for ``key``'s group/resource (None: stored as is), cached per resource."""
        prefix = _resource_prefix(key)
        if prefix is None:
            return None
        try:
            return self._decisions[prefix]
        except KeyError:
            pass
        group = prefix[1:prefix.index("/", 1)]
        resource = prefix[len(group) + 2:-1]
        t = self._decisions[prefix] = self.config.transformer_for("" if group == "core" else group, resource)
        return t

    def _seal(self, key: str, value: bytes) -> bytes:
        t = self.transformer(key)
        return value if t is None else t.to_storage(value, key.encode())

    def _open(self, key: str, value: bytes) -> tuple[bytes, bool]:
        t = self.transformer(key)
        if t is None:
            if value.startswith(ENCRYPTED_PREFIX):
                raise DecryptError(key, "identity transformer tried to read encrypted data")
            return value, False
        try:
            return t.from_storage(value, key.encode())
        except _TransformError as exc:
            raise DecryptError(key, str(exc)) from None

    def _open_kv(self, kv: KeyValue) -> KeyValue:
        value, _ = self._open(kv.key, kv.value)
        return kv if value is kv.value else KeyValue(kv.key, value, kv.create_revision, kv.mod_revision)

    def _conflict(self, exc: RevisionMismatchError) -> RevisionMismatchError:
        """The same conflict, carrying the current value decrypted (None if it cannot be)."""
        current = exc.current
        if current is not None:
            try:
                current = self._open_kv(current)
            except DecryptError:
                current = None
        return RevisionMismatchError(exc.args[0] if exc.args else "", current)

    # -- lifecycle and metadata: the inner store's ------------------------------------------------

    async def start(self) -> None:
        await self.inner.start()

    async def close(self) -> None:
        await self.inner.close()

    async def current_revision(self) -> int:
        return await self.inner.current_revision()

    async def compact(self, revision: int) -> None:
        await self.inner.compact(revision)

    async def compacted_revision(self) -> int:
        return await self.inner.compacted_revision()

    # -- reads -----------------------------------------------------------------------------------

    async def get(self, key: str) -> KeyValue | None:
        kv = await self.inner.get(key)
        return None if kv is None else self._open_kv(kv)

    async def range(self, prefix: str) -> tuple[list[KeyValue], int]:
        kvs, rev = await self.inner.range(prefix)
        encrypted = sum(1 for kv in kvs if kv.value.startswith(ENCRYPTED_PREFIX))
        if encrypted > _THREAD_THRESHOLD:
            return await asyncio.to_thread(self._open_all, kvs), rev
        return self._open_all(kvs), rev

    def _open_all(self, kvs: list[KeyValue]) -> list[KeyValue]:
        return [self._open_kv(kv) for kv in kvs]

    async def watch(self, prefix: str, start_revision: int) -> AsyncIterator[Event]:
        """The inner watch with every value (a DELETE's old one too) decrypted; a value that
        cannot be decrypted ends it with DecryptError."""
        it = self.inner.watch(prefix, start_revision)
        try:
            async for ev in it:
                value, _ = self._open(ev.key, ev.value)
                yield ev if value is ev.value else Event(ev.type, ev.key, value, ev.revision, ev.create_revision)
        finally:
            aclose = getattr(it, "aclose", None)
            if aclose is not None:
                await aclose()

    # -- writes ----------------------------------------------------------------------------------

    async def create(self, key: str, value: bytes) -> int:
        return await self.inner.create(key, self._seal(key, value))

    async def update(self, key: str, value: bytes, expected_revision: int) -> int:
        try:
            return await self.inner.update(key, self._seal(key, value), expected_revision)
        except RevisionMismatchError as exc:
            raise self._conflict(exc) from None

    async def delete(self, key: str, expected_revision: int) -> int:
        try:
            return await self.inner.delete(key, expected_revision)
        except RevisionMismatchError as exc:
            raise self._conflict(exc) from None

    # -- rotation --------------------------------------------------------------------------------

    async def rewrite_stale(self, prefix: str = "/") -> int:
        """Re-encrypt every value under ``prefix`` not written with the current provider and key
        (plain values too, when identity is no longer first); returns how many were rewritten.

        Each write is guarded by the value's mod_revision: a key changed meanwhile was written
        with the current key already and is skipped, as is one deleted meanwhile. A value no
        provider can read raises DecryptError (the hub would fail to load it anyway).
        """
        kvs, _ = await self.inner.range(prefix)
        stale: list[tuple[KeyValue, bytes, Transformer]] = []
        for kv in kvs:
            t = self.transformer(kv.key)
            if t is None:
                continue
            plain, is_stale = self._open(kv.key, kv.value)
            if is_stale:
                stale.append((kv, plain, t))
        done = 0
        for i in range(0, len(stale), REWRITE_BATCH):
            results = await asyncio.gather(*(self._rewrite(kv, plain, t) for kv, plain, t in stale[i:i + REWRITE_BATCH]))
            done += sum(results)
        return done

    async def _rewrite(self, kv: KeyValue, plain: bytes, t: Transformer) -> bool:
        try:
            await self.inner.update(kv.key, t.to_storage(plain, kv.key.encode()), kv.mod_revision)
        except (RevisionMismatchError, KeyNotFoundError):
            return False
        return True
