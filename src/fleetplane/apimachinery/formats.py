"""OpenAPI string formats (kube-openapi strfmt default registry) as validated for CRDs.

Also home of the Go duration parser, which CEL needs to turn ``format: duration`` into durations.
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
import re
from collections.abc import Callable

from .gofmt import is_go_base64

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
    "byte": is_go_base64,  # strfmt decodes with base64.StdEncoding: line breaks skipped
    "password": lambda s: True,
    "date": _is_date,
    "duration": _is_duration,
    "datetime": _is_datetime,
}
