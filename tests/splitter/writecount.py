"""Hub writes counted through watches, by what they wrote: every ADDED, MODIFIED or DELETED event on
a watch is one write to the hub's store (a watch shows every revision of an object), so counting them
per resource, and telling apart what each MODIFIED changed (the object before and after), is an
exact count of the writes a cold start costs, whoever made them.

    counter = WriteCounter(hub, "/clusters/<lc>")   # watches from the current resourceVersion
    ...
    counter.close(); counter.table()                # {"child status": 6, "Event new": 2, ...}
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from typing import Any

from ..harness import Hub
from ..scale.replicas import Watch

#: what is watched: (label, path under the logical cluster)
RESOURCES = (("deployments", "/apis/apps/v1/deployments"), ("events", "/api/v1/events"),
             ("placementdecisions", "/apis/multicluster.x-k8s.io/v1alpha1/placementdecisions"))


def _md(o: dict) -> dict:
    return o.get("metadata") or {}


def _changed(old: dict, new: dict) -> list[str]:
    """What a MODIFIED changed: spec, status, finalizers, labels, and each annotation by key."""
    out = []
    for part in ("spec", "status"):
        if old.get(part) != new.get(part):
            out.append(part)
    om, nm = _md(old), _md(new)
    if om.get("finalizers") != nm.get("finalizers"):
        out.append("finalizers")
    if om.get("labels") != nm.get("labels"):
        out.append("labels")
    oa, na = om.get("annotations") or {}, nm.get("annotations") or {}
    out += [f"annotation {k}" for k in sorted(set(oa) | set(na)) if oa.get(k) != na.get(k)]
    for k in ("ownerReferences", "deletionTimestamp"):
        if om.get(k) != nm.get(k):
            out.append(k)
    return out or ["nothing"]


class WriteCounter:
    """Watches of ``RESOURCES`` in one logical cluster from now on; :meth:`table` classifies each
    event: a Deployment is a *parent* or a *child* (``kcp.dev/cluster``), an Event *new* or a
    *repeat* (its count bumped), by reason."""

    def __init__(self, hub: Hub, prefix: str) -> None:
        self.watches: dict[str, Watch] = {}
        for label, path in RESOURCES:
            code, listed = hub.json("GET", prefix + path)
            assert code == 200, listed
            rv = listed["metadata"]["resourceVersion"]
            w = Watch(hub, f"{prefix}{path}?watch=1&resourceVersion={rv}&timeoutSeconds=900")
            assert w.status == 200, label
            self.watches[label] = w
        self._lock = threading.Lock()

    def close(self) -> None:
        for w in self.watches.values():
            w.close()

    def total(self) -> int:
        return sum(len(w.events) for w in self.watches.values())

    def rows(self) -> list[tuple[str, str, str]]:
        """(resource, what, object) per write, in order per resource."""
        out: list[tuple[str, str, str]] = []
        for label, w in self.watches.items():
            last: dict[str, dict] = {}
            for ev in list(w.events):
                if ev.get("type") not in ("ADDED", "MODIFIED", "DELETED"):
                    continue
                obj = ev["object"]
                md = _md(obj)
                name = md.get("name") or ""
                if label == "deployments":
                    who = "child" if "kcp.dev/cluster" in (md.get("labels") or {}) else "parent"
                    if ev["type"] == "MODIFIED" and name in last:
                        what = f"{who} " + "+".join(_changed(last[name], obj))
                    else:
                        what = f"{who} {ev['type'].lower()}"
                elif label == "events":
                    kind = (obj.get("involvedObject") or {}).get("kind")
                    what = f"Event {kind} {obj.get('reason')} " + ("new" if ev["type"] == "ADDED" else "repeat")
                else:
                    what = f"PlacementDecision {ev['type'].lower()}"
                last[name] = obj
                out.append((label, what, name))
        return out

    def table(self) -> dict[str, int]:
        return dict(sorted(Counter(what for _, what, _ in self.rows()).items()))

    def per(self, n: int, exclude: tuple[str, ...] = ()) -> dict[str, float]:
        """The table divided by ``n`` (per Deployment), leaving out the writes named in ``exclude``."""
        return {k: round(v / n, 2) for k, v in self.table().items() if k not in exclude}


def dump(table: dict[str, Any]) -> str:
    return json.dumps(table, indent=1, sort_keys=True)
