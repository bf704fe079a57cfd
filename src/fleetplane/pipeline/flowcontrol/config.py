"""Where the hub's flow-control configuration lives and how it is kept (kube's APF config
controller and bootstrap ensurer, ``apiserver/pkg/util/flowcontrol/apf_controller.go`` and
``pkg/registry/flowcontrol/ensurer``).

- The root logical cluster's FlowSchemas and PriorityLevelConfigurations configure the whole hub:
  one set of seats is shared by every tenant, so only the hub's operator may change it. Other
  logical clusters serve the same objects read-only (``ResourceType.defaults``); writes there are
  refused by :class:`RootOnly` (403).
- At start the mandatory and suggested objects are created in root if missing; while an object's
  ``apf.kubernetes.io/autoupdate-spec`` is ``"true"`` its spec is kept as shipped, and a deleted
  mandatory object comes back.
- Every FlowSchema's ``Dangling`` condition says whether its priority level exists.
- Every change in root reconfigures the :class:`.dispatcher.Dispatcher` in the same event-loop
  step the watch cache applies it, so the next request is classified by the new objects.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Any

from ...apimachinery import errors as e
from ...apimachinery.errors import FieldError, StatusError
from ...apimachinery.jsonvalue import copy_json, json_equal
from ...apimachinery.metatime import now_rfc3339
from ...apis import flowcontrol as api
from ..admission.chain import CREATE, DELETE, UPDATE, BasePlugin
from ..admission.chain import Request as AdmissionRequest
from .dispatcher import Dispatcher

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

if TYPE_CHECKING:
    from ...registry.hub import Registry
    from ...storage.watchcache import WatchEvent

log = logging.getLogger(__name__)

ROOT = "root"
#: kube's field manager for the bootstrap objects
MANAGER = "api-priority-and-fairness-config-producer-v1"
FLOW_SCHEMAS = f"/{api.FLOWCONTROL_GROUP}/flowschemas/"
PRIORITY_LEVELS = f"/{api.FLOWCONTROL_GROUP}/prioritylevelconfigurations/"
KINDS = {"flowschemas": "FlowSchema", "prioritylevelconfigurations": "PriorityLevelConfiguration"}


class RootOnly(BasePlugin):
    """Admission: flow control is the hub's, configured in root; elsewhere it is read-only."""

    name = "FlowControlRootOnly"
    operations = frozenset({CREATE, UPDATE, DELETE})

    async def validate(self, req: AdmissionRequest) -> list[FieldError]:
        if req.group == api.FLOWCONTROL_GROUP and req.cluster != ROOT:
            raise e.forbidden_error(req.group, req.resource, req.name,
                                    "flow control is configured in the root logical cluster only, for the whole hub")
        return []


def dangling_condition(level: str, exists: bool, now: str) -> dict[str, Any]:
    """kube's FlowSchema Dangling condition (the APF controller's words)."""
    if exists:
        return {"type": api.DANGLING, "status": "False", "lastTransitionTime": now, "reason": "Found",
                "message": f'This FlowSchema references the PriorityLevelConfiguration object named "{level}" and it exists'}
    return {"type": api.DANGLING, "status": "True", "lastTransitionTime": now, "reason": "NotFound",
            "message": f'This FlowSchema references the PriorityLevelConfiguration object named "{level}" but there is no such object'}


class FlowControlConfig:
    """Feeds the dispatcher from root's objects and keeps those objects (bootstrap, status)."""

    def __init__(self, registry: Registry, dispatcher: Dispatcher) -> None:
        self.registry = registry
        self.dispatcher = dispatcher
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        registry.cache.add_listener(self._on_event)
        for rt in self._types().values():
            rt.defaults = self._root_objects(rt.plural)

    @classmethod
    def install(cls, registry: Registry, total_seats: int, metrics: CollectorRegistry | None) -> FlowControlConfig:
        """Flow control for a hub: the dispatcher over ``total_seats`` (its metrics in the app's
        registry), fed from root; writes outside root refused."""
        registry.store.admission.add(RootOnly())
        return cls(registry, Dispatcher(total_seats, metrics))

    def _types(self) -> dict[str, Any]:
        out = {}
        for plural in KINDS:
            rt = self.registry.catalog.lookup(ROOT, api.FLOWCONTROL_GROUP, "v1", plural)
            assert rt is not None, plural
            out[plural] = rt
        return out

    def _root_objects(self, plural: str) -> Any:
        prefix = FLOW_SCHEMAS if plural == "flowschemas" else PRIORITY_LEVELS

        def defaults(cluster: str) -> Mapping[str, dict[str, Any]]:
            if cluster == ROOT:
                return {}
            return {o.name: o.obj for o in self.registry.cache.resource(prefix).objects(ROOT, None)}

        return defaults

    def _objects(self, prefix: str) -> list[dict[str, Any]]:
        return [o.obj for o in self.registry.cache.resource(prefix).objects(ROOT, None)]

    def _on_event(self, ev: WatchEvent) -> None:
        key = ev.cur.key
        if ev.cur.cluster == ROOT and (key.startswith(FLOW_SCHEMAS) or key.startswith(PRIORITY_LEVELS)):
            self.reload()
            self._wake.set()

    def reload(self) -> None:
        self.dispatcher.configure(self._objects(FLOW_SCHEMAS), self._objects(PRIORITY_LEVELS))

    async def start(self) -> None:
        """Take root's configuration, then (in the background, so serving starts at once) create
        what is missing and follow changes. Until the objects exist nothing classifies a
        request, and requests run at once, as with flow control off."""
        self.reload()
        self._task = asyncio.create_task(self._run(), name="flowcontrol-config")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _run(self) -> None:
        try:
            await self._ensure(create_suggested=True)
        except Exception:  # the next change retries the mandatory objects
            log.exception("creating the flow-control configuration failed")
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._ensure(create_suggested=False)
            except Exception:  # the next change retries
                log.exception("keeping the flow-control configuration failed")

    async def _ensure(self, create_suggested: bool) -> None:
        from ...registry.store import Context

        ctx = Context(ROOT, manager=MANAGER)
        types = self._types()
        wanted = [("prioritylevelconfigurations", o, True) for o in api.MANDATORY_PRIORITY_LEVELS] + \
                 [("flowschemas", o, True) for o in api.MANDATORY_FLOW_SCHEMAS]
        wanted += [("prioritylevelconfigurations", o, create_suggested) for o in api.SUGGESTED_PRIORITY_LEVELS]
        wanted += [("flowschemas", o, create_suggested) for o in api.SUGGESTED_FLOW_SCHEMAS]
        stored = {"flowschemas": {o["metadata"]["name"]: o for o in self._objects(FLOW_SCHEMAS)},
                  "prioritylevelconfigurations": {o["metadata"]["name"]: o for o in self._objects(PRIORITY_LEVELS)}}
        writes = []
        for plural, item, create in wanted:
            rt = types[plural]
            want = api.bootstrap_object(KINDS[plural], item)
            have = stored[plural].get(item["name"])
            if have is None:
                if create:
                    writes.append(self.registry.store.create(rt, ctx, want))
                continue
            if (have["metadata"].get("annotations") or {}).get(api.AUTO_UPDATE) != "true":
                continue
            probe = {"spec": copy_json(want["spec"])}
            rt.strategy.canonicalize(probe)
            if not json_equal(probe["spec"], have.get("spec")):
                writes.append(self.registry.store.guaranteed_update(rt, ctx, item["name"], _with_spec(probe["spec"])))
        await _all(writes)  # at once: the store commits them together
        await self._update_status(types["flowschemas"], ctx)

    async def _update_status(self, rt: Any, ctx: Any) -> None:
        levels = {o["metadata"]["name"] for o in self._objects(PRIORITY_LEVELS)}
        now = now_rfc3339()
        writes = []
        for fs in self._objects(FLOW_SCHEMAS):
            level = str(((fs.get("spec") or {}).get("priorityLevelConfiguration") or {}).get("name") or "")
            want = dangling_condition(level, level in levels, now)
            conditions = [c for c in (fs.get("status") or {}).get("conditions") or [] if isinstance(c, dict)]
            have = next((c for c in conditions if c.get("type") == api.DANGLING), None)
            if have is not None and all(have.get(k) == want[k] for k in ("status", "reason", "message")):
                continue

            def mutate(obj: dict[str, Any], want: dict[str, Any] = want) -> dict[str, Any]:
                status = obj.setdefault("status", {})
                others = [c for c in status.get("conditions") or [] if isinstance(c, dict) and c.get("type") != api.DANGLING]
                status["conditions"] = [*others, want]
                return obj

            writes.append(self.registry.store.guaranteed_update(rt, ctx, fs["metadata"]["name"], mutate, subresource="status"))
        await _all(writes)


async def _all(writes: list[Coroutine[Any, Any, Any]]) -> None:
    """Run the writes together; another replica's write first (404, 409) is no failure."""
    for result in await asyncio.gather(*writes, return_exceptions=True):
        if isinstance(result, StatusError) and result.code in (404, 409):
            continue
        if isinstance(result, BaseException):
            raise result


def _with_spec(spec: dict[str, Any]) -> Any:
    def mutate(obj: dict[str, Any]) -> dict[str, Any]:
        obj["spec"] = spec
        return obj

    return mutate
