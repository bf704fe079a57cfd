"""The controller side's Kubernetes client machinery, shared by every controller (the fleet's
and the simulated cluster's), as client-go is shared by kube's:

- :mod:`.kubeconfig`: a kubeconfig context -> :class:`~.kubeconfig.ApiTarget` (exact errors);
- :mod:`.client`: one async JSON :class:`~.client.Client` over kubernetes_asyncio, one error type;
- :mod:`.informer`: list + watch into a cache, with change callbacks and indexes;
- :mod:`.workqueue`: client-go's rate-limited work queue, :func:`~.workqueue.run_workers`, backoff;
- :mod:`.events`: core/v1 Events, correlated as client-go's recorder does.
"""
