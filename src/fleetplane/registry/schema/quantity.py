"""resource.Quantity parsing and formatting (k8s.io/apimachinery/pkg/api/resource).

Used by the CEL quantity library; quantities are exact fractions here.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction
from typing import Any

_RX_QUANTITY = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?\Z"
)
_QUANTITY_SUFFIX = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}


def _parse_quantity(s: Any) -> Fraction:
    if not isinstance(s, str):
        raise ValueError(f"quantities must be strings, got {type(s).__name__}")
    m = _RX_QUANTITY.match(s.strip())
    if not m:
        raise ValueError(
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        )
    num = Fraction(Decimal(m.group(1)))
    suffix = m.group(2) or ""
    if suffix[:1] in ("e", "E"):
        return num * Fraction(10) ** int(suffix[1:])
    return num * _QUANTITY_SUFFIX[suffix]


def _format_quantity(v: Fraction) -> str:
    if v.denominator == 1:
        return str(v.numerator)
    for suffix, scale in (("m", 10**3), ("u", 10**6), ("n", 10**9)):
        scaled = v * scale
        if scaled.denominator == 1:
            return f"{scaled.numerator}{suffix}"
    scaled = math.ceil(v * 10**9)
    return f"{scaled}n"
