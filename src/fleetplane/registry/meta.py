"""Server-owned metadata: uids, timestamps, generated names, the cluster annotation."""

from __future__ import annotations

import os
import random
import time
import uuid
from datetime import UTC, datetime

CLUSTER_ANNOTATION = "kcp.io/cluster"
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"


_stamp: tuple[int, str] = (0, "")


def now_rfc3339() -> str:
    """RFC 3339 in whole seconds with Z, as Go's metav1.Time marshals (formatted once a second)."""
    global _stamp
    second = int(time.time())
    if _stamp[0] != second:
        _stamp = (second, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second)))
    return _stamp[1]


def now_micro() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


_random = bytearray()


def new_uid() -> str:
    """A UUIDv4; random bytes are drawn 4 KiB at a time (one getrandom call per 256 uids)."""
    global _random
    if len(_random) < 16:
        _random = bytearray(os.urandom(4096))
    raw = bytes(_random[:16])
    del _random[:16]
    return str(uuid.UUID(bytes=raw, version=4))


def generate_name(prefix: str) -> str:
    """generateName + 5 random characters, the prefix cut to 58 (apiserver/pkg/storage/names)."""
    return prefix[:58] + "".join(random.choices(_NAME_CHARS, k=5))


def parse_time(value: str) -> float | None:
    try:
        return datetime.strptime(value.replace(".000000", ""), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
    except (ValueError, AttributeError, TypeError):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except (ValueError, AttributeError, TypeError):
            return None
