"""What core/v1 kinds share: no generation, unconditional PUT allowed, object-meta validation."""

from __future__ import annotations

from ...apimachinery.errors import FieldError
from ...registry.types import Strategy
from ...registry.validation import validate_object_meta


class CoreStrategy(Strategy):
    """Core kinds: no generation, unconditional PUT allowed."""

    tracks_generation = False
    allow_unconditional_update = True

    def __init__(self, namespaced: bool = True) -> None:
        self.namespaced = namespaced

    def validate(self, obj: dict) -> list[FieldError]:
        return validate_object_meta(obj, namespaced=self.namespaced)
