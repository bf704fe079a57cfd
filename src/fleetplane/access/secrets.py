"""Secret-based access (KEP-4322 "Push Model via Credentials in Secret"; now listed as an alternative).

The KEP's Secret format:

* the Secret lives in a namespace labelled ``x-k8s.io/cluster-inventory-consumer=<consumer name>``;
* it carries ``x-k8s.io/cluster-profile=<ClusterProfile name>``;
* it may carry ``x-k8s.io/cluster-profile-namespace=<ClusterProfile namespace>``; without it the
  profile is assumed to be in ``default``;
* its data key ``Config`` holds a kubeconfig (``config`` is accepted too: the unmerged upstream
  library and several adopters use the lowercase key).

Exactly one Secret must match; zero or several is a :class:`SecretAccessError` naming the consumer
and the profile. ``placement="secret"`` additionally (or, with ``"secret"`` only, instead) accepts the
multicluster-runtime variant where the consumer label sits on a Secret in the profile's namespace.

The hub is reached through whatever the caller passes: a ``kubernetes_asyncio`` or ``kubernetes``
``CoreV1Api``/``ApiClient``, or any object implementing :class:`HubReader`.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from .errors import SecretAccessError

LABEL_CONSUMER = "x-k8s.io/cluster-inventory-consumer"
LABEL_PROFILE = "x-k8s.io/cluster-profile"
LABEL_PROFILE_NAMESPACE = "x-k8s.io/cluster-profile-namespace"
DATA_KEYS = ("Config", "config")
DEFAULT_PROFILE_NAMESPACE = "default"


@runtime_checkable
class HubReader(Protocol):
    """The two hub reads secret-based access needs; objects are plain dicts (API JSON)."""

    async def list_namespaces(self, label_selector: str) -> list[dict[str, Any]]: ...

    async def list_secrets(self, namespace: str | None, label_selector: str) -> list[dict[str, Any]]:
        """``namespace=None`` lists across all namespaces."""
        ...


@dataclass(frozen=True)
class SecretKubeconfig:
    """The kubeconfig found for (consumer, profile). ``repr()`` does not show the kubeconfig."""

    secret_namespace: str
    secret_name: str
    data_key: str
    kubeconfig: dict[str, Any] = field(repr=False, compare=False)

    def new_kubernetes_api_client(self, context: str | None = None):
        """A ``kubernetes`` (sync) ApiClient built from the kubeconfig."""
        from kubernetes import config

        return config.new_client_from_config_dict(self.kubeconfig, context=context)

    async def new_kubernetes_asyncio_client(self, context: str | None = None):
        from kubernetes_asyncio import config

        return await config.new_client_from_config_dict(self.kubeconfig, context=context)


def _selector(labels: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in labels.items())


class _AsyncCoreV1Reader:
    def __init__(self, core: Any) -> None:
        self.core = core

    async def list_namespaces(self, label_selector: str) -> list[dict[str, Any]]:
        res = await self.core.list_namespace(label_selector=label_selector)
        return self.core.api_client.sanitize_for_serialization(res).get("items") or []

    async def list_secrets(self, namespace: str | None, label_selector: str) -> list[dict[str, Any]]:
        if namespace is None:
            res = await self.core.list_secret_for_all_namespaces(label_selector=label_selector)
        else:
            res = await self.core.list_namespaced_secret(namespace, label_selector=label_selector)
        return self.core.api_client.sanitize_for_serialization(res).get("items") or []


class _SyncCoreV1Reader:
    def __init__(self, core: Any) -> None:
        self.core = core

    async def list_namespaces(self, label_selector: str) -> list[dict[str, Any]]:
        res = await asyncio.to_thread(self.core.list_namespace, label_selector=label_selector)
        return self.core.api_client.sanitize_for_serialization(res).get("items") or []

    async def list_secrets(self, namespace: str | None, label_selector: str) -> list[dict[str, Any]]:
        if namespace is None:
            res = await asyncio.to_thread(
                self.core.list_secret_for_all_namespaces, label_selector=label_selector
            )
        else:
            res = await asyncio.to_thread(
                self.core.list_namespaced_secret, namespace, label_selector=label_selector
            )
        return self.core.api_client.sanitize_for_serialization(res).get("items") or []


def hub_reader(client: Any) -> HubReader:
    """Adapt a ``kubernetes_asyncio``/``kubernetes`` CoreV1Api or ApiClient (or a HubReader) to :class:`HubReader`."""
    if isinstance(client, HubReader):
        return client
    mod = type(client).__module__
    if mod.startswith("kubernetes_asyncio."):
        if not hasattr(client, "list_namespace"):
            from kubernetes_asyncio.client import CoreV1Api

            client = CoreV1Api(client)
        return _AsyncCoreV1Reader(client)
    if mod.startswith("kubernetes."):
        if not hasattr(client, "list_namespace"):
            from kubernetes.client import CoreV1Api as SyncCoreV1Api

            client = SyncCoreV1Api(client)
        return _SyncCoreV1Reader(client)
    raise TypeError(
        f"unsupported hub client {type(client).__name__}: pass a kubernetes(_asyncio) CoreV1Api/ApiClient or a HubReader"
    )


def _profile_ref(profile: Mapping[str, Any] | tuple[str | None, str]) -> tuple[str, str]:
    ns: str | None
    name: str | None
    if isinstance(profile, tuple):
        ns, name = profile
    else:
        md = profile.get("metadata") or {}
        ns, name = md.get("namespace"), md.get("name")
    if not name:
        raise SecretAccessError("the ClusterProfile has no name")
    return ns or DEFAULT_PROFILE_NAMESPACE, name


def _matches_namespace(secret: Mapping[str, Any], profile_ns: str) -> bool:
    labels = (secret.get("metadata") or {}).get("labels") or {}
    if LABEL_PROFILE_NAMESPACE in labels:
        return labels[LABEL_PROFILE_NAMESPACE] == profile_ns
    return profile_ns == DEFAULT_PROFILE_NAMESPACE


async def find_secret_kubeconfig(
    hub: Any,
    consumer: str,
    profile: Mapping[str, Any] | tuple[str | None, str],
    *,
    placement: Literal["namespace", "secret", "both"] = "namespace",
) -> SecretKubeconfig:
    """Find the (single) Secret holding the kubeconfig of ``profile`` for ``consumer``.

    ``profile`` is a ClusterProfile dict or a ``(namespace, name)`` pair. ``placement``: where the
    consumer label is looked for: on namespaces (the KEP), on Secrets in the profile's namespace
    (multicluster-runtime), or both.
    """
    if not consumer:
        raise SecretAccessError("a consumer name is required for secret-based access")
    reader = hub_reader(hub)
    cp_ns, cp_name = _profile_ref(profile)
    what = f'ClusterProfile "{cp_ns}/{cp_name}" and consumer "{consumer}"'
    candidates: dict[tuple[str, str], dict[str, Any]] = {}
    searched: list[str] = []

    if placement in ("namespace", "both"):
        namespaces = await reader.list_namespaces(_selector({LABEL_CONSUMER: consumer}))
        searched.append(f"namespaces labelled {LABEL_CONSUMER}={consumer}: {len(namespaces)}")
        sel = _selector({LABEL_PROFILE: cp_name})
        for ns in namespaces:
            ns_name = (ns.get("metadata") or {}).get("name")
            if not ns_name:
                continue
            for s in await reader.list_secrets(ns_name, sel):
                if _matches_namespace(s, cp_ns):
                    md = s.get("metadata") or {}
                    candidates[(md.get("namespace") or ns_name, md.get("name") or "")] = s
    if placement in ("secret", "both"):
        sel = _selector({LABEL_CONSUMER: consumer, LABEL_PROFILE: cp_name})
        found = await reader.list_secrets(cp_ns, sel)
        searched.append(f"secrets in {cp_ns} labelled {sel}: {len(found)}")
        for s in found:
            md = s.get("metadata") or {}
            labels = md.get("labels") or {}
            if labels.get(LABEL_PROFILE_NAMESPACE, cp_ns) == cp_ns:
                candidates[(md.get("namespace") or cp_ns, md.get("name") or "")] = s

    if not candidates:
        raise SecretAccessError(f"no secret found for {what} ({'; '.join(searched)})")
    if len(candidates) > 1:
        names = ", ".join(f"{ns}/{n}" for ns, n in sorted(candidates))
        raise SecretAccessError(f"multiple secrets found for {what}: {names}; expected exactly one")
    (s_ns, s_name), secret = next(iter(candidates.items()))
    return _kubeconfig_from_secret(secret, s_ns, s_name)


def _kubeconfig_from_secret(secret: Mapping[str, Any], ns: str, name: str) -> SecretKubeconfig:
    data = secret.get("data") or {}
    string_data = secret.get("stringData") or {}
    raw: bytes | None = None
    key_used = None
    for key in DATA_KEYS:
        if data.get(key):
            try:
                raw = base64.b64decode(data[key], validate=False)
            except (binascii.Error, ValueError):
                raise SecretAccessError(f"secret {ns}/{name}: data key {key!r} is not valid base64") from None
            key_used = key
            break
        if string_data.get(key):
            raw, key_used = string_data[key].encode(), key
            break
    if raw is None or key_used is None:  # set together above
        raise SecretAccessError(
            f"secret {ns}/{name} does not contain a kubeconfig under key {DATA_KEYS[0]!r} (or {DATA_KEYS[1]!r})"
        )
    import yaml

    try:
        kc = yaml.safe_load(raw)
    except yaml.YAMLError:
        raise SecretAccessError(
            f"secret {ns}/{name}: key {key_used!r} is not a valid kubeconfig (YAML/JSON)"
        ) from None
    if not isinstance(kc, dict) or not isinstance(kc.get("clusters"), list):
        raise SecretAccessError(
            f"secret {ns}/{name}: key {key_used!r} is not a kubeconfig (no clusters list)"
        )
    return SecretKubeconfig(secret_namespace=ns, secret_name=name, data_key=key_used, kubeconfig=kc)


def find_secret_kubeconfig_sync(
    hub: Any,
    consumer: str,
    profile: Mapping[str, Any] | tuple[str | None, str],
    *,
    placement: Literal["namespace", "secret", "both"] = "namespace",
) -> SecretKubeconfig:
    """Blocking variant (for the sync ``kubernetes`` client; not callable from a running loop)."""
    return asyncio.run(find_secret_kubeconfig(hub, consumer, profile, placement=placement))
