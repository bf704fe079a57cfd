"""CustomResourceDefinition structural schemas: pruning, defaulting, validation and CEL rules.

This is the pure-Python counterpart of kube-apiextensions-apiserver's ``pkg/apiserver/schema``
packages (``pruning``, ``defaulting``, ``listtype``, ``objectmeta``, ``cel``) together with the
kube-openapi validator that kube runs over custom resources, and the CRD-time checks of
``apis/apiextensions/validation``. Messages and field paths follow kube's wording because
clients and people match on them.

A :class:`StructuralSchema` is built once per CRD version and reused for every request. The
request pipeline is the one kube runs when it decodes a custom resource::

    unknown = schema.prune(obj)      # drop unknown fields (and non-nullable nulls), report paths
    schema.default(obj)              # apply ``default:`` under present parents
    errors = schema.validate(obj, old)

No I/O. Regular expressions and CEL programs are compiled lazily and cached.
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import ipaddress
import json
import logging
import math
import re
import threading
import urllib.parse
import warnings
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from typing import Any

from fleetplane.apimachinery.errors import (
    FieldError,
    forbidden,
    invalid,
    not_supported,
    required,
    too_long,
)

try:  # the CEL engine: common-expression-language (Rust cel crate bindings)
    import cel as _cel
    from cel import stdlib as _cel_stdlib

    # The bindings log every failing Python callback at WARNING on the "cel" logger; without a
    # handler Python's last-resort handler would print each one to stderr. Failures are reported
    # as field errors instead, so keep that logger quiet unless the application configures it.
    logging.getLogger("cel").addHandler(logging.NullHandler())
except ImportError:  # pragma: no cover - the dependency is pinned in pyproject.toml
    _cel = None
    _cel_stdlib = None

__all__ = ["StructuralSchema", "validate_structural", "escape_cel_property"]

_MISSING: Any = object()

# Fields of a resource that pruning never touches at a resource root (top level or embedded).
_META_FIELDS = frozenset(("apiVersion", "kind", "metadata"))
# metav1.ObjectMeta JSON fields; anything else under metadata is dropped like a strict decode would.
_OBJECT_META_FIELDS = frozenset(
    (
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    )
)
_OWNER_REFERENCE_FIELDS = frozenset(("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"))
_MANAGED_FIELDS_ENTRY_FIELDS = frozenset(
    ("manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1", "subresource")
)

# Formats validated for CRDs (apiextensions validation/formats.go), normalized without "-".
# Everything else (int32, int64, float, double, quantity, ...) is stripped, i.e. not validated.
_SUPPORTED_FORMATS = frozenset(
    (
        "bsonobjectid",
        "uri",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "cidr",
        "mac",
        "uuid",
        "uuid3",
        "uuid4",
        "uuid5",
        "isbn",
        "isbn10",
        "isbn13",
        "creditcard",
        "ssn",
        "hexcolor",
        "rgbcolor",
        "byte",
        "password",
        "date",
        "duration",
        "datetime",
    )
)

_OPENAPI_V3_TYPES = ("array", "boolean", "integer", "number", "object", "string")

# Error types that make kube skip CEL rules (registry/customresource/strategy.go hasBlockingErr).
_BLOCKING = frozenset(
    (
        "FieldValueNotSupported",
        "FieldValueRequired",
        "FieldValueTooLong",
        "FieldValueTooMany",
        "FieldValueTypeInvalid",
    )
)
_BLOCKED_CEL_MESSAGE = (
    "some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)

_MAX_MESSAGE_EXPRESSION_BYTES = 5 * 1024


# ---------------------------------------------------------------------------------------------
# Small helpers: Go-style formatting, JSON equality and copying
# ---------------------------------------------------------------------------------------------


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


def _same(a: Any, b: Any) -> bool:
    """JSON deep equality that, like Go's reflect.DeepEqual on unstructured data, keeps types apart."""
    if a is b:
        return True
    ta = type(a)
    if ta is not type(b):
        return False
    if ta is dict:
        if len(a) != len(b):
            return False
        for k, v in a.items():
            w = b.get(k, _MISSING)
            if w is _MISSING or not _same(v, w):
                return False
        return True
    if ta is list:
        if len(a) != len(b):
            return False
        for v, w in zip(a, b, strict=True):
            if not _same(v, w):
                return False
        return True
    return a == b


def _copy_json(v: Any) -> Any:
    t = type(v)
    if t is dict:
        return {k: _copy_json(x) for k, x in v.items()}
    if t is list:
        return [_copy_json(x) for x in v]
    return v


def _json_eq_loose(a: Any, b: Any) -> bool:
    """Enum comparison: numbers compare by value, booleans only with booleans."""
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return a.keys() == b.keys() and all(_json_eq_loose(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(_json_eq_loose(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _fp_child(path: str | None, name: str) -> str:
    """field.Path.Child for a path that may be the nil root (None)."""
    return f"{path}.{name}" if path else name


def _fp_key(path: str | None, key: str) -> str:
    return f"{path}[{key}]" if path else f"[{key}]"


def _fp_index(path: str | None, i: int) -> str:
    return f"{path}[{i}]" if path else f"[{i}]"


def _fp(path: str | None) -> str:
    return path if path else "<nil>"


def _type_invalid(field: str, value: Any, detail: str) -> FieldError:
    return FieldError("FieldValueTypeInvalid", field, detail, value, True)


def _too_many(field: str, actual: int, maximum: int) -> FieldError:
    noun = "item" if maximum == 1 else "items"
    return FieldError("FieldValueTooMany", field, f"must have at most {maximum} {noun}", actual, True)


def _too_long(field: str, maximum: int) -> FieldError:
    if maximum == 1:
        return FieldError("FieldValueTooLong", field, "may not be more than 1 byte")
    return too_long(field, maximum)


def _duplicate_value(field: str, value: Any) -> FieldError:
    return FieldError("FieldValueDuplicate", field, "", value, True)


# ---------------------------------------------------------------------------------------------
# Go (RE2) regular expressions on top of Python's re
# ---------------------------------------------------------------------------------------------

_POSIX_CLASSES = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7f",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}


class _RegexError(ValueError):
    pass


class _NeedsRE2(Exception):
    """The pattern uses RE2 syntax Python's re lacks (Unicode classes); fall back to CEL's engine."""


def _translate_go_regex(p: str) -> str:
    out: list[str] = []
    i, n = 0, len(p)
    in_class = False
    multiline = "(?m" in p or re.search(r"\(\?[a-zA-Z]*m", p) is not None
    while i < n:
        c = p[i]
        if c == "\\":
            if i + 1 >= n:
                raise _RegexError("error parsing regexp: trailing backslash at end of expression: ``")
            d = p[i + 1]
            if d in "pP":
                raise _NeedsRE2
            if d.isdigit() and d != "0":
                raise _RegexError(f"error parsing regexp: invalid escape sequence: `\\{d}`")
            if d == "Z":
                raise _RegexError("error parsing regexp: invalid escape sequence: `\\Z`")
            if d == "z":
                out.append("\\Z")
                i += 2
                continue
            if d == "Q":
                end = p.find("\\E", i + 2)
                lit = p[i + 2 :] if end < 0 else p[i + 2 : end]
                out.append(re.escape(lit))
                i = n if end < 0 else end + 2
                continue
            out.append(p[i : i + 2])
            i += 2
            continue
        if in_class:
            if c == "[" and p.startswith("[:", i):
                end = p.find(":]", i + 2)
                if end > 0:
                    name = p[i + 2 : end]
                    neg = name.startswith("^")
                    cls = _POSIX_CLASSES.get(name.lstrip("^"))
                    if cls is None:
                        raise _RegexError(
                            f"error parsing regexp: invalid character class range: `{p[i : end + 2]}`"
                        )
                    if neg:
                        raise _NeedsRE2
                    out.append(cls)
                    i = end + 2
                    continue
            if c == "[":
                out.append("\\[")
                i += 1
                continue
            if c == "]":
                in_class = False
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            i += 1
            if i < n and p[i] == "^":
                out.append("^")
                i += 1
            if i < n and p[i] == "]":
                out.append("\\]")
                i += 1
            continue
        if c == "(" and p.startswith("(?", i):
            rest = p[i + 2 : i + 4]
            if rest[:1] in ("=", "!", ">") or rest in ("<=", "<!") or rest.startswith("P="):
                raise _RegexError(
                    f"error parsing regexp: invalid or unsupported Perl syntax: `{p[i : i + 3]}`"
                )
            if rest[:1] == "<":
                out.append("(?P<")
                i += 3
                continue
        if c in "*+?" and i + 1 < n and p[i + 1] == "+":
            raise _RegexError(f"error parsing regexp: invalid nested repetition operator: `{c}+`")
        if c == "$" and not multiline:
            out.append("\\Z")
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


class _RE2Fallback:
    """Match with the Rust regex engine of the CEL library (RE2 syntax, Unicode classes)."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        if _cel is None:  # pragma: no cover
            raise _RegexError("error parsing regexp: unsupported Unicode class")
        self._prog = _cel.compile("s.matches(p)")
        try:
            self._prog.execute({"s": "", "p": pattern})
        except Exception as e:  # noqa: BLE001 - report the engine's own parse error
            raise _RegexError(f"error parsing regexp: {str(e).splitlines()[0]}") from None

    def search(self, s: str) -> bool:
        return bool(self._prog.execute({"s": s, "p": self.pattern}))


_regex_cache: dict[str, Any] = {}
_regex_lock = threading.Lock()


def _go_regex(pattern: str) -> Any:
    """Compile a Go/RE2 pattern; the result has ``search(s)`` (unanchored, like MatchString)."""
    r = _regex_cache.get(pattern)
    if r is not None:
        return r
    try:
        translated = _translate_go_regex(pattern)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                r = re.compile(translated, re.ASCII)
            except re.error as e:
                raise _RegexError(f"error parsing regexp: {e}") from None
    except _NeedsRE2:
        r = _RE2Fallback(pattern)
    with _regex_lock:
        if len(_regex_cache) > 4096:
            _regex_cache.clear()
        _regex_cache[pattern] = r
    return r


def _regex_error(pattern: str) -> str | None:
    try:
        _go_regex(pattern)
    except _RegexError as e:
        return str(e)
    return None


# ---------------------------------------------------------------------------------------------
# Formats (kube-openapi strfmt default registry)
# ---------------------------------------------------------------------------------------------

_RX_UUID = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\Z")
_RX_UUID3 = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}\Z")
_RX_UUID4 = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}\Z")
_RX_UUID5 = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}\Z")
_HN = "[0-9A-Za-z\u00a1-\U0010ffff]"
_RX_HOSTNAME = re.compile(
    rf"^({_HN}((-?{_HN}{{0,62}})?)|({_HN}(([0-9A-Za-z\-\u00a1-\U0010ffff]{{0,61}}{_HN})?)(\.)){{1,}}({_HN})(-?{_HN}){{1,62}})\Z"
)
_RX_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})\Z")
_RX_TIME = re.compile(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))\Z")
_RX_BASE64 = re.compile(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})\Z")
_RX_SSN = re.compile(r"^\d{3}[- ]?\d{2}[- ]?\d{4}\Z")
_RX_HEXCOLOR = re.compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})\Z")
_RGB = r"\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*"
_RX_RGBCOLOR = re.compile(rf"^rgb\({_RGB},{_RGB},{_RGB}\)\Z")
_RX_BSON = re.compile(r"^[0-9a-fA-F]{24}\Z")
_RX_EMAIL = re.compile(r"^[^\s@<>()\[\]\\,;:\"]+@[^\s@<>()\[\]\\,;:\"]+\Z")
_RX_EMAIL_NAMED = re.compile(r"^[^<>]*<([^<>]+)>\Z")
_RX_MAC_COLON = re.compile(r"^[0-9A-Fa-f]{2}(?:([:-])[0-9A-Fa-f]{2})(?:\1[0-9A-Fa-f]{2})*\Z")
_RX_MAC_DOT = re.compile(r"^[0-9A-Fa-f]{4}(?:\.[0-9A-Fa-f]{4})*\Z")
_RX_GO_DURATION = re.compile(r"^[-+]?((\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h))+\Z")
_RX_GO_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_RX_SCALA_DURATION = re.compile(r"^\s*(?:\d+\s*[A-Za-zµ]+\s*)+\Z")
_RX_SCALA_DURATION_PART = re.compile(r"(\d+)\s*([A-Za-zµ]+)")
_SCALA_UNITS = (
    ("ns", "nano"),
    ("us", "µs", "micro"),
    ("ms", "milli"),
    ("s", "sec"),
    ("m", "min"),
    ("h", "hr", "hour"),
    ("d", "day"),
    ("w", "wk", "week"),
)
_DURATION_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}


def _is_date(s: str) -> bool:
    m = _RX_DATE.match(s)
    if not m:
        return False
    try:
        _dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return False
    return True


def _is_datetime(s: str) -> bool:
    if len(s) < 4:
        return False
    parts = s.lower().split("t")
    if len(parts) < 2 or not _is_date(parts[0]):
        return False
    m = _RX_TIME.match(parts[1])
    if not m:
        return False
    return m.group(1) <= "23" and m.group(2) <= "59" and m.group(3) <= "59"


def _parse_go_duration(s: str) -> float | None:
    """time.ParseDuration, in seconds (None if invalid)."""
    if s in ("0", "+0", "-0"):
        return 0.0
    if not _RX_GO_DURATION.match(s):
        return None
    total = 0.0
    for num, unit in _RX_GO_DURATION_PART.findall(s):
        total += float(num) * _DURATION_UNIT_SECONDS[unit]
    return -total if s.startswith("-") else total


def _is_duration(s: str) -> bool:
    if _parse_go_duration(s) is not None:
        return True
    if not _RX_SCALA_DURATION.match(s):
        return False
    ok = False
    for _num, unit in _RX_SCALA_DURATION_PART.findall(s):
        u = unit.strip().lower()
        for variants in _SCALA_UNITS:
            last = len(variants) - 1
            for i, variant in enumerate(variants):
                if (i == last and u.startswith(variant)) or u == variant.lower():
                    ok = True
    return ok


def _is_ip(s: str) -> bool:
    if "%" in s:
        return False
    try:
        ipaddress.ip_address(s)
    except ValueError:
        return False
    return True


def _is_cidr(s: str) -> bool:
    if "/" not in s or "%" in s:
        return False
    try:
        ipaddress.ip_network(s, strict=False)
    except ValueError:
        return False
    return True


def _is_mac(s: str) -> bool:
    if _RX_MAC_COLON.match(s):
        return (len(s) + 1) // 3 in (6, 8, 20)
    if _RX_MAC_DOT.match(s):
        return (len(s) + 1) // 5 in (3, 4, 10)
    return False


def _is_email(s: str) -> bool:
    m = _RX_EMAIL_NAMED.match(s.strip())
    addr = m.group(1) if m else s
    return bool(_RX_EMAIL.match(addr))


def _is_uri(s: str) -> bool:
    if not s or any(ord(c) < 0x21 or ord(c) == 0x7F for c in s):
        return False
    if s.startswith("/"):
        return True
    return re.match(r"^[A-Za-z][A-Za-z0-9+.\-]*:", s) is not None


def _isbn10(s: str) -> bool:
    s = s.replace("-", "").replace(" ", "")
    if not re.match(r"^(?:[0-9]{9}X|[0-9]{10})\Z", s):
        return False
    total = sum((10 - i) * (10 if c == "X" else int(c)) for i, c in enumerate(s))
    return total % 11 == 0


def _isbn13(s: str) -> bool:
    s = s.replace("-", "").replace(" ", "")
    if not re.match(r"^[0-9]{13}\Z", s):
        return False
    total = sum(int(c) * (1 if i % 2 == 0 else 3) for i, c in enumerate(s))
    return total % 10 == 0


def _is_creditcard(s: str) -> bool:
    digits = re.sub(r"[^0-9]", "", s)
    if not re.match(
        r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|(222[1-9]|22[3-9][0-9]|2[3-6][0-9]{2}|27[01][0-9]|2720)[0-9]{12}"
        r"|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11}|6[27][0-9]{14})\Z",
        digits,
    ):
        return False
    total, alt = 0, False
    for c in reversed(digits):
        d = int(c)
        if alt:
            d *= 2
            if d > 9:
                d -= 9
        total += d
        alt = not alt
    return total % 10 == 0


_FORMAT_CHECKS: dict[str, Callable[[str], bool]] = {
    "bsonobjectid": lambda s: bool(_RX_BSON.match(s)),
    "uri": _is_uri,
    "email": _is_email,
    "hostname": lambda s: (
        bool(_RX_HOSTNAME.match(s)) and len(s) <= 255 and all(len(p) <= 63 for p in s.split("."))
    ),
    "ipv4": lambda s: _is_ip(s) and "." in s,
    "ipv6": lambda s: _is_ip(s) and ":" in s,
    "cidr": _is_cidr,
    "mac": _is_mac,
    "uuid": lambda s: bool(_RX_UUID.match(s)),
    "uuid3": lambda s: bool(_RX_UUID3.match(s)),
    "uuid4": lambda s: bool(_RX_UUID4.match(s)),
    "uuid5": lambda s: bool(_RX_UUID5.match(s)),
    "isbn": lambda s: _isbn10(s) or _isbn13(s),
    "isbn10": _isbn10,
    "isbn13": _isbn13,
    "creditcard": _is_creditcard,
    "ssn": lambda s: bool(_RX_SSN.match(s)),
    "hexcolor": lambda s: bool(_RX_HEXCOLOR.match(s)),
    "rgbcolor": lambda s: bool(_RX_RGBCOLOR.match(s)),
    "byte": lambda s: bool(_RX_BASE64.match(s)),
    "password": lambda s: True,
    "date": _is_date,
    "duration": _is_duration,
    "datetime": _is_datetime,
}


# ---------------------------------------------------------------------------------------------
# Quantities (k8s.io/apimachinery/pkg/api/resource), for the CEL quantity library
# ---------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------
# CEL function library: the Kubernetes extensions cel-rust lacks
# ---------------------------------------------------------------------------------------------


class _CELError(ValueError):
    pass


def _k_index_of(container: Any, item: Any, offset: int | None = None) -> int:
    if isinstance(container, str):
        return _cel_stdlib.index_of(container, item, 0 if offset is None else offset)
    for i, v in enumerate(container):
        if _json_eq_loose(v, item):
            return i
    return -1


def _k_last_index_of(container: Any, item: Any, offset: int | None = None) -> int:
    if isinstance(container, str):
        return _cel_stdlib.last_index_of(container, item, offset)
    for i in range(len(container) - 1, -1, -1):
        if _json_eq_loose(container[i], item):
            return i
    return -1


def _k_is_sorted(items: list[Any]) -> bool:
    return all(items[i] <= items[i + 1] for i in range(len(items) - 1))


def _k_find(s: str, pattern: str) -> str:
    r = _go_regex(pattern)
    if isinstance(r, _RE2Fallback):
        raise _CELError("find: Unicode classes are not supported")
    m = r.search(s)
    return m.group(0) if m else ""


def _k_find_all(s: str, pattern: str, limit: int = -1) -> list[str]:
    r = _go_regex(pattern)
    if isinstance(r, _RE2Fallback):
        raise _CELError("findAll: Unicode classes are not supported")
    out = [m.group(0) for m in r.finditer(s)]
    return out if limit < 0 else out[:limit]


def _cel_str(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, float):
        return _go_float(v)
    if isinstance(v, str):
        return v
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, list):
        return "[" + ", ".join(_cel_str(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_cel_str(k)}: {_cel_str(x)}" for k, x in v.items()) + "}"
    return str(v)


_RX_FORMAT_VERB = re.compile(r"%(?:\.(\d+))?([sdfeExXobc%])")


def _k_format(fmt: str, args: list[Any]) -> str:
    """strings.format from cel-go's ext.Strings (the common verbs)."""
    it = iter(args)

    def repl(m: re.Match[str]) -> str:
        prec, verb = m.group(1), m.group(2)
        if verb == "%":
            return "%"
        try:
            v = next(it)
        except StopIteration:
            raise _CELError(f"index {len(args)} out of range") from None
        if verb == "s":
            return _cel_str(v)
        if verb == "d":
            if isinstance(v, bool) or not isinstance(v, int):
                raise _CELError("decimal clause can only be used on integers")
            return str(v)
        if verb in "fe" or verb == "E":
            p = 6 if prec is None else int(prec)
            return format(float(v), f".{p}{verb}")
        if verb in "xX":
            if isinstance(v, str):
                h = v.encode().hex()
            elif isinstance(v, bytes):
                h = v.hex()
            else:
                h = format(int(v), "x")
            return h.upper() if verb == "X" else h
        if verb == "o":
            return format(int(v), "o")
        if verb == "b":
            return format(int(v), "b")
        return _cel_str(v)

    return _RX_FORMAT_VERB.sub(repl, fmt)


def _k_url(s: str) -> str:
    if not _is_uri(s):
        raise _CELError(
            f"URL parse error during conversion from string: parse {_go_quote(s)}: invalid URI for request"
        )
    return s


def _k_is_url(s: str) -> bool:
    return isinstance(s, str) and _is_uri(s)


def _k_get_scheme(u: str) -> str:
    return urllib.parse.urlsplit(u).scheme


def _k_get_host(u: str) -> str:
    return urllib.parse.urlsplit(u).netloc.rpartition("@")[2]


def _k_get_hostname(u: str) -> str:
    host = _k_get_host(u)
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host[1:]
    return host.rpartition(":")[0] if ":" in host else host


def _k_get_port(u: str) -> str:
    host = _k_get_host(u)
    if host.startswith("["):
        rest = host[host.find("]") + 1 :] if "]" in host else ""
        return rest[1:] if rest.startswith(":") else ""
    return host.rpartition(":")[2] if ":" in host else ""


def _k_get_escaped_path(u: str) -> str:
    return urllib.parse.urlsplit(u).path


def _k_get_query(u: str) -> dict[str, list[str]]:
    return urllib.parse.parse_qs(urllib.parse.urlsplit(u).query, keep_blank_values=True)


def _k_quantity(s: str) -> str:
    _parse_quantity(s)
    return s


def _k_is_quantity(s: Any) -> bool:
    try:
        _parse_quantity(s)
    except ValueError:
        return False
    return True


def _k_compare_to(a: str, b: str) -> int:
    x, y = _parse_quantity(a), _parse_quantity(b)
    return (x > y) - (x < y)


def _k_as_integer(q: str) -> int:
    v = _parse_quantity(q)
    if v.denominator != 1 or not -(2**63) <= v.numerator < 2**63:
        raise _CELError("cannot convert value to integer")
    return v.numerator


def _k_is_integer(q: str) -> bool:
    v = _parse_quantity(q)
    return v.denominator == 1 and -(2**63) <= v.numerator < 2**63


def _k_quantity_add(a: str, b: Any) -> str:
    y = Fraction(b) if isinstance(b, int) and not isinstance(b, bool) else _parse_quantity(b)
    return _format_quantity(_parse_quantity(a) + y)


def _k_quantity_sub(a: str, b: Any) -> str:
    y = Fraction(b) if isinstance(b, int) and not isinstance(b, bool) else _parse_quantity(b)
    return _format_quantity(_parse_quantity(a) - y)


def _k_quantity_sign(q: str) -> int:
    v = _parse_quantity(q)
    return (v > 0) - (v < 0)


def _k_ip(s: str) -> str:
    if "/" in s:  # cidr('…').ip()
        return str(ipaddress.ip_interface(s).ip)
    if not _is_ip(s):
        raise _CELError(
            f"IP Address {_go_quote(s)} parse error during conversion from string: ParseAddr({_go_quote(s)})"
        )
    if ipaddress.ip_address(s).version == 6 and ipaddress.ip_address(s).ipv4_mapped is not None:
        raise _CELError("IPv4-mapped IPv6 address is not allowed")
    return s


def _k_cidr(s: str) -> str:
    if not _is_cidr(s):
        raise _CELError(f"network address {_go_quote(s)} parse error during conversion from string")
    return s


def _k_addr(s: str) -> Any:
    return ipaddress.ip_interface(s).ip if "/" in s else ipaddress.ip_address(s)


def _k_contains_ip(c: str, ip: str) -> bool:
    net = ipaddress.ip_network(c, strict=False)
    addr = ipaddress.ip_address(ip)
    return addr.version == net.version and addr in net


def _k_contains_cidr(c: str, other: str) -> bool:
    net = ipaddress.ip_network(c, strict=False)
    sub = ipaddress.ip_network(other, strict=False)
    return sub.version == net.version and sub.subnet_of(net)  # type: ignore[arg-type]


def _k_size(v: Any) -> int:
    """CEL size(): strings count code points (cel-rust counts UTF-8 bytes)."""
    if isinstance(v, (str, bytes, list, dict)):
        return len(v)
    raise TypeError("no such overload")


_RX_SIZE_CALL = re.compile(r"(?<![\w])size(?=\s*\()")


def _rewrite_size_calls(source: str) -> str:
    """Route ``size()`` calls outside string literals to :func:`_k_size`."""
    if "size" not in source:
        return source
    out: list[str] = []
    i, n, seg = 0, len(source), 0
    while i < n:
        c = source[i]
        if c not in "'\"":
            i += 1
            continue
        raw = False
        j = i - 1
        while j >= 0 and source[j] in "rRbB":
            raw = raw or source[j] in "rR"
            j -= 1
        out.append(_RX_SIZE_CALL.sub("__k_size", source[seg:i]))
        quote = c * 3 if source.startswith(c * 3, i) else c
        k = i + len(quote)
        while k < n:
            if not raw and source[k] == "\\":
                k += 2
                continue
            if source.startswith(quote, k):
                k += len(quote)
                break
            k += 1
        out.append(source[i:k])
        i = seg = k
    out.append(_RX_SIZE_CALL.sub("__k_size", source[seg:]))
    return "".join(out)


def _k_build_library() -> dict[str, Callable[..., Any]]:
    lib: dict[str, Callable[..., Any]] = dict(_cel_stdlib.STDLIB_FUNCTIONS) if _cel_stdlib else {}
    lib.update(
        {
            "__k_size": _k_size,
            # lists (k8s.io/apiserver/pkg/cel/library/lists.go); sum/min/max come from cel.stdlib
            "indexOf": _k_index_of,
            "lastIndexOf": _k_last_index_of,
            "isSorted": _k_is_sorted,
            # regex
            "find": _k_find,
            "findAll": _k_find_all,
            # strings.format
            "format": _k_format,
            # urls
            "url": _k_url,
            "isURL": _k_is_url,
            "getScheme": _k_get_scheme,
            "getHost": _k_get_host,
            "getHostname": _k_get_hostname,
            "getPort": _k_get_port,
            "getEscapedPath": _k_get_escaped_path,
            "getQuery": _k_get_query,
            # quantity (quantities are carried as their string form)
            "quantity": _k_quantity,
            "isQuantity": _k_is_quantity,
            "compareTo": _k_compare_to,
            "isLessThan": lambda a, b: _parse_quantity(a) < _parse_quantity(b),
            "isGreaterThan": lambda a, b: _parse_quantity(a) > _parse_quantity(b),
            "asInteger": _k_as_integer,
            "asApproximateFloat": lambda q: float(_parse_quantity(q)),
            "isInteger": _k_is_integer,
            "sign": _k_quantity_sign,
            "add": _k_quantity_add,
            "sub": _k_quantity_sub,
            # ip / cidr (carried as strings)
            "ip": _k_ip,
            "isIP": lambda s: isinstance(s, str) and _is_ip(s),
            "ip.isCanonical": lambda s: _is_ip(s) and str(ipaddress.ip_address(s)) == s,
            "cidr": _k_cidr,
            "isCIDR": lambda s: isinstance(s, str) and _is_cidr(s),
            "family": lambda s: _k_addr(s).version,
            "isUnspecified": lambda s: _k_addr(s).is_unspecified,
            "isLoopback": lambda s: _k_addr(s).is_loopback,
            "isLinkLocalMulticast": lambda s: _k_addr(s).is_multicast and _k_addr(s).is_link_local,
            "isLinkLocalUnicast": lambda s: _k_addr(s).is_link_local and not _k_addr(s).is_multicast,
            "isGlobalUnicast": lambda s: (
                not _k_addr(s).is_multicast
                and not _k_addr(s).is_loopback
                and not _k_addr(s).is_link_local
                and not _k_addr(s).is_unspecified
                and str(_k_addr(s)) != "255.255.255.255"
            ),
            "containsIP": _k_contains_ip,
            "containsCIDR": _k_contains_cidr,
            "prefixLength": lambda c: ipaddress.ip_network(c, strict=False).prefixlen,
            "masked": lambda c: str(ipaddress.ip_network(c, strict=False)),
        }
    )
    return lib


_CEL_LIBRARY = _k_build_library()
_CEL_NAMESPACES = frozenset(name.split(".", 1)[0] for name in _CEL_LIBRARY if "." in name) | {"optional"}
_CEL_LIBRARY_SHORT_NAMES = frozenset(name.rsplit(".", 1)[-1] for name in _CEL_LIBRARY)
_CEL_BUILTIN_FUNCTIONS = frozenset(
    (
        "size",
        "contains",
        "startsWith",
        "endsWith",
        "matches",
        "int",
        "uint",
        "double",
        "string",
        "bytes",
        "bool",
        "duration",
        "timestamp",
        "dyn",
        "type",
        "has",
        "all",
        "exists",
        "exists_one",
        "map",
        "filter",
        "getFullYear",
        "getMonth",
        "getDayOfYear",
        "getDayOfMonth",
        "getDate",
        "getDayOfWeek",
        "getHours",
        "getMinutes",
        "getSeconds",
        "getMilliseconds",
        "hasValue",
        "value",
        "orValue",
        "or",
        "of",
        "none",
        "ofNonZeroValue",
        "max",
        "min",
    )
)
_CEL_TYPE_IDENTS = frozenset(
    ("int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type", "dyn", "google")
)
_RX_COMPREHENSION_VAR = re.compile(r"\.\s*(?:all|exists|exists_one|map|filter)\s*\(\s*([A-Za-z_]\w*)\s*,")


class _Program:
    """One compiled CEL expression plus what it needs at evaluation time."""

    __slots__ = ("source", "prog", "funcs", "uses_old_self", "error")

    def __init__(self, source: str) -> None:
        self.source = source
        self.prog: Any = None
        self.funcs: dict[str, Callable[..., Any]] | None = None
        self.uses_old_self = False
        self.error: str | None = None
        if _cel is None:  # pragma: no cover
            self.error = "CEL is not available: install common-expression-language"
            return
        try:
            prog = _cel.compile(_rewrite_size_calls(source))
        except Exception as e:  # noqa: BLE001 - parse errors come back as ValueError
            msg = str(e)
            m = re.match(r"Failed to parse expression '.*?': (ERROR: .*)", msg, re.S)
            self.error = m.group(1) if m else msg
            return
        variables = prog.variables()
        functions = prog.functions()
        comprehension_vars = set(_RX_COMPREHENSION_VAR.findall(source))
        for v in variables:
            if (
                v in ("self", "oldSelf")
                or v in comprehension_vars
                or v in _CEL_NAMESPACES
                or v in _CEL_TYPE_IDENTS
            ):
                continue
            self.error = f"ERROR: <input>:1:1: undeclared reference to '{v}' (in container '')"
            return
        needed: dict[str, Callable[..., Any]] = {}
        for f in functions:
            fn = _CEL_LIBRARY.get(f)
            if fn is not None:
                needed[f] = fn
            elif f[:1] in ("_", "@", "!", "-"):
                continue  # operators
            elif f not in _CEL_BUILTIN_FUNCTIONS and f not in _CEL_LIBRARY_SHORT_NAMES:
                self.error = f"ERROR: <input>:1:1: undeclared reference to '{f}' (in container '')"
                return
        for v in variables:
            if v in _CEL_NAMESPACES:
                prefix = v + "."
                needed.update({k: fn for k, fn in _CEL_LIBRARY.items() if k.startswith(prefix)})
        self.prog = prog
        self.funcs = needed or None
        self.uses_old_self = "oldSelf" in variables

    def run(self, variables: dict[str, Any]) -> Any:
        if self.funcs is None:
            return self.prog.execute(variables)
        return self.prog.execute(_cel.Context(variables, self.funcs))


@lru_cache(maxsize=8192)
def _compile_cel(source: str) -> _Program:
    return _Program(source)


def _cel_error_text(e: BaseException) -> tuple[str, bool]:
    """(message, is_overload) for a CEL runtime failure, in cel-go's wording."""
    if isinstance(e, KeyError):
        key = e.args[0] if e.args else ""
        return f"no such key: {key}", False
    msg = str(e)
    if isinstance(e, ZeroDivisionError):
        return ("modulus by zero" if "modulus" in msg else "division by zero"), False
    if isinstance(e, OverflowError):
        return "integer overflow", False
    if isinstance(e, IndexError):
        return msg or "index out of bounds", False
    if isinstance(e, TypeError):
        return "no such overload", True
    m = re.search(
        r"Python function call failed: \w+: (.*?)(?:\. Check function arguments and their types\.)?$",
        msg,
        re.S,
    )
    if m:
        return m.group(1), False
    m = re.match(
        r"Function '(\w+)' error: (.*?)(?:\. Check function arguments and their types\.)?$", msg, re.S
    )
    if m:
        return " ".join(f"{m.group(1)}: {m.group(2)}".split()), False
    m = re.match(r"Undefined variable or function: '([^']*)'", msg)
    if m:
        return f"no such overload: {m.group(1)}", True
    return " ".join(msg.split()) if msg else type(e).__name__, False


# ---------------------------------------------------------------------------------------------
# CEL property-name escaping and projections
# ---------------------------------------------------------------------------------------------

_CEL_RESERVED = frozenset(
    (
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    )
)
_RX_ESCAPABLE = re.compile(r"^[a-zA-Z_.\-/][a-zA-Z0-9_.\-/]*\Z")
_RX_ESCAPE = re.compile(r"__|[./\-]")
_ESCAPES = {"__": "__underscores__", ".": "__dot__", "-": "__dash__", "/": "__slash__"}


def escape_cel_property(name: str) -> str | None:
    """The CEL identifier kube uses for an object property, or None if it cannot be accessed."""
    if name in _CEL_RESERVED:
        return f"__{name}__"
    if not _RX_ESCAPABLE.match(name):
        return None
    return _RX_ESCAPE.sub(lambda m: _ESCAPES[m.group(0)], name)


_RX_DOT_IDENT = re.compile(r"\s*\.\s*([A-Za-z_]\w*)")
_RX_CALL = re.compile(r"\s*\(")


def _projection(source: str, var: str) -> dict[str, Any] | None:
    """The parts of ``var`` an expression reads (``None`` = the whole value).

    A conservative scan of ``var.a.b`` chains: anything other than plain field selection
    (indexing, method calls on the value, passing it to a function) needs the whole value.
    Used only to avoid converting fields the rule never looks at.
    """
    tree: dict[str, Any] = {}
    found = False
    for m in re.finditer(rf"(?<![\w.]){var}\b", source):
        found = True
        pos = m.end()
        chain: list[str] = []
        while True:
            mm = _RX_DOT_IDENT.match(source, pos)
            if not mm:
                break
            chain.append(mm.group(1))
            pos = mm.end()
        if chain and _RX_CALL.match(source, pos):
            chain.pop()
        if not chain:
            return None
        node = tree
        for i, name in enumerate(chain):
            if name in node and node[name] is None:
                break
            if i == len(chain) - 1:
                node[name] = None
            else:
                node = node.setdefault(name, {})
    return tree if found else {}


# ---------------------------------------------------------------------------------------------
# The compiled schema tree
# ---------------------------------------------------------------------------------------------

_ADD_NONE, _ADD_SCHEMA, _ADD_TRUE, _ADD_FALSE = 0, 1, 2, 3


class _Rule:
    __slots__ = (
        "raw",
        "rule",
        "message",
        "message_expression",
        "reason",
        "field_path",
        "optional_old_self",
        "_prog",
        "_msg_prog",
        "_norm_field_path",
        "proj_self",
        "proj_old",
    )

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        self.rule = str(raw.get("rule") or "")
        self.message = str(raw.get("message") or "")
        self.message_expression = str(raw.get("messageExpression") or "")
        self.reason = raw.get("reason")
        self.field_path = str(raw.get("fieldPath") or "")
        self.optional_old_self = raw.get("optionalOldSelf") is True
        self._prog: _Program | None = None
        self._msg_prog: _Program | None = None
        self._norm_field_path: Any = _MISSING
        self.proj_self: Any = _MISSING
        self.proj_old: Any = _MISSING

    @property
    def program(self) -> _Program | None:
        if self._prog is None and self.rule.strip():
            self._prog = _compile_cel(self.rule)
            self.proj_self = _projection(self.rule, "self")
            self.proj_old = _projection(self.rule, "oldSelf")
        return self._prog

    @property
    def message_program(self) -> _Program | None:
        if self._msg_prog is None and self.message_expression.strip():
            self._msg_prog = _compile_cel(self.message_expression)
        return self._msg_prog

    def error_string(self) -> str:
        return self.message.strip() if self.message else self.rule.strip()

    def default_message(self) -> str:
        return self.message.strip() if self.message else f"failed rule: {self.rule.strip()}"


class _Node:
    __slots__ = (
        "raw",
        "type",
        "types",
        "type_text",
        "nullable",
        "format",
        "format_name",
        "props",
        "additional",
        "add_mode",
        "items",
        "preserve",
        "embedded",
        "int_or_string",
        "has_default",
        "default",
        "enum",
        "maximum",
        "exclusive_maximum",
        "minimum",
        "exclusive_minimum",
        "multiple_of",
        "max_length",
        "min_length",
        "pattern",
        "max_items",
        "min_items",
        "unique_items",
        "max_properties",
        "min_properties",
        "required",
        "all_of",
        "any_of",
        "one_of",
        "not_",
        "list_type",
        "list_map_keys",
        "map_type",
        "rules",
        "sub_defaults",
        "sub_rules",
        "sub_transition",
        "sub_listtype",
        "sub_embedded",
        "cel_conv",
        "cel_names",
        "default_props",
    )

    def __init__(self, raw: Any, nested: bool = False) -> None:
        if not isinstance(raw, dict):
            raw = {}
        self.raw = raw
        t = raw.get("type")
        self.type = t if isinstance(t, str) and t else None
        self.int_or_string = raw.get("x-kubernetes-int-or-string") is True
        if self.int_or_string:
            self.types: tuple[str, ...] | None = ("integer", "string")
        else:
            self.types = (self.type,) if self.type else None
        self.type_text = ",".join(self.types) if self.types else ""
        self.nullable = raw.get("nullable") is True
        fmt = raw.get("format")
        fmt_norm = fmt.replace("-", "") if isinstance(fmt, str) else ""
        self.format = fmt_norm if fmt_norm in _SUPPORTED_FORMATS else ""
        self.format_name = fmt if self.format else ""
        self.preserve = raw.get("x-kubernetes-preserve-unknown-fields") is True
        self.embedded = raw.get("x-kubernetes-embedded-resource") is True
        self.has_default = raw.get("default") is not None and not nested
        self.default = raw.get("default")

        props = raw.get("properties")
        self.props: dict[str, _Node] = (
            {k: _Node(v, nested) for k, v in props.items() if isinstance(k, str)}
            if isinstance(props, dict)
            else {}
        )
        ap = raw.get("additionalProperties", _MISSING)
        self.additional: _Node | None = None
        if isinstance(ap, dict):
            self.add_mode = _ADD_SCHEMA
            self.additional = _Node(ap, nested)
        elif ap is True:
            self.add_mode = _ADD_TRUE
        elif ap is False:
            self.add_mode = _ADD_FALSE
        else:
            self.add_mode = _ADD_NONE
        items = raw.get("items")
        self.items: _Node | None = _Node(items, nested) if isinstance(items, dict) else None

        def num(key: str) -> Any:
            v = raw.get(key)
            return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None

        def count(key: str) -> int | None:
            v = num(key)
            return int(v) if v is not None else None

        enum = raw.get("enum")
        self.enum = enum if isinstance(enum, list) and enum else None
        self.maximum = num("maximum")
        self.exclusive_maximum = raw.get("exclusiveMaximum") is True
        self.minimum = num("minimum")
        self.exclusive_minimum = raw.get("exclusiveMinimum") is True
        self.multiple_of = num("multipleOf")
        self.max_length = count("maxLength")
        self.min_length = count("minLength")
        pattern = raw.get("pattern")
        self.pattern = pattern if isinstance(pattern, str) and pattern else None
        self.max_items = count("maxItems")
        self.min_items = count("minItems")
        self.unique_items = raw.get("uniqueItems") is True
        self.max_properties = count("maxProperties")
        self.min_properties = count("minProperties")
        req = raw.get("required")
        self.required = [r for r in req if isinstance(r, str)] if isinstance(req, list) else []

        def subs(key: str) -> list[_Node]:
            v = raw.get(key)
            return [_Node(s, True) for s in v if isinstance(s, dict)] if isinstance(v, list) else []

        self.all_of = subs("allOf")
        self.any_of = subs("anyOf")
        self.one_of = subs("oneOf")
        nt = raw.get("not")
        self.not_ = _Node(nt, True) if isinstance(nt, dict) else None

        lt = raw.get("x-kubernetes-list-type")
        self.list_type = lt if isinstance(lt, str) else None
        keys = raw.get("x-kubernetes-list-map-keys")
        self.list_map_keys = [k for k in keys if isinstance(k, str)] if isinstance(keys, list) else []
        mt = raw.get("x-kubernetes-map-type")
        self.map_type = mt if isinstance(mt, str) else None
        xv = raw.get("x-kubernetes-validations")
        self.rules = (
            [_Rule(r) for r in xv if isinstance(r, dict)] if isinstance(xv, list) and not nested else []
        )

        # Subtree summaries so that each pass only walks where it has something to do.
        children = [*self.props.values()]
        if self.additional is not None:
            children.append(self.additional)
        if self.items is not None:
            children.append(self.items)
        self.default_props = [(k, p) for k, p in self.props.items() if p.has_default]
        self.sub_defaults = (
            bool(self.default_props)
            or (self.items is not None and self.items.has_default)
            or (self.additional is not None and self.additional.has_default)
            or any(c.sub_defaults for c in children)
        )
        self.sub_rules = bool(self.rules) or any(c.sub_rules for c in children)
        self.sub_transition = any(r.rule and "oldSelf" in r.rule for r in self.rules) or any(
            c.sub_transition for c in children
        )
        self.sub_listtype = self.list_type in ("set", "map") or any(c.sub_listtype for c in children)
        self.sub_embedded = self.embedded or any(c.sub_embedded for c in children)
        names: dict[str, str | None] = {k: escape_cel_property(k) for k in self.props}
        self.cel_names = names
        self.cel_conv = (
            self.type == "number"
            or (self.type == "string" and self.format in ("byte", "date", "datetime", "duration"))
            or self.embedded
            or any(v != k for k, v in names.items())
            or any(c.cel_conv for c in children)
        )

    @property
    def schema_type(self) -> str:
        return self.type or ""


def _root_node(schema: Any) -> _Node:
    return _Node(schema)


# ---------------------------------------------------------------------------------------------
# StructuralSchema
# ---------------------------------------------------------------------------------------------


class _Ctx:
    __slots__ = ("errs", "base")

    def __init__(self, errs: list[FieldError], base: str | None) -> None:
        self.errs = errs
        self.base = base

    def field(self, name: str) -> str:
        """kube: fldPath.Child(strings.TrimPrefix(err.Name, "."))."""
        stripped = name[1:] if name.startswith(".") else name
        if not stripped or stripped == ".":
            return _fp(self.base)
        return f"{self.base}.{stripped}" if self.base else stripped


class StructuralSchema:
    """A CRD version's ``openAPIV3Schema``, compiled once and applied to every request."""

    def __init__(self, openapi_v3_schema: dict[str, Any] | None) -> None:
        self.raw = openapi_v3_schema if isinstance(openapi_v3_schema, dict) else {}
        self._root = _root_node(self.raw)
        self._node_cache: dict[tuple[str, ...], _Node | None] = {}

    # -- introspection ---------------------------------------------------------------------

    @property
    def has_defaults(self) -> bool:
        return self._root.sub_defaults

    @property
    def has_rules(self) -> bool:
        return self._root.sub_rules

    def precompile(self) -> None:
        """Compile every CEL rule and regular expression now instead of on first use."""
        stack = [self._root]
        while stack:
            n = stack.pop()
            for r in n.rules:
                _ = r.program, r.message_program
            if n.pattern is not None:
                try:
                    _go_regex(n.pattern)
                except _RegexError:
                    pass
            stack.extend(n.props.values())
            stack.extend(c for c in (n.items, n.additional, n.not_) if c is not None)
            stack.extend(n.all_of + n.any_of + n.one_of)

    def _node_at(self, path: tuple[str, ...]) -> _Node | None:
        try:
            return self._node_cache[path]
        except KeyError:
            pass
        n: _Node | None = self._root
        for name in path:
            while n is not None and n.type == "array" and n.items is not None:
                n = n.items
            if n is None:
                break
            p = n.props.get(name)
            n = p if p is not None else n.additional
        self._node_cache[path] = n
        return n

    def list_type_at(self, path: tuple[str, ...]) -> tuple[str, list[str]]:
        """``(list-type, map keys)`` of the list field at ``path`` (list items are transparent)."""
        n = self._node_at(tuple(path))
        if n is None or n.type != "array":
            return ("atomic", [])
        lt = n.list_type if n.list_type in ("set", "map") else "atomic"
        return (lt, list(n.list_map_keys) if lt == "map" else [])

    def map_type_at(self, path: tuple[str, ...]) -> str:
        """``granular`` (the default) or ``atomic`` for the object field at ``path``."""
        n = self._node_at(tuple(path))
        return "atomic" if n is not None and n.map_type == "atomic" else "granular"

    def field_schema_at(self, path: tuple[str, ...]) -> dict[str, Any] | None:
        """The raw schema of the field at ``path`` (list items transparent), if declared."""
        n = self._node_at(tuple(path))
        return n.raw if n is not None else None

    # -- pruning -----------------------------------------------------------------------------

    def prune(self, obj: dict[str, Any], *, prune_nulls: bool = True) -> list[str]:
        """Drop fields the schema does not specify, in place; return their paths, sorted.

        Paths are in the format kube reports as ``unknown field "<path>"``: ``spec.foo``,
        ``spec.items[0].bar``, ``bar`` for a top-level field, ``metadata.foo`` for ObjectMeta.
        ``apiVersion`` and ``kind`` are kept; ``metadata`` is pruned to ObjectMeta's fields.
        With ``prune_nulls`` (kube's decoding does this too) null values of non-nullable fields
        that have no default are removed.
        """
        out: list[str] = []
        if type(obj) is not dict:
            return out
        root = self._root
        self._prune_map(obj, root, "", out, prune_nulls, True, root.preserve)
        out.sort()
        return out

    def prune_nulls(self, obj: Any) -> None:
        """kube's PruneNonNullableNullsWithoutDefaults on its own."""
        self._prune_nulls(obj, self._root)

    def _prune_nulls(self, x: Any, n: _Node | None) -> None:
        if n is None:
            return
        if type(x) is dict:
            props = n.props
            for k in list(x):
                v = x[k]
                p = props.get(k)
                if p is None:
                    p = n.additional
                if p is None:
                    continue
                if v is None:
                    if not p.nullable and not p.has_default:
                        del x[k]
                elif type(v) is dict or type(v) is list:
                    self._prune_nulls(v, p)
        elif type(x) is list and n.items is not None:
            for v in x:
                if type(v) is dict or type(v) is list:
                    self._prune_nulls(v, n.items)

    def _prune(self, x: Any, n: _Node | None, path: str, out: list[str], nulls: bool) -> None:
        tx = type(x)
        if n is not None and n.preserve:
            if tx is dict:
                self._prune_map(x, n, path, out, nulls, n.embedded, True)
            elif tx is list and n.items is not None:
                for i, v in enumerate(x):
                    if type(v) is dict or type(v) is list:
                        self._skip_prune(v, n.items, f"{path}[{i}]", out, nulls)
            return
        if tx is dict:
            if n is None:
                for k in list(x):
                    out.append(_child(path, k))
                    del x[k]
                return
            self._prune_map(x, n, path, out, nulls, n.embedded, False)
        elif tx is list:
            items = n.items if n is not None else None
            for i, v in enumerate(x):
                if type(v) is dict or type(v) is list:
                    self._prune(v, items, f"{path}[{i}]", out, nulls)

    def _skip_prune(self, x: Any, n: _Node | None, path: str, out: list[str], nulls: bool) -> None:
        if n is None:
            return
        if type(x) is dict:
            self._prune_map(x, n, path, out, nulls, n.embedded, True)
        elif type(x) is list and n.items is not None:
            for i, v in enumerate(x):
                if type(v) is dict or type(v) is list:
                    self._skip_prune(v, n.items, f"{path}[{i}]", out, nulls)

    def _prune_map(
        self, x: dict[str, Any], n: _Node, path: str, out: list[str], nulls: bool, embedded: bool, skip: bool
    ) -> None:
        props = n.props
        add_mode = n.add_mode
        additional = n.additional
        for k in list(x):
            if embedded and k in _META_FIELDS:
                if k == "metadata":
                    _prune_object_meta(x[k], _child(path, "metadata"), out)
                continue
            v = x[k]
            p = props.get(k)
            if p is None and add_mode:
                p = additional
                known = True
            else:
                known = p is not None
            if known:
                if v is None:
                    if nulls and p is not None and not p.nullable and not p.has_default:
                        del x[k]
                elif type(v) is dict or type(v) is list:
                    self._prune(v, p, _child(path, k), out, nulls)
            elif not skip:
                if k not in _META_FIELDS or path:
                    out.append(_child(path, k))
                del x[k]

    # -- defaulting --------------------------------------------------------------------------

    def default(self, obj: dict[str, Any]) -> None:
        """Apply ``default:`` values in place, only where the parent exists (kube's Default)."""
        if self._root.sub_defaults:
            self._default(obj, self._root)

    def _default(self, x: Any, n: _Node) -> None:
        tx = type(x)
        if tx is dict:
            for k, p in n.default_props:
                v = x.get(k, _MISSING)
                if v is _MISSING or (v is None and not p.nullable):
                    x[k] = _copy_json(p.default)
            props = n.props
            additional = n.additional
            for k, v in list(x.items()):
                p = props.get(k)
                if p is not None:
                    if p.sub_defaults and v is not None:
                        self._default(v, p)
                elif additional is not None:
                    if v is None and not additional.nullable and additional.has_default:
                        x[k] = v = _copy_json(additional.default)
                    if additional.sub_defaults and v is not None:
                        self._default(v, additional)
        elif tx is list:
            items = n.items
            if items is None:
                return
            for i, v in enumerate(x):
                if v is None and not items.nullable and items.has_default:
                    x[i] = v = _copy_json(items.default)
                if items.sub_defaults and v is not None:
                    self._default(v, items)

    # -- validation --------------------------------------------------------------------------

    def validate(
        self,
        obj: Any,
        old: Any = None,
        *,
        ratcheting: bool = True,
        prior_errors: list[FieldError] | None = None,
    ) -> list[FieldError]:
        """Validate a (pruned and defaulted) custom resource, as kube's CR strategy does.

        Runs the OpenAPI value validations, the embedded-resource checks, the
        ``x-kubernetes-list-type`` uniqueness checks and then the ``x-kubernetes-validations``
        CEL rules (skipped, as in kube, when an earlier error leaves the object malformed;
        ``prior_errors``, e.g. metadata errors found by the caller, count for that too).

        With ``old`` (an update) transition rules using ``oldSelf`` run, and with ``ratcheting``
        (kube's CRDValidationRatcheting, on by default since 1.30) errors in parts of the object
        that did not change are not reported.
        """
        errs = self.validate_schema(obj, old, ratcheting=ratcheting)
        if self._root.sub_rules:
            blocking = any(e.type in _BLOCKING for e in errs) or any(
                e.type in _BLOCKING for e in prior_errors or ()
            )
            if blocking:
                errs.append(FieldError("FieldValueInvalid", "<nil>", _BLOCKED_CEL_MESSAGE, "null", True))
            else:
                errs.extend(self.validate_rules(obj, old, ratcheting=ratcheting))
        return errs

    def validate_schema(self, obj: Any, old: Any = None, *, ratcheting: bool = True) -> list[FieldError]:
        """The non-CEL part of :meth:`validate`."""
        errs: list[FieldError] = []
        root = self._root
        oldv = old if (old is not None and ratcheting) else _MISSING
        self._vnode(obj, root, "", _Ctx(errs, None), oldv)
        if root.sub_embedded and type(obj) is dict:
            self._validate_embedded_map(obj, root, None, errs)
        if root.sub_listtype and type(obj) is dict:
            if old is None or not ratcheting or not self._list_errors(old):
                errs.extend(self._list_errors(obj))
        return errs

    def _list_errors(self, obj: Any) -> list[FieldError]:
        errs: list[FieldError] = []
        if type(obj) is dict:
            self._lists_map(obj, self._root, None, errs)
        return errs

    # OpenAPI (kube-openapi validate) -------------------------------------------------------

    def _vnode(self, x: Any, n: _Node, path: str, ctx: _Ctx, old: Any) -> None:
        if old is not _MISSING and _same(x, old):
            return  # ratcheting: unchanged values keep validating as they did
        errs = ctx.errs
        if x is None:
            if n.types and not n.nullable:
                errs.append(
                    _type_invalid(
                        ctx.field(path),
                        "null",
                        f"{path} in body must be of type {n.type_text}: {_go_quote('null')}",
                    )
                )
            if n.enum is not None and None not in n.enum:
                errs.append(not_supported(ctx.field(path), "null", _enum_texts(n.enum)))
            return
        tx = type(x)
        # type
        if n.types is not None or n.format:
            self._check_type(x, tx, n, path, ctx)
        # allOf / anyOf / oneOf / not
        if n.all_of or n.any_of or n.one_of or n.not_ is not None:
            self._check_junctors(x, n, path, ctx)
        if tx is str:
            self._check_string(x, n, path, ctx)
        elif (tx is int or tx is float) and (
            n.maximum is not None or n.minimum is not None or n.multiple_of is not None
        ):
            self._check_number(x, tx, n, path, ctx)
        elif tx is list:
            items = n.items
            if items is not None:
                correlate = _correlator(n, old) if old is not _MISSING else None
                for i, v in enumerate(x):
                    self._vnode(v, items, f"{path}[{i}]", ctx, correlate(v) if correlate else _MISSING)
            size = len(x)
            if n.min_items is not None and size < n.min_items:
                errs.append(
                    invalid(ctx.field(path), size, f"{path} in body should have at least {n.min_items} items")
                )
            if n.max_items is not None and size > n.max_items:
                errs.append(_too_many(ctx.field(path), size, n.max_items))
            if n.unique_items and _has_duplicates(x):
                errs.append(invalid(ctx.field(path), "", f"{path} in body shouldn't contain duplicates"))
        if n.enum is not None:
            for e in n.enum:
                if _json_eq_loose(x, e):
                    break
            else:
                errs.append(not_supported(ctx.field(path), _disp(x), _enum_texts(n.enum)))
        if tx is dict:
            self._check_object(x, n, path, ctx, old)

    def _check_type(self, x: Any, tx: type, n: _Node, path: str, ctx: _Ctx) -> None:
        if tx is bool:
            st, sf = "boolean", ""
        elif tx is int:
            st, sf = "integer", "int64"
        elif tx is float:
            st, sf = "number", "float64"
        elif tx is str:
            st, sf = "string", ""
        elif tx is list:
            st, sf = "array", ""
        elif tx is dict:
            st, sf = "object", ""
        else:
            st, sf = "", ""
        types = n.types or ()
        float_int = st == "number" and "integer" in types and math.isfinite(x) and float(x).is_integer()
        int_float = st == "integer" and "number" in types
        fmt = n.format_name
        if (
            tx is not str
            and tx is not list
            and fmt
            and not (st in types or sf == fmt or float_int or int_float)
        ):
            ctx.errs.append(
                _type_invalid(ctx.field(path), sf, f"{path} in body must be of type {fmt}: {_go_quote(sf)}")
            )
            return
        if "number" not in types and "integer" not in types and fmt and (tx is str or tx is list):
            return
        if not (st in types or float_int or int_float):
            ctx.errs.append(
                _type_invalid(
                    ctx.field(path), st, f"{path} in body must be of type {n.type_text}: {_go_quote(st)}"
                )
            )

    def _check_junctors(self, x: Any, n: _Node, path: str, ctx: _Ctx) -> None:
        errs = ctx.errs
        base = _fp(ctx.base)
        if n.any_of:
            best: list[FieldError] | None = None
            for sub in n.any_of:
                e: list[FieldError] = []
                self._vnode(x, sub, path, _Ctx(e, ctx.base), _MISSING)
                if not e:
                    best = None
                    break
                if best is None or len(e) < len(best):
                    best = e
            else:
                errs.append(invalid(base, "", f"{_go_quote(path)} must validate at least one schema (anyOf)"))
            if best:
                errs.extend(best)
        if n.one_of:
            validated = 0
            best = None
            for sub in n.one_of:
                e = []
                self._vnode(x, sub, path, _Ctx(e, ctx.base), _MISSING)
                if not e:
                    validated += 1
                    best = None
                    continue
                if validated == 0 and (best is None or len(e) < len(best)):
                    best = e
            if validated != 1:
                extra = "Found none valid" if validated == 0 else f"Found {validated} valid alternatives"
                errs.append(
                    invalid(
                        base, "", f"{_go_quote(path)} must validate one and only one schema (oneOf). {extra}"
                    )
                )
                if best:
                    errs.extend(best)
        if n.all_of:
            validated = 0
            for sub in n.all_of:
                e = []
                self._vnode(x, sub, path, _Ctx(e, ctx.base), _MISSING)
                if not e:
                    validated += 1
                errs.extend(e)
            if validated != len(n.all_of):
                extra = ". None validated" if validated == 0 else ""
                errs.append(
                    invalid(base, "", f"{_go_quote(path)} must validate all the schemas (allOf){extra}")
                )
        if n.not_ is not None:
            e = []
            self._vnode(x, n.not_, path, _Ctx(e, ctx.base), _MISSING)
            if not e:
                errs.append(invalid(base, "", f"{_go_quote(path)} must not validate the schema (not)"))

    def _check_string(self, x: str, n: _Node, path: str, ctx: _Ctx) -> None:
        errs = ctx.errs
        if n.max_length is not None and len(x) > n.max_length:
            errs.append(_too_long(ctx.field(path), n.max_length))
        elif n.min_length is not None and len(x) < n.min_length:
            errs.append(
                invalid(ctx.field(path), x, f"{path} in body should be at least {n.min_length} chars long")
            )
        elif n.pattern is not None:
            try:
                rx = _go_regex(n.pattern)
            except _RegexError as e:
                errs.append(
                    invalid(
                        ctx.field(path),
                        x,
                        f"{path} in body should match '{n.pattern}, but pattern is invalid: {e}'",
                    )
                )
            else:
                if not rx.search(x):
                    errs.append(invalid(ctx.field(path), x, f"{path} in body should match '{n.pattern}'"))
        if n.format:
            check = _FORMAT_CHECKS.get(n.format)
            if check is not None and not check(x):
                errs.append(
                    _type_invalid(
                        ctx.field(path), x, f"{path} in body must be of type {n.format_name}: {_go_quote(x)}"
                    )
                )

    def _check_number(self, x: Any, tx: type, n: _Node, path: str, ctx: _Ctx) -> None:
        errs = ctx.errs
        is_int = tx is int
        if n.multiple_of is not None:
            f = n.multiple_of
            if is_int and float(f).is_integer() and f != 0:
                fi = int(f)
                if fi < 0:
                    errs.append(
                        invalid(
                            ctx.field(path),
                            fi,
                            f"factor MultipleOf declared for {path} must be positive: {fi}",
                        )
                    )
                elif x % fi != 0:
                    errs.append(invalid(ctx.field(path), x, f"{path} in body should be a multiple of {fi}"))
            else:
                if f < 0:
                    errs.append(
                        invalid(
                            ctx.field(path),
                            _disp(float(f)),
                            f"factor MultipleOf declared for {path} must be positive: {_go_float(float(f))}",
                        )
                    )
                elif f == 0 or not _is_json_integer(1 / f * x if f < 1 else x / f):
                    errs.append(
                        invalid(
                            ctx.field(path),
                            _disp(x),
                            f"{path} in body should be a multiple of {_go_float(float(f))}",
                        )
                    )
        if n.minimum is not None:
            if is_int:
                m = math.trunc(n.minimum)
                bad = x <= m if n.exclusive_minimum else x < m
                shown = str(m)
            else:
                m = float(n.minimum)
                bad = x <= m if n.exclusive_minimum else x < m
                shown = _go_float(m)
            if bad:
                rel = "greater than" if n.exclusive_minimum else "greater than or equal to"
                errs.append(invalid(ctx.field(path), _disp(x), f"{path} in body should be {rel} {shown}"))
        if n.maximum is not None:
            if is_int:
                m = math.trunc(n.maximum)
                bad = x >= m if n.exclusive_maximum else x > m
                shown = str(m)
            else:
                m = float(n.maximum)
                bad = x >= m if n.exclusive_maximum else x > m
                shown = _go_float(m)
            if bad:
                rel = "less than" if n.exclusive_maximum else "less than or equal to"
                errs.append(invalid(ctx.field(path), _disp(x), f"{path} in body should be {rel} {shown}"))

    def _check_object(self, x: dict[str, Any], n: _Node, path: str, ctx: _Ctx, old: Any) -> None:
        errs = ctx.errs
        nk = len(x)
        if n.min_properties is not None and nk < n.min_properties:
            errs.append(
                invalid(
                    ctx.field(path), nk, f"{path} in body should have at least {n.min_properties} properties"
                )
            )
            return
        if n.max_properties is not None and nk > n.max_properties:
            errs.append(_too_many(ctx.field(path), nk, n.max_properties))
            return
        props = n.props
        old_map = old if type(old) is dict else None
        if n.add_mode == _ADD_FALSE:
            for k in x:
                if k not in props:
                    errs.append(invalid(ctx.field(path), k, f"{path}.{k} in body is a forbidden property"))
        elif n.add_mode == _ADD_SCHEMA:
            additional = n.additional
            assert additional is not None
            for k, v in x.items():
                if k not in props:
                    o = old_map.get(k, _MISSING) if old_map is not None else _MISSING
                    self._vnode(v, additional, f"{path}.{k}", ctx, o)
        for k, p in props.items():
            v = x.get(k, _MISSING)
            if v is not _MISSING:
                o = old_map.get(k, _MISSING) if old_map is not None else _MISSING
                self._vnode(v, p, _child(path, k), ctx, o)
        for r in n.required:
            if r not in x:
                errs.append(required(ctx.field(f"{path}.{r}")))

    # Embedded resources (schema/objectmeta validation) -----------------------------------

    def _validate_embedded(self, x: Any, n: _Node | None, path: str | None, errs: list[FieldError]) -> None:
        if n is None or not n.sub_embedded:
            return
        if type(x) is dict:
            if n.embedded:
                _validate_embedded_resource(x, path, errs)
            self._validate_embedded_map(x, n, path, errs)
        elif type(x) is list:
            for i, v in enumerate(x):
                self._validate_embedded(v, n.items, _fp_index(path, i), errs)

    def _validate_embedded_map(
        self, x: dict[str, Any], n: _Node, path: str | None, errs: list[FieldError]
    ) -> None:
        props = n.props
        for k, v in x.items():
            p = props.get(k)
            if p is not None:
                if p.sub_embedded:
                    self._validate_embedded(v, p, _fp_child(path, k), errs)
            elif n.additional is not None and n.additional.sub_embedded:
                self._validate_embedded(v, n.additional, _fp_key(path, k), errs)

    # x-kubernetes-list-type ---------------------------------------------------------------

    def _lists_map(self, x: dict[str, Any], n: _Node, path: str | None, errs: list[FieldError]) -> None:
        additional = n.additional
        if additional is not None and additional.sub_listtype:
            for k, v in x.items():
                if n.props.get(k) is None:
                    self._lists_value(v, additional, _fp_key(path, k), errs)
        for k, v in x.items():
            p = n.props.get(k)
            if p is not None and p.sub_listtype:
                self._lists_value(v, p, _fp_child(path, k), errs)

    def _lists_value(self, x: Any, n: _Node, path: str, errs: list[FieldError]) -> None:
        if type(x) is dict:
            self._lists_map(x, n, path, errs)
        elif type(x) is list:
            if n.list_type == "set":
                for i in _non_unique(x):
                    errs.append(_duplicate_value(_fp_index(path, i), _disp(x[i])))
            elif n.list_type == "map":
                errs.extend(_validate_list_map(path, n, x))
            items = n.items
            if items is not None and items.sub_listtype:
                for i, v in enumerate(x):
                    self._lists_value(v, items, _fp_index(path, i), errs)

    # x-kubernetes-validations (CEL) -------------------------------------------------------

    def validate_rules(self, obj: Any, old: Any = None, *, ratcheting: bool = True) -> list[FieldError]:
        """Evaluate the ``x-kubernetes-validations`` rules only."""
        errs: list[FieldError] = []
        if self._root.sub_rules:
            o = old if old is not None else _MISSING
            self._cel(obj, self._root, None, o, errs, ratcheting, False, True)
        return errs

    def _cel(
        self,
        x: Any,
        n: _Node,
        path: str | None,
        old: Any,
        errs: list[FieldError],
        ratcheting: bool,
        parent_unchanged: bool,
        root: bool = False,
    ) -> None:
        if x is None:
            return
        if ratcheting:
            unchanged = _same(x, old) if old is not _MISSING else parent_unchanged
            if unchanged and not n.sub_transition:
                return
        else:
            unchanged = False
        if n.rules:
            self._eval_rules(x, n, path, old, errs, unchanged, root)
        tx = type(x)
        if tx is dict:
            old_map = old if type(old) is dict and (n.map_type in (None, "granular", "atomic")) else None
            for k, p in n.props.items():
                if p.sub_rules:
                    v = x.get(k, _MISSING)
                    if v is not _MISSING:
                        o = old_map.get(k, _MISSING) if old_map is not None else _MISSING
                        self._cel(v, p, _fp_child(path, k), _none_missing(o), errs, ratcheting, unchanged)
            additional = n.additional
            if additional is not None and additional.sub_rules:
                for k, v in x.items():
                    if k not in n.props:
                        o = old_map.get(k, _MISSING) if old_map is not None else _MISSING
                        self._cel(
                            v, additional, _fp_key(path, k), _none_missing(o), errs, ratcheting, unchanged
                        )
        elif tx is list:
            items = n.items
            if items is not None and items.sub_rules:
                correlate = _map_list_correlator(n, old) if old is not _MISSING else None
                for i, v in enumerate(x):
                    o = correlate(v) if correlate is not None else _MISSING
                    self._cel(v, items, _fp_index(path, i), _none_missing(o), errs, ratcheting, unchanged)

    def _eval_rules(
        self,
        x: Any,
        n: _Node,
        path: str | None,
        old: Any,
        errs: list[FieldError],
        unchanged: bool,
        root: bool,
    ) -> None:
        type_text = n.schema_type
        converted: dict[int, Any] = {}

        def conv(value: Any, proj: Any) -> Any:
            key = id(proj) if value is x else -id(proj) - 1
            try:
                return converted[key]
            except KeyError:
                pass
            c = _to_cel(value, n, proj, root)
            converted[key] = c
            return c

        for r in n.rules:
            prog = r.program
            if prog is None:
                continue
            if prog.error is not None:
                errs.append(
                    invalid(_fp(path), type_text, f"rule compile error: compilation failed: {prog.error}")
                )
                continue
            uses_old = prog.uses_old_self
            if uses_old and old is _MISSING and not r.optional_old_self:
                continue  # transition rules only run when there is an old value to compare with
            if unchanged and not uses_old:
                continue  # ratcheted
            variables: dict[str, Any] = {"self": conv(x, r.proj_self)}
            if uses_old:
                if r.optional_old_self:
                    variables["oldSelf"] = (
                        _cel.OptionalValue.none()
                        if old is _MISSING
                        else _cel.OptionalValue.of(conv(old, r.proj_old))
                    )
                else:
                    variables["oldSelf"] = conv(old, r.proj_old)
            try:
                result = prog.run(variables)
            except Exception as e:  # noqa: BLE001 - any evaluation failure becomes a field error
                msg, overload = _cel_error_text(e)
                if overload:
                    detail = (
                        f"'{msg}': call arguments did not match a supported operator, function or macro "
                        f"signature for rule: {r.error_string()}"
                    )
                else:
                    detail = f"{msg} evaluating rule: {r.error_string()}"
                errs.append(invalid(_fp(path), type_text, detail))
                continue
            if result is True:
                continue
            if result is not False:
                errs.append(
                    invalid(
                        _fp(path), type_text, "rule compile error: cel expression must evaluate to a bool"
                    )
                )
                continue
            field = path
            norm = self._rule_field_path(r, n)
            if norm:
                field = _fp_child(path, norm)
            detail = None
            mp = r.message_program
            if mp is not None and mp.error is None:
                mvars: dict[str, Any] = {"self": conv(x, None)}
                if old is not _MISSING:
                    mvars["oldSelf"] = conv(old, None)
                try:
                    msg = mp.run(mvars)
                except Exception:  # noqa: BLE001 - kube falls back to the static message
                    msg = None
                if isinstance(msg, str):
                    msg = msg.strip()
                    if msg and "\n" not in msg and len(msg.encode()) <= _MAX_MESSAGE_EXPRESSION_BYTES:
                        detail = msg
            if detail is None:
                detail = r.default_message()
            errs.append(_error_for_reason(_fp(field), type_text, detail, r.reason))

    def _rule_field_path(self, r: _Rule, n: _Node) -> str:
        if r._norm_field_path is _MISSING:
            norm = ""
            if r.field_path:
                ok, normalized, _ = _valid_field_path(r.field_path, n)
                if ok:
                    norm = normalized
            r._norm_field_path = norm
        return r._norm_field_path


# ---------------------------------------------------------------------------------------------
# Helpers for the passes
# ---------------------------------------------------------------------------------------------


def _none_missing(v: Any) -> Any:
    return _MISSING if v is None else v


def _is_json_integer(f: float) -> bool:
    if math.isnan(f) or math.isinf(f):
        return False
    g = float(round(f))
    if f == g:
        return True
    diff = abs(f - g)
    return diff / min(abs(f) + abs(g), 1.7976931348623157e308) < 1e-9


def _enum_texts(values: list[Any]) -> list[str]:
    return [v if isinstance(v, str) else _json_text(v) for v in values]


def _hashable_key(v: Any) -> Any:
    t = type(v)
    if t is dict or t is list:
        return ("json", json.dumps(v, sort_keys=True, separators=(",", ":")))
    return (t.__name__, v)


def _has_duplicates(items: list[Any]) -> bool:
    seen: set[Any] = set()
    for v in items:
        k = _hashable_key(v)
        if k in seen:
            return True
        seen.add(k)
    return False


def _non_unique(items: list[Any]) -> list[int]:
    """Indices of the second appearance of each duplicated element (listtype.validateListSet)."""
    if len(items) <= 1:
        return []
    seen: dict[Any, int] = {}
    out: list[int] = []
    for i, v in enumerate(items):
        k = _hashable_key(v)
        times = seen.get(k, 0)
        if times == 1:
            out.append(i)
        seen[k] = times + 1
    return out


_UNSPECIFIED = ("unspecified-key",)


def _validate_list_map(path: str, n: _Node, items: list[Any]) -> list[FieldError]:
    for i, v in enumerate(items):
        if v is not None and type(v) is not dict:
            return [invalid(_fp_index(path, i), _disp(v), "must be an object for an array of list-type map")]
    if len(items) <= 1:
        return []
    keys_fields = n.list_map_keys
    errs: list[FieldError] = []
    if len(keys_fields) == 1:
        kf = keys_fields[0]
        keys = [v.get(kf, _UNSPECIFIED) if v is not None else _UNSPECIFIED for v in items]
        hashed = [("unspecified",) if k is _UNSPECIFIED else _hashable_key(k) for k in keys]
        for i in _non_unique_hashed(hashed):
            value = {} if keys[i] is _UNSPECIFIED else {kf: keys[i]}
            errs.append(_duplicate_value(_fp_index(path, i), value))
        return errs
    composite = []
    for v in items:
        key: dict[str, Any] = {}
        if v is not None:
            for kf in keys_fields:
                if kf in v:
                    key[kf] = v[kf]
        composite.append(key)
    for i in _non_unique(composite):
        errs.append(_duplicate_value(_fp_index(path, i), composite[i]))
    return errs


def _non_unique_hashed(hashed: list[Any]) -> list[int]:
    seen: dict[Any, int] = {}
    out: list[int] = []
    for i, k in enumerate(hashed):
        times = seen.get(k, 0)
        if times == 1:
            out.append(i)
        seen[k] = times + 1
    return out


def _map_key(item: Any, keys: list[str]) -> Any:
    if type(item) is not dict:
        return None
    return tuple(_hashable_key(item.get(k, _UNSPECIFIED)) if k in item else ("unspecified",) for k in keys)


def _map_list_correlator(n: _Node, old: Any) -> Callable[[Any], Any] | None:
    """Old-item lookup for ``x-kubernetes-list-type: map`` lists (the only correlatable lists)."""
    if n.list_type != "map" or not n.list_map_keys or type(old) is not list:
        return None
    keys = n.list_map_keys
    index: dict[Any, Any] = {}
    for item in old:
        k = _map_key(item, keys)
        if k is not None:
            index.setdefault(k, item)

    def find(item: Any) -> Any:
        k = _map_key(item, keys)
        return index.get(k, _MISSING) if k is not None else _MISSING

    return find


def _correlator(n: _Node, old: Any) -> Callable[[Any], Any] | None:
    """Ratcheting correlation for list items: map lists by key, sets by value."""
    if type(old) is not list:
        return None
    if n.list_type == "map":
        return _map_list_correlator(n, old)
    if n.list_type == "set":
        present = {_hashable_key(v) for v in old}
        return lambda v: v if _hashable_key(v) in present else _MISSING
    return None


def _prune_object_meta(meta: Any, path: str, out: list[str]) -> None:
    if type(meta) is not dict:
        return
    for k in list(meta):
        if k not in _OBJECT_META_FIELDS:
            out.append(f"{path}.{k}")
            del meta[k]
            continue
        v = meta[k]
        if k == "ownerReferences":
            allowed = _OWNER_REFERENCE_FIELDS
        elif k == "managedFields":
            allowed = _MANAGED_FIELDS_ENTRY_FIELDS
        else:
            continue
        if type(v) is list:
            for i, entry in enumerate(v):
                if type(entry) is dict:
                    for ek in list(entry):
                        if ek not in allowed:
                            out.append(f"{path}.{k}[{i}].{ek}")
                            del entry[ek]


_RX_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?\Z")
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


def _validate_embedded_resource(x: dict[str, Any], path: str | None, errs: list[FieldError]) -> None:
    if "apiVersion" not in x:
        errs.append(required(_fp_child(path, "apiVersion")))
    if "kind" not in x:
        errs.append(required(_fp_child(path, "kind")))
    for k, v in x.items():
        if k == "apiVersion":
            p = _fp_child(path, "apiVersion")
            if not isinstance(v, str):
                errs.append(invalid(p, _disp(v), "must be a string"))
            elif not v:
                errs.append(required(p))
            elif v.count("/") > 1:
                errs.append(invalid(p, v, f"unexpected GroupVersion string: {v}"))
        elif k == "kind":
            p = _fp_child(path, "kind")
            if not isinstance(v, str):
                errs.append(invalid(p, _disp(v), "must be a string"))
            elif not v:
                errs.append(required(p))
            else:
                msgs = []
                if len(v) > 63:
                    msgs.append("must be no more than 63 characters")
                if not _RX_DNS1035.match(v.lower()):
                    msgs.append(_DNS1035_MSG)
                if msgs:
                    errs.append(
                        invalid(p, v, "may have mixed case, but should otherwise match: " + ",".join(msgs))
                    )
        elif k == "metadata" and v is not None and type(v) is not dict:
            errs.append(invalid(_fp_child(path, "metadata"), v, "must be an object"))


def _error_for_reason(field: str, value: Any, detail: str, reason: Any) -> FieldError:
    if reason == "FieldValueForbidden":
        return forbidden(field, detail)
    if reason == "FieldValueRequired":
        return required(field, detail)
    if reason == "FieldValueDuplicate":
        return _duplicate_value(field, value)
    return invalid(field, value, detail)


# CEL values ---------------------------------------------------------------------------------


def _parse_timestamp(s: str) -> Any:
    t = s.strip()
    if t.endswith(("Z", "z")):
        t = t[:-1] + "+00:00"
    m = re.match(r"^(.*T\d{2}:\d{2}:\d{2})\.(\d+)(.*)$", t, re.I)
    if m and len(m.group(2)) > 6:
        t = f"{m.group(1)}.{m.group(2)[:6]}{m.group(3)}"
    try:
        v = _dt.datetime.fromisoformat(t)
    except ValueError:
        return s
    if v.tzinfo is None:
        v = v.replace(tzinfo=_dt.UTC)
    return v


def _to_cel_scalar(v: Any, n: _Node) -> Any:
    if type(v) is int and n.type == "number":
        return float(v)
    if type(v) is str and n.type == "string":
        f = n.format
        if f == "datetime" or f == "date":
            if f == "date" and _is_date(v):
                return _dt.datetime(int(v[:4]), int(v[5:7]), int(v[8:10]), tzinfo=_dt.UTC)
            return _parse_timestamp(v)
        if f == "duration":
            secs = _parse_go_duration(v)
            return _dt.timedelta(seconds=secs) if secs is not None else v
        if f == "byte":
            try:
                return base64.b64decode(v, validate=True)
            except (binascii.Error, ValueError):
                return v
    return v


def _to_cel(v: Any, n: _Node | None, proj: Any, resource_root: bool = False) -> Any:
    """An unstructured value as kube's CEL sees it (UnstructuredToVal), restricted to ``proj``."""
    if v is None or n is None:
        return v
    tv = type(v)
    if tv is dict:
        if proj is None and not n.cel_conv and not resource_root:
            return v
        embedded = n.embedded or resource_root
        props = n.props
        names = n.cel_names
        additional = n.additional
        out: dict[str, Any] = {}
        for k, val in v.items():
            if embedded and k in _META_FIELDS:
                if proj is not None and k not in proj:
                    continue
                if k == "metadata" and type(val) is dict:
                    val = {mk: val[mk] for mk in ("name", "generateName") if mk in val}
                out[k] = val
                continue
            p = props.get(k)
            if p is not None:
                ek = names.get(k)
                if ek is None:
                    continue
            else:
                ek = k
                p = additional
            if proj is not None:
                if ek not in proj:
                    continue
                sub = proj[ek]
            else:
                sub = None
            out[ek] = _to_cel(val, p, sub)
        return out
    if tv is list:
        if not n.cel_conv:
            return v
        items = n.items
        return [_to_cel(e, items, None) for e in v]
    return _to_cel_scalar(v, n)


def _valid_field_path(path: str, n: _Node) -> tuple[bool, str, str]:
    """cel.ValidFieldPath: (ok, normalized field.Path string, error)."""
    tokens: list[str] = []
    i, L = 0, len(path)
    while i < L:
        c = path[i]
        if c in ".[]":
            tokens.append(c)
            i += 1
            continue
        if c == "'":
            j = i + 1
            while j < L and not (path[j] == "'" and path[j - 1] != "\\"):
                j += 1
            tokens.append(path[i : j + 1])
            i = j + 1
            continue
        j = i
        while j < L and path[j] not in ".[]":
            j += 1
        tokens.append(path[i:j])
        i = j
    out = ""
    cur: _Node | None = n
    it = iter(tokens)
    for tok in it:
        if cur is None:
            return False, "", "does not refer to a valid field"
        if tok == "[":
            name = next(it, None)
            if name is None:
                return False, "", "unexpected end of JSON path"
            if len(name) < 2 or name[0] != "'" or name[-1] != "'":
                return False, "", f"expected single quoted string but got {name}"
            try:
                name = _unescape_single_quoted(name[1:-1])
            except ValueError as e:
                return False, "", f"invalid string literal: {e}"
            close = next(it, None)
            if close is None:
                return False, "", "unexpected end of JSON path"
            if close != "]":
                return False, "", f"expected ] but got {close}"
        elif tok == ".":
            name = next(it, None)
            if name is None:
                return False, "", "unexpected end of JSON path"
        else:
            return False, "", f"expected [ or . but got: {tok}"
        if cur.props:
            p = cur.props.get(name)
            if p is None:
                return False, "", "does not refer to a valid field"
            out = f"{out}.{name}" if out else name
            cur = p
        elif cur.additional is not None or cur.add_mode:
            out = f"{out}[{name}]"
            cur = cur.additional
        else:
            return False, "", "does not refer to a valid field"
    return True, out, ""


def _unescape_single_quoted(s: str) -> str:
    table = {
        "a": "\a",
        "b": "\b",
        "f": "\f",
        "n": "\n",
        "r": "\r",
        "t": "\t",
        "v": "\v",
        "'": "'",
        "\\": "\\",
    }

    def repl(m: re.Match[str]) -> str:
        c = m.group(0)[1]
        if c not in table:
            raise ValueError(f"invalid escape char {m.group(0)}")
        return table[c]

    return re.sub(r"\\.", repl, s)


# ---------------------------------------------------------------------------------------------
# CRD-time checks: structural schema and apiextensions.k8s.io/v1 schema validation
# ---------------------------------------------------------------------------------------------


def _key(path: str, name: str) -> str:
    return f"{path}[{name}]"


def _is_int_or_string_any_of(anyof: Any) -> bool:
    return anyof == [{"type": "integer"}, {"type": "string"}]


def validate_structural(
    openapi_v3_schema: dict[str, Any],
    path: str = "spec.versions[0].schema.openAPIV3Schema",
    *,
    status_subresource: bool = False,
    require_pruned_defaults: bool = True,
) -> list[FieldError]:
    """The CRD-time checks kube applies to a version's ``openAPIV3Schema`` (apiextensions/v1).

    Covers structurality (ValidateStructural), defaults (valid and pruned), the schema
    restrictions of ValidateCustomResourceDefinitionOpenAPISchema (forbidden keywords, list and
    map types, list-map keys) and the static and compile checks of ``x-kubernetes-validations``.
    """
    errs: list[FieldError] = []
    if not isinstance(openapi_v3_schema, dict):
        return [required(path, "")]
    schema = openapi_v3_schema
    if status_subresource:
        errs.extend(_status_root_errors(schema, path))
    if schema.get("nullable") is True:
        errs.append(forbidden(f"{path}.nullable", "nullable cannot be true at the root"))

    cel_ok = False
    if _structuralizable(schema):
        serrs: list[FieldError] = []
        _structural_invariants(schema, "root", path, serrs)
        _structural_completeness(schema, path, path, serrs)
        serrs.sort(key=str)
        if serrs:
            errs.extend(serrs)
        else:
            derrs: list[FieldError] = []
            _validate_defaults(schema, _root_node(schema), path, derrs, True, False, require_pruned_defaults)
            if derrs:
                errs.extend(derrs)
            else:
                cel_ok = True
    schema_errs: list[FieldError] = []
    cel_errs: list[FieldError] = []
    _openapi_checks(schema, path, schema_errs, cel_errs, _SSV(), True, cel_ok)
    errs.extend(schema_errs)
    errs.extend(cel_errs)
    return errs


_ALLOWED_STATUS_ROOT = (
    "description",
    "type",
    "format",
    "title",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "required",
    "items",
    "properties",
    "externalDocs",
    "example",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-validations",
)
_ALLOWED_STATUS_ROOT_GO = (
    "[Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength "
    "Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example "
    "XPreserveUnknownFields XValidations]"
)


# Schema keywords that are not part of kube's Structural type (dropped by NewStructural), plus the
# two that the root-metadata check clears before comparing.
_NOT_STRUCTURAL_KEYS = frozenset(
    (
        "type",
        "default",
        "example",
        "id",
        "$schema",
        "$ref",
        "definitions",
        "dependencies",
        "patternProperties",
    )
)


def _is_zero(v: Any) -> bool:
    return v is None or v is False or v == 0 and not isinstance(v, bool) or v in ("", [], {})


def _status_root_errors(schema: dict[str, Any], path: str) -> list[FieldError]:
    for k, v in schema.items():
        if _is_zero(v):
            continue
        if k == "type":
            if v != "object":
                return [
                    invalid(
                        f"{path}.type",
                        v,
                        'only "object" is allowed as the type at the root of the schema if the status subresource is enabled',
                    )
                ]
            continue
        if k not in _ALLOWED_STATUS_ROOT:
            return [
                invalid(
                    path,
                    schema,
                    f"only {_ALLOWED_STATUS_ROOT_GO} fields are allowed at the root of the schema if the status "
                    "subresource is enabled",
                )
            ]
    return []


def _structuralizable(s: Any) -> bool:
    """NewStructural only fails on shapes that the schema checks report anyway (items arrays)."""
    if not isinstance(s, dict):
        return False
    items = s.get("items")
    if isinstance(items, list):
        return False
    subs: list[Any] = []
    if isinstance(items, dict):
        subs.append(items)
    for key in ("properties",):
        v = s.get(key)
        if isinstance(v, dict):
            subs.extend(v.values())
    ap = s.get("additionalProperties")
    if isinstance(ap, dict):
        subs.append(ap)
    for key in ("allOf", "anyOf", "oneOf"):
        v = s.get(key)
        if isinstance(v, list):
            subs.extend(v)
    if isinstance(s.get("not"), dict):
        subs.append(s["not"])
    return all(_structuralizable(x) for x in subs if isinstance(x, dict))


def _structural_invariants(s: dict[str, Any], lvl: str, path: str, errs: list[FieldError]) -> None:
    typ = s.get("type") or ""
    items = s.get("items")
    props = s.get("properties") if isinstance(s.get("properties"), dict) else {}
    ap = s.get("additionalProperties", _MISSING)
    preserve = s.get("x-kubernetes-preserve-unknown-fields") is True
    embedded = s.get("x-kubernetes-embedded-resource") is True
    ios = s.get("x-kubernetes-int-or-string") is True

    if typ == "array" and items is None:
        errs.append(required(f"{path}.items", "must be specified"))
    if isinstance(items, dict):
        _structural_invariants(items, "item", f"{path}.items", errs)
    for k, v in props.items():
        if isinstance(v, dict):
            _structural_invariants(v, "field", _key(f"{path}.properties", k), errs)
    if ap is not _MISSING and ap is not None:
        if lvl == "root":
            errs.append(forbidden(f"{path}.additionalProperties", "must not be used at the root"))
        if isinstance(ap, dict):
            _structural_invariants(ap, "field", f"{path}.additionalProperties", errs)

    if ios and preserve:
        errs.append(
            invalid(
                f"{path}.x-kubernetes-preserve-unknown-fields",
                True,
                "must be false if x-kubernetes-int-or-string is true",
            )
        )
    if ios and embedded:
        errs.append(
            invalid(
                f"{path}.x-kubernetes-embedded-resource",
                True,
                "must be false if x-kubernetes-int-or-string is true",
            )
        )

    skip_any_of = _is_int_or_string_any_of(s.get("anyOf"))
    all_of = s.get("allOf")
    skip_first_all_of_any_of = (
        isinstance(all_of, list)
        and all_of
        and isinstance(all_of[0], dict)
        and _is_int_or_string_any_of(all_of[0].get("anyOf"))
    )
    _value_validation(s, bool(skip_any_of), bool(skip_first_all_of_any_of), path, errs)

    check_metadata = lvl == "root" or embedded
    if embedded and typ != "object":
        if not typ:
            errs.append(required(f"{path}.type", "must be object if x-kubernetes-embedded-resource is true"))
        else:
            errs.append(
                invalid(f"{path}.type", typ, "must be object if x-kubernetes-embedded-resource is true")
            )
    elif not typ and not ios and not preserve:
        detail = {
            "root": "must not be empty at the root",
            "item": "must not be empty for specified array items",
            "field": "must not be empty for specified object fields",
        }[lvl]
        errs.append(required(f"{path}.type", detail))
    if embedded and ap is not _MISSING and ap is not None:
        errs.append(
            forbidden(
                f"{path}.additionalProperties", "must not be used if x-kubernetes-embedded-resource is set"
            )
        )
    if lvl == "root" and typ and typ != "object":
        errs.append(invalid(f"{path}.type", typ, "must be object at the root"))
    for meta_field in ("kind", "apiVersion"):
        sub = props.get(meta_field)
        if isinstance(sub, dict) and check_metadata and (sub.get("type") or "") != "string":
            errs.append(
                invalid(
                    f"{_key(f'{path}.properties', meta_field)}.type", sub.get("type") or "", "must be string"
                )
            )
    meta = props.get("metadata")
    if isinstance(meta, dict):
        mpath = _key(f"{path}.properties", "metadata")
        if check_metadata and (meta.get("type") or "") != "object":
            errs.append(invalid(f"{mpath}.type", meta.get("type") or "", "must be object"))
        if lvl == "root":
            rest = {k: v for k, v in meta.items() if k not in _NOT_STRUCTURAL_KEYS}
            mprops = rest.pop("properties", None)
            if isinstance(mprops, dict) and set(mprops) - {"name", "generateName"}:
                rest["properties"] = mprops
            if any(not _is_zero(v) for v in rest.values()):
                errs.append(
                    forbidden(
                        mpath,
                        "must not specify anything other than name and generateName, but metadata is implicitly specified",
                    )
                )
    if embedded and not preserve and not props:
        errs.append(
            required(
                f"{path}.properties",
                "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
            )
        )


def _value_validation(
    s: dict[str, Any], skip_any_of: bool, skip_first_all_of_any_of: bool, path: str, errs: list[FieldError]
) -> None:
    any_of = s.get("anyOf")
    if isinstance(any_of, list) and not skip_any_of:
        for i, v in enumerate(any_of):
            if isinstance(v, dict):
                _nested_value_validation(v, False, f"{path}.anyOf[{i}]", errs)
    all_of = s.get("allOf")
    if isinstance(all_of, list):
        for i, v in enumerate(all_of):
            if isinstance(v, dict):
                _nested_value_validation(v, skip_first_all_of_any_of and i == 0, f"{path}.allOf[{i}]", errs)
    one_of = s.get("oneOf")
    if isinstance(one_of, list):
        for i, v in enumerate(one_of):
            if isinstance(v, dict):
                _nested_value_validation(v, False, f"{path}.oneOf[{i}]", errs)
    nt = s.get("not")
    if isinstance(nt, dict):
        _nested_value_validation(nt, False, f"{path}.not", errs)
    pattern = s.get("pattern")
    if isinstance(pattern, str) and pattern:
        err = _regex_error(pattern)
        if err:
            errs.append(
                invalid(f"{path}.pattern", pattern, f"must be a valid regular expression, but isn't: {err}")
            )


_NESTED_FORBIDDEN = (
    ("type", "must be empty to be structural"),
    ("default", "must be undefined to be structural"),
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"),
    ("externalDocs", "must be undefined to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
    ("x-kubernetes-embedded-resource", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
    ("x-kubernetes-list-type", "must be undefined to be structural"),
    ("x-kubernetes-map-type", "must be undefined to be structural"),
    ("x-kubernetes-validations", "must be empty to be structural"),
)


def _nested_value_validation(v: dict[str, Any], skip_any_of: bool, path: str, errs: list[FieldError]) -> None:
    _value_validation(v, skip_any_of, False, path, errs)
    items = v.get("items")
    if isinstance(items, dict):
        _nested_value_validation(items, False, f"{path}.items", errs)
    props = v.get("properties")
    if isinstance(props, dict):
        for k, p in props.items():
            if isinstance(p, dict):
                _nested_value_validation(p, False, _key(f"{path}.properties", k), errs)
    if "additionalProperties" in v and v["additionalProperties"] is not None:
        errs.append(forbidden(f"{path}.additionalProperties", "must be undefined to be structural"))
    for key, detail in _NESTED_FORBIDDEN:
        val = v.get(key)
        if key == "default":
            if key in v and val is not None:
                errs.append(forbidden(f"{path}.{key}", detail))
        elif not _is_zero(val):
            errs.append(forbidden(f"{path}.{key}", detail))
    if isinstance(props, dict) and "metadata" in props:
        errs.append(
            forbidden(_key(f"{path}.properties", "metadata"), "must not be specified in a nested context")
        )


def _structural_completeness(s: dict[str, Any], spath: str, vpath: str, errs: list[FieldError]) -> None:
    _value_validation_completeness(s, s, spath, vpath, errs)


def _value_validation_completeness(
    v: dict[str, Any], s: Any, spath: str, vpath: str, errs: list[FieldError]
) -> None:
    if not isinstance(s, dict):
        errs.append(required(spath, f"because it is defined in {vpath}"))
        return
    nt = v.get("not")
    if isinstance(nt, dict):
        _nested_completeness(nt, s, spath, f"{vpath}.not", errs)
    for key in ("allOf", "anyOf", "oneOf"):
        lst = v.get(key)
        if isinstance(lst, list):
            for i, sub in enumerate(lst):
                if isinstance(sub, dict):
                    _nested_completeness(sub, s, spath, f"{vpath}.{key}[{i}]", errs)


def _nested_completeness(v: dict[str, Any], s: Any, spath: str, vpath: str, errs: list[FieldError]) -> None:
    if not isinstance(s, dict):
        errs.append(required(spath, f"because it is defined in {vpath}"))
        return
    _value_validation_completeness(v, s, spath, vpath, errs)
    items = v.get("items")
    if isinstance(items, dict):
        sitems = s.get("items")
        _nested_completeness(
            items, sitems if isinstance(sitems, dict) else None, f"{spath}.items", f"{vpath}.items", errs
        )
    props = v.get("properties")
    if isinstance(props, dict):
        sprops = s.get("properties") if isinstance(s.get("properties"), dict) else {}
        for k, vp in props.items():
            if not isinstance(vp, dict):
                continue
            sp = sprops.get(k)
            if not isinstance(sp, dict):
                errs.append(
                    required(
                        _key(f"{spath}.properties", k),
                        f"because it is defined in {_key(f'{vpath}.properties', k)}",
                    )
                )
            else:
                _nested_completeness(
                    vp, sp, _key(f"{spath}.properties", k), _key(f"{vpath}.properties", k), errs
                )


def _validate_defaults(
    s: dict[str, Any],
    n: _Node,
    path: str,
    errs: list[FieldError],
    resource_root: bool,
    inside_meta: bool,
    require_pruned: bool,
) -> None:
    """structuraldefaulting.ValidateDefaults: defaults must validate and already be pruned."""
    embedded = n.embedded or resource_root
    if n.embedded:
        inside_meta = False
    if "default" in s and s["default"] is not None:
        default = s["default"]
        dpath = f"{path}.default"
        helper = StructuralSchema.__new__(StructuralSchema)
        helper.raw = s
        helper._root = n
        helper._node_cache = {}
        local: list[FieldError] = []
        if not inside_meta and require_pruned:
            pruned = _copy_json(default)
            out: list[str] = []
            if type(pruned) is dict:
                helper._prune_map(pruned, n, "", out, False, embedded, n.preserve)
            else:
                helper._prune(pruned, n, "", out, False)
            if not _same(pruned, default):
                local.append(invalid(dpath, default, "must not have unknown fields"))
        if not local and embedded and type(default) is dict and not inside_meta:
            _validate_embedded_resource(default, dpath, local)
        if not local:
            helper._vnode(default, n, "", _Ctx(local, dpath), _MISSING)
        if not local and n.sub_rules:
            helper._cel(
                _copy_json(default), n, dpath, _copy_json(default), local, False, False, resource_root
            )
        errs.extend(local)
    items = s.get("items")
    if isinstance(items, dict) and n.items is not None:
        _validate_defaults(items, n.items, f"{path}.items", errs, False, inside_meta, require_pruned)
    props = s.get("properties")
    if isinstance(props, dict):
        for k, sub in props.items():
            p = n.props.get(k)
            if not isinstance(sub, dict) or p is None:
                continue
            sub_meta = inside_meta or (embedded and k in _META_FIELDS)
            _validate_defaults(sub, p, _key(f"{path}.properties", k), errs, False, sub_meta, require_pruned)


class _SSV:
    """specStandardValidatorV3 state while walking the schema."""

    __slots__ = ("allow_defaults", "defaults_reason", "inside_meta", "uncorrelatable")

    def __init__(self) -> None:
        self.allow_defaults = True
        self.defaults_reason = ""
        self.inside_meta = False
        self.uncorrelatable: str | None = None

    def clone(self, **kw: Any) -> _SSV:
        c = _SSV()
        c.allow_defaults = self.allow_defaults
        c.defaults_reason = self.defaults_reason
        c.inside_meta = self.inside_meta
        c.uncorrelatable = self.uncorrelatable
        for k, v in kw.items():
            setattr(c, k, v)
        return c

    def forbid_defaults(self, reason: str) -> _SSV:
        return self.clone(allow_defaults=False, defaults_reason=reason)

    def forbid_old_self(self, path: str) -> _SSV:
        return self if self.uncorrelatable is not None else self.clone(uncorrelatable=path)


_SUPPORTED_REASONS = ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"]


def _openapi_checks(
    s: Any,
    path: str,
    schema_errs: list[FieldError],
    cel_errs: list[FieldError],
    ssv: _SSV,
    is_root: bool,
    cel_ok: bool,
) -> None:
    if not isinstance(s, dict):
        return
    start = len(schema_errs)
    _ssv_validate(s, path, ssv, schema_errs)
    if s.get("uniqueItems") is True:
        schema_errs.append(
            forbidden(
                f"{path}.uniqueItems",
                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            )
        )
    props = s.get("properties") if isinstance(s.get("properties"), dict) else {}
    ap = s.get("additionalProperties", _MISSING)
    if ap is not _MISSING and ap is not None:
        if props and (ap is False or isinstance(ap, dict)):
            schema_errs.append(
                forbidden(
                    f"{path}.additionalProperties", "additionalProperties and properties are mutual exclusive"
                )
            )
        sub = ssv
        if ssv.inside_meta:
            sub = ssv.forbid_defaults("inside additionalProperties applying to object metadata")
        if isinstance(ap, dict):
            _openapi_checks(ap, f"{path}.additionalProperties", schema_errs, cel_errs, sub, False, cel_ok)
    mt = s.get("x-kubernetes-map-type")
    for k, v in props.items():
        sub = ssv
        if mt is not None and mt not in ("granular", "atomic"):
            sub = sub.forbid_old_self(path)
        if (is_root or s.get("x-kubernetes-embedded-resource") is True) and k in _META_FIELDS:
            sub = sub.clone(inside_meta=True)
            if is_root:
                sub = sub.forbid_defaults(f"in top-level {k}")
        _openapi_checks(v, _key(f"{path}.properties", k), schema_errs, cel_errs, sub, False, cel_ok)
    if isinstance(s.get("not"), dict):
        _openapi_checks(s["not"], f"{path}.not", schema_errs, cel_errs, ssv, False, False)
    for key in ("allOf", "oneOf", "anyOf"):
        lst = s.get(key)
        if isinstance(lst, list):
            for i, sub_schema in enumerate(lst):
                _openapi_checks(sub_schema, f"{path}.{key}[{i}]", schema_errs, cel_errs, ssv, False, False)
    defs = s.get("definitions")
    if isinstance(defs, dict):
        for k, v in defs.items():
            _openapi_checks(v, _key(f"{path}.definitions", k), schema_errs, cel_errs, ssv, False, False)
    lt = s.get("x-kubernetes-list-type")
    items = s.get("items")
    if items is not None:
        sub = ssv if lt == "map" else ssv.forbid_old_self(path)
        if isinstance(items, dict):
            _openapi_checks(items, f"{path}.items", schema_errs, cel_errs, sub, False, cel_ok)
        elif isinstance(items, list):
            for i, it in enumerate(items):
                _openapi_checks(it, f"{path}.items[{i}]", schema_errs, cel_errs, sub, False, cel_ok)
    deps = s.get("dependencies")
    if isinstance(deps, dict):
        for k, v in deps.items():
            if isinstance(v, dict):
                _openapi_checks(v, _key(f"{path}.dependencies", k), schema_errs, cel_errs, ssv, False, False)

    typ = s.get("type") or ""
    pres = s.get("x-kubernetes-preserve-unknown-fields")
    if pres is False:
        schema_errs.append(
            invalid(f"{path}.x-kubernetes-preserve-unknown-fields", False, "must be true or undefined")
        )
    if mt is not None and typ != "object":
        if not typ:
            schema_errs.append(
                required(f"{path}.type", "must be object if x-kubernetes-map-type is specified")
            )
        else:
            schema_errs.append(
                invalid(f"{path}.type", typ, "must be object if x-kubernetes-map-type is specified")
            )
    if mt is not None and mt not in ("atomic", "granular"):
        schema_errs.append(not_supported(f"{path}.x-kubernetes-map-type", mt, ["atomic", "granular"]))
    if lt is not None and typ != "array":
        if not typ:
            schema_errs.append(
                required(f"{path}.type", "must be array if x-kubernetes-list-type is specified")
            )
        else:
            schema_errs.append(
                invalid(f"{path}.type", typ, "must be array if x-kubernetes-list-type is specified")
            )
    elif lt == "set" and isinstance(items, dict):
        itype = items.get("type")
        if itype == "array":
            ilt = items.get("x-kubernetes-list-type")
            if ilt is not None and ilt != "atomic":
                schema_errs.append(
                    invalid(
                        f"{path}.items.x-kubernetes-list-type",
                        ilt,
                        "must be atomic as item of a list with x-kubernetes-list-type=set",
                    )
                )
        elif itype == "object":
            if items.get("x-kubernetes-map-type") != "atomic":
                schema_errs.append(
                    invalid(
                        f"{path}.items.x-kubernetes-map-type",
                        items.get("x-kubernetes-list-type"),
                        "must be atomic as item of a list with x-kubernetes-list-type=set",
                    )
                )
    if lt is not None and lt not in ("atomic", "set", "map"):
        schema_errs.append(not_supported(f"{path}.x-kubernetes-list-type", lt, ["atomic", "set", "map"]))
    keys = s.get("x-kubernetes-list-map-keys")
    keys = keys if isinstance(keys, list) else []
    if keys:
        if lt is None:
            schema_errs.append(
                required(
                    f"{path}.x-kubernetes-list-type", "must be map if x-kubernetes-list-map-keys is non-empty"
                )
            )
        elif lt != "map":
            schema_errs.append(
                invalid(
                    f"{path}.x-kubernetes-list-type",
                    lt,
                    "must be map if x-kubernetes-list-map-keys is non-empty",
                )
            )
    if lt == "map":
        if not keys:
            schema_errs.append(
                required(
                    f"{path}.x-kubernetes-list-map-keys", "must not be empty if x-kubernetes-list-type is map"
                )
            )
        if items is None:
            schema_errs.append(
                required(f"{path}.items", "must have a schema if x-kubernetes-list-type is map")
            )
        elif not isinstance(items, dict):
            schema_errs.append(
                invalid(
                    f"{path}.items", items, "must only have a single schema if x-kubernetes-list-type is map"
                )
            )
        else:
            itype = items.get("type") or ""
            if itype != "object":
                schema_errs.append(
                    invalid(
                        f"{path}.items.type",
                        itype,
                        "must be object if parent array's x-kubernetes-list-type is map",
                    )
                )
            else:
                iprops = items.get("properties") if isinstance(items.get("properties"), dict) else {}
                seen: set[str] = set()
                for k in keys:
                    kp = iprops.get(k)
                    if isinstance(kp, dict):
                        if kp.get("type") in ("array", "object"):
                            schema_errs.append(
                                invalid(
                                    f"{_key(f'{path}.items.properties', k)}.type",
                                    itype,
                                    "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                )
                            )
                    else:
                        schema_errs.append(
                            invalid(
                                f"{path}.x-kubernetes-list-map-keys",
                                keys,
                                "entries must all be names of item properties",
                            )
                        )
                    if k in seen:
                        schema_errs.append(
                            invalid(
                                f"{path}.x-kubernetes-list-map-keys",
                                keys,
                                "must not contain duplicate entries",
                            )
                        )
                    seen.add(k)
    schema_errs.extend(_map_list_keys_map_set(s, path))

    rules = s.get("x-kubernetes-validations")
    if isinstance(rules, list) and rules:
        vpath = f"{path}.x-kubernetes-validations"
        for i, rule in enumerate(rules):
            if not isinstance(rule, dict):
                schema_errs.append(invalid(f"{vpath}[{i}]", rule, "must be an object"))
                continue
            r = str(rule.get("rule") or "")
            msg = rule.get("message") if isinstance(rule.get("message"), str) else ""
            mexpr = rule.get("messageExpression") if isinstance(rule.get("messageExpression"), str) else ""
            tr, tm = r.strip(), msg.strip()
            if not tr:
                schema_errs.append(required(f"{vpath}[{i}].rule", "rule is not specified"))
            elif msg and not tm:
                schema_errs.append(
                    invalid(f"{vpath}[{i}].message", msg, "message must be non-empty if specified")
                )
            elif re.search(r"[\n\r]", tm):
                schema_errs.append(
                    invalid(f"{vpath}[{i}].message", msg, "message must not contain line breaks")
                )
            elif re.search(r"[\n\r]", tr) and not tm:
                schema_errs.append(
                    required(
                        f"{vpath}[{i}].message", "message must be specified if rule contains line breaks"
                    )
                )
            if mexpr and not mexpr.strip():
                schema_errs.append(
                    required(
                        f"{vpath}[{i}].messageExpression", "messageExpression must be non-empty if specified"
                    )
                )
            reason = rule.get("reason")
            if reason is not None and reason not in _SUPPORTED_REASONS:
                schema_errs.append(not_supported(f"{vpath}[{i}].reason", reason, _SUPPORTED_REASONS))
            fp = rule.get("fieldPath")
            if isinstance(fp, str) and fp:
                if not fp.strip():
                    schema_errs.append(
                        invalid(f"{vpath}[{i}].fieldPath", fp, "fieldPath must be non-empty if specified")
                    )
                if re.search(r"[\n\r]", fp):
                    schema_errs.append(
                        invalid(f"{vpath}[{i}].fieldPath", fp, "fieldPath must not contain line breaks")
                    )
                if cel_ok or _structuralizable(s):
                    ok, _, _ = _valid_field_path(fp, _Node(s))
                    if not ok:
                        schema_errs.append(
                            invalid(f"{vpath}[{i}].fieldPath", fp, "fieldPath must be a valid path")
                        )
        if len(schema_errs) == start and cel_ok:
            for i, rule in enumerate(rules):
                if not isinstance(rule, dict):
                    continue
                r = str(rule.get("rule") or "")
                uses_old = False
                if r.strip():
                    prog = _compile_cel(r)
                    if prog.error is not None:
                        cel_errs.append(
                            invalid(f"{vpath}[{i}].rule", rule, f"compilation failed: {prog.error}")
                        )
                        continue
                    uses_old = prog.uses_old_self
                mexpr = rule.get("messageExpression")
                if isinstance(mexpr, str) and mexpr.strip():
                    mprog = _compile_cel(mexpr)
                    if mprog.error is not None:
                        cel_errs.append(
                            invalid(
                                f"{vpath}[{i}].messageExpression",
                                rule,
                                f"messageExpression compilation failed: {mprog.error}",
                            )
                        )
                if uses_old:
                    if ssv.uncorrelatable is not None:
                        cel_errs.append(
                            invalid(
                                f"{vpath}[{i}].rule",
                                r,
                                f"oldSelf cannot be used on the uncorrelatable portion of the schema within {ssv.uncorrelatable}",
                            )
                        )
                elif "optionalOldSelf" in rule and rule["optionalOldSelf"] is not None:
                    cel_errs.append(
                        invalid(
                            f"{vpath}[{i}].optionalOldSelf",
                            rule["optionalOldSelf"],
                            "may not be set if oldSelf is not used in rule",
                        )
                    )


def _ssv_validate(s: dict[str, Any], path: str, ssv: _SSV, errs: list[FieldError]) -> None:
    typ = s.get("type")
    if isinstance(typ, str) and typ and typ not in _OPENAPI_V3_TYPES:
        errs.append(not_supported(f"{path}.type", typ, list(_OPENAPI_V3_TYPES)))
    if "default" in s and s["default"] is not None and not ssv.allow_defaults:
        detail = "must not be set"
        if ssv.defaults_reason:
            detail += " " + ssv.defaults_reason
        errs.append(forbidden(f"{path}.default", detail))
    if s.get("id"):
        errs.append(forbidden(f"{path}.id", "id is not supported"))
    if s.get("additionalItems") is not None:
        errs.append(forbidden(f"{path}.additionalItems", "additionalItems is not supported"))
    if s.get("patternProperties"):
        errs.append(forbidden(f"{path}.patternProperties", "patternProperties is not supported"))
    if s.get("definitions"):
        errs.append(forbidden(f"{path}.definitions", "definitions is not supported"))
    if s.get("dependencies") is not None:
        errs.append(forbidden(f"{path}.dependencies", "dependencies is not supported"))
    if s.get("$ref") is not None:
        errs.append(forbidden(f"{path}.$ref", "$ref is not supported"))
    if typ == "null":
        errs.append(forbidden(f"{path}.type", "type cannot be set to null, use nullable as an alternative"))
    if isinstance(s.get("items"), list) and s["items"]:
        errs.append(forbidden(f"{path}.items", "items must be a schema object and not an array"))
    if ssv.inside_meta and s.get("x-kubernetes-embedded-resource") is True:
        errs.append(
            forbidden(f"{path}.x-kubernetes-embedded-resource", "must not be used inside of resource meta")
        )


def _map_list_keys_map_set(s: dict[str, Any], path: str) -> list[FieldError]:
    items = s.get("items")
    lt = s.get("x-kubernetes-list-type")
    if not isinstance(items, dict) or lt not in ("set", "map"):
        return []
    errs: list[FieldError] = []
    if items.get("nullable") is True:
        errs.append(
            forbidden(f"{path}.items.nullable", f"cannot be nullable when x-kubernetes-list-type is {lt}")
        )
    if lt == "map":
        req = set(items.get("required") or []) if isinstance(items.get("required"), list) else set()
        iprops = items.get("properties") if isinstance(items.get("properties"), dict) else {}
        keys = s.get("x-kubernetes-list-map-keys")
        for k in keys if isinstance(keys, list) else []:
            kp = iprops.get(k)
            if not isinstance(kp, dict):
                continue
            if k not in req and kp.get("default") is None:
                errs.append(
                    required(
                        f"{_key(f'{path}.items.properties', k)}.default",
                        "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                    )
                )
            if kp.get("nullable") is True:
                errs.append(
                    forbidden(
                        f"{_key(f'{path}.items.properties', k)}.nullable",
                        "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                    )
                )
    return errs
