"""The generic registry store: kube-apiserver's REST semantics over a revisioned store.

Every type goes through the same create/update/patch/delete/list/watch code; what differs
per type comes from its ``Strategy`` (and, for custom resources, the CRD's structural
schema). Reads come from the watch cache after it has caught up with the store, writes go
to the store guarded by the revision they were computed from.
"""

from __future__ import annotations

import asyncio
import base64
import builtins
import contextlib
import itertools
import random
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..apimachinery import errors as e
from ..apimachinery.errors import FieldError, StatusError
from ..apimachinery.fields import FieldSelector
from ..apimachinery.jsonvalue import dumps_to_keep
from ..apimachinery.labels import LabelSelector
from ..apimachinery.metatime import now_rfc3339, parse_time
from ..pipeline.admission.chain import CREATE, DELETE, UPDATE, Chain
from ..pipeline.admission.chain import Request as AdmissionRequest
from ..pipeline.user import UserInfo
from ..storage import keys
from ..storage.interface import (
    CompactedError,
    KeyExistsError,
    KeyNotFoundError,
    RevisionMismatchError,
    Store,
)
from ..storage.watchcache import CachedObject, WatchCache, Watcher, WatchEvent
from . import apply as ssa
from . import patch as patching
from .conversion import Conversion, converts
from .decode import check_delete_options, check_object_meta, drop_nulls
from .meta import CLUSTER_ANNOTATION, generate_name, new_uid
from .offload import OFF_LOOP_BYTES, off_loop
from .types import ResourceType
from .validation import validate_object_meta

SYSTEM_META = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation")
ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"
MAX_UPDATE_RETRIES = 20


class KeyLocks:
    """One asyncio lock per object key, held only while a write to that key is in flight.

    Read-mutate-write on one key is serialized inside a replica, so concurrent patches queue
    instead of losing revision races to each other (and running out of retries); only writers
    in other replicas can still race, and the retry loop covers those.
    """

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(key) or (asyncio.Lock(), 0)
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)


@dataclass
class Context:
    """What a request brings besides its body: where it goes and how to treat it."""

    cluster: str
    namespace: str = ""
    manager: str = ""
    dry_run: bool = False
    field_validation: str = ""  # "", Ignore, Warn, Strict
    warnings: list[str] = field(default_factory=list)
    #: who asks (admission plugins see it); None for the hub's own in-process controllers
    user: UserInfo | None = None
    #: annotations admission adds to the request's audit event (webhooks)
    audit_annotations: dict[str, str] = field(default_factory=dict)
    #: the request body's size in bytes: a large one's heavy work runs off the event loop
    body_size: int = 0


@dataclass(slots=True)
class ListOptions:
    label_selector: LabelSelector | None = None
    field_selector: FieldSelector | None = None
    limit: int = 0
    continue_token: str = ""
    resource_version: str = ""
    resource_version_match: str = ""


def copy_obj(obj: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a JSON object (orjson round trip is faster than copy.deepcopy)."""
    copied: dict[str, Any] = orjson.loads(orjson.dumps(obj))
    return copied


def _selects(selector: LabelSelector | FieldSelector | None) -> bool:
    return selector is not None and not selector.empty()


def encode_continue(rev: int, key: str) -> str:
    return base64.urlsafe_b64encode(orjson.dumps({"v": "meta.k8s.io/v1", "rv": rev, "start": key})).decode()


def decode_continue(token: str) -> tuple[int, str]:
    try:
        data = orjson.loads(base64.urlsafe_b64decode(token.encode() + b"=" * (-len(token) % 4)))
        return int(data["rv"]), str(data["start"])
    except Exception:
        raise e.bad_request("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)") from None


class GenericStore:
    def __init__(self, storage: Store, cache: WatchCache, admission: Chain | None = None,
                 conversion: Conversion | None = None) -> None:
        self.storage = storage
        self.cache = cache
        #: the admission chain every write meets, on every verb path (dry-run included)
        self.admission = admission or Chain()
        #: CRD conversion webhooks, for custom resources served in a version they are not stored in
        self.conversion = conversion or Conversion()
        self._locks = KeyLocks()

    # -- keys and presentation ------------------------------------------------------------

    @staticmethod
    def key(rt: ResourceType, cluster: str, namespace: str, name: str) -> str:
        stored = rt.stored_as or rt
        return keys.object_key(stored.group, stored.plural, cluster, namespace if rt.namespaced else "", name)

    @staticmethod
    def prefix(rt: ResourceType) -> str:
        stored = rt.stored_as or rt
        return keys.resource_prefix(stored.group, stored.plural)

    def present(self, rt: ResourceType, obj: dict[str, Any], *, private: bool = False) -> dict[str, Any]:
        """The object as served in ``rt``'s version (stored objects are never mutated).
        ``private``: ``obj`` is the caller's alone (a write's own object, which the watch cache
        does not share): changed in place instead of copied."""
        if rt.stored_as is not None and obj.get("apiVersion") == rt.stored_as.api_version:
            return rt.stored_as.from_storage(obj)
        if rt.custom or obj.get("apiVersion") != rt.api_version:
            if obj.get("apiVersion") != rt.api_version and converts(rt):
                raise e.internal(f"{rt.kind} {obj.get('apiVersion')} -> {rt.api_version}: not converted")
            if not private:
                obj = copy_obj(obj)
            obj["apiVersion"] = rt.api_version
            rt.strategy.on_read(obj)
        return obj

    def presented(self, rt: ResourceType, co: CachedObject) -> dict[str, Any]:
        """``present`` for a cached object, memoized on it (the cache never changes an object:
        a new revision is a new CachedObject). Callers must not change the result."""
        view = co.view
        if view is None or view[0] is not rt:
            obj = self.present(rt, co.obj)
            if obj is not co.obj and obj == co.obj:
                obj = co.obj  # nothing changed on read: no second copy to keep
            view = co.view = [rt, obj, None]
        presented: dict[str, Any] = view[1]  # co.view is [rt, the presented object, its JSON or None]
        return presented

    def presented_json(self, rt: ResourceType, co: CachedObject) -> bytes:
        """The JSON of ``presented``, encoded once per object version."""
        self.presented(rt, co)
        view = co.view
        if view[2] is None:
            view[2] = dumps_to_keep(view[1])  # kept as long as the object's version
        encoded: bytes = view[2]
        return encoded

    async def converted(self, rt: ResourceType, objs: builtins.list[dict[str, Any]], list_kind: bool = False) -> builtins.list[dict[str, Any]]:
        """Stored objects as served in ``rt``'s version: through the CRD's conversion webhook
        (one review for all that need it, then pruned and defaulted by ``rt``'s schema) when
        it has one, else as :meth:`present` makes them."""
        if not converts(rt) or all(o.get("apiVersion") == rt.api_version for o in objs):
            return [self.present(rt, o) for o in objs]
        described = f"{rt.api_version}, Kind={rt.list_kind}" if list_kind else ""
        out = await self.conversion.convert(rt, objs, rt.api_version, described)
        served = []
        for before, obj in zip(objs, out, strict=True):
            if obj is before:
                served.append(self.present(rt, obj))
                continue
            if rt.schema is not None:
                rt.schema.prune(obj)
            rt.strategy.on_read(obj)
            served.append(obj)
        return served

    async def present_converted(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """:meth:`present`, converting through the CRD's webhook if the version differs."""
        if not converts(rt) or obj.get("apiVersion") == rt.api_version:
            return self.present(rt, obj)
        (served,) = await self.converted(rt, [obj])
        return served

    async def stored_converted(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """:meth:`stored_form`, converting to the storage version through the CRD's webhook
        when the object is in another version."""
        storage_version = rt.storage_api_version()
        if not converts(rt) or obj.get("apiVersion") in (None, storage_version):
            return self.stored_form(rt, obj)
        (stored,) = await self.conversion.convert(rt, [obj], storage_version)
        stored = dict(stored)
        stored["metadata"] = {k: v for k, v in stored["metadata"].items() if k != "resourceVersion"}
        if rt.storage_schema is not None:  # what the storage version has no field for is dropped, as kube's coercer does
            rt.storage_schema.prune(stored)
            rt.storage_schema.default(stored)
        return stored

    @staticmethod
    def stored_form(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """``obj`` as it is stored: in the storage version, without its resourceVersion. A dict
        of its own with a metadata of its own; deeper it shares ``obj``'s values."""
        stored = rt.stored_as.to_storage(obj) if rt.stored_as is not None else {**obj, "apiVersion": rt.storage_api_version()}
        stored["metadata"] = {k: v for k, v in stored["metadata"].items() if k != "resourceVersion"}
        return stored

    async def _put(self, key: str, stored: dict[str, Any], revision: int | None) -> tuple[int, bool]:
        """Store ``stored`` (:meth:`stored_form`) at ``key``: a create when ``revision`` is None,
        else an update guarded by it. Returns the write's revision, and whether the watch cache
        took ``stored`` itself (then it shares the written object's values).

        A large object is handed to the watch cache, which takes it instead of decoding the
        value again: a C call that would hold the GIL, and so every other request, some 100 ms
        for a 4 MiB value. It shares all but its two top levels with the object the write
        returns; both are read-only from here on (as every object the store returns). Small
        objects are decoded, so that the cache shares nothing with in-process callers."""
        value = orjson.dumps(stored)
        handed = len(value) >= OFF_LOOP_BYTES
        with self.cache.handing(key, value, stored) if handed else contextlib.nullcontext():
            if revision is None:
                return await self.storage.create(key, value), handed
            return await self.storage.update(key, value, revision), handed

    # -- reads ------------------------------------------------------------------------------

    async def get(self, rt: ResourceType, ctx: Context, name: str) -> dict[str, Any]:
        await self.cache.sync()
        cur = self.cache.resource(self.prefix(rt)).get(self.key(rt, ctx.cluster, ctx.namespace, name)) \
            or self._default(rt, ctx.cluster, name)
        if cur is None:
            raise e.not_found(rt.group, rt.plural, name)
        if converts(rt):
            return await self.present_converted(rt, cur.obj)
        return self.presented(rt, cur)

    def _default(self, rt: ResourceType, cluster: str, name: str) -> CachedObject | None:
        """A shared default object (``rt.defaults``) of ``cluster``, as if cached at revision 0
        (not stored: an update then creates this cluster's copy, see :meth:`_write_update`)."""
        if rt.defaults is None or cluster == "*":
            return None
        obj = rt.defaults(cluster).get(name)
        return None if obj is None else self._default_object(rt, cluster, name, obj)

    def _default_object(self, rt: ResourceType, cluster: str, name: str, obj: dict[str, Any]) -> CachedObject:
        return CachedObject(self.key(rt, cluster, "", name), cluster, "", name, 0, obj)

    def _defaults(self, rt: ResourceType, cluster: str | None, stored: builtins.list[CachedObject]) -> builtins.list[CachedObject]:
        """The defaults of ``cluster`` no stored object shadows."""
        if rt.defaults is None or cluster is None:
            return []
        have = {o.name for o in stored}
        return [self._default_object(rt, cluster, name, obj) for name, obj in rt.defaults(cluster).items() if name not in have]

    def _matcher(self, rt: ResourceType, opts: ListOptions) -> Callable[[CachedObject], bool]:
        labels = opts.label_selector
        fields = opts.field_selector
        has_labels, has_fields = _selects(labels), _selects(fields)
        getters = rt.field_selectors

        def match(o: CachedObject) -> bool:
            if has_labels and not labels.matches(o.obj["metadata"].get("labels")):  # type: ignore[union-attr]
                return False
            if has_fields and not fields.matches(o.obj, getters):  # type: ignore[union-attr]
                return False
            return True

        return match

    async def list(self, rt: ResourceType, ctx: Context, opts: ListOptions) -> dict[str, Any]:
        """A list body; ``ctx.cluster`` "*" lists every logical cluster."""
        found, meta = await self._select(rt, ctx, opts)
        if converts(rt):
            items = await self.converted(rt, [o.obj for o in found], list_kind=True)
        else:
            items = [self.presented(rt, o) for o in found]
        return {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": meta, "items": items}

    async def list_json(self, rt: ResourceType, ctx: Context, opts: ListOptions) -> bytes:
        """``list`` encoded, from each object's memoized JSON."""
        found, meta = await self._select(rt, ctx, opts)
        head = orjson.dumps({"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": meta})
        if converts(rt):
            items = [orjson.dumps(o) for o in await self.converted(rt, [o.obj for o in found], list_kind=True)]
        else:
            items = [self.presented_json(rt, o) for o in found]
        return head[:-1] + b',"items":[' + b",".join(items) + b"]}"

    async def _select(self, rt: ResourceType, ctx: Context, opts: ListOptions) -> tuple[builtins.list[CachedObject], dict[str, Any]]:
        if opts.continue_token:
            token_rev, start = decode_continue(opts.continue_token)
            if token_rev < self.cache.resource(self.prefix(rt)).oldest_revision and token_rev < await self.storage.compacted_revision():
                raise e.gone("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.")
        else:
            start = ""
        rev = await self.cache.sync()
        rc = self.cache.resource(self.prefix(rt))
        cluster = None if ctx.cluster == "*" else ctx.cluster
        match = self._matcher(rt, opts)
        namespace = ctx.namespace or None
        name = opts.field_selector.exact_value("metadata.name") if opts.field_selector else None
        streamed = False
        if name is not None and cluster is not None and (not rt.namespaced or namespace):
            one = rc.get(self.key(rt, cluster, ctx.namespace, name)) or self._default(rt, cluster, name)
            found = [one] if one is not None and match(one) and one.key > start else []
        elif rt.defaults is not None:
            found = [o for o in rc.objects(cluster, namespace) if match(o)]
            found += [o for o in self._defaults(rt, cluster, list(rc.objects(cluster, None))) if match(o)]
            found = sorted((o for o in found if o.key > start), key=lambda o: o.key)
        else:
            # the scope's range in key order from the page's start: a page reads its own objects only
            matching = (o for o in rc.objects(cluster, namespace, after=start) if match(o))
            found = list(itertools.islice(matching, opts.limit + 1) if opts.limit else matching)
            streamed = True
        meta: dict[str, Any] = {"resourceVersion": str(rev)}
        if opts.limit and len(found) > opts.limit:
            remaining = len(found) - opts.limit
            found = found[: opts.limit]
            meta["continue"] = encode_continue(rev, found[-1].key)
            # as kube's storage: counted only without selectors (with them the count would not be exact)
            if not (_selects(opts.label_selector) or _selects(opts.field_selector)):
                meta["remainingItemCount"] = rc.count(cluster, namespace, after=found[-1].key) if streamed else remaining
        return found, meta

    def watch(self, rt: ResourceType, ctx: Context, opts: ListOptions, since: int | None) -> tuple[Watcher, builtins.list[WatchEvent]]:
        cluster = None if ctx.cluster == "*" else ctx.cluster
        try:
            label = opts.label_selector.required_label() if opts.label_selector else None
            return self.cache.watch(self.prefix(rt), cluster, ctx.namespace or None, self._matcher(rt, opts), since, label)
        except CompactedError as exc:
            raise e.gone(f"too old resource version: {exc.requested} ({exc.compacted})") from None

    def initial_objects(self, rt: ResourceType, ctx: Context, opts: ListOptions) -> builtins.list[CachedObject]:
        cluster = None if ctx.cluster == "*" else ctx.cluster
        match = self._matcher(rt, opts)
        return [o for o in self.cache.resource(self.prefix(rt)).objects(cluster, ctx.namespace or None) if match(o)]

    # -- create -----------------------------------------------------------------------------

    def _prune_and_default(self, rt: ResourceType, ctx: Context, obj: dict[str, Any]) -> None:
        """Custom resources: drop unknown fields (or refuse them, under Strict), then default."""
        if rt.schema is None:
            return
        unknown = rt.schema.prune(obj)
        if unknown:
            self._unknown_fields(rt, ctx, obj, unknown)
        rt.schema.default(obj)

    def _decode_defaults(self, rt: ResourceType, ctx: Context, obj: dict[str, Any]) -> None:
        """What decoding a written body does: a custom type's pruning and schema defaults, then the
        type's scheme defaults (after the pruning, so an imported built-in kind's defaults are never
        unknown fields: registry/crd.py CustomResourceStrategy)."""
        self._prune_and_default(rt, ctx, obj)
        rt.strategy.default(obj)

    @staticmethod
    def _unknown_fields(rt: ResourceType, ctx: Context, obj: dict[str, Any], unknown: builtins.list[str]) -> None:
        if ctx.field_validation == "Strict":
            detail = ", ".join(f'unknown field "{p}"' for p in unknown)
            raise e.bad_request(f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: strict decoding error: {detail}')
        if ctx.field_validation == "Warn":
            ctx.warnings.extend(f'unknown field "{p}"' for p in unknown)

    def _validate(self, rt: ResourceType, ctx: Context, obj: dict[str, Any], old: dict[str, Any] | None) -> builtins.list[FieldError]:
        """The strategy's validation, and ObjectMeta's for custom resources."""
        errs = rt.strategy.validate(obj) if old is None else rt.strategy.validate_update(obj, old)
        if rt.custom:
            errs = validate_object_meta(obj, namespaced=rt.namespaced) + errs
        return errs

    def _admission(self, op: str, rt: ResourceType, ctx: Context, name: str, obj: dict[str, Any] | None, old: dict[str, Any] | None,
                   subresource: str = "", options: dict[str, Any] | None = None) -> AdmissionRequest:
        return AdmissionRequest(op, rt, ctx.cluster, ctx.namespace if rt.namespaced else "", name, obj, old,
                                subresource, ctx.user, ctx.dry_run, options or {},
                                warnings=ctx.warnings, audit_annotations=ctx.audit_annotations)

    def _invalid(self, rt: ResourceType, obj: dict[str, Any], errs: builtins.list[FieldError]) -> StatusError:
        name = (obj.get("metadata") or {}).get("name") or ""
        return e.invalid_object(rt.group, rt.kind, name, errs)

    async def create(self, rt: ResourceType, ctx: Context, obj: dict[str, Any], *, fields_owned: bool = True) -> dict[str, Any]:
        size = ctx.body_size
        check_object_meta(obj, rt.kind, rt.version)
        if not rt.custom:
            await off_loop(size, drop_nulls, obj)
        if obj.get("metadata") is None:
            obj["metadata"] = {}
        meta = obj["metadata"]
        if rt.namespaced:
            meta["namespace"] = ctx.namespace
        else:
            meta.pop("namespace", None)
        generated = False
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = generate_name(str(meta["generateName"]))
            generated = True
        for f in (*SYSTEM_META, "resourceVersion", "selfLink"):
            meta.pop(f, None)
        obj["apiVersion"] = rt.api_version
        obj["kind"] = rt.kind
        rt.strategy.canonicalize(obj)
        await off_loop(size, self._decode_defaults, rt, ctx, obj)
        now = now_rfc3339()
        if fields_owned and ctx.manager:
            # Before admission, as kube's create handler: the manager owns what it sent (with the
            # type's defaults), not what mutating admission adds (a Pod's serviceAccountName, ...).
            # A status the strategy resets on create (a status subresource) is not the manager's
            # either (kube's reset fields).
            owned = {k: v for k, v in obj.items() if k != "status"} if rt.strategy.status_subresource else obj
            managed = await off_loop(size, ssa.update_managed_fields, None, owned, manager=ctx.manager,
                                     api_version=rt.api_version, now=now, list_type_at=rt.list_type_at)
            meta = obj["metadata"] = managed["metadata"]
        review = self._admission(CREATE, rt, ctx, str(meta.get("name") or ""), obj, None)
        await self.admission.admit(review)
        rt.strategy.prepare_for_create(obj)
        errs = await off_loop(size, self._validate, rt, ctx, obj, None)
        if errs:
            raise self._invalid(rt, obj, errs)
        await self.admission.validate(review)
        meta = obj["metadata"]
        # a strategy may have set it in prepare_for_create (kube sets the uid before Validate: a
        # Job's generated selector names it); the client's own uid was dropped above
        meta["uid"] = meta.get("uid") or new_uid()
        meta["creationTimestamp"] = now
        if rt.strategy.tracks_generation:
            meta["generation"] = 1
        if not isinstance(meta.get("annotations"), dict):
            meta["annotations"] = {}
        meta["annotations"][CLUSTER_ANNOTATION] = ctx.cluster
        rt.strategy.before_write(obj, None, ctx.cluster)
        if ctx.dry_run:
            return self.present(rt, obj, private=True)
        key = self.key(rt, ctx.cluster, ctx.namespace, meta["name"])
        try:
            rev, handed = await self._put(key, await self.stored_converted(rt, obj), None)
        except KeyExistsError:
            err = e.already_exists(rt.group, rt.plural, meta["name"])
            if generated:
                err.message += ", the server was not able to generate a unique name for the object"
                err.details = (err.details or {}) | {"retryAfterSeconds": 1}
            raise err from None
        meta["resourceVersion"] = str(rev)
        return self.present(rt, obj, private=not handed)

    # -- update -----------------------------------------------------------------------------

    async def _current(self, rt: ResourceType, key: str) -> CachedObject | None:
        await self.cache.sync()
        return self.cache.resource(self.prefix(rt)).get(key)

    async def update(self, rt: ResourceType, ctx: Context, name: str, obj: dict[str, Any], *, subresource: str = "") -> dict[str, Any]:
        """PUT: replace the object; its metadata.resourceVersion (if any) is a precondition."""
        check_object_meta(obj, rt.kind, rt.version)
        if not isinstance(obj.get("metadata"), dict):
            raise self._invalid(rt, obj, [e.required("metadata")])
        body_name = obj["metadata"].get("name")
        if body_name and body_name != name:
            raise e.bad_request(f'the name of the object ({body_name}) does not match the name on the URL ({name})')
        rv = obj["metadata"].get("resourceVersion")
        if rv == "0":  # kube parses it as revision 0: no precondition, as when it is absent
            rv = None
        if not rv and not rt.strategy.allow_unconditional_update:
            raise self._invalid(rt, obj, [e.invalid("metadata.resourceVersion", "0x0", "must be specified for an update")])

        def mutate(cur: dict[str, Any]) -> dict[str, Any]:
            new = obj
            new["metadata"]["name"] = name
            return new

        return await self.guaranteed_update(rt, ctx, name, mutate, subresource=subresource, precondition_rv=rv or None)

    async def patch(self, rt: ResourceType, ctx: Context, name: str, patch_type: str, body: Any,
                    *, subresource: str = "", force: bool = False) -> tuple[dict[str, Any], bool]:
        """PATCH; returns (object, created). Apply patches create a missing object."""
        if patch_type == "apply":
            return await self._apply(rt, ctx, name, body, subresource=subresource, force=force)
        meta = rt.patch_meta

        def mutate(cur: dict[str, Any]) -> dict[str, Any]:
            if patch_type == "json":
                new = patching.apply_json_patch(cur, body)
            elif patch_type == "merge":
                new = patching.apply_merge_patch(cur, body)
            else:
                new = patching.apply_strategic_merge_patch(cur, body, meta)
            if not isinstance(new, dict) or not isinstance(new.get("metadata"), dict):
                raise e.unprocessable()
            return new

        obj = await self.guaranteed_update(rt, ctx, name, mutate, subresource=subresource, patch=True)
        return obj, False

    async def _apply(self, rt: ResourceType, ctx: Context, name: str, config: Any, *, subresource: str, force: bool) -> tuple[dict[str, Any], bool]:
        if not ctx.manager:
            raise StatusError(422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
                              {"group": "meta.k8s.io", "kind": "PatchOptions", "causes": [{"reason": "FieldValueRequired", "message": "Required value: is required for apply patch", "field": "fieldManager"}]})
        if not isinstance(config, dict):
            raise e.bad_request("error decoding YAML: the applied configuration must be an object")
        check_object_meta(config, rt.kind, rt.version)
        cmeta = config.get("metadata") or {}
        if cmeta.get("name") and cmeta["name"] != name:
            raise e.bad_request(f'the name of the object ({cmeta["name"]}) does not match the name on the URL ({name})')
        if config.get("kind") and config["kind"] != rt.kind:
            raise e.bad_request(f'the API version in the data ({config.get("apiVersion")}) does not match the expected API version ({rt.api_version})'
                                if config.get("apiVersion") != rt.api_version else f'kind {config["kind"]} does not match expected {rt.kind}')
        if rt.strategy.status_subresource and not subresource and "status" in config:
            # The strategy resets status on the main resource: it is not the applier's to own
            # (kube's reset fields), as on create and update.
            config = {k: v for k, v in config.items() if k != "status"}
        list_types = rt.list_type_at
        key = self.key(rt, ctx.cluster, ctx.namespace, name)
        cur = await self._current(rt, key)
        if cur is None and not subresource:
            applied = await off_loop(ctx.body_size, ssa.server_side_apply, None, copy_obj(config), manager=ctx.manager,
                                     force=force, api_version=rt.api_version, now=now_rfc3339(), list_type_at=list_types)
            applied.setdefault("metadata", {})["name"] = name
            try:
                return await self.create(rt, ctx, applied, fields_owned=False), True
            except StatusError as err:
                if err.reason != "AlreadyExists":
                    raise
        rv = cmeta.get("resourceVersion")

        def mutate(cur_obj: dict[str, Any]) -> dict[str, Any]:
            return ssa.server_side_apply(cur_obj, copy_obj(config), manager=ctx.manager, force=force, api_version=rt.api_version,
                                         now=now_rfc3339(), list_type_at=list_types, subresource=subresource or None)

        obj = await self.guaranteed_update(rt, ctx, name, mutate, subresource=subresource, precondition_rv=rv or None,
                                           patch=True, managed=False)
        return obj, False

    async def guaranteed_update(self, rt: ResourceType, ctx: Context, name: str, mutate: Callable[[dict[str, Any]], dict[str, Any]], *,
                                subresource: str = "", precondition_rv: str | None = None, patch: bool = False,
                                managed: bool = True) -> dict[str, Any]:
        """Read, mutate, write guarded by the read's revision; retry on races the client did not pin.
        A resourceVersion of "0" pins nothing (kube parses it as revision 0), on every verb path."""
        if precondition_rv == "0":
            precondition_rv = None
        key = self.key(rt, ctx.cluster, ctx.namespace, name)
        async with self._locks.hold(key):
            for attempt in range(MAX_UPDATE_RETRIES):
                cur = await self._current(rt, key) or self._default(rt, ctx.cluster, name)
                if cur is None:
                    raise e.not_found(rt.group, rt.plural, name)
                old = await self.present_converted(rt, cur.obj)
                encoded = orjson.dumps(old)  # a copy to change (orjson is faster than copy.deepcopy), and a size
                size = max(ctx.body_size, len(encoded))
                new = await off_loop(size, mutate, orjson.loads(encoded))
                new_rv = new.get("metadata", {}).get("resourceVersion") if isinstance(new.get("metadata"), dict) else None
                want = precondition_rv or (new_rv if patch and new_rv != "0" else None)  # a patch may pin one too
                if want and want != old["metadata"]["resourceVersion"]:
                    raise e.conflict(rt.group, rt.plural, name, e.OPTIMISTIC_LOCK)
                result = await off_loop(size, self._prepare_update, rt, ctx, name, new, old, subresource, managed)
                # on the loop: a strategy's last step may read the cache (a CRD's name conflicts)
                rt.strategy.before_write(result, old, ctx.cluster)
                if _same(result, old):  # nothing changed: no write, as kube
                    return old
                review = self._admission(UPDATE, rt, ctx, name, result, old, subresource)
                await self.admission.admit(review)
                await self.admission.validate(review)
                try:
                    return await self._write_update(rt, ctx, key, result, old, cur.revision)
                except RevisionMismatchError:
                    # Lost a race. A pinned resourceVersion (the request's, or one the patch itself sets)
                    # fails on the next round's check against the fresh object; anything else is
                    # re-applied to it, as kube's GuaranteedUpdate does.
                    if precondition_rv:
                        raise e.conflict(rt.group, rt.plural, name, e.OPTIMISTIC_LOCK) from None
                    await asyncio.sleep(random.uniform(0, 0.002 * attempt))  # another replica: back off, jittered
                    continue
                except KeyNotFoundError:
                    raise e.not_found(rt.group, rt.plural, name) from None
            raise e.conflict(rt.group, rt.plural, name, "too many concurrent updates; please try again")

    def _prepare_update(self, rt: ResourceType, ctx: Context, name: str, new: dict[str, Any], old: dict[str, Any],
                        subresource: str, managed: bool) -> dict[str, Any]:
        """The new object, checked and completed (before the strategy's ``before_write``)."""
        check_object_meta(new, rt.kind, rt.version)
        if not rt.custom:
            drop_nulls(new)
        if not isinstance(new.get("metadata"), dict):
            raise self._invalid(rt, new, [e.required("metadata")])
        meta = new["metadata"]
        old_meta = old["metadata"]
        if new.get("apiVersion") not in (None, rt.api_version) or new.get("kind") not in (None, rt.kind):
            raise e.bad_request(f'the API version in the data ({new.get("apiVersion")}) does not match the expected API version ({rt.api_version})'
                                if new.get("apiVersion") != rt.api_version else f'the kind in the data ({new.get("kind")}) does not match the expected kind ({rt.kind})')
        new["apiVersion"], new["kind"] = rt.api_version, rt.kind
        if meta.get("name") not in (None, name):
            raise self._invalid(rt, new, [e.invalid("metadata.name", meta.get("name"), "field is immutable")])
        meta["name"] = name
        if rt.namespaced:
            if meta.get("namespace") not in (None, "", ctx.namespace):
                raise e.bad_request("the namespace of the provided object does not match the namespace sent on the request")
            meta["namespace"] = ctx.namespace
        for f in SYSTEM_META:
            if f in old_meta:
                meta[f] = old_meta[f]
            else:
                meta.pop(f, None)
        meta["resourceVersion"] = old_meta["resourceVersion"]
        annotations = meta.get("annotations")
        if not isinstance(annotations, dict):
            annotations = meta["annotations"] = {}
        annotations[CLUSTER_ANNOTATION] = ctx.cluster
        if subresource == "status":
            new = rt.strategy.prepare_for_status_update(new, old)
            meta = new["metadata"]
            self._prune_and_default(rt, ctx, new)
        elif subresource == "finalize":
            new = rt.strategy.prepare_for_finalize(new, old)  # type: ignore[attr-defined]
            meta = new["metadata"]
        else:
            rt.strategy.canonicalize(new)
            self._decode_defaults(rt, ctx, new)
            rt.strategy.prepare_for_update(new, old)
        errs = self._validate(rt, ctx, new, old)
        if old_meta.get("deletionTimestamp"):
            added = set(meta.get("finalizers") or []) - set(old_meta.get("finalizers") or [])
            if added:
                errs.append(e.forbidden("metadata.finalizers", f"no new finalizers can be added if the object is being deleted, found new finalizers {sorted(added)!r}".replace("'", '"')))
        if errs:
            raise self._invalid(rt, new, errs)
        if rt.strategy.tracks_generation and rt.strategy.spec_changed(new, old):
            meta["generation"] = int(old_meta.get("generation") or 0) + 1
        if managed and ctx.manager:
            new = ssa.update_managed_fields(old, new, manager=ctx.manager, api_version=rt.api_version, now=now_rfc3339(),
                                            list_type_at=rt.list_type_at, subresource=subresource or None)
        return new

    async def _write_update(self, rt: ResourceType, ctx: Context, key: str, new: dict[str, Any], old: dict[str, Any], revision: int) -> dict[str, Any]:
        meta = new["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers") and _no_spec_finalizers(new):
            # The last finalizer is gone: the object goes (store.go ShouldDeleteDuringUpdate).
            if ctx.dry_run:
                return self.present(rt, new)
            await self.storage.delete(key, revision)
            return self.present(rt, new)
        if ctx.dry_run:
            return self.present(rt, new)
        if revision == 0:
            # a shared default changed for the first time (copy-on-write): this cluster's own copy
            try:
                rev, handed = await self._put(key, await self.stored_converted(rt, new), None)
            except KeyExistsError:
                raise RevisionMismatchError(key, None) from None  # another writer stored it first: retry
        else:
            rev, handed = await self._put(key, await self.stored_converted(rt, new), revision)
        meta["resourceVersion"] = str(rev)
        return self.present(rt, new, private=not handed)

    # -- delete -----------------------------------------------------------------------------

    async def delete(self, rt: ResourceType, ctx: Context, name: str, options: dict[str, Any]) -> tuple[dict[str, Any], int, bool]:
        """DELETE; returns (body, http code, whether the body is the object rather than a Status)."""
        key = self.key(rt, ctx.cluster, ctx.namespace, name)
        check_delete_options(options)
        policy = options.get("propagationPolicy")
        if policy is None and options.get("orphanDependents") is not None:
            policy = "Orphan" if options["orphanDependents"] else "Background"
        if policy not in (None, "Background", "Foreground", "Orphan"):
            raise e.invalid_object("meta.k8s.io", "DeleteOptions", "", [e.not_supported("propagationPolicy", policy, ["Foreground", "Background", "Orphan", "nil"])])
        pre = options.get("preconditions") or {}
        async with self._locks.hold(key):
            for _ in range(MAX_UPDATE_RETRIES):
                cur = await self._current(rt, key)
                if cur is None and self._default(rt, ctx.cluster, name) is not None:
                    raise e.forbidden_error(rt.group, rt.plural, name, "it is part of the bootstrap policy every logical "
                                            "cluster shares; change it (which stores this cluster's own copy) instead")
                if cur is None:
                    raise e.not_found(rt.group, rt.plural, name)
                obj = copy_obj(cur.obj)
                meta = obj["metadata"]
                if pre.get("uid") and pre["uid"] != meta.get("uid"):
                    raise e.conflict(rt.group, rt.plural, name, f'Precondition failed: UID in precondition: {pre["uid"]}, UID in object meta: {meta.get("uid")}')
                if pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion"):
                    raise e.conflict(rt.group, rt.plural, name, f'Precondition failed: ResourceVersion in precondition: {pre["resourceVersion"]}, ResourceVersion in object meta: {meta.get("resourceVersion")}')
                review = self._admission(DELETE, rt, ctx, name, None, obj, options=options)
                await self.admission.admit(review)
                await self.admission.validate(review)
                finalizers = list(meta.get("finalizers") or [])
                if policy == "Orphan" and ORPHAN_FINALIZER not in finalizers:
                    finalizers.append(ORPHAN_FINALIZER)
                    finalizers = [f for f in finalizers if f != FOREGROUND_FINALIZER]
                elif policy == "Foreground" and FOREGROUND_FINALIZER not in finalizers:
                    finalizers.append(FOREGROUND_FINALIZER)
                    finalizers = [f for f in finalizers if f != ORPHAN_FINALIZER]
                elif policy == "Background" and meta.get("deletionTimestamp"):
                    finalizers = [f for f in finalizers if f not in (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)]
                grace = _grace_period(rt, obj, options)
                graceful = bool(finalizers) or not _no_spec_finalizers(obj) or grace > 0
                if not graceful:
                    if not ctx.dry_run:
                        try:
                            await self.storage.delete(key, cur.revision)
                        except RevisionMismatchError:
                            continue
                        except KeyNotFoundError:
                            raise e.not_found(rt.group, rt.plural, name) from None
                    return await self.present_converted(rt, obj), 200, rt.strategy.returns_deleted_object
                pending = int(meta.get("deletionGracePeriodSeconds") or 0)
                shortened = bool(meta.get("deletionTimestamp")) and grace < pending
                if meta.get("deletionTimestamp") and finalizers == list(meta.get("finalizers") or []) and not shortened:
                    return await self.present_converted(rt, obj), 200, True
                if not meta.get("deletionTimestamp") or shortened:
                    # the time it may go: now plus its grace period (a shorter one moves it earlier)
                    since = time.time() if not shortened else (parse_time(meta["deletionTimestamp"]) or time.time()) - pending
                    meta["deletionTimestamp"] = now_rfc3339(since + grace)
                    meta["deletionGracePeriodSeconds"] = grace
                    if rt.strategy.tracks_generation and meta.get("generation") and not shortened:
                        meta["generation"] = int(meta["generation"]) + 1
                meta["finalizers"] = finalizers
                if rt.kind == "Namespace" and not rt.group:
                    obj.setdefault("status", {})["phase"] = "Terminating"
                rt.strategy.before_write(obj, cur.obj, ctx.cluster)
                if ctx.dry_run:
                    return await self.present_converted(rt, obj), 200, True
                try:
                    rev, _ = await self._put(key, await self.stored_converted(rt, obj), cur.revision)
                except RevisionMismatchError:
                    continue
                meta["resourceVersion"] = str(rev)
                return await self.present_converted(rt, obj), 202 if options.get("orphanDependents") is False else 200, True
            raise e.conflict(rt.group, rt.plural, name, "too many concurrent updates; please try again")

    async def system_delete(self, key: str) -> None:
        """Remove a key whatever its finalizers (logical cluster teardown)."""
        for _ in range(MAX_UPDATE_RETRIES):
            kv = await self.storage.get(key)
            if kv is None:
                return
            try:
                await self.storage.delete(key, kv.mod_revision)
                return
            except (RevisionMismatchError, KeyNotFoundError):
                continue


def _grace_period(rt: ResourceType, obj: dict[str, Any], options: dict[str, Any]) -> int:
    """Seconds a DELETE leaves the object before it goes (kube's BeforeDelete): the strategy's
    for a graceful kind (Pods), 0 for the rest; an object already being deleted keeps its pending
    period unless the request asks for a shorter one."""
    grace = rt.strategy.grace_period(obj, options)
    if grace is None:
        return 0
    meta = obj["metadata"]
    if meta.get("deletionTimestamp") and options.get("gracePeriodSeconds") is None:
        return int(meta.get("deletionGracePeriodSeconds") or 0)
    return grace


def _no_spec_finalizers(obj: dict[str, Any]) -> bool:
    """Namespaces also wait on spec.finalizers (the namespace controller's "kubernetes")."""
    if obj.get("kind") == "Namespace" and obj.get("apiVersion") == "v1":
        return not (obj.get("spec") or {}).get("finalizers")
    return True


def _same(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """Equal apart from managedFields timestamps: such a write is skipped."""
    if new == old:
        return True
    nm, om = new.get("metadata", {}), old.get("metadata", {})
    if nm.get("managedFields") == om.get("managedFields"):
        return False
    def strip(o: dict[str, Any], m: dict[str, Any]) -> dict[str, Any]:
        return {**o, "metadata": {k: v for k, v in m.items() if k != "managedFields"}}
    if strip(new, nm) != strip(old, om):
        return False
    def shape(m: dict[str, Any]) -> list[tuple[Any, Any, Any, Any]]:
        return [(f.get("manager"), f.get("operation"), f.get("subresource"), f.get("fieldsV1")) for f in m.get("managedFields") or []]
    return shape(nm) == shape(om)
