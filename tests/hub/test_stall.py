"""A large write does not stall the event loop: a small GET waits less than 100 ms while a
2 MiB, 150,000-key ConfigMap is created (and a large one sent as YAML).

What a GET waits for is measured in the hub's own CPU time: the CPU its threads used while the
GET was in flight (from the kernel's per-thread accounting), capped by the GET's wall-clock time.
The hub's event loop is held only by work done in the hub, on the CPU: one thread keeping the
GIL through a long C call, a collector pass. On a quiet machine that CPU time is the GET's
latency; on a loaded one the wall-clock time also counts the time the kernel gave the CPU to
other processes, which no server can help, and the CPU time stays what the hub made the GET
wait. Each write is repeated and the median of the rounds' longest waits is held to the goal,
so one unlucky round on a busy machine does not fail the test; every round is printed."""

from __future__ import annotations

import statistics
import threading
import time
import uuid
from pathlib import Path

import orjson
import pytest
import yaml

from ..harness import Hub

KEYS = 150_000

#: YAML is decoded in Python, some 50 times slower than JSON: a smaller body, still large
YAML_KEYS = 20_000

ROUNDS = 3

#: the goal (issue 11): no small GET waits this long while the large object is written
GOAL = 0.100


def big_configmap(name: str, keys: int) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {f"k{i:06d}": "v" for i in range(keys)}}


def cpu_seconds(pid: int) -> float:
    """The CPU time every thread of process ``pid`` has run, in seconds (``schedstat``: ns)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread that ended meanwhile
    return total / 1e9


class SmallGets:
    """A client GETting one small object over and over, recording for each GET its wall-clock
    latency and the hub's CPU time meanwhile."""

    def __init__(self, hub: Hub, path: str) -> None:
        assert hub.proc is not None
        self.hub, self.path, self.pid = hub, path, hub.proc.pid
        self.samples: list[tuple[float, float]] = []  # (wall, hub CPU) seconds
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        while not self._stop.is_set():
            c0, t0 = cpu_seconds(self.pid), time.monotonic()
            code, _, _ = self.hub.request("GET", self.path, timeout=60)
            wall, cpu = time.monotonic() - t0, cpu_seconds(self.pid) - c0
            self.samples.append((wall, cpu))
            if code != 200:
                self.failures.append(str(code))

    @property
    def waits(self) -> list[float]:
        """What the hub made each GET wait: its CPU time meanwhile, at most the GET's latency."""
        return [min(wall, cpu) for wall, cpu in self.samples]

    def __enter__(self) -> SmallGets:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(60)


@pytest.mark.parametrize("content_type", ["application/json", "application/yaml"])
def test_small_gets_wait_under_100ms_while_a_large_configmap_is_written(hub, namespace, content_type):
    small = f"/api/v1/namespaces/{namespace}/configmaps/small"
    assert hub.json("POST", f"/api/v1/namespaces/{namespace}/configmaps",
                    {"metadata": {"name": "small"}, "data": {"a": "b"}})[0] == 201
    with SmallGets(hub, small) as alone:
        while len(alone.samples) < 50:
            time.sleep(0.01)
    baseline = statistics.median(alone.waits)
    keys = KEYS if content_type == "application/json" else YAML_KEYS
    rounds = []
    for _ in range(ROUNDS):
        cm = big_configmap("big-" + uuid.uuid4().hex[:6], keys)
        body = orjson.dumps(cm) if content_type == "application/json" else yaml.safe_dump(cm).encode()
        assert len(body) > (2 * 1024 * 1024 - 300_000 if keys == KEYS else 250_000)
        with SmallGets(hub, small) as during:
            t0 = time.monotonic()
            code, _, raw = hub.request("POST", f"/api/v1/namespaces/{namespace}/configmaps", body,
                                       content_type=content_type, timeout=300)
            write_time = time.monotonic() - t0
            count = len(during.samples)
        assert code == 201, raw[:300]
        assert len(orjson.loads(raw)["data"]) == keys
        assert not during.failures and not alone.failures
        # Held on the loop, a GET waited for the whole write (1.6-6 s): at least a handful are
        # answered during it, and none waited anywhere near the write's time.
        assert count >= 5, f"only {count} small GETs answered during a {write_time:.1f}s write"
        samples = during.samples[:count + 1]  # the GETs that overlapped the write
        longest_wall = max(wall for wall, _ in samples)
        assert longest_wall < 0.35 * write_time, f"a small GET took {longest_wall * 1000:.0f} ms during a {write_time:.1f}s write"
        rounds.append((max(during.waits[:count + 1]) - baseline, longest_wall, write_time, count))
    print(f"baseline {baseline * 1000:.1f} ms; rounds (longest wait, longest wall, write, GETs): "
          + ", ".join(f"{w * 1000:.0f} ms / {lw * 1000:.0f} ms / {t:.2f} s / {n}" for w, lw, t, n in rounds))
    longest = statistics.median(w for w, _, _, _ in rounds)
    assert longest < GOAL, f"a small GET waited {longest * 1000:.0f} ms (median of {ROUNDS} writes' longest waits) for the hub"
