"""Values printed the way kube (Go) prints them in error messages.

Clients and people match on kube's exact wording, so quoted strings, floats and bad values are
rendered like Go's ``strconv.Quote``, ``%v`` and ``encoding/json`` would.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any


def _go_quote(s: str) -> str:
    """strconv.Quote-like quoting (printable Unicode kept, control characters escaped)."""
    out = ['"']
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _go_float(f: float) -> str:
    """Format a float64 like Go's %v (shortest repr, exponent only below 1e-4 or from 1e21)."""
    if f != f:
        return "NaN"
    if f in (math.inf, -math.inf):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    d = Decimal(repr(f))
    sign, digits, exp = d.as_tuple()
    ds = "".join(map(str, digits)).rstrip("0") or "0"
    # position of the decimal point relative to the first digit
    point = len(digits) + exp  # type: ignore[operator]
    x = point - 1  # scientific exponent
    neg = "-" if sign else ""
    if x < -4 or x >= 21:
        mant = ds[0] + ("." + ds[1:] if len(ds) > 1 else "")
        return f"{neg}{mant}e{'+' if x >= 0 else '-'}{abs(x):02d}"
    if point <= 0:
        return f"{neg}0.{'0' * (-point)}{ds}"
    if point >= len(ds):
        return f"{neg}{ds}{'0' * (point - len(ds))}"
    return f"{neg}{ds[:point]}.{ds[point:]}"


def _disp(v: Any) -> Any:
    """A bad value as Go prints it: nil prints as "null", integral float64s without a fraction."""
    if v is None:
        return "null"
    if type(v) is float and v == v and abs(v) < 1e21 and v.is_integer():
        return int(v)
    return v


def _json_text(v: Any) -> str:
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)
