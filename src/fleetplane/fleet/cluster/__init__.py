"""The Cluster controller, in kcp's reconciler layout: :mod:`.controller` (informer, queue, the
ordered sub-reconcilers), one module per sub-reconciler (:mod:`.deletion`, :mod:`.finalizer`,
:mod:`.duplicates`, :mod:`.connect`, :mod:`.syncer`, :mod:`.inventory`, :mod:`.status`), the
per-Cluster :mod:`.state`, its :mod:`.options` and entry points (:mod:`.run`), and what it and
the pull-mode syncer (:mod:`.pull`) share: the CRD (:mod:`.crd`), hub paths (:mod:`.paths`),
probes (:mod:`.probe`), the ClusterProfile documents (:mod:`.profile`) and the cleanup of synced
objects (:mod:`.cleanup`).

Nothing is imported here, so that ``fleetplane``'s command line can read :mod:`.options` without
loading the client libraries.
"""
