"""fleetplane: a multi-cluster Kubernetes control plane.

The hub (``fleetplane.server``) is a minimal Kubernetes API server with logical clusters;
``fleetplane.registry`` holds the resource types and their semantics; ``fleetplane.storage``
the revisioned key-value stores under them.
"""

__version__ = "0.1.0"
