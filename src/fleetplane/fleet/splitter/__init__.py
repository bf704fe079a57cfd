"""The Deployment Splitter (issue 5): splits hub Deployments over the fleet's clusters as virtual
per-cluster Deployments, re-balances them, aggregates their status, explains its decisions, and
runs ClusterDaemonSets the same way. See :mod:`.controller` and docs/placement.md.

- ``fleetplane start`` runs it as a background task: :func:`.run.run_in_hub`, through the fleet
  plugin (:mod:`fleetplane.fleet.plugin`);
- on its own: ``python -m fleetplane.fleet.splitter --kubeconfig HUB [--leader-elect]``.
"""

# Nothing is imported here, so that `fleetplane`'s command line can read .options without
# loading the client libraries (as fleet/cluster/).
