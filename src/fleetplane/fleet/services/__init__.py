"""The hub's Service controller: Services created on the hub go to the clusters where their
workloads run (or as a placement policy says), one child per cluster, with the clusters'
load-balancer ingresses gathered in the parent's status. See :mod:`.controller`."""
