"""The logical-cluster benchmark (bench/logical_clusters.py) on a few hundred clusters: wrk makes a
new logical cluster with each request, the counts come from the hub, the lists see every cluster,
a paged list past its budget is projected, and the section renders."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator

import pytest
from bench import logical_clusters as lc
from bench.cpu import CONTROLLERS_OFF
from bench.hub import HubProcess


@pytest.fixture
def hubs() -> Iterator[tuple[HubProcess, HubProcess]]:
    hub, base = HubProcess(*CONTROLLERS_OFF), HubProcess(*CONTROLLERS_OFF)
    yield hub, base
    base.stop()
    hub.stop()


def test_makes_the_clusters_lists_them_all_and_renders(hubs: tuple[HubProcess, HubProcess]) -> None:
    hub, base = hubs
    made = lc.create(hub, base, 300, 1, 1)
    present = lc.count(hub, lc.LOGICAL_CLUSTERS)  # root and the warm-up's, besides
    assert made["clusters"] >= 300 and present == made["clusters"] + lc.WARM + 1
    assert made["errors"] == made["baseline"]["errors"] == 0
    assert made["baseline"]["configmaps"] > 0 and made["hub_cpu_us"] > 0 and made["rss_kib"] > 0

    lists = asyncio.run(lc.lists(hub, budget=60))
    assert lists["logical_clusters"]["first"]["items"] == lists["logical_clusters"]["again"]["items"] == present
    whole = lists["namespaces"]["again"]
    assert whole["items"] == 4 * present and whole["wire_bytes"] < whole["json_bytes"]  # gzipped
    paged = lists["namespaces_paged"]
    assert paged["finished"] and paged["items"] == paged["of_items"] == whole["items"]
    assert paged["pages"] == paged["of_pages"] == math.ceil(whole["items"] / lc.PAGE)

    cut = asyncio.run(lc.lists(hub, budget=0))["namespaces_paged"]
    assert not cut["finished"] and cut["pages"] == 1 and cut["of_pages"] == paged["of_pages"]
    assert cut["projected_s"] == pytest.approx(cut["seconds"] * cut["of_pages"])

    text = "\n".join(lc.render({**made, "lists": {**lists, "namespaces_paged": cut}, "rest_cpu_percent": 1.0,
                                "rss_after_lists_mib": 1.0, "rss_after_lists_kib": 1.0}
                               | {"baseline": {**made["baseline"], "rest_cpu_percent": 0.5}}))
    assert "## Logical clusters at scale" in text and "projected (1 of" in text
