"""Secrets at rest: EncryptedStore over the real SQLite store, and kube's config validation."""

from __future__ import annotations

import asyncio
import base64
import os
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from nacl.secret import SecretBox

from fleetplane.storage.encryption import (
    DecryptError,
    EncryptedStore,
    EncryptionConfig,
    EncryptionConfigError,
    load_encryption_config,
    parse_encryption_config,
)
from fleetplane.storage.interface import EventType, RevisionMismatchError, StorageError, Store
from fleetplane.storage.sqlite import SQLiteStore

SECRET = "/core/secrets/root/default/db-password"
CONFIGMAP = "/core/configmaps/root/default/settings"
PLAIN = b'{"kind":"Secret","data":{"password":"aHVudGVyMg=="},"metadata":{"name":"db-password"}}'
NEEDLE = b"aHVudGVyMg=="


def key(n: int = 32) -> str:
    return base64.b64encode(os.urandom(n)).decode()


def config(*providers: dict[str, Any], resources: tuple[str, ...] = ("secrets",)) -> dict[str, Any]:
    return {"apiVersion": "apiserver.config.k8s.io/v1", "kind": "EncryptionConfiguration",
            "resources": [{"resources": list(resources), "providers": list(providers)}]}


def aes(kind: str, *keys: tuple[str, str]) -> dict[str, Any]:
    return {kind: {"keys": [{"name": n, "secret": s} for n, s in keys]}}


IDENTITY: dict[str, Any] = {"identity": {}}


class Hub:
    """One SQLite file, opened as often as a test restarts the hub with another config."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.inner: SQLiteStore | None = None
        self.store: EncryptedStore | None = None

    async def open(self, doc: dict[str, Any]) -> EncryptedStore:
        await self.close()
        self.inner = SQLiteStore(self.path)
        self.store = EncryptedStore(self.inner, parse_encryption_config(doc))
        await self.store.start()
        return self.store

    async def close(self) -> None:
        if self.store is not None:
            await self.store.close()
            self.store = None

    def raw(self, key: str) -> bytes:
        with sqlite3.connect(self.path) as conn:
            return conn.execute("SELECT value FROM kv WHERE key=?", (key,)).fetchone()[0]

    def file_bytes(self) -> bytes:
        """Every value in kv and the change log, as SQLite holds them."""
        with sqlite3.connect(self.path) as conn:
            rows = conn.execute("SELECT value FROM kv UNION ALL SELECT value FROM log").fetchall()
        return b"\n".join(r[0] for r in rows)


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[Hub]:
    h = Hub(tmp_path / "hub.db")
    yield h
    await h.close()


# -- round trips ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind,size,prefix", [
    ("aesgcm", 32, b"k8s:enc:aesgcm:v1:k1:"),
    ("aesgcm", 16, b"k8s:enc:aesgcm:v1:k1:"),
    ("aescbc", 24, b"k8s:enc:aescbc:v1:k1:"),
    ("secretbox", 32, b"k8s:enc:secretbox:v1:k1:"),
])
async def test_round_trip_keeps_plaintext_off_disk(hub: Hub, kind: str, size: int, prefix: bytes) -> None:
    s: Store = await hub.open(config(aes(kind, ("k1", key(size)))))  # the whole Store protocol
    rev = await s.create(SECRET, PLAIN)
    await s.create(CONFIGMAP, b'{"data":{"plain":"yes"}}')
    kv = await s.get(SECRET)
    assert kv is not None and kv.value == PLAIN and kv.mod_revision == rev
    rev2 = await s.update(SECRET, PLAIN.replace(b"db-password", b"db-password2"), rev)
    kvs, _ = await s.range("/core/")
    assert [k.value for k in kvs] == [b'{"data":{"plain":"yes"}}', PLAIN.replace(b"db-password", b"db-password2")]
    assert hub.raw(SECRET).startswith(prefix)
    assert hub.raw(CONFIGMAP) == b'{"data":{"plain":"yes"}}'  # not named by the config: stored as is
    await s.delete(SECRET, rev2)
    on_disk = hub.file_bytes()
    assert NEEDLE not in on_disk and b"db-password" not in on_disk  # neither in kv nor in the log


async def test_identity_stores_plain_bytes(hub: Hub) -> None:
    s = await hub.open(config(IDENTITY))
    await s.create(SECRET, PLAIN)
    assert hub.raw(SECRET) == PLAIN
    assert (await s.get(SECRET)).value == PLAIN  # type: ignore[union-attr]


async def test_watch_events_are_decrypted_including_deletes_and_history(hub: Hub) -> None:
    s = await hub.open(config(aes("aesgcm", ("k1", key()))))
    r1 = await s.create(SECRET, PLAIN)
    r2 = await s.update(SECRET, PLAIN + b" ", r1)
    await s.delete(SECRET, r2)
    # from r1: history replayed from the log table, then live events
    events = []
    watch = s.watch("/", r1)
    async for ev in watch:
        events.append(ev)
        if len(events) == 3:
            r4 = await s.create(SECRET, b'{"v":4}')
        if len(events) == 4:
            break
    await watch.aclose()  # type: ignore[attr-defined]
    assert [(e.type, e.value) for e in events] == [
        (EventType.PUT, PLAIN), (EventType.PUT, PLAIN + b" "), (EventType.DELETE, PLAIN + b" "), (EventType.PUT, b'{"v":4}')]
    assert events[3].revision == r4


async def test_conflicts_report_the_current_value_decrypted(hub: Hub) -> None:
    s = await hub.open(config(aes("secretbox", ("k1", key()))))
    r1 = await s.create(SECRET, PLAIN)
    await s.update(SECRET, b'{"v":2}', r1)
    with pytest.raises(RevisionMismatchError) as exc:
        await s.update(SECRET, b'{"v":3}', r1)
    assert exc.value.current is not None and exc.value.current.value == b'{"v":2}'
    with pytest.raises(RevisionMismatchError) as exc:
        await s.delete(SECRET, r1)
    assert exc.value.current is not None and exc.value.current.value == b'{"v":2}'


async def test_aesgcm_value_moved_to_another_key_does_not_decrypt(hub: Hub) -> None:
    s = await hub.open(config(aes("aesgcm", ("k1", key()))))
    await s.create(SECRET, PLAIN)
    assert hub.inner is not None
    other = "/core/secrets/other-cluster/default/db-password"
    await hub.inner.create(other, hub.raw(SECRET))  # an attacker with write access to the store
    with pytest.raises(DecryptError) as exc:
        await s.get(other)
    assert isinstance(exc.value, StorageError)
    assert str(exc.value) == f'unable to transform key "{other}": cipher: message authentication failed'
    assert "hunter" not in str(exc.value) and "aHVu" not in str(exc.value)


async def test_wrong_key_fails_naming_the_key_never_the_value(hub: Hub) -> None:
    s = await hub.open(config(aes("aescbc", ("k1", key()))))
    await s.create(SECRET, PLAIN)
    s = await hub.open(config(aes("aescbc", ("k1", key()))))  # same name, other secret
    with pytest.raises(DecryptError) as exc:
        await s.get(SECRET)
    assert SECRET in str(exc.value) and NEEDLE.decode() not in str(exc.value)
    s = await hub.open(config(aes("aescbc", ("k2", key()))))  # the key is gone
    with pytest.raises(DecryptError, match="no matching key was found for the provided AES transformer"):
        await s.get(SECRET)
    s = await hub.open(config(aes("secretbox", ("k1", key()))))  # the provider is gone
    with pytest.raises(DecryptError, match="no matching prefix found"):
        await s.range("/")


async def test_plain_values_read_only_where_identity_is_listed(hub: Hub) -> None:
    s = await hub.open(config(IDENTITY))
    await s.create(SECRET, PLAIN)
    s = await hub.open(config(aes("aesgcm", ("k1", key()))))  # as in kube: identity not listed
    with pytest.raises(DecryptError, match="no matching prefix found"):
        await s.get(SECRET)
    k1 = key()
    s = await hub.open(config(aes("aesgcm", ("k1", k1)), IDENTITY))
    assert (await s.get(SECRET)).value == PLAIN  # type: ignore[union-attr]
    assert await s.rewrite_stale() == 1
    assert hub.raw(SECRET).startswith(b"k8s:enc:aesgcm:v1:k1:")
    assert await s.rewrite_stale() == 0
    s = await hub.open(config(aes("aesgcm", ("k1", k1))))
    assert (await s.get(SECRET)).value == PLAIN  # type: ignore[union-attr]


async def test_turning_encryption_off(hub: Hub) -> None:
    k1 = key()
    s = await hub.open(config(aes("aesgcm", ("k1", k1))))
    await s.create(SECRET, PLAIN)
    s = await hub.open(config(IDENTITY, aes("aesgcm", ("k1", k1))))
    assert await s.rewrite_stale() == 1
    assert hub.raw(SECRET) == PLAIN


async def test_unnamed_resources_refuse_encrypted_values_as_kube_identity(hub: Hub) -> None:
    s = await hub.open(config(aes("aesgcm", ("k1", key()))))
    await s.create(SECRET, PLAIN)
    s = await hub.open(config(aes("aesgcm", ("k1", key())), resources=("configmaps",)))
    with pytest.raises(DecryptError, match="identity transformer tried to read encrypted data"):
        await s.get(SECRET)


# -- rotation ------------------------------------------------------------------------------------


async def test_key_rotation_as_kube_documents_it(hub: Hub) -> None:
    old, new = key(), key()
    s = await hub.open(config(aes("aesgcm", ("old", old))))
    keys = [f"/core/secrets/root/ns/s{i}" for i in range(5)]
    for i, k in enumerate(keys):
        await s.create(k, b'{"i":%d}' % i)
    # 1. the new key second: readable everywhere, writes still use the old one
    s = await hub.open(config(aes("aesgcm", ("old", old), ("new", new))))
    await s.create("/core/secrets/root/ns/t", b'{"t":1}')
    assert hub.raw("/core/secrets/root/ns/t").startswith(b"k8s:enc:aesgcm:v1:old:")
    assert await s.rewrite_stale() == 0
    # 2. the new key first: old values still read, the start-up rewrite moves them all
    s = await hub.open(config(aes("aesgcm", ("new", new), ("old", old))))
    assert [kv.value for kv in (await s.range("/core/secrets/root/ns/s"))[0]] == [b'{"i":%d}' % i for i in range(5)]
    assert await s.rewrite_stale("/core/secrets/") == 6
    assert all(hub.raw(k).startswith(b"k8s:enc:aesgcm:v1:new:") for k in [*keys, "/core/secrets/root/ns/t"])
    assert await s.rewrite_stale() == 0
    # 3. the old key removed
    s = await hub.open(config(aes("aesgcm", ("new", new))))
    assert [kv.value for kv in (await s.range("/core/secrets/root/ns/s"))[0]] == [b'{"i":%d}' % i for i in range(5)]


async def test_rotation_across_providers_via_a_second_entry(hub: Hub) -> None:
    cbc, gcm = key(), key()
    s = await hub.open(config(aes("aescbc", ("a", cbc))))
    await s.create(SECRET, PLAIN)
    s = await hub.open(config(aes("aesgcm", ("b", gcm)), aes("aescbc", ("a", cbc))))
    assert await s.rewrite_stale() == 1
    assert hub.raw(SECRET).startswith(b"k8s:enc:aesgcm:v1:b:")


class _RacingStore:
    """The inner store, where another writer updates ``key`` right after a range."""

    def __init__(self, inner: SQLiteStore, outer: list[EncryptedStore], key: str) -> None:
        self._inner, self._outer, self._key = inner, outer, key

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def range(self, prefix: str) -> Any:
        result = await self._inner.range(prefix)
        kv = await self._outer[0].get(self._key)
        assert kv is not None
        await self._outer[0].update(self._key, b'{"raced":true}', kv.mod_revision)
        return result


async def test_rewrite_skips_keys_written_meanwhile(hub: Hub) -> None:
    old, new = key(), key()
    s = await hub.open(config(aes("aesgcm", ("old", old))))
    await s.create("/core/secrets/root/ns/a", b'{"a":1}')
    await s.create("/core/secrets/root/ns/b", b'{"b":1}')
    await s.close()
    inner = SQLiteStore(hub.path)
    await inner.start()
    cfg = parse_encryption_config(config(aes("aesgcm", ("new", new), ("old", old))))
    outer: list[EncryptedStore] = [EncryptedStore(inner, cfg)]
    racing = EncryptedStore(_RacingStore(inner, outer, "/core/secrets/root/ns/a"), cfg)  # type: ignore[arg-type]
    try:
        assert await racing.rewrite_stale() == 1  # "a" was rewritten by the other writer: skipped
        assert (await outer[0].get("/core/secrets/root/ns/a")).value == b'{"raced":true}'  # type: ignore[union-attr]
        assert hub.raw("/core/secrets/root/ns/a").startswith(b"k8s:enc:aesgcm:v1:new:")
        assert hub.raw("/core/secrets/root/ns/b").startswith(b"k8s:enc:aesgcm:v1:new:")
    finally:
        await inner.close()


async def test_rewrite_of_many_values_in_batches(hub: Hub) -> None:
    old, new = key(), key()
    s = await hub.open(config(aes("secretbox", ("old", old)), resources=("*.",)))
    await asyncio.gather(*(s.create(f"/core/configmaps/root/ns/c{i:04d}", b'{"i":%d}' % i) for i in range(600)))
    s = await hub.open(config(aes("secretbox", ("new", new), ("old", old)), resources=("*.",)))
    assert await s.rewrite_stale() == 600
    s = await hub.open(config(aes("secretbox", ("new", new)), resources=("*.",)))
    kvs, _ = await s.range("/core/configmaps/")  # over the threshold: decrypted off the loop
    assert len(kvs) == 600 and kvs[0].value == b'{"i":0}'


# -- kube's value layouts, built independently ---------------------------------------------------


def _store_with(cfg: dict[str, Any]) -> EncryptedStore:
    return EncryptedStore(None, parse_encryption_config(cfg))  # type: ignore[arg-type]


def test_values_written_as_kube_writes_them_are_read() -> None:
    raw = os.urandom(32)
    secret = base64.b64encode(raw).decode()
    aad = SECRET.encode()
    nonce = os.urandom(12)
    gcm = b"k8s:enc:aesgcm:v1:k:" + nonce + AESGCM(raw).encrypt(nonce, PLAIN, aad)
    iv = os.urandom(16)
    padder = padding.PKCS7(128).padder()
    enc = Cipher(algorithms.AES(raw), modes.CBC(iv)).encryptor()
    cbc = b"k8s:enc:aescbc:v1:k:" + iv + enc.update(padder.update(PLAIN) + padder.finalize()) + enc.finalize()
    box = b"k8s:enc:secretbox:v1:k:" + bytes(SecretBox(raw).encrypt(PLAIN, os.urandom(24)))
    store = _store_with(config(aes("aesgcm", ("k", secret)), aes("aescbc", ("k", secret)), aes("secretbox", ("k", secret))))
    for value in (gcm, cbc, box):
        assert store._open(SECRET, value) == (PLAIN, value is not gcm)
    # and what it writes is that layout: nonce, then AES-GCM of the storage key
    sealed = store._seal(SECRET, PLAIN)
    body = sealed.removeprefix(b"k8s:enc:aesgcm:v1:k:")
    assert AESGCM(raw).decrypt(body[:12], body[12:], aad) == PLAIN


def test_lookup_order_exact_then_group_wildcard_then_everything() -> None:
    k1, k2, k3 = key(), key(), key()
    cfg = parse_encryption_config({
        "apiVersion": "apiserver.config.k8s.io/v1", "kind": "EncryptionConfiguration",
        "resources": [
            {"resources": ["events"], "providers": [IDENTITY]},
            {"resources": ["secrets", "deployments.apps"], "providers": [aes("aesgcm", ("k1", k1))]},
            {"resources": ["*.apps"], "providers": [aes("aescbc", ("k2", k2))]},
            {"resources": ["*.*"], "providers": [aes("secretbox", ("k3", k3))]},
        ]})
    store = EncryptedStore(None, cfg)  # type: ignore[arg-type]
    def head(value: bytes) -> bytes:  # k8s:enc:<provider>:v1:<key>:
        return b":".join(value.split(b":")[:5]) + b":" if value.startswith(b"k8s:enc:") else value

    sealed = {k: head(store._seal(k, b"{}")) for k in (
        "/core/secrets/c/ns/a", "/apps/deployments/c/ns/a", "/apps/replicasets/c/ns/a",
        "/core/events/c/ns/a", "/example.com/widgets/c/w", "/core/configmaps/c/ns/a")}
    assert sealed == {
        "/core/secrets/c/ns/a": b"k8s:enc:aesgcm:v1:k1:",
        "/apps/deployments/c/ns/a": b"k8s:enc:aesgcm:v1:k1:",
        "/apps/replicasets/c/ns/a": b"k8s:enc:aescbc:v1:k2:",
        "/core/events/c/ns/a": b"{}",
        "/example.com/widgets/c/w": b"k8s:enc:secretbox:v1:k3:",  # a CRD created later: *.*
        "/core/configmaps/c/ns/a": b"k8s:enc:secretbox:v1:k3:",
    }
    assert store.transformer("/weird") is None and store.transformer("/a/") is None


def test_a_resource_in_two_entries_gets_both_entries_providers() -> None:
    k1, k2 = key(), key()
    first = _store_with(config(aes("aesgcm", ("k2", k2))))
    value = first._seal(SECRET, PLAIN)
    both = parse_encryption_config({
        "apiVersion": "apiserver.config.k8s.io/v1", "kind": "EncryptionConfiguration",
        "resources": [{"resources": ["secrets"], "providers": [aes("aesgcm", ("k1", k1))]},
                      {"resources": ["secrets"], "providers": [aes("aesgcm", ("k2", k2))]}]})
    store = EncryptedStore(None, both)  # type: ignore[arg-type]
    assert store._open(SECRET, value) == (PLAIN, True)  # read by the second entry's key: stale
    assert store._seal(SECRET, PLAIN).startswith(b"k8s:enc:aesgcm:v1:k1:")


# -- the configuration file ----------------------------------------------------------------------


def _error(doc: dict[str, Any]) -> str:
    with pytest.raises(EncryptionConfigError) as exc:
        parse_encryption_config(doc)
    return str(exc.value)


def test_load_from_file(tmp_path: Path) -> None:
    path = tmp_path / "enc.yaml"
    path.write_text(yaml.safe_dump(config(aes("aesgcm", ("k1", key())), IDENTITY)))
    cfg = load_encryption_config(path)
    assert isinstance(cfg, EncryptionConfig)
    assert [p.kind for p in cfg.resources[0].providers] == ["aesgcm", "identity"]
    assert "secret=" not in repr(cfg)
    (tmp_path / "empty.yaml").write_text("")
    with pytest.raises(EncryptionConfigError, match="is empty"):
        load_encryption_config(tmp_path / "empty.yaml")
    with pytest.raises(EncryptionConfigError, match="error reading encryption provider configuration file"):
        load_encryption_config(tmp_path / "missing.yaml")
    (tmp_path / "bad.yaml").write_text("resources: [\n  secret: c2VjcmV0\n")
    with pytest.raises(EncryptionConfigError) as exc:
        load_encryption_config(tmp_path / "bad.yaml")
    assert "c2VjcmV0" not in str(exc.value)


@pytest.mark.parametrize("kind,size,sizes", [
    ("aesgcm", 8, "[16 24 32]"), ("aescbc", 31, "[16 24 32]"), ("secretbox", 16, "[32]"), ("secretbox", 24, "[32]")])
def test_key_lengths(kind: str, size: int, sizes: str) -> None:
    secret = key(size)
    msg = _error(config(aes(kind, ("k1", secret))))
    assert msg == (f'error while parsing file: resources[0].providers[0].{kind}.keys[0].secret: Invalid value: "REDACTED": '
                   f"secret is not of the expected length, got {size}, expected one of {sizes}")
    assert secret not in msg


@pytest.mark.parametrize("doc,message", [
    (config({"aesgcm": {"keys": [{"name": "k", "secret": key()}]}, "identity": {}}),
     'resources[0].providers[0]: Invalid value: ["aesgcm","identity"]: more than one provider specified in a single '
     "element, should split into different list elements"),
    (config({"aesgcmm": {}}),
     'resources[0].providers[0]: Invalid value: ["aesgcmm"]: provider does not contain any of the expected providers: '
     "KMS, AESGCM, AESCBC, Secretbox, Identity"),
    (config({"kms": {"apiVersion": "v2", "name": "vault", "endpoint": "unix:///kms.sock"}}),
     "resources[0].providers[0].kms: Forbidden: KMS providers are not supported by fleetplane: use aesgcm, aescbc or secretbox"),
    (config({"aesgcm": {"keys": []}}),
     "resources[0].providers[0].aesgcm.keys: Required value: at least one keys is required"),
    (config({"secretbox": {"keys": [{"name": "k", "secret": "not base64!"}]}}),
     'resources[0].providers[0].secretbox.keys[0].secret: Invalid value: "REDACTED": secrets must be base64 encoded'),
    (config({"aescbc": {"keys": [{"secret": key()}]}}),
     "resources[0].providers[0].aescbc.keys[0].name: Required value: name is a mandatory field for a key"),
    (config({"aescbc": {"keys": [{"name": "k"}]}}),
     "resources[0].providers[0].aescbc.keys[0].secret: Required value: secret is a mandatory field for a key"),
    (config(IDENTITY, resources=("secrets", "*.")),
     'resources[0].resources: Invalid value: ["secrets","*."]: using overlapping resources such as \'secrets\' and '
     "'*.' in the same resource list is not allowed as they will be masked"),
    (config(IDENTITY, resources=("secrets", "secrets")),
     'resources[0].resources: Invalid value: ["secrets","secrets"]: the same resource cannot be specified multiple times'),
    (config(IDENTITY, resources=("*.*", "deployments.apps")),
     'resources[0].resources: Invalid value: ["*.*","deployments.apps"]: using overlapping resources such as '
     "'secrets' and '*.' in the same resource list is not allowed as they will be masked"),
    (config(IDENTITY, resources=("*",)),
     "resources[0].resources[0]: Invalid value: \"*\": use '*.' to encrypt all the resources from core API group or "
     "*.* to encrypt all resources"),
    (config(IDENTITY, resources=("Secrets",)),
     'resources[0].resources[0]: Invalid value: "Secrets": resource name should not contain capital letters'),
    (config(IDENTITY, resources=("secrets.*",)),
     'resources[0].resources[0]: Invalid value: "secrets.*": encrypting the same resource across groups is not supported'),
    (config(IDENTITY, resources=("events.events.k8s.io",)),
     "resources[0].resources[0]: Invalid value: \"events.events.k8s.io\": '*.events.k8s.io' objects are stored using "
     "the 'events' API group in etcd. Use 'events' instead in the config file"),
    (config(IDENTITY, resources=()),
     "resources[0].resources: Required value: at least one resources[0].resources is required"),
    (config(resources=("secrets",)),
     "resources[0].providers: Required value: at least one resources[0].providers is required"),
])
def test_invalid_configs_refused_with_kubes_messages(doc: dict[str, Any], message: str) -> None:
    assert _error(doc) == f"error while parsing file: {message}"


def test_several_errors_are_aggregated() -> None:
    msg = _error(config(aes("aesgcm", ("a", key(5)), ("b", key(7)))))
    assert msg.startswith("error while parsing file: [resources[0].providers[0].aesgcm.keys[0].secret")
    assert "got 5" in msg and "got 7" in msg and msg.endswith("]")


@pytest.mark.parametrize("first,second,masked,by", [
    ("*.", "secrets", "secrets", "*."),
    ("*.apps", "deployments.apps", "deployments.apps", "*.apps"),
    ("*.*", "secrets", "secrets", "*.*"),
    ("*.*", "*.apps", "*.apps", "*.*"),
])
def test_rules_masked_by_earlier_wildcards(first: str, second: str, masked: str, by: str) -> None:
    entries: list[dict[str, Any]] = [{"resources": [first], "providers": [IDENTITY]},
                                     {"resources": [second], "providers": [IDENTITY]}]
    doc = {"apiVersion": "apiserver.config.k8s.io/v1", "kind": "EncryptionConfiguration", "resources": entries}
    assert _error(doc) == f'error while building transformers: resource "{masked}" is masked by earlier rule "{by}"'
    # the other way round is fine: the specific rule wins
    parse_encryption_config({**doc, "resources": entries[::-1]})


def test_wrong_kind_or_version() -> None:
    doc = config(IDENTITY)
    doc["apiVersion"] = "apiserver.config.k8s.io/v1beta1"
    assert "got unexpected config type" in _error(doc)
    assert "resources: Required value" in _error({**config(IDENTITY), "resources": []})
