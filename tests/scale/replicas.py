"""Hub replicas on a shared etcd: real etcd processes, real ``fleetplane start`` processes."""

from __future__ import annotations

import contextlib
import http.client
import json
import shutil
import socket
import threading
from pathlib import Path
from typing import Any

from ..harness import Hub
from ..storage.etcd_server import EtcdCluster, require_etcd

__all__ = ["EtcdCluster", "Watch", "configmap", "replica", "require_etcd", "start_replicas", "stop_all"]


def etcd_args(endpoints: str, timeout: float = 3.0) -> list[str]:
    return ["--storage", "etcd", "--etcd-endpoints", endpoints, "--etcd-request-timeout", str(timeout)]


def share_credentials(src: Path, dst: Path) -> None:
    """Replicas serve one API: the same CA (each signs its own serving certificate) and token."""
    (dst / "pki").mkdir(parents=True, exist_ok=True)
    for name in ("pki/ca.crt", "pki/ca.key", "pki/client-ca.crt", "pki/client-ca.key", "pki/service-account.key", "admin.token"):
        shutil.copy2(src / name, dst / name)


def replica(base: Path, index: int, endpoints: str, first: Hub | None = None, extra: list[str] | None = None,
            timeout: float = 3.0) -> Hub:
    d = base / f"replica-{index}"
    if first is not None:
        share_credentials(first.data_dir, d)
    return Hub(d, extra=[*etcd_args(endpoints, timeout), *(extra or [])])


def start_replicas(base: Path, endpoints: str, n: int, extra: list[str] | None = None, timeout: float = 3.0) -> list[Hub]:
    first = replica(base, 0, endpoints, extra=extra, timeout=timeout).start()
    hubs = [first]
    for i in range(1, n):
        hubs.append(replica(base, i, endpoints, first, extra, timeout).start())
    return hubs


def stop_all(hubs: list[Hub]) -> None:
    for h in hubs:
        if h.proc is not None:
            h.stop()


class Watch:
    """A raw watch stream read by a thread: ``events`` fills up, ``ended`` is set at EOF."""

    def __init__(self, hub: Hub, path: str) -> None:
        self.events: list[dict[str, Any]] = []
        self.ended = threading.Event()
        self.error: BaseException | None = None
        self.status = 0
        self._conn = http.client.HTTPSConnection("127.0.0.1", hub.port, context=hub.ssl_context(), timeout=60)
        self._conn.request("GET", path, headers={"Authorization": f"Bearer {hub.token}"})
        self._resp = self._conn.getresponse()
        self.status = self._resp.status
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            while True:
                line = self._resp.readline()
                if not line:
                    break
                if line.strip():
                    self.events.append(json.loads(line))
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            self.error = exc
        finally:
            self.ended.set()

    def names(self, etype: str | None = None) -> list[str]:
        return [e["object"]["metadata"].get("name", "") for e in self.events if etype is None or e["type"] == etype]

    def close(self) -> None:
        sock = self._conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(5)
        with contextlib.suppress(Exception):
            self._conn.close()


def configmap(name: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": dict(data)}
