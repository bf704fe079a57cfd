"""The path-element order of managedFields, for sets too large to sort in one call."""

from __future__ import annotations

import random

from fleetplane.registry.apply import _SORT_RUN, _pe_sort_key, _sorted_elements


def test_large_sets_sort_exactly_as_small_ones():
    """Runs merged by heapq give structured-merge-diff's order, the same as one sorted() call."""
    names = [f"f:k{i:06d}" for i in range(_SORT_RUN * 3 + 17)]
    names += [f'k:{{"name":"n{i}"}}' for i in range(500)] + [f'v:"{i}"' for i in range(300)] + [f"i:{i}" for i in range(300)]
    random.Random(7).shuffle(names)
    assert _sorted_elements(names) == sorted(names, key=_pe_sort_key)
    assert _sorted_elements(names[:10]) == sorted(names[:10], key=_pe_sort_key)
