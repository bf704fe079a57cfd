"""What an API server serves: aggregated discovery (one request per /api and /apis) when the
server offers it, legacy discovery otherwise. There is no watch on api-resources; callers poll,
and a :class:`Discoverer` polls as client-go's cached discovery does: with the ETags of the
last aggregated answers, which a server whose types did not change answers 304 without a body
(kube-apiserver and fleetplane both do), so the last :class:`Discovery` stands."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from ...kube.client import ApiError, Client, api_path

AGGREGATED_ACCEPT = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                     "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json")


@dataclass(frozen=True)
class ApiResource:
    group: str
    version: str
    resource: str
    kind: str
    namespaced: bool
    verbs: frozenset[str] = frozenset()
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: frozenset[str] = frozenset()
    #: the group's preferred version?
    preferred: bool = False

    @property
    def group_resource(self) -> str:
        """``deployments.apps`` (``configmaps`` for the core group)."""
        return f"{self.resource}.{self.group}" if self.group else self.resource

    @property
    def gvr(self) -> str:
        """``deployments.v1.apps`` (``configmaps.v1`` for the core group)."""
        return f"{self.resource}.{self.version}.{self.group}" if self.group else f"{self.resource}.{self.version}"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def watchable(self) -> bool:
        return {"list", "watch"} <= self.verbs

    def path(self, namespace: str = "", name: str = "", subresource: str = "") -> str:
        return api_path(self.api_version, self.resource, namespace if self.namespaced else "", name, subresource)


@dataclass
class Discovery:
    """(group, resource) -> versions, the preferred one first."""

    resources: dict[tuple[str, str], list[ApiResource]] = field(default_factory=dict)

    def get(self, group: str, resource: str) -> list[ApiResource]:
        return self.resources.get((group, resource), [])

    def preferred(self, group: str, resource: str) -> ApiResource | None:
        versions = self.get(group, resource)
        return versions[0] if versions else None

    def all_preferred(self) -> list[ApiResource]:
        return [v[0] for v in self.resources.values() if v]


def _add(out: dict[tuple[str, str], list[ApiResource]], r: ApiResource) -> None:
    out.setdefault((r.group, r.resource), []).append(r)


def _from_aggregated(doc: dict, out: dict[tuple[str, str], list[ApiResource]]) -> None:
    for item in doc.get("items") or []:
        group = (item.get("metadata") or {}).get("name") or ""
        for i, ver in enumerate(item.get("versions") or []):
            version = ver.get("version")
            for res in ver.get("resources") or []:
                kind = (res.get("responseKind") or {}).get("kind") or ""
                subs = frozenset(s.get("subresource") for s in res.get("subresources") or [] if s.get("subresource"))
                _add(out, ApiResource(group, version, res.get("resource"), kind, res.get("scope") == "Namespaced",
                                      frozenset(res.get("verbs") or ()), res.get("singularResource") or "",
                                      tuple(res.get("shortNames") or ()), tuple(res.get("categories") or ()),
                                      subs, i == 0))


def _from_resource_list(group: str, version: str, doc: dict, preferred: bool,
                        out: dict[tuple[str, str], list[ApiResource]]) -> None:
    subs: dict[str, set[str]] = {}
    main = []
    for res in doc.get("resources") or []:
        name = res.get("name") or ""
        if "/" in name:
            parent, sub = name.split("/", 1)
            subs.setdefault(parent, set()).add(sub)
        else:
            main.append(res)
    for res in main:
        _add(out, ApiResource(group, version, res["name"], res.get("kind") or "", bool(res.get("namespaced")),
                              frozenset(res.get("verbs") or ()), res.get("singularName") or "",
                              tuple(res.get("shortNames") or ()), tuple(res.get("categories") or ()),
                              frozenset(subs.get(res["name"], ())), preferred))


class Discoverer:
    """Polls what ``client``'s server serves, sending the ETags of its last aggregated answers:
    while the server answers both 304 the last Discovery is returned as it was (shared: never
    change it)."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self._tags: dict[str, str] = {}
        self._last: Discovery | None = None

    async def _get(self, path: str) -> dict | None:
        """The aggregated (or legacy) document at ``path``; None when it is unchanged (304)."""
        doc, tag = await self.client.conditional_get(path, self._tags.get(path), accept=AGGREGATED_ACCEPT)
        if doc is None:
            return None
        if tag and doc.get("kind") == "APIGroupDiscoveryList":
            self._tags[path] = tag
        else:
            self._tags.pop(path, None)
        return doc

    async def discover(self) -> Discovery:
        """Everything the server serves. Raises ApiError when it cannot be read."""
        core, apis = await self._get("/api"), await self._get("/apis")
        if core is None and apis is None and self._last is not None:
            return self._last
        if core is None or apis is None:  # one changed: read both afresh
            self._tags.clear()
            core, apis = core or await self._get("/api"), apis or await self._get("/apis")
        assert core is not None and apis is not None
        self._last = None
        found = await _discovered(self.client, core, apis)
        if "/api" in self._tags and "/apis" in self._tags:
            self._last = found
        return found


async def discover(client: Client) -> Discovery:
    """Everything ``client``'s server serves, read afresh. Raises ApiError when it cannot be read."""
    core = await client.request("GET", "/api", accept=AGGREGATED_ACCEPT)
    apis = await client.request("GET", "/apis", accept=AGGREGATED_ACCEPT)
    return await _discovered(client, core, apis)


async def _discovered(client: Client, core: dict, apis: dict) -> Discovery:
    """The Discovery of the ``/api`` and ``/apis`` answers (legacy ones: each group version read)."""
    out: dict[tuple[str, str], list[ApiResource]] = {}
    if core.get("kind") == "APIGroupDiscoveryList" and apis.get("kind") == "APIGroupDiscoveryList":
        _from_aggregated(core, out)
        _from_aggregated(apis, out)
        return Discovery(out)
    # legacy discovery
    jobs: list[tuple[str, str, bool, str]] = []
    for v in core.get("versions") or []:
        jobs.append(("", v, v == (core.get("versions") or [None])[0], f"/api/{v}"))
    for g in apis.get("groups") or []:
        pref = (g.get("preferredVersion") or {}).get("version")
        for v in g.get("versions") or []:
            jobs.append((g["name"], v["version"], v["version"] == pref, f"/apis/{g['name']}/{v['version']}"))

    async def one(job: tuple[str, str, bool, str]) -> None:
        group, version, pref, path = job
        try:
            doc = await client.request("GET", path)
        except ApiError as err:
            if err.status in (404, 503):  # an unavailable aggregated API must not hide the rest
                return
            raise
        _from_resource_list(group, version, doc, pref, out)

    await asyncio.gather(*(one(j) for j in jobs))
    for versions in out.values():
        versions.sort(key=lambda r: not r.preferred)
    return Discovery(out)


def parse_resource(spec: str) -> tuple[str, str | None]:
    """``"deployments.apps"`` -> ("deployments", "apps"); ``"configmaps"`` -> ("configmaps", None)
    (no group given: whichever group serves it, the core group first)."""
    resource, _, group = spec.strip().partition(".")
    return resource.lower(), (group.lower() if group else None)
