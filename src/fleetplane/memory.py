"""glibc's malloc, set for processes that hold many TLS connections (the hub, its
controller-manager, simulated clusters).

uvloop gives every TLS connection a 256 KiB read buffer (``PyMem_RawMalloc``). Above glibc's
mmap threshold (128 KiB) a buffer is a mapping of its own: only the pages a read touched are
resident, and a closed connection's goes back to the system. But glibc raises the threshold to
the size of any mapped chunk that is freed (up to 32 MiB), so once the first connection closed,
every later buffer came from the heap, carved from pages other objects had dirtied, and kept the
heap from shrinking: with 60 attached clusters the hub held 799 MiB and its controller-manager
484 MiB at rest, against 632 and 344 with the threshold fixed (``bench/fleet_capacity.py``).
Setting the threshold (``mallopt(M_MMAP_THRESHOLD)``, as ``MALLOC_MMAP_THRESHOLD_`` does for a
process not yet started) turns the adjustment off; allocations above it (large bodies) are
then always mapped, one ``mmap`` each.
"""

from __future__ import annotations

import ctypes
import sys

__all__ = ["MMAP_THRESHOLD", "tune_malloc"]

#: glibc's default threshold, kept fixed
MMAP_THRESHOLD = 128 * 1024
_M_MMAP_THRESHOLD = -3


def tune_malloc() -> bool:
    """Fix glibc's mmap threshold (see the module docstring); False where malloc is not glibc's."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # another libc (musl has no mallopt)
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))
