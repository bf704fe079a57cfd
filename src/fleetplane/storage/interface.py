"""The revisioned key-value interface every backend implements.

It is etcd's data model, cut to what the registry needs: one global revision that every
write increments, each key carrying the revision of its last change (``mod_revision``),
writes guarded by that revision, and a change stream that can start at any revision not
yet compacted. SQLite implements it in-process; etcd implements it natively.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from enum import Enum
from typing import Protocol


class StorageError(Exception):
    """Base class for backend errors the registry turns into API errors."""


class KeyExistsError(StorageError):
    """create() of a key that is present."""


class KeyNotFoundError(StorageError):
    """update()/delete() of a key that is absent."""


class RevisionMismatchError(StorageError):
    """The key's mod_revision differs from the one the write was guarded by."""

    def __init__(self, key: str, current: KeyValue | None) -> None:
        super().__init__(key)
        self.current = current


class CompactedError(StorageError):
    """The asked-for revision is older than the compaction point."""

    def __init__(self, requested: int, compacted: int) -> None:
        super().__init__(f"required revision {requested} has been compacted (compacted to {compacted})")
        self.requested = requested
        self.compacted = compacted


class UnavailableError(StorageError):
    """The backend cannot be reached; the request may be retried."""


@dataclass(frozen=True, slots=True)
class KeyValue:
    key: str
    value: bytes
    create_revision: int
    mod_revision: int


class EventType(Enum):
    PUT = 0
    DELETE = 1


@dataclass(frozen=True, slots=True)
class Event:
    """One change. For DELETE, ``value`` is the value the key had and ``revision`` the delete's."""

    type: EventType
    key: str
    value: bytes
    revision: int
    create_revision: int


class Store(Protocol):
    """A revisioned key-value store (keys are ``/``-separated strings, values opaque bytes)."""

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def current_revision(self) -> int:
        """The newest revision; a read at or after it sees every acknowledged write."""
        ...

    async def get(self, key: str) -> KeyValue | None: ...

    async def range(self, prefix: str) -> tuple[list[KeyValue], int]:
        """Every key under ``prefix`` in key order, and the revision the read was taken at."""
        ...

    async def create(self, key: str, value: bytes) -> int:
        """Write a new key; raises KeyExistsError. Returns the write's revision."""
        ...

    async def update(self, key: str, value: bytes, expected_revision: int) -> int:
        """Replace ``key`` if its mod_revision is ``expected_revision``; raises RevisionMismatchError."""
        ...

    async def delete(self, key: str, expected_revision: int) -> int:
        """Delete ``key`` if its mod_revision is ``expected_revision``; returns the delete's revision."""
        ...

    def watch(self, prefix: str, start_revision: int) -> AsyncIterator[Event]:
        """Every change under ``prefix`` with revision >= start_revision, in order, forever.

        Raises CompactedError when start_revision is older than the compaction point.
        """
        ...

    async def compact(self, revision: int) -> None:
        """Forget history older than ``revision``: watches from before it get CompactedError."""
        ...

    async def compacted_revision(self) -> int: ...
