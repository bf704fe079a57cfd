"""Open a store from a URL: ``sqlite:PATH`` or ``etcd:URL[,URL...]``.

etcd URLs may carry TLS and timeout options as a query string after the last endpoint, e.g.
``etcd:https://10.0.0.1:2379,https://10.0.0.2:2379?cacert=/etc/etcd/ca.crt&cert=/etc/etcd/client.crt&key=/etc/etcd/client.key``;
keyword arguments to :func:`open_store` do the same and win over the query string.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qsl

from .interface import Store

SCHEMES = ("sqlite", "etcd")


def split_url(url: str) -> tuple[str, str, dict[str, str]]:
    """``(scheme, rest, options)``; a bare path is ``sqlite``."""
    scheme, sep, rest = url.partition(":")
    if not sep or scheme not in SCHEMES:
        return "sqlite", url, {}
    options: dict[str, str] = {}
    if scheme == "etcd" and "?" in rest:
        rest, query = rest.split("?", 1)
        options = dict(parse_qsl(query, keep_blank_values=False))
    return scheme, rest, options


def open_store(url: str, *, cacert: str | None = None, cert: str | None = None, key: str | None = None,
               timeout: float | None = None) -> Store:
    """A store for ``url`` (not started: call ``await store.start()``)."""
    scheme, rest, options = split_url(url)
    if scheme == "sqlite":
        if not rest:
            raise ValueError("sqlite: needs a path, as in sqlite:/var/lib/fleetplane/hub.db")
        from .sqlite import SQLiteStore

        Path(rest).parent.mkdir(parents=True, exist_ok=True)
        return SQLiteStore(rest)
    unknown = set(options) - {"cacert", "cert", "key", "timeout"}
    if unknown:
        raise ValueError(f"unknown etcd option(s): {', '.join(sorted(unknown))}")
    from .etcd import EtcdStore

    t = timeout if timeout is not None else float(options.get("timeout", 5.0))
    return EtcdStore(rest.removeprefix("//"), cacert=cacert or options.get("cacert"), cert=cert or options.get("cert"),
                     key=key or options.get("key"), timeout=t)


def describe(url: str) -> str:
    """The URL without its options (for logs)."""
    scheme, rest, _ = split_url(url)
    return f"{scheme}:{rest}"
