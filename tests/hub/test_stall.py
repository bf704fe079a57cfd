"""A large write does not stall the event loop: small requests keep being answered while a
2 MiB, 150,000-key ConfigMap is created (and a large one sent as YAML)."""

from __future__ import annotations

import statistics
import threading
import time
import uuid

import orjson
import pytest
import yaml

from ..harness import Hub

KEYS = 150_000


#: YAML is decoded in Python, some 50 times slower than JSON: a smaller body, still large
YAML_KEYS = 20_000


def big_configmap(name: str, keys: int) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {f"k{i:06d}": "v" for i in range(keys)}}


class SmallGets:
    """A client GETting one small object over and over, recording each latency."""

    def __init__(self, hub: Hub, path: str) -> None:
        self.hub, self.path = hub, path
        self.latencies: list[float] = []
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        while not self._stop.is_set():
            t0 = time.monotonic()
            code, _, _ = self.hub.request("GET", self.path, timeout=60)
            self.latencies.append(time.monotonic() - t0)
            if code != 200:
                self.failures.append(str(code))

    def __enter__(self) -> SmallGets:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(60)


@pytest.mark.parametrize("content_type", ["application/json", "application/yaml"])
def test_small_gets_are_answered_while_a_large_configmap_is_written(hub, namespace, content_type):
    small = f"/api/v1/namespaces/{namespace}/configmaps/small"
    assert hub.json("POST", f"/api/v1/namespaces/{namespace}/configmaps",
                    {"metadata": {"name": "small"}, "data": {"a": "b"}})[0] == 201
    with SmallGets(hub, small) as alone:
        while len(alone.latencies) < 50:
            time.sleep(0.01)
    baseline = statistics.median(alone.latencies)
    name = "big-" + uuid.uuid4().hex[:6]
    keys = KEYS if content_type == "application/json" else YAML_KEYS
    cm = big_configmap(name, keys)
    body = orjson.dumps(cm) if content_type == "application/json" else yaml.safe_dump(cm).encode()
    assert len(body) > (2 * 1024 * 1024 - 300_000 if keys == KEYS else 250_000)
    with SmallGets(hub, small) as during:
        t0 = time.monotonic()
        code, _, raw = hub.request("POST", f"/api/v1/namespaces/{namespace}/configmaps", body,
                                   content_type=content_type, timeout=300)
        write_time = time.monotonic() - t0
        count = len(during.latencies)
    assert code == 201, raw[:300]
    assert len(orjson.loads(raw)["data"]) == keys
    assert not during.failures and not alone.failures
    stall = max(during.latencies[:count + 1]) - baseline
    # Before, the GET waited for the whole write (the loop was held 1.6-6 s): its stall was the
    # write's time. Now it is a fraction of it, on a loaded machine too.
    assert count >= 5, f"only {count} small GETs answered during a {write_time:.1f}s write"
    assert stall < 0.35 * write_time, f"a small GET stalled {stall * 1000:.0f} ms during a {write_time:.1f}s write"
    print(f"write {write_time:.2f}s, {count} GETs, baseline {baseline * 1000:.1f} ms, stall {stall * 1000:.0f} ms")
