"""Parse a request path into what it addresses, as kube-apiserver's RequestInfoFactory does.

``/clusters/<name>`` in front selects a logical cluster (kcp's grammar, ``*`` for all);
without it the request goes to ``root``.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

from ..apimachinery import errors as e
from ..apimachinery.gofmt import go_quote
from ..registry.validation import CLUSTER_PATH, CLUSTER_PATH_TEXT

ROOT = "root"


@dataclass(slots=True)
class RequestInfo:
    cluster: str
    path: str  # the path without the /clusters/<name> prefix
    is_resource: bool = False
    group: str = ""
    version: str = ""
    namespace: str = ""
    resource: str = ""
    name: str = ""
    subresource: str = ""
    #: for non-resource paths: "/api", "/apis/<g>", "/openapi/v3/...", ...
    parts: tuple[str, ...] = ()
    #: a legacy ``/api/v1/watch/...`` path (kube's deprecated watch routes): always a watch
    watch: bool = False


def split_cluster(raw_path: str) -> tuple[str, str]:
    """(cluster, remaining path)."""
    if raw_path.startswith("/clusters/"):
        rest = raw_path[len("/clusters/"):]
        name, _, tail = rest.partition("/")
        name = unquote(name)
        if name != "*" and not CLUSTER_PATH.match(name):
            raise e.bad_request(f"invalid cluster: {go_quote(name)} does not match the regex {CLUSTER_PATH_TEXT}")
        return name, "/" + tail
    return ROOT, raw_path


def parse(raw_path: str) -> RequestInfo:
    cluster, path = split_cluster(raw_path)
    segs = [unquote(s) for s in path.strip("/").split("/") if s]
    info = RequestInfo(cluster, path, parts=tuple(segs))
    if not segs or segs[0] not in ("api", "apis"):
        return info
    if segs[0] == "api":
        if len(segs) < 3:
            return info
        info.version = segs[1]
        rest = segs[2:]
    else:
        if len(segs) < 4:
            return info
        info.group, info.version = segs[1], segs[2]
        rest = segs[3:]
    if rest[0] == "watch" and len(rest) > 1:
        info.watch = True
        rest = rest[1:]
    info.is_resource = True
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
        info.namespace = rest[1]
        rest = rest[2:]
    info.resource = rest[0]
    if len(rest) >= 2:
        info.name = rest[1]
    if len(rest) >= 3:
        info.subresource = rest[2]
    if len(rest) > 3:
        info.is_resource = False
    return info
