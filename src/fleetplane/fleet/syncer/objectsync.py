"""Object sync: hub objects labelled ``kcp.dev/cluster: <cluster>`` down to the cluster, status
(and retained spec fields) back up, deletions both ways, drift reverted.

Per synced type there are two informers (hub: the label selector; cluster: objects this
syncer manages) feeding one work queue of (type, namespace, hub name) keys; a key's reconcile
reads both caches and converges the pair. A hub object annotated ``fleetplane.io/downstream-name``
has another name in the cluster; its cluster copy is annotated ``fleetplane.io/upstream-name``,
which maps the cluster's events back to the hub key. Nothing here polls, and nothing here depends on
the type sync: a type is synced as soon as the hub serves it.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from ...apimachinery.metatime import now_rfc3339
from ...apimachinery.validation import DNS1123_SUBDOMAIN
from ...kube.client import JSON_PATCH, MERGE_PATCH, ApiError, Client
from ...kube.controller import run_workers
from ...kube.informer import Informer
from ...kube.informer import NamespacedKey as Key
from ...kube.workqueue import WorkQueue
from . import constants as C
from .discovery import ApiResource
from .host import SyncerHost
from .schema import digest

log = logging.getLogger(__name__)

MISSING: Any = object()
NAMESPACES = ("", "namespaces")


# -- object helpers -------------------------------------------------------------------------

def _meta(o: dict) -> dict:
    return o.get("metadata") or {}


def _labels(o: dict) -> dict:
    return _meta(o).get("labels") or {}


def _annotations(o: dict) -> dict:
    return _meta(o).get("annotations") or {}


def _deleting(o: dict) -> bool:
    return bool(_meta(o).get("deletionTimestamp"))


def _split(path: str) -> list[str]:
    return [p for p in path.split(".") if p]


def get_path(o: Any, path: str) -> Any:
    for part in _split(path):
        if not isinstance(o, dict) or part not in o:
            return MISSING
        o = o[part]
    return o


def set_path(o: dict, path: str, value: Any) -> None:
    parts = _split(path)
    for part in parts[:-1]:
        nxt = o.get(part)
        if not isinstance(nxt, dict):
            nxt = o[part] = {}
        o = nxt
    o[parts[-1]] = value


def del_path(o: dict, path: str) -> None:
    parts = _split(path)
    node: Any = o
    for part in parts[:-1]:
        node = node.get(part)
        if not isinstance(node, dict):
            return
    node.pop(parts[-1], None)


def project(actual: Any, template: Any) -> Any:
    """``actual`` cut down to the shape of ``template``: what the cluster has at the fields the
    syncer set (the cluster may default or add fields elsewhere)."""
    if isinstance(template, dict):
        if not isinstance(actual, dict):
            return actual
        return {k: project(actual[k], v) if k in actual else "<missing>" for k, v in template.items()}
    if isinstance(template, list):
        if not isinstance(actual, list) or len(actual) != len(template):
            return actual
        return [project(a, t) for a, t in zip(actual, template, strict=True)]
    return actual


def differences(desired: Any, actual: Any, path: str = "", out: list[str] | None = None, limit: int = 5) -> list[str]:
    """Where ``actual`` (projected) differs from ``desired``: ``spec.replicas: 3 in the hub, 5 in the cluster``."""
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if isinstance(desired, dict) and isinstance(actual, dict):
        for k, v in desired.items():
            differences(v, actual.get(k, "<missing>"), f"{path}.{k}" if path else k, out, limit)
    elif isinstance(desired, list) and isinstance(actual, list) and len(desired) == len(actual):
        for i, (d, a) in enumerate(zip(desired, actual, strict=True)):
            differences(d, a, f"{path}[{i}]", out, limit)
    elif desired != actual:
        def show(v: Any) -> str:
            s = v if isinstance(v, str) and v == "<missing>" else orjson.dumps(v).decode()
            return s if len(s) <= 60 else s[:57] + "..."
        out.append(f"{path}: {show(desired)} on the hub, {show(actual)} in the cluster")
    return out


def _foreign_status(obj: dict, manager: str) -> bool:
    """Has anyone but ``manager`` written this object's status?"""
    for mf in _meta(obj).get("managedFields") or []:
        if mf.get("manager") == manager:
            continue
        if mf.get("subresource") == "status" or "f:status" in (mf.get("fieldsV1") or {}):
            return True
    return False


MEMO_TTL = 5.0
#: status up is debounced: a cluster status is written to the hub once it has not changed for
#: STATUS_QUIET seconds, and at the latest STATUS_MAX_DELAY seconds after the first change not yet
#: written (a Deployment's status changes several times in a second as its pods come up: one write)
STATUS_QUIET = 1.0
STATUS_MAX_DELAY = 3.0
#: plain successes: not written on an object whose finalizer its creator set (see _write_state)
_QUIET_REASONS = ("Created", "Applied")


def _controlled(o: dict) -> bool:
    """Has a controller (an ownerReference with ``controller: true``): its controller reports
    what happens to it (the splitter's Events on the parent), so its own creation is no Event."""
    return any(r.get("controller") for r in _meta(o).get("ownerReferences") or ())


def _rv(o: dict) -> int | None:
    rv: Any = _meta(o).get("resourceVersion")
    try:
        return int(rv)
    except (TypeError, ValueError):
        return None


def upstream_name(down: dict) -> str:
    """The hub name a cluster object is synced for: its upstream-name annotation, or its own name."""
    return str(_annotations(down).get(C.UPSTREAM_NAME_ANNOTATION) or _meta(down).get("name") or "")


def downstream_name(hub: dict) -> str:
    """The name a hub object has in the cluster: its downstream-name annotation, or its own name."""
    return str(_annotations(hub).get(C.DOWNSTREAM_NAME_ANNOTATION) or _meta(hub).get("name") or "")


def _state_of(o: dict) -> dict:
    raw = _annotations(o).get(C.SYNC_STATE_ANNOTATION)
    if not raw:
        return {}
    try:
        v = orjson.loads(raw)
        return v if isinstance(v, dict) else {}
    except orjson.JSONDecodeError:
        return {}


class SyncFailure(Exception):
    """A reconcile outcome to show on the hub object (reason/message) and retry later."""

    def __init__(self, reason: str, message: str, retriable: bool = False) -> None:
        super().__init__(message)
        self.reason, self.message, self.retriable = reason, message, retriable


@dataclass
class SyncedType:
    hub: ApiResource
    down: ApiResource

    @property
    def key(self) -> str:
        return self.hub.group_resource

    @property
    def is_namespaces(self) -> bool:
        return (self.hub.group, self.hub.resource) == NAMESPACES

    @property
    def status_up(self) -> bool:
        return not self.is_namespaces and "status" in self.hub.subresources

    @property
    def status_down(self) -> bool:
        return not self.is_namespaces and "status" in self.down.subresources


class TypeWorker:
    def __init__(self, sync: ObjectSync, st: SyncedType) -> None:
        self.sync = sync
        self.st = st
        s = sync.syncer
        self.hub_inf = Informer(s.hub, st.hub.path(), self._on_hub, label_selector=f"{C.CLUSTER_LABEL}={s.cluster_name}",
                                name=f"hub {st.key}", on_status=self._on_status)
        self.down_inf = Informer(s.down, st.down.path(), self._on_down, label_selector=f"{C.MANAGED_LABEL}={s.label_value}",
                                 name=f"cluster {st.key}", on_status=self._on_status, missing_ok=True)
        self.tasks: list[asyncio.Task] = []
        #: objects as our own writes returned them, until the informer has caught up with them
        #: (so a reconcile right after a write neither repeats it nor reads a stale cache)
        self.written_hub: dict[Key, tuple[dict, float]] = {}
        self.written_down: dict[Key, tuple[dict, float]] = {}
        #: hub key -> cluster key, for the cluster objects synced under a downstream name
        self.down_keys: dict[Key, Key] = {}

    def hub_key(self, down_key: Key, down: dict | None) -> Key:
        """The hub key a cluster object is synced for."""
        if down is None or self.st.is_namespaces:
            return down_key
        return (down_key[0], upstream_name(down))

    def down_key(self, hub_key: Key, hub: dict | None) -> Key:
        """Where the hub object ``hub_key`` is (or should be) in the cluster."""
        if self.st.is_namespaces:
            return hub_key
        if hub is not None:
            return (hub_key[0], downstream_name(hub))
        return self.down_keys.get(hub_key, hub_key)

    def current(self, k: Key, hub: bool) -> dict | None:
        """The newest version we know of: the informer's, or our own write's while the informer
        has not caught up with it. The watch event of a later change (the cluster's controller
        writing status) can arrive before our write's response does; the newer one wins, or that
        change would be hidden until the next event, which may never come."""
        memo, inf = (self.written_hub, self.hub_inf) if hub else (self.written_down, self.down_inf)
        cached = inf.cache.get(k)
        mine = memo.get(k)
        if mine is None or time.monotonic() - mine[1] >= MEMO_TTL:
            return cached
        if cached is not None and (_rv(cached) or 0) >= (_rv(mine[0]) or 0):
            memo.pop(k, None)
            return cached
        return mine[0]

    def wrote(self, obj: dict, hub: bool) -> None:
        if _rv(obj) is not None:
            (self.written_hub if hub else self.written_down)[(_meta(obj).get("namespace") or "", _meta(obj).get("name") or "")] = \
                (obj, time.monotonic())

    def start(self) -> None:
        self.tasks = [asyncio.create_task(self.hub_inf.run(), name=f"hub-informer-{self.st.key}"),
                      asyncio.create_task(self.down_inf.run(), name=f"down-informer-{self.st.key}"),
                      asyncio.create_task(self._sweep(), name=f"sweep-{self.st.key}")]

    async def stop(self) -> None:
        for t in self.tasks:
            t.cancel()
        for t in self.tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t

    def _enqueue(self, k: Key) -> None:
        self.sync.queue.add((self.st.key, k[0], k[1]))

    @staticmethod
    def _settle(memo: dict[Key, tuple[dict, float]], k: Key, new: dict | None) -> None:
        mine = memo.get(k)
        if mine is None:
            return
        rv_new, rv_mine = (_rv(new) if new is not None else None), _rv(mine[0])
        if new is None or rv_new is None or rv_mine is None or rv_new >= rv_mine:
            memo.pop(k, None)

    def _on_hub(self, k: Key, old: dict | None, new: dict | None) -> None:
        self._settle(self.written_hub, k, new)
        self._enqueue(k)

    def _on_down(self, k: Key, old: dict | None, new: dict | None) -> None:
        self._settle(self.written_down, k, new)
        if new is None and self.st.is_namespaces:
            self.sync.ns_ready.discard(k[1])
        if old is not None and (hk := self.hub_key(k, old)) != k and self.down_keys.get(hk) == k:
            del self.down_keys[hk]
            if new is None or self.hub_key(k, new) != hk:
                self._enqueue(hk)
        if new is not None and (hk := self.hub_key(k, new)) != k:
            self.down_keys[hk] = k
        self._enqueue(self.hub_key(k, new if new is not None else old))

    def _on_status(self, inf: Informer, error: str | None) -> None:
        self.sync.syncer.informer_status(inf, error, hub=inf is self.hub_inf)
        if error is None:
            # back after an outage: look at everything again (a relist reports only differences)
            for k in list(self.hub_inf.cache):
                self._enqueue(k)

    async def _sweep(self) -> None:
        """Once the hub side is listed: hub objects that still carry this syncer's finalizer but
        were unlabelled while it was not running (a labelled watch does not show them)."""
        await self.hub_inf.synced.wait()
        fin = self.sync.finalizer
        while True:
            try:
                items, _ = await self.sync.syncer.hub.list_all(self.st.hub.path())
                break
            except ApiError as exc:
                if exc.status == 403:
                    # a label-scoped identity (Secrets) may list only what is labelled for it: an
                    # object that lost its label while no Syncer ran keeps our finalizer until the
                    # label is back or an admin removes the finalizer
                    log.info("syncer %s: no unlabelled sweep of %s: %s", self.sync.syncer.cluster_name, self.st.key, exc.message)
                    return
                await asyncio.sleep(2.0)
        for o in items:
            if fin in (_meta(o).get("finalizers") or []) and _labels(o).get(C.CLUSTER_LABEL) != self.sync.syncer.cluster_name:
                self._enqueue((_meta(o).get("namespace") or "", _meta(o).get("name") or ""))


class ObjectSync:
    def __init__(self, syncer: SyncerHost, workers: int = 16) -> None:
        self.syncer = syncer
        self.hub: Client = syncer.hub
        self.down: Client = syncer.down
        self.workers = workers
        self.queue = WorkQueue("syncer", base=0.1, cap=30.0)
        self.types: dict[str, TypeWorker] = {}
        #: (type, ns, name) -> (state, reason, message) of the last reconcile
        self.state: dict[tuple[str, str, str], tuple[str, str, str]] = {}
        #: (type, ns, name) -> (hash of the hub's intent, hash of the cluster's fields after our last write)
        self.observed: dict[tuple[str, str, str], tuple[str, str]] = {}
        self.ns_ready: set[str] = set()
        self.finalizer = C.finalizer(syncer.cluster_name)
        #: (type, ns, name) -> [first change not yet written, last change, that status] (status up debounce)
        self.status_pending: dict[tuple[str, str, str], list[Any]] = {}
        self.hpa: Informer | None = None
        self._hpa_task: asyncio.Task | None = None
        self._workers: asyncio.Task | None = None

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        self._workers = asyncio.create_task(run_workers(self.queue, self._reconcile, self.workers), name="sync-workers")

    async def stop(self) -> None:
        tasks = [t for t in (self._workers, self._hpa_task) if t is not None]
        for t in tasks:
            t.cancel()
        for w in list(self.types.values()):
            await w.stop()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.gather(*tasks)

    async def ensure_types(self, wanted: Iterable[SyncedType], hpa: ApiResource | None) -> None:
        """Run a worker per wanted type; stop the others (their hub type is gone)."""
        by_key = {st.key: st for st in wanted}
        for key in list(self.types):
            cur = self.types[key]
            nxt = by_key.get(key)
            if nxt is None or (nxt.hub.version, nxt.down.version) != (cur.st.hub.version, cur.st.down.version):
                del self.types[key]
                await cur.stop()
                self.syncer.mark_ok(f"informer:{cur.hub_inf.name}", f"informer:{cur.down_inf.name}")

                def of_type(k: Any, key: str = key) -> bool:
                    return k[0] == key

                self.queue.drop(of_type)
                for d in (self.state, self.observed, self.status_pending):
                    for k in [k for k in d if k[0] == key]:
                        d.pop(k, None)
        for key, st in by_key.items():
            if key not in self.types:
                w = TypeWorker(self, st)
                self.types[key] = w
                w.start()
                log.info("syncing %s (hub %s, cluster %s)", key, st.hub.version, st.down.version)
        uses_hpa = any(r.when == "hpa" for r in self.syncer.retain)
        if uses_hpa and hpa is not None and self.hpa is None:
            self.hpa = Informer(self.down, hpa.path(), self._on_hpa, name="cluster HPAs", missing_ok=True)
            self._hpa_task = asyncio.create_task(self.hpa.run(), name="hpa-informer")

    def _on_hpa(self, k: Key, old: dict | None, new: dict | None) -> None:
        for o in (old, new):
            ref = ((o or {}).get("spec") or {}).get("scaleTargetRef") or {}
            group = (ref.get("apiVersion") or "").rpartition("/")[0]
            for w in self.types.values():
                if w.st.down.kind == ref.get("kind") and w.st.down.group == group:
                    dk = (k[0], ref.get("name") or "")
                    w._enqueue(w.hub_key(dk, w.down_inf.cache.get(dk)))

    def counts(self) -> tuple[int, int]:
        synced = sum(1 for s in self.state.values() if s[0] == "Synced")
        return synced, sum(1 for s in self.state.values() if s[0] == "Failed")

    def failed(self, limit: int = 20) -> list[str]:
        out = []
        for (t, ns, name), (state, reason, message) in sorted(self.state.items()):
            if state == "Failed":
                out.append(f"{t} {ns + '/' if ns else ''}{name}: {reason}: {message}")
                if len(out) >= limit:
                    break
        return out

    # -- the work loop --------------------------------------------------------------------

    async def _reconcile(self, key: tuple[str, str, str]) -> bool | None:
        """One key (run by :func:`run_workers`); False when it has scheduled its own retry."""
        tkey, ns, name = key
        w = self.types.get(tkey)
        if w is None:
            return None
        if not (w.hub_inf.synced.is_set() and w.down_inf.synced.is_set()):
            self.queue.add_after(key, 0.25)
            return False
        hub = w.current((ns, name), hub=True)
        down = w.current(w.down_key((ns, name), hub), hub=False)
        try:
            await self._sync(w, key, hub, down)
            return None
        except SyncFailure as f:
            if f.retriable and self.queue.failures(key) < 3:
                self.queue.retry(key)  # often gone in a moment (a CRD being pushed down): not reported yet
                return False
            await self._record_failure(w, key, f)
            self.queue.retry(key, cap=30.0 if f.retriable else 300.0)
        except ApiError as err:
            if err.status in (0, 429) or err.status >= 500:
                # the cluster or the hub is unreachable or overloaded: health says so; objects are not marked
                self.syncer.note_error(err)
                self.queue.retry(key)
                return False
            if err.status == 409 and err.reason == "Conflict":  # a write raced another: look again soon
                self.queue.retry(key)
                return False
            where = "the cluster" if err.side == "cluster" else "the hub"
            await self._record_failure(w, key, SyncFailure(err.reason or "Error", f"{where} rejected it: {err.message}"))
            self.queue.retry(key, cap=300.0)
        return False

    async def _record_failure(self, w: TypeWorker, key: tuple[str, str, str], f: SyncFailure) -> None:
        self.state[key] = ("Failed", f.reason, f.message)
        hub = w.current((key[1], key[2]), hub=True)
        if hub is None or _deleting(hub):
            return
        self.syncer.events.event(self._ref(w, hub), "Warning", "SyncFailed", f"{f.reason}: {f.message}")
        with contextlib.suppress(ApiError):
            await self._write_state(w, hub, ("Failed", f.reason, f.message), add_finalizer=False)

    # -- reconcile ------------------------------------------------------------------------

    def _ours(self, o: dict | None) -> bool:
        return o is not None and _annotations(o).get(C.LOGICAL_CLUSTER_ANNOTATION) == self.syncer.logical_cluster \
            and _labels(o).get(C.MANAGED_LABEL) == self.syncer.label_value

    def _for_us(self, o: dict | None) -> bool:
        return o is not None and _labels(o).get(C.CLUSTER_LABEL) == self.syncer.cluster_name

    def _conflict(self, w: TypeWorker, ns: str, dname: str, live: dict) -> SyncFailure:
        """The cluster object named ``dname`` is not this hub object's: never touched."""
        where = f"{w.st.down.kind} {ns + '/' if ns else ''}{dname} already exists in cluster {self.syncer.cluster_name}"
        if self._ours(live):
            return SyncFailure("Conflict", f"{where}, synced for hub object {ns + '/' if ns else ''}{upstream_name(live)}; "
                               "not overwriting it (two hub objects want that name)")
        owner = _annotations(live).get(C.LOGICAL_CLUSTER_ANNOTATION)
        by = f"by logical cluster {owner!r}" if owner else "not by fleetplane"
        return SyncFailure("Conflict", f"{where}, managed {by}; not overwriting it "
                           f"(annotate the hub object {C.ADOPT_ANNOTATION}=true to take it over)")

    async def _renamed(self, w: TypeWorker, ns: str, name: str, dname: str) -> None:
        """The hub object's downstream name changed: its copy under the old name goes."""
        old_key = w.down_keys.get((ns, name)) or (ns, name)
        if old_key == (ns, dname):
            return
        old = w.current(old_key, hub=False)
        if old is not None and self._ours(old) and upstream_name(old) == name:
            await self._delete_down(w, old)

    def _ref(self, w: TypeWorker, hub: dict) -> dict:
        return {"apiVersion": w.st.hub.api_version, "kind": w.st.hub.kind, "metadata": _meta(hub)}

    async def _sync(self, w: TypeWorker, key: tuple[str, str, str], hub: dict | None, down: dict | None) -> None:
        st, ns, name = w.st, key[1], key[2]
        # a cluster object under this name synced for another hub object is never this one's
        foreign = down if down is not None and not st.is_namespaces and upstream_name(down) != name else None
        if foreign is not None:
            down = None
        if hub is not None and not self._for_us(hub):
            hub = None
        if hub is None:
            await self._gone_from_hub(w, key, down)
            return
        if _deleting(hub):
            await self._hub_deleting(w, key, hub, down)
            return
        dname = name if st.is_namespaces else downstream_name(hub)
        if dname != name and not DNS1123_SUBDOMAIN.match(dname):
            raise SyncFailure("InvalidDownstreamName", f"{C.DOWNSTREAM_NAME_ANNOTATION} {dname!r} is not a valid name: "
                              "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                              "'-' or '.', and must start and end with an alphanumeric character")
        if foreign is not None:
            raise self._conflict(w, ns, dname, foreign)
        await self._renamed(w, ns, name, dname)
        path = st.down.path(ns, dname)
        adopting = False
        if down is None:
            live = await self.down.get(path)
            if live is not None:
                if self._ours(live) and (st.is_namespaces or upstream_name(live) == name):
                    down = live
                elif not self._ours(live) and _annotations(hub).get(C.ADOPT_ANNOTATION) == "true":
                    down, adopting = live, True
                else:
                    raise self._conflict(w, ns, dname, live)
        retained = self._retained(w, hub, down)
        desired, dhash = self._desired(w, hub, down, retained)
        shape = {k: v for k, v in desired.items() if k not in ("apiVersion", "kind")}
        if retained and down is not None:
            # the retained values come from our view of the cluster: apply only onto that version,
            # never over a newer value its controller wrote meanwhile (409, then look again)
            desired = {**desired, "metadata": {**desired["metadata"], "resourceVersion": _meta(down).get("resourceVersion")}}
        state = ("Synced", "Applied", f"in sync with cluster {self.syncer.cluster_name}")
        prev = _state_of(hub)
        if down is None:
            if ns and not st.is_namespaces:
                await self.ensure_namespace(ns)
            down = await self._apply(w, ns, path, desired)
            self.observed[key] = (dhash, digest(project(down, shape)))
            if self._was_synced(key, hub, prev):
                msg = f"{st.down.kind} was deleted in cluster {self.syncer.cluster_name}; recreated"
                state = ("Synced", "DriftReverted", msg)
                self.syncer.events.event(self._ref(w, hub), "Warning", "DriftReverted", msg)
            else:
                state = ("Synced", "Created", f"created in cluster {self.syncer.cluster_name}")
                if not _controlled(hub):
                    self.syncer.events.event(self._ref(w, hub), "Normal", "Synced", state[2])
        else:
            ph = digest(project(down, shape))
            obs = self.observed.get(key)
            if adopting or _annotations(down).get(C.SPEC_HASH_ANNOTATION) != dhash:
                new = await self._apply(w, ns, path, desired)
                if adopting:
                    state = ("Synced", "Adopted", f"took over the existing object in cluster {self.syncer.cluster_name}")
                    self.syncer.events.event(self._ref(w, hub), "Normal", "Synced", state[2])
                down = new
                self.observed[key] = (dhash, digest(project(down, shape)))
            elif obs == (dhash, ph):
                state = self._keep_state(prev, state)
            elif obs is None and project(down, shape) == shape:
                self.observed[key] = (dhash, ph)
                state = self._keep_state(prev, state)
            else:
                diffs = differences(shape, project(down, shape))
                new = await self._apply(w, ns, path, desired)
                # drift if the write changed the fields the syncer sets; a write that changes
                # nothing there was normalization (the cluster stores cpu 0.1 as 100m)
                if digest(project(new, shape)) != ph:
                    msg = (f"changed in cluster {self.syncer.cluster_name} ({'; '.join(diffs) or 'fields the syncer sets'}); "
                           "reverted to the hub's spec")
                    state = ("Synced", "DriftReverted", msg)
                    self.syncer.events.event(self._ref(w, hub), "Warning", "DriftReverted", msg)
                else:
                    state = self._keep_state(prev, state)
                down = new
                self.observed[key] = (dhash, digest(project(down, shape)))
        hub = await self._write_state(w, hub, state, add_finalizer=True)
        await self._sync_status(w, key, hub, down, dhash)
        await self._retained_up(w, hub, down, retained)
        self.state[key] = state

    def _was_synced(self, key: tuple[str, str, str], hub: dict, prev: dict) -> bool:
        """Had this object been synced to the cluster (so a missing cluster copy was deleted there)?
        Its state says so, or (an object not annotated on plain success, see _write_state) this
        syncer synced it since it started, or the cluster's status came up to it."""
        if prev:
            return prev.get("state") == "Synced" and prev.get("cluster") == self.syncer.cluster_name
        if self.finalizer not in (_meta(hub).get("finalizers") or []):
            return False
        return (self.state.get(key) or ("",))[0] == "Synced" or bool(hub.get("status"))

    @staticmethod
    def _keep_state(prev: dict, default: tuple[str, str, str]) -> tuple[str, str, str]:
        """Nothing to do: keep a Synced state's reason (Created, DriftReverted) rather than rewrite it."""
        if prev.get("state") == "Synced":
            return ("Synced", prev.get("reason") or default[1], prev.get("message") or default[2])
        return default

    def _retained(self, w: TypeWorker, hub: dict, down: dict | None) -> list[str]:
        if down is None:
            return []
        listed = [p.strip() for p in (_annotations(hub).get(C.RETAIN_ANNOTATION) or "").split(",") if p.strip()]
        paths = []
        for rule in self.syncer.retain:
            if not rule.matches(w.st.key) or rule.path in paths:
                continue
            if rule.when == "always" or (rule.when == "hpa" and self._hpa_targets(w, down)):
                paths.append(rule.path)
        paths += [p for p in listed if p not in paths]
        return [p for p in paths if get_path(down, p) is not MISSING and not p.startswith(("metadata", "status"))]

    def _hpa_targets(self, w: TypeWorker, down: dict) -> bool:
        if self.hpa is None:
            return False
        ns, name = _meta(down).get("namespace") or "", _meta(down).get("name")
        for (hns, _), h in self.hpa.cache.items():
            ref = (h.get("spec") or {}).get("scaleTargetRef") or {}
            if hns == ns and ref.get("name") == name and ref.get("kind") == w.st.down.kind \
                    and (ref.get("apiVersion") or "").rpartition("/")[0] == w.st.down.group:
                return True
        return False

    def _desired(self, w: TypeWorker, hub: dict, down: dict | None, retained: list[str]) -> tuple[dict, str]:
        st = w.st
        meta = _meta(hub)
        labels = dict(meta.get("labels") or {})
        labels[C.MANAGED_LABEL] = self.syncer.label_value
        annotations = {k: v for k, v in (meta.get("annotations") or {}).items()
                       if k not in C.HUB_ONLY_ANNOTATIONS and not k.startswith(C.PREFIX)}
        skip = {"apiVersion", "kind", "metadata"}
        if st.status_up or st.is_namespaces:
            skip.add("status")
        if st.is_namespaces:
            skip.add("spec")
        body = {k: copy.deepcopy(v) for k, v in hub.items() if k not in skip}
        dname = meta.get("name") if st.is_namespaces else downstream_name(hub)
        md: dict = {"name": dname}
        if meta.get("namespace"):
            md["namespace"] = meta["namespace"]
        if dname != meta.get("name"):
            annotations[C.UPSTREAM_NAME_ANNOTATION] = meta.get("name")
        md["labels"] = labels
        md["annotations"] = annotations
        desired = {"apiVersion": st.down.api_version, "kind": st.down.kind, "metadata": md, **body}
        intent = copy.deepcopy(desired)
        for p in retained:
            del_path(intent, p)
            set_path(desired, p, copy.deepcopy(get_path(down, p)))
        dhash = digest(intent)
        annotations[C.SPEC_HASH_ANNOTATION] = dhash
        annotations[C.LOGICAL_CLUSTER_ANNOTATION] = self.syncer.logical_cluster
        annotations[C.CLUSTER_NAME_ANNOTATION] = self.syncer.cluster_name
        if st.is_namespaces:
            annotations[C.AUTO_NAMESPACE_ANNOTATION] = "false"
        return desired, dhash

    async def _apply(self, w: TypeWorker, ns: str, path: str, desired: dict) -> dict:
        try:
            out = await self.down.apply(path, desired, self.syncer.manager)
        except ApiError as err:
            if err.status == 404 and ns and not w.st.is_namespaces and "namespace" in err.message.lower():
                self.ns_ready.discard(ns)
                await self.ensure_namespace(ns)
                out = await self.down.apply(path, desired, self.syncer.manager)
                w.wrote(out, hub=False)
                return out
            if err.status == 404:
                raise SyncFailure("TypeNotServed", f"cluster {self.syncer.cluster_name} does not serve "
                                  f"{w.st.down.group_resource}/{w.st.down.version}: {err.message}", retriable=True) from err
            raise
        w.wrote(out, hub=False)
        return out

    async def ensure_namespace(self, ns: str) -> None:
        if ns in self.ns_ready:
            return
        path = f"/api/v1/namespaces/{ns}"
        live = await self.down.get(path)
        if live is None:
            body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {
                "name": ns, "labels": {C.MANAGED_LABEL: self.syncer.label_value},
                "annotations": {C.LOGICAL_CLUSTER_ANNOTATION: self.syncer.logical_cluster,
                                C.CLUSTER_NAME_ANNOTATION: self.syncer.cluster_name, C.AUTO_NAMESPACE_ANNOTATION: "true"}}}
            try:
                await self.down.request("POST", "/api/v1/namespaces", body=body, query={"fieldManager": self.syncer.manager})
            except ApiError as err:
                if err.status != 409:
                    raise
        elif (live.get("status") or {}).get("phase") == "Terminating":
            raise SyncFailure("NamespaceTerminating", f"namespace {ns} is terminating in cluster {self.syncer.cluster_name}", retriable=True)
        self.ns_ready.add(ns)

    async def _write_state(self, w: TypeWorker, hub: dict, state: tuple[str, str, str], *, add_finalizer: bool) -> dict:
        """Record the sync state (and our finalizer) on the hub object when they change.

        An object created with our finalizer already on (the splitter's children: it sets it for
        the cluster it labels the child for) and no state yet is not written for a plain success
        (Created, Applied): its status coming up shows it runs, and that write would be the only
        one. Anything else (Failed, DriftReverted, Adopted, Conflict...) is recorded, and once a
        state is recorded every change of it is."""
        meta = _meta(hub)
        fins = list(meta.get("finalizers") or [])
        need_fin = add_finalizer and self.finalizer not in fins and not _deleting(hub)
        prev = _state_of(hub)
        need_state = (prev.get("state"), prev.get("reason"), prev.get("message"), prev.get("cluster")) != (*state, self.syncer.cluster_name)
        if need_state and not prev and not need_fin and self.finalizer in fins \
                and state[0] == "Synced" and state[1] in _QUIET_REASONS:
            need_state = False
        if not (need_fin or need_state):
            return hub
        md: dict = {}
        if need_fin:
            md["finalizers"] = [*fins, self.finalizer]
            md["resourceVersion"] = meta.get("resourceVersion")
        if need_state:
            md["annotations"] = {C.SYNC_STATE_ANNOTATION: orjson.dumps({
                "cluster": self.syncer.cluster_name, "state": state[0], "reason": state[1], "message": state[2],
                "time": now_rfc3339()}).decode()}
        try:
            out = await self.hub.patch(w.st.hub.path(meta.get("namespace") or "", meta["name"]), {"metadata": md},
                                       MERGE_PATCH, self.syncer.manager)
            w.wrote(out, hub=True)
            return out
        except ApiError as err:
            if err.status == 404:
                return hub
            raise

    @staticmethod
    def _status_for_hub(hub: dict, down: dict, dhash: str) -> Any:
        """The cluster's status as the hub should show it: ``observedGeneration`` counts the
        cluster's generations, so it becomes the hub's generation once the cluster's controller
        has seen the hub's current spec (``kubectl rollout status`` on the hub relies on it),
        and stays as it was until then."""
        ds = down.get("status")
        if not isinstance(ds, dict) or not isinstance(ds.get("observedGeneration"), int):
            return ds
        out = dict(ds)
        dgen, hgen = _meta(down).get("generation"), _meta(hub).get("generation")
        caught_up = isinstance(dgen, int) and ds["observedGeneration"] >= dgen \
            and _annotations(down).get(C.SPEC_HASH_ANNOTATION) == dhash
        if caught_up and isinstance(hgen, int):
            out["observedGeneration"] = hgen
        else:
            prev = (hub.get("status") or {}).get("observedGeneration")
            if isinstance(prev, int):
                out["observedGeneration"] = prev
            else:
                out.pop("observedGeneration")
        return out

    def _status_due(self, key: tuple[str, str, str], ds: Any) -> bool:
        """The status-up debounce: True when ``ds`` is to be written now, else the key is queued
        for when it will be (STATUS_QUIET after its last change, at most STATUS_MAX_DELAY after
        the first one not yet written)."""
        now = time.monotonic()
        p = self.status_pending.get(key)
        if p is None:
            p = self.status_pending[key] = [now, now, ds]
        elif p[2] != ds:
            p[1], p[2] = now, ds
        due = min(p[1] + STATUS_QUIET, p[0] + STATUS_MAX_DELAY)
        if now >= due:
            del self.status_pending[key]
            return True
        self.queue.add_after(key, due - now + 0.01)
        return False

    async def _sync_status(self, w: TypeWorker, key: tuple[str, str, str], hub: dict, down: dict, dhash: str) -> None:
        st = w.st
        if not (st.status_up or st.status_down):
            return
        hs, ds = hub.get("status"), self._status_for_hub(hub, down, dhash)
        if (hs or {}) == (ds or {}):
            self.status_pending.pop(key, None)
            return
        mgr = self.syncer.manager
        if st.status_up and ds is not None and (_foreign_status(down, mgr) or not _foreign_status(hub, mgr)):
            if not self._status_due(key, ds):
                return
            meta = _meta(hub)
            w.wrote(await self.hub.patch(st.hub.path(meta.get("namespace") or "", meta["name"], "status"),
                                         [{"op": "add", "path": "/status", "value": ds}], JSON_PATCH, mgr), hub=True)
        elif st.status_down and hs is not None and hs != down.get("status") and _foreign_status(hub, mgr) \
                and not _foreign_status(down, mgr):
            meta = _meta(down)
            w.wrote(await self.down.patch(st.down.path(meta.get("namespace") or "", meta["name"], "status"),
                                          [{"op": "add", "path": "/status", "value": hs}], JSON_PATCH, mgr), hub=False)

    async def _retained_up(self, w: TypeWorker, hub: dict, down: dict, retained: list[str]) -> None:
        ops = []
        for p in retained:
            dv = get_path(down, p)
            if dv is not MISSING and dv != get_path(hub, p):
                parts = _split(p)
                for i in range(1, len(parts)):
                    if get_path(hub, ".".join(parts[:i])) is MISSING:
                        ops.append({"op": "add", "path": "/" + "/".join(parts[:i]), "value": {}})
                ops.append({"op": "add", "path": "/" + "/".join(parts), "value": dv})
        if ops:
            meta = _meta(hub)
            w.wrote(await self.hub.patch(w.st.hub.path(meta.get("namespace") or "", meta["name"]), ops, JSON_PATCH,
                                         self.syncer.manager), hub=True)

    async def _remove_finalizer(self, w: TypeWorker, hub: dict, clear_state: bool = False) -> None:
        meta = _meta(hub)
        w.written_hub.pop((meta.get("namespace") or "", meta.get("name") or ""), None)
        path = w.st.hub.path(meta.get("namespace") or "", meta["name"])
        for _ in range(3):
            fins = list(meta.get("finalizers") or [])
            ops: list[dict] = []
            if self.finalizer in fins:
                i = fins.index(self.finalizer)
                ops += [{"op": "test", "path": f"/metadata/finalizers/{i}", "value": self.finalizer},
                        {"op": "remove", "path": f"/metadata/finalizers/{i}"}]
            if clear_state and C.SYNC_STATE_ANNOTATION in (meta.get("annotations") or {}):
                ops.append({"op": "remove", "path": "/metadata/annotations/" + C.SYNC_STATE_ANNOTATION.replace("/", "~1")})
            if not ops:
                return
            try:
                await self.hub.patch(path, ops, JSON_PATCH, self.syncer.manager)
                return
            except ApiError as err:
                if err.status == 404:
                    return
                if err.status not in (409, 422):
                    raise
            live = await self.hub.get(path)
            if live is None:
                return
            meta = _meta(live)

    async def _delete_down(self, w: TypeWorker, down: dict) -> bool:
        """Delete our copy in the cluster; True once it is gone."""
        ns, name = _meta(down).get("namespace") or "", _meta(down).get("name") or ""
        w.written_down.pop((ns, name), None)
        path = w.st.down.path(ns, name)
        if not _deleting(down):
            await self.down.delete(path, uid=_meta(down).get("uid"))
        live = await self.down.get(path)
        return live is None or not self._ours(live) or _meta(live).get("uid") != _meta(down).get("uid")

    async def _gone_from_hub(self, w: TypeWorker, key: tuple[str, str, str], down: dict | None) -> None:
        """Not (or no longer) labelled for this cluster on the hub, or deleted there."""
        st, ns, name = w.st, key[1], key[2]
        live = await self.hub.get(st.hub.path(ns, name))
        if live is not None and self._for_us(live):
            self.queue.add_after(key, 0.5)  # the cache is behind the hub: look again
            return
        if down is not None and self._ours(down):
            if st.is_namespaces and _annotations(down).get(C.AUTO_NAMESPACE_ANNOTATION) == "true":
                pass  # created only to hold objects: left in place
            elif not await self._delete_down(w, down):
                self.queue.add_after(key, 1.0)
                return
            elif live is not None:
                self.syncer.events.event(self._ref(w, live), "Normal", "Removed",
                                        f"no longer labelled {C.CLUSTER_LABEL}={self.syncer.cluster_name}; deleted from the cluster")
        if live is not None:
            await self._remove_finalizer(w, live, clear_state=True)
        self.state.pop(key, None)
        self.observed.pop(key, None)
        self.status_pending.pop(key, None)

    async def _hub_deleting(self, w: TypeWorker, key: tuple[str, str, str], hub: dict, down: dict | None) -> None:
        st, ns, name = w.st, key[1], key[2]
        if down is None:
            live = await self.down.get(st.down.path(ns, name if st.is_namespaces else downstream_name(hub)))
            down = live if self._ours(live) and (st.is_namespaces or upstream_name(live or {}) == name) else None
        if down is not None:
            if not await self._delete_down(w, down):
                self.state[key] = ("Synced", "Deleting", f"waiting for the deletion in cluster {self.syncer.cluster_name}")
                self.queue.add_after(key, 1.0)
                return
            self.syncer.events.event(self._ref(w, hub), "Normal", "Deleted", f"deleted from cluster {self.syncer.cluster_name}")
        if self.finalizer in (_meta(hub).get("finalizers") or []):
            await self._remove_finalizer(w, hub)
        self.state.pop(key, None)
        self.observed.pop(key, None)
        self.status_pending.pop(key, None)
