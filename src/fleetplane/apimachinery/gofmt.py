"""Values printed the way kube (Go) prints them: in error messages, Table cells, CEL strings.

Clients and people match on kube's exact wording, so quoted strings, floats and bad values are
rendered like Go's ``strconv.Quote``, ``fmt`` and ``encoding/json`` would.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from decimal import Decimal
from typing import Any

__all__ = ["bad_value", "go_base64_decode", "is_go_base64", "go_label_selector", "go_quote", "go_string_map", "json_text", "format_float", "sprint_float"]


def go_quote(s: str) -> str:
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


def format_float(f: float) -> str:
    """A float64 as kube-openapi's messages and CEL's ``string(double)`` print it: shortest digits,
    exponent form only below 1e-4 or from 1e21."""
    return _shortest(f, 21)


def sprint_float(f: float) -> str:
    """``fmt.Sprint(float64)``: strconv 'g' with the shortest digits, exponent form below 1e-4
    or from 1e6 (how kube's jsonpath prints a number in a Table cell)."""
    return _shortest(f, 6)


def _shortest(f: float, exponent_from: int) -> str:
    """The shortest digits that read back as ``f``; ``d.ddde±XX`` when the decimal exponent is
    below -4 or at least ``exponent_from``."""
    if f != f:
        return "NaN"
    if f in (math.inf, -math.inf):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    sign, digits, exponent = Decimal(repr(f)).as_tuple()
    ds = "".join(map(str, digits)).rstrip("0") or "0"
    point = len(digits) + int(exponent)  # where the decimal point falls after the first digit
    x = point - 1  # the scientific exponent
    neg = "-" if sign else ""
    if x < -4 or x >= exponent_from:
        mant = ds[0] + ("." + ds[1:] if len(ds) > 1 else "")
        return f"{neg}{mant}e{'+' if x >= 0 else '-'}{abs(x):02d}"
    if point <= 0:
        return f"{neg}0.{'0' * (-point)}{ds}"
    if point >= len(ds):
        return f"{neg}{ds}{'0' * (point - len(ds))}"
    return f"{neg}{ds[:point]}.{ds[point:]}"


def bad_value(v: Any) -> Any:
    """A bad value as Go prints it: nil prints as "null", integral float64s without a fraction."""
    if v is None:
        return "null"
    if type(v) is float and v == v and abs(v) < 1e21 and v.is_integer():
        return int(v)
    return v


def json_text(v: Any) -> str:
    """``encoding/json`` text of a value (compact, non-ASCII kept)."""
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def go_string_map(m: Any) -> str:
    """A map[string]string as Go's %#v prints it (sorted keys)."""
    if not m:
        return "map[string]string(nil)"
    return "map[string]string{" + ", ".join(f"{go_quote(str(k))}:{go_quote(str(v))}" for k, v in sorted(m.items())) + "}"


def go_label_selector(sel: Any) -> str:
    """A metav1.LabelSelector as Go's %#v prints it in kube's validation messages."""
    sel = sel if isinstance(sel, dict) else {}
    exprs = sel.get("matchExpressions") or []
    if exprs:
        parts = []
        for x in exprs:
            vals = x.get("values")
            values = "[]string(nil)" if not vals else "[]string{" + ", ".join(go_quote(str(v)) for v in vals) + "}"
            parts.append(f"v1.LabelSelectorRequirement{{Key:{go_quote(str(x.get('key', '')))}, "
                         f"Operator:{go_quote(str(x.get('operator', '')))}, Values:{values}}}")
        expr_text = "[]v1.LabelSelectorRequirement{" + ", ".join(parts) + "}"
    else:
        expr_text = "[]v1.LabelSelectorRequirement(nil)"
    return f"v1.LabelSelector{{MatchLabels:{go_string_map(sel.get('matchLabels'))}, MatchExpressions:{expr_text}}}"


def go_base64_decode(s: str) -> bytes:
    """A ``[]byte`` field as Go's encoding/json reads it: standard base64 whose line breaks
    (``\r``, ``\n``) are skipped, as base64.StdEncoding does (the docs' PEM-wrapped Secrets)."""
    return base64.b64decode(s.replace("\r", "").replace("\n", ""), validate=True)


def is_go_base64(s: str) -> bool:
    try:
        go_base64_decode(s)
    except (binascii.Error, ValueError):
        return False
    return True
