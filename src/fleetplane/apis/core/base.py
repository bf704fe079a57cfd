"""What core/v1 kinds share: the strategy (no generation, unconditional PUT allowed, object-meta
validation) and the prefixes of their OpenAPI definitions and protobuf messages."""

from __future__ import annotations

from ...apimachinery.errors import FieldError
from ...registry.types import Strategy
from ...registry.validation import validate_object_meta

#: ``io.k8s.api.core.v1.ConfigMap`` in the OpenAPI data
DEFINITIONS = "io.k8s.api.core.v1."
#: ``k8s.io.api.core.v1.ConfigMap`` in kube's generated.proto
PROTOBUF = "k8s.io.api.core.v1."


class CoreStrategy(Strategy):
    """Core kinds: no generation, unconditional PUT allowed."""

    tracks_generation = False
    allow_unconditional_update = True

    def __init__(self, namespaced: bool = True) -> None:
        self.namespaced = namespaced

    def validate(self, obj: dict) -> list[FieldError]:
        return validate_object_meta(obj, namespaced=self.namespaced)
