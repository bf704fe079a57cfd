"""IntOrString (k8s.io/apimachinery/pkg/util/intstr): a count or a percentage of a total."""

from __future__ import annotations

import re

__all__ = ["PERCENT", "scaled_value"]

#: ``IsValidPercent``: digits and a final ``%`` (a full match)
PERCENT = re.compile(r"^([0-9]+)%\Z")


def scaled_value(value: object, total: int, round_up: bool) -> int:
    """``GetScaledValueFromIntOrPercent``: an int as is, ``"25%"`` of ``total`` (rounded up or
    down), a numeric string as its number; ValueError for anything else."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        m = PERCENT.match(value)
        if m:
            pct = int(m.group(1))
            q, r = divmod(pct * total, 100)
            return q + (1 if round_up and r else 0)
        try:
            return int(value)
        except ValueError:
            pass
    raise ValueError(f"invalid value for IntOrString: invalid value {value!r}")
