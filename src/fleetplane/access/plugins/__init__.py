"""Exec credential plugins shipped with fleetplane (KEP-541 protocol).

* ``fleetplane-secret-reader`` (:mod:`fleetplane.access.plugins.secretreader`): the KEP's example
  plugin: reads a token for ``spec.cluster.config.clusterName`` from a Secret on the hub.
* ``fleetplane-token-file`` (:mod:`fleetplane.access.plugins.tokenfile`): reads a token from a file,
  with an optional expiry.

Both only use the standard library (plus PyYAML for kubeconfigs) so they start fast; neither
imports the rest of fleetplane.
"""
