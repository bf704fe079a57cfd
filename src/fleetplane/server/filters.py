"""The request pipeline's HTTP end: authentication -> impersonation -> flow control
(API Priority and Fairness) -> authorization.

``Pipeline.admit_request`` runs before any handler, on every request, resource or not, so
no verb path can bypass it (kube's DefaultBuildHandlerChain). It works on the parsed
``RequestInfo`` (never on raw path strings) and leaves the identity on ``req.user``, which
the handlers pass on to admission through the registry's ``Context``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..pipeline.authentication.chain import Authenticator
from ..pipeline.authorization.attributes import Attributes, Decision
from ..pipeline.authorization.authorizer import Authorizer, forbidden
from ..pipeline.flowcontrol import Dispatcher, Ticket
from ..pipeline.impersonation import impersonate
from ..pipeline.user import UserInfo
from .http import Request
from .request import RequestInfo

RESOURCE_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


#: Pod subresources that open a connection into a container
CONNECT_SUBRESOURCES = frozenset({"exec", "attach", "portforward"})


def request_verb(req: Request, info: RequestInfo) -> str:
    """kube's RequestInfo verb: get/list/watch/create/update/patch/delete/deletecollection for
    resources, the lower-cased method for other paths."""
    method = req.method
    if not info.is_resource:
        return method.lower()
    if info.subresource in CONNECT_SUBRESOURCES:
        return "create"  # whatever the method: a WebSocket GET runs a command too (kube 1.31+ checks create)
    if method in ("GET", "HEAD"):
        if info.watch or req.flag("watch"):
            return "watch"
        return "get" if info.name else "list"
    if method == "DELETE":
        return "delete" if info.name else "deletecollection"
    return RESOURCE_VERBS.get(method, method.lower())


def request_attributes(user: UserInfo, req: Request, info: RequestInfo) -> Attributes:
    verb = request_verb(req, info)
    if not info.is_resource:
        return Attributes(user, verb, info.cluster, resource_request=False, path=info.path)
    return Attributes(user, verb, info.cluster, True, info.group, info.version, info.resource, info.subresource,
                      info.namespace, info.name, label_selector=req.param("labelSelector"))


@dataclass
class Pipeline:
    authenticator: Authenticator
    authorizer: Authorizer
    #: a read of one object by name, checked once the object is known (label-scoped identities)
    object_check: Callable[[Attributes, dict | None], None] | None = None
    #: API Priority and Fairness; None: every request runs at once (kube's --enable-priority-and-fairness=false)
    flow_control: Dispatcher | None = None

    async def admit_request(self, req: Request, info: RequestInfo) -> Attributes:
        """Authenticate, impersonate, seat (flow control) and authorize ``req``; raises
        401/400/403 StatusErrors, or ``TooManyRequests``. The seat is left on ``req.seat``, for
        the server to give back after the handler; a watch's goes as soon as its response starts."""
        user = await self.authenticator.authenticate(req.headers.get("authorization", ""), req.client_cert,
                                                     info.cluster, info.path)
        req.authenticated_user = req.user = user
        acting = impersonate(user, req.header_items(), info.cluster, self.authorizer.authorize) \
            if any(k.startswith(b"impersonate-") for k, _ in req.raw_headers) else None
        req.user = acting or user
        attrs = request_attributes(req.user, req, info)
        req.attributes = attrs
        if self.flow_control is not None:
            ticket = await self.flow_control.admit(attrs)
            if ticket is not None:
                req.seat = ticket
                _send_pf_headers(req, ticket, release_on_start=attrs.verb == "watch")
        result = self.authorizer.authorize(attrs)
        if not result.allowed:
            # kube shows a reason only when an authorizer denied (RBAC gives none: it never denies)
            raise forbidden(attrs, result.reason if result.decision is Decision.DENY else "")
        return attrs


def _send_pf_headers(req: Request, ticket: Ticket, release_on_start: bool) -> None:
    """Every response of a classified request carries kube's X-Kubernetes-PF-* headers; a watch
    holds its seat only until its response starts (its initialization, as in kube). Once the
    response has started the wrapper takes itself out (a watch streams for up to an hour)."""
    send = req.send
    extra = [(k.lower().encode(), v.encode()) for k, v in ticket.headers]

    async def send_with_headers(message: dict) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), *extra]}
            if release_on_start:
                ticket.release()
                req.seat = None
            req.send = send
        await send(message)

    req.send = send_with_headers
