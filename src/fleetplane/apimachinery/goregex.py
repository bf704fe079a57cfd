"""Go (RE2) regular expressions on top of Python's re.

Schema ``pattern`` values and the CEL regex functions use Go's syntax and error messages; patterns
are translated to Python's dialect and fall back to the CEL engine's RE2 for Unicode classes.
"""

from __future__ import annotations

import re
import threading
import warnings
from typing import Any

from .cel.engine import _cel

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
