"""Move a hub's data between stores: ``fleetplane storage copy --from URL --to URL``.

Every key is copied with its value byte for byte, so every object keeps its identity (uid,
creationTimestamp, generation, managedFields, finalizers, owner references: all of them are
in the value). Revisions are the target's own: every object gets a new resourceVersion, and
clients must relist (as after restoring etcd from a snapshot). The source is read at one
revision; stop the hub (every replica) before copying so that nothing is written meanwhile.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .interface import Store
from .open import describe, open_store, split_url

BATCH = 256


class CopyError(Exception):
    pass


@dataclass
class CopyResult:
    keys: int
    bytes: int
    source_revision: int
    target_revision: int
    seconds: float


async def copy_store(src: Store, dst: Store, *, progress: Callable[[int, int], None] | None = None) -> CopyResult:
    """Copy every key of ``src`` (started) into the empty ``dst`` (started), then verify."""
    started = time.monotonic()
    existing, _ = await dst.range("/")
    if existing:
        raise CopyError(f"the target already holds {len(existing)} keys (first: {existing[0].key}); copy into an empty store")
    kvs, src_rev = await src.range("/")
    done = 0
    for i in range(0, len(kvs), BATCH):
        batch = kvs[i:i + BATCH]
        await asyncio.gather(*(dst.create(kv.key, kv.value) for kv in batch))
        done += len(batch)
        if progress is not None:
            progress(done, len(kvs))
    copied, dst_rev = await dst.range("/")
    want = {kv.key: kv.value for kv in kvs}
    got = {kv.key: kv.value for kv in copied}
    if want != got:
        missing = sorted(set(want) - set(got))[:3]
        differ = sorted(k for k in want.keys() & got.keys() if want[k] != got[k])[:3]
        raise CopyError(f"verification failed: missing {missing}, different {differ}")
    return CopyResult(len(kvs), sum(len(kv.value) for kv in kvs), src_rev, dst_rev, time.monotonic() - started)


async def copy(src_url: str, dst_url: str, *, progress: Callable[[int, int], None] | None = None) -> CopyResult:
    """Open both stores from URLs (``sqlite:PATH``, ``etcd:URL[,URL...][?cacert=..&cert=..&key=..]``) and copy."""
    if describe(src_url) == describe(dst_url):
        raise CopyError("source and target are the same store")
    scheme, rest, _ = split_url(src_url)
    if scheme == "sqlite" and not Path(rest).is_file():  # noqa: ASYNC240 - one stat before any I/O
        raise CopyError(f"no SQLite database at {rest}")
    src = open_store(src_url)
    dst = open_store(dst_url)
    await src.start()
    try:
        await dst.start()
        try:
            return await copy_store(src, dst, progress=progress)
        finally:
            await dst.close()
    finally:
        await src.close()
