"""API Priority and Fairness (kube's ``WithPriorityAndFairness``): classify each request by the
FlowSchemas, seat it in its priority level's share of the hub's concurrency, queue it fairly
per flow, or refuse it with 429.

- :mod:`.classify`: FlowSchema matching and flow distinguishers (logical cluster first).
- :mod:`.queueset`: one level's seats, shuffle-sharded queues and fair dispatch.
- :mod:`.dispatcher`: the configuration in effect, the levels, ``admit`` and the 429.
- :mod:`.config`: the configuration's home (root), bootstrap objects, status, read-only elsewhere.
- :mod:`.metrics`: kube's ``apiserver_flowcontrol_*`` metrics.
"""

from .dispatcher import Dispatcher, Ticket, TooManyRequests

__all__ = ["Dispatcher", "Ticket", "TooManyRequests"]
