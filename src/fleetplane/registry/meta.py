"""Server-owned metadata: uids, generated names, the cluster annotation (timestamps:
:mod:`fleetplane.apimachinery.metatime`)."""

from __future__ import annotations

import os
import random
import uuid

CLUSTER_ANNOTATION = "kcp.io/cluster"
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"

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
