"""CEL function library: the Kubernetes extensions cel-rust lacks.

Lists, regex, strings.format, URLs, quantities and IP/CIDR functions of
k8s.io/apiserver/pkg/cel/library, implemented as Python callbacks for the CEL engine.
"""

from __future__ import annotations

import ipaddress
import re
import urllib.parse
from collections.abc import Callable
from functools import cache
from typing import Any

from ..formats import _is_cidr, _is_ip, _is_uri
from ..gofmt import format_float, go_quote
from ..goregex import _go_regex, _RE2Fallback
from ..jsonvalue import json_equal
from ..quantity import Quantity, QuantityError
from .engine import _cel, _cel_stdlib


class _CELError(ValueError):
    pass


def _k_index_of(container: Any, item: Any, offset: int | None = None) -> int:
    if isinstance(container, str):
        return _cel_stdlib.index_of(container, item, 0 if offset is None else offset)
    for i, v in enumerate(container):
        if json_equal(v, item):
            return i
    return -1


def _k_last_index_of(container: Any, item: Any, offset: int | None = None) -> int:
    if isinstance(container, str):
        return _cel_stdlib.last_index_of(container, item, offset)
    for i in range(len(container) - 1, -1, -1):
        if json_equal(container[i], item):
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
        return format_float(v)
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
            f"URL parse error during conversion from string: parse {go_quote(s)}: invalid URI for request"
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
    Quantity.parse(s)
    return s


def _k_is_quantity(s: Any) -> bool:
    try:
        Quantity.parse(s)
    except QuantityError:
        return False
    return True


def _k_compare_to(a: str, b: str) -> int:
    x, y = Quantity.parse(a), Quantity.parse(b)
    return (x > y) - (x < y)


def _k_as_integer(q: str) -> int:
    v = Quantity.parse(q).number
    if v.denominator != 1 or not -(2**63) <= v.numerator < 2**63:
        raise _CELError("cannot convert value to integer")
    return v.numerator


def _k_is_integer(q: str) -> bool:
    v = Quantity.parse(q).number
    return v.denominator == 1 and -(2**63) <= v.numerator < 2**63


def _k_quantity_add(a: str, b: Any) -> str:
    y = b if isinstance(b, int) and not isinstance(b, bool) else Quantity.parse(b)
    return str(Quantity.parse(a) + y)


def _k_quantity_sub(a: str, b: Any) -> str:
    y = b if isinstance(b, int) and not isinstance(b, bool) else Quantity.parse(b)
    return str(Quantity.parse(a) - y)


def _k_ip(s: str) -> str:
    if "/" in s:  # cidr('…').ip()
        return str(ipaddress.ip_interface(s).ip)
    if not _is_ip(s):
        raise _CELError(
            f"IP Address {go_quote(s)} parse error during conversion from string: ParseAddr({go_quote(s)})"
        )
    addr = ipaddress.ip_address(s)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        raise _CELError("IPv4-mapped IPv6 address is not allowed")
    return s


def _k_cidr(s: str) -> str:
    if not _is_cidr(s):
        raise _CELError(f"network address {go_quote(s)} parse error during conversion from string")
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


def code_segments(source: str) -> list[tuple[bool, str]]:
    """A CEL ``source`` split into (is_code, text) around its string literals (quoted with ' or ",
    tripled or not, raw with an r/R prefix), so rewrites touch code only."""
    out: list[tuple[bool, str]] = []
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
        out.append((True, source[seg:i]))
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
        out.append((False, source[i:k]))
        i = seg = k
    out.append((True, source[seg:]))
    return out


def _rewrite_size_calls(source: str) -> str:
    """Route ``size()`` calls outside string literals to :func:`_k_size`."""
    if "size" not in source:
        return source
    return "".join(_RX_SIZE_CALL.sub("__k_size", text) if code else text for code, text in code_segments(source))


#: a CEL Format value is carried as this prefix and the format's name (the engine has no opaque types)
_FORMAT_PREFIX = "\x00format:"


@cache
def _format_checks() -> dict[str, Callable[[str], list[str]]]:
    """The named formats of k8s.io/apiserver/pkg/cel/library/format.go, as error lists."""
    from .. import validation as v

    def one(check: Callable[[str], str | None]) -> Callable[[str], list[str]]:
        return lambda s: [err] if (err := check(s)) is not None else []

    return {
        "dns1123Label": one(v.dns1123_label_error),
        "dns1123Subdomain": one(v.dns1123_subdomain_error),
        "dns1035Label": v.dns1035_label_errors,
        "qualifiedName": one(v.qualified_name_error),
        "labelValue": one(v.label_value_error),
    }


def _k_format_named(name: str) -> Any:
    """``format.named(name)``: the format, or none for a name the library lacks."""
    return _cel.OptionalValue.of(_FORMAT_PREFIX + name) if name in _format_checks() else _cel.OptionalValue.none()


def _k_format_validate(fmt: str, value: str) -> Any:
    """``<format>.validate(s)``: none when ``s`` is valid, else the list of errors."""
    if not isinstance(fmt, str) or not fmt.startswith(_FORMAT_PREFIX):
        raise _CELError("no such overload: validate")
    errs = _format_checks()[fmt[len(_FORMAT_PREFIX):]](value)
    return _cel.OptionalValue.of(errs) if errs else _cel.OptionalValue.none()


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
            # format (library/format.go): format.<name>() and format.named(name), then .validate(s)
            **{f"format.{name}": (lambda n=name: _FORMAT_PREFIX + n) for name in _format_checks()},
            "format.named": _k_format_named,
            "validate": _k_format_validate,
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
            "isLessThan": lambda a, b: Quantity.parse(a) < Quantity.parse(b),
            "isGreaterThan": lambda a, b: Quantity.parse(a) > Quantity.parse(b),
            "asInteger": _k_as_integer,
            "asApproximateFloat": lambda q: Quantity.parse(q).as_approximate_float(),
            "isInteger": _k_is_integer,
            "sign": lambda q: Quantity.parse(q).sign(),
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
