"""The one way to assemble a hub: ``build_hub(config, plugins)``.

Why a module of its own, above ``server/``: assembling a hub joins the server, registry, store
and pipeline with what the plugins (``inventory/``, ``fleet/``, ``sim/``) contribute, and the
server must not know its plugins' packages. It is also the whole of what the command line and
the simulated cluster may use of the server side (the import-boundary test holds them to it):
the config, the plugin types, building and running a hub, and the few offline operations on a
hub's data directory and store (kubeconfigs for its users, copying its store).
"""

from __future__ import annotations

from collections.abc import Iterable

import uvloop

from .pipeline.authorization import bootstrap
from .plugin import Contributions, Controller, ControllerContext, Plugin, contributions_of
from .server.app import GIT_VERSION
from .server.certs import client_kubeconfig, hub_url, write_kubeconfig
from .server.serve import Hub, HubConfig, build
from .storage.copy import copy as copy_store
from .storage.open import describe as describe_store

__all__ = ["GIT_VERSION", "Contributions", "Controller", "ControllerContext", "Hub", "HubConfig", "Plugin",
           "build_hub", "client_kubeconfig", "contributions_of", "copy_store", "describe_store", "hub_url", "run_hub",
           "write_kubeconfig"]


def build_hub(config: HubConfig, plugins: Iterable[Plugin] = ()) -> Hub:
    """A hub serving as ``config`` says, with what ``plugins`` contribute; ``Hub.serve()`` runs it
    (and its plugins' controllers, where ``config.controllers`` says) until SIGTERM/SIGINT."""
    contributions = contributions_of(plugins)
    if contributions.cluster_roles or contributions.cluster_role_bindings:
        # the plugins' roles, served in every logical cluster beside kube's (the bootstrap
        # policy is the process's: the authorizers read it where they are)
        bootstrap.add(contributions.cluster_roles, contributions.cluster_role_bindings)
    return build(config, contributions)


def run_hub(config: HubConfig, plugins: Iterable[Plugin] = ()) -> None:
    """Build the hub in the event loop that serves it, and serve until SIGTERM/SIGINT."""
    plugins = list(plugins)

    async def main() -> None:
        await build_hub(config, plugins).serve()

    uvloop.run(main())
