"""resource.Quantity (k8s.io/apimachinery/pkg/api/resource): one exact quantity type.

A quantity is an exact rational number (precision beyond 1n rounded away from zero, as
``ParseQuantity``) and the format it was written in, which decides its canonical string:
``"0.5"`` -> ``"500m"``, ``"1024Mi"`` -> ``"1Gi"``, ``"1e3"`` -> ``"1e3"``. Comparison and
arithmetic use the number only.
"""

from __future__ import annotations

import re
from decimal import Decimal
from enum import StrEnum
from fractions import Fraction
from functools import total_ordering
from math import ceil, floor

__all__ = [
    "QUANTITY_PATTERN",
    "Format",
    "Quantity",
    "QuantityError",
    "canonical_quantity",
    "int_value",
    "milli_value",
    "parse_quantity",
]

#: the rule kube's error message quotes
QUANTITY_PATTERN = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_QUANTITY = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][-+]?[0-9]+)?\Z"
)
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {v: k for k, v in _DECIMAL.items()}
_BINARY_SUFFIX = {v: k for k, v in _BINARY.items()}
_NANO = 10**9


class QuantityError(ValueError):
    """Not a quantity; the message is kube's ``ErrFormatWrong``."""

    def __init__(self) -> None:
        super().__init__("quantities must match the regular expression '" + QUANTITY_PATTERN + "'")


class Format(StrEnum):
    """How a quantity was written, which is how it is written back."""

    BINARY_SI = "BinarySI"
    DECIMAL_SI = "DecimalSI"
    DECIMAL_EXPONENT = "DecimalExponent"


@total_ordering
class Quantity:
    """An exact quantity; equal and ordered by value whatever its format (``Cmp``)."""

    __slots__ = ("number", "format")

    def __init__(self, number: Fraction | int, format: Format = Format.DECIMAL_SI) -> None:
        n = Fraction(number)
        if (_NANO % n.denominator) != 0:  # kube keeps at most nine fractional digits, rounding up
            n = Fraction(_round_up(n * _NANO), _NANO)
        self.number = n
        self.format = format

    @classmethod
    def parse(cls, value: object) -> Quantity:
        """``ParseQuantity`` of a string, or of a JSON number as kube decodes one."""
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise QuantityError()
        text = value if isinstance(value, str) else str(value).strip()
        m = _QUANTITY.match(text)
        if not m:
            raise QuantityError()
        base = Fraction(Decimal(m.group(1)))
        suffix = m.group(2) or ""
        if suffix in _BINARY:
            return cls(base * 2 ** _BINARY[suffix], Format.BINARY_SI)
        if suffix in _DECIMAL:
            return cls(base * Fraction(10) ** _DECIMAL[suffix], Format.DECIMAL_SI)
        return cls(base * Fraction(10) ** int(suffix[1:]), Format.DECIMAL_EXPONENT)

    # -- values --------------------------------------------------------------------------------

    def value(self) -> int:
        """``Value()``: rounded up to an integer (memory "1Ki" -> 1024, "1500m" -> 2)."""
        return _round_up(self.number)

    def milli_value(self) -> int:
        """``MilliValue()``: thousandths, rounded up (cpu "250m" -> 250, "1" -> 1000)."""
        return _round_up(self.number * 1000)

    def as_dec(self) -> Decimal:
        """``AsDec()``: the exact value as a Decimal."""
        scale = _NANO // self.number.denominator
        return Decimal(self.number.numerator * scale).scaleb(-9).normalize()

    def as_approximate_float(self) -> float:
        return float(self.number)

    def sign(self) -> int:
        return (self.number > 0) - (self.number < 0)

    def is_zero(self) -> bool:
        return self.number == 0

    # -- arithmetic and comparison -------------------------------------------------------------

    def __add__(self, other: Quantity | int) -> Quantity:
        return Quantity(self.number + _number(other), self.format)

    def __sub__(self, other: Quantity | int) -> Quantity:
        return Quantity(self.number - _number(other), self.format)

    def __neg__(self) -> Quantity:
        return Quantity(-self.number, self.format)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Quantity):
            return self.number == other.number
        if isinstance(other, int | Fraction) and not isinstance(other, bool):
            return self.number == other
        return NotImplemented

    def __lt__(self, other: Quantity | int) -> bool:
        return self.number < _number(other)

    def __hash__(self) -> int:
        return hash(self.number)

    def __float__(self) -> float:
        return float(self.number)

    # -- the canonical string ------------------------------------------------------------------

    def __str__(self) -> str:
        """The string ``resource.Quantity`` marshals to (``CanonicalizeBytes``)."""
        v = self.number
        if v == 0:
            return "0"
        fmt = self.format
        if fmt is Format.BINARY_SI:
            if -1024 < v < 1024 or v.denominator != 1:
                fmt = Format.DECIMAL_SI
            else:
                n, shift = v.numerator, 0
                while shift < 60 and n % 1024 == 0:
                    n //= 1024
                    shift += 10
                return f"{n}{_BINARY_SUFFIX.get(shift, '')}"
        # mantissa * 10^exp: exp a multiple of 3, as large as possible (DecimalSI: at most 18, suffix E)
        mantissa, exp = int(v * _NANO), -9
        while (exp < 18 or fmt is Format.DECIMAL_EXPONENT) and mantissa % 1000 == 0:
            mantissa //= 1000
            exp += 3
        if fmt is Format.DECIMAL_EXPONENT:
            return str(mantissa) if exp == 0 else f"{mantissa}e{exp}"
        return f"{mantissa}{_DECIMAL_SUFFIX[exp]}"

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"


def _round_up(x: Fraction) -> int:
    """Rounded away from zero, as kube rounds "up" (so -1500m is -2, not -1)."""
    return ceil(x) if x >= 0 else floor(x)


def _number(q: Quantity | int) -> Fraction:
    return q.number if isinstance(q, Quantity) else Fraction(q)


def parse_quantity(value: object) -> Quantity:
    """A Kubernetes quantity ("500m", "128Mi", "1e3", 2); :class:`QuantityError` if malformed."""
    return Quantity.parse(value)


def canonical_quantity(value: object) -> str:
    """The string kube stores and serves for a quantity written as ``value``."""
    return str(Quantity.parse(value))


def milli_value(value: object) -> int:
    return Quantity.parse(value).milli_value()


def int_value(value: object) -> int:
    return Quantity.parse(value).value()
