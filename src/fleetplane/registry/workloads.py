"""Helpers the workload kinds share with the simulator's controllers: resource quantities,
Go-formatted values in validation messages, label selectors.

The workload kinds themselves (apps/v1 Deployments and ReplicaSets, core/v1 Pods and Nodes, served
only by ``fleetplane cluster simulate``) are in :mod:`fleetplane.apis.apps` and
:mod:`fleetplane.apis.core`.
"""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal, InvalidOperation
from typing import Any

from ..apimachinery import errors as e
from ..apimachinery.errors import FieldError
from .validation import validate_labels

# -- quantities ----------------------------------------------------------------------------------

QUANTITY_PATTERN = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][-+]?[0-9]+)?\Z")
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {v: k for k, v in _DECIMAL.items()}
_BINARY_SUFFIX = {v: k for k, v in _BINARY.items()}
_NANO = Decimal("1e-9")


class QuantityError(ValueError):
    pass


def _parse(value: Any) -> tuple[Decimal, str]:
    """(value, format) where format is "BinarySI", "DecimalSI" or "DecimalExponent"."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise QuantityError("quantities must match the regular expression '" + QUANTITY_PATTERN + "'")
    text = str(value).strip() if not isinstance(value, str) else value
    m = _QUANTITY.match(text)
    if not m:
        raise QuantityError("quantities must match the regular expression '" + QUANTITY_PATTERN + "'")
    number, suffix = m.group(1), m.group(2) or ""
    try:
        base = Decimal(number)
    except InvalidOperation:
        raise QuantityError("quantities must match the regular expression '" + QUANTITY_PATTERN + "'") from None
    if suffix in _BINARY:
        return base * (Decimal(2) ** _BINARY[suffix]), "BinarySI"
    if suffix in _DECIMAL:
        return base.scaleb(_DECIMAL[suffix]), "DecimalSI"
    return base.scaleb(int(suffix[1:])), "DecimalExponent"


def parse_quantity(value: Any) -> Decimal:
    """A Kubernetes quantity ("500m", "128Mi", "1e3", 2) as a Decimal; QuantityError if malformed.

    As ``resource.ParseQuantity``, precision beyond 1n is rounded up.
    """
    v, _ = _parse(value)
    return v.quantize(_NANO, rounding=ROUND_CEILING) if v.as_tuple().exponent < -9 else v  # type: ignore[operator]


def milli_value(value: Any) -> int:
    """``Quantity.MilliValue()``: thousandths, rounded up (cpu "250m" -> 250, "1" -> 1000)."""
    return int((parse_quantity(value) * 1000).to_integral_value(rounding=ROUND_CEILING))


def int_value(value: Any) -> int:
    """``Quantity.Value()``: rounded up to an integer (memory "1Ki" -> 1024)."""
    return int(parse_quantity(value).to_integral_value(rounding=ROUND_CEILING))


def canonical_quantity(value: Any) -> str:
    """The string ``resource.Quantity`` marshals to (``CanonicalizeBytes``)."""
    v, fmt = _parse(value)
    if v.as_tuple().exponent < -9:  # type: ignore[operator]
        v = v.quantize(_NANO, rounding=ROUND_CEILING)
    if v == 0:
        return "0"
    if fmt == "BinarySI":
        if -1024 < v < 1024 or v != v.to_integral_value():
            fmt = "DecimalSI"
        else:
            n = int(v)
            shift = 0
            while shift < 60 and n % 1024 == 0:
                n //= 1024
                shift += 10
            return f"{n}{_BINARY_SUFFIX.get(shift, '')}"
    # mantissa * 10^exp with exp a multiple of 3 and the mantissa an integer, exp as large as possible
    sign, digits, exp = v.normalize().as_tuple()
    mantissa = int("".join(map(str, digits))) * (-1 if sign else 1)
    exp = int(exp)
    while exp % 3:
        mantissa *= 10
        exp -= 1
    while exp > 18:  # no suffix beyond E: fold into the mantissa
        mantissa *= 1000
        exp -= 3
    if fmt == "DecimalExponent":
        return str(mantissa) if exp == 0 else f"{mantissa}e{exp}"
    return f"{mantissa}{_DECIMAL_SUFFIX[exp]}"


# -- Go-formatted values in messages -------------------------------------------------------------


class _GoInvalid(FieldError):
    """FieldValueInvalid whose value is printed verbatim (a Go literal such as ``map[string]string{...}``)."""

    def message(self) -> str:
        return f"Invalid value: {self.bad_value}: {self.detail}" if self.detail else f"Invalid value: {self.bad_value}"


def _go_invalid(path: str, literal: str, detail: str) -> FieldError:
    return _GoInvalid("FieldValueInvalid", path, detail, literal, True)


def _go_str(s: Any) -> str:
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


def go_string_map(m: Any) -> str:
    if not m:
        return "map[string]string(nil)"
    return "map[string]string{" + ", ".join(f"{_go_str(k)}:{_go_str(v)}" for k, v in sorted(m.items())) + "}"


def go_label_selector(sel: Any) -> str:
    sel = sel if isinstance(sel, dict) else {}
    exprs = sel.get("matchExpressions") or []
    if exprs:
        parts = []
        for x in exprs:
            vals = x.get("values")
            values = "[]string(nil)" if not vals else "[]string{" + ", ".join(_go_str(v) for v in vals) + "}"
            parts.append(f"v1.LabelSelectorRequirement{{Key:{_go_str(x.get('key', ''))}, "
                         f"Operator:{_go_str(x.get('operator', ''))}, Values:{values}}}")
        expr_text = "[]v1.LabelSelectorRequirement{" + ", ".join(parts) + "}"
    else:
        expr_text = "[]v1.LabelSelectorRequirement(nil)"
    return f"v1.LabelSelector{{MatchLabels:{go_string_map(sel.get('matchLabels'))}, MatchExpressions:{expr_text}}}"


def label_selector_string(sel: Any) -> str:
    """``metav1.LabelSelectorAsSelector(sel).String()``: what a Scale's ``status.selector`` shows."""
    if not isinstance(sel, dict):
        return ""
    reqs: list[tuple[str, str]] = []
    for k, v in (sel.get("matchLabels") or {}).items():
        reqs.append((k, f"{k}={v}"))
    for x in sel.get("matchExpressions") or []:
        key, op, vals = x.get("key", ""), x.get("operator"), sorted(x.get("values") or [])
        if op == "In":
            reqs.append((key, f"{key} in ({','.join(vals)})"))
        elif op == "NotIn":
            reqs.append((key, f"{key} notin ({','.join(vals)})"))
        elif op == "Exists":
            reqs.append((key, key))
        elif op == "DoesNotExist":
            reqs.append((key, "!" + key))
    return ",".join(text for _, text in sorted(reqs, key=lambda r: r[0]))


# -- label selectors -----------------------------------------------------------------------------


def selector_matches(sel: Any, labels: dict | None) -> bool:
    """Whether a metav1.LabelSelector matches ``labels`` (an empty selector matches everything)."""
    labels = labels or {}
    if not isinstance(sel, dict):
        return False
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for x in sel.get("matchExpressions") or []:
        key, op, vals = x.get("key"), x.get("operator"), x.get("values") or []
        if op == "In" and labels.get(key) not in vals:
            return False
        if op == "NotIn" and key in labels and labels[key] in vals:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def _validate_selector(sel: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not isinstance(sel, dict):
        return [e.invalid(path, sel, "must be an object")]
    errs += validate_labels(sel.get("matchLabels"), f"{path}.matchLabels")
    for i, x in enumerate(sel.get("matchExpressions") or []):
        p = f"{path}.matchExpressions[{i}]"
        if not isinstance(x, dict):
            errs.append(e.invalid(p, x, "must be an object"))
            continue
        op = x.get("operator")
        if op in ("In", "NotIn"):
            if not x.get("values"):
                errs.append(e.required(f"{p}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist"):
            if x.get("values"):
                errs.append(e.forbidden(f"{p}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        else:
            errs.append(e.invalid(f"{p}.operator", op, "not a valid selector operator"))
    return errs
